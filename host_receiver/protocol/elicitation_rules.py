"""Protocol rules of ``elicitation/create``: modes, the form schema subset, answers.

- A request for a mode the host did not declare gets -32602.
- Form mode: ``requestedSchema`` must be a flat object whose properties are
  primitives: string (``minLength``, ``maxLength``, ``format`` email / uri /
  date / date-time), number or integer (``minimum``, ``maximum``), boolean,
  single-select enums (``enum``; ``oneOf`` of const+title; legacy
  ``enumNames``) and multi-select enums (array of ``items`` with ``enum`` or
  ``anyOf`` of const+title, ``minItems``, ``maxItems``). Anything else gets
  -32602 naming the property.
- :class:`FormSchema` knows each field's defaults, and checks an answer before
  it is sent, field by field, so that a user interface can re-prompt.
- URL mode: the URL must be an absolute http(s) URL with a host, and nothing
  in it may fool the person who reads it: no control, bidi, zero-width or
  other invisible character, no whitespace, no user info (``user@``, which
  makes ``https://bank.example@evil.example`` lead to evil.example), no
  backslash before the path (browsers read it as ``/``, Python's parser does
  not), no port beyond 65535, no percent-encoding in the host part (a
  browser decodes ``https://%65vil.example/`` to evil.example; a person cannot
  read it), and no host that a browser reads as an IPv4 address unless it is
  written as one: the WHATWG URL parser takes ``2130706433``, ``0x7f000001``,
  ``0177.0.0.1``, ``127.1`` and ``127.0.0.1.`` for 127.0.0.1
  (:func:`host_receiver._url_host.browser_ipv4`), so such a host is refused, naming the address, and
  so is a host ending in a number that is no address (browsers refuse those
  URLs). Anything else is -32602 before a task exists; what only *might*
  mislead (an IP address written plainly, among others) is a warning of the
  consent view (:func:`host_receiver.people.approval.url_warnings`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any, Literal
from urllib.parse import urlsplit

from host_receiver._url_host import browser_ipv4
from host_receiver.errors import invalid_params
from host_receiver.protocol.types import (
    ElicitRequestFormParams,
    ElicitRequestParams,
    ElicitRequestURLParams,
    ElicitValue,
)
from host_receiver.sanitize import bounded

FieldKind = Literal["string", "number", "integer", "boolean", "enum", "multi_enum"]
STRING_FORMATS = frozenset({"email", "uri", "date", "date-time"})
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")


@dataclass(frozen=True, slots=True)
class FormField:
    """One property of a form, normalised from any of the schema's spellings."""

    name: str
    kind: FieldKind
    required: bool
    title: str | None = None
    description: str | None = None
    default: ElicitValue | None = None
    #: (value, label) pairs of an enum, in the server's order.
    options: tuple[tuple[str, str], ...] = ()
    min_length: int | None = None
    max_length: int | None = None
    format: str | None = None
    minimum: float | None = None
    maximum: float | None = None
    min_items: int | None = None
    max_items: int | None = None

    @property
    def label(self) -> str:
        """What to show the user as the field's name."""
        return self.title or self.name

    def plain(self, value: ElicitValue, *, titles: bool = True) -> str:
        """``value`` in plain words: a boolean as yes or no, a whole number without ``.0``, choices
        by their titles (by their values when not ``titles``: as a person types them), several
        joined by commas. Raw text: show it through :mod:`host_receiver.sanitize`."""
        names = dict(self.options) if titles else {}
        if isinstance(value, bool):
            return "yes" if value else "no"
        if isinstance(value, list):
            return ", ".join(names.get(v, v) for v in value)
        if isinstance(value, str):
            return names.get(value, value)
        if isinstance(value, float) and value.is_integer() and self.kind == "integer":
            return str(int(value))
        return str(value)

    def check(self, value: Any) -> str | None:
        """Why ``value`` is not acceptable for this field, or None when it is."""
        if self.kind == "boolean":
            return None if isinstance(value, bool) else "must be true or false"
        if self.kind in ("number", "integer"):
            return self._check_number(value)
        if self.kind == "enum":
            allowed = [v for v, _ in self.options]
            return None if value in allowed else f"must be one of {allowed}"
        if self.kind == "multi_enum":
            return self._check_multi(value)
        return self._check_string(value)

    def _check_number(self, value: Any) -> str | None:
        if isinstance(value, bool) or not isinstance(value, int | float):
            return "must be a number"
        if isinstance(value, float) and not math.isfinite(value):
            return "must be a finite number"
        if self.kind == "integer" and not float(value).is_integer():
            return "must be a whole number"
        if self.minimum is not None and value < self.minimum:
            return f"must be at least {self.minimum:g}"
        if self.maximum is not None and value > self.maximum:
            return f"must be at most {self.maximum:g}"
        return None

    def _check_multi(self, value: Any) -> str | None:
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            return "must be a list of choices"
        allowed = [v for v, _ in self.options]
        unknown = [v for v in value if v not in allowed]
        if unknown:
            return f"{unknown} not among {allowed}"
        if len(set(value)) != len(value):
            return "must not repeat a choice"
        if self.min_items is not None and len(value) < self.min_items:
            return f"choose at least {self.min_items}"
        if self.max_items is not None and len(value) > self.max_items:
            return f"choose at most {self.max_items}"
        return None

    def _check_string(self, value: Any) -> str | None:
        if not isinstance(value, str):
            return "must be text"
        if self.min_length is not None and len(value) < self.min_length:
            return f"must be at least {self.min_length} characters"
        if self.max_length is not None and len(value) > self.max_length:
            return f"must be at most {self.max_length} characters"
        if self.format is not None and not _matches_format(value, self.format):
            return f"must be a valid {self.format}"
        return None


