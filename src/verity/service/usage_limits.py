"""Model calls and tokens a minute, per key: what a server's checks may spend over time.

    limiter = UsageLimiter(calls_per_minute=120, tokens_per_minute=400_000)
    limiter.wait_for_room("alice", stopped=lambda: False, seconds_left=lambda: None)
    limiter.charge("alice", tokens=1_850)     # when that call has answered (or failed: 0)
    limiter.retry_after("alice")              # None: room now; else seconds until there is

The submission limit (`verity.service.keys.RateLimiter`) counts checks; one check may
make hundreds of calls, so an operator who pays per token can also bound the calls and
the tokens themselves, over any 60 seconds (a token bucket would allow twice its size in
the first minute).

A call holds its place from the moment it is let through until 60 seconds after it has
answered. Counting it to its answer, not only from its start, is what makes the limit
hold where it matters, at the endpoint: a request reaches the endpoint some time after it
was let through (a connection to open, a slot to wait for), so two calls let through 60 s
apart could otherwise arrive within the same minute. With this rule, a call let through
after another has left the window arrives at least 60 s after the other arrived. Tokens
are known only once a call has answered: they count from then, and the tokens of calls in
flight may take a window past its token limit by at most those calls.

Keys are the callers' key names; with no keys, every check shares one window (``None``).
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from verity.errors import BudgetExceededError, ConfigError

WINDOW_SECONDS = 60.0
# How often a waiting call looks again whether its job was cancelled.
POLL_SECONDS = 0.25


@dataclass
class _Window:
    in_flight: int = 0
    answered: deque[float] = field(default_factory=deque)  # when each call answered
    tokens: deque[tuple[float, int]] = field(default_factory=deque)
    token_total: int = 0


class UsageLimiter:
    """A sliding 60-second window of model calls and tokens per key name."""

    def __init__(
        self,
        calls_per_minute: int | None = None,
        tokens_per_minute: int | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        for name, value in (("calls", calls_per_minute), ("tokens", tokens_per_minute)):
            if value is not None and (isinstance(value, bool) or value < 1):
                raise ConfigError(f"the {name} a minute are a whole number, at least 1")
        self.calls_per_minute, self.tokens_per_minute = calls_per_minute, tokens_per_minute
        self._clock, self._sleep = clock, sleep
        self._windows: dict[str | None, _Window] = {}
        self._lock = threading.Lock()

    @property
    def active(self) -> bool:
        """Whether any limit is set."""
        return self.calls_per_minute is not None or self.tokens_per_minute is not None

    def retry_after(self, name: str | None) -> float | None:
        """None when a call of ``name`` could be sent now, else the seconds until it could."""
        with self._lock:
            return self._wait(self._window(name), self._clock())

    def wait_for_room(
        self,
        name: str | None,
        *,
        stopped: Callable[[], bool],
        seconds_left: Callable[[], float | None],
    ) -> bool:
        """Wait until a call of ``name`` fits the window, then count it: True.

        False, and nothing counted, as soon as ``stopped()`` says the job ended;
        `BudgetExceededError` when the wait would outlast the check's time budget.
        """
        while True:
            with self._lock:
                now = self._clock()
                window = self._window(name)
                wait = self._wait(window, now)
                if wait is None:
                    window.in_flight += 1
                    return True
            left = seconds_left()
            if left is not None and wait > left:
                raise BudgetExceededError(
                    f"the key's model calls for the minute are spent and the check's time "
                    f"budget ends in {max(left, 0):.1f} s, before there is room",
                    limit="seconds",
                )
            if stopped():
                return False
            self._sleep(min(wait, POLL_SECONDS))

    def release(self, name: str | None) -> None:
        """A call let through was never sent (refused, cancelled): its place is free."""
        with self._lock:
            window = self._window(name)
            window.in_flight = max(window.in_flight - 1, 0)

    def charge(self, name: str | None, tokens: int) -> None:
        """A call let through has answered (or failed, with 0 tokens): count its tokens."""
        with self._lock:
            now, window = self._clock(), self._window(name)
            if window.in_flight > 0:
                window.in_flight -= 1
                window.answered.append(now)
            if self.tokens_per_minute is not None and tokens > 0:
                window.tokens.append((now, tokens))
                window.token_total += tokens

    def _window(self, name: str | None) -> _Window:
        window = self._windows.get(name)
        if window is None:
            window = self._windows[name] = _Window()
        return window

    def _wait(self, window: _Window, now: float) -> float | None:
        since = now - WINDOW_SECONDS
        while window.answered and window.answered[0] <= since:
            window.answered.popleft()
        while window.tokens and window.tokens[0][0] <= since:
            window.token_total -= window.tokens.popleft()[1]
        waits = []
        held = window.in_flight + len(window.answered)
        if self.calls_per_minute is not None and held >= self.calls_per_minute:
            # Room comes when enough answered calls leave the window; calls in flight
            # leave it only 60 s after they answer, so with too many of those, look again.
            needed = held - self.calls_per_minute + 1
            if needed <= len(window.answered):
                waits.append(window.answered[needed - 1] + WINDOW_SECONDS - now)
            else:
                waits.append(POLL_SECONDS)
        if self.tokens_per_minute is not None and window.token_total >= self.tokens_per_minute:
            excess, at = window.token_total - self.tokens_per_minute, window.tokens[0][0]
            for stamp, tokens in window.tokens:
                at = stamp
                excess -= tokens
                if excess < 0:
                    break
            waits.append(at + WINDOW_SECONDS - now)
        if not waits:
            return None
        return max(max(waits), 0.001)
