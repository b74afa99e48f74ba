"""Stopping ``guild train`` at a safe point: SIGTERM and Ctrl-C raise only inside the run's own
computations.

A signal handler's exception is raised wherever the main thread happens to be. Raised inside a
library's critical section (TensorBoard's writer queue between its put and its notify, tqdm's
pair of locks), it leaves a lock held or a queue counting an item no thread will take, and the
run's own close (``Board.close``, the progress bar's) then waits forever: the run neither stops
nor saves. So while :func:`stops_held` is in force, a stop raises at once only inside
:func:`interruptible` (an update, an evaluation: the run's own arithmetic, which the training
loop undoes to the last whole update); anywhere else it waits, and the next
:func:`interruptible` raises it on entry. Outside :func:`stops_held` (a library caller of
``train``) signals keep their own handlers and :func:`interruptible` does nothing.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sim.commandline import caught_signals


class Terminated(KeyboardInterrupt):
    """SIGTERM during ``guild train``: handled as Ctrl-C is (the run keeps a checkpoint)."""


_open = 0  # how deep the main thread is inside interruptible()
_pending: KeyboardInterrupt | None = None  # a stop that came outside it


@contextmanager
def interruptible() -> Iterator[None]:
    """Where a stop may raise: a stop that came before raises on entry, one that comes during
    raises where it lands."""
    global _open
    _open += 1
    try:
        _raise_pending()  # (after the count: a signal between the two raises on its own)
        yield
    finally:
        _open -= 1


def _raise_pending() -> None:
    global _pending
    if _pending is not None:
        stop, _pending = _pending, None
        raise stop


def _stop(signum: int, frame: Any) -> None:
    global _pending
    if signum == signal.SIGTERM:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a second one must not cut the save
        stop: KeyboardInterrupt = Terminated()
    else:  # Ctrl-C: a second one raises wherever it lands, as Python's own handler does
        signal.signal(signal.SIGINT, signal.default_int_handler)
        stop = KeyboardInterrupt()
    if _open:
        raise stop
    if _pending is None:
        _pending = stop


@contextmanager
def stops_held() -> Iterator[None]:
    """SIGTERM and Ctrl-C raise only inside :func:`interruptible` (module docstring); the
    previous handlers come back after. A Ctrl-C ignored when the run began stays ignored
    (``sim.commandline.caught_signals``). Off the main thread, where no signal is handled,
    nothing changes."""
    global _pending
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {s: signal.signal(s, _stop) for s in caught_signals()}
    try:
        yield
    finally:
        for s, handler in previous.items():  # (None: set outside Python, left as the default)
            signal.signal(s, signal.SIG_DFL if handler is None else handler)
        _pending = None  # a stop that came after the last computation: the run had finished
