"""Policy calls that an episode can stop waiting for (``league.core.episode`` explains the limits).

A call runs here and now, or, when a time limit is set and the policy is not our own bounded
code, in a daemon thread of its seat, so that the episode can give up on it.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import Any

from agents import Factor, Magpie, RandomPolicy
from league.apart.isolated import SeatFaultError

# The built-in baselines are this project's own bounded code: with time limits they are still
# called directly (a thread hand-off costs more than a baseline's decision), as docs/api.md §3
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
    broken: bool = False           # the fallback plays the seat for the rest of the episode
    fallback: str = "factor"       # what plays a decision the policy does not make: factor, wait
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
        # a fatal error ends the seat's play this episode: the league says who plays it
        return e.kind, f"{e}; {plays(s.fallback)}" if e.fatal else str(e)
    return "raised", f"raised {check(e, s.policy)}"


def plays(fallback: str) -> str:
    """What a fault note says plays the seat instead: ``plays factor`` or ``waits``."""
    return "waits" if fallback == "wait" else f"plays {fallback}"


def describe(e: BaseException) -> str:
    """``Type: message``; a message that cannot be shown (its ``__str__`` raises) is left out,
    so that describing a policy's exception never raises in the league's process."""
    try:
        msg = str.__str__(str(e))  # a str subclass's own methods are the policy's code
    except KeyboardInterrupt:
        raise
    except BaseException:
        msg = "(its message cannot be shown)"
    return f"{type(e).__name__}: {msg}" if msg else type(e).__name__


MESSAGE_CHARS = 160  # of an exception's message in a fault note (notes are cut at 300)
WHERE_CHARS = 80     # of its ``file:line``


def explain(e: BaseException, policy: object = None) -> str:
    """A policy's exception for its fault note: type, message (bounded) and where it was
    raised: ``RuntimeError: boom (at my_bot.py:17)``. The place is the innermost frame of the
    traceback in the policy's own code (its top-level package), else the innermost frame."""
    text = describe(e)
    if len(text) > MESSAGE_CHARS:
        text = text[:MESSAGE_CHARS - 3] + "..."
    at = where(e, policy)
    return f"{text} (at {at})" if at else text


def where(e: BaseException, policy: object = None) -> str | None:
    """``file:line`` of the frame of ``e``'s traceback that :func:`explain` names (None
    without a traceback). The file is shown as its module's path (``pkg/mod.py``), so a note
    reads the same on every machine and in every working directory."""
    frames = []
    tb = e.__traceback__
    while tb is not None:
        frames.append(tb)
        tb = tb.tb_next
    if not frames:
        return None
    code = getattr(policy, "fn", None)  # a policy function's own (sim.seat_view.FunctionPolicy)
    home = (_package(code.__module__ if callable(code) else type(policy).__module__)
            if policy is not None else "")
    pick = next((tb for tb in reversed(frames)
                 if home and _package(tb.tb_frame.f_globals.get("__name__")) == home),
                frames[-1])
    path = _shown_path(pick.tb_frame.f_code.co_filename, pick.tb_frame.f_globals.get("__name__"))
    at = f"{path}:{pick.tb_lineno}"
    return at if len(at) <= WHERE_CHARS else "..." + at[-(WHERE_CHARS - 3):]


def _package(module: object) -> str:
    return module.split(".")[0] if type(module) is str else ""


def _shown_path(filename: str, module: object) -> str:
    """The last parts of ``filename`` that its module's dotted name covers (else its name)."""
    parts = PurePath(filename).parts
    if not parts:
        return filename
    if type(module) is not str or module == "__main__" or not module:
        return parts[-1]
    n = module.count(".") + 1 + (parts[-1] == "__init__.py")
    return "/".join(parts[-n:])


def check(e: BaseException, policy: object = None) -> str:
    """Describe a policy's exception (:func:`explain`); re-raise Ctrl-C (``KeyboardInterrupt``),
    the one that may be no policy's doing.  Any other ``BaseException`` (``SystemExit``,
    ``GeneratorExit``, a class of the policy's own) is its fault: it must not stop the league."""
    if isinstance(e, KeyboardInterrupt):
        raise e
    return explain(e, policy)
