"""Seat processes forked from a clean interpreter: a restart costs a fork, not a start.

Starting ``python -m league.seat.host`` pays for its imports, and would pay again at every
restart after a fault.  A zygote (``python -m league.seat.zygote FD``) is started once per league
process with the same interpreter and import path; it imports what every hosted seat needs and
then only forks.  It never imports a policy's module: the forked seat does, after it has left
the zygote's session and taken its limits, so one policy cannot change what another one's seat
starts from.  In a sandbox it never sees a policy's folders either (below); without one
(``--sandbox none``, for code the league trusts) its import path is the league's, where a
policy's module named like one the zygote imports would be found first.  Nothing of a game is
ever in the zygote.

Its protocol, on a ``SOCK_SEQPACKET`` socket from the league process: ``{"spawn": SPEC,
"memory_mb": M, "cpu_s": C}`` (or ``{"exec": ARGV, ...}`` for a program) with three file
descriptors (the seat's standard input, output and error) answers ``{"pid": P}`` and a pidfd of
the seat, through which the league signals it and sees it end, in whatever pid namespace it
runs; ``{"status": P}`` answers ``{"status": CODE}`` once P has ended (``Popen.returncode``'s
convention; null while it runs); ``{"self": true}`` answers a pidfd of the zygote itself (its
pid for the league, which places it in control groups).  The zygote exits when the league
process does (its socket closes), and its seats die with it.

Inside a sandbox (started by the league's bubblewrap launcher, ``league.apart.sandbox``, as
:func:`isolated_argv` says) the zygote runs an isolated interpreter (``-I``) that finds our own
packages in their folders and nothing else there: the policy's folders are not on its import
path (a policy's ``difflib.py`` or ``org/`` would otherwise be imported by the zygote, and could
turn off every seat's namespaces).  Each seat adds them, after the standard library, once it has
its namespaces and limits.  The zygote and its seats call no kernel keyring (a seccomp filter):
keys are not namespaced, and seats of one uid would read each other's.  Every seat it forks
also gets namespaces of its own: a user namespace (its uid mapped to itself, no capabilities
left), a pid namespace in which it is pid 1 (so everything it starts dies with it, and it sees
no other process), a network namespace with nothing but its own loopback, an IPC namespace, and
a mount namespace with a fresh scratch folder (``/scratch``, a tmpfs of ``SCRATCH_MB``, its
working folder), an empty ``/tmp`` of the same size, a bounded ``/dev/shm``, its own devpts
instance on ``/dev/pts`` (the sandbox's would let its seats talk through pseudo-terminals) and
its own ``/proc``.

Where the league may make control groups (cgroup v1, as root: ``league.apart.sandbox``), the
sandbox runs in groups of its own (memory, processes, cpu), and each seat in a memory group of
its own below the sandbox's, of its ``memory_mb``, and in a cpu group of its own of one busy
process's weight: the league moves the idle zygote into the seat's groups for the fork, so the
seat and everything it starts are born there, before any of its code runs.  A seat's cpu group
lies at the top of the cpu hierarchy, beside the sandbox's (``SANDBOX.seat-N``), not below it:
below, the sandbox group's own weight would be shared by all its seats, and a policy holding
three seats of a table would get a third of the CPU a one-seat policy gets (a sandbox group
weighing as all the seats it may run at once would instead give a lone busy seat that much).
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import importlib.machinery
import itertools
import json
import os
import resource
import select
import signal
import socket
import struct
import subprocess
import sys
import sysconfig
import threading
import time
import traceback
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

MAX_ENDED = 4096        # exit codes kept for status requests
PR_SET_PDEATHSIG = 1
PR_CAPBSET_DROP = 24
CLONE_NEWNS, CLONE_NEWIPC, CLONE_NEWUSER, CLONE_NEWPID = 0x20000, 0x8000000, 0x10000000, 0x20000000
CLONE_NEWNET = 0x40000000
SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 0x1
MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_BIND, MS_REC, MS_PRIVATE = 2, 4, 8, 0x1000, 0x4000, 0x40000
SCRATCH = "/scratch"    # a seat's working folder inside the sandbox
OLD_TMP = "/.sandbox-tmp"  # where a seat's namespace moves the sandbox's /tmp aside
SHM_MB = 16             # its /dev/shm
SEAT_NPROC = 256        # its processes and threads (RLIMIT_NPROC in its own user namespace)
ANSWER_S = 120.0        # how long the zygote may take to answer a request (its first answer
                        # waits for its start: a sandbox, an interpreter and our modules)
LEAVE_WAIT_S = 5.0      # how long a closed sandbox's processes may take to end before its
                        # control groups are given up (to the next league's sweep)
_LINUX_CAPABILITY_VERSION_3 = 0x20080522
PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 22, 2
SECCOMP_ALLOW, SECCOMP_ERRNO = 0x7FFF0000, 0x00050000
X32_BIT = 0x40000000
# add_key, request_key and keyctl, by the audit architecture a call is made in
KEYRING_CALLS = {0xC000003E: (248, 249, 250),   # x86_64 (and x32)
                 0x40000003: (286, 287, 288),   # i386
                 0xC00000B7: (217, 218, 219),   # aarch64
                 0x40000028: (309, 310, 311),   # arm
                 0xC00000F3: (217, 218, 219)}   # riscv64


def die_with_parent() -> None:
    """Ask the kernel to kill this process when its parent dies (Linux; elsewhere nothing)."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


