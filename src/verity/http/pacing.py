"""Spacing requests to a service that asks for it (Wikidata's etiquette, arXiv's 3 s).

limiter = RateLimiter(1.0)
turn = limiter.acquire()        # returns at once, then one second apart
limiter.release(turn)           # if it was answered from the cache
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from verity.errors import ConfigError


class RateLimiter:
    """Space requests at least ``min_interval`` seconds apart, across threads.

    `acquire` reserves the next free turn and sleeps until it comes; `release` gives the
    turn back when the request did not reach the network (a cache hit), so that a run of
    cached answers does not wait. ``clock`` and ``sleep`` are injectable for tests.

        limiter = RateLimiter(1.0)
        turn = limiter.acquire()        # returns at once, then one second apart
        limiter.release(turn)           # if it was answered from the cache
    """

    def __init__(
        self,
        min_interval: float,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if min_interval < 0:
            raise ConfigError(f"min_interval must not be negative, got {min_interval}")
        self.min_interval = min_interval
        self._clock, self._sleep = clock, sleep
        self._lock = threading.Lock()
        self._next = float("-inf")

    def acquire(self) -> float:
        """Wait for the next turn; return its start time on the limiter's clock."""
        with self._lock:
            now = self._clock()
            turn = max(now, self._next)
            self._next = turn + self.min_interval
        if turn > now:
            self._sleep(turn - now)
        return turn

    def release(self, turn: float) -> None:
        """Give back ``turn`` when no later turn was taken meanwhile."""
        with self._lock:
            if self._next == turn + self.min_interval:
                self._next = turn
