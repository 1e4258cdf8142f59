"""The peak memory of a piece of work, sampled while it runs."""

from __future__ import annotations

import time

from verity.bench import memory
from verity.bench.memory import PeakMemory, resident_mb


def test_a_peak_held_briefly_is_seen() -> None:
    before = resident_mb()
    assert before is not None
    with PeakMemory() as peak:
        block = bytearray(200 * 2**20)  # 200 MiB, touched so it is resident
        block[::4096] = b"x" * len(block[::4096])
        time.sleep(3 * memory.INTERVAL)
        del block
    assert peak.mb > before + 150
    assert (resident_mb() or 0) < peak.mb - 150  # gone again: the figure is the peak
