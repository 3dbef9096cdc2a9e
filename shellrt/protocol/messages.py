"""Wire messages in the Anthropic Messages shape: tool_use in, tool_result out.

Only what the runtime needs is modelled strictly; unknown content blocks in an
assistant message (text, thinking, …) are kept as opaque dicts so a whole
message can be passed through untouched.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "ContentBlock",
    "ImageBlock",
    "ImageSource",
    "TextBlock",
    "ToolResultBlock",
    "ToolUseBlock",
    "UserMessage",
]


class TextBlock(BaseModel):
    """Plain text content."""

    model_config = ConfigDict(extra="forbid")
    type: Literal["text"] = "text"
    text: str


class ImageSource(BaseModel):
    """Base64 image payload (Anthropic ``source`` shape)."""

    model_config = ConfigDict(extra="forbid")
    type: Literal["base64"] = "base64"
    media_type: str
    data: str


class ImageBlock(BaseModel):
    """An image returned to the model (e.g. Read of a PNG)."""

    model_config = ConfigDict(extra="forbid")
    type: Literal["image"] = "image"
    source: ImageSource


ContentBlock = TextBlock | ImageBlock


class ToolUseBlock(BaseModel):
    """A model's request to run a tool. ``input`` is kept raw: validation happens later."""

    model_config = ConfigDict(extra="allow")
    type: Literal["tool_use"] = "tool_use"
    id: str = Field(min_length=1)
    name: str
    input: Any = Field(default_factory=dict)


class ToolResultBlock(BaseModel):
    """The answer paired to one tool_use by ``tool_use_id``."""

    model_config = ConfigDict(extra="forbid")
    type: Literal["tool_result"] = "tool_result"
    tool_use_id: str
    content: str | list[ContentBlock]
    is_error: bool = False

    def text(self) -> str:
        """All text of the content, joined (images are shown as a marker)."""
        if isinstance(self.content, str):
            return self.content
        return "\n".join(
            b.text if isinstance(b, TextBlock) else f"[image {b.source.media_type}]" for b in self.content
        )


class UserMessage(BaseModel):
    """The user turn that carries the tool results of one assistant message, in tool_use order."""

    model_config = ConfigDict(extra="forbid")
    role: Literal["user"] = "user"
    content: list[ToolResultBlock]
