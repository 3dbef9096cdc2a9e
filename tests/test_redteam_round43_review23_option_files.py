"""Red team, round 43 (review23): an options variable or java option naming a written file bare.

Round 42 (analysis5) asked when an options variable names what the command writes
(``CFLAGS=-B./b/`` with ``b/as`` written), but read only words holding a ``/``: ``CFLAGS=-B.`` with
``./as`` written (gcc runs ``./as``), ``JAVA_TOOL_OPTIONS=-javaagent:a.jar`` (every JVM loads the
agent), ``-agentpath:./a.so`` (a ``:`` before the path) and ``CPPFLAGS``/``CGO_CFLAGS`` spellings
passed ``Bash(rm:*)`` in ``bypassPermissions``; and ``java -javaagent:a.jar`` itself was read as
running nothing of the workspace. ``q`` holds ``/bin/rm`` under a hidden name.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests._hidden_code import rule_misses

pytestmark = pytest.mark.anyio

H = "x=$(printf '/bin/\\x72m'); cp -- \"$x\" q; "
ATTACKS = [H + f for f in [
    "cp q as; CFLAGS=-B. make", "cp q as; CPPFLAGS='-B .' make", "cp q as; CGO_CFLAGS=-B. go build",
    "cp q as; LDFLAGS=-B. make", "cp q a.jar; JAVA_TOOL_OPTIONS=-javaagent:a.jar java -version",
    "cp q a.jar; JDK_JAVA_OPTIONS='-javaagent:a.jar=x' java -version", "cp q a.so; _JAVA_OPTIONS=-agentpath:./a.so java -version",
    "cp q a.jar; java -javaagent:a.jar -version", "cp q a.so; java -agentpath:./a.so -version",
    "cp q p.so; CFLAGS=-fplugin=p.so make",
]]
KEPT = ["CFLAGS=-O2 make", "echo x > out.txt; CFLAGS=-O2 make", "JAVA_TOOL_OPTIONS=-Xmx1g java -version",
        "echo x > o.txt; JAVA_TOOL_OPTIONS=-Xmx1g java -version", "java -version", "echo x > o.txt; java -Xmx1g -version"]


async def test_an_option_naming_a_written_file_without_a_slash_is_asked(tmp_path: Path) -> None:
    assert await rule_misses(tmp_path, ATTACKS, KEPT) == ([], [])
