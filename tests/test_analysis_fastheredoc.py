"""The parser-free plan of a command fed by a quoted here-document must equal the parser path's.

``plan_heredoc`` takes one command whose first line ends with ``<<'DELIM'`` and whose
body bash reads literally; anything else is refused (None) so tree-sitter decides.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shellrt.analysis import analyze
from shellrt.analysis.analyze import _analyze_bash
from shellrt.analysis.fastheredoc import plan_fast, plan_heredoc
from tests._fuzz import examples


def _same(command: str) -> bool:
    """True when the fast path took ``command``; asserts both paths agree on everything."""
    if plan_fast(command) is None:
        return False
    fast = _analyze_bash(command, fast=True).model_dump()
    full = _analyze_bash(command, fast=False).model_dump()
    assert fast == full, command
    return True


@pytest.mark.parametrize(
    "command",
    [
        "cat <<'EOF'\nhello\nEOF",
        "cat > /tmp/test_fix.py << 'EOF'\nimport os\nprint(os.getcwd())\nEOF",
        'cat <<"EOF"\nx\nEOF',
        "cat <<'EOF'\nEOF",
        "cat <<'EOF'\nx\nEOF\n",
        "A=1 tee out.txt <<'X_1'\na b\n\tc\nX_1",
        "python3 <<'PY'\nprint(1)\n\nprint(2)\nPY",
        "python3 -u > out <<'PY'\nprint(1)\nPY",
        "cat >> .bashrc <<'EOF'\nalias ls=rm\nEOF",
        "sort -u 2>/dev/null <<'EOF'\nb\na\nEOF",
    ],
)
def test_taken_and_agrees(command: str) -> None:
    assert _same(command), command


@pytest.mark.parametrize(
    "command",
    [
        "cat <<EOF\nx\nEOF",  # unquoted: the body expands
        "cat <<-'EOF'\n\tx\n\tEOF",
        "cat<<'EOF'\nx\nEOF",
        "cat 2<<'EOF'\nx\nEOF",
        "cat <<'EOF' > out\nx\nEOF",
        "cat <<'EOF' | grep x\nx\nEOF",
        "cat <<'EOF' && ls\nx\nEOF",
        "cat <<'EOF'\nx\nEOF\nrm -rf /",
        "cat <<'EOF'\nx\nEOF\n\n",
        "cat <<'EOF'\nx\n EOF",
        "cat <<'EOF'\nx\nEOF ",
        "cat <<'EOF'\nEOF\nx\nEOF",
        "cat <<'EOF'\nxEOF\nEOF",
        "cat <<'EOF'\n\nx\nEOF",
        "cat <<'EOF'\n \nEOF",
        "cat <<'EOF'\n$(id)\nEOF",
        "cat <<'EOF'\n`id`\nEOF",
        "cat <<'EOF'\na\\\nEOF",
        "cat <<'EOF'\né\nEOF",
        "cat <<'EOF'\na\rb\nEOF",
        "cat <<'E F'\nx\nE F",
        "cat <<'EOF'x\nx\nEOFx",
        "cat <<'EOF' \nx\nEOF",
        "cat <<'EOF'\nx",
        "bash <<'EOF'\nrm x\nEOF",
        "timeout 5 sh <<'EOF'\nrm x\nEOF",
        "cd /tmp <<'EOF'\nx\nEOF",
        "python3 - <<'PY'\nprint(1)\nPY",
        "python3 - > out <<'PY'\nprint(1)\nPY",
        "cat; <<'EOF'\nx\nEOF",
        "cat & <<'EOF'\nx\nEOF",
        "ls | cat <<'EOF'\nx\nEOF",
        "<<'EOF'\nx\nEOF",
        "x=1 <<'EOF'\nx\nEOF",
        "cat <<<'EOF'\nx\nEOF",
        "cat << <<'EOF'\nx\nEOF",
        "cat\nls",
    ],
)
def test_refused(command: str) -> None:
    assert plan_heredoc(command) is None, command
    assert plan_fast(command) is None, command


def test_a_written_file_stays_a_write() -> None:
    """The fast path must keep what the verdict rests on: the redirect target is a write."""
    result = analyze("cat > notes.md <<'EOF'\n# notes\nEOF")
    assert not result.read_only
    assert result.write_targets == ["notes.md"]
    assert result.plan is not None and result.plan.heredocs[0].body == "# notes\n"


_HEADS = [
    "cat",
    "cat > out.txt",
    "tee a.txt",
    "A=1 cat",
    "python3",
    "python3 - > o",
    "wc -l",
    "sort",
    "cat 2>&1",
]
_PIECES = [
    "", " ", "  ", "\t", "x", "EO", "OF", "E", "'", '"', "#", "{", "}", "(", ")", ";", "&", "|", "<", ">", "<<",
    "-", "=", "*", "?", "~", "!", "%", "a b", "def f():", "    return 1", "'''", "[", "EOFX", "XEOF", "$", "\\",
]  # fmt: skip


@st.composite
def _heredoc_commands(draw: st.DrawFn) -> str:
    lines = draw(st.lists(st.lists(st.sampled_from(_PIECES), max_size=5).map("".join), max_size=8))
    quote = draw(st.sampled_from(["'", '"']))
    return (
        draw(st.sampled_from(_HEADS))
        + draw(st.sampled_from([" <<", " << ", " <<-", "<<", " <<\t"]))
        + quote
        + draw(st.sampled_from(["EOF", "E_1", "E F"]))
        + quote
        + "\n"
        + "".join(line + "\n" for line in lines)
        + draw(st.sampled_from(["EOF", "E_1", " EOF", "EOF ", "\tEOF"]))
        + draw(st.sampled_from(["", "\n", "\n\n", "\nls"]))
    )


@settings(max_examples=examples(1500), deadline=None)
@given(_heredoc_commands())
def test_generated_heredocs_agree(command: str) -> None:
    _same(command)
