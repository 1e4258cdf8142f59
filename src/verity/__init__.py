"""verity: automated fact-checking and fake-news detection with LLM multi-agent methods.

import verity
verdict = verity.check("The Eiffel Tower is in Paris.")
print(verdict.label, verdict.confidence, verdict.explanation)
"""

from verity.api import acheck, check, load_method
from verity.domain import Article, Claim, Evidence, Label, Usage, Verdict
from verity.errors import VerityError

__all__ = [
    "Article",
    "Claim",
    "Evidence",
    "Label",
    "Usage",
    "Verdict",
    "VerityError",
    "acheck",
    "check",
    "load_method",
]
