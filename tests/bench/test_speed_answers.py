"""The speed bench's made-up answers: ToE's keep it on its usual path, and no other's changes.

`bench/speed.py` answers ToE's analysis, judge and decomposition so that its tree grows
two levels. The answers are matched by schema, so a schema of another method must never
be taken for ToE's: every declared step outside ToE gets no ToE answer.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import pkgutil
from pathlib import Path
from typing import Any

from pydantic import BaseModel

import verity.methods
from faults.latency import instance
from verity.domain import Claim, Evidence, Message
from verity.llm.client import ModelClient, schema_of
from verity.llm.spec import ModelSet
from verity.llm.step import Step
from verity.methods.toe.method import ToeMethod
from verity.testing import FakeChatModel

SPEED = Path(__file__).resolve().parents[2] / "bench" / "speed.py"


def speed() -> Any:
    spec = importlib.util.spec_from_file_location("speed_bench", SPEED)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def declared_steps() -> list[tuple[str, Step[Any]]]:
    """Every step a method module declares at its top level, with the module's name."""
    found = []
    for info in pkgutil.walk_packages(verity.methods.__path__, "verity.methods."):
        module = importlib.import_module(info.name)
        found += [(info.name, v) for v in vars(module).values() if isinstance(v, Step)]
    return found


def test_no_other_methods_step_gets_a_toe_answer() -> None:
    bench = speed()
    steps = declared_steps()
    # A step whose output is built per call declares plain BaseModel: no schema to match.
    others = [
        (name, step) for name, step in steps if ".toe." not in name and step.output is not BaseModel
    ]
    assert len(others) > 20 and any(".toe." in name for name, _ in steps)
    for name, step in others:
        schema = schema_of(step.output)
        inputs = {field: "The tower is in Paris." for field in step.inputs}
        messages = [m.model_dump() for m in step.messages(**inputs)]
        assert bench.toe_answer(messages, schema) is None, (name, step.name)


class QuerySource:
    """A web-kind source whose one document depends on the query alone."""

    name = "news"

    def search(self, query, k=5, *, before=None, exclude_domains=()):  # type: ignore[no-untyped-def]
        slug = "-".join(query.lower().split())
        url = f"https://news.example/{slug}"
        return [Evidence(text=f"On {query}.", title=query, source=self.name, url=url)]

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name}


def test_toe_grows_two_levels_on_the_bench_answers() -> None:
    bench = speed()

    def answer(messages: list[Message], schema: dict[str, Any] | None) -> str:
        # The bench's answer where it gives one, else the endpoint's made-up one.
        assert schema is not None
        found = bench.usual_path([m.model_dump() for m in messages], schema)
        return json.dumps(found if found is not None else instance(schema))

    models = ModelSet(ModelClient(FakeChatModel(answer)))
    claim = Claim(text="Building a wall on the border will take literally years.")
    verdict = ToeMethod(models=models, sources=[QuerySource()]).verify(claim)
    tree = verdict.trace.model_dump()["tree"]
    assert [(n["depth"], n["text"].split(":")[0]) for n in tree] == [
        (1, claim.text.split(":")[0]),
        (2, "Part 1"),
        (3, "Part 1.1"),
        (3, "Part 1.2"),
        (2, "Part 2"),
    ]
    assert all(n["status"] == "evaluated" for n in tree)
    assert tree[2]["text"] == "Part 1.1: Building a"  # half of the half
    steps = [c.step for c in verdict.trace.calls]
    # Every document cleaned, then assessed; the root and Part 1 decomposed.
    assert steps.count("toe.decompose") == 2 and steps.count("toe.judge") == 5
    assert steps.count("toe.assess") == sum(len(n["evidence"]) for n in tree) > 0
    assert steps.count("toe.clean") >= steps.count("toe.assess")
