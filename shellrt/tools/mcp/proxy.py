"""`McpProxyTool`: an external MCP server's tool, entered into the same Tool runtime.

Named ``mcp__<server>__<tool>`` so permission rules can name a whole server
(``mcp__server``) or one tool (``mcp__server__tool``). The schema comes from
the server; its annotations are *hints*: they shape scheduling (a tool
annotated read-only may run concurrently), never permissions nor what shellrt
claims — `is_read_only` is always False, `is_destructive` and `is_open_world`
always True (``shellrt serve`` lists them to its client as its own word), and
`check_permissions` passes through, so the rules (and, without a rule, an ask)
decide every call.
"""

from __future__ import annotations

import importlib
import json
import math
import re
from typing import TYPE_CHECKING, Any, ClassVar

import anyio
import mcp.types as mt
from pydantic import BaseModel, ConfigDict, ValidationError
from pydantic_core import InitErrorDetails, PydanticCustomError

from shellrt.permissions.shown import for_person, model_claim
from shellrt.protocol import (
    ContentBlock,
    ImageBlock,
    ImageSource,
    PermissionResult,
    TextBlock,
    Tool,
    ToolContext,
    ToolExecutionError,
    ToolOutput,
)
from shellrt.protocol.model_images import image_for_model
from shellrt.protocol.notes import neutralize_output, untrusted_note
from shellrt.tools.mcp._listing_bounds import SELF_LOAD_KEY
from shellrt.tools.mcp._model_text import MAX_DESCRIPTION_CHARS, model_text, schema_for_model
from shellrt.tools.mcp.config import StdioServerConfig
from shellrt.tools.mcp.connection import McpServerError

if TYPE_CHECKING:
    from shellrt.tools.mcp.connection import McpServerConnection

__all__ = [
    "MAX_DESCRIPTION_CHARS",
    "MAX_RESULT_IMAGES",
    "MAX_RESULT_IMAGE_BYTES",
    "TITLE_CHARS",
    "McpCallOutput",
    "McpInput",
    "McpProxyTool",
    "proxy_tool_name",
    "replaced_output",
    "to_content_blocks",
]

_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
#: Characters of a server's tool title shown to people (in the tool's name for them).
TITLE_CHARS = 120
#: Characters of an external server's progress message passed on (a status line, not a payload).
_PROGRESS_MESSAGE_CHARS = 1000


def proxy_tool_name(server: str, tool: str) -> str:
    """``mcp__<server>__<tool>``, with characters model APIs reject replaced by ``_``."""
    return f"mcp__{_UNSAFE.sub('_', server)}__{_UNSAFE.sub('_', tool)}"


class McpInput(BaseModel):
    """Arguments of an MCP tool: any JSON object.

    The real schema is the server's (checked in `McpProxyTool.parse_input`);
    ``extra="allow"`` is deliberate here, unlike every other input model,
    because the fields are only known at run time.
    """

    model_config = ConfigDict(extra="allow")


class McpCallOutput(BaseModel):
    """A server's answer, already mapped to content blocks."""

    model_config = ConfigDict(extra="forbid")

    server: str
    tool: str
    content: list[TextBlock | ImageBlock]
    is_error: bool = False


def _audio_or_resource(block: Any) -> str:
    if isinstance(block, mt.AudioContent):
        return f"[audio {block.mime_type}, {len(block.data):,} base64 characters not shown]"
    if isinstance(block, mt.ResourceLink):
        label = block.title or block.name
        return f"[resource link] {label}: {block.uri}" + (f" ({block.mime_type})" if block.mime_type else "")
    if isinstance(block, mt.EmbeddedResource):
        res = block.resource
        if isinstance(res, mt.TextResourceContents):
            return f"[resource {res.uri}]\n{res.text}"
        return f"[resource {res.uri}: binary {res.mime_type or 'data'}, {len(res.blob):,} base64 characters not shown]"
    return f"[{getattr(block, 'type', 'unknown')} content not shown]"


#: Images of one result passed to the model (the Messages API takes at most 100 a request, and
#: past 20 only smaller ones), and their base64 characters in all (it refuses requests past 32 MB).
MAX_RESULT_IMAGES = 20
MAX_RESULT_IMAGE_BYTES = 10 * 1024 * 1024


class _ImageAllowance:
    """How many images (and how much of them) one result may still pass on: each acceptable alone,
    150 of them, or five of 4 MB, made a request the API refuses, and so every later turn
    (red team round 56)."""

    def __init__(self, origin: str) -> None:
        self._origin = origin
        self._count = 0
        self._chars = 0

    def admit(self, block: TextBlock | ImageBlock) -> TextBlock | ImageBlock:
        if not isinstance(block, ImageBlock):
            return block
        size = len(block.source.data)
        if self._count >= MAX_RESULT_IMAGES or self._chars + size > MAX_RESULT_IMAGE_BYTES:
            return TextBlock(
                text=f"[image from {self._origin} not shown: one result passes at most {MAX_RESULT_IMAGES} "
                f"images and {MAX_RESULT_IMAGE_BYTES:,} characters of them to the model]"
            )
        self._count += 1
        self._chars += size
        return block