# --- a seat's own namespaces (inside a sandbox) ------------------------------------------------

_libc = ctypes.CDLL(None, use_errno=True)


def _ok(result: int, what: str) -> None:
    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def _mount(source: str | None, target: str, fstype: str | None, flags: int,
           data: str | None = None) -> None:
    def enc(text: str | None) -> bytes | None:
        return None if text is None else text.encode()

    _ok(_libc.mount(enc(source), enc(target), enc(fstype), ctypes.c_ulong(flags), enc(data)),
        f"mount {target}")


def _own_namespaces(scratch_mb: int, keep: tuple[str, ...] = ()) -> None:
    """Enter new user, pid, network, IPC and mount namespaces; mount a fresh scratch, /tmp and
    /dev/shm.  ``keep``: the policy's files under /tmp, shown again on the fresh /tmp.

    The pid namespace takes effect for this process's next child, which becomes its pid 1.
    The network namespace is the seat's own, with its own loopback up and nothing else: the
    sandbox's, shared by every seat of the policy, would let two seats, or a seat and a pooled
    process that played another seat of the same town, talk over loopback or abstract unix
    sockets; and a policy may talk to itself (a local model server, ZMQ over tcp).
    """
    uid, gid = os.getuid(), os.getgid()
    _ok(_libc.unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWPID | CLONE_NEWNET),
        "unshare")
    _loopback_up()
    for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"),
                       ("gid_map", f"{gid} {gid} 1")):
        with open(f"/proc/self/{name}", "w") as f:
            f.write(text)
    _mount(None, "/", None, MS_REC | MS_PRIVATE)
    _mount("tmpfs", SCRATCH, "tmpfs", MS_NOSUID | MS_NODEV, f"size={scratch_mb}m,mode=0700")
    _fresh_tmp(scratch_mb, keep)
    if os.path.isdir("/dev/shm"):
        _mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, f"size={SHM_MB}m,mode=1777")
    _fresh_devpts()


def _fresh_devpts() -> None:
    """A devpts instance of the seat's own on ``/dev/pts``, with ``/dev/ptmx`` its multiplexer:
    the sandbox's one instance, shared by all its seats, would let one seat open a
    pseudo-terminal and another read what it wrote there (``/dev/pts/N`` is open to its uid)."""
    if not os.path.isdir("/dev/pts"):
        return
    _mount("devpts", "/dev/pts", "devpts", MS_NOSUID | MS_NOEXEC,
           "newinstance,ptmxmode=0666,mode=0620")
    if os.path.lexists("/dev/ptmx") and not os.path.islink("/dev/ptmx"):  # bubblewrap's links
        _mount("/dev/pts/ptmx", "/dev/ptmx", None, MS_BIND)  # to pts/ptmx; a node is covered


def _loopback_up() -> None:
    """Bring up ``lo`` in this process's new network namespace (which it may, holding every
    capability in the new user namespace that owns it until :func:`_drop_capabilities`).
    Best effort: a seat without it is as isolated, only unable to talk to itself."""
    with contextlib.suppress(OSError), socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        request = struct.pack("16sH22x", b"lo", 0)  # struct ifreq: a name, then ifr_flags
        flags = struct.unpack("16sH22x", fcntl.ioctl(s.fileno(), SIOCGIFFLAGS, request))[1]
        fcntl.ioctl(s.fileno(), SIOCSIFFLAGS, struct.pack("16sH22x", b"lo", flags | IFF_UP))


