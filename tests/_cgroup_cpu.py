"""Each test file's whole CPU, daemonised children included, from its own cpuacct cgroup (round 56).

The per-test log (``tests/_cpu_log.py``) sees only what a test reaps; a suite-time round also
needs what zygotes, init servers, proxies and sandboxes cost after they leave the test's process
tree. A process and everything it forks stays in the cgroup v1 ``cpuacct`` group it started in,
so each file here runs in ``/sys/fs/cgroup/cpuacct/shellrt-r56-suite56-<n>`` and its
``cpuacct.usage`` is the whole bill. Files run one at a time, so the Docker side's delta (dockerd,
containerd and the ``docker`` group of containers) is the file's, other users of the daemon aside.

Inside a file, every Python process that sees ``SHELLRT_CGROUP_CPU_CHILDREN`` writes its own CPU
and argv at exit (a ``sitecustomize`` on ``PYTHONPATH``), and ``SHELLRT_TEST_CPU_LOG`` gives the
pytest process's own CPU and what each test reaped; the cgroup total less those is non-Python work
(bwrap, shells, the docker CLI), processes killed before their exit handlers, and kernel work.

Root only; measurement, not a test (round 56's table: docs/performance.md "Suite time, round 56")::

    python3 -m tests._cgroup_cpu OUT_DIR tests/test_a.py tests/test_b.py ...   # a runner
    python3 -m tests._cgroup_cpu --no-docker OUT_DIR (same files)   # a second one, beside it
    python3 -m tests._cgroup_cpu --report OUT_DIR   # the tables, in Markdown
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup/cpuacct")
PREFIX = "shellrt-r56-suite56-"
CHILD_VARIABLE = "SHELLRT_CGROUP_CPU_CHILDREN"
ROOT = Path(__file__).resolve().parent.parent

SITECUSTOMIZE = f'''
import os as _os
if _os.environ.get("{CHILD_VARIABLE}"):
    import atexit as _atexit, sys as _sys

    def _shellrt_cgroup_cpu_log(_dir=_os.environ["{CHILD_VARIABLE}"]):
        try:
            import resource
            own = resource.getrusage(resource.RUSAGE_SELF)
            line = "%d\\t%d\\t%.3f\\t%s\\n" % (_os.getpid(), _os.getppid(), own.ru_utime + own.ru_stime,
                                              " ".join(_sys.orig_argv)[:300].replace("\\n", " "))
            with open(_os.path.join(_dir, "children.tsv"), "a") as f:
                f.write(line)
        except Exception:
            pass

    _atexit.register(_shellrt_cgroup_cpu_log)
'''


def docker_seconds() -> tuple[float, float]:
    """CPU seconds so far of dockerd and containerd (with what they reaped), and of the containers."""
    tick = os.sysconf("SC_CLK_TCK")
    daemons = 0.0
    pids = subprocess.run(["pidof", "dockerd", "containerd"], capture_output=True, text=True).stdout.split()
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        daemons += sum(int(f) for f in fields[11:15]) / tick
    usage = CGROUP_ROOT / "docker" / "cpuacct.usage"
    containers = int(usage.read_text()) / 1e9 if usage.exists() else 0.0
    return daemons, containers


def process_kind(cmdline: str) -> str:
    """What a process of a test file is, by its command line."""
    words = cmdline.split()
    if not words:
        return "unnamed (kernel thread or exited)"
    program = Path(words[0]).name
    if "python" in program:
        if "-m shellrt" in cmdline or " -m shellrt." in cmdline:
            return "shellrt CLI"
        if "-m pytest" in cmdline or (len(words) > 1 and Path(words[1]).name == "pytest"):
            return "pytest"
        return "other Python"
    if program == "bwrap":
        return "bwrap"
    if program in ("docker", "docker-init", "containerd-shim", "containerd-shim-runc-v2", "runc"):
        return "docker CLI and shims"
    if program in ("sh", "bash", "dash"):
        return "shells"
    return "other programs"


class Sampler:
    """Each process of a cgroup, its CPU as last seen (every 0.1 s), by kind.

    A process that lives less than a sample's interval, and a process's last interval, are missed:
    the cgroup total less the sum here is that, and kernel work.
    """

    def __init__(self, group: Path) -> None:
        self._group = group
        self._seen: dict[tuple[str, str], tuple[str, float]] = {}
        self.commands: dict[tuple[str, str], str] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._tick = os.sysconf("SC_CLK_TCK")
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(0.1):
            try:
                pids = (self._group / "cgroup.procs").read_text().split()
            except OSError:
                return
            for pid in pids:
                try:
                    stat = Path(f"/proc/{pid}/stat").read_text()
                    fields = stat.rsplit(")", 1)[1].split()
                    key = (pid, fields[19])
                    if key in self._seen:
                        kind = self._seen[key][0]
                    else:
                        cmd = (
                            Path(f"/proc/{pid}/cmdline")
                            .read_bytes()
                            .replace(b"\0", b" ")
                            .decode(errors="replace")
                        )
                        kind = process_kind(cmd)
                        self.commands[key] = cmd[:240]
                    self._seen[key] = (kind, (int(fields[11]) + int(fields[12])) / self._tick)
                except (OSError, IndexError):
                    continue

    def processes(self) -> list[tuple[str, float]]:
        """The command line and CPU of each process seen using at least 0.05 s."""
        return [(self.commands.get(key, ""), cpu) for key, (_, cpu) in self._seen.items() if cpu >= 0.05]

    def stop(self) -> dict[str, float]:
        self._stop.set()
        self._thread.join()
        kinds: dict[str, float] = {}
        for kind, cpu in self._seen.values():
            kinds[kind] = round(kinds.get(kind, 0.0) + cpu, 3)
        return kinds


def run_file(out: Path, number: int, test_file: str, site: Path, timeout: float = 600) -> dict[str, object]:
    """``test_file`` under pytest in a cgroup of its own; its CPU bill."""
    group = CGROUP_ROOT / f"{PREFIX}{number}"
    group.mkdir()
    logs = out / f"f{number}"
    logs.mkdir()
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), str(site)]),
        CHILD_VARIABLE: str(logs),
        "SHELLRT_TEST_CPU_LOG": str(logs / "tests"),
        "CI": "true",
        "SHELLRT_EXPECT_COMPILED": "0",
    }
    # As scripts/test.sh: bytecode is written and reused, or every child compiles every module.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist", test_file]
    daemons0, containers0 = docker_seconds()
    wall = time.monotonic()
    sampler = Sampler(group)
    try:
        with open(logs / "pytest.out", "wb") as output:
            # The shell joins the group before exec, so pytest and all it forks are in it.
            child = subprocess.Popen(
                ["sh", "-c", f'echo $$ > {group}/cgroup.procs && exec "$@"', "sh", *argv],
                stdout=output,
                stderr=subprocess.STDOUT,
                env=env,
                cwd=ROOT,
            )
            try:
                status = child.wait(timeout)
            except subprocess.TimeoutExpired:
                child.kill()
                status = child.wait()
        wall = time.monotonic() - wall
        # Daemonised leftovers of the file still count; give them a moment to end, bounded.
        deadline = time.monotonic() + 5
        while (group / "cgroup.procs").read_text().strip() and time.monotonic() < deadline:
            time.sleep(0.1)
        leftovers = (group / "cgroup.procs").read_text().split()
        usage = int((group / "cpuacct.usage").read_text()) / 1e9
        kinds = sampler.stop()
        percpu = [int(v) / 1e9 for v in (group / "cpuacct.usage_percpu").read_text().split()]
    finally:
        for pid in (group / "cgroup.procs").read_text().split():
            (CGROUP_ROOT / "cgroup.procs").write_text(pid)  # moved out, so the group can go
        group.rmdir()
    daemons1, containers1 = docker_seconds()
    return {
        "file": test_file,
        "status": status,
        "wall": round(wall, 3),
        "cgroup": round(usage, 3),
        "percpu": [round(v, 3) for v in percpu],
        "leftover_pids": len(leftovers),
        "docker_daemons": round(daemons1 - daemons0, 2),
        "docker_containers": round(containers1 - containers0, 2),
        "kinds": kinds,
        "processes": sampler.processes(),
    }


def main(out: Path, files: list[str], order: list[str] | None = None) -> None:
    out.mkdir(parents=True, exist_ok=True)
    site = out / "site"
    site.mkdir(exist_ok=True)
    (site / "sitecustomize.py").write_text(SITECUSTOMIZE)
    results = out / "results.jsonl"
    index = {f: n for n, f in enumerate(files)}

    claims = out / "claims"
    claims.mkdir(exist_ok=True)

    def one(test_file: str) -> None:
        try:  # a second run over the same list (more runners in parallel) takes what is left
            (claims / str(index[test_file])).mkdir()
        except FileExistsError:
            return
        result = run_file(out, index[test_file], test_file, site)
        with open(results, "a") as f:
            f.write(json.dumps(result) + "\n")
        print(json.dumps(result), flush=True)

    # One at a time in this runner, so the Docker side's delta is this file's (other users of the
    # daemon aside); a second runner with ``--no-docker`` takes, from the end, the files that do not
    # mention docker.
    for test_file in files if order is None else order:
        one(test_file)


def file_kind(test_file: str) -> str:
    """The kinds round 54 split the lane by (a file with a non-root twin first)."""
    name = Path(test_file).name
    text = (ROOT / test_file).read_text()
    if any(word in text for word in ("run_as_nobody", "shared_run", "held_as_nobody")):
        return "non-root twins"
    if name.startswith("test_analysis_"):
        return "analysis"
    for word in ("docker", "mcp"):
        if word in name:
            return f"{word}-named"
    if "bwrap" in name or "zygote" in name:
        return "bwrap-named"
    return "rest"


def report_kind(command: str, test_file: str) -> str:
    """`process_kind`, finer: which pytest, which CLI subcommand, which Python program."""
    words = command.split()
    if not words:
        return "unnamed"
    if "python" not in Path(words[0]).name:
        return (
            process_kind(command)
            if process_kind(command) != "other programs"
            else f"other: {Path(words[0]).name}"
        )
    if "-m shellrt" in command:
        after = words[words.index("shellrt") + 1 :] if "shellrt" in words else []
        return f"shellrt CLI ({after[0] if after else '?'})"
    if f"-p no:xdist {test_file}" in command:
        return "the test file's pytest"
    if "-m pytest" in command or words[0] == "/usr/bin/python3":
        return "non-root twin (uid 65534 pytest)"
    if "NONROOT-COLLECTED" in command or "packages_distributions" in command:
        return "non-root twin's root collection"
    if "server.py" in command or "_mcp_test_server" in command:
        return "MCP test servers (SDK)"
    if "sandbox" in command:
        return "sandbox Python helpers"
    return "other Python"


def start_ups(out: Path) -> dict[str, float]:
    """Each file's pytest start-up and collection (CPU to the end of collection, from the per-test log):
    paid per file here, once per worker in the lane."""
    return {name: start for name, (start, _) in per_test_logs(out).items()}


def per_test_logs(out: Path) -> dict[str, tuple[float, float]]:
    """Each file's start-up and collection, and all its per-test log saw (the test process's CPU and
    what it reaped, start-up included): the cgroup's total less that is what the log cannot see."""
    found: dict[str, tuple[float, float]] = {}
    for log in out.glob("f*/tests/*.tsv"):
        start, seen, name = 0.0, 0.0, ""
        for line in log.read_text().splitlines():
            fields = line.split("\t")
            seen += float(fields[1]) + float(fields[2])
            if fields[0] == "<collection>":
                start = float(fields[1]) + float(fields[2])
            elif not name:
                name = fields[0].split("::")[0]
        if name:
            found[name] = (start, seen)
    return found


