"""Seats that run apart run in a sandbox: bubblewrap, an unprivileged uid, limits that hold.

Every policy a league does not trust plays in a seat process (``league.apart.isolated``) in one
bubblewrap container per policy and league process, whose zygote (``league.seat.zygote``) forks
each seat into namespaces of its own.  What a seat sees and may do:

* **Files:** read-only, ``/usr``, the interpreter's prefixes (the standard library and installed
  packages), our packages' folders when they lie elsewhere (``sim/``, ``agents/``,
  ``league/seat/`` with ``league/__init__.py``, not the repository around them) and the
  policy's own files (module, or the top package of a package's module: :func:`policy_files`;
  ``sb3:`` model, ``exec:`` program and the files its command line names), each at its real
  place (:func:`real`).  No home folder, no ``/etc``, no league folder (``--out`` is covered even
  under a bound folder, even named through a link), no other policy of the league's own files
  (:func:`rivals_files`: modules, ``exec:`` programs and ``sb3:`` zips), no secret or key.
  ``HOME`` and ``TMPDIR`` are a scratch tmpfs of :data:`SCRATCH_MB`, ``/tmp`` another (the
  policy's files under /tmp bound again); ``/dev/shm`` holds
  :data:`league.seat.zygote.SHM_MB`; ``/dev/pts`` is the seat's own devpts instance.
* **Processes:** user, pid, network, IPC, UTS and mount namespaces; the seat is pid 1 of its
  own, so it sees no other process and all it starts ends with it.  No capabilities,
  ``no_new_privs``, no kernel keyrings (a seccomp filter); a league run as root gives the
  sandbox an unprivileged uid of its own (from :data:`UID_BASE`), so root's files stay
  unreadable and ``RLIMIT_NPROC`` (:data:`NPROC`) bounds its processes and threads.
* **Environment:** ``PATH``, ``HOME``, ``TMPDIR``, ``LANG``, ``MALLOC_ARENA_MAX``, the
  ``PYTHON*`` settings the seat host needs and the engine's switches (:data:`PASSED_ENV`);
  nothing else of the league's.  The zygote's interpreter ignores them (``PYTHONPATH`` names
  the policy's folders: ``league.seat.zygote``).
* **Limits,** enforced from outside: address space and CPU time per process, the decision
  timeout and episode deadline (``league.core.episode``) and, where a root league may make cgroup
  v1 groups (:data:`CGROUP_CONTROLLERS`; those missing are said in one line on stderr, once
  per process), the memory (:data:`SANDBOX_MEMORY_MB`) and processes of the whole sandbox, and,
  in groups of each seat's own (``league.seat.zygote``), the memory of each seat with all it
  starts (its ``memory_mb``, ``--seat-memory``) and its CPU share (:data:`SEAT_CPU_SHARES`:
  however many processes or sessions it runs, a seat weighs as one busy process, so it cannot
  starve another seat's decisions, and a policy's seats do not share one weight).

The league talks to a seat only through pipes (``league.seat.protocol``) and never reads a file
a seat wrote.  :func:`run` runs one command the same way (no zygote), bounded in time, memory and
output: the command line loads ``sb3:`` zips so (``league.apart.sb3_load``).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib
import importlib.machinery
import importlib.util
import itertools
import math
import os
import selectors
import shlex
import shutil
import signal
import subprocess
import sys
import sysconfig
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from league.seat.zygote import OLD_TMP, SEAT_CGROUP_PREFIX, SEAT_CPU_SEPARATOR, Launch
from league.seat.zygote import OUR_PACKAGES as OUR_TOPS

SCRATCH_MB = 64            # each seat's scratch folder (a tmpfs)
SANDBOX_MEMORY_MB = 8192   # all the processes of one sandbox (a memory control group, where
                           # the machine lets the league make one); each seat's: its memory_mb
SEAT_CPU_SHARES = 1024     # one seat's weight in the CPU scheduler, however many processes it
                           # runs: a busy process's (cpu.shares of a cpu control group)
CGROUP_CONTROLLERS = ("memory", "pids", "cpu")
CGROUP_ROOT = "/sys/fs/cgroup"
CGROUP_PREFIX = "guild-sandbox-"
SWEEP_AGE_S = 60.0         # a sandbox's group made (or changed) more recently is never swept
NPROC = 4096               # processes and threads of one sandbox (its uid's RLIMIT_NPROC);
                           # each seat in it: league.seat.zygote.SEAT_NPROC
UID_BASE = 2_000_000       # sandboxes run as uids UID_BASE .. UID_BASE + UID_SPAN - 1
UID_SPAN = 1_000_000
# What the seat host imports: sim, agents and league.seat (with the league package's __init__,
# which imports nothing eagerly), never the rest of the league.
OUR_PACKAGES = ("sim", "agents", "league.seat")
PASSED_ENV = ("GUILD_PURE", "GUILD_BUILD_SAID", "GUILD_CHECK_PARSED", "OPENBLAS_CORETYPE",
              "OPENBLAS_L2_SIZE", "OMP_NUM_THREADS")
MODES = ("bwrap", "none")
INSTALL_HINT = ("install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap), or accept "
                "the risk with --trust (every policy in the league's process) or --sandbox "
                "none (seat processes without a sandbox)")

_UIDS = itertools.count()


class SandboxError(ValueError):
    """The sandbox cannot be made (bubblewrap missing, or it cannot start here)."""


def _uid() -> int:
    """A uid of its own for each sandbox this process starts (shared only by chance with
    another league's, which would share the process limit, nothing else)."""
    return UID_BASE + (os.getpid() * 1009 + next(_UIDS)) % UID_SPAN


@functools.lru_cache(maxsize=1)
def problem() -> str | None:
    """Why a sandbox cannot start on this machine (None: it can); tried once per process."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return "bubblewrap (bwrap) is not installed"
    argv = [*_prefix(bwrap, _binds([]), (), os.getuid() == 0), "/bin/true"]
    try:
        done = subprocess.run(argv, capture_output=True, timeout=30, env={})
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"bubblewrap could not start ({e})"
    if done.returncode != 0:
        said = done.stderr.decode("utf-8", "replace").strip().splitlines()
        return f"bubblewrap could not start a sandbox ({said[-1] if said else done.returncode})"
    return None


def require() -> None:
    """Refuse in one line (:class:`SandboxError`) when no sandbox can start here."""
    why = problem()
    if why is not None:
        raise SandboxError(f"seats that run apart need a sandbox, but {why}: {INSTALL_HINT}")


@dataclass(frozen=True)
class Bind:
    source: str
    target: str
    directory: bool
    link: bool = False  # a symbolic link at target to source (bound at its own place)


def real(path: Path) -> Path:
    """``path`` made absolute with its folders' links resolved, not its own name's: where a
    sandbox shows it (at its folder's real place; itself a link, if it is one, to its target
    bound at its own).  A module reached through a linked folder keeps its name, and so does a
    program (``argv[0]``)."""
    path = Path(os.path.abspath(path))
    return path.parent.resolve() / path.name if path.name else path


def _inside(path: Path, binds: list[Bind]) -> bool:
    """Whether ``path`` is a bound path or lies in a bound folder."""
    return any(path == Path(b.target) or (b.directory and Path(b.target) in path.parents)
               for b in binds if not b.link)


def _binds(extra: list[Path]) -> list[Bind]:
    """The read-only allowlist: the interpreter, our packages, and ``extra`` (the policy's),
    each at its real place; a policy's path that is itself a link is shown as one too."""
    roots = [Path(sys.base_prefix), Path(sys.prefix), *_our_folders(), *extra]
    out: list[Bind] = []
    for root in roots:
        path = root.resolve()
        if path == Path("/") or not path.exists():
            continue
        if _inside(path, out):
            continue  # already inside a bound folder
        out = [b for b in out if path not in Path(b.target).parents]
        out.append(Bind(str(path), str(path), path.is_dir()))
    for path in extra:
        at = real(path)
        if at != at.resolve() and at.resolve().exists() and not _inside(at.parent, out) \
                and not any(b.link and b.target == str(at) for b in out):
            out.append(Bind(str(at.resolve()), str(at), False, link=True))
    return out


def _system() -> list[str]:
    """``/usr`` and the top-level links or folders into it (``/bin``, ``/lib``...)."""
    args = ["--ro-bind", "/usr", "/usr"]
    for name in ("bin", "sbin", "lib", "lib32", "lib64", "libx32"):
        top = Path("/") / name
        if top.is_symlink():
            args += ["--symlink", os.readlink(top), str(top)]
        elif top.is_dir():
            args += ["--ro-bind", str(top), str(top)]
    args += ["--perms", "0755", "--dir", "/etc", "--perms", "0755", "--dir", "/etc/ssl"]
    for name in ("/etc/ld.so.cache", "/etc/localtime", "/etc/ssl/openssl.cnf"):  # public
        if Path(name).is_file():
            args += ["--ro-bind", name, name]
    return args


def _parents(binds: list[Bind]) -> list[str]:
    """Create every folder above a bind as world-readable (bubblewrap copies the mode of the
    source's parents: ``/root`` would stay closed to the sandbox's uid)."""
    made: set[str] = set()
    args: list[str] = []
    for b in binds:
        for parent in reversed(Path(b.target).parents):
            p = str(parent)
            if p not in made and p not in ("/", "/usr"):
                made.add(p)
                args += ["--perms", "0755", "--dir", p]
    return args


def _prefix(bwrap: str, binds: list[Bind], hidden: tuple[str, ...], root: bool,
            env: dict[str, str] | None = None) -> list[str]:
    """The bubblewrap command line up to the program it runs."""
    # As root, no user namespace here (it would map uid 0 alone, and setpriv needs the rest);
    # each seat makes its own (league.seat.zygote).  Otherwise bubblewrap makes one.
    args = [bwrap, *([] if root else ["--unshare-user"]), "--unshare-pid", "--unshare-net",
            "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try", "--die-with-parent",
            "--new-session", "--clearenv"]
    for key, value in (env or {}).items():
        args += ["--setenv", key, value]
    args += _system() + _parents(binds)
    for b in binds:
        args += ["--symlink", b.source, b.target] if b.link else \
            ["--ro-bind", b.source, b.target]
    for path in (str(Path(h).resolve()) for h in hidden):  # the league's folder, rivals'
        if _inside(Path(path), [b for b in binds if b.directory]):  # files, under a bound one
            if Path(path).is_dir():
                args += ["--tmpfs", path]
            elif Path(path).is_file():
                args += ["--ro-bind", "/dev/null", path]
    args += ["--proc", "/proc", "--dev", "/dev", "--perms", "0755", "--dir", "/scratch",
             "--chdir", "/"]
    args += ["--perms", "0755", "--dir", "/tmp", "--perms", "0755", "--dir", OLD_TMP]
    # The proc mount must be fully visible for a seat's own (bubblewrap covers /proc/irq and
    # /proc/bus with read-only copies of themselves): a shell with CAP_SYS_ADMIN uncovers them,
    # then setpriv drops every capability (as root: and becomes the sandbox's own uid).
    who = (["--reuid", str(uid := _uid()), "--regid", str(uid), "--clear-groups"]
           if root else [])
    args += ["--cap-add", "CAP_SYS_ADMIN"]
    if root:
        args += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID", "--cap-add", "CAP_SETPCAP"]
    setpriv = shlex.join(["setpriv", *who, "--inh-caps=-all", "--bounding-set=-all",
                          "--no-new-privs", "--"])
    args += ["--", "/bin/sh", "-c",
             f'umount /proc/irq /proc/bus 2>/dev/null; unset PWD OLDPWD; exec {setpriv} "$@"',
             "sandbox"]
    return args


def policy_files(spec: str) -> tuple[list[Path], list[str], str]:
    """What a policy spec needs to see: its files, the folders to put on its import path, and
    the spec as the sandbox runs it (paths made absolute), each where the sandbox shows it
    (:func:`real`: a folder on ``PYTHONPATH`` reached through a link is shown at its target).

    A module file alone (``mod:Name``); for a module of a package (``pkg.sub.mod:Name``), or a
    package, the top package whole, as its imports may reach anywhere in it (``from ..common
    import X``).  The other policies of a league that lie in it (a rival's ``pkg/bob/`` beside
    ``pkg/alice/``) are hidden by the league (:func:`rivals_files`)."""
    text = spec.strip()
    low = text.lower()
    if low.startswith("sb3:"):
        path = real(Path(text[4:]).expanduser())
        return [path], [], f"sb3:{path}"
    if ":" not in text:  # a name our registry (or an installed package's entry point) knows
        return [], [], text
    chain = _module_chain(text.split(":", 1)[0].strip())
    if not chain:
        return [], [], text
    top = chain[0]
    if top.submodule_search_locations is None:  # a module file, at the top
        assert top.origin is not None
        origin = real(Path(top.origin))
        return [origin], [str(origin.parent)], text
    files = [real(Path(p)) for p in top.submodule_search_locations]
    return files, sorted({str(p.parent) for p in files}), text


def shadowed(spec: str) -> str | None:
    """Why a ``module:Name`` spec cannot play in a sandbox (None: it can): its top module is
    one of our packages (unless it names a policy of ours) or a module this interpreter's
    standard library has (its folders, or built in), which a seat imports first (the zygote
    has most of them already: ``league.seat.zygote``); one that only another system has
    (``nt``) shadows nothing."""
    text = spec.strip()
    if ":" not in text or text.lower().startswith(("sb3:", "ppo:", "llm:", "exec:", "trusted:")):
        return None
    top = text.split(":", 1)[0].strip().split(".")[0]
    if top in OUR_TOPS and not _ours(text):
        return (f"policy {text!r}: its module {top!r} is named like one of the league's own "
                f"packages ({', '.join(OUR_TOPS)}), which its sandboxed seat imports instead: "
                "rename it")
    if top in sys.builtin_module_names or _in_stdlib(top):
        return (f"policy {text!r}: its module {top!r} is named like a module of Python's "
                "standard library, which its sandboxed seat imports instead: rename it")
    return None


def _ours(spec: str) -> bool:
    """Whether ``spec`` (``sim...``, ``agents...``, ``league...``) names a policy of our own
    packages (``agents.baselines:Magpie``), which its seat imports as the league does; a
    policy's own ``sim.py`` names none there."""
    module, _, name = spec.partition(":")
    try:
        return hasattr(importlib.import_module(module.strip()), name.strip().split(".")[0])
    except Exception:  # noqa: BLE001 - no such module of ours (or it fails): not ours
        return False


def _in_stdlib(top: str) -> bool:
    """Whether the standard library's folders (``lib-dynload`` too) hold top module ``top``:
    installed there, not only named in ``sys.stdlib_module_names`` (``test`` is, ``nt`` is
    not, on Linux)."""
    tops = dict.fromkeys((sysconfig.get_path("stdlib"), sysconfig.get_path("platstdlib")))
    folders = [*tops, *(os.path.join(folder, "lib-dynload") for folder in tops)]
    try:
        return importlib.machinery.PathFinder.find_spec(top, folders) is not None
    except (ImportError, ValueError):
        return False


def own_files(spec: str) -> list[Path]:
    """A policy's own files, which no other policy's sandbox may show (their real paths): its
    module file, or the package its module is in (its own when it is a package), not the
    packages above it that others may share; an ``sb3:`` zip; an ``exec:`` program's files
    (:func:`exec_files`) but the machine's (a program found on ``PATH``, what every sandbox
    shows); none for a name the registry knows or a module not found."""
    text = spec.strip()
    low = text.lower()
    if low.startswith("sb3:"):
        path = Path(text[4:]).expanduser()
        return [path.resolve()] if _exists(path) else []
    if low.startswith("exec:"):
        try:
            argv = shlex.split(text[5:])
        except ValueError:
            return []
        files, _ = exec_files(argv)
        return [f.resolve() for f in files if not _shared(f.resolve())]
    if low.startswith(("ppo:", "llm:", "trusted:")) or ":" not in text:
        return []
    chain = _module_chain(text.split(":", 1)[0].strip())
    if not chain:
        return []
    last = chain[-1]
    if last.submodule_search_locations is not None:  # a package: the policy's own
        return [Path(p).resolve() for p in last.submodule_search_locations]
    if len(chain) == 1:  # a module file at the top
        return [Path(last.origin).resolve()] if last.origin else []
    # a module of a package: the package it is in, unless that is the top (shared by none)
    package = chain[-2]
    if len(chain) == 2:
        return [Path(last.origin).resolve()] if last.origin else []
    return [Path(p).resolve() for p in package.submodule_search_locations or ()]


def _shared(path: Path) -> bool:
    """Whether ``path`` (resolved) is, lies in or holds what every sandbox shows: the system,
    the interpreter's prefixes, our packages; no policy's own."""
    system = [Path("/usr"), Path("/etc"), *(Path("/") / name for name in
                                             ("bin", "sbin", "lib", "lib32", "lib64", "libx32"))]
    for root in (*system, *(b.source for b in _binds([]))):
        root = Path(root).resolve()
        if root == path or root in path.parents or path in root.parents:
            return True
    return False


def rivals_files(spec: str, policies: Sequence[str]) -> tuple[str, ...]:
    """The other policies' own files (:func:`own_files`) that ``spec``'s sandbox must hide:
    those that neither are nor hold its own files, nor, for a module policy, lie in its
    package (one entrant's two policies); a folder an ``exec:`` command line names is no
    package, so the rivals in it are hidden."""
    mine = own_files(spec)
    package = not spec.strip().lower().startswith(("exec:", "sb3:"))

    def related(rival: Path, own: Path) -> bool:
        return rival == own or rival in own.parents or (package and own in rival.parents)

    hidden: list[str] = []
    for other in policies:
        if other.strip() == spec.strip():
            continue
        for f in own_files(other):
            if not any(related(f, m) for m in mine) and str(f) not in hidden:
                hidden.append(str(f))
    return tuple(hidden)


def _module_chain(module: str) -> list[importlib.machinery.ModuleSpec]:
    """The specs of ``module`` and the packages above it, top first, found as a seat started
    in this folder would import them, running none of their code; as far as they are found
    (a module that a package's ``__init__`` makes is not: the chain ends at that package).
    Empty when the top is not found, or is built into the interpreter."""
    parts = module.split(".")
    if not all(part.isidentifier() for part in parts):
        return []
    chain: list[importlib.machinery.ModuleSpec] = []
    where: list[str] = [os.getcwd(), *sys.path]
    for i in range(len(parts)):
        try:
            found = importlib.machinery.PathFinder.find_spec(".".join(parts[:i + 1]), where)
        except (ImportError, ValueError):
            found = None
        if found is None or (found.submodule_search_locations is None
                             and found.origin in (None, "built-in", "frozen")):
            break
        chain.append(found)
        if found.submodule_search_locations is None:
            break  # a module: nothing below it
        where = list(found.submodule_search_locations)
    return chain


def exec_files(argv: list[str]) -> tuple[list[Path], list[str]]:
    """An ``exec:`` program's files (its executable and every argument that names an existing
    path) and its command line with those paths made absolute (the seat works in its
    scratch folder)."""
    files: list[Path] = []
    out: list[str] = []
    for i, arg in enumerate(argv):
        found = shutil.which(arg) if i == 0 else None
        path = Path(found) if found else Path(arg)
        if (found or "/" in arg or i > 0) and _exists(path):
            path = real(path)
            files.append(path)
            out.append(str(path))
        else:
            out.append(arg)
    return files, out


def _exists(path: Path) -> bool:
    """Whether ``path`` names something; an argument that cannot be a path (too long a name,
    a NUL) names nothing, as an inline JSON argument does."""
    try:
        return path.exists()
    except (OSError, ValueError):
        return False


def _package_folders(name: str) -> list[Path]:
    """The folders of package ``name``, wherever it is installed."""
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        return []
    return [Path(p) for p in spec.submodule_search_locations]


def _our_folders() -> list[Path]:
    """The folders of our packages (``sim/``, ``agents/``, ``league/seat/``) and the
    ``__init__`` files of the packages above a subpackage (``league/__init__.py``)."""
    out: list[Path] = []
    for name in OUR_PACKAGES:
        for folder in _package_folders(name):
            out += [folder, *(parent / "__init__.py" for parent in
                              folder.parents[:name.count(".")])]
    return out


def _our_paths() -> list[str]:
    """The folders holding our packages (on the seat's import path)."""
    return sorted({str(folder.parents[name.count(".")]) for name in OUR_PACKAGES
                   for folder in _package_folders(name)})


def environment(pythonpath: list[str]) -> dict[str, str]:
    """A seat's environment.  ``MALLOC_ARENA_MAX``: glibc reserves 64 MB of address space for
    each malloc arena, up to eight a core, so a policy with a thread per core reached the
    seat's address-space cap (``--seat-memory``) by reservations alone, and a thread that
    could not get its arena died unstarted while the policy waited for it forever."""
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/scratch", "TMPDIR": "/scratch",
           "LANG": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1", "PYTHONNOUSERSITE": "1",
           "MALLOC_ARENA_MAX": "2", "PYTHONPATH": os.pathsep.join(pythonpath)}
    env.update((k, os.environ[k]) for k in PASSED_ENV if k in os.environ)
    return env


def launch(files: list[Path], pythonpath: list[str], hidden: tuple[str, ...] = (),
           scratch_mb: int = SCRATCH_MB) -> Launch:
    """The sandbox for a policy with these files (refuses when none can start here); the same
    one for the same arguments in this process, so its seats share one zygote."""
    require()
    # Only what exists can be covered; a folder made later (a league's --out, after the check
    # of its policies) gets a launch of its own, so a sandbox never shows it.  Each at its
    # real place: a sandbox's binds are (an --out given through a link is still covered).
    shown = tuple(dict.fromkeys(str(Path(h).resolve()) for h in hidden))
    return _launch(tuple(files), tuple(pythonpath),
                   tuple(h for h in shown if Path(h).is_dir() or Path(h).is_file()), scratch_mb)


@functools.lru_cache(maxsize=256)
def _launch(files: tuple[Path, ...], pythonpath: tuple[str, ...], hidden: tuple[str, ...],
            scratch_mb: int) -> Launch:
    bwrap = shutil.which("bwrap")
    assert bwrap is not None
    ours = _our_paths()
    path = list(dict.fromkeys([*pythonpath, *ours]))
    env = environment(path)
    root = os.getuid() == 0
    binds = _binds(list(files))
    prefix = _prefix(bwrap, binds, hidden, root, env)
    keep = tuple(b.target for b in binds if Path("/tmp") in Path(b.target).parents)
    return Launch(prefix=tuple(prefix), env=tuple(sorted(env.items())), scratch_mb=scratch_mb,
                  nproc=NPROC, cgroups=_cgroups(prefix) if root else (),
                  memory_mb=SANDBOX_MEMORY_MB, cpu_shares=SEAT_CPU_SHARES, keep=keep,
                  ours=tuple(ours))


def _cgroups(prefix: list[str]) -> tuple[str, ...]:
    """Control groups of a sandbox (memory, processes, CPU share), under the machine's cgroup
    v1 hierarchies of :data:`CGROUP_CONTROLLERS` where they are writable: named by the
    sandbox's command line (its uid).  The controllers missing here are said once, on
    stderr."""
    name = CGROUP_PREFIX + hashlib.sha256("\0".join(prefix).encode()).hexdigest()[:16]
    found, missing = [], []
    for controller in CGROUP_CONTROLLERS:
        base = Path(CGROUP_ROOT) / controller
        if (base / "cgroup.procs").is_file() and os.access(base, os.W_OK):
            _sweep(str(base))
            found.append(str(base / name))
        else:
            missing.append(controller)
    if missing:
        _say_missing(tuple(missing))
    return tuple(found)


_MISSING_MEANS = {  # what a sandbox goes without when a controller's hierarchy is missing
    "memory": "a memory limit on all of a seat's, or a sandbox's, processes together "
              "(--seat-memory bounds each process's address space)",
    "pids": "a process limit beyond their uid's",
    "cpu": "one busy process's CPU share per seat (a seat that runs many processes may slow "
           "other seats' decisions)"}


@functools.cache
def _say_missing(controllers: tuple[str, ...]) -> None:
    """Say which limits a sandbox goes without here (a machine without cgroup v1 hierarchies
    of these controllers, such as one with cgroup v2 alone): one line, once per process (the
    league's and each worker's make sandboxes of their own)."""
    names = ", ".join(f"'{c}'" for c in controllers)
    means = "; ".join(_MISSING_MEANS[c] for c in controllers)
    print(f"guild: sandbox: no writable cgroup v1 {names} hierarch"
          f"{'y' if len(controllers) == 1 else 'ies'} under {CGROUP_ROOT}, so sandboxes go "
          f"without {means}", file=sys.stderr)


@functools.cache
def _sweep(base: str) -> None:
    """Remove the empty control groups of sandboxes gone without removing theirs (a league
    killed with ``kill -9``), their seats' groups first; one that still holds a process
    refuses (EBUSY) and stays.  A sandbox whose zygote runs is another league's: the seat
    group it is making, empty for a moment, is left to it (below it, or beside it, named
    after it: ``SANDBOX.seat-N``).  So is a group made or changed within
    :data:`SWEEP_AGE_S`: another process may have made it and not yet joined it (a league's
    workers start their sandboxes together, and each sweeps as it starts)."""
    def holds(folder: Path) -> bool:
        try:
            return bool((folder / "cgroup.procs").read_text().strip())
        except FileNotFoundError:  # gone
            return False

    for folder in Path(base).glob(CGROUP_PREFIX + "*"):
        with contextlib.suppress(OSError):
            owner = Path(base) / folder.name.partition(SEAT_CPU_SEPARATOR)[0]
            if time.time() - folder.stat().st_mtime < SWEEP_AGE_S or holds(folder) or holds(owner):
                continue
            for seat in folder.glob(SEAT_CGROUP_PREFIX + "*"):
                with contextlib.suppress(OSError):
                    seat.rmdir()
            folder.rmdir()


# --- one command in a sandbox (no zygote) ------------------------------------------------------

RUN_TIMEOUT = 60.0            # run(): wall seconds (and CPU seconds) of the command
RUN_MEMORY_MB = 2048          # run(): address space of each of its processes
RUN_MAX_OUTPUT = 256 << 20    # run(): bytes it may write on stdout
RUN_MAX_FILE = 64 << 20       # run(): its largest file (RLIMIT_FSIZE), its scratch, /tmp
_ERR_KEPT = 8192              # the tail of its stderr kept for the error line

# Inside the sandbox, after setpriv: the command's limits, then the command itself.  Its own
# code, so they hold before any of the command's (RLIMIT_NPROC is set here, not on bubblewrap,
# as in the zygote: outside a user namespace it would count every process of the user).
_LIMITS = ("import os, resource, sys\n"
           "mem, cpu, nproc, fsize = map(int, sys.argv[1:5])\n"
           "for rlimit, value in ((resource.RLIMIT_AS, mem), (resource.RLIMIT_CPU, cpu),\n"
           "                      (resource.RLIMIT_NPROC, nproc), (resource.RLIMIT_FSIZE, fsize),\n"
           "                      (resource.RLIMIT_CORE, 0)):\n"
           "    resource.setrlimit(rlimit, (value, value))\n"
           "try:\n"
           "    os.execvp(sys.argv[5], sys.argv[5:])\n"
           "except OSError as e:\n"
           "    sys.exit(f'cannot start {sys.argv[5]!r}: {e.strerror}')\n")


class RunError(ValueError):
    """A command run by :func:`run` failed: it ended with an error, overran its time or wrote
    more than its output allows.  The message is one line; ``returncode`` is the command's
    exit code (None when it was stopped) and ``last_line`` its last line on stderr (printable
    characters only)."""

    def __init__(self, message: str, returncode: int | None = None,
                 last_line: str = "") -> None:
        super().__init__(message)
        self.returncode = returncode
        self.last_line = last_line


@functools.lru_cache(maxsize=1)
def _sized_tmpfs() -> bool:
    """Whether this bubblewrap takes ``--size`` for a tmpfs (0.7 and later)."""
    bwrap = shutil.which("bwrap")
    try:
        done = subprocess.run([bwrap or "bwrap", "--help"], capture_output=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return b"--size" in done.stdout + done.stderr


def _printable(text: str, limit: int = 300) -> str:
    """``text`` as one line of printable characters (no terminal escapes), at most ``limit``."""
    line = "".join(c if c.isprintable() else "?" for c in text.strip())
    return line if len(line) <= limit else line[:limit - 3] + "..."


def run(argv: list[str], files: list[Path] | tuple[Path, ...] = (), *, stdin: bytes = b"",
        timeout: float = RUN_TIMEOUT, memory_mb: int = RUN_MEMORY_MB,
        max_output: int = RUN_MAX_OUTPUT, pythonpath: list[str] | tuple[str, ...] = ()) -> bytes:
    """Run one command in a sandbox like a seat's and return what it wrote on stdout.

    The same sandbox as :func:`launch` (the read-only allowlist with ``files``, the namespaces,
    the environment, an unprivileged uid of its own as root) but no zygote: ``argv`` runs once,
    its working folder a scratch tmpfs.  It reads ``stdin`` and is bounded by ``timeout``
    seconds (wall and CPU), ``memory_mb`` of address space per process, :data:`NPROC`
    processes, files of :data:`RUN_MAX_FILE` and ``max_output`` bytes on stdout; past any of
    them it is killed.  ``argv[0]`` is looked up on the sandbox's ``PATH`` (``sys.executable``
    is there: the interpreter's prefixes are bound).

    Raises :class:`SandboxError` when no sandbox can start here (:func:`require`) and
    :class:`RunError` when the command fails.
    """
    require()
    if not argv:
        raise ValueError("run needs a command")
    bwrap = shutil.which("bwrap")
    assert bwrap is not None
    ours = _our_paths()
    env = environment(list(dict.fromkeys([*pythonpath, *ours])))
    binds = _binds([Path(f).absolute() for f in files])
    prefix = _prefix(bwrap, binds, (), os.getuid() == 0, env)
    cut = len(prefix) - 5  # ... "--", "/bin/sh", "-c", SCRIPT, "sandbox"
    assert prefix[cut] == "--" and prefix[cut + 1] == "/bin/sh"
    scratch: list[str] = []
    if _sized_tmpfs():  # bounded, writable by the sandbox's uid
        for target in ("/scratch", "/dev/shm",
                       *(() if any(Path("/tmp") in Path(b.target).parents for b in binds)
                         else ("/tmp",))):
            scratch += ["--size", str(RUN_MAX_FILE), "--perms", "01777", "--tmpfs", target]
        scratch += ["--chdir", "/scratch"]
    cpu = max(1, math.ceil(timeout))
    limits = [sys.executable, "-I", "-S", "-c", _LIMITS, str(memory_mb << 20), str(cpu),
              str(NPROC), str(RUN_MAX_FILE)]
    command = [*prefix[:cut], *scratch, *prefix[cut:], *limits, *argv]
    proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env, start_new_session=True)
    out = bytearray()
    err = bytearray()
    problem: str | None = None

    def feed() -> None:
        assert proc.stdin is not None
        with contextlib.suppress(OSError):  # it ended, or closed its stdin: its business
            proc.stdin.write(stdin)
        with contextlib.suppress(OSError):
            proc.stdin.close()

    feeder = threading.Thread(target=feed, daemon=True)
    feeder.start()
    deadline = time.monotonic() + timeout
    try:
        with selectors.DefaultSelector() as sel:
            assert proc.stdout is not None and proc.stderr is not None
            sel.register(proc.stdout, selectors.EVENT_READ)
            sel.register(proc.stderr, selectors.EVENT_READ)
            while sel.get_map() and problem is None:
                left = deadline - time.monotonic()
                if left <= 0:
                    problem = f"it ran longer than {timeout:g} s"
                    break
                for key, _ in sel.select(left):
                    chunk = os.read(key.fd, 1 << 16)
                    if not chunk:
                        sel.unregister(key.fileobj)
                    elif key.fileobj is proc.stdout:
                        out += chunk
                        if len(out) > max_output:
                            problem = f"it wrote more than {max_output:,} bytes"
                            break
                    else:
                        err += chunk
                        if len(err) > 2 * _ERR_KEPT:
                            del err[:-_ERR_KEPT]
        if problem is None:
            try:
                proc.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                problem = f"it ran longer than {timeout:g} s"
    finally:
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)  # bubblewrap's own: its sandbox dies with it
        proc.wait()
        feeder.join(timeout=5)
        for pipe in (proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()
    if problem is not None:
        raise RunError(f"{problem}: stopped")
    if proc.returncode != 0:
        lines = [ln for ln in err.decode("utf-8", "replace").splitlines() if ln.strip()]
        said = _printable(lines[-1]) if lines else ""
        how = (f"signal {-proc.returncode}" if proc.returncode < 0
               else f"exit code {proc.returncode}")
        raise RunError(f"it ended with {how}: {said or 'nothing on stderr'}", proc.returncode,
                       said)
    return bytes(out)
