"""host-receiver inside ``fastmcp.Client`` 4.x: its sampling and elicitation handlers.

Imports ``fastmcp`` (and mcp 2.x underneath) at once: only
:func:`host_receiver.adapters.fastmcp.client_options` imports this module, when
called. Rules:

- ``fastmcp.Client`` wraps its handlers into mcp 2.x session callbacks, so the
  handlers here hand their ``(params, context)`` to the mcp2 adapter's
  callbacks (:mod:`._mcp2`): the same pipeline, requestor scopes, capabilities
  and era rules. The handlers also answer what the tasks extension
  (``fastmcp_tasks``, when imported) asks inside a task: fastmcp hands that
  input to the same elicitation callback.
- A form's answer is fastmcp's own ``ElicitResult``, which every fastmcp 4.x
  sends as it is: fastmcp before 4.1 takes any other object, mcp's
  ``ElicitResult`` included, for the accepted content and wraps it again.
- Refusals keep their code for sampling (fastmcp passes an ``ErrorData``
  through). An elicitation handler cannot return an error in fastmcp: a
  refused elicitation is raised as the ``RpcError``, which fastmcp answers as
  -32603 with the receiver's message (inside a task, a ``ToolError``).
"""

from __future__ import annotations

from typing import Any

import fastmcp
import mcp_types as types
from fastmcp.client.elicitation import ElicitResult

from host_receiver.adapters._mcp2 import Callbacks
from host_receiver.errors import RpcError
from host_receiver.receiver import Receiver

__all__ = ["client_options", "toolset_options"]


def client_options(receiver: Receiver, server: str) -> dict[str, Any]:
    """The ``fastmcp.Client`` keyword arguments serving ``server`` through ``receiver`` (rules above)."""
    callbacks = Callbacks(receiver, server)
    options: dict[str, Any] = {}
    if callbacks.sampling_capability is not None:

        async def sampling_handler(
            messages: list[types.SamplingMessage], params: types.CreateMessageRequestParams, context: Any
        ) -> types.CreateMessageResult | types.CreateMessageResultWithTools | types.ErrorData:
            return await callbacks.sampling(context, params)

        options["sampling_handler"] = sampling_handler
        options["sampling_capabilities"] = callbacks.sampling_capability
    if callbacks.elicits:

        async def elicitation_handler(
            message: str, response_type: Any, params: types.ElicitRequestParams, context: Any
        ) -> ElicitResult[dict[str, Any]]:
            result = await callbacks.elicitation(context, params)
            if isinstance(result, types.ErrorData):
                raise RpcError(result.code, result.message, result.data)
            return ElicitResult[dict[str, Any]].model_validate(result.model_dump(by_alias=True))

        options["elicitation_handler"] = elicitation_handler
    # roots/list: fastmcp takes its own roots= list or handler, reshaped; the receiver's roots
    # are not offered through it yet (docs/adapters.md, "Not covered").
    return options


def toolset_options(target: Any, receiver: Receiver, server: str) -> dict[str, Any]:
    """pydantic-ai ``MCPToolset`` keyword arguments: ``client``, a ``fastmcp.Client`` of ``target``
    built with :func:`client_options`. ``MCPToolset`` takes the two handlers but not
    ``sampling_capabilities``, so a client it built would declare ``sampling: {}`` without the
    receiver's ``tools``; a client built here declares the receiver's capabilities."""
    return {"client": fastmcp.Client(target, **client_options(receiver, server))}
