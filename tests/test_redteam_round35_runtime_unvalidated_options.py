"""Red team round 35 (runtime): a policy or sandbox config the Runtime takes is validated again.

``SandboxPolicy.model_construct(...)``, ``policy.model_copy(update=...)`` and the same on a
``BwrapConfig`` skip every validator, and the Runtime used what it was given. A network mode the
schema forbids (``"off"``) is not ``none`` or ``proxied`` to bwrap, so commands shared the host's
network: they reached a port on the host's loopback. A writable root through a symlink the
repository planted (refused since round 12) was taken too. The Runtime now validates both afresh.
"""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import anyio
import pytest

import shellrt
from sandbox import BwrapConfig, SandboxPolicy
from tests._bwrap_session import require_bwrap
from tests.test_server_jsonl import bash, text_of


def _started_or_refused(ws: Path, tmp: Path, command: str, **options: Any) -> str:
    """What ``command`` printed in a Runtime made with ``options``, or ``refused: <error>``."""

    async def scenario() -> str:
        try:
            async with shellrt.Runtime(ws, session_dir=tmp / "s", mode="bypassPermissions", **options) as rt:
                return text_of((await rt.run([bash("c1", command)]))["content"][0])
        except (ValueError, TypeError) as exc:
            return f"refused: {exc}"

    return anyio.run(scenario)


def test_unvalidated_policy_and_config_are_refused(tmp_path: Path) -> None:
    """Failed before: 3 of 3 started; with network 'off' a command reached a host loopback port."""
    require_bwrap()
    ws = tmp_path / "ws"
    ws.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (ws / "link").symlink_to(outside)
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    port = listener.getsockname()[1]
    try:
        policy = SandboxPolicy(workspace=ws)
        probe = f"(exec 3<>/dev/tcp/127.0.0.1/{port}) 2>/dev/null && echo REACHED || echo unreachable"
        net = _started_or_refused(
            ws, tmp_path / "a", probe, policy=policy.model_copy(update={"network": "off"}), sandbox="bwrap"
        )
        assert net.startswith("refused:") and "network" in net, net
        assert "model_validate" in net, net  # says how to build one
        linked = _started_or_refused(
            ws,
            tmp_path / "b",
            "true",
            policy=policy.model_copy(update={"writable_roots": (ws / "link",)}),
            sandbox="bwrap",
        )
        assert linked.startswith("refused:") and "link" in linked, linked
        config = BwrapConfig().model_copy(update={"default_memory_bytes": 4096})
        small = _started_or_refused(ws, tmp_path / "c", "true", sandbox=config)
        assert small.startswith("refused:") and "default_memory_bytes" in small, small
        # a validated policy and config still start
        ok = _started_or_refused(ws, tmp_path / "d", "echo fine", policy=policy, sandbox=BwrapConfig())
        assert "fine" in ok, ok
    finally:
        listener.close()


@pytest.mark.parametrize("bad", ["not a policy"])
def test_a_policy_of_another_type_is_refused(tmp_path: Path, bad: str) -> None:
    """Failed before: a string as policy raised AttributeError deep inside the start."""
    ws = tmp_path / "ws"
    ws.mkdir()
    text = _started_or_refused(ws, tmp_path, "true", policy=bad, sandbox="local")
    assert text.startswith("refused:") and "SandboxPolicy" in text, text
