"""The node packages a hook's files lie in, and the packages those declare, to be hashed whole.

Why (red team round 44): a hook's ``npx fmt`` (or ``node_modules/.bin/fmt``, or ``node
node_modules/fmt/cli.js``) was recorded by its ``.bin`` entry and that link's target only; what the
script requires -- the package's other modules, its dependencies -- lies in ``node_modules`` too,
which a sandboxed command writes. A command rewrote ``node_modules/fmt/lib.js`` and the operator's
hook ran it on the host. Now the package every recorded file lies in is recorded whole, and so,
transitively, is each package it declares (``dependencies``, ``optionalDependencies``,
``peerDependencies``) at every place node looks for it up to the one it finds: a place looked at
first and absent is recorded absent, so a package planted there is a change. A hook's own node
script (``node .claude/hooks/guard.js``) has the packages it requires or imports by a literal
name recorded the same way, looked up from its directory.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable
from pathlib import Path

from shellrt.permissions.hook_read import read_regular

__all__ = [
    "MAX_PACKAGES",
    "is_node_script",
    "literal_specifiers",
    "node_module_dirs",
    "node_packages",
    "read_manifest",
    "started_commands",
]

#: Packages recorded for one settings file's hooks at most; beyond, not vouched for.
MAX_PACKAGES = 256
_MANIFEST_LIMIT = 1 << 20
_DEP_KEYS = ("dependencies", "optionalDependencies", "peerDependencies")
#: A name ``require`` resolves through ``node_modules``: ``name`` or ``@scope/name``.
_NAME = re.compile(r"(?:@[^/\\\0]+/)?[^/\\\0]+")


def node_packages(root: Path, rels: Iterable[str]) -> tuple[list[str], list[str]]:
    """Workspace-relative package directories (present or not) the files ``rels`` load, and why
    some cannot be vouched for (more than `MAX_PACKAGES`)."""
    base = str(root)
    rels = list(rels)
    queue = [p for rel in rels if (p := _package_of(base, rel)) is not None]
    seen: dict[str, None] = {}
    for rel in rels:  # a hook's own node script: the packages it names, from its directory up
        if _package_of(base, rel) is None and is_node_script(os.path.join(base, rel)):
            for name in _required(os.path.join(base, rel)):
                queue += _found(base, os.path.dirname(rel), name, seen)
    while queue:
        package = queue.pop()
        if package in seen:
            continue
        seen[package] = None
        if len(seen) > MAX_PACKAGES:
            return list(seen), [
                f"hook files load more than {MAX_PACKAGES} node packages from the workspace's "
                "node_modules (a tool run by `npx` or from node_modules/.bin loads its package and "
                "its dependencies there)"
            ]
        for name in _declared(os.path.join(base, package)):
            queue += _found(base, package, name, seen)
    return list(seen), []


def node_module_dirs(root: Path, rels: Iterable[str]) -> list[str]:
    """The outermost ``node_modules`` directories (workspace-relative, present or not) where node
    looks up a bare name required by the files ``rels`` that node runs: those inside a
    ``node_modules`` (a ``.bin`` entry, a package's module, by their real path) and node scripts.

    Why (red team round 45): what such code requires is found in each ``node_modules`` up to the
    root whatever declares it -- a plugin named in a tool's config, an optional ``try {
    require(x) }``, a name computed at run time, a loose ``node_modules/<name>.js`` that node loads
    before the directory ``node_modules/<name>`` -- so the directory node searches is recorded
    whole, not the packages a manifest names (round 44). Absent ones are recorded absent."""
    base = str(root)
    places: dict[str, None] = {}
    for rel in rels:
        real = os.path.realpath(os.path.join(base, rel))
        if not real.startswith(base.rstrip(os.sep) + os.sep):
            continue
        parts = os.path.relpath(real, base).split(os.sep)
        if "node_modules" not in parts[:-1] and not is_node_script(real):
            continue
        places.update(dict.fromkeys(p.rstrip("/") for p in _lookups("/".join(parts[:-1]), "")))
    return [d for d in places if not any(d.startswith(o + "/") for o in places)]


def _found(base: str, start: str, name: str, seen: dict[str, None]) -> list[str]:
    """Where node finds ``name`` required from directory ``start`` (a list of one, or none when it
    is absent everywhere); the places looked at before it go to ``seen`` as absent (a package
    planted there is found first)."""
    for place in _lookups(start, name):
        if os.path.isdir(os.path.join(base, place)):
            return [] if place in seen else [place]
        seen.setdefault(place)
    return []


def _package_of(base: str, rel: str) -> str | None:
    """The innermost ``node_modules/<pkg>`` (or ``@scope/<pkg>``) holding ``rel`` or, for a link,
    its target; None when it lies in none (or out of the workspace)."""
    real = os.path.realpath(os.path.join(base, rel))
    if not real.startswith(base.rstrip(os.sep) + os.sep):
        return None
    parts = os.path.relpath(real, base).split(os.sep)
    for i in range(len(parts) - 2, -1, -1):
        if parts[i] != "node_modules" or parts[i + 1] == ".bin":
            continue
        end = i + 3 if parts[i + 1].startswith("@") else i + 2
        if end < len(parts) or (end == len(parts) and os.path.isdir(real)):
            return "/".join(parts[:end])
    return None


def read_manifest(path: str) -> dict[str, object] | None:
    """The ``package.json`` at ``path`` (its first MiB), {} when it is JSON but not an object; None when
    it cannot be read or parsed. `FileNotFoundError` is raised: a missing manifest means something
    else to each caller (the next scope up, no scripts, nothing declared)."""
    raw = read_regular(path, _MANIFEST_LIMIT, raise_missing=True)
    if raw is None:
        return None
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    return data if isinstance(data, dict) else {}


def _declared(package: str) -> list[str]:
    """The package names ``package``'s ``package.json`` declares (none when it has no readable one)."""
    try:
        data = read_manifest(os.path.join(package, "package.json"))
    except FileNotFoundError:
        return []
    if data is None:
        return []
    names: list[str] = []
    for key in _DEP_KEYS:
        deps = data.get(key)
        if isinstance(deps, dict):
            names += [
                n for n in deps if isinstance(n, str) and _NAME.fullmatch(n) and ".." not in n.split("/")
            ]
    return list(dict.fromkeys(names))


