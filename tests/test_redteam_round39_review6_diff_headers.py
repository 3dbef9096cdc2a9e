"""Red team round 39 (review6): a diff line that looks like a file header kept its controls.

Round 38 (novel3) escaped each text line of the people face's unified diff (`_render.unified_diff`)
but skipped every line starting ``--- `` or ``+++ `` as the diff's own file header. A text line
may start so: a removed SQL or Lua comment ``-- note`` is ``--- note``, an added ``++ x`` is
``+++ x``. The model's ``new_string`` ``++ ok\\x1b[1A\\x1b[2K`` (or a repository's removed
``-- \\x1b]52;…``) reached the person's terminal raw and erased the diff line above it, the
model's change, in ``acceptEdits`` mode. Now only the two header lines the diff wrote are left as
they are (their names are escaped already); every text line is escaped, whatever it starts with.
"""

from __future__ import annotations

from pathlib import Path

from shellrt.tools._render import unified_diff
from shellrt.tools.edit import EditTool
from shellrt.tools.read import ReadTool
from tests.test_redteam_round38_novel3_people_controls import CLIP, HIDE, _assert_inert, _ui, _workspace


def test_an_added_line_starting_plus_plus_is_escaped(tmp_path: Path) -> None:
    root, ctx = _workspace(tmp_path)
    path = root / "schema.sql"
    path.write_text(f"-- {CLIP}\nSELECT 1;\n")
    _ui(ReadTool(), ctx, {"file_path": str(path)})
    ui = _ui(
        EditTool(),
        ctx,
        {
            "file_path": str(path),
            "old_string": f"-- {CLIP}\nSELECT 1;",
            "new_string": f"DROP TABLE users;\n++ ok{HIDE}",
        },
    )
    _assert_inert(ui)
    assert "+DROP TABLE users;" in ui and "+++ ok\\x1b[1A" in ui


def test_every_shape_of_text_line_is_escaped_and_the_headers_stay() -> None:
    diff = unified_diff(f"-- a{HIDE}\n--- b{CLIP}\nkeep\n", f"++ c{HIDE}\n+++ d{CLIP}\nkeep\n", "x.sql")
    _assert_inert(diff)
    lines = diff.split("\n")
    assert lines[:2] == ["--- a/x.sql", "+++ b/x.sql"]
    assert "--- a\\x1b[1A\\x1b[2K" in lines and "+++ c\\x1b[1A\\x1b[2K" in lines
