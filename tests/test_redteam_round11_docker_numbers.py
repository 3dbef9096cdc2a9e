"""Red team round 11, docker: numbers on the executor's channel were read with ``str.isdigit``/``int``.

The image's ``/bin/sh`` writes the control channel, so every number on it is the image's word.
``int()`` takes ``+0``, `` 1``, ``1_0`` and any script's digits (``"\\u0663"`` is 3), and
``isdigit()`` is true for ``"\\u00b2"``, which ``int()`` then refuses with a `ValueError` out of
``exec``. A command's pid of ``1`` was believed too: the kill path then stops and kills process
group ``-1``, every process in the container. Pids, exit codes and kill counts are now ASCII
digits in a bounded range; anything else ends the session (a lying executor is not believed
again) with an error that says what it sent.

Real containers of locally built images (FAIL, not skip, under CI=true).
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from sandbox import ExecRequest, SandboxExecError
from sandbox.docker import DockerBackend
from sandbox.docker._protocol import parse_number
from tests._docker_support import config, policy
from tests._rt11_hostile import build_hostile

pytestmark = [pytest.mark.anyio, pytest.mark.docker]

#: Forged numbers, each one word on the channel (none a plain ASCII number in range).
_FORGED = {
    "superscript": "\u00b2",
    "arabic-indic": "\u0661\u0662",
    "plus": "+12",
    "underscore": "1_2",
    "huge": "9" * 30,
}


def _rewrite(kind: str, value: str, tail: str = "") -> str:
    """A filter replacing the number after the id of every ``kind`` event with ``value`` (then
    ``tail``, sh words after it)."""
    return (
        f'case $l in "{kind} "*) set -- $l; printf "%s\\n" "{kind} $2 "\'{value}\'"{tail}" ;;\n'
        '*) printf "%s\\n" "$l" ;; esac'
    )


@pytest.mark.parametrize("case", [*sorted(_FORGED), "pid-one"])
async def test_a_forged_start_pid_is_refused_and_ends_the_session(tmp_path: Path, case: str) -> None:
    value = _FORGED.get(case, "1")
    image = build_hostile(f"shellrt-test-rt11-spid-{case}", filter=_rewrite("S", value))
    async with DockerBackend(config(image), policy(tmp_path)) as backend:
        with pytest.raises(SandboxExecError, match="not a pid"):
            await backend.exec(ExecRequest(argv=("sleep", "30"), cwd="/workspace"))
        assert backend._session is not None and not backend._session.alive


@pytest.mark.parametrize("case", [*sorted(_FORGED), "negative"])
async def test_a_forged_exit_code_is_not_believed(tmp_path: Path, case: str) -> None:
    value = _FORGED.get(case, "-1")
    image = build_hostile(f"shellrt-test-rt11-rc-{case}", filter=_rewrite("X", value, " $4"))
    async with DockerBackend(config(image), policy(tmp_path)) as backend:
        proc = await backend.exec(ExecRequest(argv=("true",), cwd="/workspace"))
        with anyio.fail_after(30):
            status = await proc.wait()
        assert status.exit_code == 255 and status.sandbox_failure, status
        assert "malformed exit event" in status.sandbox_failure
        assert backend._session is not None and not backend._session.alive


async def test_a_forged_kill_count_ends_the_session(tmp_path: Path) -> None:
    image = build_hostile("shellrt-test-rt11-kcount", filter=_rewrite("K", "\u0663"))
    async with DockerBackend(config(image), policy(tmp_path)) as backend:
        proc = await backend.exec(ExecRequest(argv=("sleep", "30"), cwd="/workspace"))
        with anyio.fail_after(30):
            await proc.kill()
            status = await proc.wait()
        assert status.exit_code == 137
        assert backend._session is not None and not backend._session.alive


def test_parse_number_takes_plain_ascii_digits_in_range_only() -> None:
    assert parse_number("0", 255) == 0 and parse_number("255", 255) == 255 and parse_number("007", 255) == 7
    for bad in ("", "256", "-1", "+1", " 1", "1 ", "1_0", "\u0663", "\u00b2", "1e3", "9" * 5000):
        assert parse_number(bad, 255) is None, bad
    assert parse_number("1", 10, low=2) is None
