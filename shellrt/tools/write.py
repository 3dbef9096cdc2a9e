"""Write: create a file, or replace one the model has read in full.

Overwriting is held to the same rule as Edit — the session's last Read must
be current — and additionally must have covered the whole file: replacing
content the model never saw is how work gets lost. An existing file keeps its
encoding (when the new content fits it) and CRLF line endings (when the new
content has none of its own); parent directories are created only inside the
allowed roots. The write is atomic.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass

from pydantic import Field

from sandbox.confine import Identity, View
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
from shellrt.tools._fileio import (
    decode_bytes,
    dominant_newline,
    read_existing,
    refuse_oversized,
    require_fresh,
    to_newline,
    write_confined,
)
from shellrt.tools._longlines import cut_lines
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

__all__ = ["WriteInput", "WriteOutput", "WriteTool"]


class WriteInput(PathInput):
    """Input of Write."""

    file_path: str = Field(description="File to write: absolute, or relative to the working directory.")
    content: str = Field(description="The complete new content of the file.")


@dataclass
class WriteOutput:
    """Result of a write; ``diff`` is empty for a new file."""

    path: str
    created: bool
    size: int
    diff: str = ""


class WriteTool(SendableText, Tool[WriteInput, WriteOutput]):
    """Create or overwrite a whole file."""

    results_seen_by_commands = True  # what commands see anyway (`Tool.results_seen_by_commands`)

    name = "Write"
    input_model = WriteInput
    search_hint = "write create new file save overwrite"

    def prompt(self) -> str:
        return (
            "Write a whole file: creates it, or replaces an existing file's content.\n"
            "- To overwrite an existing file you must have Read all of it in this session, and it must not "
            "have changed since. Prefer Edit for changes to existing files: it sends only the difference.\n"
            "- Missing parent directories are created when they are inside the workspace.\n"
            "- Do not create documentation or README files unless asked."
        )

    def describe(self, tool_input: WriteInput) -> str:
        # What is written, not only where (round 17): the person approves the content too.
        content = tool_input.content
        # The name on the first line, as one line (round 23): a line break in it started bare lines.
        name = for_person(tool_input.file_path, one_line=True)
        return f"Write {name} ({len(content):,} characters):\n{for_prompt(content)}"

    def is_destructive(self, tool_input: WriteInput) -> bool:
        path = os.path.expanduser(tool_input.file_path)
        return os.path.isabs(path) and os.path.isfile(path)

    async def validate(self, tool_input: WriteInput, ctx: ToolContext) -> ValidationResult:
        view = view_for(ctx)
        try:
            canonical = await remember_file_path(tool_input, tool_input.file_path, ctx, view)
        except ToolExecutionError as exc:
            return ValidationResult.failure(str(exc))
        key = state_key(canonical, ctx, view)
        where = sandbox_path(tool_input.file_path, ctx)

        def check() -> None:
            try:
                existing = read_existing(view, where, label=canonical)
            except OSError:
                return  # unreachable: the permission check says why
            if existing is not None:
                require_fresh(existing.data, key, canonical, ctx.read_state, verb="overwrite", need_full=True)

        try:
            await off_loop(check, what=f"Reading {tool_input.file_path}")
        except ToolExecutionError as exc:
            return ValidationResult.failure(str(exc))
        return ValidationResult.success()

    async def check_permissions(self, tool_input: WriteInput, ctx: ToolContext) -> PermissionResult:
        return file_permission(
            tool_input.file_path, ctx, write=True, canonical=tool_input.canonical, refused=tool_input.refused
        )

    def permission_subject(self, tool_input: WriteInput) -> PermissionSubject:
        return subject_for(tool_input, tool_input.file_path, write=True)

    async def call(self, tool_input: WriteInput, ctx: ToolContext) -> ToolOutput[WriteOutput]:
        view = view_for(ctx)
        where = sandbox_path(tool_input.file_path, ctx)
        output, record = await off_loop(
            _write,
            view,
            where,
            tool_input.file_path,
            tool_input.content,
            ctx,
            tool_input.canonical,
            tool_input.identity,
            what=f"Writing {tool_input.file_path}",
        )
        ctx.read_state[state_key(output.path, ctx, view)] = record
        return ToolOutput(output)

    def to_model_content(self, output: WriteOutput) -> str | list[ContentBlock]:
        if output.created:
            return f"File created successfully at: {shown_path(output.path)} ({output.size:,} bytes)."
        return f"The file {shown_path(output.path)} has been overwritten ({output.size:,} bytes)."

    def render_result(self, output: WriteOutput) -> str:
        return (
            output.diff
            if output.diff
            else f"Created {for_people(shown_path(output.path))} ({output.size:,} bytes)"
        )


def _write(
    view: View,
    where: str,
    raw: str,
    content: str,
    ctx: ToolContext,
    expect: str | None,
    expect_id: Identity | None = None,
) -> tuple[WriteOutput, FileReadRecord]:
    """Read what is there (anchored), check freshness, write atomically through the same confinement.

    ``expect``: the canonical path the permission check judged; a path that now leads elsewhere is refused.
    ``expect_id``: what it found there; another directory or file under that path is refused.
    """
    try:
        existing = read_existing(view, where, label=where, expect=expect, expect_id=expect_id)
    except OSError as exc:
        raise refusal("write", raw, exc) from None
    old_text = ""
    if existing is None:
        payload = _utf8(content)
    else:
        data, canonical = existing.data, existing.path
        require_fresh(
            data, state_key(canonical, ctx, view), canonical, ctx.read_state, verb="overwrite", need_full=True
        )
        decoded = dataclasses.replace(decode_bytes(data), tail=b"")  # the whole content is new
        old_text = decoded.text
        newline = dominant_newline(old_text)
        text = to_newline(content, newline) if newline != "\n" and "\r" not in content else content
        try:
            payload = decoded.encode(text)
        except UnicodeEncodeError:
            # The new content does not fit the old encoding; UTF-8 is the only honest choice left.
            payload = _utf8(text)
        content = text
    refuse_oversized(len(payload), where, "This Write")
    try:
        outcome, record = write_confined(
            view, where, payload, over=existing, expect=expect, expect_id=expect_id
        )
    except OSError as exc:
        raise refusal("write", raw, exc) from None
    created = outcome.created
    # Long lines cut: a whole one-line file twice was the diff (red team round 47).
    diff = "" if created else unified_diff(cut_lines(old_text), cut_lines(content), outcome.path)
    return WriteOutput(path=outcome.path, created=created, size=len(payload), diff=diff), record


def _utf8(text: str) -> bytes:
    """``text`` in UTF-8, or a refusal naming the lone surrogate (valid JSON: ``"\\ud800"``) it cannot hold."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ToolExecutionError(
            f"content holds U+{ord(text[exc.start]):04X} at character {exc.start + 1:,}, half of a surrogate pair "
            "that no file encoding can hold; nothing was written. Send the character you meant (a whole "
            "code point, e.g. \\U0001F600), not its UTF-16 halves."
        ) from None
