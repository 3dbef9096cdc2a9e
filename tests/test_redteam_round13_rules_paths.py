"""Red team round 13: deny rules spelled other ways, and denied paths reached other ways.

- ``Read($HOME/.ssh/id_ed25519)``: neither layer expands variables, so the rule named a directory
  literally called ``$HOME`` in the workspace and protected nothing, without a word. An operator's
  rule with a whole-segment shell variable (``$X``, ``${X}``, ``%X%``) now refuses the session.
  Failed before: the policy masked ``<ws>/$HOME/...``.
- Spellings through ``..``, ``.``, a trailing slash, ``//`` and ``~`` compile to the same mask as the
  plain path (checked; held before).
- A masked or write-denied path reached through ``/proc/self/root``, ``/proc/self/cwd``, ``/proc/1/root``,
  a directory fd opened before (``openat``) or another writable root bound after the workspace stays
  masked / read-only: every route is a lookup in the same mount tree (checked; held before).
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from sandbox import BwrapConfig, SandboxPolicy
from sandbox.factory import create_backend
from shellrt.runtime.sandbox_policy import PolicyError, derive_policy
from tests._rt11_rules import deny, deny_policy, run_in
from tests.conftest import require

MODES = [pytest.param(False, id="per-command"), pytest.param(True, id="session")]


@pytest.fixture
def ws() -> Iterator[Path]:
    base = Path(tempfile.mkdtemp(prefix="rt13-paths-", dir="/var/tmp"))
    base.chmod(0o755)
    ws = base / "ws"
    (ws / "d").mkdir(parents=True)
    (base / "extra").mkdir()
    for d in (ws, ws / "d", base / "extra"):
        d.chmod(0o777)
    for path, text in (
        (ws / "secret.txt", "TOPSECRET\n"),
        (ws / "d" / "k", "KEYDATA\n"),
        (base / "extra" / "x.key", "XKEY\n"),
    ):
        path.write_text(text)
        path.chmod(0o666)
    try:
        yield ws
    finally:
        shutil.rmtree(base, ignore_errors=True)


@pytest.mark.parametrize(
    "rule", ["Read($HOME/.ssh/id)", "Read(./${XDG_CONFIG_HOME}/app)", "Edit(%APPDATA%/x)", "Write(~/$X)"]
)
def test_a_shell_variable_in_an_operator_rule_refuses(ws: Path, rule: str) -> None:
    with pytest.raises(PolicyError, match="shell variable"):
        deny_policy(ws, rule)


def test_a_shell_variable_in_a_repository_rule_is_a_diagnostic(ws: Path) -> None:
    from shellrt.permissions.rules import RuleOrigin, parse_rule

    rule = parse_rule("Read($HOME/x)", "deny", RuleOrigin("project", None, None, ws))
    _, notes = derive_policy(SandboxPolicy(workspace=ws), rules=[rule], mask_defaults=False)
    assert any("shell variable" in n for n in notes), notes


@pytest.mark.parametrize(
    "rule",
    [
        "Read(./d/../secret.txt)",
        "Read(./secret.txt/)",
        "Read(.//secret.txt)",
        "Read(./d/./../secret.txt)",
        "Read(../ws/secret.txt)",
    ],
)
def test_spellings_of_one_path_mask_that_path(ws: Path, rule: str) -> None:
    assert deny_policy(ws, rule).read_denied == (ws / "secret.txt",)


def test_a_home_spelling_masks_the_same_path(ws: Path) -> None:
    rule = deny("Read(~/ws/d/k)", ws)
    policy, _ = derive_policy(SandboxPolicy(workspace=ws), rules=[rule], mask_defaults=False, home=ws.parent)
    assert policy.read_denied == (ws / "d" / "k",)


ROUTES = (
    "cat /proc/self/root{ws}/secret.txt; cat /proc/self/cwd/secret.txt; cat /proc/1/root{ws}/d/k; "
    "cat d/../secret.txt; cat {ws}//d//k; "
    'python3 -c \'import os; fd=os.open("{ws}/d", os.O_RDONLY); print(os.read(os.open("k", os.O_RDONLY, dir_fd=fd), 99))\'; '
    "cat {extra}/x.key; cat /proc/self/root{extra}/x.key; "
    "echo pwned > /proc/self/root{ws}/d/k; echo pwned > /proc/self/cwd/secret.txt; "
    'python3 -c \'import os; fd=os.open("{ws}", os.O_RDONLY); os.write(os.open("secret.txt", os.O_WRONLY|os.O_TRUNC, dir_fd=fd), b"pwned")\'; '
    "echo done"
)


@pytest.mark.parametrize("persistent", MODES)
def test_masked_paths_stay_masked_by_every_route(ws: Path, tmp_path: Path, persistent: bool) -> None:
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    extra = ws.parent / "extra"
    policy = deny_policy(
        ws,
        "Read(./d/k)",
        "Read(//" + str(extra).lstrip("/") + "/x.key)",
        "Edit(./secret.txt)",
        writable_roots=(extra,),
    )
    policy = policy.model_copy(update={"read_denied": (*policy.read_denied,)})
    backend = create_backend(BwrapConfig(persistent=persistent), policy)
    command = ROUTES.format(ws=backend.to_sandbox_path(ws), extra=backend.to_sandbox_path(extra))
    out = anyio.run(run_in, backend, ws, tmp_path / "s", command + " 2>&1")
    assert "KEYDATA" not in out and "XKEY" not in out, out
    assert (ws / "secret.txt").read_text() == "TOPSECRET\n" and (ws / "d" / "k").read_text() == "KEYDATA\n", (
        out
    )
    assert out.rstrip().endswith("done"), out
