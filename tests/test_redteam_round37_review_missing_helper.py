"""Round 37 red team, review: a scheduling helper missing on a host whose caller runs raised.

Round 36 (sched) starts every host process a tool starts behind `calm_prefix` (``nice``, ``chrt``,
``ionice``, ``prlimit``, found on the system path only) and refuses the start, saying what to
install, when one is missing. The refusal reached the model intact from Read and a single-file
Grep, but a Grep over a directory runs its search beside a listing in a task group: the model
read "Grep failed unexpectedly: ExceptionGroup: unhandled errors in a TaskGroup (1
sub-exception)", nothing of what failed or what to do. Fixed where every tool's unexpected
failure is quoted (`shellrt.runtime.raised.quoted`): a group is quoted by its first leaf.

Played for real: a child started by root at nice -5 in a private mount namespace where
``/usr/bin/nice`` is ``/dev/null`` (not executable: ``shutil.which`` skips it), on the local
backend, through `shellrt.Runtime`.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

from shellrt.runtime.raised import quoted
from tests.conftest import require

_CHILD = textwrap.dedent(
    """
    import os, sys, anyio, shellrt
    from shellrt.permissions import callback_approver
    from shellrt.protocol import ToolUseBlock
    from tests._governance import envelope_text

    async def main() -> None:
        ws = sys.argv[1]
        rt = shellrt.Runtime(ws, "local", session_dir=sys.argv[2], mode="default",
                             approver=callback_approver(lambda _r: True), use_settings=False)
        async with rt:
            [grep] = await rt.run_envelopes([ToolUseBlock(id="g1", name="Grep", input={"pattern": "hello"})])
        print("NICE", os.getpriority(os.PRIO_PROCESS, 0))
        print("ERROR", grep.is_error)
        print("TEXT", envelope_text(grep).replace("\\n", " "))

    anyio.run(main)
    """
)


def test_a_missing_nice_is_named_to_the_model_by_a_directory_grep(tmp_path: Path) -> None:
    require(os.geteuid() == 0, "a caller at nice -5 and a private mount namespace need root")
    nice, unshare = shutil.which("nice", path="/usr/bin"), shutil.which("unshare")
    require(nice is not None and unshare is not None, "nice and unshare (util-linux, coreutils)")
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("hello\n")
    script = tmp_path / "child.py"
    script.write_text(_CHILD)
    run = (
        f"mount --bind /dev/null {nice} && exec {sys.executable} {script} {ws} {tmp_path / 's'}"
    )
    done = subprocess.run(
        [unshare, "-m", "--propagation", "private", "--", sys.executable, "-c",
         "import os, sys; os.nice(-5); os.execv('/bin/sh', ['sh', '-c', sys.argv[1]])", run],
        capture_output=True, text=True, timeout=120, cwd=Path(__file__).parent.parent,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).parent.parent)},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    lines = dict(line.split(" ", 1) for line in done.stdout.splitlines() if " " in line)
    assert lines.get("NICE") == "-5", done.stdout  # the caller really ran raised
    assert lines.get("ERROR") == "True", done.stdout  # refused, never started at nice -5
    text = lines.get("TEXT", "")
    assert "needs nice" in text and "apt-get install" in text, text


def test_a_group_is_quoted_by_what_failed_in_it() -> None:
    leaf = FileNotFoundError("shellrt needs nice (apt-get install coreutils)")
    group = ExceptionGroup("unhandled errors in a TaskGroup", [ExceptionGroup("inner", [leaf, KeyError("k")])])
    assert quoted(group, 500) == f"FileNotFoundError: {leaf} (and 1 more)"

    class Odd(ExceptionGroup):  # type: ignore[type-arg]
        @property
        def exceptions(self) -> tuple[BaseException, ...]:  # type: ignore[override]
            raise RuntimeError("no")

    assert quoted(Odd("odd", [leaf]), 500) == f"FileNotFoundError: {leaf}"  # what it holds, not shows
