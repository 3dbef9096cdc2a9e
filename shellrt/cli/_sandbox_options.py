"""Sandbox selection options shared by ``shellrt run``, ``shellrt serve`` and ``shellrt batch``.

`add_sandbox_options` adds the flags; `sandbox_from_args` turns them into a
backend config (or ``"auto"``: bwrap where it works, else local with a warning)
and a `SandboxPolicy`. Starting the backend is ``shellrt.runtime.resolve_sandbox``.
"""

from __future__ import annotations

import argparse
import math
import os
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:  # imported where used: ``--help`` and argument parsing need no pydantic models
    from sandbox import SandboxBackend, SandboxConfig, SandboxPolicy

__all__ = [
    "SANDBOX_CHOICES",
    "add_sandbox_options",
    "checked_writable_root",
    "mask_defaults_from_args",
    "non_negative_int",
    "non_negative_number",
    "parse_size",
    "positive_int",
    "positive_number",
    "print_network_refusals",
    "run_roots",
    "sandbox_from_args",
    "workspace_from_args",
]

SANDBOX_CHOICES = ("auto", "local", "none", "bwrap", "docker")
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)i?b?\s*$", re.IGNORECASE)
_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def parse_size(text: str) -> int:
    """``2g`` -> 2147483648; accepts k/m/g/t (binary units), optional ``b``/``ib``."""
    match = _SIZE.match(text)
    if not match:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (use e.g. 512m, 2g)")
    return int(float(match.group(1)) * _UNITS[match.group(2).lower()])


# --- numbers --------------------------------------------------------------------------
# Why (red team round 26): ``type=float`` read ``nan``, ``inf``, ``1e309`` and negatives, and
# ``type=int`` negatives. ``shellrt run --timeout nan`` died in a traceback, ``--timeout -1`` started
# the command and reported it "timed out after -1s", ``--pids -5`` and ``--cpus nan`` printed
# pydantic's dump in a traceback, ``shellrt sessions rm --older-than -5`` removed every session and
# ``--older-than nan`` none. A bad number is argparse's usage error (exit 2) saying what to give.
# Here, not in a module of their own: ``shellrt run`` imports this one anyway (its import budget).


def _number(text: str, what: str, *, zero: bool) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0 or (value == 0 and not zero):
        bound = "0 or more" if zero else "above 0"
        raise argparse.ArgumentTypeError(f"{text!r} is not {what}: give a finite number {bound}")
    return value


def _whole(text: str, *, zero: bool) -> int:
    try:
        value = int(text.strip())
    except ValueError:
        value = -1
    if value < 0 or (value == 0 and not zero):
        bound = "0 or more" if zero else "1 or more"
        raise argparse.ArgumentTypeError(f"{text!r} is not a count: give a whole number, {bound}")
    return value


def positive_number(text: str) -> float:
    """A finite number above 0 (seconds, cores)."""
    return _number(text, "a number above 0", zero=False)


def non_negative_number(text: str) -> float:
    """A finite number, 0 or more (an age, a deadline where 0 means none)."""
    return _number(text, "a number of 0 or more", zero=True)


def positive_int(text: str) -> int:
    """A whole number, 1 or more."""
    return _whole(text, zero=False)


def non_negative_int(text: str) -> int:
    """A whole number, 0 or more."""
    return _whole(text, zero=True)


