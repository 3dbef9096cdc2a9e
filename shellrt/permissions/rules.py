"""Permission rules: ``Tool`` or ``Tool(specifier)``, parsed once and matched against a subject.

A rule never sees raw tool input: it matches the `PermissionSubject` a tool
derives from its input (a shell command's subcommands, resolved paths,
domains). That keeps matching uniform across tools and makes compound
commands safe: ``Bash(git status:*)`` is checked against *each* subcommand.

Specifier kinds, by tool name:

- ``Bash`` / ``PowerShell``: ``git status`` (exact), ``git diff:*`` (prefix at a
  word boundary), ``npm run *`` (``*`` matches any text);
- ``Read`` (read access), ``Edit`` / ``Write`` / ``MultiEdit`` / ``NotebookEdit``
  (write access): gitignore-style path globs — ``//abs``, ``~/home``,
  ``/rel-to-settings-root``, ``./rel`` or ``rel``; they apply to *every* tool
  whose subject has that access (Grep and Glob read, so ``Read(...)`` covers
  them); a ``Read`` deny or ask also covers writes to the same paths;
- ``WebFetch(domain:example.com)``, ``WebFetch(domain:*.example.com)``;
- ``mcp__server`` / ``mcp__server__*`` (every tool of a server), ``mcp__server__tool``;
  MCP rules take no specifier;
- any other ``Tool(spec)``: a path glob over that tool's own subject paths.
"""

from __future__ import annotations

import functools
import itertools
import os
import re
import unicodedata
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from sandbox._namefold import fold_path
from sandbox.confine import relative_to
from shellrt.permissions.command_rule_typos import inert_command_rule
from shellrt.permissions.errors import RuleSyntaxError
from shellrt.permissions.globs import glob_matches
from shellrt.permissions.hosts import address_entry, address_matches, canonical_host, rule_host, rule_network
from shellrt.permissions.nfc_listing import names_in_nfc
from shellrt.permissions.rule_paths import DotSegmentError, fold_dot_segments, windows_form, windows_forms
from shellrt.permissions.tool_names import TOOL_ALIASES, canonical_tool_name
from shellrt.protocol import PermissionSubject

__all__ = [
    "COMMAND_TOOLS",
    "READ_RULE_TOOLS",
    "SAFE_ENV_NAMES",
    "WRITE_RULE_TOOLS",
    "PermissionRule",
    "RuleKind",
    "RuleOrigin",
    "SpecifierKind",
    "command_text",
    "git_metadata_reason",
    "is_safe_env_name",
    "mcp_name_parts",
    "parse_rule",
    "pattern_base",
]

RuleKind = Literal["allow", "deny", "ask"]
SpecifierKind = Literal["none", "command", "path", "domain"]

COMMAND_TOOLS = frozenset({"Bash", "PowerShell"})
READ_RULE_TOOLS = frozenset({"Read"})
WRITE_RULE_TOOLS = frozenset({"Edit", "Write", "MultiEdit", "NotebookEdit"})

#: The only variables a command part may set (as a prefix, an assignment or ``export``) and
#: still match a ``Bash(...)`` allow rule. Every other variable can change what a program
#: runs (``GIT_EXTERNAL_DIFF``, ``LD_PRELOAD``, ``PAGER``...). ``LC_*`` is a prefix.
#: This is the one list; ``docs/permissions.md`` quotes it.
SAFE_ENV_NAMES: frozenset[str] = frozenset(
    {
        "LANG",
        "LANGUAGE",
        "LC_*",
        "TZ",
        "TERM",
        "COLORTERM",
        "NO_COLOR",
        "FORCE_COLOR",
        "CLICOLOR",
        "COLUMNS",
        "LINES",
        "NODE_ENV",
        "RUST_BACKTRACE",
        "RUST_LOG",
        "PYTHONUNBUFFERED",
        "PYTHONDONTWRITEBYTECODE",
        "GOOS",
        "GOARCH",
        "CGO_ENABLED",
    }
)


def is_safe_env_name(name: str) -> bool:
    """Whether setting ``name`` leaves a part matchable by allow rules (see `SAFE_ENV_NAMES`)."""
    return name in SAFE_ENV_NAMES or (
        name.startswith("LC_") and re.fullmatch(r"LC_[A-Z_]+", name) is not None
    )


#: Basenames that are git metadata wherever they are (a directory with them is, or can be
#: made, a repository whose config git obeys).
_GIT_FILES = frozenset({".gitattributes", ".gitmodules", ".gitconfig", "HEAD", "config", "packed-refs"})
#: Directories of a (bare) repository; a file below one of them is metadata when the
#: directory beside it holds ``HEAD``.
_GIT_DIRS = frozenset({"objects", "refs", "hooks", "info", "worktrees", "modules", "logs"})


def git_metadata_reason(path: str) -> str | None:
    """Why writing ``path`` changes what git runs (a safety check no mode skips), or None.

    Covers ``.git/**``, ``.gitattributes``, ``.gitmodules``, and the files that make
    or configure a bare repository (``HEAD``, ``config``, ``packed-refs``,
    ``objects/info/alternates``, files under ``refs/``, ``hooks/``… of a directory
    holding ``HEAD``). Used for every write subject, whatever the tool (Write, Edit,
    a Bash redirection).
    """
    norm = os.path.normpath(path)
    parts = Path(norm).parts
    if not parts:
        return None
    name = parts[-1]
    if ".git" in parts[:-1] or name == ".git" or any(p.endswith(".git") and p != ".git" for p in parts[:-1]):
        return "git metadata (.git/ or a *.git repository): git obeys its config and hooks"
    if name in _GIT_FILES:
        return f"git metadata ({name}): it can make git run programs or make a directory a repository"
    if norm.endswith("/objects/info/alternates"):
        return "git metadata (objects/info/alternates)"
    for i in range(len(parts) - 2, 0, -1):
        if parts[i] in _GIT_DIRS and os.path.lexists(os.path.join(*parts[:i], "HEAD")):
            return f"git metadata (below {parts[i]}/ of a repository)"
    return None