def _fresh_tmp(scratch_mb: int, keep: tuple[str, ...]) -> None:
    """A tmpfs of the seat's own on /tmp; the policy's files that lie under /tmp (read-only
    binds of the sandbox) are bound again at their places on it."""
    if not os.path.isdir("/tmp"):
        return
    if keep:  # the sandbox's /tmp, with the policy's binds, out of the way first
        _mount("/tmp", OLD_TMP, None, MS_BIND | MS_REC)
    _mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, f"size={scratch_mb}m,mode=1777")
    for path in keep:
        source = os.path.join(OLD_TMP, os.path.relpath(path, "/tmp"))
        if os.path.islink(source):  # a policy's file reached through a link, made again
            os.makedirs(os.path.dirname(path), exist_ok=True)
            os.symlink(os.readlink(source), path)
            continue
        if os.path.isdir(source):
            os.makedirs(path, exist_ok=True)
        else:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            open(path, "a").close()
        _mount(source, path, None, MS_BIND | MS_REC)
    if keep:  # and the old view hidden
        _mount("tmpfs", OLD_TMP, "tmpfs", MS_NOSUID | MS_NODEV, "size=64k,mode=0755")


class _SockFilter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8),
                ("k", ctypes.c_uint32)]


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(_SockFilter))]


def _keyring_filter() -> list[tuple[int, int, int, int]]:
    """A seccomp program (classic BPF: code, jump if true, jump if false, constant) that fails
    :data:`KEYRING_CALLS` with EPERM and allows every other call.  A call's number is compared
    for the architecture it was made in (a 32-bit program on a 64-bit kernel numbers them
    otherwise); x32's bit is masked off."""
    ld, jeq, ret, mask = 0x20, 0x15, 0x06, 0x54  # BPF_LD|W|ABS, JMP|JEQ|K, RET|K, ALU|AND|K
    program = [(ld, 0, 0, 4)]  # seccomp_data.arch
    for arch, numbers in KEYRING_CALLS.items():
        # not this architecture: past its block (the load, the mask, the tests, the return)
        program += [(jeq, 0, len(numbers) + 3, arch), (ld, 0, 0, 0),  # seccomp_data.nr
                    (mask, 0, 0, ~X32_BIT & 0xFFFFFFFF)]
        program += [(jeq, -1, 0, n) for n in numbers]  # -1: to the denial, at the end
        program.append((ret, 0, 0, SECCOMP_ALLOW))
    program.append((ret, 0, 0, SECCOMP_ALLOW))  # an architecture not listed
    denial = len(program)
    return [(code, denial - i - 1 if jt == -1 else jt, jf, k)
            for i, (code, jt, jf, k) in enumerate(program)] + [
        (ret, 0, 0, SECCOMP_ERRNO | errno.EPERM)]


def _no_keyrings() -> None:
    """Refuse this process and all it will start the kernel's keyrings: keys are not
    namespaced, and any process of the sandbox's uid lists them (``/proc/keys``) and reads
    them, so two seats of a policy, or a seat and a pooled process that played another seat of
    the town, could talk through them.  Needs ``no_new_privs``, which the sandbox sets."""
    program = _keyring_filter()
    filters = (_SockFilter * len(program))(*(_SockFilter(*ins) for ins in program))
    fprog = _SockFprog(len(program), filters)
    _ok(_libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0),
        "seccomp")


def _drop_capabilities() -> None:
    """Give up every capability (those the new user namespace granted, and the bounding set)."""
    for cap in range(64):
        if _libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            break  # past the last capability this kernel has
    header = (ctypes.c_uint32 * 2)(_LINUX_CAPABILITY_VERSION_3, 0)
    data = (ctypes.c_uint32 * 6)()
    _ok(_libc.capset(header, data), "capset")


def _pid1(alive: int) -> None:
    """In the seat (pid 1 of its namespace): die with its keeper, see only its own processes."""
    die_with_parent()
    if select.select([alive], [], [], 0)[0]:  # its keeper died before the flag was set
        os._exit(1)
    os.close(alive)
    os.setsid()  # a group of its own: a signal to its group never reaches its keeper
    _mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    # Counted in its own user namespace; the sandbox's limit still bounds all of its seats.
    limit = min(SEAT_NPROC, resource.getrlimit(resource.RLIMIT_NPROC)[1])
    resource.setrlimit(resource.RLIMIT_NPROC, (limit, limit))
    _drop_capabilities()
    os.chdir(SCRATCH)


