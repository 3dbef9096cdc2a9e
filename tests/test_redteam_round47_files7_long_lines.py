"""Red team round 47 (files7): Edit and Write showed a very long line whole.

Read shows a line cut at 2,000 characters. Edit's ``cat -n`` snippet and Edit's and Write's diff
held every line they showed whole: one Edit in a one-line 60 MB file (a minified bundle a
repository ships) gave the model a 60-million-character result and people and the transcript a
120-million-character diff, holding the host 11 s and 700 MB. Now the snippet shows a window of
each long line around the change and says which lines were cut; the diff shows each long line's
head and a digest of the whole (`shellrt.tools._longlines`).
"""

from __future__ import annotations

from pathlib import Path

import anyio

from shellrt.tools._longlines import snippet
from shellrt.tools._render import numbered_snippet
from shellrt.tools.edit import EditTool
from shellrt.tools.write import WriteTool
from tests.test_tools_edit import make_ctx, read

_SIDE = 1_500_000  # a 3 MB line: the bound is the window, whatever the line


def test_edit_and_write_show_a_window_of_a_long_line(tmp_path: Path) -> None:
    (tmp_path / ".session").mkdir()
    ctx = make_ctx(tmp_path)
    path = tmp_path / "bundle.min.js"
    path.write_text("a" * _SIDE + "NEEDLE" + "b" * _SIDE + "\nshort line\n")
    read(ctx, path)

    async def go() -> tuple[str, str, str, str]:
        edit, write = EditTool(), WriteTool()
        inp = edit.parse_input({"file_path": str(path), "old_string": "NEEDLE", "new_string": "PIN"})
        assert (await edit.validate(inp, ctx)).ok
        out = (await edit.call(inp, ctx)).data
        model = edit.to_model_content(out)
        assert isinstance(model, str)
        # A Read that showed the line cut no longer lets Write replace it (round 53); the bound on
        # Write's diff is what is tested here, so the read is taken for a whole one.
        for key, seen in list(ctx.read_state.items()):
            ctx.read_state[key] = seen.model_copy(update={"partial": False})
        w = write.parse_input({"file_path": str(path), "content": "c" * (2 * _SIDE) + "\n"})
        assert (await write.validate(w, ctx)).ok
        written = (await write.call(w, ctx)).data
        return model, edit.audit_text(out), edit.render_result(out), write.render_result(written)

    model, audit, shown, write_diff = anyio.run(go)
    for text in (model, audit, shown, write_diff):
        assert len(text) < 20_000, len(text)
    assert "aaaPINbbb" in model and "     2\tshort line" in model, model[:3000]
    assert "Line 1 is longer than 2,000 characters" in model, model[-500:]
    assert path.read_text() == "c" * (2 * _SIDE) + "\n"


def test_the_snippet_is_unchanged_where_no_line_is_long() -> None:
    text = "one\r\ntwo\nthree\u2028x\n\nfive\n"
    for at in range(len(text)):
        for span in (0, 3, len(text) - at):
            assert snippet(text, at, span) == numbered_snippet(text, at, span)
