"""Red team round 7: an Inspect sample read the operator's secrets and shellrt's state on the host.

The Inspect provider built each sample's sandbox from a bare `SandboxPolicy`: none of the masks
every other route applies. On bwrap the host is the sandbox's read-only view, so a sample's
command (the model's tool call) printed ``~/.ssh``, ``~/.aws/credentials``, ``~/.config/gh``
and every other default-masked credential store -- as the caller's own uid for a non-root
caller, as the sandbox uid where those files are readable to it -- and the output went into the
eval log and back to the model. shellrt's own state directories (other sessions' transcripts
and persisted results, the trust store) were readable from Inspect samples and from batch tasks
alike (the batch applied the default secrets only). Both now take the same masks as a
`shellrt.Runtime`: the default credential stores and shellrt's state directories wherever they lie.

Reproduced as root with ``HOME`` and ``XDG_STATE_HOME`` pointing at directories the sandbox uid
can read (where a non-root caller's own home is, for its commands). Each test failed before the fix.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from shellrt.batch import Task, run_sync
from shellrt.integrations.inspect import ShellrtSandboxConfig, ShellrtSandboxEnvironment
from tests.conftest import require

pytestmark = pytest.mark.anyio

_KEY = "PRIVATE-KEY-rt7-9931"
_TRANSCRIPT = "TRANSCRIPT-rt7-5517"


@pytest.fixture
def planted(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Path, Path]]:
    """(a credential file in ``$HOME/.ssh``, a transcript under ``$XDG_STATE_HOME/shellrt``), both
    readable by the sandbox uid (outside pytest's 0700 base directory and bwrap's private /tmp)."""
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    base = Path(tempfile.mkdtemp(prefix="shellrt-rt7-home-", dir="/var/tmp"))
    try:
        base.chmod(0o755)
        key = base / "home/.ssh/id_ed25519"
        transcript = base / "state/shellrt/sessions/earlier/transcript.jsonl"
        for path, text in ((key, _KEY), (transcript, _TRANSCRIPT)):
            path.parent.mkdir(parents=True)
            path.write_text(text + "\n")
        for directory in [*key.parents, *transcript.parents]:
            if base in directory.parents or directory == base:
                directory.chmod(0o755)
        monkeypatch.setenv("HOME", str(base / "home"))
        monkeypatch.setenv("XDG_STATE_HOME", str(base / "state"))
        yield key, transcript
    finally:
        shutil.rmtree(base, ignore_errors=True)


async def test_an_inspect_sample_cannot_read_the_operators_secrets(planted: tuple[Path, Path]) -> None:
    key, transcript = planted
    [env] = (await ShellrtSandboxEnvironment.sample_init("rt7", ShellrtSandboxConfig(), {})).values()
    sample = env.as_type(ShellrtSandboxEnvironment)
    try:
        result = await sample.exec(["sh", "-c", f"cat {key} {transcript} 2>&1; true"], timeout=60)
    finally:
        await sample._close()
    assert _KEY not in result.stdout and _TRANSCRIPT not in result.stdout, result.stdout


def test_a_batch_task_cannot_read_shellrts_state(tmp_path: Path, planted: tuple[Path, Path]) -> None:
    key, transcript = planted
    task = Task.model_validate(
        {"id": "spy", "sandbox": "bwrap", "commands": [f"cat {key} {transcript} 2>&1; true"]}
    )
    [result] = run_sync([task], artifacts_dir=tmp_path / "art")
    seen = result.commands[0].preview or ""
    assert _KEY not in seen and _TRANSCRIPT not in seen, seen
