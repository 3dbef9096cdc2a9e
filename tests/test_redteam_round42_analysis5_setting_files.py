"""Red team, round 42 (analysis5): a setting names a program or a configuration file the same command wrote.

Round 30-37 read variables that name a command line (``GIT_PAGER``) or a search path (``…PATH``,
``…RC``, ``…CONFIG``) beside a write of what they name. Three spellings passed ``Bash(rm:*)`` in
``bypassPermissions``: a program's options in a variable (``GOFLAGS=-toolexec=./q``, ``RUSTFLAGS='-C
linker=./q'``, ``CFLAGS=-B./b/`` with ``b/as`` written, ``MAKEFLAGS='SHELL=./q'``), a configuration file
named ``…FILE``/``…FILENAME`` or less's ``LESSKEYIN`` (whose ``#env`` section sets ``LESSOPEN``), and
npm's lower-case ``npm_config_userconfig`` (npm reads its settings in any case; the file sets
``script-shell``). ``q`` holds ``/bin/rm`` under a hidden name.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests._hidden_code import rule_misses

pytestmark = pytest.mark.anyio

H = "x=$(printf '/bin/\\x72m'); cp -- \"$x\" q; "
ATTACKS = [H + f for f in [
    "GOFLAGS=-toolexec=./q go build", "export GOFLAGS=-toolexec=./q; go test ./...",
    "RUSTFLAGS='-C linker=./q' cargo build", "CARGO_ENCODED_RUSTFLAGS='-Clinker=./q' cargo build",
    "mkdir b; cp q b/as; CFLAGS=-B./b/ make", "MAKEFLAGS='SHELL=./q' make",
    "printf 'script-shell=./q\\n' > n; npm_config_userconfig=n npm test",
    "printf 'script-shell=./q\\n' > n; export npm_config_globalconfig=n; npm test",
    "printf 'x' > y.yml; YARN_RC_FILENAME=y.yml yarn test",
    "printf '#env\\nLESSOPEN=|./q %s\\n' > k; LESSKEYIN=k less f",
    "printf '#env\\nLESSOPEN=|./q %s\\n' > k; export LESSKEYIN=k; git log",
    "printf 'x' > c; PIP_CONFIG_FILE=c pip install x",
]]
KEPT = ["CFLAGS=-O2 make", "RUSTFLAGS='-C target-cpu=native' cargo build", "GOFLAGS=-mod=vendor go build",
        "echo x > out.txt; CFLAGS=-O2 make", "npm_config_loglevel=warn npm test"]


async def test_a_setting_naming_a_written_program_or_file_is_asked(tmp_path: Path) -> None:
    assert await rule_misses(tmp_path, ATTACKS, KEPT) == ([], [])
