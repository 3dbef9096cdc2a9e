"""Docker backend: what one exec request may ask for, against a real daemon.

A per-call user (root, names from the image's /etc/passwd with their
supplementary groups, bare uids), argv up to the kernel's exec limits (and a
clear refusal beyond them), an explicit working directory anywhere in the
container (and a clear refusal when it is missing or not a directory), and the
end of a command's detached leftovers when the command ends or is killed.
"""

from __future__ import annotations

import contextlib
import hashlib
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest

from sandbox import ExecRequest, ResourceLimits, SandboxExecError, SandboxProcess
from sandbox.docker import EXECUTOR_UID, DockerBackend
from sandbox.docker._tmpslots import TMP_SLOTS, slot_gid
from tests._docker_support import DEBIAN, config, policy, require_docker

pytestmark = [pytest.mark.anyio, pytest.mark.docker]

ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"}
#: shellrt-test-debian plus a user with supplementary groups, and names the image maps to the
#: executor's reserved id (a user, and a user listed in such a group). Built here from the local
#: image (no registry); the tag follows the recipe.
GROUPS_DOCKERFILE = (
    f"FROM {DEBIAN}\n"
    "RUN groupadd -g 4100 crew && groupadd -g 4101 band && useradd -u 4000 -U -G crew,band alice"
    " && groupadd -g 2147480001 shadowexec && useradd -u 2147480001 -M -N -g 100 evil"
    " && useradd -u 4001 -U -G shadowexec mallory\n"
)
GROUPS_IMAGE = "shellrt-test-debian-groups:" + hashlib.sha256(GROUPS_DOCKERFILE.encode()).hexdigest()[:12]


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
async def shared(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[DockerBackend]:
    require_docker()
    ws = tmp_path_factory.mktemp("requests")
    backend = DockerBackend(config(DEBIAN), policy(ws, limits=ResourceLimits(pids=256)))
    await backend.start()
    try:
        yield backend
    finally:
        await backend.close()


async def collect(proc: SandboxProcess) -> str:
    chunks: list[bytes] = []
    with contextlib.suppress(anyio.EndOfStream):
        while True:
            chunks.append(await proc.stdout.receive())
    return b"".join(chunks).decode("utf-8", "replace")


async def run(
    backend: DockerBackend, script: str, *, user: str | None = None, cwd: str = "/workspace"
) -> tuple[int, str]:
    proc = await backend.exec(
        ExecRequest(argv=("sh", "-c", script), cwd=cwd, env=ENV, merge_stderr=True, user=user)
    )
    out = await collect(proc)
    return (await proc.wait()).exit_code, out


# --- per-call user ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("user", "expected"),
    [
        ("root", "root 0 0"),
        ("0", "root 0 0"),
        ("nobody", "nobody 65534 65534"),
        ("daemon", "daemon 1 1"),
        ("4321", "4321 4321 4321"),
        ("4321:5", "4321 4321 5"),
        ("nobody:root", "nobody 65534 0"),
    ],
)
async def test_each_call_runs_as_its_user(shared: DockerBackend, user: str, expected: str) -> None:
    code, out = await run(shared, 'echo "$(id -un 2>/dev/null) $(id -u) $(id -g)"', user=user)
    assert (code, out) == (0, expected + "\n")


def _but_slot(groups: list[str]) -> list[str]:
    """``groups`` sorted, without the one TMPDIR slot group a command holds (round 30)."""
    slot_groups = {str(slot_gid(EXECUTOR_UID, k)) for k in range(TMP_SLOTS)}
    assert sum(g in slot_groups for g in groups) <= 1, groups
    return sorted(g for g in groups if g not in slot_groups)


async def test_the_default_user_is_unchanged(shared: DockerBackend) -> None:
    code, out = await run(shared, "id -u; id -g; id -G")
    uid, _, gid = shared.user.partition(":")  # as root: the session's leased uid, non-root
    # Beside its own group, the group of the TMPDIR slot it holds (round 30: only it traverses it).
    assert uid != "0" and code == 0 and out.startswith(f"{uid}\n{gid}\n"), out
    assert _but_slot(out.splitlines()[-1].split()) == [gid], out


