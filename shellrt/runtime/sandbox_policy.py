"""The one place a session's `SandboxPolicy` gets its masked paths: secrets by default, plus every ``Read`` deny rule.

Why: the sandbox is the boundary. A ``Read(./secrets/**)`` deny that only the
Read tool obeyed would leave ``cat secrets/a`` through Bash open, so every
``Read(...)`` deny rule of the session (all settings sources and ``--deny``)
becomes a ``read_denied`` path, which the backend hides (bwrap: an empty tmpfs
or /dev/null over it). And common credential stores outside the workspace are
hidden by default (`DEFAULT_MASKED_PATHS`).

Rules are gitignore-style globs (see `shellrt.permissions.globs`). The static
part of a rule maps to one path (``Read(./secrets/**)`` -> ``<root>/secrets``,
``Read(~/.env)`` -> ``$HOME/.env``, ``Read(//etc/x)`` -> ``/etc/x``); a rule with
a glob in it (``Read(**/*.pem)``, ``Read(./config/*.key)``) is expanded against
the filesystem when the session starts and each match is masked. A file
created later that matches such a glob is not hidden by the mount: the
permission layer still denies it to the file tools, and a new session masks it.

A masked path that is or contains a writable root (the workspace) cannot be
hidden without hiding the workspace: it is skipped with a diagnostic.

``Edit``/``Write`` deny rules become ``write_denied`` paths (red team, round 11): each existing
one inside a writable root is bound read-only onto itself by the backend. What the sandbox cannot
enforce exactly -- a denied path missing in a writable root, a rule holding a writable root,
Windows separators, an operator's glob cut short, domain rules on network ``host``/``bridge`` --
raises `PolicyError` (the session does not start) for the operator's rules, and is a diagnostic
for rules of files the workspace can write (a repository must not stop the session).

Settings (``"sandbox"`` in a settings file): ``maskedPaths`` (extra paths,
``~`` expanded, relative ones under the workspace) from any source;
``unmaskDefaults: true`` and ``unmaskedPaths`` (drop some defaults) only from
sources the workspace cannot write (managed, ``--settings`` files, user), so a
hostile repository cannot unmask the operator's secrets.

Network (issue 20, docs/network.md): ``"sandbox": {"network": {"allowedDomains":
[...], "deniedDomains": [...]}}`` and ``WebFetch(domain:…)`` allow rules feed the
proxied mode's allow-list -- only from trusted sources (managed, ``--settings``
files, ``--allow`` flags, user settings, and a workspace's own files once the
workspace is trusted), so an untrusted repository cannot open the network for
itself. Any allowed domain turns network ``none`` into ``proxied``; deny wins.
"""

from __future__ import annotations

import dataclasses
import os
import re
import stat
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sandbox import SandboxPolicy
from sandbox._maskaliases import MAX_BELOW, mount_aliases, unseen_links
from sandbox.errors import SandboxExecError
from sandbox.policy import normalize_deny_entry, normalize_domain
from shellrt.permissions.caller_home import caller_home, password_home
from shellrt.permissions.globs import glob_matches

if TYPE_CHECKING:  # `shellrt run` derives its policy without loading the rule and settings models
    from shellrt.permissions.rules import PermissionRule
    from shellrt.permissions.settings import FileSettings

__all__ = [
    "CREDENTIAL_STORES",
    "DEFAULT_MASKED_PATHS",
    "MAX_GLOB_MATCHES",
    "MOVED_STORE_DIRS",
    "MOVED_STORE_FILES",
    "TRUSTED_SANDBOX_SOURCES",
    "PolicyError",
    "derive_network",
    "derive_policy",
    "fixed_sandbox_ids",
    "rule_masks",
]

#: Credential stores of the home that round 54 (sandbox12) added to the defaults: files and
#: directories that hold a token, password, key or session cookie and nothing a build needs
#: (mixed configuration such as ``~/.m2/settings.xml`` or ``~/.gradle/gradle.properties`` is
#: not here: masking it would break builds that only read its mirrors).
CREDENTIAL_STORES: tuple[str, ...] = (
    "~/.claude/.credentials.json",  # Claude Code's OAuth tokens (Linux)
    "~/.codex/auth.json",  # Codex CLI's API key or tokens
    "~/.gemini/oauth_creds.json",  # Gemini CLI
    # the agents' transcripts: every tool result of the operator's other sessions (a masked file one
    # of them read included), as shellrt's own state directory is masked for its own
    "~/.claude/projects",
    "~/.codex/sessions",
    "~/.codex/history.jsonl",
    "~/.gemini/tmp",
    "~/.config/github-copilot",  # Copilot's tokens (hosts.json, apps.json)
    "~/.config/glab-cli",  # GitLab CLI (as ~/.config/gh)
    "~/.config/containers/auth.json",  # podman, buildah, skopeo registry logins (as ~/.docker)
    "~/.gem/credentials",  # RubyGems API key
    "~/.config/composer/auth.json",
    "~/.composer/auth.json",
    "~/.m2/settings-security.xml",  # Maven's master password
    "~/.pulumi/credentials.json",
    "~/.config/doctl",  # DigitalOcean token
    "~/.config/hcloud",  # Hetzner token
    "~/.oci",  # Oracle Cloud config and API keys
    "~/.databrickscfg",
    "~/.kaggle",
    "~/.config/kaggle",
    "~/.cache/huggingface/token",
    "~/.huggingface/token",
    "~/.config/rclone/rclone.conf",
    "~/.s3cfg",
    "~/.boto",
    "~/.passwd-s3fs",
    "~/.pgpass",
    "~/.mylogin.cnf",  # MySQL login paths
    "~/.config/sops",  # age keys
    "~/.cloudflared",  # tunnel certificates
    "~/.config/ngrok",
    "~/.ngrok2",
    "~/.fly",  # flyctl access token
    "~/.local/share/keyrings",  # GNOME keyring files
    "~/.mozilla",  # browser profiles: cookies, saved logins
    "~/.config/google-chrome",
    "~/.config/chromium",
    "~/.Xauthority",  # the X display's cookie: with the host's network, the user's screen and keys
    "~/.ICEauthority",
    "~/.bash_history",  # tokens typed on command lines
    "~/.zsh_history",
)

#: Credential stores hidden from commands by default. ``~/…`` entries are hidden in the
#: caller's home (``$HOME`` and the password database's, which differ when CI points HOME at a
#: scratch dir) and in ``/root``; ``/root`` as a whole is hidden unless it is or holds a
#: writable root (the workspace) or the Python that runs shellrt (pyenv-style installs under
#: /root: the bwrap zygote runs on it), in which case only its ``~/…`` entries are.
DEFAULT_MASKED_PATHS: tuple[str, ...] = (
    "~/.ssh",
    "~/.aws",
    "~/.azure",
    "~/.config/gcloud",
    "~/.config/gh",
    "~/.config/hub",
    "~/.docker",
    "~/.kube",
    "~/.gnupg",
    "~/.password-store",
    "~/.netrc",
    "~/.git-credentials",
    "~/.npmrc",
    "~/.pypirc",
    "~/.vault-token",
    "~/.ray",  # Ray >= 2.5x token auth: ~/.ray/auth_token, written 0644 (red team round 16)
    "~/.cargo/credentials",
    "~/.cargo/credentials.toml",
    "~/.terraform.d/credentials.tfrc.json",
    # Red team round 54 (sandbox12): stores whose purpose is a credential, read by a non-root
    # caller's every command before (commands run as the caller). The agents' own first.
    *CREDENTIAL_STORES,
    "/etc/shadow",
    "/etc/shadow-",
    "/etc/gshadow",
    "/etc/gshadow-",
    "/etc/sudoers",
    "/etc/sudoers.d",
    "/root",
)

