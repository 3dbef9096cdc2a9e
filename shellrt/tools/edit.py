"""Edit: replace an exact string in a file the model has read, and nothing else.

The edit is refused unless the session's last Read of the file is still
current (content hash), and unless ``old_string`` occurs exactly once (or
``replace_all`` is set): a model must never edit a file it has not seen, or
guess which of several matches it meant. The file keeps its encoding, BOM,
line endings and mode; the write is atomic.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pydantic import Field

from sandbox.confine import View
from shellrt.permissions.shown import for_person
from shellrt.protocol import (
    ContentBlock,
    FileReadRecord,
    PermissionResult,
    PermissionSubject,
    Tool,
    ToolContext,
    ToolExecutionError,
    ToolOutput,
    ValidationResult,
)
from shellrt.protocol.textchars import INLINE_BREAK_MARKS
from shellrt.tools._fileio import (
    DecodedText,
    Existing,
    decode_bytes,
    dominant_newline,
    line_end_counts,
    read_existing,
    refuse_oversized,
    require_fresh,
    to_newline,
    utf8_split,
    write_confined,
)
from shellrt.tools._longlines import cut_lines, snippet
from shellrt.tools._offloop import off_loop
from shellrt.tools._paths import (
    PathInput,
    file_permission,
    refusal,
    remember_file_path,
    sandbox_path,
    shown_path,
    state_key,
    subject_for,
    view_for,
)
from shellrt.tools._people import for_people
from shellrt.tools._render import for_prompt, unified_diff
from shellrt.tools._sendable import SendableText
from shellrt.tools._unseen import missing_refusal

__all__ = ["EditInput", "EditOutput", "EditTool"]


class EditInput(PathInput):
    """Input of Edit."""

    file_path: str = Field(description="File to change: absolute, or relative to the working directory.")
    old_string: str = Field(
        description="The exact text to replace (copy it from Read output, without line numbers)."
    )
    new_string: str = Field(description="The text to put in its place (must differ from old_string).")
    replace_all: bool = Field(default=False, description="Replace every occurrence instead of exactly one.")


@dataclass
class EditOutput:
    """Result of an edit: the model sees ``snippet``, people see ``diff``."""

    path: str
    replacements: int
    diff: str
    snippet: str
    created: bool = False


class EditTool(SendableText, Tool[EditInput, EditOutput]):
    """Exact string replacement in a file that was read first."""

    results_seen_by_commands = True  # what commands see anyway (`Tool.results_seen_by_commands`)

    name = "Edit"
    input_model = EditInput
    search_hint = "edit modify change replace string in file patch"

    def prompt(self) -> str:
        return (
            "Replace exact text in a file.\n"
            "- Read the file first in this session; if it changed since, Read it again.\n"
            "- `old_string` must match the file exactly (whitespace and indentation included, without the "
            "line-number prefix Read shows) and occur exactly once; add surrounding lines to make it unique, "
            "or set `replace_all` to change every occurrence (e.g. renaming a variable).\n"
            "- `new_string` must differ from `old_string`.\n"
            "- The file keeps its encoding and line endings; write `\\n` line breaks as usual.\n"
            "- With an empty `old_string` on a missing or empty file, the file is created with `new_string`."
        )

    def user_facing_name(self) -> str:
        return "Update"

    def describe(self, tool_input: EditInput) -> str:
        # The text removed and the text put in (round 17): a file name alone approved any change.
        every = " (every occurrence)" if tool_input.replace_all else ""
        return (
            f"Edit {for_person(tool_input.file_path, one_line=True)}{every}, replacing:\n{for_prompt(tool_input.old_string, '- ')}"
            f"\nwith:\n{for_prompt(tool_input.new_string, '+ ')}"
        )

    async def validate(self, tool_input: EditInput, ctx: ToolContext) -> ValidationResult:
        view = view_for(ctx)
        try:
            canonical = await remember_file_path(tool_input, tool_input.file_path, ctx, view)
        except ToolExecutionError as exc:
            return ValidationResult.failure(str(exc))
        if tool_input.old_string == tool_input.new_string:
            return ValidationResult.failure(
                "old_string and new_string are identical, so there is nothing to change. Give the new text in new_string."
            )
        where = sandbox_path(tool_input.file_path, ctx)

        def check() -> None:
            try:
                existing = read_existing(view, where, label=canonical)
            except OSError:
                return  # unreachable: the permission check says why
            if existing is None and missing_refusal(view, where) is not None:
                return  # nor can the sandbox's user tell it is missing: as unreachable (round 42)
            _plan(view, existing, canonical, tool_input, ctx)

        try:
            await off_loop(check, what=f"Reading {tool_input.file_path}")
        except ToolExecutionError as exc:
            return ValidationResult.failure(str(exc))
        return ValidationResult.success()

    async def check_permissions(self, tool_input: EditInput, ctx: ToolContext) -> PermissionResult:
        return file_permission(
            tool_input.file_path, ctx, write=True, canonical=tool_input.canonical, refused=tool_input.refused
        )

    def permission_subject(self, tool_input: EditInput) -> PermissionSubject:
        return subject_for(tool_input, tool_input.file_path, write=True)

    async def call(self, tool_input: EditInput, ctx: ToolContext) -> ToolOutput[EditOutput]:
        view = view_for(ctx)
        where = sandbox_path(tool_input.file_path, ctx)
        output, record = await off_loop(
            _apply, view, where, tool_input, ctx, what=f"Editing {tool_input.file_path}"
        )
        ctx.read_state[state_key(output.path, ctx, view)] = record
        return ToolOutput(output)

    def to_model_content(self, output: EditOutput) -> str | list[ContentBlock]:
        if output.created:
            return f"Created {shown_path(output.path)}."
        count = f"{output.replacements} replacements" if output.replacements != 1 else "1 replacement"
        return (
            f"The file {shown_path(output.path)} has been updated ({count}). Here is the result of running `cat -n` on a "
            f"snippet of the edited file:\n{output.snippet}"
        )

    def render_result(self, output: EditOutput) -> str:
        return output.diff or f"Created {for_people(shown_path(output.path))}"

    def audit_text(self, output: EditOutput) -> str:
        return f"Edited {for_people(shown_path(output.path))} ({output.replacements} replacement(s))\n{output.diff}"


@dataclass
class _Plan:
    original: Existing | None
    decoded: DecodedText
    new_text: str
    replacements: int
    at: int
    span: int


def _plan(view: View, existing: Existing | None, path: str, tool_input: EditInput, ctx: ToolContext) -> _Plan:
    """Everything up to the write: freshness, matching, the new text. Raises with a next step."""
    old, new = tool_input.old_string, tool_input.new_string
    if old == new:
        raise ToolExecutionError("old_string and new_string are identical, so there is nothing to change.")
    if existing is None:
        if old == "":
            return _Plan(None, DecodedText("", "utf-8"), new, 1, 0, len(new))
        raise ToolExecutionError(
            f"File does not exist: {shown_path(path)}. Check the path (Glob finds files); to create a file use Write."
        )
    data, path = existing.data, existing.path
    label = shown_path(path)  # the resolved name: a link's target chose its words (round 48)
    require_fresh(data, state_key(path, ctx, view), path, ctx.read_state, verb="edit", need_full=False)
    decoded = decode_bytes(data)
    text = decoded.text
    if old == "":
        if text.strip():
            raise ToolExecutionError(
                "old_string is empty but the file is not: give the exact text to replace (or use Write to "
                "replace the whole file)."
            )
        return _Plan(existing, decoded, to_newline(new, dominant_newline(text)), 1, 0, len(new))
    counts = line_end_counts(text)
    newline = dominant_newline(text, counts)
    if newline != "\r" and "\n" in old and "\r" not in old and counts[0] and counts[1]:
        # Both line endings: Read shows them alike (a file of one form keeps the plain match below).
        return _plan_as_shown(existing, decoded, path, tool_input, newline)
    candidates = [(old, new)]
    if newline != "\n":
        # The model writes \n; in a CRLF (or CR) file both strings are meant in the file's line endings.
        converted_new = to_newline(new, newline)
        if "\n" in old:
            candidates = [(to_newline(old, newline), converted_new), (old, new)]
        else:
            candidates = [(old, converted_new)]
    for cand_old, cand_new in candidates:
        count = text.count(cand_old)
        if count == 0:
            continue
        if count > 1 and not tool_input.replace_all:
            raise _duplicate_error(count, label)
        _refuse_marks_alike(text, cand_old, count, label, crlf=False)
        split = utf8_split(text, cand_old) if decoded.encoding == "latin-1" else None
        if split is not None:
            raise _split_error(split, label)
        used = count if tool_input.replace_all else 1
        how = f"replace_all ({count:,} occurrences)" if tool_input.replace_all else "This Edit"
        # Checked before the new text exists: the growth is multiplied by the occurrences.
        refuse_oversized(len(text) + used * (len(cand_new) - len(cand_old)), path, how)
        at = text.find(cand_old)
        new_text = (
            text.replace(cand_old, cand_new)
            if tool_input.replace_all
            else text.replace(cand_old, cand_new, 1)
        )
        return _Plan(existing, decoded, new_text, count if tool_input.replace_all else 1, at, len(cand_new))
    hint = ""
    if re.match(r"^ *\d+\t", old) and all(re.match(r"^ *\d+\t", ln) for ln in old.splitlines() if ln):
        hint = " It starts with Read's line-number prefix (spaces, number, tab); leave that out."
    elif any(
        mark in old for mark in ("\u240b", "\u240c", "\u240d", "\u241c", "\u241d", "\u241e", "\u27e8U+")
    ):
        hint = (
            " It holds a mark Read and Grep show for a line break inside a line (\u240d for \\r, "
            "\u27e8U+2028\u27e9 ...); write the real character, or change that line with Bash."
        )
    elif old.strip() and old.strip() in text:
        hint = " The text occurs with different leading/trailing whitespace; copy it exactly."
    raise ToolExecutionError(
        f"old_string was not found in {label}.{hint} Read the file again and copy the exact text (indentation "
        "included, without the line-number prefix)."
    )


def _plan_as_shown(
    existing: Existing, decoded: DecodedText, path: str, tool_input: EditInput, newline: str
) -> _Plan:
    """`_plan` for an ``old_string`` with line breaks in a file that has CRLF line endings: matched as
    Read shows the file (a CRLF's ``\\r`` dropped), so each ``\\n`` matches a break of either form.

    Matched in one form at a time, two occurrences Read shows alike (one CRLF, one LF) were "one
    match": the Edit changed whichever form came first and said so, and ``replace_all`` left the
    others (red team round 52). Each replacement takes its occurrence's line ending (the file's
    dominant one where the occurrence mixes both)."""
    text, label = decoded.text, shown_path(path)
    old, new = tool_input.old_string, tool_input.new_string
    pattern = re.compile(_escaped(old, crlf=True))
    forms = {"\r\n": to_newline(new, "\r\n"), "\n": new, "": to_newline(new, newline)}

    def replacement(match: re.Match[str]) -> str:
        found = match.group()
        crlf = found.count("\r\n")
        return forms["\r\n" if crlf == found.count("\n") else "\n" if crlf == 0 else ""]

    count, growth, first, span = 0, 0, -1, 0
    for match in pattern.finditer(text):
        count += 1
        if count > 1 and not tool_input.replace_all:
            count = sum(1 for _ in pattern.finditer(text))
            raise _duplicate_error(count, label, " (Read shows CRLF and LF line endings alike)")
        put = replacement(match)
        growth += len(put) - len(match.group())
        if first < 0:
            first, span = match.start(), len(put)
    if count == 0:
        raise ToolExecutionError(
            f"old_string was not found in {label}. Read the file again and copy the exact text (indentation "
            "included, without the line-number prefix)."
        )
    _refuse_marks_alike(text, old, count, label, crlf=True)
    split = utf8_split(text, old, pattern) if decoded.encoding == "latin-1" else None
    if split is not None:
        raise _split_error(split, label)
    how = f"replace_all ({count:,} occurrences)" if tool_input.replace_all else "This Edit"
    refuse_oversized(len(text) + growth, path, how)
    new_text = pattern.sub(replacement, text, count=0 if tool_input.replace_all else 1)
    return _Plan(existing, decoded, new_text, count, first, span)


#: Each mark Read shows for a line break inside a line (`INLINE_BREAK_MARKS`), and its break.
_MARKED = {mark: brk for brk, mark in INLINE_BREAK_MARKS.items()}
_MARK = re.compile("|".join(re.escape(mark) for mark in sorted(_MARKED, key=len, reverse=True)))


def _escaped(old: str, *, crlf: bool) -> str:
    """A pattern of ``old`` as written (``crlf``: each ``\\n`` matches a CRLF too)."""
    return ("\r?\n" if crlf else "\n").join(re.escape(piece) for piece in old.split("\n"))


def _refuse_marks_alike(text: str, old: str, count: int, label: str, *, crlf: bool) -> None:
    """Refuse an ``old_string`` holding a mark Read shows for a line break (U+240D for ``\\r``...)
    when, counted as Read shows ``text`` (each mark matching itself or its break), it matches
    other than its ``count`` literal matches: a file holding the mark as text on one line and the
    break on another is shown alike twice, and the Edit changed the line the file chose (red team
    round 52)."""
    if _MARK.search(old) is None:
        return
    parts: list[str] = []
    at = 0
    for mark in _MARK.finditer(old):
        parts.append(_escaped(old[at : mark.start()], crlf=crlf))
        parts.append(f"(?:{re.escape(mark.group())}|{re.escape(_MARKED[mark.group()])})")
        at = mark.end()
    parts.append(_escaped(old[at:], crlf=crlf))
    shown = sum(1 for _ in re.finditer("".join(parts), text))
    if shown != count:
        raise ToolExecutionError(
            f"old_string matches {shown} times in {label} as Read shows it, {count} of them with the mark as "
            "text: Read shows a line break inside a line (\u240d for \\r, \u27e8U+2028\u27e9 ...) with the same "
            "mark, so these lines look alike. Change the file with Bash (`grep -n`, `cat -A` and `sed` tell "
            "them apart), or include more surrounding lines so it matches exactly once as shown."
        )


def _apply(
    view: View, where: str, tool_input: EditInput, ctx: ToolContext
) -> tuple[EditOutput, FileReadRecord]:
    try:
        existing = read_existing(
            view, where, label=where, expect=tool_input.canonical, expect_id=tool_input.identity
        )
    except OSError as exc:
        raise refusal("edit", tool_input.file_path, exc) from None
    unseen = missing_refusal(view, where) if existing is None else None
    if unseen is not None:  # answered as an unreadable existing file is (round 42)
        raise refusal("edit", tool_input.file_path, unseen)
    path = existing.path if existing is not None else where
    plan = _plan(view, existing, path, tool_input, ctx)
    try:
        payload = plan.decoded.encode(plan.new_text)
    except UnicodeEncodeError as exc:
        raise ToolExecutionError(
            f"{shown_path(path)} is {plan.decoded.encoding}-encoded and new_string has a character it cannot hold "
            f"({plan.new_text[exc.start : exc.end]!r}); use only characters of that encoding."
        ) from None
    refuse_oversized(len(payload), path, "This Edit")  # a wider encoding (UTF-16) than characters
    try:
        outcome, record = write_confined(
            view, path, payload, over=existing, expect=tool_input.canonical, expect_id=tool_input.identity
        )
    except OSError as exc:
        raise refusal("edit", tool_input.file_path, exc) from None
    previous = ctx.read_state.get(state_key(outcome.path, ctx, view))
    record = record.model_copy(update={"partial": bool(previous and previous.partial)})
    old_text = plan.decoded.text
    output = EditOutput(
        path=outcome.path,
        replacements=plan.replacements,
        # Long lines cut (a one-line 60 MB file gave the model all of it: round 47).
        diff=unified_diff(cut_lines(old_text), cut_lines(plan.new_text), outcome.path),
        snippet=snippet(plan.new_text, plan.at, plan.span),
        created=plan.original is None,
    )
    return output, record


def _duplicate_error(count: int, label: str, why: str = "") -> ToolExecutionError:
    """The refusal of an ``old_string`` found ``count`` times without ``replace_all`` (``why``: how the
    occurrences were counted, when not byte for byte). One text for both match paths."""
    return ToolExecutionError(
        f"old_string matches {count} times in {label}{why}. Include more surrounding lines so it matches "
        "exactly once, or set replace_all=true to replace every occurrence."
    )


def _split_error(split: int, label: str) -> ToolExecutionError:
    """The refusal of a replacement at character ``split`` that would cut a UTF-8 character in two
    (the file decoded as latin-1: a character a byte)."""
    return ToolExecutionError(
        f"old_string matches at character {split + 1:,} of {label} inside a UTF-8 character: the file "
        "is not valid UTF-8 as a whole, so it was decoded as latin-1 (a character a byte), and this "
        "replacement would split a multi-byte character. Include the whole character (all its "
        "latin-1 characters, e.g. 'Ã©' for é), or change the file with Bash."
    )
