"""API keys: hashed in a key file, recognised by hash, and a token bucket per key name."""

from __future__ import annotations

import hashlib
import hmac
import logging
import os
import re
import stat
import sys
import threading
from pathlib import Path

import pytest

from verity.errors import BadInputError, ConfigError
from verity.service import keys as keys_module
from verity.service.keys import (
    KEY_PREFIX,
    KeyRing,
    RateLimiter,
    add_key,
    hash_key,
    new_key,
    read_key_file,
)


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def write(path: Path, text: str, mode: int = 0o600) -> Path:
    path.write_text(text, encoding="utf-8")
    path.chmod(mode)
    return path


# --- keys and hashes ---------------------------------------------------------------------


def test_a_new_key_is_long_random_and_recognisable() -> None:
    made = {new_key() for _ in range(200)}
    assert len(made) == 200
    for key in made:
        assert key.startswith(KEY_PREFIX)
        assert re.fullmatch(r"vty_[A-Za-z0-9_-]{43}", key)  # 32 bytes of base64


def test_the_hash_is_sha256_hex_of_the_key() -> None:
    assert hash_key("vty_abc") == hashlib.sha256(b"vty_abc").hexdigest()


def test_a_ring_names_the_key_presented_and_nothing_else() -> None:
    alice, bob = new_key(), new_key()
    ring = KeyRing({"alice": hash_key(alice), "bob": hash_key(bob).upper()})
    assert ring.name_of(alice) == "alice"
    assert ring.name_of(bob) == "bob"
    assert ring.names == ("alice", "bob")
    for wrong in ("", alice[:-1], alice + "x", hash_key(alice), " " + alice, "\udcff", "é" * 300):
        assert ring.name_of(wrong) is None


def test_keys_are_compared_in_constant_time_against_every_entry(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    compared: list[tuple[bytes, bytes]] = []
    real = hmac.compare_digest

    def spy(a: bytes, b: bytes) -> bool:
        compared.append((a, b))
        return real(a, b)

    monkeypatch.setattr(keys_module.hmac, "compare_digest", spy)
    first = new_key()
    ring = KeyRing({"first": hash_key(first), "second": hash_key(new_key()), "third": "0" * 64})
    assert ring.name_of(first) == "first"
    # All three compared, the matching first one included: no early exit to time.
    assert len(compared) == 3
    assert all(a == hashlib.sha256(first.encode()).digest() for a, _ in compared)


@pytest.mark.parametrize(
    ("hashes", "message"),
    [
        ({"alice": "abc"}, "not 64 hexadecimal digits"),
        ({"al ice": "0" * 64}, "a key name is 1 to 64"),
        ({"a:b": "0" * 64}, "no ':'"),
    ],
)
def test_a_ring_refuses_bad_entries(hashes: dict[str, str], message: str) -> None:
    with pytest.raises((ConfigError, BadInputError), match=message):
        KeyRing(hashes)


# --- the key file ------------------------------------------------------------------------


def test_a_key_file_loads_with_comments_and_blank_lines(tmp_path: Path) -> None:
    alice, bob = new_key(), new_key()
    path = write(
        tmp_path / "keys.txt",
        f"# keys of the demo server\n\nalice:{hash_key(alice)}\n  # ops\nbob.ops@x : "
        f"{hash_key(bob).upper()}  \n",
    )
    ring = KeyRing.load(path)
    assert ring.names == ("alice", "bob.ops@x")
    assert ring.name_of(bob) == "bob.ops@x"
    assert len(ring) == 2


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("alice\n", r"line 1: expected NAME:SHA256HEX$"),
        ("# c\nalice:1234\n", r"line 2: the hash is not 64 hexadecimal digits$"),
        (f"bad name:{'0' * 64}\n", "line 1: the name is not a valid key name"),
        (f":{'0' * 64}\n", "line 1: the name is not a valid key name"),
        (f"a:{'0' * 64}\na:{'1' * 64}\n", "line 2: the name a is given twice"),
        (f"a:{'0' * 64}\nb:{'0' * 64}\n", "line 2: the same key is given twice"),
        (f"a:{'g' * 64}\n", "line 1: the hash is not"),
        ("# only comments\n\n", "holds no key; add one with `verity keys new NAME"),
        ("", "holds no key"),
    ],
)
def test_a_malformed_key_file_is_a_config_error_naming_the_line(
    tmp_path: Path, content: str, message: str
) -> None:
    path = write(tmp_path / "keys.txt", content)
    with pytest.raises(ConfigError, match=message):
        KeyRing.load(path)


