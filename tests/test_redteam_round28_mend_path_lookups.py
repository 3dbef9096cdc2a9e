"""Round 28, mend: a rule-allowed command paid two ``PATH`` lookups per word when nothing differs.

`shellrt.tools._readonly_path._shadowed` asks whether the operator's and the read-only ``PATH``
resolve a word of the command to different files. When the two ``PATH`` strings are the same
(no virtualenv, no project ``bin`` first: the common case) they cannot: it now answers without a
lookup. Still fail closed: unknown analysis is shadowed, and a planted program on a different
operator ``PATH`` is found (real files, real ``shutil.which``; counted, not replaced).
"""

from __future__ import annotations

import shutil
import stat
from pathlib import Path

import pytest

from shellrt.analysis import analyze
from shellrt.tools import _readonly_path


def test_same_path_no_lookup_different_path_still_found(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    system, venv = tmp_path / "system", tmp_path / "venv"
    for where in (system, venv):
        where.mkdir()
        program = where / "git"
        program.write_text("#!/bin/sh\n")
        program.chmod(program.stat().st_mode | stat.S_IXUSR)
    calls: list[str] = []
    which = shutil.which

    def counted(name: str, *args: object, **kwargs: object) -> str | None:
        calls.append(name)
        return which(name, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(_readonly_path.shutil, "which", counted)
    analysis = analyze("git status && git log | head -3")
    assert _readonly_path._shadowed(analysis, str(system), str(system)) is False
    assert calls == []  # equal strings: not one lookup
    assert _readonly_path._shadowed(None, str(system), str(system)) is True  # unknown: fail closed
    assert _readonly_path._shadowed(analysis, f"{venv}:{system}", str(system)) is True
    assert calls  # a different PATH is still looked at, word by word
