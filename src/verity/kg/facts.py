"""Facts as prompt and evidence text, with their ids kept beside the labels."""

from __future__ import annotations

from verity.kg.base import Triple


def fact_text(fact: Triple) -> str:
    """``subject (Q..) | property (P..) | object (Q..)``; a value object is shown as it is.

    fact_text(Triple("Q76", "Barack Obama", "P26", "spouse", "Q13133", "Michelle Obama"))
    # 'Barack Obama (Q76) | spouse (P26) | Michelle Obama (Q13133)'
    """
    subject = f"{fact.subject_label or '?'} ({fact.subject})"
    prop = f"{fact.property_label or '?'} ({fact.pid})"
    if fact.object_kind == "entity":
        obj = f"{fact.object_label or '?'} ({fact.object})"
    else:
        obj = fact.object
    return f"{subject} | {prop} | {obj}"
