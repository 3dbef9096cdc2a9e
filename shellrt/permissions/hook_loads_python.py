"""What a trusted Python hook script loads from the workspace, read from its syntax tree.

Why: hooks run from the workspace root with ``PYTHONSAFEPATH=1``, so ``import`` finds
nothing there unless the script puts a directory on ``sys.path`` — but a script that does
(``sys.path.insert(0, os.getcwd())``, ``sys.path.append("lib")``) imports whatever lies
there, and ``runpy.run_path("tools/x.py")``, ``spec_from_file_location(…, "lib/x.py")`` or
``exec(open("lib/x.py").read())`` run files relative to the working directory. Those files
(and each ``open``ed by a literal path: data a guard obeys) join the hook's files; a
directory put on ``sys.path`` or a file run whose path is chosen at run time cannot be
bounded and is reported (never trusted). Paths built from ``__file__`` are followed
(``os.path.join(os.path.dirname(__file__), "..", "lib")``); the script's own directory is
recorded whole by `shellrt.permissions.hook_files` already.
"""

from __future__ import annotations

import ast
import os
from dataclasses import dataclass, field
from pathlib import Path

from shellrt.permissions.hook_environ import changes_environ
from shellrt.permissions.hook_shebang import shebang, shebang_program
from shellrt.permissions.python_source import UnparsableSource, parse_python

__all__ = ["PythonLoads", "is_python_script", "module_paths", "python_loads"]

#: Calls that run the file named by their argument at this index.
_RUNS_FILE = {
    "runpy.run_path": 0,
    "run_path": 0,
    "spec_from_file_location": 1,
    "importlib.util.spec_from_file_location": 1,
    "load_source": 1,
    "imp.load_source": 1,
    "SourceFileLoader": 1,
    "importlib.machinery.SourceFileLoader": 1,
}
#: Calls that read (or name) the file given as their first argument.
_NAMES_FILE = frozenset({"open", "io.open", "Path", "pathlib.Path"})
_IMPORTERS = frozenset({"__import__", "importlib.import_module", "import_module"})
_PATH_ADDERS = frozenset({"sys.path.insert", "sys.path.append", "sys.path.extend", "site.addsitedir"})
#: Calls that start a program from their first argument: an argv list, or a command line (round 47:
#: what the tool a hook script starts loads is resolved as a hook's command line is).
_SPAWNS = frozenset(
    {
        *("subprocess.run", "subprocess.call", "subprocess.check_call", "subprocess.check_output"),
        *("subprocess.Popen", "subprocess.getoutput", "subprocess.getstatusoutput", "run", "call"),
        *("check_call", "check_output", "Popen", "getoutput", "getstatusoutput", "os.system", "os.popen"),
        *("system", "popen", "os.execvp", "os.execlp", "os.spawnvp", "os.spawnlp", "execvp", "execlp"),
        # round 50: the rest of ``os``'s exec/spawn family (their children were not read at all)
        *("os.execv", "os.execve", "os.execvpe", "os.execl", "os.execle", "os.execlpe"),
        *("os.spawnv", "os.spawnve", "os.spawnvpe", "os.spawnl", "os.spawnle", "os.spawnlpe"),
        *("os.posix_spawn", "os.posix_spawnp", "posix_spawn", "posix_spawnp"),
    }
)
#: The ``os`` calls whose last positional argument (``e`` variants) or third (``posix_spawn``) is the
#: child's whole environment (round 50).
_ENV_LAST = frozenset({"os.execle", "os.execlpe", "os.spawnle", "os.spawnlpe"})
_ENV_AT = {
    **dict.fromkeys(("os.execve", "os.execvpe", "os.posix_spawn", "os.posix_spawnp"), 2),
    **dict.fromkeys(("posix_spawn", "posix_spawnp"), 2),
    **dict.fromkeys(("os.spawnve", "os.spawnvpe"), 3),
}
#: Calls that move the script (and every child it starts after) to another directory.
_CHDIRS = frozenset({"os.chdir", "chdir", "os.fchdir", "fchdir"})
#: An operand whose value is chosen at run time, in a command line read from a script.
_ARG = "SHELLRTHOOKARG"


def is_python_script(path: str, head: bytes) -> bool:
    """A ``.py`` name, or a ``#!`` line naming Python."""
    if path.endswith(".py"):
        return True
    line = shebang(head)
    if line is None:
        return False
    program = shebang_program(line).argv  # round 49: read as every hook reader reads it
    name = os.path.basename(program[0] or "") if program else ""
    return b"python" in head.split(b"\n", 1)[0] or name.startswith(("python", "pypy"))


