"""PowerShell analysis: a tokenizer/parser for the common subset, judged allow-list style.

Supported: statements (``;``, newlines, ``&&``/``||``), pipelines, cmdlets with
parameters, strings (single, double with ``$var``/``$(...)``, here-strings),
variables, script blocks, grouping ``(...)``, subexpressions ``$(...)``/``@(...)``,
hashtables, type literals, the call/dot-source operators and redirections.

Read-only means every command is a read-only cmdlet of PowerShell's core modules
(an allow-list, ``pwsh_cmdlets``: a ``Get-*`` of another module may reach the
network whatever its verb) or a known read-only native program with static arguments, with no redirection, no
call operator, no script block, no .NET method call, no splatting and no
``Invoke-Expression``; subexpressions must themselves be read-only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Final

from .git_env import PROGRAM_ENV, git_hardening_env
from .models import CommandAnalysis, Subcommand
from .programs import check_program, program_spec
from .pwsh_cmdlets import READ_ONLY_CMDLETS, bad_parameter, not_read_only_why
from .pwsh_params import PARAMS_OF, unknown_parameter

__all__ = ["ALIASES", "READ_ONLY_CMDLETS", "WINDOWS_ALIASES", "analyze_powershell"]

MAX_CHARS = 10_000
MAX_DEPTH = 16

ALIASES: dict[str, str] = {
    "ls": "get-childitem", "dir": "get-childitem", "gci": "get-childitem", "cat": "get-content",
    "gc": "get-content", "type": "get-content", "echo": "write-output", "write": "write-output",
    "pwd": "get-location", "gl": "get-location", "select": "select-object", "where": "where-object",
    "?": "where-object", "sort": "sort-object", "measure": "measure-object", "ft": "format-table",
    "fl": "format-list", "fw": "format-wide", "gi": "get-item", "gp": "get-itemproperty",
    "gps": "get-process", "ps": "get-process", "gsv": "get-service", "gcm": "get-command", "gm": "get-member",
    "sls": "select-string", "group": "group-object", "compare": "compare-object", "diff": "compare-object",
    "gv": "get-variable", "gal": "get-alias", "ghy": "get-history", "h": "get-history",
    "history": "get-history", "cd": "set-location", "sl": "set-location", "chdir": "set-location",
    "pushd": "push-location", "popd": "pop-location", "rvpa": "resolve-path", "iex": "invoke-expression",
    "rm": "remove-item", "del": "remove-item", "erase": "remove-item", "rd": "remove-item",
    "ri": "remove-item", "rmdir": "remove-item", "cp": "copy-item", "copy": "copy-item", "cpi": "copy-item",
    "mv": "move-item", "move": "move-item", "mi": "move-item", "ni": "new-item", "sc": "set-content",
    "ac": "add-content", "kill": "stop-process", "spps": "stop-process", "saps": "start-process",
    "start": "start-process", "icm": "invoke-command", "iwr": "invoke-webrequest", "curl": "invoke-webrequest",
    "wget": "invoke-webrequest", "irm": "invoke-restmethod", "%": "foreach-object", "foreach": "foreach-object",
    "sleep": "start-sleep", "clc": "clear-content", "cls": "clear-host", "clear": "clear-host",
    "tee": "tee-object", "sal": "set-alias", "nal": "new-alias", "sv": "set-variable", "set": "set-variable",
    "gdr": "get-psdrive", "gjb": "get-job", "gwmi": "get-wmiobject", "ii": "invoke-item",
    # Round 26: the rest of pwsh 7's built-in aliases (InitialSessionState.BuiltInAliases) and the
    # cmdlets' own [Alias]es for commands that do more than read: unlisted, `ren a b` was a native
    # program named "ren" and a PowerShell(Rename-Item:*) deny rule never met it.
    "cli": "clear-item", "clp": "clear-itemproperty", "clv": "clear-variable", "cvpa": "convert-path",
    "epal": "export-alias", "epcsv": "export-csv", "gmo": "get-module", "gpv": "get-itempropertyvalue",
    "gu": "get-unique", "gerr": "get-error", "ihy": "invoke-history", "r": "invoke-history",
    "ipmo": "import-module", "ipal": "import-alias", "ipcsv": "import-csv", "mp": "move-itemproperty",
    "nv": "new-variable", "rni": "rename-item", "ren": "rename-item", "rnp": "rename-itemproperty",
    "rp": "remove-itemproperty", "rv": "remove-variable", "si": "set-item", "sp": "set-itemproperty",
    "fc": "format-custom", "clhy": "clear-history", "sajb": "start-job",
    "rcjb": "receive-job", "rjb": "remove-job", "spjb": "stop-job", "wjb": "wait-job", "nmo": "new-module",
    "rmo": "remove-module", "sbp": "set-psbreakpoint", "rbp": "remove-psbreakpoint",
    "ebp": "enable-psbreakpoint", "dbp": "disable-psbreakpoint", "trcm": "trace-command",
    "etsn": "enter-pssession", "exsn": "exit-pssession", "nsn": "new-pssession", "gsn": "get-pssession",
    "rsn": "remove-pssession", "ipsn": "import-pssession", "epsn": "export-pssession",
    "cnsn": "connect-pssession", "dnsn": "disconnect-pssession", "rcsn": "receive-pssession",
    "scim": "set-ciminstance", "ncim": "new-ciminstance", "rcim": "remove-ciminstance",
    "icim": "invoke-cimmethod", "shcm": "show-command", "ogv": "out-gridview", "sasv": "start-service",
    "spsv": "stop-service", "gcb": "get-clipboard", "scb": "set-clipboard", "stz": "set-timezone",
    # Round 56: unlisted, `rdr X` was a native program named "rdr" and PowerShell(Remove-PSDrive:*) never met it.
    "ndr": "new-psdrive", "rdr": "remove-psdrive",
    # Read-only cmdlets' aliases pwsh 7 defines on every platform (round 56 pwsh2's Left): unlisted, each was a
    # native program nobody judged, asked for nothing it does and never met a rule on its cmdlet.
    "fhx": "format-hex", "gbp": "get-psbreakpoint", "gcs": "get-pscallstack", "gtz": "get-timezone",
    "oh": "out-host",
}
#: Aliases pwsh defines on Windows only, where the name is no alias elsewhere (on Linux and macOS it is
#: the program of that name): each is judged both ways and deny rules meet both (round 56: ``man x`` was
#: read-only as the program man, but on Windows it is the ``help`` function, which imports the module
#: of the command it is asked about and pipes to a pager).
WINDOWS_ALIASES: dict[str, str] = {
    "cpp": "copy-itemproperty", "man": "help", "mount": "new-psdrive", "lp": "out-printer",
}
_LOCATION = frozenset({"set-location", "push-location"})
#: Functions pwsh defines in every session: pwsh runs the function, never a program or a bash
#: builtin of that name, so the native models must not judge them (round 25: ``help`` was bash's).
_SESSION_FUNCTIONS: dict[str, str] = {
    "help": ("is PowerShell's paging function: it pipes Get-Help's text to a pager program ($env:PAGER, else less (Linux, "
             "macOS; less obeys ~/.lesskey, whose LESSOPEN runs a command, or more.com); use Get-Help"),
    "more": "is a PowerShell function on Windows that runs a pager program; use Get-Content",
    "mkdir": "is a PowerShell function on Windows that creates a directory",
    "oss": "is a PowerShell function (Out-String -Stream); use Out-String -Stream",
    "pause": "is a PowerShell function that waits for a key",
    "prompt": "is a PowerShell function the session may redefine",
    "tabexpansion2": "is a PowerShell function that may load modules",
    "cd..": "is a PowerShell function (Set-Location ..); use Set-Location",
    "cd\\": "is a PowerShell function (Set-Location \\); use Set-Location",
    "cd~": "is a PowerShell function (Set-Location ~); use Set-Location",
}
#: Aliases PowerShell 7 defines on Windows only: on Linux and macOS these names run the native
#: program (``sort -o out in`` is /usr/bin/sort writing ``out``), so both readings must be read-only.
_UNIX_NATIVE = frozenset({"ac", "cat", "clear", "compare", "cp", "cpp", "diff", "kill", "ls", "man", "mount", "mv",
                          "ps", "rm", "rmdir", "sleep", "sort", "start", "tee", "write"})
#: WMI classes of Microsoft's own providers (a third-party provider's class does what it does);
#: any other ``Schema_Class``-shaped value is refused.
_WMI_CLASS = re.compile(r"[a-z][a-z0-9]*_[a-z0-9_]+")
#: Cmdlets that take a value naming a module or script: a path there may load code (``using
#: module`` is processed when a script is parsed); names of installed modules only.
_LOADS_BY_NAME = frozenset({"get-command", "get-help", "get-module"})
_SCRIPT_SUFFIXES = (".ps1", ".psm1", ".psd1", ".dll", ".cdxml", ".ps1xml")
#: Test-Json's parameters that take a value (names, aliases and common parameters), for counting
#: what binds by position: its second position is ``-Schema``/``-SchemaFile``.
_TEST_JSON_VALUED = ("json", "path", "literalpath", "pspath", "lp", "options", "erroraction", "ea",
                     "warningaction", "wa", "informationaction", "infa", "progressaction", "proga",
                     "outbuffer", "ob")
#: Test-Json's parameters that name the document itself (position 0 when none is named).
_TEST_JSON_DOCUMENT = ("json", "path", "literalpath", "pspath", "lp")
#: Common parameters that assign variables or change behaviour.
_BAD_PARAMS = frozenset(
    ["-outvariable", "-ov", "-pipelinevariable", "-pv", "-errorvariable", "-ev", "-warningvariable", "-wv", "-informationvariable", "-iv", "-online", "-outfile", "-filepath", "-literalpath:$", "-debugger"]
)
#: Names of parameters a cmdlet must not get, under any prefix PowerShell binds to them
#: (``-OutV`` is ``-OutVariable``): the above, and remoting (another host runs or answers it).
_BAD_PARAM_NAMES: tuple[str, ...] = (
    "outvariable", "ov", "pipelinevariable", "pv", "errorvariable", "ev", "warningvariable", "wv",
    "informationvariable", "iv", "online", "outfile", "filepath", "debugger",
    "computername", "cn", "session", "pssession", "cimsession", "hostname", "connectionuri", "credential",
    "vmname", "vmid", "containerid", "sshtransport", "usessl", "port", "keyfilepath", "authentication",
    "certificatethumbprint", "applicationname", "configurationname",
)
#: Exact parameter names of read-only cmdlets that are prefixes of a bad name yet never bind to
#: one: ``Where-Object -In`` (``-In`` alone is ambiguous between the common ``-InformationAction``
#: and ``-InformationVariable``, so it is never taken as either).
_EXACT_OK_PARAMS = frozenset({"in"})
#: The stop-parsing token: PowerShell passes the rest of the line on unparsed.
_STOP_PARSING = "--%"


@dataclass
class _Token:
    kind: str  # word, param, string, xstring, var, splat, op, sep, pipe, block, group, subexpr, type, redirect
    text: str
    inner: str = ""
    #: Subexpressions found inside an expandable string.
    subexprs: list[str] = field(default_factory=list)


#: Wildcard characters pwsh expands in a native program's unquoted arguments (Linux and macOS).
_NATIVE_GLOB: Final = frozenset("*?[")


class _PsError(ValueError):
    """Raised by the tokenizer on input it cannot read (never read-only)."""


#: Characters PowerShell reads as ASCII syntax: typographic quotes open and close strings
#: (``'a<U+2019>; Remove-Item x; <U+2019>'`` is two strings around a command to it), en/em dashes
#: and the horizontal bar start parameters (``<U+2013>Online``), NBSP and NEL separate words.
_LOOKALIKES = frozenset("\u2018\u2019\u201a\u201b\u201c\u201d\u201e\u2013\u2014\u2015\u00a0\u0085")
#: Characters after which a ``#`` starts a comment (PowerShell: only at the start of a token).
_COMMENT_AFTER = frozenset(" \t\r\n;|&(){}")


#: A carriage return not followed by a line feed, or an ASCII control character other than tab and
#: LF: PowerShell ends a statement, a ``#`` comment and a here-string line at a lone CR as at LF, and
#: reads form feed and vertical tab as blanks; this tokenizer would read them as part of a word.
_CONTROL = re.compile(r"\r(?!\n)|[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def _tokenize(src: str) -> list[_Token]:
    control = _CONTROL.search(src)
    if control is not None:
        raise _PsError(
            f"{control.group()!r} (a carriage return without a line feed, or a control character) ends a "
            "line or separates words to PowerShell but not to this analysis; use LF or CRLF line ends and spaces"
        )
    if not src.isascii():
        odd = sorted({ch for ch in src if ch in _LOOKALIKES or (ch.isspace() and ch not in " \t\r\n")})
        if odd:
            raise _PsError(
                f"{odd[0]!r} is a quote, dash or blank to PowerShell but not to this analysis; "
                "write it in ASCII"
            )
    tokens: list[_Token] = []
    i = 0
    n = len(src)
    while i < n:
        ch = src[i]
        if ch in " \t\r":
            i += 1
        elif ch == "`" and i + 1 < n and src[i + 1] == "\n":
            i += 2
        elif ch == "\n" or ch == ";":
            tokens.append(_Token("sep", ch))
            i += 1
        elif ch == "#":
            if i > 0 and src[i - 1] not in _COMMENT_AFTER:
                # `a#b` is one word to PowerShell (`#` starts a comment only at a token's start).
                raise _PsError("a '#' inside a word: PowerShell reads on (not a comment); quote the word")
            if src[i + 1 : i + 9].lower() == "requires":
                # Not a comment to PowerShell: `#requires -Modules`/`-Assembly` imports or loads what it
                # names (a module path the repository ships runs its code) before the command runs.
                raise _PsError("a '#requires' line imports the modules or loads the assemblies it names; "
                               "remove it, or ask")
            while i < n and src[i] != "\n":
                i += 1
        elif src.startswith("<#", i):
            end = src.find("#>", i + 2)
            if end < 0:
                raise _PsError("unterminated block comment")
            i = end + 2
        elif src.startswith("&&", i) or src.startswith("||", i):
            tokens.append(_Token("sep", src[i : i + 2]))
            i += 2
        elif ch == "|":
            tokens.append(_Token("pipe", ch))
            i += 1
        elif ch == "&":
            tokens.append(_Token("op", "&"))
            i += 1
        elif ch in "<>" or ((ch.isdigit() or ch == "*") and i + 1 < n and src[i + 1] == ">"):
            j = i
            while j < n and (src[j] in "<>&*" or src[j].isdigit()):
                j += 1
            tokens.append(_Token("redirect", src[i:j]))
            i = j
        elif ch == "'":
            j = i + 1
            while True:
                end = src.find("'", j)
                if end < 0:
                    raise _PsError("unterminated string")
                if end + 1 < n and src[end + 1] == "'":
                    j = end + 2
                    continue
                break
            tokens.append(_Token("string", src[i : end + 1], src[i + 1 : end].replace("''", "'")))
            i = _glued_member(src, _string_end(src, end + 1), tokens)
        elif ch == '"':
            i = _glued_member(src, _string_end(src, _expandable(src, i, tokens)), tokens)
        elif src.startswith("@'", i) or src.startswith('@"', i):
            quote = src[i + 1]
            end = src.find("\n" + quote + "@", i + 2)
            if end < 0:
                raise _PsError("unterminated here-string")
            body = src[i + 2 : end]
            kind = "string" if quote == "'" else "xstring"
            token = _Token(kind, src[i : end + 3], body)
            if kind == "xstring":
                token.subexprs = _find_subexprs(body)
                if "$" not in body and "`" not in body:
                    token.kind = "string"
            tokens.append(token)
            i = end + 3
        elif ch == "{":
            end = _balanced(src, i, "{", "}")
            tokens.append(_Token("block", src[i : end + 1], src[i + 1 : end]))
            i = end + 1
        elif ch == "(":
            end = _balanced(src, i, "(", ")")
            tokens.append(_Token("group", src[i : end + 1], src[i + 1 : end]))
            i = _glued_member(src, end + 1, tokens)
        elif src.startswith("$(", i) or src.startswith("@(", i):
            end = _balanced(src, i + 1, "(", ")")
            tokens.append(_Token("subexpr", src[i : end + 1], src[i + 2 : end]))
            i = _glued_member(src, end + 1, tokens)
        elif src.startswith("@{", i):
            end = _balanced(src, i + 1, "{", "}")
            tokens.append(_Token("block", src[i : end + 1], src[i + 2 : end]))
            i = end + 1
        elif ch == "$" or ch == "@":
            j = i + 1
            if j < n and src[j] == "{":
                j = _balanced(src, j, "{", "}") + 1
            else:
                while j < n and (src[j].isalnum() or src[j] in "_:?^$"):
                    j += 1
            kind = "var" if ch == "$" else "splat"
            if (j < n and src[j] in ".[") or src.startswith(("::", "?.", "?["), j) or "::" in src[i:j]:
                # `$x.M()`, `$x[0]`, static access `$x::M()`, `${x}::M()`, and PowerShell 7.1's
                # null-conditional `${x}?.M()`/`${x}?[0]` (`$x?.M()` scans `?` into the name first)
                kind = "member"
            tokens.append(_Token(kind, src[i:j]))
            i = j
        elif ch == "[":
            end = _balanced(src, i, "[", "]")
            tokens.append(_Token("type", src[i : end + 1]))
            i = end + 1
        else:
            j = i
            while j < n and src[j] not in " \t\r\n;|&(){}'\"<>#" and not (src[j] == "$" and j > i):
                if src[j] == "`":
                    j += 1
                j += 1
            if j == i:
                raise _PsError(f"unexpected {ch!r}")
            word = src[i:j]
            if j < n and src[j] in "'\"" and not word.endswith(",") and not (
                word.startswith("-") and word.endswith(":")
            ):
                # pwsh scans a bare word on through quotes: `-'o'x` is the one argument `-ox` (round 26);
                # a parameter's `-Name:` and an array's `,` end the token before the string
                raise _PsError(_GLUED.format(word + src[j]))
            if word.startswith(_STOP_PARSING):
                raise _PsError(
                    "the stop-parsing token --% passes the rest of the line on unparsed (a '#' there is "
                    "no comment, %NAME% expands); quote the arguments instead"
                )
            tokens.append(_Token("param" if word.startswith("-") and len(word) > 1 else "word", word))
            i = j
    return tokens


#: What may follow a closing quote right away: a blank, an operator, a separator, an array's comma,
#: or member access (`_glued_member`). Anything else is glued to the string (see `_GLUED`).
_AFTER_STRING: Final = frozenset(" \t\r\n;|&(){}<>,.[")
#: PowerShell's tokenizer (``ScanGenericToken``, ``ScanParameter``) appends a quoted string met inside
#: a bare word, or right after a dash, to that word: ``-'o'x`` is the one argument ``-ox`` and
#: ``.'./'f`` is ``../f``, while this tokenizer would read the pieces as separate arguments.
_GLUED = ("{!r}: a quoted string glued to a word (or to another string) is one argument to PowerShell "
          "(-'o'x is -ox), which this analysis reads as several; put a blank between them or quote the whole "
          "argument")


def _string_end(src: str, i: int) -> int:
    """``i``, the index after a closing quote, when nothing is glued to the string there; else a
    `_PsError` (a word or another string right after it is read on as one argument by pwsh, or
    its reading is not modelled)."""
    if i < len(src) and src[i] not in _AFTER_STRING and not src.startswith("::", i):
        raise _PsError(_GLUED.format(src[max(0, i - 1) : i + 1]))
    return i


def _glued_member(src: str, i: int, tokens: list[_Token]) -> int:
    """After a group, subexpression or string ending before ``i``: a ``.``, ``[`` or ``::`` glued
    to it is member access, which PowerShell applies in argument mode too (``Write-Output
    (Get-Item f).Delete()`` calls the method). A marker token says so; the text is read on as before."""
    if i < len(src) and (src[i] in ".[" or src.startswith("::", i)):
        tokens.append(_Token("member", src[i : i + 2] if src[i] == ":" else src[i]))
    return i


def _expandable(src: str, i: int, tokens: list[_Token]) -> int:
    j = i + 1
    n = len(src)
    subexprs: list[str] = []
    while j < n and src[j] != '"':
        if src[j] == "`":
            j += 2
            continue
        if src.startswith("$(", j):
            end, code = _string_subexpression(src, j + 1, here=False)
            subexprs.append(code)
            j = end + 1
            continue
        j += 1
    if j >= n:
        raise _PsError("unterminated string")
    body = src[i + 1 : j]
    token = _Token("xstring" if ("$" in body or "`" in body) else "string", src[i : j + 1], body)
    token.subexprs = subexprs
    tokens.append(token)
    return j + 1


def _find_subexprs(body: str) -> list[str]:
    """The code of each ``$(...)`` in the body of an expandable here-string (a backtick escapes a ``$``)."""
    out: list[str] = []
    k = 0
    while k < len(body):
        if body[k] == "`":
            k += 2
        elif body.startswith("$(", k):
            end, code = _string_subexpression(body, k + 1, here=True)
            out.append(code)
            k = end + 1
        else:
            k += 1
    return out


def _string_subexpression(src: str, i: int, *, here: bool) -> tuple[int, str]:
    """Where the ``$(`` whose ``(`` is at ``i`` inside an expandable string ends, and the code pwsh parses.

    Why not `_balanced`: pwsh (``Tokenizer.ScanSubExpression``) counts parentheses alone there, so a quote
    hides none (``"$(')')"`` is an error in pwsh, PowerShell#4543), and it collapses ``""`` and ```"`` to
    ``"`` (not in a here-string) before parsing the text as code. Skipping quoted parentheses ended
    ``"$(Get-Date #'(')`` at its first ``)``, and the lines pwsh then ran as more of the subexpression were
    string text to this analysis (round 56)."""
    depth = 1
    code: list[str] = []
    j = i + 1
    n = len(src)
    while j < n:
        ch = src[j]
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                return j, "".join(code)
        elif ch in '`"' and not here and j + 1 < n and src[j + 1] == '"':
            j += 1
            ch = '"'
        code.append(ch)
        j += 1
    raise _PsError("a $( in a string is not closed (pwsh counts its parentheses, quoted ones too)")


def _balanced(src: str, i: int, open_ch: str, close_ch: str) -> int:
    depth = 0
    j = i
    quote: str | None = None
    while j < len(src):
        ch = src[j]
        if quote:
            if ch == quote:
                quote = None
            elif ch == "`":
                j += 1
        elif ch in "'\"":
            quote = ch
        elif ch == open_ch:
            depth += 1
        elif ch == close_ch:
            depth -= 1
            if depth == 0:
                return j
        j += 1
    raise _PsError(f"unbalanced {open_ch}{close_ch}")


@dataclass
class _Result:
    reasons: list[str] = field(default_factory=list)
    subcommands: list[Subcommand] = field(default_factory=list)
    cd_targets: list[str] = field(default_factory=list)


def _statements(tokens: list[_Token]) -> list[list[list[_Token]]]:
    """Split into statements of pipelines of command elements."""
    statements: list[list[list[_Token]]] = []
    pipeline: list[list[_Token]] = []
    element: list[_Token] = []
    for token in [*tokens, _Token("sep", "\n")]:
        if token.kind == "pipe":
            pipeline.append(element)
            element = []
        elif token.kind == "op" and token.text == "&" and element:
            # pwsh 7's background operator: after a command's words `&` runs the pipeline as a job
            # and ends the statement, as `;` does (`Get-ChildItem & ri sub` runs ri). The command
            # keeps the token (its reason: not read-only); what follows is a statement of its own.
            element.append(token)
            pipeline.append(element)
            statements.append(pipeline)
            pipeline, element = [], []
        elif token.kind == "sep":
            if element or pipeline:
                pipeline.append(element)
                statements.append(pipeline)
            pipeline, element = [], []
        else:
            element.append(token)
    return statements


def _judge(src: str, depth: int, out: _Result) -> None:
    if depth > MAX_DEPTH:
        # A parse error, not a reason: the commands nested deeper would be left out of the parts.
        raise _PsError(f"nesting deeper than {MAX_DEPTH} levels")
    for pipeline in _statements(_tokenize(src)):
        for element in pipeline:
            if not element:
                out.reasons.append("empty pipeline element")
                continue
            _element(element, depth, out)


def _element(element: list[_Token], depth: int, out: _Result) -> None:
    head = element[0]
    # A quoted name, variable, call operator, ... has no static name; nor has a backticked word:
    # pwsh reads `Re`move-Item` as Remove-Item, which no rule would meet under that spelling (round 26).
    static = head.kind == "word" and "`" not in head.text
    out.subcommands.append(Subcommand(text=" ".join(t.text for t in element), argv=[t.text for t in element],
                                      name=head.text if static else "", static_name=static))
    if not static:
        what = {"word": "a command name with a backtick escape (pwsh reads Re`move-Item as Remove-Item; "
                        "write the name without backticks)",
                "op": "the call operator &", "string": "a quoted command name", "xstring": "an expandable string",
                "var": "a variable", "group": "a parenthesised expression", "subexpr": "a subexpression",
                "block": "a script block", "type": "a .NET type (static method call)",
                "member": "a member access or method call"}.get(head.kind, head.kind)
        out.reasons.append(f"statement starts with {what}: {head.text!r}")
        for token in element:
            _nested(token, depth, out)
        return
    name = head.text.lower()
    if name == ".":
        out.reasons.append("dot-sourcing runs a script")
        return
    if name in _SESSION_FUNCTIONS:
        out.reasons.append(f"{head.text} {_SESSION_FUNCTIONS[name]}")
        for token in element[1:]:
            _nested(token, depth, out)
        return
    cmdlet = ALIASES.get(name, name)
    args = element[1:]
    if cmdlet == "foreach-object" and _member_call(args):
        # `gci | % Delete` calls each item's Delete(): a method no rule names, as `(gci x).Delete()` is
        # (round 28: it passed a deny rule on Remove-Item that the method call spelled out met).
        member = " ".join(t.text for t in args)
        out.subcommands.append(Subcommand(text=f".{member}", argv=[f".{member}"], name="", static_name=False))
        out.reasons.append(f"{head.text} {member}: ForEach-Object calls the method (or reads the property) it names")
    for token in args:
        _argument(cmdlet, token, depth, out)
        unc = _unc_path(token)
        if unc:
            out.reasons.append(f"{head.text}: {unc!r} is a UNC path (another host is reached, and authenticated to)")
    if cmdlet in ("get-wmiobject", "get-ciminstance"):
        why = _wmi_reason(args)
        if why:
            out.reasons.append(f"{head.text}: {why}")
            return
    if cmdlet in _LOADS_BY_NAME:
        why = _loads_by_path(args) or _autoloads(cmdlet, args)
        if why:
            out.reasons.append(f"{head.text}: {why}")
            return
    if cmdlet == "test-json":
        why = _test_json_schema(args)
        if why:
            out.reasons.append(f"{head.text}: {why}")
            return
    if cmdlet in READ_ONLY_CMDLETS:
        if name in _UNIX_NATIVE:
            # An alias on Windows only: pwsh on Linux and macOS runs the program of that name.
            if program_spec(name) is None:
                out.reasons.append(f"{head.text}: on Linux and macOS pwsh runs the program {name} (the alias "
                                   "exists on Windows only), which is not a known read-only program")
                return
            _native(name, head.text, args, out)
        if cmdlet in _LOCATION:
            target = next((t for t in args if t.kind in ("word", "string")), None)
            if target is not None:
                out.cd_targets.append(target.inner if target.kind == "string" else target.text)
        return
    if "-" in cmdlet and cmdlet.split("-", 1)[0].isalpha():
        out.reasons.append(f"{head.text} {not_read_only_why(cmdlet)}")
        return
    # A native program: reuse the bash option models when every argument is static.
    if "/" in name or "\\" in name or "." in name or program_spec(name) is None or name in ALIASES:
        out.reasons.append(f"{head.text} is not a known read-only command")
        return
    if name in WINDOWS_ALIASES:
        out.reasons.append(f"{head.text}: on Windows pwsh runs {WINDOWS_ALIASES[name]} for it (an alias there), "
                           "which is not read-only; use the program's full path or a core cmdlet")
        return
    _native(name, head.text, args, out)


#: ForEach-Object's parameters that take a value, other than -MemberName (prefixes bind too).
_FOREACH_VALUED: Final = ("throttlelimit", "timeoutseconds", "inputobject", "argumentlist", "args")


def _member_call(args: list[_Token]) -> bool:
    """Whether ForEach-Object with ``args`` may take its -MemberName form (a method or property by
    name): a ``-M…`` parameter, a splat, or any argument that is neither a script block, a parameter
    nor a known parameter's value (fail closed)."""
    skip = False
    for token in args:
        if skip:
            skip = False
            continue
        if token.kind == "block":
            continue
        if token.kind != "param":
            return True
        name = token.text.lstrip("-").partition(":")[0].lower()
        if not name or "membername".startswith(name):
            return True
        skip = ":" not in token.text and any(p.startswith(name) for p in _FOREACH_VALUED)
    return False


def _native(name: str, shown: str, args: list[_Token], out: _Result) -> None:
    """Judge ``name args`` as the native program ``name`` (the bash option models)."""
    values = []
    spec = program_spec(name)
    for token in args:
        if token.kind in ("word", "param") and not _NATIVE_GLOB.isdisjoint(token.text) and not (
            spec is not None and spec.glob_safe
        ):
            # pwsh on Linux and macOS expands an unquoted wildcard of a native program's argument into
            # file names, as bash does: `sort *` with a file named `--output=x` writes x (round 19).
            out.reasons.append(f"{shown}: argument {token.text!r} is a wildcard pwsh expands into file names "
                               "(a name may be an option or several operands); quote it or ask")
            return
        if (token.kind == "word" and "`" not in token.text and "," not in token.text and "@" not in token.text) or token.kind == "param":
            values.append(token.text)
        elif token.kind == "string" and _legacy_splits(token.inner):
            out.reasons.append(
                f"{shown}: argument {token.text!r} holds a double quote, or a blank and a trailing backslash: "
                "pwsh 7.2, Windows PowerShell and legacy argument passing give the program its quotes to read "
                "(more arguments, or other ones); drop the quotes or ask")
            return
        elif token.kind == "string":
            values.append(token.inner)
        else:
            out.reasons.append(f"{shown}: argument {token.text!r} is not static")
            return
    reasons = check_program(name, values)
    for reading, why in _older_readings(args, values):
        if reasons:
            break
        reasons = [f"{reason} ({why})" for reason in check_program(name, reading)]
    out.reasons.extend(f"{reason} (on Linux and macOS pwsh runs the program {name})" if name in _UNIX_NATIVE
                       else reason for reason in reasons)


def _legacy_splits(value: str) -> bool:
    """Whether legacy argument passing may give a program other arguments than ``value`` (round 56).

    pwsh 7.2 and earlier, Windows PowerShell and ``$PSNativeCommandArgumentPassing = 'Legacy'`` join the
    arguments into one command line, wrapping one with a blank in ``"`` and leaving its own ``"`` and
    backslashes as they are; the program (Windows' C runtime; .NET on Linux and macOS) splits it again.
    ``'x" --pre=sh "z'`` is then three arguments, and ``'x \\'`` escapes its closing quote and runs into
    the next one. Without a ``"``, and without a blank before a trailing backslash, the reading is the same."""
    blank = any(ch in value for ch in " \t")
    return '"' in value or (blank and value.endswith("\\"))


def _older_readings(args: list[_Token], values: list[str]) -> list[tuple[list[str], str]]:
    """Other argument lists older PowerShells give a native program for the same words (round 32).

    pwsh 7.2 and Windows PowerShell (and ``$PSNativeCommandArgumentPassing = 'Legacy'``) drop the first
    unquoted ``--`` (PowerShell#16592) and every empty argument (``''``): ``git log -- --output=f`` and
    ``git log --decorate-refs '' '--' --output=f`` write ``f`` there. Each reading must be read-only."""
    bare = next((i for i, token in enumerate(args) if token.kind == "param" and token.text == "--"), -1)
    empty = any(token.kind == "string" and not token.inner for token in args)
    if bare < 0 and not empty:
        return []
    out: list[tuple[list[str], str]] = []
    if bare >= 0:
        out.append((values[:bare] + values[bare + 1 :], "pwsh 7.2 and Windows PowerShell drop an unquoted `--` "
                    "given to a program; quote it: '--'"))
    if empty:
        kept = [value for value, token in zip(values, args, strict=True) if not (token.kind == "string" and not token.inner)]
        if bare >= 0:
            kept = [value for index, (value, token) in enumerate(zip(values, args, strict=True))
                    if index != bare and not (token.kind == "string" and not token.inner)]
        out.append((kept, "pwsh 7.2 and Windows PowerShell drop empty arguments (and an unquoted `--`) given "
                    "to a program"))
    return out


def _argument(cmdlet: str, token: _Token, depth: int, out: _Result) -> None:
    kind = token.kind
    if kind == "param":
        name = token.text[1:].split(":", 1)[0].lower()  # an exact listed name binds to it (no prefix)
        if token.text.lower().split(":", 1)[0] in _BAD_PARAMS:
            out.reasons.append(f"{cmdlet} {token.text}: assigns variables, writes or opens a browser")
        elif bad_parameter(cmdlet, token.text[1:].split(":", 1)[0]):
            full = bad_parameter(cmdlet, token.text[1:].split(":", 1)[0])
            out.reasons.append(f"{cmdlet} {token.text}: binds -{full}, which does more than read")
        elif "-" in cmdlet and _bad_param_prefix(token.text) and name not in PARAMS_OF.get(cmdlet, ()):
            out.reasons.append(
                f"{cmdlet} {token.text}: may bind a parameter that assigns variables, writes, opens a "
                "browser or reaches another host (PowerShell binds any unambiguous prefix; write a full name)"
            )
        else:
            why = unknown_parameter(cmdlet, name, _BAD_PARAM_NAMES)
            if why:
                out.reasons.append(f"{cmdlet} {token.text}: {why}")
        return
    if kind in ("word", "string", "var"):
        if kind == "word" and "`" in token.text:
            out.reasons.append(f"argument {token.text!r} uses backtick escapes")
        return
    if kind == "xstring":
        for inner in token.subexprs:
            _judge(inner, depth + 1, out)
        if "`" in token.inner:
            out.reasons.append(f"string {token.text!r} uses backtick escapes")
        return
    if kind == "subexpr" or kind == "group":
        _judge(token.inner, depth + 1, out)
        return
    reason = {"block": "passes a script block (it may run)", "redirect": "redirection writes a file",
              "op": "uses the & operator", "splat": "splats parameters from a variable",
              "member": "member access or method call", "type": ".NET type access"}.get(kind, f"{kind} argument")
    out.reasons.append(f"{cmdlet}: {reason}: {token.text!r}")
    _nested(token, depth, out)


def _values(args: list[_Token]) -> list[str]:
    """The static values among ``args``: words, strings and ``-Param:value`` values."""
    out: list[str] = []
    for token in args:
        if token.kind == "param" and ":" in token.text:
            out.append(token.text.split(":", 1)[1].strip("'\""))
        elif token.kind == "string":
            out.append(token.inner)
        elif token.kind == "word":
            out.append(token.text)
    return out


def _wmi_reason(args: list[_Token]) -> str:
    """Why a ``Get-WmiObject``/``Get-CimInstance`` call is not a plain local read, or "".

    ``Win32_PingStatus`` pings (and resolves) the address it is given, and a third-party
    provider's class does whatever that provider does, so the class must be written out and be
    one of Microsoft's own (``Win32_*``, ``CIM_*``); ``-Query``/``-Namespace`` are refused (in
    ``pwsh_cmdlets``)."""
    if any(token.kind not in ("word", "string", "param") for token in args):
        return "the WMI class or query must be written out (a value computed at run time may name any class)"
    classes = [v.lower() for v in _values(args) if _WMI_CLASS.fullmatch(v.lower())]
    if any("pingstatus" in v.lower() for v in _values(args)):
        return "Win32_PingStatus pings (and resolves) the address it is given"
    if not classes or any(not c.startswith(("win32_", "cim_")) for c in classes):
        return ("only Microsoft's own WMI classes (Win32_*, CIM_*) are plain reads: a third-party provider's "
                "class does what that provider does; name the class with -ClassName Win32_...")
    return ""


def _loads_by_path(args: list[_Token]) -> str:
    """Why ``Get-Command``/``Get-Help``/``Get-Module`` may load code from a path, or ""."""
    if any(token.kind not in ("word", "string", "param") for token in args):
        return "a module, script or command named at run time may be loaded from a path"
    for value in _values(args):
        lower = value.lower()
        if "/" in value or "\\" in value or lower.endswith(_SCRIPT_SUFFIXES):
            return (f"{value!r} is a path: a script or module there may be loaded (and run); "
                    "name an installed command or module instead")
    return ""


#: Modules whose commands are judged here: naming them loads nothing else.
_CORE_MODULES = frozenset({"microsoft.powershell.core", "microsoft.powershell.management",
                           "microsoft.powershell.utility", "microsoft.powershell.security", "cimcmdlets"})
#: Parameters of Get-Command/Get-Help whose value is no command name (enums, numbers, parameter names).
_NOT_A_NAME = frozenset({"noun", "verb", "commandtype", "type", "totalcount", "parameter", "erroraction", "ea", "warningaction",
                         "wa", "informationaction", "infa", "progressaction", "proga", "outbuffer", "ob"})


def _full_name(cmdlet: str, name: str) -> str:
    """The one listed parameter of ``cmdlet`` that ``-name`` binds to, or "" (none, or ambiguous)."""
    names = PARAMS_OF.get(cmdlet, frozenset())
    if name in names:
        return name
    hits = [full for full in names if full.startswith(name)]
    return hits[0] if len(hits) == 1 else ""


def _collect(param: str, value: str, names: list[str], modules: list[str]) -> None:
    """Add the command or module names ``value`` gives ``param`` (a comma list) to ``names``/``modules``."""
    if param in ("name", "module"):
        (names if param == "name" else modules).extend(v.strip() for v in value.split(","))


def _autoloads(cmdlet: str, args: list[_Token]) -> str:
    """Why ``Get-Command``/``Get-Help`` may import a module (running its code), or "".

    Naming a command that is not loaded makes PowerShell import the first module on
    ``PSModulePath`` that exports it (module autoloading), and listing or searching commands
    (no name, wildcards, ``-Noun``/``-Verb``) analyses every installed module, which may import
    one to see what it exports. Only core cmdlet names, written out, and core modules load
    nothing beyond what running a core cmdlet loads; ``Get-Command -ListImported`` loads nothing."""
    if cmdlet not in ("get-command", "get-help"):
        return ""
    names: list[str] = []
    modules: list[str] = []
    flags: set[str] = set()
    pending = ""  # the parameter the next value belongs to
    for token in args:
        if token.kind == "param":
            name, colon, value = token.text[1:].lower().partition(":")
            full = _full_name(cmdlet, name) or name
            flags.add(full)
            if colon:
                _collect(full, value.strip("'\""), names, modules)
                pending = ""
            else:
                pending = full if full in ("name", "module", *_NOT_A_NAME) else ""
            continue
        _collect(pending or "name", token.inner if token.kind == "string" else token.text, names, modules)
        pending = ""
    core = READ_ONLY_CMDLETS | frozenset(ALIASES.values())
    odd = next((n for n in names if n.lower() not in core), None)
    if odd is not None:
        return (f"{odd!r} is not a core cmdlet's full name: PowerShell imports the module that exports a "
                "command it has not loaded (module autoload runs that module's code); ask instead")
    odd = next((m for m in modules if m.lower() not in _CORE_MODULES), None)
    if odd is not None:
        return f"module {odd!r} is not a core module: listing its commands may import it (runs its code); ask"
    if cmdlet == "get-command" and "listimported" not in flags and (
        not (names or modules) or ({"noun", "verb"} & flags and not modules)
    ):
        return ("listing or searching commands analyses every installed module, which may import one (runs "
                "its code); name a core cmdlet, add -Module <core module>, or add -ListImported")
    return ""


def _test_json_schema(args: list[_Token]) -> str:
    """Why a Test-Json call may take a schema (PowerShell 7.4 fetches its ``$ref`` URIs), or "".

    Its fetcher GETs ``http(s)://`` references (a request the command chooses) and reads ``file://``
    ones. A schema comes by ``-Schema``/``-SchemaFile`` (any prefix: ``-s``) or by position after the
    document, so more values than the named parameters and one positional document take is refused.
    """
    values = 0
    takes = 0
    named_document = False
    for token in args:
        if token.kind != "param":
            values += 1
            continue
        name, colon, _ = token.text[1:].lower().partition(":")
        if name.startswith("s"):
            return "a JSON schema may be given (-Schema/-SchemaFile): its $ref URIs are fetched (network) or read"
        if any(full.startswith(name) for full in _TEST_JSON_DOCUMENT):
            named_document = True
        if not colon and name and any(full.startswith(name) for full in _TEST_JSON_VALUED):
            takes += 1
    if values > takes + (0 if named_document else 1):
        return "a value binds by position to -Schema/-SchemaFile: its $ref URIs are fetched (network) or read"
    return ""


def _bad_param_prefix(text: str) -> bool:
    """Whether the parameter ``-name`` or ``-name:value`` may bind to a bad parameter of a cmdlet."""
    name = text[1:].split(":", 1)[0].lower()
    if not name or name in _EXACT_OK_PARAMS:
        return False
    return name.startswith("-") or any(bad.startswith(name) for bad in _BAD_PARAM_NAMES)


def _unc_path(token: _Token) -> str:
    """The UNC path (``\\\\host\\share``, ``//host/share``, also after ``Provider::`` or joined to
    a parameter as ``-Path:``) among the values ``token`` passes, or ""."""
    if token.kind == "param":
        text = token.text.split(":", 1)[1] if ":" in token.text else ""
    elif token.kind in ("string", "xstring"):
        text = token.inner
    elif token.kind == "word":
        text = token.text
    else:
        return ""
    for piece in text.split(","):
        path = piece.strip().strip("'\"")
        if "::" in path:
            path = path.split("::", 1)[1]
        if path[:2] in ("\\\\", "//", "\\/", "/\\"):
            return piece.strip()
    return ""


def _nested(token: _Token, depth: int, out: _Result) -> None:
    """List commands hidden in blocks/subexpressions so rules see them (verdict already fails)."""
    if token.kind in ("block", "subexpr", "group") and token.inner:
        inner = _Result()
        try:
            _judge(token.inner, depth + 1, inner)
        except _PsError:
            # Unreadable: one part without a name (no allow rule matches it), never nothing.
            out.subcommands.append(Subcommand(text=token.inner, argv=[token.inner], name="", static_name=False))
            return
        out.subcommands.extend(inner.subcommands)


def _program_env(parts: list[Subcommand]) -> dict[str, str]:
    """The environment read-only native programs need to stay read-only (git's, man's, rg's), as
    for bash: pwsh runs ``man ls`` as the program, which obeys ``~/.manpath`` unless told not to."""
    names = {part.argv[0].lower() for part in parts if part.argv and part.static_name}
    env = git_hardening_env() if "git" in names else {}
    for name in sorted(names & PROGRAM_ENV.keys()):
        env.update(PROGRAM_ENV[name])
    return env


def analyze_powershell(command: str) -> CommandAnalysis:
    """Classify a PowerShell command (never raises)."""
    out = _Result()
    parse_ok = True
    if len(command) > MAX_CHARS:
        out.reasons.append(f"command longer than {MAX_CHARS} characters")
        parse_ok = False
    else:
        try:
            _judge(command, 0, out)
        except (_PsError, RecursionError) as exc:
            out.reasons.append(f"PowerShell parse error: {exc}")
            parse_ok = False
    if len(out.subcommands) > 50:
        out.reasons.append("more than 50 subcommands")
    read_only = parse_ok and not out.reasons
    reasons = list(dict.fromkeys(out.reasons))
    if read_only:
        reasons = ["read-only: only read-only cmdlets with static arguments"]
    if not parse_ok:
        out.subcommands.append(Subcommand(text=command, argv=[command], writes=[""], reads=[""]))
    destructive = any(s.argv and ALIASES.get(s.argv[0].lower(), s.argv[0].lower()) in
                      ("remove-item", "clear-content", "format-volume", "clear-disk", "stop-computer",
                       "restart-computer") for s in out.subcommands)
    return CommandAnalysis(
        command=command, shell="powershell", parse_ok=parse_ok, read_only=read_only,
        concurrency_safe=read_only, destructive=destructive, subcommands=out.subcommands, reasons=reasons,
        cd_targets=out.cd_targets, write_targets=[], writes_unknown=not read_only,
        env=_program_env(out.subcommands) if read_only else {},
        plan=None)
