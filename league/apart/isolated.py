"""Policies that run apart: a process per seat, limits enforced from outside.

:class:`IsolatedPolicy` plays a seat through a program that speaks the seat protocol
(``league.seat.protocol``): ``exec:COMMAND`` runs any program, and a league runs every
``module:Name`` it does not trust as ``python -m league.seat.host module:Name``.  Each turn the
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

Nothing here waits for an answer while other seats could be asked: the league sends every
seat's reset (:meth:`IsolatedPolicy.begin`) before it waits for any (:meth:`IsolatedPolicy.ready`),
and every seat's act before it reads any, so slow seats overlap rather than add up.  An
episode's reset has the start's allowance (``START_TIMEOUT``: the program starts, imports and
builds its policy) and failing it ends the seat's play for the episode; a process restarted
within an episode is reset within the time of the decision it restarts for.
"""

from __future__ import annotations

import atexit
import json
import math
import os
import shlex
import sys
import threading
import time
from typing import Any

from agents.policy import Decision
from league.apart.seat_process import SeatFaultError, SeatProcess
from league.seat.protocol import (
    MAX_NEEDS,
    VIEW_FIELDS,
    AnswerError,
    ProtocolError,
    SeatError,
    act_request,
    parse_answer,
    read_line,
    reset_request,
    view,
    view_fields,
)
from league.seat.zygote import Launch, close_zygotes
from sim import Game

DEFAULT_MEMORY_MB = 4096
MAX_TIMEOUTS = 2            # timeouts in one episode after which a seat plays no more of it
DEFAULT_CPU_S = 3600
START_TIMEOUT = 60.0        # seconds for an episode's reset (the program starts and imports)


def town_refusal(name: str, why: object) -> str:
    """Why policy ``name`` cannot play a league: ``why``, its ``check_world``'s refusal (a
    model of another town's shapes; every league plays the standard town)."""
    text = str(why).strip()
    first = text.splitlines()[0] if text else type(why).__name__
    return f"policy {name!r} cannot play the league's town (the standard one): {first}"


def _refused_town(reply: bytes) -> bool:
    """Whether a build answer's error is the policy's refusal of the league's town
    (``league.seat.host`` says ``"town": true`` with it)."""
    try:
        data = json.loads(reply)
    except (ValueError, RecursionError):
        return False
    return isinstance(data, dict) and data.get("town") is True


def _reset_reply(reply: bytes) -> tuple[str | None, tuple[str, ...]]:
    """What a reply to ``build`` or ``reset`` says went wrong (None: nothing; any other answer
    is accepted, as the protocol says), and the view fields it asks for (default: all)."""
    try:
        data = json.loads(reply)
    except (ValueError, RecursionError):
        return None, VIEW_FIELDS
    if not isinstance(data, dict):
        return None, VIEW_FIELDS
    if "error" in data:
        return str(data["error"])[:300], VIEW_FIELDS
    if "fields" not in data:
        return None, VIEW_FIELDS
    try:
        return None, view_fields(data["fields"], "the reset answer's fields")
    except ProtocolError as e:
        return str(e), VIEW_FIELDS


_IDLE: dict[tuple, list[SeatProcess]] = {}
_IDLE_LOCK = threading.Lock()


def _take(key: tuple, seed: int) -> SeatProcess | None:
    """A live idle process for the same program and limits (started by an earlier episode)
    that has never played the town ``seed``: a seat carries no memory from one rotation of a
    town to the next (the six episodes of a league's group share their seed)."""
    with _IDLE_LOCK:
        idle = _IDLE.get(key, [])
        for i in range(len(idle) - 1, -1, -1):
            proc = idle[i]
            if not proc.alive():
                idle.pop(i).kill()
            elif seed not in proc.seeds:
                return idle.pop(i)
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
    close_zygotes()


def _forget_idle() -> None:
    """In a child forked from a league process: the idle seat processes are the parent's;
    close this copy of their pipes and forget them (never kill them from here)."""
    for procs in _IDLE.values():
        for proc in procs:
            proc.forget()
    _IDLE.clear()


