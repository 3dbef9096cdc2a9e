"""Round 8: a task file one did not write is untrusted by default (``shellrt batch run`` without flags).

Before, such a file still chose its backend (``local``: its commands ran on the host, as the
caller; a task naming none got ``local`` too), ``trust_workspace`` (its workspace's hooks ran on
the host), ``network: host`` (the host's loopback and LAN), any allowed domain, and
``bypassPermissions`` for its tool_use calls (the model's default for a task without a mode).
Each attack below ran before; now each is refused with a one-line message naming the flag that
allows it, and each flag is shown to let it through (so the attack is real). Real runs: bwrap and
local, a real HTTP server on 127.0.0.1, real hooks.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

from shellrt.batch import Task, TaskFloor, run_sync
from tests._batch_helpers import run_cli
from tests._http_server import serve


def _cli(tmp_path: Path, lines: list[dict[str, Any]], *flags: str) -> tuple[int, str, dict[str, Any]]:
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("".join(json.dumps(t) + "\n" for t in lines))
    out = tmp_path / "results.jsonl"
    out.unlink(missing_ok=True)
    proc = run_cli(
        "run", str(tasks), "--out", str(out), "-j", "1", "--prestart", "0", "-q", *flags, timeout=180
    )
    results = {r["id"]: r for r in map(json.loads, out.read_text().splitlines())} if out.exists() else {}
    return proc.returncode, proc.stderr, results


def _tool(name: str, **given: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": f"toolu_f8_{uuid.uuid4().hex[:12]}", "name": name, "input": given}


def test_a_task_naming_local_is_refused_until_allow_task_local(tmp_path: Path) -> None:
    marker = tmp_path / "written-on-the-host"
    task = {"id": "hostile", "sandbox": "local", "commands": [f"touch {marker}"]}
    code, err, results = _cli(tmp_path, [task])
    assert code == 1 and results == {}, err
    assert "task hostile: asks for the local backend" in err and "--allow-task-local" in err
    assert not marker.exists()
    code, err, results = _cli(tmp_path, [task], "--allow-task-local")
    assert code == 0 and results["hostile"]["backend"] == "local", err
    assert marker.exists()  # the attack is real: local is no sandbox


def test_a_task_naming_no_backend_runs_in_bwrap_not_on_the_host(tmp_path: Path) -> None:
    marker = tmp_path / "written-on-the-host"
    task = {"id": "plain", "commands": [f"touch {marker} 2>/dev/null; echo ran"]}
    code, err, results = _cli(tmp_path, [task])
    assert code == 0, err
    assert results["plain"]["backend"] == "bwrap" and results["plain"]["commands"][0]["preview"] == "ran\n"
    assert not marker.exists()
    # The old default (the task file's own: local) comes back with the opt-in.
    code, err, results = _cli(tmp_path, [task], "--allow-task-local")
    assert code == 0 and results["plain"]["backend"] == "local", err
    assert marker.exists()


def test_trust_workspace_is_refused_until_allow_task_trust(tmp_path: Path) -> None:
    marker = tmp_path / "hook-ran-on-the-host"
    ws = tmp_path / "ws"
    (ws / ".claude").mkdir(parents=True)
    hook = {"type": "command", "command": f"touch {marker}"}
    (ws / ".claude" / "settings.json").write_text(
        json.dumps({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [hook]}]}})
    )
    task = {
        "id": "hooked",
        "workspace": str(ws),
        "trust_workspace": True,
        "commands": [_tool("Bash", command="echo hi")],
    }
    code, err, results = _cli(tmp_path, [task])
    assert code == 1 and results == {}, err
    assert "task hooked: trust_workspace is refused" in err and "--allow-task-trust" in err
    assert not marker.exists()
    code, err, results = _cli(tmp_path, [task], "--allow-task-trust")
    assert code == 0 and results["hooked"]["status"] == "ok", err
    assert marker.exists()  # the attack is real: a trusted workspace's hook runs on the host


def test_network_host_is_refused_until_allow_task_network(tmp_path: Path) -> None:
    with serve({"/hit": (200, {"Content-Type": "text/plain"}, b"reached")}) as server:
        port = server.server_address[1]
        fetch = f"exec 3<>/dev/tcp/127.0.0.1/{port} && printf 'GET /hit HTTP/1.0\\r\\n\\r\\n' >&3 && cat <&3"
        task = {"id": "lan", "sandbox": {"type": "bwrap", "network": "host"}, "commands": [fetch]}
        code, err, results = _cli(tmp_path, [task])
        assert code == 1 and results == {}, err
        assert "task lan: asks for network 'host'" in err and "--allow-task-network" in err
        assert server.hits["/hit"] == 0
        code, err, results = _cli(tmp_path, [task], "--allow-task-network")
        assert code == 0 and "reached" in results["lan"]["commands"][0]["preview"], err
        assert server.hits["/hit"] == 1  # the attack is real: the host's loopback answered


def test_allowed_domains_beyond_the_operators_are_refused(tmp_path: Path) -> None:
    lines: list[dict[str, Any]] = [
        {
            "id": "sub",
            "sandbox": {"type": "bwrap", "allowed_domains": ["api.example.org"]},
            "commands": ["true"],
        },
        {
            "id": "apex",
            "sandbox": {"type": "bwrap", "allowed_domains": ["example.org"]},
            "commands": ["true"],
        },
        {
            "id": "other",
            "sandbox": {"type": "bwrap", "allowed_domains": ["evil.example"]},
            "commands": ["true"],
        },
    ]
    code, err, results = _cli(tmp_path, lines)
    assert code == 1 and results == {}, err
    assert "task other: allows evil.example beyond the operator's domains" in err and "--allow-domain" in err
    # *.example.org covers its subdomains, not itself and not another domain.
    code, err, results = _cli(tmp_path, lines, "--allow-domain", "*.example.org")
    assert code == 1 and set(results) == {"sub"} and results["sub"]["status"] == "ok", (err, results)
    assert "task apex: allows example.org beyond" in err and "task other:" in err
    code, err, results = _cli(tmp_path, lines, "--allow-task-network")
    assert code == 0 and set(results) == {"sub", "apex", "other"}, err


def test_a_webfetch_allow_rule_is_network_too(tmp_path: Path) -> None:
    lines: list[dict[str, Any]] = [
        {"id": "any", "allow": ["WebFetch"], "commands": [_tool("Bash", command="true")]},
        {
            "id": "one",
            "allow": ["WebFetch(domain:evil.example)"],
            "commands": [_tool("Bash", command="true")],
        },
    ]
    code, err, results = _cli(tmp_path, lines)
    assert code == 1 and results == {}, err
    assert "task any: allows WebFetch to any domain beyond" in err
    assert "task one: allows evil.example beyond" in err
    code, err, results = _cli(tmp_path, lines, "--allow-domain", "evil.example")
    assert set(results) == {"one"}, err


def test_bypass_permissions_is_refused_and_tool_calls_get_accept_edits(tmp_path: Path) -> None:
    calls = [
        _tool("Bash", command="touch ran-by-bash"),
        _tool("Write", file_path="written.txt", content="x"),
    ]
    collect = {"files": ["ran-by-bash", "written.txt"]}
    lines: list[dict[str, Any]] = [
        {"id": "bypass", "permission_mode": "bypassPermissions", "commands": calls, "collect": collect},
        {"id": "unset", "commands": calls, "collect": collect},
    ]
    code, err, results = _cli(tmp_path, lines)
    assert code == 1 and set(results) == {"unset"}, err
    assert "task bypass: permission_mode bypassPermissions allows more than the operator's acceptEdits" in err
    assert "--permission-mode bypassPermissions" in err
    assert "tool_use commands run in acceptEdits mode" in err  # said once, for the task without a mode
    # A task without a mode: its edits inside the workspace run, a command that is not read-only does not.
    assert results["unset"]["files"] == ["written.txt"], results["unset"]
    assert "not granted" in results["unset"]["commands"][0]["preview"]
    code, err, results = _cli(tmp_path, lines, "--permission-mode", "bypassPermissions")
    assert code == 0, err
    assert results["bypass"]["files"] == results["unset"]["files"] == ["ran-by-bash", "written.txt"]


def test_collect_never_reaches_outside_the_workspace(tmp_path: Path) -> None:
    """Held before too: patterns leaving the workspace are invalid lines, links are never followed."""
    secret = tmp_path / "host-secret"
    secret.write_text("s3cret")
    lines: list[dict[str, Any]] = [
        {"id": "abs", "commands": ["true"], "collect": {"files": [str(secret)]}},
        {"id": "up", "commands": ["true"], "collect": {"files": ["../../host-secret"]}},
        {
            "id": "link",
            "commands": [f"ln -s {secret} out; ln -s / root"],
            "collect": {"files": ["out", "root/**"]},
        },
    ]
    code, err, results = _cli(tmp_path, lines, "--trust-task-file")
    assert code == 1 and set(results) == {"link"}, err
    assert "must be a relative path inside the workspace" in err
    assert results["link"]["files"] == [] and results["link"]["status"] == "ok"


def test_trust_task_file_restores_every_choice(tmp_path: Path) -> None:
    task = {
        "id": "everything",
        "sandbox": {"type": "local", "network": "host", "limits": {}},
        "trust_workspace": True,
        "permission_mode": "bypassPermissions",
        "commands": [_tool("Bash", command="echo $((6*7))")],
    }
    code, err, results = _cli(tmp_path, [task], "--trust-task-file")
    assert code == 0 and results["everything"]["backend"] == "local", err
    assert "42" in results["everything"]["commands"][0]["preview"]


def test_api_floor_defaults_are_the_clis_and_none_means_the_callers_own_tasks(tmp_path: Path) -> None:
    marker = tmp_path / "local-ran"
    tasks = [
        Task.model_validate({"id": "local", "sandbox": "local", "commands": [f"touch {marker}"]}),
        Task.model_validate(
            {"id": "host", "sandbox": {"type": "bwrap", "network": "host"}, "commands": ["true"]}
        ),
        Task.model_validate({"id": "plain", "commands": ["true"]}),
    ]
    refused: dict[str, str] = {}
    results = run_sync(
        tasks,
        concurrency=1,
        prestart=0,
        floor=TaskFloor(),
        on_refused=lambda t, e: refused.update({t.id: str(e)}),
    )
    assert [(r.id, r.backend, r.status) for r in results] == [("plain", "bwrap", "ok")], results
    assert "--allow-task-local" in refused["local"] and "--allow-task-network" in refused["host"]
    assert not marker.exists()
    # The caller built these tasks in code: without a floor they run as they say.
    results = run_sync(tasks, concurrency=1, prestart=0)
    assert sorted((r.id, r.backend, r.status) for r in results) == [
        ("host", "bwrap", "ok"),
        ("local", "local", "ok"),
        ("plain", "local", "ok"),
    ]
    assert marker.exists()


def test_without_bwrap_the_cli_says_which_flag_to_add(tmp_path: Path) -> None:
    import subprocess
    import sys

    from tests._batch_helpers import ROOT, cli_env

    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps({"id": "plain", "commands": ["true"]}) + "\n")
    empty = tmp_path / "bin"  # a PATH without bwrap
    empty.mkdir()
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "shellrt",
            "batch",
            "run",
            str(tasks),
            "--out",
            str(tmp_path / "r.jsonl"),
            "-q",
        ],
        cwd=ROOT,
        env={**cli_env(), "PATH": str(empty)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 1
    assert "bubblewrap (bwrap) is not installed" in proc.stderr and "--sandbox docker" in proc.stderr


def test_a_docker_pull_is_a_host_network_request_and_is_refused(tmp_path: Path) -> None:
    """Round 9: ``pull: always`` made the host's docker daemon fetch from a registry the task named
    (any host, any name: a channel out of every network policy). Refused like a widening key."""
    with serve({}) as server:
        image = f"127.0.0.1:{server.server_address[1]}/probe:latest"
        sandbox: dict[str, str] = {"type": "docker", "image": image, "pull": "always"}
        task: dict[str, Any] = {"id": "pull", "sandbox": sandbox, "commands": ["true"]}
        code, err, results = _cli(tmp_path, [task], "--sandbox", "docker")
        assert code == 1 and results == {}, err
        assert "task pull: sets pull: always" in err and "--allow-task-backend-keys" in err
        assert server.hits["/v2/"] == 0
        # An explicit `never` widens nothing and is not refused by the floor.
        never = {**task, "id": "never", "sandbox": {**sandbox, "pull": "never"}}
        code, err, _ = _cli(tmp_path, [never], "--sandbox", "docker", "--allow-image", image)
        assert "refused unless" not in err, err
        # The attack is real: with the opt-in, the daemon on the host asks the task's registry.
        code, err, _ = _cli(tmp_path, [task], "--sandbox", "docker", "--allow-task-backend-keys")
        assert server.hits["/v2/"] >= 1, err
