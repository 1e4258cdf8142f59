"""The command line's budgets, prices and estimates, against a loopback model endpoint."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from faults.latency import LatencyEndpoint

DATA = Path(__file__).resolve().parents[2] / "shared" / "datasets"


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # no stray verity.toml, no data folder next to it
    for var in ("VERITY_METHOD", "VERITY_MODEL", "VERITY_CONFIG", "OPENAI_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.delenv("VERITY_DATA_DIR", raising=False)


def config(tmp_path: Path, base_url: str) -> Path:
    path = tmp_path / "verity.toml"
    path.write_text(
        f'method = "direct"\nsources = []\n[model]\nspec = "openai:m"\nbase_url = "{base_url}"\n'
        'cache = false\n[prices."openai:m"]\ninput = 1.0\noutput = 10.0\n',
        encoding="utf-8",
    )
    return path


def test_a_check_over_its_calls_exits_6_and_its_trace_file_keeps_what_it_did(
    cli, tmp_path: Path
) -> None:
    # Not JSON: the check asks for a repair, a second call, which --max-calls 1 refuses.
    with LatencyEndpoint(delay=0.0, answer=lambda m, s: "not json") as endpoint:
        config(tmp_path, endpoint.base_url)
        code, out, err = cli(["check", "A claim.", "--max-calls", "1", "--trace", "t.json"])
        assert endpoint.count == 1
    assert code == 6, err
    assert "budget of 1 calls is spent" in err and out == ""
    record = json.loads((tmp_path / "t.json").read_text())
    assert record["error"]["exit_code"] == 6
    assert record["usage"]["llm_calls"] == 1
    # 12 prompt and 5 completion tokens at $1 / $10 per million, worked by hand.
    assert record["usage"]["cost"] == pytest.approx((12 * 1.0 + 5 * 10.0) / 1e6)
    assert len(record["trace"]["calls"]) == 1


def test_the_verdict_line_says_what_the_check_cost(cli, tmp_path: Path) -> None:
    with LatencyEndpoint(delay=0.0) as endpoint:
        config(tmp_path, endpoint.base_url)
        code, out, err = cli(["check", "A claim."])
    assert code == 0, err
    assert "cost $0.000062" in out  # (12 + 50) / 1e6, worked by hand


def test_a_run_budget_is_for_a_batch_only(cli, tmp_path: Path) -> None:
    code, _, err = cli(["check", "A claim.", "--run-max-cost", "1"])
    assert code == 2 and "limit a batch" in err


def test_a_budget_out_of_range_is_bad_input(cli) -> None:
    code, _, _ = cli(["check", "A claim.", "--max-calls", "0"])
    assert code == 2


def test_reproduce_without_a_data_folder_fails_before_any_model_loads(cli) -> None:
    started = time.perf_counter()
    code, _, err = cli(["reproduce", "zofia-t3", "--sample", "2"])
    assert code == 2, err
    assert "dataset folder not found" in err
    assert time.perf_counter() - started < 10


def test_reproduce_estimate_prints_the_bill_without_calling_a_model(cli) -> None:
    if not DATA.is_dir():
        pytest.skip(f"benchmark data not at {DATA}")
    started = time.perf_counter()
    code, out, err = cli(
        ["reproduce", "toe-t2", "--estimate", "--model", "openai:gpt-4o-mini",
         "--data-dir", str(DATA), "--sample", "50"]
    )  # fmt: skip
    took = time.perf_counter() - started
    assert code == 0, err
    assert "toe-t2" in out and "total" in out
    assert "openai:gpt-4o-mini: $0.15 per million prompt tokens" in err
    assert took < 10  # no model, no run; the data read for the datasets' sizes


def test_a_run_budget_in_the_settings_does_not_stop_one_check(cli, tmp_path: Path) -> None:
    with LatencyEndpoint(delay=0.0) as endpoint:
        path = config(tmp_path, endpoint.base_url)
        path.write_text(path.read_text() + "[run_budget]\ncost = 20.0\n", encoding="utf-8")
        code, out, err = cli(["check", "A claim."])
    assert code == 0, err
    assert "cost $" in out


def test_a_cost_limit_on_a_model_without_a_price_is_said_to_be_toothless(
    cli, tmp_path: Path
) -> None:
    with LatencyEndpoint(delay=0.0) as endpoint:
        config(tmp_path, endpoint.base_url)
        code, _, err = cli(["check", "A claim.", "--model", "openai:other", "--max-cost", "1"])
    assert code == 0, err
    assert "has no known price, so a cost limit cannot stop its calls" in err


def test_reproduce_without_a_data_folder_fails_even_when_a_dataset_is_shipped(cli) -> None:
    # toe-t2 reads AdvFact, shipped with verity, beside datasets of the data folder.
    code, _, err = cli(["reproduce", "toe-t2", "--sample", "2"])
    assert code == 2, err
    assert "dataset folder not found" in err
