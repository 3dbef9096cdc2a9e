"""Pre-spawned local shells (`sandbox._warm`): a command handed to a warm bash behaves as in a fresh one.

Two local sessions side by side, one with ``warm_shells=1`` (the default) and one with 0; every
command runs in both and the results are compared, and the warm session's counters prove that
the warm path was taken. Real processes throughout; one pair of sessions for the module.
"""

from __future__ import annotations

import os
import re
import signal
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from sandbox import LocalConfig, SandboxPolicy
from sandbox._proctree import pids_with_marker
from sandbox._warm import MAX_TEXT_BYTES, WarmPool
from sandbox.local import LocalBackend
from shellrt.supervisor import Supervisor
from shellrt.supervisor.models import CommandResult


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module", autouse=True)
def _prestart_when_busy() -> Iterator[None]:
    """This file tests what a warm shell does: pre-start on a busy machine too (`WarmPool.busy_psi`;
    the busy case is tests/test_local_warm_busy.py)."""
    saved, WarmPool.busy_psi = WarmPool.busy_psi, 101.0
    yield
    WarmPool.busy_psi = saved


class Pair:
    """A warm and a cold local session on one workspace."""

    def __init__(self, ws: Path, warm: Supervisor, cold: Supervisor, backend: LocalBackend) -> None:
        self.ws = ws
        self.warm = warm
        self.cold = cold
        self.backend = backend

    @property
    def pool(self) -> WarmPool:
        pool = self.backend._runner.warm
        assert pool is not None
        return pool

    async def both(self, command: str, **kwargs: Any) -> tuple[CommandResult, CommandResult]:
        """``command`` in the warm session (asserted: handed to a warm shell) and in the cold one.

        A ``true`` of the same shape first: the warm shell waiting is shaped by the previous call.
        """
        await _prime(self.warm, **kwargs)
        before = self.pool.handed
        warm = await self.warm.run(command, timeout_s=30, **kwargs)
        assert self.pool.handed == before + 1, f"not handed to a warm shell: {command!r}"
        cold = await self.cold.run(command, timeout_s=30, **kwargs)
        return warm, cold


@pytest.fixture(scope="module")
async def pair() -> AsyncIterator[Pair]:
    with tempfile.TemporaryDirectory(prefix="shellrt-warm-test-") as tmp:
        ws = Path(tmp) / "ws"
        ws.mkdir()
        policy = SandboxPolicy(workspace=ws)
        warm_backend = LocalBackend(LocalConfig(warm_shells=1), policy)
        cold_backend = LocalBackend(LocalConfig(warm_shells=0), policy)
        async with (
            warm_backend,
            cold_backend,
            Supervisor(warm_backend, session_dir=Path(tmp) / "sw") as warm,
            Supervisor(cold_backend, session_dir=Path(tmp) / "sc") as cold,
        ):
            p = Pair(ws, warm, cold, warm_backend)
            await warm.run("true", timeout_s=30)  # the first command starts fresh: no pool yet
            assert warm_backend._runner.warm is None
            await warm.run("true", timeout_s=30)  # the second of its shape starts fresh and fills the pool
            assert p.pool.idle == 1 and cold_backend._runner.warm is None
            yield p


async def _prime(sup: Supervisor, **kwargs: Any) -> None:
    """Two ``true`` of a shape: then a warm shell of that shape waits (see `WarmPool.refill`)."""
    for _ in range(2):
        await sup.run("true", timeout_s=30, **kwargs)


def _same(warm: CommandResult, cold: CommandResult) -> None:
    assert (warm.exit_code, warm.signal, warm.preview, warm.cwd) == (
        cold.exit_code,
        cold.signal,
        cold.preview,
        cold.cwd,
    )


