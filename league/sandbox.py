"""Seats that run apart run in a sandbox: bubblewrap, an unprivileged uid, limits that hold.

A league runs every policy it does not trust (``module:Name``, ``sb3:`` zips, ``exec:``
programs) in a seat process of its own (``agents.isolated``).  Here that process gets a sandbox:
one bubblewrap (``bwrap``) container per policy and league process, holding a zygote
(``agents.seat_zygote``) that forks each seat into namespaces of its own.

What a seat sees and may do:

* **Files:** an allowlist, read-only: ``/usr`` (the system's programs and libraries), the
  interpreter's prefixes (``sys.base_prefix``, ``sys.prefix``: the standard library and the
  installed packages), the folders of our packages when they lie elsewhere (an editable
  install: ``sim/`` and ``agents/``, not the repository around them), and the policy's own
  files: its module or package, its ``sb3:`` model, the ``exec:`` program and the files its
  command line names.  Nothing else of the machine: no home folder, no ``/etc``, no league
  folder (``--out`` is covered by an empty folder even when it lies under a bound one), no
  secret or key.  Its working folder (and ``HOME``, ``TMPDIR``, and ``/tmp`` unless a policy's
  file lies there) is a scratch folder of its own, a tmpfs of :data:`SCRATCH_MB`;
  ``/dev/shm`` holds :data:`agents.seat_zygote.SHM_MB`.
* **Processes:** user, pid, network, IPC, UTS and mount namespaces; the seat is pid 1 of its
  own pid namespace, so it sees no other process and everything it starts ends with it.  No
  capabilities, ``no_new_privs``.  When the league runs as root, the sandbox runs under an
  unprivileged uid of its own (from :data:`UID_BASE`), so a file readable only by root stays
  unreadable, and the uid's ``RLIMIT_NPROC`` (:data:`NPROC`) bounds its processes and threads.
* **Environment:** only ``PATH``, ``HOME``, ``TMPDIR``, ``LANG``, the ``PYTHON*`` settings the
  seat host needs, and the engine's own switches (``GUILD_PURE``...).  Nothing of the league's.
* **Limits** (set by the league, enforced from outside): memory (address space) and CPU time
  per process, the decision timeout and the episode deadline (``league.episode``).

The league talks to a seat only through pipes (``agents.seat_protocol``); it never reads a
file a seat wrote.
"""

from __future__ import annotations

import functools
import importlib.machinery
import importlib.util
import itertools
import os
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from agents.seat_zygote import Launch

SCRATCH_MB = 64            # each seat's scratch folder (a tmpfs)
NPROC = 4096               # processes and threads of one sandbox (its uid's RLIMIT_NPROC);
                           # each seat in it: agents.seat_zygote.SEAT_NPROC
UID_BASE = 2_000_000       # sandboxes run as uids UID_BASE .. UID_BASE + UID_SPAN - 1
UID_SPAN = 1_000_000
OUR_PACKAGES = ("sim", "agents")  # what the seat host imports
PASSED_ENV = ("GUILD_PURE", "GUILD_CHECK_PARSED", "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE",
              "OMP_NUM_THREADS")
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


