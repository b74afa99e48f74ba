"""Build: compiles the hot modules with mypyc, in two groups (``sim.native.Group``): the engine's
rules (``sim.native.COMPILED``) and the scripted baselines (``agents.baselines.native.COMPILED``).

Everything else is in pyproject.toml; docs/build.md tells the whole story.  ``GUILD_BUILD``
chooses: ``auto`` (default) compiles and, if that fails (no C compiler, say), installs the
pure-Python package and records why, which ``import sim`` then says in one line; ``native``
fails the install instead (CI); ``pure`` does not compile.  A group's build is kept in a cache
(``GUILD_BUILD_CACHE``, default ``$XDG_CACHE_HOME/guild-game/mypyc``; ``off`` bypasses it),
keyed by its sources, Python, mypy and the compiler settings, so that installing again (an
extra, another checkout of the same sources) copies it instead of compiling.  Each group's
record (``native.json`` beside its library: the sources it was built from) is written last, so
that a failed or partial build never runs.  Each group is compiled by its own mypyc run, so that
the baselines reach the rules through Python imports (the rules may run from source while the
baselines stay compiled).  A build removes the compiled files that belong to no group (a pure
build, all of them).
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import runpy
import shutil
import sys
import sysconfig
import tempfile
import time

from setuptools import Distribution, Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.errors import CCompilerError

HERE = os.path.dirname(os.path.abspath(__file__))
native = runpy.run_path(os.path.join(HERE, "sim", "native.py"))
# Each group as its package's native module describes it (sim.native.Group.described).
GROUPS = [native["Group"].described(spec, HERE) for spec in (
    native, runpy.run_path(os.path.join(HERE, "agents", "baselines", "native.py")))]
MODE = os.environ.get("GUILD_BUILD", "auto")
if MODE not in ("auto", "native", "pure"):
    sys.exit(f"setup.py: GUILD_BUILD must be auto, native or pure; got {MODE!r}")
# The C compiler's settings: -O2 and no debug information compile faster than mypyc's default
# -O3 -g1 and run as fast (docs/build.md has the figures).
OPT_LEVEL, DEBUG_LEVEL = "2", "0"
SUFFIX = sysconfig.get_config_var("EXT_SUFFIX")
KEEP = 12  # cache entries kept (the most recently used)


def say(msg: str) -> None:
    """One line on stderr, and on the terminal too when stderr is not one: pip keeps a build's
    output to itself (unless -v), so a person would otherwise wait minutes without a word."""
    line = f"guild-game: {msg}"
    print(line, file=sys.stderr, flush=True)
    if os.environ.get("GUILD_BUILD_TTY", "1") == "0" or _isatty(sys.stderr):
        return
    try:
        with open("/dev/tty", "w", encoding="utf-8") as tty:  # no terminal: OSError
            tty.write(line + "\n")
    except OSError:
        pass


def _isatty(stream: object) -> bool:
    try:
        return bool(stream.isatty())  # type: ignore[attr-defined]
    except (AttributeError, ValueError):
        return False


def cache_root() -> str | None:
    """The build cache's folder, or None if ``GUILD_BUILD_CACHE=off``."""
    where = os.environ.get("GUILD_BUILD_CACHE", "")
    if where == "off":
        return None
    return where or os.path.join(os.environ.get("XDG_CACHE_HOME") or
                                 os.path.join(os.path.expanduser("~"), ".cache"),
                                 "guild-game", "mypyc")


def cache_key(group, record: dict) -> str:
    """What a group's build depends on: its sources, this file, Python, mypy, the compiler."""
    try:
        from importlib.metadata import version
        mypy = version("mypy")
    except Exception:  # noqa: BLE001 - not installed: no build to match but a cached one
        mypy = None
    config = {"record": record, "library": group.library, "setup": native["digest"](__file__),
              "python": sys.version, "suffix": SUFFIX, "mypy": mypy,
              "cc": [os.environ.get(k, sysconfig.get_config_var(k)) for k in
                     ("CC", "CFLAGS", "LDSHARED")]}
    return hashlib.sha256(json.dumps(config, sort_keys=True).encode()).hexdigest()[:32]


