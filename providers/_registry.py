"""The configured providers as one catalogue, and the model router the sampling layer calls.

Rules:

* The catalogue is every provider's models, providers in registration order,
  each provider's models in its own order (that order breaks selection ties).
* Provider names are unique; a model is served by the provider named in its
  :attr:`ModelInfo.provider`.
* Allow-lists are per server name; the ``"*"`` entry applies to servers that
  have none of their own; without either, every model is allowed.
* :meth:`ProviderRegistry.plan` (the ``ModelRouter`` of
  ``host_receiver.handlers``) picks the model with :func:`choose_model`
  (hints reach every configured provider's models; a vendor's family, such
  as ``claude-*``, reaches the providers whose ``vendor`` it names), or
  takes the one the host forces if the server may use it, and bounds the
  request for it with :func:`bound_request` and the registry's
  :class:`SamplingLimits`: the one check of size, made before anyone is asked
  to approve. The :class:`SamplingPlan` it returns is what gets sampled,
  under the same limits (the call's deadline and reply size cap).
* The registry owns its providers: :meth:`aclose` (or ``async with``) closes them.
* The providers named in ``listing`` (entries of the config file that list no
  models, with a key) get their catalogue from their models API when the
  registry opens (:meth:`ProviderRegistry.open`, or ``async with``), each model
  with neutral ratings (:func:`listed_model`); a listing that fails, or lists
  nothing, is a :class:`ConfigError` naming the provider and what to do.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from types import TracebackType
from typing import cast

from host_receiver.errors import ConfigError, NoSuitableModel, ProviderError
from host_receiver.protocol.types import CreateMessageResult, SamplingRequest

from ._contract import LeavesOut, ListsModels, ModelInfo, ProgressSink, Provider, listed_model
from ._limits import SamplingLimits, bound_request
from ._plan import SamplingPlan
from ._selection import choose_model, requirements

__all__ = ["ProviderRegistry"]


class ProviderRegistry:
    """The providers a host has configured, with its aliases, allow-lists and limits."""

    def __init__(
        self,
        providers: Sequence[Provider],
        *,
        aliases: Mapping[str, str] | None = None,
        allowed: Mapping[str, Collection[str]] | None = None,
        limits: SamplingLimits | None = None,
        listing: Collection[str] = (),
    ) -> None:
        names = [p.name for p in providers]
        if len(set(names)) != len(names):
            raise ValueError(f"provider names must be unique: {names}")
        if not set(listing) <= set(names):
            raise ValueError(f"no provider named {sorted(set(listing) - set(names))} to list the models of")
        self._listing: dict[str, ListsModels] = {}
        for provider in providers:
            if provider.name in listing:
                if not isinstance(provider, ListsModels):
                    raise ValueError(f"provider {provider.name!r} cannot list its models")
                self._listing[provider.name] = provider
        self.limits = limits or SamplingLimits()
        self.aliases: Mapping[str, str] = dict(aliases or {})
        self._allowed = {k: frozenset(v) for k, v in (allowed or {}).items()}
        self._providers = {p.name: p for p in providers}
        self._vendors = {p.name: str(getattr(p, "vendor", "")) for p in providers}
        self._listed: dict[str, tuple[ModelInfo, ...]] = {}
        self._catalogue = self._gather()

    def _gather(self) -> tuple[ModelInfo, ...]:
        """Every provider's models (listed by its API, for the ones in ``listing``), in order."""
        return tuple(m for p in self._providers.values() for m in self._listed.get(p.name, p.models()))

    async def open(self) -> None:
        """List the models of the providers whose catalogue comes from their API (once).

        When that fails the registry is closed (its providers with it) before the error goes up.
        """
        try:
            await self._list()
        except BaseException:
            await self.aclose()
            raise
        self._catalogue = self._gather()

    async def _list(self) -> None:
        for name, provider in self._listing.items():
            if name in self._listed:
                continue
            try:
                ids = await provider.list_models()
            except ProviderError as exc:
                raise ConfigError(
                    f"provider {name!r} lists no models in its entry, and listing them failed: {exc}; "
                    "add models to its entry or pass --model"
                ) from None
            if not ids:
                raise ConfigError(f"the API of provider {name!r} lists no models; add models to its entry")
            vendor = self._vendors[name]
            self._listed[name] = tuple(listed_model(i, name, vendor) for i in dict.fromkeys(ids))

    @property
    def providers(self) -> Sequence[Provider]:
        return tuple(self._providers.values())

    def catalogue(self) -> Sequence[ModelInfo]:
        """Every model of every provider, in preference order."""
        return self._catalogue

    def provider_for(self, model: ModelInfo) -> Provider:
        """The provider that serves ``model``."""
        try:
            return self._providers[model.provider]
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

    def plan(
        self,
        params: SamplingRequest,
        server: str | None = None,
        model: str | None = None,
    ) -> SamplingPlan:
        """The provider and model for ``params`` from ``server``, and ``params`` within the limits.

        ``model`` forces a model id (the host's or the person's choice); it
        must be one ``server`` may use. Raises :class:`NoSuitableModel` or
        :class:`UnsupportedRequest` (:class:`LimitExceeded` for a bound).
        """
        allowed = self.allowed_for(server)
        needs = requirements(params)
        if model is None:
            chosen, reason = choose_model(
                self._catalogue,
                params.model_preferences,
                aliases=self.aliases,
                allowed=allowed,
                needs=needs,
                vendors=self._vendors,
            )
        else:
            candidates = [m for m in self._catalogue if m.id == model]
            if not candidates:
                raise NoSuitableModel(f"model {model!r} is not configured")
            if model not in self.allowed_models(server):
                raise NoSuitableModel(f"model {model!r} is not allowed for this server")
            chosen, reason = candidates[0], "chosen by the host"
            unmet = needs.unmet_by(chosen)
            if unmet:
                raise NoSuitableModel(f"model {chosen.id!r} {' and '.join(unmet)}")
        bounded = bound_request(params, chosen, self.limits, needs)
        provider = self.provider_for(chosen)
        # a LeavesOut (asked by attribute: isinstance against the protocol costs 8 to 20 µs a call)
        dropped = cast(LeavesOut, provider).dropped(bounded) if hasattr(provider, "dropped") else ()
        return SamplingPlan(provider, chosen, bounded, params.max_tokens, self.limits, reason, dropped)

    def choose(
        self,
        params: SamplingRequest,
        server: str | None = None,
        model: str | None = None,
    ) -> tuple[Provider, ModelInfo]:
        """The provider and model :meth:`plan` picks (the params it bounds are not returned)."""
        chosen = self.plan(params, server, model)
        return chosen.provider, chosen.model

    async def sample(
        self,
        params: SamplingRequest,
        *,
        server: str | None = None,
        model: str | None = None,
        progress: ProgressSink | None = None,
    ) -> CreateMessageResult:
        """Plan and sample in one call."""
        return await self.plan(params, server, model).sample(progress)

    async def aclose(self) -> None:
        """Close every provider."""
        for provider in self._providers.values():
            await provider.aclose()

    async def __aenter__(self) -> ProviderRegistry:
        await self.open()
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