#: shellrt's built-in tool names (and Claude Code's file-edit names rules may use), by lower case:
#: a rule naming one in another case is a typo that would silently match nothing.
_BUILTIN_BY_LOWER = {
    name.lower(): name
    for name in (
        *COMMAND_TOOLS,
        *READ_RULE_TOOLS,
        *WRITE_RULE_TOOLS,
        "Glob",
        "Grep",
        "WebFetch",
        "WebSearch",
        "TaskOutput",
        "TaskStop",
        "TodoWrite",
        "ToolSearch",
        *TOOL_ALIASES,
    )
}


def builtin_tool_named(name: str) -> str | None:
    """The built-in tool (or alias) ``name`` names in any case, as spelled; None for other names."""
    return _BUILTIN_BY_LOWER.get(name.lower())
_TOOL_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_\-]*(__\*)?$")
_HOST_PATTERN = re.compile(r"^(\*\.)?([a-z0-9]([a-z0-9\-]*[a-z0-9])?)(\.[a-z0-9]([a-z0-9\-]*[a-z0-9])?)*$")


@dataclass(frozen=True)
class RuleOrigin:
    """Where a rule came from: a source name (``project``, ``cli``…) and, for files, file and line."""

    source: str
    file: Path | None = None
    line: int | None = None
    #: Directory relative path specifiers are anchored at (see `settings_root`).
    root: Path | None = None
    #: For a rule an approval remembered: the directories the approved call ran in. Such a rule
    #: covers a command part only when the part runs in exactly those (``./run.sh`` approved at
    #: the top is not ``tools/run.sh`` after a ``cd``; red team round 16). None: not anchored.
    dirs: frozenset[str] | None = None
    #: For a rule an approval remembered: the files the approved call named and the manifests its
    #: programs read, fingerprinted (`content_anchor`); the rule covers a part only while what the
    #: part names is among them, unchanged (a file rewritten since asks again; round 18).
    files: frozenset[tuple[str, str]] | None = None

    def describe(self) -> str:
        if self.file is None:
            return "command-line flags" if self.source == "cli" else f"{self.source} settings"
        where = f"{self.file}:{self.line}" if self.line else str(self.file)
        return f"{self.source} settings ({where})"


@dataclass(frozen=True)
class PermissionRule:
    """One parsed rule. ``text`` is the normalized rule as users write it."""

    kind: RuleKind
    tool: str
    specifier: str | None
    spec_kind: SpecifierKind
    origin: RuleOrigin = field(default_factory=lambda: RuleOrigin("session"))

    @property
    def text(self) -> str:
        return self.tool if self.specifier is None else f"{self.tool}({self.specifier})"

    @property
    def tool_wide(self) -> bool:
        """True for ``Tool`` (no specifier) and ``mcp__server`` rules: they match every call of the tool."""
        return self.specifier is None

    def describe(self) -> str:
        return f"{self.kind} rule {self.text} from {self.origin.describe()}"

    # --- matching ---------------------------------------------------------
    def matches_tool(self, tool_name: str) -> bool:
        """Whether this tool-wide rule names ``tool_name`` (MCP server rules cover the server's tools)."""
        if not self.tool_wide:
            return False
        if self.tool == tool_name:
            return True
        if self.tool.startswith("mcp__"):
            server, tool = mcp_name_parts(self.tool)
            # A server rule names one server: the tool's own server, split the same way (a prefix
            # test let server docs's tool ``_search`` fall under ``mcp__docs_``; round 15).
            if tool in (None, "*") and tool_name.startswith("mcp__"):
                return mcp_name_parts(tool_name)[0] == server
        return False

    def applies_to(self, tool_name: str, subject: PermissionSubject) -> bool:
        """Whether this content rule concerns this call at all (before looking at the content)."""
        if self.tool_wide:
            return False
        if self.spec_kind == "command":
            return self.tool == tool_name
        if self.spec_kind == "domain":
            return self.tool == tool_name
        if self.tool in READ_RULE_TOOLS:
            if self.kind == "allow":
                return subject.access == "read"
            return subject.access in ("read", "write")
        if self.tool in WRITE_RULE_TOOLS:
            return subject.access == "write"
        return self.tool == tool_name

    def match_item(self, item: str, *, home: Path, resolve: bool) -> bool:
        """Whether one command / path / domain of a subject is matched by this rule's specifier."""
        assert self.specifier is not None
        if self.spec_kind == "command":
            if self.kind != "allow" and _pwsh_hidden_met(self, item, home=home, resolve=resolve):
                return True
            if self.tool == "PowerShell":  # pwsh's names and parameter names ignore case (round 26)
                if self.kind == "allow":
                    named = _pwsh_named_as(self.specifier, item)
                    return _command_matches(self.specifier, named, fold=command_text)
                return _pwsh_matches_folded(self.specifier, item)
            if self.kind == "allow":  # whitespace inside quotes is data (round 17)
                return _command_matches(self.specifier, item, fold=command_text)
            return _command_matches(_program_by_name(self.specifier), item, fold=_fold_program_case)
        if self.spec_kind == "domain":
            # Deny and ask see every IPv4 address an IPv6 literal carries (NAT64, 6to4 ...).
            return _domain_matches(self.specifier[len("domain:") :], item, carried=not resolve)
        if _path_matches(self.specifier, item, self.origin.root, home=home, resolve=resolve):
            return True
        # Deny/ask: a Windows-style spelling covers what it names with '/' too, as the sandbox masks it.
        forms = self.windows_forms() if self.kind != "allow" else ()
        return any(_path_matches(f, item, self.origin.root, home=home, resolve=resolve) for f in forms)

    def windows_form(self) -> str | None:
        """This path rule's specifier with Windows separators read as ``/`` (`rule_paths.windows_form`)."""
        if self.spec_kind != "path" or self.specifier is None:
            return None
        return _windows_form(self.specifier, self.origin.root)

    def windows_forms(self) -> tuple[str, ...]:
        """Every Windows reading of this path rule (`rule_paths.windows_forms`): deny and ask rules
        match each, and a repository's rule is masked by each (round 45)."""
        if self.spec_kind != "path" or self.specifier is None:
            return ()
        return _windows_forms(self.specifier, self.origin.root)

    def may_match_below(self, directory: str, *, home: Path, limit: int = 20_000) -> bool:
        """Whether a recursive read of ``directory`` may reach a path this rule covers.

        An anchored pattern (``./secrets/**``) is reached when its fixed prefix exists
        below ``directory`` (or ``directory`` is below it); a floating one (``.env``,
        ``*.pem``) when a walk of ``directory`` finds a matching name — a walk that
        exceeds ``limit`` entries counts as a hit (fail closed). Symbolic links inside
        the walked tree are not followed (the sandbox's masked paths cover that).
        """
        if self.spec_kind != "path" or self.specifier is None:
            return False
        forms = self.windows_forms() if self.kind != "allow" else ()
        return any(_may_match_below(spec, self.origin.root, directory, home, limit) for spec in (self.specifier, *forms))

    def subject_items(self, subject: PermissionSubject) -> tuple[str, ...]:
        if self.spec_kind == "command":
            return subject.commands
        if self.spec_kind == "domain":
            return subject.domains
        return subject.paths