def _matches_format(value: str, fmt: str) -> bool:
    try:
        if fmt == "date":
            date.fromisoformat(value)
        elif fmt == "date-time":
            datetime.fromisoformat(value)
            return "T" in value or " " in value
        elif fmt == "email":
            return _EMAIL.match(value) is not None
        elif fmt == "uri":
            parts = urlsplit(value)
            return bool(parts.scheme) and bool(parts.netloc or parts.path)
    except ValueError:
        return False
    return True


@dataclass(frozen=True, slots=True)
class FormSchema:
    """A validated form-mode ``requestedSchema``."""

    fields: tuple[FormField, ...]
    raw: dict[str, Any] = field(compare=False)

    def defaults(self) -> dict[str, ElicitValue]:
        """Every field's default value, for pre-filling a form."""
        return {f.name: f.default for f in self.fields if f.default is not None}

    def plain(self, content: Mapping[str, ElicitValue]) -> str:
        """Answers in plain words, ``Title: value`` in the form's order (:meth:`FormField.plain`)."""
        return "; ".join(f"{f.label}: {f.plain(content[f.name])}" for f in self.fields if f.name in content)

    def problems(self, content: dict[str, Any]) -> dict[str, str]:
        """Field name -> what is wrong with ``content``; empty when it may be sent."""
        known = {f.name for f in self.fields}
        found: dict[str, str] = {name: "is not a field of this form" for name in content if name not in known}
        for f in self.fields:
            if f.name not in content:
                if f.required:
                    found[f.name] = "is required"
                continue
            problem = f.check(content[f.name])
            if problem is not None:
                found[f.name] = problem
        return found


def parse_form_schema(schema: Any) -> FormSchema:
    """Validate ``schema`` against the spec's restricted subset; -32602 otherwise."""
    if not isinstance(schema, dict) or schema.get("type") != "object":
        raise invalid_params("requestedSchema must be an object schema with type 'object'")
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        raise invalid_params("requestedSchema.properties must be an object")
    required = schema.get("required", [])
    if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
        raise invalid_params("requestedSchema.required must be a list of property names")
    missing = [r for r in required if r not in properties]
    if missing:
        raise invalid_params(f"requestedSchema.required names unknown properties {bounded(repr(missing))}")
    fields = tuple(_parse_field(name, spec, name in required) for name, spec in properties.items())
    return FormSchema(fields=fields, raw=schema)


