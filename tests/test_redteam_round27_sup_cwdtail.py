"""Red team, round 27 (sup): a directory whose name ends in a CR or LF moved the session elsewhere.

The shell's exit trap reports ``pwd -P`` and the host stripped every trailing CR and LF of the
report (`sandbox._hostproc.read_cwd_report`), so a command that ended in ``build\\r`` (a CRLF
script's ``mkdir build`` and ``cd build`` make exactly that) or ``out\\n`` made the session
adopt ``build`` / ``out``: the next command, judged and permitted for the directory the result
named, ran in a sibling the command never entered, or the session fell back to the workspace root
with a false "no longer exists" note. The report now ends with a ``/`` after the path (no trailing
byte of the name is lost) and the tracker takes it off. Local and a bwrap session, root and
(by the shared wrapper of round 26) uid 65534 alike: the trap and the reader are the same code.
FAIL, not skip, under CI=true.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from sandbox import SandboxPolicy
from sandbox.local import LocalBackend
from shellrt.supervisor import Supervisor
from tests._bwrap_session import zygote_session

#: Directory names whose last byte the old reader dropped; each holds a marker of its own name.
_NAMES = ["a\r", "b\n", "c\r\n\r"]
_MAKE = (
    "for d in a b c $'a\\r' $'b\\n' $'c\\r\\n\\r'; do mkdir -p \"$d\" && "
    "printf %q \"$d\" >\"$d/marker\"; done"
)


async def _landings(sup: Supervisor, ws: Path) -> list[tuple[str, str, str]]:
    """For each name: (where the next command stood, the session's cwd, the note of the cd)."""
    await sup.run(_MAKE, timeout_s=60)
    out = []
    for name in _NAMES:
        quoted = "$'" + name.replace("\r", "\\r").replace("\n", "\\n") + "'"
        moved = await sup.run(f"cd {quoted}", timeout_s=60)
        there = await sup.run("cat marker", timeout_s=60)
        out.append((there.preview, str(sup.cwd), moved.preview))
        await sup.run(f"cd {ws}", timeout_s=60)
    return out


def _check(got: list[tuple[str, str, str]], ws: Path) -> None:
    for name, (marker, cwd, _note) in zip(_NAMES, got, strict=True):
        want = "$'" + name.replace("\r", "\\r").replace("\n", "\\n") + "'"
        assert marker == want, f"cd into {name!r}: the next command ran in {marker!r}"
        assert cwd == str(ws / name), f"cd into {name!r}: the session adopted {cwd!r}"


def test_local_keeps_a_trailing_cr_or_lf_of_the_cwd(tmp_path: Path) -> None:
    """Failed before: the next command ran in ``a``, ``b`` and ``c``."""
    ws = tmp_path / "ws"
    ws.mkdir()

    async def main() -> list[tuple[str, str, str]]:
        backend = LocalBackend(policy=SandboxPolicy(workspace=ws))
        await backend.start()
        try:
            async with Supervisor(backend, session_dir=tmp_path / "s") as sup:
                return await _landings(sup, ws)
        finally:
            await backend.close()

    _check(anyio.run(main), ws)


@pytest.mark.timeout(120)
def test_a_bwrap_session_keeps_a_trailing_cr_or_lf_of_the_cwd(tmp_path: Path) -> None:
    """Failed before, as local did."""

    async def main() -> list[tuple[str, str, str]]:
        async with zygote_session(tmp_path) as (_backend, sup):
            return await _landings(sup, tmp_path / "ws")

    _check(anyio.run(main), tmp_path / "ws")


def test_a_report_of_the_longest_path_is_read_whole(tmp_path: Path) -> None:
    """A 4095-byte cwd (PATH_MAX with its NUL) with the report's newline and end marker: 4098
    bytes, over the reader's old 4096-byte cap (not followed after the marker came in)."""
    from sandbox._hostproc import read_cwd_report

    path = "/" + "/".join(["d" * 254] * 16)
    path += "/" + "e" * (4095 - len(path) - 1)
    assert len(path) == 4095
    report = tmp_path / "cwd"
    report.write_bytes(path.encode() + b"\n/\n")
    assert read_cwd_report(report) == path + "\n/"
