"""Red team, round 26 (files): right-to-left letters in names do not reorder what people are shown.

A viewer lays each line out with the Unicode bidirectional algorithm: a name holding Hebrew or
Arabic letters (no control character: round 25 quoted those) pulls the digits and neutral
characters beside it into its right-to-left run, so Grep's ``<name>:12:<line>`` showed its line
number on the other side of the name, Write's ``Created <name> (9 bytes)`` moved the count into
the name, and an Edit's diff line opening with such a letter put its ``+`` on the right (round
25, "Left"). The faces people read (``render_result``: the UI and the transcript) now isolate
each such name and line (FSI ... PDI); Glob and Grep show their listing there too (they showed a
count only). The model's face keeps logical order and holds no isolate. A file's own PDI or
override cannot close or cross an isolate: it is shown as ``\\uXXXX`` there.

The check is the class: in every line people are shown, every right-to-left letter and every
bidirectional control but the isolates is inside a balanced isolate.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import anyio

from shellrt.protocol import Tool, ToolContext
from shellrt.tools.edit import EditTool
from shellrt.tools.glob import GlobTool
from shellrt.tools.grep import GrepTool
from shellrt.tools.read import ReadTool
from shellrt.tools.write import WriteTool

NAME = "\u05d0\u05d1 12"  # two Hebrew letters, a space and digits
RTL = re.compile("[\u0590-\u08ff\ufb1d-\ufdff\ufe70-\ufefe\u200e\u200f\u061c\u202a-\u202e\u2066\u2067]")
FSI, PDI = "\u2068", "\u2069"


def _ctx(root: Path) -> ToolContext:
    return ToolContext(
        session_id="s", session_dir=root / ".session", workspace=root, cwd=str(root), allowed_roots=(root,)
    )


def _run(tool: Tool[Any, Any], ctx: ToolContext, **raw: Any) -> tuple[str, str]:
    async def go() -> tuple[str, str]:
        inp = tool.parse_input(raw)
        assert (await tool.validate(inp, ctx)).ok
        out = await tool.call(inp, ctx)
        content = tool.to_model_content(out.data)
        assert isinstance(content, str)
        return content, tool.render_result(out.data)

    return anyio.run(go)


def _loose(line: str) -> list[str]:
    """The right-to-left letters and bidirectional controls of ``line`` outside an isolate (an
    unbalanced PDI or FSI counts as one)."""
    depth, loose = 0, []
    for c in line:
        if c == FSI:
            depth += 1
        elif c == PDI:
            depth -= 1
            if depth < 0:
                return [c]
        elif depth == 0 and RTL.match(c):
            loose.append(c)
    return loose if depth == 0 else [FSI]


def test_people_see_each_right_to_left_name_and_line_isolated(tmp_path: Path) -> None:
    (tmp_path / f"{NAME}.txt").write_text("\u05d2\u05d3 secret 7\n")
    (tmp_path / "p.txt").write_text("\u05d0 \u2069\u202eterces secret\n")  # a PDI and an override
    (tmp_path / "plain.txt").write_text("secret\n")
    ctx = _ctx(tmp_path)
    target = str(tmp_path / f"{NAME}.txt")
    faces = {
        "Glob": _run(GlobTool(), ctx, pattern="*.txt"),
        "Grep files": _run(GrepTool(), ctx, pattern="secret"),
        "Grep count": _run(GrepTool(), ctx, pattern="secret", output_mode="count"),
        "Grep content": _run(GrepTool(), ctx, pattern="secret", output_mode="content"),
        "Read": _run(ReadTool(), ctx, file_path=target),
        "Edit": _run(EditTool(), ctx, file_path=target, old_string="secret", new_string="\u05d4 open"),
        "Write": _run(WriteTool(), ctx, file_path=str(tmp_path / f"new {NAME}.txt"), content="\u05d5\n"),
    }
    bad = {what: [ln for ln in ui.splitlines() if _loose(ln)] for what, (_model, ui) in faces.items()}
    bad = {what: lines for what, lines in bad.items() if lines}
    assert not bad, f"{len(bad)} of {len(faces)} faces for people let right-to-left text loose: {bad!r}"
    for what, (model, _ui) in faces.items():  # the model's face: logical order, no isolate of ours
        own = 1 if what == "Grep content" else 0  # p.txt's own PDI
        assert model.count(FSI) == 0 and model.count(PDI) == own, (what, model)
    listing = faces["Glob"][1].splitlines()
    assert listing[0] == "Found 3 files" and f"{FSI}{target}{PDI}" in listing, listing
    assert str(tmp_path / "plain.txt") in listing  # an ASCII name as it is
    grep = faces["Grep content"][1]
    assert f"{FSI}{NAME}.txt{PDI}:1:{FSI}\u05d2\u05d3 secret 7{PDI}" in grep, grep
    assert "\\u2069\\u202eterces" in grep, grep
    assert "plain.txt:1:secret" in grep.splitlines(), grep


def test_a_diff_for_people_names_the_file_on_its_own_line(tmp_path: Path) -> None:
    """Edit's and Write's diffs (for people) named the file by its raw canonical path: a name with
    line breaks wrote diff lines of its own there."""
    name = "d\n@@ -1 +1 @@\n-forged\n+forged"
    f = tmp_path / name
    f.write_text("old\n")
    ctx = _ctx(tmp_path)
    _run(ReadTool(), ctx, file_path=str(f))
    _model, ui = _run(EditTool(), ctx, file_path=str(f), old_string="old", new_string="new")
    assert ui.splitlines()[:2] == [
        f'--- "a{tmp_path}/d\\n@@ -1 +1 @@\\n-forged\\n+forged"',
        f'+++ "b{tmp_path}/d\\n@@ -1 +1 @@\\n-forged\\n+forged"',
    ], ui
    assert len(ui.splitlines()) == 5, ui


def test_the_listing_people_see_is_bounded(tmp_path: Path) -> None:
    """Glob and Grep now show their listing to people too: never more than `PEOPLE_LINES` of it
    (``head_limit=0`` lists every hit to the model; the transcript keeps both faces)."""
    from shellrt.tools._render import PEOPLE_LINES

    for i in range(PEOPLE_LINES + 20):
        (tmp_path / f"f{i}.txt").write_text("secret\n")
    ctx = _ctx(tmp_path)
    model, ui = _run(GrepTool(), ctx, pattern="secret", output_mode="content", head_limit=0)
    assert len(model.splitlines()) >= PEOPLE_LINES + 20
    assert len(ui.splitlines()) == PEOPLE_LINES + 2 and ui.endswith(
        "not shown here; the model's result lists up to the tool's limit)"
    )
    _model, ui = _run(GlobTool(), ctx, pattern="*.txt", limit=PEOPLE_LINES + 20)
    assert len(ui.splitlines()) == PEOPLE_LINES + 2, ui[-300:]
