"""How a browser reads a URL's host: the WHATWG URL host parser's IPv4 rules.

Rules (URL Standard, "host parsing", "IPv4 parser", "ends in a number checker"):

- The host is first mapped as domain-to-ASCII would (compatibility forms by
  NFKC, so full-width digits and dots are ASCII ones; the ideographic full
  stop is a dot; lower case).
- A host whose last label (after one trailing dot is dropped) is all ASCII
  digits, or a valid number (decimal, ``0x`` hex, ``0``-prefixed octal), is
  an IPv4 address: one to four numbers, each but the last at most 255, the
  last filling the remaining bytes. ``127.1``, ``2130706433``,
  ``0x7f000001``, ``0177.0.0.1`` and ``127.0.0.1.`` are all 127.0.0.1.
- Such a host that breaks these rules is no valid host: a browser refuses the
  URL (:class:`ValueError` here).
"""

from __future__ import annotations

import ipaddress
import unicodedata

__all__ = ["browser_ipv4"]


def browser_ipv4(host: str) -> ipaddress.IPv4Address | None:
    """The IPv4 address a browser reads ``host`` as, or None when it reads a domain name (rules above).

    Raises ValueError for a host that ends in a number but is no address.
    """
    labels = _ascii_host(host).split(".")
    if labels[-1] == "" and len(labels) > 1:
        labels.pop()
    if not _ends_in_number(labels[-1]):
        return None
    if len(labels) > 4:
        raise ValueError(f"{host!r} has more than four numbers")
    numbers = [_ipv4_number(label) for label in labels]
    *first, last = numbers
    if any(n > 255 for n in first) or last >= 256 ** (5 - len(numbers)):
        raise ValueError(f"{host!r} has a number out of range")
    value = last + sum(n * 256 ** (3 - i) for i, n in enumerate(first))
    return ipaddress.IPv4Address(value)


def _ascii_host(host: str) -> str:
    """``host`` as the URL parser's domain-to-ASCII step maps it (compatibility forms, dots, case)."""
    return unicodedata.normalize("NFKC", host).replace("\u3002", ".").lower()


def _ends_in_number(label: str) -> bool:
    """Whether a last label makes the URL parser read the host as IPv4 (digits, or a valid number)."""
    if label.isascii() and label.isdigit():
        return True
    try:
        _ipv4_number(label)
    except ValueError:
        return False
    return True


def _ipv4_number(label: str) -> int:
    """One number of an IPv4 host: decimal, ``0x`` hex, or octal with a leading ``0``."""
    if not label or not label.isascii():
        raise ValueError(f"{label!r} is not a number")
    digits, radix = label, 10
    if label[:2] in ("0x", "0X"):
        digits, radix = label[2:], 16
    elif len(label) > 1 and label[0] == "0":
        digits, radix = label[1:], 8
    if not digits:
        return 0
    if not digits.isalnum():  # int() would take "+1", "1_0" and spaces
        raise ValueError(f"{label!r} is not a number")
    return int(digits, radix)
