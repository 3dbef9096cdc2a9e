"""Which host paths hold the run's data: every task's workspace *source* and the task file's tree.

bwrap shows the host read-only, so without these masks a task reads every other task's
workspace source (a benchmark's other problems) and, beside the task file, a dataset's answers.
Each task works in its own host-side copy (`sandbox._anchoredcopy`), never in its source, so
every source -- its own too -- is masked in every task's sandbox. A path that contains what a
sandbox needs from the host (``/``, ``/usr``, the temp directory where task copies are made) can
not be masked: a workspace source like that is refused (`unmaskable`), a task file directory like
that is simply not added.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterable
from pathlib import Path

from sandbox import SandboxPolicy
from sandbox._scratch import HOLDER_BASE
from shellrt.batch.loader import decode_line, lines
from shellrt.batch.tasks import Task

__all__ = [
    "dataset_masks",
    "scan_task_file",
    "unmaskable",
    "unmaskable_source",
    "with_dataset_masks",
    "workspace_sources",
]

#: Host directories every sandbox reads (programs, libraries, configuration, devices).
_SYSTEM = (
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/usr",
    "/etc",
    "/dev",
    "/proc",
    "/sys",
    "/run",
)


def unmaskable(path: str | os.PathLike[str], scratch: Path | None = None) -> str | None:
    """Why ``path`` cannot be masked from a sandbox (it is or contains what one needs), or None."""
    return _unmaskable(Path(os.path.realpath(path)), _needed(scratch), path)


def unmaskable_source(path: str | os.PathLike[str], scratch: Path | None = None) -> str | None:
    """Why the dataset source ``path`` cannot be masked in every sandbox, or None: as `unmaskable`,
    and also when it lies *inside* what sandboxes run on (a system directory, the host interpreter
    bwrap's zygote runs, shellrt's code). One line of a task file (an invalid one too: every line is
    scanned) naming ``/usr/lib/x86_64-linux-gnu`` hid libc from every other task (red team round 37)."""
    real = Path(os.path.realpath(path))
    why = _unmaskable(real, _needed(scratch), path)
    return why if why is not None else _inside_runtime(real, path)


def _inside_runtime(real: Path, shown: object) -> str | None:
    for place in _runs_on():
        if real == place or place in real.parents or real in place.parents:
            return (
                f"{shown} is, holds or lies inside {place}, which every task's sandbox needs; it cannot be "
                "hidden from the other tasks: use a directory holding only this task's files as its workspace"
            )
    return None


def _runs_on() -> tuple[Path, ...]:
    """What every sandbox runs on: the system directories (as named and resolved), the host
    interpreter's prefixes, shellrt's own packages and the directories on ``PATH`` (commands find
    their programs there: a toolchain in ``/opt``)."""
    import sandbox
    import shellrt

    on_path = [d for d in os.environ.get("PATH", "").split(os.pathsep) if os.path.isabs(d)]
    named = [
        *_SYSTEM,
        *on_path,
        sys.prefix,
        sys.base_prefix,
        sys.exec_prefix,
        sys.base_exec_prefix,
        os.path.dirname(os.path.abspath(sandbox.__file__)),
        os.path.dirname(os.path.abspath(shellrt.__file__)),
    ]
    places = {Path(p) for p in named} | {Path(os.path.realpath(p)) for p in named}
    return tuple(sorted(p for p in places if p != Path("/")))


def _needed(scratch: Path | None) -> tuple[Path, ...]:
    return (*map(Path, _SYSTEM), Path(os.path.realpath(scratch or HOLDER_BASE)))


def _unmaskable(real: Path, needed: tuple[Path, ...], shown: object) -> str | None:
    for system in needed:
        if real == system or real in system.parents:
            return (
                f"{shown} is or contains {system}, which every task's sandbox needs; it cannot be hidden "
                "from the other tasks: use a directory holding only this task's files as its workspace"
            )
    return None


def workspace_sources(tasks: Iterable[Task]) -> set[Path]:  # resolved: dataset_masks compares them
    """The resolved workspace directories of ``tasks``."""
    return {Path(os.path.realpath(t.workspace)) for t in tasks if t.workspace is not None}


def scan_task_file(path: Path) -> set[Path]:
    """The workspace sources a task file names, read line by line (flat memory; bad lines skipped:
    the loader reports them).

    Lines are read and decoded as the loader does (`shellrt.batch.loader.lines`, `decode_line`):
    the raw bytes failed on one non-UTF-8 byte the loader replaces, and a key written with a JSON
    escape (``"\\u0077orkspace"``) has no literal ``"workspace"`` (red team round 27)."""
    base = path.resolve().parent
    found: set[Path] = set()
    with path.open("rb") as fh:
        for raw in lines(fh):
            if raw is None or (b'"workspace"' not in raw and b"\\" not in raw):
                continue  # too long (the loader refuses it), or no workspace key, even escaped
            try:
                workspace = json.loads(decode_line(raw)).get("workspace")
            except (ValueError, RecursionError, AttributeError):
                continue
            if isinstance(workspace, str) and workspace and "\0" not in workspace:
                found.add(Path(os.path.realpath(base / workspace)))
    return found


def dataset_masks(
    sources: Iterable[Path], task_file: Path | None = None, scratch: Path | None = None
) -> tuple[Path, ...]:
    """The paths to mask in every task's sandbox: the sources, plus the task file's directory
    when a source lies under it (a dataset keeps its answers there), minus unmaskable ones and
    those inside another (one mount covers them)."""
    needed = _needed(scratch)
    paths = {p for p in sources if _unmaskable(p, needed, p) is None and _inside_runtime(p, p) is None}
    if task_file is not None:
        tree = Path(os.path.realpath(task_file)).parent
        if any(tree == p or tree in p.parents for p in paths) and _unmaskable(tree, needed, tree) is None:
            paths.add(tree)
    return _outermost(paths)


def with_dataset_masks(policy: SandboxPolicy, data: Iterable[Path]) -> SandboxPolicy:
    """``policy`` also masking ``data``; a mask inside another is dropped (the outer one covers it)."""
    extra = tuple(data)
    if not extra:
        return policy
    paths = [*policy.read_denied, *(p for p in extra if p not in policy.read_denied)]
    kept = set(_outermost(paths))
    return policy.model_copy(update={"read_denied": tuple(p for p in paths if p in kept)})


def _outermost(paths: Iterable[Path]) -> tuple[Path, ...]:
    """``paths`` without those inside another (linear in their number: a task file may name 100 000)."""
    unique = set(paths)
    return tuple(sorted(p for p in unique if not any(q in unique for q in p.parents)))
