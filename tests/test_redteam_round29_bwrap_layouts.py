"""Red team, round 29 (bwrap): round 28 bwrap2's mask layouts tried for a non-root caller.

Round 28 (bwrap2) fixed a root caller's per-command bwrap failing when a read-denied path lay below
/tmp beside the workspace or the temp dir, and left the non-root caller untried ("Left"). A non-root
caller's bwrap runs as the caller, who owns its session's /tmp. Each layout here runs per command
and under the zygote; the uid 65534 wrapper runs the same tests as that uid. The workspace's own
denied file must stay hidden, the host's /tmp stay unseen, and every start succeed.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import anyio
import pytest

from sandbox import BwrapConfig, SandboxPolicy, SandboxPolicyError
from sandbox.bwrap import BwrapBackend
from tests import _nonroot
from tests._bwrap_session import require_bwrap, supervised
from tests.test_redteam_round28_bwrap_tempdir import open_base

pytestmark = pytest.mark.bwrap

__all__ = ["open_base"]

#: (temp dir, workspace, what is denied: a file beside, a directory holding the temp dir, ...)
LAYOUTS = [
    ("tmp", "ws", "o/results.jsonl"),  # the batch's: TMPDIR and --out below one /tmp parent
    ("tmp", "tmp/ws", "o/results.jsonl"),  # the workspace inside the temp dir
    ("ws/tmp", "ws", "o/results.jsonl"),  # the temp dir inside the workspace
    ("d/tmp", "ws", "d"),  # a denied directory holding the temp dir
    ("tmp", "ws", "link"),  # a denied symlink below /tmp to a file in the workspace
]


def _layout(
    base: Path, monkeypatch: pytest.MonkeyPatch, temp: str | None, workspace: str, denied: str
) -> SandboxPolicy:
    if temp is not None:
        (base / temp).mkdir(parents=True)
        monkeypatch.setenv("TMPDIR", str(base / temp))
        monkeypatch.setattr(tempfile, "tempdir", None)
    ws = base / workspace
    ws.mkdir(parents=True, exist_ok=True)
    (ws / "secret").write_text("SECRET-IN-WS\n")
    target = base / denied
    if denied == "link":
        (ws / "linked").write_text("LINKED-SECRET\n")
        target.symlink_to(ws / "linked")
    elif denied.endswith(".jsonl"):
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text("RESULTS\n")
    else:
        target.mkdir(parents=True, exist_ok=True)
        (target / "inside").write_text("DENIED-DIR\n")
    shown = base / "shown"
    shown.write_text("x")
    return SandboxPolicy(
        workspace=ws,
        read_denied=(target, base / "gone" / "later", ws / "secret"),
        read_only=(shown,),
    )


@pytest.mark.parametrize("persistent", [False, True])
def test_layouts_start_and_hide(open_base: Path, monkeypatch: pytest.MonkeyPatch, persistent: bool) -> None:
    """Every layout of round 28 bwrap2 starts and hides the workspace's secret, as root and as 65534."""
    require_bwrap()
    said_all: list[str] = []
    for n, (temp, workspace, denied) in enumerate(LAYOUTS):
        base = open_base / str(n)
        base.mkdir()
        base.chmod(0o755)
        policy = _layout(base, monkeypatch, temp, workspace, denied)
        ws = policy.workspace
        target = base / denied
        probe = f"cat {ws}/secret {ws}/linked {target} {target}/inside 2>/dev/null; echo ran"

        async def main(
            policy: SandboxPolicy = policy, probe: str = probe, base: Path = base
        ) -> tuple[int, str, str | None]:
            backend = BwrapBackend(BwrapConfig(persistent=persistent), policy)
            async with supervised(backend, base / "s") as sup:
                result = await sup.run(probe, timeout_s=60)
                return result.exit_code, result.preview, result.sandbox_failure

        code, said, failure = anyio.run(main)
        said_all.append(f"{n} {(temp, workspace, denied)}: {code} {failure} {said!r}")
        monkeypatch.delenv("TMPDIR", raising=False)
        monkeypatch.setattr(tempfile, "tempdir", None)
    bad = [line for line in said_all if not line.endswith(": 0 None 'ran\\n'")]
    assert not bad, "\n".join(bad)
    # A denied directory holding the workspace: its mask hid the workspace ("cannot enter the
    # working directory", failed before as root under the zygote). Refused, naming it and the fix.
    holder = open_base / "holder"
    (holder / "ws").mkdir(parents=True)
    backend = BwrapBackend(
        BwrapConfig(persistent=persistent), SandboxPolicy(workspace=holder / "ws", read_denied=(holder,))
    )
    with pytest.raises(SandboxPolicyError, match="contains a writable root.*Fix: deny the files"):
        anyio.run(backend.start)
    anyio.run(backend.close)


def test_it_holds_for_an_unprivileged_caller() -> None:
    _nonroot.held_as_nobody(__file__, "test_layouts_start_and_hide")
