"""Tools that find the project's code by their own search: what a hook running one may load is the tree.

Why (red team, round 47): a hook's record named the files its words name and a fixed table of
manifests at its cwd (`content_anchor.MANIFESTS`). A tool that *searches* for code runs what it
finds wherever it lies: ``pytest`` imports every ``conftest.py`` on the way to a test and every
test file it collects (``tests/conftest.py`` was recorded by no one: a sandboxed command wrote
one and the operator's ``pytest`` hook ran it on the host, in that session and the next);
``python3 -m pytest`` was untrackable and watched ``.claude/hooks`` alone; ``make``'s recipes
run scripts and its ``include`` reads makefiles anywhere; ``prettier``/``eslint`` run the
``.prettierrc.js``/``eslint.config.mjs`` found from the file they are given up to the root, a
plugin a JSON config names by a relative path, and, installed outside the workspace, had nothing
of the workspace recorded at all. No list of files bounds such a search, so a hook running one
of these (by any path, through ``npx``/``npm exec``, ``python -m``, a wrapper or a package
script) records the whole workspace: checked before each run and across sessions
(`shellrt.permissions.tree_guard`), so a command's write there stops the hook; past the bounds
the hook refuses (run it in the sandbox as a command instead, or outside the workspace).

A table, not a proof: a tool not named here that loads code it searches for is not caught
(``docs/security.md``, round 47's Left).
"""

from __future__ import annotations

import os
import re
import shutil
import threading
import time

__all__ = [
    "TREE_LOADERS",
    "TREE_LOADER_MODULES",
    "first_search_dir",
    "loads_the_tree",
    "names_a_tree_loader",
    "safe_path_holds",
]

