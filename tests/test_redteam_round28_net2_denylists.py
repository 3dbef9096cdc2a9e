"""Red team round 28 (net2): one validator for every deny-list, so a range is taken everywhere.

The filesnet helper left it open: rules, ``--deny-domain`` and `SandboxPolicy` took a range
(``10.0.0.0/8``) in ``denied_domains`` while a batch task file refused it ("not a domain name") and
the Inspect integration had no deny-list at all (an operator could not deny a network or an
address to a sample). Each route now reads its deny-list with `sandbox.policy.normalize_deny_list`:
the same entries accepted, the same error for a bad one.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from sandbox.policy import SandboxPolicy
from shellrt.batch.tasks import TaskSandbox
from shellrt.integrations._inspect_config import ShellrtSandboxConfig


def test_every_deny_list_takes_ranges_and_says_the_same_about_a_bad_entry(tmp_path: Path) -> None:
    routes: dict[str, Callable[[list[str]], tuple[str, ...]]] = {
        "policy": lambda d: (
            SandboxPolicy(workspace=tmp_path, network="proxied", denied_domains=tuple(d)).denied_domains
        ),
        "task file": lambda d: (
            TaskSandbox.model_validate(
                {"type": "bwrap", "network": "proxied", "denied_domains": d}
            ).denied_domains
        ),
        "inspect": lambda d: ShellrtSandboxConfig(network="proxied", denied_domains=tuple(d)).denied_domains,
    }
    good = ["10.0.0.0/8", "FD00::/8", "Evil.Example.", "*.evil.example", "127.0.0.1", "[::1]", "10.0.0.0/8"]
    expected = ("10.0.0.0/8", "fd00::/8", "evil.example", "*.evil.example", "127.0.0.1", "::1")
    refused: dict[str, list[str]] = {}
    for route, read in routes.items():
        try:
            got = read(good)
        except ValueError as exc:
            refused.setdefault(route, []).append(str(exc).splitlines()[0])
            continue
        assert got == expected, (route, got)
    assert refused == {}, refused
    for bad, says in [
        ("10.1.2.3/8", "did you mean 10.0.0.0/8"),
        ("http://evil.example/", "a range such as 10.0.0.0/8"),
        ("evil.example:443", "a range such as 10.0.0.0/8"),
    ]:
        texts = set()
        for route, read in routes.items():
            with pytest.raises(ValueError) as info:
                read([bad])
            message = next(
                line.strip() for line in str(info.value).splitlines() if bad in line or says in line
            )
            assert says in message, (route, message)
            texts.add(message.removeprefix("Value error, ").partition(" [type=")[0])
        assert len(texts) == 1, texts  # the same words whichever route read it
    # Inspect's deny reaches the sample's policy; like allowed_domains it needs the proxy to hold.
    config = ShellrtSandboxConfig(network="proxied", denied_domains=("10.0.0.0/8",))
    assert "10.0.0.0/8" in config.policy(tmp_path).denied_domains
    with pytest.raises(ValueError, match="denied_domains needs network: proxied"):
        ShellrtSandboxConfig(network="host", denied_domains=("10.0.0.0/8",))
