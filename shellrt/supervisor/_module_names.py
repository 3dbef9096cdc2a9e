"""Which module names perl, ruby, lua and java find past a directory on their search variable.

Why (red team round 40 trust3): ``PERL5LIB``, ``PERLLIB``, ``RUBYLIB``, ``LUA_PATH``/``LUA_CPATH``
and ``CLASSPATH`` come before the interpreter's own libraries, as ``PYTHONPATH`` does (round 39):
with a dotfiles or tools repository's ``lib/`` on one, a command's ``strict.pm``, ``rubygems.rb``
(ruby requires it at every start), ``socket.lua`` or ``META-INF/services/…Processor`` there runs in
every perl, ruby, lua or ``javac`` the operator starts. Which names a file there shadows is known
from the libraries' own directories, listed here by pattern (no interpreter is started: a process
per judgement is too dear); a new name stays the project's own, loaded by choosing it, as on
``PYTHONPATH``. Perl and ruby always have a standard library: with none found here, every name
counts (fail closed). Lua's standard modules are built in (preloaded: no file shadows them).
Read at most once a second, only when a file of such a directory is judged.
"""

from __future__ import annotations

import contextlib
import glob
import os
import time

from sandbox._namefold import fold_name, fold_path

__all__ = ["shadows_a_library"]

#: Each language's library directories (patterns, ``~`` the home): their entries' names are found
#: past the variable's directories. At most `_PER_PATTERN` directories a pattern.
_LIBRARIES: dict[str, tuple[str, ...]] = {
    "perl": (
        "/etc/perl",
        "/usr/share/perl/5*",
        "/usr/share/perl5",
        "/usr/share/perl5/vendor_perl",
        "/usr/lib/*/perl/5*",
        "/usr/lib/*/perl5/5*",
        "/usr/lib/*/perl-base",
        "/usr/lib64/perl5",
        "/usr/lib64/perl5/vendor_perl",
        "/usr/local/share/perl/5*",
        "/usr/local/lib/*/perl/5*",
        "/usr/local/lib/site_perl",
        "/usr/local/share/perl5",
        "/usr/local/lib64/perl5",
        "/opt/homebrew/lib/perl5/*",
        "/opt/homebrew/opt/perl/lib/perl5/*",
        "/System/Library/Perl/5*",
        "/Library/Perl/5*",
        "~/perl5/lib/perl5",
        "~/perl5/perlbrew/perls/*/lib/5*",
    ),
    "ruby": (
        "/usr/lib/ruby/[0-9]*",
        "/usr/lib/ruby/vendor_ruby",
        "/usr/lib/ruby/site_ruby",
        "/usr/lib/*/ruby/[0-9]*",
        "/usr/lib/ruby/gems/*/gems/*/lib",
        "/var/lib/gems/*/gems/*/lib",
        "/usr/share/rubygems-integration/*/gems/*/lib",
        "/usr/local/lib/site_ruby/*",
        "/usr/local/lib/ruby/[0-9]*",
        "/usr/local/lib/ruby/gems/*/gems/*/lib",
        "/opt/homebrew/opt/ruby/lib/ruby/[0-9]*",
        "/opt/homebrew/lib/ruby/gems/*/gems/*/lib",
        "~/.gem/ruby/*/gems/*/lib",
        "~/.rbenv/versions/*/lib/ruby/[0-9]*",
        "~/.rubies/*/lib/ruby/[0-9]*",
        "~/.rvm/rubies/*/lib/ruby/[0-9]*",
        "~/.local/share/mise/installs/ruby/*/lib/ruby/[0-9]*",
    ),
    "lua": (
        "/usr/share/lua/*",
        "/usr/local/share/lua/*",
        "/usr/lib/*/lua/*",
        "/usr/lib64/lua/*",
        "/usr/local/lib/lua/*",
        "/usr/share/luajit*",
        "/usr/local/share/luajit*",
        "/opt/homebrew/share/lua/*",
        "/opt/homebrew/lib/lua/*",
        "~/.luarocks/share/lua/*",
        "~/.luarocks/lib/lua/*",
    ),
}
#: Names loaded at every start, whatever the listing says: ruby requires ``rubygems`` (and with it
#: ``bundled_gems``, ``did_you_mean``, ``error_highlight``, ``syntax_suggest``) before any script;
#: ``bundler`` is what ``bundle exec`` and ``require "bundler/setup"`` load.
_AT_START: dict[str, frozenset[str]] = {
    "ruby": frozenset({"rubygems", "bundled_gems", "did_you_mean", "error_highlight", "syntax_suggest", "bundler"}),
}
#: The endings of a module file each language loads by a name (perl's ``strict`` -> ``strict.pm``):
#: another file directly in the directory (``test.py`` on a home ``PERL5LIB``) is no module of it.
_ENDINGS: dict[str, tuple[str, ...]] = {
    "perl": (".pm", ".pmc", ".pl", ".ph", ".so"),
    "ruby": (".rb", ".so", ".bundle"),
    "lua": (".lua", ".so", ".dll"),
}
#: Languages whose library is never empty where the interpreter is installed: none found, all count.
_FAIL_CLOSED = frozenset({"perl", "ruby"})
_PER_PATTERN = 256
_TTL_S = 1.0
#: language -> (monotonic time, HOME, the folded names) as last listed.
_CACHE: dict[str, tuple[float, str, frozenset[str]]] = {}


