"""``shellrt serve``: the session's tools for agents — MCP over stdio (default), streamable HTTP, or JSONL.

    shellrt serve --workspace ~/repo                      # MCP on stdin/stdout
    shellrt serve --http 127.0.0.1:8765 --workspace ~/repo  # MCP at http://127.0.0.1:8765/mcp
    shellrt serve --jsonl --workspace ~/repo              # the JSONL tool protocol

Permission asks go to the MCP client's user (elicitation) when it can ask,
and are denied otherwise; with ``--jsonl`` they are denied (use ``--allow`` or
``--mode``). Nothing is ever written to stdout but the protocol: diagnostics
go to stderr.

Over HTTP every request needs ``Authorization: Bearer <token>``: loopback is
reachable by other local users and by commands with the host's network. The
token comes from ``--token-file``, else ``$SHELLRT_SERVE_TOKEN``, else a fresh
one is written to ``<state>/serve/http-<port>.token`` (see `_http_token`).
``--no-auth`` opts out, on loopback only.
"""

from __future__ import annotations

import argparse
import ipaddress
import math
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from shellrt.cli._runtime_options import add_runtime_options, runtime_from_args

if TYPE_CHECKING:
    from shellrt.server._http_token import ServeToken

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
        help="allow --http on a non-loopback address. The bearer token is then all that stands between "
        "the network and your commands, and it travels in clear text (plain HTTP): put TLS in front "
        "(a reverse proxy) on any network you do not trust",
    )
    parser.add_argument(
        "--token-file",
        metavar="PATH",
        type=Path,
        default=None,
        help="with --http: the bearer token clients must send (first line of PATH; the file must be yours "
        "and mode 0600). Default: $SHELLRT_SERVE_TOKEN, else a fresh token written to "
        "<state>/serve/http-PORT.token (state: $SHELLRT_HOME, else ~/.local/state/shellrt), removed at exit",
    )
    parser.add_argument(
        "--no-auth",
        action="store_true",
        help="with --http on loopback: accept requests without a token. Any local user, and any command "
        "running with the host's network (local sandbox, --network host), can then run tools and answer "
        "its own permission asks. Refused with --allow-remote",
    )
    parser.add_argument(
        "--header-timeout",
        metavar="SECONDS",
        type=float,
        default=None,
        help="with --http: close a connection that has not sent a request's headers within SECONDS of "
        "opening or of its previous response, and a request's body within three times SECONDS of its headers "
        "(default 10; slow clients tie up no connection)",
    )
    parser.add_argument(
        "--max-connections",
        metavar="N",
        type=int,
        default=None,
        help="with --http: at most N open connections (default 256); when full, the connection idle the "
        "longest is closed for a newcomer (a request in flight never is)",
    )
    parser.add_argument(
        "--max-connections-per-peer",
        metavar="N",
        type=int,
        default=None,
        help="with --http: at most N open connections from one client address (default 64, or "
        "--max-connections if lower); one client cannot take every slot. Behind a reverse proxy "
        "all clients are one address",
    )
    parser.add_argument(
        "--max-sessions",
        metavar="N",
        type=int,
        default=None,
        help="with --http: at most N open MCP sessions (default 512, at most 128 of one client address); "
        "when full, the session idle the longest is ended for a newcomer (one with a request in flight "
        "never is) and its id answers 404",
    )
    parser.add_argument(
        "--session-idle-timeout",
        metavar="SECONDS",
        type=float,
        default=None,
        help="with --http: end an MCP session (and stop its background tasks) after SECONDS without a "
        "request (default 1800)",
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
            f"--http {host} is not a loopback address; shellrt serve only listens on "
            "127.0.0.1/::1/localhost unless you pass --allow-remote"
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
    from shellrt.server._http_token import TokenError, remove_token_file

    listen: tuple[str, int] | None = None
    token: ServeToken | None = None
    try:
        _check_auth_flags(args)
        from shellrt.cli._serve_env import check_limits_env

        check_limits_env(asks=not args.jsonl)  # a bad value is refused before anything starts
        if args.http:
            listen = parse_listen(args.http, allow_remote=args.allow_remote)
            if not args.no_auth:
                token = _token_for(args, listen)
    except (ValueError, TokenError) as exc:
        print(f"shellrt serve: {exc}", file=sys.stderr)
        return EXIT_USAGE
    import anyio

    from shellrt.cli._signals import run_until_signal

    try:
        return anyio.run(run_until_signal, _serve, args, listen, token)
    except ModuleNotFoundError as exc:
        print(f"shellrt serve: a dependency is missing ({exc}); install shellrt[mcp]", file=sys.stderr)
        return EXIT_UNAVAILABLE
    finally:
        if token is not None:
            remove_token_file(token)


def _check_per_peer(per_peer: int | None, total: int | None) -> None:
    """``--max-connections-per-peer`` must fit inside the total cap (default 256)."""
    if per_peer is None:
        return
    if per_peer < 1:
        raise ValueError(f"--max-connections-per-peer {per_peer}: give at least 1")
    cap = 256 if total is None else total
    if per_peer > cap:
        raise ValueError(f"--max-connections-per-peer {per_peer}: give at most --max-connections ({cap})")


def _check_auth_flags(args: argparse.Namespace) -> None:
    if (args.no_auth or args.token_file is not None) and not args.http:
        raise ValueError("--no-auth and --token-file only apply to --http")
    bounds = (
        args.header_timeout,
        args.max_connections,
        args.max_connections_per_peer,
        args.max_sessions,
        args.session_idle_timeout,
    )
    if any(b is not None for b in bounds) and not args.http:
        raise ValueError(
            "--header-timeout, --max-connections(-per-peer), --max-sessions and --session-idle-timeout "
            "only apply to --http"
        )
    if args.max_sessions is not None and not 1 <= args.max_sessions <= 100_000:
        raise ValueError(f"--max-sessions {args.max_sessions}: give a number from 1 to 100000")
    idle = args.session_idle_timeout
    if idle is not None and not (math.isfinite(idle) and 0 < idle <= 86_400):
        raise ValueError(f"--session-idle-timeout {idle:g}: give a number of seconds above 0, at most 86400")
    if args.header_timeout is not None and not 0 < args.header_timeout <= 3600:
        raise ValueError(
            f"--header-timeout {args.header_timeout:g}: give a number of seconds above 0, at most 3600"
        )
    if args.max_connections is not None and args.max_connections < 1:
        raise ValueError(f"--max-connections {args.max_connections}: give at least 1")
    _check_per_peer(args.max_connections_per_peer, args.max_connections)
    if args.no_auth and args.allow_remote:
        raise ValueError(
            "--no-auth is refused with --allow-remote: anyone on the network could run commands; "
            "drop --no-auth (clients then send the token)"
        )
    if args.no_auth and args.token_file is not None:
        raise ValueError("--no-auth and --token-file contradict each other; pass one")


def _token_for(args: argparse.Namespace, listen: tuple[str, int]) -> ServeToken:
    """The bearer token (see `shellrt.server._http_token`), hidden from commands by a read mask."""
    from shellrt.server._http_token import (
        generate_token_file,
        read_token_file,
        serve_token_dir,
        token_from_env,
    )

    if args.token_file is not None:
        token = read_token_file(args.token_file)
        os.environ.pop("SHELLRT_SERVE_TOKEN", None)
        hidden = Path(os.path.abspath(args.token_file))
    else:
        found = token_from_env()
        if found is not None:
            return found
        if _port_taken(*listen):
            # Checked before the token file is replaced: the file of the server on that port stays.
            raise ValueError(f"--http {args.http}: the port is in use; pick another one")
        token = generate_token_file(listen[1])
        hidden = serve_token_dir()
    # A sandboxed command (bwrap: the home is readable) must not read the token and call back in.
    args.deny_read = [*getattr(args, "deny_read", []), hidden]
    return token


def _port_taken(host: str, port: int) -> bool:
    """Whether a listener holds ``host:port`` (other bind errors are left for the server to report)."""
    import errno
    import socket

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as exc:
            return exc.errno == errno.EADDRINUSE
    return False


async def _serve(args: argparse.Namespace, listen: tuple[str, int] | None, token: ServeToken | None) -> int:
    from sandbox import BackendUnavailableError
    from shellrt.cli._terminal import escape_log_lines, shown
    from shellrt.runtime.session_dir import SessionDirError

    escape_log_lines()  # the runtime's warnings quote MCP servers' stderr, settings, tool names
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
        print(f"shellrt serve: settings: {shown(line)}", file=sys.stderr)
    try:
        async with runtime:
            for line in runtime.warnings:
                print(f"shellrt serve: warning: {shown(line)}", file=sys.stderr)
            for line in getattr(runtime, "mcp_diagnostics", ()):
                print(f"shellrt serve: mcpServers: {shown(line)}", file=sys.stderr)
            if args.jsonl:
                from shellrt.server.jsonl import serve_jsonl

                return await serve_jsonl(runtime)
            from shellrt.server.mcp import McpToolServer

            server = McpToolServer(runtime)
            if listen is None:
                return await server.serve_stdio()
            else:
                url = f"http://{_fmt_host(listen[0])}:{listen[1]}/mcp"
                if token is None:
                    print(f"shellrt serve: MCP at {url} (no authentication: --no-auth)", file=sys.stderr)
                else:
                    print(
                        f"shellrt serve: MCP at {url} (token in {token.where}; "
                        "send Authorization: Bearer <token>)",
                        file=sys.stderr,
                    )
                secret, where = (None, "") if token is None else (token.value, token.where)
                if not _is_loopback(listen[0]):
                    where = (
                        "the file or variable named on the server's stderr"  # no local paths to the network
                    )
                await server.serve_http(
                    *listen,
                    token=secret,
                    token_where=where,
                    header_timeout=args.header_timeout,
                    max_connections=args.max_connections,
                    max_per_peer=args.max_connections_per_peer,
                    max_sessions=args.max_sessions,
                    session_idle_timeout=args.session_idle_timeout,
                )
            return 0
    except BackendUnavailableError as exc:
        print(f"shellrt serve: sandbox unavailable: {exc}", file=sys.stderr)
        return EXIT_UNAVAILABLE
    except SessionDirError as exc:
        print(f"shellrt serve: {exc}", file=sys.stderr)
        return EXIT_USAGE


def _fmt_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host
