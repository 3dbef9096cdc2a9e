"""Glob: find files by name pattern, newest first, honouring .gitignore.

Listing comes from ``rg --files`` when ripgrep is installed and from the
pure-Python walker otherwise (same ignore rules, same results); the pattern is
then matched here, identically for both. Sorting by modification time puts
the files someone is working on first.
"""

from __future__ import annotations

import functools
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Literal

from pydantic import Field

from sandbox import confine
from sandbox.confine import View
from shellrt.permissions.globs import GlobMatcher, GlobTimeoutError
from shellrt.protocol import (
    ContentBlock,
    PermissionResult,
    PermissionSubject,
    Tool,
    ToolContext,
    ToolExecutionError,
    ToolOutput,
    ValidationResult,
)
from shellrt.protocol.notes import note
from shellrt.tools._gitignore import GlobSyntaxError, compile_glob
from shellrt.tools._offloop import off_loop
from shellrt.tools._paths import (
    PathInput,
    file_permission,
    in_sandbox_words,
    mtime_order,
    refusal,
    remember,
    ripgrep_options,
    rule_denied,
    sandbox_path,
    search_top,
    subject_for,
    view_for,
)
from shellrt.tools._people import for_people
from shellrt.tools._render import marked_listing, people_listing, shown_file
from shellrt.tools._search import list_files
from shellrt.tools._sendable import SendableText
from shellrt.tools._tracked import UNIGNORED_NOTE, hidden_tracked, tracked_in_view
from shellrt.tools._unseen import masked_below, missing_known, outside

__all__ = ["GlobInput", "GlobOutput", "GlobTool", "split_pattern"]

DEFAULT_LIMIT = 100
#: Seconds matching the listed paths may take: within `off_loop`'s `FILE_IO_TIMEOUT_S`, so the
#: matching ends itself before the call is abandoned (a million names take ~50 s: narrow those).
MATCH_TIMEOUT_S = 20.0
_GLOB_CHARS = frozenset("*?[{")


#: Longest Glob pattern: checked before it is split and compiled (a 1 MB pattern held a call
#: 3.4 s, red team round 28); a path pattern needs a few hundred characters.
MAX_PATTERN_CHARS = 16_384


class GlobInput(PathInput):
    """Input of Glob."""

    pattern: str = Field(
        min_length=1,
        max_length=MAX_PATTERN_CHARS,
        description='Glob such as "**/*.py", "src/**/*.{ts,tsx}" or "*.md" (a pattern without "/" matches at any depth).',
    )
    path: str | None = Field(
        default=None,
        description="Directory to search (default: the working directory). Omit it rather than passing null.",
    )
    limit: int = Field(
        default=DEFAULT_LIMIT, ge=1, le=10_000, description="Maximum number of paths to return."
    )


@dataclass
class GlobOutput:
    """Matching files, newest first; ``total`` counts all matches before the limit."""

    root: str
    files: list[str]
    total: int
    #: Files shown that git tracks and the tree's ignore files name (round 36).
    unignored: int = 0


def split_pattern(pattern: str, base: str | None) -> tuple[str | None, str]:
    """Split a pattern into the directory to search and the glob part.

    An absolute pattern ("/src/**/*.py") searches its fixed prefix; leading
    "../" segments move the search up from ``base``.
    """
    if not pattern.startswith("/"):
        pattern = pattern.removeprefix("./")
        # "../lib/*.py" searches the parent: move leading ".." into the base directory.
        while pattern.startswith("../"):
            base, pattern = os.path.join(base or ".", ".."), pattern[3:]
        return base, pattern
    parts = pattern.split("/")
    fixed: list[str] = []
    for i, part in enumerate(parts[1:], 1):
        if _GLOB_CHARS & set(part) or i == len(parts) - 1:
            return "/" + "/".join(fixed), "/".join(parts[i:])
        fixed.append(part)
    return "/" + "/".join(fixed), "*"


