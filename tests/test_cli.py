"""The command line: bad input gets a message and an exit code, never a traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from verity.cli import main


def run(
    argv: list[str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> tuple[int, str, str]:
    monkeypatch.setattr(sys, "argv", ["verity", *argv])
    try:
        main()
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # no stray verity.toml
    for var in (
        "VERITY_METHOD",
        "VERITY_MODEL",
        "VERITY_BASE_URL",
        "VERITY_SOURCES",
        "VERITY_CONFIG",
        "OPENAI_API_KEY",
    ):
        monkeypatch.delenv(var, raising=False)


@pytest.mark.parametrize(
    ("argv", "code", "message"),
    [
        (["check", "   "], 2, "the claim is empty"),
        (["check", ""], 2, "the claim is empty"),
        (["check", "x", "--method", "nope"], 3, "unknown method 'nope'"),
        (["check", "x", "--source", "nope"], 3, "unknown source 'nope'"),
        (["check", "x", "--model", "gpt4"], 3, "unknown model backend 'gpt4'"),
        (["check", "x", "--model", "openai:gpt-4o-mini"], 3, "set the environment variable"),
        (["check", "x", "--model", "local:/no/such.gguf"], 3, "no GGUF model file"),
        (["check", "x", "--date", "May 2020"], 2, "--date must be YYYY-MM-DD"),
        (["check", "--input", "missing.jsonl", "--output", "o.jsonl"], 2, "cannot read input"),
        (["check", "x", "--input", "a.jsonl", "--output", "o.jsonl"], 2, "not both"),
        (["check", "--input", "a.jsonl"], 2, "needs both --input and --output"),
        (["check", "x", "--config", "missing.toml"], 2, "cannot read config file"),
        (["check", "x", "--trace", "no/such/dir/t.json"], 2, "does not exist"),
        (["check", "--input", "a.jsonl", "--output", "o.jsonl", "--json"], 2, "--json apply"),
        (["check", "--input", "a.jsonl", "--output", "o", "--date", "2020-01-01"], 2, "--date"),
    ],
)
def test_bad_input_is_a_message_and_exit_code(
    argv: list[str],
    code: int,
    message: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    got, out, err = run(argv, capsys, monkeypatch)
    assert got == code
    assert message in err
    assert "Traceback" not in err + out


def test_unreachable_endpoint(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Port 9 (discard) on loopback: nothing listens, the connection is refused at once.
    got, _, err = run(
        [
            "check",
            "x",
            "--method",
            "direct",
            "--model",
            "openai:m",
            "--base-url",
            "http://127.0.0.1:9/v1",
        ],
        capsys,
        monkeypatch,
    )
    assert got == 4
    assert "cannot reach http://127.0.0.1:9/v1" in err


@pytest.mark.integration
def test_json_output_offline(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    trace = tmp_path / "trace.json"
    got, out, _ = run(
        ["check", "The Eiffel Tower is in Paris.", "--json", "--trace", str(trace)],
        capsys,
        monkeypatch,
    )
    assert got == 0
    record = json.loads(out)
    assert record["claim"] == "The Eiffel Tower is in Paris."
    assert record["method"] == "rag"
    assert record["label"] in ("SUPPORTED", "REFUTED", "NOT_ENOUGH_INFO")
    assert record["evidence"] and {e["source"] for e in record["evidence"]} == {"offline-wiki"}
    for ev in record["evidence"]:
        assert ev["title"] and ev["text"] and ev["url"].startswith("https://en.wikipedia.org/")
    assert record["usage"]["llm_calls"] >= 1 and record["usage"]["seconds"] > 0
    assert json.loads(trace.read_text())["trace"]["calls"][0]["step"] == "rag.judge"


@pytest.mark.integration
def test_installed_command_prints_only_json_on_stdout(tmp_path: Path) -> None:
    """The real process with the embedded model: nothing but one JSON object on stdout."""
    env = {**os.environ, "VERITY_CACHE_DIR": str(tmp_path / "cache")}
    proc = subprocess.run(
        [
            str(Path(sys.executable).with_name("verity")),
            "check",
            "The Eiffel Tower is in Paris.",
            "--json",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    record = json.loads(proc.stdout)  # fails on any stray line from a library
    assert proc.stdout.count("\n") == 1
    assert record["trace"]["calls"][0]["backend"] == "local"
    assert record["trace"]["retrievals"][0]["source"] == "offline-wiki"


@pytest.mark.integration
def test_human_output(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    got, out, _ = run(["check", "The Eiffel Tower is in Paris."], capsys, monkeypatch)
    assert got == 0
    assert "confidence" in out and "Evidence" in out and "offline-wiki" in out


@pytest.mark.integration
def test_batch_names_bad_lines_and_runs_good_ones(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    claims = tmp_path / "claims.jsonl"
    claims.write_text(
        json.dumps({"id": "1", "claim": "The Eiffel Tower is in Paris."})
        + "\n"
        + "{broken\n"
        + json.dumps({"id": "2", "claim": "Mount Everest is in Nepal."})
        + "\n"
    )
    results = tmp_path / "results.jsonl"
    argv = ["check", "--input", str(claims), "--output", str(results), "--method", "direct"]
    got, _, err = run(argv, capsys, monkeypatch)
    assert got == 2
    assert f"{claims}:2: skipped: not valid JSON" in err
    rows = [json.loads(line) for line in results.read_text().splitlines()]
    assert [r["id"] for r in rows] == ["1", "2"]
    assert all(r["method"] == "direct" and r["label"] for r in rows)
    got, _, err = run(argv, capsys, monkeypatch)
    assert "0 checked, 2 already done" in err
    assert len(results.read_text().splitlines()) == 2


@pytest.mark.integration
def test_models_and_sources_listings(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    got, out, _ = run(["models"], capsys, monkeypatch)
    assert got == 0 and "SmolLM2" in out and "ready" in out
    got, out, _ = run(["sources"], capsys, monkeypatch)
    assert got == 0 and "offline-wiki" in out and "BRAVE_API_KEY" in out


@pytest.mark.integration
def test_check_against_real_openai_compatible_server(llama_server: str) -> None:
    """The installed `verity` command, end to end, against llama_cpp.server on loopback."""
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    proc = subprocess.run(
        [
            str(Path(sys.executable).with_name("verity")),
            "check",
            "The Eiffel Tower is in Paris.",
            "--json",
            "--model",
            "openai:smollm2",
            "--base-url",
            llama_server,
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    record = json.loads(proc.stdout)
    assert record["evidence"] and record["evidence"][0]["source"] == "offline-wiki"
    call = record["trace"]["calls"][0]
    assert call["backend"] == "openai" and call["structured_mode"] == "json_object"
