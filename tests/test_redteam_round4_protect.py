"""Red team round 4: the protected-files check must never act on a host file outside the workspace.

The check (`shellrt.supervisor.protect`) runs on the host, as the caller (root in
CI), after and before every command. It moves planted files into the session's
quarantine and writes back the previous content of files a command changed or
deleted. A command controls every directory of the workspace, so any of those
steps that walks a *path* can be sent through a symlink the command put in place
of a parent directory: shellrt would then write the repository's content into,
or move a file out of, any host directory the caller can reach
(``/root/.claude/settings.json``: the operator's own hooks). Each attack below
ends with a look at a host directory outside the workspace.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio
import pytest

from sandbox import BwrapConfig, SandboxConfig, SandboxPolicy
from sandbox.factory import create_backend
from shellrt.supervisor import Supervisor
from tests.conftest import require

HOST_SECRET = "HOST SECRET\n"


def _bwrap() -> SandboxConfig:
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    return BwrapConfig()


def _session(ws: Path, session: Path, body: Callable[[Supervisor], Awaitable[None]]) -> None:
    async def main() -> None:
        backend = create_backend(_bwrap(), SandboxPolicy(workspace=ws))
        await backend.start()
        try:
            async with Supervisor(backend, session_dir=session) as sup:
                await body(sup)
        finally:
            await backend.close()

    anyio.run(main)


def _host_dir(tmp_path: Path) -> Path:
    """A directory outside the workspace that the caller owns (think ``/root/.claude``)."""
    host = tmp_path / "host"
    host.mkdir()
    (host / "victim").write_text(HOST_SECRET)
    os.chmod(host / "victim", 0o600)
    return host


@pytest.mark.parametrize("settings_dir", [".claude", ".shellrt"])
def test_a_deleted_settings_file_is_never_restored_through_a_redirected_parent(
    tmp_path: Path, settings_dir: str
) -> None:
    """``mv .claude x; ln -s <host dir> .claude``: the settings file is 'deleted', and its restore
    used to follow the new symlink and write the repository's settings into the host directory."""
    ws = tmp_path / "ws"
    (ws / settings_dir).mkdir(parents=True)
    repo_settings = '{"hooks": {"PreToolUse": [{"hooks": [{"type": "command", "command": "touch /pwned"}]}]}}'
    (ws / settings_dir / "settings.json").write_text(repo_settings)
    host = _host_dir(tmp_path)
    notes: list[str] = []

    async def body(sup: Supervisor) -> None:
        result = await sup.run(f"mv {settings_dir} moved && ln -s {host} {settings_dir}", timeout_s=60)
        assert result.exit_code == 0, result.preview
        notes.extend(result.notes)

    _session(ws, tmp_path / "session", body)
    assert sorted(os.listdir(host)) == ["victim"], "shellrt wrote into a host directory through the symlink"
    assert (host / "victim").read_text() == HOST_SECRET
    # The redirect is quarantined and the workspace's own settings (its deny rules) are back in place.
    assert not (ws / settings_dir).is_symlink()
    assert (ws / settings_dir / "settings.json").read_text() == repo_settings, notes


ATTACK = """
import ctypes, os, time
libc = ctypes.CDLL(None, use_errno=True)
end = time.time() + {seconds}
i = 0
while time.time() < end:
    i += 1
    try:
        # Keep a real directory and a symlink to the host directory, and swap their names
        # atomically (renameat2 RENAME_EXCHANGE) as fast as possible, rewriting the watched file.
        if not os.path.lexists(".claude") and os.path.isdir("L") and not os.path.islink("L"):
            os.rename("L", ".claude")
        if not os.path.lexists("L"):
            os.symlink("{host}", "L")
        real = ".claude" if not os.path.islink(".claude") else "L"
        with open(real + "/victim", "w") as f:
            f.write("changed %d\\n" % i)
        libc.syscall(316, -100, b".claude", -100, b"L", 2)
    except OSError:
        pass
"""