def report(out: Path) -> str:
    """Markdown tables of a measurement: by file kind, by process kind, the top 40 files. A file's CPU
    here leaves out its pytest start-up and collection (`start_ups`), which the lane pays per worker."""
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    starts = start_ups(out)
    by_file_kind: dict[str, list[float]] = {}
    by_process: dict[str, float] = {}
    files: list[tuple[float, str, str, float, str]] = []
    for row in rows:
        docker = float(row["docker_daemons"]) + float(row["docker_containers"])
        start = starts.get(row["file"], 0.0)
        total = float(row["cgroup"]) + docker - start
        kind = file_kind(row["file"])
        count_cpu = by_file_kind.setdefault(kind, [0, 0.0])
        count_cpu[0] += 1
        count_cpu[1] += total
        mine: dict[str, float] = {}
        for command, cpu in row.get("processes", []):
            name = report_kind(command, row["file"])
            mine[name] = mine.get(name, 0.0) + cpu - (start if name == "the test file's pytest" else 0.0)
        for name, cpu in mine.items():
            by_process[name] = by_process.get(name, 0.0) + cpu
        unsampled = "unsampled (processes under 0.1 s, last intervals, kernel)"
        by_process[unsampled] = (
            by_process.get(unsampled, 0.0) + float(row["cgroup"]) - start - sum(mine.values())
        )
        docker_side = "Docker side (dockerd, containerd, containers)"
        by_process[docker_side] = by_process.get(docker_side, 0.0) + docker
        largest = ", ".join(f"{n} {c:.1f}" for n, c in sorted(mine.items(), key=lambda kv: -kv[1])[:3])
        files.append((total, row["file"], kind, docker, largest))
    whole = sum(f[0] for f in files)
    logs = per_test_logs(out)
    logged = [row for row in rows if row["file"] in logs]
    seen = sum(logs[row["file"]][1] for row in logged)
    in_groups = sum(float(row["cgroup"]) for row in logged)
    lines = [
        f"{len(rows)} files, {whole:.0f} CPU seconds (less {sum(starts.values()):.0f} of pytest start-ups); "
        f"the per-test log saw {seen:.0f} of its files' {in_groups:.0f} cgroup seconds",
        "",
        "| file kind | files | CPU s | share |",
        "|---|---|---|---|",
    ]
    for kind, (count, cpu) in sorted(by_file_kind.items(), key=lambda kv: -kv[1][1]):
        lines.append(f"| {kind} | {count:.0f} | {cpu:.0f} | {100 * cpu / whole:.0f}% |")
    lines += ["", "| process kind | CPU s | share |", "|---|---|---|"]
    for name, cpu in sorted(by_process.items(), key=lambda kv: -kv[1]):
        lines.append(f"| {name} | {cpu:.1f} | {100 * cpu / whole:.1f}% |")
    lines += ["", "| file | kind | CPU s | Docker side | largest processes |", "|---|---|---|---|---|"]
    for total, name, kind, docker, largest in sorted(files, reverse=True)[:40]:
        lines.append(f"| {name.removeprefix('tests/')} | {kind} | {total:.1f} | {docker:.1f} | {largest} |")
    return "\n".join(lines)


if __name__ == "__main__":
    if sys.argv[1] == "--report":
        print(report(Path(sys.argv[2])))
        sys.exit(0)
    if sys.argv[1] == "--no-docker":
        out, chosen = Path(sys.argv[2]), sys.argv[3:]
        keep = [f for f in chosen if "docker" not in (ROOT / f).read_text()]
        main(out, chosen, order=keep[::-1])
    else:
        main(Path(sys.argv[1]), sys.argv[2:])
