"""Protocol rules of ``sampling/createMessage`` that hold before any work starts.

These checks run before a task is created, so that a malformed request gets
its error directly instead of becoming a failed task:
- ``tools``/``toolChoice`` only when the host declared ``sampling.tools`` (and
  the negotiated protocol version has tool use, 2025-11-25 and later);
- a user message holding a ``tool_result`` holds nothing else;
- every assistant ``tool_use`` is answered, in the very next message, by a
  user message of ``tool_result`` blocks that match every ``tool_use`` id,
  and no ``tool_result`` answers an id that was not asked;
- ``maxTokens`` is positive and within the host's bound, the message list is
  non-empty and within the host's bound, and tool loops stay within a cap.
"""

from __future__ import annotations

from dataclasses import dataclass

from host_receiver.protocol.errors import RpcError, invalid_params
from host_receiver.protocol.types import (
    CreateMessageRequestParams,
    ToolResultContent,
    ToolUseContent,
)


@dataclass(frozen=True, slots=True)
class SamplingLimits:
    """Bounds a host puts on what a server may ask for in one request.

    Checked before a task is created; over a bound is -32602. The providers'
    own configured caps are ``providers.ProviderLimits``.
    """

    max_tokens: int = 32_768
    max_messages: int = 1_000
    #: Most assistant tool_use turns in one conversation (tool-loop iterations).
    max_tool_rounds: int = 32


def check_request(
    params: CreateMessageRequestParams, *, tools_declared: bool, limits: SamplingLimits
) -> None:
    """Raise -32602 if ``params`` break a sampling rule; return None otherwise."""
    if (params.tools is not None or params.tool_choice is not None) and not tools_declared:
        raise invalid_params(
            "tools and toolChoice need the sampling.tools capability, which this client "
            "did not declare for this connection"
        )
    if params.max_tokens < 1:
        raise invalid_params("maxTokens must be a positive integer")
    if params.max_tokens > limits.max_tokens:
        raise invalid_params(
            f"maxTokens {params.max_tokens} exceeds this host's limit of {limits.max_tokens}"
        )
    if not params.messages:
        raise invalid_params("messages must not be empty")
    if len(params.messages) > limits.max_messages:
        raise invalid_params(
            f"{len(params.messages)} messages exceed this host's limit of {limits.max_messages}"
        )
    _check_tool_turns(params, limits)


_LIST_OR_TOOL_BLOCK = (list, ToolUseContent, ToolResultContent)


def _check_tool_turns(params: CreateMessageRequestParams, limits: SamplingLimits) -> None:
    for message in params.messages:
        if isinstance(message.content, _LIST_OR_TOOL_BLOCK):
            break
    else:
        return  # single non-tool blocks only, the usual request: nothing to pair up
    pending: list[str] = []  # tool_use ids the next message must answer
    rounds = 0
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
        if uses:
            rounds += 1
            if rounds > limits.max_tool_rounds:
                raise invalid_params(
                    f"the conversation has more than {limits.max_tool_rounds} tool rounds, "
                    "this host's tool-loop limit"
                )
        pending = uses
    # A trailing assistant tool_use with no result yet is an unfinished turn: the
    # model cannot continue from it.
    if pending:
        raise invalid_params(f"Tool result missing in request for tool_use id(s) {pending}")


def failure_message(error: RpcError) -> str:
    """The diagnostic ``statusMessage`` of a sampling task that ended in ``error``."""
    return f"Sampling failed ({error.code}): {error.message}"
