"""LoCal: logical and causal fact-checking with LLM-based multi-agents."""

from verity.methods.local.method import LocalConfig, LocalMethod

__all__ = ["LocalConfig", "LocalMethod"]
