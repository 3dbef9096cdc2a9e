"""``shellrt serve --http`` requires a bearer token: a real server process, real HTTP, the real MCP client.

The attack: any local process (another user, or a command with the host's
network) opens its own MCP session on loopback and runs tools. It must get 401
before any tool runs.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import stat
import subprocess
import tempfile
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from tests._mcp_support import ROOT, isolated_env, text_of
from tests._serve_cli import http_serve_argv
from tests.test_mcp_server import _free_port, _wait_for_port

#: What a fixed token looks like to the server (at least 16 characters).
TOKEN = "test-token-0123456789abcdef"


class Served:
    """A running ``serve --http``: its URL, home (token dir below it), and process."""

    def __init__(self, port: int, home: Path, proc: subprocess.Popen[bytes]) -> None:
        self.port, self.home, self.proc = port, home, proc
        self.url = f"http://127.0.0.1:{port}/mcp"

    @property
    def token_file(self) -> Path:
        return self.home / ".shellrt-home" / "serve" / f"http-{self.port}.token"


@contextmanager
def served(tmp: Path, *extra: str, env: dict[str, str] | None = None) -> Iterator[Served]:
    workspace, home = tmp / "ws", tmp / "home"
    workspace.mkdir(exist_ok=True)
    home.mkdir(exist_ok=True)
    port = _free_port()
    proc = subprocess.Popen(
        http_serve_argv(port, workspace, *extra),
        env={**os.environ, **isolated_env(home), **(env or {})},
        cwd=str(ROOT),
        stderr=subprocess.PIPE,
    )
    try:
        anyio.run(_wait_for_port, port, proc)
        yield Served(port, home, proc)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def _post(url: str, body: dict[str, object], headers: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
    """One raw JSON-RPC POST, as an attacker's process would send it."""
    request = urllib.request.Request(
        url,
        data=json.dumps(body).encode(),
        method="POST",
        headers={
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            **headers,
        },
    )
    try:
        with urllib.request.urlopen(request, timeout=20) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read()


_INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "x", "version": "1"},
    },
}


def _call_bash(command: str) -> dict[str, object]:
    return {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "Bash", "arguments": {"command": command}},
    }