#: Programs (by base name) that run code they find by search below or above their cwd or
#: the files they are given: test runners, task runners and build tools, and tools whose
#: configuration is code.
TREE_LOADERS: frozenset[str] = frozenset(
    {
        # test runners: test files and their fixtures (conftest.py, setup files, helpers)
        *("pytest", "py.test", "pytest-3", "nose2", "nosetests", "trial", "ward", "behave", "green"),
        *("stestr", "robot", "jest", "vitest", "mocha", "ava", "tap", "karma", "jasmine", "playwright"),
        *("cypress", "rspec", "cucumber", "phpunit", "pest", "codecept"),
        # task runners and build tools: recipes, included files, build scripts
        *("make", "gmake", "just", "rake", "invoke", "inv", "doit", "nox", "tox", "task", "mage"),
        *("gradle", "gradlew", "mvn", "mvnw", "ant", "sbt", "bazel", "bazelisk", "meson", "ninja"),
        *("cmake", "scons", "grunt", "gulp", "turbo", "nx", "lerna", "pants", "pre-commit", "lefthook"),
        "lint-staged",
        # configuration that is code, found from the given file up to the root (or plugins it names)
        *("prettier", "eslint", "stylelint", "babel", "webpack", "rollup", "vite", "commitlint"),
        *("markdownlint-cli2", "pylint", "flake8", "mypy", "sphinx-build", "mkdocs", "coverage"),
        *("rubocop", "php-cs-fixer", "phpstan", "danger", "golangci-lint"),
        # a module map found from the cwd up: deno.json's "imports", tsconfig.json's "paths"/"extends"
        *("deno", "tsx", "ts-node"),
        # round 50: project files that run host code or start privileged containers, each able to
        # include files below the root (``module { source = "./modules/x" }`` with an ``external``
        # data source or a ``local-exec``; ``import ./nix/shell.nix``'s ``shellHook``; a compose
        # file's ``include:`` with a ``/:/host`` volume); the root's own files alone were watched
        *("terraform", "tofu", "terragrunt", "pulumi", "cdk", "nix-shell", "direnv", "devbox"),
        *("vagrant", "tilt", "ansible-playbook", "docker-compose", "podman-compose", "earthly", "act"),
        *("helmfile", "skaffold"),
        # round 53: configuration or plugins that are code, found at the cwd (or from the given
        # file up): ``knip.config.ts``, ``.remarkrc.js``, ``svelte.config.js``, tflint's
        # ``./.tflint.d/plugins`` binaries, ansible-lint's ``rulesdir`` and ``library/``, checkov's
        # ``external-checks-dir``, sqlfluff's jinja ``library_path``, composer's ``vendor/``
        # plugins, vue-tsc's ``vueCompilerOptions.plugins``, ``.luacheckrc`` (Lua), jekyll's
        # ``_plugins/``, site generators' JS configs, ``alembic``'s ``env.py``, flask's ``app.py``
        *("knip", "remark", "svelte-check", "vue-tsc", "tflint", "ansible-lint", "checkov", "sqlfluff"),
        *("composer", "phpcs", "phpcbf", "psalm", "rector", "luacheck", "busted", "jekyll", "eleventy"),
        *("docusaurus", "vitepress", "gatsby", "nodemon", "tsup", "parcel", "rspack", "rsbuild", "dbt"),
        *("alembic", "flask", "poe", "eslint_d", "prettierd", "oxlint", "standardrb", "erb_lint", "erblint"),
    }
)
#: Programs that are `TREE_LOADERS` with one of these subcommands (any word: options come first).
_LOADING_SUBCOMMANDS: dict[str, frozenset[str]] = {
    "docker": frozenset({"compose", "bake"}),
    "podman": frozenset({"compose"}),
    "nerdctl": frozenset({"compose"}),
    "nix": frozenset({"develop", "shell", "run", "build", "flake"}),
}
#: Python modules (top-level names) that do the same when run with ``python -m``.
TREE_LOADER_MODULES: frozenset[str] = frozenset(
    {
        *("pytest", "unittest", "nose2", "nose", "behave", "green", "stestr", "robot", "tox", "nox"),
        *("invoke", "doit", "pylint", "flake8", "mypy", "sphinx", "mkdocs", "coverage", "pre_commit"),
        "build",
        *("ansiblelint", "checkov", "sqlfluff", "alembic", "flask", "dbt", "poethepoet"),  # round 53
    }
)
_PYTHON = re.compile(r"(?:python|pypy)[0-9.]*")
#: Package runners whose first operand is the tool, and managers whose ``exec``/``dlx`` is one.
_RUNNERS = frozenset({"npx", "bunx", "pnpx"})
_EXECS = frozenset({"npm", "pnpm", "yarn", "bun"})


def loads_the_tree(program: str, args: list[str | None]) -> bool:
    """Whether ``program args`` (``program`` a base name) runs a tool of `TREE_LOADERS` or, through
    ``python -m``, of `TREE_LOADER_MODULES`; an unresolvable module or tool name counts (fails
    closed only where the word chooses the tool)."""
    if program in TREE_LOADERS:
        return True
    if program in _LOADING_SUBCOMMANDS:
        return any(a is None or a in _LOADING_SUBCOMMANDS[program] for a in args)
    if _PYTHON.fullmatch(program):
        for index, arg in enumerate(args):
            if arg == "-m" and index + 1 < len(args):
                module = args[index + 1]
                return module is None or module.split(".")[0] in TREE_LOADER_MODULES
            if arg is not None and arg.startswith("-m") and len(arg) > 2:  # -mpytest
                return arg[2:].split(".")[0] in TREE_LOADER_MODULES
        return False
    operands = args
    if program in _EXECS:
        if not args or args[0] not in ("exec", "dlx", "x"):
            return False
        operands = args[1:]
    elif program not in _RUNNERS:
        return False
    for arg in operands:
        if arg is None:
            return True
        if arg.startswith("-"):
            continue
        tool = arg.rsplit("/", 1)[-1].split("@", 1)[0]  # @scope/eslint@9 -> eslint
        return tool in TREE_LOADERS
    return False


