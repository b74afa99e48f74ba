"""One seat program in a process of its own, and the pipes the league talks to it through.

A :class:`SeatProcess` is started either as a command (``exec:`` programs, through
``subprocess``) or forked from this league process's zygote (hosted Python policies,
``league.seat.zygote``: a fork, without a fresh interpreter's imports).  Either way it
runs in a session of its own under its limits, its standard error goes to a bounded tail, and
every read and write is bounded in size and time, so nothing it does can block the league.
"""

from __future__ import annotations

import contextlib
import os
import resource
import select
import shlex
import signal
import subprocess
import threading
import time
from collections import deque
from typing import Any

from league.seat.protocol import MAX_LINE, encode_line
from league.seat.zygote import Launch, die_with_parent, zygote

TAIL_BYTES = 2048


class SeatFaultError(RuntimeError):
    """A seat process failed one decision; ``kind`` is the league's fault kind."""

    def __init__(self, kind: str, note: str, fatal: bool = False) -> None:
        super().__init__(note)
        self.kind = kind
        self.fatal = fatal  # the policy cannot play this episode (its reset failed)


class _Tail:
    """Drains a pipe in a daemon thread, keeping its last ``TAIL_BYTES`` bytes."""

    def __init__(self, fd: int) -> None:
        self._chunks: deque[bytes] = deque()
        self._size = 0
        self._lock = threading.Lock()
        threading.Thread(target=self._drain, args=(fd,), daemon=True).start()

    def _drain(self, fd: int) -> None:
        with open(fd, "rb", buffering=0) as pipe:
            self._read(pipe)

    def _read(self, pipe: Any) -> None:
        for chunk in iter(lambda: pipe.read(4096), b""):
            with self._lock:
                self._chunks.append(chunk)
                self._size += len(chunk)
                while self._size - len(self._chunks[0]) >= TAIL_BYTES:
                    self._size -= len(self._chunks.popleft())

    def text(self) -> str:
        with self._lock:
            data = b"".join(self._chunks)[-TAIL_BYTES:]
        return data.decode("utf-8", "replace").strip().replace("\n", " | ")[-300:]


