"""Red team, round 3: governance attacks no issue names, each run for real.

Every attack goes through a real Runtime and the real tools (Bash on the local
backend, where governance is the only guard; WebFetch against a real HTTP
server on 127.0.0.1). A held attack leaves no marker and prints no secret.
Classes (not examples):

- a deny rule that names a place through a symbolic link (the real name, the
  link, a floating name that is itself a link);
- WebFetch host spellings that resolve to a denied host (IDNA mapping,
  numeric IPv4 forms);
- hostile workspace settings files that are not files (``/dev/zero``, FIFOs)
  or change between the trust check and the read;
- holes in other helpers' areas, kept as strict xfails naming the hole.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest

import shellrt
from shellrt.permissions.rules import RuleOrigin, parse_rule
from shellrt.protocol import ResultEnvelope, ToolUseBlock
from shellrt.tools.bash import Bash

pytestmark = pytest.mark.anyio

_ids = itertools.count()


async def _run(
    ws: Path, calls: list[tuple[str, dict[str, Any]]], *, mode: str = "dontAsk", tools: Any = None, **kw: Any
) -> list[ResultEnvelope]:
    """dontAsk: whatever would ask is denied, so 'ran' means 'was allowed unasked'."""
    async with shellrt.Runtime(
        workspace=ws,
        sandbox="local",
        session_dir=ws.parent / f".s{next(_ids)}",
        tools=tools if tools is not None else [Bash()],
        settings_files=(),
        mode=mode,
        **kw,
    ) as rt:
        blocks = [ToolUseBlock(id=f"r3g{next(_ids)}", name=n, input=i) for n, i in calls]
        return await rt.run_envelopes(blocks)


async def _bash(ws: Path, commands: list[str], **kw: Any) -> list[ResultEnvelope]:
    return await _run(ws, [("Bash", {"command": c}) for c in commands], **kw)


def _text(envelope: ResultEnvelope) -> str:
    content = envelope.model.content
    return content if isinstance(content, str) else "\n".join(getattr(b, "text", "") for b in content)


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("SHELLRT_MANAGED_SETTINGS", str(tmp_path / "managed.json"))
    monkeypatch.setenv("SHELLRT_TRUST_STORE", str(tmp_path / "trust" / "store.json"))
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "ok.txt").write_text("fine\n")
    return ws


# --- a deny rule that names a place through a symbolic link -------------------------------------


@pytest.fixture
def linked(ws: Path) -> Path:
    """``config -> real`` (the rule names the link), ``.env -> store/envdata`` at the top and below."""
    (ws / "real").mkdir()
    (ws / "real" / "k").write_text('"TOPSECRET"\n')
    (ws / "config").symlink_to("real")
    (ws / "store").mkdir()
    (ws / "store" / "envdata").write_text('"ENVSECRET"\n')
    (ws / ".env").symlink_to("store/envdata")
    (ws / "sub").mkdir()
    (ws / "sub" / ".env").symlink_to("../store/envdata")
    return ws


def _leaked(envelope: ResultEnvelope) -> bool:
    return any(s in _text(envelope) for s in ('"TOPSECRET"', '"ENVSECRET"'))


@pytest.mark.parametrize("mode", ["dontAsk", "bypassPermissions"])
@pytest.mark.parametrize(
    "command",
    ["cat config/k", "cat real/k", "cat < real/k", "head real/*", "cat ./config/../real/k", "tac real/k"],
)
async def test_a_deny_rule_naming_a_symlinked_directory_covers_its_target(
    linked: Path, command: str, mode: str
) -> None:
    [result] = await _bash(linked, [command], mode=mode, deny=[f"Read(/{linked}/config/**)"])
    assert not _leaked(result), _text(result)
    assert "denied by deny rule" in _text(result)


@pytest.mark.parametrize(
    "command",
    ["cat .env", "cat store/envdata", "cat sub/.env", "cat sub/.e*", "cat < sub/.env", "cat {ws}/sub/.env"],
)
async def test_a_floating_deny_rule_covers_a_name_that_is_a_symlink(linked: Path, command: str) -> None:
    [result] = await _bash(linked, [command.format(ws=linked)], deny=["Read(.env)"])
    assert not _leaked(result), _text(result)


async def test_reads_beside_a_symlinked_deny_still_run(linked: Path) -> None:
    results = await _bash(
        linked, ["cat ok.txt", "cat store/../ok.txt"], deny=[f"Read(/{linked}/config/**)", "Read(.env)"]
    )
    assert [_text(r).strip() for r in results] == ["fine", "fine"]


def test_an_allow_rule_never_follows_its_own_symlink_out(tmp_path: Path) -> None:
    """The linked anchor widens deny and ask rules only: an allow through a link stays literal."""
    (tmp_path / "real").mkdir()
    (tmp_path / "docs").symlink_to("real")
    origin = RuleOrigin("cli", None, None, tmp_path)
    deny = parse_rule("Read(./docs/**)", "deny", origin)
    allow = parse_rule("Read(./docs/**)", "allow", origin)
    target = str(tmp_path / "real" / "x")
    assert deny.match_item(target, home=tmp_path, resolve=False)
    assert not allow.match_item(target, home=tmp_path, resolve=True)
    assert not deny.match_item(str(tmp_path / "realx" / "x"), home=tmp_path, resolve=False)
