"""Container recycling for batch runs: started docker sandboxes, reset and verified between tasks.

Creating a hardened container costs the daemon ~200 ms of work here, and on a
small machine that, not shellrt, caps a fresh-container-per-task run at a few
tasks per second. So by default (``reuse="auto"``) a batch keeps the
containers it started and hands a finished task's container to the next task
with an **identical** docker sandbox (same config, network and limits — the
pool is keyed on them) once `DockerBackend.reset` has returned it to a
pristine state: every process but docker-init and the executor killed,
/tmp, /dev/shm, /dev/mqueue and the workspace emptied, SysV IPC objects
gone, all of it verified from the host, outside the container. A reset that
fails, times out or finds anything it cannot judge (an image VOLUME, a root
user, a bind-mode workspace, a restarted container) discards the container;
the next task gets a fresh one. Never reused on doubt.

``reuse="never"`` (per run, or per task in its ``sandbox``) gives every task a
brand-new container, destroyed after it. Other backends (local, bwrap) and
tool_use tasks (which run in a `shellrt.Runtime` of their own) always get a
fresh sandbox; the pool only starts and closes them.

At most ``capacity`` pooled containers exist at once (in use, being reset or
idle); idle containers of another sandbox config are evicted when a task
needs room. `aclose` removes every idle container: a run (and Ctrl-C) ends
with none left.
"""

from __future__ import annotations

import logging
from collections import Counter, deque
from dataclasses import dataclass, field
from typing import Literal

import anyio

from sandbox import DockerConfig, Recyclable, SandboxBackend, SandboxConfig, SandboxPolicy
from sandbox.factory import create_backend

__all__ = ["Lease", "PoolStats", "ReuseMode", "SandboxPool"]

log = logging.getLogger("shellrt.batch")

#: ``auto``: recycle docker containers between tasks with identical sandboxes when a reset
#: can be verified; ``never``: a brand-new container for every task.
ReuseMode = Literal["auto", "never"]


@dataclass
class PoolStats:
    """What the pool did during a run (for the summary)."""

    #: Containers the pool started (pooled sandboxes only).
    created: int = 0
    #: Tasks that ran on a recycled container.
    recycled: int = 0
    #: Containers removed because a reset failed or could not be verified.
    discarded: int = 0
    #: Containers removed because they can never be recycled (bind mode, root user, ...).
    not_reusable: int = 0
    #: Why containers were discarded or not reusable (first reason of each), with counts.
    reasons: Counter[str] = field(default_factory=Counter)

    def line(self) -> str:
        """``12 containers for 500 tasks (488 recycled), 3 discarded after a failed reset``."""
        tasks = self.created + self.recycled
        text = f"docker: {self.created} container(s) for {tasks} task(s) ({self.recycled} on recycled containers)"
        text += f", {self.discarded} discarded after a failed reset"
        if self.not_reusable:
            text += f", {self.not_reusable} not reusable"
        if self.reasons:
            top = ", ".join(f"{reason} ({n})" for reason, n in self.reasons.most_common(3))
            text += f" [{top}]"
        return text


@dataclass
class Lease:
    """A started sandbox handed to one task."""

    backend: SandboxBackend
    #: The pool key (None: not pooled, closed after the task).
    key: str | None = None
    #: 1 for a fresh sandbox; n when this is the n-th task on a recycled container.
    use: int = 1


def _pool_key(config: SandboxConfig, policy: SandboxPolicy) -> str | None:
    """Identical docker sandboxes share a key (config + policy but the workspace); others are not pooled."""
    if not isinstance(config, DockerConfig) or config.workspace_mode != "copy":
        return None
    return config.model_dump_json() + "|" + policy.model_dump_json(exclude={"workspace"})


