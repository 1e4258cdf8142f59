"""The event stream of a check, over a real uvicorn on loopback: live, replayed, resumed, ended.

The checks are the scripted fake's (tests/service/conftest.py), held step by step by the
test, so each event is seen arrive while the check is still running.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from verity.service.sse import resume_point

OUTER_LIMIT = 60.0


def frames(lines: Iterator[str]) -> Iterator[dict[str, Any]]:
    """The frames of an SSE stream: ``{"id", "event", "data", "comment"}`` for each."""
    frame: dict[str, Any] = {}
    for line in lines:
        if not line:
            if frame:
                yield frame
            frame = {}
        elif line.startswith(":"):
            yield {"comment": line[1:].strip()}
        else:
            name, _, value = line.partition(": ")
            frame[name] = json.loads(value) if name == "data" else value


def events_of(server, job_id: str, **headers: str):
    return httpx.stream(
        "GET", f"{server.url}/v1/checks/{job_id}/events", headers=headers, timeout=OUTER_LIMIT
    )


def submit(server, claim: str = "The Eiffel Tower is in Paris.") -> dict[str, Any]:
    answer = httpx.post(f"{server.url}/v1/checks", json={"claim": claim}, timeout=OUTER_LIMIT)
    assert answer.status_code == 202, answer.text
    return answer.json()


def test_events_arrive_live_while_the_check_runs_then_end(live_server) -> None:
    job = submit(live_server)
    fake = live_server.executor
    seen: list[dict[str, Any]] = []
    with events_of(live_server, job["id"]) as stream:
        assert stream.headers["content-type"].startswith("text/event-stream")
        for frame in frames(stream.iter_lines()):
            if "event" not in frame:
                continue  # the retry hint, comments
            seen.append(frame)
            if frame["event"] == "check.start" or frame["data"].get("name") == "fake.step":
                if frame["data"]["seq"] < 4:  # after the third step, nothing holds the check
                    # Held: this event came before the next step was allowed.
                    job_now = httpx.get(f"{live_server.url}/v1/checks/{job['id']}").json()
                    assert job_now["status"] == "running"
                fake.allow()
            if frame["event"] == "end":
                break
    kinds = [f["event"] for f in seen]
    assert kinds == ["check.start", "milestone", "milestone", "milestone", "check.end", "end"]
    assert [int(f["id"]) for f in seen[:-1]] == [1, 2, 3, 4, 5]
    assert [f["data"]["seq"] for f in seen[:-1]] == [1, 2, 3, 4, 5]
    assert seen[1]["data"]["message"] == "step 1 of 3" and seen[1]["data"]["kind"] == "milestone"
    assert seen[-1]["data"] == {"status": "done", "label": "SUPPORTED", "error": None}
    assert "id" not in seen[-1]


def test_a_late_subscriber_gets_every_event_from_the_start(live_server) -> None:
    live_server.executor.open()
    job = httpx.post(
        f"{live_server.url}/v1/checks?wait=60", json={"claim": "Paris is in France."}
    ).json()
    assert job["status"] == "done"
    with events_of(live_server, job["id"]) as stream:
        seen = [f for f in frames(stream.iter_lines()) if "event" in f]
    kinds = [f["event"] for f in seen]
    assert kinds[0] == "check.start" and kinds[-1] == "end" and len(kinds) == 6


def test_last_event_id_resumes_after_it(live_server) -> None:
    live_server.executor.open()
    job = httpx.post(f"{live_server.url}/v1/checks?wait=60", json={"claim": "Rome."}).json()
    with events_of(live_server, job["id"], **{"Last-Event-ID": "3"}) as stream:
        ids = [f.get("id") for f in frames(stream.iter_lines()) if "event" in f]
    assert ids == ["4", "5", None]  # then the end, which has no id
    assert resume_point("not a number") == 0 and resume_point("-4") == 0


def test_a_quiet_stream_sends_a_heartbeat(make_service, scripted, serve_live) -> None:
    fake = scripted(steps=1, gated=True)
    service = make_service(fake, heartbeat_seconds=0.2)
    with serve_live(service) as url:
        job = httpx.post(f"{url}/v1/checks", json={"claim": "Quiet."}).json()
        with httpx.stream("GET", f"{url}/v1/checks/{job['id']}/events") as stream:
            for frame in frames(stream.iter_lines()):
                if frame.get("comment"):
                    break  # nothing happened for a while: the heartbeat came
                assert frame.get("event") != "end"
        fake.open()


def test_a_check_cancelled_while_followed_ends_its_stream_cancelled(live_server) -> None:
    job = submit(live_server)
    with events_of(live_server, job["id"]) as stream:
        for frame in frames(stream.iter_lines()):
            if frame.get("event") == "check.start":
                cancelled = httpx.delete(f"{live_server.url}/v1/checks/{job['id']}")
                assert cancelled.json()["status"] == "cancelled"
            if frame.get("event") == "end":
                assert frame["data"]["status"] == "cancelled"
                assert frame["data"]["error"]["code"] == "cancelled"
                break
    live_server.executor.allow()  # the worker meets the cancel at its next step


def test_an_unknown_check_is_404_in_the_one_shape_not_a_stream(live_server) -> None:
    answer = httpx.get(f"{live_server.url}/v1/checks/{'0' * 32}/events")
    assert answer.status_code == 404
    assert answer.json()["error"]["code"] == "not_found"


def test_open_streams_end_when_the_server_shuts_down(live_server) -> None:
    job = submit(live_server)
    ended = threading.Event()
    got: list[dict[str, Any]] = []

    def follow() -> None:
        with events_of(live_server, job["id"]) as stream:
            for frame in frames(stream.iter_lines()):
                got.append(frame)
                if frame.get("event") == "check.start":
                    live_server.service.begin_shutdown()
        ended.set()

    reader = threading.Thread(target=follow)
    reader.start()
    assert ended.wait(OUTER_LIMIT), "the stream stayed open after the shutdown began"
    reader.join(OUTER_LIMIT)
    assert "end" not in [f.get("event") for f in got]  # the check has not ended
    live_server.executor.open()


@pytest.mark.parametrize("header", ["3", "7 x", "x", "", "-1", "99999999999"])
def test_any_last_event_id_is_taken_without_error(live_server, header: str) -> None:
    live_server.executor.open()
    job = httpx.post(f"{live_server.url}/v1/checks?wait=60", json={"claim": "Any."}).json()
    with events_of(live_server, job["id"], **{"Last-Event-ID": header}) as stream:
        assert stream.status_code == 200
        last = [f for f in frames(stream.iter_lines()) if "event" in f][-1]
    assert last["event"] == "end"
