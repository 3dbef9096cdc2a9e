"""README's operator recipe (issue 20 item 8) runs as written, so it cannot rot.

The bash block under "Run an untrusted repo's tests with only its registry
reachable" is taken from README.md and run by bash, with two changes only: its
``/tmp/untrusted`` becomes this test's temporary directory, and ``shellrt`` on
PATH is this checkout's (a one-line wrapper).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from tests.conftest import require

ROOT = Path(__file__).resolve().parent.parent
HEADING = "## Run an untrusted repo's tests with only its registry reachable"


def recipe() -> str:
    """The first ```bash block after the recipe's heading in README.md."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert HEADING in text, "README.md lost the operator recipe's heading"
    match = re.search(r"```bash\n(.*?)```", text.split(HEADING, 1)[1], re.S)
    assert match is not None, "the operator recipe has no ```bash block"
    return match.group(1)


def _pypi_reachable() -> bool:
    try:
        with urllib.request.urlopen("https://pypi.org/simple/", timeout=15):
            return True
    except OSError:
        return False


def test_recipe_names_only_the_registry() -> None:
    block = recipe()
    assert "--allow-domain pypi.org --allow-domain files.pythonhosted.org" in block
    assert "--sandbox bwrap" in block and "/tmp/untrusted" in block


@pytest.mark.slow  # 10-25 s in CI: handed out first (tests/conftest.py)
def test_readme_recipe_runs_as_written(tmp_path: Path) -> None:
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    require(_pypi_reachable(), "PyPI is not reachable from this machine (the recipe installs from it)")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    wrapper = bin_dir / "shellrt"
    wrapper.write_text(f'#!/bin/sh\nexec {sys.executable} -m shellrt "$@"\n')
    wrapper.chmod(0o755)
    script = recipe().replace("/tmp/untrusted", str(tmp_path / "untrusted"))
    env = {
        **os.environ,
        "PATH": f"{bin_dir}:{os.environ.get('PATH', os.defpath)}",
        "PYTHONPATH": str(ROOT),
    }
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-4000:]
    assert re.search(r"\d+ passed", out), out[-4000:]
    assert "network: blocked" not in out, out[-4000:]