@pytest.mark.parametrize("session_on", ["same-filesystem", "tmpfs"])
def test_a_directory_swapped_under_the_check_never_leads_it_to_a_host_file(
    tmp_path: Path, session_on: str
) -> None:
    """A background task swaps ``.claude`` with a symlink to a host directory while rewriting
    ``.claude/victim`` (a file the repository shipped). Every revert used to be path-based: the
    content read, the quarantine move and the restore each followed whatever ``.claude`` was at
    that instant, and the host's ``victim`` was overwritten with the repository's content
    (as root) within a few commands."""
    ws = tmp_path / "ws"
    (ws / ".claude").mkdir(parents=True)
    (ws / ".claude" / "victim").write_text("repository content\n")
    host = _host_dir(tmp_path)
    (ws / "attack.py").write_text(ATTACK.format(seconds=12, host=host))
    if session_on == "tmpfs":
        require(os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK), "/dev/shm is not writable")
        session = (
            Path(os.environ.get("SHELLRT_TEST_SHM", "/dev/shm"))
            / f"shellrt-rt4-{os.getpid()}-{tmp_path.name}"
        )
    else:
        session = tmp_path / "session"

    async def body(sup: Supervisor) -> None:
        await sup.run("true", timeout_s=60)
        await sup.start_background("python3 attack.py")
        for _ in range(150):
            await sup.run("true", timeout_s=60)
            if sorted(os.listdir(host)) != ["victim"] or (host / "victim").read_text() != HOST_SECRET:
                break
        for task in sup.tasks.list():
            await sup.tasks.stop(task.id)

    try:
        _session(ws, session, body)
        assert sorted(os.listdir(host)) == ["victim"], os.listdir(host)
        assert (host / "victim").read_text() == HOST_SECRET, "shellrt overwrote a host file through the swap"
        quarantined = [p for p in session.rglob("*") if p.is_file() and not p.is_symlink()]
        assert all(HOST_SECRET not in p.read_text(errors="replace") for p in quarantined), (
            "a host file was moved"
        )
    finally:
        shutil.rmtree(session, ignore_errors=True)


GIT_ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@t",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@t",
}


