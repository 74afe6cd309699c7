"""LLM providers for host-receiver's sampling: contract, model choice, backends, credentials.

The sampling layer needs three things from here:

* :class:`ProviderRegistry` (built by :func:`build_registry` from the config
  file, ``--provider/--model`` and the environment): ``choose`` a model for a
  request, ``sample`` it;
* :func:`check_request`: the model-capability and bound checks, raising
  :class:`UnsupportedRequest`;
* :class:`ProviderError` and its subclasses, whose messages are safe to show.

Backends: :class:`OpenAIProvider` (any OpenAI-compatible API, on the official
``openai`` client) and :class:`EchoProvider` (offline, deterministic). Anything
implementing :class:`Provider` can join a registry. Providers know nothing of
tasks or sessions.
"""

# The contract comes first and imports nothing from host_receiver at run time:
# host_receiver's package imports its sampling handlers, which import these
# names from here, so they must exist before anything below imports
# host_receiver.protocol.
from ._contract import (
    PROGRESS_TEXT_LIMIT,
    ModelInfo,
    ProgressSink,
    Provider,
    SamplingProgress,
)
from ._errors import ConfigError, NoSuitableModel, ProviderError, UnsupportedRequest

# isort: split
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
from ._credentials import KEYRING_SERVICE, delete_key, find_key, store_key
from ._echo import ECHO_MODEL, EchoProvider
from ._registry import ProviderRegistry
from ._selection import Requirements, estimate_input_tokens, requirements, select_model
from ._validation import ProviderLimits, check_request

__all__ = [
    "CONFIG_ENV",
    "DEFAULT_BASE_URL",
    "ECHO_MODEL",
    "KEYRING_SERVICE",
    "PROGRESS_TEXT_LIMIT",
    "Config",
    "ConfigError",
    "EchoProvider",
    "ModelInfo",
    "NoSuitableModel",
    "OpenAIProvider",
    "ProgressSink",
    "Provider",
    "ProviderEntry",
    "ProviderError",
    "ProviderLimits",
    "ProviderRegistry",
    "Requirements",
    "SamplingProgress",
    "UnsupportedRequest",
    "build_provider",
    "build_registry",
    "check_request",
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


if TYPE_CHECKING:
    from ._openai import OpenAIProvider


def __getattr__(name: str) -> object:
    # OpenAIProvider loads the openai package (about a second); only import it when asked.
    if name == "OpenAIProvider":
        from ._openai import OpenAIProvider

        return OpenAIProvider
    raise AttributeError(f"module 'providers' has no attribute {name!r}")
