"""Glob and Grep: the same results with ripgrep and with the pure-Python fallback."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import anyio
import pytest

from shellrt.protocol import Tool, ToolContext, ToolExecutionError
from shellrt.tools._gitignore import compile_glob
from shellrt.tools._search import NO_RIPGREP_ENV
from shellrt.tools.glob import GlobTool, split_pattern
from shellrt.tools.grep import GrepTool
from tests.conftest import IN_CI, require

HAVE_RG = shutil.which("rg") is not None

FILES: dict[str, bytes] = {
    ".gitignore": b"*.log\n!keep.log\nnode_modules/\n/build/*\n!/build/keep\n# comment\nd/e/*.tmp\n**/gen/**\n*.py[co]\n\\#lit\n",
    ".ignore": b"secret*\n",
    "a/.rgignore": b"!secret_ok\n",
    "docs/.gitignore": b"*.md\n!README.md\n",
    "nested/.gitignore": b"x/\n",
    "sub/.git/info/exclude": b"local.txt\n",
    "sub/.git/HEAD": b"ref: refs/heads/main\n",
    "a/x.log": b"hello log\n",
    "a/keep.log": b"hello keep\n",
    "a/b/c/deep.py": b"def hello():\n    return 'world'\n\n\nclass Hello:\n    pass\n",
    "a/b/c/deep.pyc": b"hello pyc\n",
    "node_modules/pkg/i.js": b"hello js\n",
    "build/out.o": b"hello o\n",
    "build/keep/k.txt": b"hello k\n",
    ".github/workflows/ci.yml": b"name: hello\non: push\n",
    "d/e/t.tmp": b"hello\n",
    "d/e/ok.txt": b"first\nhello\nmiddle\nmiddle2\nmiddle3\nmiddle4\nhello again\nlast\n",
    "a/gen/g.py": b"hello gen\n",
    "sp ace/s p.txt": b"Hello Upper\nhello lower\n",
    "secret1": b"hello secret\n",
    "a/secret_ok": b"hello secret ok\n",
    "sub/local.txt": b"hello local\n",
    "sub/x.log": b"hello nested repo log\n",
    "sub/kept.txt": b"hello kept\n",
    "docs/README.md": b"# Hello\n\nhello docs\n",
    "docs/guide.md": b"hello guide\n",
    "nested/x/in.txt": b"hello in\n",
    "nested/y.txt": b"hello y\n",
    "main.py": b"import os\n\ndef main():\n    print('hello')\n",
    "web/app.ts": b"const hello = 1;\r\nexport default hello;\r\n",
    "web/app.tsx": b"\xef\xbb\xbfhello tsx\n",
    "latin.txt": b"caf\xe9 hello\n",
    "a/bin.dat": b"bin\x00ary hello\n",
    "big/late_nul.txt": b"hello early\n" + b"x" * 100_000 + b"\x00\n",
    "multi.txt": b"start block\nline one\nend block\nstart block\nend block\n",
}


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("tree")
    for i, (rel, data) in enumerate(FILES.items()):
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        os.utime(path, ns=(1_700_000_000_000_000_000 + i * 1_000_000_000,) * 2)
    (root / "link.py").symlink_to(root / "main.py")
    os.mkfifo(root / "fifo")
    return root


def make_ctx(root: Path) -> ToolContext:
    return ToolContext(
        session_id="s", session_dir=root / ".session", workspace=root, cwd=str(root), allowed_roots=(root,)
    )


def run(tool: Tool[Any, Any], ctx: ToolContext, raw: dict[str, Any]) -> str:
    async def go() -> str:
        inp = tool.parse_input(raw)
        v = await tool.validate(inp, ctx)
        if not v.ok:
            raise ToolExecutionError(v.message)
        out = await tool.call(inp, ctx)
        content = tool.to_model_content(out.data)
        assert isinstance(content, str)
        return content

    return anyio.run(go)


def both(monkeypatch: pytest.MonkeyPatch, tool: Tool[Any, Any], ctx: ToolContext, raw: dict[str, Any]) -> str:
    """Run with ripgrep and with the fallback; assert identical output; return it."""
    monkeypatch.setenv(NO_RIPGREP_ENV, "1")
    fallback = run(tool, ctx, raw)
    if not HAVE_RG:  # pragma: no cover - CI images have rg
        if IN_CI:  # the ripgrep half of the comparison must never silently drop out of CI
            pytest.fail("ripgrep (rg) is required in CI for the differential comparison")
        return fallback
    monkeypatch.delenv(NO_RIPGREP_ENV)
    with_rg = run(tool, ctx, raw)
    assert with_rg == fallback, raw
    return with_rg


GLOB_CASES: list[dict[str, Any]] = [
    {"pattern": "**/*"},
    {"pattern": "*.py"},
    {"pattern": "**/*.txt"},
    {"pattern": "a/**"},
    {"pattern": "*.{ts,tsx}"},
    {"pattern": "*", "path": "sub"},
    {"pattern": "*", "path": "docs"},
    {"pattern": "**/*.md", "path": "nested"},
    {"pattern": "*.txt", "limit": 3},
    {"pattern": "[sm]*"},
    {"pattern": "nomatch*"},
]


@pytest.mark.parametrize("raw", GLOB_CASES, ids=[str(c) for c in GLOB_CASES])
def test_glob_identical_with_and_without_ripgrep(
    tree: Path, monkeypatch: pytest.MonkeyPatch, raw: dict[str, Any]
) -> None:
    both(monkeypatch, GlobTool(), make_ctx(tree), raw)


def test_glob_semantics(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = both(monkeypatch, GlobTool(), make_ctx(tree), {"pattern": "**/*"})
    listed = {os.path.relpath(p, tree) for p in out.splitlines()}
    assert "a/x.log" not in listed and "a/keep.log" in listed  # negation re-includes
    assert not any(p.startswith("node_modules") for p in listed)  # ignored dir not entered
    assert "build/out.o" not in listed and "build/keep/k.txt" in listed  # anchored + negated
    assert "sub/local.txt" not in listed and "sub/x.log" in listed  # .git/info/exclude; repo boundary
    assert "secret1" not in listed and "a/secret_ok" in listed  # .ignore, .rgignore precedence
    assert "docs/guide.md" not in listed and "docs/README.md" in listed
    assert "nested/x/in.txt" not in listed and "nested/y.txt" in listed
    assert "a/gen/g.py" not in listed and "a/b/c/deep.pyc" not in listed
    assert ".github/workflows/ci.yml" in listed  # hidden files included
    assert (
        not any(p.startswith("sub/.git/") for p in listed)
        and "link.py" not in listed
        and "fifo" not in listed
    )
    # newest first
    assert out.splitlines()[0].endswith("multi.txt")


def test_glob_limit_note_and_absolute_pattern(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = both(monkeypatch, GlobTool(), make_ctx(tree), {"pattern": "**/*", "limit": 2})
    assert "truncated" in out and len([ln for ln in out.splitlines() if ln.startswith("/")]) == 2
    out = both(monkeypatch, GlobTool(), make_ctx(Path("/")), {"pattern": f"{tree}/a/**/*.py"})
    assert out.strip() == str(tree / "a/b/c/deep.py")
    assert split_pattern("/x/y/*.py", None) == ("/x/y", "*.py")
    assert split_pattern("../../*.py", "src") == ("src/../..", "*.py")
    out = both(monkeypatch, GlobTool(), make_ctx(tree / "a" / "b"), {"pattern": "../../*.py"})
    assert out.splitlines()[0] == str(tree / "main.py")


GREP_CASES: list[dict[str, Any]] = [
    {"pattern": "hello"},
    {"pattern": "hello", "output_mode": "content"},
    {"pattern": "hello", "output_mode": "count"},
    {"pattern": "HELLO", "-i": True, "output_mode": "content"},
    {"pattern": "hello", "output_mode": "content", "-C": 1},
    {"pattern": "hello", "output_mode": "content", "-A": 2, "-n": False},
    {"pattern": "middle", "output_mode": "content", "-B": 3},
    {"pattern": "hello", "glob": "*.py"},
    {"pattern": "hello", "glob": "*.log"},
    {"pattern": "hello", "glob": "*.{ts,tsx}", "output_mode": "content"},
    {"pattern": "hello", "glob": "!*.txt"},
    {"pattern": "hello", "glob": "a/**"},
    {"pattern": "hello", "type": "py", "output_mode": "content"},
    {"pattern": "hello", "type": "ts"},
    {"pattern": "start.*?end", "multiline": True, "output_mode": "content"},
    {"pattern": "block\\nline", "multiline": True, "output_mode": "count"},
    {"pattern": "^def \\w+", "output_mode": "content"},
    {"pattern": "hello;$", "output_mode": "content"},
    {"pattern": "café", "output_mode": "content"},
    {"pattern": "hello", "path": "d/e/ok.txt", "output_mode": "content"},
    {"pattern": "hello", "path": "sub", "output_mode": "content"},
    {"pattern": "hello", "head_limit": 3, "offset": 2, "output_mode": "content"},
    {"pattern": "hello", "head_limit": 2},
    {"pattern": "zzz_nothing"},
    {"pattern": "-dash"},
]


@pytest.mark.parametrize("raw", GREP_CASES, ids=[str(c) for c in GREP_CASES])
def test_grep_identical_with_and_without_ripgrep(
    tree: Path, monkeypatch: pytest.MonkeyPatch, raw: dict[str, Any]
) -> None:
    both(monkeypatch, GrepTool(), make_ctx(tree), raw)


def test_grep_semantics(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ctx = make_ctx(tree)
    files = both(monkeypatch, GrepTool(), ctx, {"pattern": "hello"}).splitlines()
    assert files[0].startswith("Found ")
    rels = {os.path.relpath(p, tree) for p in files[1:]}
    assert "a/bin.dat" not in rels and "big/late_nul.txt" not in rels  # binary skipped
    assert "a/x.log" not in rels and "main.py" in rels
    content = both(monkeypatch, GrepTool(), ctx, {"pattern": "hello", "output_mode": "content", "-C": 1})
    assert "d/e/ok.txt-1-first\nd/e/ok.txt:2:hello\nd/e/ok.txt-3-middle\n--\n" in content
    count = both(monkeypatch, GrepTool(), ctx, {"pattern": "block", "output_mode": "count"})
    assert "multi.txt:4" in count
    multi = both(
        monkeypatch, GrepTool(), ctx, {"pattern": "start.*?end", "multiline": True, "output_mode": "content"}
    )
    assert "multi.txt:2:line one" in multi
    paged = both(monkeypatch, GrepTool(), ctx, {"pattern": "hello", "head_limit": 2})
    assert "offset=2" in paged
    with_glob = both(monkeypatch, GrepTool(), ctx, {"pattern": "hello", "glob": "*.log"})
    # ripgrep's rule: an explicit glob re-includes ignored files in non-ignored directories
    assert "a/x.log" in with_glob


def test_grep_errors(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ctx = make_ctx(tree)
    for env in ("1", None):
        if env:
            monkeypatch.setenv(NO_RIPGREP_ENV, env)
        else:
            monkeypatch.delenv(NO_RIPGREP_ENV, raising=False)
        with pytest.raises(ToolExecutionError, match="(?i)regular expression|regex|invalid"):
            run(GrepTool(), ctx, {"pattern": "foo(("})
    with pytest.raises(ToolExecutionError, match="binary file"):
        run(GrepTool(), ctx, {"pattern": "hello", "path": "a/bin.dat"})
    with pytest.raises(ToolExecutionError, match="Unknown type"):
        run(GrepTool(), ctx, {"pattern": "x", "type": "cobol"})
    with pytest.raises(ToolExecutionError, match="does not exist"):
        run(GrepTool(), ctx, {"pattern": "x", "path": "nope"})


def test_compile_glob_edges() -> None:
    assert compile_glob("**/*.py").match("a/b/c.py") and compile_glob("**/*.py").match("c.py")
    assert not compile_glob("*.py").match("a/c.py")
    assert compile_glob("a/**").match("a/b/c") and not compile_glob("a/**").match("a")
    assert compile_glob("a/**/b").match("a/b") and compile_glob("a/**/b").match("a/x/y/b")
    assert (
        compile_glob("*.{js,ts}").match("x.ts")
        and compile_glob("[!a]*").match("b")
        and not compile_glob("[!a]*").match("a")
    )
    assert compile_glob("\\*").match("*") and not compile_glob("\\*").match("x")


_DIRS = ["a", "b", "c", ".h", "node_modules", "docs"]
_NAMES = ["x.py", "y.txt", "z.log", "keep.log", ".env", "README.md", "n.bin", "a.txt", "w.PY"]
_PATTERNS = [
    "*.log",
    "!keep.log",
    "/a",
    "b/",
    "*.py",
    "!x.py",
    "a/**/y.txt",
    "**/c",
    "c/*",
    "?.txt",
    "[xy].*",
    "{x,y}.py",
    ".h/",
    "z.*",
    "!*.md",
    "README*",
    "docs",
    "# c",
    "*",
    "!b",
    "a/",
    "/c/*.txt",
    "**/b/**",
    "*.PY",
    "!/a/x.py",
    "y.txt/",
    "**",
    "!**/",
    "a/b",
]
_GREP_GLOBS = ["*.py", "*.txt", "a/**", "!*.log", "*.{py,txt}", "x.*", "c/*"]


def _random_tree(root: Path, rng: Any) -> None:
    dirs = [""]
    for _ in range(rng.randint(2, 7)):
        parent = rng.choice(dirs)
        child = f"{parent}{rng.choice(_DIRS)}/"
        if child.count("/") <= 3 and child not in dirs:
            dirs.append(child)
    for d in dirs:
        (root / d).mkdir(parents=True, exist_ok=True)
        for name in rng.sample(_NAMES, rng.randint(1, 4)):
            words = [
                rng.choice(["alpha", "beta", "Gamma", "def f():", "TODO fix", ""])
                for _ in range(rng.randint(0, 6))
            ]
            body = "\n".join(words).encode() + (b"\n" if rng.random() < 0.8 else b"")
            if name.endswith(".bin"):
                body = b"alpha\x00beta\n"
            (root / d / name).write_bytes(body)
        for kind in (".gitignore", ".ignore", ".rgignore"):
            if rng.random() < (0.5 if kind == ".gitignore" else 0.15):
                lines = rng.sample(_PATTERNS, rng.randint(1, 4))
                (root / d / kind).write_text("\n".join(lines) + "\n")
        if d and rng.random() < 0.15:
            (root / d / ".git" / "info").mkdir(parents=True, exist_ok=True)
            (root / d / ".git" / "info" / "exclude").write_text(rng.choice(_PATTERNS) + "\n")


def test_random_trees_identical_with_and_without_ripgrep(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    require(HAVE_RG, "the differential test needs ripgrep (rg)")
    import random

    rng = random.Random(20240611)
    for case in range(25):
        root = tmp_path / f"t{case}"
        root.mkdir()
        _random_tree(root, rng)
        ctx = make_ctx(root)
        both(monkeypatch, GlobTool(), ctx, {"pattern": "**/*", "limit": 10_000})
        raw: dict[str, Any] = {
            "pattern": rng.choice(["alpha", "^def", "(?i)gamma", "TODO|beta", "a.*a", "^$"])
        }
        raw["output_mode"] = rng.choice(["content", "count", "files_with_matches"])
        if rng.random() < 0.5:
            raw["glob"] = rng.choice(_GREP_GLOBS)
        if rng.random() < 0.3:
            raw["-C"] = rng.randint(0, 2)
        raw["head_limit"] = 0
        both(monkeypatch, GrepTool(), ctx, raw)
        sub = next((d for d in sorted(root.iterdir()) if d.is_dir() and d.name != ".git"), None)
        if sub is not None:
            both(monkeypatch, GlobTool(), make_ctx(root), {"pattern": "*", "path": str(sub), "limit": 10_000})


def test_read_deny_rules_filter_search_results(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Searching the parent of a denied directory must not reveal what is inside it."""
    from shellrt.permissions import PermissionGate, build_governance

    (tmp_path / "secrets").mkdir()
    (tmp_path / "secrets" / "key.txt").write_text("token=hello\n")
    (tmp_path / "open.txt").write_text("hello\n")
    gov = build_governance(tmp_path, deny=["Read(./secrets/**)"], home=tmp_path / "home")
    ctx = make_ctx(tmp_path)
    ctx.services[PermissionGate] = gov.gate
    for raw in ({"pattern": "hello"}, {"pattern": "hello", "output_mode": "content"}):
        out = both(monkeypatch, GrepTool(), ctx, raw)
        assert "open.txt" in out and "secrets" not in out
    out = both(monkeypatch, GlobTool(), ctx, {"pattern": "**/*.txt"})
    assert "open.txt" in out and "secrets" not in out