@functools.lru_cache(maxsize=512)
def _windows_form(spec: str, root: Path | None) -> str | None:
    return windows_form(spec, root)


@functools.lru_cache(maxsize=512)
def _windows_forms(spec: str, root: Path | None) -> tuple[str, ...]:
    return windows_forms(spec, root)


def _may_match_below(spec: str, root: Path | None, directory: str, home: Path, limit: int) -> bool:
    """`PermissionRule.may_match_below` for one spelling of the rule's specifier."""
    based = pattern_base(spec, root, home)
    if based is None:
        return False
    base, pattern = based
    real_base = os.path.realpath(base)
    real_dir = os.path.realpath(directory)
    if "/" not in pattern.rstrip("/"):  # floats: any depth below the base
        if _is_below(real_dir, real_base):
            start = real_dir
        elif _is_below(real_base, real_dir):
            start = real_base
        else:
            return False
        return _walk_matches(start, real_base, pattern, limit)
    fixed: list[str] = []
    for segment in pattern.strip("/").split("/"):
        # Any glob character or escape ends the fixed part (a shallower anchor: fail closed). ``{``
        # and ``\\`` were taken literally: ``./{a,b}/key`` was anchored at a missing ``{a,b}``
        # and ``grep -r`` of the workspace read ``a/key`` (round 45).
        if any(c in segment for c in "*?[]{}\\"):
            break
        fixed.append(segment)
    anchor = os.path.realpath(os.path.join(real_base, *fixed)) if fixed else real_base
    # In NFC, as every other deny matches: ``café`` (the rule, as typed) is the on-disk NFD
    # ``cafe`` + U+0301 to the permission layer (red team, round 56).
    nfc_dir, nfc_anchor = unicodedata.normalize("NFC", real_dir), unicodedata.normalize("NFC", anchor)
    if _is_below(nfc_dir, nfc_anchor) and nfc_dir != nfc_anchor:
        return True
    return _is_below(nfc_anchor, nfc_dir) and _lexists_in_any_form(anchor)


def _lexists_in_any_form(path: str) -> bool:
    """Whether ``path`` (absolute) exists with each name in any Unicode normal form."""
    return os.path.lexists(path) or (not path.isascii() and bool(_spellings_on_disk(path)))


def _spellings_on_disk(path: str) -> list[str]:
    """The existing paths that are ``path`` (absolute) with names in any Unicode normal form (a listing
    per non-ASCII name, kept for a settled directory: `nfc_listing`; 64 candidates at most)."""
    found = ["/"]
    for part in Path(path).parts[1:]:
        nxt: list[str] = []
        wanted = unicodedata.normalize("NFC", part)
        for parent in found:
            names = {part}
            if not part.isascii():
                try:
                    names |= names_in_nfc(parent, wanted)  # a settled directory's listing is kept
                except OSError:
                    pass
            nxt += [os.path.join(parent, n) for n in sorted(names) if os.path.lexists(os.path.join(parent, n))]
        found = nxt[:64]
        if not found:
            break
    return found


