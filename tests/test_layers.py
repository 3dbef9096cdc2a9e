"""The layer contract of DESIGN.md, checked on the source: imports only point down.

interfaces -> runtime -> tools -> governance/analysis -> supervisor -> protocol,
with ``sandbox`` below everything and importing nothing of ``shellrt``; each
foreign dependency is imported only by the module(s) that own it.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

#: Package prefix -> layer rank (higher may import lower; equal only within the same package).
LAYERS: dict[str, int] = {
    "shellrt.cli": 7,
    "shellrt.server": 7,
    "shellrt.batch": 7,
    "shellrt.__main__": 7,
    "shellrt": 7,  # the root package (lazy re-export of the Python API)
    "shellrt.runtime": 6,
    "shellrt.tools": 5,
    "shellrt.permissions": 4,
    "shellrt.analysis": 4,
    "shellrt.supervisor": 3,
    "shellrt.protocol": 2,
    "sandbox": 1,
}

#: Same-rank imports that DESIGN.md allows (governance may use the pure analysis).
ALLOWED_SIDEWAYS = {("shellrt.permissions", "shellrt.analysis")}

#: Foreign dependency -> module prefixes allowed to import it.
OWNERS: dict[str, tuple[str, ...]] = {
    "docker": ("sandbox.docker",),
    "tree_sitter": ("shellrt.analysis",),
    "tree_sitter_bash": ("shellrt.analysis",),
    "bashlex": ("shellrt.analysis",),
    "httpx": ("shellrt.tools.web_fetch",),
    "html2text": ("shellrt.tools.web_fetch",),
    # the MCP server is its protocol handler and its own stdio transport (malformed lines answered)
    "mcp": ("shellrt.server.mcp", "shellrt.server._mcp_stdio", "shellrt.tools.mcp"),
    "ray": ("shellrt.batch.ray",),
    "inspect_ai": ("shellrt.integrations.inspect",),
}


def _modules() -> list[tuple[str, Path]]:
    found = []
    for package in ("shellrt", "sandbox"):
        for path in sorted((ROOT / package).rglob("*.py")):
            rel = path.relative_to(ROOT).with_suffix("")
            parts = list(rel.parts)
            if parts[-1] == "__init__":
                parts.pop()
            found.append((".".join(parts), path))
    return found


def _layer(module: str) -> str | None:
    best = None
    for prefix in LAYERS:
        if (module == prefix or module.startswith(prefix + ".")) and (best is None or len(prefix) > len(best)):
            best = prefix
    return best


def _imports(path: Path, module: str) -> list[tuple[str, int]]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    names: list[tuple[str, int]] = []
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.extend((alias.name, node.lineno) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)] if node.level > 1 else base
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            names.append((target, node.lineno))
    return names


MODULES = _modules()


def test_modules_found() -> None:
    names = {m for m, _ in MODULES}
    assert "shellrt.protocol.tool" in names and "sandbox.base" in names


@pytest.mark.parametrize(("module", "path"), MODULES, ids=[m for m, _ in MODULES])
def test_imports_point_down(module: str, path: Path) -> None:
    own = _layer(module)
    assert own is not None, f"{module} is in no layer of DESIGN.md"
    problems = []
    for target, line in _imports(path, module):
        top = target.split(".")[0]
        if top not in ("shellrt", "sandbox"):
            continue
        other = _layer(target)
        if other is None or other == own or own == "shellrt":
            continue
        if LAYERS[own] == LAYERS[other] == LAYERS["shellrt.cli"]:
            continue  # interfaces may build on each other (the CLI starts the servers)
        if own == "sandbox":
            problems.append(f"line {line}: sandbox must not import shellrt ({target})")
        elif own == "shellrt.analysis":
            problems.append(f"line {line}: analysis imports nothing of ours but itself ({target})")
        elif (own, other) in ALLOWED_SIDEWAYS:
            continue
        elif LAYERS[other] >= LAYERS[own]:
            problems.append(f"line {line}: {module} ({own}) imports {target} ({other}), which is not below it")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize(("module", "path"), MODULES, ids=[m for m, _ in MODULES])
def test_foreign_dependencies_have_one_owner(module: str, path: Path) -> None:
    problems = []
    for target, line in _imports(path, module):
        owners = OWNERS.get(target.split(".")[0])
        if owners is None:
            continue
        if not any(module == o or module.startswith(o + ".") or module.startswith(o + "_") for o in owners):
            problems.append(f"line {line}: {module} imports {target}; only {', '.join(owners)} may")
    assert not problems, "\n".join(problems)


def test_contract_catches_violations(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("import shellrt.runtime\nfrom docker import from_env\n")
    assert ("shellrt.runtime", 1) in _imports(bad, "sandbox.bad")
    assert _layer("shellrt.runtime.session") == "shellrt.runtime"
    assert LAYERS[_layer("shellrt.runtime") or ""] > LAYERS[_layer("sandbox.bad") or ""]