async def _run_bash(url: str, command: str, headers: dict[str, str] | None) -> str:
    """``command`` through the official MCP client, sending ``headers`` on every request."""
    async with (
        create_mcp_http_client(headers=headers) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        result = await session.call_tool("Bash", {"command": command})
        assert result.is_error is False, text_of(result)
        return text_of(result)


def _bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def test_generated_token_guards_every_request_and_its_file_goes_at_shutdown(tmp_path: Path) -> None:
    marker = tmp_path / "ws" / "pwned"
    with served(tmp_path) as srv:
        token_file = srv.token_file
        # A private file in a private directory.
        assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
        assert stat.S_IMODE(token_file.parent.stat().st_mode) == 0o700
        token = token_file.read_text().strip()
        assert len(token) >= 40

        # No token, a wrong one, another scheme, the token twice: 401 and nothing runs.
        refused: list[dict[str, str]] = [
            {},
            _bearer("x" * len(token)),
            _bearer(token[:-1]),
            {"Authorization": f"Basic {token}"},
            {"Authorization": token},
        ]
        for headers in refused:
            for body in (_INITIALIZE, _call_bash(f"touch {marker}")):
                status, reply_headers, reply = _post(srv.url, body, headers)
                assert status == 401, (headers, status, reply)
                assert reply_headers.get("www-authenticate", "").startswith("Bearer"), reply_headers
                assert str(token_file) in json.loads(reply)["message"]
                assert token not in reply.decode()

        # The real client without the header is refused too.
        with pytest.raises(Exception):  # noqa: B017 - the client's own error type for a 401
            anyio.run(_run_bash, srv.url, f"touch {marker}", None)
        assert not marker.exists(), "a request without the token ran a tool"

        # With it, tools run (the same command: the refusals above were the token's doing).
        out = anyio.run(_run_bash, srv.url, f"touch {marker} && echo made", _bearer(token))
        assert "made" in out and marker.exists()
        srv.proc.send_signal(signal.SIGTERM)
        assert srv.proc.wait(30) in (0, 128 + signal.SIGTERM)
    assert not token_file.exists(), "the token file outlived the server"


def test_env_token_works_and_commands_do_not_inherit_it(tmp_path: Path) -> None:
    with served(tmp_path, env={"SHELLRT_SERVE_TOKEN": TOKEN}) as srv:
        assert _post(srv.url, _INITIALIZE, _bearer(TOKEN + "x"))[0] == 401
        out = anyio.run(_run_bash, srv.url, 'echo "token=${SHELLRT_SERVE_TOKEN:-unset}"', _bearer(TOKEN))
        assert "token=unset" in out, out
        assert not srv.token_file.exists(), "with $SHELLRT_SERVE_TOKEN no token file is written"


def test_token_file_is_read_when_private(tmp_path: Path) -> None:
    path = tmp_path / "token"
    path.write_text(TOKEN + "\nsecond line is ignored\n")
    path.chmod(0o600)
    with served(tmp_path, "--token-file", str(path)) as srv:
        assert _post(srv.url, _INITIALIZE, {})[0] == 401
        assert "hi-token-file" in anyio.run(_run_bash, srv.url, "echo hi-token-file", _bearer(TOKEN))


def _refusal(tmp_path: Path, *extra: str, port: int = 0) -> subprocess.CompletedProcess[str]:
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    return subprocess.run(
        http_serve_argv(port or _free_port(), workspace, *extra),
        env={**os.environ, **isolated_env(tmp_path)},
        cwd=str(ROOT),
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_unsafe_token_files_are_refused(tmp_path: Path) -> None:
    shared = tmp_path / "shared-token"
    shared.write_text(TOKEN + "\n")
    shared.chmod(0o644)
    done = _refusal(tmp_path, "--token-file", str(shared))
    assert done.returncode == 2, done.stderr
    assert f"chmod 600 {shared}" in done.stderr

    link = tmp_path / "link-token"
    private = tmp_path / "private-token"
    private.write_text(TOKEN + "\n")
    private.chmod(0o600)
    link.symlink_to(private)
    done = _refusal(tmp_path, "--token-file", str(link))
    assert done.returncode == 2 and "symlink" in done.stderr, done.stderr

    done = _refusal(tmp_path, "--token-file", str(tmp_path))
    assert done.returncode == 2 and "not a regular file" in done.stderr, done.stderr

    empty = tmp_path / "empty-token"
    empty.write_text("\n")
    empty.chmod(0o600)
    done = _refusal(tmp_path, "--token-file", str(empty))
    assert done.returncode == 2 and "empty" in done.stderr, done.stderr


def test_no_auth_serves_loopback_and_is_refused_remote(tmp_path: Path) -> None:
    done = _refusal(tmp_path, "--no-auth", "--allow-remote")
    assert done.returncode == 2 and "--no-auth is refused with --allow-remote" in done.stderr, done.stderr
    with served(tmp_path, "--no-auth") as srv:
        assert "open-door" in anyio.run(_run_bash, srv.url, "echo open-door", None)
        assert not srv.token_file.exists()


def test_a_stale_token_file_is_replaced_not_trusted(tmp_path: Path) -> None:
    """A token left by a killed server must not keep working for the next one on that port."""
    from shellrt.server._http_token import generate_token_file, remove_token_file, serve_token_dir

    os.environ["SHELLRT_HOME"], saved = str(tmp_path / "state"), os.environ.get("SHELLRT_HOME")
    try:
        first = generate_token_file(1234)
        assert first.created is not None
        serve_token_dir().chmod(0o755)  # loosened by someone: made private again
        second = generate_token_file(1234)
        assert second.value != first.value and second.created == first.created
        assert second.created.read_text().strip() == second.value
        assert stat.S_IMODE(serve_token_dir().stat().st_mode) == 0o700
        remove_token_file(second)
        assert not second.created.exists()
    finally:
        if saved is None:
            os.environ.pop("SHELLRT_HOME", None)
        else:
            os.environ["SHELLRT_HOME"] = saved


@pytest.mark.parametrize("source", ["generated", "token-file"])
def test_sandboxed_commands_cannot_read_the_token(tmp_path: Path, source: str) -> None:
    """With the host's network a bwrap command reaches the port: it must not also find the token.

    The token lies where bwrap shows the host (not ``/tmp``, which is private to the
    sandbox): the state directory under ``/var/tmp``, or a token file in the workspace.
    As root, commands run as another uid, so the generated file's mode 0600 alone stops
    them; the read mask (checked below) is what stops a non-root caller's commands.
    """
    extra = ["--sandbox", "bwrap", "--network", "host"]
    env: dict[str, str] = {}
    state = Path(tempfile.mkdtemp(dir="/var/tmp", prefix="shellrt-test-state-"))
    try:
        if source == "token-file":
            target = tmp_path / "ws" / ".serve-token"
            target.parent.mkdir()
            target.write_text(TOKEN + "\n")
            target.chmod(0o600)
            extra += ["--token-file", str(target)]
        else:
            env["SHELLRT_HOME"] = str(state)
        with served(tmp_path, *extra, env=env) as srv:
            if source == "generated":
                target = state / "serve" / f"http-{srv.port}.token"
            token = target.read_text().strip()
            out = anyio.run(_run_bash, srv.url, f"cat {target} 2>&1; echo done", _bearer(token))
            assert "done" in out and token not in out, out
    finally:
        shutil.rmtree(state, ignore_errors=True)


def test_the_token_is_masked_from_commands(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The generated token's directory, or the --token-file, becomes a read-denied path."""
    import argparse

    from shellrt.cli.serve import _token_for
    from shellrt.server._http_token import remove_token_file, serve_token_dir

    monkeypatch.setenv("SHELLRT_HOME", str(tmp_path / "state"))
    monkeypatch.delenv("SHELLRT_SERVE_TOKEN", raising=False)
    port = _free_port()
    args = argparse.Namespace(token_file=None, http=f"127.0.0.1:{port}", deny_read=[])
    token = _token_for(args, ("127.0.0.1", port))
    try:
        assert args.deny_read == [serve_token_dir()]
    finally:
        remove_token_file(token)
    path = tmp_path / "token"
    path.write_text(TOKEN)
    path.chmod(0o600)
    args = argparse.Namespace(token_file=path, http=f"127.0.0.1:{port}", deny_read=[Path("/x")])
    assert _token_for(args, ("127.0.0.1", port)).value == TOKEN
    assert args.deny_read == [Path("/x"), path]


def test_a_busy_port_is_refused_before_its_servers_token_file_is_touched(tmp_path: Path) -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = int(listener.getsockname()[1])
        other = tmp_path / ".shellrt-home" / "serve" / f"http-{port}.token"
        other.parent.mkdir(parents=True)
        other.write_text("the other server's token\n")
        done = _refusal(tmp_path, port=port)
    assert done.returncode == 2 and "in use" in done.stderr, done.stderr
    assert other.read_text() == "the other server's token\n"
