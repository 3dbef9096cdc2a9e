"""Left-overs, round 15: a file a command creates that a filename write-deny glob names is reverted.

``Edit(**/*.pem)`` / ``Write(**/.env)`` keep the file tools (and what the Bash analysis sees) from
writing such files, and bwrap binds the existing matches read-only; a script the analysis cannot
look into still creates new ones. The post-command check (`shellrt.supervisor.protect`) now takes
the session's write-deny globs as one more protected predicate: a new matching file -- made
directly, in a new subdirectory, through a directory link, as a symlink or hard link, or renamed
onto a matching name -- is moved to ``<session>/quarantine/`` and the result says "reverted after
the fact"; a name that does not match is left alone; an existing match stays as it was (bwrap
and docker bind it read-only; local, which binds nothing, gets its accepted content back). One
Runtime per backend.
"""

from __future__ import annotations

import json
import os
import secrets
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

import shellrt
from sandbox import DockerConfig
from tests._docker_support import DEBIAN, require_docker
from tests._rt13_host import host_ws, tool_result

pytestmark = pytest.mark.anyio

RULES = ["Edit(**/*.pem)", "Write(**/.env)"]
#: A script: the Bash analysis cannot see the names it writes.
MAKE = """\
echo k > new.pem
mkdir -p sub/deep && echo A=1 > sub/deep/.env
ln -s sub/deep dirlink && echo via > dirlink/via.pem
ln -s plain.txt linked.pem
ln plain.txt hard.pem
echo r > tmpname && mv tmpname renamed.pem
echo ok > keep.txt && echo ok > pem.txt && mkdir -p fresh && echo ok > fresh/notes.md
echo x >> old.pem 2>/dev/null || echo old-refused
(setsid sh -c 'sleep 0.2; echo d > detached.pem' >/dev/null 2>&1 &)
echo made
"""
#: A background task that writes a matching name after the foreground command ended.
LATER = "while [ ! -e go ]; do sleep 0.02; done; echo late > late.pem; touch later-done\n"
CREATED = ["new.pem", "sub/deep/.env", "sub/deep/via.pem", "linked.pem", "hard.pem", "renamed.pem"]
KEPT = ["keep.txt", "pem.txt", "fresh/notes.md", "plain.txt", "tmp.key"]
#: As uid 65534 (`tests._nonroot`) there is no docker socket: the root run covers docker.
BACKENDS = ["bwrap", "local", *(["docker"] if os.geteuid() == 0 else [])]
#: The Runtime, the first command's result, the session directory, the workspace as the check sees it.
Made = tuple[shellrt.Runtime, str, Path, Path]


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module", params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    if request.param == "docker":
        require_docker()
    return str(request.param)


