"""What a request may set and spend: the audit's requests (rows 76-80), ceilings, rates."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from fastapi.testclient import TestClient

from verity.config import ServiceLimits, Settings
from verity.errors import BudgetExceededError
from verity.llm.budget import Budget
from verity.llm.spec import ModelSettings
from verity.service.app import create_app
from verity.service.core import Service
from verity.service.errors import ApiError
from verity.service.keys import KeyRing, hash_key, new_key
from verity.service.requests import CheckRequest
from verity.service.usage_limits import UsageLimiter

SECRET_PATH = "/nonexistent/verity-probe.json"


def error_of(response: Any, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.text
    return response.json()["error"]


@pytest.fixture
def api(make_service) -> TestClient:
    with TestClient(create_app(make_service())) as client:
        yield client


@pytest.mark.parametrize(
    ("method", "setting"),
    [("local", "demos_file"), ("wkgfc", "policy_prompt"), ("toe", "weights")],
)
def test_a_setting_that_names_a_server_file_is_refused_before_queueing(
    api: TestClient, method: str, setting: str
) -> None:
    # Rows 76 and 77: these were queued with 202; the job's error then told an existing
    # file from a missing one.
    body = {"claim": "x", "method": method, "settings": {setting: SECRET_PATH}}
    error = error_of(api.post("/v1/checks", json=body), 400)
    assert (error["code"], error["field"]) == ("server_setting", f"settings.{setting}")
    assert SECRET_PATH not in api.post("/v1/checks", json=body).text
    assert "a file or folder on the server" in error["message"]
    assert setting not in error["valid"]
    assert api.get("/v1/checks").json()["total"] == 0


@pytest.mark.parametrize(
    ("method", "settings", "field"),
    [
        ("nli", {"checkpoint": "/root"}, "checkpoint"),
        ("auto-cot", {"pool": "advfact:/etc"}, "pool"),
        ("cape-fnd", {"optimise_on": "advfact:/etc"}, "optimise_on"),
        ("nli", {"template": "{claim:>1000000000}"}, "template"),
        ("teller", {"rules": {"x": [["y"]]}}, "rules"),
    ],
)
def test_every_operator_setting_is_refused_in_process_too(
    make_service, method: str, settings: dict[str, Any], field: str
) -> None:
    # Row 78: check_request accepted these and nli would load any folder's pickles.
    service = make_service()
    request = CheckRequest(claim="x", method=method, settings=settings)
    with pytest.raises(ApiError) as info:
        service.check_request(request)
    assert (info.value.status, info.value.code) == (400, "server_setting")
    assert info.value.field == f"settings.{field}"


@pytest.mark.parametrize(
    ("method", "setting", "value"),
    [
        ("toe", "max_iterations", 10**9),
        ("local", "max_iterations", 10**9),
        ("react", "max_steps", 10**9),
        ("wkgfc", "hops", 10**6),
        ("wkgfc", "max_steps", 10**6),
    ],
)
def test_a_loop_bound_over_its_limit_is_refused(
    api: TestClient, method: str, setting: str, value: int
) -> None:
    # Row 80: all of these were accepted.
    body = {"claim": "x", "method": method, "settings": {setting: value}}
    error = error_of(api.post("/v1/checks", json=body), 422)
    assert (error["code"], error["field"]) == ("invalid", f"settings.{setting}")
    assert "less than or equal" in error["message"]


def limited(make_service, **service: Any) -> Service:
    defaults = Settings(budget=Budget(calls=50, seconds=300), service=ServiceLimits(**service))
    return make_service(defaults=defaults)


def test_a_request_may_lower_its_budget_but_not_raise_it(make_service) -> None:
    service = limited(make_service)
    with TestClient(create_app(service)) as api:
        lowered = api.post("/v1/checks", json={"claim": "x", "budget": {"calls": 10}})
        assert lowered.status_code == 202
        assert lowered.json()["request"]["budget"] == {"calls": 10, "seconds": 300.0}
        unset = api.post("/v1/checks", json={"claim": "y"}).json()["request"]["budget"]
        assert (unset["calls"], unset["seconds"]) == (50, 300.0)
        raised = api.post("/v1/checks", json={"claim": "z", "budget": {"calls": 51}})
        error = error_of(raised, 422)
        assert (error["code"], error["field"]) == ("invalid", "budget.calls")
        assert "at most 50 calls" in error["message"] and "51" not in error["message"]
        odd = api.post("/v1/checks", json={"claim": "z", "budget": {"calls": 0}})
        assert error_of(odd, 422)["field"] == "budget.calls"


def test_a_key_has_its_own_ceiling(make_service) -> None:
    alice, bob = new_key(), new_key()
    ring = KeyRing({"alice": hash_key(alice), "bob": hash_key(bob)})
    defaults = Settings(
        budget=Budget(calls=50),
        service=ServiceLimits(budget=Budget(calls=40), keys={"alice": Budget(calls=5)}),
    )
    service = make_service(defaults=defaults, keys=ring)
    with TestClient(create_app(service)) as api:
        as_alice = {"Authorization": f"Bearer {alice}"}
        as_bob = {"Authorization": f"Bearer {bob}"}
        mine = api.post("/v1/checks", json={"claim": "x"}, headers=as_alice).json()
        assert mine["request"]["budget"]["calls"] == 5
        # The limits alice's table leaves out are the server's: its seconds, the default's.
        assert mine["request"]["budget"]["seconds"] == 3600.0
        over = api.post("/v1/checks", json={"claim": "x", "budget": {"calls": 6}}, headers=as_alice)
        assert error_of(over, 422)["field"] == "budget.calls"
        theirs = api.post("/v1/checks", json={"claim": "x"}, headers=as_bob).json()
        assert theirs["request"]["budget"]["calls"] == 40


def test_a_key_whose_calls_for_the_minute_are_spent_is_told_when_to_come_back(
    make_service,
) -> None:
    service = limited(make_service, calls_per_minute=2)
    for _ in range(2):
        assert service.usage_limits.wait_for_room(
            None, stopped=lambda: False, seconds_left=lambda: None
        )
    with TestClient(create_app(service)) as api:
        error = api.post("/v1/checks", json={"claim": "x"})
        assert error_of(error, 429)["code"] == "rate_limited"
        assert int(error.headers["Retry-After"]) >= 1


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def test_a_call_holds_its_place_until_a_minute_after_it_answered() -> None:
    clock = Clock()
    limiter = UsageLimiter(calls_per_minute=2, clock=clock, sleep=clock.sleep)
    go = {"stopped": lambda: False, "seconds_left": lambda: None}
    assert limiter.wait_for_room("a", **go) and limiter.wait_for_room("a", **go)
    assert limiter.retry_after("a") is not None  # two in flight: no room
    assert limiter.retry_after("b") is None  # another key's window is its own
    clock.now += 30
    limiter.charge("a", 0)  # the first answers at 1030: its place frees at 1090
    clock.now += 10
    limiter.charge("a", 0)  # the second at 1040: frees at 1100
    assert limiter.retry_after("a") == pytest.approx(50)  # 1090 - 1040, worked by hand
    assert limiter.wait_for_room("a", **go)  # waits (on the fake clock) until 1090
    assert clock.now == pytest.approx(1090, abs=0.3)


def test_tokens_a_minute_count_from_each_answer() -> None:
    clock = Clock()
    limiter = UsageLimiter(tokens_per_minute=100, clock=clock, sleep=clock.sleep)
    go = {"stopped": lambda: False, "seconds_left": lambda: None}
    assert limiter.wait_for_room(None, **go)
    limiter.charge(None, 70)
    assert limiter.retry_after(None) is None  # 70 < 100
    assert limiter.wait_for_room(None, **go)
    clock.now += 5
    limiter.charge(None, 40)  # 110 >= 100: full until the first 70 leave, at +60
    assert limiter.retry_after(None) == pytest.approx(55)


def test_a_wait_longer_than_the_checks_time_left_stops_the_check() -> None:
    clock = Clock()
    limiter = UsageLimiter(calls_per_minute=1, clock=clock, sleep=clock.sleep)
    assert limiter.wait_for_room(None, stopped=lambda: False, seconds_left=lambda: None)
    limiter.charge(None, 0)
    with pytest.raises(BudgetExceededError) as info:
        limiter.wait_for_room(None, stopped=lambda: False, seconds_left=lambda: 10.0)
    assert info.value.limit == "seconds"
    # A cancelled job stops waiting at once, and takes no place.
    assert not limiter.wait_for_room(None, stopped=lambda: True, seconds_left=lambda: None)


def test_a_job_stopped_by_its_budget_keeps_what_it_did(make_service) -> None:
    from faults.latency import LatencyEndpoint
    from verity.service.execute import LocalExecutor

    # Every answer fails validation, so each check asks for a repair: a second call that
    # a budget of one call refuses.
    with LatencyEndpoint(delay=0.0, answer=lambda messages, schema: "not json") as endpoint:
        model = ModelSettings(spec="openai:m", base_url=endpoint.base_url, cache=False)
        defaults = Settings(method="direct", model=model, sources=(), budget=Budget(calls=1))
        service = make_service(defaults=defaults, executor=LocalExecutor(defaults))
        with TestClient(create_app(service)) as api:
            job = api.post("/v1/checks", params={"wait": 30}, json={"claim": "x"}).json()
        assert job["status"] == "failed"
        assert job["error"]["code"] == "budget_exceeded"
        assert job["partial"]["usage"]["llm_calls"] == 1
        assert len(job["partial"]["trace"]["calls"]) == 1
        assert endpoint.count == 1


def test_the_methods_list_says_what_a_request_may_set(api: TestClient) -> None:
    methods = {m["name"]: m for m in api.get("/v1/methods").json()}
    toe = methods["toe"]["settings"]
    assert "weights" not in toe
    assert (toe["max_iterations"]["minimum"], toe["max_iterations"]["maximum"]) == (1, 100)
    assert "demos_file" not in methods["local"]["settings"]
    assert "checkpoint" not in methods["nli"]["settings"]
    assert "k" in methods["rag"]["settings"]


def test_a_method_a_subject_does_not_suit_is_refused_without_repeating_it(
    api: TestClient,
) -> None:
    variant = error_of(api.post("/v1/checks", json={"claim": "x", "method": "zofia/SECRET9"}), 400)
    assert variant["code"] == "unknown_variant" and "SECRET9" not in str(variant)
    unsuited = api.post("/v1/checks", json={"claim": "x", "method": "zofia"})
    error = error_of(unsuited, 400)
    assert error["code"] == "unsuitable_method" and "zofia" not in error["message"]
    assert "rag" in error["valid"]


def test_a_call_cancelled_while_it_waits_for_its_keys_rate_gives_its_place_back() -> None:
    from verity.domain import Message
    from verity.llm.budget import spending
    from verity.llm.client import ModelClient
    from verity.testing import FakeChatModel

    clock = Clock()
    limiter = UsageLimiter(calls_per_minute=1, clock=clock, sleep=lambda s: time.sleep(0.005))
    assert limiter.wait_for_room(None, stopped=lambda: False, seconds_left=lambda: None)
    limiter.charge(None, 0)  # answered now: its place frees 60 s later
    model = ModelClient(FakeChatModel(["an answer"]))

    seen: list[bool] = []

    def before(spend: Any, abandoned: Any) -> None:
        # As the server's hook: a call whose caller gave up stops waiting, taking no place.
        took = limiter.wait_for_room(
            None, stopped=abandoned.is_set, seconds_left=spend.remaining_seconds
        )
        seen.append(took)
        if not took:
            raise RuntimeError("gone")

    def after(usage: Any) -> None:
        limiter.release(None) if usage is None else limiter.charge(None, usage.tokens)

    async def cancel_a_waiting_call() -> None:
        task = asyncio.ensure_future(model.achat([Message(role="user", content="hi")]))
        await asyncio.sleep(0.05)  # its admission waits in a worker thread
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    with spending(None, before_call=before, after_call=after):
        asyncio.run(cancel_a_waiting_call())  # returns once the waiting thread gave up
    assert seen == [False]  # it stopped waiting, and took no place
    assert model.backend.requests == []
    assert limiter._windows[None].in_flight == 0
    clock.now += 61
    assert limiter.retry_after(None) is None  # the key's minute is not held by a ghost


def test_room_comes_when_enough_answered_calls_have_left_the_window() -> None:
    clock = Clock()
    limiter = UsageLimiter(calls_per_minute=3, clock=clock, sleep=clock.sleep)
    go = {"stopped": lambda: False, "seconds_left": lambda: None}
    for _ in range(3):
        assert limiter.wait_for_room(None, **go)
    for _ in range(3):
        limiter.charge(None, 0)  # answered at 1000, 1010, 1020
        clock.now += 10
    clock.now = 1020.0
    limiter.calls_per_minute = 2  # three held, two allowed: two must leave, the second at 1070
    assert limiter.retry_after(None) == pytest.approx(50)


def test_a_place_never_used_is_free_at_once() -> None:
    clock = Clock()
    limiter = UsageLimiter(calls_per_minute=1, clock=clock, sleep=clock.sleep)
    assert limiter.wait_for_room(None, stopped=lambda: False, seconds_left=lambda: None)
    assert limiter.retry_after(None) is not None
    limiter.release(None)  # let through, never sent
    assert limiter.retry_after(None) is None


def test_room_for_tokens_comes_when_enough_of_them_have_left() -> None:
    clock = Clock()
    limiter = UsageLimiter(tokens_per_minute=100, clock=clock, sleep=clock.sleep)
    go = {"stopped": lambda: False, "seconds_left": lambda: None}
    for tokens in (20, 30, 70):  # at 1000, 1005, 1010: 120, 20 over the limit
        assert limiter.wait_for_room(None, **go)
        limiter.charge(None, tokens)
        clock.now += 5
    clock.now = 1010.0
    # The first 20 leaving is not enough (120 - 20 = 100 is still the limit); the 30 of
    # 1005 must leave too, at 1065: 55 s from now, worked by hand.
    assert limiter.retry_after(None) == pytest.approx(55)


def test_a_job_stored_without_a_budget_runs_within_the_servers_default() -> None:
    from faults.latency import LatencyEndpoint
    from verity.service.execute import LocalExecutor

    with LatencyEndpoint(delay=0.0, answer=lambda messages, schema: "not json") as endpoint:
        model = ModelSettings(spec="openai:m", base_url=endpoint.base_url, cache=False)
        defaults = Settings(method="direct", model=model, sources=(), budget=Budget(calls=1))
        with pytest.raises(BudgetExceededError):
            LocalExecutor(defaults)(CheckRequest(claim="x"), lambda event: None)
        assert endpoint.count == 1  # the repair was refused: the default's one call


def test_a_model_a_request_names_is_priced_as_itself() -> None:
    from verity.llm.prices import Price
    from verity.service.plans import request_model

    a, b = Price(input=1.0, output=2.0), Price(input=3.0, output=4.0)
    defaults = Settings(
        model=ModelSettings(spec="openai:a", base_url="http://127.0.0.1:9/v1"),
        prices={"openai:a": a, "openai:b": b},
    )
    assert request_model(None, defaults)[0].price == a
    assert request_model("openai:b", defaults)[0].price == b
    assert request_model("openai:c", defaults)[0].price is None  # never a's


def test_a_servers_running_checks_count_their_tokens_in_the_keys_window(make_service) -> None:
    from faults.latency import LatencyEndpoint
    from verity.service.execute import LocalExecutor

    with LatencyEndpoint(delay=0.0) as endpoint:
        model = ModelSettings(spec="openai:m", base_url=endpoint.base_url, cache=False)
        defaults = Settings(
            method="direct",
            model=model,
            sources=(),
            service=ServiceLimits(tokens_per_minute=1000, calls_per_minute=100),
        )
        service = make_service(defaults=defaults, executor=LocalExecutor(defaults))
        with TestClient(create_app(service)) as api:
            job = api.post("/v1/checks", params={"wait": 30}, json={"claim": "x"}).json()
        assert job["status"] == "done"
        window = service.usage_limits._windows[None]
        # The check's call and the grounding's, each of 12 + 5 tokens (what the endpoint
        # reports), answered, none in flight: the key's window counts every call it made.
        assert (window.token_total, len(window.answered), window.in_flight) == (34, 2, 0)
