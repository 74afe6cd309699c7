"""Pydantic models for the part of the MCP 2025-11-25 schema this project speaks.

Field names are snake_case in Python and camelCase on the wire (``_meta`` is
``meta``). Every model keeps unknown fields (``extra="allow"``), so that what a
peer sends that the schema allows, such as ``_meta`` keys or ``metadata``
entries, survives a round trip. Use :func:`dump` to turn a model into wire JSON.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, TypeAlias

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

LATEST_PROTOCOL_VERSION = "2025-11-25"
#: Versions this project can speak, newest first.
SUPPORTED_PROTOCOL_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26")
#: The ``_meta`` key that ties a message to a task.
RELATED_TASK_META_KEY = "io.modelcontextprotocol/related-task"

ProgressToken: TypeAlias = str | int
RequestId: TypeAlias = str | int
Role: TypeAlias = Literal["user", "assistant"]


class WireModel(BaseModel):
    """Base of every wire model: camelCase aliases, unknown fields kept."""

    model_config = ConfigDict(
        extra="allow",
        alias_generator=to_camel,
        populate_by_name=True,
        serialize_by_alias=True,
    )


class MetaModel(WireModel):
    """A wire object that may carry ``_meta``."""

    meta: dict[str, Any] | None = Field(default=None, alias="_meta")


def dump(model: BaseModel) -> dict[str, Any]:
    """Wire JSON of ``model``: aliases, and no keys for absent optional fields."""
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


# --- content -------------------------------------------------------------


class Annotations(WireModel):
    audience: list[Role] | None = None
    priority: Annotated[float, Field(ge=0, le=1)] | None = None
    last_modified: str | None = None


class TextContent(MetaModel):
    type: Literal["text"] = "text"
    text: str
    annotations: Annotations | None = None


class ImageContent(MetaModel):
    type: Literal["image"] = "image"
    data: str
    mime_type: str
    annotations: Annotations | None = None


class AudioContent(MetaModel):
    type: Literal["audio"] = "audio"
    data: str
    mime_type: str
    annotations: Annotations | None = None


class ResourceLink(MetaModel):
    type: Literal["resource_link"] = "resource_link"
    uri: str
    name: str


class EmbeddedResource(MetaModel):
    type: Literal["resource"] = "resource"
    resource: dict[str, Any]


#: What a tool result may contain.
ContentBlock: TypeAlias = Annotated[
    TextContent | ImageContent | AudioContent | ResourceLink | EmbeddedResource,
    Field(discriminator="type"),
]


class ToolUseContent(MetaModel):
    type: Literal["tool_use"] = "tool_use"
    id: str
    name: str
    input: dict[str, Any]


class ToolResultContent(MetaModel):
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
    role: Role
    content: SamplingContent | list[SamplingContent]

    def blocks(self) -> list[TextContent | ImageContent | AudioContent | ToolUseContent | ToolResultContent]:
        """The content as a list, whether it was sent as one block or many."""
        return list(self.content) if isinstance(self.content, list) else [self.content]


# --- sampling ------------------------------------------------------------


class ModelHint(WireModel):
    name: str | None = None


class ModelPreferences(WireModel):
    hints: list[ModelHint] | None = None
    cost_priority: Annotated[float, Field(ge=0, le=1)] | None = None
    speed_priority: Annotated[float, Field(ge=0, le=1)] | None = None
    intelligence_priority: Annotated[float, Field(ge=0, le=1)] | None = None


class Tool(MetaModel):
    name: str
    title: str | None = None
    description: str | None = None
    input_schema: dict[str, Any]
    output_schema: dict[str, Any] | None = None
    annotations: dict[str, Any] | None = None


class ToolChoice(WireModel):
    mode: Literal["auto", "none", "required"] | None = None


class TaskMetadata(WireModel):
    """The ``task`` member of a task-augmented request."""

    ttl: int | None = None


class RequestParams(MetaModel):
    """Params of a request that may be task-augmented."""

    task: TaskMetadata | None = None

    @property
    def progress_token(self) -> ProgressToken | None:
        """The ``_meta.progressToken`` the requestor sent, if any."""
        if not self.meta:
            return None
        token = self.meta.get("progressToken")
        return token if isinstance(token, str | int) and not isinstance(token, bool) else None


class CreateMessageRequestParams(RequestParams):
    messages: list[SamplingMessage]
    model_preferences: ModelPreferences | None = None
    system_prompt: str | None = None
    include_context: Literal["none", "thisServer", "allServers"] | None = None
    temperature: float | None = None
    max_tokens: int
    stop_sequences: list[str] | None = None
    metadata: dict[str, Any] | None = None
    tools: list[Tool] | None = None
    tool_choice: ToolChoice | None = None


class CreateMessageResult(MetaModel):
    role: Role
    content: SamplingContent | list[SamplingContent]
    model: str
    stop_reason: str | None = None


# --- elicitation -----------------------------------------------------------


class ElicitRequestFormParams(RequestParams):
    mode: Literal["form"] | None = None
    message: str
    requested_schema: dict[str, Any]


class ElicitRequestURLParams(RequestParams):
    mode: Literal["url"]
    message: str
    url: str
    elicitation_id: str


ElicitRequestParams: TypeAlias = ElicitRequestFormParams | ElicitRequestURLParams

#: A value in an accepted form: string, number, boolean or list of strings.
ElicitValue: TypeAlias = str | int | float | bool | list[str]


class ElicitResult(MetaModel):
    action: Literal["accept", "decline", "cancel"]
    content: dict[str, ElicitValue] | None = None


class ElicitationCompleteParams(WireModel):
    elicitation_id: str


# --- tasks -----------------------------------------------------------------

TaskStatusName: TypeAlias = Literal["working", "input_required", "completed", "failed", "cancelled"]


class Task(WireModel):
    task_id: str
    status: TaskStatusName
    status_message: str | None = None
    created_at: str
    last_updated_at: str
    ttl: int | None
    poll_interval: int | None = None


class CreateTaskResult(MetaModel):
    task: Task


class TaskIdParams(MetaModel):
    """Params of ``tasks/get``, ``tasks/result`` and ``tasks/cancel``."""

    task_id: str


class ListTasksParams(MetaModel):
    cursor: str | None = None


class ListTasksResult(MetaModel):
    tasks: list[Task]
    next_cursor: str | None = None


# --- lifecycle -------------------------------------------------------------


class Implementation(WireModel):
    name: str
    version: str
    title: str | None = None


class InitializeResult(MetaModel):
    protocol_version: str
    capabilities: dict[str, Any]
    server_info: Implementation
    instructions: str | None = None


class ProgressParams(MetaModel):
    progress_token: ProgressToken
    progress: float
    total: float | None = None
    message: str | None = None
