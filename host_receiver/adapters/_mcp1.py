"""host-receiver inside mcp 1.x's ``ClientSession``: its callbacks and experimental task handlers.

Imports ``mcp`` (1.x) at once: only :func:`host_receiver.adapters.mcp1.session_options`
imports this module, when called. Rules:

- Capabilities: ``ClientSession`` declares what it is given callbacks for, so
  the options hold exactly what ``receiver.capabilities(version)`` lists:
  ``sampling_callback`` (with ``sampling_capabilities`` when sampling has
  ``tools``), ``elicitation_callback``, and ``experimental_task_handlers`` with
  the task-augmented handlers, ``tasks/list`` and ``tasks/cancel`` as listed
  (``tasks/get`` and ``tasks/result`` whenever any task capability is).
- Version: ``ClientSession`` keeps no negotiated version; requests are served
  under the one it offers (``mcp.types.LATEST_PROTOCOL_VERSION``: 2025-11-25
  from mcp 1.24 on, 2025-06-18 in 1.23, which has no client-hosted tasks).
- Every request: the SDK's params model as wire JSON, through
  ``Requestor.handle_request``; the result validated into the SDK's model for
  that method (a task-augmented request's ``CreateTaskResult`` included); an
  error as the SDK's ``ErrorData``, which it sends as the JSON-RPC error (a
  refused sampling is -1). A result the SDK's models reject is logged and
  answered -32603.
- ``ClientSession`` runs every incoming request inline in its receive loop:
  task-augmented requests and ``tasks/get|list|cancel`` answer at once; a
  plain request and ``tasks/result`` of a live task hold the loop until they
  are answered (docs/adapters.md).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeAlias, TypeVar

import mcp.types as types
from mcp.client.experimental.task_handlers import ExperimentalTaskHandlers
from mcp.client.session import ClientSession
from mcp.shared.context import RequestContext
from pydantic import BaseModel, ValidationError

from host_receiver.adapters._bridge import SessionScopes, answer, sends_with, served_version
from host_receiver.errors import RpcError
from host_receiver.protocol.types import dump
from host_receiver.receiver import Receiver
from host_receiver.sanitize import safe_logger

__all__ = ["callback_options", "session_options"]

logger = safe_logger("host_receiver.adapters")

Context: TypeAlias = "RequestContext[ClientSession, Any]"
#: What a sampling callback answers.
Sampled: TypeAlias = "types.CreateMessageResult | types.CreateMessageResultWithTools | types.ErrorData"
_M = TypeVar("_M")

SAMPLING = "sampling/createMessage"
ELICITATION = "elicitation/create"
ROOTS = "roots/list"
#: The version every request is served under (rules above).
VERSION = served_version(types.LATEST_PROTOCOL_VERSION)


def session_options(receiver: Receiver, server: str) -> dict[str, Any]:
    """The ``ClientSession`` keyword arguments serving ``server`` through ``receiver`` (rules above)."""
    adapter = _Mcp1(receiver, server)
    caps = receiver.capabilities(VERSION)
    options: dict[str, Any] = {}
    if "sampling" in caps:
        options["sampling_callback"] = adapter.sampling
        if caps["sampling"]:  # sampling.tools: only versions that have it, so only mcp >= 1.24
            options["sampling_capabilities"] = types.SamplingCapability.model_validate(caps["sampling"])
    if "elicitation" in caps:
        options["elicitation_callback"] = adapter.elicitation
    if "roots" in caps:
        options["list_roots_callback"] = adapter.list_roots
    tasks = caps.get("tasks")
    if tasks:
        requests = tasks.get("requests", {})
        handlers: dict[str, Any] = {"get_task": adapter.get_task, "get_task_result": adapter.get_task_result}
        if "list" in tasks:
            handlers["list_tasks"] = adapter.list_tasks
        if "cancel" in tasks:
            handlers["cancel_task"] = adapter.cancel_task
        if "sampling" in requests:
            handlers["augmented_sampling"] = adapter.augmented_sampling
        if "elicitation" in requests:
            handlers["augmented_elicitation"] = adapter.augmented_elicitation
        options["experimental_task_handlers"] = ExperimentalTaskHandlers(**handlers)
    return options


def callback_options(receiver: Receiver, server: str) -> dict[str, Any]:
    """Only the sampling and elicitation callbacks of :func:`session_options`, for a client that
    builds the ``ClientSession`` itself and takes no task handlers or roots callback (Google ADK's
    ``McpToolset``): the session then declares no tasks and no roots."""
    options = session_options(receiver, server)
    keep = ("sampling_callback", "sampling_capabilities", "elicitation_callback")
    return {key: value for key, value in options.items() if key in keep}


class _Mcp1:
    """The callbacks of every session built from one ``session_options`` call."""

    def __init__(self, receiver: Receiver, server: str) -> None:
        self.scopes = SessionScopes(
            receiver,
            server,
            version_of=lambda _: VERSION,
            send_of=sends_with(types.ClientNotification.model_validate),
        )

    async def serve(
        self, context: Context, method: str, params: BaseModel | None, result: Callable[[dict[str, Any]], _M]
    ) -> _M | types.ErrorData:
        """Serve one request of ``context.session``; its result as ``result`` makes it, or ErrorData."""
        requestor = await self.scopes.requestor(context.session)
        outcome = await answer(requestor, method, None if params is None else dump(params))
        if isinstance(outcome, RpcError):
            return types.ErrorData(code=outcome.code, message=outcome.message, data=outcome.data)
        try:
            return result(outcome)
        except ValidationError as exc:
            logger.error("the %s result for %s does not fit mcp's model: %s", method, self.scopes.server, exc)
            return types.ErrorData(code=types.INTERNAL_ERROR, message="Internal error")

    # --- the callbacks -----------------------------------------------------------------

    async def sampling(self, context: Context, params: types.CreateMessageRequestParams) -> Sampled:
        return await self.serve(context, SAMPLING, params, _sampling_result)

    async def elicitation(
        self, context: Context, params: types.ElicitRequestParams
    ) -> types.ElicitResult | types.ErrorData:
        return await self.serve(context, ELICITATION, params, types.ElicitResult.model_validate)

    async def list_roots(self, context: Context) -> types.ListRootsResult | types.ErrorData:
        return await self.serve(context, ROOTS, None, types.ListRootsResult.model_validate)

    async def augmented_sampling(
        self, context: Context, params: types.CreateMessageRequestParams, task: types.TaskMetadata
    ) -> types.CreateTaskResult | Sampled:
        return await self.serve(context, SAMPLING, params, _task_or(_sampling_result))

    async def augmented_elicitation(
        self, context: Context, params: types.ElicitRequestParams, task: types.TaskMetadata
    ) -> types.CreateTaskResult | types.ElicitResult | types.ErrorData:
        return await self.serve(context, ELICITATION, params, _task_or(types.ElicitResult.model_validate))

    async def get_task(
        self, context: Context, params: types.GetTaskRequestParams
    ) -> types.GetTaskResult | types.ErrorData:
        return await self.serve(context, "tasks/get", params, types.GetTaskResult.model_validate)

    async def get_task_result(
        self, context: Context, params: types.GetTaskPayloadRequestParams
    ) -> types.GetTaskPayloadResult | types.ErrorData:
        return await self.serve(context, "tasks/result", params, types.GetTaskPayloadResult.model_validate)

    async def list_tasks(
        self, context: Context, params: types.PaginatedRequestParams | None
    ) -> types.ListTasksResult | types.ErrorData:
        return await self.serve(context, "tasks/list", params, types.ListTasksResult.model_validate)

    async def cancel_task(
        self, context: Context, params: types.CancelTaskRequestParams
    ) -> types.CancelTaskResult | types.ErrorData:
        return await self.serve(context, "tasks/cancel", params, types.CancelTaskResult.model_validate)


def _sampling_result(
    result: dict[str, Any],
) -> types.CreateMessageResult | types.CreateMessageResultWithTools:
    """A sampling result as mcp's model: the single-content one, or the one with tools."""
    try:
        return types.CreateMessageResult.model_validate(result)
    except ValidationError:
        return types.CreateMessageResultWithTools.model_validate(result)


def _task_or(
    plain: Callable[[dict[str, Any]], _M],
) -> Callable[[dict[str, Any]], types.CreateTaskResult | _M]:
    """A task-augmented request's result: a ``CreateTaskResult``, or a plain one if no task was made."""

    def result(outcome: dict[str, Any]) -> types.CreateTaskResult | _M:
        return types.CreateTaskResult.model_validate(outcome) if "task" in outcome else plain(outcome)

    return result
