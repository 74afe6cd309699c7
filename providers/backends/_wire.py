"""What the OpenAI, Anthropic and Gemini wire formats share (pure functions, no I/O).

Each backend's wire module builds on this one; none imports another's.

* :class:`ToolCallBuffer`: a tool call of a reply, assembled from streamed
  fragments or given whole (chat completions and the Messages API alike send
  its arguments as JSON text).
* :func:`link_text`: a resource link inside a tool result, as the text every
  backend's API is sent.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from host_receiver.errors import ProviderError
from host_receiver.protocol.types import ResourceLink, ToolUseContent

__all__ = ["Json", "ToolCallBuffer", "link_text"]

#: A JSON object as the wire modules build and read it.
Json = dict[str, Any]


def link_text(block: ResourceLink) -> str:
    """The text a resource link in a tool result is sent as."""
    return f"[resource {block.name}: {block.uri}]"


@dataclass
class ToolCallBuffer:
    """A tool call being assembled from streamed fragments (or given whole)."""

    id: str = ""
    name: str = ""
    arguments: str = ""

    def to_content(self, position: int) -> ToolUseContent:
        """The ``tool_use`` block; invalid JSON arguments are a provider failure.

        A backend that sends no call id gets ``call_<position>``, so that the
        server can still pair its ``tool_result``.
        """
        text = self.arguments.strip() or "{}"
        try:
            arguments = json.loads(text)
        except ValueError:
            arguments = None
        if not isinstance(arguments, dict):
            raise ProviderError(
                f"the model called tool {self.name!r} with arguments that are not a JSON object"
            )
        return ToolUseContent(id=self.id or f"call_{position}", name=self.name, input=arguments)
