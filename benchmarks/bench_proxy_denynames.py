"""The filtering proxy's CONNECT latency with and without a *name* on its deny-list (round 29).

Since round 29 the proxy looks up the exact names on its deny-list (`sandbox._denynames`) and
refuses answers they share; this measures what that costs one CONNECT, in one run: two proxies
(deny-list ``192.0.2.1``, an address: no lookup, the path of before; and the same plus the name
``localhost``, a real lookup through the system resolver) take turns, CONNECT after CONNECT, to one
listener on this machine's own non-loopback address (listed as such), and a fresh proxy's first
CONNECT (nothing cached) is timed apart.
Run: ``python -m benchmarks.bench_proxy_denynames [--rounds N]``.
"""

from __future__ import annotations

import argparse
import socket
import statistics
import tempfile
import time
from pathlib import Path

from sandbox._proxy import FilteringProxy


def _own_address() -> str:
    """The address this machine's default route leaves from (no packet is sent)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.connect(("192.0.2.1", 9))
        return str(s.getsockname()[0])


def _connect_seconds(proxy: FilteringProxy, target: str) -> float:
    """One CONNECT to ``target`` through ``proxy``, until its answer's status line."""
    started = time.perf_counter()
    with socket.socket(socket.AF_UNIX) as s:
        s.settimeout(10)
        s.connect(str(proxy.socket_path))
        s.sendall(f"CONNECT {target} HTTP/1.1\r\n\r\n".encode())
        answer = b""
        while b"\r\n" not in answer and (chunk := s.recv(4096)):
            answer += chunk
    took = time.perf_counter() - started
    if not answer.startswith(b"HTTP/1.1 200"):
        raise SystemExit(f"the proxy refused the probe: {answer!r}")
    return took


def _proxy(where: Path, name: str, own: str, denied: tuple[str, ...]) -> FilteringProxy:
    (where / name).mkdir(mode=0o700)
    proxy = FilteringProxy(where / name / "proxy.sock", allowed=(own,), denied=denied)
    proxy.start()
    return proxy


def _show(label: str, samples: list[float]) -> None:
    ms = sorted(s * 1000 for s in samples)
    p90 = ms[int(len(ms) * 0.9) - 1] if len(ms) >= 10 else ms[-1]
    print(f"{label:<48} median {statistics.median(ms):7.3f} ms  p90 {p90:7.3f} ms  (n={len(ms)})")


def main(rounds: int, cold: int) -> None:
    own = _own_address()
    with tempfile.TemporaryDirectory() as tmp, socket.create_server((own, 0), backlog=4096) as listener:
        where, target = Path(tmp), f"{own}:{listener.getsockname()[1]}"
        listener.setblocking(False)
        before = _proxy(where, "before", own, ("192.0.2.1",))
        after = _proxy(where, "after", own, ("192.0.2.1", "localhost"))
        times: dict[str, list[float]] = {"before": [], "after": []}
        try:
            for i in range(rounds):  # take turns, the starting one alternating
                pair = [("before", before), ("after", after)]
                for which, proxy in pair if i % 2 else pair[::-1]:
                    times[which].append(_connect_seconds(proxy, target))
                while True:  # let the listener's backlog drain
                    try:
                        listener.accept()[0].close()
                    except BlockingIOError:
                        break
        finally:
            before.close()
            after.close()
        firsts = []
        for i in range(cold):
            fresh = _proxy(where, f"cold{i}", own, ("192.0.2.1", "localhost"))
            try:
                firsts.append(_connect_seconds(fresh, target))
            finally:
                fresh.close()
    _show("address deny only (no lookup: as before)", times["before"])
    _show("with a denied name (answer cached)", times["after"])
    _show("with a denied name, first CONNECT (looked up)", firsts)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--cold", type=int, default=10)
    args = parser.parse_args()
    main(args.rounds, args.cold)
