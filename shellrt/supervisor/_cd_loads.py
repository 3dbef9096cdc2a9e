"""The files an accepted ``.envrc`` or mise config has loaded into the operator's shell at ``cd``.

Why (red team round 19): ``.envrc`` and mise's configs are protected, the files they name were not.
``source_env_if_exists .envrc.local`` sources that file as bash; ``dotenv`` / ``dotenv_if_exists``
(``.env`` by default) export its variables -- ``LD_PRELOAD``, ``PATH``, ``BASH_ENV`` -- to every
program the operator runs there. Both are git-ignored by convention: no diff shows a planted one.
mise's ``[env] _.source`` (bash) and ``_.file`` (an env file) are the same, at every ``cd`` with
mise activated; mise trusts a config by its path (paranoid mode: its hash), never what it sources.
A directory put first on ``PATH`` (``PATH_add bin``, mise's ``_.path``) is given as ``<dir>/*``:
its files named as a program on the host's ``PATH`` are obeyed (a planted ``bin/git`` is the
operator's next ``git status`` after ``cd``); the project's own tools there (``bin/app``) stay
the model's, or every build into them would be reverted; ``node_modules/.bin`` (``layout node``)
stays the dependencies' (round 18) but for a name of a compiled system program (``<dir>/+``,
round 20): a planted ``node_modules/.bin/git`` is the operator's next ``git``, and no package's
tool is an ELF twin of ``/usr/bin/git``. A name the host lacks (``bin/tsc`` typed without a global
``tsc``) is the project's tool: typing it runs the project's code, as ``./bin/tsc`` would.
Only what can be known without running anything is read: a path built from a variable other than
``$PWD`` / ``{{config_root}}`` (or from ``~``) is not followed (docs/security.md: left).
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import shlex
import stat
from collections.abc import Callable, Iterator
from typing import Final

from sandbox._hostread import read_regular
from sandbox._namefold import fold_name, fold_path
from sandbox.confine import Stamp, stamp
from shellrt.supervisor._hgrc_loads import hgrc_loads, is_hg_config
from shellrt.supervisor._host_obeyed import obeyed_reason

__all__ = [
    "ON_PATH",
    "ON_PATH_DEPS",
    "cd_loaded_reason",
    "cd_loads",
    "envrc_loads",
    "host_programs",
    "loads_at_cd",
    "on_path_obeys",
    "path_key",
    "shadows_system_program",
]

ENVRC: Final = ".envrc"
#: The last name of ``<dir>/*``: a directory a config puts on ``PATH`` (see the module's doc).
ON_PATH: Final = "*"
#: The last name of ``<dir>/+``: a dependency manager's directory on ``PATH`` (``node_modules/.bin``):
#: only a file named as a compiled system program is obeyed there (`shadows_system_program`).
ON_PATH_DEPS: Final = "+"  # also a venv's bin/ (``.venv``, ``venv``, ``layout python``'s)
#: The names of mise's configs (`_host_obeyed`'s table decides which paths are mise's).
_MISE_WHY: Final = obeyed_reason((), "mise.toml")
#: direnv's stdlib functions that load a file, and the file each loads when given none.
_LOADERS: Final[dict[str, str | None]] = {
    "dotenv": ".env",
    "dotenv_if_exists": ".env",
    "source_env": None,
    "source_env_if_exists": None,
}
#: Where one simple command ends and the next may start (a loader after ``&&``, ``;``, ``then``).
_SPLIT: Final = re.compile(r"&&|\|\||[;|&()\n]")
_LEADING: Final = frozenset({"{", "if", "then", "else", "elif", "do", "!", "while", "until"})
_PWD: Final = re.compile(r"\$\{PWD\}|\$PWD\b")


def envrc_loads(directory: str, text: str) -> frozenset[str]:
    """The paths (joined to ``directory``, the ``.envrc``'s, as given) its direnv loaders name."""
    found: set[str] = set()
    for part in _SPLIT.split(text):
        words = _words(part)
        while words and words[0] in _LEADING:
            words = words[1:]
        if words[:2] == ["layout", "node"]:  # direnv's stdlib: PATH_add node_modules/.bin
            _add_known(found, directory, "node_modules/.bin", ON_PATH)
            continue
        if words[:2] in (["use", "nix"], ["use", "flake"]):
            # Round 20: nix evaluates these at cd and runs a shellHook (bash) as the operator.
            args = [w for w in words[2:] if not w.startswith("-")]
            if "-p" in words or "--packages" in words:
                args = ["-"]  # packages by name: no file
            if words[1] == "flake":
                here = not args or args[0].split("#")[0] in ("", ".", "./")  # `.#dev`: this flake
                names = ["flake.nix", "flake.lock"] if here else []
            else:
                names = args[:1] or ["shell.nix", "default.nix"]
            for name in names:
                if name != "-":
                    _add_known(found, directory, name)
            continue
        if words[:2] in (["layout", "python"], ["layout", "python3"], ["layout", "pyenv"]):
            # direnv's stdlib makes a venv in .direnv/python-<version> and puts its bin/ on PATH.
            _add_known(found, directory, _DIRENV_VENV, ON_PATH)
            continue
        if words[:1] == ["PATH_add"] or words[:2] == ["path_add", "PATH"]:
            for entry in words[1 if words[0] == "PATH_add" else 2 :]:
                _add_known(found, directory, _PWD.sub(lambda _: directory, entry), ON_PATH)
            continue
        if not words or words[0] not in _LOADERS:
            continue
        arg = words[1] if len(words) > 1 else _LOADERS[words[0]]
        if arg is None:
            continue
        _add_known(found, directory, _PWD.sub(lambda _: directory, arg))
    return frozenset(found)


def _add_known(found: set[str], directory: str, arg: str, *tail: str) -> None:
    if "$" in arg or "`" in arg or arg.startswith("~"):
        return  # not known before it runs
    path = os.path.normpath(os.path.join(directory, arg))
    if tail == (ON_PATH,) and ("node_modules" in path.split(os.sep) or _is_venv_bin(path)):
        # The dependencies' tools (a global tsc has a .bin/tsc twin, a venv's python3 the host's):
        # the project's code, which a sandboxed npm/pip install rightly writes (round 18's
        # judgement of node_modules/); but no package's tool is named like a compiled system
        # program (``ls``, ``git``): round 20.
        tail = (ON_PATH_DEPS,)
    found.add(os.path.join(path, *tail))


#: The bin directory of direnv's ``layout python`` (its version is known only when it runs).
_DIRENV_VENV: Final = ".direnv/python-*/bin"
#: A venv's directory names that `path_key` and `_is_venv_bin` recognise (``python -m venv .venv``).
_VENV_NAMES: Final = frozenset({".venv", "venv"})


def _is_venv_bin(path: str) -> bool:
    parent, name = os.path.split(path)
    return name == "bin" and (os.path.basename(parent) in _VENV_NAMES or path.endswith("/" + _DIRENV_VENV))


def path_key(directory: str) -> str:
    """``directory`` as a loaded ``PATH`` entry names it: ``.direnv/python-3.11/bin`` is
    ``layout python``'s ``.direnv/python-*/bin``."""
    parent, name = os.path.split(directory)
    grand, venv = os.path.split(parent)
    if name == "bin" and venv.startswith("python-") and os.path.basename(grand) == ".direnv":
        return os.path.join(grand, "python-*", "bin")
    return directory


def _words(part: str) -> list[str]:
    try:
        return shlex.split(part, comments=True)
    except ValueError:  # an unbalanced quote: direnv (bash) would fail there too
        return part.split()


def mise_loads(directory: str, text: str) -> frozenset[str]:
    """The paths a mise config in ``directory`` names as ``[env] _.source`` / ``_.file``, joined
    to its directory and to its project's (``.config/mise/``, ``.mise/``, ``mise/conf.d/``'s root:
    mise's ``config_root``), either of which may be the one mise means."""
    import tomllib  # here: the CLI's ``run`` imports this module and rarely meets a mise config

    try:
        env = tomllib.loads(text).get("env")
    except tomllib.TOMLDecodeError:
        return frozenset()  # mise refuses it too
    specials = env.get("_") if isinstance(env, dict) else None
    if not isinstance(specials, dict):
        return frozenset()
    root = _config_root(directory)
    found: set[str] = set()
    for key in ("source", "file", "path"):
        for value in _paths(specials.get(key)):
            value = value.replace("{{config_root}}", root).replace("{{ config_root }}", root)
            if "{{" in value:
                continue
            for base in {directory, root}:
                _add_known(found, base, value, *((ON_PATH,) if key == "path" else ()))
    return frozenset(found)


def _paths(value: object) -> list[str]:
    """A ``_.source``/``_.file`` value's paths: a string, a ``{path = ...}`` table, a list of them."""
    items = value if isinstance(value, list) else [value]
    out = []
    for item in items:
        path = item.get("path") if isinstance(item, dict) else item
        if isinstance(path, str):
            out.append(path)
    return out


def _config_root(directory: str) -> str:
    for tail in ("/.config/mise/conf.d", "/mise/conf.d", "/.config/mise", "/.mise", "/mise", "/.config"):
        if directory.endswith(tail):
            return directory[: -len(tail)] or "/"
    return directory


#: Yarn's configs (round 37): ``yarnPath`` / ``yarn-path`` names the file every yarn command there
#: runs instead of yarn, ``plugins`` the files it loads; a release outside ``.yarn/releases``
#: (guarded whole since round 17) was not guarded.
_YARN_CONFIGS: Final = frozenset({".yarnrc.yml", ".yarnrc"})
#: A Yarn config's tokens (YAML, or Yarn 1's ``key value`` lines): comments, quoted and plain
#: scalars, and the punctuation that tells keys, list items and flow collections apart.
_YARN_TOKEN: Final = re.compile(
    r"""(?P<comment>(?:^|(?<=\s))\#[^\n]*)"""
    r"""|"(?P<dq>(?:[^"\\\n]|\\.)*)"|'(?P<sq>(?:[^'\n]|'')*)'"""
    r"""|(?P<punct>[\[\]{},]|:(?=[\s\[\]{},]|$)|-(?=\s))"""
    r"""|(?P<plain>(?:[^\s\[\]{},:"'\#]|:(?![\s\[\]{},]|$)|\#)+)""",
    re.MULTILINE,
)
#: The keys naming the release Yarn runs instead of itself (Yarn 2+, Yarn 1).
_YARN_RELEASE_KEYS: Final = frozenset({"yarnPath", "yarn-path"})
#: A YAML block scalar's header (``>-``, ``|``): the value follows on the next lines.
_BLOCK_HEADER: Final = re.compile(r"[>|][-+0-9]*")


def yarn_loads(directory: str, text: str) -> frozenset[str]:
    """The files a Yarn config in ``directory`` has every ``yarn`` command there run or load: its
    ``yarnPath`` (``.yarnrc.yml``) or ``yarn-path`` (``.yarnrc``, Yarn 1), and its ``plugins``'
    paths (a list item's string, or its ``path``), each relative to the config's directory as Yarn
    resolves them. Read by YAML's tokens, not by lines (red team round 37 review2: a quoted key, a
    space before the colon, the value on the next line, a flow mapping or list -- one-line JSON --
    and a plugin path not ending in ``.js`` were each Yarn's and unread)."""
    tokens = list(_yarn_tokens(text))
    found: set[str] = set()
    flow = 0
    section: tuple[int, int] | None = None  # (flow depth, column) of the ``plugins`` key
    pending: str | None = None  # the key whose value comes next
    for index, (kind, value, column) in enumerate(tokens):
        if kind == "punct":
            flow += 1 if value in "[{" else -1 if value in "]}" else 0
            flow = max(flow, 0)
            continue
        follows = tokens[index + 1][1] if index + 1 < len(tokens) and tokens[index + 1][0] == "punct" else ""
        if follows == ":" or (value in _YARN_RELEASE_KEYS and pending is None):
            if section is not None and flow <= section[0] and (flow > 0 or column <= section[1]):
                section = None  # a key of the level ``plugins`` is on: its value has ended
            if value == "plugins":
                section = (flow, column)
            pending = None if value == "plugins" else value  # its items are read as the section's
            continue
        if pending is not None and _BLOCK_HEADER.fullmatch(value):
            continue  # the value is on the lines below
        release = pending in _YARN_RELEASE_KEYS
        plugin = section is not None and pending in (None, "path") and "://" not in value
        if value and (release or plugin):
            if len(found) >= _YARN_FILES:
                break  # the config naming more is guarded itself (round 17)
            _add_known(found, directory, value)
        pending = None
    return frozenset(found)


#: Most files one Yarn config's reading names (a real one: a release and a few plugins).
_YARN_FILES: Final = 256
#: Tokens of one Yarn config read (a real one: tens); past it the rest is not read.
_YARN_TOKENS: Final = 65_536


def _yarn_tokens(text: str) -> Iterator[tuple[str, str, int]]:
    """(``scalar`` or ``punct``, its text, its column) of each token of ``text``, comments left out,
    at most `_YARN_TOKENS`; columns counted as the tokens come (linear on a one-line file)."""
    line_start, seen_to = 0, 0
    for count, match in enumerate(_YARN_TOKEN.finditer(text)):
        if count >= _YARN_TOKENS:
            return
        kind = match.lastgroup or ""
        start = match.start()
        newline = text.rfind("\n", seen_to, start)
        if newline >= 0:
            line_start = newline + 1
        seen_to = start
        if kind != "comment":
            yield ("scalar" if kind != "punct" else kind, match.group(kind), start - line_start)


def loads_at_cd(path: str) -> Callable[[str, str], frozenset[str]] | None:
    """The reader of the files ``path`` loads at ``cd`` (an ``.envrc``, a mise config), or at any
    ``hg``/``sl`` command (a repository's ``.hg/hgrc``) or ``yarn`` command (a Yarn config), or None."""
    # Names folded (`sandbox._namefold`, red team round 27 fold2): ``.ENVRC`` or ``.Mise.TOML`` is
    # the file direnv or mise reads on a folding filesystem (elsewhere judged so too: fails closed).
    name = fold_name(os.path.basename(path))
    if name == ENVRC:
        return envrc_loads
    if name in _YARN_CONFIGS:
        return yarn_loads
    if is_hg_config(path):  # not at cd: at every hg command (`_hgrc_loads`)
        return hgrc_loads
    parents = tuple(p for p in os.path.dirname(path).split("/") if p)
    if name.endswith(".toml") and obeyed_reason(parents, name) == _MISE_WHY:
        return mise_loads
    return None


@functools.lru_cache(maxsize=1)
def host_programs(path_env: str | None = None) -> frozenset[str]:
    """The names of the programs on the host's ``PATH`` (``path_env``; None: this process's)."""
    names: set[str] = set()
    for directory in (os.environ.get("PATH", "") if path_env is None else path_env).split(os.pathsep):
        if directory.startswith("/"):
            with contextlib.suppress(OSError), os.scandir(directory) as entries:
                names.update(e.name for e in entries)
    return frozenset(names)


#: Where the system's own programs live (the first names a shell finds, whatever PATH adds).
_SYSTEM_DIRS: Final = ("/usr/bin", "/bin", "/usr/sbin", "/sbin")
#: Compiled programs a dependency manager writes a twin of on purpose (``npm i node``).
_DEPS_OWN: Final = ("node", "nodejs", "python", "pip")


@functools.lru_cache(maxsize=4096)
def shadows_system_program(name: str) -> bool:
    """Whether ``name`` in ``node_modules/.bin`` shadows a compiled system program (``ls``, ``git``,
    ``make``, ``ssh``). Package tools are scripts: a twin of an interpreted system program (an apt
    ``tsc`` or ``eslint``) stays the dependencies'. A few opens, once a name a process."""
    if not name or "/" in name or name.startswith(_DEPS_OWN):
        return False
    for directory in _SYSTEM_DIRS:
        fd = -1
        try:
            fd = os.open(os.path.join(directory, name), os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
            if stat.S_ISREG(os.fstat(fd).st_mode) and os.read(fd, 4) == b"\x7fELF":
                return True
        except OSError:
            continue
        finally:
            if fd >= 0:
                os.close(fd)
    return False


def on_path_obeys(loads: frozenset[str] | set[str], path: str) -> bool:
    """Whether the file ``path`` shadows a host program from a directory ``loads`` puts on PATH."""
    directory, name = os.path.split(path)
    directory = path_key(directory)
    return (os.path.join(directory, ON_PATH) in loads and name in host_programs()) or (
        os.path.join(directory, ON_PATH_DEPS) in loads and shadows_system_program(name)
    )


def cd_loads(path: str, text: str) -> frozenset[str]:
    """The files the config ``path`` (content ``text``) loads at ``cd``; empty for another file."""
    reader = loads_at_cd(path)
    return reader(os.path.dirname(path), text) if reader is not None else frozenset()


#: The configs `cd_loaded_reason` looks for in each directory above a path (with `_CONF_D`'s drop-ins).
_CONFIGS: Final = (
    ENVRC,
    "mise.toml",
    ".mise.toml",
    "mise.local.toml",
    ".mise.local.toml",
    ".rtx.toml",
    ".config/mise.toml",
    ".mise/config.toml",
    "mise/config.toml",
    ".config/mise/config.toml",
    ".hg/hgrc",
    ".hg/hgrc-not-shared",
    ".sl/config",
    ".yarnrc.yml",
    ".yarnrc",
)
#: mise's drop-in directories (round 20: every ``*.toml`` there is a config, read like mise.toml).
_CONF_D: Final = ("mise/conf.d", ".config/mise/conf.d")
_MAX_WALK: Final = 64
_MAX_CONFIG: Final = 1 << 20


def cd_loaded_reason(path: str | os.PathLike[str]) -> str | None:
    """Why a file tool must ask before writing ``path``: an ``.envrc`` or mise config in a directory
    above it loads it at ``cd`` (what the after-command check protects; round 19). Looks at the
    disk (about ten failed opens a directory level)."""
    text = os.path.abspath(os.fspath(path))
    folded = fold_path(text)  # ``.ENV.Local`` is the ``.env.local`` loaded on a folding filesystem
    directory = os.path.dirname(text)
    for _ in range(_MAX_WALK):
        for config in _configs_in(directory):
            loads = _config_loads(config)
            if not loads:
                continue
            if text in loads or on_path_obeys(loads, text) or _folded_loads(loads, folded):
                return f"a file {config} has the host load (direnv or mise at every cd, hg or yarn at every command)"
        parent = os.path.dirname(directory)
        if parent == directory:
            break
        directory = parent
    return None


def _configs_in(directory: str) -> list[str]:
    """The configs of `_CONFIGS` and the drop-ins of `_CONF_D` in ``directory`` (may not exist)."""
    configs = [os.path.join(directory, name) for name in _CONFIGS]
    for drop_in in _CONF_D:
        with contextlib.suppress(OSError), os.scandir(os.path.join(directory, drop_in)) as entries:
            configs += sorted(e.path for e in entries if fold_name(e.name).endswith(".toml"))
    return configs


def _folded_loads(loads: frozenset[str], folded: str) -> bool:
    """Whether the folded path ``folded`` is one of ``loads`` or on a PATH they add, both folded
    (`sandbox._namefold`, red team round 27 fold2)."""
    mine = frozenset(fold_path(p) for p in loads)
    return folded in mine or on_path_obeys(mine, folded)


#: config path -> (its `Stamp`, what it loads): parsed again only once it changed. The stamp
#: holds the change time: a rewrite of the same size with its modification time put back
#: (``touch -d``, ``os.utime``) kept the old answer (stop 64); nothing but the kernel sets ctime.
#: The stamp is `sandbox.confine`'s (same fields, taken before the read, as its `write_file` wants).
_parsed: dict[str, tuple[Stamp, frozenset[str]]] = {}


def _config_loads(config: str) -> frozenset[str]:
    try:
        st = os.stat(config)
    except OSError:
        return frozenset()
    sig = stamp(st)
    known = _parsed.get(config)
    if known is not None and known[0] == sig:
        return known[1]
    content = _read_config(config)
    loads = cd_loads(config, content) if content is not None else frozenset()
    if len(_parsed) > 1024:
        _parsed.clear()
    _parsed[config] = (sig, loads)
    return loads


def _read_config(path: str) -> str | None:
    """A regular file's text (None for anything else: a FIFO must not hang the host)."""
    content = read_regular(path, _MAX_CONFIG)
    return None if content is None else content[:_MAX_CONFIG].decode("utf-8", "replace")
