"""The configured providers as one catalogue, and the model router the sampling layer calls.

Rules:

* The catalogue is every provider's models, providers in registration order,
  each provider's models in its own order (that order breaks selection ties).
* Provider names are unique; a model is served by the provider named in its
  :attr:`ModelInfo.provider`.
* Allow-lists are per server name; the ``"*"`` entry applies to servers that
  have none of their own; without either, every model is allowed.
* :meth:`ProviderRegistry.choose` (the ``ModelRouter`` of
  ``host_receiver.handlers``) picks the model with :func:`select_model`, or
  takes the one the host forces if the server may use it, and checks the
  request for it with :func:`check_request` (raising before anyone is asked
  to approve). The provider it returns runs :func:`check_request` again on the
  params it is finally given (they may have been edited), so ``maxTokens`` is
  always bounded before the backend sees it.
* The registry owns its providers: :meth:`aclose` (or ``async with``) closes them.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from types import TracebackType

from host_receiver.protocol.types import CreateMessageRequestParams, CreateMessageResult

from ._contract import ModelInfo, ProgressSink, Provider
from ._errors import NoSuitableModel
from ._selection import requirements, select_model
from ._validation import ProviderLimits, check_request

__all__ = ["ProviderRegistry"]


class ProviderRegistry:
    """The providers a host has configured, with its aliases, allow-lists and limits."""

    def __init__(
        self,
        providers: Sequence[Provider],
        *,
        aliases: Mapping[str, str] | None = None,
        allowed: Mapping[str, Collection[str]] | None = None,
        limits: ProviderLimits | None = None,
    ) -> None:
        names = [p.name for p in providers]
        if len(set(names)) != len(names):
            raise ValueError(f"provider names must be unique: {names}")
        self.limits = limits or ProviderLimits()
        self.aliases: Mapping[str, str] = dict(aliases or {})
        self._allowed = {k: frozenset(v) for k, v in (allowed or {}).items()}
        self._providers = {p.name: p for p in providers}
        self._guarded = {p.name: _Checked(p, self.limits) for p in providers}
        self._catalogue = tuple(m for p in providers for m in p.models())

    @property
    def providers(self) -> Sequence[Provider]:
        return tuple(self._providers.values())

    def catalogue(self) -> Sequence[ModelInfo]:
        """Every model of every provider, in preference order."""
        return self._catalogue

    def provider_for(self, model: ModelInfo) -> Provider:
        """The provider that serves ``model``, checking each request before sampling."""
        try:
            return self._guarded[model.provider]
        except KeyError:
            raise NoSuitableModel(f"no provider named {model.provider!r} is configured") from None

    def allowed_for(self, server: str | None) -> frozenset[str] | None:
        """The allow-list for ``server``; ``None`` means no restriction."""
        if server is not None and server in self._allowed:
            return self._allowed[server]
        return self._allowed.get("*")

    def allowed_models(self, server: str | None) -> Sequence[str]:
        """The catalogue model ids ``server`` may use, in catalogue order."""
        allowed = self.allowed_for(server)
        ids = [m.id for m in self._catalogue if allowed is None or "*" in allowed or m.id in allowed]
        return tuple(dict.fromkeys(ids))

    def choose(
        self,
        params: CreateMessageRequestParams,
        server: str | None = None,
        model: str | None = None,
    ) -> tuple[Provider, ModelInfo]:
        """The provider and model for ``params`` from ``server``.

        ``model`` forces a model id (the host's or the person's choice); it
        must be one ``server`` may use. Raises :class:`NoSuitableModel` or
        :class:`UnsupportedRequest`.
        """
        allowed = self.allowed_for(server)
        needs = requirements(params)
        if model is None:
            chosen = select_model(
                self._catalogue,
                params.model_preferences,
                aliases=self.aliases,
                allowed=allowed,
                needs=needs,
            )
        else:
            candidates = [m for m in self._catalogue if m.id == model]
            if not candidates:
                raise NoSuitableModel(f"model {model!r} is not configured")
            if model not in self.allowed_models(server):
                raise NoSuitableModel(f"model {model!r} is not allowed for this server")
            chosen = candidates[0]
        check_request(params, chosen, self.limits, needs)
        return self.provider_for(chosen), chosen

    async def sample(
        self,
        params: CreateMessageRequestParams,
        *,
        server: str | None = None,
        model: str | None = None,
        progress: ProgressSink | None = None,
    ) -> CreateMessageResult:
        """Choose, check and sample in one call."""
        provider, chosen = self.choose(params, server, model)
        return await provider.sample(params, chosen, progress)

    async def aclose(self) -> None:
        """Close every provider."""
        for provider in self._providers.values():
            await provider.aclose()

    async def __aenter__(self) -> ProviderRegistry:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        return f"ProviderRegistry(models={[m.id for m in self._catalogue]!r})"


class _Checked:
    """A provider that runs :func:`check_request` on every request first."""

    def __init__(self, inner: Provider, limits: ProviderLimits) -> None:
        self.inner = inner
        self.limits = limits

    @property
    def name(self) -> str:
        return self.inner.name

    def models(self) -> Sequence[ModelInfo]:
        return self.inner.models()

    async def sample(
        self,
        params: CreateMessageRequestParams,
        model: ModelInfo,
        progress: ProgressSink | None = None,
    ) -> CreateMessageResult:
        return await self.inner.sample(check_request(params, model, self.limits), model, progress)

    async def aclose(self) -> None:
        """The registry closes the real provider."""

    def __repr__(self) -> str:
        return repr(self.inner)
