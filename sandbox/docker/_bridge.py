"""Network ``bridge``: the outside, never the docker host nor anything private (a firewall per container).

Why: docker's bridge lets a container reach every listener of the docker host — through the
gateway (``172.17.0.1``) or any address the host holds, its public one included — and every
other container and private network the host routes to: a Ray head's GCS (no authentication),
a dashboard, a daemon's TCP API, a server the operator bound on ``0.0.0.0``. shellrt (root)
puts an nftables table in the container's own network namespace before any command runs:
output to loopback is allowed, DNS (port 53) to the nameservers docker gave the container,
everything else to a private, loopback, link-local, shared, reserved, multicast or broadcast
range or to any address of the host is rejected; input that is not an answer (another
container connecting in) is dropped. The rules live in the container's namespace and go with
it: the host's firewall is never changed. Commands hold no capability (no ``NET_ADMIN``), so
none can remove them.
"""

from __future__ import annotations

import ipaddress
import os
import subprocess
from collections.abc import Iterable
from pathlib import Path

from sandbox._hostpath import host_which

__all__ = ["DENIED_RANGES", "firewall_bridge", "host_addresses", "nameservers", "ruleset"]

IPNet = ipaddress.IPv4Network | ipaddress.IPv6Network

#: Never reachable from a bridge container: the host, private networks, other containers.
DENIED_RANGES: tuple[str, ...] = (
    "0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12",
    "192.0.0.0/24", "192.168.0.0/16", "198.18.0.0/15", "224.0.0.0/4", "240.0.0.0/4",
    "::/127", "::ffff:0:0/96", "64:ff9b:1::/48", "fc00::/7", "fe80::/10", "ff00::/8",
)  # fmt: skip

_TABLE = "shellrt_bridge"


def host_addresses(proc_roots: Iterable[str] = ("/proc/self", "/proc/1")) -> set[str]:
    """Every address the host holds (its own network namespace and init's, where they differ:
    shellrt in a container of its own talks to a daemon whose host is init's)."""
    found: set[str] = set()
    for root in proc_roots:
        try:
            trie = Path(root, "net", "fib_trie").read_text(encoding="ascii", errors="replace")
        except OSError:
            trie = ""
        last = ""
        for line in trie.splitlines():
            word = line.strip()
            if word.startswith("|-- "):
                last = word[4:]
            elif word.endswith("host LOCAL") and last:
                found.add(last)
        try:
            inet6 = Path(root, "net", "if_inet6").read_text(encoding="ascii", errors="replace")
        except OSError:
            inet6 = ""
        for line in inet6.splitlines():
            hexaddr = line.split(" ", 1)[0]
            if len(hexaddr) == 32:
                found.add(str(ipaddress.IPv6Address(bytes.fromhex(hexaddr))))
    return found


def nameservers(resolv_conf: str) -> list[str]:
    """The nameservers docker wrote for the container (its host-side file: no image can edit it)."""
    servers: list[str] = []
    try:
        text = Path(resolv_conf).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return servers
    for line in text.splitlines():
        words = line.split()
        if len(words) >= 2 and words[0] == "nameserver":
            try:
                servers.append(str(ipaddress.ip_address(words[1].split("%", 1)[0])))
            except ValueError:
                continue
    return servers


def _collapsed(addresses: Iterable[str], version: int) -> list[str]:
    nets: list[IPNet] = [ipaddress.ip_network(a) for a in addresses]
    same = [n for n in nets if n.version == version]
    return [str(n) for n in ipaddress.collapse_addresses(same)]  # type: ignore[type-var]


def ruleset(hosts: Iterable[str], dns: Iterable[str]) -> str:
    """The nft script: loopback allowed, DNS to ``dns``, every denied range and host address rejected."""
    hosts = list(hosts)
    deny = [*DENIED_RANGES, *hosts, "255.255.255.255/32"]
    deny4, deny6 = _collapsed(deny, 4), _collapsed(deny, 6)
    dns = list(dns)
    dns4 = [a for a in dns if ipaddress.ip_address(a).version == 4]
    dns6 = [a for a in dns if ipaddress.ip_address(a).version == 6]
    lines = [
        f"table inet {_TABLE} {{",
        "  chain out {",
        "    type filter hook output priority -200; policy accept;",
        '    oifname "lo" accept',
    ]
    if dns4:
        lines.append(f"    ip daddr {{ {', '.join(dns4)} }} meta l4proto {{ tcp, udp }} th dport 53 accept")
    if dns6:
        lines.append(f"    ip6 daddr {{ {', '.join(dns6)} }} meta l4proto {{ tcp, udp }} th dport 53 accept")
    lines += [
        f"    ip daddr {{ {', '.join(deny4)} }} reject with icmpx type admin-prohibited",
        f"    ip6 daddr {{ {', '.join(deny6)} }} reject with icmpx type admin-prohibited",
        "  }",
        "  chain in {",
        "    type filter hook input priority -200; policy drop;",
        '    iifname "lo" accept',
        "    ct state established,related accept",
        "    icmpv6 type { nd-neighbor-solicit, nd-neighbor-advert, nd-router-advert } accept",
        "  }",
        "}",
    ]
    return "\n".join(lines) + "\n"


def firewall_bridge(pid: int, container_id: str, resolv_conf: str, gateway: str | None) -> None:
    """Load `ruleset` into the network namespace of the container's init ``pid`` and read it back.

    Raises OSError (the container is then not used: the caller discards it) when ``nft`` or
    ``nsenter`` is missing, the pid left the container, or the rules did not load.
    """
    nft, nsenter = host_which("nft"), host_which("nsenter")  # never one a command wrote
    if nft is None or nsenter is None:
        raise OSError(
            "network 'bridge' on docker needs the host's nft and nsenter (packages nftables, util-linux) to "
            "keep the container away from the host and private networks; install them, or use network "
            "'proxied' (--allow-domain)"
        )
    hosts = host_addresses()
    if gateway:
        hosts.add(gateway)
    script = ruleset(hosts, nameservers(resolv_conf))
    fd = os.open(f"/proc/{pid}/ns/net", os.O_RDONLY | os.O_CLOEXEC)
    try:
        with open(f"/proc/{pid}/cgroup", encoding="utf-8", errors="replace") as fh:
            if container_id not in fh.read():
                raise OSError(f"pid {pid} is no longer in container {container_id[:12]}")
        enter = [nsenter, f"--net=/proc/self/fd/{fd}", "--", nft]
        env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL": "C"}
        load = subprocess.run(
            [*enter, "-f", "-"],
            input=script,
            pass_fds=(fd,),
            capture_output=True,
            text=True,
            timeout=30,
            env=env,
        )
        if load.returncode != 0:
            raise OSError(f"the bridge firewall did not load in the container: {load.stderr.strip()[:500]}")
        check = subprocess.run(
            [*enter, "list", "table", "inet", _TABLE],
            pass_fds=(fd,),
            capture_output=True,
            text=True,
            timeout=30,
            env=env,
        )
        if check.returncode != 0 or "reject" not in check.stdout:
            raise OSError(
                f"the bridge firewall is not in place in the container: {check.stderr.strip()[:500]}"
            )
    finally:
        os.close(fd)
