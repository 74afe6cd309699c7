"""host-receiver inside mcp 2.x's session: the callbacks of ``mcp.Client`` (and of ``fastmcp.Client``).

Imports ``mcp`` and ``mcp_types`` (2.x) at once: only the public adapter modules
import this one, when their options function is called. Rules:

- One callback per request type, ``(context: ClientRequestContext, params)``,
  serves both eras: a 2026-07-28 input round's entry (``context.request_id``
  is its ``inputRequests`` key) and a request a 2025-11-25 server pushed go
  through ``Requestor.handle_request`` alike.
- Capabilities: mcp 2.x declares what it is given callbacks for, the same set
  on both eras, so the options hold exactly what ``receiver.capabilities``
  lists for the newest version both know (``sampling`` with its ``tools``,
  ``elicitation``, ``roots``; mcp 2.x adds ``listChanged`` to roots itself).
  mcp 2.x has no client-hosted tasks: it declares none, and
  a ``task`` member a legacy server sends anyway is ignored (the tasks
  chapter's rule for a receiver that did not declare them).
- The version of each request is the session's negotiated one.
- Results are validated into mcp_types' models; an error is mcp_types'
  ``ErrorData``: the JSON-RPC error of a pushed request, and on an input round
  the ``MCPError`` mcp 2.x raises in the caller (sending nothing more to the
  server). A result the models reject is logged and answered -32603.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import mcp_types as types
from mcp.client.session import ClientRequestContext, ClientSession
from mcp_types.version import SUPPORTED_PROTOCOL_VERSIONS
from pydantic import ValidationError

from host_receiver.adapters._bridge import SessionScopes, answer, newest_shared, sends_with, without_task
from host_receiver.errors import RpcError
from host_receiver.protocol.types import dump
from host_receiver.protocol.versions import LATEST_LEGACY_VERSION
from host_receiver.receiver import Receiver
from host_receiver.sanitize import safe_logger

__all__ = ["Callbacks", "callback_options", "client_options"]

logger = safe_logger("host_receiver.adapters")

_M = TypeVar("_M")

SAMPLING = "sampling/createMessage"
ELICITATION = "elicitation/create"
ROOTS = "roots/list"
#: The version whose capabilities the session declares (rules above).
VERSION = newest_shared(SUPPORTED_PROTOCOL_VERSIONS)


def client_options(receiver: Receiver, server: str) -> dict[str, Any]:
    """The ``mcp.Client`` keyword arguments serving ``server`` through ``receiver`` (rules above)."""
    callbacks = Callbacks(receiver, server)
    options: dict[str, Any] = {}
    if callbacks.sampling_capability is not None:
        options["sampling_callback"] = callbacks.sampling
        options["sampling_capabilities"] = callbacks.sampling_capability
    if callbacks.elicits:
        options["elicitation_callback"] = callbacks.elicitation
    if callbacks.roots:
        options["list_roots_callback"] = callbacks.list_roots
    return options


def callback_options(receiver: Receiver, server: str) -> dict[str, Any]:
    """Only the sampling and elicitation callbacks of :func:`client_options`, for a client that
    builds the ``ClientSession`` itself and takes no roots callback (Google ADK's ``McpToolset``)."""
    options = client_options(receiver, server)
    return {key: value for key, value in options.items() if key != "list_roots_callback"}


class Callbacks:
    """mcp 2.x session callbacks for every session built from one set of options, and what they serve."""

    def __init__(self, receiver: Receiver, server: str) -> None:
        self.scopes = SessionScopes(
            receiver,
            server,
            version_of=_version,
            send_of=sends_with(types.client_notification_adapter.validate_python),
        )
        caps = receiver.capabilities(VERSION)
        #: The ``sampling`` capability to declare (None: the receiver does not sample).
        self.sampling_capability = (
            types.SamplingCapability.model_validate(caps["sampling"]) if "sampling" in caps else None
        )
        #: Whether the receiver serves elicitation.
        self.elicits = "elicitation" in caps
        #: Whether the receiver offers roots (``roots/list``).
        self.roots = "roots" in caps

    async def sampling(
        self, context: ClientRequestContext, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult | types.CreateMessageResultWithTools | types.ErrorData:
        result = await self.serve(context, SAMPLING, dump(params))
        if isinstance(result, types.ErrorData):
            return result
        return self._valid(SAMPLING, result, _sampling_result)

    async def elicitation(
        self, context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult | types.ErrorData:
        result = await self.serve(context, ELICITATION, dump(params))
        if isinstance(result, types.ErrorData):
            return result
        return self._valid(ELICITATION, result, types.ElicitResult.model_validate)

    async def list_roots(self, context: ClientRequestContext) -> types.ListRootsResult | types.ErrorData:
        result = await self.serve(context, ROOTS, {})
        if isinstance(result, types.ErrorData):
            return result
        return self._valid(ROOTS, result, types.ListRootsResult.model_validate)

    async def serve(
        self, context: ClientRequestContext, method: str, params: dict[str, Any]
    ) -> dict[str, Any] | types.ErrorData:
        """One request of ``context.session`` through its requestor: the result, or ErrorData."""
        requestor = await self.scopes.requestor(context.session)
        outcome = await answer(requestor, method, without_task(params))
        if isinstance(outcome, RpcError):
            return types.ErrorData(code=outcome.code, message=outcome.message, data=outcome.data)
        return outcome

    def _valid(
        self, method: str, result: dict[str, Any], model: Callable[[dict[str, Any]], _M]
    ) -> _M | types.ErrorData:
        try:
            return model(result)
        except ValidationError as exc:
            logger.error("the %s result for %s does not fit mcp's model: %s", method, self.scopes.server, exc)
            return types.ErrorData(code=types.INTERNAL_ERROR, message="Internal error")


def _sampling_result(
    result: dict[str, Any],
) -> types.CreateMessageResult | types.CreateMessageResultWithTools:
    """A sampling result as mcp_types' model: the single-content one, or the one with tools."""
    try:
        return types.CreateMessageResult.model_validate(result)
    except ValidationError:
        return types.CreateMessageResultWithTools.model_validate(result)


def _version(session: ClientSession) -> str:
    return session.protocol_version or LATEST_LEGACY_VERSION
