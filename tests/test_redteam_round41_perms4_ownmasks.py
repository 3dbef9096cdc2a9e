"""Red team round 41 (perms4): a repository's deny rule that hides what the sandbox itself runs on.

An untrusted workspace keeps its deny rules (they only tighten), and every ``Read(...)`` deny becomes
a mask. A mask over the interpreter the bwrap zygote runs on (its directory, its standard library,
one module of it, or a workspace symlink leading there) stopped the zygote: every session of that
workspace silently ran one bwrap per command (the weaker mode: no per-command lock view, no
``proxied`` network). A mask over ``/proc`` or ``/dev`` stopped bwrap itself: the session did not
start ("bubblewrap cannot create namespaces here"), so a repository stopped the operator's session.
Round 36 closed one spelling (``/dev/fd/N``); the class is a mask over the sandbox's own needs.
A repository's such mask is now a diagnostic (the permission layer still denies the path to the file
tools); the operator's ``/proc`` or ``/dev`` mask is refused with what to do.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import sysconfig
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

import shellrt
from sandbox import SandboxPolicy
from shellrt.permissions.rules import RuleOrigin, parse_rule
from shellrt.runtime.sandbox_policy import PolicyError, derive_policy
from tests._calls import one_call
from tests.conftest import require

_STDLIB = Path(os.path.realpath(sysconfig.get_paths()["stdlib"]))
_EXE = Path(os.path.realpath(sys.executable))
_NEEDS = [_STDLIB, _EXE.parent, Path("/proc"), Path("/dev")]


def _mapped_library() -> Path:
    """A shared library the interpreter has mapped outside its own directories (libm: no shell needs it)."""
    with open("/proc/self/maps") as maps:
        names = {line.split()[-1] for line in maps if ".so" in line and line.split()[-1].startswith("/")}
    real = sorted({Path(os.path.realpath(n)) for n in names})
    outside = [p for p in real if _STDLIB not in p.parents and _EXE.parent not in p.parents]
    return next((p for p in outside if p.name.startswith("libm.")), outside[0] if outside else _EXE)


_LIB = _mapped_library()


@pytest.fixture
def ws() -> Iterator[Path]:
    top = Path(tempfile.mkdtemp(prefix="rt41-perms4-", dir="/var/tmp"))
    top.chmod(0o755)
    (top / "ws" / ".claude").mkdir(parents=True)
    (top / "ws").chmod(0o777)
    try:
        yield top / "ws"
    finally:
        shutil.rmtree(top, ignore_errors=True)


def _meets(mask: Path) -> bool:
    if mask == _LIB or mask in _LIB.parents:
        return True
    return any(mask == n or mask in n.parents or (n in mask.parents and n not in (Path("/proc"), Path("/dev"))) for n in _NEEDS)


_SPELLINGS = [
    f"Read(/{_STDLIB}/**)",
    f"Read(/{_STDLIB}/encodings/**)",
    f"Read(/{_STDLIB}/os.py)",
    f"Read(/{_EXE})",
    f"Read(/{_EXE.parent}/**)",
    "Read(//proc/**)",
    "Read(//dev/**)",
    "Read(./py/**)",  # ws/py -> the standard library
    f"Read(/{_LIB})",  # libm.so.6: the zygote's interpreter loads it, no shell does
]


@pytest.mark.parametrize("rule", _SPELLINGS)
def test_a_repository_rule_masks_nothing_the_sandbox_runs_on(ws: Path, rule: str) -> None:
    (ws / "py").symlink_to(_STDLIB)
    origin = RuleOrigin("project", ws / ".claude" / "settings.json", 1, ws)
    policy, notes = derive_policy(
        SandboxPolicy(workspace=ws), rules=[parse_rule(rule, "deny", origin)], mask_defaults=False
    )
    met = [p for p in policy.read_denied if _meets(Path(p))]
    assert not met, (rule, met)
    assert any("the sandbox itself" in n for n in notes), notes


def test_a_repository_masked_paths_setting_masks_nothing_the_sandbox_runs_on(ws: Path) -> None:
    from shellrt.permissions.settings import FileSettings

    loaded = FileSettings(path=ws / ".claude" / "settings.json", source="project", exists=True)
    loaded.sandbox = {"maskedPaths": [f"/{_STDLIB}/encodings", "//proc"]}
    policy, notes = derive_policy(SandboxPolicy(workspace=ws), settings_files=[loaded], mask_defaults=False)
    assert not [p for p in policy.read_denied if _meets(Path(p))], policy.read_denied
    assert any("the sandbox itself" in n for n in notes), notes


@pytest.mark.parametrize("target", ["/proc", "/dev", str(_STDLIB)])
def test_a_repository_link_leads_no_operator_rule_onto_what_the_sandbox_runs_on(ws: Path, target: str) -> None:
    (ws / "secrets").symlink_to(target)  # the repository's link: the operator's rule names its own place
    rule = parse_rule("Read(./secrets/**)", "deny", RuleOrigin("cli", None, None, ws))
    policy, notes = derive_policy(SandboxPolicy(workspace=ws), rules=[rule], mask_defaults=False)
    assert not [p for p in policy.read_denied if _meets(Path(p))], policy.read_denied
    assert any("the sandbox itself" in n for n in notes), notes


def test_the_operators_proc_mask_is_refused_with_what_to_do(ws: Path) -> None:
    rule = parse_rule("Read(//proc/**)", "deny", RuleOrigin("cli", None, None, ws))
    with pytest.raises(PolicyError, match="the sandbox itself"):
        derive_policy(SandboxPolicy(workspace=ws), rules=[rule], mask_defaults=False)


@pytest.mark.anyio
@pytest.mark.parametrize("rule", [f"Read(/{_STDLIB}/encodings/**)", "Read(//proc/**)", "Read(//dev/**)", f"Read(/{_LIB})"])
async def test_a_repository_rule_keeps_the_session_sandbox(ws: Path, rule: str) -> None:
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    (ws / ".claude" / "settings.json").write_text(json.dumps({"permissions": {"deny": [rule]}}))
    session = Path(tempfile.mkdtemp(prefix="rt41-perms4-s-", dir="/tmp"))  # uid 65534: hidden from commands
    try:
        async with shellrt.Runtime(
            workspace=ws, sandbox="bwrap", mode="bypassPermissions", session_dir=session, settings_files=()
        ) as rt:
            result = await one_call(rt, "Bash", command="id -u; echo ran")
            assert rt.backend is not None and getattr(rt.backend, "persistent", False), "one bwrap per command"
    finally:
        shutil.rmtree(session, ignore_errors=True)
    assert not result["is_error"] and "ran" in str(result["content"]), result
