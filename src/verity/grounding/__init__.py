"""Grounded verdicts: each sentence of an explanation checked against what it cites.

One shared step after any method's verdict (`verity.methods.base.MethodBase.averify`):
`cite` finds the sentences and the references they name, `check` asks the ``grounding``
role's model about all of them in one call. docs/grounding.md says what each status
means and how the checker is measured.
"""

from verity.grounding.check import MODES, Mode, ground, settle
from verity.grounding.cite import cited, passages

__all__ = ["MODES", "Mode", "cited", "ground", "passages", "settle"]