def _names(language: str) -> frozenset[str]:
    """The folded top-level names of ``language``'s library directories (`_LIBRARIES`)."""
    now, home = time.monotonic(), os.environ.get("HOME", "")
    cached = _CACHE.get(language)
    if cached is not None and now - cached[0] < _TTL_S and cached[1] == home:
        return cached[2]
    names: set[str] = set()
    for pattern in _LIBRARIES.get(language, ()):
        for directory in sorted(glob.glob(os.path.expanduser(pattern)))[:_PER_PATTERN]:
            with contextlib.suppress(OSError), os.scandir(directory) as found:
                names.update(fold_name(item.name.split(".")[0]) for item in found)
    _CACHE[language] = (now, home, frozenset(names))
    return _CACHE[language][2]


def shadows_a_library(dirs: dict[str, frozenset[str]], rest: str, name: str) -> bool:
    """Whether file ``name`` of folded ``rest`` (a module path directory's real path, then the
    directories below it) is one its interpreter would otherwise find elsewhere: a top-level name
    (the file's stem, or the first directory below the entry) its libraries hold, ruby's start-up
    names, a ``CLASSPATH`` directory's ``META-INF`` (service entries: ``javac``'s annotation
    processors, JDBC drivers), any jar of a ``dir/*`` entry, any file of a Lua template's directory
    whose file names are not the module's alone (``lua?``), any file of a ``NODE_PATH`` directory
    (a package's optional dependency is loaded from it when missing: round 40 review18). ``dirs``: folded directory -> its
    languages (``java*`` for a wildcard entry). Unknown directory: True (fail closed)."""
    top = max((d for d in dirs if rest == d or rest.startswith(d + "/")), key=len, default=None)
    if top is None:
        return True
    below = rest[len(top) + 1 :].split("/") if rest != top else []
    module = fold_name(below[0] if below else name.split(".")[0])
    for language in dirs[top]:
        if language in ("lua?", "node"):  # ``mod_?.lua``; NODE_PATH: any name, optional ones too
            return True
        if language == "java*":
            if not below and fold_path(name).endswith((".jar", ".zip")):
                return True
            continue
        if language == "java":
            if module == "meta-inf":
                return True
            continue
        if not below and not name.endswith(_ENDINGS.get(language, ("",))):
            continue  # a file perl, ruby or lua never loads as a module
        if module in _AT_START.get(language, frozenset()):
            return True
        names = _names(language)
        if module in names or (not names and language in _FAIL_CLOSED):
            return True
    return False