def to_content_blocks(
    result: mt.CallToolResult, origin: str = "the MCP server"
) -> list[TextBlock | ImageBlock]:
    """Map MCP content to tool_result blocks: text, images, structured content as JSON text.

    An image the Messages API would refuse (type, base64, size) becomes a line saying so: passed on,
    it would fail every later turn of the conversation (`image_for_model`); so do the images past
    `MAX_RESULT_IMAGES` or `MAX_RESULT_IMAGE_BYTES` of one result.
    """
    blocks: list[TextBlock | ImageBlock] = []
    texts: list[str] = []
    images = _ImageAllowance(origin)
    for block in result.content:
        if isinstance(block, mt.TextContent):
            blocks.append(TextBlock(text=block.text))
            texts.append(block.text)
        elif isinstance(block, mt.ImageContent):
            blocks.append(images.admit(image_for_model(block.mime_type, block.data, origin=origin)))
        else:
            blocks.append(TextBlock(text=_audio_or_resource(block)))
    structured = result.structured_content
    if structured is not None and not any(_same_json(t, structured) for t in texts):
        blocks.append(TextBlock(text=_structured_text(structured)))
    return blocks


#: Structured content up to this size (compact JSON) is shown indented, larger stays compact.
_INDENTED_UP_TO = 4096


def _structured_text(value: Any) -> str:
    """``value`` as JSON text no bigger than about what the server sent. Indented, each nesting
    level adds a line and its indent to everything below it: 500 lists 190 deep (a 190 KB answer)
    became 37 MB of text, made in the event loop and kept whole (red team round 38, review2)."""
    compact = json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    if len(compact) > _INDENTED_UP_TO:
        return compact
    indented = json.dumps(value, ensure_ascii=False, indent=2, sort_keys=True)
    return indented if len(indented) <= 4 * len(compact) else compact


def replaced_output(output: McpCallOutput, value: Any) -> McpCallOutput:
    """``output`` with its content replaced by a hook's ``updatedMCPToolOutput``.

    Accepted: a string (one text block); a list of content blocks in MCP shape
    (``{"type": "text", "text": ...}``, ``{"type": "image", "data": ..., "mimeType": ...}``)
    or Anthropic shape (``{"type": "image", "source": {...}}``); an object with such a
    ``content`` list (a CallToolResult). Anything else is sent as JSON text. Raises
    `ValueError` naming the block that is neither.
    """
    if isinstance(value, dict) and isinstance(value.get("content"), list):
        value = value["content"]
    blocks: list[TextBlock | ImageBlock] = []
    if isinstance(value, str):
        blocks.append(TextBlock(text=value))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            blocks.append(_hook_block(item, index))
    else:
        blocks.append(TextBlock(text=json.dumps(value, ensure_ascii=False, indent=2, sort_keys=True)))
    return output.model_copy(update={"content": blocks})


def _hook_block(item: Any, index: int) -> TextBlock | ImageBlock:
    kind = item.get("type") if isinstance(item, dict) else None
    try:
        if kind == "text":
            return TextBlock(text=str(item["text"]))
        if kind == "image" and "source" in item:
            return ImageBlock.model_validate(item)
        if kind == "image":
            return ImageBlock(source=ImageSource(media_type=str(item["mimeType"]), data=str(item["data"])))
    except (KeyError, ValidationError) as exc:
        raise ValueError(f"block {index} ({kind}) is incomplete: {exc}") from exc
    raise ValueError(f"block {index} is not a text or image content block: {str(item)[:80]}")


def _same_json(text: str, value: Any) -> bool:
    try:
        return bool(json.loads(text) == value)
    except (ValueError, RecursionError):  # too deep to compare: not the same, both are shown
        return False


def _jsonschema() -> Any:
    """The optional ``jsonschema`` package (None when missing: inputs then pass through unchecked)."""
    try:
        return importlib.import_module("jsonschema")
    except ImportError:
        return None


#: Schema keywords whose values are regular expressions run against the instance.
_REGEX_KEYWORDS = frozenset({"pattern", "patternProperties"})


def _has_regex(schema: Any, depth: int = 0) -> bool:
    """Whether a regex keyword appears anywhere in ``schema`` (a property named so counts too)."""
    if depth > 64:
        return True  # deeper than any real schema: treated as having one
    if isinstance(schema, dict):
        return any(k in _REGEX_KEYWORDS or _has_regex(v, depth + 1) for k, v in schema.items())
    if isinstance(schema, list):
        return any(_has_regex(v, depth + 1) for v in schema)
    return False


