"""``verity keys new``: the key printed once on stdout, only its hash kept in the file."""

from __future__ import annotations

import os
import re
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from verity.service.keys import KeyRing, hash_key


def test_a_new_key_is_printed_once_and_its_hash_appended(cli, tmp_path: Path) -> None:
    path = tmp_path / "keys.txt"
    code, out, err = cli(["keys", "new", "alice", "--file", str(path)])
    assert code == 0, err
    key = out.strip()
    assert re.fullmatch(r"vty_[A-Za-z0-9_-]{43}", key)  # the key alone on stdout
    assert "keeps only its hash" in err and "cannot be shown again" in err
    assert key not in err
    assert path.read_text() == f"alice:{hash_key(key)}\n"
    if os.name != "nt":
        assert stat.S_IMODE(path.stat().st_mode) == 0o600

    code, out, _ = cli(["keys", "new", "bob", "--file", str(path)])
    assert code == 0
    ring = KeyRing.load(path)
    assert ring.name_of(key) == "alice"
    assert ring.name_of(out.strip()) == "bob"


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("alice", "a key named alice is already in"),
        ("al:ice", "no ':' and no spaces"),
        ("al ice", "no ':' and no spaces"),
        ("[bold]x[/bold]", "a key name is"),
    ],
)
def test_a_taken_or_bad_name_is_refused_with_exit_code_2(
    cli, tmp_path: Path, name: str, message: str
) -> None:
    path = tmp_path / "keys.txt"
    cli(["keys", "new", "alice", "--file", str(path)])
    before = path.read_text()
    code, out, err = cli(["keys", "new", name, "--file", str(path)])
    assert (code, out) == (2, "")
    assert message in err
    assert path.read_text() == before


def test_a_malformed_key_file_is_a_configuration_error(cli, tmp_path: Path) -> None:
    path = tmp_path / "keys.txt"
    path.write_text("not a key line\n")
    code, out, err = cli(["keys", "new", "alice", "--file", str(path)])
    assert (code, out) == (3, "")
    assert "line 1: expected NAME:SHA256HEX" in err
    assert path.read_text() == "not a key line\n"


def test_a_file_in_a_missing_folder(cli, tmp_path: Path) -> None:
    code, out, err = cli(["keys", "new", "alice", "--file", str(tmp_path / "no" / "keys.txt")])
    assert (code, out) == (3, "")
    assert "cannot write the API key file" in err


def test_the_installed_command_prints_only_the_key_on_stdout(tmp_path: Path) -> None:
    path = tmp_path / "keys.txt"
    env = {k: v for k, v in os.environ.items() if not k.startswith("VERITY_")}
    done = subprocess.run(
        [sys.executable, "-m", "verity.cli", "keys", "new", "ci-bot", "--file", str(path)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**env, "VERITY_CACHE_DIR": str(tmp_path / "cache")},
        check=False,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    key = done.stdout.strip()
    assert done.stdout == key + "\n"
    assert KeyRing.load(path).name_of(key) == "ci-bot"
