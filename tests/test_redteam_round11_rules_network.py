"""Red team round 11 (rules in the sandbox): network deny rules the sandbox's network cannot enforce.

Denied domains (``WebFetch(domain:…)`` deny rules, ``sandbox.network.deniedDomains``,
``--deny-domain``) are enforced by shellrt's proxy, which only exists with network ``proxied``
(and ``none`` reaches nothing at all). With network ``host`` or ``bridge`` a command reaches every
name directly: the deny was kept in the policy and silently not enforced -- ``curl`` fetched the
denied host. The session now refuses to start with what to do (network ``none``/``proxied``, or
drop the rule); an allow-list under ``host``/``bridge`` (which cannot confine to it) likewise.
Failed before: ``shellrt run --network host --deny-domain …`` ran the command; derivation raised
nothing.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from sandbox import SandboxPolicy
from shellrt.permissions.rules import RuleOrigin, parse_rule
from shellrt.permissions.settings import FileSettings
from shellrt.runtime.sandbox_policy import PolicyError, derive_policy

ROOT = Path(__file__).resolve().parents[1]


def rule(text: str, kind: str, root: Path) -> Any:
    return parse_rule(text, kind, RuleOrigin("user", None, None, root))  # type: ignore[arg-type]


@pytest.mark.parametrize("network", ["host", "bridge"])
def test_a_domain_deny_rule_with_an_unfiltered_network_refuses(tmp_path: Path, network: str) -> None:
    base = SandboxPolicy(workspace=tmp_path, network=network)  # type: ignore[arg-type]
    with pytest.raises(PolicyError) as caught:
        derive_policy(
            base, rules=[rule("WebFetch(domain:evil.example)", "deny", tmp_path)], mask_defaults=False
        )
    message = str(caught.value)
    assert "evil.example" in message and network in message and "proxied" in message, message


@pytest.mark.parametrize("network", ["host", "bridge"])
def test_settings_denied_domains_and_allow_lists_refuse_too(tmp_path: Path, network: str) -> None:
    loaded = FileSettings(
        path=tmp_path / "s.json", source="user", sandbox={"network": {"deniedDomains": ["evil.example"]}}
    )
    base = SandboxPolicy(workspace=tmp_path, network=network)  # type: ignore[arg-type]
    with pytest.raises(PolicyError):
        derive_policy(base.model_copy(update={"denied_domains": ("evil.example",)}), mask_defaults=False)
    with pytest.raises(PolicyError):
        derive_policy(
            base, rules=[rule("WebFetch(domain:ok.example)", "allow", tmp_path)], mask_defaults=False
        )
    with pytest.raises(PolicyError):
        derive_policy(base, settings_files=[loaded], mask_defaults=False)


@pytest.mark.parametrize("network", ["none", "proxied"])
def test_enforceable_networks_keep_the_rules(tmp_path: Path, network: str) -> None:
    base = SandboxPolicy(workspace=tmp_path, network=network)  # type: ignore[arg-type]
    policy, _ = derive_policy(
        base, rules=[rule("WebFetch(domain:evil.example)", "deny", tmp_path)], mask_defaults=False
    )
    assert policy.denied_domains == ("evil.example",)


def test_the_cli_refuses_a_deny_domain_on_the_host_network(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-m", "shellrt", "run", "--sandbox", "bwrap", "--workspace", str(tmp_path),
         "--network", "host", "--deny-domain", "evil.example", "--", "sh", "-c", "echo ran"],
        capture_output=True, text=True, timeout=120, env=env,
    )  # fmt: skip
    assert done.returncode != 0 and "ran" not in done.stdout, (done.stdout, done.stderr)
    assert "evil.example" in done.stderr and "proxied" in done.stderr, done.stderr


def test_a_repositorys_own_domain_denies_cannot_stop_the_session(tmp_path: Path) -> None:
    """Files the workspace can write may not refuse the operator's session (round 7's reasoning):
    their denies on an unfiltered network are a diagnostic, not enforced by the sandbox."""
    project = parse_rule(
        "WebFetch(domain:evil.example)",
        "deny",
        RuleOrigin("project", tmp_path / ".claude" / "settings.json", 1, tmp_path),
    )
    base = SandboxPolicy(workspace=tmp_path, network="host")
    policy, notes = derive_policy(base, rules=[project], mask_defaults=False)
    assert policy.denied_domains == () and any("cannot be enforced" in n for n in notes), notes
    again, _ = derive_policy(policy, rules=[project], mask_defaults=False)  # idempotent
    assert again.network == "host"