def _shown_title(title: str) -> str:
    """``title`` for a person: escaped (`for_person`), one line, blanks collapsed, cut."""
    shown = " ".join(for_person(title[: 4 * TITLE_CHARS], one_line=True).split())
    if len(shown) > TITLE_CHARS or len(title) > 4 * TITLE_CHARS:
        shown = f"{shown[:TITLE_CHARS]}... [cut by shellrt]"
    return shown


class McpProxyTool(Tool[McpInput, McpCallOutput]):
    """One tool of one external MCP server."""

    input_model: ClassVar[type[BaseModel]] = McpInput
    interrupt_behavior = "cancel"

    def __init__(
        self,
        server: str,
        spec: mt.Tool,
        connection: McpServerConnection,
        *,
        always_load: bool,
        server_may_load: bool = False,
    ) -> None:
        """``always_load``: the operator's, in ``tools[]`` from the start; ``server_may_load``: the
        server's own ``_meta`` claim to be so is honoured (the manager says so within its budget;
        False by default, so a caller that never asked the budget cannot load past it)."""
        self.server = server
        self.remote_name = spec.name
        self.name = proxy_tool_name(server, spec.name)
        self.spec = spec
        self._connection = connection
        self.annotations = spec.annotations or mt.ToolAnnotations()
        # A server may ask for one tool to be always loaded (Claude Code honours the same key),
        # within its budget (`SelfLoadBudget`: unbounded, it filled every request past the context).
        claimed = (spec.meta or {}).get(SELF_LOAD_KEY) is True
        always_load = always_load or (server_may_load and claimed)
        self.defer_loading = not always_load
        self.always_load = always_load
        self.search_hint = " ".join(filter(None, [server, spec.name, spec.title or ""]))
        self._schema: dict[str, Any] = dict(spec.input_schema or {"type": "object"})
        self._shown_schema: dict[str, Any] | None = None
        self._validator: Any = None
        self._digests: tuple[mt.Tool, dict[str, str]] | None = None

    # --- model contract ---------------------------------------------------------------
    def prompt(self) -> str:
        # The server's words, without what only the model would read (round 17: Unicode tags).
        description = model_text((self.spec.description or "").strip())
        return description or f"Tool '{self.remote_name}' of the MCP server '{self.server}'."

    def input_schema(self) -> dict[str, Any]:
        if self._shown_schema is None:  # descriptions and titles cleaned; validation uses the server's own
            self._shown_schema = schema_for_model(self._schema)
        return dict(self._shown_schema)

    def parse_input(self, raw: Any) -> McpInput:
        """Validate against the server's JSON Schema (when ``jsonschema`` is installed)."""
        if not isinstance(raw, dict):
            return McpInput.model_validate(raw)  # raises the usual "expected an object"
        validator = self._get_validator()
        if validator is not None:
            try:
                errors = sorted(validator.iter_errors(raw), key=lambda e: list(e.absolute_path))
            except Exception:
                # A ``$ref`` loop (``{"$ref": "#"}``: RecursionError) or one that names nothing it
                # has (Unresolvable) left here and no paired result came (red team round 36).
                self._validator = False  # a schema the checker cannot finish: the server judges
                errors = []
            if errors:
                details: list[InitErrorDetails] = [
                    {
                        "type": PydanticCustomError("json_schema", "{message}", {"message": e.message}),
                        "loc": tuple(e.absolute_path),
                        "input": e.instance,
                    }
                    for e in errors[:10]
                ]
                raise ValidationError.from_exception_data(self.name, details)
        return McpInput.model_validate(raw)

    def _get_validator(self) -> Any:
        if self._validator is None:
            jsonschema = _jsonschema()
            if jsonschema is None:
                return None
            from shellrt.tools.mcp._schema_cost import cheap_to_check  # only once a tool is called

            if not cheap_to_check(self._schema):
                # a check that could run for days in the event loop (nested anyOf through $refs)
                self._validator = False
                return None
            if _has_regex(self._schema):
                # jsonschema runs them with Python's backtracking ``re`` on the model's strings, in
                # the event loop (a 40-character e-mail stalled every session): the server judges.
                self._validator = False
                return None
            try:
                cls = jsonschema.validators.validator_for(self._schema)
                cls.check_schema(self._schema)
                self._validator = cls(self._schema)
            except Exception:
                self._validator = False  # a server with a broken schema: let the server judge
        return self._validator or None

    # --- runtime contract (annotations are hints, never permissions) -----------------------
    async def check_permissions(self, tool_input: McpInput, ctx: ToolContext) -> PermissionResult:
        return PermissionResult.passthrough(
            f"{self.name} is a tool of the external MCP server '{self.server}'; its own hints are not "
            "trusted for permission"
        )

    def is_read_only(self, tool_input: McpInput) -> bool:
        return False

    def is_concurrency_safe(self, tool_input: McpInput) -> bool:
        return self.annotations.read_only_hint is True

    def is_destructive(self, tool_input: McpInput) -> bool:
        """Always: shellrt cannot vouch for what a server's process does. Its ``destructiveHint:
        false`` became ``shellrt serve``'s own annotation to its client (red team round 56)."""
        return True

    def is_open_world(self, tool_input: McpInput) -> bool:
        """Always: the server runs outside the sandbox, reaching what it likes (its hint neither)."""
        return True

    async def call(self, tool_input: McpInput, ctx: ToolContext) -> ToolOutput[McpCallOutput]:
        started = anyio.current_time()

        async def report(progress: float, total: float | None, message: str | None) -> None:
            # The server's message is one status line to us: cut here, so no sink of the
            # session's progress holds (or forwards) megabytes a notification (round 39).
            # Its numbers may be NaN or Infinity (the wire takes them): no JSON sink takes those
            # (round 56), so such a notification is dropped and such a total forgotten.
            if not math.isfinite(progress):
                return
            ctx.report(
                self.name,
                (message or "")[:_PROGRESS_MESSAGE_CHARS],
                progress=progress,
                total=total if total is not None and math.isfinite(total) else None,
                elapsed_s=anyio.current_time() - started,
            )

        try:
            result = await self._connection.call_tool(
                self.remote_name, tool_input.model_dump(mode="json"), progress=report
            )
        except McpServerError as exc:
            # It quotes the server's own words (its JSON-RPC error, its stderr): none may pass for a note.
            message, forged = neutralize_output(str(exc))
            if forged:
                message += "\n" + untrusted_note(forged, f"the {self.server} MCP server's error")
            raise ToolExecutionError(message) from exc
        output = McpCallOutput(
            server=self.server,
            tool=self.remote_name,
            content=to_content_blocks(result, f"MCP server {self.server!r}"),
            is_error=result.is_error,
        )
        return ToolOutput(output, is_error=result.is_error)

    def to_model_content(self, output: McpCallOutput) -> str | list[ContentBlock]:
        if not output.content:
            return ""
        # The server's text is untrusted beside our notes: no line of it may pass for one.
        blocks: list[ContentBlock] = []
        forged = 0
        for block in output.content:
            if isinstance(block, TextBlock):
                text, count = neutralize_output(block.text)
                forged += count
                block = TextBlock(text=text) if count else block
            blocks.append(block)
        if forged:
            blocks.append(TextBlock(text=untrusted_note(forged, f"the {self.server} MCP server's result")))
        if all(isinstance(b, TextBlock) for b in blocks):
            return "\n".join(b.text for b in blocks if isinstance(b, TextBlock))
        return blocks

    async def approval_listing(self) -> dict[str, str] | None:
        """Digests of what the server lists under this tool now (name, title, description, input
        schema), which an allow rule's pin must equal (`shellrt.permissions.mcp_pins`); None when
        the server does not list it or cannot be reached. Made once per listed spec."""
        spec = await self._connection.current_tool(self.remote_name)
        if spec is None:
            return None
        cached = self._digests
        if cached is not None and cached[0] is spec:
            return cached[1]
        from shellrt.permissions.mcp_pins import SHOWN_DESCRIPTION, listing_digests

        config = self._connection.config
        launch = [config.command, *config.args] if isinstance(config, StdioServerConfig) else getattr(config, "url", None)
        digests = listing_digests(spec.name, spec.title, spec.description, spec.input_schema, launch)
        digests[SHOWN_DESCRIPTION] = spec.description or ""  # shown to the person when it changed
        self._digests = (spec, digests)
        return digests

    # --- people -------------------------------------------------------------------------------
    def describe(self, tool_input: McpInput) -> str:
        """The name that runs (the one rules match), then the server's ``title`` as its claim.

        Prompts showed ``srv - get_weather (MCP)({...})`` for ``mcp__srv__wipe_all_repos``: the
        title is the server's word, free to name another tool, so it never stands for the name
        (red team round 19)."""
        title = (self.spec.title or "").strip()
        claim = model_claim(title, "the MCP server's title, not its name") if title and title != self.remote_name else ""
        return f"{self.name}({self.classifier_input(tool_input)}){claim}"

    def user_facing_name(self) -> str:
        """The name people see (and ``shellrt serve``'s client lists as the title): the server's
        title as one escaped line of at most `TITLE_CHARS` characters; it came raw, escapes,
        newlines and a megabyte included (red team round 36)."""
        return f"{self.server} - {_shown_title(self.spec.title or self.remote_name)} (MCP)"
