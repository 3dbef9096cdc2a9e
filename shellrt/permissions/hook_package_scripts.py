"""The ``package.json`` script lines a hook's package-manager command runs (``npm run fmt``,
``npm test``, ``pnpm lint``), so the hook's record follows what they run.

Why (red team round 46, second reader of round 45): a hook ``npm run fmt`` was recorded by the
root's own files (``package.json`` among them) only. The script line it runs (``fmtx --write .``)
finds ``fmtx`` in ``node_modules/.bin``, which npm puts first on the script's ``PATH``, and
``node tools/fmt.js`` loads ``tools/``: neither was recorded, and a sandboxed command's rewrite of
``node_modules/fmtx/cli.js`` ran on the host as the operator's hook. Now the lines (with their
``pre``/``post`` scripts) are resolved as hook commands are; what cannot be read as lines (a
package manager that loads the project by its own configuration, an install, a manifest that
cannot be read) is `WHOLE` (the whole workspace, fail closed).
"""

from __future__ import annotations

import os

from shellrt.permissions.hook_node_packages import read_manifest

__all__ = ["BIN_DIR", "WHOLE", "script_lines"]

#: Answer for "loads the project as a whole" (the caller records the workspace tree).
WHOLE = None
#: Where npm and pnpm put a project's binaries on a script's ``PATH``.
BIN_DIR = os.path.join("node_modules", ".bin")
#: ``npm <sub>`` that runs one named script (the name: the next operand, or fixed).
_NPM_RUN = frozenset({"run", "run-script", "rum", "urn"})
_FIXED = {"test": "test", "t": "test", "tst": "test", "start": "start", "stop": "stop", "restart": "restart"}
#: Subcommands that run lifecycle scripts of the project and of every installed package.
_INSTALLS = frozenset({
    "install", "i", "ci", "add", "rebuild", "rb", "pack", "publish", "link", "ln", "update", "up",
    "upgrade", "uninstall", "remove", "rm", "un", "r", "unlink", "dedupe", "ddp", "prune",
    "install-test", "it", "install-ci-test", "cit", "import", "fetch", "prepare",
})
#: pnpm's own subcommands that run no script (anything else unknown is a script name to pnpm).
_PNPM_OWN = frozenset({
    "exec", "dlx", "list", "ls", "why", "outdated", "audit", "store", "root", "bin", "config",
    "view", "info", "help", "--version", "-v", "env", "licenses", "server", "setup",
})
#: Options that run the scripts of another directory or package (npm, pnpm).
_ELSEWHERE = frozenset({
    "--prefix", "-C", "--dir", "-w", "--workspace", "--workspaces", "-ws", "--filter", "-F",
    "--recursive", "-r", "--include-workspace-root",
})
_NPM_OTHER_SCRIPTING = frozenset({"explore", "init", "create", "innit", "exec", "x"})


def script_lines(program: str, args: list[str | None], base: str) -> list[str] | None:
    """The script lines ``program args`` runs from ``base``'s ``package.json`` ([] when it runs
    none); `WHOLE` when what it runs cannot be bounded by lines. Only ``npm`` and ``pnpm``;
    callers treat ``yarn`` and ``bun`` as loading the project whole (a ``.yarnrc.yml``'s
    ``yarnPath`` and plugins, Yarn PnP's ``.yarn/cache``, ``bunfig.toml``'s ``preload``)."""
    operands = [a for a in args if a is None or not a.startswith("-")]
    if not operands:
        return []
    if args[0] != operands[0] or any(a is not None and a.split("=", 1)[0] in _ELSEWHERE for a in args):
        # An option before the subcommand may take the next word (``npm --prefix d run x``), and
        # these run another package's scripts: not bounded by this package.json's lines.
        return WHOLE
    sub = operands[0]
    if sub is None:
        return WHOLE  # a subcommand chosen at run time
    if sub in _INSTALLS:
        return WHOLE
    if program == "npm":
        if sub in _NPM_OTHER_SCRIPTING:
            return []  # exec/x: the caller's node_modules/.bin record; init/create fetch, not run here
        if sub in _NPM_RUN:
            name = operands[1] if len(operands) > 1 else ""
        elif sub in _FIXED:
            name = _FIXED[sub]
        else:
            return []
    else:  # pnpm: ``pnpm run x``, ``pnpm test``, and ``pnpm x`` for a script x
        if sub in _PNPM_OWN:
            return []
        name = (operands[1] if len(operands) > 1 else "") if sub in _NPM_RUN else _FIXED.get(sub, sub)
    if name is None:
        return WHOLE
    if not name:
        return []  # ``npm run`` lists the scripts
    scripts = _scripts(base)
    if scripts is None:
        return WHOLE
    names = [f"pre{name}", name, f"post{name}"]
    if name == "restart":
        names += ["prestop", "stop", "poststop", "prestart", "start", "poststart"]
    if name == "start" and "start" not in scripts:
        return ["node server.js"]  # npm's default start
    return [line for n in names if isinstance(line := scripts.get(n), str)]


def _scripts(base: str) -> dict[str, object] | None:
    """``base/package.json``'s ``scripts`` ({} when it has none or there is no manifest: the
    command fails, runs nothing); None when it cannot be read."""
    try:
        data = read_manifest(os.path.join(base, "package.json"))
    except FileNotFoundError:
        return {}
    if data is None:
        return None
    scripts = data.get("scripts")
    return scripts if isinstance(scripts, dict) else {}
