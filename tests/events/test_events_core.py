"""The generic events every method gives for free: the check, each call, each retrieval."""

from __future__ import annotations

import itertools
import json
import threading

import pytest

from verity import events
from verity.domain import Claim, Event, Evidence
from verity.llm.calllog import CallLog
from verity.llm.client import ModelClient
from verity.llm.spec import ModelSet
from verity.methods.base import load_method
from verity.sources.base import apply_filters
from verity.testing import FakeChatModel

VERDICT = json.dumps({"label": "SUPPORTED", "confidence": 0.8, "explanation": "[1] says so."})


class TwoPassages:
    """A fixed source for control flow."""

    name = "two"

    def search(self, query, k=5, *, before=None, exclude_domains=()):
        found = [
            Evidence(text="The Eiffel Tower is in Paris.", title="Eiffel", source="two"),
            Evidence(text="Paris is in France.", title="Paris", source="two"),
        ]
        return apply_filters(found, k, before=before, exclude_domains=exclude_domains)

    def to_dict(self):
        return {"name": self.name}


def rag(answers: list[str]):
    models = ModelSet(ModelClient(FakeChatModel(answers), cache=None))
    return load_method("rag", models=models, sources=[TwoPassages()], k=2)


def test_a_check_reports_start_call_retrieval_and_end_in_order() -> None:
    seen: list[Event] = []
    with events.listening(seen.append):
        verdict = rag([VERDICT]).verify(Claim(text="The Eiffel Tower is in Paris."))
    kinds = [e.kind for e in seen]
    assert kinds[0] == "check.start" and kinds[-1] == "check.end"
    assert kinds.count("call.start") == kinds.count("call.end") == 1
    assert kinds.index("retrieval") < kinds.index("call.start") < kinds.index("call.end")
    assert [e.seq for e in seen] == list(range(1, len(seen) + 1))
    assert all(a.at <= b.at for a, b in itertools.pairwise(seen))
    found = next(e for e in seen if e.kind == "retrieval")
    assert (found.source, found.results) == ("two", 2)
    end = next(e for e in seen if e.kind == "call.end")
    assert end.tokens == verdict.usage.prompt_tokens + verdict.usage.completion_tokens > 0
    assert seen[-1].label == "SUPPORTED" == verdict.label
    assert seen[0].method == "rag"


def test_nobody_listening_costs_nothing_and_a_log_outside_a_block_is_silent() -> None:
    log = CallLog()  # made outside any block: it keeps no sink
    assert log._sink is None
    with events.listening(None) as sink:
        assert sink is None and events.current() is None
    verdict = rag([VERDICT]).verify(Claim(text="Paris is in France."))
    assert verdict.label == "SUPPORTED"


def test_a_listener_that_raises_stops_the_check() -> None:
    class Stop(Exception):
        pass

    def stop_at_first_call(event: Event) -> None:
        if event.kind == "call.start":
            raise Stop

    fake = FakeChatModel([VERDICT])
    method = load_method(
        "rag", models=ModelSet(ModelClient(fake, cache=None)), sources=[TwoPassages()], k=2
    )
    with events.listening(stop_at_first_call), pytest.raises(Stop):
        method.verify(Claim(text="The Eiffel Tower is in Paris."))
    assert fake.requests == []  # stopped before the model was asked


def test_milestones_carry_flat_data_and_long_text_is_capped() -> None:
    seen: list[Event] = []
    with events.listening(seen.append):
        log = CallLog()
        log.milestone("demo.round", "round 1 of 3", round=1, note="x" * 5000)
    (event,) = seen
    assert (event.kind, event.name, event.data["round"]) == ("milestone", "demo.round", 1)
    assert len(event.data["note"]) == events.TEXT_CAP


def test_each_thread_has_its_own_listener() -> None:
    got: dict[str, list[str]] = {"a": [], "b": []}

    def run(name: str) -> None:
        with events.listening(lambda e: got[name].append(e.kind)):
            rag([VERDICT]).verify(Claim(text=f"Claim {name}."))

    threads = [threading.Thread(target=run, args=(n,)) for n in got]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert got["a"] == got["b"] and got["a"][0] == "check.start"


def test_the_api_passes_events_to_on_event(monkeypatch) -> None:
    import verity.api as api

    monkeypatch.setattr(api, "load_method", lambda name, **kw: rag([VERDICT]))
    seen: list[Event] = []
    verdict = api.check("The Eiffel Tower is in Paris.", on_event=seen.append)
    assert verdict.label == "SUPPORTED" and seen[-1].kind == "check.end"
