"""What a backend takes from its provider entry that the configuration names too.

The vendors' own URLs (where an entry without a ``base_url`` sends requests)
and the choice of HTTP pool live here, with the backends, so that
:mod:`providers.config` names them without the backends ever importing the
configuration.
"""

from __future__ import annotations

from typing import Literal

__all__ = ["DEFAULT_ANTHROPIC_URL", "DEFAULT_BASE_URL", "DEFAULT_GEMINI_URL", "HttpTransport"]

#: Where an OpenAI provider entry without its own base URL sends requests.
DEFAULT_BASE_URL = "https://api.openai.com/v1"
#: Where an Anthropic provider entry without its own base URL sends requests.
DEFAULT_ANTHROPIC_URL = "https://api.anthropic.com"
#: Where a Gemini provider entry without its own base URL sends requests.
DEFAULT_GEMINI_URL = "https://generativelanguage.googleapis.com"
#: The HTTP pool under a backend's SDK: ours (``lean``) where it serves the URL, or httpx's own.
HttpTransport = Literal["lean", "httpx"]