#: ``require("x")``, ``import … from "x"``, ``import "x"``, ``import("x")`` with a literal name; a
#: template literal with no substitution (``require(`../lib/x.js`)``) is one too (round 46).
_REQUIRE = re.compile(
    r"""(?:\brequire\s*\(\s*|\bimport\s*\(\s*|\bfrom\s*|\bimport\s+)(?:(["'])([^"'\\\n]+)\1|`([^`$\\]+)`)"""
)
#: A relative path a load computes from a literal prefix (round 47): ``require('../p/' + x)``,
#: ``require(`../p/${x}`)``, ``import('./p/' + x)``; read as the prefix then ``*`` (any name below it).
_COMPUTED = re.compile(
    r"""(?:\brequire\s*\(\s*|\bimport\s*\(\s*)"""
    r"""(?:(["'])(\.{1,2}(?:/[^"'\\\n]*)?)\1\s*\+|`(\.{1,2}(?:/[^`$\\]*)?)\$\{)"""
)
#: ``path.join(__dirname, 'a', …)`` and ``resolve``: the literal parts after the script's own
#: directory, then ``)`` (the whole path) or ``,`` (a rest computed at run time: ``*``).
_DIRNAME_JOIN = re.compile(
    r"""\b(?:join|resolve)\s*\(\s*__dirname\s*((?:,\s*(?:"[^"\\\n]*"|'[^'\\\n]*')\s*)*)([,)])"""
)
_JOIN_PART = re.compile(r""""([^"\\\n]*)"|'([^'\\\n]*)'""")
#: Any call with a relative literal: what a ``createRequire`` function (named anything) loads.
_CALL_RELATIVE = re.compile(r"""\b[A-Za-z_$][\w$]*\s*\(\s*(["'])(\.{1,2}/[^"'\\\n]*)\1""")
_SCRIPT_SUFFIXES = (".js", ".cjs", ".mjs")
#: ``execSync('npx prettier --write ' + f)``: a command line's literal start (round 47).
_EXEC_LINE = re.compile(r"""\bexec(?:Sync)?\s*\(\s*(["'`])([^"'`\\\n$]+)""")
#: ``execFileSync('npx', ['prettier', f])``, ``spawn("pytest", ["-q"])``: a program and its literal arguments.
_EXEC_FILE = re.compile(
    r"""\b(?:execFile|spawn)(?:Sync)?\s*\(\s*(["'])([^"'\\\n]+)\1\s*(?:,\s*\[([^\]]*)\])?"""
)
_ARRAY_ITEM = re.compile(r"""(["'])([^"'\\\n]*)\1|[^,\s][^,]*""")


def is_node_script(path: str) -> bool:
    """A file node runs: a ``.js``/``.cjs``/``.mjs`` name, or a ``node`` shebang."""
    if path.endswith(_SCRIPT_SUFFIXES):
        return os.path.isfile(path)
    first = (read_regular(path, 256) or b"").split(b"\n", 1)[0]
    return first.startswith(b"#!") and b"node" in first


def literal_specifiers(path: str) -> list[str]:
    """What a node script requires or imports by a literal string, as written (by a pattern, not a
    parser: a name in a comment or a string counts too, which over-records)."""
    raw = read_regular(path, _MANIFEST_LIMIT)
    if raw is None:
        return []
    text = raw.decode("utf-8", "replace")
    found = [quoted or template for _, quoted, template in _REQUIRE.findall(text)]
    return list(dict.fromkeys(found + _computed_specifiers(text)))


