"""Review of round 35 (hostenv): a variable taken from the hooks' environment was taken silently.

Round 35 drops any inherited variable whose value names a writable or relative place; a hook that
needed one failed with nothing saying why (its own error at best: "config not found"). The
operator now gets one warning per variable, naming it (never its value: tokens live there) and
saying what to do.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from shellrt.permissions.hook_env import hook_env


def test_a_dropped_variable_is_named_once_with_what_to_do(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    name = f"REVIEW35_TOOL_RC_{tmp_path.name.upper()}"  # a name no other test warned about
    environ = {"PATH": "/usr/bin:/bin", name: "conf/secret-token-value.rc", "KEPT": "/etc/hostname"}
    with caplog.at_level(logging.WARNING):
        first = hook_env(environ, [ws])
        hook_env({**environ, "OTHER": "x"}, [ws])  # another key: computed again, warned once
    told = [r.getMessage() for r in caplog.records if name in r.getMessage()]
    assert name not in first and first.get("KEPT") == "/etc/hostname"
    assert len(told) == 1, told
    assert "secret-token-value" not in told[0] and "set it in the hook's own command" in told[0], told