def _parse_field(name: str, spec: Any, required: bool) -> FormField:
    where = f"requestedSchema.properties.{bounded(name)}"
    if not isinstance(spec, dict):
        raise invalid_params(f"{where} must be an object")
    kind = spec.get("type")
    common: dict[str, Any] = {
        "name": name,
        "required": required,
        "title": _opt(spec, "title", str, where),
        "description": _opt(spec, "description", str, where),
    }
    if kind == "boolean":
        return FormField(kind="boolean", default=_opt(spec, "default", bool, where), **common)
    if kind in ("number", "integer"):
        minimum = _opt_number(spec, "minimum", where)
        maximum = _opt_number(spec, "maximum", where)
        if minimum is not None and maximum is not None and minimum > maximum:
            raise invalid_params(f"{where}: minimum is greater than maximum")
        result = FormField(kind=kind, minimum=minimum, maximum=maximum, **common)
        default = _opt_number(spec, "default", where)
        return _with_default(result, default, where)
    if kind == "string":
        options = _single_options(spec, where)
        if options:
            result = FormField(kind="enum", options=options, **common)
            return _with_default(result, _opt(spec, "default", str, where), where)
        fmt = _opt(spec, "format", str, where)
        if fmt is not None and fmt not in STRING_FORMATS:
            raise invalid_params(
                f"{where}: format {bounded(repr(fmt))} is not one of {sorted(STRING_FORMATS)}"
            )
        min_length = _opt_count(spec, "minLength", where)
        max_length = _opt_count(spec, "maxLength", where)
        if min_length is not None and max_length is not None and min_length > max_length:
            raise invalid_params(f"{where}: minLength is greater than maxLength")
        result = FormField(kind="string", format=fmt, min_length=min_length, max_length=max_length, **common)
        return _with_default(result, _opt(spec, "default", str, where), where)
    if kind == "array":
        options = _multi_options(spec, where)
        result = FormField(
            kind="multi_enum",
            options=options,
            min_items=_opt_count(spec, "minItems", where),
            max_items=_opt_count(spec, "maxItems", where),
            **common,
        )
        default = spec.get("default")
        if default is not None and not (
            isinstance(default, list) and all(isinstance(d, str) for d in default)
        ):
            raise invalid_params(f"{where}.default must be a list of strings")
        return _with_default(result, default, where)
    raise invalid_params(
        f"{where}: type {bounded(repr(kind))} is not allowed; forms take string, number, integer, boolean "
        "and enum properties only (no nested objects or arrays)"
    )


def _with_default(result: FormField, default: ElicitValue | None, where: str) -> FormField:
    if default is None:
        return result
    problem = result.check(default)
    if problem is not None:
        raise invalid_params(f"{where}.default {problem}")
    return FormField(**{**{s: getattr(result, s) for s in FormField.__slots__}, "default": default})


def _single_options(spec: dict[str, Any], where: str) -> tuple[tuple[str, str], ...]:
    if "oneOf" in spec:
        return _titled(spec["oneOf"], f"{where}.oneOf")
    if "enum" not in spec:
        return ()
    values = spec["enum"]
    if not isinstance(values, list) or not values or not all(isinstance(v, str) for v in values):
        raise invalid_params(f"{where}.enum must be a non-empty list of strings")
    names = spec.get("enumNames")
    if names is None:
        return tuple((v, v) for v in values)
    if not isinstance(names, list) or len(names) != len(values) or not all(isinstance(n, str) for n in names):
        raise invalid_params(f"{where}.enumNames must be a list of strings as long as enum")
    return tuple(zip(values, names, strict=True))


