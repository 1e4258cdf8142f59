"""An output type's JSON schema is built once, and every caller gets a copy of its own."""

from __future__ import annotations

import gc
import weakref

from pydantic import BaseModel, create_model

from verity.llm import client
from verity.llm.client import schema_of


class Answer(BaseModel):
    reason: str
    verdict: bool


def test_the_schema_is_pydantics_and_built_once(monkeypatch):
    built = []
    real = Answer.model_json_schema.__func__  # type: ignore[attr-defined]

    def counting(cls, *args, **kwargs):
        built.append(cls)
        return real(cls, *args, **kwargs)

    client._schemas.pop(Answer, None)
    monkeypatch.setattr(Answer, "model_json_schema", classmethod(counting))
    first, second = schema_of(Answer), schema_of(Answer)
    assert first == second == real(Answer)
    assert built == [Answer]


def test_a_caller_changing_its_copy_changes_no_other():
    mine = schema_of(Answer)
    mine["properties"]["reason"]["maxLength"] = 5
    mine["required"].append("extra")
    assert schema_of(Answer) == Answer.model_json_schema()


def test_a_type_made_per_call_is_not_kept():
    made = create_model("Made", value=(int, ...))
    schema_of(made)
    assert made in client._schemas
    gone = weakref.ref(made)
    del made
    gc.collect()
    # The cache holds no strong reference: the type went with its last user.
    assert gone() is None