def _keep(child: int, alive_w: int) -> None:
    """In the keeper (the seat's parent, outside its pid namespace): wait for the seat and end
    as it ended; never returns.  Killing the keeper kills the seat and all it started."""
    code = 1
    with contextlib.suppress(ChildProcessError):
        _, status = os.waitpid(child, 0)
        code = os.waitstatus_to_exitcode(status)
    if code < 0:  # end as the seat did, so the league reads the same signal
        signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    os._exit(code & 0xFF)


# --- the zygote -------------------------------------------------------------------------------

def _seat(request: dict, fds: list[int], sock: socket.socket, zygote: int,
          scratch_mb: int | None, keep: tuple[str, ...] = ()) -> None:
    """In the forked child: leave the zygote, take the limits and the pipes, serve; never
    returns.  In a sandbox (``scratch_mb``) the seat runs in namespaces of its own, as pid 1
    below this process, which stays to wait for it (:func:`_keep`)."""
    code = 1
    try:
        os.setsid()
        die_with_parent()
        if os.getppid() != zygote:  # the zygote died before the flag was set
            return
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        sock.close()
        for target, fd in enumerate(fds):  # first: what fails from here reaches its stderr
            os.dup2(fd, target)
            os.close(fd)
        if scratch_mb is not None:
            _own_namespaces(scratch_mb, keep)
            alive_r, alive_w = os.pipe()
            child = os.fork()
            if child:
                os.close(alive_r)
                null = os.open(os.devnull, os.O_RDWR)
                for target in range(3):  # only the seat holds its pipes: its end is their end
                    os.dup2(null, target)
                _keep(child, alive_w)
            os.close(alive_w)
            _pid1(alive_r)
        mem = int(request["memory_mb"]) * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
        cpu = int(request["cpu_s"])
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        if "exec" in request:
            argv = [str(a) for a in request["exec"]]
            try:
                os.execvp(argv[0], argv)
            except OSError as e:
                print(f"cannot start {argv[0]!r}: {e.strerror}", file=sys.stderr)
                code = 127
                return
        if scratch_mb is not None:
            _policy_path()
        from league.seat import host as seat_host

        code = seat_host.main([str(request["spawn"])])
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else 1
    except BaseException:  # the policy's KeyboardInterrupt and the like: its own crash
        traceback.print_exc()
    finally:
        with contextlib.suppress(Exception):
            sys.stderr.flush()
        os._exit(code)


def _policy_path() -> None:
    """In a sandbox's seat: the folders of its ``PYTHONPATH`` (the policy's, then ours) on its
    import path, after the standard library, so that a policy's ``random.py`` is not what the
    seat host's later imports get (most standard modules are the zygote's already, so it would
    not be the policy's either), each read from its source (:class:`_SourceOnly`).  Whatever
    is imported from here on runs with the seat's namespaces, limits and no capabilities,
    which nothing in its process can lift."""
    std = sysconfig.get_path("stdlib")
    zipped = os.path.join(os.path.dirname(std), f"python{sys.version_info[0]}"
                                                f"{sys.version_info[1]}.zip")
    at = 1 + max((i for i, entry in enumerate(sys.path)
                  if entry in (std, zipped) or entry.startswith(std + os.sep)), default=-1)
    wanted = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep)
              if p and p not in sys.path]
    sys.path_hooks.insert(0, _source_only(tuple(wanted)))
    for folder in wanted:
        sys.path_importer_cache.pop(folder, None)
    sys.path[at:at] = list(dict.fromkeys(wanted))


class _SourceOnly(importlib.machinery.SourceFileLoader):
    """Loads a module of a policy's folders from its source: never a ``__pycache__`` file,
    which the digest in ``league.json`` leaves out (a crafted one would run unrecorded code);
    writes none (its folders are read-only)."""

    def get_data(self, path: str) -> bytes:
        if path.endswith(tuple(importlib.machinery.BYTECODE_SUFFIXES)) and \
                os.path.basename(os.path.dirname(path)) == "__pycache__":
            raise OSError(f"{path}: a cached module is not read in a sandbox")
        return super().get_data(path)

    def set_data(self, path: str, data: bytes, *, _mode: int = 0o666) -> None:
        return None


