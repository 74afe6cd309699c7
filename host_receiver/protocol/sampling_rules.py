"""Protocol rules of ``sampling/createMessage`` that hold before any work starts.

These checks run before a task is created, so that a malformed request gets
its error directly instead of becoming a failed task:
- ``tools``/``toolChoice`` only when the host declared ``sampling.tools`` (and
  the protocol version has tool use: ``VersionRules.sampling_tools``);
- ``maxTokens`` is positive and the message list is non-empty;
- a user message holding a ``tool_result`` holds nothing else;
- every assistant ``tool_use`` is answered, in the very next message, by a
  user message of ``tool_result`` blocks that match every ``tool_use`` id,
  and no ``tool_result`` answers an id that was not asked.

How much a request may ask for (tokens, messages, tool rounds) is not a
protocol rule but the host's policy: :class:`SamplingLimits`, applied once by
the model router when it plans the request (``providers.bound_request``); a
request beyond them is -32602 naming the field (:func:`limit_error`).

Removed in 0.3, as 0.2 announced (docs/changelog.md): ``check_request(...,
limits=...)``, 0.1's call, is a ``TypeError`` that says where the limits went.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from host_receiver._moved import moved_names
from host_receiver.errors import LimitExceeded, RpcError, invalid_params
from host_receiver.protocol.types import (
    SamplingRequest,
    ToolResultContent,
    ToolUseContent,
)

__all__ = ["check_request", "failure_message", "limit_error"]

if not TYPE_CHECKING:  # 0.1's import from here, until 0.4 (a type checker flags it)
    __getattr__ = moved_names(__name__, {"SamplingLimits": "providers"})


def check_request(params: SamplingRequest, *, tools_declared: bool, limits: object = None) -> None:
    """Raise -32602 if ``params`` break a sampling rule; return None otherwise.

    ``limits`` was removed in 0.3 (module docstring): giving it is a ``TypeError``.
    """
    if limits is not None:
        raise TypeError(
            "check_request(..., limits=...) was removed in host-receiver 0.3 (docs/changelog.md): "
            "the model router applies the limits when it plans a request: "
            "ProviderRegistry(..., limits=SamplingLimits(...)), or [limits] in the config file"
        )
    if (params.tools is not None or params.tool_choice is not None) and not tools_declared:
        raise invalid_params(
            "tools and toolChoice need the sampling.tools capability, which this client "
            "did not declare for this connection"
        )
    if params.max_tokens < 1:
        raise invalid_params("maxTokens must be a positive integer")
    if not params.messages:
        raise invalid_params("messages must not be empty")
    _check_tool_turns(params)


def limit_error(exc: LimitExceeded) -> RpcError:
    """-32602 for a request beyond the host's limits, naming the field in the message and ``data``."""
    return invalid_params(f"Invalid params: {exc.field}: {exc}", {"field": exc.field})


_LIST_OR_TOOL_BLOCK = (list, ToolUseContent, ToolResultContent)


def _check_tool_turns(params: SamplingRequest) -> None:
    for message in params.messages:
        if isinstance(message.content, _LIST_OR_TOOL_BLOCK):
            break
    else:
        return  # single non-tool blocks only, the usual request: nothing to pair up
    pending: list[str] = []  # tool_use ids the next message must answer
    for position, message in enumerate(params.messages):
        blocks = message.blocks()
        uses = [b.id for b in blocks if isinstance(b, ToolUseContent)]
        results = [b.tool_use_id for b in blocks if isinstance(b, ToolResultContent)]
        where = f"messages[{position}]"
        if results and message.role != "user":
            raise invalid_params(f"{where}: tool_result content belongs in a user message")
        if results and len(results) != len(blocks):
            raise invalid_params(f"{where}: Tool results mixed with other content")
        if uses and message.role != "assistant":
            raise invalid_params(f"{where}: tool_use content belongs in an assistant message")
        if pending:
            missing = [i for i in pending if i not in results]
            if missing:
                raise invalid_params(f"{where}: Tool result missing in request for tool_use id(s) {missing}")
        unexpected = [i for i in results if i not in pending]
        if unexpected:
            raise invalid_params(f"{where}: tool_result for unknown tool_use id(s) {unexpected}")
        pending = uses
    # A trailing assistant tool_use with no result yet is an unfinished turn: the
    # model cannot continue from it.
    if pending:
        raise invalid_params(f"Tool result missing in request for tool_use id(s) {pending}")


def failure_message(error: RpcError) -> str:
    """The diagnostic ``statusMessage`` of a sampling task that ended in ``error``."""
    return f"Sampling failed ({error.code}): {error.message}"
