"""Network mode ``proxied`` vs ``none`` on bwrap: what the proxy and its bridge cost (issue 20, item 7).

Measures, for each mode: the session sandbox's start (backend start to first
command done), a warm ``true`` per command, and (proxied only) a warm HTTP GET
of a 127.0.0.1 server through the bridge and the proxy with curl (and, as its
baseline in mode none, the same client refused on its own loopback: the
client's own cost). Prints medians and the ratios proxied/none. Run: ``python -m benchmarks.bench_network``
(``--starts N --commands N`` to change the sample sizes; defaults are small).
"""

from __future__ import annotations

import argparse
import http.server
import shutil
import statistics
import tempfile
import threading
import time
from pathlib import Path

import anyio

from sandbox import BwrapConfig, DockerConfig, NetworkMode, SandboxBackend, SandboxPolicy
from sandbox.bwrap import BwrapBackend
from shellrt.supervisor import Supervisor


class _Quiet(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, format: str, *args: object) -> None:
        pass


async def _session(
    policy: SandboxPolicy, session: Path, commands: list[str], n: int, *, docker: str | None = None
) -> tuple[float, list[float]]:
    """(start-to-first-command seconds, per-command seconds of ``commands`` run ``n`` times each)."""
    t0 = time.perf_counter()
    backend: SandboxBackend
    if docker is None:
        backend = BwrapBackend(BwrapConfig(), policy)
    else:
        from sandbox.docker import DockerBackend

        backend = DockerBackend(DockerConfig(image=docker), policy)
    await backend.start()
    sup = Supervisor(backend, session_dir=session)
    try:
        first = await sup.run("true", timeout_s=60)
        assert first.exit_code == 0, first.preview
        start = time.perf_counter() - t0
        times: list[float] = []
        for _ in range(n):
            for command in commands:
                t = time.perf_counter()
                result = await sup.run(command, timeout_s=60)
                times.append(time.perf_counter() - t)
                assert result.exit_code == 0, result.preview
        return start, times
    finally:
        await sup.close()
        await backend.close()


async def main(starts: int, commands: int, docker: str | None) -> None:
    if docker is None and shutil.which("bwrap") is None:
        raise SystemExit("bench_network: bubblewrap is not installed")
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Quiet)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    root = Path(tempfile.mkdtemp(prefix="bench-network-"))
    results: dict[str, dict[str, float]] = {}
    modes: tuple[NetworkMode, ...] = ("none", "proxied")
    policies: dict[str, SandboxPolicy] = {}
    for mode in modes:
        (root / mode).mkdir()
        allowed = ("localhost",) if mode == "proxied" else ()
        policies[mode] = SandboxPolicy(workspace=root / mode, network=mode, allowed_domains=allowed)
    start_times: dict[str, list[float]] = {m: [] for m in modes}
    warm: dict[str, list[float]] = {m: [] for m in modes}
    try:
        # Interleaved, so the machine's drift (2 shared cores) weighs on both modes alike.
        for i in range(starts):
            for mode in modes if i % 2 == 0 else reversed(modes):
                session = root / f"{mode}-s{i}"
                session.mkdir()
                n = commands if i < 2 else 0
                start, times = await _session(policies[mode], session, ["true"], n, docker=docker)
                start_times[mode].append(start)
                warm[mode] += times
        for mode in modes:
            results[mode] = {
                "start": statistics.median(start_times[mode]),
                "true": statistics.median(warm[mode]),
            }
        if docker is not None or shutil.which("curl"):
            # One proxied session, interleaved: a GET through the proxy, then the same client
            # refused on the sandbox's own loopback (its own cost: process start, no network).
            get = f"curl -sS --noproxy '' -o /dev/null http://localhost:{port}/"
            alone = "curl -s -o /dev/null http://127.0.0.1:9/ || true"
            if docker is not None:  # busybox: raw HTTP through the proxy with nc
                get = f"printf 'GET http://localhost:{port}/ HTTP/1.0\\r\\n\\r\\n' | nc 127.0.0.1 3128 >/dev/null"
                alone = "printf 'GET / HTTP/1.0\\r\\n\\r\\n' | nc 127.0.0.1 9 >/dev/null || true"
            session = root / "get"
            session.mkdir()
            _, times = await _session(policies["proxied"], session, [get, alone], commands + 1, docker=docker)
            gets, alones = times[0::2], times[1::2]
            results["proxied"]["first_get"] = gets[0]  # the session's first connection
            results["proxied"]["http_get"] = statistics.median(gets[1:])
            results["proxied"]["same_client_no_network"] = statistics.median(alones[1:])
    finally:
        server.shutdown()
        shutil.rmtree(root, ignore_errors=True)
    for name, row in results.items():
        cells = ", ".join(f"{k} {v * 1000:.1f} ms" for k, v in row.items())
        print(f"{name:8s} median: {cells}")
    none, proxied = results["none"], results["proxied"]
    print(f"{'docker ' + docker if docker else 'bwrap'} ratio proxied/none: session start {proxied['start'] / none['start']:.2f}x (target <= 1.2x), "
          f"warm true {proxied['true'] / none['true']:.2f}x (target ~1.0x)")  # fmt: skip
    if "http_get" in proxied:
        fetched, refused = proxied["http_get"], proxied["same_client_no_network"]
        print(f"warm GET through the proxy {fetched * 1000:.1f} ms vs the same client refused on its own "
              f"loopback {refused * 1000:.1f} ms (same session, interleaved): {(fetched - refused) * 1000:+.1f} ms "
              "per request")  # fmt: skip


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--starts", type=int, default=5)
    parser.add_argument("--commands", type=int, default=30)
    parser.add_argument(
        "--docker", metavar="IMAGE", default=None, help="measure docker with IMAGE instead of bwrap"
    )
    ns = parser.parse_args()
    anyio.run(main, ns.starts, ns.commands, ns.docker)
