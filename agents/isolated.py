"""Policies that run apart: a process per seat, limits enforced from outside (issue 16).

:class:`IsolatedPolicy` plays a seat through a program that speaks the seat protocol
(``agents.seat_protocol``): ``exec:COMMAND`` runs any program, and a league runs every
``module:Name`` it does not trust as ``python -m agents.seat_host module:Name``.  Each turn the
program receives only what its seat may see; it holds no game, so nothing it does can reach
the engine, the other seats or the baselines.

The parent enforces the limits, so the program cannot lift them:

* a decision that takes longer than ``timeout`` seconds: the whole process group is killed;
* ``memory_mb`` of address space and ``cpu_s`` seconds of CPU (``setrlimit`` in the child);
* an answer line longer than ``MAX_LINE`` bytes (a flood), or not a valid answer;
* an exit, a crash or a fork that outlives it (killed with the group).

Each of these raises :class:`SeatFaultError` with its ``kind`` (``timeout``, ``crashed``,
``garbage``, ``raised``) and a note that ends with a bounded tail of the program's standard
error; the process is started afresh for the next decision.  Standard error goes to that tail
only, never to the league's output.  Processes are kept between episodes (a reset message
starts each) and closed with the policy.
"""

from __future__ import annotations

import atexit
import json
import multiprocessing.util
import os
import resource
import select
import shlex
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from typing import Any

from sim import Game

from .policy import Decision
from .seat_protocol import (
    MAX_LINE,
    AnswerError,
    ProtocolError,
    SeatError,
    act_request,
    encode_line,
    parse_answer,
    reset_request,
)

DEFAULT_MEMORY_MB = 4096
DEFAULT_CPU_S = 3600
START_TIMEOUT = 60.0        # seconds for a reset (the program starts and imports)
TAIL_BYTES = 2048


class SeatFaultError(RuntimeError):
    """A seat process failed one decision; ``kind`` is the league's fault kind."""

    def __init__(self, kind: str, note: str, fatal: bool = False) -> None:
        super().__init__(note)
        self.kind = kind
        self.fatal = fatal  # the policy cannot play this episode (its reset failed)


class _Tail:
    """Drains a pipe in a daemon thread, keeping its last ``TAIL_BYTES`` bytes."""

    def __init__(self, pipe: Any) -> None:
        self._chunks: deque[bytes] = deque()
        self._size = 0
        self._lock = threading.Lock()
        threading.Thread(target=self._drain, args=(pipe,), daemon=True).start()

    def _drain(self, pipe: Any) -> None:
        for chunk in iter(lambda: os.read(pipe.fileno(), 4096), b""):
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
    """One running seat program and its pipes."""

    def __init__(self, argv: list[str], memory_mb: int, cpu_s: int,
                 env: dict[str, str] | None = None) -> None:
        def limits() -> None:  # in the child, before exec: it cannot undo them afterwards
            mem = memory_mb * 1024 * 1024
            resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
            resource.setrlimit(resource.RLIMIT_CPU, (cpu_s, cpu_s))

        try:
            self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=subprocess.PIPE, start_new_session=True,
                                         preexec_fn=limits, bufsize=0, env=env)
        except OSError as e:
            raise SeatFaultError("crashed", f"cannot start {shlex.join(argv)!r}: {e.strerror}") \
                from None
        self.tail = _Tail(self.proc.stderr)
        self._buffer = b""

    def ask(self, message: dict, timeout: float | None) -> bytes:
        """Send one request; return the answer line (without its newline)."""
        try:
            self.proc.stdin.write(encode_line(message))
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            raise self._ended("exited before the request") from None
        until = None if timeout is None else time.monotonic() + timeout
        out = self.proc.stdout
        while b"\n" not in self._buffer:
            if len(self._buffer) > MAX_LINE:
                raise SeatFaultError("garbage", f"wrote more than {MAX_LINE} bytes without a "
                                f"newline{self._note()}")
            wait = None if until is None else until - time.monotonic()
            if wait is not None and wait <= 0:
                raise SeatFaultError("timeout", f"took over {timeout:g} s{self._note()}")
            ready, _, _ = select.select([out], [], [], wait)
            if not ready:
                continue
            chunk = os.read(out.fileno(), 65536)
            if not chunk:
                raise self._ended("exited")
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        if len(line) > MAX_LINE:
            raise SeatFaultError("garbage", f"answered {len(line)} bytes in one line (at most "
                            f"{MAX_LINE}){self._note()}")
        return line

    def _ended(self, what: str) -> SeatFaultError:
        code = self.proc.wait(timeout=5) if self.proc.poll() is None else self.proc.returncode
        how = f"killed by signal {-code}" if code is not None and code < 0 else f"status {code}"
        return SeatFaultError("crashed", f"{what} ({how}){self._note()}")

    def _note(self) -> str:
        tail = self.tail.text()
        return f"; stderr: {tail}" if tail else ""

    def kill(self) -> None:
        """End the program and everything it started (its process group)."""
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        for pipe in (self.proc.stdin, self.proc.stdout):
            try:
                pipe.close()
            except OSError:
                pass
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass


def _reply_error(reply: bytes) -> str | None:
    """What a reply to ``build`` or ``reset`` says went wrong (None: nothing; any other
    answer is accepted, as the protocol says)."""
    try:
        data = json.loads(reply)
    except (ValueError, RecursionError):
        return None
    if isinstance(data, dict) and "error" in data:
        return str(data["error"])[:300]
    return None


_IDLE: dict[tuple, list[SeatProcess]] = {}
_IDLE_LOCK = threading.Lock()