#: Variables of the operator's environment that move a store of `DEFAULT_MASKED_PATHS` (round 54,
#: sandbox12): the variable -> the home path it stands for. Each default at or below that path is
#: masked at the same place below the variable's value too (``GNUPGHOME=/srv/gpg`` masks /srv/gpg,
#: ``XDG_CONFIG_HOME=/cfg`` masks /cfg/gh, /cfg/gcloud...): the programs read them there.
MOVED_STORE_DIRS: dict[str, str] = {
    "XDG_CONFIG_HOME": "~/.config",
    "XDG_DATA_HOME": "~/.local/share",
    "XDG_CACHE_HOME": "~/.cache",
    "GNUPGHOME": "~/.gnupg",
    "DOCKER_CONFIG": "~/.docker",
    "CARGO_HOME": "~/.cargo",
    "AZURE_CONFIG_DIR": "~/.azure",
    "CLOUDSDK_CONFIG": "~/.config/gcloud",
    "GH_CONFIG_DIR": "~/.config/gh",
    "PASSWORD_STORE_DIR": "~/.password-store",
    "CLAUDE_CONFIG_DIR": "~/.claude",
    "CODEX_HOME": "~/.codex",
    "HF_HOME": "~/.cache/huggingface",
    "KAGGLE_CONFIG_DIR": "~/.kaggle",
    "PULUMI_HOME": "~/.pulumi",
    "COMPOSER_HOME": "~/.config/composer",
}
#: Variables naming a credential file itself (``KUBECONFIG``: a ``:``-list), masked where they point:
#: CI puts service-account keys and cluster configs anywhere (``GOOGLE_APPLICATION_CREDENTIALS``).
MOVED_STORE_FILES: tuple[str, ...] = (
    "KUBECONFIG",
    "AWS_SHARED_CREDENTIALS_FILE",
    "AWS_CONFIG_FILE",
    "AWS_WEB_IDENTITY_TOKEN_FILE",
    "AZURE_FEDERATED_TOKEN_FILE",
    "GOOGLE_APPLICATION_CREDENTIALS",
    "OCI_CLI_CONFIG_FILE",
    "NETRC",
    "PGPASSFILE",
    "MYSQL_TEST_LOGIN_FILE",
    "RCLONE_CONFIG",
    "NPM_CONFIG_USERCONFIG",
    "npm_config_userconfig",
    "REGISTRY_AUTH_FILE",
    "SOPS_AGE_KEY_FILE",
    "BOTO_CONFIG",
    "S3CMD_CONFIG",
    "DATABRICKS_CONFIG_FILE",
    "TF_CLI_CONFIG_FILE",
    "HF_TOKEN_PATH",
    "HISTFILE",
    "XAUTHORITY",
)

#: Settings sources the workspace cannot write: only they may unmask a default.
TRUSTED_SANDBOX_SOURCES = frozenset({"managed", "cli", "user"})
#: A glob rule expanding to more paths than this is masked up to it (with a diagnostic).
MAX_GLOB_MATCHES = 2000
#: Directory entries a glob expansion visits at most (a rule over a huge tree is cut short).
_MAX_VISITS = 200_000
#: ... all the glob rules of files the workspace can write together, and every walk below a symlink
#: planted in a writable root that leads out of the roots (round 52) (~60 µs an entry: ~3 s).
_MAX_WORKSPACE_VISITS = 50_000
_GLOB_CHARS = frozenset("*?[{\\")


class PolicyError(ValueError):
    """A rule the sandbox cannot enforce exactly: the session refuses to start (fail closed)."""


def _expand(text: str, home: Path, workspace: Path) -> Path:
    """``~``, ``~user`` and relative paths (under the workspace) made absolute, not resolved.

    ``~user``: that user's home in the password database, as the shell reads it (red team round
    47: it was a workspace path, so ``maskedPaths: ["~root/.aws"]`` masked ``<ws>/~root/.aws``
    and left the file readable); a user it does not know raises `PolicyError`."""
    if text == "~" or text.startswith("~/"):
        return Path(os.path.normpath(home / text[2:])) if len(text) > 2 else home
    if text.startswith("~"):
        import pwd

        name, _, rest = text[1:].partition("/")
        try:
            named = pwd.getpwnam(name).pw_dir
        except (KeyError, ValueError):
            named = ""
        if not os.path.isabs(named):
            raise PolicyError(
                f"{text!r}: no user {name!r} with a home directory here; write the path as ~/path (your "
                "own home) or //absolute/path"
            )
        return Path(os.path.normpath(Path(named) / rest))
    if text.startswith("//"):
        text = text[1:]
    return Path(os.path.normpath(workspace / text))


def _static_part(pattern: str) -> tuple[list[str], bool, bool]:
    """(static leading segments, anchored, whole pattern static) of a gitignore-style pattern."""
    pat = pattern.rstrip("/") if pattern not in ("/", "") else pattern
    anchored = "/" in pat
    pat = pat.lstrip("/")
    if pat.startswith("./"):
        pat, anchored = pat[2:], True
    segments = [s for s in pat.split("/") if s not in ("", ".")]
    while segments and segments[-1] == "**":  # `x/**` covers x itself: the same mask
        segments.pop()
    static: list[str] = []
    for seg in segments:
        if _GLOB_CHARS & set(seg):
            return static, anchored, False
        static.append(seg)
    return static, anchored, True


class _Visits:
    """Directory entries glob expansions may still visit: one per operator rule, one shared by all
    the rules of files the workspace can write (a repository's 300 glob rules walked its tree 300
    times at every session start: 37 s over 2,000 files, hours over a large tree)."""

    def __init__(self, left: int = _MAX_VISITS) -> None:
        self.left = left


@dataclasses.dataclass(frozen=True)
class _Planted:
    """What `_walk_matches` needs to charge a walk below a symlink a command or repository planted
    (round 52): the writable roots as named, every form of them (as named and where they lead:
    worked out once per derivation, not per symlink walked; round 53), and the budget of the files
    the workspace can write."""

    roots: Sequence[Path]
    forms: frozenset[Path]
    visits: _Visits


def _root_forms(roots: Sequence[Path]) -> frozenset[Path]:
    """The writable ``roots`` as named and where they lead."""
    return frozenset((*roots, *(Path(os.path.realpath(r)) for r in roots)))


def _leads_out(path: Path, planted: _Planted) -> bool:
    """Whether ``path`` lies inside a writable root by name and outside every root where it leads (a
    symlink on the way that the workspace could plant)."""
    if not _inside(Path(os.path.normpath(path)), planted.roots):
        return False
    real = Path(os.path.realpath(path))
    return not any(r == real or r in real.parents for r in planted.forms)


def _walk_matches(
    base: Path,
    start: Path,
    pattern: str,
    limit: int,
    visits: _Visits | None = None,
    planted: _Planted | None = None,
) -> tuple[list[Path], bool, bool]:
    """Paths under ``start`` whose path relative to ``base`` matches ``pattern`` (a matched dir is not
    entered); whether the walk was cut short; whether a planted subtree's was (below).

    ``planted``: below a symlink inside a writable root that leads out of the roots (the repository's
    choice of place, as `derive_policy`'s ``planted`` masks) what is visited and matched is charged to
    the budget of the files the workspace can write, and its end stops only those subtrees: a
    repository's ``vendor/l -> /`` made the operator's ``Read(**/*.pem)`` walk the host's whole file
    system (minutes) and then refuse the session, "too many paths" (red team, round 52)."""
    budget = visits if visits is not None else _Visits()
    theirs = planted.visits if planted is not None else _Visits(0)
    found: list[Path] = []
    out_found = 0  # of them, below a planted link
    out_cut = False
    stack = [(start, planted is not None and _leads_out(start, planted))]
    seen: set[tuple[int, int, bool]] = set()  # symlinked directories entered: a link loop is walked once
    normal = _nfc(pattern)
    while stack:
        directory, out = stack.pop()
        if out and out_cut:
            continue
        try:
            entries = list(os.scandir(directory))
        except OSError:
            continue
        for entry in entries:
            if out:
                theirs.left -= 1
                if theirs.left < 0 or out_found >= limit:
                    out_cut = True
                    break
            else:
                budget.left -= 1
                if budget.left < 0 or len(found) - out_found >= limit:
                    return found, True, out_cut
            path = Path(entry.path)
            rel = os.path.relpath(path, base)
            # NFC and NFD spellings alike, as the permission layer matches a deny.
            if glob_matches(pattern, rel) or (not rel.isascii() and glob_matches(normal, _nfc(rel))):
                found.append(path)
                out_found += out
            elif entry.is_dir(follow_symlinks=False):
                stack.append((path, out))
            elif entry.is_symlink():
                # A symlinked directory too: ``ws/link/x.pem`` is denied by ``Read(**/*.pem)`` through
                # the link (the permission layer matches the literal path), and cat reads it there.
                try:
                    target = entry.stat()
                except OSError:
                    continue
                if not stat.S_ISDIR(target.st_mode):
                    continue
                # walked below a planted link (maybe cut there): walked again from the operator's own
                below_planted = out or (planted is not None and _leads_out(path, planted))
                if (target.st_dev, target.st_ino, below_planted) not in seen:
                    seen.add((target.st_dev, target.st_ino, below_planted))
                    stack.append((path, below_planted))
    return found, False, out_cut