def parse_rule(text: object, kind: RuleKind, origin: RuleOrigin | None = None) -> PermissionRule:
    """Parse ``Tool`` or ``Tool(specifier)``; raises `RuleSyntaxError` with a reason a person can act on."""
    origin = origin or RuleOrigin("session")
    if not isinstance(text, str):
        raise RuleSyntaxError(f"a rule must be a string, got {type(text).__name__}")
    raw = text.strip()
    if not raw:
        raise RuleSyntaxError("empty rule")
    if "\x00" in raw:
        raise RuleSyntaxError("rule contains a NUL character")
    open_at = raw.find("(")
    if open_at == -1:
        if ")" in raw:
            raise RuleSyntaxError(f"unbalanced ')' in rule {raw!r}")
        tool, spec = raw, None
    else:
        if not raw.endswith(")"):
            raise RuleSyntaxError(f"rule {raw!r} opens '(' but does not end with ')'")
        tool, spec = raw[:open_at].strip(), _specifier(raw[open_at + 1 : -1])
        if not spec:
            raise RuleSyntaxError(f"rule {raw!r} has an empty specifier; write {tool!r} for the whole tool")
    if not _TOOL_NAME.match(tool):
        raise RuleSyntaxError(f"{tool!r} is not a tool name")
    tool = canonical_tool_name(tool)  # ``KillShell`` is TaskStop: a rule on an alias is on the tool (round 12)
    known = _BUILTIN_BY_LOWER.get(tool.lower())
    if known is not None and known != tool:
        # Tool names are case-sensitive: ``read(./secrets/**)`` would match no call at all.
        raise RuleSyntaxError(
            f"{tool!r} names no tool; tool names are case-sensitive (did you mean {known!r}?)"
        )
    if tool[:5].lower() == "mcp__":
        return _parse_mcp(tool, spec, kind, origin)
    if spec is None or (spec in ("*", "**") and tool in COMMAND_TOOLS):
        return PermissionRule(kind, tool, None, "none", origin)
    if spec.startswith("domain:") and _takes_hosts(tool, spec, raw):
        host = spec[len("domain:") :].strip().lower().rstrip(".")
        if "/" in host:  # an address range: every address in it, however it is reached (round 28)
            try:
                return PermissionRule(kind, tool, f"domain:{rule_network(host)}", "domain", origin)
            except ValueError as exc:
                raise RuleSyntaxError(f"{host!r} in rule {raw!r}: {exc}") from None
        if not _HOST_PATTERN.match(host):
            raise RuleSyntaxError(
                f"{host!r} in rule {raw!r} is not a domain (use domain:example.com or domain:*.example.com)"
            )
        try:  # the fetched host's own spelling: ``134744072`` is ``8.8.8.8`` to the resolver and here
            host = rule_host(host)
        except ValueError as exc:
            raise RuleSyntaxError(
                f"{host!r} in rule {raw!r} is not a host the resolver can reach: {exc} "
                "(write the address in dotted decimal, as domain:8.8.8.8, or name the host)"
            ) from None
        return PermissionRule(kind, tool, f"domain:{host}", "domain", origin)
    if tool == "WebFetch":
        raise RuleSyntaxError(f"WebFetch rules take domain:HOST, got {spec!r}")
    if tool in COMMAND_TOOLS:
        normalized = command_text(spec)
        if ":*" in normalized[:-2]:
            raise RuleSyntaxError(f"':*' may only end a command rule, got {spec!r}")
        if normalized.endswith(":*") and not normalized[:-2].strip():
            raise RuleSyntaxError(f"command rule {raw!r} has an empty prefix")
        if kind != "allow" and tool == "Bash" and (inert := inert_command_rule(normalized)) is not None:
            raise RuleSyntaxError(f"{kind} rule {raw!r}: {inert}")  # it would deny nothing (round 33)
        return PermissionRule(kind, tool, normalized, "command", origin)
    if len(spec) >= 2 and spec[0] == spec[-1] and spec[0] in "'\"":
        raise RuleSyntaxError(
            f"{spec!r} in rule {raw!r}: a path rule is not quoted (quotes would be part of the name, "
            f"matching no file); write {tool}({spec[1:-1]})"
        )
    if (len(spec) - len(spec.rstrip("\\"))) % 2:
        raise RuleSyntaxError(f"{spec!r} in rule {raw!r} ends with a lone '\\', which matches no file; remove it")
    if spec.startswith("~") and not (spec == "~" or spec.startswith("~/")):
        raise RuleSyntaxError(f"{spec!r}: only ~/ (your own home) is supported")
    try:  # a '..' kept in a pattern matched no path: folded, or refused
        spec = fold_dot_segments(spec, origin.root)
    except DotSegmentError as exc:
        raise RuleSyntaxError(f"{spec!r} in rule {raw!r}: {exc}") from None
    return PermissionRule(kind, tool, spec, "path", origin)


#: Built-in tools whose calls may name hosts: a ``domain:`` rule of any other built-in matches nothing.
_FETCHING_TOOLS = frozenset({"WebFetch", "WebSearch"})


def _takes_hosts(tool: str, spec: str, raw: str) -> bool:
    """Whether ``tool``'s ``domain:`` rule names hosts: a fetching tool's, or another tool's (the
    Python API's own may judge hosts). A file tool's names a file (as the sandbox's mask of it always
    did), and a command tool's is refused (round 56: ``Bash(domain:evil.com)`` and
    ``Read(domain:k.txt)`` were domain rules no call meets, so a deny of them denied nothing, while
    the sandbox masked the file ``domain:k.txt``)."""
    if tool in _FETCHING_TOOLS or builtin_tool_named(tool) is None:
        return True
    if tool in COMMAND_TOOLS:
        raise RuleSyntaxError(
            f"rule {raw!r}: {tool} calls name no host, so this rule would match nothing; write "
            f"WebFetch({spec}) -- the sandbox's proxy enforces its deny for commands too"
        )
    return False


def _specifier(inner: str) -> str:
    """The text between a rule's parentheses without its surrounding blanks, but keeping a blank a
    backslash escapes (``Read(./k\\ )`` names the file ``k `` as gitignore patterns do; stripped,
    the rule matched nothing; round 26)."""
    spec = inner.strip()
    escapes = len(spec) - len(spec.rstrip("\\"))
    if escapes % 2 and len(inner.rstrip()) < len(inner):
        spec += inner[len(inner.rstrip())]
    return spec


def mcp_name_parts(name: str) -> tuple[str, str | None]:
    """``mcp__<server>__<tool>`` as (server, tool or None): split at the first ``__`` after
    ``mcp__``, since server names hold no ``__`` and never end in ``_`` while a tool's name is the
    server's own choice (``_search``, ``a__b``)."""
    rest = name[len("mcp__") :]
    server, sep, tool = rest.partition("__")
    return server, (tool if sep else None)


def _parse_mcp(tool: str, spec: str | None, kind: RuleKind, origin: RuleOrigin) -> PermissionRule:
    """An MCP rule; one that can name no MCP tool is refused (round 56: ``mcp__*`` and ``MCP__srv``
    parsed and matched nothing, so a deny of them denied nothing, silently)."""
    if not tool.startswith("mcp__"):
        raise RuleSyntaxError(
            f"{tool!r} names no tool; MCP tool names begin with 'mcp__' in lower case "
            f"(did you mean 'mcp__{tool[5:]}'?)"
        )
    if spec is not None:
        raise RuleSyntaxError(f"MCP rules take no specifier: write {tool!r} or {tool}__toolname")
    server, name = mcp_name_parts(tool)
    if not server or name == "":
        raise RuleSyntaxError(f"{tool!r} is not mcp__server, mcp__server__tool or mcp__server__*")
    if "*" in server:
        raise RuleSyntaxError(
            f"{tool!r}: there is no wildcard over MCP servers; name each server (mcp__<server> covers "
            "every tool of one server)"
        )
    if server.endswith("_"):
        raise RuleSyntaxError(
            f"{tool!r}: an MCP server name cannot end in '_' (mcp__{server}_… would also name tools of "
            f"server {server.rstrip('_')!r}); rename the server in mcpServers and in this rule"
        )
    if name is not None and name != "*" and "*" in name:
        raise RuleSyntaxError(f"{tool!r}: only a whole-server wildcard mcp__server__* is supported")
    return PermissionRule(kind, tool, None, "none", origin)


