"""Red team round 15, shared by ``tests/test_redteam_round15_outlive_*.py``: a command's leftover
plants an executable git hook a little after the command ended.

The protected-files guard accepts changes made between commands while nothing of the session runs
as the operator's own (`shellrt.supervisor.protect.CommandGuard`): a process of a command that
outlives the command's reported end and writes ``.git/hooks/pre-commit`` after the post-command
check would have it kept at the next check, and the operator's next ``git commit`` runs it on the
host. The planter detaches every way a POSIX shell can (subshell, ``setsid``, ``env -i`` scrubbing
the marker variable, SIGTERM/SIGHUP ignored, stdio closed), waits until the command's shell is gone,
then waits ``delay`` more before it plants.
"""

from __future__ import annotations

from pathlib import Path

import anyio

from shellrt.supervisor import Supervisor

#: ``sh plant.sh DELAY [ESCAPE]``: ESCAPE is shell code the planter runs first (a cgroup move, …).
PLANT = r"""
cmd=$PPID
delay=$1
escape=${2:-:}
( trap '' TERM HUP INT
  exec setsid env -i PATH=/usr/local/bin:/usr/bin:/bin sh -c '
    trap "" TERM HUP INT
    '"$escape"'
    while kill -0 '"$cmd"' 2>/dev/null; do sleep 0.02; done
    sleep '"$delay"'
    mkdir -p .git/hooks
    printf "#!/bin/sh\necho planted after the command ended\n" > .git/hooks/pre-commit
    chmod 755 .git/hooks/pre-commit
    : > planted.done
    sleep 30' </dev/null >/dev/null 2>&1 & ) </dev/null >/dev/null 2>&1
echo started
"""


def workspace(ws: Path) -> None:
    """A workspace with a git dir (no hook) and the planter."""
    (ws / ".git" / "hooks").mkdir(parents=True, exist_ok=True)
    (ws / "plant.sh").write_text(PLANT)


async def planted_after_end(sup: Supervisor, ws: Path, *, escape: str = ":", delay: float = 0.3) -> str | None:
    """Run the attack, then a second command; return why it succeeded (None: it did not)."""
    hook = ws / ".git" / "hooks" / "pre-commit"
    done = ws / "planted.done"
    for stale in (hook, done):
        stale.unlink(missing_ok=True)
    esc = escape.replace("'", "'\\''")
    result = await sup.run(f"sh plant.sh {delay} '{esc}'", timeout_s=30)
    assert result.exit_code == 0 and "started" in result.preview, result.preview
    assert not hook.exists(), "planted before the command ended (the delay is too short)"
    # Long enough for the planter (``delay`` after the command's end) to have acted, were it alive.
    with anyio.move_on_after(delay + 0.5):
        while not done.exists():
            await anyio.sleep(0.05)
    later = await sup.run("true", timeout_s=30)
    assert later.exit_code == 0, later.preview
    if hook.exists():
        return (
            "a process of an ended command planted a git hook after the protected-files check, and "
            f"the next check kept it as the operator's edit: {later.notes!r}"
        )
    return None


#: ``python3 spam.py``: detaches (double fork, ``setsid``, environment and stdio dropped), waits for
#: the command's shell to end, then for 0.25 s puts the hook back whenever it is gone: a revert by
#: the post-command check is undone at once, and what the next check finds is kept unless the
#: planter was dead before that check began.
SPAM = r"""
import os, select, time
parent = os.getppid()
if os.fork():
    os._exit(0)
os.setsid()
if os.fork():
    os._exit(0)
os.environ.clear()
null = os.open("/dev/null", os.O_RDWR)
for n in (0, 1, 2):
    os.dup2(null, n)
select.select([os.pidfd_open(parent)], [], [], 30)
hook = ".git/hooks/pre-commit"
end = time.monotonic() + 0.25
while time.monotonic() < end:
    try:
        fd = os.open(hook, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o755)
    except FileExistsError:
        continue
    os.write(fd, b"#!/bin/sh\necho planted after the command ended\n")
    os.close(fd)
"""


async def respawned_after_check(sup: Supervisor, ws: Path, attempts: int) -> str | None:
    """Run the spammer ``attempts`` times, each followed by a second command; why it won (None: never)."""
    hook = ws / ".git" / "hooks" / "pre-commit"
    (ws / "spam.py").write_text(SPAM)
    for attempt in range(attempts):
        hook.unlink(missing_ok=True)
        result = await sup.run("python3 spam.py; sleep 0.05", timeout_s=30)
        assert result.exit_code == 0, result.preview
        await anyio.sleep(0.3)  # the spammer's window has passed, were it alive
        later = await sup.run("true", timeout_s=30)
        if hook.exists():
            return (
                f"attempt {attempt + 1}: a leftover put a git hook back after the post-command "
                f"check reverted it, and the next check kept it: {result.notes!r} {later.notes!r}"
            )
    return None
