"""Whether ripgrep may be trusted with a tree's ignore files: it answers only where it reads the
same rules the walker reads (red team round 45).

ripgrep reads each ignore file it meets (``.gitignore``, ``.ignore``, ``.rgignore``,
``.git/info/exclude``, in the searched tree and its ancestors) by path: it follows a symlinked
one and obeys one of any size. Which names a search listed then told what a file the session
may not read holds: ``.gitignore -> keys/id.pem`` (a rule-denied file) or ``-> ~/.netrc``
(outside the workspace) hid exactly the names its lines spell -- one whole line guessed per
name, the model's own Write making the names. And a tree of more rules than the walker obeys
(`MAX_IGNORE_RULES`) was answered by ripgrep and refused by the walker, which a command can
force (round 42's Left). ripgrep has no flag for either.

`guarded` runs ripgrep beside a walk of the directories alone (`odd_ignore_file`, in a worker
thread: on two cores they overlap), which looks at every ignore file ripgrep could read. One that
is not a plain regular file within the walker's bound sends the search to the walker (which reads
a link as no rules: git's reading too, since 2.32); past the rule bound it is refused, in the
walker's words, whichever backend would have run.
"""

from __future__ import annotations

import functools
import os
import threading
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TypeVar

import anyio

from shellrt.protocol import ToolExecutionError
from shellrt.tools._gitignore import TooManyIgnoreRulesError, WalkTimeoutError, odd_ignore_file
from shellrt.tools._offloop import inner_deadline, off_loop

__all__ = ["guarded"]

T = TypeVar("T")

#: Seconds the walk of the directories may take; past it the walker answers (fail closed).
GUARD_S = 20.0


#: Walks under way, by event loop (its thread) and tree (root, its inode, the places skipped): a
#: Grep lists the tree for hidden tracked files beside its search, and both ripgreps wait on one
#: walk rather than two. An Event wakes only its own loop: shared across the loops of a program
#: running sessions in several threads, a search in one waited on another's walk, whose end never
#: woke it -- until its own timeout (red team round 46, review25).
_under_way: dict[
    tuple[int, str, int, int, tuple[str, ...], str | None, bool],
    tuple[anyio.Event, list[bool | ToolExecutionError]],
] = {}


async def _as_walked(
    root: Path, root_fd: int | None, skip: tuple[str, ...], top: str | None = None, read_exclude: bool = True
) -> bool:
    """`_walked`, shared with a walk of the same tree (and ripgrep's reading) already under way."""
    try:
        found = os.stat(root_fd) if root_fd is not None else os.stat(root)
    except OSError:
        return await _walked(root, root_fd, skip, top, read_exclude)
    key = (threading.get_ident(), str(root), found.st_dev, found.st_ino, skip, top, read_exclude)
    shared = _under_way.get(key)
    if shared is not None:
        await shared[0].wait()
        if shared[1]:
            outcome = shared[1][0]
            if isinstance(outcome, ToolExecutionError):
                raise ToolExecutionError(str(outcome))
            return outcome
        return await _walked(root, root_fd, skip, top, read_exclude)  # the first waiter was cancelled
    done: tuple[anyio.Event, list[bool | ToolExecutionError]] = (anyio.Event(), [])
    _under_way[key] = done
    try:
        verdict = await _walked(root, root_fd, skip, top, read_exclude)
        done[1].append(verdict)
    except ToolExecutionError as exc:
        done[1].append(exc)
        raise
    finally:
        del _under_way[key]
        done[0].set()
    return verdict


async def _walked(
    root: Path, root_fd: int | None, skip: tuple[str, ...], top: str | None = None, read_exclude: bool = True
) -> bool:
    """Whether ripgrep reads below ``root`` the ignore rules the walker reads; raises the walker's
    "Cannot search" refusal past `MAX_IGNORE_RULES`. ``read_exclude``: see `guarded`."""
    deadline = time.monotonic() + inner_deadline(GUARD_S)
    look = functools.partial(
        odd_ignore_file, root, root_fd=root_fd, deadline=deadline, skip=skip, top=top, read_exclude=read_exclude
    )
    try:
        odd = await off_loop(look, what=f"Listing {root}")
    except TooManyIgnoreRulesError as exc:
        raise ToolExecutionError(f"Cannot search: {exc}.") from None
    except WalkTimeoutError:
        return False
    return odd is None


async def guarded(
    root: Path,
    root_fd: int | None,
    skip: tuple[str, ...],
    run_rg: Callable[[], Awaitable[T]],
    top: str | None = None,
    read_exclude: bool = True,
) -> tuple[T] | None:
    """``(run_rg(),)`` when ripgrep read the rules the walker reads below ``root``; None when the
    walker must answer instead. The walk's refusal (too many rules) comes before ripgrep's
    answer or error: the walker would have given it. ``top``: the highest directory whose ignore
    files are looked at (`_paths.search_top`: a relocated mount, bwrap's private /tmp, docker's
    workspace): without it the guard walked the host parents of bwrap's private tmp (the host's
    /tmp, any local user's to write), which neither ripgrep in the sandbox nor the walker reads,
    and refused or rerouted searches of /tmp on what they held (red team round 46, review25).
    ``read_exclude=False``: ripgrep runs with ``--no-ignore-exclude`` (`_gitignore.gitfile_along`:
    a worktree, whose ``.git`` file led ripgrep to the main repository's exclude file; round 47)."""
    verdict: list[bool] = []
    refusal: list[ToolExecutionError] = []
    failure: list[BaseException] = []
    answer: list[T] = []

    async def guard() -> None:
        try:
            verdict.append(await _as_walked(root, root_fd, skip, top, read_exclude))
        except ToolExecutionError as exc:
            refusal.append(exc)

    async with anyio.create_task_group() as tg:
        tg.start_soon(guard)
        try:
            answer.append(await run_rg())
        except Exception as exc:  # decided once the guard has spoken: the walker may answer instead
            failure.append(exc)
    if refusal:
        raise refusal[0]
    if not verdict[0]:
        return None
    if failure:
        raise failure[0]
    return (answer[0],)
