"""The unguarded sessions' note stays bounded (`shellrt.supervisor._tree_note`, round 25).

Every session that runs commands appends two lines for each writable root; only a guarded session
or ``shellrt trust add`` folds them into the record. A machine that only ever runs ``shellrt run``
had nothing fold them: the note grew ~300 bytes a run without end. Compacting must keep what
folding decides: which sessions are still open on a root and when the last one ended.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from shellrt.permissions import tree_marks
from shellrt.supervisor import _tree_note


def _folded(text: str) -> dict[str, object]:
    """The marks the next guarded start keeps; an unreadable line's ("/", every path) end time is
    the fold's own clock, so only its presence is compared."""
    data: dict[str, object] = {}
    tree_marks._apply(data, tree_marks._note_lines(text))
    marks = data[tree_marks.MARKS]
    assert isinstance(marks, dict)
    assert marks.pop("/")["open"] == []
    return data


def test_a_note_past_its_bound_is_compacted_to_what_folding_keeps(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SHELLRT_TRUST_STORE", str(tmp_path / "store" / "trust.json"))
    ws, gone = tmp_path / "ws", tmp_path / "gone"
    ws.mkdir()
    lines = []
    for i in range(4000):  # ended runs on the workspace and on a removed directory
        for root in (ws, gone):
            lines.append({"root": str(root), "session": f"s{i}", "open": True, "at": 1000.0 + i})
            lines.append({"root": str(root), "session": f"s{i}", "open": False, "at": 1000.5 + i})
    lines.append({"root": str(ws), "session": "live", "open": True, "at": 9000.0})  # still running
    lines.append({"root": str(ws), "session": "earlier", "open": False, "at": 500.0})  # opened before a fold
    path = _tree_note.note_path()
    path.parent.mkdir(parents=True)
    path.write_text("".join(json.dumps(x) + "\n" for x in lines) + "not json\n")
    before = path.read_text()
    assert len(before) > _tree_note.COMPACT_BYTES

    _tree_note.note_roots([ws], "new", opening=True)

    after = path.read_text()
    assert len(after) < 2000, after  # was 1.3 MB: 16,000 lines
    expected = _folded(
        before + json.dumps({"root": str(ws), "session": "new", "open": True, "at": 0.0}) + "\n"
    )
    assert _folded(after) == expected
    marks = expected[tree_marks.MARKS]
    assert isinstance(marks, dict)
    assert sorted(marks[str(ws)]["open"]) == ["live", "new"] and marks[str(ws)]["last"] == 1000.5 + 3999
    assert str(gone) not in marks  # the removed root pruned (the bad line marked every path: `_folded`)
    # A session that had been folded open still ends: its end line is kept.
    assert any('"earlier"' in line for line in after.splitlines())
    _tree_note.note_roots([ws], "new", opening=False)  # below the bound: appended, not compacted
    assert path.read_text().startswith(after)
