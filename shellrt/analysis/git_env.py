"""Environment the supervisor sets for every command so a hostile repository
cannot make an auto-allowed ``git`` read command execute code.

Git reads ``.git/config`` of the repository it runs in. A hostile repository can
set keys there that run programs during read commands. ``GIT_CONFIG_COUNT`` /
``GIT_CONFIG_KEY_n`` / ``GIT_CONFIG_VALUE_n`` inject configuration with
command-line precedence, above every config file, so these overrides win.

The full overlay is for commands judged read-only (they run without asking);
a command the user approved keeps its hooks and helpers and only gets
:data:`GIT_BASE_ENV`.

Keys with free names (``diff.<driver>.textconv``, ``diff.<driver>.command``,
``filter.<driver>.*``, ``merge.<driver>.driver``, ``remote.<name>.uploadpack``)
and ``diff.external`` cannot be overridden here: git 2.39 treats an empty
``GIT_EXTERNAL_DIFF`` or ``diff.external`` as a program named "" and every
``git diff`` of a changed tree fails with exit 128. The Bash tool therefore
reads the repository's effective configuration before judging a git command
(``shellrt.tools._gitrepo``): a repository that defines any such key is not
read-only. Sandboxing remains the real boundary.
"""

from __future__ import annotations

__all__ = ["GIT_BASE_ENV", "GIT_CONFIG_OVERRIDES", "GIT_ENV", "PROGRAM_ENV", "SYSTEM_MANPATH", "git_hardening_env"]

#: The manual directories a read-only ``man`` searches: the system's (man-db's MANDATORY_MANPATH,
#: /usr/local/man and Homebrew's), never one derived from PATH (it may name the workspace).
SYSTEM_MANPATH = "/usr/local/share/man:/usr/share/man:/usr/local/man:/usr/man:/opt/homebrew/share/man"

#: Other read-only programs whose environment can make them run code.
PROGRAM_ENV: dict[str, dict[str, str]] = {
    # A config file named by RIPGREP_CONFIG_PATH can add --pre=<program>.
    "rg": {"RIPGREP_CONFIG_PATH": ""},
    # MANOPT can add -P/-H; MANPAGER/PAGER/BROWSER are programs man runs. man-db also obeys the
    # user's ~/.manpath, whose DEFINE lines name the pager, tbl, troff, ... it runs: any earlier
    # command that could write HOME (or /tmp, the sandbox user's HOME) plants one. -C replaces it.
    # Without MANPATH, man-db searches D/../share/man and D/../man of every PATH entry D: a
    # workspace .venv/bin or bin on PATH made the repository's pages first, and a page's `.so`
    # prints any file (round 25). A fixed system search path instead.
    "man": {"MANOPT": "-C /dev/null", "MANPAGER": "cat", "PAGER": "cat", "BROWSER": "", "MANPATH": SYSTEM_MANPATH},
}

#: Set for every command that runs git, read-only or not: nothing may wait on a tty.
GIT_BASE_ENV: dict[str, str] = {"GIT_TERMINAL_PROMPT": "0", "GIT_PAGER": "cat", "PAGER": "cat"}

