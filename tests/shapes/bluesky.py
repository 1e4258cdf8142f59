"""Bluesky API answers in the shapes of their lexicons.

Shapes: ``app.bsky.feed.searchPosts`` (https://docs.bsky.app/docs/api/app-bsky-feed-search-posts:
``posts`` of ``app.bsky.feed.defs#postView``, ``cursor``, ``hitsTotal``),
``com.atproto.server.createSession``
(https://docs.bsky.app/docs/api/com-atproto-server-create-session) and the XRPC error body
``{"error": ..., "message": ...}``.
"""

from __future__ import annotations

from typing import Any


def post_view(
    rkey: str,
    text: str,
    *,
    handle: str = "alice.bsky.social",
    did: str = "did:plc:abc123xyz",
    display_name: str | None = "Alice",
    created_at: str = "2023-06-01T12:00:00.000Z",
    indexed_at: str | None = None,
    likes: int = 10,
    reposts: int = 2,
    replies: int = 3,
    quotes: int = 1,
    link: str | None = None,
    card: str | None = None,
) -> dict[str, Any]:
    """One postView; ``link`` adds a link facet, ``card`` an external embed."""
    record: dict[str, Any] = {
        "$type": "app.bsky.feed.post",
        "text": text,
        "createdAt": created_at,
        "langs": ["en"],
    }
    if link is not None:
        record["facets"] = [
            {
                "index": {"byteStart": 0, "byteEnd": 4},
                "features": [{"$type": "app.bsky.richtext.facet#link", "uri": link}],
            }
        ]
    view: dict[str, Any] = {
        "uri": f"at://{did}/app.bsky.feed.post/{rkey}",
        "cid": "bafyreib2rxk3rh6kzwq",
        "author": {
            "did": did,
            "handle": handle,
            "avatar": "https://cdn.bsky.app/img/avatar/plain/x.jpg",
            "labels": [],
            "createdAt": "2023-04-01T00:00:00.000Z",
            **({"displayName": display_name} if display_name is not None else {}),
        },
        "record": record,
        "replyCount": replies,
        "repostCount": reposts,
        "likeCount": likes,
        "quoteCount": quotes,
        "indexedAt": indexed_at or created_at,
        "labels": [],
    }
    if card is not None:
        view["embed"] = {
            "$type": "app.bsky.embed.external#view",
            "external": {"uri": card, "title": "A card", "description": "", "thumb": None},
        }
    return view


def search_payload(*posts: dict[str, Any], cursor: str | None = "25") -> dict[str, Any]:
    """A searchPosts answer."""
    return {
        "posts": list(posts),
        "hitsTotal": len(posts),
        **({"cursor": cursor} if cursor else {}),
    }


def session_payload(access: str = "eyJ.access.jwt") -> dict[str, Any]:
    """A createSession answer."""
    return {
        "accessJwt": access,
        "refreshJwt": "eyJ.refresh.jwt",
        "handle": "alice.bsky.social",
        "did": "did:plc:abc123xyz",
        "active": True,
    }


def xrpc_error(error: str, message: str) -> dict[str, Any]:
    """An XRPC error body."""
    return {"error": error, "message": message}
