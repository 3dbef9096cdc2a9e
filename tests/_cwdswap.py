"""A background task that swaps the session's cwd for a symlink to /etc, and probes run against it.

Shared by round 25's session test (`tests/test_redteam_round25_supervisor_cwdswap.py`) and round
26's one-bwrap-per-command test (`tests/test_redteam_round26_bwrap_cwdswap.py`): the same race, met
by two ways of entering the cwd.
"""

from __future__ import annotations

from pathlib import Path

import anyio

from shellrt.supervisor import Supervisor

# Swaps ``d`` (a directory) and ``l`` (a symlink to /etc) as fast as it can, forever.
SWAPPER = (
    "python3 -c 'import ctypes, os\n"
    'os.symlink("/etc", "l")\n'
    "libc = ctypes.CDLL(None, use_errno=True)\n"
    'open("started", "w").close()\n'
    'while True: libc.renameat2(-100, b"d", -100, b"l", 2)\n\''
)


def make_swapped_dir(ws: Path) -> None:
    """``ws/d`` with a marker file: the swaps rename d under a running command."""
    (ws / "d").mkdir(parents=True)
    (ws / "d" / "here-d").touch()


def elsewhere(printed: list[str], ws: str) -> list[str]:
    """Starts neither in d, nor refused, nor at the workspace root (the host's own fallback when it
    saw the link: back to the root, with a note)."""
    return [p for p in printed if not p.startswith("refused") and p not in ("in-d", ws)]


async def probe_while_swapping(sup: Supervisor, ws: Path, probe: str, tries: int) -> list[str]:
    """Start the swapper in ``ws``, then run ``probe`` with the session's cwd at ``ws/d`` up to
    ``tries`` times: until one started elsewhere, or a start met the link (refused) and one ran in d.
    Each probe's output (stripped), or ``refused: <output>`` when it was not run."""
    await sup.start_background(SWAPPER, description="swapper")
    # A background task gets little CPU beside busy loops (tens of seconds to start, at load).
    with anyio.fail_after(120):
        while not (ws / "started").exists():
            await anyio.sleep(0.01)
    printed: list[str] = []
    for _ in range(tries):
        result = await sup.run(probe, timeout_s=30, session_cwd=str(ws / "d"))
        printed.append(result.preview.strip() if result.exit_code == 0 else f"refused: {result.preview}")
        if elsewhere(printed, str(ws)) or ("in-d" in printed and any(p.startswith("refused") for p in printed)):
            break
    return printed