class SandboxPool:
    """Hands out started sandboxes; recycles docker containers when ``reuse`` allows. One event loop only."""

    def __init__(self, *, capacity: int, reuse: ReuseMode = "auto") -> None:
        if capacity < 1:
            raise ValueError("capacity must be at least 1")
        self.capacity = capacity
        self.reuse: ReuseMode = reuse
        self.stats = PoolStats()
        self._idle: dict[str, list[SandboxBackend]] = {}
        self._live = 0
        #: Tasks waiting for room, first come first served.
        self._waiters: deque[anyio.Event] = deque()
        self._closed = False

    # --- handing out ---------------------------------------------------------------------
    async def acquire(self, config: SandboxConfig, policy: SandboxPolicy, *, reuse: bool = True) -> Lease:
        """A started sandbox for a task: a recycled container when one is idle, else a fresh one."""
        if self._closed:
            raise RuntimeError("the sandbox pool is closed")
        key = _pool_key(config, policy) if reuse and self.reuse == "auto" else None
        if key is None:
            return Lease(await self._start(config, policy))
        woken = False
        while True:
            idle = self._idle.get(key)
            if idle:
                backend = idle.pop()
                assert isinstance(backend, Recyclable)
                try:
                    await backend.reuse_for(policy)
                except Exception as exc:
                    await self._drop(backend, f"could not take the next workspace: {exc}", discarded=True)
                    continue
                except BaseException:  # cancelled: the container is nobody's now, remove it
                    await self._drop(backend, None)
                    raise
                self.stats.recycled += 1
                return Lease(backend, key, backend.resets + 1)
            if self._live < self.capacity:
                break
            if await self._evict_other_than(key):
                continue
            await self._wait_turn(front=woken)
            woken = True
        self._live += 1
        try:
            backend = await self._start(config, policy)
        except BaseException:
            self._live -= 1
            self._notify()
            raise
        self.stats.created += 1
        if isinstance(backend, Recyclable):
            try:
                await backend.protect_executor()  # before the first task: see DockerBackend.protect_executor
            except Exception as exc:  # it still serves this task; its reset will refuse it
                log.info("container %s cannot be recycled: %s", backend.container_id, exc)
            except BaseException:
                await self._drop(backend, None)
                raise
        return Lease(backend, key, 1)

    async def release(self, lease: Lease, *, reusable: bool) -> None:
        """Take a sandbox back after its task: reset it for the next one, or remove it. Never raises.

        ``reusable`` is False when the task did not finish (cancelled, crashed):
        such a container is removed, not reset.
        """
        backend = lease.backend
        if lease.key is None:
            await _close(backend)
            return
        with anyio.CancelScope(shield=True):
            if not reusable or self._closed:
                await self._drop(backend, None)
                return
            assert isinstance(backend, Recyclable)
            blocker = backend.reuse_blocker()
            if blocker is not None:
                self.stats.not_reusable += 1
                await self._drop(backend, blocker)
                return
            try:
                await backend.reset()
            except Exception as exc:
                await self._drop(backend, f"reset failed: {exc}", discarded=True)
                return
            if self._closed:
                await self._drop(backend, None)
                return
            self._idle.setdefault(lease.key, []).append(backend)
            self._notify()

    async def aclose(self) -> None:
        """Remove every idle container; later releases remove theirs at once. Idempotent."""
        self._closed = True
        idle = [b for backends in self._idle.values() for b in backends]
        self._idle.clear()
        with anyio.CancelScope(shield=True):
            async with anyio.create_task_group() as tg:
                for backend in idle:
                    tg.start_soon(self._drop, backend, None)

    # --- internals -----------------------------------------------------------------------
    @staticmethod
    async def _start(config: SandboxConfig, policy: SandboxPolicy) -> SandboxBackend:
        backend = create_backend(config, policy)
        try:
            await backend.start()
        except BaseException:
            await _close(backend)
            raise
        return backend

    async def _drop(self, backend: SandboxBackend, reason: str | None, *, discarded: bool = False) -> None:
        """Remove a pooled container (counting why) and make room for another."""
        if reason is not None:
            self.stats.reasons[reason.split(";")[0][:120]] += 1
            if discarded:
                self.stats.discarded += 1
                log.info("container %s discarded: %s", backend.container_id or "?", reason)
            else:
                log.debug("container %s not reusable: %s", backend.container_id or "?", reason)
        try:
            await _close(backend)
        finally:
            self._live -= 1
            self._notify()

    async def _evict_other_than(self, key: str) -> bool:
        for other, backends in self._idle.items():
            if other != key and backends:
                await self._drop(backends.pop(), None)
                return True
        return False

    async def _wait_turn(self, *, front: bool) -> None:
        """Wait until a container is released or removed (FIFO; a re-wait keeps its place in front)."""
        event = anyio.Event()
        if front:
            self._waiters.appendleft(event)
        else:
            self._waiters.append(event)
        try:
            await event.wait()
        except BaseException:
            if event.is_set():
                self._notify()  # our turn came as we were cancelled: pass it on
            else:
                self._waiters.remove(event)
            raise

    def _notify(self) -> None:
        if self._waiters:
            self._waiters.popleft().set()


async def _close(backend: SandboxBackend) -> None:
    with anyio.CancelScope(shield=True):
        try:
            await backend.close()
        except Exception:
            log.warning("could not close a %s sandbox", backend.name, exc_info=True)