def _source_only(folders: tuple[str, ...]) -> Any:
    """The import path hook for ``folders`` and the folders in them: :class:`_SourceOnly` for
    sources (extensions and bare ``.pyc`` files, which the digest covers, as usual)."""
    machinery = importlib.machinery

    def hook(path: str) -> machinery.FileFinder:
        if not any(path == f or path.startswith(f + os.sep) for f in folders):
            raise ImportError("not a policy's folder")
        return machinery.FileFinder(
            path, (machinery.ExtensionFileLoader, machinery.EXTENSION_SUFFIXES),
            (_SourceOnly, machinery.SOURCE_SUFFIXES),
            (machinery.SourcelessFileLoader, machinery.BYTECODE_SUFFIXES))
    return hook


def serve(sock: socket.socket, scratch_mb: int | None = None,
          keep: tuple[str, ...] = ()) -> None:
    """Fork seats on request until the league process closes the socket."""
    ended: dict[int, int] = {}

    def reap(*_: Any) -> None:
        """Reap the seats that have ended, each after killing what is left of its process
        group: its pid, held until it is reaped, is nobody else's group yet (the league
        signals a seat through its pidfd alone, so never a pid that may be another's by then).
        """
        # one reap at a time: a SIGCHLD's handler may run inside another's, which must not
        # reap the seat this one has seen and is about to (its pid would be free again)
        blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGCHLD})
        try:
            while True:
                try:
                    found = os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
                except ChildProcessError:
                    return
                if found is None:
                    return
                with contextlib.suppress(OSError):  # a seat is its group's leader (setsid)
                    os.killpg(found.si_pid, signal.SIGKILL)
                _, status = os.waitpid(found.si_pid, 0)
                ended[found.si_pid] = os.waitstatus_to_exitcode(status)
                if len(ended) > MAX_ENDED:
                    ended.pop(next(iter(ended)))
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, blocked)

    signal.signal(signal.SIGCHLD, reap)
    me = os.getpid()
    while True:
        message, fds, _, _ = socket.recv_fds(sock, 65536, 3)
        if not message:
            return
        request = json.loads(message)
        pidfds: list[int] = []
        if ("spawn" in request or "exec" in request) and len(fds) == 3:
            sys.stderr.flush()
            # not reaped before its pidfd is taken: a seat that ends at once is still ours to
            # hold (its pid could be another process's by the time pidfd_open came)
            signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGCHLD})
            try:
                pid = os.fork()
            except OSError as e:  # out of processes (a seat's fork bomb): this seat only
                reply: dict = {"error": f"cannot fork a seat: {e.strerror}"}
            else:
                if pid == 0:
                    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGCHLD})
                    _seat(request, fds, sock, me, scratch_mb, keep)
                reply = {"pid": pid}
                with contextlib.suppress(OSError):
                    pidfds.append(os.pidfd_open(pid))
            finally:
                signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGCHLD})
        elif "self" in request:  # the league finds this process's pid on its side
            reply = {"pid": me}
            with contextlib.suppress(OSError):
                pidfds.append(os.pidfd_open(me))
        else:
            reap()
            reply = {"status": ended.get(int(request.get("status", -1)))}
        for fd in fds:
            os.close(fd)
        socket.send_fds(sock, [json.dumps(reply).encode()], pidfds)
        for fd in pidfds:
            os.close(fd)


def main() -> int:
    sock = socket.socket(fileno=int(sys.argv[1]))
    die_with_parent()
    scratch_mb, keep = None, ()
    if sys.argv[2:3] == ["--isolate"]:  # in a sandbox, under a uid of its own
        _no_keyrings()
        scratch_mb, nproc, keep = int(sys.argv[3]), int(sys.argv[4]), tuple(sys.argv[5:])
        hard = resource.getrlimit(resource.RLIMIT_NPROC)[1]  # a lower one set on the league
        if hard != resource.RLIM_INFINITY:
            nproc = min(nproc, hard)
        resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))
    from league.seat import host  # noqa: F401  (every seat's imports, paid once here)

    serve(sock, scratch_mb, keep)
    return 0


# --- the league's side ------------------------------------------------------------------------

OUR_PACKAGES = ("sim", "agents", "league")  # the top packages a seat host imports: ours
# A sandbox's zygote: ``python -I -B -c _BOOT OURS FD --isolate ...``.  An isolated interpreter
# (no PYTHONPATH, no working folder, no user site) with a finder of our packages, and of nothing
# else, in OURS (a JSON list of the folders that hold them, where a policy's module may lie too).
_BOOT = f"""\
# league.seat.zygote, in a sandbox
import json, sys
from importlib.machinery import PathFinder
OURS = json.loads(sys.argv.pop(1))
class OurPackages:
    @staticmethod
    def find_spec(name, path=None, target=None):
        return PathFinder.find_spec(name, OURS) if name in {OUR_PACKAGES!r} else None
sys.meta_path.insert(0, OurPackages)
from league.seat.zygote import main
raise SystemExit(main())
"""


