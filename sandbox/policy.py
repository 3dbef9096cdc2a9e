"""What a sandboxed process may touch: files, network and resources.

A `SandboxPolicy` is backend-neutral; each backend enforces what it can and
reports (through `SandboxBackend.enforces`) what it cannot, so callers never
mistake the local backend for isolation.
"""

from __future__ import annotations

import ipaddress
import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from sandbox._root_links import link_refusal, repo_link_on_the_way

__all__ = [
    "NetworkMode",
    "ResourceLimits",
    "SandboxPolicy",
    "domain_matches",
    "normalize_deny_entry",
    "normalize_deny_list",
    "normalize_domain",
]

#: ``none``: no network at all; ``host``: the host's network (local/bwrap);
#: ``bridge``: a container bridge network (docker only); ``proxied``: no route out,
#: only shellrt's filtering proxy (names on ``allowed_domains``, see docs/network.md).
NetworkMode = Literal["none", "host", "bridge", "proxied"]

_LABEL = r"(?!-)[a-z0-9_-]{1,63}(?<!-)"
_DOMAIN = re.compile(rf"^(\*\.)?{_LABEL}(\.{_LABEL})*$")


def normalize_domain(text: str) -> str:
    """``Example.ORG.`` -> ``example.org``; ``*.x.org`` kept; an IP literal in canonical form.

    Raises ValueError for anything else (a URL, a port, a bare ``*``): an allow-list
    entry is a host name, so a typo must not silently widen or void it.
    """
    name = text.strip().lower().rstrip(".")
    if name.startswith("[") and name.endswith("]"):
        name = name[1:-1]
    try:
        return str(ipaddress.ip_address(name))
    except ValueError:
        pass
    if not _DOMAIN.match(name) or len(name) > 253:
        raise ValueError(
            f"not a domain name: {text!r} (use a host name such as pypi.org, or *.example.org for its subdomains)"
        )
    return name


def normalize_deny_entry(text: str) -> str:
    """A deny-list entry: what `normalize_domain` accepts, or a network (``10.0.0.0/8``), which
    denies every address in it whatever name leads there (`sandbox._addrdeny`, round 28)."""
    if "/" in text and "://" not in text:
        from sandbox._addrdeny import normalize_network

        return normalize_network(text.strip().lower())
    try:
        return normalize_domain(text)
    except ValueError:
        raise ValueError(
            f"not a name, address or range to deny: {text!r} (use a host name such as evil.example, "
            "*.evil.example for its subdomains, an address such as 10.9.8.7, or a range such as 10.0.0.0/8)"
        ) from None


def normalize_deny_list(values: Iterable[str]) -> tuple[str, ...]:
    """Every deny-list (the policy, ``--deny-domain``, settings, batch task files, Inspect's
    config) read by this one function: the same entries taken, the same error for a bad one
    (round 28, net2: a task file refused the ranges the policy took)."""
    return tuple(dict.fromkeys(normalize_deny_entry(v) for v in values))


def domain_matches(name: str, pattern: str) -> bool:
    """Whether host ``name`` (normalized) is ``pattern``, or a subdomain of it for ``*.``patterns."""
    if pattern.startswith("*."):
        return name.endswith(pattern[1:]) and len(name) > len(pattern) - 1
    return name == pattern


class ResourceLimits(BaseModel):
    """Per-sandbox resource ceilings; ``None`` means no limit."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    memory_bytes: int | None = Field(default=None, gt=0, description="Memory ceiling in bytes.")
    pids: int | None = Field(default=None, gt=0, description="Maximum number of processes/threads.")
    cpus: float | None = Field(default=None, gt=0, description="CPU share, in cores.")
    tmp_bytes: int | None = Field(
        default=None, gt=0, description="Size of the private /tmp, where a backend makes one."
    )


class SandboxPolicy(BaseModel):
    """Filesystem, network and resource rules for every process of a session.

    Paths are host paths. ``workspace`` is always writable; ``writable_roots``
    adds more. ``read_denied`` paths are hidden from the sandbox entirely.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    workspace: Path
    writable_roots: tuple[Path, ...] = ()
    read_denied: tuple[Path, ...] = ()
    #: Shown read-only to commands where a backend can (bwrap): inside a writable root not
    #: writable there, inside a read-denied directory shown again. Existing paths only.
    read_only: tuple[Path, ...] = ()
    #: Inside a writable root, never writable by a command (``Edit``/``Write`` deny rules): bound
    #: read-only onto itself by every backend that binds (bwrap, docker). Existing paths only.
    write_denied: tuple[Path, ...] = ()
    network: NetworkMode = "none"
    #: ``proxied`` only: host names the proxy lets through (``*.example.org``: its subdomains).
    allowed_domains: tuple[str, ...] = ()
    #: ``proxied`` only: names, addresses and networks (``10.0.0.0/8``) refused even when allowed
    #: (deny wins); an address or network is refused whatever name's DNS leads to it.
    denied_domains: tuple[str, ...] = ()
    limits: ResourceLimits = ResourceLimits()

    @field_validator("workspace")
    @classmethod
    def _real_workspace(cls, value: Path) -> Path:
        # A symlinked workspace is its target: a mount onto a symlink follows it in the sandbox
        # (bwrap as root refused to start with a misleading idmapped-mount message), and paths
        # judged by the file tools and the protected-files check are canonical ones.
        return Path(os.path.realpath(value))

    @model_validator(mode="after")
    def _real_writable_roots(self) -> SandboxPolicy:
        # Every source of an extra root (settings, --writable, the Python API, serve, MCP) comes
        # through here: a symlink inside the workspace on the way refuses (the repository chose
        # where it points; red team, round 12), any other root is kept as its real path so a
        # later swap of a component cannot move the bind.
        roots: list[Path] = []
        for root in self.writable_roots:
            found = repo_link_on_the_way(root, self.workspace)
            if found is not None:
                raise ValueError(link_refusal(root, *found))
            roots.append(Path(os.path.realpath(root)))
        object.__setattr__(self, "writable_roots", tuple(roots))
        return self

    @field_validator("allowed_domains")
    @classmethod
    def _domains(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(dict.fromkeys(normalize_domain(v) for v in value))

    @field_validator("denied_domains")
    @classmethod
    def _denied(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        return normalize_deny_list(value)

    def allowed_roots(self) -> tuple[Path, ...]:
        """Every root a command may write in (workspace first)."""
        return (self.workspace, *self.writable_roots)