def _place(source: str, target: str) -> None:
    """Copy a file so that it appears whole (a process that has the old one open keeps it)."""
    os.makedirs(os.path.dirname(target), exist_ok=True)
    part = f"{target}.{os.getpid()}.part"
    shutil.copyfile(source, part)
    os.replace(part, target)


def _write_json(path: str, value: dict) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(f"{path}.part", "w", encoding="utf-8") as f:
        json.dump(value, f, indent=0)
    os.replace(f"{path}.part", path)


def fetch(group, key: str, base: str) -> bool:
    """Copy the group's build under ``base`` from the cache if it holds a whole one."""
    root = cache_root()
    entry = os.path.join(root or "", key)
    if root is None or not os.path.isdir(entry):
        return False
    try:
        with open(os.path.join(entry, "entry.json"), encoding="utf-8") as f:
            files = json.load(f)["files"]
        if sorted(files) != sorted(group.extensions(SUFFIX)) or any(
                native["digest"](os.path.join(entry, rel)) != files[rel] for rel in files):
            raise ValueError("its files are not those it lists")
    except (OSError, ValueError, KeyError, TypeError) as e:
        say(f"ignoring a broken build cache entry ({entry}: {e})")
        shutil.rmtree(entry, ignore_errors=True)
        return False
    for rel in files:
        _place(os.path.join(entry, rel), os.path.join(base, rel))
    os.utime(entry)  # recently used
    say(f"the {group.what}: copied from the build cache ({entry}), not compiled")
    return True


def store(group, key: str, built: str) -> None:
    """Put the group's build (under ``built``) in the cache: whole, or not at all."""
    root = cache_root()
    if root is None:
        return
    part = None
    try:
        os.makedirs(root, exist_ok=True)
        part = tempfile.mkdtemp(prefix=".part-", dir=root)
        files = {}
        for rel in group.extensions(SUFFIX):
            _place(os.path.join(built, rel), os.path.join(part, rel))
            files[rel] = native["digest"](os.path.join(part, rel))
        _write_json(os.path.join(part, "entry.json"), {"files": files})
        os.rename(part, os.path.join(root, key))  # atomic; fails if another build stored it
        part = None
        entries = sorted((e for e in os.scandir(root) if e.is_dir()),
                         key=lambda e: e.stat().st_mtime, reverse=True)
        for old in entries[KEEP:]:  # the least recently used, and parts left by a killed build
            if not old.name.startswith(".part-") or old.stat().st_mtime < time.time() - 3600:
                shutil.rmtree(old.path, ignore_errors=True)
    except OSError as e:
        if not os.path.isdir(os.path.join(root, key)):
            say(f"could not keep the build in the cache {root} ({e})")
    finally:
        if part:
            shutil.rmtree(part, ignore_errors=True)


def tidy(base: str, keep: bool = True) -> None:
    """Remove the groups' records under ``base`` (their compiled files then never run), every
    compiled file in the groups' packages that belongs to no group, and unless ``keep`` the
    groups' own."""
    ours = {os.path.join(base, *rel.split("/")) for g in GROUPS for rel in g.extensions(SUFFIX)
            if keep}
    for top in sorted({g.package.partition(".")[0] for g in GROUPS}):
        for folder, dirs, files in os.walk(os.path.join(base, top)):
            dirs[:] = [d for d in dirs if d != "__pycache__"]
            for name in files:
                path = os.path.join(folder, name)
                if name == native["RECORD"] or (name.endswith((".so", ".pyd"))
                                                and path not in ours):
                    os.remove(path)