# --- specifier matching ------------------------------------------------------------


def _pwsh_hidden_met(rule: PermissionRule, item: str, *, home: Path, resolve: bool) -> bool:
    """Whether a deny/ask command ``rule`` meets code a ``pwsh`` command line ``item`` runs unseen: a
    command of its ``-EncodedCommand`` script (decoded), or any command when pwsh reads them from
    standard input (fail closed: no rule can read them).

    Why: ``pwsh -enc UgBlAG0A…`` and ``echo 'rm x' | pwsh -c -`` passed ``PowerShell(Remove-Item:*)``
    and ``Bash(rm:*)`` in ``bypassPermissions`` mode (round 28)."""
    lower = item.lower()
    if "pwsh" not in lower and "powershell" not in lower:
        return False
    from shellrt.analysis.pwsh_cli import pwsh_hidden_code
    from shellrt.permissions.engine import _embedded_commands

    hidden = pwsh_hidden_code([w.strip("'\"") for w in item.split()])
    if hidden is None:
        return False
    if hidden.why:
        return True
    return any(rule.match_item(form, home=home, resolve=resolve)
               for script in hidden.scripts for form in _embedded_commands([script]))


def _fold_all(text: str) -> str:
    return " ".join(text.split())


def _fold_program_case(text: str) -> str:
    """``text`` folded as `_fold_all`, its program name (the first word) also without case: for Bash
    deny and ask rules only.

    Why: on a case-insensitive filesystem (macOS's default, Windows) ``CURL x`` runs curl, and a deny
    rule ``Bash(curl:*)`` compared as written let it through (round 27). A deny or ask rule that meets
    more is never weaker; allow rules keep the case (never widened), and arguments keep theirs (``-X``
    is not ``-x``)."""
    head, sep, rest = _fold_all(text).partition(" ")
    return without_run_extension(head.casefold()) + sep + rest


#: What Windows appends to a command name it looks up (PATHEXT's default) and pwsh's own scripts.
_RUN_EXTENSION = re.compile(r"(?i)(?<=[^/\\.])\.(?:com|exe|bat|cmd|vbs|vbe|js|jse|wsf|wsh|msc|cpl|ps1)\Z")


def without_run_extension(name: str) -> str:
    """A program name without the extension Windows finds it by (``git.exe``, ``GIT.CMD``,
    ``deploy.ps1`` -> ``git``, ``GIT``, ``deploy``), for deny and ask rules only.

    Why: on Windows ``git.exe push`` runs what ``git push`` runs (cmd, pwsh and Git Bash look names up
    with PATHEXT; pwsh also finds ``*.ps1``), and ``Bash(git push:*)`` / ``PowerShell(curl:*)`` met
    neither spelling in ``bypassPermissions`` mode (round 28). Fail closed elsewhere: a program of its
    own named ``git.exe`` meets a rule on ``git`` too."""
    return _RUN_EXTENSION.sub("", name) if "." in name else name


@functools.lru_cache(maxsize=512)
def command_text(command: str) -> str:
    """``command`` with each run of whitespace outside quotes folded to one space, for command rules.

    Whitespace inside quotes is data (Python's indentation in ``python3 -c '…'``): folding it
    let an allow rule for one call cover another (round 17). Where the quoting is not plain
    (unclosed, ``$(…)``, backticks, a here-document) nothing is folded: the rule then matches
    that exact text only.
    """
    text = command.strip()
    if "$(" in text or "`" in text or "<<" in text:
        return text
    if not any(c in text for c in "'\"\\"):
        return " ".join(text.split())
    out: list[str] = []
    at = 0
    for match in _SHELL_TOKEN.finditer(text):
        if match.start() != at:  # an unclosed quote or a trailing backslash: fold nothing
            return text
        out.append(" " if match.group(1) else match.group(0))
        at = match.end()
    return "".join(out) if at == len(text) else text


#: A run of whitespace (group 1), a quoted string ($'…', '…', "…"), an escaped character, or other text.
_SHELL_TOKEN = re.compile(
    r"""\$'(?:[^'\\]|\\.)*'|'[^']*'|"(?:[^"\\]|\\.)*"|\\.|(\s+)|[^\s'"\\$]+|\$""", re.S
)


def _command_matches(spec: str, command: str, *, fold: Callable[[str], str]) -> bool:
    text = fold(command)
    spec = fold(spec)
    if spec.endswith(":*"):  # a prefix at a word boundary; a '*' inside it is a wildcard too
        prefix = spec[:-2].rstrip()
        return _wildcard_fullmatch(prefix, text) or _wildcard_fullmatch(prefix + " *", text)
    return _wildcard_fullmatch(spec, text)


#: A name pwsh resolves without regard to case and the analysis names as a cmdlet (``Verb-Noun``).
_PWSH_CMDLET = re.compile(r"[A-Za-z]+-[A-Za-z0-9]+").fullmatch


def _pwsh_named_as(spec: str, item: str) -> str:
    """``item`` with its command name spelled as the allow rule ``spec`` spells it, when both are one
    cmdlet name in two cases (``get-childitem`` and ``Get-ChildItem``); else ``item`` unchanged.

    Why only then: an allow rule must cover the command it names in any case and nothing more (a
    native program's name keeps its case: ``Git`` is not ``git`` on Linux); wildcards in the rule's
    name keep matching case-sensitively."""
    name = spec.split(" ", 1)[0].removesuffix(":*")
    head, sep, rest = item.partition(" ")
    if head != name and _PWSH_CMDLET(name) and head.lower() == name.lower():
        return name + sep + rest
    return item