async def test_a_root_call_holds_no_capability(shared: DockerBackend) -> None:
    code, out = await run(
        shared, "grep -h '^Cap' /proc/self/status; grep NoNewPrivs /proc/self/status", user="root"
    )
    assert code == 0
    assert out.count("0000000000000000") == 5 and "NoNewPrivs:\t1" in out, out


@pytest.fixture(scope="module")
async def groups_image(shared: DockerBackend) -> AsyncIterator[DockerBackend]:
    if subprocess.run(["docker", "image", "inspect", GROUPS_IMAGE], capture_output=True).returncode != 0:
        subprocess.run(
            ["docker", "build", "-q", "-t", GROUPS_IMAGE, "-"],
            input=GROUPS_DOCKERFILE.encode(),
            capture_output=True,
            check=True,
            timeout=300,
        )
    ws = Path(shared.policy.workspace)
    async with DockerBackend(config(GROUPS_IMAGE), policy(ws)) as backend:
        yield backend


async def test_a_named_user_gets_its_supplementary_groups(groups_image: DockerBackend) -> None:
    code, out = await run(groups_image, "id -un; id -u; id -g; id -G", user="alice")
    assert code == 0
    name, uid, gid, groups = out.split("\n")[:4]
    assert (name, uid, gid) == ("alice", "4000", "4000")
    assert _but_slot(groups.split()) == ["4000", "4100", "4101"]
    # An explicit group replaces the primary one; the memberships stay.
    code, out = await run(groups_image, "id -g; id -G", user="alice:band")
    assert out.split("\n")[0] == "4101" and _but_slot(out.split("\n")[1].split()) == ["4100", "4101"]


@pytest.mark.parametrize("user", ["evil", "mallory", "alice:shadowexec"])
async def test_a_name_the_image_maps_to_the_executors_id_is_refused(
    groups_image: DockerBackend, user: str
) -> None:
    """The image's /etc/passwd or /etc/group may say anything: the executor's id is never a command's."""
    with pytest.raises(SandboxExecError, match="reserved for shellrt's executor.*Nothing was run"):
        await run(groups_image, "touch /tmp/ran-reserved", user=user)
    assert await run(groups_image, "test -e /tmp/ran-reserved && echo RAN || echo clean") == (0, "clean\n")


async def test_a_container_that_ran_per_call_users_is_not_recycled(shared: DockerBackend) -> None:
    """The reset's verdict judges what the session's own user could write: not another user's work."""
    await run(shared, "true", user="daemon")
    blocker = shared.reuse_blocker()
    assert blocker is not None and "per-call users" in blocker and "daemon" in blocker


@pytest.mark.parametrize(
    ("user", "words"),
    [
        ("nosuch", ["'nosuch'", "shellrt-test-debian", "/etc/passwd"]),
        ("root:nosuch", ["'nosuch'", "shellrt-test-debian", "/etc/group"]),
        ("bad user", ["'bad user'", "not a user spec"]),
        ("2147480001", ["reserved", "executor"]),
        ("0:2147480001", ["reserved", "executor"]),
    ],
)
async def test_an_unknown_or_reserved_user_runs_nothing(
    shared: DockerBackend, user: str, words: list[str]
) -> None:
    marker = f"/tmp/ran-{abs(hash(user))}"
    with pytest.raises(SandboxExecError) as info:
        await run(shared, f"touch {marker}", user=user)
    for word in words:
        assert word in str(info.value), str(info.value)
    assert "Nothing was run" in str(info.value) or "nothing was run" in str(info.value)
    code, out = await run(shared, f"test -e {marker} && echo RAN || echo clean")
    assert out == "clean\n"


# --- large argv --------------------------------------------------------------------------------
async def test_a_mebibyte_of_argv_runs(shared: DockerBackend) -> None:
    many = ["a" * 1000] * 1000
    big = "b" * (100 * 1024)
    proc = await shared.exec(
        ExecRequest(argv=("sh", "-c", 'echo "$# ${#1} ${#1001}"', "sh", *many, big), cwd="/", env=ENV)
    )
    out = await collect(proc)
    assert (await proc.wait()).exit_code == 0
    assert out == f"1001 1000 {100 * 1024}\n"


