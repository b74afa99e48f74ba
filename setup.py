"""Build: compiles the engine's hot modules (``sim.native.COMPILED``) with mypyc.

Everything else is in pyproject.toml.  ``GUILD_BUILD`` chooses: ``auto`` (default) compiles and,
if that fails (no C compiler, say), installs the pure-Python package with a warning; ``native``
fails the install instead (CI); ``pure`` does not compile.  The build writes ``sim/native.json``
(the digest of the sources it compiled) last, so that a failed or partial build never runs:
``sim.native.choose`` uses compiled modules only beside a record that matches their sources.
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
MODE = os.environ.get("GUILD_BUILD", "auto")
if MODE not in ("auto", "native", "pure"):
    sys.exit(f"setup.py: GUILD_BUILD must be auto, native or pure; got {MODE!r}")


def _warn(msg: str) -> None:
    print(f"guild-game: {msg}; installing the pure-Python engine (same rules, slower; "
          "GUILD_BUILD=native makes this an error)", file=sys.stderr)


def _retire_record(base: str) -> str:
    """Remove the build record under ``base`` (its compiled files then never run); its path."""
    stamp = os.path.join(base, "sim", native["STAMP"])
    if os.path.exists(stamp):
        os.remove(stamp)
    return stamp


class BuildNative(build_ext):
    """build_ext that builds all of the group or none of it, and records what it compiled."""

    def run(self) -> None:
        stamp = _retire_record(HERE if self.inplace else self.build_lib)  # until it is whole
        if not self.extensions:
            return
        try:
            super().run()
        except Exception as e:  # noqa: BLE001 - any compiler or linker failure
            if MODE == "native":
                raise
            _warn(f"compiling sim with mypyc failed ({type(e).__name__}: {e})")
            return
        os.makedirs(os.path.dirname(stamp), exist_ok=True)
        with open(stamp, "w", encoding="utf-8") as f:
            json.dump(native["build_record"](HERE), f)


def _extensions() -> list:
    commands = {a for a in sys.argv[1:] if not a.startswith("-")}
    if MODE == "pure" and commands - {"egg_info", "dist_info", "sdist"}:
        _retire_record(HERE)  # an earlier build in the tree must not run (no build_ext may)
    if MODE == "pure" or commands <= {"egg_info", "dist_info", "sdist"}:
        return []  # metadata alone (pip asks for it before the build): no type check
    try:
        from mypyc.build import mypycify
        paths = [os.path.relpath(native["source_path"](m, HERE), HERE)
                 for m in native["COMPILED"]]
        return mypycify(paths, opt_level="3", group_name=native["GROUP"])
    except (Exception, SystemExit) as e:  # noqa: BLE001 - mypy's type errors exit
        if MODE == "native":
            raise
        _warn(f"mypyc could not compile sim ({type(e).__name__}: {e})")
        return []


setup(ext_modules=_extensions(), cmdclass={"build_ext": BuildNative})
