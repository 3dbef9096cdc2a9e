"""Red team, round 47 (perms7): one reading of what the sandbox uid reaches, ACLs included.

A root caller's commands run as an unprivileged sandbox uid U. Round 45 taught the policy compile
(`shellrt.runtime.sandbox_policy._others_reach`) to read POSIX ACLs as the kernel applies them,
but one bwrap per command (started as U) still judged by mode bits alone whether it could cross
to a mask (`sandbox.bwrap._reachable`/`_maskable`), the same question answered twice, differently
(round 45's Left):

* a mask over a 0755 place whose ACL says ``u:U:---`` (a policy made without the compile, the
  default masks, settings' ``maskedPaths``) made every command's bwrap fail to start with the
  misleading "bubblewrap cannot create namespaces here";
* a mask over a 0700 place whose ACL says ``u:U:r-x`` was judged "unreachable, nothing to hide"
  and dropped, and the command read the file through the ACL -- the operator's ``Read(...)``
  deny too, which the compile had (rightly) kept.

Now both ask `sandbox._reach`; the first test pins that reading against the kernel's own answer
(a child process switched to U) over a matrix of modes and ACLs.
"""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

import shellrt
from sandbox import BackendUnavailableError, BwrapConfig, SandboxPolicy
from sandbox._uid_lease import DEFAULT_POOL_SIZE, DEFAULT_POOL_START, lease_uid
from sandbox.bwrap import BwrapBackend, _maskable, _reachable
from shellrt.runtime.sandbox_policy import _others_reach
from shellrt.supervisor import Supervisor
from tests._acl import set_access_acl as _acl
from tests._calls import block_text, one_call
from tests.conftest import require

SPARE = DEFAULT_POOL_START + DEFAULT_POOL_SIZE + 490  # beside rounds 43/45/46's spares (+430, +450, +470)
OTHER = 0x7E000147  # a uid (and gid) ACLs name that is never the sandbox's
_ANY = 0xFFFFFFFF
NAME = "key-47.pem"
U_OBJ, USER, G_OBJ, GROUP, MASK, OTHERS = 0x01, 0x02, 0x04, 0x08, 0x10, 0x20


