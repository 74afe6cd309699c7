"""Names that moved to another door: served from the old one with a DeprecationWarning for one release.

A package whose public name moved sets ``__getattr__ = moved_names(__name__,
{"Name": "new.module"})``; ``from old import Name`` then warns once per use
and gives the very same object. The old paths go in 0.4 (docs/changelog.md).
"""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable, Mapping

__all__ = ["moved_names"]

#: The release in which the old paths go.
REMOVED_IN = "0.4"


def moved_names(module: str, names: Mapping[str, str]) -> Callable[[str], object]:
    """A module ``__getattr__`` serving each of ``names`` (name -> its new module) with a warning."""

    def __getattr__(name: str) -> object:
        new = names.get(name)
        if new is None:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        warnings.warn(
            f"{module}.{name} moved to {new}.{name}; the old path goes in {REMOVED_IN}",
            DeprecationWarning,
            stacklevel=2,
        )
        return getattr(importlib.import_module(new), name)

    return __getattr__