def test_a_pasted_key_is_named_as_such_but_never_quoted(tmp_path: Path) -> None:
    key = new_key()
    for content in (f"{key}\n", f"alice:{key}\n"):
        path = write(tmp_path / "keys.txt", content)
        with pytest.raises(ConfigError, match="it holds a key itself") as info:
            KeyRing.load(path)
        assert key not in str(info.value)
        assert key[4:20] not in str(info.value)


def test_a_missing_or_unreadable_key_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"keys\.txt: it does not exist"):
        KeyRing.load(tmp_path / "keys.txt")
    assert read_key_file(tmp_path / "keys.txt") == {}  # missing is empty when allowed
    with pytest.raises(ConfigError, match="cannot read the API key file"):
        KeyRing.load(tmp_path)  # a folder
    path = tmp_path / "latin.txt"
    path.write_bytes(b"caf\xe9:" + b"0" * 64)
    path.chmod(0o600)
    with pytest.raises(ConfigError, match="is not UTF-8 text"):
        KeyRing.load(path)


@pytest.mark.skipif(os.name == "nt", reason="POSIX permission bits")
def test_a_key_file_anyone_may_write_is_refused_and_a_group_one_warned_about(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    line = f"alice:{hash_key(new_key())}\n"
    with pytest.raises(ConfigError, match=r"may be written by any user.*chmod 600"):
        KeyRing.load(write(tmp_path / "open.txt", line, 0o666))
    with caplog.at_level(logging.WARNING, logger="verity.service.keys"):
        ring = KeyRing.load(write(tmp_path / "group.txt", line, 0o664))
    assert ring.names == ("alice",)
    assert "may be written by its group" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="verity.service.keys"):
        KeyRing.load(write(tmp_path / "readable.txt", line, 0o644))  # hashes are no secret
    assert caplog.text == ""


# --- adding keys -------------------------------------------------------------------------


@pytest.mark.skipif(os.name == "nt", reason="POSIX permission bits")
def test_add_key_creates_an_owner_only_file_and_appends(tmp_path: Path) -> None:
    path = tmp_path / "keys.txt"
    alice = add_key(path, "alice")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    bob = add_key(path, "bob")
    assert path.read_text() == f"alice:{hash_key(alice)}\nbob:{hash_key(bob)}\n"
    assert alice not in path.read_text()
    ring = KeyRing.load(path)
    assert (ring.name_of(alice), ring.name_of(bob)) == ("alice", "bob")


def test_add_key_keeps_what_the_file_had(tmp_path: Path) -> None:
    old = hash_key(new_key())
    path = write(tmp_path / "keys.txt", f"# team\nold:{old}")  # no final newline
    carol = add_key(path, "carol")
    assert path.read_text() == f"# team\nold:{old}\ncarol:{hash_key(carol)}\n"


@pytest.mark.parametrize(
    ("name", "error", "message"),
    [
        ("alice", BadInputError, "a key named alice is already in"),
        ("a:b", BadInputError, "no ':' and no spaces"),
        ("a b", BadInputError, "no ':' and no spaces"),
        ("", BadInputError, "a key name is"),
        ("-x", BadInputError, "starting with a letter or digit"),
        ("x" * 65, BadInputError, "1 to 64"),
        ("alice\nmallory:" + "0" * 64, BadInputError, "a key name is"),
    ],
)
def test_add_key_refuses_bad_or_taken_names_and_leaves_the_file(
    tmp_path: Path, name: str, error: type[Exception], message: str
) -> None:
    path = tmp_path / "keys.txt"
    add_key(path, "alice")
    before = path.read_text()
    with pytest.raises(error, match=message):
        add_key(path, name)
    assert path.read_text() == before


def test_add_key_to_a_malformed_file_changes_nothing(tmp_path: Path) -> None:
    path = write(tmp_path / "keys.txt", "this is not a key file\n")
    with pytest.raises(ConfigError, match="line 1"):
        add_key(path, "alice")
    assert path.read_text() == "this is not a key file\n"