#: An ``env`` option other than ``process.env`` itself: the child gets an environment the script
#: made (``{env: {PATH: process.env.PATH}}``), without the runner's ``PYTHONSAFEPATH`` (round 49).
#: So does a script that changes its own: ``delete process.env.PYTHONSAFEPATH``, ``process.env =
#: {…}`` (round 50: every child started after inherits the change).
_OWN_ENV = re.compile(
    r"""\benv\s*:\s*(?!process\.env\s*[,}\n])|\{\s*env\s*[,}]|PYTHONSAFEPATH|\bprocess\.env\s*=(?!=)"""
)


def starts_with_own_env(path: str) -> bool:
    """Whether a node script passes any child an environment of its own making (`_OWN_ENV`, by a
    pattern: over-reads); its started commands are then resolved without ``PYTHONSAFEPATH``."""
    raw = read_regular(path, _MANIFEST_LIMIT)
    return raw is not None and _OWN_ENV.search(raw.decode("utf-8", "replace")) is not None


#: ``fork("./tools/w.js")``, ``new Worker("./w.js")``: node runs a module by a path from the cwd
#: (round 50: neither was read); group 2 is a literal path, absent when chosen at run time.
_FORK = re.compile(r"""\b(?:fork|Worker)\s*\(\s*(?:(["'`])([^"'`\\\n$]+)\1\s*[,)])?""")
#: A child started elsewhere than the hook's cwd: a ``cwd`` option, or the script's own ``chdir``.
_MOVES = re.compile(r"""\bcwd\s*:|\{\s*cwd\s*[,}]|\bchdir\s*\(""")


def starts_elsewhere(path: str) -> bool:
    """Whether a node script starts a child in a directory of its choosing (a ``cwd`` option,
    ``process.chdir``) or runs a module by a path chosen at run time (``fork(p)``, ``new
    Worker(url)``), by a pattern (over-reads): its children's loads are then the tree's (round 50:
    ``spawnSync("npx", ["fmt"], {cwd: "web"})`` ran ``web/node_modules/.bin/fmt`` unrecorded)."""
    raw = read_regular(path, _MANIFEST_LIMIT)
    if raw is None:
        return False
    text = raw.decode("utf-8", "replace")
    return _MOVES.search(text) is not None or any(m.group(2) is None for m in _FORK.finditer(text))


def started_commands(path: str) -> list[str]:
    """The command lines a node script starts through ``child_process`` (by a pattern: a literal
    program, with what is literal of its arguments; a part chosen at run time is a placeholder
    word), for their tools' loads to be resolved as a hook's own command line is (round 47)."""
    import shlex

    raw = read_regular(path, _MANIFEST_LIMIT)
    if raw is None:
        return []
    text = raw.decode("utf-8", "replace")
    lines = [line for _, line in _EXEC_LINE.findall(text)]
    for _, program, items in _EXEC_FILE.findall(text):
        words = [program]
        for quote, literal in ((m.group(1), m.group(2)) for m in _ARRAY_ITEM.finditer(items)):
            words.append(literal if quote else "SHELLRTHOOKARG")
        lines.append(shlex.join(words))
    lines += [shlex.join(["node", m.group(2)]) for m in _FORK.finditer(text) if m.group(2) is not None]
    return lines


def _computed_specifiers(text: str) -> list[str]:
    """Relative loads whose path is computed at run time from a literal prefix, each as the prefix
    and ``*`` (`hook_loads_node` records what ``*`` may stand for, whole: red team round 47; round
    45 followed literals only, and ``require('../plugins/' + name)``'s directory went unrecorded
    unless a literal named it). Also what ``createRequire``'s function, called by any name, and
    ``path.join(__dirname, …)``/``resolve`` name. A path computed with no literal prefix is not
    bounded (docs/security.md)."""
    out = [(quoted or template) + "*" for _, quoted, template in _COMPUTED.findall(text)]
    for parts, end in _DIRNAME_JOIN.findall(text):
        joined = "/".join(a or b for a, b in _JOIN_PART.findall(parts)).strip("/")
        path = "./" + joined if joined else "."
        out.append(path.rstrip("/") + "/*" if end == "," else path)
    if "createRequire" in text or "Module._load" in text:
        out += [spec for _, spec in _CALL_RELATIVE.findall(text)]
    return out


def _required(path: str) -> list[str]:
    """The package names a node script requires or imports by a literal bare name (``x`` of
    ``x/sub``, ``@s/x`` of ``@s/x/sub``); ``node:`` builtins and relative paths are not packages."""
    names: list[str] = []
    for spec in literal_specifiers(path):
        if spec.startswith((".", "/", "node:", "#")):  # ``#x``: the package scope's imports
            continue
        parts = spec.split("/")
        name = "/".join(parts[:2] if spec.startswith("@") else parts[:1])
        if _NAME.fullmatch(name) and ".." not in name.split("/"):
            names.append(name)
    return list(dict.fromkeys(names))


def _lookups(package: str, name: str) -> list[str]:
    """Where node looks for ``name`` required from directory ``package``, in order, inside the
    workspace."""
    out = []
    parts = [p for p in package.split("/") if p]
    for end in range(len(parts), -1, -1):
        if end and parts[end - 1] == "node_modules":
            continue
        out.append("/".join([*parts[:end], "node_modules", name]))
    return out