def _multi_options(spec: dict[str, Any], where: str) -> tuple[tuple[str, str], ...]:
    items = spec.get("items")
    if not isinstance(items, dict):
        raise invalid_params(f"{where}: an array property must be a multi-select enum with items")
    if "anyOf" in items:
        return _titled(items["anyOf"], f"{where}.items.anyOf")
    values = items.get("enum")
    if items.get("type") != "string" or not isinstance(values, list) or not values:
        raise invalid_params(f"{where}.items must be a string enum (enum or anyOf of const+title)")
    if not all(isinstance(v, str) for v in values):
        raise invalid_params(f"{where}.items.enum must list strings")
    return tuple((v, v) for v in values)


def _titled(options: Any, where: str) -> tuple[tuple[str, str], ...]:
    if not isinstance(options, list) or not options:
        raise invalid_params(f"{where} must be a non-empty list")
    pairs = []
    for option in options:
        if not (isinstance(option, dict) and isinstance(option.get("const"), str)):
            raise invalid_params(f"{where}: each option needs a string const")
        title = option.get("title", option["const"])
        if not isinstance(title, str):
            raise invalid_params(f"{where}: option titles must be strings")
        pairs.append((option["const"], title))
    return tuple(pairs)


def _opt(spec: dict[str, Any], key: str, kind: type, where: str) -> Any:
    value = spec.get(key)
    if value is not None and (not isinstance(value, kind) or (kind is not bool and isinstance(value, bool))):
        raise invalid_params(f"{where}.{key} must be a {kind.__name__}")
    return value


def _opt_number(spec: dict[str, Any], key: str, where: str) -> float | None:
    value = spec.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise invalid_params(f"{where}.{key} must be a number")
    return value


def _opt_count(spec: dict[str, Any], key: str, where: str) -> int | None:
    value = spec.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise invalid_params(f"{where}.{key} must be a non-negative integer")
    return value


def check_url(url: str) -> None:
    """-32602 unless ``url`` is an absolute http(s) URL that cannot fool the person (module docstring)."""
    hidden = next((c for c in url if not c.isprintable() or c.isspace()), None)
    if hidden is not None:
        raise invalid_params(f"url must not contain control, invisible or space characters ({hidden!r})")
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a port out of range
    except ValueError as exc:
        raise invalid_params(f"url is not a valid URL: {exc}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise invalid_params("url must be an absolute http or https URL")
    if "@" in parts.netloc:
        raise invalid_params("url must not carry user info (a name or password before '@')")
    if "\\" in parts.netloc:
        raise invalid_params("url must not have a backslash in its host part")
    if "%" in parts.netloc:
        raise invalid_params(
            "url must not have percent-encoding in its host part "
            "(a browser decodes it; a person cannot read it)"
        )
    host = parts.hostname
    try:
        address = browser_ipv4(host)
    except ValueError:
        raise invalid_params(
            f"url host {bounded(host)!r} ends in a number but is no IPv4 address (browsers refuse it)"
        ) from None
    if address is not None and host != str(address):
        raise invalid_params(
            f"url host {bounded(host)!r} is the IP address {address} written in a form a person cannot "
            f"read; write it as {address}"
        )


def check_request(
    params: ElicitRequestParams, *, modes: tuple[str, ...], needs_elicitation_id: bool = True
) -> None:
    """Raise -32602 if ``params`` use an undeclared mode or an invalid schema or URL.

    ``needs_elicitation_id``: URL mode needs an ``elicitationId`` (2025-11-25; not 2026-07-28).
    """
    mode = "url" if isinstance(params, ElicitRequestURLParams) else "form"
    if mode not in modes:
        raise invalid_params(f"Elicitation mode {mode!r} is not supported by this client")
    if isinstance(params, ElicitRequestFormParams):
        parse_form_schema(params.requested_schema)
        return
    check_url(params.url)
    if needs_elicitation_id and params.elicitation_id is None:
        raise invalid_params("Invalid params: elicitationId: Field required")
