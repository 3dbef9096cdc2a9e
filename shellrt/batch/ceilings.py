"""Default resource ceilings for a batch run's tasks, chosen from the machine.

Without ``limits`` one task could take the host's memory, processes or its private ``/tmp``
and starve every other task of the run. A run therefore gives each task that sets no limit a
share of the machine: three quarters of the memory (of the host, or of the cgroup shellrt runs
in when that is less) divided by the number of tasks running at once, a slice of the kernel's
thread table, and half the memory share for ``/tmp``.

A backend that cannot enforce a limit refuses it (`sandbox.check_enforceable`), so these
defaults are filled in only where the task's backend enforces them: docker always, bwrap
memory and pids with a cgroup it can make, local never (it is no isolation, and only runs
when the operator allows it). Limits a task or the operator sets are never changed here.
"""

from __future__ import annotations

from pathlib import Path

from sandbox import ResourceLimits, SandboxConfig, SandboxPolicy
from sandbox._hostmem import usable_memory
from sandbox.factory import create_backend

__all__ = ["machine_ceilings", "with_default_limits"]

#: No default share is smaller than this (a Python interpreter alone needs ~20 MiB).
_MIN_MEMORY = 256 << 20
#: Processes/threads per task: at least this many, at most the upper bound.
_MIN_PIDS, _MAX_PIDS = 256, 4096
#: Aspect (`sandbox.base.Aspect`) of each limit field.
_ASPECTS = {"memory_bytes": "memory", "pids": "pids", "cpus": "cpus", "tmp_bytes": "tmp"}


def machine_ceilings(concurrency: int) -> ResourceLimits:
    """Each of ``concurrency`` tasks' share of this machine (memory, pids, /tmp size)."""
    share = max(1, concurrency)
    memory = max(_MIN_MEMORY, usable_memory() * 3 // 4 // share)
    pids = max(_MIN_PIDS, min(_MAX_PIDS, _threads_max() // (4 * share)))
    return ResourceLimits(memory_bytes=memory, pids=pids, tmp_bytes=max(_MIN_MEMORY // 2, memory // 2))


def with_default_limits(
    policy: SandboxPolicy, config: SandboxConfig, defaults: ResourceLimits
) -> SandboxPolicy:
    """``policy`` with each of ``defaults`` it leaves unset that ``config``'s backend enforces here.

    Raises the backend's `SandboxPolicyError` when the policy's own limits cannot be enforced
    (as starting it would).
    """
    wanted = defaults.model_dump(exclude_none=True)
    if not wanted:
        return policy
    enforced = create_backend(config, policy).enforces()  # not started: construction only
    own = policy.limits.model_dump()
    added = {k: v for k, v in wanted.items() if own.get(k) is None and _ASPECTS[k] in enforced}
    if not added:
        return policy
    return policy.model_copy(update={"limits": ResourceLimits(**{**own, **added})})


def _threads_max() -> int:
    try:
        return int(Path("/proc/sys/kernel/threads-max").read_text())
    except (OSError, ValueError):
        return 4 * _MAX_PIDS
