"""Write: create a file, or replace one the model has read in full.

Overwriting is held to the same rule as Edit — the session's last Read must
be current — and additionally must have covered the whole file: replacing
content the model never saw is how work gets lost. An existing file keeps its
encoding (when the new content fits it) and CRLF line endings (when the new
content has none of its own); parent directories are created only inside the
allowed roots. The write is atomic.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path

import anyio
from pydantic import Field

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
    atomic_write,
    decode_bytes,
    dominant_newline,
    require_fresh,
    sha256_bytes,
    to_newline,
)
from shellrt.tools._paths import (
    PathInput,
    allowed_roots,
    display_path,
    file_permission,
    is_inside,
    resolve_path,
    subject_for,
)
from shellrt.tools._render import unified_diff

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


class WriteTool(Tool[WriteInput, WriteOutput]):
    """Create or overwrite a whole file."""

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
        return f"Write {tool_input.file_path}"

    def is_destructive(self, tool_input: WriteInput) -> bool:
        path = os.path.expanduser(tool_input.file_path)
        return os.path.isabs(path) and os.path.isfile(path)

    async def validate(self, tool_input: WriteInput, ctx: ToolContext) -> ValidationResult:
        path = resolve_path(tool_input.file_path, ctx)
        tool_input.remember_resolved(path)
        if path.is_dir():
            return ValidationResult.failure(f"{path} is a directory; give the path of a file to write.")
        if path.exists():
            try:
                await anyio.to_thread.run_sync(
                    lambda: require_fresh(path, ctx.read_state, verb="overwrite", need_full=True)
                )
            except ToolExecutionError as exc:
                return ValidationResult.failure(str(exc))
        return ValidationResult.success()

    async def check_permissions(self, tool_input: WriteInput, ctx: ToolContext) -> PermissionResult:
        return file_permission(tool_input.file_path, ctx, write=True)

    def permission_subject(self, tool_input: WriteInput) -> PermissionSubject:
        return subject_for(tool_input, tool_input.file_path, write=True)

    async def call(self, tool_input: WriteInput, ctx: ToolContext) -> ToolOutput[WriteOutput]:
        path = resolve_path(tool_input.file_path, ctx)
        roots = allowed_roots(ctx)
        output, record = await anyio.to_thread.run_sync(
            _write, path, tool_input.content, ctx.read_state, roots
        )
        ctx.read_state[str(path)] = record
        return ToolOutput(replace(output, path=display_path(path, ctx)))

    def to_model_content(self, output: WriteOutput) -> str | list[ContentBlock]:
        if output.created:
            return f"File created successfully at: {output.path} ({output.size:,} bytes)."
        return f"The file {output.path} has been overwritten ({output.size:,} bytes)."

    def render_result(self, output: WriteOutput) -> str:
        return output.diff if output.diff else f"Created {output.path} ({output.size:,} bytes)"


def _write(
    path: Path, content: str, read_state: dict[str, FileReadRecord], roots: tuple[Path, ...]
) -> tuple[WriteOutput, FileReadRecord]:
    if path.is_dir():
        raise ToolExecutionError(f"{path} is a directory; give the path of a file to write.")
    old_text = ""
    created = not path.exists()
    if created:
        payload = content.encode("utf-8")
        if not path.parent.exists():
            if not any(is_inside(path.parent, r) for r in roots):
                raise ToolExecutionError(
                    f"Directory {path.parent} does not exist and is outside the workspace; create it first."
                )
            path.parent.mkdir(parents=True, exist_ok=True)
    else:
        decoded = decode_bytes(require_fresh(path, read_state, verb="overwrite", need_full=True))
        old_text = decoded.text
        newline = dominant_newline(old_text)
        text = to_newline(content, newline) if newline != "\n" and "\r" not in content else content
        try:
            payload = decoded.encode(text)
        except UnicodeEncodeError:
            # The new content does not fit the old encoding; UTF-8 is the only honest choice left.
            payload = text.encode("utf-8")
        content = text
    atomic_write(path, payload)
    st = path.stat()
    record = FileReadRecord(sha256=sha256_bytes(payload), mtime_ns=st.st_mtime_ns, size=len(payload))
    diff = "" if created else unified_diff(old_text, content, str(path))
    return WriteOutput(path=str(path), created=created, size=len(payload), diff=diff), record