SAME = [
    'echo "$0"; exit 3',
    "kill -TERM $$",
    "set -e; false; echo unreachable",
    "trap 'echo bye' EXIT; echo hi",
    "cat <<'EOF'\nline $HOME\nEOF\ncat <<EOF\n$((1 + 2))\nEOF",
    "echo (",
    'echo "$LINENO"; f() { return 4; }; f',
    "exit; echo no",
    "printf '%s|' héllo € 日本; echo",
    '[ -p /dev/stdin ] && echo pipe || echo not-a-pipe; read -r x || echo "eof $?"',
    "ls /proc/$$/fd",
    "cd /tmp && pwd",
    'printf "%s\\n" "$__shellrt_c"',
    "echo ${#BASH_ARGV[@]} $# $- ; shopt -p | md5sum; set -o | md5sum",
]


@pytest.mark.anyio
@pytest.mark.parametrize("command", SAME)
async def test_a_command_behaves_as_in_a_fresh_shell(pair: Pair, command: str) -> None:
    _same(*await pair.both(command))


@pytest.mark.anyio
async def test_stdin_and_separate_stderr(pair: Pair) -> None:
    command = 'read -r first; echo "first=$first"; cat; echo err >&2; [ -p /dev/stdin ] && echo pipe'
    warm, cold = await pair.both(command, stdin=b"one\ntwo \xc3\xa9\nthree", merge_stderr=False)
    _same(warm, cold)
    assert (warm.stdout, warm.stderr) == (cold.stdout, cold.stderr)
    assert warm.preview.startswith("first=one\ntwo é\nthree")


@pytest.mark.anyio
@pytest.mark.parametrize("locale", ["C.UTF-8", "xx_XX.UTF-8"])
async def test_the_locale_and_its_warnings_are_a_fresh_shells(pair: Pair, locale: str) -> None:
    """The text is read with ``LC_ALL=C`` for one ``read``: the command's locale, and bash's warning
    about a locale it cannot set (once, at start), are as in a fresh shell."""
    command = "s='héllo €'; echo ${#s} \"$LC_ALL\"; locale 2>/dev/null | grep -c UTF-8"
    warm, cold = await pair.both(command, env={"LC_ALL": locale})
    _same(warm, cold)
    assert warm.preview.count("setlocale") == cold.preview.count("setlocale") <= 1


#: Values that differ per run, whichever way the shell started.
_PER_RUN = re.compile(
    r"^(declare -[-a-zA-Z]+ )?(SHELLRT_RUN_ID|SHELLRT_CWD_FILE|BASH_EXECUTION_STRING|BASHPID|RANDOM|SRANDOM"
    r"|SECONDS|EPOCHREALTIME|EPOCHSECONDS|_|BASH_COMMAND|PPID)=",
)


def _stable(text: str) -> list[str]:
    return [line for line in text.splitlines() if not _PER_RUN.match(line)]


@pytest.mark.anyio
async def test_environment_and_variables_equal_a_fresh_shells(pair: Pair) -> None:
    warm, cold = await pair.both("env | sort", env={"A_VAR": "x y", "LC_ALL": "C.UTF-8"})
    assert _stable(warm.preview) == _stable(cold.preview)
    assert "SHELLRT_COMMAND" not in warm.preview and "__shellrt_n" not in warm.preview
    assert "A_VAR=x y" in warm.preview
    # Shell variables too (declare -p: every variable, attributes and all), apart from per-run values.
    warm, cold = await pair.both("declare -p")
    assert _stable(warm.preview) == _stable(cold.preview)
    assert "__shellrt_c" in warm.preview  # as in the fresh launch, which keeps the text there too


@pytest.mark.anyio
async def test_each_command_gets_its_own_process_group_and_session(pair: Pair) -> None:
    seen: set[str] = set()
    await _prime(pair.warm)
    for _ in range(3):
        before = pair.pool.handed
        result = await pair.warm.run(
            "echo $$ $(cut -d' ' -f5,6 /proc/$$/stat); tr '\\0' ' ' </proc/$$/cmdline", timeout_s=30
        )
        assert pair.pool.handed == before + 1
        first, cmdline = result.preview.splitlines()
        pid, pgid, sid = first.split()
        assert pid == pgid == sid and pid not in seen
        seen.add(pid)
        assert cmdline.startswith("bash -c ") and "/proc/$$/stat" not in cmdline  # the text stays hidden


