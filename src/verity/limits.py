"""Size limits on what verity accepts from users and sources.

    limits = Limits()                                  # the defaults below
    limits = Limits.from_env(os.environ)               # VERITY_MAX_CLAIM_CHARS=5000 ...
    check_subject_size(claim, limits)                  # BadInputError when too large

Every limit has a default sized from the benchmark data, a TOML key under ``[limits]`` and
an environment variable; docs/reliability.md lists them. A claim or article over its limit
is refused with a message naming the limit and how to raise it: a silently shortened claim
would be a different claim. An evidence passage over its limit is shortened instead, and
the passage records its original length (`Evidence.truncated_from`), since one long web
page must not cost the whole check.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from verity.domain import Article, Claim
from verity.errors import BadInputError, ConfigError

#: Environment variable for each limit.
ENV_VARS = {
    "claim_chars": "VERITY_MAX_CLAIM_CHARS",
    "article_chars": "VERITY_MAX_ARTICLE_CHARS",
    "passage_chars": "VERITY_MAX_PASSAGE_CHARS",
}


class Limits(BaseModel):
    """The size limits in force; each is a number of characters."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    # The longest claim in the twelve claim datasets verity reads is 718 characters
    # (SummEval); 2,000 leaves room for long political quotes.
    claim_chars: int = Field(default=2_000, ge=1)
    # The longest article in the news datasets is 100,000 characters (PolitiFact++);
    # methods show a model only its first few hundred words anyway.
    article_chars: int = Field(default=400_000, ge=1)
    # Per evidence passage, as a source returns it; prompts cut passages much shorter.
    passage_chars: int = Field(default=20_000, ge=100)

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> Limits:
        """Defaults overridden by the environment variables in `ENV_VARS`."""
        return cls.model_validate(limits_from_env(env))

    def line_bytes(self) -> int:
        """The longest batch input line worth reading: an article at 4 bytes a character."""
        return 4 * max(self.article_chars, self.claim_chars) + 65_536


def limits_from_env(env: Mapping[str, str]) -> dict[str, Any]:
    """The limits the environment sets, as a settings dict; `ConfigError` if not numbers."""
    found: dict[str, Any] = {}
    for key, var in ENV_VARS.items():
        raw = env.get(var, "").strip()
        if not raw:
            continue
        try:
            found[key] = int(raw.replace("_", ""))
        except ValueError as exc:
            raise ConfigError(f"{var} must be a whole number, not {raw!r}") from exc
    return found


def check_subject_size(subject: Claim | Article, limits: Limits) -> None:
    """Refuse a claim or article longer than its limit, saying how to raise the limit."""
    if isinstance(subject, Claim):
        _refuse(len(subject.text), limits.claim_chars, "claim_chars", "the claim")
    else:
        size = len(subject.text) + len(subject.title)
        _refuse(size, limits.article_chars, "article_chars", "the article")


def check_document_size(text: str, title: str, limits: Limits) -> None:
    """Refuse a document (to check claim by claim) over the article limit it shares."""
    _refuse(len(text) + len(title), limits.article_chars, "article_chars", "the document")


def _refuse(size: int, limit: int, key: str, what: str) -> None:
    if size > limit:
        raise BadInputError(
            f"{what} has {size:,} characters, more than the limit of {limit:,} "
            f"(raise it with [limits] {key} in verity.toml or {ENV_VARS[key]})"
        )
