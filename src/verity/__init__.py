"""verity: automated fact-checking and fake-news detection with LLM multi-agent methods.

import verity
verdict = verity.check("The Eiffel Tower is in Paris.")
print(verdict.label, verdict.confidence, verdict.explanation)
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from verity.api import acheck, check, load_method
    from verity.domain import Article, Claim, Event, Evidence, Label, Usage, Verdict
    from verity.errors import BudgetExceededError, VerityError
    from verity.llm.budget import Budget

# Each public name and the module that defines it. They are imported on first use, not
# with the package: every ``verity.*`` import runs this file first, and the command line's
# ``verity --help`` must not pay for pydantic, httpx and the model clients behind the API.
_HOMES = {
    "Article": "verity.domain",
    "Budget": "verity.llm.budget",
    "BudgetExceededError": "verity.errors",
    "Claim": "verity.domain",
    "Event": "verity.domain",
    "Evidence": "verity.domain",
    "Label": "verity.domain",
    "Usage": "verity.domain",
    "Verdict": "verity.domain",
    "VerityError": "verity.errors",
    "acheck": "verity.api",
    "check": "verity.api",
    "load_method": "verity.api",
}

__all__ = [
    "Article",
    "Budget",
    "BudgetExceededError",
    "Claim",
    "Event",
    "Evidence",
    "Label",
    "Usage",
    "Verdict",
    "VerityError",
    "acheck",
    "check",
    "load_method",
]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'verity' has no attribute {name!r}")
    value = getattr(import_module(home), name)
    globals()[name] = value  # found directly from now on
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_HOMES])
