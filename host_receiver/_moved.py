"""Names and modules that moved: served from the old path with a DeprecationWarning for one release.

A package whose public name moved sets ``__getattr__ = moved_names(__name__,
{"Name": "new.module"})``; ``from old import Name`` then warns once per use
and gives the very same object. A module that moved is listed with
:func:`serve_moved_modules`; ``import old.module`` then warns and gives the
module at its new path. The old paths go in 0.4 (docs/changelog.md).
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import types
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

__all__ = ["moved_names", "serve_moved_modules"]

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


class _MovedModule(importlib.abc.Loader):
    """Loads an old module path as the very module at its new path, with a warning."""

    def __init__(self, new: str) -> None:
        self.new = new

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        warnings.warn(
            f"{spec.name} moved to {self.new}; the old path goes in {REMOVED_IN}",
            DeprecationWarning,
            stacklevel=2,
        )
        return importlib.import_module(self.new)

    def exec_module(self, module: types.ModuleType) -> None:
        """The module at the new path has run already."""


@dataclass(frozen=True)
class _MovedModules(importlib.abc.MetaPathFinder):
    """Finds the modules of one package that moved (old dotted path -> new one)."""

    moves: Mapping[str, str]

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: types.ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        new = self.moves.get(fullname)
        return None if new is None else importlib.machinery.ModuleSpec(fullname, _MovedModule(new))


def serve_moved_modules(moves: Mapping[str, str]) -> None:
    """Make ``import old.path`` give the module now at its new path, with a warning, until 0.4.

    Installs one finder on ``sys.meta_path`` for these moves (once: a second
    call with the same moves adds nothing).
    """
    finder = _MovedModules(dict(moves))
    if finder not in sys.meta_path:
        sys.meta_path.insert(0, finder)  # before the path finder, which would load a second copy
