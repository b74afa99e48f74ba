"""Build: compiles the hot modules with mypyc, in two groups (``sim.native.Group``): the engine's
rules (``sim.native.COMPILED``) and the scripted baselines (``agents.baselines.native.COMPILED``).

Everything else is in pyproject.toml.  ``GUILD_BUILD`` chooses: ``auto`` (default) compiles and,
if that fails (no C compiler, say), installs the pure-Python package with a warning; ``native``
fails the install instead (CI); ``pure`` does not compile.  The build writes each group's record
(``sim/native.json``, ``agents/native.json``: the digest of the sources it compiled) last, so
that a failed or partial build never runs: ``Group.choose`` uses compiled modules only beside a
record that matches their sources.  Each group is compiled by its own mypyc run, so that the
baselines reach the rules through Python imports (the rules may run from source while the
baselines stay compiled; the baselines' record also covers sim's sources, whose types they were
compiled against).
"""

from __future__ import annotations

import json
import os
import runpy
import sys

from setuptools import setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))
native = runpy.run_path(os.path.join(HERE, "sim", "native.py"))
# Each group as its package's native module describes it (sim.native.Group.described).
GROUPS = [native["Group"].described(spec, HERE) for spec in (
    native, runpy.run_path(os.path.join(HERE, "agents", "baselines", "native.py")))]
MODE = os.environ.get("GUILD_BUILD", "auto")
if MODE not in ("auto", "native", "pure"):
    sys.exit(f"setup.py: GUILD_BUILD must be auto, native or pure; got {MODE!r}")


def _warn(msg: str) -> None:
    print(f"guild-game: {msg}; installing the pure-Python engine (same rules, slower; "
          "GUILD_BUILD=native makes this an error)", file=sys.stderr)


def _retire_records(base: str) -> list[str]:
    """Remove the build records under ``base`` (their compiled files then never run); their
    paths, by group."""
    stamps = [group.stamp(base) for group in GROUPS]
    for stamp in stamps:
        if os.path.exists(stamp):
            os.remove(stamp)
    return stamps


class BuildNative(build_ext):
    """build_ext that builds all of the groups or none of them, and records what it compiled."""

    def finalize_options(self) -> None:
        super().finalize_options()
        if self.parallel is None:  # the groups' C files compile side by side, one per core
            self.parallel = os.cpu_count() or 1

    def run(self) -> None:
        stamps = _retire_records(HERE if self.inplace else self.build_lib)  # until whole
        if not self.extensions:
            return
        try:
            super().run()
        except Exception as e:  # noqa: BLE001 - any compiler or linker failure
            if MODE == "native":
                raise
            _warn(f"compiling with mypyc failed ({type(e).__name__}: {e})")
            return
        for group, stamp in zip(GROUPS, stamps):
            os.makedirs(os.path.dirname(stamp), exist_ok=True)
            with open(stamp, "w", encoding="utf-8") as f:
                json.dump(group.build_record(HERE), f)


def _extensions() -> list:
    commands = {a for a in sys.argv[1:] if not a.startswith("-")}
    if MODE == "pure" and commands - {"egg_info", "dist_info", "sdist"}:
        _retire_records(HERE)  # an earlier build in the tree must not run (no build_ext may)
    if MODE == "pure" or commands <= {"egg_info", "dist_info", "sdist"}:
        return []  # metadata alone (pip asks for it before the build): no type check
    try:
        from mypyc.build import mypycify
        return [ext for group in GROUPS for ext in mypycify(
            [os.path.relpath(native["source_path"](m, HERE), HERE) for m in group.modules],
            opt_level="3", group_name=group.library)]
    except (Exception, SystemExit) as e:  # noqa: BLE001 - mypy's type errors exit
        if MODE == "native":
            raise
        _warn(f"mypyc could not compile ({type(e).__name__}: {e})")
        return []


setup(ext_modules=_extensions(), cmdclass={"build_ext": BuildNative})
