"""How the PreToolUse hooks see an input another hook rewrote: as they see the model's input.

Hooks judge a file tool's input with its paths resolved (``runtime/observed_paths``): a guard
comparing absolute paths catches ``sub/../secret.txt`` and a symlink to the secret. A rewrite
(``updatedInput``) is judged by the other hooks again (round 28), but it was passed on as the
rewriting hook wrote it, so ``<ws>/link.txt`` (a symlink to the secret) passed a guard blocking
``<ws>/secret.txt`` (red team round 29). The runtime knows how to parse, validate and resolve an
input; the hook runner does not. The runtime names that step here for the call it is making
(a context variable of its task, as `call_approval` records a decision), and the runner applies
it to every rewrite before the next pass: the hooks' `HookRunner` interface does not change for
runners written elsewhere.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

__all__ = ["Observe", "observed", "observing"]

#: A rewritten input -> the input as hooks see it (paths resolved), or why it is no valid input.
Observe = Callable[[dict[str, Any]], Awaitable["dict[str, Any] | str"]]

_observer: ContextVar[Observe | None] = ContextVar("shellrt_hook_rewrite_observer", default=None)


@contextmanager
def observing(observe: Observe) -> Iterator[None]:
    """While the block runs (in this task), rewrites are seen through ``observe``."""
    token = _observer.set(observe)
    try:
        yield
    finally:
        _observer.reset(token)


async def observed(raw: dict[str, Any]) -> dict[str, Any] | str:
    """``raw`` as the hooks judge it: through the runtime's step when one is set, else as written
    (a runner called outside a runtime's call)."""
    observe = _observer.get()
    return raw if observe is None else await observe(raw)