def _binds(extra: list[Path]) -> list[Bind]:
    """The read-only allowlist: the interpreter, our packages, and ``extra`` (the policy's)."""
    roots = [Path(sys.base_prefix), Path(sys.prefix)]
    for name in OUR_PACKAGES:
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.submodule_search_locations:
            roots.extend(Path(p) for p in spec.submodule_search_locations)
    roots.extend(extra)
    out: list[Bind] = []
    for root in roots:
        path = root.resolve()
        if path == Path("/") or not path.exists():
            continue
        if any(path == Path(b.target) or Path(b.target) in path.parents for b in out):
            continue  # already inside a bound folder
        out = [b for b in out if path not in Path(b.target).parents]
        out.append(Bind(str(path), str(path), path.is_dir()))
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
    # each seat makes its own (agents.seat_zygote).  Otherwise bubblewrap makes one.
    args = [bwrap, *([] if root else ["--unshare-user"]), "--unshare-pid", "--unshare-net",
            "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try", "--die-with-parent",
            "--new-session", "--clearenv"]
    for key, value in (env or {}).items():
        args += ["--setenv", key, value]
    args += _system() + _parents(binds)
    for b in binds:
        args += ["--ro-bind", b.source, b.target]
    for path in hidden:  # the league's folder, even under a bound one
        if any(Path(b.target) == Path(path) or Path(b.target) in Path(path).parents
               for b in binds if b.directory) and Path(path).is_dir():
            args += ["--tmpfs", path]
    args += ["--proc", "/proc", "--dev", "/dev", "--perms", "0755", "--dir", "/scratch",
             "--chdir", "/"]
    if not any(Path("/tmp") in Path(b.target).parents for b in binds):
        args += ["--perms", "0755", "--dir", "/tmp"]  # empty: each seat's scratch covers it
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
    the spec as the sandbox runs it (paths made absolute)."""
    text = spec.strip()
    low = text.lower()
    if low.startswith("sb3:"):
        path = Path(text[4:]).expanduser().absolute()
        return [path], [], f"sb3:{path}"
    if ":" not in text:  # a name our registry (or an installed package's entry point) knows
        return [], [], text
    module = text.split(":", 1)[0].strip()
    top = module.split(".", 1)[0]
    try:  # where a seat started in this folder would import it from; runs none of its code
        found = (importlib.machinery.PathFinder.find_spec(top, [os.getcwd(), *sys.path])
                 if top.isidentifier() else None)
    except (ImportError, ValueError):
        found = None
    if found is None or found.origin in (None, "built-in", "frozen"):
        return [], [], text
    if found.submodule_search_locations:
        folders = [Path(p).absolute() for p in found.submodule_search_locations]
        return folders, sorted({str(p.parent) for p in folders}), text
    origin = Path(found.origin).absolute()
    return [origin], [str(origin.parent)], text


def exec_files(argv: list[str]) -> tuple[list[Path], list[str]]:
    """An ``exec:`` program's files (its executable and every argument that names an existing
    path) and its command line with those paths made absolute (the seat works in its
    scratch folder)."""
    files: list[Path] = []
    out: list[str] = []
    for i, arg in enumerate(argv):
        found = shutil.which(arg) if i == 0 else None
        path = Path(found) if found else Path(arg)
        if (found or "/" in arg or i > 0) and path.exists():
            path = path.absolute()
            files.append(path)
            out.append(str(path))
        else:
            out.append(arg)
    return files, out


def environment(pythonpath: list[str]) -> dict[str, str]:
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/scratch", "TMPDIR": "/scratch",
           "LANG": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1", "PYTHONNOUSERSITE": "1",
           "PYTHONPATH": os.pathsep.join(pythonpath)}
    env.update((k, os.environ[k]) for k in PASSED_ENV if k in os.environ)
    return env


def launch(files: list[Path], pythonpath: list[str], hidden: tuple[str, ...] = (),
           scratch_mb: int = SCRATCH_MB) -> Launch:
    """The sandbox for a policy with these files (refuses when none can start here); the same
    one for the same arguments in this process, so its seats share one zygote."""
    require()
    # Only a folder that exists can be covered; one made later (a league's --out, after the
    # check of its policies) gets a launch of its own, so a sandbox never shows it.
    shown = tuple(str(Path(h).absolute()) for h in hidden)
    return _launch(tuple(files), tuple(pythonpath),
                   tuple(h for h in shown if Path(h).is_dir()), scratch_mb)


@functools.lru_cache(maxsize=256)
def _launch(files: tuple[Path, ...], pythonpath: tuple[str, ...], hidden: tuple[str, ...],
            scratch_mb: int) -> Launch:
    bwrap = shutil.which("bwrap")
    assert bwrap is not None
    ours = []
    for name in OUR_PACKAGES:
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.submodule_search_locations:
            ours += [str(Path(p).parent) for p in spec.submodule_search_locations]
    path = list(dict.fromkeys([*pythonpath, *ours]))
    env = environment(path)
    root = os.getuid() == 0
    prefix = _prefix(bwrap, _binds(list(files)), hidden, root, env)
    return Launch(prefix=tuple(prefix), env=tuple(sorted(env.items())), scratch_mb=scratch_mb,
                  nproc=NPROC)
