"""Red team round 46, review25: an ancestor the caller may search but not list (mode 0711).

Round 45 made the walker read an ancestor's ignore files through a directory fd (no link
followed), opened ``O_RDONLY``: a directory the caller may enter but not list (``chmod 711``: a
shared home, or the workspace root a command chmods) cannot be opened so, and its ignore files
were then not read at all -- by the walker nor by the guard that decides whether ripgrep may
answer. ripgrep reads them by path (search permission is enough), so:

* honest users: the walker listed what ripgrep and git hide (``/home/team/.ignore``);
* the guard missed a linked ignore file there (``W/.ignore -> keys/rules``) and let ripgrep obey
  its target's lines.

The checks run in a forked child as uid 65534 (root may list any directory).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from shellrt.tools import _gitignore

NOBODY = 65534


@pytest.fixture
def base() -> Iterator[Path]:
    os.makedirs("/work/tmpws", exist_ok=True)
    made = Path(tempfile.mkdtemp(prefix="r46-review25-", dir="/work/tmpws"))
    os.chmod(made, 0o755)
    try:
        yield made
    finally:
        shutil.rmtree(made, ignore_errors=True)


def _as_nobody(work: Callable[[], object]) -> object:
    """``work()`` in a forked child running as uid/gid 65534; its JSON answer."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        code = 0
        try:
            os.close(read)
            os.setgroups([])
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            os.write(write, json.dumps(work()).encode())
        except BaseException as exc:  # noqa: BLE001 - reported to the parent
            os.write(write, json.dumps({"error": repr(exc)}).encode())
            code = 1
        finally:
            os._exit(code)
    os.close(write)
    with os.fdopen(read, "rb") as got:
        data = got.read()
    os.waitpid(pid, 0)
    return json.loads(data)


def _tree(base: Path) -> Path:
    """``base/top`` (0711, root's) holding ``.ignore``; ``top/src`` holds two files."""
    top = base / "top"
    (top / "src").mkdir(parents=True)
    for name in ("hidden.txt", "shown.txt"):
        (top / "src" / name).write_text("hello\n")
    os.chmod(top / "src", 0o755)
    return top


def test_the_walker_obeys_a_search_only_ancestors_ignore_file(base: Path) -> None:
    top = _tree(base)
    (top / ".ignore").write_text("hidden.txt\n")
    os.chmod(top / ".ignore", 0o644)
    os.chmod(top, 0o711)
    src = top / "src"
    rg = subprocess.run(["rg", "--files"], cwd=src, user=NOBODY, group=NOBODY, capture_output=True, text=True)
    assert rg.stdout.split() == ["shown.txt"], rg  # ripgrep (and git) hide it
    walked = _as_nobody(lambda: sorted(_gitignore.walk_files(src)))
    assert walked == ["shown.txt"], walked


def test_the_guard_sees_a_linked_ignore_file_in_a_search_only_ancestor(base: Path) -> None:
    top = _tree(base)
    (base / "keys").mkdir()
    (base / "keys/rules").write_text("hidden.txt\n")  # a file the session may not read (a rule)
    os.chmod(base / "keys", 0o755)
    os.chmod(base / "keys/rules", 0o644)
    os.symlink("../keys/rules", top / ".ignore")
    os.chmod(top, 0o711)  # what a command may do to its own workspace root
    src = top / "src"
    rg = subprocess.run(["rg", "--files"], cwd=src, user=NOBODY, group=NOBODY, capture_output=True, text=True)
    assert rg.stdout.split() == ["shown.txt"], rg  # ripgrep obeys the link's target
    odd = _as_nobody(lambda: _gitignore.odd_ignore_file(src))
    assert odd == str(top / ".ignore"), odd  # so the walker must answer
    walked = _as_nobody(lambda: sorted(_gitignore.walk_files(src)))
    assert walked == ["hidden.txt", "shown.txt"], walked  # the walker reads a link as no rules
