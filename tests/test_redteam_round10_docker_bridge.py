"""Red team round 10 (known gap of round 9), docker: ``network: bridge`` reached the docker host.

A bridge container reached every listener of the host: one bound on ``0.0.0.0`` through the
bridge's gateway and through the host's own address (here a TEST-NET one, i.e. not private: a
public address is no protection), one bound on the gateway address itself; on a Ray node that
is the cluster's GCS. Each container now carries an nftables table in its own network namespace
(`sandbox/docker/_bridge.py`): the host's addresses and every private, loopback and link-local
range are rejected, only DNS to docker's nameservers passes; another container cannot connect in.

Real containers and real HTTP servers on the host (FAIL, not skip, under CI=true).
"""

from __future__ import annotations

import ipaddress
import json
import os
import subprocess
from pathlib import Path

import anyio
import pytest

from sandbox import ExecRequest
from sandbox.docker import DockerBackend
from sandbox.docker._bridge import DENIED_RANGES, host_addresses, ruleset
from sandbox.errors import BackendUnavailableError
from tests._docker_support import BUSYBOX, config, policy, require_docker, run_sh
from tests._http_server import serve
from tests.conftest import require

pytestmark = [pytest.mark.anyio, pytest.mark.docker]


def _get(host: str, port: str) -> str:
    """A shell line that prints an HTTP GET's answer (busybox's nc: its wget crashes in this image)."""
    return f"printf 'GET / HTTP/1.0\\r\\n\\r\\n' | nc -w 3 {host} {port}"


_ROUTES = {"/": (200, {"Content-Type": "text/plain"}, b"host-service-secret")}


def _network(container_id: str | None) -> dict[str, str]:
    """The container's bridge settings (``IPAddress``, ``Gateway``)."""
    assert container_id is not None
    out = subprocess.run(
        ["docker", "inspect", container_id, "--format", "{{json .NetworkSettings.Networks.bridge}}"],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    return dict(json.loads(out.stdout))


def _outer_addresses() -> list[str]:
    """The host's IPv4 addresses outside loopback (the gateway's among them)."""
    return sorted(
        a
        for a in host_addresses()
        if ipaddress.ip_address(a).version == 4 and not ipaddress.ip_address(a).is_loopback
    )


async def test_a_bridge_command_reaches_no_service_of_the_host(tmp_path: Path) -> None:
    require_docker()
    require(os.geteuid() == 0, "the bridge firewall needs a root host")
    async with DockerBackend(config(BUSYBOX), policy(tmp_path, network="bridge")) as backend:
        code, out = await run_sh(backend, "ls /sys/class/net")
        assert "eth0" in out  # still a bridge container: it has its interface
        gateway = _network(backend.container_id)["Gateway"]
        with serve(_ROUTES, host="0.0.0.0") as anywhere, serve(_ROUTES, host=gateway) as on_gateway:
            targets = [f"{a}:{anywhere.server_port}" for a in _outer_addresses()]
            targets.append(f"{gateway}:{on_gateway.server_port}")
            assert len(targets) >= 3 and any(gateway in t for t in targets[:-1])
            for target in targets:
                code, out = await run_sh(backend, _get(*target.split(":")))
                assert "host-service-secret" not in out, (target, out)
        assert anywhere.hits["/"] == 0 and on_gateway.hits["/"] == 0


async def test_another_container_cannot_connect_into_a_bridge_session(tmp_path: Path) -> None:
    require_docker()
    require(os.geteuid() == 0, "the bridge firewall needs a root host")
    async with DockerBackend(config(BUSYBOX), policy(tmp_path, network="bridge")) as backend:
        address = _network(backend.container_id)["IPAddress"]
        server = await backend.exec(
            ExecRequest(
                argv=("sh", "-c", "echo up-and-serving > index.html && exec httpd -f -p 8080 -h /workspace"),
                cwd="/workspace",
                env={"PATH": "/bin"},
            )
        )
        for _ in range(50):  # its own loopback still works
            code, out = await run_sh(backend, _get("127.0.0.1", "8080"))
            if "up-and-serving" in out:
                break
            await anyio.sleep(0.1)
        assert "up-and-serving" in out
        name = f"rt10-bridge-peer-{os.getpid()}"
        try:
            peer = subprocess.run(
                ["docker", "run", "--rm", "--name", name, "--label", "shellrt-test=rt10-bridge", BUSYBOX,
                 "sh", "-c", _get(address, "8080")],
                capture_output=True,
                text=True,
                timeout=60,
            )  # fmt: skip
        finally:
            subprocess.run(["docker", "rm", "-f", name], capture_output=True, timeout=30)
            await server.kill()
        assert "up-and-serving" not in peer.stdout, peer.stdout


def test_the_ruleset_rejects_private_ranges_and_every_host_address_but_lets_dns_through() -> None:
    script = ruleset({"203.0.113.7", "2001:db8::5", "172.17.0.1"}, ["10.255.255.53"])
    assert "203.0.113.7" in script and "2001:db8::5" in script
    for net in ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "127.0.0.0/8", "169.254.0.0/16", "fc00::/7"):
        assert net in script
    assert "10.255.255.53 } meta l4proto { tcp, udp } th dport 53 accept" in script
    assert script.index("dport 53 accept") < script.index("reject")


async def test_a_non_root_host_is_refused_bridge_and_told_what_to_use(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A non-root host cannot enter the container's network namespace to firewall it: refused."""
    require_docker()
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    backend = DockerBackend(config(BUSYBOX), policy(tmp_path, network="bridge"))
    with pytest.raises(BackendUnavailableError, match="needs shellrt to run as root.*'proxied'"):
        await backend.start()
    await backend.close()


def test_public_destinations_stay_reachable_and_metadata_does_not() -> None:
    """The outside is what bridge is for: no denied range covers a public address; the cloud
    metadata services (link-local, ULA, CGNAT) and v4-mapped loopback are covered."""
    nets = [ipaddress.ip_network(n) for n in DENIED_RANGES]
    for public in ("8.8.8.8", "1.1.1.1", "151.101.1.69", "2606:4700:4700::1111"):
        assert not any(
            ipaddress.ip_address(public) in n
            for n in nets
            if n.version == ipaddress.ip_address(public).version
        )
    for private in ("169.254.169.254", "fd00:ec2::254", "100.100.100.200", "::ffff:127.0.0.1"):
        assert any(
            ipaddress.ip_address(private) in n
            for n in nets
            if n.version == ipaddress.ip_address(private).version
        )