def names_a_tree_loader(program: str, args: list[str | None]) -> bool:
    """Whether a word of ``args`` names a tool of `TREE_LOADERS` that ``program`` may start (red
    team round 48: ``watchexec -- pytest``, ``pipx run pytest``, ``dotenv run -- make``, ``nix
    develop -c make``: a wrapper the planner does not know runs its operands as a command). Any
    program but those that only print or match words counts (over-records: fails closed)."""
    if program in _WORD_READERS or _PYTHON.fullmatch(program):
        return False
    return any(a is not None and a.rsplit("/", 1)[-1] in TREE_LOADERS for a in args)


#: Programs whose operands are data they print, match or look up, never a command they start.
_WORD_READERS = frozenset(
    {"echo", "printf", "which", "type", "grep", "egrep", "fgrep", "rg", "jq", "test", "["}
)
#: Interpreters given code inline (or on standard input): what that code loads by a relative
#: path starts at the cwd (``node -e 'require("./lib/a")'``, ``ruby -e 'load "./x.rb"'``).
_INLINE_CODE: dict[str, frozenset[str]] = {
    "node": frozenset({"-e", "--eval", "-p", "--print"}),
    "nodejs": frozenset({"-e", "--eval", "-p", "--print"}),
    "ruby": frozenset({"-e"}),
    "perl": frozenset({"-e", "-E"}),
    "php": frozenset({"-r"}),
}
#: Python options whose value is the next word (when not attached: ``-Wignore``).
_PYTHON_VALUED = frozenset("WX")
_PYTHON_LONG_VALUED = frozenset({"--check-hash-based-pycs"})


def is_interpreter(program: str) -> bool:
    """Whether `first_search_dir` reads ``program`` (a base name): Python, an inline-code
    interpreter or a shell."""
    return bool(_PYTHON.fullmatch(program)) or program in _INLINE_CODE or program in _SHELLS


def first_search_dir(program: str, args: list[str | None], *, safe_path: bool = False) -> str | None:
    """The directory (relative to the cwd; ``"."`` the cwd itself) that ``program args`` takes
    code from by name before anything else, or None (red team round 48).

    Python puts the cwd first on ``sys.path`` for ``-c``, ``-m`` and standard input, and the
    script's own (real) directory for a script: ``python3 -m json.tool`` run at the workspace
    root imports a command's ``json/__init__.py`` there instead of the standard library's, and
    ``python3 check.py`` at the root a ``http/__init__.py`` written into an existing ``http/``
    (``import urllib.request`` imports ``http.client``): no list of the names a script imports
    bounds what the standard library imports in turn. ``-P``/``-I`` keep that directory off
    (None). Node, Ruby, Perl and PHP given code inline read it from the cwd (its loads are not
    read). A word chosen at run time in place of the script is the caller's to resolve (None).
    ``safe_path``: the hook's ``PYTHONSAFEPATH=1`` holds for this interpreter (`safe_path_holds`),
    unless ``-E`` makes it ignore the environment."""
    if _PYTHON.fullmatch(program):
        return _python_first(args, safe_path)
    if program in _SHELLS:
        return _shell_first(args)
    inline = _INLINE_CODE.get(program)
    if inline is None:
        return None
    for arg in args:
        if arg is None or arg in inline or (arg.startswith("--eval=") or arg.startswith("--print=")):
            return "."
        if not arg.startswith("-"):
            return None  # a script: its relative loads are read from it (round 45)
    return "."  # no script: the code comes from standard input


#: Shells: given no script and no ``-c``, they run what standard input says (``echo pytest | sh``),
#: which no record reads; a ``-c`` string and a script are read where the hook's line is planned.
_SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash"})


def _shell_first(args: list[str | None]) -> str | None:
    for index, arg in enumerate(args):
        if arg is None:
            return None  # a script chosen at run time: untrackable where the line is planned
        if arg == "--":
            return None if index + 1 < len(args) else "."
        if arg in ("-o", "+o", "-O", "+O"):
            continue
        if arg.startswith(("-", "+")) and len(arg) > 1:
            if "c" in arg[1:] and arg[0] == "-":
                return None
            if "s" in arg[1:] and arg[0] == "-":
                return "."
            continue
        if index > 0 and args[index - 1] in ("-o", "+o", "-O", "+O"):
            continue
        return None  # a script
    return "."


