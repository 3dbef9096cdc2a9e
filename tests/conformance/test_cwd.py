"""Conformance: the working directory survives fresh shells, and falls back honestly."""

from __future__ import annotations

import pytest

from shellrt.supervisor import Supervisor

pytestmark = pytest.mark.anyio


async def test_cd_is_tracked_across_calls(sup: Supervisor) -> None:
    ws = sup.cwd
    first = await sup.run("mkdir -p a/b && cd a/b", timeout_s=10)
    assert first.cwd_changed and first.cwd == f"{ws}/a/b" and sup.cwd == f"{ws}/a/b"
    second = await sup.run("pwd", timeout_s=10)
    assert second.preview == f"{ws}/a/b\n" and not second.cwd_changed


async def test_exit_code_survives_the_cwd_trap(sup: Supervisor) -> None:
    result = await sup.run("mkdir -p d && cd d && exit 7", timeout_s=10)
    assert result.exit_code == 7 and result.cwd.endswith("/d")


async def test_cd_into_directory_that_is_then_deleted(sup: Supervisor) -> None:
    ws = sup.cwd
    await sup.run("mkdir -p gone && cd gone", timeout_s=10)
    assert sup.cwd == f"{ws}/gone"
    result = await sup.run('rmdir "$PWD"', timeout_s=10)
    assert result.exit_code == 0
    assert result.cwd == ws and result.cwd_note and "no longer exists" in result.cwd_note
    after = await sup.run("pwd", timeout_s=10)
    assert after.preview == f"{ws}\n"


async def test_deleted_between_calls(sup: Supervisor) -> None:
    ws = sup.cwd
    await sup.run("mkdir -p x && cd x", timeout_s=10)
    await sup.run("cd .. && rmdir x", timeout_s=10)  # leaves cwd at ws
    assert sup.cwd == ws
    await sup.run("mkdir -p y && cd y", timeout_s=10)
    other = await sup.run("true", timeout_s=10, track_cwd=False)
    assert other.cwd == f"{ws}/y"


async def test_cd_outside_allowed_roots_falls_back(sup: Supervisor) -> None:
    ws = sup.cwd
    result = await sup.run("cd / && pwd", timeout_s=10)
    assert result.preview == "/\n"
    assert result.cwd == ws and result.cwd_note and "outside the allowed roots" in result.cwd_note


async def test_untracked_cd_is_ignored(sup: Supervisor) -> None:
    ws = sup.cwd
    result = await sup.run("mkdir -p u && cd u", timeout_s=10, track_cwd=False)
    assert result.cwd == ws and not result.cwd_changed
