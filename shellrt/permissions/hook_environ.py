"""Whether a Python hook script may change its own environment, which its children inherit.

Why (red team round 51): round 50 read a drop of the runner's ``PYTHONSAFEPATH`` by a few
spellings (the name as a string, ``os.environ`` assigned, ``os.environ.clear``, ``os.unsetenv``),
so ``os.environb.pop(b"PYTHONSAFEPATH")``, ``import os as o; o.environ.clear()``, ``os.environ.pop(
"PYTHON" + "SAFEPATH")`` and ``ctypes.CDLL(None).unsetenv(b"PYTHONSAFEPATH")`` each dropped it
unread and a child ``python3.11 -m json.tool`` imported the workspace's ``json``. Now the rule is
an allow-list of the reads of the environment: every use of an ``environ``/``environb`` (any
module, any alias) must be one of them, and a key it changes must be a string literal other than
``PYTHONSAFEPATH``; ``putenv``/``unsetenv``/``clearenv`` by any spelling, ``ctypes``/``cffi``, an
alias of these names taken from ``os``, and the name anywhere (as ``str`` or ``bytes``) count as
a drop. Anything else over-reads (fails closed): every child is read as run without the runner's
``PYTHONSAFEPATH``.
"""

from __future__ import annotations

import ast

__all__ = ["changes_environ"]

_SAFE_PATH = "PYTHONSAFEPATH"
#: Names of the process environment's mappings.
_ENVIRONS = frozenset({"environ", "environb"})
#: Calls (by their last name) that change the C environment directly.
_ENV_CALLS = frozenset({"putenv", "unsetenv", "clearenv", "setenv"})
#: Modules that reach libc's environment functions by names this reader cannot see.
_FOREIGN = frozenset({"ctypes", "cffi", "_ctypes"})
#: Methods of an environment mapping that only read it.
_READS = frozenset({"get", "copy", "keys", "items", "values", "__contains__", "__getitem__", "__iter__", "__len__"})
#: Methods that change one key: allowed when that key is a string literal (not ``PYTHONSAFEPATH``).
_ONE_KEY = frozenset({"pop", "setdefault", "__setitem__", "__delitem__"})


def changes_environ(tree: ast.AST) -> bool:
    """Whether the module ``tree`` may drop ``PYTHONSAFEPATH`` from its own environment (over-reads)."""
    parents = {id(child): node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str | bytes):
            text = node.value if isinstance(node.value, str) else node.value.decode("latin-1")
            if _SAFE_PATH in text or text in _ENVIRONS | _ENV_CALLS:
                return True  # the name, or ``getattr(os, "environ")``
        elif isinstance(node, ast.keyword) and node.arg == _SAFE_PATH:
            return True
        elif isinstance(node, ast.Import | ast.ImportFrom):
            if any(alias.name.split(".")[0] in _FOREIGN for alias in node.names):
                return True
            if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in _FOREIGN:
                return True
            if any(a.name in _ENVIRONS | _ENV_CALLS | {"*"} and a.asname for a in node.names):
                return True  # ``from os import environ as e``: an alias not followed
        elif isinstance(node, ast.Attribute | ast.Name):
            name = node.attr if isinstance(node, ast.Attribute) else node.id
            if name in _ENV_CALLS or name in _FOREIGN:
                return True
            if name in _ENVIRONS and not _only_reads(node, parents):
                return True
    return False


def _only_reads(node: ast.expr, parents: dict[int, ast.AST]) -> bool:
    """Whether this use of an environment mapping reads it, or changes only a literal key."""
    parent = parents.get(id(node))
    if isinstance(parent, ast.Attribute) and parent.value is node:
        if isinstance(parent.ctx, ast.Store | ast.Del):
            return False
        call = parents.get(id(parent))
        if not isinstance(call, ast.Call) or call.func is not parent:
            return parent.attr in _READS  # ``f = os.environ.get``: a bound read
        if parent.attr in _READS:
            return True
        if parent.attr in _ONE_KEY:
            return _literal_key(call.args[0] if call.args else None)
        if parent.attr == "update":
            return all(_literal_key(k) for a in call.args if isinstance(a, ast.Dict) for k in a.keys) and all(
                isinstance(a, ast.Dict) for a in call.args
            )
        return False
    if isinstance(parent, ast.Subscript) and parent.value is node:
        return isinstance(parent.ctx, ast.Load) or _literal_key(parent.slice)
    if isinstance(parent, ast.Compare | ast.comprehension | ast.For | ast.keyword | ast.Starred):
        return True  # ``"X" in os.environ``, iterated, ``env=os.environ``, ``*os.environ``
    if isinstance(parent, ast.Dict) and node in parent.values:
        index = parent.values.index(node)
        return parent.keys[index] is None  # ``{**os.environ, …}``: a copy
    if isinstance(parent, ast.Call) and node in parent.args:
        return isinstance(parent.func, ast.Name) and parent.func.id in ("dict", "len", "sorted", "list", "print")
    return False


def _literal_key(node: ast.AST | None) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str) and _SAFE_PATH not in node.value
