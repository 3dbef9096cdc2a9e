"""Grep: regex search over file contents, ripgrep-powered, with a pure-Python twin.

Both backends return structured hits (`shellrt.tools._search`) and all
formatting, sorting and paging happens here, once — which is what makes
"the same results with and without ripgrep" checkable. Output modes:
matching files (newest first), matching lines with context, or counts.
"""

from __future__ import annotations

import json
import os
import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import ClassVar, Literal

import anyio
from pydantic import ConfigDict, Field

from sandbox import confine
from sandbox.confine import View
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
from shellrt.tools._gitignore import FILE_TYPES, GlobSyntaxError, compile_glob, rules_along
from shellrt.tools._grep_python import MAX_SEARCH_BYTES
from shellrt.tools._hidden_search import MAX_HIDDEN_SEARCHED, chosen, search_hidden
from shellrt.tools._offloop import off_loop
from shellrt.tools._paths import (
    PathInput,
    file_permission,
    in_sandbox_words,
    mtime_order,
    refusal,
    remember,
    ripgrep_options,
    sandbox_path,
    search_top,
    shown_path,
    subject_for,
    view_for,
)
from shellrt.tools._people import for_people
from shellrt.tools._render import (
    BREAKS_NOTE,
    PEOPLE_LINES,
    marked_listing,
    one_line,
    people_listing,
    shown_file,
)
from shellrt.tools._search import RgRunner, list_files, search, stream_has_nul
from shellrt.tools._search_types import FileHits, GrepQuery
from shellrt.tools._sendable import SendableText
from shellrt.tools._tracked import UNIGNORED_NOTE, hidden_tracked, tracked_in_view
from shellrt.tools._unseen import (
    Judged,
    denied,
    masked_below,
    masked_inodes,
    missing_known,
    outside,
    visible_paths,
)

__all__ = ["GrepInput", "GrepOutput", "GrepTool"]

DEFAULT_HEAD_LIMIT = 250
MAX_LINE_CHARS = 500

OutputMode = Literal["files_with_matches", "content", "count"]


#: Longest pattern or glob of a Grep call: checked before anything compiles it (a 1 MB invalid
#: pattern held a call 2.3 s, red team round 28); a real search needs a few hundred characters.
MAX_PATTERN_CHARS = 16_384


