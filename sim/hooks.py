"""Run a function once a module is imported, without importing it (a post-import hook)."""

from __future__ import annotations

import importlib.abc
import importlib.util
import sys
from collections.abc import Callable
from types import ModuleType


def after_import(name: str, then: Callable[[], None]) -> None:
    """Call ``then()`` now if module ``name`` is loaded, else right after it first loads.

    A finder put first on ``sys.meta_path`` takes the module's spec from the other finders and
    wraps its loader's ``exec_module``; it removes itself on that first import. If ``then``
    raises, so does that import (as it would in the module itself).
    """
    if name in sys.modules:
        then()
        return
    sys.meta_path.insert(0, _AfterImport(name, then))


class _AfterImport(importlib.abc.MetaPathFinder):
    def __init__(self, name: str, then: Callable[[], None]) -> None:
        self.name, self.then = name, then

    def find_spec(self, fullname: str, path=None, target=None):  # noqa: ANN001 - importlib's
        if fullname != self.name:
            return None
        if self in sys.meta_path:
            sys.meta_path.remove(self)
        spec = importlib.util.find_spec(fullname)  # the lookup the import would have made
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        run, then = spec.loader.exec_module, self.then

        def exec_module(module: ModuleType) -> None:
            run(module)
            then()

        spec.loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec
