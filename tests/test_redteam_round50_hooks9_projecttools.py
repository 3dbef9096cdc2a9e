"""Red team round 50 (hooks9): tools whose project files run host code, below the root too.

A hook running ``terraform apply``/``plan``, ``nix-shell``, ``docker compose``, ``vagrant``,
``pulumi``… recorded the root's own files only (its words were read as paths at the root, so
``./`` was watched): a module, an imported Nix file or an included compose file below the root
went unrecorded. Premise checked by hand with the installed Terraform 1.11 (round 50's notes in
docs/security.md): ``terraform init && terraform apply -auto-approve`` at the root ran the
``local-exec`` of ``modules/m/main.tf`` on the host (the built-in ``terraform_data`` resource, no
download). Here the record alone is asked (no tool is started: cheap). All failed before.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from shellrt.permissions.hook_files import compare_hook_files, hook_files


@pytest.mark.parametrize(
    ("hook", "below"),
    [
        ("terraform apply -auto-approve", "modules/m/main.tf"),
        ("tofu plan", "modules/m/main.tf"),
        ("nix-shell --run 'make lint'", "nix/shell.nix"),
        ("nix develop -c true", "nix/flake-part.nix"),
        ("docker compose up -d", "services/compose.yml"),
        ("vagrant up", "provision/setup.rb"),
    ],
)
def test_a_project_file_below_the_root_is_recorded(tmp_path: Path, hook: str, below: str) -> None:
    ws = tmp_path / "ws"
    (ws / ".claude" / "hooks").mkdir(parents=True)
    (ws / below).parent.mkdir(parents=True)
    (ws / below).write_text("# trusted\n")
    before = hook_files(ws, [hook])
    (ws / below).write_text('provisioner "local-exec" { command = "touch /tmp/x" }\n')
    assert compare_hook_files(before, hook_files(ws, [hook])) is not None, f"{below} unrecorded: {hook}"


def test_docker_without_a_loading_subcommand_stays_narrow(tmp_path: Path) -> None:
    """Control: ``docker ps`` reads no project file; nothing below the root is recorded."""
    ws = tmp_path / "ws"
    (ws / "services").mkdir(parents=True)
    record = hook_files(ws, ["docker ps"])
    assert "." not in record.files, record
