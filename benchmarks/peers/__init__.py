"""Adapters for every measured system, by stable id.

Peers (SWE-ReX, Inspect) are imported only inside their adapters' methods, so a
missing peer is reported as skipped and never breaks the run. shellrt and its
tests never import anything from here.
"""

from __future__ import annotations

from collections.abc import Callable

from benchmarks.peers.base import Outcome, System, SystemUnavailable, missing_modules
from benchmarks.peers.inspect_local import InspectLocal
from benchmarks.peers.ours import ShellrtRuntime, ShellrtSupervisor
from benchmarks.peers.raw import RawBash
from benchmarks.peers.swe_rex import SweRexOneShot, SweRexSession

__all__ = ["SYSTEMS", "Outcome", "System", "SystemUnavailable", "make", "missing_modules"]

#: System id -> factory. Ids are what `benchmarks._child` and the JSON file use.
SYSTEMS: dict[str, Callable[[], System]] = {
    "raw-bash": RawBash,
    "shellrt-local": lambda: ShellrtSupervisor("local"),
    "shellrt-bwrap": lambda: ShellrtSupervisor("bwrap"),
    "shellrt-docker": lambda: ShellrtSupervisor("docker"),
    "shellrt-runtime-local": lambda: ShellrtRuntime("local"),
    "shellrt-runtime-bwrap": lambda: ShellrtRuntime("bwrap"),
    "swerex-session": SweRexSession,
    "swerex-oneshot": SweRexOneShot,
    "inspect-local": InspectLocal,
}


def make(system_id: str) -> System:
    """A fresh, unstarted adapter for ``system_id``."""
    return SYSTEMS[system_id]()
