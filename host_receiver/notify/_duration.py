"""Durations as people write them: ``600`` (seconds), ``90s``, ``10m``, ``2h``, ``1d``, ``never``.

A :class:`Duration` keeps the text it was given, so a message quotes the
duration as the person wrote it ("no answer within 10m").
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

_UNITS = {"": 1.0, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*$")


@dataclass(frozen=True)
class Duration:
    """A positive, finite number of seconds and the text it was written as."""

    seconds: float
    text: str

    @classmethod
    def of(cls, seconds: float) -> Duration:
        """``seconds`` written the way the inbox quotes it (``600s``, ``0.2s``)."""
        if not (seconds > 0 and math.isfinite(seconds)):
            raise ValueError(f"{seconds!r} is not a positive number of seconds")
        return cls(float(seconds), f"{seconds:g}s")

    def __str__(self) -> str:
        return self.text


def parse_duration(text: str) -> Duration:
    """``600``, ``90s``, ``10m``, ``2h`` or ``1d`` as a :class:`Duration`; ValueError says what is wrong."""
    match = _DURATION.match(text)
    if match is None:
        raise ValueError(
            f"{text!r} is not a duration: write a number of seconds or one with a unit, like 90s, 10m, 2h"
        )
    number, unit = match.groups()
    seconds = float(number) * _UNITS[unit.lower()]
    if not (seconds > 0 and math.isfinite(seconds)):
        raise ValueError(f"{text!r} is not a positive duration")
    written = text.strip().replace(" ", "")
    return Duration(seconds, written if unit else f"{written}s")


def parse_timeout(text: str) -> Duration | None:
    """A duration as :func:`parse_duration`, or ``never`` (None: no time limit)."""
    if text.strip().lower() == "never":
        return None
    return parse_duration(text)
