"""Red team round 13 (host side): the workspace guard's audit log and quarantine, through a symlink.

The guard (`shellrt.supervisor.protect`) appends a line per reverted file to
``<session dir>/audit.jsonl``, opened by path, following links. Commands never reach the session
directory -- unless it is named through a symlink in the workspace, which a command replaces
(`tests/test_redteam_round13_host_sessionlink.py`: now refused at start, switched off here). Then a planted
``audit.jsonl -> <any file>`` made the host (root in CI) append the guard's JSON there, with the
``path`` the command chose (``.claude/$(...)`` would run in a ``~/.bashrc``). Failed before: the
victim file got the line. Now the log is opened ``O_NOFOLLOW|O_NONBLOCK`` and written only when
it is a regular file.

The quarantine likewise: the planted file is moved to ``<session dir>/quarantine/<n>/<its path>``,
whose directories were made and opened by path; a planted ``quarantine -> /root`` would put a
command's ``.profile`` at ``/root/1/.profile``, and ``quarantine/1 -> /root`` at
``/root/.profile``. Failed before: the planted file landed in the victim directory. Now the
directories below the session directory are made and entered ``O_NOFOLLOW``, one at a time.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import shellrt
from shellrt.runtime import session_dir
from tests._rt13_host import bash_text, host_base

pytestmark = pytest.mark.anyio


@pytest.fixture
def base(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    # Defence in depth: a session directory named through a link in the workspace is refused at
    # start now (`refuse_linked_session_dir`); switched off here to reach the writes it guards.
    monkeypatch.setattr(session_dir, "refuse_linked_session_dir", lambda *_: None)
    yield from host_base(tmp_path, monkeypatch, "rt13-audit-")


async def test_the_audit_log_is_never_appended_through_a_planted_link(base: Path) -> None:
    ws = base / "ws"
    ws.mkdir()
    (base / "sessions").mkdir(mode=0o700)
    (ws / "sess-link").symlink_to(base / "sessions")
    victim = base / "victim.txt"
    victim.write_text("victim\n")
    async with shellrt.Runtime(
        ws, "bwrap", session_dir=ws / "sess-link" / "s", mode="bypassPermissions"
    ) as rt:
        await bash_text(rt, f"rm sess-link && mkdir -p sess-link/s && ln -s {victim} sess-link/s/audit.jsonl")
        plant = "import os; os.makedirs('.claude', exist_ok=True); open('.claude/' + 'settings.json', 'w').write('{}')"
        reverted = await bash_text(rt, f'python3 -c "{plant}"')
        assert "reverted" in reverted, reverted  # the guard acted (and would have audited)
    assert victim.read_text() == "victim\n"


@pytest.mark.parametrize("link", ["quarantine", "quarantine/1"])
async def test_the_quarantine_is_never_reached_through_a_planted_link(base: Path, link: str) -> None:
    ws = base / "ws"
    ws.mkdir()
    (base / "sessions").mkdir(mode=0o700)
    (ws / "sess-link").symlink_to(base / "sessions")
    victim = base / "victim-dir"
    victim.mkdir()
    async with shellrt.Runtime(
        ws, "bwrap", session_dir=ws / "sess-link" / "s", mode="bypassPermissions"
    ) as rt:
        made = await bash_text(
            rt,
            f"rm sess-link && mkdir -p sess-link/s/quarantine && rm -rf sess-link/s/{link} && "
            f"ln -sfn {victim} sess-link/s/{link} && ls -l sess-link/s/{link}",
        )
        assert f"-> {victim}" in made, made
        plant = "open('.' + 'profile', 'w').write('echo owned')"
        reverted = await bash_text(rt, f'python3 -c "{plant}"')
        assert "reverted" in reverted, reverted
        assert str(victim) not in reverted, reverted
        assert not (ws / ".profile").exists()  # gone from the workspace all the same
    assert list(victim.rglob("*")) == []