class GrepInput(PathInput):
    """Input of Grep (flag-like names mirror ripgrep)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    pattern: str = Field(
        min_length=1,
        max_length=MAX_PATTERN_CHARS,
        description="Regular expression to search for (ripgrep / Rust syntax).",
    )
    path: str | None = Field(
        default=None, description="File or directory to search (default: the working directory)."
    )
    glob: str | None = Field(
        default=None,
        max_length=MAX_PATTERN_CHARS,
        description='Only files matching this glob, e.g. "*.py" or "*.{ts,tsx}"; several separated by spaces.',
    )
    type: str | None = Field(
        default=None, description="Only files of this type, e.g. py, js, ts, go, rust, java, md."
    )
    output_mode: OutputMode = Field(
        default="files_with_matches",
        description='"files_with_matches" (paths, default), "content" (matching lines), or "count" (matches per file).',
    )
    before: int | None = Field(
        default=None, alias="-B", ge=0, le=100, description="Lines before each match (content mode)."
    )
    after: int | None = Field(
        default=None, alias="-A", ge=0, le=100, description="Lines after each match (content mode)."
    )
    context: int | None = Field(
        default=None, alias="-C", ge=0, le=100, description="Lines before and after each match."
    )
    line_numbers: bool = Field(default=True, alias="-n", description="Show line numbers (content mode).")
    case_insensitive: bool = Field(default=False, alias="-i", description="Case-insensitive search.")
    multiline: bool = Field(
        default=False, description="Let the pattern span lines (`.` then matches newlines too)."
    )
    head_limit: int | None = Field(
        default=None,
        ge=0,
        description=f"Return at most this many lines/files/entries (default {DEFAULT_HEAD_LIMIT}; 0 = no limit).",
    )
    offset: int = Field(default=0, ge=0, description="Skip this many lines/files/entries first (for paging).")


@dataclass
class GrepOutput:
    """Formatted result lines plus the numbers the notes and the UI need."""

    mode: OutputMode
    lines: list[str]
    total_entries: int
    offset: int
    files: int
    matches: int
    pattern: str
    #: Shown lines that held a line break other than ``\n`` (shown as a mark: `one_line`).
    broken: int = 0
    #: Shown lines cut at ``MAX_LINE_CHARS``, as ``path:N`` (a file line may end in the marker too).
    cut: tuple[str, ...] = ()
    #: ``lines`` for people: each name and matched line `isolated` (round 26).
    people: tuple[str, ...] = ()
    #: Files with hits that git tracks and the tree's ignore files name (round 36).
    unignored: int = 0
    #: Such files that could not be searched (the search without ignore files failed).
    unsearched: int = 0
    #: The single file searched is over the walker's bound: only its first part was (round 37).
    partial_bytes: int = 0


class GrepTool(SendableText, Tool[GrepInput, GrepOutput]):
    """Regex search in files."""

    name = "Grep"
    input_model = GrepInput
    search_hint = "search grep ripgrep regex find text in files content"
    interrupt_behavior: ClassVar[Literal["cancel", "block"]] = "cancel"
    idempotent: ClassVar[bool] = True

    def prompt(self) -> str:
        types = ", ".join(sorted(FILE_TYPES))
        return (
            "Search file contents with a regular expression (ripgrep syntax: escape literal braces and "
            "parentheses, e.g. `interface\\{\\}`). Prefer it to running grep/rg through Bash.\n"
            '- output_mode: "files_with_matches" (default; newest first), "content" (matching lines, with '
            '-A/-B/-C context and -n line numbers), "count" (matching lines per file).\n'
            '- Filter files with `glob` ("*.py", "*.{ts,tsx}") or `type` '
            f"({types}).\n"
            "- `multiline: true` lets a pattern span lines. `-i` ignores case.\n"
            f"- Results are limited to {DEFAULT_HEAD_LIMIT} entries by default; page with `offset` and `head_limit`.\n"
            "- Files ignored by .gitignore/.ignore, the .git directory and binary files are skipped."
        )

    def is_read_only(self, tool_input: GrepInput) -> bool:
        return True

    def is_concurrency_safe(self, tool_input: GrepInput) -> bool:
        return True

    async def validate(self, tool_input: GrepInput, ctx: ToolContext) -> ValidationResult:
        view = view_for(ctx)

        def resolve() -> tuple[str, bool]:
            root = remember(tool_input, tool_input.path or ".", ctx, view)
            try:
                where = sandbox_path(tool_input.path or ".", ctx)
                with view.resolve(where) as r:
                    # A denied path is refused alike whether it exists (round 41): no "does not exist".
                    gone = (
                        bool(r.missing)
                        and not denied([where, r.path], ctx, view, self.name)
                        and missing_known(view, r.path, len(r.missing))
                    )
                    return root, gone
            except OSError:
                return root, False  # unreachable: the permission check says why

        try:
            root, missing = await off_loop(resolve, what=f"Resolving {tool_input.path or '.'}")
        except ToolExecutionError as exc:
            return ValidationResult.failure(str(exc))
        if missing:
            return ValidationResult.failure(
                f"Path does not exist: {shown_path(root)}. Pass an existing file or directory as `path`."
            )
        problem = _unusable_text(tool_input.pattern, _split_globs(tool_input.glob))
        if problem:
            return ValidationResult.failure(problem)
        if tool_input.type is not None and tool_input.type not in FILE_TYPES:
            return ValidationResult.failure(
                f"Unknown type {tool_input.type!r}; known types: {', '.join(sorted(FILE_TYPES))}. Or use `glob`."
            )
        return ValidationResult.success()

    async def check_permissions(self, tool_input: GrepInput, ctx: ToolContext) -> PermissionResult:
        return file_permission(
            tool_input.path or ".",
            ctx,
            write=False,
            canonical=tool_input.canonical,
            refused=tool_input.refused,
        )

    def permission_subject(self, tool_input: GrepInput) -> PermissionSubject:
        return subject_for(tool_input, tool_input.path or ".", write=False)

    async def call(self, tool_input: GrepInput, ctx: ToolContext) -> ToolOutput[GrepOutput]:
        raw = tool_input.path or "."
        view = view_for(ctx)
        # In a worker thread: opening a file with several links may search for a denied file's
        # other names (`confine.View.alias_of`), bounded but up to a second or two.
        what = f"Searching {raw}"
        fd, target, single = await off_loop(
            _open_target,
            view,
            sandbox_path(raw, ctx),
            raw,
            tool_input.canonical,
            tool_input.identity,
            what=what,
        )
        try:
            mode = tool_input.output_mode
            before = tool_input.before if tool_input.before is not None else (tool_input.context or 0)
            after = tool_input.after if tool_input.after is not None else (tool_input.context or 0)
            if single and await off_loop(_fd_has_nul, fd, what=what):
                label = shown_path(target)  # resolved: a link's target chose its words (round 48)
                named = shlex.quote(target) if label == target else "FILE"
                raise ToolExecutionError(
                    f"{label} is a binary file; Grep skips binary files. Use Bash instead "
                    f"(e.g. `strings {named} | grep PATTERN`{'' if label == target else ', FILE that file'})."
                )
            host = Path(view.to_host(target) or target)
            use_rg, runner = ripgrep_options(ctx, view, target, None if single else fd)
            query = GrepQuery(
                pattern=tool_input.pattern,
                root=host.parent if single else host,
                single_file=Path(target) if single else None,
                globs=tuple(_split_globs(tool_input.glob)),
                file_type=tool_input.type,
                ignore_case=tool_input.case_insensitive,
                multiline=tool_input.multiline,
                before=before if mode == "content" else 0,
                after=after if mode == "content" else 0,
                files_only=mode == "files_with_matches",
                root_fd=None if single else fd,
                file_fd=fd if single else None,
                skip=() if single else masked_below(view, target),
                # Even for ripgrep: one that fails is answered by the host walker, which a command
                # can choose (round 42's data bound); without these it read a masked file's other
                # name and counted its lines toward the stop (round 43). Worked out once per view.
                skip_inodes=() if single else await off_loop(masked_inodes, view, what=what),
                top=search_top(view, target),
            )
            unignored = unsearched = partial = 0
            judged = Judged(ctx, view, target, GrepTool.name)
            try:
                if single:
                    hits = await search(query, use_rg=use_rg, runner=None)
                    size = os.fstat(fd).st_size
                    partial = size if size > MAX_SEARCH_BYTES else 0
                else:
                    hits, unignored, unsearched = await _search_with_tracked(
                        query, view, ctx, target, fd, use_rg, runner, what, judged
                    )
            except ToolExecutionError as exc:
                raise in_sandbox_words(
                    exc, query.root, os.path.dirname(target) if single else target
                ) from None
        finally:
            os.close(fd)
        # In a worker thread: up to a million hits (names a command made), each judged in Python.
        found = await off_loop(_visible, target if single else None, target, hits, judged, what=what)
        cwd = ctx.cwd or target

        def absolute(path: str) -> str:
            return path

        def short(path: str) -> str:
            return _relative(path, cwd)

        output = await anyio.to_thread.run_sync(
            _format, tool_input, found, absolute, short, before or after, mtime_order(view)
        )
        return ToolOutput(replace(output, unignored=unignored, unsearched=unsearched, partial_bytes=partial))

    def to_model_content(self, output: GrepOutput) -> str | list[ContentBlock]:
        if output.total_entries == 0:
            none = "No matches found." if output.mode != "files_with_matches" else "No files found."
            if output.partial_bytes:
                none += f"\n{note(_partial(output.partial_bytes))}"
            return f"{none}\n{note(_unsearched(output.unsearched))}" if output.unsearched else none
        shown = len(output.lines)
        if output.mode == "files_with_matches":
            head = f"Found {output.files} file{'s' if output.files != 1 else ''}"
        elif output.mode == "count":
            head = f"Found {output.matches} matching lines across {output.files} files"
        else:
            head = ""
        body = "\n".join(output.lines)
        text = f"{head}\n{body}" if head else body
        notes: list[str] = []
        what = "entries" if output.mode != "content" else "lines"
        if output.offset and not shown and output.offset >= output.total_entries:
            # A range that ends before it starts told the model nothing it could use (round 12).
            notes.append(
                note(
                    f"offset {output.offset} is past the end: there are {output.total_entries} {what}. "
                    f"Pass offset=0 to start over, or an offset below {output.total_entries}."
                )
            )
        elif output.offset + shown < output.total_entries or output.offset:
            paging = f"Showing {what} {output.offset + 1}-{output.offset + shown} of {output.total_entries}."
            if output.offset + shown < output.total_entries:
                paging += f" Pass offset={output.offset + shown} for more, or narrow the search."
            notes.append(note(paging))
        if output.broken:
            lines = "lines" if output.broken != 1 else "line"
            notes.append(note(f"{output.broken} shown {lines} {BREAKS_NOTE}"))
        if output.unignored:
            notes.append(note(UNIGNORED_NOTE.format(count=output.unignored, verb="searched")))
        if output.unsearched:
            notes.append(note(_unsearched(output.unsearched)))
        if output.partial_bytes:
            notes.append(note(_partial(output.partial_bytes)))
        if output.cut:
            named = ", ".join(output.cut[:_CUT_NAMED])
            more = f" and {len(output.cut) - _CUT_NAMED:,} more" if len(output.cut) > _CUT_NAMED else ""
            notes.append(
                note(
                    f"Cut at {MAX_LINE_CHARS:,} characters (ending in '… [truncated]'; no other shown line "
                    f"was cut): {named}{more}. Read the file with an offset for the whole line."
                )
            )
        return marked_listing(text, notes, "the file names and matched lines")

    def render_result(self, output: GrepOutput) -> str:
        """The counts, then the lines shown, each name and matched line laid out on its own."""
        head = (
            f"Found {output.files} files, {output.matches} matching lines"
            if output.mode != "files_with_matches"
            else f"Found {output.files} files"
        )
        return people_listing(head, output.people)


def _partial(size: int) -> str:
    """The note for a single file larger than the walker searches (`MAX_SEARCH_BYTES`)."""
    return (
        f"Only the first {MAX_SEARCH_BYTES // (1 << 20)} MiB of this {size:,}-byte file were searched. "
        "Search the rest with Bash (e.g. `grep -n PATTERN FILE`)."
    )


def _unsearched(count: int) -> str:
    """The note for tracked files the ignore files name that could not be searched (`_with_tracked`)."""
    return (
        f"{count} file(s) tracked by git but named in this tree's ignore files were NOT searched (a "
        "search of them found too much or took too long, or there were too many): Grep them by `path`, or "
        "use Bash (`git grep PATTERN`)."
    )


async def _search_with_tracked(
    query: GrepQuery,
    view: View,
    ctx: ToolContext,
    target: str,
    fd: int,
    use_rg: bool,
    runner: tuple[RgRunner, str] | None,
    what: str,
    judged: Judged,
) -> tuple[dict[str, FileHits], int, int]:
    """The hits of ``query``, plus those of the files git tracks that the tree's ignore files hid
    (`shellrt.tools._tracked`), each searched by its own path (`shellrt.tools._hidden_search`);
    how many such files hold hits; and how many could not be searched (too many, too many hits,
    too slow: the other hits stand, and the note says so). Finding them (the index, cached; a
    listing only when an ignore rule lies on the way to a tracked file) runs beside the search."""
    hits: dict[str, FileHits] = {}
    hidden: list[str] = []

    async def main() -> None:
        hits.update(await search(query, use_rg=use_rg, runner=runner, shown=judged.needed()))

    async def find_hidden() -> None:
        tracked = outside(await off_loop(tracked_in_view, view, target, what=what), query.skip)
        if not tracked:
            return
        if not await off_loop(rules_along, query.root, fd, tracked, query.top, what=what):
            return  # no ignore rule on the way to any tracked file: none is hidden, no listing
        listed = await list_files(query.root, fd, use_rg=use_rg, runner=runner, skip=query.skip, top=query.top)
        found = await off_loop(hidden_tracked, fd, tracked, listed, what=what)
        # Only those the session may read are searched: what is searched is counted (round 41).
        seen = await off_loop(
            visible_paths, [os.path.join(target, h) for h in found], ctx, view, GrepTool.name, what=what
        )
        hidden.extend(h for h in found if os.path.join(target, h) in seen)

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(main)
            tg.start_soon(find_hidden)
    except ExceptionGroup as group:  # the search's own error, as it was before it ran beside the listing
        failed = group.subgroup(ToolExecutionError)
        if failed is None or failed.split(ToolExecutionError)[1] is not None:
            raise
        raise _first(failed) from None
    if not hidden:
        return hits, 0, 0
    paths = await off_loop(chosen, query, hidden, what=what)
    searched = paths[:MAX_HIDDEN_SEARCHED]
    try:
        extra = await search_hidden(query, searched)
    except ToolExecutionError:
        return hits, 0, len(paths)
    return {**hits, **extra}, len(extra), len(paths) - len(searched)


def _first(group: BaseExceptionGroup[ToolExecutionError]) -> ToolExecutionError:
    leaf = group.exceptions[0]
    return leaf if isinstance(leaf, ToolExecutionError) else _first(leaf)


def _visible(
    single: str | None, target: str, hits: dict[str, FileHits], judged: Judged
) -> dict[str, FileHits]:
    """The hits by sandbox path, without masked, unreadable (root caller) or rule-denied ones."""
    found = {single if single is not None else os.path.join(target, rel): h for rel, h in hits.items()}
    seen = judged.visible(list(found))
    return {p: h for p, h in found.items() if p in seen}


def _unusable_text(pattern: str, globs: list[str]) -> str | None:
    """Why the pattern or a glob cannot be searched with, the same on both backends (round 32):
    a NUL cannot go into ripgrep's argv (the call crashed), a class ``re`` refuses (``[z-a]``) crashed
    the Python walk."""
    for name, text in (("pattern", pattern), *(("glob", g) for g in globs)):
        if "\0" in text:
            return (
                f"The {name} holds a NUL character, which cannot be passed to the search; write it as the "
                "regex escape \\x00 (in pattern), or leave it out."
            )
    for glob in globs:
        try:
            compile_glob(glob.removeprefix("!"))
        except GlobSyntaxError as exc:
            return f"Invalid search: {exc}. Fix the glob (a class range goes low to high: [a-z])."
    return None


def _split_globs(glob: str | None) -> list[str]:
    if not glob:
        return []
    try:
        return shlex.split(glob)
    except ValueError:
        return glob.split()


def _open_target(
    view: View, where: str, raw: str, expect: str | None, expect_id: confine.Identity | None = None
) -> tuple[int, str, bool]:
    """The searched directory (or single file), opened anchored: ``(fd, canonical path, is a file)``."""
    try:
        try:
            fd, target = confine.open_directory(view, where, expect=expect, expect_id=expect_id)
            return fd, target, False
        except NotADirectoryError:
            fd, target = confine.open_file(view, where, expect=expect, expect_id=expect_id)
            return fd, target, True
    except FileNotFoundError:
        raise ToolExecutionError(f"Path does not exist: {shown_path(where)}.") from None
    except OSError as exc:
        raise refusal("search", raw, exc) from None


def _fd_has_nul(fd: int) -> bool:
    """Whether the open file holds a NUL byte (binary, as ripgrep judges it); unreadable counts as binary."""
    try:
        with os.fdopen(os.dup(fd), "rb") as fh:
            fh.seek(0)
            return stream_has_nul(fh)
    except OSError:
        return True


def _relative(path: str, cwd: str) -> str:
    """Shorter paths for content/count lines: relative below the working directory, else absolute."""
    rel = confine.relative_to(path, cwd) if cwd.startswith("/") else None
    return rel if rel else path


#: How many cut lines the note names (the rest are counted).
_CUT_NAMED = 10


def _clip(text: str) -> tuple[str, bool, bool]:
    """A matched or context line as shown: one line of the result (`one_line`), cut to its bound;
    whether it held another line break; whether it was cut."""
    text, broken = one_line(text.removesuffix("\r"))
    if len(text) <= MAX_LINE_CHARS:
        return text, broken, False
    return text[:MAX_LINE_CHARS] + " … [truncated]", broken, True


#: What in a name reads as the separator after it (``path:N:``, ``path-N-``, ``path:N`` of a count):
#: the name's own hit would read as another file's (red team round 16: ``auth.py:2:...``).
_SEPARATOR_LIKE = re.compile(r":|-\d+(?:-|:|$)")
#: Without line numbers a content line is ``path:text`` / ``path-text``: any ``-`` may end the name.
_SEPARATOR_LIKE_UNNUMBERED = re.compile(r"[:-]")


def _hit_name(path: str, numbered: bool) -> str:
    """``path`` at the start of a content or count line: `shown_file`, quoted as a JSON string when
    the name holds what reads as the separator after it, so its hit cannot pass for another file's."""
    shown = shown_file(path)
    if shown.startswith(('"', "$'")):
        return shown  # quoted already: control characters, a leading quote, bytes not UTF-8
    pattern = _SEPARATOR_LIKE if numbered else _SEPARATOR_LIKE_UNNUMBERED
    return json.dumps(path, ensure_ascii=False) if pattern.search(path) else shown