def isolated_argv(python: str, ours: Sequence[str]) -> list[str]:
    """The command that starts a sandbox's zygote, up to its socket's descriptor: ``python``,
    isolated, importing our packages from the folders ``ours`` and nothing else from them."""
    return [python, "-I", "-B", "-c", _BOOT, json.dumps(list(ours))]


@dataclass(frozen=True)
class Launch:
    """How a zygote is started inside a sandbox: the sandbox's command (the zygote's own
    command line is appended to ``prefix``), the environment it is started with, and the size
    of each seat's scratch folder.  Made by ``league.apart.sandbox``."""

    prefix: tuple[str, ...]
    env: tuple[tuple[str, str], ...]
    scratch_mb: int
    nproc: int              # the sandbox's processes and threads (RLIMIT_NPROC of its uid)
    python: str = sys.executable
    # control groups the sandbox runs in, made for it (memory.limit_in_bytes = memory_mb,
    # pids.max = nproc, cpu.shares = cpu_shares) where the machine lets the league make them;
    # () where it does not.  Each seat also gets a memory group below the sandbox's, and a cpu
    # group of cpu_shares beside it (module docstring).
    cgroups: tuple[str, ...] = ()
    memory_mb: int = 0
    cpu_shares: int = 1024  # each seat's weight (and the idle zygote's)
    keep: tuple[str, ...] = ()  # the policy's files under /tmp (each seat's /tmp is fresh)
    ours: tuple[str, ...] = ()  # the folders that hold our packages (isolated_argv)


# in this order: a v1 memory group's memsw limit (memory and swap) may not be below its memory's
_CGROUP_LIMITS = {"memory.limit_in_bytes": lambda launch: str(launch.memory_mb << 20),
                  "memory.memsw.limit_in_bytes": lambda launch: str(launch.memory_mb << 20),
                  "memory.max": lambda launch: str(launch.memory_mb << 20),
                  "pids.max": lambda launch: str(launch.nproc),
                  "cpu.shares": lambda launch: str(launch.cpu_shares)}
SEAT_CGROUP_PREFIX = "seat-"
SEAT_CPU_SEPARATOR = "." + SEAT_CGROUP_PREFIX  # a seat's cpu group: SANDBOX.seat-N, beside it
_SEAT_GROUPS = itertools.count()  # names of seats' groups, unique in this process


def _enter_cgroups(launch: Launch) -> None:
    """In the sandbox's first process, before it starts: make its control groups, set their
    limits and join them, so everything it starts is counted (best effort: a folder the
    machine does not let us make is skipped)."""
    for folder in launch.cgroups:
        try:
            os.makedirs(folder, exist_ok=True)
            for name, value in _CGROUP_LIMITS.items():
                if os.path.exists(os.path.join(folder, name)):
                    with open(os.path.join(folder, name), "w") as f:
                        f.write(value(launch))
            with open(os.path.join(folder, "cgroup.procs"), "w") as f:
                f.write("0")
        except OSError:
            continue


def _leave_cgroups(launch: Launch) -> None:
    """Remove a sandbox's control groups (its seats' first) once its processes are gone, as
    they go within :data:`LEAVE_WAIT_S` (no one else removes them before the next league)."""
    until = time.monotonic() + LEAVE_WAIT_S
    for folder in launch.cgroups:
        for group in [*seat_cgroups(folder), folder]:
            _remove_cgroup(group, until - time.monotonic())


def seat_cgroups(folder: str) -> list[str]:
    """The seats' groups of the sandbox group ``folder``: below it (memory) and beside it,
    named after it (cpu)."""
    found = []
    with contextlib.suppress(OSError):
        found += [e.path for e in os.scandir(folder)
                  if e.is_dir() and e.name.startswith(SEAT_CGROUP_PREFIX)]
    beside = os.path.basename(folder) + SEAT_CPU_SEPARATOR
    with contextlib.suppress(OSError):
        found += [e.path for e in os.scandir(os.path.dirname(folder))
                  if e.is_dir() and e.name.startswith(beside)]
    return found