os.register_at_fork(after_in_child=_forget_idle)
atexit.register(close_all)  # a league's worker processes close theirs: league.procs.workers


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
                 env: dict[str, str] | None = None, hosted: str | None = None,
                 launch: Launch | None = None, seat_key: bytes | None = None) -> None:
        if not argv:
            raise ValueError("an isolated policy needs a command")
        self.argv = list(argv)
        self.hosted = hosted  # a Python spec forked from the zygote instead of run as argv
        self.launch = launch  # the sandbox its processes start in (None: none)
        self.seat_key = seat_key  # the league's key for reset seeds (None: a public draw)
        self.name = name or shlex.join(argv)
        self.timeout = timeout
        self.memory_mb = memory_mb
        self.cpu_s = cpu_s
        self.env = env
        self._proc: SeatProcess | None = None
        self._reset: dict | None = None   # this episode's reset message (None: not begun)
        self._seed = 0
        self._fresh = True                # the process has not had this episode's reset yet
        self._fields = VIEW_FIELDS        # what the program asked to receive with each act
        self._resetting: float | None = None  # a reset is out: its answer is due by then
        self._reset_limit: float | None = None  # the limit that reset's fault names
        self._begun: SeatFaultError | None = None  # what went wrong sending the reset
        self._until: float | None = None  # a decision is out: its answer is due by then
        self._posted: SeatFaultError | None = None  # what went wrong posting this turn's act
        self._timeouts = 0                # this episode's (a second one ends its play)
        self._faulted = False             # its process failed a decision: not pooled again
        self._pooled = False              # its process came from the pool of idle ones

    def __repr__(self) -> str:
        return f"IsolatedPolicy({self.name!r})"

    def reset(self, seed: int | None = None) -> None:
        """Remember the episode's seed; the reset message goes with :meth:`begin` (or, for a
        caller that does not begin episodes, with the first decision)."""
        self._seed = 0 if seed is None else int(seed)
        self._reset = None
        self._begun = self._posted = None
        self._timeouts = 0

    def begin(self, game: Game, seat: int, limit: float | None = None) -> None:
        """Send the episode's reset, starting the program if need be, without waiting for its
        answer (:meth:`ready` waits): the league begins every seat before it waits for any.
        The answer is due within ``limit`` seconds (default: ``START_TIMEOUT``, or the decision
        timeout when longer)."""
        if self._until is not None or self._resetting is not None:  # out of step
            self._restart()
        self._reset = reset_request(game, seat, self._seed, self.seat_key)
        self._fresh = True
        self._begun = None
        if limit is None:
            limit = max(self.timeout or 0.0, START_TIMEOUT)
        try:
            self._process()  # up first (a sandbox's first start is the league's time)
            self._send_reset(time.monotonic() + limit, limit)
        except SeatFaultError as e:
            self._restart()
            self._begun = e

    def ready(self) -> None:
        """Wait for the answer to the reset :meth:`begin` sent (by the time it was due).

        Raises :class:`SeatFaultError`, fatal (the seat's fallback plays the episode), when
        the program could not start, did not answer in time, or its policy failed to reset;
        its process is ended then."""
        failed, self._begun = self._begun, None
        if failed is None and self._resetting is not None:
            try:
                self._reset_answer()
            except SeatFaultError as e:
                self._restart()
                failed = e
        if failed is not None:
            raise SeatFaultError(failed.kind, str(failed), fatal=True)

    def post(self, game: Game, seat: int) -> None:
        """Send this turn's request now, so the program thinks while the league asks the other
        seats; :meth:`act` then waits for the answer (the time limit runs from here, or from
        when the league turns to the seat if later: :meth:`_answer`)."""
        try:
            self._ask(game, seat)
        except SeatFaultError as e:
            self._posted = e

    def act(self, game: Game, seat: int) -> Decision:
        posted, self._posted = self._posted, None
        if posted is not None:
            raise self._judged(posted)
        try:
            if self._until is None:
                self._ask(game, seat)
            return self._answer(game, seat)
        except SeatFaultError as e:
            self._restart()
            raise self._judged(e) from None
        except AnswerError as e:  # a well-behaved process whose policy answered nonsense
            self._faulted = True
            raise SeatFaultError("garbage", str(e)) from None
        except ProtocolError as e:
            self._restart()
            raise SeatFaultError("garbage", str(e)) from None
        except SeatError as e:
            self._faulted = True
            raise SeatFaultError("raised", f"its policy failed: {e}") from None

    def _send_reset(self, until: float, limit: float | None, pooled: bool = True) -> None:
        """Send the episode's reset to this policy's process, due by ``until``; an idle process
        of the pool that did not survive its wait is replaced by a new one, once."""
        assert self._reset is not None
        while True:
            proc = self._process(pooled)
            self._fresh = False
            proc.seeds.add(self._seed)
            self._resetting, self._reset_limit = until, limit
            try:
                proc.send(self._reset, _due(until), limit)
                return
            except SeatFaultError as e:
                if not self._pooled or e.kind == "timeout":
                    raise SeatFaultError(e.kind, f"reset {e}") from None
                self._restart()
                pooled = False

    def _reset_answer(self) -> None:
        """Read the answer to the reset that is out, by the time it is due; an idle process of
        the pool that did not survive its wait is replaced by a new one, once (one that is
        slow is not: its wait is over)."""
        assert self._proc is not None and self._resetting is not None
        while True:
            until, limit = self._resetting, self._reset_limit
            try:
                reply = self._proc.receive(_due(until), limit)
                break
            except SeatFaultError as e:
                if not self._pooled or e.kind == "timeout":
                    raise SeatFaultError(e.kind, f"reset {e}") from None
                self._restart()
                self._send_reset(until, limit, pooled=False)
                assert self._proc is not None
        self._resetting = None
        error, self._fields = _reset_reply(reply)
        if error is not None:
            raise SeatFaultError("raised", f"reset failed: {error}", fatal=True)

    def _judged(self, e: SeatFaultError) -> SeatFaultError:
        """A second timeout in one episode ends the seat's play for that episode (its fallback
        plays the rest): a program that sleeps costs the league one limit, not one a turn."""
        if e.kind == "timeout":
            self._timeouts += 1
            if self._timeouts >= MAX_TIMEOUTS and not e.fatal:
                return SeatFaultError(e.kind, f"{e}; a second timeout this episode", fatal=True)
        return e

    def _ask(self, game: Game, seat: int) -> None:
        """Send this decision's request without waiting for any answer: the act, or, for a
        process started afresh within the episode, its reset first (:meth:`_answer` sends the
        act once that is answered), due within this decision's time."""
        if self._until is not None:  # an answer never read: the program is out of step
            self._restart()
        if self._reset is None:  # a caller that does not begin episodes: the reset now
            self.begin(game, seat)
        if self._begun is not None or self._resetting is not None:
            self.ready()  # the episode's reset is out: its answer first
        try:
            proc = self._process()
            until = math.inf if self.timeout is None else time.monotonic() + self.timeout
            if self._fresh:
                self._send_reset(until, self.timeout)
            else:
                proc.send(act_request(game, seat, self._fields), _due(until), self.timeout)
        except SeatFaultError:
            self._restart()
            raise
        self._until = until

    def _answer(self, game: Game, seat: int) -> Decision:
        """Read the answer (the reset's first, when one is out), serving the program's requests
        for more of its view meanwhile.

        A seat that wrote a line before the league turned to it (a request for its view, or a
        restarted process's answer to its reset, which the league answers only now) may have
        been kept waiting by the seats before it (a slow rival's whole limit): its limit runs
        from now, but ends at most two limits after its post, so no seat gains from a chain
        of them (and a turn takes at most two limits: ``league.core.episode.episode_limit``).
        A seat that wrote nothing was thinking on its own, and its limit runs from its post:
        slow seats time out together, not one after another."""
        assert self._proc is not None
        if self.timeout is not None and self._until is not None and self._proc.waiting():
            now = min(time.monotonic(), self._until) + self.timeout  # _until: post + limit
            self._until = max(self._until, now)
            if self._resetting is not None:
                self._resetting = max(self._resetting, now)
        until = _due(self._until)
        if self._resetting is not None:
            self._reset_answer()
            self._proc.send(act_request(game, seat, self._fields), until, self.timeout)
        for _ in range(MAX_NEEDS + 1):
            data = read_line(self._proc.receive(until, self.timeout))
            if "need" not in data:
                self._until = None
                return parse_answer(data, game, seat)
            self._proc.send({"type": "view", **view(game, seat, view_fields(data["need"],
                                                                            "need"))},
                            until, self.timeout)
        raise ProtocolError(f"asked for more of its view over {MAX_NEEDS} times in one act")

    @property
    def _key(self) -> tuple:
        return (tuple(self.argv), self.memory_mb, self.cpu_s, self.launch)

    def probe(self) -> None:
        """Start the program and reset it once: a ``ValueError`` naming the policy when it
        cannot start, its policy cannot be built or it cannot play the league's town (a league
        checks before any episode).  Its process is ended, not pooled: a league checks before
        its folder exists, so that process's sandbox would show the folder once made."""
        for attempt in range(2):  # a second start, so that one lost start is not the verdict
            try:
                proc = self._process(pooled=False)  # the policy built afresh
                reply = proc.ask({"type": "build"}, START_TIMEOUT)
                break
            except SeatFaultError as e:
                self._restart()
                if attempt and e.kind == "timeout":  # the program may have started: say all
                    raise ValueError(
                        f"policy {self.name!r} was not ready within {START_TIMEOUT:g} s, twice "
                        "(its program's start, its policy's construction and its answer whether "
                        f"it plays the league's town): {e}") from None
                if attempt:
                    raise ValueError(f"policy {self.name!r} cannot start: {e}") from None
        error, _ = _reset_reply(reply)
        self._restart()
        if error and _refused_town(reply):
            raise ValueError(town_refusal(self.name, error))
        if error:
            raise ValueError(f"policy {self.name!r} cannot be built: {error}")

    def _process(self, pooled: bool = True) -> SeatProcess:
        """This policy's process: a live one kept, else an idle one of the pool (``pooled``),
        else a new one."""
        if self._proc is None or not self._proc.alive():
            if self._proc is not None:
                self._proc.kill()
            taken = _take(self._key, self._seed) if pooled else None
            self._pooled = taken is not None
            self._proc = taken or self._start()
            self._fresh = True
        return self._proc

    def _start(self) -> SeatProcess:
        if self.launch is not None:
            return SeatProcess.forked(self.hosted or self.name, self.memory_mb, self.cpu_s,
                                      launch=self.launch,
                                      argv=None if self.hosted else self.argv)
        if self.hosted is not None:
            return SeatProcess.forked(self.hosted, self.memory_mb, self.cpu_s, self.env)
        return SeatProcess.command(self.argv, self.memory_mb, self.cpu_s, self.env)

    def _restart(self) -> None:
        """Kill the process; the next decision starts it afresh (and resets it)."""
        if self._proc is not None:
            self._proc.kill()
            self._proc = None
        self._fresh = True
        self._until = self._resetting = None

    def close(self) -> None:
        """Hand the process to the next episode's policy of the same program (a reset message
        starts every episode, and a fresh policy object in ``league.seat.host``); one with an
        answer still due is out of step, so it is ended instead."""
        if self._until is not None or self._resetting is not None or self._faulted:
            self._restart()  # out of step, or it failed: what it started may still run
        if self._proc is not None:
            _give_back(self._key, self._proc)
            self._proc = None

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # interpreter shutdown
            pass


def _due(until: float | None) -> float | None:
    """A due time as ``SeatProcess`` takes it (None: no limit)."""
    return None if until is None or until == math.inf else until


def from_spec(spec: str, **params: Any) -> IsolatedPolicy:
    """``exec:COMMAND``: a program speaking the seat protocol (split like a shell would)."""
    try:
        argv = shlex.split(spec)
    except ValueError as e:
        raise ValueError(f"exec: cannot split the command {spec!r}: {e}") from None
    if not argv:
        raise ValueError("an exec policy needs a command: 'exec:./my_bot --fast'")
    return IsolatedPolicy(argv, name=f"exec:{spec}", **params)


def hosted(spec: str, name: str | None = None, **params: Any) -> IsolatedPolicy:
    """A Python policy spec (``module:Name``, ``sb3:PATH``) run apart by ``league.seat.host``,
    with this interpreter and its import path, so what the league can import the seat can (in
    a sandbox, ``launch``: what the sandbox shows it)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p or os.getcwd() for p in sys.path)}
    return IsolatedPolicy([sys.executable, "-m", "league.seat.host", spec], name=name or spec,
                          env=env, hosted=spec, **params)
