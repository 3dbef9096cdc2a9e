"""The limits ``shellrt serve`` takes from its environment, checked before it serves anything.

Each is read where it is used: ``SHELLRT_MAX_PARALLEL_CALLS`` at a message's first parallel
batch, ``SHELLRT_MAX_BACKGROUND_TASKS`` when a command first moves to the background, the output
limits when the runtime starts. A bad value then surfaced late (serve started and answered
``initialize``, the first call failed) or as a traceback (``SHELLRT_OUTPUT_LIMIT=abc`` ended
serve with an exception group). Round 27 wave 2: every one is read once at start; a bad value is
a usage error naming the variable and what to give, and nothing is served.
"""

from __future__ import annotations

__all__ = ["check_limits_env"]


def check_limits_env(*, asks: bool) -> None:
    """Raise ValueError naming the first variable with a bad value (``asks``: the approval timeout too)."""
    from shellrt.runtime.orchestration import max_parallel_calls
    from shellrt.supervisor.spool import OutputQuota
    from shellrt.supervisor.tasks import max_background_tasks

    if asks:
        from shellrt.permissions._approval_deadline import approval_timeout

        approval_timeout()
    max_parallel_calls()
    max_background_tasks()
    OutputQuota.check_env()
