"""Read a JSONL task file lazily, reporting bad lines by number instead of failing the run.

The loader is a generator so a million-line file never sits in memory: the
runner pulls tasks as slots free up. Blank lines and ``#`` comment lines are
skipped. A line that is not JSON, fails validation, or repeats an earlier id
becomes a `TaskLineError` (handed to ``on_error``) and the rest still run.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

from pydantic import ValidationError

from shellrt.batch.tasks import Task

__all__ = ["MAX_LINE_BYTES", "MAX_TASK_ITEMS", "TaskLineError", "decode_line", "iter_tasks", "lines", "load_tasks"]

#: A longer task line is refused unread (a line is held in memory whole while it is parsed).
MAX_LINE_BYTES = 64 << 20


#: Items (JSON objects, arrays and their members) one task line may hold, counted before any is
#: judged. The loader runs on the batch's event loop, and items cost Python work before anything
#: runs: a tool_use input of a million keys took 19.5 s (red team round 52), against 1.3 s for a
#: 60 MB line of plain command text. 10,000 tool_use commands hold about 60,000. Counted here, on
#: the line as written (a task's dump, revalidated where it runs, also holds every default field).
MAX_TASK_ITEMS = 100_000


def _items_past(value: Any, most: int) -> int:
    """How many items ``value`` (parsed JSON) holds, counted up to just past ``most``: each
    container counts its members at once; only containers are walked into."""
    if type(value) not in _CONTAINER_TYPES:
        return 1
    count, stack = 1, [value]
    while stack and count <= most:
        item = stack.pop()
        members = list(item.values()) if type(item) is dict else item
        count += len(members)
        if count <= most:
            stack += [m for m in members if type(m) in _CONTAINER_TYPES]
    return count


_CONTAINER_TYPES = frozenset({dict, list})


class TaskLineError(ValueError):
    """Raised (or reported) for one task-file line that cannot become a `Task`."""

    def __init__(self, path: Path, line: int, message: str, task_id: str | None = None) -> None:
        super().__init__(f"{path}:{line}: {message}")
        self.path = path
        self.line = line
        self.message = message
        self.task_id = task_id


def _describe(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors(include_url=False):
        loc = ".".join(str(p) for p in err["loc"]) or "(task)"
        parts.append(f"{loc}: {err['msg']}")
    return "; ".join(parts[:5]) + (f" (+{len(parts) - 5} more)" if len(parts) > 5 else "")


def iter_tasks(
    path: str | Path,
    *,
    on_error: Callable[[TaskLineError], None] | None = None,
    base_dir: Path | None = None,
) -> Iterator[Task]:
    """Yield valid tasks of a JSONL file in order; report bad lines to ``on_error``.

    Relative ``workspace`` paths are resolved against ``base_dir`` (default:
    the task file's directory), so a task file and its fixtures can move together.
    """
    path = Path(path)
    task_dir = path.resolve().parent
    base = base_dir if base_dir is not None else task_dir
    seen: set[str] = set()
    with path.open("rb") as fh:
        for number, raw in enumerate(lines(fh), start=1):
            error: TaskLineError | None = None
            if raw is None:
                error = TaskLineError(path, number, f"line longer than {MAX_LINE_BYTES:,} bytes; not read")
                if on_error is not None:
                    on_error(error)
                continue
            line = decode_line(raw)
            if not line or line.startswith("#"):
                continue
            try:
                data = json.loads(line)
                if not isinstance(data, dict):
                    raise TaskLineError(path, number, f"expected a JSON object, got {type(data).__name__}")
                if _items_past(data, MAX_TASK_ITEMS) > MAX_TASK_ITEMS:
                    raw_id = data.get("id")
                    raise TaskLineError(
                        path,
                        number,
                        f"the task holds more than {MAX_TASK_ITEMS:,} items (JSON objects, arrays and their "
                        "members); at most that many: split it into several tasks, or put large data in a "
                        "workspace file",
                        raw_id if isinstance(raw_id, str) else None,
                    )
                task = Task.model_validate(data)
            except json.JSONDecodeError as exc:
                error = TaskLineError(path, number, f"not valid JSON ({exc.msg} at column {exc.colno})")
            except RecursionError:  # json's parser recurses: [[[...]]] 100,000 deep
                error = TaskLineError(path, number, "not valid JSON (nested too deeply)")
            except ValidationError as exc:
                raw_id = data.get("id") if isinstance(data, dict) else None
                error = TaskLineError(
                    path,
                    number,
                    f"invalid task: {_describe(exc)}",
                    raw_id if isinstance(raw_id, str) else None,
                )
            except TaskLineError as exc:
                error = exc
            except ValueError:
                # json's int() past sys.get_int_max_str_digits(): a plain ValueError left this
                # generator and stopped the whole run (red team round 53)
                error = TaskLineError(
                    path,
                    number,
                    f"not a task: it holds a number of more than {sys.get_int_max_str_digits():,} digits, "
                    "which cannot be read; write such a value as a string",
                )
            else:
                if task.id in seen:
                    error = TaskLineError(path, number, f"duplicate task id {task.id!r}", task.id)
                else:
                    seen.add(task.id)
                    try:
                        task = _resolved(task, base)
                    except TaskLineError as exc:
                        error = TaskLineError(path, number, exc.message, task.id)
                    else:
                        task._task_dir = task_dir
                        yield task
                        continue
            if on_error is not None:
                on_error(error)


def _resolved(task: Task, base: Path) -> Task:
    """``task`` with a relative workspace made absolute from ``base``; `TaskLineError` (its
    ``message`` only) when the host cannot resolve it: a symlink loop the dataset ships beside its
    task file (``ws -> ws``) raised RuntimeError out of this generator and stopped the whole run
    (red team round 37)."""
    if task.workspace is None or task.workspace.is_absolute():
        return task
    try:
        return task.model_copy(update={"workspace": (base / task.workspace).resolve()})
    except (OSError, RuntimeError, ValueError) as exc:
        raise TaskLineError(
            base, 0, f"workspace {str(task.workspace)!r} cannot be resolved from {base} ({exc}); "
            "name a directory of this task's files", task.id
        ) from None


def decode_line(raw: bytes) -> str:
    """A task line's text, as the loader parses it (bytes that are not UTF-8 become U+FFFD).

    `shellrt.batch.dataset_masks.scan_task_file` reads lines through this too: a line the loader
    runs but a scan skips leaves that task's workspace source unmasked (red team round 27)."""
    return raw.decode("utf-8", errors="replace").strip()


def lines(fh: BinaryIO) -> Iterator[bytes | None]:
    """Each line of ``fh`` (None for one over `MAX_LINE_BYTES`, skipped without holding it)."""
    while raw := fh.readline(MAX_LINE_BYTES + 1):
        if len(raw) <= MAX_LINE_BYTES or raw.endswith(b"\n"):
            yield raw
            continue
        while (rest := fh.readline(1 << 20)) and not rest.endswith(b"\n"):
            pass
        yield None


def load_tasks(path: str | Path) -> tuple[list[Task], list[TaskLineError]]:
    """Read the whole file: (valid tasks, errors). Convenient for small files and tests."""
    errors: list[TaskLineError] = []
    tasks = list(iter_tasks(path, on_error=errors.append))
    return tasks, errors
