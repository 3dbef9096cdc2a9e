"""``shellrt serve``: the session's tools for agents — MCP over stdio (default), streamable HTTP, or JSONL.

    shellrt serve --workspace ~/repo                      # MCP on stdin/stdout
    shellrt serve --http 127.0.0.1:8765 --workspace ~/repo  # MCP at http://127.0.0.1:8765/mcp
    shellrt serve --jsonl --workspace ~/repo              # the JSONL tool protocol

Permission asks go to the MCP client's user (elicitation) when it can ask,
and are denied otherwise; with ``--jsonl`` they are denied (use ``--allow`` or
``--mode``). Nothing is ever written to stdout but the protocol: diagnostics
go to stderr.
"""

from __future__ import annotations

import argparse
import ipaddress
import sys
from typing import Any

from shellrt.cli._runtime_options import add_runtime_options, runtime_from_args

__all__ = ["parse_listen", "register"]

EXIT_USAGE = 2
EXIT_UNAVAILABLE = 125


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "serve",
        help="serve the tools over MCP (stdio or HTTP) or JSONL",
        description="Serve the session's tools to an agent. Default: MCP over stdin/stdout.",
    )
    transport = parser.add_mutually_exclusive_group()
    transport.add_argument(
        "--http",
        metavar="HOST:PORT",
        default=None,
        help="serve MCP over streamable HTTP at http://HOST:PORT/mcp (loopback only unless --allow-remote)",
    )
    transport.add_argument(
        "--jsonl", action="store_true", help="serve the JSONL tool protocol on stdin/stdout"
    )
    parser.add_argument(
        "--allow-remote",
        action="store_true",
        help="allow --http on a non-loopback address (there is no authentication: anyone who can reach "
        "the port can run commands)",
    )
    parser.add_argument(
        "--session",
        metavar="ID",
        default=None,
        help="reopen (or create) the persisted session ID: cwd, read state, discovered tools and todos "
        "come back after a restart (see docs/sessions.md)",
    )
    add_runtime_options(parser)
    parser.set_defaults(func=main)


def parse_listen(text: str, *, allow_remote: bool) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:PORT`` for IPv6) -> (host, port); refuses non-loopback unless allowed."""
    host, sep, port_text = text.rpartition(":")
    if not sep or not port_text.isdigit() or not host:
        raise ValueError(f"--http expects HOST:PORT (e.g. 127.0.0.1:8765), got {text!r}")
    host = host.strip("[]")
    port = int(port_text)
    if not 0 < port < 65536:
        raise ValueError(f"--http port {port} is out of range")
    if not allow_remote and not _is_loopback(host):
        raise ValueError(
            f"--http {host} is not a loopback address; shellrt serve has no authentication, so it only "
            "listens on 127.0.0.1/::1/localhost unless you pass --allow-remote"
        )
    return host, port


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def main(args: argparse.Namespace) -> int:
    listen: tuple[str, int] | None = None
    if args.http:
        try:
            listen = parse_listen(args.http, allow_remote=args.allow_remote)
        except ValueError as exc:
            print(f"shellrt serve: {exc}", file=sys.stderr)
            return EXIT_USAGE
    import anyio

    from shellrt.cli._signals import run_until_signal

    try:
        return anyio.run(run_until_signal, _serve, args, listen)
    except ModuleNotFoundError as exc:
        print(f"shellrt serve: a dependency is missing ({exc}); install shellrt[mcp]", file=sys.stderr)
        return EXIT_UNAVAILABLE


async def _serve(args: argparse.Namespace, listen: tuple[str, int] | None) -> int:
    from sandbox import BackendUnavailableError

    approver = None
    if not args.jsonl:
        from shellrt.server.mcp_approval import elicitation_approver

        approver = elicitation_approver
    try:
        runtime = runtime_from_args(args, approver=approver)
    except (FileNotFoundError, ValueError) as exc:
        print(f"shellrt serve: {exc}", file=sys.stderr)
        return EXIT_USAGE
    for line in runtime.diagnostics:
        print(f"shellrt serve: settings: {line}", file=sys.stderr)
    try:
        async with runtime:
            for line in runtime.warnings:
                print(f"shellrt serve: warning: {line}", file=sys.stderr)
            for line in getattr(runtime, "mcp_diagnostics", ()):
                print(f"shellrt serve: mcpServers: {line}", file=sys.stderr)
            if args.jsonl:
                from shellrt.server.jsonl import serve_jsonl

                return await serve_jsonl(runtime)
            from shellrt.server.mcp import McpToolServer

            server = McpToolServer(runtime)
            if listen is None:
                await server.serve_stdio()
            else:
                print(f"shellrt serve: MCP at http://{_fmt_host(listen[0])}:{listen[1]}/mcp", file=sys.stderr)
                await server.serve_http(*listen)
            return 0
    except BackendUnavailableError as exc:
        print(f"shellrt serve: sandbox unavailable: {exc}", file=sys.stderr)
        return EXIT_UNAVAILABLE


def _fmt_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host