def _kernel_says(uid: int, places: list[Path]) -> list[tuple[bool, bool]]:
    """For each place (a directory holding ``NAME``): whether ``uid`` (its gid the same, no other
    groups) can cross it (stat a name below) and list or read (listdir, or open the file) -- the
    kernel's own answer, from one child switched to the uid."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        try:
            os.close(r)
            os.setgroups([])
            os.setgid(uid)
            os.setuid(uid)
            out = []
            for place in places:
                crossed = listed = True
                try:
                    os.stat(place / NAME)
                except OSError:
                    crossed = False
                try:
                    os.listdir(place)
                except OSError:
                    try:
                        os.close(os.open(place / NAME, os.O_RDONLY))
                    except OSError:
                        listed = False
                out.append(f"{int(crossed)}{int(listed)}")
            os.write(w, " ".join(out).encode())
            os._exit(0)
        except BaseException:
            os._exit(1)
    os.close(w)
    with os.fdopen(r, "rb") as reader:
        text = reader.read().decode()
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, "the probe child failed"
    return [(word[0] == "1", word[1] == "1") for word in text.split()]


def _layouts(uid: int) -> dict[str, tuple[int, list[tuple[int, int, int]] | None]]:
    """name -> (mode, ACL entries or None): directories the sandbox uid may or may not cross."""
    return {
        "mode-open": (0o755, None),
        "mode-closed": (0o700, None),
        "acl-closes-user": (0o755, [(U_OBJ, 7, _ANY), (USER, 0, uid), (G_OBJ, 5, _ANY), (MASK, 5, _ANY), (OTHERS, 5, _ANY)]),
        "acl-opens-user": (0o700, [(U_OBJ, 7, _ANY), (USER, 5, uid), (G_OBJ, 0, _ANY), (MASK, 5, _ANY), (OTHERS, 0, _ANY)]),
        "acl-opens-group": (0o700, [(U_OBJ, 7, _ANY), (G_OBJ, 0, _ANY), (GROUP, 5, uid), (MASK, 5, _ANY), (OTHERS, 0, _ANY)]),
        "acl-opens-x-only": (0o700, [(U_OBJ, 7, _ANY), (USER, 1, uid), (G_OBJ, 0, _ANY), (MASK, 7, _ANY), (OTHERS, 0, _ANY)]),
        "acl-mask-closes": (0o700, [(U_OBJ, 7, _ANY), (USER, 5, uid), (G_OBJ, 0, _ANY), (MASK, 4, _ANY), (OTHERS, 0, _ANY)]),
        "acl-names-another": (0o700, [(U_OBJ, 7, _ANY), (USER, 5, OTHER), (G_OBJ, 0, _ANY), (MASK, 5, _ANY), (OTHERS, 0, _ANY)]),
        # mask ---: the kernel skips the ACL, U gets "other" (r-x) whatever its entry says
        "acl-empty-mask": (0o700, [(U_OBJ, 7, _ANY), (USER, 0, uid), (G_OBJ, 0, _ANY), (MASK, 0, _ANY), (OTHERS, 5, _ANY)]),
    }


@pytest.fixture
def held() -> Iterator[int]:
    require(os.geteuid() == 0, "a root caller's host judges what its sandbox uid can reach")
    lease = lease_uid(SPARE, 8, widen="-")
    try:
        yield lease.uid
    finally:
        lease.release()


@pytest.fixture
def base(held: int) -> Iterator[Path]:
    top = Path(tempfile.mkdtemp(prefix="rt47-perms7-reach-", dir="/var/tmp"))
    try:
        top.chmod(0o755)
        for name, (mode, entries) in _layouts(held).items():
            (top / name).mkdir()
            (top / name / NAME).write_text("SECRET47-ACL\n")
            (top / name / NAME).chmod(0o644)
            (top / name).chmod(mode)
            if entries is not None:
                _acl(top / name, entries)
        (top / "ws").mkdir()
        (top / "ws").chmod(0o777)
        yield top
    finally:
        shutil.rmtree(top, ignore_errors=True)


def test_bwrap_and_the_compile_read_reach_as_the_kernel_does(base: Path, held: int) -> None:
    names = list(_layouts(held))
    kernel = dict(zip(names, _kernel_says(held, [base / n for n in names]), strict=True))
    ids = (held, held)
    wrong = {}
    for name in names:
        cross, lists = kernel[name]
        bwrap = (_reachable(str(base / name), ids), _maskable(base / name / NAME, [], ids))
        compiled = _others_reach(base / name / NAME, ids)
        if bwrap != (cross, cross) or compiled != lists:
            wrong[name] = ((cross, lists), bwrap, compiled)
    assert not wrong, f"kernel (cross, list) vs bwrap (reach, mask) and the compile: {wrong}"


async def _run_as(held: int, base: Path, denied: list[Path], command: str) -> str:
    policy = SandboxPolicy(workspace=base / "ws", read_denied=denied)
    backend = BwrapBackend(BwrapConfig(persistent=False, sandbox_uid=held), policy)
    await backend.start()
    sup = Supervisor(backend, session_dir=base / "session")
    try:
        return (await sup.run(command, timeout_s=60)).preview
    finally:
        await sup.close()
        await backend.close()


def _probe(base: Path, where: str) -> str:
    return f"grep -c {where}/{NAME} /proc/self/mountinfo; cat {base}/{where}/{NAME}; echo ran"


def test_a_mask_an_acl_closes_to_the_uid_does_not_stop_its_bwrap(base: Path, held: int) -> None:
    """A policy made without the compile (or a default mask): bwrap as U could not cross to it."""
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    try:
        out = anyio.run(_run_as, held, base, [base / "acl-closes-user" / NAME], _probe(base, "acl-closes-user"))
    except BackendUnavailableError as exc:
        pytest.fail(f"one bwrap per command refused over a place U cannot reach: {exc}")
    assert "ran" in out and "SECRET47" not in out, out
    assert out.splitlines()[0] == "0", out  # no mount shows a name U cannot list


def test_a_mask_an_acl_opens_to_the_uid_is_kept(base: Path, held: int) -> None:
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    out = anyio.run(_run_as, held, base, [base / "acl-opens-user" / NAME], _probe(base, "acl-opens-user"))
    assert "ran" in out and "SECRET47" not in out, out


@pytest.mark.anyio
async def test_the_operators_deny_there_holds_end_to_end(base: Path, held: int) -> None:
    """The compile kept the mask (it reads the ACL); bwrap dropped it: ``cat`` printed the key."""
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    (base / "ws" / "r.sh").write_text(f"cat {base}/acl-opens-group/{NAME}; echo ran\n")
    async with shellrt.Runtime(
        workspace=base / "ws",
        sandbox=BwrapConfig(sandbox_uid=held, persistent=False),
        mode="bypassPermissions",
        session_dir=base / "rt-session",
        settings_files=(),
        deny=[f"Read(//{str(base).lstrip('/')}/acl-opens-group/*.pem)"],
    ) as rt:
        result = await one_call(rt, "Bash", command="sh r.sh")
    text = block_text(result)
    assert "ran" in text and "SECRET47" not in text, result


def test_a_leased_uid_is_judged_with_its_lease(base: Path) -> None:
    """A leased uid is known once the session starts, and one bwrap per command judges each mask
    then: an ACL granting the lease (set after the start, as a host's ``setfacl`` may be) keeps it."""
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    place = base / "mode-closed"

    async def main() -> str:
        policy = SandboxPolicy(workspace=base / "ws", read_denied=[place / NAME])
        backend = BwrapBackend(BwrapConfig(persistent=False), policy)
        await backend.start()
        sup = Supervisor(backend, session_dir=base / "session")
        try:
            ids = backend.sandbox_ids
            assert ids is not None
            _acl(place, [(U_OBJ, 7, _ANY), (USER, 5, ids[0]), (G_OBJ, 0, _ANY), (MASK, 5, _ANY), (OTHERS, 0, _ANY)])
            return (await sup.run(f"cat {place}/{NAME}; echo ran", timeout_s=60)).preview
        finally:
            await sup.close()
            await backend.close()

    out = anyio.run(main)
    assert "ran" in out and "SECRET47" not in out, out


def test_a_workspace_below_a_place_an_acl_closes_to_the_uid_runs(base: Path, held: int) -> None:
    """The skeletons (`bwrap._skeletons`: the parents U cannot cross on its way to the roots, made
    crossable in its namespace) were found by mode bits: below a 0755 directory whose ACL closes
    it to U, one bwrap per command could not reach the workspace ("cannot create namespaces")."""
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    ws = base / "acl-closes-user" / "ws"
    ws.mkdir()
    ws.chmod(0o777)

    async def main() -> str:
        backend = BwrapBackend(BwrapConfig(persistent=False, sandbox_uid=held), SandboxPolicy(workspace=ws))
        await backend.start()
        sup = Supervisor(backend, session_dir=base / "session")
        try:
            return (await sup.run("echo written > f; cat f; pwd", timeout_s=60)).preview
        finally:
            await sup.close()
            await backend.close()

    try:
        out = anyio.run(main)
    except BackendUnavailableError as exc:
        pytest.fail(f"one bwrap per command refused a workspace below a place U cannot cross: {exc}")
    assert out.split() == ["written", str(ws)], out


def test_a_host_socket_an_acl_opens_to_the_uid_is_masked(base: Path, held: int) -> None:
    """No host IPC: one bwrap per command masks the host's sockets U could reach, and left out
    those in directories "others" cannot cross -- a 0700 directory whose ACL gives U ``--x`` too,
    so the command connected to a host service there (`sandbox._hostsockets`)."""
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    where = base / "acl-opens-x-only" / "svc.sock"
    server = socket.socket(socket.AF_UNIX)
    try:
        server.bind(str(where))
        where.chmod(0o777)
        server.listen(1)
        probe = f"import socket; s = socket.socket(socket.AF_UNIX); s.connect({str(where)!r}); print('CONNECTED')"
        out = anyio.run(_run_as, held, base, [], f'python3 -c "{probe}" 2>&1 | tail -1; echo ran')
    finally:
        server.close()
    assert "ran" in out and "CONNECTED" not in out, out