@pytest.fixture(scope="module")
def ws(backend: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    mp = pytest.MonkeyPatch()
    try:
        for path in host_ws(tmp_path_factory.mktemp("trust"), mp, f"left15-{backend}-"):
            path.chmod(0o777)
            (path / "old.pem").write_text("old key\n")
            (path / "old.pem").chmod(0o666)
            (path / "plain.txt").write_text("plain\n")
            (path / "plain.txt").chmod(0o666)
            (path / "tmp.key").write_text("not named by a rule\n")
            (path / "mk.sh").write_text(MAKE)
            (path / "later.sh").write_text(LATER)
            yield path
    finally:
        mp.undo()


@pytest.fixture(scope="module")
async def made(
    ws: Path, backend: str, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[Made]:
    session = tmp_path_factory.mktemp("session") / "s"
    sandbox: Any = DockerConfig(image=DEBIAN) if backend == "docker" else backend
    async with shellrt.Runtime(
        ws, sandbox, session_dir=session, mode="bypassPermissions", deny=RULES
    ) as runtime:
        text, failed = await tool_result(runtime, "Bash", {"command": "sh mk.sh"})
        assert "made" in text and not failed, text
        assert runtime.backend is not None
        # docker's copy mode: the session's own copy of the workspace (what the check watches)
        view = Path(str(runtime.backend.to_host_path(runtime.backend.workspace)))
        yield runtime, text, session, view


def _audit(session: Path) -> list[dict[str, Any]]:
    path = session / "audit.jsonl"
    lines = path.read_text().splitlines() if path.exists() else []
    return [json.loads(line) for line in lines if '"protected_path_reverted"' in line]


async def test_new_matching_files_are_quarantined(made: Made, backend: str) -> None:
    _, text, session, ws = made
    assert "reverted after the fact" in text, text
    records = {r["path"]: r for r in _audit(session)}
    for rel in CREATED:
        assert not os.path.lexists(ws / rel), (rel, text)
        assert rel in text, (rel, text)
        record = records[rel]
        assert record["kind"] == "denied" and "Edit(**/*.pem)" in record["rule"] + str(
            records.get("new.pem", {}).get("rule")
        )
        assert os.path.lexists(record["quarantine"]), record
        assert record["quarantine"] in text or os.path.dirname(record["quarantine"]) in text
    assert (Path(records["new.pem"]["quarantine"])).read_text() == "k\n"
    assert "Write(**/.env)" in records["sub/deep/.env"]["rule"]


async def test_what_no_rule_names_is_left_alone(made: Made, backend: str) -> None:
    _, text, session, ws = made
    for rel in KEPT:
        assert (ws / rel).is_file(), rel
        assert rel not in {r["path"] for r in _audit(session)}, rel
    assert (ws / "plain.txt").read_text() == "plain\n"  # a hard link's other name: not touched
    assert (ws / "dirlink").is_symlink() and (ws / "sub/deep").is_dir()


async def test_the_existing_match_keeps_its_content(made: Made, backend: str) -> None:
    """bwrap and docker: bound read-only (the write fails); local: changed, then put back."""
    _, text, _, ws = made
    assert (ws / "old.pem").read_text() == "old key\n"
    if backend != "local":  # bwrap and docker bind it read-only
        assert "old-refused" in text, text
    else:
        assert "old.pem" in text and "restored" in text, text


async def test_a_later_writer_is_caught_by_the_next_check(
    made: Made, backend: str
) -> None:
    """A background task writes after the command ended; the next command's check reverts it.
    The detached child of the first command was ended with it (nothing of it is left)."""
    rt, _, session, ws = made
    started, failed = await tool_result(
        rt, "Bash", {"command": "sh later.sh", "run_in_background": True}
    )
    assert not failed, started
    (ws / "go").write_text("")
    with anyio.fail_after(20):
        while not (ws / "later-done").exists():
            await anyio.sleep(0.02)
    text, _ = await tool_result(rt, "Bash", {"command": "echo next-" + secrets.token_hex(2)})
    assert "late.pem" in text and "reverted after the fact" in text, text
    assert not (ws / "late.pem").exists()
    assert "late.pem" in {r["path"] for r in _audit(session)}
    assert not (ws / "detached.pem").exists()


async def test_a_rule_added_mid_session_counts(made: Made, backend: str) -> None:
    """A deny rule added to the live rule set after the start: new matches are reverted, a file
    that matched nothing when it was made (before the rule) is kept."""
    rt, _, session, ws = made
    from shellrt.permissions.rules import RuleOrigin, parse_rule

    (ws / "mid.sh").write_text("echo m > mid.cfg\n")
    await tool_result(rt, "Bash", {"command": "sh mid.sh"})
    assert (ws / "mid.cfg").exists()
    rt.governance.engine.rules.add(parse_rule("Write(**/*.cfg)", "deny", RuleOrigin("session", root=rt.workspace)))
    (ws / "mid2.sh").write_text("echo n > mid2.cfg\n")
    text, _ = await tool_result(rt, "Bash", {"command": "sh mid2.sh"})
    assert not (ws / "mid2.cfg").exists() and "mid2.cfg" in text, text
    assert (ws / "mid.cfg").read_text() == "m\n"


PATTERNS = [
    "**/*.pem",
    "*.pem",
    ".env",
    "./sub/**",
    "sub/*.key",
    "*.{pem,key}",
    "a[bc]d.txt",
    "x[!]a]y",
    "**/deep/**",
    "/x/y.pem",
    "b\\*c",
    "**/caf\u00e9.txt",
    "{a\\},b}.txt",
]
NAMES = [
    "k.pem",
    "sub/deep/k.pem",
    "pem",
    "k.pem.txt",
    ".env",
    "sub/.env",
    "sub/x",
    "sub/a.key",
    "sub/deep/a.key",
    "k.key",
    "abd.txt",
    "aed.txt",
    "x]y",
    "xay",
    "other/deep/f",
    "x/y.pem",
    "z/x/y.pem",
    "b*c",
    "bxc",
    "cafe\u0301.txt",
    "d/caf\u00e9.txt",
    "a}.txt",
    "b.txt",
    "k.pem/inner",
]


def test_the_check_matches_as_the_permission_layer_does(tmp_path: Path) -> None:
    """The guard's fast matcher (literal pre-filter, covered directories) against the rules' own
    `match_item`, rule by rule and path by path: it must name the same files."""
    from shellrt.permissions.rules import RuleOrigin, parse_rule
    from shellrt.permissions.ruleset import RuleSet
    from shellrt.runtime.write_deny_globs import WriteDenyGlobs

    root = str(tmp_path)
    for pattern in PATTERNS:
        rule = parse_rule(f"Edit({pattern})", "deny", RuleOrigin("cli", root=tmp_path))
        deny = WriteDenyGlobs(RuleSet([rule], home=tmp_path))
        deny.version()
        for name in NAMES:
            path = f"{root}/{name}"
            expected = rule.match_item(path, home=tmp_path, resolve=False)
            assert (deny.match(path, root) is not None) == expected, (pattern, name, expected)
