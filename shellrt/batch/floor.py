"""The operator's floor under a task file they did not write (``shellrt batch run --sandbox ...``).

A task file chooses each task's backend, its limits, its backend keys and whether tool_use
commands obey the workspace's own settings (hooks run on the host). Whoever runs a task file
someone else wrote sets a floor here: a task asking for more than it allows is *refused*
(reported like an invalid line, never run) -- never silently rewritten, so the results say
exactly what ran.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sandbox import BwrapConfig, DockerConfig, LocalConfig, ResourceLimits
from shellrt.batch.tasks import CommandSpec, Task

__all__ = ["WIDENING_BACKEND_KEYS", "TaskFloor", "TaskRefused"]

#: Backend keys that move the sandbox's boundary: another bwrap binary, a real user's uid or
#: gid (it reads that user's files), another docker daemon, another container user, an
#: administrable image root.
WIDENING_BACKEND_KEYS = frozenset(
    {
        "bwrap_path",
        "sandbox_uid",
        "sandbox_gid",
        "uid_pool_start",
        "uid_pool_size",
        "docker_host",
        "user",
        "root_can_administer",
    }
)


class TaskRefused(ValueError):
    """A task asks for more than the operator's floor allows; the message says which flag allows it."""


@dataclass(frozen=True)
class TaskFloor:
    """What the operator allows a task file to choose. The default allows what a task file could
    always choose except the boundary-widening backend keys."""

    #: Every task runs on this backend (``bwrap``, ``docker``, ``local``); a task naming another is
    #: refused; a task without a ``sandbox`` gets it. None: the task file chooses.
    sandbox: str | None = None
    #: The task file may set ``trust_workspace`` (workspace hooks and allow rules obeyed).
    allow_task_trust: bool = True
    #: The task file may set `WIDENING_BACKEND_KEYS` and a task's or command's ``user``.
    allow_backend_keys: bool = False
    #: Limits every task gets; a task may set a lower value, never a higher one or none.
    limits: ResourceLimits = field(default_factory=ResourceLimits)

    def apply(self, task: Task) -> Task:
        """``task`` with the floor applied, or `TaskRefused` saying what to change."""
        if not self.allow_task_trust and task.trust_workspace:
            raise TaskRefused(
                f"task {task.id}: trust_workspace is refused by --no-task-trust (workspace hooks would "
                "run on the host); drop it from the task or run without --no-task-trust"
            )
        if not self.allow_backend_keys:
            self._check_keys(task)
        task = self._force_sandbox(task)
        return self._limit(task)

    def _check_keys(self, task: Task) -> None:
        keys = sorted(WIDENING_BACKEND_KEYS & task.sandbox.backend.model_fields_set)
        users = task.user is not None or any(
            isinstance(c, CommandSpec) and c.user is not None for c in task.commands
        )
        if keys or users:
            named = ", ".join([*keys, *(["user (task or command)"] if users else [])])
            raise TaskRefused(
                f"task {task.id}: sets {named}, which can widen the sandbox's boundary; refused unless "
                "the operator passes --allow-task-backend-keys (allow_backend_keys=True in Python)"
            )

    def _force_sandbox(self, task: Task) -> Task:
        if self.sandbox is None:
            return task
        asked = task.sandbox.backend.type
        if "sandbox" not in task.model_fields_set:
            config = {"local": LocalConfig, "bwrap": BwrapConfig, "docker": DockerConfig}[self.sandbox]()
            return task.model_copy(update={"sandbox": task.sandbox.model_copy(update={"backend": config})})
        if asked != self.sandbox:
            raise TaskRefused(
                f"task {task.id}: asks for sandbox {asked!r} but the operator forces {self.sandbox!r} "
                f"(--sandbox {self.sandbox}); drop its sandbox type or run with --sandbox {asked}"
            )
        return task

    def _limit(self, task: Task) -> Task:
        ceiling = self.limits.model_dump(exclude_none=True)
        if not ceiling:
            return task
        asked = task.sandbox.limits.model_dump()
        merged = dict(asked)
        for key, cap in ceiling.items():
            value = asked.get(key)
            if value is not None and value > cap:
                raise TaskRefused(
                    f"task {task.id}: limits.{key}={value} is above the operator's {cap}; a task may "
                    "only tighten the limits given on the command line"
                )
            merged[key] = cap if value is None else value
        limits = ResourceLimits(**merged)
        return task.model_copy(update={"sandbox": task.sandbox.model_copy(update={"limits": limits})})