@dataclass
class PythonLoads:
    """What one Python file loads: files by path, and (``sys.path`` being one per process) the
    directories it adds and the top-level modules it imports, to be matched across every file
    the hook runs (`module_paths`)."""

    paths: list[str] = field(default_factory=list)
    unbounded: list[str] = field(default_factory=list)
    import_dirs: list[str] = field(default_factory=list)
    #: Top-level module names; ``*``: one chosen at run time.
    modules: set[str] = field(default_factory=set)
    #: Command lines the script starts (`_SPAWNS`), operands chosen at run time as a placeholder.
    commands: list[str] = field(default_factory=list)
    #: Those of `commands` started with an environment of the script's making (``env=…``), which
    #: the runner's ``PYTHONSAFEPATH`` does not reach unless passed on whole (round 49).
    cleared: set[str] = field(default_factory=set)
    #: Those of `commands` started in another directory (``cwd=…``): its absolute path, None when
    #: chosen at run time (round 49: ``npx fmt`` run in ``web/`` runs ``web/node_modules/.bin/fmt``).
    cwds: dict[str, str | None] = field(default_factory=dict)


def module_paths(import_dirs: list[str], modules: set[str]) -> tuple[list[str], list[str]]:
    """(the files and packages ``modules`` may be imported from in ``import_dirs``, why not bounded)."""
    paths: list[str] = []
    unbounded: list[str] = []
    for directory in import_dirs:
        if "*" in modules:
            unbounded.append(f"a hook script imports a module chosen at run time from {directory}")
            continue
        for module in sorted(modules):
            paths += [os.path.join(directory, module + ".py"), os.path.join(directory, module)]
    return paths, unbounded


