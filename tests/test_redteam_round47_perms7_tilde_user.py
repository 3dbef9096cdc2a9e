"""Red team, round 47 (perms7): ``~user`` in a settings file's ``sandbox.maskedPaths``.

Rules refuse ``~user`` (``Read(~alice/.aws/**)``: "only ~/ (your own home) is supported", a
repository's such deny makes every call ask). The ``sandbox`` section read the same form as a
workspace path: the operator's ``"maskedPaths": ["~root/.aws"]`` masked ``<workspace>/~root/.aws``
and left ``/root/.aws`` readable, silently. Now ``~user`` means that user's home, as the shell
reads it; a user the password database does not know refuses the session (the operator's mask),
or is a diagnostic (a repository's).
"""

from __future__ import annotations

import os
import pwd
from pathlib import Path

import pytest

from sandbox import SandboxPolicy
from shellrt.permissions.settings import FileSettings
from shellrt.runtime.sandbox_policy import PolicyError, derive_policy

_UNKNOWN = "rt47-no-such-user"


def _policy(tmp_path: Path, source: str, masked: list[str]) -> tuple[set[Path], list[str]]:
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    where = ws / ".claude" / "settings.json" if source == "project" else tmp_path / "user.json"
    loaded = FileSettings(path=where, source=source, exists=True, sandbox={"maskedPaths": masked})
    policy, notes = derive_policy(SandboxPolicy(workspace=ws), settings_files=[loaded], mask_defaults=False, home=tmp_path)
    return set(map(Path, policy.read_denied)), notes


@pytest.mark.parametrize("source", ["user", "cli", "project"])
@pytest.mark.parametrize("form", ["~{u}/.rt47-token", "~{u}/.rt47-dir/../.rt47-key"])
def test_a_tilde_user_mask_masks_that_users_home(tmp_path: Path, source: str, form: str) -> None:
    name = pwd.getpwuid(0).pw_name
    home = Path(pwd.getpwuid(0).pw_dir)
    text = form.format(u=name)
    masked, notes = _policy(tmp_path, source, [text])
    want = Path(os.path.normpath(home / text.partition("/")[2]))
    assert want in masked, (masked, notes)
    assert not any("~" in str(p) for p in masked), masked  # no workspace path named "~root"


def test_the_operators_mask_for_an_unknown_user_refuses_the_session(tmp_path: Path) -> None:
    with pytest.raises(PolicyError, match=_UNKNOWN):
        _policy(tmp_path, "user", [f"~{_UNKNOWN}/.aws"])


def test_a_repositorys_mask_for_an_unknown_user_is_a_diagnostic(tmp_path: Path) -> None:
    masked, notes = _policy(tmp_path, "project", [f"~{_UNKNOWN}/.aws"])
    assert not any("~" in str(p) for p in masked), masked
    assert any(_UNKNOWN in n for n in notes), notes


def test_additional_directories_read_tilde_user_as_the_shell_does(tmp_path: Path) -> None:
    """``additionalDirectories: ["~root/x"]`` named ``<settings root>/~root/x``; an unknown user's
    entry was taken the same way, silently."""
    from shellrt.permissions.settings import load_settings_file

    name, home = pwd.getpwuid(0).pw_name, Path(pwd.getpwuid(0).pw_dir)
    file = tmp_path / "user.json"
    file.write_text(f'{{"permissions": {{"additionalDirectories": ["~{name}/rt47-x", "~{_UNKNOWN}/y"]}}}}')
    loaded = load_settings_file(file, "user", home=tmp_path)
    assert loaded.additional_directories == [home / "rt47-x"], loaded.additional_directories
    assert any(_UNKNOWN in d and "ignored" in d for d in loaded.diagnostics), loaded.diagnostics
