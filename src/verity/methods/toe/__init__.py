"""ToE, the Tree of Evidence (Wang et al.): see `verity.methods.toe.method` and docs/toe.md."""

from verity.methods.toe.method import ToeMethod

__all__ = ["ToeMethod"]