def _walk_spellings(
    base: Path,
    start: Path | None,
    pattern: str,
    limit: int,
    visits: _Visits | None,
    planted: _Planted | None,
) -> tuple[list[Path], bool, bool]:
    """`_walk_matches` from the glob's static directory ``start`` in every Unicode normal form on disk
    (None: from ``base``). The rule's ``café`` (NFC, as typed) is another name than the on-disk NFD
    ``cafe`` + U+0301 directory, which the permission layer's deny matches: walked from the rule's
    spelling only, ``Read(./café/*)`` masked nothing (red team, round 56). One budget for all."""
    budget = visits if visits is not None else _Visits()
    found: list[Path] = []
    cut = out_cut = False
    for one in _spellings(start) if start is not None else [base]:
        more, cut, more_out = _walk_matches(base, one, pattern, limit - len(found), budget, planted)
        found += more
        out_cut = out_cut or more_out
        if cut:
            break
    return found, cut, out_cut


def rule_masks(
    rule: PermissionRule,
    *,
    home: Path,
    limit: int | None = None,
    visits: _Visits | None = None,
    planted: _Planted | None = None,
) -> tuple[list[Path], list[str]]:
    """The paths a ``Read(...)`` deny rule masks, and diagnostics for what the mount cannot cover.
    ``visits``: the walk's budget when shared with other rules (default: a fresh one); given for the
    rules of files the workspace can write, whose cut glob is a diagnostic. ``planted``: (the
    writable roots, that budget): what a walk visits below a symlink planted in a root that leads out
    of the roots is charged to it, and its end there is a diagnostic (`_walk_matches`, round 52).
    ``limit``: matches masked at most (None: `MAX_GLOB_MATCHES`). `PolicyError` for a rule the
    sandbox cannot compile exactly: Windows separators, no anchor, an operator's glob cut short."""
    limit = MAX_GLOB_MATCHES if limit is None else limit
    spec = rule.specifier
    if spec is None:
        return [], [
            f"{rule.describe()}: denies every read; the sandbox cannot hide the whole filesystem "
            "(the permission layer enforces it)"
        ]
    from shellrt.permissions.rules import pattern_base

    forms = rule.windows_forms()
    if forms and visits is not None:
        # A rule of a file the workspace can write: masked as the permission layer reads it, never
        # refused (a repository must not stop the session; round 42): its '\\' as '/' (before a glob
        # character too: round 45), and as the glob escape the permission layer denies too (round
        # 43: ``.\\secrets\\key`` is also ``.secretskey``).
        paths: list[Path] = []
        notes: list[str] = []
        for form in forms:
            try:
                found, found_notes = rule_masks(
                    dataclasses.replace(rule, specifier=form), home=home, limit=limit, visits=visits, planted=planted
                )
            except _PerProcessLink:
                raise  # `derive_policy` says where the planted link is
            except PolicyError as exc:
                found, found_notes = [], [_repository_rule(exc, operator=False)]
            paths += found
            notes += found_notes
        more, more_notes = _escape_reading_masks(rule, home=home, limit=limit, visits=visits, planted=planted)
        return list(dict.fromkeys([*paths, *more])), [*notes, *more_notes]
    check_rule_syntax(rule)
    split = pattern_base(spec, rule.origin.root, home)
    if split is None:
        raise PolicyError(
            f"{rule.describe()}: a relative path with no directory to anchor it at; the sandbox cannot "
            "enforce it. Write it from the workspace (./path), the home (~/path) or the root (//path)"
        )
    base, pattern = split
    static, anchored, whole = _static_part(pattern)
    if whole and anchored:
        named, _ = _per_process(Path(os.path.normpath(base.joinpath(*static))))
        if named is None:
            raise _per_process_error(rule.describe(), base.joinpath(*static))
        link = _leads_per_process(named)
        if link is not None:
            raise _PerProcessLink(str(_per_process_error(rule.describe(), base.joinpath(*static))), link)
        return _spellings(named), []
    static_path = Path(os.path.normpath(base.joinpath(*static)))
    link = _leads_per_process(static_path)
    if link is not None:
        raise _PerProcessLink(str(_per_process_error(rule.describe(), base.joinpath(*static))), link)
    if _per_process(static_path)[1]:
        # a glob below /proc/<pid> or /dev/fd would expand to shellrt's own processes' entries
        raise _per_process_error(rule.describe(), base.joinpath(*static))
    start = Path(os.path.normpath(base.joinpath(*static))) if anchored else base
    if visits is not None and visits.left <= 0:
        return [], [
            f"{rule.describe()}: not masked in the sandbox: the glob rules of settings the workspace can "
            f"write already walked {_MAX_WORKSPACE_VISITS:,} entries (the permission layer still denies it to the "
            "file tools)"
        ]
    found, cut, out_cut = _walk_spellings(base, start if anchored else None, pattern, limit, visits, planted)
    planted_notes = (
        [
            f"{rule.describe()}: a symlink inside a writable root leads out of the roots to more than the "
            "walks of settings the workspace can write may visit; only part of what it leads to is masked "
            "(the repository's choice of place: the permission layer still denies the rest to the file tools)"
        ]
        if out_cut
        else []
    )
    if cut and visits is not None:
        # A rule of a file the workspace can write: a repository must not stop the session by
        # flooding it (red team, round 7); its own rule protects nothing of the operator's.
        return found, [
            f"{rule.describe()}: the glob matched too many paths under {start}; only {len(found)} are masked "
            "in the sandbox (the permission layer still denies the rest to the file tools)",
            *planted_notes,
        ]
    if cut:  # the operator's rule: fail closed
        raise PolicyError(
            f"{rule.describe()}: the glob matches too many paths under {start} (or its walk was cut short) "
            "for the sandbox to enforce it exactly. Deny the directory that holds them instead, or anchor "
            "the rule below a smaller directory (./dir/**/*.pem)"
        )
    return found, planted_notes


#: A path segment that is a whole shell variable (``$HOME/x``, ``./${XDG_CONFIG_HOME}/y``, ``%APPDATA%``).
_SHELL_VARIABLE = re.compile(
    r"(?:^|/)(?:\$[A-Za-z_][A-Za-z0-9_]*|\$\{[A-Za-z_][A-Za-z0-9_]*\}|%[A-Za-z_][A-Za-z0-9_]*%)(?=/|$)"
)


def _escape_reading_masks(
    rule: PermissionRule, *, home: Path, limit: int, visits: _Visits, planted: _Planted | None = None
) -> tuple[list[Path], list[str]]:
    """The masks of a repository's Windows-style rule read as the glob escape it also is
    (`rule_paths.escape_reading`); a reading the sandbox cannot compile is a diagnostic, as the rule
    of a file the workspace can write always is."""
    from shellrt.permissions.rule_paths import escape_reading

    reading = escape_reading(rule.specifier or "")
    if reading is None:
        return [], []
    try:
        return rule_masks(
            dataclasses.replace(rule, specifier=reading), home=home, limit=limit, visits=visits, planted=planted
        )
    except PolicyError as exc:
        return [], [_repository_rule(exc, operator=False)]


def check_rule_syntax(rule: PermissionRule) -> None:
    """Refuse a path rule written with Windows separators (it would silently never match)."""
    spec = rule.specifier or ""
    if len(spec) > 1 and spec[1] == ":" and spec[0].isalpha():
        raise PolicyError(
            f"{rule.describe()}: a Windows drive path; rules use POSIX paths (//abs/path, ./rel, ~/home)"
        )
    variable = _SHELL_VARIABLE.search(spec)
    if variable is not None:
        raise PolicyError(
            f"{rule.describe()}: {variable.group(0).strip('/')!r} is a shell variable, and rules do not expand "
            "variables: the rule names a directory literally called that and protects nothing. Write the "
            "home as ~/path, an absolute path as //path, a workspace path as ./path"
        )
    from shellrt.permissions.rule_paths import windows_separated

    if windows_separated(spec) is not None:
        raise PolicyError(
            f"{rule.describe()}: a backslash that is not a glob escape: paths in rules use '/' "
            "(./dir/file), never Windows separators; a backslash only escapes * ? [ ] { } , ! # a blank or \\"
        )


#: Names that lead somewhere else in every process: the host's ``realpath`` would resolve them in
#: shellrt's own process (``/dev/fd/3`` -> ``/proc/<shellrt pid>/fd/3``), never as a command sees them.
_PER_PROCESS_DEV = frozenset({"/dev/fd", "/dev/stdin", "/dev/stdout", "/dev/stderr"})


def _per_process(path: Path) -> tuple[Path | None, bool]:
    """(the path a per-process spelling stands for, whether ``path`` was one).

    ``/proc/self/root/X`` and ``/proc/thread-self/root/X`` are ``/X`` in every process of the
    sandbox (its root is the sandbox's); every other entry of ``/proc/self``, ``/proc/thread-self``,
    ``/proc/<pid>`` and ``/dev/fd``, ``/dev/std*`` names a different file in each process: None."""
    text = os.path.normpath(path)
    for dev in _PER_PROCESS_DEV:
        if text == dev or text.startswith(dev + "/"):
            return None, True
    parts = Path(text).parts
    if len(parts) < 3 or parts[1] != "proc":
        return path, False
    if parts[2] in ("self", "thread-self"):
        if len(parts) >= 4 and parts[3] == "root":
            below, _ = _per_process(Path("/", *parts[4:]))  # /proc/self/root/dev/fd/3 is /dev/fd/3
            return below, True
        return None, True
    if parts[2].isdigit():
        return None, True
    return path, False


