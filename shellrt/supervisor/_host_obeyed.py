"""Workspace files another host program obeys without being asked to run the project's code.

The rule (docs/security.md, red team round 17): a file is protected when a program on the host
obeys it -- runs a program it names, or loads code from it -- on an action that is not "run this
project's code" (opening the folder in an editor, ``cd`` into it, starting an agent, any ``yarn``
command), or while no ``git diff``/``git status`` shows its change (git-ignored by convention).
A tracked file that runs only when the operator runs the project's build, tests or commit on
purpose (``Makefile``, ``package.json`` scripts, ``pyproject.toml``'s backend,
``.pre-commit-config.yaml``) is the project's own code, shown in a diff: not protected.

Judged by the rule in round 18: ``node_modules/`` (``.bin`` and the dependencies' lifecycle
scripts) runs when the operator runs the project's scripts or tools (``npm test``, ``npx eslint``,
``npm rebuild``): the project's code, which a sandboxed ``npm install`` rightly writes; protecting
it would revert every install. Text a later agent reads (``AGENTS.md``, rules directories) is no
code: shellrt loads none of it.

One table, read by the after-command check (`protect.WorkspaceGuard`) and the file tools' safety
check (`protect.protected_reason`): a name anywhere, a name in a directory, or every file below a
directory (at any depth of it). Every name is compared folded (`sandbox._namefold`: red team
round 27 fold2): on a folding filesystem ``.VSCODE/MCP.json`` or ``.Idea/watchertasks.xml`` is the
file the program reads; elsewhere such a file is guarded too (fails closed). The tables are folded
once; a scan folds each directory's names once (`obeyed_in`) and each listed name once.
"""

from __future__ import annotations

from typing import Final

from sandbox._namefold import fold_name

__all__ = [
    "OBEYED_ANYWHERE",
    "OBEYED_DIRS",
    "OBEYED_SUFFIXES",
    "obeyed_in",
    "obeyed_reason",
    "obeyed_tree",
]

_MISE = "mise's config (its [hooks] and [env] _.source run at every cd with mise activated)"
_MCP = "another agent's or editor's MCP config (the servers it names start as you)"
_EDITOR = "an editor's config (the language servers and shells it names start when the folder opens)"
_VIM = "a vim/neovim project config (run when the editor opens here with 'exrc' set; often untracked)"
_HOOKS = "another agent's hooks (the commands they name run as you on its events)"
_EMACS = (
    "Emacs directory-local variables (read when any file below is opened; an `eval` form runs as you "
    "once you answer its prompt, and a form marked safe before runs unasked)"
)
_RUSTUP = "rustup's toolchain file (a `path` toolchain's cargo and rustc run as you at every cargo call there)"
_REPL = "a REPL's start-up file (read from the directory it starts in: code as you at `irb`, `R`, `ghci`)"
_HG = (
    "a Mercurial/Sapling repository's config (its [extensions] load Python and its [hooks] run at "
    "any hg/sl command there, a shell prompt's included; no diff shows it)"
)

