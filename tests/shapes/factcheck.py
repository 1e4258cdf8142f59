"""Google Fact Check Tools answers in the shape of its `claims:search` reference.

Shape: https://developers.google.com/fact-check/tools/api/reference/rest/v1alpha1/claims/search
(`FactCheckedClaimSearchResponse`: ``claims`` and ``nextPageToken``) and
https://developers.google.com/fact-check/tools/api/reference/rest/v1alpha1/claims (`Claim`,
`ClaimReview`, `Publisher`). Errors follow Google's JSON error format
(https://cloud.google.com/apis/design/errors#http_mapping).
"""

from __future__ import annotations

from typing import Any


def claim_review(
    url: str,
    rating: str,
    *,
    publisher: str = "PolitiFact",
    site: str | None = "politifact.com",
    title: str | None = None,
    review_date: str | None = "2019-05-02T00:00:00Z",
    language: str = "en",
) -> dict[str, Any]:
    """One `ClaimReview`; a None argument leaves its field out, as the API does."""
    review: dict[str, Any] = {
        "publisher": {"name": publisher, **({"site": site} if site else {})},
        "url": url,
        "textualRating": rating,
        "languageCode": language,
    }
    if title is not None:
        review["title"] = title
    if review_date is not None:
        review["reviewDate"] = review_date
    return review


def claim(
    text: str,
    *reviews: dict[str, Any],
    claimant: str | None = "Facebook posts",
    claim_date: str | None = "2019-04-28T00:00:00Z",
) -> dict[str, Any]:
    """One `Claim` with its reviews."""
    found: dict[str, Any] = {"text": text, "claimReview": list(reviews)}
    if claimant is not None:
        found["claimant"] = claimant
    if claim_date is not None:
        found["claimDate"] = claim_date
    return found


def claims_payload(*claims: dict[str, Any], next_page: str | None = "CAo") -> dict[str, Any]:
    """A search answer; with no claims the API sends an empty object."""
    if not claims:
        return {}
    return {"claims": list(claims), **({"nextPageToken": next_page} if next_page else {})}


def google_error(code: int, status: str, message: str, reason: str) -> dict[str, Any]:
    """Google's error body, e.g. 400 INVALID_ARGUMENT / API_KEY_INVALID for a wrong key."""
    return {
        "error": {
            "code": code,
            "message": message,
            "status": status,
            "details": [
                {
                    "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                    "reason": reason,
                    "domain": "googleapis.com",
                    "metadata": {"service": "factchecktools.googleapis.com"},
                }
            ],
        }
    }
