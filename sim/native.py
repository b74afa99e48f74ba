"""The compiled rules: which modules ``pip install`` compiles with mypyc, and whether they run.

A plain install compiles the engine's hot modules (``COMPILED``) from their own sources with
mypyc (``setup.py``): with the baselines' group (``agents.baselines.native``), an episode of the
baseline workload takes about half the instructions it takes in pure Python (README, Speed).
Nothing of the game is written twice; the pure-Python modules stay the reference.  The compiled
modules run only while they are the build of the sources beside them: ``setup.py`` records a digest
of those sources in ``STAMP``, and ``choose`` (called by ``import sim`` before anything else)
compares it with the sources of now.  An edited source, a missing or partial build, or
``GUILD_PURE=1`` make every compiled module load from its ``.py`` file instead (all or none:
compiled modules call each other directly, so a mix would run an old rule).  An edit in an editable
install therefore takes effect at once, in pure Python, with a ``StaleBuildWarning`` until ``pip
install -e .`` compiles again.  ``Group`` is that mechanism for one set of modules;
``agents.baselines.native`` uses it for the scripted baselines, which a league asks 84 times an
episode.

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
from collections.abc import Iterable, Mapping
from types import ModuleType
from typing import Any

__all__ = ["COMPILED", "GROUP", "RULES", "STAMP", "WHAT", "Group", "StaleBuildWarning", "active",
           "build_record", "choose", "source_digest", "source_modules"]

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
WHAT = "rules"  # what the warning calls them
STAMP = "native.json"  # in each compiled package's folder: Group.build_record() of its build

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the folder holding sim
active = False  # whether the compiled modules run in this process (set by choose)


class StaleBuildWarning(UserWarning):
    """The compiled modules are not the build of the sources beside them (they run as .py)."""


def source_path(module: str, root: str = _ROOT) -> str:
    """The ``.py`` file of a dotted module name under ``root`` (the folder holding ``sim``)."""
    return os.path.join(root, *module.split(".")) + ".py"


class Group:
    """One mypyc group: modules compiled into one shared library, run all together or not at all.

    ``sim`` has one (``RULES``); ``agents.baselines.native`` makes another for the scripted
    baselines. Each group keeps its own record (``STAMP`` in its package's folder) and falls back
    on its own: a group's compiled code reaches another group's modules only through Python imports.
    Code compiled against another package's types names it in ``depends``, so that an edit
    there makes this group stale too.
    """

    def __init__(self, modules: Iterable[str], library: str, what: str,
                 root: str = _ROOT, depends: Iterable[str] = ()) -> None:
        self.modules = tuple(modules)
        self.library = library  # mypyc's shared library: <package>/<name>__mypyc.*.so
        self.package = library.partition(".")[0]
        self.what = what  # what the modules are, for the warning: "rules", "baselines"
        self.root = root  # the folder holding the package
        # Packages whose types the modules were compiled against (mypyc checks an argument, a
        # return value or a field read against them): their sources join the digest.
        self.depends = tuple(depends)
        self.active = False  # whether the compiled modules run in this process (choose)

    @classmethod
    def described(cls, spec: Mapping[str, Any], root: str) -> Group:
        """The group a package's ``native`` module describes (its ``COMPILED``, ``GROUP``,
        ``WHAT`` and, if any, ``DEPENDS``; ``vars(module)`` or ``runpy``'s globals), with the
        package under ``root``: one description serves ``choose``, ``setup.py`` and the tests."""
        return cls(spec["COMPILED"], spec["GROUP"], spec["WHAT"], root, spec.get("DEPENDS", ()))

    def stamp(self, root: str | None = None) -> str:
        """The path of the group's build record under ``root``."""
        return os.path.join(root or self.root, self.package, STAMP)

    def source_digest(self, root: str | None = None) -> str:
        """SHA-256 over the modules' names and sources: what a build is the build of."""
        root = root or self.root
        h = hashlib.sha256()
        for module in self.modules:
            with open(source_path(module, root), "rb") as f:
                h.update(module.encode() + b"\0" + f.read() + b"\0")
        for package in self.depends:
            for path in _sources(os.path.join(root, package)):
                with open(path, "rb") as f:
                    h.update(os.path.relpath(path, root).encode() + b"\0" + f.read() + b"\0")
        return h.hexdigest()

    def build_record(self, root: str | None = None) -> dict:
        """What ``setup.py`` writes to the stamp after a whole build of the sources."""
        return {"digest": self.source_digest(root), "modules": list(self.modules)}

    def built(self) -> tuple[bool, str]:
        """Whether the compiled build matches the sources, and if not, why (for the warning)."""
        try:
            with open(self.stamp(), encoding="utf-8") as f:
                stamp = json.load(f)
        except FileNotFoundError:
            return False, ""  # never compiled (a pure install): nothing to warn about
        except (OSError, ValueError) as e:
            return False, f"its record {STAMP} is unreadable ({e})"
        if not isinstance(stamp, dict) or stamp.get("modules") != list(self.modules):
            return False, f"{STAMP} names other modules than {self.package}.native.COMPILED"
        if stamp.get("digest") != self.source_digest():
            if self.depends:
                return False, (f"their sources, or those of {', '.join(self.depends)} they were "
                               "compiled against, were edited since the build")
            return False, "their sources were edited since the build"
        for module in self.modules:
            spec = importlib.machinery.PathFinder.find_spec(
                module.rpartition(".")[2], [os.path.dirname(source_path(module, self.root))])
            if spec is None or not isinstance(spec.loader,
                                              importlib.machinery.ExtensionFileLoader):
                return False, f"{module} has no compiled file (a partial build)"
        return True, ""

    def choose(self) -> bool:
        """Run the compiled modules if they are the build of these sources, else their sources.

        Called once by the package's ``__init__`` before it imports any of them; returns (and
        sets) ``active``.
        """
        if any(isinstance(f, _SourceFirst) and f.names >= set(self.modules)
               for f in sys.meta_path):
            return self.active
        ok, why = (False, "") if os.environ.get("GUILD_PURE") == "1" else self.built()
        if ok:
            try:
                importlib.import_module(self.library + "__mypyc")
            except ImportError as e:
                ok, why = False, f"its shared library does not load ({e})"
        if not ok:
            sys.meta_path.insert(0, _SourceFirst(self.modules, self.root))
            if why:
                warnings.warn(f"{self.package}: the compiled {self.what} are not used: {why}; "
                              "running them as pure Python (pip install -e . compiles them "
                              "again)", StaleBuildWarning, stacklevel=4)
        self.active = ok
        return ok


def _sources(folder: str) -> list[str]:
    """Every ``.py`` file under ``folder``, in a fixed order."""
    found = []
    for top, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        found += [os.path.join(top, f) for f in sorted(files) if f.endswith(".py")]
    return found


RULES = Group.described(globals(), _ROOT)


def source_digest(root: str = _ROOT) -> str:
    """The rules' ``Group.source_digest``."""
    return RULES.source_digest(root)


def build_record(root: str = _ROOT) -> dict:
    """The rules' ``Group.build_record``."""
    return RULES.build_record(root)


class _SourceFirst:
    """A meta-path finder that loads ``names`` (the compiled modules) from their ``.py`` files."""

    def __init__(self, names: Iterable[str], root: str = _ROOT) -> None:
        self.names = frozenset(names)
        self.root = root

    def find_spec(self, name: str, path: object = None, target: object = None):
        if name in self.names:
            return importlib.util.spec_from_file_location(name, source_path(name, self.root))
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
    """The rules' ``Group.choose`` (called by ``import sim`` first); sets ``active``."""
    global active
    active = RULES.choose()
    return active