@functools.lru_cache(maxsize=2048)
def _pwsh_matches_folded(spec: str, item: str) -> bool:
    """A PowerShell deny or ask rule against a part: the command name and every parameter name
    (``-Recurse``, ``-Path:`` of ``-Path:x``) compared without case, as pwsh resolves them.

    Fail closed: native programs' names and options are folded too (``RM`` is ``rm`` on a
    case-insensitive filesystem; ``-O`` meets a rule on ``-o``). ``-Name:value`` is also read as
    ``-Name value``, pwsh's other spelling of one argument (``-Recurse:$true`` is ``-Recurse``)."""
    texts = _pwsh_folded_forms(item)  # folded already: matched as they are
    for pattern in _pwsh_patterns(spec):
        for text in texts:
            if not _pwsh_same_head(pattern, text):
                continue  # nothing below can match another command (a rule's `*` in its name counts as same)
            if _pwsh_open_ended(pattern, text):
                return True
            spelled = _pwsh_spelled_as(pattern, text)
            if spelled is None:
                return True
            if any(_command_matches(pattern, t, fold=str.strip) or _pwsh_unordered(pattern, t) for t in spelled):
                return True
    return False


def _pwsh_same_head(pattern: str, text: str) -> bool:
    """Whether the folded rule ``pattern`` names the command of the folded part ``text`` (a ``*`` in
    the rule's first word may reach past it: taken as the same, fail closed)."""
    head = pattern.removesuffix(":*").split(" ", 1)[0]
    return "*" in head or _wildcard_fullmatch(head, text.split(" ", 1)[0])


#: A splatted argument (``@p``, ``@args``, ``@PSBoundParameters``, ``@_``): any parameters and values.
_PWSH_SPLAT = re.compile(r"@[\w?^$:{]")


def _pwsh_open_ended(pattern: str, text: str) -> bool:
    """Whether the part ``text`` (of the command the rule names) splats arguments while the rule names
    arguments: what the splat binds is known at run time only, so the rule is met (fail closed).

    Why: ``function f { Remove-Item @args }; f x -Recurse`` ran ``Remove-Item -Recurse`` past
    ``PowerShell(Remove-Item -Recurse:*)`` (round 28)."""
    words = text.split(" ")
    return len(pattern.removesuffix(":*").rstrip().split(" ")) > 1 and any(_PWSH_SPLAT.match(w) for w in words[1:])


def _pwsh_unordered(pattern: str, text: str) -> bool:
    """Whether the folded part ``text`` has the words of a folded rule ``pattern`` that names a
    parameter, in any order: all of them for a ``:*`` rule, exactly them otherwise.

    Why: pwsh binds named parameters wherever they stand (``Remove-Item x -Recurse`` is ``Remove-Item
    -Recurse x``), so a deny rule ``PowerShell(Remove-Item -Recurse:*)`` matched as a prefix met one
    order only (round 26's Left, fixed in round 27). Fail closed: a word that is a value elsewhere
    counts too (a deny or ask rule meets more, never less); rules with ``*`` inside keep text order."""
    prefix = pattern.endswith(":*")
    body = pattern[:-2].rstrip() if prefix else pattern
    head, _, rest = body.partition(" ")
    ruled = rest.split(" ") if rest else []
    if not any(w[:1] == "-" for w in ruled) or "*" in rest:
        return False
    their_head, _, their_rest = text.partition(" ")
    if not _wildcard_fullmatch(head, their_head):
        return False
    have = Counter(their_rest.split(" ") if their_rest else [])
    need = Counter(ruled)
    return all(have[w] >= n for w, n in need.items()) if prefix else have == need


#: How many spellings of one part `_pwsh_spelled_as` builds before it takes the rule as met.
_MAX_SPELLINGS = 32


@functools.lru_cache(maxsize=1024)
def _pwsh_spelled_as(pattern: str, text: str) -> tuple[str, ...] | None:
    """``text`` (a folded part) with each parameter word that may bind a parameter the folded rule
    ``pattern`` names spelled as the rule spells it (``-rec`` -> ``-recurse``, Get-ChildItem's ``-s``
    -> ``-recurse``; `analysis.pwsh_param_names`); every choice when a word may bind more than one.
    None when there are more than `_MAX_SPELLINGS` (fail closed: the rule is taken as met).

    Why: pwsh binds any unambiguous prefix of a parameter name and its aliases, so a deny rule that
    spells ``-Recurse`` out met none of the other spellings (round 27)."""
    ruled = [w[1:].partition(":")[0] for w in pattern.removesuffix(":*").split(" ")[1:] if w[:1] == "-"]
    ruled = [r for r in ruled if r and "*" not in r]
    if not ruled:
        return (text,)
    from shellrt.analysis.pwsh_names import command_key
    from shellrt.analysis.pwsh_param_names import same_parameter

    words = text.split(" ")
    cmdlet = command_key(words[0])
    choices: list[list[str]] = [[words[0]]]
    count = 1
    for word in words[1:]:
        name, colon, value = word[1:].partition(":")
        options = [word]
        if word[:1] == "-" and name and word != "--%":
            options += [f"-{r}{colon}{value}" for r in dict.fromkeys(ruled) if r != name and same_parameter(cmdlet, name, r)]
        count *= len(options)
        if count > _MAX_SPELLINGS:
            return None
        choices.append(options)
    spelled = tuple(" ".join(c) for c in itertools.product(*choices))
    return _pwsh_bound_positionally(pattern, cmdlet, spelled)