def _remove_cgroup(folder: str, wait: float = 0.0) -> bool:
    """Remove an empty control group (whether it is gone); its last processes may still be
    being torn down, so a busy one is tried again for up to ``wait`` seconds."""
    until = time.monotonic() + wait
    while True:
        try:
            os.rmdir(folder)
            return True
        except FileNotFoundError:
            return True
        except OSError:
            if time.monotonic() >= until:
                return False
            time.sleep(0.02)


def _write(path: str, text: str) -> None:
    with open(path, "w") as f:
        f.write(text)


def _pidfd_pid(pidfd: int) -> int | None:
    """The pid (in this process's pid namespace) of the process a pidfd holds."""
    try:
        with open(f"/proc/self/fdinfo/{pidfd}") as f:
            for line in f:
                if line.startswith("Pid:"):
                    pid = int(line.split()[1])
                    return pid if pid > 0 else None
    except (OSError, ValueError, IndexError):
        pass
    return None


class Zygote:
    """A running zygote and the league process's end of its socket (in a sandbox: ``launch``)."""

    def __init__(self, env: dict[str, str] | None, launch: Launch | None = None) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        argv = [sys.executable, "-m", "league.seat.zygote", str(theirs.fileno())]
        if launch is not None:
            argv = [*launch.prefix, *isolated_argv(launch.python, launch.ours),
                    str(theirs.fileno()), "--isolate", str(launch.scratch_mb), str(launch.nproc),
                    *launch.keep]
            env = dict(launch.env)
        self.launch = launch
        enter = None
        if launch is not None and launch.cgroups:
            def enter() -> None:
                _enter_cgroups(launch)
        self.proc = subprocess.Popen(
            argv, pass_fds=(theirs.fileno(),), stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE if launch else subprocess.DEVNULL,
            start_new_session=True, env=env, preexec_fn=enter)
        theirs.close()
        ours.settimeout(ANSWER_S)
        self.sock = ours
        self.lock = threading.RLock()
        # the sandbox's memory group, under which each seat gets one of its own, and its cpu
        # group, beside which each seat gets one of its own
        self._memory = self._cgroup("memory.limit_in_bytes")
        self._cpu = self._cgroup("cpu.shares")
        self._pid: int | None = None      # the zygote's, here (found on first use)
        self._seat_groups: list[str] = []  # seats' groups made, not yet removed

    def _cgroup(self, control: str) -> str | None:
        """The sandbox's control group that has the file ``control`` (None: it has none)."""
        folders = self.launch.cgroups if self.launch is not None else ()
        return next((f for f in folders if os.path.exists(os.path.join(f, control))), None)

    def _call(self, request: dict, fds: Sequence[int] = ()) -> tuple[dict, list[int]]:
        with self.lock:
            try:
                socket.send_fds(self.sock, [json.dumps(request).encode()], list(fds))
                reply, got, _, _ = socket.recv_fds(self.sock, 65536, 1)
            except TimeoutError:
                # a late answer must not be read as the next request's: this zygote is done
                # (zygote() starts another)
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(self.proc.pid, signal.SIGKILL)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    self.proc.wait(timeout=5)
                raise OSError(f"the seat zygote did not answer within {ANSWER_S:g} s") from None
        if not reply:
            raise OSError(f"the seat zygote has ended{self._why()}")
        return json.loads(reply), got

    def _why(self) -> str:
        """What a sandbox's launcher said before it ended (one bounded line)."""
        if self.launch is None or self.proc.stderr is None or self.proc.poll() is None:
            return ""
        text = self.proc.stderr.read(2048).decode("utf-8", "replace").strip()
        return f" ({' | '.join(text.splitlines())[:300]})" if text else ""

    def spawn(self, request: dict, fds: list[int]) -> tuple[int, int]:
        """Fork a seat (``{"spawn": SPEC}`` or ``{"exec": ARGV}``, with ``memory_mb`` and
        ``cpu_s``) on the pipes ``fds`` (stdin, stdout, stderr): its pid in the zygote's pid
        namespace and a pidfd of it.  In a sandbox with control groups, the seat is forked
        into groups of its own: memory of ``memory_mb`` (all its processes together), and one
        busy process's CPU share."""
        with self.lock:
            placed = self._into_seat_groups(int(request.get("memory_mb", 0)))
            try:
                reply, got = self._call(request, fds)
            finally:
                self._back_to_sandbox_groups(placed)
        if len(got) != 1:
            for fd in got:
                os.close(fd)
            raise OSError(reply.get("error", "the seat zygote sent no pidfd"))
        return int(reply["pid"]), got[0]

    def _zygote_pid(self) -> int | None:
        """The zygote's pid here (it runs in the sandbox's pid namespace): through a pidfd of
        itself it sends on request."""
        if self._pid is None:
            try:
                _, got = self._call({"self": True})
            except (OSError, ValueError):
                return None
            for fd in got:
                self._pid = self._pid or _pidfd_pid(fd)
                os.close(fd)
        return self._pid

    def _into_seat_groups(self, memory_mb: int) -> list[str]:
        """Make the next seat's groups (memory of ``memory_mb``, a cpu share) and move the
        idle zygote into them, so that the seat it forks next is born there (best effort, like
        the sandbox's groups); returns the sandbox's groups it left, to go back to after the
        fork.  The groups of seats that have ended are removed first."""
        n, wanted = next(_SEAT_GROUPS), []
        if self._memory is not None and memory_mb > 0:
            limit = str(memory_mb << 20)
            wanted.append((self._memory, os.path.join(self._memory, f"{SEAT_CGROUP_PREFIX}{n}"),
                           {"memory.limit_in_bytes": limit, "memory.memsw.limit_in_bytes": limit}))
        if self._cpu is not None and self.launch is not None:
            wanted.append((self._cpu, f"{self._cpu}{SEAT_CPU_SEPARATOR}{n}",
                           {"cpu.shares": str(self.launch.cpu_shares)}))
        if not wanted:
            return []
        self._seat_groups = [g for g in self._seat_groups if not _remove_cgroup(g)]
        pid = self._zygote_pid()
        if pid is None:
            return []
        placed = []
        for sandbox_group, group, limits in wanted:
            try:
                os.mkdir(group)
            except OSError:
                continue
            self._seat_groups.append(group)
            try:
                for name, value in limits.items():
                    if os.path.exists(os.path.join(group, name)):
                        _write(os.path.join(group, name), value)
                _write(os.path.join(group, "cgroup.procs"), str(pid))
            except OSError:
                continue
            placed.append(sandbox_group)
        return placed

    def _back_to_sandbox_groups(self, groups: list[str]) -> None:
        """Move the zygote back into the sandbox's ``groups``, after a seat's fork."""
        for group in groups:
            with contextlib.suppress(OSError):
                _write(os.path.join(group, "cgroup.procs"), str(self._pid))

    def status(self, pid: int) -> int | None:
        """The exit code of a seat that has ended (None while it runs, or if unknown)."""
        try:
            return self._call({"status": pid})[0]["status"]
        except (OSError, ValueError):
            return None

    def alive(self) -> bool:
        return self.proc.poll() is None

    def close(self) -> None:
        self.sock.close()
        if self.proc.stderr is not None:
            self.proc.stderr.close()
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=5)
        if self.launch is not None:
            _leave_cgroups(self.launch)