class _PerProcessLink(PolicyError):
    """A rule whose path reaches a per-process name through the symlink ``link`` (or below it)."""

    def __init__(self, message: str, link: Path) -> None:
        super().__init__(message)
        self.link = link


def _planted_link(exc: PolicyError, roots: Sequence[Path]) -> str | None:
    """A note instead of a refusal when the symlink that made an operator's rule per-process lies
    in a writable root: a command (a repository) planted it, and must not stop the session by it."""
    if not isinstance(exc, _PerProcessLink) or not any(r == exc.link or r in exc.link.parents for r in roots):
        return None
    return f"{exc} ({exc.link} is a symlink inside a writable root: not masked, the permission layer still denies it)"


def _leads_per_process(path: Path) -> Path | None:
    """Whether a symlink on the way makes ``path`` a per-process name (``ws/link -> /proc/self/fd``,
    ``/proc/mounts``, ``/etc/mtab``): the host's ``realpath`` of some leading part of it lands below
    ``/proc/<pid>`` (shellrt's own process), so resolving it would name shellrt's files, never a
    command's. Each leading part is resolved: ``/proc/self/fd/0`` itself ends at ``/dev/null``."""
    parts = path.parts
    for end in range(2, len(parts) + 1):
        if _per_process(Path(os.path.realpath(Path(*parts[:end]))))[1]:
            return Path(*parts[:end])
    return None


def _per_process_error(what: str, path: Path) -> PolicyError:
    return PolicyError(
        f"{what}: {path} differs in every process (a /proc/<pid>, /proc/self or /dev/fd name); the sandbox "
        "cannot mask it as the commands see it. Name the file itself (//abs/path, ./rel, ~/home)"
    )


def _nfc(text: str) -> str:
    # imported here: a `shellrt run` without rules never needs it (tests/test_cli_imports.py budget)
    import unicodedata

    return unicodedata.normalize("NFC", text)


def _spellings(path: Path) -> list[Path]:
    """``path`` and every existing path that differs from it only in Unicode normal form.

    The permission layer matches a deny in NFC and NFD alike (``café`` in either spelling), and a
    file system stores bytes: the on-disk ``cafe`` + U+0301 is another name than the rule's ``café``.
    """
    if path.as_posix().isascii():
        return [path]
    found = [Path("/")]
    for part in path.parts[1:]:
        nxt: list[Path] = []
        for parent in found:
            names = {part}
            if not part.isascii():
                try:
                    names |= {e for e in os.listdir(parent) if _nfc(e) == _nfc(part)}
                except OSError:
                    pass
            nxt += [parent / n for n in sorted(names)]
        found = nxt[:64]
    return list(dict.fromkeys([path, *found]))


def _repository_rule(exc: PolicyError, operator: bool) -> str:
    """An operator's rule the sandbox cannot enforce refuses the session (raised here); one of a file
    the workspace can write is a diagnostic: a repository must not be able to stop the session
    (round 7's reasoning), and its own rule protects nothing of the operator's."""
    if operator:
        raise exc
    return f"{exc} (a rule of settings the workspace can write: not enforced in the sandbox, only by the permission layer)"


def _write_denies(
    base: SandboxPolicy,
    rules: Sequence[PermissionRule],
    home: Path,
    roots: Sequence[Path],
    masked: Sequence[Path],
    workspace_visits: _Visits,
) -> tuple[tuple[Path, ...], list[str]]:
    """The paths inside the writable roots that ``Edit``/``Write`` deny rules keep from every command.

    Each existing one is bound read-only onto itself by the backend; a symlink is bound where it
    leads (a bind onto a link follows it). Outside the writable roots a command only reads already.
    Fail closed (`PolicyError`): a rule that is or holds a writable root, and a static rule whose
    path does not exist in a writable root (nothing to bind: a command could create it) unless a
    bound directory or a mask already covers it.
    """
    notes: list[str] = []
    wanted: dict[Path, None] = dict.fromkeys(Path(os.path.normpath(p)) for p in base.write_denied)
    missing: list[tuple[Path, str, bool]] = []
    for rule in rules:
        from shellrt.permissions.rules import WRITE_RULE_TOOLS

        if rule.kind != "deny" or rule.tool not in WRITE_RULE_TOOLS:
            continue
        if rule.specifier is None:
            notes.append(
                f"{rule.describe()}: denies every edit; the sandbox keeps the writable roots writable "
                "(the permission layer enforces it for the file tools)"
            )
            continue
        operator = _operators(rule.origin.source, rule.origin.file, roots)
        try:
            paths, _ = rule_masks(rule, home=home, visits=None if operator else workspace_visits)
            present = [p for p in paths if os.path.lexists(p)]
            if (
                operator  # a repository's rule makes nothing on the host (a diagnostic, as before)
                and not present
                and paths
                and _names_a_directory(rule.specifier)
                and not _below(paths[0], masked)
            ):
                # ``Write(./secrets/**)`` before ``secrets/`` exists: made now, empty, and bound
                # read-only like an existing one (red team, round 13), instead of refusing.
                present = [p for p in paths if _make_denied_dir(p, roots)]
            for path in present or paths:
                for form in dict.fromkeys((path, Path(os.path.realpath(path)))):
                    root = _covers(form, roots)
                    if root is not None:
                        raise PolicyError(
                            f"{rule.describe()}: {form} is or holds the writable root {root}; the sandbox "
                            "cannot keep commands from writing it and still run them there. Narrow the rule "
                            "to the files or directories to protect, or drop the writable root"
                        )
                    if not any(r in form.parents for r in roots):
                        continue  # outside the writable roots: read-only in the sandbox already
                    if not present:
                        missing.append((form, rule.describe(), operator))
                    elif os.path.lexists(form) and os.path.realpath(form) == os.fspath(form):
                        wanted.setdefault(form, None)
                    elif os.path.islink(path) and form == path:
                        notes.append(_link_note(rule.describe(), path))
        except PolicyError as exc:
            notes.append(_planted_link(exc, roots) or _repository_rule(exc, operator))
    hidden = [Path(os.path.normpath(m)) for m in masked]

    def covered(path: Path, by: Iterable[Path]) -> bool:
        return any(q == path or q in path.parents for q in by)

    for form, rule_text, operator in missing:
        if covered(form, hidden) or covered(form, [w for w in wanted if os.path.isdir(w)]):
            continue
        refusal = PolicyError(
            f"{rule_text}: {form} does not exist, so the sandbox cannot bind it read-only and a command "
            f"could create it. Create it first (touch {form}, or mkdir for a directory), deny its "
            "directory instead, or remove the rule"
        )
        notes.append(_repository_rule(refusal, operator))
    # The same files through another mount of their file system inside a writable root (a bind
    # mount of a directory of the workspace at another name): bound read-only there too.
    for alias in mount_aliases(list(wanted)):
        root = _covers(alias, roots)
        if root is not None:
            notes.append(
                f"{alias}: another mount of a write-denied path, is or holds the writable root {root}"
            )
        elif any(r in alias.parents for r in roots):
            wanted.setdefault(alias, None)
    # Below a mask it is hidden (a read-only bind there would show it again); below another bound
    # directory it is read-only already: one mount fewer.
    kept = [p for p in wanted if not covered(p, hidden)]
    return tuple(p for p in kept if not any(q in p.parents for q in kept)), notes


def _hard_links(
    kept: Sequence[Path], roots: Sequence[Path], origin: Mapping[Path, str], operator_rules: set[str]
) -> tuple[list[str], list[Path]]:
    """A masked file (or one below an operator's masked directory) with hard links neither masked
    nor in a writable root (made before the session, outside the roots: red team, round 37): a
    command reads it there. `PolicyError` for the operator's rule; a note for a repository's rule,
    a default or a setting, and for an operator's directory too large to count its files. Second:
    the names in the roots of files below an operator's directory outside them, to mask (round 38)."""
    notes: list[str] = []
    directories = [p for p in kept if origin.get(p) in operator_rules and os.path.isdir(p)]
    try:
        unseen, cut, linked = unseen_links(kept, roots, directories)
    except SandboxExecError as exc:  # a denied directory kept changing under its walk (round 40)
        raise PolicyError(str(exc)) from None
    for path, found, count in unseen:
        holder = next((m for m in (path, *path.parents) if m in origin), path)
        why = origin.get(holder, str(path))
        problem = PolicyError(
            f"{why}: {path} has {count} hard links and only {found} of its names are masked or inside a "
            "writable root; a command can read it at the others. Find them (find / -xdev -samefile "
            f"{path}) and deny them too, or remove them"
        )
        if why in operator_rules:
            raise problem
        notes.append(f"{problem} (not a refusal: not the operator's own rule)")
    notes += [
        f"{origin.get(d, d)}: {d} holds too many files (over {MAX_BELOW:,} with the other denied directories) "
        "to count their hard links; a link of one of them outside the writable roots is not masked"
        for d in cut
    ]
    return notes, [name for name in linked if not any(q == name or q in name.parents for q in kept)]


