"""The sampling vocabulary of MCP: what a provider is asked (a :class:`SamplingRequest`) and answers.

These are the ``sampling/createMessage`` shapes, identical in the 2025-11-25
and 2026-07-28 schemas, and the contract between a host and its providers:
``providers`` speaks them, and :mod:`host_receiver.protocol.types` (their one
public door) builds the receiver's models on them (its
``CreateMessageRequestParams`` is a :class:`SamplingRequest` that may also be
task-augmented). The wire rules are :mod:`host_receiver.protocol._wire`'s.
The receiver validates the params before a provider sees them.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, TypeAlias

from pydantic import Field

from host_receiver.protocol._wire import MetaModel, RequestMeta, WireInt, WireModel

__all__ = [
    "Annotations",
    "AudioContent",
    "ContentBlock",
    "CreateMessageResult",
    "EmbeddedResource",
    "ImageContent",
    "ModelHint",
    "ModelPreferences",
    "ResourceLink",
    "Role",
    "SamplingContent",
    "SamplingMessage",
    "SamplingRequest",
    "TextContent",
    "Tool",
    "ToolChoice",
    "ToolResultContent",
    "ToolUseContent",
]

Role: TypeAlias = Literal["user", "assistant"]


# --- content -------------------------------------------------------------


class Annotations(WireModel):
    """Hints about a content block: who it is for, how important, when it changed."""

    audience: list[Role] | None = None
    priority: Annotated[float, Field(ge=0, le=1)] | None = None
    last_modified: str | None = None


class TextContent(MetaModel):
    """A block of text."""

    type: Literal["text"] = "text"
    text: str
    annotations: Annotations | None = None


class ImageContent(MetaModel):
    """An image, base64-encoded, with its MIME type."""

    type: Literal["image"] = "image"
    data: str
    mime_type: str
    annotations: Annotations | None = None


class AudioContent(MetaModel):
    """An audio clip, base64-encoded, with its MIME type."""

    type: Literal["audio"] = "audio"
    data: str
    mime_type: str
    annotations: Annotations | None = None


class ResourceLink(MetaModel):
    """A link to a resource the server offers."""

    type: Literal["resource_link"] = "resource_link"
    uri: str
    name: str


class EmbeddedResource(MetaModel):
    """A resource's contents, embedded."""

    type: Literal["resource"] = "resource"
    resource: dict[str, Any]


#: What a tool result may contain.
ContentBlock: TypeAlias = Annotated[
    TextContent | ImageContent | AudioContent | ResourceLink | EmbeddedResource,
    Field(discriminator="type"),
]


class ToolUseContent(MetaModel):
    """The model calls a tool: its id, name and input."""

    type: Literal["tool_use"] = "tool_use"
    id: str
    name: str
    input: dict[str, Any]


class ToolResultContent(MetaModel):
    """The result of a tool call, answering the ``tool_use`` with ``tool_use_id``."""

    type: Literal["tool_result"] = "tool_result"
    tool_use_id: str
    content: list[ContentBlock]
    structured_content: dict[str, Any] | None = None
    is_error: bool | None = None


#: What a sampling message may contain.
SamplingContent: TypeAlias = Annotated[
    TextContent | ImageContent | AudioContent | ToolUseContent | ToolResultContent,
    Field(discriminator="type"),
]


class SamplingMessage(MetaModel):
    """One message of the conversation to sample from: a role and its content."""

    role: Role
    content: SamplingContent | list[SamplingContent]

    def blocks(self) -> list[TextContent | ImageContent | AudioContent | ToolUseContent | ToolResultContent]:
        """The content as a list, whether it was sent as one block or many."""
        return list(self.content) if isinstance(self.content, list) else [self.content]


# --- the request and its result ------------------------------------------------


class ModelHint(WireModel):
    """A hint at a model: ``name`` is a substring of the model ids the server prefers."""

    name: str | None = None


class ModelPreferences(WireModel):
    """The server's preferences for the model: hints first, then priorities in 0..1."""

    hints: list[ModelHint] | None = None
    cost_priority: Annotated[float, Field(ge=0, le=1)] | None = None
    speed_priority: Annotated[float, Field(ge=0, le=1)] | None = None
    intelligence_priority: Annotated[float, Field(ge=0, le=1)] | None = None


class Tool(MetaModel):
    """A tool the model may call: name, description, input schema."""

    name: str
    title: str | None = None
    description: str | None = None
    input_schema: dict[str, Any]
    output_schema: dict[str, Any] | None = None
    annotations: dict[str, Any] | None = None


class ToolChoice(WireModel):
    """Whether the model may, must or must not call tools."""

    mode: Literal["auto", "none", "required"] | None = None


class SamplingRequest(MetaModel):
    """What the server asks a model for: the params of ``sampling/createMessage``."""

    meta: RequestMeta | None = Field(default=None, alias="_meta")
    messages: list[SamplingMessage]
    model_preferences: ModelPreferences | None = None
    system_prompt: str | None = None
    include_context: Literal["none", "thisServer", "allServers"] | None = None
    temperature: float | None = None
    max_tokens: WireInt
    stop_sequences: list[str] | None = None
    metadata: dict[str, Any] | None = None
    tools: list[Tool] | None = None
    tool_choice: ToolChoice | None = None


class CreateMessageResult(MetaModel):
    """The sampled assistant message: what a provider returns and the server receives."""

    role: Role
    content: SamplingContent | list[SamplingContent]
    model: str
    stop_reason: str | None = None
