"""The compiled rules: which modules ``pip install`` compiles with mypyc, and whether they run.

A plain install compiles the engine's hot modules (``COMPILED``) from their own sources with mypyc
(``setup.py``; docs/build.md), and with the baselines' group (``agents.baselines.native``) the
baseline workload runs in far fewer instructions than in pure Python (README, Speed).  Nothing of
the game is written twice; the pure-Python modules stay the reference.  The compiled modules run
only while they are the build of the sources beside them: the build writes a record (``RECORD``: a
SHA-256 of every source it compiled), and ``choose`` (called by ``import sim`` before anything else)
compares it with the sources of now.  An edited source, a missing, partial or failed build, or
``GUILD_PURE=1`` make every module of the group load from its ``.py`` file instead (all or none:
compiled modules call each other directly, so a mix would run an old rule), and a compiled file that
belongs to no module of the group never shadows its source.  What is wrong is said once a process,
in one line on stderr (a pure install, or ``GUILD_PURE=1``, says nothing).  ``Group`` is that
mechanism for one set of modules; ``agents.baselines.native`` uses it for the scripted baselines.

Standard library only: ``setup.py`` loads this file by path, before anything is installed.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import importlib.machinery
import importlib.util
import json
import os
import sys
from collections.abc import Iterable, Mapping
from types import ModuleType
from typing import Any

__all__ = ["COMPILED", "DEPENDS", "GROUP", "RECORD", "RULES", "WHAT", "Group", "active", "choose",
           "digest", "source_modules"]

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
# mypyc compiled them against the types of the modules they import (the world, intents,
# errors, scoring): an edit anywhere in the two wings makes the build stale, not only an edit
# of a compiled module.
DEPENDS = ("sim/rules", "sim/language")
WHAT = "engine"  # what the one-line message calls them
RECORD = "native.json"  # beside the group's library: what its build is the build of

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the folder holding sim
_SUFFIXES = tuple(importlib.machinery.EXTENSION_SUFFIXES)  # what this interpreter loads
SUFFIX = _SUFFIXES[0]  # what a build names its files: .cpython-311-x86_64-linux-gnu.so
active = False  # whether the compiled modules run in this process (set by choose)
_told = False  # whether this process was told why a group runs as pure Python (once, any group)
_SAID = "GUILD_BUILD_SAID"  # what was said, for the processes this one starts


def source_path(module: str, root: str = _ROOT) -> str:
    """The ``.py`` file of a dotted module name under ``root`` (the folder holding ``sim``)."""
    return os.path.join(root, *module.split(".")) + ".py"


def digest(path: str) -> str:
    """SHA-256 of a file: the one fingerprint of the build's records and cache."""
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


