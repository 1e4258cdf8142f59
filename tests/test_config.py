from __future__ import annotations

from pathlib import Path

import pytest

from verity.config import load_settings
from verity.errors import BadInputError, ConfigError

TOML = """
method = "direct"
sources = ["wikipedia"]

[model]
spec = "openai:gpt-4o-mini"
temperature = 0.2

[roles.decomposer]
spec = "local"

[methods.rag]
k = 3
"""


def test_defaults_without_file_or_env(tmp_path: Path) -> None:
    s = load_settings(env={}, cwd=tmp_path)
    # No method named: it is chosen per subject (verity.api.resolve_method).
    assert s.method is None and s.model.spec == "local" and s.sources == ("offline-wiki",)
    assert load_settings(env={"VERITY_METHOD": "direct"}, cwd=tmp_path).method == "direct"


def test_cli_over_file_over_env(tmp_path: Path) -> None:
    cfg = tmp_path / "verity.toml"
    cfg.write_text(TOML)
    env = {
        "VERITY_METHOD": "rag",
        "VERITY_MODEL": "local",
        "VERITY_BASE_URL": "http://x/v1",
        "VERITY_SOURCES": "offline-wiki, corpus:a",
    }
    s = load_settings(env=env, cwd=tmp_path)
    assert s.method == "direct"  # file over env
    assert s.model.spec == "openai:gpt-4o-mini" and s.model.temperature == 0.2
    assert s.model.base_url == "http://x/v1"  # env, not set in the file
    assert s.sources == ("wikipedia",)
    assert s.roles["decomposer"].spec == "local"
    assert s.methods["rag"] == {"k": 3}
    s2 = load_settings(
        env=env,
        cwd=tmp_path,
        overrides={"method": "rag", "model": {"spec": "local", "base_url": None}},
    )
    assert s2.method == "rag" and s2.model.spec == "local"
    assert s2.model.temperature == 0.2  # untouched by the override


def test_env_alone(tmp_path: Path) -> None:
    s = load_settings(env={"VERITY_SOURCES": "offline-wiki,wikipedia"}, cwd=tmp_path)
    assert s.sources == ("offline-wiki", "wikipedia")


def test_bad_files_are_clear_errors(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("method = ")
    with pytest.raises(BadInputError, match="not valid TOML"):
        load_settings(config_file=bad, env={})
    with pytest.raises(BadInputError, match="cannot read config file"):
        load_settings(config_file=tmp_path / "missing.toml", env={})
    wrong = tmp_path / "wrong.toml"
    wrong.write_text('modle = "local"')
    with pytest.raises(ConfigError, match="invalid settings"):
        load_settings(config_file=wrong, env={})