def add_sandbox_options(parser: argparse.ArgumentParser) -> None:
    """Add ``--sandbox``, ``--workspace``, policy and docker options to ``parser``."""
    group = parser.add_argument_group("sandbox")
    group.add_argument(
        "--sandbox",
        choices=SANDBOX_CHOICES,
        default="auto",
        help="where commands run: bwrap (namespaces), local/none (no isolation), docker; "
        "default auto = bwrap where it works, else local with a warning",
    )
    group.add_argument("--workspace", type=Path, default=Path("."), help="workspace directory (default: .)")
    group.add_argument(
        "--writable",
        type=Path,
        action="append",
        default=[],
        metavar="DIR",
        help="extra writable root (repeatable)",
    )
    group.add_argument(
        "--deny-read",
        type=Path,
        action="append",
        default=[],
        metavar="PATH",
        help="hide PATH from commands (repeatable; Read(...) deny rules are hidden too)",
    )
    group.add_argument(
        "--no-default-masks",
        action="store_true",
        help="do not hide the default credential stores (~/.ssh, ~/.aws, /etc/shadow, ...) from commands",
    )
    group.add_argument(
        "--network",
        choices=("none", "host", "bridge", "proxied"),
        default=None,
        help="network access: none (default), host (local/bwrap), bridge (docker), "
        "proxied (bwrap: only the --allow-domain names, through shellrt's filtering proxy)",
    )
    group.add_argument(
        "--allow-domain",
        action="append",
        default=[],
        metavar="DOMAIN",
        help="let commands reach DOMAIN (and *.DOMAIN patterns' subdomains) through shellrt's filtering "
        "proxy; repeatable; turns network 'proxied' on (bwrap). Names only: an IP is refused unless listed, "
        "a name resolving to a private/loopback address only when listed exactly (localhost = this host)",
    )
    group.add_argument(
        "--deny-domain",
        action="append",
        default=[],
        metavar="DOMAIN",
        help="refuse DOMAIN even when allowed (deny wins); repeatable",
    )
    limits = " for the whole session (docker: the container; bwrap: a cgroup, as root or delegated); "
    refused = "refused, never ignored, where the sandbox cannot enforce it"
    group.add_argument(
        "--memory",
        type=parse_size,
        default=None,
        metavar="SIZE",
        help=f"memory limit, e.g. 2g{limits}{refused}",
    )
    group.add_argument("--pids", type=positive_int, default=None, metavar="N", help=f"process limit{limits}{refused}")
    group.add_argument(
        "--cpus", type=positive_number, default=None, metavar="N", help=f"CPU limit in cores{limits}{refused}"
    )
    group.add_argument("--image", default=None, help="container image (docker)")
    group.add_argument(
        "--bind",
        action="store_true",
        default=None,
        help="docker: bind-mount the workspace read-write instead of copying it in (commands change "
        "your directory itself; the default copy leaves it untouched)",
    )
    group.add_argument(
        "--pull",
        choices=("never", "missing", "always"),
        default=None,
        help="docker: pull the image never (default: build or `docker load` it yourself), when missing "
        "locally, or always before starting; pulling needs a reachable registry",
    )
    group.add_argument(
        "--export",
        type=Path,
        default=None,
        metavar="DIR",
        help="copy the container's workspace to DIR when done (docker)",
    )


def print_network_refusals(backend: SandboxBackend, prog: str) -> None:
    """Each connection the network proxy refused (network ``proxied``), on stderr, with the fix."""
    refusals = backend.network_refusals
    seen: set[tuple[str, int]] = set()
    for refusal in refusals:
        if (refusal.host, refusal.port) in seen:
            continue
        seen.add((refusal.host, refusal.port))
        print(
            f"{prog}: network: blocked {refusal.host}:{refusal.port} ({refusal.reason}); {refusal.fix()}",
            file=sys.stderr,
        )
    log = getattr(backend, "network_log", None)
    if refusals and log is not None:
        print(f"{prog}: network: {len(refusals)} refused connection(s) logged in {log}", file=sys.stderr)


def mask_defaults_from_args(args: argparse.Namespace) -> bool | None:
    """False when ``--no-default-masks`` was given, else None (settings decide; default on)."""
    return False if getattr(args, "no_default_masks", False) else None


def workspace_from_args(args: argparse.Namespace) -> Path:
    """``--workspace`` resolved; exits with what to do when it is not a directory."""
    workspace = Path(args.workspace).expanduser().resolve()
    if not workspace.is_dir():
        raise SystemExit(
            f"shellrt: workspace {workspace} is not a directory; create it or pass --workspace DIR"
        )
    return workspace


def checked_writable_root(raw: str, workspace: Path, *, cwd: Path | None = None) -> Path:
    """A ``--writable`` path resolved, one component at a time (`sandbox._root_links.walk_root`);
    exits when a symbolic link inside the workspace is on the way (red team, round 11).

    The repository chose where such a link points (``build -> ~/.ssh``): resolving it silently
    opened that place read-write to every command. A link outside the workspace is the operator's
    own, and the real path of the target may always be given.
    """
    from sandbox._root_links import link_refusal, walk_root

    resolved, link = walk_root(raw, workspace, cwd)
    if link is not None:
        raise SystemExit(f"shellrt: {link_refusal(raw, *link)} (--writable {link[1]})")
    return resolved


def run_roots(args: argparse.Namespace) -> tuple[Path, tuple[Path, ...]]:
    """The workspace and the ``--writable`` roots, each checked; exits with what to do when one is
    refused: not a directory (the workspace), a symbolic link the workspace placed
    (`checked_writable_root`), or shellrt's own configuration or state directory
    (`refuse_own_dirs_as_roots`).

    One function for both ``shellrt run`` paths (`sandbox_from_args` and the lean local
    `shellrt.cli._local_run`): the lean path had its own spelling of the roots and ran the
    command under each of these refusals (red team round 45, iface5). Cheap: no pydantic."""
    from shellrt.permissions._own_roots import refuse_own_dirs_as_roots

    workspace = workspace_from_args(args)
    writable = tuple(checked_writable_root(p, workspace) for p in args.writable or ())
    try:
        refuse_own_dirs_as_roots([workspace, *writable])
    except ValueError as exc:
        raise SystemExit(f"shellrt: {exc}") from exc
    return workspace, writable