async def test_the_largest_single_argument_runs(shared: DockerBackend) -> None:
    proc = await shared.exec(
        ExecRequest(argv=("sh", "-c", 'echo "${#1}"', "sh", "c" * 131071), cwd="/", env=ENV)
    )
    assert await collect(proc) == "131071\n"


async def test_an_argument_above_the_kernel_limit_is_refused_clearly(shared: DockerBackend) -> None:
    with pytest.raises(SandboxExecError) as info:
        await shared.exec(ExecRequest(argv=("echo", "x" * 131072), cwd="/", env=ENV))
    text = str(info.value)
    assert "argument 1" in text and "131072" in text and "MAX_ARG_STRLEN" in text and "stdin" in text, text


async def test_an_argv_above_arg_max_is_refused_clearly(shared: DockerBackend) -> None:
    with pytest.raises(SandboxExecError) as info:
        await shared.exec(ExecRequest(argv=("echo", *(["y" * 100_000] * 22)), cwd="/", env=ENV))
    text = str(info.value)
    assert "ARG_MAX" in text and "2097152" in text and "stdin" in text, text


async def test_a_huge_environment_entry_is_refused_clearly(shared: DockerBackend) -> None:
    with pytest.raises(SandboxExecError, match="environment entry 'BIG'.*stdin"):
        await shared.exec(ExecRequest(argv=("true",), cwd="/", env={**ENV, "BIG": "z" * 200_000}))


# --- explicit cwd --------------------------------------------------------------------------------
async def test_an_explicit_cwd_anywhere_in_the_container_is_honoured(shared: DockerBackend) -> None:
    assert await run(shared, "pwd", cwd="/usr/bin") == (0, "/usr/bin\n")
    await run(shared, "mkdir -p /tmp/x")
    assert await run(shared, "pwd", cwd="/tmp/x") == (0, "/tmp/x\n")


@pytest.mark.parametrize(
    ("cwd", "words"),
    [("/no/such/dir", "does not exist"), ("/etc/passwd", "is not a directory")],
)
async def test_a_missing_cwd_is_refused_and_nothing_runs(shared: DockerBackend, cwd: str, words: str) -> None:
    with pytest.raises(SandboxExecError, match=f"working directory {cwd} {words}.*Nothing was run"):
        await run(shared, "touch /tmp/ran-elsewhere", cwd=cwd)
    assert await run(shared, "test -e /tmp/ran-elsewhere && echo RAN || echo clean") == (0, "clean\n")


# --- leftovers -----------------------------------------------------------------------------------
#: The numbers of the `sleep 10x` processes alive (by their comm: scripts that name them do not count).
LEFT = (
    "for p in /proc/[0-9]*; do read -r c <$p/comm && [ $c = sleep ] && tr '\\0' ' ' <$p/cmdline; done 2>/dev/null"
    " | grep -o '10[0-9]' | sort | tr '\\n' ' '; echo"
)
ESCAPES = (
    "setsid sh -c 'sleep 100' >/tmp/out 2>&1 &"
    " (setsid env -i /bin/sleep 101 </dev/null >/dev/null 2>&1 &);"
    " (nohup sleep 102 </dev/null >/dev/null 2>&1 &);"
)


async def test_detached_leftovers_die_when_their_command_ends(shared: DockerBackend) -> None:
    code, out = await run(shared, f"{ESCAPES} sleep 0.3; {LEFT}")
    assert out.split() == ["100", "101", "102"], out  # alive while it ran
    assert await run(shared, LEFT) == (0, "\n")


async def test_detached_leftovers_die_when_their_command_is_killed(shared: DockerBackend) -> None:
    proc = await shared.exec(
        ExecRequest(argv=("sh", "-c", f"{ESCAPES} echo ready; sleep 30"), cwd="/", env=ENV, user="root")
    )
    assert await proc.stdout.receive() == b"ready\n"
    await anyio.sleep(0.3)
    with anyio.fail_after(20):
        await proc.kill()
        status = await proc.wait()
    assert status.exit_code == 137
    assert await run(shared, LEFT) == (0, "\n")
