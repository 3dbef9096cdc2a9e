"""Red team, round 36 (supervisor): a forged cwd report with ``..`` after a link.

The cwd report file (``$SHELLRT_CWD_FILE``) is the command's to write: a command that does not
``cd`` gets no report from the trap, so what it wrote itself stands. ``pwd -P`` never prints
``.``, ``..`` or doubled slashes, but the host judged a report lexically (normalised:
``ws/a/../b`` is ``ws/b``, inside the roots and a physical directory) and then adopted it as
written. The kernel resolves ``a`` (a link out of the workspace) before ``..``: the next command
was to start in ``<a's target>/../b``, outside the roots. Local refused the start with a
`SandboxExecError` -- every later command too (no command could run, so none could ``cd`` out:
the session was bricked); bwrap's init refused it once. Now a report that is not a plain
absolute path is refused as forged: the session stays at the workspace root, with a note.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sandbox import BwrapConfig, LocalConfig, SandboxPolicy
from sandbox.bwrap import BwrapBackend
from sandbox.local import LocalBackend
from tests import _nonroot
from tests._bwrap_session import require_bwrap, supervised

pytestmark = pytest.mark.anyio

#: Plants ``a`` -> a directory outside, then reports ``$WS$FORM`` (``b`` exists in the workspace
#: and beside ``a``'s target) without moving, so the trap writes nothing over it.
_FORGE = (
    'mkdir -p "$WS/b"; ln -sfn "$OUT/x" "$WS/a"; '
    'printf "%s%s\\n/" "$WS" "$FORM" > "$SHELLRT_CWD_FILE"'
)
_FORMS = ("/a/../b", "/./b", "/b/", "/b/.")


async def _forged_reports_are_refused(tmp_path: Path, backend_kind: str) -> None:
    ws, session, outside = tmp_path / "ws", tmp_path / "session", tmp_path / "outside"
    ws.mkdir()
    session.mkdir()
    (outside / "x").mkdir(parents=True)
    (outside / "b").mkdir()
    policy = SandboxPolicy(workspace=ws)
    backend = (
        BwrapBackend(BwrapConfig(), policy)
        if backend_kind == "bwrap"
        else LocalBackend(LocalConfig(), policy)
    )
    seen = []
    async with supervised(backend, session) as sup:  # type: ignore[arg-type]
        for form in _FORMS:
            env = {"OUT": str(outside), "WS": str(ws), "FORM": form}
            forged = await sup.run(_FORGE, timeout_s=30, env=env)
            after = await sup.run("pwd -P", timeout_s=30)  # raised SandboxExecError on local before
            seen.append((form, sup.cwd, forged.cwd_note, after.preview.strip()))
    for form, cwd, note, pwd in seen:
        assert cwd == str(ws), (form, seen)
        assert pwd == str(ws), (form, seen)
        assert note and "not a plain" in note, (form, seen)


async def test_a_forged_report_with_dot_dot_after_a_link_is_refused_local(tmp_path: Path) -> None:
    """Failed before (local): the session adopted ``ws/a/../b`` and every later start raised."""
    await _forged_reports_are_refused(tmp_path, "local")


async def test_a_forged_report_with_dot_dot_after_a_link_is_refused_bwrap(tmp_path: Path) -> None:
    """Failed before (bwrap): the session adopted ``ws/a/../b``; the next command failed to start."""
    require_bwrap()
    await _forged_reports_are_refused(tmp_path, "bwrap")


def test_it_holds_for_an_unprivileged_caller() -> None:
    _nonroot.held_as_nobody(
        __file__,
        "test_a_forged_report_with_dot_dot_after_a_link_is_refused_local",
        "test_a_forged_report_with_dot_dot_after_a_link_is_refused_bwrap",
    )
