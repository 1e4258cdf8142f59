"""API keys of the HTTP service: a file of hashed keys, and a rate limit per key.

    key = new_key()                          # 'vty_...': shown to its owner once, never stored
    add_key(Path("keys.txt"), "alice")       # the same, appended to a key file (verity keys new)
    ring = KeyRing.load(Path("keys.txt"))
    ring.name_of(key)                        # 'alice'; None for any other string
    limiter = RateLimiter(per_minute=60)
    limiter.allow("alice")                   # None: go ahead; 2.5: wait 2.5 s first

The key file holds one ``NAME:SHA256HEX`` per line; blank lines and lines starting with
``#`` are ignored. A name is 1 to 64 letters, digits, ``.``, ``_``, ``-`` or ``@``,
starting with a letter or digit, so that it can be logged and shown as it is. A missing
or unreadable file, a line out of shape, a name or a hash given twice, or a file with no
key at all is a `ConfigError` naming the file and the line (a line is never quoted back:
it could be a key pasted by mistake).

The file holds no secret (a hash of a random 256-bit key is no use to whoever reads it),
so it may be readable by others; but whoever can write it can add a key of their own. A
file that any user may write is therefore refused, and one its group may write is loaded
with a logged warning. `add_key` creates the file readable and writable by its owner only.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import logging
import os
import re
import secrets
import stat
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from verity.errors import BadInputError, ConfigError

__all__ = [
    "KEY_PREFIX",
    "KeyRing",
    "RateLimiter",
    "add_key",
    "check_name",
    "hash_key",
    "new_key",
    "read_key_file",
]

log = logging.getLogger(__name__)

#: Every key starts with it, so that a leaked key is recognisable (and secret scanners
#: can be taught to find it).
KEY_PREFIX = "vty_"
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@-]{0,63}")
_HASH = re.compile(r"[0-9a-fA-F]{64}")


def new_key() -> str:
    """A new API key: ``vty_`` and 32 random bytes in URL-safe base64 (43 characters)."""
    return KEY_PREFIX + secrets.token_urlsafe(32)


def hash_key(key: str) -> str:
    """The SHA-256 of a key, in hex: what a key file keeps in place of the key.

    A fast hash is enough here, unlike for passwords: a key is 256 random bits, so no
    number of guesses per second makes finding one from its hash feasible, and a slow
    hash would only slow down every request.
    """
    return hashlib.sha256(key.encode("utf-8", "replace")).hexdigest()


def check_name(name: str) -> str:
    """The name, when it may name a key; else `BadInputError` saying what a name may be."""
    if not _NAME.fullmatch(name):
        raise BadInputError(
            "a key name is 1 to 64 letters, digits, '.', '_', '-' or '@', starting with a "
            "letter or digit (no ':' and no spaces)"
        )
    return name


class KeyRing:
    """The keys a server accepts, by name, each kept only as its hash.

    ring = KeyRing.load(Path("keys.txt"))
    ring = KeyRing({"alice": hash_key(key)})
    ring.name_of(key)        # 'alice'
    ring.names               # ('alice',)
    """

    def __init__(self, hashes: Mapping[str, str]) -> None:
        digests: dict[str, bytes] = {}
        for name, digest in hashes.items():
            check_name(name)
            if not _HASH.fullmatch(digest):
                raise ConfigError(f"the key hash of {name!r} is not 64 hexadecimal digits")
            digests[name] = bytes.fromhex(digest)
        self._digests = digests

    @classmethod
    def load(cls, path: Path) -> KeyRing:
        """The keys of a key file; `ConfigError` when it is missing, malformed or empty."""
        hashes = read_key_file(path, missing_ok=False)
        if not hashes:
            raise ConfigError(
                f"the API key file {path} holds no key; add one with "
                f"`verity keys new NAME --file {path}`"
            )
        return cls(hashes)

    @property
    def names(self) -> tuple[str, ...]:
        """The names of the keys, in the file's order."""
        return tuple(self._digests)

    def __len__(self) -> int:
        return len(self._digests)

    def name_of(self, presented: str) -> str | None:
        """The name of the key ``presented`` is, or None when it is none of them.

        The hash is compared with every key's, each comparison in constant time and none
        cut short, so that the time taken tells nothing about how close a guess came.
        """
        digest = hashlib.sha256(presented.encode("utf-8", "replace")).digest()
        found = None
        for name, known in self._digests.items():
            if hmac.compare_digest(digest, known) and found is None:
                found = name
        return found


def read_key_file(path: Path, *, missing_ok: bool = True) -> dict[str, str]:
    """The ``name: hash`` entries of a key file, in order; see the module documentation.

    A missing file is empty with ``missing_ok``, else a `ConfigError`.

        read_key_file(Path("keys.txt"))      # {'alice': '9f86d0...'}
    """
    try:
        with path.open(encoding="utf-8") as handle:
            _check_mode(path, os.fstat(handle.fileno()).st_mode)
            return _parse(path, handle)
    except FileNotFoundError as exc:
        if missing_ok:
            return {}
        raise ConfigError(f"cannot read the API key file {path}: it does not exist") from exc
    except OSError as exc:
        raise ConfigError(f"cannot read the API key file {path}: {exc.strerror}") from exc
    except UnicodeDecodeError as exc:
        raise ConfigError(f"the API key file {path} is not UTF-8 text") from exc