class GlobTool(SendableText, Tool[GlobInput, GlobOutput]):
    """Find files by glob pattern."""

    results_seen_by_commands = True  # what commands see anyway (`Tool.results_seen_by_commands`)

    name = "Glob"
    input_model = GlobInput
    search_hint = "find files by name pattern wildcard list directory tree"
    interrupt_behavior: ClassVar[Literal["cancel", "block"]] = "cancel"
    idempotent: ClassVar[bool] = True

    def prompt(self) -> str:
        return (
            'Find files by name with a glob pattern ("**/*.py", "src/**/*.{ts,tsx}", "*config*"). '
            'A pattern without "/" matches file names at any depth. Results are sorted by modification time, '
            f"newest first, at most {DEFAULT_LIMIT} by default; files ignored by .gitignore/.ignore and the .git "
            "directory are skipped, hidden files are included. Use Grep to search file contents."
        )

    def is_read_only(self, tool_input: GlobInput) -> bool:
        return True

    def is_concurrency_safe(self, tool_input: GlobInput) -> bool:
        return True

    def _root_raw(self, tool_input: GlobInput) -> str:
        base, _ = split_pattern(tool_input.pattern, tool_input.path)
        return base or "."

    async def validate(self, tool_input: GlobInput, ctx: ToolContext) -> ValidationResult:
        view = view_for(ctx)
        raw = self._root_raw(tool_input)

        def check() -> ValidationResult:
            root = remember(tool_input, raw, ctx, view)
            return _check_directory(view, sandbox_path(raw, ctx), shown_file(root))

        try:
            return await off_loop(check, what=f"Resolving {raw}")
        except ToolExecutionError as exc:
            return ValidationResult.failure(str(exc))

    async def check_permissions(self, tool_input: GlobInput, ctx: ToolContext) -> PermissionResult:
        return file_permission(
            self._root_raw(tool_input),
            ctx,
            write=False,
            canonical=tool_input.canonical,
            refused=tool_input.refused,
        )

    def permission_subject(self, tool_input: GlobInput) -> PermissionSubject:
        return subject_for(tool_input, self._root_raw(tool_input), write=False)

    async def call(self, tool_input: GlobInput, ctx: ToolContext) -> ToolOutput[GlobOutput]:
        base, pattern = split_pattern(tool_input.pattern, tool_input.path)
        view = view_for(ctx)
        try:
            fd, root = await off_loop(
                functools.partial(
                    confine.open_directory,
                    view,
                    sandbox_path(base or ".", ctx),
                    expect=tool_input.canonical,
                    expect_id=tool_input.identity,
                ),
                what=f"Opening {base or '.'}",
            )
        except OSError as exc:
            raise refusal("search", base or ".", exc) from None
        try:
            if "/" not in pattern and not pattern.startswith("**"):
                pattern = "**/" + pattern
            try:
                matcher = compile_glob(pattern)
            except GlobSyntaxError as exc:
                raise ToolExecutionError(f"{exc}. Fix the pattern (a class range goes low to high: [a-z]).") from None
            host = Path(view.to_host(root) or root)
            use_rg, runner = ripgrep_options(ctx, view, root, fd)
            masked = masked_below(view, root)  # never entered: a name is information (round 42)
            try:
                listed = await list_files(
                    host, fd, use_rg=use_rg, runner=runner, skip=masked, top=search_top(view, root)
                )
            except ToolExecutionError as exc:
                raise in_sandbox_words(exc, host, root) from None
            tracked = outside(await off_loop(tracked_in_view, view, root, what=f"Listing {root}"), masked)
            hidden = (
                await off_loop(hidden_tracked, fd, tracked, listed, what=f"Listing {root}") if tracked else []
            )
        finally:
            os.close(fd)
        # In the worker thread: the listing is the tree's (up to a million names a command made),
        # and the matcher is Python (~50 µs a name): in the event loop it froze every session.
        files = await off_loop(
            _matching_newest_first, root, [*listed, *hidden], matcher, ctx, view, what=f"Listing {root}"
        )
        shown = files[: tool_input.limit]
        return ToolOutput(GlobOutput(root, shown, len(files), _count_unignored(root, shown, hidden)))

    def to_model_content(self, output: GlobOutput) -> str | list[ContentBlock]:
        if not output.files:
            return f"No files found under {output.root}."
        text = "\n".join(shown_file(f) for f in output.files)
        notes: list[str] = []
        if output.unignored:
            notes.append(note(UNIGNORED_NOTE.format(count=output.unignored, verb="listed")))
        if output.total > len(output.files):
            notes.append(
                note(
                    f"Results are truncated: showing {len(output.files)} of {output.total} files, newest first. "
                    "Use a more specific pattern or path, or raise `limit`."
                )
            )
        return marked_listing(text, notes, "the file names")

    def render_result(self, output: GlobOutput) -> str:
        """The count, then the names shown, each laid out on its own (`isolated`, round 26)."""
        return people_listing(f"Found {output.total} files", (for_people(shown_file(f)) for f in output.files))


