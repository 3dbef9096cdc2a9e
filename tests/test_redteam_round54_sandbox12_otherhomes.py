"""Red team round 54 (sandbox12): the credential stores in other users' homes.

The default masks cover the caller's home (``$HOME`` and the password database's) and ``/root``.
Another user's home in ``/home`` is 0755 on many systems, and tools write tokens there readable by
all: ``~/.npmrc`` (npm keeps its mode), ``~/.pypirc``, ``~/.config/gh``... A root caller's commands
run as a leased uid that reads what any user reads, and a non-root caller's as the caller: either
read another user's tokens. Now every store of `DEFAULT_MASKED_PATHS` that exists in the home of
another user of the password database (a directory that user owns) and that the commands could
read is masked too (`_other_home_masks`); homes on automounted or network file systems are not
looked into (a lookup would mount or hang).

The other user is a password entry added to what ``pwd.getpwall`` returns (the host's database is
not the test's to change); its home a directory in ``/var/tmp`` that user owns. Real bwrap, session
and one bwrap per command, as root and as uid 65534 (`tests._nonroot`).
"""

from __future__ import annotations

import os
import pwd
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from sandbox import BwrapConfig, SandboxPolicy
from sandbox.factory import create_backend
from shellrt.runtime.sandbox_policy import derive_policy
from tests import _nonroot
from tests._rt11_rules import run_in
from tests.conftest import require

pytestmark = [pytest.mark.bwrap]

#: Stores another user leaves readable by all (below its home).
STORES = (".npmrc", ".pypirc", ".config/gh/hosts.yml", ".git-credentials", ".kube/config", ".pgpass")
OTHER_UID = 4242
MODES = [pytest.param(False, id="per-command"), pytest.param(True, id="session")]


@pytest.fixture
def other_home(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    base = Path(tempfile.mkdtemp(prefix="shellrt-r54-sandbox12-users-", dir="/var/tmp"))
    home = base / "alice"
    try:
        base.chmod(0o755)
        home.mkdir(mode=0o755)
        for i, rel in enumerate(STORES):
            path = home / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(f"RT54-OTHER-{i:02d}\n")
        (home / "notes.txt").write_text("other-home-visible\n")
        for path in [home, *home.rglob("*")]:
            path.chmod(0o755 if path.is_dir() else 0o644)
            if os.geteuid() == 0:
                os.lchown(path, OTHER_UID, OTHER_UID)
        uid = home.stat().st_uid  # uid 65534's run: its own directory, another home all the same
        entry = pwd.struct_passwd(("rt54alice", "x", uid, uid, "", str(home), "/bin/sh"))
        real = pwd.getpwall
        monkeypatch.setattr(pwd, "getpwall", lambda: [*real(), entry])
        yield home
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_the_stores_of_another_home_are_masked(other_home: Path, tmp_path: Path) -> None:
    policy, _ = derive_policy(SandboxPolicy(workspace=tmp_path))
    missing = [rel for rel in STORES if not any(p in policy.read_denied for p in (other_home / rel, *(other_home / rel).parents))]
    assert not missing, f"{len(missing)} of {len(STORES)} stores of another home not masked: {missing}"
    assert other_home not in policy.read_denied  # the home itself stays shown


@pytest.mark.parametrize("persistent", MODES)
def test_a_command_reads_no_store_of_another_home(other_home: Path, persistent: bool) -> None:
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed")
    base = Path(tempfile.mkdtemp(prefix="shellrt-r54-sandbox12-ws-", dir="/var/tmp"))
    try:
        base.chmod(0o755)
        ws = base / "ws"
        ws.mkdir(mode=0o777)
        ws.chmod(0o777)
        policy, _ = derive_policy(SandboxPolicy(workspace=ws))
        names = " ".join(f"'{other_home / rel}'" for rel in STORES)
        command = f"cat {other_home}/notes.txt; for f in {names}; do cat \"$f\" 2>/dev/null; done"
        backend = create_backend(BwrapConfig(persistent=persistent), policy)
        out = anyio.run(run_in, backend, ws, base / "session", command)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    assert "other-home-visible" in out, out
    read = [rel for i, rel in enumerate(STORES) if f"RT54-OTHER-{i:02d}" in out]
    assert not read, f"{len(read)} of {len(STORES)} stores of another home read: {read}"


def test_a_home_on_an_automounted_or_network_file_system_is_not_looked_into() -> None:
    """Looking up a name in an automounted home mounts it (64 NFS mounts at a session's start), and
    a network file system whose server is gone hangs the lookup: such homes are left alone."""
    from shellrt.runtime.sandbox_policy import _mount_types, _remote

    table = "\n".join(
        (
            "22 1 8:1 / / rw - ext4 /dev/sda1 rw",
            "40 22 0:40 / /home rw - autofs auto.home rw",
            "41 22 0:41 / /srv/nfs rw - nfs4 server:/export rw",
            "42 22 0:42 / /mnt/my\\040box rw - fuse.sshfs me@box: rw",
            "43 22 8:2 / /srv/local rw - xfs /dev/sda2 rw",
        )
    )
    places = _mount_types(table)
    assert _remote(Path("/home/alice"), places)
    assert _remote(Path("/srv/nfs/bob"), places)
    assert _remote(Path("/mnt/my box/carol"), places)
    assert not _remote(Path("/srv/local/dave"), places)
    assert not _remote(Path("/srv/nfsx/erin"), places)


def test_it_holds_for_an_unprivileged_caller() -> None:
    _nonroot.held_as_nobody(
        __file__,
        "test_the_stores_of_another_home_are_masked",
        "test_a_command_reads_no_store_of_another_home[per-command]",
        "test_a_command_reads_no_store_of_another_home[session]",
    )