def _format(
    tool_input: GrepInput,
    found: dict[str, FileHits],
    absolute: Callable[[str], str],
    show: Callable[[str], str],
    has_context: int,
    order: Callable[[str], tuple[int, str]],
) -> GrepOutput:
    """Sort, render and page the hits.

    ``found`` is keyed by sandbox path; the model sees paths as its Bash sees
    them: absolute in the file list, relative to the working directory in
    content/count lines.
    """
    mode = tool_input.output_mode
    entries: list[str]
    people: list[str]  # the first entries for people (as many as they are shown): each field `isolated`
    wanted = tool_input.offset + PEOPLE_LINES + 1
    matches = sum(h.match_count for h in found.values())
    broken: set[int] = set()
    cut: dict[int, str] = {}
    if mode == "files_with_matches":
        entries = [shown_file(absolute(p)) for p in sorted(found, key=order)]
        people = [for_people(e) for e in entries[:wanted]]
    elif mode == "count":
        names = [(_hit_name(show(p), True), found[p].match_count) for p in sorted(found)]
        entries = [f"{name}:{count}" for name, count in names]
        people = [f"{for_people(name)}:{count}" for name, count in names[:wanted]]
    else:
        entries, people = [], []
        for path in sorted(found):
            shown = _hit_name(show(path), tool_input.line_numbers)
            previous: int | None = None
            for number in sorted(found[path].lines):
                text, is_match = found[path].lines[number]
                if (has_context and previous is not None and number != previous + 1) or (
                    has_context and previous is None and entries
                ):
                    if len(people) < wanted:
                        people.append("--")
                    entries.append("--")
                sep = ":" if is_match else "-"
                prefix = f"{shown}{sep}{number}{sep}" if tool_input.line_numbers else f"{shown}{sep}"
                shown_text, had_break, was_cut = _clip(text)
                if had_break:
                    broken.add(len(entries))
                if was_cut:
                    cut[len(entries)] = f"{shown}:{number}"
                entries.append(prefix + shown_text)
                if len(people) < wanted:
                    field = for_people(shown)
                    head = f"{field}{sep}{number}{sep}" if tool_input.line_numbers else f"{field}{sep}"
                    people.append(head + for_people(shown_text))
                previous = number
    limit = DEFAULT_HEAD_LIMIT if tool_input.head_limit is None else tool_input.head_limit
    window = entries[tool_input.offset :]
    seen = people[tool_input.offset :]
    if limit:
        window, seen = window[:limit], seen[:limit]
    shown_range = range(tool_input.offset, tool_input.offset + len(window))
    return GrepOutput(
        mode,
        window,
        len(entries),
        tool_input.offset,
        len(found),
        matches,
        tool_input.pattern,
        sum(1 for i in broken if i in shown_range),
        tuple(name for i, name in sorted(cut.items()) if i in shown_range),
        tuple(seen),
    )