def _check_directory(view: View, where: str, shown: str) -> ValidationResult:
    try:
        fd, _ = confine.open_directory(view, where)
    except FileNotFoundError:
        if not _missing_known(view, where):
            return ValidationResult.success()  # the sandbox's user could not tell: the permission check says
        return ValidationResult.failure(
            f"Directory does not exist: {shown}. Pass an existing directory as `path`."
        )
    except NotADirectoryError:
        return ValidationResult.failure(f"{shown} is a file, not a directory; pass its directory as `path`.")
    except OSError:
        return ValidationResult.success()  # unreachable or denied: the permission check says why
    os.close(fd)
    return ValidationResult.success()


def _missing_known(view: View, where: str) -> bool:
    """`missing_known` of the sandbox path ``where`` (resolved again: the open said only "missing")."""
    try:
        with view.resolve(where) as r:
            return missing_known(view, r.path, len(r.missing))
    except OSError:
        return False


def _count_unignored(root: str, files: list[str], hidden: list[str]) -> int:
    """How many of the files found are tracked ones the ignore files named (`shellrt.tools._tracked`)."""
    return len({os.path.join(root, h) for h in hidden}.intersection(files)) if hidden else 0


def _matching_newest_first(
    root: str, listed: list[str], matcher: GlobMatcher, ctx: ToolContext, view: View
) -> list[str]:
    """`_visible_newest_first` of the listed paths ``matcher`` matches, within `MATCH_TIMEOUT_S`.

    A thread cannot be stopped: past `off_loop`'s deadline the call failed but its matching went
    on, holding the GIL for as long as a long pattern over deep paths took (red team round 19:
    half an hour), and each such call counted as a stuck one. The matching stops itself instead.
    Its refusal names no count: the listing still holds masked names (round 41)."""
    deadline = time.monotonic() + MATCH_TIMEOUT_S
    try:
        hits = [r for r in listed if matcher.fullmatch(r, deadline)]
    except GlobTimeoutError:
        raise ToolExecutionError(
            f"Matching the pattern against the paths under {root} took longer than "
            f"{MATCH_TIMEOUT_S:g} s (a long pattern with many `*` or `**`, or very deep paths). Use a "
            "shorter pattern or a narrower `path`, or list with Bash (e.g. `find`)."
        ) from None
    return _visible_newest_first(root, hits, ctx, view)


def _visible_newest_first(root: str, rels: list[str], ctx: ToolContext, view: View) -> list[str]:
    """Sandbox paths of the hits, without masked or rule-denied ones, newest first."""
    paths = [os.path.join(root, r) for r in rels]
    if view.masked:
        paths = [p for p in paths if view.masked_by(p) is None]
    if view.reader is not None:  # a walk run as root: only names the sandbox's user could list
        paths = [p for p in paths if confine.reader_may(view, os.path.dirname(p), 0o5)]
    logical = {view.to_logical(p): p for p in paths}
    hidden = {logical[p] for p in rule_denied(list(logical), ctx, GlobTool.name)}
    return sorted((p for p in paths if p not in hidden), key=mtime_order(view))
