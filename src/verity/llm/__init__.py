"""Chat models: one protocol, an embedded local backend and any OpenAI-compatible endpoint."""

from verity.llm.base import ChatBackend, GenParams, ModelUnavailableError, RawCompletion
from verity.llm.calllog import CallLog
from verity.llm.client import Completion, ModelClient
from verity.llm.spec import ModelSet, ModelSettings, make_model
from verity.llm.step import Step

__all__ = [
    "CallLog",
    "ChatBackend",
    "Completion",
    "GenParams",
    "ModelClient",
    "ModelSet",
    "ModelSettings",
    "ModelUnavailableError",
    "RawCompletion",
    "Step",
    "make_model",
]