def python_loads(root: Path, rel: str, source: bytes) -> PythonLoads:
    """What the Python script ``rel`` loads (see `PythonLoads`); paths are absolute."""
    try:
        tree = parse_python(source)
    except UnparsableSource:
        return PythonLoads(unbounded=[f"hook script {rel} cannot be parsed as Python"])
    script = os.path.join(root, rel)
    out = PythonLoads()
    paths, unbounded, import_dirs, modules = out.paths, out.unbounded, out.import_dirs, out.modules
    aliases = _import_aliases(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            modules.add(node.module.split(".")[0])
        elif isinstance(node, ast.Assign | ast.AugAssign) and _touches_sys_path(node):
            unbounded.append(f"hook script {rel} sets sys.path to directories chosen at run time")
        elif isinstance(node, ast.Call):
            name = _aliased(_dotted(node.func), aliases)
            if name not in _SPAWNS and _starts_a_child(name):
                # round 51: a child started by a call not read (``asyncio.create_subprocess_exec``,
                # ``pty.spawn``, ``sh``, ``plumbum``, ``multiprocessing``…): read as one whose
                # program and directory are chosen at run time (the tree is recorded).
                out.commands.append(_UNREAD_CHILD)
                out.cwds[_UNREAD_CHILD] = None
            if name in _RUNS_FILE:
                arg = _arg(node, _RUNS_FILE[name])
                where = _eval_path(arg, script, root) if arg is not None else None
                if where is None:
                    unbounded.append(
                        f"hook script {rel} runs a file chosen at run time ({ast.unparse(node)[:80]})"
                    )
                else:
                    paths.append(where)
            elif name in _SPAWNS:
                line = _command_line(node, name)
                if line is None:  # round 51: a program chosen at run time (``run([tool, …])``)
                    out.commands.append(_UNREAD_CHILD)
                    out.cwds[_UNREAD_CHILD] = None
                if line is not None:
                    out.commands.append(line)
                    if not _keeps_environment(node):
                        out.cleared.add(line)
                    cwd = next((k.value for k in node.keywords if k.arg == "cwd"), None)
                    if cwd is None and any(k.arg is None for k in node.keywords):
                        out.cwds[line] = None  # ``**options``: a directory chosen at run time
                    elif cwd is not None and not (isinstance(cwd, ast.Constant) and cwd.value is None):
                        out.cwds[line] = _eval_path(cwd, script, root)
            elif name in _NAMES_FILE:
                arg = _arg(node, 0)
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                    paths.append(os.path.join(root, arg.value))
            elif name in _IMPORTERS:
                arg = _arg(node, 0)
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                    modules.add(arg.value.split(".")[0])
                else:
                    modules.add("*")
            elif name in _PATH_ADDERS:
                arg = _arg(node, 1 if name == "sys.path.insert" else 0)
                values = (
                    arg.elts if isinstance(arg, ast.List | ast.Tuple) and name == "sys.path.extend" else [arg]
                )
                for value in values:
                    where = _eval_path(value, script, root) if value is not None else None
                    if where is None:
                        unbounded.append(
                            f"hook script {rel} puts a directory chosen at run time on sys.path "
                            f"({ast.unparse(node)[:80]})"
                        )
                    else:
                        import_dirs.append(where)
    if changes_environ(tree):  # round 51: an allow-list of reads (`hook_environ`)
        out.cleared.update(out.commands)  # every child, wherever the change stands (round 50)
    if any(isinstance(n, ast.Call) and _dotted(n.func) in _CHDIRS for n in ast.walk(tree)):
        # ``os.chdir("web")`` then ``subprocess.run(["npx", "fmt"])``: every child (and a relative
        # ``cwd=``) starts from a directory of the script's choosing: read as chosen at run time.
        out.cwds.update(dict.fromkeys(out.commands))
    return out


#: Where the argv of the ``exec``/``spawn`` calls is: a list at an index, or the arguments from one.
_ARGV_AT = {
    "os.execvp": ("list", 1),
    "execvp": ("list", 1),
    "os.spawnvp": ("list", 2),
    "os.execlp": ("args", 1),
    "execlp": ("args", 1),
    "os.spawnlp": ("args", 2),
    **dict.fromkeys(
        ("os.execv", "os.execve", "os.execvpe", "os.posix_spawn", "os.posix_spawnp"), ("list", 1)
    ),
    **dict.fromkeys(("posix_spawn", "posix_spawnp"), ("list", 1)),
    **dict.fromkeys(("os.execl", "os.execle", "os.execlpe"), ("args", 1)),
    **dict.fromkeys(("os.spawnv", "os.spawnve", "os.spawnvpe"), ("list", 2)),
    **dict.fromkeys(("os.spawnl", "os.spawnle", "os.spawnlpe"), ("args", 2)),
}
#: Of `_ARGV_AT`, the calls whose program is the argument before the argv (a path; the argv's first
#: word is only its ``argv[0]``): ``os.execv(path, [name, …])`` runs ``path``.
_PROGRAM_BEFORE = frozenset(
    name
    for name in _ARGV_AT
    if name not in ("os.execvp", "execvp", "os.spawnvp", "os.execlp", "execlp", "os.spawnlp")
)


def _command_line(call: ast.Call, name: str) -> str | None:
    """The command line a `_SPAWNS` call starts (its program must be a literal), else None."""
    import shlex

    how, at = _ARGV_AT.get(name, ("first", 0))
    arg = _arg(call, at)
    if how == "args":
        words = [_text(e) for e in call.args[at : -1 if name in _ENV_LAST else None]]
    elif isinstance(arg, ast.List | ast.Tuple):
        words = [_text(e) for e in arg.elts]
    else:
        text = _text(arg) if arg is not None else None
        return text if text and not text.startswith(_ARG) else None  # a command line (or a program)
    if name in _PROGRAM_BEFORE and words:
        program = _arg(call, at - 1)
        words[0] = _text(program) if program is not None else None
    if not words or words[0] is None or _ARG in words[0]:
        return None
    return shlex.join([w if w is not None else _ARG for w in words])


def _keeps_environment(call: ast.Call) -> bool:
    """Whether a spawn call passes the runner's environment on (its ``PYTHONSAFEPATH`` with it): no
    ``env=`` (or ``None``), ``os.environ``, a copy of it, or a dict of ``**os.environ`` that sets
    no ``PYTHONSAFEPATH``; anything else is an environment of the script's making (red team round
    49: ``env={"PATH": …}`` dropped it, and a ``python -m`` child imported the root's plant)."""
    value = next((k.value for k in call.keywords if k.arg == "env"), None)
    name = _dotted(call.func)
    if name in _ENV_LAST or name in _ENV_AT:  # the environment is positional (round 50)
        value = call.args[-1] if name in _ENV_LAST and call.args else _arg(call, _ENV_AT.get(name, 0))
        if value is None or (isinstance(value, ast.Constant) and value.value is None):
            return False  # missing (a call the script will fail) or None: not the runner's
    if value is None and any(k.arg is None for k in call.keywords):
        return False  # ``**options``: an env chosen at run time
    if value is None or (isinstance(value, ast.Constant) and value.value is None):
        return True
    if _dotted(value) == "os.environ":
        return True
    if isinstance(value, ast.Call) and not value.args and _dotted(value.func) == "os.environ.copy":
        return True
    if isinstance(value, ast.Call) and _dotted(value.func) == "dict" and not value.keywords:
        return len(value.args) == 1 and _dotted(value.args[0]) == "os.environ"
    if isinstance(value, ast.Dict):
        spread = any(
            k is None and _dotted(v) == "os.environ" for k, v in zip(value.keys, value.values, strict=True)
        )
        named = any(isinstance(k, ast.Constant) and k.value == "PYTHONSAFEPATH" for k in value.keys)
        computed = any(k is not None and not isinstance(k, ast.Constant) for k in value.keys)
        return spread and not named and not computed
    return False


def _text(node: ast.expr) -> str | None:
    """A string expression's text, each part chosen at run time as `_ARG` (None: no literal)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(
            v.value if isinstance(v, ast.Constant) and isinstance(v.value, str) else _ARG for v in node.values
        )
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _text(node.left), _text(node.right)
        if left is None and right is None:
            return None
        return (left if left is not None else _ARG) + (right if right is not None else _ARG)
    return None


def _touches_sys_path(node: ast.Assign | ast.AugAssign) -> bool:
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    for target in targets:
        base = target.value if isinstance(target, ast.Subscript) else target
        if _dotted(base) == "sys.path":
            return True
    return False


#: The line recorded for a child this reader cannot read (its directory: chosen at run time).
_UNREAD_CHILD = "# a child started by a call not read"
#: Modules (and ``os`` names) whose calls start processes; one not in `_SPAWNS` is not read.
_CHILD_MODULES = ("subprocess.", "asyncio.create_subprocess", "pty.", "multiprocessing.", "sh.", "plumbum.",
                  "pexpect.", "sarge.", "delegator.", "invoke.", "fabric.", "os.exec", "os.spawn",
                  "os.posix_spawn", "os.fork", "os.system", "os.popen", "concurrent.futures.ProcessPool")


def _starts_a_child(name: str) -> bool:
    return name.startswith(_CHILD_MODULES) and not name.startswith(("subprocess.PIPE", "subprocess.DEVNULL",
                                                                    "subprocess.STDOUT", "subprocess.Completed",
                                                                    "subprocess.CalledProcessError",
                                                                    "subprocess.TimeoutExpired"))


def _import_aliases(tree: ast.AST) -> dict[str, str]:
    """Names the script binds to modules or their members by import: ``import subprocess as sp``
    (``sp`` -> ``subprocess``), ``from subprocess import run as r`` (``r`` -> ``subprocess.run``)."""
    out: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update({a.asname: a.name for a in node.names if a.asname})
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            out.update({a.asname or a.name: f"{node.module}.{a.name}" for a in node.names if a.name != "*"})
    return out


def _aliased(name: str, aliases: dict[str, str]) -> str:
    """``name`` with its first part spelled as imported; a bare member of ``subprocess``/``os``
    keeps its short name too when `_SPAWNS` knows it (``from subprocess import run``: ``run``)."""
    head, dot, rest = name.partition(".")
    full = aliases.get(head)
    if full is None:
        return name
    spelled = full + dot + rest
    if spelled in _SPAWNS or name not in _SPAWNS:
        return spelled
    return name


def _dotted(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        inner = _dotted(node.value)
        return f"{inner}.{node.attr}" if inner else ""
    return ""


def _arg(call: ast.Call, index: int) -> ast.expr | None:
    return call.args[index] if len(call.args) > index else None


def _eval_path(node: ast.expr, script: str, root: Path) -> str | None:
    """The absolute path an expression names (relative strings: from the working directory,
    the workspace root), or None when it depends on anything but constants, ``__file__`` and
    the working directory."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return os.path.normpath(os.path.join(root, node.value))
    if isinstance(node, ast.Name) and node.id == "__file__":
        return script
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
        left, right = _eval_path(node.left, script, root), _eval_literal(node.right)
        return os.path.normpath(os.path.join(left, right)) if left is not None and right is not None else None
    if isinstance(node, ast.Attribute) and node.attr == "parent":
        inner = _eval_path(node.value, script, root)
        return os.path.dirname(inner) if inner is not None else None
    if not isinstance(node, ast.Call):
        return None
    name = _dotted(node.func)
    if name in ("os.getcwd", "Path.cwd", "pathlib.Path.cwd"):
        return str(root)
    if isinstance(node.func, ast.Attribute) and node.func.attr in ("resolve", "absolute") and not node.args:
        return _eval_path(node.func.value, script, root)
    args = [_eval_path(a, script, root) for a in node.args[:1]]
    if name in ("os.path.dirname", "dirname") and args and args[0] is not None:
        return os.path.dirname(args[0])
    if name in (
        "os.path.abspath",
        "os.path.realpath",
        "os.path.normpath",
        "str",
        "Path",
        "pathlib.Path",
        "os.fspath",
    ):
        return args[0] if args else None
    if name in ("os.path.join", "join") and node.args:
        first = args[0]
        rest = [_eval_literal(a) for a in node.args[1:]]
        if first is None or any(r is None for r in rest):
            return None
        return os.path.normpath(os.path.join(first, *[r for r in rest if r is not None]))
    return None


def _eval_literal(node: ast.expr) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None
