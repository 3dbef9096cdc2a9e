"""Red team round 27 (net): WebFetch's URL and its redirects, with the host tricks the proxy gets.

The operator allows ``localhost`` (``webFetch.allowPrivateHosts``: the host's loopback, by that name
only) and ``allowed.example`` (a private host elsewhere, whose DNS answer a hook gives: DNS is
outside the machine). A real server on 127.0.0.1 counts what reaches it: no other spelling of
this machine's addresses, no listed name whose DNS points here, and no redirect to another host
may reach it.
"""

from __future__ import annotations

import socket
from pathlib import Path

import anyio
import pytest

from shellrt.protocol import ToolContext, ToolExecutionError
from shellrt.tools.web_fetch import WebFetchInput, WebFetchTool
from tests._http_server import serve

_PAGE = (200, {"Content-Type": "text/plain"}, b"secret of the host\n")


def _redirects(port: int) -> dict[str, str]:
    return {
        "/r-literal": f"http://127.0.0.1:{port}/secret",
        "/r-v6": f"http://[::1]:{port}/secret",
        "/r-userinfo": f"http://localhost:{port}@127.0.0.1:{port}/secret",
        "/r-backslash": f"http://localhost:{port}\\@127.0.0.1:{port}/secret",
        "/r-scheme-relative": f"//127.0.0.1:{port}/secret",
        "/r-idn": f"http://\uff4c\uff4f\uff43\uff41\uff4c\uff48\uff4f\uff53\uff54\u3002evil.test:{port}/secret",
    }


def _ctx(tmp_path: Path) -> ToolContext:
    return ToolContext(
        session_id="s",
        session_dir=tmp_path,
        workspace=tmp_path,
        cwd=str(tmp_path),
        settings={"webFetch": {"allowPrivateHosts": ["localhost", "allowed.example"]}},
    )


def test_host_spellings_and_redirects_never_reach_the_host(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = socket.getaddrinfo

    def fake(host: object, port: object, *args: object, **kwargs: object) -> object:
        if str(host).rstrip(".").lower() == "allowed.example":
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", int(port)))]  # type: ignore[call-overload]
        return real(host, port, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(socket, "getaddrinfo", fake)
    routes: dict[str, tuple[int, dict[str, str], bytes]] = {"/secret": _PAGE}
    with serve(routes) as srv:
        port = srv.server_port
        routes.update({p: (302, {"Location": loc}, b"") for p, loc in _redirects(port).items()})
        tool, ctx = WebFetchTool(), _ctx(tmp_path)

        async def fetch(url: str) -> object:
            try:
                return (await tool.call(WebFetchInput(url=url), ctx)).data
            except ToolExecutionError as exc:
                return exc

        direct = [
            f"http://127.0.0.1:{port}/secret",
            f"http://[::ffff:127.0.0.1]:{port}/secret",
            f"http://2130706433:{port}/secret",
            f"http://allowed.example:{port}/secret",  # listed name, DNS -> 127.0.0.1
            f"http://localhost:{port}@127.0.0.1:{port}/secret",
        ]

        async def fetch_all(urls: list[str]) -> dict[str, object]:
            found: dict[str, object] = {}

            async def one(url: str) -> None:
                found[url] = await fetch(url)

            async with anyio.create_task_group() as tg:  # at once: each call builds its own client
                for url in urls:
                    tg.start_soon(one, url)
            return found

        got = anyio.run(fetch_all, direct)
        assert srv.hits["/secret"] == 0, {u: repr(v)[:120] for u, v in got.items()}
        assert all(isinstance(v, ToolExecutionError) for v in got.values()), got
        fetched = anyio.run(fetch_all, [f"http://localhost:{port}{p}" for p in _redirects(port)])
        followed = {u.rpartition("/")[2]: out for u, out in fetched.items()}
        assert srv.hits["/secret"] == 0, {p: repr(v)[:160] for p, v in followed.items()}
        # Each is answered without following it (the model gets the target back) or refused.
        for path, out in followed.items():
            assert isinstance(out, ToolExecutionError) or getattr(out, "redirect_to", None), (path, out)
        # Control: the listed name itself still reaches its page.
        ok = anyio.run(fetch, f"http://localhost:{port}/secret")
    assert "secret of the host" in getattr(ok, "content", ""), ok
