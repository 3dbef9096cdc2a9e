"""Red team round 11 (rules in the sandbox): a mask under a directory bound later showed again.

bwrap applies its mounts in argument order, a later one covering what lies below it. The
read-only binds (a home's protected names in the workspace, and now the ``Edit``/``Write``
denied paths) came after the masks: ``Read(./conf/secret.key)`` with ``conf`` bound read-only
(``Edit(./conf/**)``, or a home's protected tree) hid nothing -- the bind of ``conf`` showed the
key again. Masks and binds are now layered shallowest first, a mask after a bind of the same place
(`sandbox._readonly.layered_args`; docker sorts its mounts the same way). Failed before: the command
printed the key. An Edit deny that holds a writable root (``--writable``) refuses the session: the
root cannot be both.
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
from shellrt.runtime.sandbox_policy import PolicyError
from tests import _docker_support as dk
from tests._rt11_rules import deny_policy, run_in
from tests.conftest import require

MODES = [pytest.param(False, id="per-command"), pytest.param(True, id="session")]


@pytest.fixture
def ws() -> Iterator[Path]:
    base = Path(tempfile.mkdtemp(prefix="rt11-order-", dir="/var/tmp"))
    base.chmod(0o755)
    ws = base / "ws"
    for d in ("conf/keys", "out/private", "home/.config/git"):
        (ws / d).mkdir(parents=True)
    (ws / "conf" / "app.ini").write_text("[app]\n")
    (ws / "conf" / "secret.key").write_text("rt11-conf-secret\n")
    (ws / "conf" / "keys" / "id").write_text("rt11-keys-secret\n")
    (ws / "out" / "private" / "token").write_text("rt11-out-secret\n")
    (ws / "home" / ".config" / "git" / "credentials").write_text("rt11-home-secret\n")
    for p in [ws, *ws.rglob("*")]:
        p.chmod(0o777 if p.is_dir() else 0o666)
    try:
        yield ws
    finally:
        shutil.rmtree(base, ignore_errors=True)


ATTACK = (
    "cat conf/secret.key conf/keys/id out/private/token home/.config/git/credentials 2>&1; "
    "echo pwned >> conf/app.ini 2>&1; echo ok > out/free.txt; echo done"
)


def _check(ws: Path, out: str) -> None:
    assert "secret" not in out.replace("secret.key", ""), out
    assert (ws / "conf" / "app.ini").read_text() == "[app]\n", out
    assert (ws / "out" / "free.txt").read_text() == "ok\n", out  # the extra writable root stays writable
    assert out.rstrip().endswith("done"), out


def _rules_policy(ws: Path) -> SandboxPolicy:
    policy = deny_policy(
        ws,
        "Edit(./conf/**)",
        "Read(./conf/secret.key)",
        "Read(./conf/keys/**)",
        "Read(./out/private/**)",
        "Read(./home/.config/git/credentials)",
        writable_roots=(ws / "out",),
    )
    # A home's protected tree bound read-only (as `read_only_for_commands` does) over a mask in it.
    return policy.model_copy(update={"read_only": (ws / "home" / ".config",)})


@pytest.mark.parametrize("persistent", MODES)
def test_masks_stay_below_every_bind_that_covers_them_bwrap(
    ws: Path, tmp_path: Path, persistent: bool
) -> None:
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    backend = create_backend(BwrapConfig(persistent=persistent), _rules_policy(ws))
    _check(ws, anyio.run(run_in, backend, ws, tmp_path / "s", ATTACK))


def test_masks_stay_below_every_bind_that_covers_them_docker(ws: Path, tmp_path: Path) -> None:
    dk.require_docker()
    policy = _rules_policy(ws).model_copy(update={"writable_roots": ()})
    backend = create_backend(dk.config(workspace_mode="bind"), policy)
    _check(ws, anyio.run(run_in, backend, ws, tmp_path / "s", ATTACK, 120))


def test_an_edit_deny_holding_a_writable_root_refuses(ws: Path) -> None:
    with pytest.raises(PolicyError) as caught:
        deny_policy(ws, "Edit(./out/**)", writable_roots=(ws / "out" / "private",))
    assert "writable root" in str(caught.value) and str(ws / "out") in str(caught.value)
    with pytest.raises(PolicyError):
        deny_policy(ws, "Write(./**)")  # the workspace itself


def test_it_holds_for_an_unprivileged_caller() -> None:
    """The same attacks with shellrt run as uid 65534 (bwrap without the root caller's idmapped roots)."""
    import os

    from tests import _nonroot

    require(
        os.geteuid() == 0, "preparing a run as uid 65534 needs root (as non-root, run these files directly)"
    )
    require(shutil.which("setpriv") is not None and shutil.which("bwrap") is not None, "setpriv and bwrap")
    names = [
        "tests/test_redteam_round11_rules_order.py::test_masks_stay_below_every_bind_that_covers_them_bwrap",
        "tests/test_redteam_round11_rules_edit.py::test_bash_cannot_write_an_edit_denied_path_bwrap",
        "tests/test_redteam_round11_rules_edit.py::test_another_name_of_a_denied_file_is_bound_too_bwrap",
    ]
    here = Path(__file__).parent
    collected, outcome = _nonroot.run_as_nobody(names, collect_args=[str(here.parent / n) for n in names])
    summary = outcome.output[-4000:]
    assert outcome.returncode == 0 and outcome.tests == collected.items and not outcome.skipped, summary
