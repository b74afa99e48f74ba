"""Policy calls that an episode can stop waiting for (``league.episode`` explains the limits).

A call runs here and now, or, when a time limit is set and the policy is not our own bounded
code, in a daemon thread of its seat, so that the episode can give up on it.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from agents import Factor, Magpie, RandomPolicy
from agents.isolated import SeatFaultError

# The built-in baselines are this project's own bounded code: with time limits they are still
# called directly (a thread hand-off would double the cost of a baseline league), as API.md
# keeps them beside the engine when other policies run apart from it.
BUILT_IN = (Factor, Magpie, RandomPolicy)


class Call:
    """One policy call: run once (here or in a seat's thread); its answer or its exception.

    Only a call handed to a thread gets an ``Event`` to wait on (``threaded``); one run here
    and now has finished when ``run`` returns (most calls of a baseline league: no lock each).
    """

    def __init__(self, fn: Callable[..., Any], args: tuple, turn: int, threaded: bool) -> None:
        self.fn, self.args, self.turn = fn, args, turn
        self.started = time.perf_counter()
        self.finished = threading.Event() if threaded else None
        self.value: Any = None
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            self.value = self.fn(*self.args)
        except BaseException as e:  # judged by the episode, in its own thread
            self.error = e
        finally:
            if self.finished is not None:
                self.finished.set()

    def done(self) -> bool:
        return self.finished is None or self.finished.is_set()

    def wait(self, until: float | None) -> bool:
        """Whether the call finished by the ``perf_counter`` time ``until`` (None: no limit)."""
        if self.finished is None:
            return True
        if until is None:
            return self.finished.wait()
        return self.finished.wait(max(0.0, until - time.perf_counter()))


class SeatThread:
    """A daemon thread that runs one seat's policy calls, one at a time, in order.

    Daemon, so that an abandoned call (one that overran) never keeps its process alive.
    """

    def __init__(self, seat: int) -> None:
        self._jobs: queue.SimpleQueue[Call | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._loop, name=f"league-seat-{seat}",
                                        daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while (call := self._jobs.get()) is not None:
            call.run()

    def submit(self, call: Call) -> None:
        self._jobs.put(call)

    def close(self) -> None:
        """Let the thread end once its current call (if any) returns."""
        self._jobs.put(None)


@dataclass
class Seat:
    """A seat's policy and what the episode knows about it."""

    policy: Any
    broken: bool = False           # factor plays the seat for the rest of the episode
    overrun: Call | None = None   # the call that overran, until it returns
    thread: SeatThread | None = field(default=None, repr=False)
    # What the policy is, read once per episode rather than once per decision:
    bounded: bool = field(init=False)     # a seat process, which enforces its own limits
    concurrent: bool = field(init=False)  # asked at the same time as the others (an LLM)
    direct: bool = field(init=False)      # always called here and now, never in a thread

    def __post_init__(self) -> None:
        self.bounded = bool(getattr(self.policy, "bounded", False))
        self.concurrent = bool(getattr(self.policy, "concurrent", False))
        self.direct = self.bounded or type(self.policy) in BUILT_IN

    def call(self, seat: int, fn: Callable[..., Any], args: tuple, turn: int,
             threaded: bool) -> Call:
        """Start ``fn(*args)``: in the seat's thread when ``threaded``, else here and now."""
        if not threaded or self.direct:
            call = Call(fn, args, turn, threaded=False)
            call.run()
            return call
        call = Call(fn, args, turn, threaded=True)
        if self.thread is None:
            self.thread = SeatThread(seat)
        self.thread.submit(call)
        return call

    def still_overrunning(self) -> bool:
        """Whether the call that overran is still running (then this decision is late too)."""
        if self.overrun is not None and self.overrun.done():
            self.overrun = None
        return self.overrun is not None

    def close(self) -> None:
        if self.thread is not None:
            self.thread.close()
            self.thread = None
        close = getattr(self.policy, "close", None)
        if self.bounded and callable(close):
            close()  # a seat process goes back to the worker's pool


def until(started: float, limit: float | None, deadline: float | None) -> float | None:
    """When to stop waiting for a call started at ``started`` (None: wait for it)."""
    if limit is None:
        return deadline
    return started + limit if deadline is None else min(started + limit, deadline)


def past(deadline: float | None) -> bool:
    return deadline is not None and time.perf_counter() >= deadline


def fault_of(s: Seat, e: BaseException) -> tuple[str, str]:
    """The fault (kind, note) a policy's exception counts as; a seat process's exception says
    its own kind, and the seat is restarted, not broken, unless the error is fatal."""
    if isinstance(e, SeatFaultError):
        s.broken = s.broken or e.fatal
        return e.kind, str(e)
    return "raised", f"raised {check(e)}"


def describe(e: BaseException) -> str:
    msg = str(e)
    return f"{type(e).__name__}: {msg}" if msg else type(e).__name__


def check(e: BaseException) -> str:
    """Describe a policy's exception; re-raise what is no policy's fault (e.g. Ctrl-C)."""
    if not isinstance(e, (Exception, SystemExit)):
        raise e
    return describe(e)