_ZYGOTES: dict[tuple, Zygote] = {}
_LOCK = threading.Lock()


def zygote(env: dict[str, str] | None, launch: Launch | None = None) -> Zygote:
    """This process's zygote for ``env`` or ``launch`` (started on first use, again if it has
    died)."""
    key = (tuple(sorted((env or {}).items())), launch)
    with _LOCK:
        z = _ZYGOTES.get(key)
        if z is None or not z.alive():
            if z is not None:
                z.close()
            z = _ZYGOTES[key] = Zygote(env, launch)
        return z


def _forget_zygotes() -> None:
    """In a child forked from a league process (a worker): the parent's zygotes are the
    parent's; forget them without signalling them (a worker's exit must not end them)."""
    for z in _ZYGOTES.values():
        with contextlib.suppress(OSError):
            z.sock.close()
    _ZYGOTES.clear()


os.register_at_fork(after_in_child=_forget_zygotes)


def leave_all_cgroups() -> None:
    """Remove the control groups of this process's sandboxes once their processes are gone (as
    they go within :data:`LEAVE_WAIT_S`): for a process stopped by a signal, which has killed
    its children instead of closing its zygotes.  It takes no lock (the signal may have come
    while the process held one)."""
    for z in list(_ZYGOTES.values()):
        if z.launch is not None:
            _leave_cgroups(z.launch)


def close_zygotes() -> None:
    with _LOCK:
        zs = list(_ZYGOTES.values())
        _ZYGOTES.clear()
    for z in zs:
        z.close()


if __name__ == "__main__":
    raise SystemExit(main())