def _compile(groups: list, work: str) -> None:
    """mypyc, then the C compiler on every core, for ``groups``: their files under ``work``."""
    from mypyc.build import mypycify

    extensions: list[Extension] = []
    here = os.getcwd()
    os.chdir(HERE)  # mypy reads its settings from pyproject.toml here
    try:
        for group in groups:
            say(f"compiling the {group.what} with mypyc ({len(group.modules)} modules; up to a "
                "few minutes, once for these sources)")
            out = io.StringIO()  # mypy's messages: the first error is the failure's reason
            try:
                with contextlib.redirect_stdout(out):
                    extensions += mypycify(
                        [os.path.relpath(native["source_path"](m, HERE)) for m in group.modules],
                        opt_level=OPT_LEVEL, debug_level=DEBUG_LEVEL, group_name=group.library,
                        target_dir=os.path.join(work, "c"))
            except SystemExit as e:
                errors = [line for line in out.getvalue().splitlines() if ": error:" in line]
                raise RuntimeError(f"mypy: {(errors or [str(e.code)])[0]}") from None
            finally:
                sys.stderr.write(out.getvalue())
    finally:
        os.chdir(here)
    # the two shared libraries first: the rest (one small file a module) fills the other core
    extensions.sort(key=lambda ext: "__mypyc" not in ext.name)
    cmd = build_ext(Distribution({"name": "guild-game", "ext_modules": extensions}))
    cmd.build_lib, cmd.build_temp = os.path.join(work, "lib"), os.path.join(work, "temp")
    cmd.parallel = os.cpu_count() or 1
    cmd.ensure_finalized()
    say(f"compiling C for {len(extensions)} modules on {cmd.parallel} cores")
    cmd.run()


class BuildNative(build_ext):
    """build_ext that builds each group whole (from the cache, else compiled) or not at all,
    and records what it built or why it failed."""

    def run(self) -> None:
        base = HERE if self.inplace else self.build_lib
        tidy(base, keep=MODE != "pure")  # until whole: no record, nothing of no group
        if MODE == "pure":
            return
        records = {g.library: g.record(HERE) for g in GROUPS}  # before mypy reads them
        keys = {g.library: cache_key(g, records[g.library]) for g in GROUPS}
        todo = [g for g in GROUPS if not fetch(g, keys[g.library], base)]
        work = tempfile.mkdtemp(prefix="guild-build-")
        try:
            if todo:
                began = time.monotonic()
                _compile(todo, work)
                root = cache_root()
                say(f"compiled in {time.monotonic() - began:.0f} s" + (
                    f"; kept in {root}, so installing these sources again copies it" if root
                    else ""))
            for group in todo:
                built = os.path.join(work, "lib")
                if group.record(HERE) == records[group.library]:  # no edit while compiling
                    store(group, keys[group.library], built)
                for rel in group.extensions(SUFFIX):
                    _place(os.path.join(built, rel), os.path.join(base, rel))
        except Exception as e:  # noqa: BLE001 - mypy, the compiler, the linker, no mypyc...
            if MODE == "native":
                raise
            why = " ".join(f"{type(e).__name__}: {e}".split())[:300]
            fix = ("install a C compiler and Python's headers, then pip install -e . again"
                   if isinstance(e, (CCompilerError, OSError)) else
                   "pip install -e . brings mypyc ([build-system] requires)"
                   if isinstance(e, ImportError) else "pip install -v -e . shows the whole error")
            say(f"compiling with mypyc failed ({why}); installing the pure-Python engine "
                "(same rules, slower; GUILD_BUILD=native makes this an error)")
            for group in todo:
                records[group.library] = {"failed": why, "fix": fix}
                keys.pop(group.library)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        for group in GROUPS:  # last: a record says its build is whole
            _write_json(group.record_path(base),
                        {**records[group.library], "key": keys.get(group.library)})


# A stand-in extension, so that setuptools runs build_ext (and tags the wheel as platform's):
# what is compiled is decided when the build runs, never while pip only asks for metadata.
if __name__ == "__main__":
    setup(ext_modules=[Extension(GROUPS[0].library + "__mypyc", sources=[])],
          cmdclass={"build_ext": BuildNative})