@pytest.mark.skipif(os.name == "nt", reason="POSIX file locks")
def test_the_file_is_locked_from_the_duplicate_check_to_the_append(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import fcntl

    path = tmp_path / "keys.txt"
    add_key(path, "alice")
    real_read = keys_module.read_key_file
    tried: list[bool] = []

    def read_while_another_writer_tries(file: Path, **kwargs: bool) -> dict[str, str]:
        with file.open("rb") as other:
            try:
                fcntl.flock(other.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                tried.append(False)  # held: the other writer waits
            else:
                tried.append(True)
        return real_read(file, **kwargs)

    monkeypatch.setattr(keys_module, "read_key_file", read_while_another_writer_tries)
    add_key(path, "bob")
    assert tried == [False]


def test_keys_added_at_once_from_many_threads_all_land(tmp_path: Path) -> None:
    path = tmp_path / "keys.txt"
    made: dict[str, str] = {}
    failures: list[BaseException] = []

    def add(n: int) -> None:
        try:
            made[f"user{n}"] = add_key(path, f"user{n}")
        except BaseException as exc:
            failures.append(exc)

    threads = [threading.Thread(target=add, args=(n,)) for n in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert failures == []
    ring = KeyRing.load(path)
    assert sorted(ring.names) == sorted(made)
    assert all(ring.name_of(key) == name for name, key in made.items())


# --- rate limits -------------------------------------------------------------------------


def test_a_full_bucket_allows_per_minute_then_says_how_long_to_wait() -> None:
    clock = FakeClock()
    limiter = RateLimiter(per_minute=6, clock=clock)  # a token every 10 s
    assert [limiter.allow("alice") for _ in range(6)] == [None] * 6
    assert limiter.allow("alice") == pytest.approx(10.0)
    clock.now += 4
    assert limiter.allow("alice") == pytest.approx(6.0)
    clock.now += 6
    assert limiter.allow("alice") is None
    assert limiter.allow("alice") == pytest.approx(10.0)


def test_each_name_has_its_own_bucket() -> None:
    clock = FakeClock()
    limiter = RateLimiter(per_minute=2, clock=clock)
    assert limiter.allow("alice") is None
    assert limiter.allow("alice") is None
    assert limiter.allow("alice") == pytest.approx(30.0)
    assert limiter.allow("bob") is None


def test_a_bucket_refills_to_its_size_and_no_more() -> None:
    clock = FakeClock()
    limiter = RateLimiter(per_minute=3, clock=clock)
    for _ in range(3):
        limiter.allow("alice")
    clock.now += 3600  # an hour idle refills three tokens, not 180
    assert [limiter.allow("alice") for _ in range(4)][-1] == pytest.approx(20.0)


def test_a_clock_that_steps_back_does_not_drain_or_fill() -> None:
    clock = FakeClock()
    limiter = RateLimiter(per_minute=60, clock=clock)
    limiter.allow("alice")
    clock.now -= 500
    assert limiter.allow("alice") is None


def test_refusals_do_not_cost_tokens() -> None:
    clock = FakeClock()
    limiter = RateLimiter(per_minute=1, clock=clock)
    assert limiter.allow("alice") is None
    for _ in range(50):
        assert limiter.allow("alice") == pytest.approx(60.0)
    clock.now += 60
    assert limiter.allow("alice") is None


def test_idle_buckets_are_forgotten_but_busy_ones_kept() -> None:
    clock = FakeClock()
    limiter = RateLimiter(per_minute=10, clock=clock)
    for _ in range(10):
        limiter.allow("busy")
    for n in range(3000):
        limiter.allow(f"caller{n}")
    clock.now += 30  # the callers' single tokens are back; busy has 5 of 10
    for _ in range(RateLimiter._SWEEP_EVERY):
        limiter.allow("busy2")
    assert "busy" in limiter._buckets
    assert len(limiter._buckets) < 10
    # Forgetting a full bucket changes nothing for its name.
    assert [limiter.allow("caller7") for _ in range(11)][-1] == pytest.approx(6.0)


def test_the_limiter_is_exact_under_threads() -> None:
    clock = FakeClock()
    limiter = RateLimiter(per_minute=2000, clock=clock)
    allowed: list[bool] = []
    lock = threading.Lock()

    def hammer() -> None:
        for _ in range(500):
            ok = limiter.allow("shared") is None
            with lock:
                allowed.append(ok)

    threads = [threading.Thread(target=hammer) for _ in range(8)]
    # Threads switch as often as they can, so that an unguarded read-then-take interleaves.
    previous = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
    finally:
        sys.setswitchinterval(previous)
    assert len(allowed) == 4000
    assert allowed.count(True) == 2000


@pytest.mark.parametrize("per_minute", [0, -1, 1.5, True, "60"])
def test_a_rate_must_be_a_positive_whole_number(per_minute: object) -> None:
    with pytest.raises(ConfigError, match="at least 1"):
        RateLimiter(per_minute=per_minute)  # type: ignore[arg-type]
