"""Round 23 (perf): the environment a command starts with is encoded without `os.fsencode` per
entry, and must stay byte for byte what Popen gives it (`sandbox._spawn._env_list`)."""

from __future__ import annotations

import os

import pytest

from sandbox import _spawn
from tests.test_sandbox_spawn import _run


def _popen_env_list(env: dict[str, str]) -> list[bytes]:
    """Popen's own loop (`subprocess.Popen._execute_child`), the reference."""
    out = []
    for key, value in env.items():
        name = os.fsencode(key)
        if b"=" in name:
            raise ValueError("illegal environment variable name")
        out.append(name + b"=" + os.fsencode(value))
    return out


ODD = {
    "PLAIN": "1",
    "EMPTY": "",
    "": "an empty name",
    "VALUE_WITH_EQUALS": "a=b==c",
    "UNICODE_É": "naïve ☃ 𝄞",
    "UNDECODABLE": "\udcff\udc80 bytes that are not UTF-8",
    "NEWLINE": "line one\nline two",
}


def test_env_bytes_are_popens() -> None:
    assert _spawn._env_list(ODD) == _popen_env_list(ODD)
    assert _spawn._env_list({}) == []


@pytest.mark.parametrize("bad", [{"A=B": "x"}, {"OK": "1", "É=": "x"}])
def test_a_name_with_equals_is_refused_as_popen_refuses_it(bad: dict[str, str]) -> None:
    with pytest.raises(ValueError, match="illegal environment variable name"):
        _spawn._env_list(bad)
    with pytest.raises(ValueError):
        _popen_env_list(bad)


def test_an_unencodable_part_fails_as_popen_fails() -> None:
    bad = {"A": "\ud800 a lone surrogate surrogateescape cannot encode"}
    with pytest.raises(UnicodeEncodeError):
        _spawn._env_list(bad)
    with pytest.raises(UnicodeEncodeError):
        _popen_env_list(bad)


def test_a_non_str_entry_takes_popens_loop() -> None:
    env: dict[str, object] = {"A": "1", "B": b"raw\xffbytes"}
    assert _spawn._env_list(env) == [b"A=1", b"B=raw\xffbytes"]  # type: ignore[arg-type]


def test_the_child_sees_each_value() -> None:
    env = {k: v for k, v in ODD.items() if k}
    code, out, _ = _run(["bash", "-c", 'printf "%s|" "$VALUE_WITH_EQUALS" "$NEWLINE"; env | wc -l'], env=env)
    assert code == 0, out
    assert out.startswith(b"a=b==c|line one\nline two|"), out
    assert int(out.split(b"|")[-1]) >= len(env), out  # every entry arrived (bash adds PWD, SHLVL, _)