def _below(path: Path, masks: Sequence[Path]) -> bool:
    """Whether ``path`` is or lies below one of ``masks`` (hidden already: nothing to make)."""
    normal = Path(os.path.normpath(path))
    return any(Path(os.path.normpath(m)) in (normal, *normal.parents) for m in masks)


def _names_a_directory(spec: str | None) -> bool:
    """Whether a static rule names a directory and what is below it (``./secrets/**``, ``./out/``)."""
    return (
        spec is not None
        and (spec.endswith("/**") or spec.endswith("/"))
        and not (_GLOB_CHARS & set(spec.rstrip("/").removesuffix("/**").rstrip("/")))
    )


def _make_denied_dir(path: Path, roots: Sequence[Path]) -> bool:
    """Create the missing write-denied directory ``path`` inside a writable root (owned as the
    directory it is made in), so the backend can bind it read-only: a command can then neither
    create it nor put anything in it. Only lexically below a root, with no symlink on the way (a
    link would make it elsewhere). False when it cannot be made (the session then refuses)."""
    path = Path(os.path.normpath(path))
    holders = [r for r in roots if r in path.parents]
    if not holders:
        return False
    parent = path.parent
    while not os.path.lexists(parent):
        parent = parent.parent
    if os.path.realpath(parent) != os.fspath(parent) or not os.path.isdir(parent):
        return False
    try:
        owner = os.stat(parent)
        os.makedirs(path, mode=0o755)
        for made in [path, *path.parents]:
            if made == parent:
                break
            os.lchown(made, owner.st_uid, owner.st_gid)
    except OSError:
        return False
    return os.path.realpath(path) == os.fspath(path)


def _link_note(rule_text: str, link: Path) -> str:
    """What a symlink a write deny names leaves open: its target is bound read-only, the link itself
    lives in a writable directory (red team, round 13)."""
    return (
        f"{rule_text}: {link} is a symbolic link; the sandbox binds where it leads read-only, but a "
        "command can still remove or replace the link itself (then the path holds another file). "
        f"Deny the directory that holds it ({link.parent}/**) to keep the link as it is"
    )


def _interpreter_dirs() -> list[Path]:
    """Where the running Python lives: a default mask must not hide it (the zygote runs on it)."""
    dirs = {sys.prefix, sys.base_prefix, os.path.dirname(os.path.realpath(sys.executable or "/"))}
    return [Path(os.path.realpath(d)) for d in dirs if d]


def _kept_roots(base: SandboxPolicy) -> list[Path]:
    """What no default mask, at home or where the environment moved it, may be or hold: the writable
    roots and the running Python (`_default_masks` and `_moved_masks` both judge against it)."""
    return [*(Path(os.path.normpath(r)) for r in base.allowed_roots()), *_interpreter_dirs()]


#: File systems bwrap mounts itself in the sandbox: a mask that is or holds one stops bwrap (``/proc``)
#: or the session zygote (``/dev``: its ``/dev/shm``) from starting (red team, round 41).
_KERNEL_MOUNTS = (Path("/proc"), Path("/dev"))


def _sandbox_needs() -> tuple[list[Path], list[Path]]:
    """(places no mask may be at, hold or lie below; places no mask may be at or hold): what the
    sandbox itself runs on. The interpreter the bwrap zygote runs (its directory and standard
    library: a mask over one module of it stops the zygote, and every command then ran in one bwrap
    each, the weaker mode) and libpython's directory; bwrap's own ``/proc`` and ``/dev``."""
    import sysconfig  # only here: derive_policy's callers already paid for the rest

    paths = sysconfig.get_paths()
    deep = {os.path.dirname(os.path.realpath(sys.executable or "/")), paths.get("stdlib"), paths.get("platstdlib")}
    libdir = sysconfig.get_config_var("LIBDIR")
    return (
        [Path(os.path.realpath(d)) for d in deep if isinstance(d, str) and d not in ("", "/")],
        [
            *([Path(os.path.realpath(libdir))] if isinstance(libdir, str) and libdir.startswith("/") else []),
            *(Path(m) for m in _mapped_files()),  # the kernel names them resolved already
            *_KERNEL_MOUNTS,
        ],
    )


def _mapped_files() -> set[str]:
    """The files this interpreter has mapped (libpython, libm, the loader, extension modules): the
    zygote runs the same interpreter, and one of them masked (``/dev/null`` over ``libm.so.6``, which
    no shell needs) stopped it as surely as its directory did."""
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
            named = (line.split(maxsplit=5) for line in maps)
            return {f[5].strip().removesuffix(" (deleted)") for f in named if len(f) == 6 and f[5].startswith("/")}
    except OSError:
        return set()


def _meets_sandbox(form: Path, needs: tuple[list[Path], list[Path]]) -> Path | None:
    """The place of the sandbox's own that a mask at ``form`` would hide (None: none)."""
    deep, shallow = needs
    for need in deep:
        if form == need or form in need.parents or need in form.parents:
            return need
    for need in shallow:
        if form == need or form in need.parents:
            return need
    return None


def _sandbox_need_error(why: str, form: Path, need: Path) -> PolicyError:
    return PolicyError(
        f"{why}: {form} would hide {need}, which the sandbox itself runs on (bwrap's own /proc and /dev, "
        "the Python interpreter of its session zygote); masked, the session sandbox would not start. Deny "
        "the files to protect by name instead (the permission layer denies this path to the file tools)"
    )


def _inside(path: Path, roots: Sequence[Path]) -> bool:
    """Whether ``path`` lies below one of ``roots`` (not one of them)."""
    return any(r in path.parents for r in roots)


def _others_reach(path: Path, ids: tuple[int, int] | None = None) -> bool:
    """Whether the sandbox uid (a root caller's leased or fixed uid, owning nothing or ``ids``) can
    list ``path``'s name in its directory or read the file; True when it is missing (a mask is made
    when it appears, as before). Why: a mask is a mount, and commands read the mount table; a root
    caller's host works masks out as root, so a mask over what the sandbox uid cannot reach protects
    nothing and shows it a name it could not list (red team, round 41).

    ``ids``: the operator's fixed sandbox (uid, gid): where it owns a place on the way, or is its
    group, those bits count, not the others' (round 43). POSIX ACLs are read as the kernel does
    (round 45), by the one reading bwrap's per-command masks use too (`sandbox._reach.reaches`,
    round 47): for fixed ids, exactly; for a leased uid, not known yet, every id an ACL on the way
    names may be it (fail closed toward masking). An ACL that cannot be read or parsed: reachable."""
    from sandbox._reach import reaches  # only where there are masks (tests/test_cli_imports.py budget)

    return reaches(path, ids)


class _Aliases:
    """What `_shown_elsewhere` found: the mount table, and whether any closed place's other name is
    reachable (one `mount_aliases` for all of them, ~0.7 ms; one each only then)."""

    def __init__(self) -> None:
        self.text: str | None = None
        self.any_shown: bool | None = None


def _shown_elsewhere(path: Path, closed: Sequence[Path], ids: tuple[int, int] | None, seen: _Aliases) -> bool:
    """Whether the sandbox uid reaches another name of ``path`` (one of the ``closed`` places it
    cannot reach as named) through another mount of its file system: a bind mount of a directory
    below a closed one at an open place (`mount_aliases`). Round 42 judged ``path`` alone, so an
    operator's ``Read(//srv/closed/**/*.pem)`` masked nothing while ``/mnt/bound/k.pem`` (a bind of
    ``/srv/closed/sub``) was read: a mask's other names are only found from a mask (round 45). The
    mount table unreadable: True (masked)."""
    if seen.text is None:
        try:
            seen.text = os.fsdecode(Path("/proc/self/mountinfo").read_bytes())
        except OSError:
            seen.text = ""
    if not seen.text:
        return True
    if seen.any_shown is None:
        seen.any_shown = any(_others_reach(a, ids) for a in mount_aliases(list(closed), seen.text))
    return seen.any_shown and any(_others_reach(a, ids) for a in mount_aliases([path], seen.text))


