"""The engine layer without a cluster: the thread engine, errors that travel, the worker
bodies run in place, and a clear error for --engine ray when Ray is not installed."""

from __future__ import annotations

import json
import pickle
import sys
import threading
from functools import partial
from pathlib import Path

import pytest

from verity import events
from verity.batch import Checks, Outcome
from verity.cli.output import exit_code
from verity.domain import Claim, Label, Verdict
from verity.engines import WorkerLostError, engine_for, portable_error
from verity.engines.actors import CheckCancelled, ItemWorker, JobWorker
from verity.engines.thread import ThreadEngine
from verity.errors import BadInputError, ConfigError, MissingKeyError, UnknownNameError

PATIENCE = 60.0  # outer limit of a wait; only a hang reaches it


class Squares:
    """Work for control flow: the square of each number; 13 fails in the function."""

    def __init__(self, meet: threading.Barrier | None = None) -> None:
        self.meet = meet
        self.built = 0

    def build(self):
        self.built += 1

        def square(n: int) -> int:
            if self.meet is not None:
                self.meet.wait(timeout=PATIENCE)
            if n == 13:
                raise ValueError("unlucky")
            return n * n

        return square

    def failed(self, item: int, error: Exception) -> str:
        return f"{item}: {type(error).__name__}: {error}"


def test_the_thread_engine_runs_items_at_once_and_calls_back_one_at_a_time() -> None:
    work = Squares(meet=threading.Barrier(4))  # four items must be in flight together
    seen: list[tuple[int, object]] = []
    inside = threading.Lock()

    def on_result(item: int, result: object) -> None:
        assert inside.acquire(blocking=False), "on_result was entered twice at once"
        try:
            seen.append((item, result))
        finally:
            inside.release()

    with ThreadEngine() as engine:
        engine.run(work, [1, 2, 3, 13], on_result, concurrency=4)
    assert work.built == 1
    assert sorted(seen, key=lambda pair: pair[0]) == [
        (1, 1), (2, 4), (3, 9), (13, "13: ValueError: unlucky"),
    ]  # fmt: skip


def test_the_thread_engine_runs_each_item_in_the_callers_context() -> None:
    class Emits:
        def build(self):
            return lambda n: events.check_started("test", str(n))

        def failed(self, item, error):
            raise AssertionError(error)

    heard: list[str] = []
    with events.listening(lambda e: heard.append(e.message)), ThreadEngine() as engine:
        engine.run(Emits(), [1, 2], lambda *_: None, concurrency=2)
    assert sorted(heard) == ["test: checking 1", "test: checking 2"]


class NeedsTwo(ConfigError):
    """An error whose constructor wants more than its message (as a plug-in's may)."""

    def __init__(self, service: str, env_var: str) -> None:
        super().__init__(f"{service} needs {env_var}")


def test_an_error_that_cannot_be_rebuilt_travels_as_its_nearest_parent() -> None:
    needy = NeedsTwo("Brave Search", "BRAVE_API_KEY")
    with pytest.raises(TypeError):  # why it needs help: its class wants two arguments
        pickle.loads(pickle.dumps(needy))
    sent = pickle.loads(pickle.dumps(portable_error(needy)))
    assert type(sent) is ConfigError and str(sent) == str(needy)
    assert exit_code(sent) == exit_code(needy) == 3
    # verity's own errors with parts are rebuilt from them, so they travel as themselves.
    missing = MissingKeyError("Brave Search", "BRAVE_API_KEY")
    assert portable_error(missing) is missing
    unknown = portable_error(UnknownNameError("method", "nope", ["direct"]))
    assert type(unknown) is UnknownNameError and unknown.known == ["direct"]
    plain = BadInputError("bad")
    assert portable_error(plain) is plain


def test_a_batch_outcome_arrives_with_an_error_of_the_same_kind() -> None:
    outcome = pickle.loads(pickle.dumps(Outcome(error=MissingKeyError("x", "X_KEY"))))
    assert isinstance(outcome.error, ConfigError) and "X_KEY" in str(outcome.error)
    claim = Claim(text="Paris is in France.")
    verdict = Verdict(label=Label.SUPPORTED, method="test", subject=claim)
    assert pickle.loads(pickle.dumps(Outcome(verdict=verdict))).verdict == verdict


def test_checks_record_an_items_error_as_its_outcome() -> None:
    def verify(subject):
        raise BadInputError(f"cannot check {subject.text}")

    from verity.batch import BatchItem

    item = BatchItem(key="a", line=1, subject=Claim(text="x"))
    outcome = Checks(partial(lambda f: f, verify)).build()(item)
    assert outcome.verdict is None and str(outcome.error) == "cannot check x"


