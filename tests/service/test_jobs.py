"""The job store: states, guarded ends, events, recovery after a crash, and the request shape."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest
from pydantic import ValidationError

from verity.domain import Claim, Event
from verity.errors import ConfigError
from verity.service.errors import JobError, job_error
from verity.service.jobs import JobStore, store_path_from_url
from verity.service.requests import CheckRequest


def event(seq: int, kind: str = "milestone") -> Event:
    return Event(seq=seq, kind=kind, at=0.1 * seq, message=f"step {seq}")


@pytest.fixture
def store(tmp_path: Path):
    with JobStore(tmp_path / "jobs.sqlite") as opened:
        yield opened


def claim(text: str = "The Eiffel Tower is in Paris.") -> CheckRequest:
    return CheckRequest(claim=text)


def test_a_job_goes_queued_running_done_and_keeps_its_verdict(store: JobStore) -> None:
    job = store.create(claim(), method="rag", key="alice")
    assert (job.status, job.runs, job.method, job.key) == ("queued", 0, "rag", "alice")
    assert job.request == {"claim": "The Eiffel Tower is in Paris."}
    started = store.start(job.id)
    assert started is not None and (started.status, started.runs) == ("running", 1)
    assert started.started is not None
    assert store.finish(job.id, 1, {"label": "SUPPORTED", "claim": "x"})
    done = store.get(job.id)
    assert done is not None and done.status == "done" and done.final
    assert done.verdict == {"label": "SUPPORTED", "claim": "x"} and done.label == "SUPPORTED"
    assert done.finished is not None and done.finished >= done.created


def test_a_job_ends_once_and_a_stale_run_changes_nothing(store: JobStore) -> None:
    job = store.create(claim())
    store.start(job.id)
    assert store.finish(job.id, 1, {"label": "SUPPORTED"})
    assert not store.finish(job.id, 1, {"label": "REFUTED"})
    assert not store.fail(job.id, 1, JobError(code="x", message="late"))
    assert store.get(job.id).label == "SUPPORTED"
    # A run that was taken back (the server stopped) cannot end the next run.
    other = store.create(claim("Paris is in France."))
    store.start(other.id)
    assert store.requeue(other.id, 1)
    store.start(other.id)
    assert not store.finish(other.id, 1, {"label": "REFUTED"})
    assert store.finish(other.id, 2, {"label": "SUPPORTED"})


def test_cancel_is_at_once_and_final(store: JobStore) -> None:
    queued = store.create(claim())
    assert store.cancel(queued.id).status == "cancelled"
    assert store.start(queued.id) is None  # a worker that took it late does nothing
    running = store.create(claim("Another."))
    store.start(running.id)
    cancelled = store.cancel(running.id)
    assert cancelled.status == "cancelled" and cancelled.error.code == "cancelled"
    assert not store.add_event(running.id, 1, event(1))  # the worker's next event stops it
    assert not store.finish(running.id, 1, {"label": "SUPPORTED"})
    assert store.get(running.id).status == "cancelled"
    assert store.cancel("no-such-id") is None


def test_events_are_kept_in_order_and_a_new_run_starts_them_afresh(store: JobStore) -> None:
    job = store.create(claim())
    assert not store.add_event(job.id, 0, event(1))  # not running yet
    store.start(job.id)
    for seq in (1, 2, 3):
        assert store.add_event(job.id, 1, event(seq))
    assert [e.seq for e in store.events(job.id)] == [1, 2, 3]
    assert [e.seq for e in store.events(job.id, after_seq=2)] == [3]
    first = store.events(job.id)[0]
    assert first.kind == "milestone" and Event.model_validate_json(first.json) == event(1)
    # A crash, then the run again: the old events are gone, the new ones count from 1.
    assert store.recover() == [job.id]
    store.start(job.id)
    assert store.events(job.id) == []
    assert not store.add_event(job.id, 1, event(4))  # the dead run's worker is stale
    assert store.add_event(job.id, 2, event(1))


def test_recover_requeues_running_jobs_oldest_first_and_leaves_finished_ones(
    store: JobStore,
) -> None:
    ids = [store.create(claim(f"Claim {n}.")).id for n in range(4)]
    store.start(ids[0])
    store.start(ids[1])
    store.finish(ids[1], 1, {"label": "SUPPORTED"})
    store.start(ids[2])
    assert store.recover() == [ids[0], ids[2], ids[3]]
    assert store.get(ids[0]).status == "queued" and store.get(ids[0]).runs == 1
    assert store.get(ids[1]).status == "done"


def test_what_a_process_wrote_is_there_for_the_next(tmp_path: Path) -> None:
    path = tmp_path / "jobs.sqlite"
    first = JobStore(path)
    job = first.create(claim())
    first.start(job.id)
    first.add_event(job.id, 1, event(1))
    # No close: a killed process closes nothing. Another connection sees every commit.
    with JobStore(path) as second:
        assert second.get(job.id).status == "running"
        assert [e.seq for e in second.events(job.id)] == [1]
        assert second.recover() == [job.id]
    first.close()
    mode = sqlite3.connect(path).execute("PRAGMA journal_mode").fetchone()[0]
    assert mode == "wal"


def test_history_is_newest_first_paged_and_per_key(store: JobStore) -> None:
    ids = [store.create(claim(f"Claim {n}."), key="a" if n % 2 else "b").id for n in range(5)]
    page = store.history(limit=2, offset=1)
    assert [j.id for j in page] == [ids[3], ids[2]]
    assert [j.id for j in store.history(key="a")] == [ids[3], ids[1]]
    assert store.count() == 5 and store.count(key="b") == 3
    assert store.get(ids[0], key="a") is None and store.get(ids[0], key="b") is not None
    assert store.counts()["queued"] == 5
    assert page[0].summary == "Claim 3."


def test_many_threads_share_one_store(store: JobStore) -> None:
    job = store.create(claim())
    store.start(job.id)

    def write(start: int) -> None:
        for seq in range(start, start + 50):
            store.add_event(job.id, 1, event(seq))

    threads = [threading.Thread(target=write, args=(1 + 50 * n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [e.seq for e in store.events(job.id)] == list(range(1, 201))


def test_db_urls() -> None:
    assert store_path_from_url("sqlite:///jobs.sqlite") == "jobs.sqlite"
    assert store_path_from_url("sqlite:////var/lib/verity/jobs.sqlite") == (
        "/var/lib/verity/jobs.sqlite"
    )
    for bad in ("postgres://x/y", "sqlite:///", "jobs.sqlite"):
        with pytest.raises(ConfigError, match="sqlite:///PATH"):
            store_path_from_url(bad)


def test_the_default_store_lives_in_the_cache_folder() -> None:
    with JobStore() as store:
        assert store.path.endswith("service.sqlite")


def test_a_store_that_cannot_be_opened_is_a_config_error(tmp_path: Path) -> None:
    folder = tmp_path / "a-folder.sqlite"
    folder.mkdir()
    with pytest.raises(ConfigError, match="cannot open the job store"):
        JobStore(folder)


# -- the request ---------------------------------------------------------------------------


def test_a_request_names_exactly_one_subject() -> None:
    with pytest.raises(ValidationError, match="exactly one of claim, article or url"):
        CheckRequest()
    with pytest.raises(ValidationError, match="got claim and url"):
        CheckRequest(claim="x", url="https://example.org/")
    article = CheckRequest.model_validate({"article": {"title": "T", "text": "Body."}})
    assert article.kind().__name__ == "Article" and article.summary() == "T"
    url = CheckRequest(url="https://example.org/a")
    assert url.subject() is None and url.kind().__name__ == "Article"


def test_a_request_refuses_blank_text_unknown_keys_and_other_schemes() -> None:
    for bad in (
        {"claim": "   "},
        {"claim": "x", "colour": "red"},
        {"url": "file:///etc/passwd"},
        {"url": "javascript:alert(1)"},
        {"article": {"text": " \n"}},
        {"article": {"text": "x"}, "speaker": "Someone"},
        {"claim": "x", "sources": []},
        {"claim": "x", "date": "yesterday"},
    ):
        with pytest.raises(ValidationError):
            CheckRequest.model_validate(bad)


def test_a_claim_request_keeps_its_date_and_speaker_and_a_date_wins_for_an_article() -> None:
    subject = CheckRequest.model_validate(
        {"claim": "Taxes rose.", "date": "2020-05-01", "speaker": "A senator"}
    ).subject()
    assert isinstance(subject, Claim) and subject.speaker == "A senator"
    article = CheckRequest.model_validate(
        {"article": {"text": "Body.", "date": "2019-01-01"}, "date": "2020-05-01"}
    ).subject()
    assert str(article.date) == "2020-05-01"


def test_a_summary_is_one_short_line() -> None:
    line = CheckRequest(claim="word\n" * 200).summary()
    assert "\n" not in line and len(line) == 200 and line.endswith("…")
    shown = CheckRequest(url="https://example.org/a?api_key=s3cret&page=2").summary()
    assert "s3cret" not in shown and "page=2" in shown


def test_job_errors_name_their_kind_and_hide_unexpected_messages() -> None:
    from verity.errors import SourceUnavailableError, UnknownNameError

    assert job_error(SourceUnavailableError("down")).code == "source_unavailable"
    assert job_error(UnknownNameError("source", "x", ["a"])).code == "unknown_name"
    leaked = job_error(RuntimeError("password=hunter2"))
    assert leaked.code == "internal" and "hunter2" not in leaked.message