def _check_mode(path: Path, mode: int) -> None:
    if sys.platform == "win32":
        return  # no such permission bits
    if mode & stat.S_IWOTH:
        raise ConfigError(
            f"the API key file {path} may be written by any user, who could add a key of "
            f"their own; make it writable by its owner only (chmod 600 {path})"
        )
    if mode & stat.S_IWGRP:
        log.warning("the API key file %s may be written by its group, who can add keys", path)


def _parse(path: Path, lines: IO[str]) -> dict[str, str]:
    hashes: dict[str, str] = {}
    for number, line in enumerate(lines, start=1):
        entry = line.strip()
        if not entry or entry.startswith("#"):
            continue
        where = f"{path}, line {number}"
        name, colon, digest = entry.partition(":")
        name, digest = name.strip(), digest.strip().lower()
        # A key pasted in place of its hash: say so, without showing it.
        hint = " (it holds a key itself: keep only its hash)" if KEY_PREFIX in entry else ""
        if not colon:
            raise ConfigError(f"{where}: expected NAME:SHA256HEX{hint}")
        if not _NAME.fullmatch(name):
            raise ConfigError(f"{where}: the name is not a valid key name")
        if not _HASH.fullmatch(digest):
            raise ConfigError(f"{where}: the hash is not 64 hexadecimal digits{hint}")
        if name in hashes:
            raise ConfigError(f"{where}: the name {name} is given twice")
        if digest in hashes.values():
            raise ConfigError(f"{where}: the same key is given twice")
        hashes[name] = digest
    return hashes


def add_key(path: Path, name: str) -> str:
    """Make a key named ``name``, append its hash to the key file, and return the key.

    The file is created (owner-only) when missing. A name already in the file, or not a
    valid name, is a `BadInputError`; a malformed file a `ConfigError`, and is left as it
    was. The key itself is returned once and stored nowhere.

        key = add_key(Path("keys.txt"), "alice")
    """
    check_name(name)
    key = new_key()
    with _locked_append(path) as handle:
        hashes = read_key_file(path)
        if name in hashes:
            raise BadInputError(
                f"a key named {name} is already in {path}; choose another name, or delete "
                "its line first to replace it"
            )
        handle.seek(0, os.SEEK_END)
        separator = "\n" if handle.tell() and not _ends_with_newline(path) else ""
        handle.write(f"{separator}{name}:{hash_key(key)}\n")
    return key


@contextlib.contextmanager
def _locked_append(path: Path) -> Iterator[IO[str]]:
    """The key file open for appending (created owner-only), locked against other writers."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    except OSError as exc:
        raise ConfigError(f"cannot write the API key file {path}: {exc.strerror}") from exc
    with os.fdopen(fd, "a", encoding="utf-8") as handle:
        if sys.platform != "win32":
            import fcntl

            # Two `verity keys new` at once must not both pass the duplicate check.
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        yield handle


def _ends_with_newline(path: Path) -> bool:
    with path.open("rb") as handle:
        handle.seek(-1, os.SEEK_END)
        return handle.read(1) == b"\n"


@dataclass
class _Bucket:
    tokens: float
    updated: float


class RateLimiter:
    """A token bucket per key name: ``per_minute`` requests a minute, in bursts up to it.

    Each name's bucket holds up to ``per_minute`` tokens and refills at ``per_minute / 60``
    a second; a request takes one. `allow` is safe to call from many threads. Buckets that
    have refilled completely are forgotten now and then, so the limiter's memory follows
    the names active in the last minute, not every name ever seen.

        limiter = RateLimiter(per_minute=60)
        wait = limiter.allow("alice")       # None, or the seconds until a token is there
    """

    _SWEEP_EVERY = 1024

    def __init__(self, per_minute: int, *, clock: Callable[[], float] = time.monotonic) -> None:
        if isinstance(per_minute, bool) or not isinstance(per_minute, int) or per_minute < 1:
            raise ConfigError(
                "the rate limit is a whole number of requests a minute, at least 1, "
                f"not {per_minute!r}"
            )
        self.per_minute = per_minute
        self._rate = per_minute / 60.0
        self._clock = clock
        self._buckets: dict[str, _Bucket] = {}
        self._lock = threading.Lock()
        self._calls = 0

    def allow(self, name: str) -> float | None:
        """Take a token for ``name``: None when there was one, else seconds until there is."""
        with self._lock:
            now = self._clock()
            bucket = self._buckets.get(name)
            if bucket is None:
                bucket = self._buckets[name] = _Bucket(float(self.per_minute), now)
            else:
                self._refill(bucket, now)
            wait = None if bucket.tokens >= 1.0 else (1.0 - bucket.tokens) / self._rate
            if wait is None:
                bucket.tokens -= 1.0
            self._calls += 1
            if self._calls % self._SWEEP_EVERY == 0:
                self._sweep(now)
            return wait

    def _refill(self, bucket: _Bucket, now: float) -> None:
        # max(): a clock that steps back must not drain a bucket.
        elapsed = max(0.0, now - bucket.updated)
        bucket.tokens = min(float(self.per_minute), bucket.tokens + elapsed * self._rate)
        bucket.updated = now

    def _sweep(self, now: float) -> None:
        # A full bucket is the same as none: forgetting it changes nothing.
        for name, bucket in list(self._buckets.items()):
            self._refill(bucket, now)
            if bucket.tokens >= self.per_minute:
                del self._buckets[name]
