"""Compiling the batched kernels together with the rules' own formulas (numba).

The kernels (``sim.batched.kernels_step``, ``sim.batched.kernels_observe``) are plain Python
that call plain functions of ``sim.rules`` (the price walks, robbery odds, commission
credit...).  Here those rule functions and every function of the kernel modules are registered
with numba
(``numba.extending.register_jitable``: they stay ordinary Python functions, and compiled code
may call them), and the entry points are compiled on first use.

Compiled code is cached on disk.  numba invalidates a cache only when the file of the entry
point changes, not when a function it calls changes in another file, so the cache directory
is named by a fingerprint of every source file the kernels are built from: editing a rule
gives a fresh cache instead of a stale kernel.  Importing numba costs a fraction of a second,
so it happens only when a kernel is first needed.

The kernels run without numba's reference counting (``_nrt=False``): they only read and write
arrays the engine owns and allocate nothing (work arrays come in a ``Scratch``), and counting
references on every call of a helper that takes the whole state would cost more than the
work itself.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from types import FunctionType, ModuleType

_PACKAGE = Path(__file__).resolve().parents[1]  # sim/
# Every source file whose code or constants can end up in the kernels, relative to sim/.
SOURCES = tuple(sorted(p.relative_to(_PACKAGE).as_posix()
                       for wing in ("rules", "codec", "batched")
                       for p in (_PACKAGE / wing).glob("*.py")))
ENTRY_POINTS = {"step_rows": "kernels_step", "encode_rows": "kernels_observe",
                "mask_rows": "kernels_observe"}

_registered = False


class Compiled:
    """Entry points that ``build`` compiles together on first use (once, thread-safe): calling
    it with a name gives that compiled function."""

    def __init__(self, build: Callable[[], dict[str, Callable]]) -> None:
        self._build = build
        self._lock = threading.Lock()
        self._fns: dict[str, Callable] = {}

    def __call__(self, name: str) -> Callable:
        fn = self._fns.get(name)
        if fn is None:
            with self._lock:
                if not self._fns:
                    self._fns.update(self._build())
            fn = self._fns[name]
        return fn


def fingerprint() -> str:
    """A digest of the sources the kernels are built from (names the cache directory)."""
    h = hashlib.sha256()
    for rel in SOURCES:
        h.update(rel.encode())
        h.update((_PACKAGE / rel).read_bytes())
    return h.hexdigest()[:16]


def _build() -> dict[str, Callable]:
    import numba
    from numba.core import config
    from numba.extending import register_jitable

    from .source import (
        commissions,
        kernels_observe,
        kernels_step,
        observation,
        prices,
        resolve,
        robbery,
        scoring,
        turn,
    )

    shared = (prices.buy_walk, prices.sell_walk, robbery.guards, robbery.robbery_succeeds,
              robbery.loot, commissions.commission_points, commissions.credit,
              commissions.points_of, scoring.wealth_of, scoring.score_points,
              turn.acting_seat, turn.tick_retainers, resolve.offer_units, resolve.hire_fee,
              observation.cheapest_source)
    modules = {"kernels_step": kernels_step, "kernels_observe": kernels_observe}
    global _registered
    if not _registered:  # an overload registered twice would be ambiguous
        for fn in shared:
            register_jitable(fn)
        # The kernels' own functions pass the whole state around; compiled as calls, moving
        # those arguments would cost more than the work, so they are inlined into the entry
        # points (the rules' functions take a few numbers and rows, and stay calls).
        for fn in _functions(kernels_step) + _functions(kernels_observe):
            takes_state = "st" in fn.__code__.co_varnames[:fn.__code__.co_argcount]
            register_jitable(inline="always" if takes_state else "never")(fn)
        _registered = True
    cache_dir = _cache_dir()
    old = config.CACHE_DIR
    try:
        # numba picks a function's cache directory when the dispatcher is made.
        config.CACHE_DIR = cache_dir or old
        return {name: numba.njit(cache=cache_dir is not None, nogil=True, _nrt=False)(
                    getattr(modules[mod], name)) for name, mod in ENTRY_POINTS.items()}
    finally:
        config.CACHE_DIR = old


kernel = Compiled(_build)
"""``kernel(name)``: the compiled entry point ``name`` (one of :data:`ENTRY_POINTS`)."""


def _functions(module: ModuleType) -> tuple[Callable, ...]:
    """Every function defined in a kernel module (the entry points call each other freely)."""
    return tuple(v for v in vars(module).values()
                 if isinstance(v, FunctionType) and v.__module__ == module.__name__)


def _cache_dir() -> str | None:
    """A writable directory named by :func:`fingerprint` for numba's cache, or None."""
    name = f"kernels-{fingerprint()}"
    user_cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    candidates = [_PACKAGE / "batched" / "__pycache__", user_cache / "guild-game"]
    for base in candidates:
        path = base / name
        try:
            path.mkdir(parents=True, exist_ok=True)
            with tempfile.TemporaryFile(dir=path):
                pass
        except OSError:
            continue
        if base == candidates[0]:  # our own checkout: older sources' caches are garbage
            _forget_others(base, name)
        return str(path)
    return None


def _forget_others(base: Path, keep: str) -> None:
    """Remove caches of other fingerprints (older sources) under ``base``; best effort."""
    import shutil

    for old in base.glob("kernels-*"):
        if old.name != keep and old.is_dir():
            shutil.rmtree(old, ignore_errors=True)