def sandbox_from_args(
    args: argparse.Namespace, *, masks: bool = True
) -> tuple[SandboxConfig | Literal["auto", "bwrap"], SandboxPolicy]:
    """The backend config (``"auto"`` when not chosen, ``"bwrap"`` for bwrap) and the policy the options describe.

    ``masks``: add the default masked paths (``shellrt run``); False when a `Runtime`
    derives them from the session's settings and rules (``serve``).
    """
    from sandbox import DockerConfig, LocalConfig, ResourceLimits, SandboxPolicy
    from shellrt.runtime.sandbox_policy import derive_policy

    workspace = workspace_from_args(args)
    choice = args.sandbox
    network = args.network or "none"
    allowed = list(getattr(args, "allow_domain", None) or [])
    denied = list(getattr(args, "deny_domain", None) or [])
    if allowed:
        if args.network not in (None, "proxied"):
            raise SystemExit(
                f"shellrt: --allow-domain needs network 'proxied' (its default); drop --network {args.network}"
            )
        network = "proxied"
    if network == "proxied" and choice in ("local", "none"):
        raise SystemExit(
            "shellrt: --allow-domain / --network proxied need --sandbox bwrap or docker (or auto where bwrap "
            "works); the local backend cannot confine commands to the proxy"
        )
    if network == "bridge" and choice != "docker":
        raise SystemExit("shellrt: --network bridge needs --sandbox docker (use none or host)")
    # Limits are not checked here: the backend's declared capabilities decide
    # (sandbox.check_enforceable, through create_backend), for every route alike.
    docker_only = [n for n in ("image", "export", "bind", "pull") if getattr(args, n, None) is not None]
    if docker_only and choice != "docker":
        flags = ", ".join("--" + n for n in docker_only)
        raise SystemExit(
            f"shellrt: {flags} only apply to --sandbox docker, not --sandbox {choice}; "
            "add --sandbox docker or drop them"
        )
    if getattr(args, "bind", None) and getattr(args, "export", None) is not None:
        raise SystemExit(
            "shellrt: --export copies a copied-in workspace out; with --bind your directory already has every change"
        )
    workspace, writable = run_roots(args)
    _refuse_patterns(args.deny_read)
    try:
        policy = SandboxPolicy(
            workspace=workspace,
            writable_roots=writable,
            read_denied=tuple(Path(p).expanduser().resolve() for p in args.deny_read),
            network=network,
            allowed_domains=tuple(allowed),
            denied_domains=tuple(denied),
            limits=ResourceLimits(memory_bytes=args.memory, pids=args.pids, cpus=args.cpus),
        )
    except ValueError as exc:  # pydantic's ValidationError: a malformed --allow-domain
        raise SystemExit(f"shellrt: {exc}") from exc
    if masks:
        from shellrt.runtime.session_mask import own_state_masks

        # shellrt's own configuration and state directories too: what later sessions trust (round
        # 26): the state a Session hides from its commands is hidden from `shellrt run`'s, and a
        # root that cannot be masked is refused, by the one function a Session uses.
        try:
            own = own_state_masks(policy)
            policy, _ = derive_policy(policy, mask_defaults=mask_defaults_from_args(args), masked_paths=own)
        except ValueError as exc:  # PolicyError: what the sandbox cannot enforce, and what to do
            raise SystemExit(f"shellrt: {exc}") from exc
    config: SandboxConfig | Literal["auto", "bwrap"]
    if choice == "auto":
        config = "auto"
    elif choice in ("local", "none"):
        config = LocalConfig()
    elif choice == "bwrap":
        config = "bwrap"  # resolve_sandbox picks the mode (one-shot or session)
    else:
        docker: dict[str, object] = {"image": args.image} if args.image else {}
        if getattr(args, "bind", None):
            docker["workspace_mode"] = "bind"
        if getattr(args, "pull", None) is not None:
            docker["pull"] = args.pull
        config = DockerConfig.model_validate(docker)
    return config, policy


def _refuse_patterns(paths: list[Path]) -> None:
    """``--deny-read`` names a path; a pattern such as ``./secrets/**`` that names no existing file hid
    nothing, silently (the operator believed ``secrets/`` hidden). Refused with what to write instead."""
    for path in paths:
        text = str(path)
        if any(c in text for c in "*?[") and not os.path.lexists(os.path.expanduser(text)):
            raise SystemExit(
                f"shellrt: --deny-read {text!r} names no existing path and looks like a pattern; "
                "--deny-read hides a path (a directory hides everything below it): name the directory "
                "(--deny-read ./secrets) or put a Read(./secrets/**) deny rule in your settings"
            )
