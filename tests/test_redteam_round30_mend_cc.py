"""Red team, round 30 (mend): a compiler, or a file it runs, inside a sandbox's writable root.

`sandbox._static_build` found its compiler with `host_which`, which drops ``PATH`` entries inside a
registered writable root, but used a ``CC`` with a slash as given, followed links out of clean
directories, and never asked where the compiler itself finds ``cc1``, ``as``, ``collect2``, ``ld``
and its specs and libraries. Each of those inside a root is a file a sandboxed command writes, run
on the host, unsandboxed, as the caller, at the next cold build. Each place below plants a program
that leaves ``RAN`` and then does the real work, so a build that ran it succeeds silently.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from sandbox import _hostpath, _keyring, _static_build
from tests.conftest import require

_SRC = b"int main(void) { return 0; }\n"


def _plant(path: Path, real: str, mark: Path) -> None:
    """A program at ``path`` that leaves ``mark`` (what a command would do) and runs ``real``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f'#!/bin/sh\necho "ran as uid $(id -u)" > {mark}\nexec {real} "$@"\n')
    path.chmod(0o755)


@pytest.fixture
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A writable root ``ws`` registered as a live session's; builds every time, caches nowhere shared."""
    ws = tmp_path / "ws"
    ws.mkdir(mode=0o755)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.delenv("CC", raising=False)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(_keyring, "_found", "no key (this test builds every time)")
    token = _hostpath.register_writable([ws])
    try:
        yield ws
    finally:
        _hostpath.unregister_writable(token)


def _build(monkeypatch: pytest.MonkeyPatch, mark: Path | None = None, ran: list[str] | None = None) -> str:
    """A fresh build: ``"built"``, or the refusal's message; a planted program that ran is noted."""
    monkeypatch.setattr(_static_build, "_built", {})
    try:
        program = _static_build.static_program("probe", _SRC)
        assert program[:4] == b"\x7fELF"
        result = "built"
    except _static_build.StaticBuildError as exc:
        result = str(exc)
    if mark is not None and ran is not None and mark.exists():
        ran.append(f"{os.environ.get('CC')}: {mark.read_text().strip()}")
        mark.unlink()
    return result


def test_no_compiler_or_compiler_file_inside_a_writable_root_runs(
    isolated: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Failed before (root 5 of 5): each planted program ran on the host. Now each build is refused
    with a message naming the place and what to do, or (a name on ``PATH``) takes the next compiler."""
    gcc = shutil.which("gcc")
    require(gcc is not None, "gcc (apt-get install gcc libc6-dev)")
    assert gcc is not None
    ws, mark = isolated, tmp_path / "RAN"
    _plant(ws / "bin" / "cc", gcc, mark)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "cc").symlink_to(ws / "bin" / "cc")
    results: dict[str, str] = {}
    ran: list[str] = []

    monkeypatch.setenv("CC", str(ws / "bin" / "cc"))  # 1. an absolute CC in the root
    results["absolute"] = _build(monkeypatch, mark, ran)
    monkeypatch.setenv("CC", str(outside / "cc"))  # 2. a link from a clean directory into the root
    results["link"] = _build(monkeypatch, mark, ran)
    monkeypatch.chdir(ws)  # 3. a relative CC, looked up from a cwd commands write
    monkeypatch.setenv("CC", "bin/cc")
    results["relative"] = _build(monkeypatch, mark, ran)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("CC")  # 4. no CC: the first cc on PATH is a clean directory's link into the root
    monkeypatch.setenv("PATH", f"{outside}{os.pathsep}{os.environ.get('PATH', os.defpath)}")
    results["path link"] = _build(monkeypatch, mark, ran)
    monkeypatch.setenv("PATH", os.environ["PATH"].split(os.pathsep, 1)[1])

    # 5. a genuine gcc outside every root whose own install tree (``../lib/gcc``, where it finds cc1,
    # collect2, specs and crt files first) is a root
    triple = subprocess.run([gcc, "-dumpmachine"], capture_output=True, text=True, check=True).stdout.strip()
    version = subprocess.run([gcc, "-dumpversion"], capture_output=True, text=True, check=True).stdout.strip()
    cc1 = subprocess.run(
        [gcc, "-print-prog-name=cc1"], capture_output=True, text=True, check=True
    ).stdout.strip()
    tc = tmp_path / "tc"
    (tc / "bin").mkdir(parents=True)
    shutil.copy2(os.path.realpath(gcc), tc / "bin" / "gcc")
    _plant(tc / "lib" / "gcc" / triple / version / "cc1", cc1, mark)
    token = _hostpath.register_writable([tc / "lib"])
    try:
        monkeypatch.setenv("CC", str(tc / "bin" / "gcc"))
        results["search dir"] = _build(monkeypatch, mark, ran)
    finally:
        _hostpath.unregister_writable(token)

    assert not ran, (ran, results)
    for case in ("absolute", "link", "relative", "search dir"):
        assert "writable root" in results[case] or "relative" in results[case], (case, results)
        assert "CC" in results[case], (case, results)
    assert results["path link"] == "built", results  # the next cc on PATH, the host's
    monkeypatch.delenv("CC")
    assert _build(monkeypatch) == "built"  # the host's own compiler still builds


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-q"]))