def _take(key: tuple) -> SeatProcess | None:
    """A live idle process for the same program and limits (started by an earlier episode)."""
    with _IDLE_LOCK:
        idle = _IDLE.get(key, [])
        while idle:
            proc = idle.pop()
            if proc.proc.poll() is None:
                return proc
            proc.kill()
    return None


def _give_back(key: tuple, proc: SeatProcess) -> None:
    with _IDLE_LOCK:
        _IDLE.setdefault(key, []).append(proc)


def close_all() -> None:
    """Kill every idle seat process and what it started (when the worker ends)."""
    with _IDLE_LOCK:
        procs = [p for idle in _IDLE.values() for p in idle]
        _IDLE.clear()
    for proc in procs:
        proc.kill()


atexit.register(close_all)
# multiprocessing workers leave through os._exit, which skips atexit; its finalizers run.
multiprocessing.util.Finalize(None, close_all, exitpriority=100)


class IsolatedPolicy:
    """A seat played by a program in a process of its own (module docstring).

    Args:
        argv: the program and its arguments.
        name: how the seat is named in messages.
        timeout: seconds per decision (None: no limit; a crash is still noticed).
        memory_mb, cpu_s: the child's address-space and CPU-time limits.
    """

    scripted = False
    bounded = True  # enforces its own decision timeout: the league calls it directly

    def __init__(self, argv: list[str], name: str = "", timeout: float | None = None,
                 memory_mb: int = DEFAULT_MEMORY_MB, cpu_s: int = DEFAULT_CPU_S,
                 env: dict[str, str] | None = None) -> None:
        if not argv:
            raise ValueError("an isolated policy needs a command")
        self.argv = list(argv)
        self.name = name or shlex.join(argv)
        self.timeout = timeout
        self.memory_mb = memory_mb
        self.cpu_s = cpu_s
        self.env = env
        self._proc: SeatProcess | None = None
        self._reset: dict | None = None   # this episode's reset message, built at its first act
        self._seed = 0
        self._fresh = True                # the process has not had this episode's reset yet

    def __repr__(self) -> str:
        return f"IsolatedPolicy({self.name!r})"

    def reset(self, seed: int | None = None) -> None:
        """Remember the episode's seed; the reset message goes with the first decision."""
        self._seed = 0 if seed is None else int(seed)
        self._reset = None

    def act(self, game: Game, seat: int) -> Decision:
        if self._reset is None:
            self._reset = reset_request(game, seat, self._seed)
            self._fresh = True
        request = act_request(game, seat)
        try:
            proc = self._process()
            if self._fresh:
                self._fresh = False
                reply = proc.ask(self._reset, max(self.timeout or 0.0, START_TIMEOUT))
                error = _reply_error(reply)
                if error is not None:
                    raise SeatFaultError("raised", f"reset failed: {error}; plays factor",
                                         fatal=True)
            line = proc.ask(request, self.timeout)
            return parse_answer(line, game, seat, request["legal"])
        except SeatFaultError:
            self._restart()
            raise
        except AnswerError as e:  # a well-behaved process whose policy answered nonsense
            raise SeatFaultError("garbage", str(e)) from None
        except ProtocolError as e:
            self._restart()
            raise SeatFaultError("garbage", str(e)) from None
        except SeatError as e:
            raise SeatFaultError("raised", f"its policy failed: {e}") from None

    @property
    def _key(self) -> tuple:
        return (tuple(self.argv), self.memory_mb, self.cpu_s)

    def probe(self) -> None:
        """Start the program and reset it once: a ``ValueError`` naming the policy when it
        cannot start or its policy cannot be built (a league checks before any episode)."""
        try:
            proc = self._process()
            reply = proc.ask({"type": "build"}, START_TIMEOUT)
        except SeatFaultError as e:
            self._restart()
            raise ValueError(f"policy {self.name!r} cannot start: {e}") from None
        error = _reply_error(reply)
        self.close()
        if error:
            raise ValueError(f"policy {self.name!r} cannot be built: {error}")

    def _process(self) -> SeatProcess:
        if self._proc is None or self._proc.proc.poll() is not None:
            if self._proc is not None:
                self._proc.kill()
            self._proc = _take(self._key) or SeatProcess(self.argv, self.memory_mb, self.cpu_s,
                                                              self.env)
            self._fresh = True
        return self._proc

    def _restart(self) -> None:
        """Kill the process; the next decision starts it afresh (and resets it)."""
        if self._proc is not None:
            self._proc.kill()
            self._proc = None
        self._fresh = True

    def close(self) -> None:
        """Hand the process to the next episode's policy of the same program (a reset message
        starts every episode, and a fresh policy object in ``agents.seat_host``)."""
        if self._proc is not None:
            _give_back(self._key, self._proc)
            self._proc = None

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # interpreter shutdown
            pass


def from_spec(spec: str, **params: Any) -> IsolatedPolicy:
    """``exec:COMMAND``: a program speaking the seat protocol (split like a shell would)."""
    try:
        argv = shlex.split(spec)
    except ValueError as e:
        raise ValueError(f"exec: cannot split the command {spec!r}: {e}") from None
    if not argv:
        raise ValueError("an exec policy needs a command: 'exec:./my_bot --fast'")
    return IsolatedPolicy(argv, name=f"exec:{spec}", **params)


def hosted(spec: str, **params: Any) -> IsolatedPolicy:
    """A Python policy spec (``module:Name``, ``sb3:PATH``) run apart by ``agents.seat_host``,
    with this interpreter and its import path, so what the league can import the seat can."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p or os.getcwd() for p in sys.path)}
    return IsolatedPolicy([sys.executable, "-m", "agents.seat_host", spec], name=spec, env=env,
                          **params)