def _walked(rule: PermissionRule, home: Path) -> bool:
    """Whether a ``Read`` deny's masks come from a walk (a glob, or a name at any depth), not a path
    the rule names itself."""
    from shellrt.permissions.rules import pattern_base

    split = pattern_base(rule.specifier or "", rule.origin.root, home)
    if split is None:
        return False
    _, anchored, whole = _static_part(split[1])
    return not (whole and anchored)


def _one_name(path: Path) -> bool:
    """Whether ``path`` is a file with no other hard link (False for a directory, whose files may
    have links elsewhere, and when unsure)."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return not stat.S_ISDIR(st.st_mode) and st.st_nlink == 1


def _default_masks(home: Path, base: SandboxPolicy, sandbox_ids: tuple[int, int] | None = None) -> list[Path]:
    """`DEFAULT_MASKED_PATHS` for this caller (see there for ``/root``), and what of them other users'
    homes hold (`_other_home_masks`)."""
    keep = _kept_roots(base)
    homes = dict.fromkeys(
        h for h in (home, password_home(), Path("/root")) if h is not None and h.is_absolute()
    )
    out: list[Path] = []
    for text in DEFAULT_MASKED_PATHS:
        if text.startswith("~/"):
            out += [Path(os.path.normpath(h / text[2:])) for h in homes]
        elif _covers(Path(text), keep) is None:
            out.append(Path(text))
    return out + _other_home_masks(homes, sandbox_ids)


#: Homes of other users looked at in all (a directory service may list thousands of users).
_MAX_OTHER_HOMES = 64
#: File systems another user's home is not looked into on: an automounter mounts each home looked
#: up (64 NFS mounts at a session's start), a network one may hang the start while its server is gone.
_REMOTE_TYPES = frozenset(
    {"autofs", "nfs", "nfs4", "cifs", "smb3", "smbfs", "ceph", "glusterfs", "9p", "afs", "lustre", "gpfs", "beegfs"}
)


def _mount_types(table: str) -> list[tuple[str, str]]:
    """(mount point, file system type) of each line of a ``mountinfo`` table, longest point first."""
    out: list[tuple[str, str]] = []
    for line in table.splitlines():
        fields = line.split(" ")
        if "-" not in fields[6:] or len(fields) < 5:
            continue
        kind = fields[fields.index("-", 6) + 1] if len(fields) > fields.index("-", 6) + 1 else ""
        point = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), fields[4])
        out.append((point, kind))
    return sorted(out, key=lambda p: len(p[0]), reverse=True)


def _remote(path: Path, places: Sequence[tuple[str, str]]) -> bool:
    """Whether ``path`` lies on a file system of `_REMOTE_TYPES` (or FUSE's) by the mount table."""
    text = str(path)
    for point, kind in places:
        if text == point or text.startswith(point.rstrip("/") + "/"):
            return kind in _REMOTE_TYPES or kind.startswith("fuse")
    return False


def _other_home_masks(mine: Iterable[Path], ids: tuple[int, int] | None) -> list[Path]:
    """The `DEFAULT_MASKED_PATHS` stores that exist now in the homes of the password database's other
    users and that the commands could read (red team round 54, sandbox12: a root caller's leased uid,
    or a non-root caller, read another user's 0644 ``~/.npmrc`` token or ``~/.pgpass`` in a 0755
    home). A home counts when it is a directory its user owns (``/bin``, ``/nonexistent`` and the
    system users' shared places do not); only existing stores are masked (no freeze of another's
    home, no stat a command for each missing one), and only those the commands reach (a mask over
    what they cannot read shows its name in the mount table and nothing more)."""
    import pwd

    try:
        users = pwd.getpwall()
    except (OSError, KeyError):
        return []
    try:
        table = Path("/proc/self/mountinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    places = _mount_types(table)
    skip = set(mine)
    as_root = os.geteuid() == 0
    out: list[Path] = []
    looked = 0
    for user in users:
        home = Path(os.path.normpath(user.pw_dir)) if user.pw_dir.startswith("/") else None
        if home is None or home in skip or looked >= _MAX_OTHER_HOMES or _remote(home, places):
            continue
        skip.add(home)
        try:
            st = os.lstat(home)
        except OSError:
            continue
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != user.pw_uid or user.pw_uid == 0:
            continue
        looked += 1
        for text in DEFAULT_MASKED_PATHS:
            path = home / text[2:] if text.startswith("~/") else None
            if path is None or not os.path.lexists(path):
                continue
            if _others_reach(path, ids) if as_root else os.access(path, os.R_OK):
                out.append(path)
    return out


def _moved_masks(environ: Mapping[str, str], base: SandboxPolicy) -> tuple[list[Path], list[str]]:
    """The defaults' stores where the operator's ``environ`` moves them (`MOVED_STORE_DIRS`,
    `MOVED_STORE_FILES`), and notes for the values not masked. Only absolute values count (a program
    resolves a relative one from wherever it runs); one that is or holds a writable root or the
    interpreter, or would hide what the sandbox runs on (``DOCKER_CONFIG=/usr``), is left with a note:
    an odd environment must not stop every session, and the default it moves is masked as before."""
    wanted: list[tuple[Path, str]] = []
    for name, stands in MOVED_STORE_DIRS.items():
        value = environ.get(name, "")
        if not value.startswith("/"):
            continue
        for text in DEFAULT_MASKED_PATHS:
            if text == stands or text.startswith(stands + "/"):
                rest = text[len(stands) :].lstrip("/")
                wanted.append((Path(os.path.normpath(os.path.join(value, rest))), name))
    for name in MOVED_STORE_FILES:
        values = environ.get(name, "").split(":") if name == "KUBECONFIG" else [environ.get(name, "")]
        wanted += [(Path(os.path.normpath(v)), name) for v in values if v.startswith("/")]
    if not wanted:
        return [], []
    keep = _kept_roots(base)
    needs = _sandbox_needs()
    out: list[Path] = []
    notes: list[str] = []
    for path, name in dict.fromkeys(wanted):
        real = Path(os.path.realpath(path))
        held = _covers(path, keep) or _covers(real, keep) or _meets_sandbox(real, needs)
        if held is not None or (len(real.parts) < 3 and real.name in _SYSTEM_TOP):
            notes.append(f"${name}: {path} not masked: it is, holds or would hide {held or real}, which commands need")
            continue
        out.append(path)
    return out, notes


#: Top-level directories a moved store is never at (``GNUPGHOME=/etc`` would hide the system's).
_SYSTEM_TOP = frozenset(
    {"", "bin", "boot", "dev", "etc", "home", "lib", "lib32", "lib64", "libx32", "opt", "proc", "root", "run"}
    | {"sbin", "srv", "sys", "tmp", "usr", "var"}
)


def _covers(masked: Path, roots: Sequence[Path]) -> Path | None:
    """The writable root that ``masked`` is or contains (hiding it would hide that root)."""
    for root in roots:
        if root == masked or masked in root.parents:
            return root
    return None


def _around_roots(holder: Path, root_forms: frozenset[Path], limit: int) -> tuple[list[Path], str | None]:
    """Every entry below ``holder`` but the writable roots it holds (``root_forms``: `_root_forms`)
    and the directories on the way to them: what hides ``holder`` while the roots stay. Symlinks are
    left (their target is not below ``holder``, or is an entry masked here itself). Second: why that
    is not all of it (a directory on the way that cannot be listed, more than ``limit`` entries),
    else None. A directory is read only up to the bound (a million entries are not listed to refuse)."""
    ends = {r for r in root_forms if holder in r.parents}
    way = sorted({p for r in ends for p in r.parents if p == holder or holder in p.parents})
    out: list[Path] = []
    for directory in way:
        try:
            with os.scandir(directory) as entries:
                for entry in entries:
                    path = Path(entry.path)
                    if entry.is_symlink() or path in ends or path in way:
                        continue
                    if len(out) >= limit:
                        return out, f"it holds more than {limit:,} entries beside the way to the writable roots"
                    out.append(path)
        except OSError as exc:
            return out, f"{directory} cannot be listed ({exc.strerror})"
    return out, None


def _holder_masks(
    holder: Path, root_forms: frozenset[Path], why: str, *, operator: bool
) -> tuple[list[tuple[Path, str]], list[str]]:
    """The masks that hide what ``holder`` (a mask of ``why`` that holds writable roots) holds beside
    them (red team, round 52), and a note when that is not all of it: `PolicyError` instead for the
    operator's mask (fail closed); a repository's masks what it can."""
    masks, problem = _around_roots(holder, root_forms, MAX_GLOB_MATCHES)
    notes: list[str] = []
    if problem is not None:
        exc = PolicyError(
            f"{why}: {holder} holds a writable root, so the sandbox masks everything else in it, but {problem}. "
            f"Deny the paths beside the workspace by name instead, or move the workspace out of {holder}"
        )
        notes.append(_repository_rule(exc, operator))
    return [(p, why) for p in masks], notes


def _sandbox_sections(files: Iterable[FileSettings]) -> list[tuple[str, Path | None, Mapping[str, Any]]]:
    """(source, file, ``sandbox`` section) of each loaded settings file that has one."""
    return [(loaded.source, loaded.path, loaded.sandbox) for loaded in files if loaded.sandbox]


def _operators(source: str, file: Path | None, roots: Sequence[Path]) -> bool:
    """Whether a rule or ``sandbox`` setting read from ``file`` under ``source`` is the operator's.

    A trusted source's, unless its file lies in a writable root as named or where it leads: the
    workspace can write ``--settings ws/ci.json``, a managed path naming a workspace file or the user
    file of a home inside the workspace, so each is judged as the repository's own (a refusal there
    stopped the operator's session, red team round 56). The trust layer judges them alike.
    """
    if source not in TRUSTED_SANDBOX_SOURCES:
        return False
    if file is None:
        return True  # the command line's flags, the Runtime's own settings
    named = Path(os.path.normpath(os.path.abspath(file)))
    forms = _root_forms(roots)
    return not any(_inside(form, list(forms)) for form in (named, Path(os.path.realpath(file))))


def _str_list(value: object) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


#: Decides whether a settings file / rule origin (source, file) may open the network.
TrustCheck = Callable[[str, "Path | None"], bool]


def _default_trust(source: str, _file: Path | None) -> bool:
    return source in TRUSTED_SANDBOX_SOURCES


def workspace_trust_check(trust: Any, workspace: Path) -> TrustCheck:
    """A `TrustCheck` from the session's `shellrt.permissions.trust.WorkspaceTrust`.

    The operator's own sources are trusted; a workspace file (project, local, or a
    user file that lies inside the workspace) only when the workspace trust says so.
    """

    def check(source: str, file: Path | None) -> bool:
        if trust is None:
            return _default_trust(source, file)
        if source in ("local", "project") or (source in ("user", "cli") and file is not None):
            rel = trust.settings_rel(file, source, workspace) if file is not None else None
            if rel is not None:
                return bool(trust.is_trusted_rel(rel))
            if source not in ("user", "cli"):
                return False
        return source in TRUSTED_SANDBOX_SOURCES

    return check


def fixed_sandbox_ids(config: object) -> tuple[int, int] | None:
    """The fixed host (uid, gid) a root caller's commands run under (``BwrapConfig.sandbox_uid`` and
    ``sandbox_gid``), None when the session leases its uid or the config names none."""
    uid = getattr(config, "sandbox_uid", None)
    if not isinstance(uid, int) or os.geteuid() != 0:
        return None
    gid = getattr(config, "sandbox_gid", None)
    return uid, gid if isinstance(gid, int) else uid


def derive_network(
    base: SandboxPolicy,
    *,
    rules: Iterable[PermissionRule] = (),
    settings_files: Iterable[FileSettings] = (),
    trusted: TrustCheck | None = None,
) -> tuple[SandboxPolicy, list[str]]:
    """``base`` with the trusted allow/deny domains added; ``none`` becomes ``proxied`` when any is allowed.

    ``trusted(source, file)``: whether that origin may open the network (default:
    managed, ``--settings``/``--allow`` and user only; pass the session's workspace
    trust to admit a trusted workspace's files).
    """
    trust = trusted or _default_trust
    notes: list[str] = []
    allowed: list[str] = list(base.allowed_domains)
    denied: list[str] = list(base.denied_domains)
    untrusted: set[str] = set()  # where a deny came from a file the workspace can write
    operator_denies = bool(base.denied_domains)

    def add(into: list[str], values: object, where: str) -> None:
        normalize = normalize_deny_entry if into is denied else normalize_domain
        for value in _str_list(values):
            try:
                into.append(normalize(value))
            except ValueError as exc:
                notes.append(f"{where}: {exc}; ignored")

    for loaded in settings_files:
        network = loaded.sandbox.get("network") if loaded.sandbox else None
        if not isinstance(network, Mapping):
            continue
        where = f"sandbox.network in {loaded.path}"
        add(denied, network.get("deniedDomains"), where)  # a deny may come from anywhere
        if _str_list(network.get("deniedDomains")):
            if trust(loaded.source, loaded.path):
                operator_denies = True
            else:
                untrusted.add(where)
        if network.get("allowedDomains"):
            if trust(loaded.source, loaded.path):
                add(allowed, network.get("allowedDomains"), where)
            else:
                notes.append(
                    f"{where}: allowedDomains ignored: an untrusted workspace cannot open the network "
                    "(trust the workspace, or pass --allow-domain)"
                )
    for rule in rules:
        if rule.tool != "WebFetch" or rule.spec_kind != "domain" or rule.specifier is None:
            continue
        domain = rule.specifier[len("domain:") :]
        if rule.kind == "deny":
            add(denied, [domain], rule.describe())
            if trust(rule.origin.source, rule.origin.file):
                operator_denies = True
            else:
                untrusted.add(rule.describe())
        elif rule.kind == "allow" and trust(rule.origin.source, rule.origin.file):
            add(allowed, [domain], rule.describe())
    allowed = [d for d in dict.fromkeys(allowed)]
    denied = [d for d in dict.fromkeys(denied)]
    network = base.network
    if allowed and network == "none":
        network = "proxied"
    if network in ("host", "bridge") and (allowed or denied) and not (operator_denies or allowed):
        # Only denies of files the workspace can write: a repository must not stop the session.
        notes.append(
            f"network {network!r}: the denied domains of files the workspace can write ({', '.join(sorted(untrusted))}) "
            "cannot be enforced on this network (only the permission layer applies them)"
        )
        denied = []  # not enforced here: kept out of the policy (a derived policy derives the same)
    elif network in ("host", "bridge") and (allowed or denied):
        # Only shellrt's proxy (network 'proxied') filters names; 'none' reaches nothing. On an
        # unfiltered network a deny kept in the policy was silently not enforced (red team, round 11).
        which = (
            f"denied domains ({', '.join(denied)})" if denied else f"allowed domains ({', '.join(allowed)})"
        )
        raise PolicyError(
            f"network {network!r} reaches every host directly, so the sandbox cannot enforce the {which} "
            "of this session's rules and settings. Use network 'none' or 'proxied' (the default, with "
            "--allow-domain for what commands may reach), or remove the domain rules"
        )
    update = {"allowed_domains": tuple(allowed), "denied_domains": tuple(denied), "network": network}
    return base.model_copy(update=update), notes


def derive_policy(
    base: SandboxPolicy,
    *,
    rules: Iterable[PermissionRule] = (),
    settings_files: Iterable[FileSettings] = (),
    masked_paths: Sequence[str | os.PathLike[str]] = (),
    mask_defaults: bool | None = None,
    home: Path | None = None,
    trusted: TrustCheck | None = None,
    sandbox_ids: tuple[int, int] | None = None,
    environ: Mapping[str, str] | None = None,
) -> tuple[SandboxPolicy, list[str]]:
    """``base`` with every masked path of the session added to ``read_denied``, and diagnostics.

    ``rules``: the session's permission rules (only ``Read`` denies are used);
    ``settings_files``: the loaded settings files (their ``sandbox`` sections);
    ``masked_paths``: extra paths (the ``Runtime(masked_paths=…)`` parameter);
    ``mask_defaults``: False drops `DEFAULT_MASKED_PATHS` (None: as settings say, default on).
    ``trusted``: which sources may open the network (see `derive_network`).
    ``sandbox_ids``: the fixed host (uid, gid) a root caller's commands run under, when the operator
    set one (`fixed_sandbox_ids`): what they own is reachable to them (None: a leased uid, owning nothing).
    ``environ``: the operator's environment, whose variables move default stores (`MOVED_STORE_DIRS`,
    `MOVED_STORE_FILES`; None: this process's).
    Idempotent: deriving a derived policy adds nothing.
    """
    rules, settings_files = list(rules), list(settings_files)
    home = home if home is not None else caller_home()
    workspace = base.workspace
    notes: list[str] = []
    wanted: list[tuple[Path, str]] = [(Path(p), "read_denied") for p in base.read_denied]

    defaults_on = True
    unmasked: set[Path] = set()
    extra: list[str] = [os.fspath(p) for p in masked_paths]
    roots = [Path(os.path.normpath(r)) for r in base.allowed_roots()]
    for source, file, section in _sandbox_sections(settings_files):
        if _operators(source, file, roots):
            extra += _str_list(section.get("maskedPaths"))
        if section.get("unmaskDefaults") is True or section.get("unmaskedPaths"):
            if source in TRUSTED_SANDBOX_SOURCES:
                defaults_on = defaults_on and section.get("unmaskDefaults") is not True
                unmasked |= {_expand(p, home, workspace) for p in _str_list(section.get("unmaskedPaths"))}
            else:
                notes.append(
                    f"sandbox.unmaskDefaults/unmaskedPaths in {source} settings ignored: only managed, "
                    "--settings and user settings may unmask secrets"
                )
    if mask_defaults is not None:
        defaults_on = mask_defaults
    if defaults_on:
        wanted += [(p, "default") for p in _default_masks(home, base, sandbox_ids) if p not in unmasked]
        moved, moved_notes = _moved_masks(os.environ if environ is None else environ, base)
        wanted += [(p, "default") for p in moved if p not in unmasked]
        notes += moved_notes
    wanted += [(_expand(p, home, workspace), "setting") for p in extra]
    # A repository's maskedPaths: judged as its rules are (below, `repository`).
    repo_extra: list[Path] = []
    for source, file, section in _sandbox_sections(settings_files):
        for p in _str_list(section.get("maskedPaths")) if not _operators(source, file, roots) else ():
            try:
                repo_extra.append(_expand(p, home, workspace))
            except PolicyError as exc:
                notes.append(f"sandbox.maskedPaths of {source} settings: {exc} (not masked)")
    wanted += [(p, "sandbox.maskedPaths of settings the workspace can write") for p in repo_extra]
    repository: set[str] = {"sandbox.maskedPaths of settings the workspace can write"}
    workspace_visits = _Visits(_MAX_WORKSPACE_VISITS)  # shared by the rules of files the workspace can write
    operator_rules: set[str] = set()  # the texts of the operator's Read denies (`_hard_links`)
    found: set[Path] = set()  # what the operator's globs found on a walk as this caller (round 42)
    root_forms = _root_forms(roots)  # once: every symlink a walk meets and every holder compares with them
    planted_walk = _Planted(roots, root_forms, workspace_visits)
    for rule in rules:
        from shellrt.permissions.rules import READ_RULE_TOOLS  # loaded only when there are rules

        if rule.kind != "deny" or rule.tool not in READ_RULE_TOOLS:
            continue
        operator = _operators(rule.origin.source, rule.origin.file, roots)
        try:
            paths, rule_notes = rule_masks(
                rule, home=home, visits=None if operator else workspace_visits, planted=planted_walk
            )
        except PolicyError as exc:
            notes.append(_planted_link(exc, roots) or _repository_rule(exc, operator))
            continue
        notes += rule_notes
        wanted += [(p, rule.text) for p in paths]
        if operator and _walked(rule, home):
            found.update(paths)
        if operator:
            operator_rules.add(rule.text)
        else:
            repository.add(rule.text)
    repository -= operator_rules  # the same rule of the operator's too: theirs
    as_root = os.geteuid() == 0  # masks worked out as root, commands as the leased sandbox uid
    needs: tuple[list[Path], list[Path]] | None = None  # worked out at the first mask to judge (~1.3 ms)

    masked: dict[Path, None] = {}
    counted: dict[Path, None] = {}  # an operator's closed matches left unmounted, their links still counted
    origin: dict[Path, str] = {}  # which rule or source each mask came from first
    closed: list[tuple[Path, str, bool]] = []  # (path, why, an operator's walked match) none may reach
    seen = _Aliases()  # other mounts of the closed places, looked for once
    # (holder, the operator's?) expanded already: a holder named again (a repository's 50 spellings of
    # its workspace's parent) added and judged every entry again, 6 s of the start (round 53)
    expanded: set[tuple[Path, bool]] = set()
    for path, why in wanted:
        named, _ = _per_process(path)
        if named is None:  # an operator's rule refused above; a setting's or a glob's match is skipped
            notes.append(str(_per_process_error(why, path)))
            continue
        path = named
        # A symlink on the way: hidden where it leads, which hides it under every name (bwrap could
        # not mount through an absolute link into the new root: ``ws/link -> /elsewhere`` made the
        # sandbox fail to start, a repository's way to stop every session of an operator's rule).
        # Every spelling on disk too: a setting's ``café`` (NFC, as typed) is another name than the
        # on-disk NFD directory, and masked only the name that does not exist (red team, round 56).
        forms = list(dict.fromkeys(Path(os.path.realpath(one)) for one in _spellings(path)))
        if any(_per_process(form)[1] for form in forms):  # a symlink led into /proc/<shellrt pid>
            notes.append(str(_per_process_error(why, path)))
            continue
        for form in forms:
            root = _covers(form, roots)
            if root is not None:
                if why != "default":
                    notes.append(
                        f"{why}: {form} is or contains the writable root {root}; it cannot be masked "
                        "in the sandbox (the permission layer still denies it to the file tools)"
                    )
                    if form != root:
                        # Round 52: the skip dropped the whole mask, so ``Read(~/**)`` with the
                        # workspace at ~/proj hid nothing of the home. Everything else in it is masked:
                        # appended here, each judged below like any other mask of ``why``.
                        # a symlink in a root that led the name here is the repository's choice of place
                        led = _inside(Path(os.path.normpath(path)), roots)
                        operators = not (why in repository or led)
                        if (form, operators) not in expanded:
                            expanded.add((form, operators))
                            around, around_notes = _holder_masks(form, root_forms, why, operator=operators)
                            wanted += around
                            notes += around_notes
                continue
            # A symlink inside a writable root led the name out (``ws/secrets -> /proc``): the
            # repository's choice of place, whoever's rule it is.
            planted = _inside(Path(os.path.normpath(path)), roots) and not _inside(form, roots)
            theirs = why in repository or planted
            if theirs and needs is None:
                needs = _sandbox_needs()
            # the operator's masks: only bwrap's own mounts (cheap); a repository's: all of it
            judged = needs if theirs else ([], list(_KERNEL_MOUNTS)) if why != "default" else None
            need = _meets_sandbox(form, judged) if judged is not None else None
            if need is not None:
                # A repository must not choose a weaker sandbox (one bwrap per command) nor stop the
                # session; the operator's /proc or /dev mask is refused (round 41). The operator's
                # mask over the interpreter stands: tighter, and the start warns of the fallback.
                notes.append(_repository_rule(_sandbox_need_error(why, form, need), not theirs))
                continue
            # (inside a writable root the sandbox uid is the owner: a root caller's roots are idmapped to it)
            # An operator's glob found its matches as root, not named them: judged alike (round 42). A
            # directory or a file with other names is not mounted either, but still counted by round
            # 37's hard-link check (round 45: their names showed in the mount table).
            walked = path in found
            # A fixed uid is known now: the operator's static rule is judged for it too (round 45: one
            # bwrap per command, as that uid, failed to start over a place an ACL closes to it).
            known = sandbox_ids is not None and why in operator_rules
            if (theirs or walked or known) and as_root and not _inside(form, roots) and not _others_reach(form, sandbox_ids):
                closed.append((form, why, not theirs))  # unless another mount shows it (below)
                continue
            masked.setdefault(form, None)
            origin.setdefault(form, why)
    for form, why, counts in closed:
        if _shown_elsewhere(form, [c[0] for c in closed], sandbox_ids, seen):
            masked.setdefault(form, None)
            origin.setdefault(form, why)
            continue
        notes.append(
            f"{why}: {form} not masked: the sandbox uid cannot reach it (its directory is closed to "
            "others), and a mask would show commands its name in the mount table (the permission "
            "layer still denies it to the file tools)"
        )
        if counts and not _one_name(form):
            counted.setdefault(form, None)
            origin.setdefault(form, why)
    # The same files through another mount of their file system (a bind mount of the workspace).
    for alias in mount_aliases([p for p in masked if p not in unmasked]):
        root = _covers(alias, roots)
        if root is not None:
            notes.append(
                f"{alias}: another mount of a masked path, is or contains the writable root {root}; not masked"
            )
            continue
        masked.setdefault(alias, None)
    # A path under another masked path is already hidden: one mount fewer.
    # (each path's parents looked up in a set: pairwise, a repository's 3000 masks took minutes)
    masked_set = set(masked)
    kept = tuple(p for p in masked if not any(q in masked_set for q in p.parents))
    link_notes, linked = _hard_links((*kept, *counted), roots, origin, operator_rules)
    notes += link_notes
    kept += tuple(dict.fromkeys(linked))
    unwritable, write_notes = _write_denies(base, rules, home, roots, kept, workspace_visits)
    notes += write_notes
    policy, net_notes = derive_network(
        base.model_copy(update={"read_denied": kept, "write_denied": unwritable}),
        rules=rules,
        settings_files=settings_files,
        trusted=trusted,
    )
    return policy, notes + net_notes