def _python_first(args: list[str | None], env_safe: bool) -> str | None:
    isolated = False  # -I or -P: nothing prepended, whatever the environment
    index = 0
    while index < len(args):
        arg = args[index]
        if arg is None:
            return None  # the script's path, chosen at run time (the caller resolves the word)
        if arg == "-":
            break
        if arg == "--":
            script = args[index + 1] if index + 1 < len(args) else None
            return None if isolated or env_safe or script is None else os.path.dirname(script) or "."
        if arg.startswith("--"):
            index += 2 if arg in _PYTHON_LONG_VALUED else 1
            continue
        if arg.startswith("-") and len(arg) > 1:
            for at, flag in enumerate(arg[1:]):
                if flag in "IP":
                    isolated = True
                elif flag == "E":
                    env_safe = False  # PYTHONSAFEPATH ignored
                elif flag in "cm":
                    return None if isolated or env_safe else "."
                elif flag in _PYTHON_VALUED:
                    index += 1 if at == len(arg) - 2 else 0
                    break
            index += 1
            continue
        return None if isolated or env_safe else os.path.dirname(arg) or "."
    return None if isolated or env_safe else "."  # standard input (or ``-``)


#: An interpreter's name with its version (``python3.10``, ``python2.7``; ``python3`` says none).
_VERSIONED = re.compile(r"python(\d+)\.(\d+)")


def safe_path_holds(interpreter: str, base: str) -> bool:
    """Whether the ``PYTHONSAFEPATH=1`` the hook runner sets (`shellrt.permissions.hooks`) keeps
    the cwd and a script's directory off ``interpreter``'s ``sys.path``: only Python 3.11 and later
    read it (macOS's ``python3`` is 3.9, Ubuntu 22.04's 3.10), and an operator's own empty value,
    which the runner keeps, turns it off. The version is read from the name the hook gives or the
    real file it leads to (``/usr/bin/python3`` -> ``python3.11``), looked up as the hook's shell
    will, the real file's name first (a ``python3.11`` link to ``python3.10`` does not hold); one
    that names none (a pyenv shim, ``pypy3``) does not hold (fails closed). A copy of an older
    binary under a newer name is believed (docs/security.md, round 50's Left)."""
    if os.environ.get("PYTHONSAFEPATH", "1") == "":
        return False
    versioned = _VERSIONED.fullmatch(os.path.basename(interpreter))
    named = None if versioned is None else (int(versioned.group(1)), int(versioned.group(2)))
    if named is not None and named < (3, 11):
        return False
    key = (interpreter, base)
    now = time.monotonic()
    with _holds_lock:
        hit = _holds.get(key)
    if hit is not None and now - hit[0] < _HOLDS_TTL_S:
        return hit[1]  # the host's PATH lookup costs up to ~60 ms under load: once per hook set
    from sandbox._hostpath import host_path

    found = (
        os.path.join(base, interpreter)
        if "/" in interpreter
        else shutil.which(interpreter, path=host_path(None, (base,)))
    )
    versioned = None if found is None else _VERSIONED.fullmatch(os.path.basename(os.path.realpath(found)))
    # The real file's name wins over the name the hook gives (round 50: a ``python3.11`` link to
    # ``python3.10`` was believed); a real file that names no version keeps the given name's.
    real = None if versioned is None else (int(versioned.group(1)), int(versioned.group(2)))
    holds = (real or named or (0, 0)) >= (3, 11) and (found is not None or named is not None)
    with _holds_lock:
        if len(_holds) > 64:
            _holds.clear()
        _holds[key] = (now, holds)
    return holds


_holds: dict[tuple[str, str], tuple[float, bool]] = {}
_holds_lock = threading.Lock()
_HOLDS_TTL_S = 30.0