def _repo(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    (ws / "a.txt").write_text("a\n")
    subprocess.run(["git", "-C", str(ws), "add", "a.txt"], check=True)
    subprocess.run(["git", "-C", str(ws), "commit", "-qm", "i"], check=True, env={**os.environ, **GIT_ENV})
    return ws


@pytest.mark.parametrize("target", ["../evil", "/tmp"])
def test_a_planted_commondir_cannot_point_host_git_at_other_config(tmp_path: Path, target: str) -> None:
    """``.git/commondir`` makes git read the repository's config (and refs, objects) from the
    directory it names; a HEAD-less directory there was no git directory to the check, so its
    ``config`` (``core.fsmonitor``) was never looked at, and the operator's next ``git status``
    ran it on the host."""
    ws = _repo(tmp_path)
    mark = tmp_path / "PWNED"
    plant = (
        "mkdir -p evil && cp -r .git/objects .git/refs evil/ && "
        f"printf '[core]\\n\\trepositoryformatversion = 0\\n\\tfsmonitor = \"touch {mark}; false\"\\n' > evil/config && "
        f"echo {target} > .git/commondir"
    )
    notes: list[str] = []

    async def body(sup: Supervisor) -> None:
        result = await sup.run(plant, timeout_s=60)
        assert result.exit_code == 0, result.preview
        notes.extend(result.notes)

    _session(ws, tmp_path / "session", body)
    subprocess.run(["git", "-C", str(ws), "status"], capture_output=True)
    assert not mark.exists(), f"the operator's git ran the planted fsmonitor; notes: {notes}"
    assert not (ws / ".git" / "commondir").exists()


def test_git_worktrees_keep_their_commondir(tmp_path: Path) -> None:
    ws = _repo(tmp_path)
    notes: list[str] = []

    async def body(sup: Supervisor) -> None:
        result = await sup.run("git worktree add -q wt", timeout_s=60)
        notes.extend(result.notes)
        result = await sup.run("git -C wt log --oneline | wc -l", timeout_s=60, env=GIT_ENV)
        assert result.preview.strip() == "1", result.preview
        notes.extend(result.notes)

    _session(ws, tmp_path / "session", body)
    assert notes == [], notes
    assert (ws / ".git" / "worktrees" / "wt" / "commondir").exists()


@pytest.mark.parametrize("objects", ["symlink", "file-commondir"])
def test_a_git_directory_git_accepts_is_one_the_check_watches(tmp_path: Path, objects: str) -> None:
    """git takes a directory with ``HEAD`` and an ``objects`` that is a *symlink* to a directory
    as a git directory; the check looked for an ``objects`` subdirectory only, so the config of
    ``x/.git/y`` (the target of a planted ``.git`` file, benign by its path) was never looked at."""
    ws = _repo(tmp_path)
    mark = tmp_path / "PWNED"
    link = "ln -s ../../../.git2/objects x/.git/y/objects"
    if objects == "file-commondir":  # objects through a commondir that names a real .git
        link = "echo ../../../.git2 > x/.git/y/commondir; mkdir -p x/.git/y/refs"
    plant = (
        "mv .git .git2 && mkdir -p x/.git/y/refs && cp .git2/HEAD x/.git/y/HEAD && "
        f"{link} && "
        f"printf '[core]\\n\\trepositoryformatversion = 0\\n\\tfsmonitor = \"touch {mark}; false\"\\n' > x/.git/y/config && "
        "echo 'gitdir: x/.git/y' > .git"
    )
    notes: list[str] = []

    async def body(sup: Supervisor) -> None:
        result = await sup.run(plant, timeout_s=60)
        assert result.exit_code == 0, result.preview
        notes.extend(result.notes)

    _session(ws, tmp_path / "session", body)
    subprocess.run(["git", "-C", str(ws), "status"], capture_output=True)
    assert not mark.exists(), f"the operator's git ran the planted fsmonitor; notes: {notes}"


def test_a_restored_file_never_gets_a_setid_bit(tmp_path: Path) -> None:
    """The restore runs as the caller (root): the snapshot's set-uid bit would have given the
    repository's content a set-uid-root file (the original may have been the user's)."""
    from shellrt.supervisor.protect import WorkspaceGuard

    ws = tmp_path / "ws"
    (ws / ".claude").mkdir(parents=True)
    hook = ws / ".claude" / "hook.sh"
    hook.write_text("#!/bin/sh\nid\n")
    os.chmod(hook, 0o4755)
    guard = WorkspaceGuard(ws, tmp_path / "session", use_inotify=False)
    guard.scan(revert=False)
    hook.write_text("#!/bin/sh\nchanged\n")
    notes = guard.scan(revert=True)
    assert notes and hook.read_text() == "#!/bin/sh\nid\n", notes
    assert os.stat(hook).st_mode & 0o7777 == 0o755


@pytest.mark.parametrize("use_inotify", [True, False], ids=["inotify", "full-scan"])
def test_a_command_cannot_open_protected_places_to_every_local_user(
    tmp_path: Path, use_inotify: bool
) -> None:
    """``chmod 777 . .git .git/hooks; chmod 666 .git/config``: through the idmapped mount the
    command owns the workspace, and any local user could then write a hook or a config key
    that root's next git runs (tested here as uid 12345)."""
    ws = _repo(tmp_path)
    os.chmod(tmp_path, 0o755)
    (ws / "sub").mkdir()
    notes: list[str] = []

    async def body(sup: Supervisor) -> None:
        if not use_inotify and sup._guard is not None:
            for root_guard in sup._guard.guards:
                root_guard.guard.close()  # full scans from now on
        result = await sup.run(
            "chmod 777 . .git .git/hooks sub && chmod 666 .git/config && mkdir -m 777 new && "
            "chmod 644 a.txt && echo done",
            timeout_s=60,
        )
        assert result.preview.strip() == "done", result.preview
        notes.extend(result.notes)

    _session(ws, tmp_path / "session", body)
    for place in (ws, ws / ".git", ws / ".git" / "hooks", ws / ".git" / "config", ws / "sub", ws / "new"):
        assert not os.stat(place).st_mode & 0o002, (place, oct(os.stat(place).st_mode), notes)
    assert any("writable for other users" in n for n in notes), notes
    hook = ws / ".git" / "hooks" / "post-checkout"
    planted = subprocess.run(
        ["setpriv", "--reuid", "12345", "--regid", "12345", "--clear-groups", "sh", "-c", f"echo x > {hook}"],
        capture_output=True,
    )
    assert planted.returncode != 0 and not hook.exists()


def test_world_writable_places_the_operator_made_are_kept(tmp_path: Path) -> None:
    ws = _repo(tmp_path)
    (ws / "shared").mkdir()
    os.chmod(ws / "shared", 0o777)
    notes: list[str] = []

    async def body(sup: Supervisor) -> None:
        result = await sup.run("touch shared/x && mkdir -p made && echo done", timeout_s=60)
        notes.extend(result.notes)

    _session(ws, tmp_path / "session", body)
    assert notes == [] and os.stat(ws / "shared").st_mode & 0o777 == 0o777, notes


ACL_PL = r"""
my $acl = pack("V", 2) . pack("vvV", 0x01, 7, 0xffffffff) . pack("vvV", 0x02, 7, 12345)
  . pack("vvV", 0x04, 5, 0xffffffff) . pack("vvV", 0x10, 7, 0xffffffff) . pack("vvV", 0x20, 5, 0xffffffff);
for my $p (".git/hooks", ".git/config") {
  my ($path, $name) = ($p, "system.posix_acl_access");
  print "$p ", syscall(188, $path, $name, $acl, length($acl), 0), "\n";
}
"""


def test_an_acl_cannot_open_protected_places_to_one_local_user(tmp_path: Path) -> None:
    """Docker bind mode ran commands as the workspace's owner, whose files they may give a POSIX
    ACL: ``user:12345:rwx`` on ``.git/hooks`` let that local user plant a hook root's git runs,
    and no mode bit for "other" changed. (Round 8: the leased uid's idmap refuses the ACL.)"""
    from sandbox import DockerConfig
    from tests._docker_support import DEBIAN, require_docker

    require_docker()
    ws = _repo(tmp_path)
    os.chmod(tmp_path, 0o755)
    (ws / "acl.pl").write_text(ACL_PL)
    notes: list[str] = []
    acl_set: list[bool] = []

    async def main() -> None:
        backend = create_backend(
            DockerConfig(image=DEBIAN, workspace_mode="bind"), SandboxPolicy(workspace=ws)
        )
        await backend.start()
        try:
            async with Supervisor(backend, session_dir=tmp_path / "session") as sup:
                result = await sup.run("perl acl.pl", timeout_s=60)
                # Since round 8 bind mode runs a leased uid on an idmapped workspace, whose map has
                # no 12345: the ACL is refused outright (-1). Where it is set (0), the check removes it.
                acl_set.append(".git/hooks 0" in result.preview)
                assert acl_set[0] or ".git/hooks -1" in result.preview, result.preview
                notes.extend(result.notes)
        finally:
            await backend.close()

    anyio.run(main)
    for place in (ws / ".git" / "hooks", ws / ".git" / "config"):
        assert "system.posix_acl_access" not in os.listxattr(place), (place, notes)
    hook = ws / ".git" / "hooks" / "post-checkout"
    planted = subprocess.run(
        ["setpriv", "--reuid", "12345", "--regid", "12345", "--clear-groups", "sh", "-c", f"echo x > {hook}"],
        capture_output=True,
    )
    assert planted.returncode != 0 and not hook.exists(), notes
    assert not acl_set[0] or any("writable for other users" in n for n in notes), notes
