"""A whole document checked: its claims extracted, each checked with one method, at once.

    result = await check_document(doc, method, extractor, concurrency=20)
    result = await check_document(doc, method, extractor, previous=result)  # retry failures
    result.summary.counts, result.claims[0].verdict.label

Each claim is checked as its own `Claim` (the document's date its retrieval cutoff), by
the method's own ``averify``, within its own budget when one is given, and at most
``concurrency`` at once; the method's sources and the model's cache are shared between
them, as they are between the checks of a batch. A claim whose check fails is kept with
its error and the others go on; given the result of an earlier run on the same document,
the claims it checked are kept and only the rest are checked again.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Sequence

from verity import events
from verity.documents.summary import summarise
from verity.documents.types import ClaimResult, DocumentVerdict
from verity.domain import Article, Claim, Trace, Usage, Verdict
from verity.errors import BadInputError, VerityError
from verity.extraction.extract import Extraction, Extractor
from verity.extraction.types import Document, ExtractedClaim
from verity.llm.budget import Budget, spending
from verity.methods.base import Method

OnClaim = Callable[[ClaimResult], None]


async def check_document(
    document: Document,
    method: Method,
    extractor: Extractor,
    *,
    concurrency: int = 4,
    claim_budget: Budget | None = None,
    article_method: Method | None = None,
    previous: DocumentVerdict | None = None,
    on_claim: OnClaim | None = None,
) -> DocumentVerdict:
    """Extract the document's claims, check each one, and sum them up.

    ``previous``, a result for the same document, method and extractor settings, is
    reused: its claims (when every sentence was read) and its checked verdicts. Anything
    else about it (another document, another method) is ignored, not an error.
    """
    if concurrency < 1:
        raise BadInputError("concurrency must be at least 1")
    if getattr(method, "task", None) == "check-worthiness" or Claim not in method.accepts:
        raise BadInputError(
            f"method {_method_name(method)!r} does not verify claims; a document's claims "
            "need a claim method (rag, local, wkgfc, toe, or a claim baseline)"
        )
    started = time.monotonic()
    kept = _reusable(previous, document, method, extractor)
    if kept is not None and all(n.outcome != "failed" for n in kept.sentences):
        notes, claims = list(kept.sentences), [r.claim for r in kept.claims]
        over, ex_usage, ex_trace = _over_cap(kept), kept.extraction_usage, Trace()
    else:
        found: Extraction = await extractor.extract(document)
        notes, claims, over = found.sentences, found.claims, found.claims_over_cap
        ex_usage, ex_trace = found.usage, found.trace
    _milestone(
        "document.extracted",
        f"{len(claims)} claim(s) from {len(notes)} sentence(s)",
        claims=len(claims),
        sentences=len(notes),
    )
    done = {r.claim.id: r for r in (kept.claims if kept is not None else ()) if _same_done(r)}
    gate = asyncio.Semaphore(concurrency)

    async def one(claim: ExtractedClaim) -> ClaimResult:
        earlier = done.get(claim.id)
        if earlier is not None and earlier.claim.text == claim.text:
            result = earlier
        else:
            async with gate:
                result = await _check_claim(document, claim, method, claim_budget)
        _announce(result)
        if on_claim is not None:
            on_claim(result)
        return result

    article_task = (
        asyncio.ensure_future(_check_article(document, article_method))
        if article_method is not None
        else None
    )
    results = list(await asyncio.gather(*(one(c) for c in claims)))
    article, article_error = (await article_task) if article_task is not None else (None, None)
    usage = ex_usage + total_usage(results)
    if article is not None:
        usage = usage + article.usage
    settings = {**extractor.settings(), "claims_over_cap": over}
    return DocumentVerdict(
        document=document,
        method=_method_name(method),
        extractor=str(settings["extractor"]),
        sentences=tuple(notes),
        claims=tuple(results),
        summary=summarise(results),
        article=article,
        article_error=article_error,
        extraction_usage=ex_usage,
        extraction_trace=ex_trace,
        usage=usage.model_copy(update={"wall_seconds": time.monotonic() - started}),
        settings=settings,
    )


async def _check_claim(
    document: Document, claim: ExtractedClaim, method: Method, budget: Budget | None
) -> ClaimResult:
    subject = claim.as_claim(document)
    try:
        with spending(budget) if budget is not None else contextlib.nullcontext():
            verdict = await method.averify(subject)
    except VerityError as exc:
        return ClaimResult(claim=claim, status="failed", error=_error_text(exc))
    return ClaimResult(claim=claim, status="checked", verdict=verdict)


async def _check_article(document: Document, method: Method) -> tuple[Verdict | None, str | None]:
    article = Article(title=document.title, text=document.text, url=document.url,
                      date=document.date)  # fmt: skip
    try:
        return await method.averify(article), None
    except VerityError as exc:
        return None, _error_text(exc)


def _error_text(exc: VerityError) -> str:
    return f"{type(exc).__name__}: {exc}"[:500]


def _method_name(method: Method) -> str:
    variant = getattr(method, "variant_name", None)
    return str(variant) if variant else method.name


def _reusable(
    previous: DocumentVerdict | None, document: Document, method: Method, extractor: Extractor
) -> DocumentVerdict | None:
    if previous is None or previous.document.checksum != document.checksum:
        return None
    settings = {k: v for k, v in previous.settings.items() if k != "claims_over_cap"}
    if settings != extractor.settings() or previous.method != _method_name(method):
        return None
    return previous


def _over_cap(previous: DocumentVerdict) -> int:
    value = previous.settings.get("claims_over_cap", 0)
    return value if isinstance(value, int) else 0


def _same_done(result: ClaimResult) -> bool:
    return result.status == "checked" and result.verdict is not None


def _milestone(name: str, message: str, **data: str | int | float | bool | None) -> None:
    sink = events.current()
    if sink is not None:
        sink.emit("milestone", message, name=name, data=dict(data))


def _announce(result: ClaimResult) -> None:
    claim = result.claim
    outcome = result.label if result.status == "checked" else f"failed: {result.error}"
    _milestone(
        "document.claim",
        f"{claim.id}: {outcome}",
        claim=claim.id,
        status=result.status,
        label=result.label,
        start=claim.spans[0].start,
        end=claim.spans[0].end,
    )


def total_usage(results: Sequence[ClaimResult]) -> Usage:
    """What the checks of these claims spent, failed ones left out."""
    usage = Usage()
    for r in results:
        if r.verdict is not None:
            usage = usage + r.verdict.usage
    return usage
