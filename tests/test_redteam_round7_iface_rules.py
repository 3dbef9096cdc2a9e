"""Red team round 7 (interfaces): a path rule with ``.`` or ``..`` in it must mean that path.

Paths are compared with ``..`` folded, the rule patterns were not: ``Read(../outside/key)``
(a sibling of the project), ``Read(./sub/../secret.txt)`` and ``Edit(./src/./main.c)``
were accepted as deny rules and matched nothing, so ``bypassPermissions`` read and wrote
what they named. Reproduced through `shellrt.Runtime` on the local backend, with the
rules on the command line and in a trusted project settings file.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest

import shellrt
from shellrt.permissions import parse_rule
from shellrt.permissions.errors import RuleSyntaxError
from shellrt.permissions.rules import RuleOrigin
from shellrt.protocol import ResultEnvelope, ToolUseBlock
from tests._governance import isolated_workspace

pytestmark = pytest.mark.anyio

_ids = itertools.count()


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    ws = isolated_workspace(tmp_path, monkeypatch)
    (ws / "sub").mkdir()
    (ws / "src").mkdir()
    (ws / "secret.txt").write_text("TOP-SECRET\n")
    (ws / "src" / "main.c").write_text("int main;\n")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "key").write_text("OUTSIDE-KEY\n")
    return ws


async def _calls(ws: Path, calls: list[tuple[str, dict[str, Any]]], **kw: Any) -> list[ResultEnvelope]:
    async with shellrt.Runtime(
        ws, "local", session_dir=ws.parent / f"s{next(_ids)}", mode="bypassPermissions", **kw
    ) as rt:
        blocks = [ToolUseBlock(id=f"r7u{next(_ids)}", name=n, input=i) for n, i in calls]
        return await rt.run_envelopes(blocks)


def _text(envelope: ResultEnvelope) -> str:
    content = envelope.model.content
    return content if isinstance(content, str) else "\n".join(getattr(b, "text", "") for b in content)


@pytest.mark.parametrize(
    "rule", ["Read(./sub/../secret.txt)", "Read(sub/./../secret.txt)", "Read(./secret.txt/.)"]
)
async def test_a_read_deny_rule_with_dot_segments_denies_what_it_names(ws: Path, rule: str) -> None:
    results = await _calls(
        ws,
        [("Read", {"file_path": str(ws / "secret.txt")}), ("Bash", {"command": "cat secret.txt"})],
        deny=[rule],
    )
    for envelope in results:
        assert envelope.is_error and "TOP-SECRET" not in _text(envelope), _text(envelope)


async def test_a_project_rule_naming_a_sibling_through_dotdot_denies_it(ws: Path) -> None:
    (ws / ".shellrt").mkdir()
    (ws / ".shellrt" / "settings.json").write_text(
        json.dumps({"permissions": {"deny": ["Read(../outside/key)", "Edit(./src/./main.c)"]}})
    )
    key = ws.parent / "outside" / "key"
    results = await _calls(
        ws,
        [
            ("Read", {"file_path": str(key)}),
            ("Bash", {"command": f"cat {key}"}),
            ("Write", {"file_path": str(ws / "src" / "main.c"), "content": "overwritten"}),
        ],
        trust_workspace=True,
    )
    for envelope in results:
        assert envelope.is_error and "OUTSIDE-KEY" not in _text(envelope), _text(envelope)
    assert (ws / "src" / "main.c").read_text() == "int main;\n"


async def test_a_dotdot_that_cannot_be_folded_is_a_malformed_rule(ws: Path) -> None:
    async with shellrt.Runtime(
        ws, "local", session_dir=ws.parent / f"s{next(_ids)}", deny=["Read(*/../secret.txt)"]
    ) as rt:
        assert any("cannot be folded" in d and "malformed" in d for d in rt.diagnostics), rt.diagnostics


async def test_rules_without_dot_segments_and_other_files_still_work(ws: Path) -> None:
    (ws / "sub" / "ok.txt").write_text("fine\n")
    results = await _calls(
        ws,
        [("Read", {"file_path": str(ws / "sub" / "ok.txt")}), ("Bash", {"command": "cat sub/ok.txt"})],
        deny=["Read(./sub/../secret.txt)", "Read(.env)"],
    )
    for envelope in results:
        assert not envelope.is_error and "fine" in _text(envelope), _text(envelope)


def test_dot_segments_are_folded_when_the_rule_is_read(tmp_path: Path) -> None:
    origin = RuleOrigin("cli", root=tmp_path / "proj")

    def spec(text: str) -> str | None:
        return parse_rule(text, "deny", origin).specifier

    assert spec("Read(./a/../b/c)") == "/b/c"  # stays anchored at the root, never floats to any depth
    assert spec("Read(../shared/**)") == f"/{tmp_path}/shared/**"
    assert spec("Read(//etc/./ssl/../shadow)") == "//etc/shadow"
    assert spec("Read(~/x/../.ssh/**)") == "~/.ssh/**"
    assert spec("Read(.env)") == ".env" and spec("Read(./secrets/**)") == "./secrets/**"
    for bad in ("Read(**/../x)", "Read(~/../etc)", "Read(a/*/../b)"):
        with pytest.raises(RuleSyntaxError, match=r"\.\."):
            parse_rule(bad, "deny", origin)
    with pytest.raises(RuleSyntaxError, match="absolute"):
        parse_rule("Read(../x)", "deny", RuleOrigin("session"))