def _pwsh_bound_positionally(pattern: str, cmdlet: str, spelled: tuple[str, ...]) -> tuple[str, ...] | None:
    """``spelled`` and, for the parameters the folded rule ``pattern`` names that a bare argument may
    bind, each spelling with bare words given some of them, in front (``remove-item -recurse secret``
    -> ``remove-item -path secret -recurse``). None past `_MAX_POSITIONAL` (fail closed: met).

    Why: pwsh binds bare arguments to the cmdlet's positional parameters, so ``Remove-Item secret`` is
    ``Remove-Item -Path secret`` and a deny rule ``PowerShell(Remove-Item -Path secret:*)`` met only the
    spelled-out form (round 27's Left, fixed in round 28). Which bare word takes which position depends
    on the switches and values around it; any bare word may take any positional parameter (a deny rule
    meets more, never less). For a cmdlet whose positions are not listed, a parameter the rule gives a
    value (``-Target prod``) may be positional; one the rule gives none may be a switch and is not."""
    from shellrt.analysis.pwsh_param_names import binds, positional

    words = pattern.removesuffix(":*").rstrip().split(" ")
    known = positional(cmdlet)
    bound: list[str] = []
    for i, word in enumerate(words[1:], 1):
        name, _, value = word[1:].partition(":")
        if word[:1] != "-" or not name or "*" in name:
            continue
        if known is None:
            valued = bool(value) or (i + 1 < len(words) and words[i + 1][:1] != "-")
        else:
            valued = not known.isdisjoint(binds(cmdlet, name) or {name})
        if valued:
            bound.append(f"-{name}")
    if not bound:
        return spelled
    out = list(spelled)
    level = [(text.split(" ")[:1], text.split(" ")[1:], tuple(dict.fromkeys(bound))) for text in spelled]
    while level:  # each round gives one more bare word one more of the parameters, in front
        deeper = []
        for front, rest, unused in level:
            for at, word in enumerate(rest):
                if word[:1] == "-":
                    continue
                for parameter in unused:
                    deeper.append(([*front, parameter, word], rest[:at] + rest[at + 1 :],
                                   tuple(p for p in unused if p != parameter)))
        out += [" ".join(front + rest) for front, rest, _ in deeper]
        if len(out) > _MAX_POSITIONAL:
            return None
        level = [entry for entry in deeper if entry[2]]
    return tuple(out)


#: How many positional readings of one part `_pwsh_bound_positionally` builds before the rule is met.
_MAX_POSITIONAL = 256


@functools.lru_cache(maxsize=256)
def _pwsh_patterns(spec: str) -> frozenset[str]:
    """A deny/ask PowerShell rule's specifier folded (see `_pwsh_matches_folded`); once per rule."""
    spec = _program_by_name(spec)
    tail = ":*" if spec.endswith(":*") else ""
    return frozenset(form + tail for form in _pwsh_folded_forms(spec.removesuffix(tail)))


@functools.lru_cache(maxsize=1024)
def _pwsh_folded_forms(command: str) -> frozenset[str]:
    """``command`` folded for deny/ask matching, with ``-Name:value`` kept and read as ``-Name value``,
    and with an alias named also by its cmdlet (``PowerShell(del x)`` meets ``Remove-Item x``)."""
    from shellrt.analysis.pwsh_names import command_key  # the parts' own reading (lazy: analysis is big)

    words = _fold_all(command).split(" ")
    forms = {" ".join(_pwsh_fold_word(w, i, split=split) for i, w in enumerate(words)) for split in (False, True)}
    for form in list(forms):
        head, sep, rest = form.partition(" ")
        forms.add(without_run_extension(command_key(head)) + sep + rest)
    return frozenset(forms)


#: A word that is one quoted string pwsh passes as it is written inside (``'secret'``, ``"secret"``:
#: nothing to expand), so a deny rule that writes the value bare meets it (round 28).
_PWSH_QUOTED_LITERAL = re.compile(r"""\A(?:'([^'\s]*)'|"([^"$`\s]*)")\Z""")


def _pwsh_fold_word(word: str, index: int, *, split: bool) -> str:
    """One word of a PowerShell command folded for deny/ask matching (see `_pwsh_matches_folded`)."""
    if index == 0:  # ``Microsoft.PowerShell.Management\\Remove-Item`` is Remove-Item
        from shellrt.analysis.pwsh_names import unqualified

        return without_run_extension(unqualified(word).lower())
    if not word.startswith("-"):
        return _PWSH_QUOTED_LITERAL.sub(r"\1\2", word) if word[:1] in "'\"" else word
    name, colon, value = word.partition(":")
    if colon and split:  # ``-Recurse:$true`` is ``-Recurse: $true`` to the analysis
        return f"{name.lower()} {value}".rstrip()
    return name.lower() + colon + value


@functools.lru_cache(maxsize=256)
def _program_by_name(spec: str) -> str:
    """A deny or ask command rule whose program is a path (``./deploy.sh``, ``/usr/bin/curl``) with
    that program named by its file name.

    Why: one program has many paths (``.//deploy.sh``, ``sub/../deploy.sh``, ``$PWD/deploy.sh``,
    ``/bin/curl`` beside ``/usr/bin/curl``, plain ``curl`` found on PATH) and the rule matcher knows
    no directory to resolve them in; every part whose program is given by path is also matched by
    its file name (`ruleset._command_forms`), so a rule by name meets them all (fail closed: a
    ``deploy.sh`` elsewhere meets it too; round 26)."""
    tail = ":*" if spec.endswith(":*") else ""
    head, sep, rest = spec.removesuffix(tail).partition(" ")
    name = head.rstrip("/").rsplit("/", 1)[-1]
    if "/" in head and name and _GLOB_SYNTAX.isdisjoint(head) and not any(c in head for c in "'\"$"):
        return name + sep + rest + tail
    return spec


def _wildcard_fullmatch(pattern: str, text: str) -> bool:
    """Whether ``text`` is ``pattern`` with each ``*`` standing for any text, in linear time.

    Not a regex: ``a.*b.*c`` backtracks, and the command is the model's (a rule with three
    ``*`` and 10,000 characters of command stalled the event loop for an hour). With only
    ``*``, taking each literal piece at its leftmost place is exact.
    """
    first, *rest = pattern.split("*")
    if not rest:
        return text == pattern
    last = rest.pop()
    if len(text) < len(first) + len(last) or not text.startswith(first) or not text.endswith(last):
        return False
    at, end = len(first), len(text) - len(last)
    for piece in rest:
        found = text.find(piece, at, end)
        if found < 0:
            return False
        at = found + len(piece)
    return True


def _domain_matches(pattern: str, domain: str, *, carried: bool = False) -> bool:
    try:  # WebFetch's subject is canonical already; any other tool's is folded the same way here
        host = canonical_host(domain)
    except ValueError:
        host = domain.strip().lower().rstrip(".")
    if address_entry(pattern):
        return address_matches(pattern, host, carried=carried)
    if pattern.startswith("*."):
        return host.endswith(pattern[1:])
    return host == pattern


def pattern_base(spec: str, root: Path | None, home: Path) -> tuple[Path, str] | None:
    """Split a path specifier into the directory it is anchored at and a relative glob."""
    if spec.startswith("//"):
        return Path("/"), "/" + spec[2:]
    if spec == "~" or spec.startswith("~/"):
        return home, "/" + spec[2:] if len(spec) > 2 else "/**"
    if root is None:
        return None
    return root, spec


