"""Red team round 33 (settings): a settings file whose line numbers cost minutes.

Diagnostics say ``file:line``; the loader found each hook's, rule's and unknown key's line by
searching the JSON text from the start and counting newlines from the start. An untrusted
repository's ``.claude/settings.json`` under the 4 MiB cap with 40,000 hooks held every session's
start (and ``shellrt trust add``) for 103 s, one with 80,000 unknown ``permissions`` keys 73 s (and
printed 80,000 diagnostics): quadratic in the count. Untrusted hooks are dropped only after the
file is read, so trust does not help.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from shellrt.permissions.sources import load_settings


def test_many_hooks_and_unknown_keys_load_in_linear_time(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / ".claude").mkdir(parents=True)
    hooks = [{"matcher": "Bash", "hooks": [{"type": "command", "command": f"c{i}"}]} for i in range(20_000)]
    data = {
        "permissions": {"deny": ["Bash(curl:*)"], **{f"k{i}": 1 for i in range(30_000)}},
        "hooks": {"PostToolUse": hooks},
    }
    (ws / ".claude" / "settings.json").write_text(json.dumps(data))
    started = time.perf_counter()
    settings = load_settings(ws, home=tmp_path / "home", managed_path=tmp_path / "managed.json")
    elapsed = time.perf_counter() - started
    assert elapsed < 8, f"loading took {elapsed:.1f} s"  # ~0.8 s at no load; ~36 s before
    assert not settings.hook_specs and "20000 hook(s)" in (settings.trust_notice or "")  # untrusted
    assert any(r.text == "Bash(curl:*)" and r.kind == "deny" for r in settings.rules.rules)
    unknown = [d for d in settings.diagnostics if "unknown key" in d]
    assert len(unknown) <= 21 and "29980 more unknown keys ignored" in unknown[-1], unknown[-2:]


def test_a_file_of_too_many_rules_is_unread_and_degrades(tmp_path: Path) -> None:
    """50,000 deny rules of an untrusted repository cost 0.9 s a call (2.2 s for ``a && b | c``),
    every rule judged on the event loop; such a file is now read as one too large to read."""
    ws = tmp_path / "ws"
    (ws / ".claude").mkdir(parents=True)
    rules = [f"Bash(x{i}:*)" for i in range(20_000)]
    (ws / ".claude" / "settings.json").write_text(json.dumps({"permissions": {"deny": rules}}))
    settings = load_settings(ws, home=tmp_path / "home", managed_path=tmp_path / "managed.json")
    assert len(settings.rules.rules) < 100, len(settings.rules.rules)
    assert settings.degraded and any("20000 permission rules" in d for d in settings.diagnostics)
