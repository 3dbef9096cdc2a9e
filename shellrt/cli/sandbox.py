"""``shellrt sandbox``: inspect and reap the docker sandboxes shellrt leaves behind.

Containers of a client that died without ``close()`` (SIGKILL, OOM, power loss)
keep running until something removes them. Every docker backend start reaps
the ones whose owner process is gone; ``shellrt sandbox gc`` does it on demand
(e.g. from cron on a harness host), ``shellrt sandbox ls`` shows what exists.

Only the docker backend leaves state behind, so this talks to docker alone
(through ``sandbox.docker``, the one module that imports the docker SDK).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import asdict
from typing import Any

from shellrt.cli._sandbox_options import non_negative_number

__all__ = ["register", "run_gc", "run_ls"]


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``sandbox`` sub-command with ``ls`` and ``gc``."""
    parser = subparsers.add_parser(
        "sandbox",
        help="list or reap leftover docker sandboxes",
        description="Inspect and remove docker sandbox containers created by shellrt.",
    )
    parser.add_argument(
        "--docker-host", default=None, help="Docker daemon URL (default: DOCKER_HOST or the local socket)"
    )
    sub = parser.add_subparsers(dest="sandbox_command", metavar="ACTION")

    ls = sub.add_parser("ls", help="list shellrt containers and whether gc would reap them")
    ls.add_argument("--json", action="store_true", help="one JSON object per line")
    ls.set_defaults(func=run_ls)

    gc = sub.add_parser(
        "gc",
        help="remove containers whose owner process is gone",
        description=(
            "Remove shellrt containers (and their volumes and host FIFO directories) whose owner process "
            "on this host is gone. --older-than also removes containers older than S seconds whatever "
            "their owner; --all removes every shellrt container."
        ),
    )
    gc.add_argument(
        "--older-than",
        type=non_negative_number,
        default=None,
        metavar="S",
        help="also reap containers older than S seconds",
    )
    gc.add_argument("--all", action="store_true", dest="reap_all", help="reap every shellrt container")
    gc.add_argument("--dry-run", action="store_true", help="only show what would be removed")
    gc.add_argument("--json", action="store_true", help="one JSON object per line")
    gc.set_defaults(func=run_gc)

    def usage(_args: argparse.Namespace) -> int:
        parser.print_help()
        return 2

    parser.set_defaults(func=usage)


def _docker_module() -> Any:
    try:
        from sandbox import docker as docker_backend
    except ImportError as exc:
        raise SystemExit(
            f"shellrt sandbox: the docker SDK is not installed (pip install 'shellrt[docker]'): {exc}"
        ) from None
    return docker_backend


def _age(created: float) -> str:
    if not created:
        return "?"
    seconds = max(0, int(time.time() - created))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def _print(infos: list[Any], as_json: bool, empty: str) -> None:
    if as_json:
        for info in infos:
            print(json.dumps(asdict(info)))
        return
    if not infos:
        print(empty)
        return
    header = ("CONTAINER", "SESSION", "IMAGE", "STATUS", "AGE", "OWNER", "ISOLATION", "GC")
    rows = [
        (
            i.id,
            i.session,
            i.image,
            i.status,
            _age(i.created),
            f"{i.owner_pid}@{i.owner_host}",
            i.isolation,
            ("reap: " if i.verdict.reap else "keep: ") + i.verdict.reason,
        )
        for i in infos
    ]
    widths = [max(len(str(r[c])) for r in (header, *rows)) for c in range(len(header))]
    for row in (header, *rows):
        print("  ".join(str(v).ljust(w) for v, w in zip(row, widths, strict=True)).rstrip())


def run_ls(args: argparse.Namespace) -> int:
    """``shellrt sandbox ls``."""
    backend = _docker_module()
    try:
        infos = backend.list_sandboxes(args.docker_host)
    except backend.BackendUnavailableError as exc:
        print(f"shellrt sandbox ls: {exc}", file=sys.stderr)
        return 1
    _print(infos, args.json, "no shellrt containers")
    return 0


def run_gc(args: argparse.Namespace) -> int:
    """``shellrt sandbox gc``."""
    backend = _docker_module()
    try:
        reaped = backend.gc_sandboxes(
            args.docker_host, older_than=args.older_than, reap_all=args.reap_all, dry_run=args.dry_run
        )
    except backend.BackendUnavailableError as exc:
        print(f"shellrt sandbox gc: {exc}", file=sys.stderr)
        return 1
    if not args.json:
        verb = "would remove" if args.dry_run else "removed"
        print(f"{verb} {len(reaped)} container(s)", file=sys.stderr)
    _print(reaped, args.json, "")
    return 0
