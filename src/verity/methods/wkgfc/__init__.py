"""WKGFC: knowledge-graph fact-checking with Wikidata, web evidence and an agent."""

from verity.methods.wkgfc.method import WkgfcConfig, WkgfcMethod

__all__ = ["WkgfcConfig", "WkgfcMethod"]
