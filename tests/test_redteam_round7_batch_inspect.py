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

import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from sandbox._anchoredcopy import copy_workspace
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


def test_a_masked_path_never_enters_a_workspace_copy(tmp_path: Path, planted: tuple[Path, Path]) -> None:
    """The host copies a task's workspace as the caller: ``"workspace": "~"`` (or any directory
    holding a masked path) carried ``~/.ssh`` into the task's own workspace, past every mask;
    naming the masked path itself copied it whole. Masked paths are left out of the copy (as
    docker's copy mode does), and a workspace that is or lies in one is refused."""
    key, _ = planted
    home = key.parent.parent
    (home / "project.txt").write_text("code\n")
    spy = "ls -a; cat .ssh/id_ed25519 id_ed25519 2>&1; true"
    tasks = [
        Task.model_validate({"id": "home", "sandbox": "bwrap", "workspace": str(home), "commands": [spy]}),
        Task.model_validate(
            {"id": "ssh", "sandbox": "bwrap", "workspace": str(key.parent), "commands": [spy]}
        ),
    ]
    results = {r.id: r for r in run_sync(tasks, artifacts_dir=tmp_path / "art")}
    seen = results["home"].commands[0].preview or ""
    assert "project.txt" in seen and _KEY not in seen, seen
    assert results["ssh"].status == "error" and "masked" in (results["ssh"].error or ""), results["ssh"]


async def test_an_inspect_workspace_copy_leaves_masked_paths_out(planted: tuple[Path, Path]) -> None:
    key, _ = planted
    settings = ShellrtSandboxConfig(workspace=key.parent.parent)
    [env] = (await ShellrtSandboxEnvironment.sample_init("rt7", settings, {})).values()
    sample = env.as_type(ShellrtSandboxEnvironment)
    try:
        result = await sample.exec(["sh", "-c", "cat .ssh/id_ed25519 2>&1; true"], timeout=60)
    finally:
        await sample._close()
    assert _KEY not in result.stdout, result.stdout


def test_a_device_node_in_a_workspace_source_is_not_copied(tmp_path: Path) -> None:
    """A character device in the source was read by the copy as a file: ``/dev/zero``'s numbers
    until the disk was full. Tested with ``/dev/null``'s (copied as an empty file before the
    fix: safe to fail) and a FIFO (which failed the whole copy): the copy keeps regular files,
    directories and symlinks only, as docker's copy mode does."""
    require(os.geteuid() == 0, "making a device node needs root")
    source = tmp_path / "src"
    source.mkdir()
    (source / "a.txt").write_text("kept\n")
    os.mknod(source / "null", 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    os.mkfifo(source / "fifo")
    task = Task.model_validate({"id": "dev", "workspace": str(source), "commands": ["ls"]})
    [result] = run_sync([task], artifacts_dir=tmp_path / "art")
    assert result.status == "ok" and (result.commands[0].preview or "").split() == ["a.txt"], result


def test_a_workspace_may_lie_in_a_home_masked_as_a_whole(tmp_path: Path) -> None:
    """``/root`` is masked whole where no workspace or Python lives in it; a source below it
    (a root CI's checkout) is still copied, its credential stores left out."""
    home = tmp_path / "home"
    (home / "bench/repo").mkdir(parents=True)
    (home / "bench/repo/a.txt").write_text("x\n")
    (home / "bench/repo/.ssh").mkdir()
    leave_out = [home, home / "bench/repo/.ssh"]
    with pytest.raises(PermissionError, match="masked"):
        copy_workspace(home / "bench/repo", tmp_path / "refused", leave_out, homes=())
    copy_workspace(home / "bench/repo", tmp_path / "copied", leave_out, homes=[home])
    assert sorted(p.name for p in (tmp_path / "copied").iterdir()) == ["a.txt"]


def test_cleanup_leaves_another_users_directories_alone(tmp_path: Path) -> None:
    """``inspect sandbox cleanup shellrt`` took every ``$TMPDIR/shellrt-inspect-*`` whose lock was
    free: in a shared ``/tmp`` another local user's directory -- its name printed raw (escape
    sequences), its ``container`` file naming any shellrt container, which was then removed. Only
    the caller's own directories (as `SampleDir` makes them) are considered now."""
    require(os.geteuid() == 0, "making another user's directory needs root")
    from shellrt.integrations._inspect_leftovers import PREFIX, cleanup_leftovers

    foreign = Path(tempfile.mkdtemp(prefix=PREFIX + "\x1b]0;x\x07-"))
    try:
        (foreign / ".owner.lock").touch()
        (foreign / "container").write_text("0123456789ab")
        for path in (foreign, foreign / ".owner.lock", foreign / "container"):
            os.chown(path, 65534, 65534)
        os.utime(foreign, (1, 1))
        removed = cleanup_leftovers()
        assert not any(str(foreign) in line for line in removed), removed
        assert foreign.exists()
    finally:
        shutil.rmtree(foreign, ignore_errors=True)
