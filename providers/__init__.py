"""LLM providers for host-receiver's sampling: contract, model choice, limits, backends, credentials.

This package is the LLM side. It builds on host-receiver's base alone (the
MCP sampling vocabulary in :mod:`host_receiver.protocol.types`, the
exceptions in :mod:`host_receiver.errors`, the sanitiser in
:mod:`host_receiver.sanitize`, :mod:`host_receiver.paths`) and loads nothing
of the MCP side (connections, sessions, transports, the receiver), which
builds on it. What the sampling layer uses from here:

* the contract: :class:`Provider`, :class:`ModelInfo` and progress; a
  provider reads a ``SamplingRequest`` and answers a ``CreateMessageResult``
  (:mod:`host_receiver.protocol.types`) and fails with a ``ProviderError``
  (:mod:`host_receiver.errors`), whose message is safe to show;
* :class:`ProviderRegistry` (built by :func:`build_registry` from the config
  file, ``--provider/--model`` and the environment): ``plan`` a request (choose
  its model, bound it by the one :class:`SamplingLimits`), then sample the
  :class:`SamplingPlan`.

Backends: :class:`OpenAIProvider` (any OpenAI-compatible API, on the official
``openai`` client), :class:`AnthropicProvider` (the Anthropic Messages API, on
the official ``anthropic`` package, extra ``[anthropic]``), :class:`GeminiProvider`
(the Gemini API, on the official ``google-genai`` package, extra ``[gemini]``) and
:class:`EchoProvider` (offline, deterministic). Anything
implementing :class:`Provider` can join a registry. Providers know nothing of
tasks or sessions.

Layout, one direction of imports (tests/project/test_structure.py checks it):

* this room holds the contract and the plan: ``_contract`` (the protocols,
  :class:`ModelInfo`, progress; it imports nothing of the package),
  ``_selection`` (model choice), ``_limits`` (the bounds, and
  :class:`TakesLimits`), ``_plan`` (one bounded call) and ``_registry`` (the
  providers of a run). They import one another in that order, and nothing of
  the rooms below;
* :mod:`providers.backends`: the backends and their wire formats, on the
  contract;
* :mod:`providers.config`: the config file, API keys and building the
  registry, on the contract and the backends (a vendor's backend imported
  only when one is built);
* at the top, importing any of them: this module (the public names) and the
  ``providers`` command (:mod:`providers.cli`, with ``_try``).
"""

from typing import TYPE_CHECKING

from host_receiver._moved import moved_names

from ._contract import (
    PROGRESS_TEXT_LIMIT,
    LeavesOut,
    ModelInfo,
    ProgressSink,
    Provider,
    SamplingProgress,
)
from ._limits import (
    MaxTokensPolicy,
    SamplingLimits,
    TakesLimits,
    bound_request,
    check_request,
)
from ._limits import (
    ProviderLimits as ProviderLimits,  # a deprecated alias of SamplingLimits, not a door of its own
)
from ._plan import SamplingPlan
from ._registry import ProviderRegistry
from ._selection import Requirements, choose_model, estimate_input_tokens, requirements, select_model
from .backends._echo import ECHO_MODEL, EchoProvider
from .config._build import build_provider, build_registry
from .config._config import (
    CONFIG_ENV,
    DEFAULT_ANTHROPIC_URL,
    DEFAULT_BASE_URL,
    DEFAULT_GEMINI_URL,
    PROVIDER_TYPES,
    Config,
    ProviderEntry,
    config_path,
    load_config,
    save_config,
)
from .config._credentials import KEYRING_SERVICE, delete_key, find_key, store_key

__all__ = [
    "CONFIG_ENV",
    "DEFAULT_ANTHROPIC_URL",
    "DEFAULT_BASE_URL",
    "DEFAULT_GEMINI_URL",
    "ECHO_MODEL",
    "KEYRING_SERVICE",
    "PROGRESS_TEXT_LIMIT",
    "PROVIDER_TYPES",
    "AnthropicProvider",
    "Config",
    "EchoProvider",
    "GeminiProvider",
    "LeavesOut",
    "MaxTokensPolicy",
    "ModelInfo",
    "OpenAIProvider",
    "ProgressSink",
    "Provider",
    "ProviderEntry",
    "ProviderRegistry",
    "Requirements",
    "SamplingLimits",
    "SamplingPlan",
    "SamplingProgress",
    "TakesLimits",
    "bound_request",
    "build_provider",
    "build_registry",
    "check_request",
    "choose_model",
    "config_path",
    "delete_key",
    "estimate_input_tokens",
    "find_key",
    "load_config",
    "requirements",
    "save_config",
    "select_model",
    "store_key",
]

#: Names that were here in 0.2, and their one door now (served with a DeprecationWarning until 0.4).
_MOVED = {
    "ConfigError": "host_receiver.errors",
    "HostReceiverError": "host_receiver.errors",
    "LimitExceeded": "host_receiver.errors",
    "NoSuitableModel": "host_receiver.errors",
    "ProviderError": "host_receiver.errors",
    "ReplyTooLong": "host_receiver.errors",
    "UnsupportedRequest": "host_receiver.errors",
    "Annotations": "host_receiver.protocol.types",
    "AudioContent": "host_receiver.protocol.types",
    "ContentBlock": "host_receiver.protocol.types",
    "CreateMessageResult": "host_receiver.protocol.types",
    "EmbeddedResource": "host_receiver.protocol.types",
    "ImageContent": "host_receiver.protocol.types",
    "MetaModel": "host_receiver.protocol.types",
    "ModelHint": "host_receiver.protocol.types",
    "ModelPreferences": "host_receiver.protocol.types",
    "RequestMeta": "host_receiver.protocol.types",
    "ResourceLink": "host_receiver.protocol.types",
    "Role": "host_receiver.protocol.types",
    "SamplingContent": "host_receiver.protocol.types",
    "SamplingMessage": "host_receiver.protocol.types",
    "SamplingRequest": "host_receiver.protocol.types",
    "TextContent": "host_receiver.protocol.types",
    "Tool": "host_receiver.protocol.types",
    "ToolChoice": "host_receiver.protocol.types",
    "ToolResultContent": "host_receiver.protocol.types",
    "ToolUseContent": "host_receiver.protocol.types",
    "WireInt": "host_receiver.protocol.types",
    "WireModel": "host_receiver.protocol.types",
    "dump": "host_receiver.protocol.types",
    "SafeRecords": "host_receiver.sanitize",
    "bounded": "host_receiver.sanitize",
    "safe_id": "host_receiver.sanitize",
    "safe_logger": "host_receiver.sanitize",
    "safe_text": "host_receiver.sanitize",
    "safe_url": "host_receiver.sanitize",
    "user_config_dir": "host_receiver.paths",
}
_moved = moved_names(__name__, _MOVED)


if TYPE_CHECKING:
    from .backends._anthropic import AnthropicProvider
    from .backends._gemini import GeminiProvider
    from .backends._openai import OpenAIProvider
else:  # a type checker sees the import above, and flags a moved name

    def __getattr__(name: str) -> object:
        # Each backend loads its vendor's package (about a second); only import it when asked.
        if name == "OpenAIProvider":
            from .backends._openai import OpenAIProvider

            return OpenAIProvider
        if name == "AnthropicProvider":
            from .backends._anthropic import AnthropicProvider

            return AnthropicProvider
        if name == "GeminiProvider":
            from .backends._gemini import GeminiProvider

            return GeminiProvider
        return _moved(name)