def test_the_item_worker_builds_once_and_sends_errors_that_travel() -> None:
    worker = ItemWorker(Squares())
    assert worker.ready() is True
    assert [worker.check(n) for n in (2, 13)] == [4, "13: ValueError: unlucky"]
    assert worker.work.built == 1

    class NoKey(Squares):
        def build(self):
            raise MissingKeyError("the endpoint", "ENDPOINT_KEY")

    with pytest.raises(ConfigError, match="ENDPOINT_KEY") as raised:
        ItemWorker(NoKey()).ready()
    pickle.loads(pickle.dumps(raised.value))  # what Ray sends back can be read back


def test_the_job_worker_streams_events_then_the_verdict() -> None:
    def executor(request, listener):
        with events.listening(listener):
            events.check_started("test", request["claim"])
            events.check_ended("test", Label.SUPPORTED, 0.0)
        return Verdict(label=Label.SUPPORTED, method="test", subject=Claim(text=request["claim"]))

    out = list(JobWorker(lambda: executor).run("c1", {"claim": "Paris is in France."}))
    assert [kind for kind, _ in out] == ["event", "event", "verdict"]
    assert [payload.seq for kind, payload in out if kind == "event"] == [1, 2]
    assert out[-1][1].label == Label.SUPPORTED


def test_a_cancelled_job_stops_at_its_next_event() -> None:
    go_on = threading.Event()

    def executor(request, listener):
        with events.listening(listener):
            events.check_started("test", "first")
            go_on.wait(PATIENCE)
            events.check_started("test", "second")  # the cancel takes effect here
            raise AssertionError("the check went on after it was cancelled")

    worker = JobWorker(lambda: executor)
    stream = worker.run("job-1", {})
    kind, first = next(stream)
    assert kind == "event" and first.seq == 1
    worker.cancel("job-1")
    go_on.set()
    kind, error = next(stream)
    assert kind == "error" and isinstance(error, CheckCancelled)
    assert list(stream) == []
    worker.cancel("job-1")  # over: nothing is kept for it
    assert worker._cancelled == set() and worker._running == set()


def test_engine_names_and_addresses_are_checked() -> None:
    with pytest.raises(BadInputError, match="--engine must be thread or ray, not 'fast'"):
        engine_for("fast")
    with pytest.raises(BadInputError, match=r"--address .* with --engine ray"):
        engine_for("thread", address="auto")
    assert isinstance(engine_for("thread"), ThreadEngine)


@pytest.fixture
def no_ray(monkeypatch: pytest.MonkeyPatch) -> None:
    """Ray as if it were not installed: importing it fails."""
    monkeypatch.setitem(sys.modules, "ray", None)


@pytest.mark.usefixtures("no_ray")
def test_without_ray_the_ray_engine_is_a_config_error_naming_the_extra() -> None:
    from verity.engines.ray import RayEngine, RayExecutor

    with pytest.raises(ConfigError, match=r"pip install 'verity\[ray\]'"):
        engine_for("ray")
    with pytest.raises(ConfigError, match=r"pip install 'verity\[ray\]'"):
        RayEngine()
    with pytest.raises(ConfigError, match=r"pip install 'verity\[ray\]'"):
        RayExecutor(lambda: None)  # type: ignore[arg-type, return-value]


@pytest.mark.usefixtures("no_ray")
def test_without_ray_the_commands_exit_with_the_config_code(cli, tmp_path: Path) -> None:
    claims = tmp_path / "in.jsonl"
    claims.write_text(json.dumps({"id": "a", "claim": "Paris is in France."}) + "\n")
    out = tmp_path / "out.jsonl"
    argv = ["check", "--input", str(claims), "--output", str(out), "--engine", "ray"]
    code, _, err = cli(argv)
    assert code == 3, err
    assert "pip install 'verity[ray]'" in err and "Traceback" not in err
    assert not out.exists()  # refused before anything was opened
    code, _, err = cli(["bench", "--dataset", "fever", "--engine", "ray", "--out", str(tmp_path)])
    assert code == 3 and "pip install 'verity[ray]'" in err


def test_engine_options_belong_to_a_batch(cli) -> None:
    code, _, err = cli(["check", "Paris is in France.", "--engine", "ray"])
    assert code == 2 and "--engine and --address apply to a batch" in err
    code, _, err = cli(["check", "Paris is in France.", "--address", "auto"])
    assert code == 2 and "apply to a batch" in err


def test_a_lost_worker_is_a_verity_error() -> None:
    from verity.errors import VerityError

    assert issubclass(WorkerLostError, VerityError)
    assert exit_code(WorkerLostError("gone")) == 1


def test_an_address_where_nothing_listens_is_refused_at_once() -> None:
    import socket

    from verity.engines.cluster import probe

    with socket.socket() as s:  # a port that was free a moment ago: nothing listens there
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(ConfigError, match=f"cannot reach the Ray cluster at 127.0.0.1:{port}"):
        probe(f"127.0.0.1:{port}")
    with socket.socket() as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        probe(f"127.0.0.1:{listening.getsockname()[1]}")  # something answers: Ray's turn
    probe("auto")  # other forms are Ray's to resolve
    probe("ray://head:10001")
