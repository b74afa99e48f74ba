"""Seat processes forked from a clean interpreter: a restart costs milliseconds, not a start.

Starting ``python -m agents.seat_host`` costs about 0.3 s of imports, paid again at every
restart after a fault.  A zygote (``python -m agents.seat_zygote FD``) is started once per league
process with the same interpreter and import path; it imports what every hosted seat needs and
then only forks.  It never runs a policy's code: the policy's module is imported by the forked
seat, after it has left the zygote's session and taken its limits, so one policy cannot change
what another one's seat starts from.  Nothing of a game is ever in the zygote.

Its protocol, on a ``SOCK_SEQPACKET`` socket from the league process: ``{"spawn": SPEC,
"memory_mb": M, "cpu_s": C}`` with three file descriptors (the seat's standard input, output and
error) answers ``{"pid": P}``; ``{"status": P}`` answers ``{"status": CODE}`` once P has ended
(``Popen.returncode``'s convention; null while it runs).  The zygote exits when the league
process does (its socket closes), and its seats die with it.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import resource
import signal
import socket
import subprocess
import sys
import threading
import traceback
from collections.abc import Sequence
from typing import Any

MAX_ENDED = 4096        # exit codes kept for status requests
PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    """Ask the kernel to kill this process when its parent dies (Linux; elsewhere nothing)."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


# --- the zygote -------------------------------------------------------------------------------

def _seat(request: dict, fds: list[int], sock: socket.socket, zygote: int) -> None:
    """In the forked child: leave the zygote, take the limits and the pipes, serve; never
    returns."""
    code = 1
    try:
        os.setsid()
        die_with_parent()
        if os.getppid() != zygote:  # the zygote died before the flag was set
            return
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        mem = int(request["memory_mb"]) * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
        cpu = int(request["cpu_s"])
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))
        sock.close()
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        from agents import seat_host

        code = seat_host.main([str(request["spawn"])])
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else 1
    except BaseException:  # the policy's KeyboardInterrupt and the like: its own crash
        traceback.print_exc()
    finally:
        with contextlib.suppress(Exception):
            sys.stderr.flush()
        os._exit(code)


def serve(sock: socket.socket) -> None:
    """Fork seats on request until the league process closes the socket."""
    ended: dict[int, int] = {}

    def reap(*_: Any) -> None:
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            ended[pid] = os.waitstatus_to_exitcode(status)
            if len(ended) > MAX_ENDED:
                ended.pop(next(iter(ended)))

    signal.signal(signal.SIGCHLD, reap)
    me = os.getpid()
    while True:
        message, fds, _, _ = socket.recv_fds(sock, 65536, 3)
        if not message:
            return
        request = json.loads(message)
        if "spawn" in request and len(fds) == 3:
            sys.stderr.flush()
            pid = os.fork()
            if pid == 0:
                _seat(request, fds, sock, me)
            reply: dict = {"pid": pid}
        else:
            reap()
            reply = {"status": ended.get(int(request.get("status", -1)))}
        for fd in fds:
            os.close(fd)
        sock.send(json.dumps(reply).encode())


def main() -> int:
    sock = socket.socket(fileno=int(sys.argv[1]))
    die_with_parent()
    from agents import seat_host  # noqa: F401  (every seat's imports, paid once here)

    serve(sock)
    return 0


# --- the league's side ------------------------------------------------------------------------

class Zygote:
    """A running zygote and the league process's end of its socket."""

    def __init__(self, env: dict[str, str] | None) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "agents.seat_zygote", str(theirs.fileno())],
            pass_fds=(theirs.fileno(),), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL, start_new_session=True, env=env)
        theirs.close()
        self.sock = ours
        self.lock = threading.Lock()

    def _call(self, request: dict, fds: Sequence[int] = ()) -> dict:
        with self.lock:
            socket.send_fds(self.sock, [json.dumps(request).encode()], list(fds))
            reply = self.sock.recv(65536)
        if not reply:
            raise OSError("the seat zygote has ended")
        return json.loads(reply)

    def spawn(self, spec: str, memory_mb: int, cpu_s: int, fds: list[int]) -> int:
        """Fork a seat serving ``spec`` on the pipes ``fds`` (stdin, stdout, stderr)."""
        return int(self._call({"spawn": spec, "memory_mb": memory_mb, "cpu_s": cpu_s}, fds)["pid"])

    def status(self, pid: int) -> int | None:
        """The exit code of a seat that has ended (None while it runs, or if unknown)."""
        try:
            return self._call({"status": pid})["status"]
        except (OSError, ValueError):
            return None

    def alive(self) -> bool:
        return self.proc.poll() is None

    def close(self) -> None:
        self.sock.close()
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=5)


_ZYGOTES: dict[tuple, Zygote] = {}
_LOCK = threading.Lock()


def zygote(env: dict[str, str] | None) -> Zygote:
    """This process's zygote for ``env`` (started on first use, again if it has died)."""
    key = tuple(sorted((env or {}).items()))
    with _LOCK:
        z = _ZYGOTES.get(key)
        if z is None or not z.alive():
            if z is not None:
                z.close()
            z = _ZYGOTES[key] = Zygote(env)
        return z


def close_zygotes() -> None:
    with _LOCK:
        zs = list(_ZYGOTES.values())
        _ZYGOTES.clear()
    for z in zs:
        z.close()


if __name__ == "__main__":
    raise SystemExit(main())