class Group:
    """One mypyc group: modules compiled into one shared library, run all together or not at all.

    ``sim`` has one (``RULES``); ``agents.baselines.native`` makes another for the scripted
    baselines. Each group keeps its own record (``RECORD`` beside its library) and falls back
    on its own: a group's compiled code reaches another group's modules only through Python
    imports. Code compiled against another package's types names it in ``depends``, so that an
    edit there makes this group stale too.
    """

    def __init__(self, modules: Iterable[str], library: str, what: str,
                 root: str = _ROOT, depends: Iterable[str] = ()) -> None:
        self.modules = tuple(modules)
        self.library = library  # mypyc's shared library: <package>/<name>__mypyc.*.so
        self.package = library.rpartition(".")[0]  # where the library and its record live
        self.what = what  # what the one-line message calls the modules: "engine", ...
        self.root = root  # the folder holding the package
        # Packages whose types the modules were compiled against (mypyc checks an argument, a
        # return value or a field read against them): their sources join the record.
        self.depends = tuple(depends)
        self.active = False  # whether the compiled modules run in this process (choose)

    @classmethod
    def described(cls, spec: Mapping[str, Any], root: str) -> Group:
        """The group a package's ``native`` module describes (its ``COMPILED``, ``GROUP``,
        ``WHAT`` and, if any, ``DEPENDS``; ``vars(module)`` or ``runpy``'s globals), with the
        package under ``root``: one description serves ``choose``, ``setup.py`` and the tests."""
        return cls(spec["COMPILED"], spec["GROUP"], spec["WHAT"], root, spec.get("DEPENDS", ()))

    def record_path(self, root: str | None = None) -> str:
        """The group's build record under ``root``."""
        return os.path.join(root or self.root, *self.package.split("."), RECORD)

    def extensions(self, suffix: str = SUFFIX) -> list[str]:
        """The compiled files of a build ('/'-separated, relative to the root): the shared
        library, then one small module per compiled module."""
        return [name.replace(".", "/") + suffix
                for name in (self.library + "__mypyc", *self.modules)]

    def sources(self, root: str | None = None) -> list[str]:
        """The sources a build is the build of ('/'-separated, relative to ``root``): the
        modules' and every ``.py`` file of the packages in ``depends``."""
        root = root or self.root
        found = {os.path.relpath(source_path(m, root), root) for m in self.modules}
        for package in self.depends:
            for top, dirs, files in os.walk(os.path.join(root, package)):
                dirs[:] = [d for d in dirs if d != "__pycache__"]
                found.update(os.path.relpath(os.path.join(top, f), root)
                             for f in files if f.endswith(".py"))
        return sorted(p.replace(os.sep, "/") for p in found)

    def record(self, root: str | None = None) -> dict:
        """What a build of the sources under ``root`` records (``RECORD``)."""
        root = root or self.root
        return {"modules": list(self.modules),
                "files": {p: digest(os.path.join(root, p)) for p in self.sources(root)}}

    def problem(self) -> str | None:
        """``None`` if the compiled build is the build of these sources, else the line that
        says why not (``""``: nothing to say, as for a pure install)."""
        path = self.record_path()
        try:
            with open(path, encoding="utf-8") as f:
                record = json.load(f)
            if "failed" in record:
                return self._line(f"compiling at install failed ({record['failed']})",
                                  record.get("fix") or "pip install -v -e . shows why")
            files = record["files"]
            if record["modules"] != list(self.modules):
                return self._line(f"{self._rel(path)} is the record of other modules than "
                                  f"{self.package}.native.COMPILED")
        except FileNotFoundError:
            return ""  # never compiled: a pure install says nothing
        except (OSError, ValueError, KeyError, TypeError) as e:
            return self._line(f"its build record {self._rel(path)} is unreadable ({e!r})")
        now = self.sources()
        for rel in sorted(set(files) | set(now)):
            if rel not in now:
                return self._line(f"{rel} is gone since the build")
            if rel not in files:
                return self._line(f"{rel} is new since the build")
            try:
                if digest(os.path.join(self.root, rel)) != files[rel]:
                    return self._line(f"{rel} was edited since the build")
            except OSError as e:
                return self._line(f"{rel} cannot be read ({e})")
        for rel, module in zip(self.extensions(), (self.library, *self.modules)):
            if not os.path.exists(os.path.join(self.root, rel)):
                return self._line(f"{module} has no compiled file (a partial build)")
        return None

    def _rel(self, path: str) -> str:
        return os.path.relpath(path, self.root).replace(os.sep, "/")

    def _line(self, why: str, fix: str = "pip install -e . compiles again") -> str:
        return " ".join(f"guild-game: {why}; running the {self.what} as pure Python ({fix})"
                        .split())  # one line, whatever a record holds

    def choose(self) -> bool:
        """Run the compiled modules if they are the build of these sources, else their sources.

        Called once by the package's ``__init__`` before it imports any of them; returns (and
        sets) ``active``. The first group of a process that cannot run says why, in one line on
        stderr, unless the process that started this one said the same; a compiled file beside a
        source that is no module of this group is never loaded.
        """
        global _told
        why = "" if os.environ.get("GUILD_PURE") == "1" else self.problem()
        ok = why is None
        if ok:
            try:
                importlib.import_module(self.library + "__mypyc")
            except ImportError as e:
                ok, why = False, self._line(f"its compiled library does not load ({e})")
        _FINDER.paths.update(self._strays())
        if not ok:
            _FINDER.paths.update((m, source_path(m, self.root)) for m in self.modules)
        if _FINDER.paths and _FINDER not in sys.meta_path:
            sys.meta_path.insert(0, _FINDER)
        if why and not _told:
            _told = True
            if os.environ.get(_SAID) != why:  # else the process that started this one said it
                os.environ[_SAID] = why
                if sys.stderr is not None:  # (None: started with stderr closed; print would
                    with contextlib.suppress(OSError, ValueError):  # go to stdout) a note only
                        print(why, file=sys.stderr, flush=True)
        self.active = ok
        return ok

    def _strays(self) -> dict[str, str]:
        """Compiled files under the group's top package beside a ``.py`` file whose module is
        not in the group (left by an older build, say): their modules, by source file."""
        found = {}
        top = os.path.join(self.root, self.package.partition(".")[0])
        for folder, dirs, files in os.walk(top):
            dirs[:] = [d for d in dirs if d != "__pycache__"]
            for name in files:
                if name.endswith(_SUFFIXES):
                    module = os.path.relpath(os.path.join(folder, name.partition(".")[0]),
                                             self.root).replace(os.sep, ".")
                    source = source_path(module, self.root)
                    if module not in self.modules and os.path.exists(source):
                        found[module] = source
        return found


class _SourceFirst:
    """A meta-path finder that loads modules (by name) from the ``.py`` files given."""

    def __init__(self, paths: dict[str, str]) -> None:
        self.paths = paths

    def find_spec(self, name: str, path: object = None, target: object = None):
        if name in self.paths:
            return importlib.util.spec_from_file_location(name, self.paths[name])
        return None


_FINDER = _SourceFirst({})  # the modules this process runs from source whatever is beside them
RULES = Group.described(globals(), _ROOT)


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
    finder = _SourceFirst({n: source_path(n) for n in swapped})
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