class SeatProcess:
    """One running seat program and its pipes (:meth:`command` or :meth:`forked`)."""

    def __init__(self, pid: int, stdin: int, stdout: int, stderr: int,
                 popen: subprocess.Popen | None = None, pidfd: int | None = None,
                 status: Any = None, group: bool = True) -> None:
        self.pid = pid
        self.seeds: set[int] = set()  # the towns it has played (never twice: league.apart.isolated)
        self._group = group  # pid is ours to signal, with its process group
        self._popen, self._status = popen, status
        self._pidfd = -1 if pidfd is None else pidfd
        self.tail = _Tail(stderr)
        self._buffer = b""
        self._in, self._out = stdin, stdout
        os.set_blocking(self._in, False)
        os.set_blocking(self._out, False)

    @classmethod
    def command(cls, argv: list[str], memory_mb: int, cpu_s: int,
                env: dict[str, str] | None = None) -> SeatProcess:
        """Start ``argv`` as a program of its own."""
        parent = os.getpid()

        def limits() -> None:  # in the child, before exec: it cannot undo them afterwards
            die_with_parent()
            if os.getppid() != parent:  # the league process died before the flag was set
                os._exit(1)
            mem = memory_mb * 1024 * 1024
            resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
            resource.setrlimit(resource.RLIMIT_CPU, (cpu_s, cpu_s))

        try:
            proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, start_new_session=True,
                                    preexec_fn=limits, bufsize=0, env=env)
        except OSError as e:
            raise SeatFaultError("crashed", f"cannot start {shlex.join(argv)!r}: {e.strerror}") \
                from None
        fds = [os.dup(pipe.fileno()) for pipe in (proc.stdin, proc.stdout, proc.stderr)]
        for pipe in (proc.stdin, proc.stdout, proc.stderr):
            pipe.close()  # the process is ours to read and write through the copies
        return cls(proc.pid, *fds, popen=proc)

    @classmethod
    def forked(cls, spec: str, memory_mb: int, cpu_s: int,
               env: dict[str, str] | None = None, launch: Launch | None = None,
               argv: list[str] | None = None) -> SeatProcess:
        """Fork ``python -m league.seat.host spec`` (or, given ``argv``, start that program)
        from the zygote for ``env``, or from the one in the sandbox ``launch`` describes."""
        pipes = [os.pipe() for _ in range(3)]
        theirs = [pipes[0][0], pipes[1][1], pipes[2][1]]
        request: dict[str, Any] = {"memory_mb": memory_mb, "cpu_s": cpu_s}
        request.update({"exec": argv} if argv is not None else {"spawn": spec})
        try:
            z = zygote(env, launch)
            pid, pidfd = z.spawn(request, theirs)
        except (OSError, ValueError, KeyError) as e:
            for r, w in pipes:
                os.close(r)
                os.close(w)
            raise SeatFaultError("crashed", f"cannot start a seat for {spec!r}: {e}") from None
        for fd in theirs:
            os.close(fd)
        return cls(pid, pipes[0][1], pipes[1][0], pipes[2][0], pidfd=pidfd, status=z.status,
                   group=launch is None)

    def ask(self, message: dict, timeout: float | None) -> bytes:
        """Send one request; return the answer line (without its newline)."""
        until = None if timeout is None else time.monotonic() + timeout
        self.send(message, until, timeout)
        return self.receive(until, timeout)

    def send(self, message: dict, until: float | None, timeout: float | None) -> None:
        """Write one request by ``until`` (a program that stops reading its requests cannot
        block the league once the pipe is full)."""
        data = memoryview(encode_line(message))
        while data:
            try:
                data = data[os.write(self._in, data):]
            except BlockingIOError:
                wait = None if until is None else until - time.monotonic()
                if wait is not None and wait <= 0:
                    raise SeatFaultError("timeout", f"did not read its requests for over "
                                         f"{timeout:g} s{self._note()}") from None
                select.select([], [self._in], [], wait)
            except OSError:  # BrokenPipeError: it has exited
                raise self._ended("exited before the request") from None

    def receive(self, until: float | None, timeout: float | None) -> bytes:
        """The next line, by the ``time.monotonic`` time ``until`` (``timeout`` is the limit
        named in the fault)."""
        while b"\n" not in self._buffer:
            if len(self._buffer) > MAX_LINE:
                raise SeatFaultError("garbage", f"wrote more than {MAX_LINE} bytes without a "
                                f"newline{self._note()}")
            chunk = self._ready()  # an answer already there counts even if read late
            if chunk is None:
                wait = None if until is None else until - time.monotonic()
                if wait is not None and wait <= 0:
                    raise SeatFaultError("timeout", f"took over {timeout:g} s{self._note()}")
                select.select([self._out], [], [], wait)
                continue
            if not chunk:
                raise self._ended("exited")
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        if len(line) > MAX_LINE:
            raise SeatFaultError("garbage", f"answered {len(line)} bytes in one line (at most "
                            f"{MAX_LINE}){self._note()}")
        return line

    def waiting(self) -> bool:
        """Whether the process wrote a whole line the league has not read yet (it may be
        waiting for the league's answer to it); a part of one is not (a stray byte would do)."""
        while b"\n" not in self._buffer and len(self._buffer) <= MAX_LINE:
            chunk = self._ready()
            if not chunk:  # nothing more yet, or it ended (receive says so)
                break
            self._buffer += chunk
        return b"\n" in self._buffer

    def _ready(self) -> bytes | None:
        """What the process has written, read without waiting: None when nothing is there
        yet, ``b""`` when it has ended (its output is non-blocking)."""
        try:
            return os.read(self._out, 65536)
        except BlockingIOError:
            return None

    def alive(self) -> bool:
        if self._popen is not None:
            return self._popen.poll() is None
        return not select.select([self._pidfd], [], [], 0)[0]

    def exit_code(self, timeout: float) -> int | None:
        """The program's exit code once it has ended (None if it has not within ``timeout``)."""
        if self._popen is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                return self._popen.wait(timeout=timeout)
            return None
        until = time.monotonic() + timeout
        if not select.select([self._pidfd], [], [], timeout)[0]:
            return None
        while (code := self._status(self.pid)) is None and time.monotonic() < until:
            time.sleep(0.005)  # the zygote reaps it on SIGCHLD
        return code

    def _ended(self, what: str) -> SeatFaultError:
        """A fault for a program that closed its output: it is ended at once (one that closed
        its output and went on running must not cost the league a wait)."""
        code = self.exit_code(0.5)
        if code is None:
            self.kill()
            return SeatFaultError("crashed", f"{what} (closed its output; ended){self._note()}")
        how = f"killed by signal {-code}" if code < 0 else f"status {code}"
        return SeatFaultError("crashed", f"{what} ({how}){self._note()}")

    def _note(self) -> str:
        tail = self.tail.text()
        return f"; stderr: {tail}" if tail else ""

    def forget(self) -> None:
        """Close this process's copy of the pipes and pidfd, signalling nothing (in a forked
        child, where the program belongs to the parent)."""
        for fd in (self._in, self._out, self._pidfd):
            with contextlib.suppress(OSError):
                os.close(fd)
        self._in = self._out = self._pidfd = -1
        self._popen = None

    def kill(self) -> None:
        """End the program and everything it started (its process group; in a sandbox, its
        pid namespace, which ends with the process the pidfd holds)."""
        if self._pidfd >= 0:
            with contextlib.suppress(ProcessLookupError, PermissionError, OSError):
                signal.pidfd_send_signal(self._pidfd, signal.SIGKILL)
        # A program started here, outside a sandbox: its group too.  Its pid is nobody else's
        # while it is not reaped; once it is, while its group has members (a pid is not given
        # out while a group holds it), so the group is killed unless a process has the pid
        # again.  A forked seat's group is killed by the zygote as it reaps the seat
        # (league.seat.zygote.serve; asked below), never from here.
        if self._group and self._popen is not None:
            reaped = self._popen.returncode is not None
            if not (reaped and os.path.exists(f"/proc/{self.pid}")):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(self.pid, signal.SIGKILL)
            if not reaped:  # it may not have left our group yet
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(self.pid, signal.SIGKILL)
        for fd in (self._in, self._out):
            with contextlib.suppress(OSError):
                os.close(fd)
        self._in = self._out = -1
        if self._popen is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._popen.wait(timeout=5)
        elif self._pidfd >= 0:  # the zygote reaps it, and then kills its group
            if select.select([self._pidfd], [], [], 5)[0] and self._status is not None:
                self._status(self.pid)  # reaped now: the zygote may be closed next
            os.close(self._pidfd)
            self._pidfd = -1
