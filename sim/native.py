"""The compiled rules: which modules ``pip install`` compiles with mypyc, and whether they run.

A plain install compiles the engine's hot modules (``COMPILED``) from their own sources with
mypyc (``setup.py``): an episode takes about three quarters of the instructions, and the engine
plays 1.25-1.3x the episodes a second (README, Speed).  Nothing of the game is written twice;
the pure-Python modules stay the reference.  The compiled modules run only while they are the
build of the sources beside them: ``setup.py`` records a digest of those sources in ``STAMP``,
and ``choose`` (called by ``import sim`` before anything else) compares it with the sources of
now.  An edited source, a missing or partial build, or ``GUILD_PURE=1`` make every compiled
module load from its ``.py`` file instead (all or none: compiled modules call each other
directly, so a mix would run an old rule).  An edit in an editable install therefore takes
effect at once, in pure Python, with a ``StaleBuildWarning`` until ``pip install -e .``
compiles again.

Standard library only: ``setup.py`` loads this file by path, before anything is installed.
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import json
import os
import sys
import warnings
from collections.abc import Iterable
from types import ModuleType

__all__ = ["COMPILED", "GROUP", "STAMP", "StaleBuildWarning", "active", "build_record",
           "choose", "source_digest", "source_modules"]

# The modules of one turn (rules and parser). Left out: package __init__s (sim's sets this
# choice up); the facade (sim.game), whose checks of a user's arguments must raise its own
# errors (a compiled function raises TypeError for an argument of another type first); data
# classes that user code subclasses or pickles (world, intents, errors); the world-file reader
# (run once per town); and scoring, whose functions the faces and the batched engine also call
# on numpy arrays and on row views standing in for a GameState.
COMPILED: tuple[str, ...] = (
    "sim.rules.checks", "sim.rules.commissions", "sim.rules.events", "sim.rules.observation",
    "sim.rules.offers", "sim.rules.outcome", "sim.rules.prices", "sim.rules.resolve",
    "sim.rules.rng", "sim.rules.robbery", "sim.rules.setup",
    "sim.rules.speech", "sim.rules.state", "sim.rules.text", "sim.rules.turn",
    "sim.language.parser", "sim.language.vocab",
)
GROUP = "sim.native_rules"  # mypyc's shared library of the group: sim/native_rules__mypyc.*.so
STAMP = "native.json"  # beside this file: build_record() of the build

_HERE = os.path.dirname(os.path.abspath(__file__))
_ROOT = os.path.dirname(_HERE)
active = False  # whether the compiled modules run in this process (set by choose)


class StaleBuildWarning(UserWarning):
    """The compiled modules are not the build of the sources beside them (they run as .py)."""


def source_path(module: str, root: str = _ROOT) -> str:
    """The ``.py`` file of a dotted module name under ``root`` (the folder holding ``sim``)."""
    return os.path.join(root, *module.split(".")) + ".py"


def source_digest(root: str = _ROOT) -> str:
    """SHA-256 over the compiled modules' names and sources: what a build is the build of."""
    h = hashlib.sha256()
    for module in COMPILED:
        with open(source_path(module, root), "rb") as f:
            h.update(module.encode() + b"\0" + f.read() + b"\0")
    return h.hexdigest()


def build_record(root: str = _ROOT) -> dict:
    """What ``setup.py`` writes to ``STAMP`` after a whole build of the sources under ``root``."""
    return {"digest": source_digest(root), "modules": list(COMPILED)}


def _built() -> tuple[bool, str]:
    """Whether the compiled build here matches the sources, and if not, why (for the warning)."""
    try:
        with open(os.path.join(_HERE, STAMP), encoding="utf-8") as f:
            stamp = json.load(f)
    except FileNotFoundError:
        return False, ""  # never compiled (a pure install): nothing to warn about
    except (OSError, ValueError) as e:
        return False, f"its record {STAMP} is unreadable ({e})"
    if not isinstance(stamp, dict) or stamp.get("modules") != list(COMPILED):
        return False, f"{STAMP} names other modules than sim.native.COMPILED"
    if stamp.get("digest") != source_digest():
        return False, "their sources were edited since the build"
    for module in COMPILED:
        spec = importlib.machinery.PathFinder.find_spec(
            module.rpartition(".")[2], [os.path.dirname(source_path(module))])
        if spec is None or not isinstance(spec.loader, importlib.machinery.ExtensionFileLoader):
            return False, f"{module} has no compiled file (a partial build)"
    return True, ""


class _SourceFirst:
    """A meta-path finder that loads ``names`` (the compiled modules) from their ``.py`` files."""

    def __init__(self, names: Iterable[str] = COMPILED) -> None:
        self.names = frozenset(names)

    def find_spec(self, name: str, path: object = None, target: object = None):
        if name in self.names:
            return importlib.util.spec_from_file_location(name, source_path(name))
        return None


def source_modules(*names: str) -> tuple[ModuleType, ...]:
    """Fresh copies of modules ``names`` imported against the pure-Python rules.

    For numba (``sim.batched.jit``), which compiles Python functions and cannot read compiled
    ones: the copies and every compiled module they import come from the ``.py`` sources,
    while ``sys.modules`` and the packages' attributes keep the modules the process uses.
    Without an active build these are the process's own modules.
    """
    if not active:
        return tuple(importlib.import_module(n) for n in names)
    swapped = set(COMPILED) | set(names)
    saved = {n: sys.modules.pop(n) for n in swapped if n in sys.modules}
    finder = _SourceFirst(swapped)
    sys.meta_path.insert(0, finder)
    try:
        return tuple(importlib.import_module(n) for n in names)
    finally:
        sys.meta_path.remove(finder)
        for n in swapped:
            sys.modules.pop(n, None)
        sys.modules.update(saved)
        for n in swapped:  # `import a.b` reads b off package a: put back what was there
            parent, _, child = n.rpartition(".")
            if n in saved:
                setattr(sys.modules[parent], child, saved[n])
            elif parent in sys.modules and hasattr(sys.modules[parent], child):
                delattr(sys.modules[parent], child)


def choose() -> bool:
    """Run the compiled modules if they are the build of these sources, else their sources.

    Called once by ``import sim`` before it imports any of them; returns (and sets) ``active``.
    """
    global active
    if any(isinstance(f, _SourceFirst) for f in sys.meta_path):
        return active
    ok, why = (False, "") if os.environ.get("GUILD_PURE") == "1" else _built()
    if ok:
        try:
            importlib.import_module(GROUP + "__mypyc")
        except ImportError as e:
            ok, why = False, f"its shared library does not load ({e})"
    if not ok:
        sys.meta_path.insert(0, _SourceFirst())
        if why:
            warnings.warn(f"sim: the compiled rules are not used: {why}; running them as pure "
                          "Python (pip install -e . compiles them again)", StaleBuildWarning,
                          stacklevel=3)
    active = ok
    return ok