#: File names obeyed wherever they appear.
_ANYWHERE: Final[dict[str, str]] = {
    "mise.toml": _MISE,
    ".mise.toml": _MISE,
    "mise.local.toml": _MISE,
    ".mise.local.toml": _MISE,
    ".rtx.toml": _MISE,
    # Round 18: read from the directory vim/neovim starts in when the operator set 'exrc'.
    ".exrc": _VIM,
    ".vimrc": _VIM,
    ".gvimrc": _VIM,
    ".nvimrc": _VIM,
    ".nvim.lua": _VIM,
    # Round 20: lazy.nvim's local spec (``local_spec``, on by default) loads it from the directory
    # neovim starts in, behind the same trust prompt as .nvim.lua.
    ".lazy.lua": _VIM,
    # Round 20: Emacs reads them when the operator only opens (looks at) a file below.
    ".dir-locals.el": _EMACS,
    ".dir-locals-2.el": _EMACS,
    # Round 19: mise (and asdf) read it at every cd like mise.toml; a ``node path:./x`` version puts
    # ./x/bin first on PATH there (mise trusts a config by path, not content), so `ls` is x's.
    # Round 19: read from the current directory when the operator starts the REPL there (pry also
    # with a ~/.pryrc; irb when there is no ~/.irbrc; GHCi when no one else may write it).
    ".irbrc": _REPL,
    ".pryrc": _REPL,
    ".Rprofile": _REPL,
    ".ghci": _REPL,
    ".octaverc": _REPL,
    # Round 31: the OCaml toplevel (and utop) evaluate it from the directory they start in. A
    # debugger's (``.pdbrc``, ``.perldb``) stays the model's: debugging runs the project's code.
    ".ocamlinit": _REPL,
    # Round 31: rustup's toolchain file: a ``path`` toolchain's cargo and rustc run for every cargo
    # or rustc call below it, a shell prompt's ``rustc --version`` at cd included (starship).
    "rust-toolchain.toml": _RUSTUP,
    "rust-toolchain": _RUSTUP,
    # Round 31: agents that read a project's config when the operator starts them in the folder
    # (opencode's ``mcp`` servers and ``plugins``; Crush's ``mcp`` and ``lsp`` commands).
    "opencode.json": _MCP + "; its plugins load as you too",
    "opencode.jsonc": _MCP + "; its plugins load as you too",
    "crush.json": _MCP + "; its language servers too",
    ".crush.json": _MCP + "; its language servers too",
    ".aider.conf.yml": "aider's config (its lint-cmd and test-cmd run as you after the edits it makes)",
    # Round 40: the .NET host reads it from the directory it runs in or any parent; its sdk.paths
    # (.NET 10) name directories, relative ones too, whose SDK runs at every dotnet command there
    # (an editor's C# extension at folder open, a prompt's `dotnet --version`), as rustup's `path`.
    "global.json": "the .NET SDK's selection file (its sdk.paths name a directory whose SDK runs as you at "
    "every dotnet command below it, an editor's C# extension included)",
    ".tool-versions": "mise's and asdf's tool list (read at every cd with mise activated; a path: version "
    "puts that directory's bin/ first on PATH, so `ls` or `git` there is the command's)",
}
#: Name endings obeyed wherever they appear (round 18): a VS Code workspace file's "settings" and
#: "tasks" (``runOn: folderOpen``) are those of ``.vscode/``, obeyed when it is opened.
_SUFFIXES: Final[dict[str, str]] = {
    ".code-workspace": "a VS Code workspace file (its tasks and settings apply when it is opened)",
}
#: (directory name, file name) -> why.
_IN_DIR: Final[dict[tuple[str, str], str]] = {
    (".config", "mise.toml"): _MISE,
    (".mise", "config.toml"): _MISE,
    ("mise", "config.toml"): _MISE,  # mise/config.toml and .config/mise/config.toml
    (".vscode", "mcp.json"): _MCP,
    (".cursor", "mcp.json"): _MCP,
    (".gemini", "settings.json"): _MCP + "; its hooks and tool commands too",
    (".codex", "config.toml"): _MCP + "; its notify program too",
    (".amazonq", "mcp.json"): _MCP,
    (".roo", "mcp.json"): _MCP,
    (".zed", "settings.json"): _EDITOR,
    (".helix", "languages.toml"): _EDITOR,
    (".helix", "config.toml"): _EDITOR,
    (".cursor", "hooks.json"): _HOOKS,  # round 18: Cursor's project hooks
    # Round 31: Qwen Code (Gemini CLI's file), Windsurf's Cascade hooks, Kilo Code.
    (".qwen", "settings.json"): _MCP + "; its hooks and tool commands too",
    (".windsurf", "hooks.json"): _HOOKS,
    (".kilocode", "mcp.json"): _MCP,
    # Round 20: JetBrains File Watchers run their program when the operator saves a matching file
    # in the IDE (not "run the project"); .idea/ is git-ignored by default.
    (".idea", "watcherTasks.xml"): "a JetBrains File Watcher (its program runs when you save a file in the IDE)",
    # Round 19: the repository config hg and sl read for every command (git's is guarded apart);
    # sharedpath names the repository whose config a share reads too.
    (".hg", "hgrc"): _HG,
    (".hg", "hgrc-not-shared"): _HG,
    (".hg", "sharedpath"): _HG,
    (".sl", "config"): _HG,
    (".sl", "sharedpath"): _HG,
}
#: Directories (as their last two names) every file below which is obeyed.
_TREES: Final[dict[tuple[str, str], str]] = {
    ("mise", "conf.d"): _MISE,
    (".yarn", "releases"): "a Yarn release (the file yarnPath names runs at every yarn command)",
    (".yarn", "plugins"): "a Yarn plugin (loaded by every yarn command)",
    (".idea", "runConfigurations"): "a JetBrains run configuration (.idea/ is usually git-ignored: no diff shows it)",
    # Round 18: what VS Code loads as the TypeScript server once "use the workspace version" was
    # accepted (``typescript.tsdk``); Continue's workspace MCP servers; Kiro's and Cline's hooks.
    (".yarn", "sdks"): "a Yarn editor SDK (the TypeScript server an editor loads from it when the folder opens)",
    (".continue", "mcpServers"): _MCP,
    (".kiro", "settings"): _MCP,  # .kiro/settings/mcp.json: started when the folder opens
    (".kiro", "hooks"): _HOOKS,
    (".clinerules", "hooks"): _HOOKS,
    (".github", "hooks"): _HOOKS,  # round 31: GitHub Copilot CLI loads every .github/hooks/*.json
}
#: Directories every file below which is obeyed, by their own name (round 31: ``.opencode/``
#: holds opencode's config, and the ``.ts``/``.js`` of its ``plugins/`` load at every start).
_TREE_DIRS: Final[dict[str, str]] = {".opencode": _MCP + "; the plugins below it load as you too"}
#: The tables with every name folded (`fold_name`): what the functions below look names up in.
_ANYWHERE_F: Final[dict[str, str]] = {fold_name(n): w for n, w in _ANYWHERE.items()}
_SUFFIXES_F: Final[dict[str, str]] = {fold_name(s): w for s, w in _SUFFIXES.items()}
_ENDINGS_F: Final[tuple[str, ...]] = tuple(_SUFFIXES_F)
_IN_DIR_F: Final[dict[tuple[str, str], str]] = {(fold_name(d), fold_name(n)): w for (d, n), w in _IN_DIR.items()}
_TREES_F: Final[dict[tuple[str, str], str]] = {(fold_name(a), fold_name(b)): w for (a, b), w in _TREES.items()}
_TREE_DIRS_F: Final[dict[str, str]] = {fold_name(d): w for d, w in _TREE_DIRS.items()}
#: Names obeyed anywhere, and by directory name (what a scan asks once per directory listed).
OBEYED_ANYWHERE: Final[frozenset[str]] = frozenset(_ANYWHERE)
#: Name endings obeyed anywhere (for ``str.endswith``).
OBEYED_SUFFIXES: Final[tuple[str, ...]] = tuple(_SUFFIXES)
#: Folded directory name -> the folded names obeyed in it.
_BY_DIR: Final[dict[str, frozenset[str]]] = {
    d: frozenset(n for dd, n in _IN_DIR_F if dd == d) for d, _ in _IN_DIR_F
}
#: Directory names that, as symlinks, redirect what these programs read: the dot-directories only
#: (``.config`` aside: it holds much else); a link named ``mise`` may well be the program.
OBEYED_DIRS: Final[frozenset[str]] = frozenset(
    d
    for d in {*(d for d, _ in _IN_DIR), *(d for d, _ in _TREES), *_TREE_DIRS}
    if d.startswith(".") and d != ".config"
)


