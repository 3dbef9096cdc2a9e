"""Red team round 32 (files2): glob and pattern text the search tools could not compile or pass on.

A reversed character range (``[z-a]``) is valid glob *syntax* for the tools' NFA but Python's
``re`` refuses the class: Glob's own pattern crashed the call ("Glob failed unexpectedly:
error: bad character range"), and -- on a machine without ripgrep, where the pure-Python twin
walks -- one such line in a repository's ``.gitignore`` crashed every Glob and Grep of the tree
(ripgrep skips the line). A NUL in Grep's ``pattern`` or ``glob`` (valid JSON: ``"\\u0000"``)
crashed the call building ripgrep's argv ("ValueError: embedded null byte"). Now: the
ignore line is skipped as ripgrep does, a bad pattern or glob is a clear refusal, on both
backends.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from shellrt.protocol import Tool, ToolContext, ToolExecutionError
from shellrt.tools._search import NO_RIPGREP_ENV
from shellrt.tools.glob import GlobTool
from shellrt.tools.grep import GrepTool
from tests.test_tools_edit import make_ctx


def _call(tool: Tool[Any, Any], ctx: ToolContext, **raw: Any) -> str:
    async def go() -> str:
        inp = tool.parse_input(raw)
        v = await tool.validate(inp, ctx)
        if not v.ok:
            raise ToolExecutionError(v.message)
        return str(tool.to_model_content((await tool.call(inp, ctx)).data))

    return anyio.run(go)


@pytest.mark.parametrize("no_rg", [False, True])
def test_bad_globs_and_nul_are_refusals_and_a_bad_ignore_line_is_skipped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_rg: bool
) -> None:
    if no_rg:
        monkeypatch.setenv(NO_RIPGREP_ENV, "1")
    root = tmp_path.resolve()
    (root / ".session").mkdir()
    ctx = make_ctx(root)
    (root / "a.py").write_text("ab\n")
    (root / "x.log").write_text("ab\n")
    (root / ".gitignore").write_text("[z-a]\n*.log\n")
    listed = _call(GlobTool(), ctx, pattern="*", path=str(root))
    assert "a.py" in listed and "x.log" not in listed  # the bad line skipped, the next one obeyed
    found = _call(GrepTool(), ctx, pattern="ab", path=str(root))
    assert "a.py" in found and "x.log" not in found
    with pytest.raises(ToolExecutionError, match=r"\[z-a\].*(range|invalid)"):
        _call(GlobTool(), ctx, pattern="[z-a].py", path=str(root))
    with pytest.raises(ToolExecutionError, match=r"\[z-a\].*(range|invalid)"):
        _call(GrepTool(), ctx, pattern="ab", glob="{x,[z-a]}", path=str(root))
    for raw in ({"pattern": "a\x00b"}, {"pattern": "ab", "glob": "a\x00.py"}):
        with pytest.raises(ToolExecutionError, match=r"NUL.*\\x00"):
            _call(GrepTool(), ctx, path=str(root), **raw)
