"""Red team round 6: a repository's settings file nested thousands deep stopped every session there.

``json.loads`` recurses per nesting level; ``.claude/settings.json`` holding ``[[[[…]]]]`` 200,000
deep (400 KB, under the size bound) raised ``RecursionError`` out of the settings loader, and
``Runtime`` could not start in that workspace (a bare traceback, no word about which file). It is
now a broken settings file, as malformed JSON is: the session starts degraded (allow rules and
bypass mode off) and the diagnostic names the file.
"""

from __future__ import annotations

from pathlib import Path

from shellrt.permissions.settings import load_settings_file


def test_a_deeply_nested_settings_file_is_broken_not_a_crash(tmp_path: Path) -> None:
    (tmp_path / ".claude").mkdir()
    path = tmp_path / ".claude/settings.json"
    path.write_text('{"permissions": {"allow": ' + "[" * 200_000 + "]" * 200_000 + "}}")
    loaded = load_settings_file(path, "project", home=tmp_path, root=tmp_path)
    assert loaded.broken and any("nested too deeply" in d for d in loaded.diagnostics), loaded
