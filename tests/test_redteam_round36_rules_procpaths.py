"""Red team round 36: deny rules that name a path through a process's own magic links.

``/dev/fd/N``, ``/dev/stdin``, ``/proc/self/cwd/...``, ``/proc/<pid>/...`` name something else in every
process. The policy compiler resolved them with ``os.path.realpath`` in the *shellrt host process*:
``Read(//dev/fd/3)`` became a mask of ``/proc/<shellrt pid>/fd/3`` (bwrap's session zygote then failed
to start: "Can't mkdir parents for /proc/<pid>/fd/anon_inode:[eventpoll]", so a repository's rule put
every session into the slower per-command mode), ``Read(//dev/stdin)`` masked ``/dev/null``, and
``Read(//proc/self/cwd/.env)`` masked ``.env`` in whatever directory shellrt was started from. Now a
rule through ``/proc/self/root`` (or ``thread-self``) is the path below it (what it denies in the
sandbox), and any other per-process name refuses an operator's rule (a repository's: a diagnostic).
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from sandbox import BwrapConfig, SandboxPolicy
from sandbox.factory import create_backend
from shellrt.permissions.rules import RuleOrigin, parse_rule
from shellrt.runtime.sandbox_policy import PolicyError, derive_policy
from tests._rt11_rules import deny_policy, run_in
from tests.conftest import require

PER_PROCESS = [
    "Read(//dev/fd/3)",
    "Read(//dev/stdin)",
    "Read(//proc/self/cwd/.env)",
    "Read(//proc/self/fd/0)",
    "Read(//proc/thread-self/cwd/x)",
    "Read(//proc/1/root/etc/x)",
    "Read(//proc/self/environ)",
]


@pytest.fixture
def ws() -> Iterator[Path]:
    base = Path(tempfile.mkdtemp(prefix="rt36-rules-", dir="/var/tmp"))
    base.chmod(0o755)
    ws = base / "ws"
    ws.mkdir()
    ws.chmod(0o777)
    (ws / "secret.txt").write_text("TOPSECRET\n")
    (ws / "secret.txt").chmod(0o666)
    try:
        yield ws
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _repository_policy(ws: Path, text: str) -> tuple[SandboxPolicy, list[str]]:
    rule = parse_rule(text, "deny", RuleOrigin("project", None, None, ws))
    return derive_policy(SandboxPolicy(workspace=ws), rules=[rule], mask_defaults=False)


@pytest.mark.parametrize("rule", PER_PROCESS)
def test_an_operator_rule_through_a_per_process_name_refuses(ws: Path, rule: str) -> None:
    with pytest.raises(PolicyError, match="differs in every process"):
        deny_policy(ws, rule)


@pytest.mark.parametrize("rule", PER_PROCESS)
def test_a_repository_rule_through_a_per_process_name_masks_nothing_of_the_host_process(
    ws: Path, rule: str
) -> None:
    policy, notes = _repository_policy(ws, rule)
    assert policy.read_denied == (), policy.read_denied
    assert any("differs in every process" in n for n in notes), notes


@pytest.mark.parametrize("prefix", ["/proc/self/root", "/proc/thread-self/root"])
def test_a_rule_through_the_own_root_is_the_path_below_it(ws: Path, prefix: str) -> None:
    policy = deny_policy(ws, f"Read(/{prefix}{ws}/secret.txt)")
    assert policy.read_denied == (ws / "secret.txt",)


def test_a_glob_under_proc_masks_no_host_process_entry(ws: Path) -> None:
    policy, notes = _repository_policy(ws, "Read(//proc/*/environ)")
    assert not any(str(p).startswith("/proc/") for p in policy.read_denied), policy.read_denied


@pytest.mark.parametrize("persistent", [False, True], ids=["per-command", "session"])
def test_a_repository_fd_rule_keeps_the_session_sandbox_and_the_own_root_rule_hides(
    ws: Path, persistent: bool, caplog: pytest.LogCaptureFixture
) -> None:
    require(shutil.which("bwrap") is not None, "bwrap is required")
    rules = [
        parse_rule("Read(//dev/fd/3)", "deny", RuleOrigin("project", None, None, ws)),
        parse_rule(f"Read(//proc/self/root{ws}/secret.txt)", "deny", RuleOrigin("cli", None, None, ws)),
    ]
    policy, _ = derive_policy(SandboxPolicy(workspace=ws), rules=rules, mask_defaults=False)
    session = ws.parent / "session"
    session.mkdir()
    with caplog.at_level(logging.WARNING, logger="sandbox"):
        out = anyio.run(
            run_in,
            create_backend(BwrapConfig(persistent=persistent), policy),
            ws,
            session,
            "cat secret.txt; echo rc=$?",
        )
    assert "TOPSECRET" not in out, out
    assert "one sandbox per command" not in caplog.text, caplog.text
    assert os.path.exists(ws / "secret.txt")