def _path_matches(spec: str, path: str, root: Path | None, *, home: Path, resolve: bool) -> bool:
    """Match an absolute path. ``resolve``: compare resolved forms only (for allow rules);
    otherwise the literal and the resolved form are both tried (deny/ask: fail closed)."""
    based = pattern_base(spec, root, home)
    if based is None:
        return False
    base, pattern = based
    base_forms = {os.path.realpath(base)} if resolve else {os.path.realpath(base), os.path.normpath(base)}
    path_forms = {os.path.realpath(path)} if resolve else {os.path.realpath(path), os.path.normpath(path)}
    if not resolve and not (pattern.isascii() and all(p.isascii() for p in path_forms)):
        # Deny/ask: one name in two Unicode normal forms (NFC ``é`` vs NFD ``e`` + accent) is
        # the same name to the person who wrote the rule.
        pattern = unicodedata.normalize("NFC", pattern)
        base_forms |= {unicodedata.normalize("NFC", b) for b in base_forms}
        path_forms |= {unicodedata.normalize("NFC", p) for p in path_forms}
    for b in base_forms:
        for p in path_forms:
            rel = relative_to(p, b)
            if rel is not None and glob_matches(pattern, rel):
                return True
    if resolve:
        return False
    if _folded_matches(pattern, base_forms, path_forms):
        return True
    # Deny/ask: a rule that names a place through a symbolic link covers where the link points,
    # as the sandbox's masks do (``Read(./config/**)`` with ``config -> real`` covers ``real/k``).
    for anchor, rest in _linked_anchors(base, pattern):
        for p in path_forms:
            rel = relative_to(p, anchor)
            if rel is not None and (not rest or glob_matches("/" + rest, rel)):
                return True
    return False


def _folded_matches(pattern: str, base_forms: set[str], path_forms: set[str]) -> bool:
    """Deny/ask: whether the path matches as a folding filesystem compares names (macOS, Windows,
    vfat, a ``+F`` directory: ``SECRETS/k`` or ``secrets./k`` is ``secrets/k`` there;
    `sandbox._namefold`, red team round 27). Pattern, base and path are all folded; fails closed
    where names do not fold (``Secrets/k`` beside a denied ``secrets/`` is denied too)."""
    folded_pattern = fold_path(pattern)
    bases = {fold_path(b) for b in base_forms}
    paths = {fold_path(p) for p in path_forms}
    if folded_pattern == pattern and bases == base_forms and paths == path_forms:
        return False  # nothing folds: the plain compare has answered
    for b in bases:
        for p in paths:
            rel = relative_to(p, b)
            if rel is not None and glob_matches(folded_pattern, rel):
                return True
    return False


_GLOB_SYNTAX = frozenset("*?[{\\")


def _linked_anchor(base: Path, pattern: str) -> tuple[str, str] | None:
    """``(resolved place, rest of the pattern)`` when the fixed leading segments of ``pattern``
    name a place through a symbolic link; None otherwise.

    Anchored patterns (a ``/`` in them) use their fixed prefix (``config`` of ``config/**``); a
    floating one without glob syntax (``.env``, ``secrets``) its instance right at the base.
    """
    text = pattern.rstrip("/")
    anchored = "/" in text
    segments = [s for s in text.lstrip("/").split("/") if s not in ("", ".")]
    if not anchored and (len(segments) != 1 or not _GLOB_SYNTAX.isdisjoint(segments[0])):
        return None
    fixed: list[str] = []
    for segment in segments:
        if not _GLOB_SYNTAX.isdisjoint(segment) or segment == "..":
            break
        fixed.append(segment)
    if not fixed:
        return None
    real_base = os.path.realpath(base)
    real_anchor = os.path.realpath(os.path.join(real_base, *fixed))
    if real_anchor == os.path.normpath(os.path.join(real_base, *fixed)):
        return None
    return real_anchor, "/".join(segments[len(fixed) :])


def _linked_anchors(base: Path, pattern: str) -> list[tuple[str, str]]:
    """`_linked_anchor` for every spelling on disk of the pattern's fixed prefix: a deny's pattern is
    matched in NFC, and the link on disk may be named in NFD (``cafe`` + U+0301, as macOS writes it),
    which the lookup as spelled never found (red team, round 56)."""
    first = _linked_anchor(base, pattern)
    if pattern.isascii():
        return [first] if first is not None else []
    found = [first] if first is not None else []
    segments = [s for s in pattern.rstrip("/").lstrip("/").split("/") if s not in ("", ".")]
    fixed = list(itertools.takewhile(lambda s: _GLOB_SYNTAX.isdisjoint(s) and s != "..", segments))
    if not fixed:
        return found
    real_base = os.path.realpath(base)
    rest = segments[len(fixed) :]
    for spelled in _spellings_on_disk(os.path.join(real_base, *fixed)):
        # the spelling found, anchored at the base as the rule's fixed prefix is
        again = _linked_anchor(base, "/" + "/".join([os.path.relpath(spelled, real_base), *rest]))
        if again is not None and again not in found:
            found.append(again)
    return found


def _is_below(path: str, root: str) -> bool:
    """``path`` is ``root`` or inside it (both resolved)."""
    return relative_to(path, root) is not None


def _walk_matches(start: str, base: str, pattern: str, limit: int) -> bool:
    seen = 0
    for dirpath, dirnames, filenames in os.walk(start):
        for name in (*dirnames, *filenames):
            seen += 1
            if seen > limit:
                return True
            rel = relative_to(os.path.join(dirpath, name), base)
            if rel is not None and (glob_matches(pattern, rel) or _nfc_glob_matches(pattern, rel)):
                return True
    return False


def _nfc_glob_matches(pattern: str, rel: str) -> bool:
    """A non-ASCII name matched in NFC, as every other deny matches (red team, round 56)."""
    if rel.isascii():
        return False
    return glob_matches(unicodedata.normalize("NFC", pattern), unicodedata.normalize("NFC", rel))
