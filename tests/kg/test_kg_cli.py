"""`verity kg load` and `verity kg info` on the small graph."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def _own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VERITY_CACHE_DIR", str(tmp_path / "cache"))


def test_kg_load_then_info(cli, small_nt: Path, tmp_path: Path) -> None:
    code, out, _ = cli(["kg", "load", str(small_nt), "--name", "small"])
    assert code == 0
    assert "knowledge graph 'small' loaded: 28 triples, 5 direct properties" in out
    assert "7 labelled items, 3 aliases" in out
    assert f"source: {small_nt} (N-Triples" in out
    assert f"store: {tmp_path / 'cache' / 'kg' / 'small'}" in out
    assert "use: kg-local:small" in out

    code, out, _ = cli(["kg", "load", str(small_nt), "--name", "small"])
    assert code == 0 and "'small' already up to date" in out

    code, out, _ = cli(["kg", "info", "small"])
    assert code == 0 and "'small' stored: 28 triples" in out and "current" in out

    small_nt.write_text(small_nt.read_text() + "\n")
    code, out, _ = cli(["kg", "info", "small"])
    assert code == 0 and "stale: " in out and "changed since it was loaded" in out


@pytest.mark.parametrize(
    ("argv", "code", "message"),
    [
        (["kg", "info", "nope"], 3, "no knowledge graph named 'nope'"),
        (["kg", "load", "missing.nt", "--name", "x"], 2, "knowledge graph file not found"),
        (["kg", "load", "graph.csv", "--name", "x"], 2, "unknown RDF format"),
        (["kg", "load", "{small}", "--name", "a/b"], 2, "must be 1-64 letters"),
    ],
)
def test_kg_errors(
    cli,
    argv: list[str],
    code: int,
    message: str,
    small_nt: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "graph.csv").write_text("s,p,o\n")
    got, _, err = cli([a.replace("{small}", str(small_nt)) for a in argv])
    assert got == code
    assert message in err
