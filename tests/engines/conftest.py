"""One local Ray cluster for the whole test session, started on first use (2 CPUs).

Ray's start costs seconds, so every Ray test shares the cluster; it is stopped when the
session ends. Its workers import this folder's helpers (`engine_helpers`) and the test
servers (`faults`) by name, so both folders are on their PYTHONPATH.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


@pytest.fixture(scope="session")
def ray_cluster() -> Iterator[object]:
    pytest.importorskip("ray")
    from verity.engines.cluster import Cluster

    before = os.environ.get("PYTHONPATH")
    # Ray's workers start from the environment of the process that started the cluster:
    # set while it starts, then put back.
    os.environ["PYTHONPATH"] = os.pathsep.join(
        [str(HERE), str(HERE.parent), *([before] if before else [])]
    )
    cluster = Cluster(num_cpus=2)
    try:
        cluster.connect()
    finally:
        if before is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = before
    try:
        yield cluster
    finally:
        cluster.close()
