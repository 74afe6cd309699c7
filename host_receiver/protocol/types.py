"""Pydantic models for the part of the MCP schema this project speaks (both eras): their one door.

The sampling vocabulary (content blocks, messages, :class:`SamplingRequest`,
:class:`CreateMessageResult`) is also the provider contract that ``providers``
speaks; it is defined in :mod:`host_receiver.protocol._sampling` on the wire
base of :mod:`host_receiver.protocol._wire`, and public here, so this module
names every wire type. Field names are snake_case in Python and camelCase on
the wire (``_meta`` is ``meta``). Every model keeps unknown fields
(``extra="allow"``), so that what a peer sends that the schema allows, such as
``_meta`` keys or ``metadata`` entries, survives a round trip. Use
:func:`dump` to turn a model into wire JSON.
"""

from __future__ import annotations

from typing import Any, Literal, TypeAlias

from pydantic import Field

from host_receiver.protocol._sampling import (
    Annotations,
    AudioContent,
    ContentBlock,
    CreateMessageResult,
    EmbeddedResource,
    ImageContent,
    ModelHint,
    ModelPreferences,
    ResourceLink,
    Role,
    SamplingContent,
    SamplingMessage,
    SamplingRequest,
    TextContent,
    Tool,
    ToolChoice,
    ToolResultContent,
    ToolUseContent,
)
from host_receiver.protocol._wire import MetaModel, RequestMeta, WireInt, WireModel, dump

__all__ = [
    "RELATED_TASK_META_KEY",
    "Annotations",
    "AudioContent",
    "ContentBlock",
    "CreateMessageRequestParams",
    "CreateMessageResult",
    "CreateTaskResult",
    "ElicitRequestFormParams",
    "ElicitRequestParams",
    "ElicitRequestURLParams",
    "ElicitResult",
    "ElicitValue",
    "ElicitationCompleteParams",
    "EmbeddedResource",
    "ImageContent",
    "Implementation",
    "InitializeResult",
    "ListTasksParams",
    "ListTasksResult",
    "MetaModel",
    "ModelHint",
    "ModelPreferences",
    "ProgressParams",
    "ProgressToken",
    "RequestId",
    "RequestMeta",
    "RequestParams",
    "ResourceLink",
    "Role",
    "Root",
    "SamplingContent",
    "SamplingMessage",
    "SamplingRequest",
    "Task",
    "TaskIdParams",
    "TaskMetadata",
    "TaskStatusName",
    "TextContent",
    "Tool",
    "ToolChoice",
    "ToolResultContent",
    "ToolUseContent",
    "WireInt",
    "WireModel",
    "dump",
]

#: The ``_meta`` key that ties a message to a task.
RELATED_TASK_META_KEY = "io.modelcontextprotocol/related-task"

ProgressToken: TypeAlias = str | int
RequestId: TypeAlias = str | int


# --- requests that may be task-augmented ----------------------------------------


class TaskMetadata(WireModel):
    """The ``task`` member of a task-augmented request."""

    ttl: WireInt | None = None


class RequestParams(MetaModel):
    """Params of a request that may be task-augmented."""

    meta: RequestMeta | None = Field(default=None, alias="_meta")
    task: TaskMetadata | None = None

    @property
    def progress_token(self) -> ProgressToken | None:
        """The ``_meta.progressToken`` the requestor sent, if any."""
        if not self.meta:
            return None
        token = self.meta.get("progressToken")
        return token if isinstance(token, str | int) and not isinstance(token, bool) else None


class CreateMessageRequestParams(RequestParams, SamplingRequest):
    """``sampling/createMessage`` params: the provider's :class:`SamplingRequest`, maybe task-augmented."""


# --- elicitation -----------------------------------------------------------


class ElicitRequestFormParams(RequestParams):
    """``elicitation/create`` params in form mode: a message and a flat schema."""

    mode: Literal["form"] | None = None
    message: str
    requested_schema: dict[str, Any]


class ElicitRequestURLParams(RequestParams):
    """``elicitation/create`` params in URL mode: a message and a URL to open.

    ``elicitationId`` is required in 2025-11-25 (the receiver checks) and gone
    in 2026-07-28, where no completion notification exists.
    """

    mode: Literal["url"]
    message: str
    url: str
    elicitation_id: str | None = None


ElicitRequestParams: TypeAlias = ElicitRequestFormParams | ElicitRequestURLParams

#: A value in an accepted form: string, number, boolean or list of strings.
ElicitValue: TypeAlias = str | int | float | bool | list[str]


class ElicitResult(MetaModel):
    """The user's answer: accept (with ``content``), decline or cancel."""

    action: Literal["accept", "decline", "cancel"]
    content: dict[str, ElicitValue] | None = None


class Root(WireModel):
    """A root the client offers: a ``file://`` URI and an optional name."""

    uri: str
    name: str | None = None


class ElicitationCompleteParams(WireModel):
    """Params of ``notifications/elicitation/complete``."""

    elicitation_id: str


# --- tasks -----------------------------------------------------------------

TaskStatusName: TypeAlias = Literal["working", "input_required", "completed", "failed", "cancelled"]


class Task(WireModel):
    """The ``Task`` object of the tasks chapter, as the wire carries it."""

    task_id: str
    status: TaskStatusName
    status_message: str | None = None
    created_at: str
    last_updated_at: str
    ttl: WireInt | None
    poll_interval: WireInt | None = None


class CreateTaskResult(MetaModel):
    """The answer to a task-augmented request: the task just created."""

    task: Task


class TaskIdParams(MetaModel):
    """Params of ``tasks/get``, ``tasks/result`` and ``tasks/cancel``."""

    meta: RequestMeta | None = Field(default=None, alias="_meta")
    task_id: str


class ListTasksParams(MetaModel):
    """Params of ``tasks/list``."""

    meta: RequestMeta | None = Field(default=None, alias="_meta")
    cursor: str | None = None


class ListTasksResult(MetaModel):
    """One page of ``tasks/list``."""

    tasks: list[Task]
    next_cursor: str | None = None


# --- lifecycle -------------------------------------------------------------


class Implementation(WireModel):
    """A name and version: ``clientInfo`` and ``serverInfo``."""

    name: str
    version: str
    title: str | None = None


class InitializeResult(MetaModel):
    """The server's answer to ``initialize``."""

    protocol_version: str
    capabilities: dict[str, Any]
    server_info: Implementation
    instructions: str | None = None


class ProgressParams(MetaModel):
    """Params of ``notifications/progress``."""

    progress_token: ProgressToken
    progress: float
    total: float | None = None
    message: str | None = None
