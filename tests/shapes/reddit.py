"""Reddit API answers in the shapes of its documentation.

Shapes: the token answer of application-only OAuth
(https://github.com/reddit-archive/reddit/wiki/OAuth2#application-only-oauth); listings of
"things" (https://github.com/reddit-archive/reddit/wiki/JSON: ``kind`` t1 comment, t2
account, t3 link, ``more`` stub) as answered by ``GET /search``, ``GET /comments/{article}``
(a pair of listings: the post, then its comments) and ``GET /user/{username}/about``
(https://www.reddit.com/dev/api/).
"""

from __future__ import annotations

from typing import Any


def token_payload(token: str = "reddit-token-1", expires_in: int = 86400) -> dict[str, Any]:
    """The answer of ``POST /api/v1/access_token`` with ``grant_type=client_credentials``."""
    return {
        "access_token": token,
        "token_type": "bearer",
        "expires_in": expires_in,
        "scope": "*",
    }


def post(
    post_id: str,
    title: str,
    *,
    selftext: str = "",
    url: str | None = None,
    subreddit: str = "science",
    author: str = "curious_cat",
    score: int = 120,
    num_comments: int = 45,
    created_utc: float = 1_546_300_800.0,  # 2019-01-01T00:00:00Z
) -> dict[str, Any]:
    """A t3 thing; a post with ``url`` is a link post, one without is a self post."""
    # Reddit's slug: the title's first words, lower case, letters and digits only.
    words = ["".join(c for c in word if c.isalnum()) for word in title.lower().split()]
    slug = "_".join(w for w in words if w)[:40] or "post"
    permalink = f"/r/{subreddit}/comments/{post_id}/{slug}/"
    is_self = url is None
    return {
        "kind": "t3",
        "data": {
            "id": post_id,
            "name": f"t3_{post_id}",
            "title": title,
            "selftext": selftext,
            "selftext_html": None,
            "url": f"https://www.reddit.com{permalink}" if is_self else url,
            "permalink": permalink,
            "subreddit": subreddit,
            "subreddit_name_prefixed": f"r/{subreddit}",
            "author": author,
            "score": score,
            "ups": score,
            "upvote_ratio": 0.93,
            "num_comments": num_comments,
            "created_utc": created_utc,
            "is_self": is_self,
            "over_18": False,
            "domain": f"self.{subreddit}" if is_self else "example.org",
        },
    }


def listing(*children: dict[str, Any], after: str | None = None) -> dict[str, Any]:
    """A Listing of things."""
    return {
        "kind": "Listing",
        "data": {"after": after, "before": None, "dist": len(children), "children": list(children)},
    }


def comment(
    body: str, *, author: str = "helpful_owl", score: int = 40, created_utc: float = 1_546_400_000.0
) -> dict[str, Any]:
    """A t1 thing."""
    return {
        "kind": "t1",
        "data": {
            "id": f"c{len(body)}",
            "body": body,
            "body_html": None,
            "author": author,
            "score": score,
            "created_utc": created_utc,
            "depth": 0,
            "replies": "",
        },
    }


def more(count: int = 12) -> dict[str, Any]:
    """The stub standing for comments not sent."""
    return {"kind": "more", "data": {"count": count, "children": ["x1", "x2"], "depth": 0}}


def thread(the_post: dict[str, Any], *comments: dict[str, Any]) -> list[dict[str, Any]]:
    """The answer of ``GET /comments/{article}``: two listings."""
    return [listing(the_post), listing(*comments)]


def user_about(name: str, link_karma: int = 1500, comment_karma: int = 8200) -> dict[str, Any]:
    """A t2 thing."""
    return {
        "kind": "t2",
        "data": {
            "name": name,
            "link_karma": link_karma,
            "comment_karma": comment_karma,
            "total_karma": link_karma + comment_karma,
            "created_utc": 1_400_000_000.0,
            "is_suspended": False,
        },
    }
