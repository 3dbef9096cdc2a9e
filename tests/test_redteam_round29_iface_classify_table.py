"""Red team round 29 (iface): ``shellrt classify``'s table printed the command it judges raw.

``classify`` is a review tool: the operator pastes a command they were given (by a model, a README)
to see whether it writes. Its table printed the command, its subcommands and its write and cd
targets as they were: ``rm -rf ~/x #<CR><ESC>[2Kls -la`` showed as ``command  ls -la`` above
"read-only: no", and a right-to-left override reordered the words. Each value is now shown as
prompts show the model's text (`for_person`, one line). In process, the real CLI entry.
"""

from __future__ import annotations

import json

import pytest

from shellrt.cli import main


def test_the_classify_table_shows_the_command_escaped(capsys: pytest.CaptureFixture[str]) -> None:
    evil = "rm -rf ~/x > \u202eout\x1b]52;c;QUFB\x07 #\r\x1b[2Kls -la"
    assert main(["classify", evil]) == 0
    out = capsys.readouterr().out
    raw = [ch for ch in ("\x1b", "\r", "\u202e", "\x07") if ch in out]
    assert raw == [], (raw, out)
    assert "rm -rf ~/x" in out and "\\x0d\\x1b[2Kls -la" in out and "\\u202e" in out, out
    # --json: the same JSON to a reader, nothing a terminal obeys (C1 CSI, bidi override); letters kept.
    shown = "ls \u202eé\u009b2J\U000e0041"
    assert main(["classify", "--json", shown]) == 0
    out = capsys.readouterr().out
    assert [ch for ch in ("\u202e", "\u009b", "\U000e0041") if ch in out] == [], out
    assert json.loads(out)["command"] == shown and "é" in out, out