def obeyed_in(parents: tuple[str, ...]) -> frozenset[str] | None:
    """The folded names (`fold_name`) obeyed in the directory ``parents`` besides
    `OBEYED_ANYWHERE`; None: every file (a tree). One call per directory a scan lists, so a file
    costs one fold and one set lookup."""
    if obeyed_tree(parents) is not None:
        return None
    return _BY_DIR.get(fold_name(parents[-1]), frozenset()) if parents else frozenset()


def obeyed_tree(parents: tuple[str, ...]) -> str | None:
    """Why every file below the directory ``parents`` (its path's names) is obeyed, or None."""
    folded = [fold_name(p) for p in parents]
    why = next((w for p in folded if (w := _TREE_DIRS_F.get(p)) is not None), None)
    if why is not None:
        return why
    for index in range(len(folded) - 1):
        why = _TREES_F.get((folded[index], folded[index + 1]))
        if why is not None:
            return why
    return None


def obeyed_reason(parents: tuple[str, ...], name: str) -> str | None:
    """Why a host program obeys the file ``name`` in the directory ``parents``, or None."""
    name = fold_name(name)
    why = _ANYWHERE_F.get(name)
    if why is None and name.endswith(_ENDINGS_F):
        why = next(w for s, w in _SUFFIXES_F.items() if name.endswith(s))
    if why is None and parents:
        why = _IN_DIR_F.get((fold_name(parents[-1]), name))
    return why if why is not None else obeyed_tree(parents)
