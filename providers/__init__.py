"""LLM providers for host-receiver's sampling: contract, model choice, limits, backends, credentials.

This package is the bottom layer: it imports nothing of ``host_receiver``,
which builds on it. What the sampling layer uses from here:

* the contract: the sampling vocabulary (:class:`SamplingRequest`,
  :class:`CreateMessageResult`, content blocks), :class:`Provider`,
  :class:`ModelInfo`, progress, and :class:`ProviderError` and its subclasses,
  whose messages are safe to show;
* :class:`ProviderRegistry` (built by :func:`build_registry` from the config
  file, ``--provider/--model`` and the environment): ``plan`` a request (choose
  its model, bound it by the one :class:`SamplingLimits`), then sample the
  :class:`SamplingPlan`.

Backends: :class:`OpenAIProvider` (any OpenAI-compatible API, on the official
``openai`` client) and :class:`EchoProvider` (offline, deterministic). Anything
implementing :class:`Provider` can join a registry. Providers know nothing of
tasks or sessions.

Text that came from a server or a backend is shown to people and logs only
through :func:`safe_text` (controls and bidi escaped, long values cut), and
every logger of both packages is a :func:`safe_logger`.
"""

from typing import TYPE_CHECKING

from ._build import build_provider, build_registry
from ._config import (
    CONFIG_ENV,
    DEFAULT_BASE_URL,
    Config,
    ProviderEntry,
    config_path,
    load_config,
    save_config,
)
from ._contract import (
    PROGRESS_TEXT_LIMIT,
    ModelInfo,
    ProgressSink,
    Provider,
    SamplingProgress,
)
from ._credentials import KEYRING_SERVICE, delete_key, find_key, store_key
from ._echo import ECHO_MODEL, EchoProvider
from ._errors import ConfigError, HostReceiverError, NoSuitableModel, ProviderError, UnsupportedRequest
from ._limits import (
    LimitExceeded,
    MaxTokensPolicy,
    ProviderLimits,
    SamplingLimits,
    bound_request,
    check_request,
)
from ._messages import (
    Annotations,
    AudioContent,
    ContentBlock,
    CreateMessageResult,
    EmbeddedResource,
    ImageContent,
    MetaModel,
    ModelHint,
    ModelPreferences,
    RequestMeta,
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
    WireInt,
    WireModel,
    dump,
)
from ._paths import user_config_dir
from ._plan import ReplyTooLong, SamplingPlan
from ._redact import safe_url
from ._registry import ProviderRegistry
from ._sanitize import SafeRecords, bounded, safe_id, safe_logger, safe_text
from ._selection import Requirements, estimate_input_tokens, requirements, select_model

__all__ = [
    "CONFIG_ENV",
    "DEFAULT_BASE_URL",
    "ECHO_MODEL",
    "KEYRING_SERVICE",
    "PROGRESS_TEXT_LIMIT",
    "Annotations",
    "AudioContent",
    "Config",
    "ConfigError",
    "ContentBlock",
    "CreateMessageResult",
    "EchoProvider",
    "EmbeddedResource",
    "HostReceiverError",
    "ImageContent",
    "LimitExceeded",
    "MaxTokensPolicy",
    "MetaModel",
    "ModelHint",
    "ModelInfo",
    "ModelPreferences",
    "NoSuitableModel",
    "OpenAIProvider",
    "ProgressSink",
    "Provider",
    "ProviderEntry",
    "ProviderError",
    "ProviderLimits",
    "ProviderRegistry",
    "ReplyTooLong",
    "RequestMeta",
    "Requirements",
    "ResourceLink",
    "Role",
    "SafeRecords",
    "SamplingContent",
    "SamplingLimits",
    "SamplingMessage",
    "SamplingPlan",
    "SamplingProgress",
    "SamplingRequest",
    "TextContent",
    "Tool",
    "ToolChoice",
    "ToolResultContent",
    "ToolUseContent",
    "UnsupportedRequest",
    "WireInt",
    "WireModel",
    "bound_request",
    "bounded",
    "build_provider",
    "build_registry",
    "check_request",
    "config_path",
    "delete_key",
    "dump",
    "estimate_input_tokens",
    "find_key",
    "load_config",
    "requirements",
    "safe_id",
    "safe_logger",
    "safe_text",
    "safe_url",
    "save_config",
    "select_model",
    "store_key",
    "user_config_dir",
]


if TYPE_CHECKING:
    from ._openai import OpenAIProvider


def __getattr__(name: str) -> object:
    # OpenAIProvider loads the openai package (about a second); only import it when asked.
    if name == "OpenAIProvider":
        from ._openai import OpenAIProvider

        return OpenAIProvider
    raise AttributeError(f"module 'providers' has no attribute {name!r}")
