"""The verdict's fields without the pydantic model: what ``shellrt classify`` reads (issue 22).

``analysis_fields`` returns the same values ``analyze`` wraps in ``CommandAnalysis``;
importing the package and computing a bash verdict's fields loads no pydantic; the
package's model names still resolve on first use.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

import shellrt.analysis
from shellrt.analysis import CommandAnalysis, analyze, models
from shellrt.analysis.analyze import FIELD_NAMES, analysis_fields

COMMANDS = [
    ("ls -la", "bash"),
    ("git status && rm -rf x", "bash"),
    ("cat <<EOF > f\nx\nEOF", "bash"),
    ("echo 'unterminated", "bash"),
    ("r\\\nm x", "bash"),
    ("(" * 3000 + ")" * 3000, "bash"),
    ("Get-ChildItem -Recurse", "powershell"),
    ("ls", "zsh"),
]


def test_the_field_names_are_the_models_in_order() -> None:
    assert tuple(CommandAnalysis.model_fields) == FIELD_NAMES


@pytest.mark.parametrize(("command", "shell"), COMMANDS, ids=lambda v: v[:20])
def test_the_fields_are_what_analyze_returns(command: str, shell: str) -> None:
    fields = analysis_fields(command, shell)
    assert list(fields) == list(FIELD_NAMES)
    model = analyze(command, shell)  # type: ignore[arg-type]  # an unknown shell is refused, not raised
    assert CommandAnalysis.model_validate(fields).model_dump() == model.model_dump()
    assert fields == model.__dict__


def test_every_package_name_resolves_to_its_home() -> None:
    for name in shellrt.analysis.__all__:
        value = getattr(shellrt.analysis, name)
        if hasattr(models, name):
            assert value is getattr(models, name)
    with pytest.raises(AttributeError, match="no_such_name"):
        _ = shellrt.analysis.no_such_name  # type: ignore[attr-defined]


_PROBE = """
import sys
from shellrt.analysis.analyze import analysis_fields
fields = analysis_fields("ls -la | head")
assert fields["read_only"] is True, fields
print("pydantic" in sys.modules, "shellrt.analysis.models" in sys.modules)
from shellrt.analysis import CommandAnalysis, Word, analyze
assert isinstance(analyze("ls"), CommandAnalysis)
print("pydantic" in sys.modules, Word.__module__)
"""


def test_a_bash_verdicts_fields_need_no_pydantic() -> None:
    out = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True, check=True).stdout
    assert out.split("\n")[:2] == ["False False", "True shellrt.analysis.nodes"]
