"""The most memory the process held while a piece of work ran.

    with PeakMemory() as peak:
        run_method()
    peak.mb          # the largest resident set seen, in MiB

`resource.getrusage` gives the peak of the whole process so far, which after a first
method says nothing about the second; this samples the resident set from
``/proc/self/statm`` in a thread every `INTERVAL` seconds while the block runs. Where
there is no ``/proc`` (not Linux), it falls back to the process's peak so far.
"""

from __future__ import annotations

import os
import resource
import threading
from pathlib import Path
from types import TracebackType

# Often enough to see a model or an index being loaded; cheap (one small file read).
INTERVAL = 0.1
_STATM = Path("/proc/self/statm")


def resident_mb() -> float | None:
    """The resident set of this process now, in MiB; None without ``/proc``."""
    try:
        pages = int(_STATM.read_text().split()[1])
    except (OSError, IndexError, ValueError):
        return None
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


class PeakMemory:
    """Samples the resident set while the ``with`` block runs; ``mb`` is the largest."""

    def __init__(self) -> None:
        self.mb = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while True:
            now = resident_mb()
            if now is not None:
                self.mb = max(self.mb, now)
            if self._stop.wait(INTERVAL):
                return

    def __enter__(self) -> PeakMemory:
        self._thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stop.set()
        self._thread.join()
        now = resident_mb()
        if now is None:  # no /proc: the process's peak so far (kilobytes on Linux)
            self.mb = max(self.mb, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
        else:
            self.mb = max(self.mb, now)
