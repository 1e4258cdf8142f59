"""ZoFia: zero-shot fake-news detection (entity-guided retrieval, multi-LLM interaction)."""

from verity.methods.zofia.method import ZofiaConfig, ZofiaMethod

__all__ = ["ZofiaConfig", "ZofiaMethod"]