#: (key, value, why) — applied with command-line precedence.
GIT_CONFIG_OVERRIDES: tuple[tuple[str, str, str], ...] = (
    ("core.fsmonitor", "false", "fsmonitor runs a configured program on status/diff"),
    ("core.pager", "cat", "a configured pager is an arbitrary command"),
    ("core.hooksPath", "/dev/null", "hooks are arbitrary programs (e.g. post-checkout, reference-transaction)"),
    ("core.sshCommand", "false", "an ssh command is an arbitrary program"),
    ("core.gitProxy", "", "a proxy command is an arbitrary program"),
    ("core.askPass", "", "askpass is an arbitrary program"),
    ("core.editor", "false", "an editor is an arbitrary program"),
    ("core.attributesFile", "/dev/null", "global attributes can select diff/filter drivers"),
    ("pager.log", "false", "per-command pager settings are arbitrary commands"),
    ("pager.diff", "false", "per-command pager settings are arbitrary commands"),
    ("pager.show", "false", "per-command pager settings are arbitrary commands"),
    ("pager.branch", "false", "per-command pager settings are arbitrary commands"),
    ("pager.tag", "false", "per-command pager settings are arbitrary commands"),
    ("pager.grep", "false", "per-command pager settings are arbitrary commands"),
    ("pager.blame", "false", "per-command pager settings are arbitrary commands"),
    ("pager.status", "false", "per-command pager settings are arbitrary commands"),
    ("gpg.program", "false", "signature display runs the gpg program"),
    ("gpg.ssh.program", "false", "signature display runs the ssh-keygen program"),
    ("gpg.x509.program", "false", "signature display runs the gpgsm program (git log --format=%G?)"),
    ("core.alternateRefsCommand", "true", "git log --alternate-refs runs it"),
    ("log.showSignature", "false", "would run gpg on every log"),
    ("credential.helper", "", "credential helpers are arbitrary programs"),
    ("uploadpack.packObjectsHook", "", "runs a program on fetch from this repository"),
    ("protocol.ext.allow", "never", "ext:: remotes run arbitrary commands"),
    # GIT_OPTIONAL_LOCKS=0 covers `git status` only: git diff's quiet refresh takes index.lock and
    # rewrites .git/index when a file's stat data changed and its content did not (round 20).
    ("diff.autoRefreshIndex", "false", "git diff would rewrite .git/index (a stat refresh under index.lock)"),
    # git's default; a repository's `remerge` made `git log -m` write a temporary object directory in
    # .git/objects and run the merge machinery (red team, round 36).
    ("log.diffMerges", "separate", "remerge writes in .git/objects"),
)

#: Plain environment variables (why in the comments).
GIT_ENV: dict[str, str] = {
    "GIT_PAGER": "cat",  # env pager beats config; cat is harmless
    "PAGER": "cat",  # other programs (man, systemctl) honour PAGER
    "GIT_TERMINAL_PROMPT": "0",  # never block waiting for credentials on a tty
    "GIT_OPTIONAL_LOCKS": "0",  # `git status` must not take index.lock (concurrent reads)
    "GIT_ASKPASS": "",  # no askpass program
    "SSH_ASKPASS": "",  # no askpass program
    "GIT_EDITOR": "false",  # nothing opens an editor
    "GIT_CONFIG_NOSYSTEM": "1",  # the system config is not ours to trust
    "GIT_ATTR_NOSYSTEM": "1",  # neither are system attributes
    "GIT_NO_REPLACE_OBJECTS": "1",  # replace refs can make reads lie about content
    # A partial clone fetches a missing object from its promisor remote, a URL (or remote
    # helper) the repository names: a read would make a network request or run a transport.
    "GIT_NO_LAZY_FETCH": "1",  # no lazy fetch at all (git >= 2.39.4; the missing object is an error)
    "GIT_ALLOW_PROTOCOL": "",  # and no transport is allowed, on gits that know no GIT_NO_LAZY_FETCH
}


def git_hardening_env() -> dict[str, str]:
    """The full environment overlay: plain variables plus ``GIT_CONFIG_*`` overrides (a fresh copy)."""
    return dict(_HARDENED)


def _hardened() -> dict[str, str]:
    env = dict(GIT_ENV)
    overrides = [(k, v) for k, v, _ in GIT_CONFIG_OVERRIDES]
    env["GIT_CONFIG_COUNT"] = str(len(overrides))
    for index, (key, value) in enumerate(overrides):
        env[f"GIT_CONFIG_KEY_{index}"] = key
        env[f"GIT_CONFIG_VALUE_{index}"] = value
    return env


_HARDENED = _hardened()