@pytest.mark.anyio
async def test_timeout_kills_the_whole_tree(pair: Pair) -> None:
    await _prime(pair.warm)
    token = f"{os.getpid() % 1000}.{os.urandom(3).hex().translate(str.maketrans('abcdef', '123456'))}"
    before = pair.pool.handed
    result = await pair.warm.run(f"sleep 10{token} & sleep 20{token}; echo never", timeout_s=0.5)
    assert pair.pool.handed == before + 1
    assert result.timed_out and "never" not in result.preview
    with anyio.fail_after(5):
        while _cmdlines_with(f"10{token}") or _cmdlines_with(f"20{token}"):
            await anyio.sleep(0.02)


def _cmdlines_with(word: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as f:
                    if word.encode() in f.read():
                        found.append(int(entry))
            except OSError:
                pass
    return found


@pytest.mark.anyio
async def test_a_killed_waiting_shell_costs_the_next_call_nothing(pair: Pair) -> None:
    """Anything of the same uid (a background command, say) may kill the waiting shell: the next
    call, right after the kill, before the shell has even died, starts fresh (never an error)."""
    for _ in range(3):
        await _prime(pair.warm)
        (pid,) = pair.pool.pids()
        os.kill(pid, signal.SIGKILL)
        missed = pair.pool.missed
        after = await pair.warm.run("echo fine", timeout_s=30)
        assert (after.exit_code, after.preview) == (0, "fine\n")
        assert pair.pool.missed == missed + 1  # it was seen dead or dying and the call started fresh
    _same(*await pair.both("echo again"))


@pytest.mark.anyio
async def test_a_replaced_cwd_is_never_served_by_a_shell_started_in_the_old_one(pair: Pair) -> None:
    d = pair.ws / "d"
    d.mkdir()
    await _prime(pair.warm, cwd=str(d))  # the next warm shell waits in d
    assert pair.pool.idle == 1
    d.rename(pair.ws / "d.old")
    d.mkdir()
    (d / "new-file").write_text("x")
    missed = pair.pool.missed
    result = await pair.warm.run("ls; pwd -P", timeout_s=30, cwd=str(d))
    assert result.preview.split() == ["new-file", str(d.resolve())]
    assert pair.pool.missed == missed + 1
    _same(*await pair.both("ls", cwd=str(d)))  # the refill waits in the new one


@pytest.mark.anyio
async def test_a_changed_environment_never_reaches_a_command_through_a_stale_shell(pair: Pair) -> None:
    await _prime(pair.warm, env={"STALE": "1"})
    missed = pair.pool.missed
    result = await pair.warm.run('echo "${STALE-unset} ${FRESH-unset}"', timeout_s=30, env={"FRESH": "2"})
    assert result.preview == "unset 2\n" and pair.pool.missed == missed + 1
    result = await pair.warm.run('echo "${STALE-unset} ${FRESH-unset}"', timeout_s=30, env={"FRESH": "2"})
    assert result.preview == "unset 2\n"


@pytest.mark.anyio
async def test_long_or_nul_text_starts_fresh_and_keeps_the_warm_shell(pair: Pair) -> None:
    pair.pool.refill  # noqa: B018 - the pool exists
    await _prime(pair.warm)
    handed = pair.pool.handed
    long_text = "x=" + "y" * MAX_TEXT_BYTES + "; echo ${#x}"
    result = await pair.warm.run(long_text, timeout_s=30)
    assert result.preview == f"{MAX_TEXT_BYTES}\n" and pair.pool.handed == handed
    near = "x=" + "y" * (MAX_TEXT_BYTES - 40) + "; echo ${#x}"
    result = await pair.warm.run(near, timeout_s=30)
    assert result.preview == f"{MAX_TEXT_BYTES - 40}\n" and pair.pool.handed == handed + 1


@pytest.mark.anyio
async def test_close_with_a_shell_waiting_leaves_nothing(tmp_path: Path) -> None:
    backend = LocalBackend(LocalConfig(warm_shells=1), SandboxPolicy(workspace=tmp_path))
    async with backend, Supervisor(backend, session_dir=tmp_path / "s") as sup:
        await _prime(sup)
        pool = backend._runner.warm
        assert pool is not None and pool.idle == 1
        (pid,) = pool.pids()
        prefix = backend.marker_prefix
        # Its environ shows the marker once its exec is done (just spawned: maybe not yet).
        deadline = time.monotonic() + 10
        while pid not in pids_with_marker(prefix, prefix=True) and time.monotonic() < deadline:
            await anyio.sleep(0.02)
        assert pid in pids_with_marker(prefix, prefix=True)
    assert not pids_with_marker(prefix, prefix=True)
    assert not os.path.exists(f"/proc/{pid}") or _state(pid) in ("Z", "X", None)


def _state(pid: int) -> str | None:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return None


def test_the_warm_tail_is_the_launchs() -> None:
    """`sandbox._warm` recognises the launch of `shellrt.supervisor.shells` by its tail (a copy)."""
    from sandbox import _warm
    from shellrt.supervisor import shells

    assert (_warm.BASH_FROM_ENV, _warm.COMMAND_VAR) == (shells._BASH_FROM_ENV, shells.COMMAND_VAR)
    argv, env = shells.shell_launch("true", "bash")
    assert _warm.warm_argv(argv, False) is not None and set(env) == {_warm.COMMAND_VAR}
    assert _warm.warm_argv(shells.shell_launch("true", "bash", text_in_argv=True).argv, False) is None


@pytest.mark.anyio
async def test_on_by_default_and_off_at_zero(tmp_path: Path) -> None:
    for config, warm in ((None, True), (LocalConfig(warm_shells=0), False)):
        backend = LocalBackend(config, policy=SandboxPolicy(workspace=tmp_path))
        async with backend, Supervisor(backend, session_dir=tmp_path / f"s{warm}") as sup:
            for _ in range(3):
                await sup.run("true", timeout_s=30)
            assert (backend._runner.warm is not None) is warm


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["cgroup", "reaper"])
async def test_a_leftover_dies_when_its_command_ends_with_a_shell_waiting(tmp_path: Path, mode: str) -> None:
    """A waiting warm shell is a command of the session's reaper or cgroup: it must not keep the
    session from going idle, which is when what a command left behind (detached, marker
    scrubbed) is killed. Two warm shells: one takes the command, the other waits meanwhile."""
    backend = LocalBackend(LocalConfig(warm_shells=2), SandboxPolicy(workspace=tmp_path))
    backend.session_cgroup = mode == "cgroup"
    async with backend, Supervisor(backend, session_dir=tmp_path / "s") as sup:
        if mode == "cgroup" and os.geteuid() == 0:
            assert backend._runner.session_cgroup is not None
        else:
            assert backend._runner.reaper is not None
        await _prime(sup)
        pool = backend._runner.warm
        assert pool is not None and pool.idle == 2
        token = f"{os.getpid() % 1000}.{os.urandom(3).hex().translate(str.maketrans('abcdef', '123456'))}"
        result = await sup.run(f"(setsid env -i sleep 30{token} &); exit", timeout_s=30)
        assert result.exit_code == 0
        with anyio.fail_after(10):
            while _cmdlines_with(f"30{token}"):
                await anyio.sleep(0.02)
        # And the pool warms up again. Not always at the first two commands: the leftover's cmdline
        # goes when it dies, but the reaper (or cgroup) lists it, a zombie, until it is reaped, and
        # a command ending while it is listed "may have left something" and starts no warm shell
        # (`LocalRunner.after_exit`); a loaded machine delays that reap (CI91: idle 0 after one prime).
        with anyio.fail_after(20):
            while pool.idle != 2:
                await _prime(sup)
