"""Issue 20 item 6, end to end: ``pip install`` from the network index inside a bwrap sandbox, through the proxy.

``--isolated`` keeps pip from this machine's config files and ``PIP_*`` variables
(here they add ``file://`` indexes and a local wheel directory, visible through
the read-only root, which could satisfy the install without any network), and
``--index-url`` names the index pip would use from the network: its configured
``index-url`` when it has one, else PyPI's. Only that index's host and the host
its files come from are allowed; a third name is refused.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from sandbox import BackendUnavailableError, BwrapConfig, SandboxPolicy
from sandbox.bwrap import BwrapBackend, _reachable
from shellrt.supervisor import Supervisor
from tests.conftest import require

PYPI = "https://pypi.org/simple"
#: Where PyPI's index sends pip for the files themselves.
PYPI_FILES = "files.pythonhosted.org"
#: Tiny, pure Python, one wheel with no dependencies.
PACKAGE = "six==1.16.0"


def pip_network_index() -> str | None:
    """The index pip uses from the network: ``PIP_INDEX_URL``, else its configured ``index-url``, else PyPI.

    None when what pip names is not on the network (a ``file://`` index).
    """
    url = os.environ.get("PIP_INDEX_URL")
    if url is None:
        listed = subprocess.run(
            [sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True, timeout=60
        ).stdout
        for line in listed.splitlines():
            key, _, value = line.partition("=")
            if key.rpartition(".")[2] == "index-url":
                url = value.strip().strip("'\"")
    url = url or PYPI
    return url if urlsplit(url).scheme in ("http", "https") and urlsplit(url).hostname else None


def _hosts(index: str) -> tuple[str, ...]:
    host = urlsplit(index).hostname
    assert host is not None
    return (host, PYPI_FILES) if host == "pypi.org" else (host,)


def _log(backend: BwrapBackend) -> list[dict[str, object]]:
    assert backend.network_log is not None
    text = backend.network_log.read_text() if backend.network_log.exists() else ""
    return [json.loads(line) for line in text.splitlines()]


@pytest.mark.anyio
async def test_pip_installs_from_the_network_index_through_the_proxy(tmp_path: Path) -> None:
    index = pip_network_index()
    if index is None:
        pytest.skip("this machine's pip names no network index (its index-url is not http(s))")
    require(shutil.which("bwrap") is not None, "bubblewrap is not installed (apt-get install bubblewrap)")
    py = next((p for p in ("/usr/bin/python3", sys.executable) if _reachable(p)), None)
    require(py is not None, "no Python the sandbox uid may run")
    assert py is not None
    has_pip = subprocess.run([py, "-m", "pip", "--version"], capture_output=True, timeout=60).returncode == 0
    require(has_pip, f"{py} has no pip module")
    allowed = _hosts(index)
    ws = tmp_path / "ws"
    ws.mkdir()
    backend = BwrapBackend(
        BwrapConfig(), SandboxPolicy(workspace=ws, network="proxied", allowed_domains=allowed)
    )
    try:
        await backend.start()
    except BackendUnavailableError as exc:
        require(False, f"bwrap unusable here: {exc}")
    sup = Supervisor(backend, session_dir=tmp_path / "session")
    try:
        install = await sup.run(
            f"{py} -I -m pip install --isolated --no-cache-dir --disable-pip-version-check --no-input "
            f"--index-url {index} --target ./target {PACKAGE}",
            timeout_s=300,
        )
        assert install.exit_code == 0, install.preview
        assert (ws / "target" / "six.py").is_file(), install.preview
        used = await sup.run(f"PYTHONPATH=target {py} -c 'import six; print(six.__version__)'", timeout_s=60)
        assert used.preview.strip() == "1.16.0", used.preview
        # Another host, through the same proxy: refused.
        other = await sup.run(
            f"{py} -I -m pip download --isolated --no-cache-dir --no-input --retries 0 --timeout 10 "
            f"--index-url https://example.com/simple -d ./other {PACKAGE}",
            timeout_s=120,
        )
        assert other.exit_code != 0 and "from versions: none" in other.preview, other.preview
        records = _log(backend)
    finally:
        await sup.close()
        await backend.close()
    connected = {(r["host"], r["port"]) for r in records if r["allowed"]}
    assert {(h, 443 if index.startswith("https") else 80) for h in allowed} <= connected, records
    refused = [r for r in records if not r["allowed"]]
    assert refused and {r["host"] for r in refused} == {"example.com"}, records
    assert [r.host for r in backend.network_refusals] == [r["host"] for r in refused]
    if backend.network_log is not None:  # kept for the operator (something was refused): ours to remove
        shutil.rmtree(backend.network_log.parent, ignore_errors=True)
