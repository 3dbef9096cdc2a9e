"""`ShellrtSandboxConfig`: what an Inspect task says about its shellrt sandbox.

Given to Inspect as ``sandbox=("shellrt", config)`` where ``config`` is None (the
defaults: bubblewrap, no network), a path to a JSON or YAML file holding these
fields, or the model itself. Pure pydantic: importable without inspect-ai.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    field_validator,
    model_validator,
)

from sandbox import BwrapConfig, DockerConfig, LocalConfig, SandboxConfig, SandboxPolicy
from sandbox._private_source import SourceChanged, first_private, opened_as
from sandbox.policy import NetworkMode, ResourceLimits, normalize_deny_list, normalize_domain

__all__ = [
    "ALLOWED_DOMAINS_ENV",
    "IMAGES_ENV",
    "TRUST_CONFIG_FILES_ENV",
    "ShellrtSandboxConfig",
    "config_from_data",
    "load_config",
]

#: ``1``: the operator trusts every shellrt config *file* the eval names, its samples' too (and
#: the config an eval log gives ``eval-retry``).
TRUST_CONFIG_FILES_ENV = "SHELLRT_INSPECT_TRUST_CONFIG_FILES"
#: Docker images a config file or eval log may name besides the default (comma-separated), round 16.
IMAGES_ENV = "SHELLRT_INSPECT_IMAGES"
#: Names a config file or eval log may list in ``allowed_domains`` (comma-separated; ``*.x.org``
#: covers its subdomains): a file only narrows what the operator allows, round 16.
ALLOWED_DOMAINS_ENV = "SHELLRT_INSPECT_ALLOWED_DOMAINS"


class ShellrtSandboxConfig(BaseModel):
    """One sandbox per sample, built from these settings (every sample gets a fresh one)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    sandbox: Literal["bwrap", "docker", "local"] = Field(
        default="bwrap",
        description=(
            "bwrap: bubblewrap namespaces on this machine (read-only root, writable workspace, private /tmp); "
            "docker: a hardened container from `image`; local: NO isolation (trusted code only)."
        ),
    )
    image: str = Field(default="debian:bookworm-slim", description="docker only: the image (never pulled).")
    network: NetworkMode = Field(
        default="none",
        description=(
            "none; host (local/bwrap); bridge (docker); proxied: only the names in allowed_domains, "
            "through shellrt's filtering proxy (docs/network.md)."
        ),
    )
    allowed_domains: tuple[str, ...] = Field(
        default=(), description="network 'proxied' only: host names reachable (*.example.org for subdomains)."
    )
    denied_domains: tuple[str, ...] = Field(
        default=(),
        description=(
            "network 'proxied' only: names, addresses and ranges (10.0.0.0/8) refused even when allowed; "
            "an address or range is refused whatever name leads to it."
        ),
    )
    limits: ResourceLimits = Field(
        default_factory=ResourceLimits,
        description="memory_bytes, pids, cpus, tmp_bytes (refused if unenforceable).",
    )
    workspace: Path | None = Field(
        default=None,
        description="A host directory copied into each sample's workspace (the host copy is never modified).",
    )
    env: dict[str, str] = Field(default_factory=dict, description="Added to every command's environment.")
    root_can_administer: bool | None = Field(
        default=None,
        description=(
            "docker only: let `user='root'` commands administer the image (adduser, package files), as "
            "root can in Inspect's own docker sandbox: a writable root layer and CAP_CHOWN, "
            "CAP_DAC_OVERRIDE, CAP_FOWNER for uid 0 only, the executor still out of reach "
            "(docs/security.md). None: on when shellrt runs as root (the opt-in needs a root host), "
            "else off."
        ),
    )

    #: The (device, inode) of ``workspace`` when the floor judged what it holds (a config file's,
    #: as root): the copy must open that directory, not what a swapped link names later (round 38).
    _source_identity: tuple[int, int] | None = PrivateAttr(default=None)

    @field_validator("allowed_domains")
    @classmethod
    def _domains(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(dict.fromkeys(normalize_domain(v) for v in value))

    @field_validator("denied_domains")
    @classmethod
    def _denied(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        return normalize_deny_list(value)  # the one reading of every deny-list (round 28, net2)

    @model_validator(mode="after")
    def _consistent(self) -> ShellrtSandboxConfig:
        if self.allowed_domains and self.network != "proxied":
            raise ValueError("allowed_domains needs network: proxied (the filtering proxy enforces them)")
        if self.denied_domains and self.network != "proxied":
            raise ValueError("denied_domains needs network: proxied (the filtering proxy enforces them)")
        if self.network == "bridge" and self.sandbox != "docker":
            raise ValueError("network: bridge exists only on the docker sandbox; use host or proxied")
        if self.root_can_administer and self.sandbox != "docker":
            raise ValueError(
                "root_can_administer exists only on the docker sandbox (bwrap has no root inside)"
            )
        if self.network == "host" and self.sandbox == "docker":
            raise ValueError("network: host is not offered on docker; use bridge or proxied")
        return self

    def backend_config(self) -> SandboxConfig:
        """The `sandbox` backend configuration these settings name."""
        if self.sandbox == "docker":
            administer = self.root_can_administer
            if administer is None:
                administer = os.geteuid() == 0
            return DockerConfig(image=self.image, root_can_administer=administer)
        if self.sandbox == "local":
            return LocalConfig()
        return BwrapConfig(persistent=True)

    def policy(self, workspace: Path) -> SandboxPolicy:
        """The policy of one sample's sandbox whose (host) workspace is ``workspace``.

        With the masks every shellrt sandbox gets (docs/security.md, "Masked paths"): the
        default credential stores (``~/.ssh``, ``~/.aws``, ...) and shellrt's own state
        directories. bwrap shows the host read-only: without them a sample read them.
        """
        from shellrt.runtime.sandbox_policy import derive_policy
        from shellrt.runtime.session_mask import state_dirs_anywhere

        base = SandboxPolicy(
            workspace=workspace,
            network=self.network,
            allowed_domains=self.allowed_domains,
            denied_domains=self.denied_domains,
            limits=self.limits,
        )
        policy, _ = derive_policy(base, masked_paths=state_dirs_anywhere())
        return policy


class _FromData(ShellrtSandboxConfig):
    """A config Inspect rebuilt from data, not code: an eval log's for ``eval-retry`` or a
    dataset sample's dict (``config_deserialize``). Floored like a file when a sample starts
    (never when read: a log of a trusted task must stay readable)."""


def config_from_data(config: dict[str, object]) -> ShellrtSandboxConfig:
    """``config_deserialize``: the model, marked as coming from data (`_FromData`)."""
    try:
        return _FromData.model_validate(config)
    except ValidationError as exc:
        raise ValueError(f"the eval log's shellrt sandbox config is invalid: {exc}") from exc


def load_config(config: object, base_dir: Path | None = None) -> ShellrtSandboxConfig:
    """``config`` as Inspect hands it (None, a file path, the model, a dict) made a `ShellrtSandboxConfig`.

    A relative file path is looked up in ``base_dir`` (the task's directory) first,
    then in the current directory. Raises ValueError saying what is wrong.
    """
    if config is None:
        return ShellrtSandboxConfig()
    if isinstance(config, _FromData):
        if os.environ.get(TRUST_CONFIG_FILES_ENV) != "1":
            return _file_floor(config, None)
        return config
    if isinstance(config, ShellrtSandboxConfig):
        return config
    if isinstance(config, BaseModel):
        raise ValueError(
            f"the shellrt sandbox takes a ShellrtSandboxConfig (shellrt.integrations.inspect), "
            f"not a {type(config).__name__}"
        )
    if isinstance(config, dict):
        return _validate(config, "the config")
    if isinstance(config, str | Path):
        path = _find(Path(config), base_dir)
        data = _parse(path)
        if isinstance(data, dict) and isinstance(data.get("workspace"), str):
            data["workspace"] = str(path.parent / data["workspace"])  # relative to the file (absolute stays)
        settings = _validate(data, str(path))
        if os.environ.get(TRUST_CONFIG_FILES_ENV) != "1":
            return _file_floor(settings, path)
        return settings
    raise ValueError(
        f"unusable shellrt sandbox config {config!r}: give None, a JSON/YAML file or a ShellrtSandboxConfig"
    )


def _file_floor(settings: ShellrtSandboxConfig, path: Path | None) -> ShellrtSandboxConfig:
    """``settings`` (its workspace pinned to the directory judged), or ValueError when a config
    *file* widens the sandbox. A dataset names its samples' config
    files (``"sandbox": ["shellrt", "cfg.yaml"]``, resolved beside the dataset), and Inspect
    prefers a sample's config to the task's of the same type: without this floor a downloaded
    dataset ran the model's commands on the host (``sandbox: local``), with the host's network
    (``network: host`` reaches its loopback services: a Ray head, a database), or copied in a
    root-only directory (red team round 15). Code gives a `ShellrtSandboxConfig` or a dict."""
    wide = []
    if settings.sandbox == "local":
        wide.append("sandbox: local (no isolation: commands would run on this host as you)")
    if settings.network in ("host", "bridge"):
        wide.append(f"network: {settings.network} (unfiltered network access)")
    if settings.image != _DEFAULT_IMAGE and settings.image not in _env_list(IMAGES_ENV):
        wide.append(
            f"image: {settings.image} (its files and its /bin/sh would run every sample; list it in "
            f"{IMAGES_ENV} to allow it)"
        )
    allowed = _env_list(ALLOWED_DOMAINS_ENV)
    extra = [d for d in settings.allowed_domains if not _covered(d, allowed)]
    if extra:
        wide.append(
            f"allowed_domains: {', '.join(extra)} (a file only narrows what you allow: list them in "
            f"{ALLOWED_DOMAINS_ENV})"
        )
    wide.extend(_limits_above_defaults(settings))
    pinned = settings
    if settings.workspace is not None and os.geteuid() == 0:
        pinned, private = _judged(settings, path)
        if private is not None:
            wide.append(
                f"workspace: {settings.workspace} (it holds {private!r}, which only its owner "
                "reads; this host copies it as root)"
            )
    if wide:
        origin = (
            f"{path}: a sandbox config file may come from a dataset (a sample's sandbox)"
            if path is not None
            else "the shellrt sandbox config Inspect read from data (an eval log for eval-retry, a dataset)"
        )
        raise ValueError(
            f"{origin}, so it may not set {'; '.join(wide)}. Give these settings in the task's code "
            '(sandbox=("shellrt", ShellrtSandboxConfig(...))), or set '
            f"{TRUST_CONFIG_FILES_ENV}=1 if you trust every config file this eval names"
        )
    return pinned


def _judged(settings: ShellrtSandboxConfig, path: Path | None) -> tuple[ShellrtSandboxConfig, str | None]:
    """The settings pinned to the workspace directory judged (its real path and `opened_as`
    identity, the same before and after), and what in it only its owner reads. The copy resolved
    the path again: a link swapped after the judgement handed the sample a root-only directory
    (red team round 38). ValueError when it changed while judged."""
    assert settings.workspace is not None
    real = os.path.realpath(settings.workspace)
    top = path.parent if path else None
    try:
        before = opened_as(real)
    except (OSError, SourceChanged) as exc:  # a file then a link to a directory went on unpinned (review2)
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise ValueError(
            f"the shellrt sandbox config's workspace {settings.workspace} cannot be opened as a directory "
            f"({why}); name a directory of this sample's files"
        ) from None
    private = first_private(real, reached_from=top)
    try:
        if opened_as(real) != before:
            raise SourceChanged(f"{real} changed while it was judged")
    except (OSError, SourceChanged) as exc:
        raise ValueError(
            f"the shellrt sandbox config's workspace {settings.workspace}: {exc}; make the dataset's "
            "directories writable by you alone"
        ) from None
    pinned = settings.model_copy(update={"workspace": Path(real)})
    pinned._source_identity = before
    return pinned, private


_DEFAULT_IMAGE = ShellrtSandboxConfig.model_fields["image"].default


def _limits_above_defaults(settings: ShellrtSandboxConfig) -> list[str]:
    """The ``limits`` a config file sets above what its backend gives a sandbox naming none. Those
    ceilings are what keeps a fork bomb or an allocation off the host: a dataset's file with
    ``pids: 4000000`` and ``memory_bytes: 1e15`` gave its samples exactly that (red team round 37).
    A file may lower them; ``cpus`` has no default ceiling, so any value only lowers it."""
    from sandbox._hostmem import default_memory_ceiling
    from sandbox.config import DEFAULT_BWRAP_PIDS, DEFAULT_BWRAP_TMP_BYTES

    ceilings: dict[str, int] = {"memory_bytes": default_memory_ceiling()}
    if settings.sandbox != "docker":
        ceilings.update(pids=DEFAULT_BWRAP_PIDS, tmp_bytes=DEFAULT_BWRAP_TMP_BYTES)
    else:
        try:
            from sandbox.docker._backend import _DEFAULT_PIDS, _DEFAULT_TMP_BYTES
        except ImportError:  # no docker SDK: no docker sandbox starts here either (it says why)
            pass
        else:
            ceilings.update(pids=_DEFAULT_PIDS, tmp_bytes=_DEFAULT_TMP_BYTES)
    asked = settings.limits.model_dump(exclude_none=True)
    return [
        f"limits.{key}: {asked[key]} (above the {settings.sandbox} sandbox's own ceiling of {most}, which "
        "keeps a sample off the host's processes and memory; a file may only lower it)"
        for key, most in ceilings.items()
        if key in asked and asked[key] > most
    ]


def _env_list(name: str) -> tuple[str, ...]:
    return tuple(v.strip() for v in os.environ.get(name, "").split(",") if v.strip())


def _covered(domain: str, allowed: tuple[str, ...]) -> bool:
    """``domain`` (normalised) is listed, or lies under a listed ``*.x`` (``*.a.x`` included)."""
    for entry in allowed:
        try:
            entry = normalize_domain(entry)
        except ValueError:
            continue
        if domain == entry:
            return True
        if entry.startswith("*.") and domain.removeprefix("*.").endswith(entry[1:]):
            return True
    return False


def _find(path: Path, base_dir: Path | None) -> Path:
    candidates = [path] if path.is_absolute() else [*([base_dir / path] if base_dir else []), path]
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    raise ValueError(
        f"shellrt sandbox config file {path} not found (looked at {', '.join(map(str, candidates))})"
    )


#: A sandbox config names a handful of fields; a larger file is refused, not read into memory.
_MAX_CONFIG_BYTES = 1 << 20
#: Brackets a config may nest (its deepest value is a list in a mapping in the top mapping).
_MAX_BRACKET_DEPTH = 32


def _bracket_depth(text: str) -> int:
    """The deepest nesting of ``[``/``{`` in ``text``, quotes ignored (over-counts, never under)."""
    depth = deepest = 0
    for char in text:
        if char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}" and depth:
            depth -= 1
    return deepest


def _parse(path: Path) -> Any:
    """The file's data. A dataset's config file is not the operator's (round 15), so its shape is
    bounded before anything walks it: at most 1 MiB, no YAML anchors/aliases (a dozen nested
    aliases expand to billions of nodes, which validation and its error messages then walk:
    round 16), no nesting past the interpreter's recursion limit."""
    with open(path, "rb") as fh:
        raw = fh.read(_MAX_CONFIG_BYTES + 1)
    if len(raw) > _MAX_CONFIG_BYTES:
        raise ValueError(f"{path}: larger than {_MAX_CONFIG_BYTES} bytes; a shellrt sandbox config is a few lines")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path}: not UTF-8 text ({exc})") from exc
    if _bracket_depth(text) > _MAX_BRACKET_DEPTH:  # PyYAML's scanner is quadratic in flow nesting
        raise ValueError(
            f"{path}: nested too deeply (more than {_MAX_BRACKET_DEPTH} levels of brackets); "
            "a shellrt sandbox config is a flat mapping"
        )
    if path.suffix.lower() == ".json":
        try:
            return json.loads(text)
        except (json.JSONDecodeError, RecursionError) as exc:
            raise ValueError(f"{path}: not valid JSON, or nested too deeply ({exc})") from exc
    if path.suffix.lower() in (".yaml", ".yml"):
        import yaml

        try:
            if any(isinstance(event, yaml.AliasEvent) for event in yaml.parse(text, Loader=yaml.SafeLoader)):
                raise ValueError(
                    f"{path}: YAML aliases (*name) are not accepted in a shellrt sandbox config; "
                    "write each value out"
                )
            return yaml.safe_load(text)
        except (yaml.YAMLError, RecursionError) as exc:
            raise ValueError(f"{path}: not valid YAML, or nested too deeply ({exc})") from exc
    raise ValueError(f"{path}: a shellrt sandbox config is a .json, .yaml or .yml file")


def _validate(data: Any, origin: str) -> ShellrtSandboxConfig:
    if not isinstance(data, dict):
        raise ValueError(
            f"{origin}: expected a mapping of ShellrtSandboxConfig fields, got {type(data).__name__}"
        )
    try:
        return ShellrtSandboxConfig.model_validate(data)
    except ValidationError as exc:
        raise ValueError(f"{origin}: invalid shellrt sandbox config: {exc}") from exc
