"""Worker processes that die with the league, and take their seat processes along.

A local league's workers are children of multiprocessing's fork server, not of the league, and
they hold the pipes that keep the fork server and the resource tracker alive: when the league
was killed (``kill -9``, SIGTERM) all of them lived on, each worker with its seat processes
(``league.apart.isolated`` starts those in sessions of their own, so no signal to a group reaches
them). So each worker watches the league itself (:func:`die_with`) and, when the league ends
or stops it with SIGTERM (:func:`stop_on_sigterm`), kills its own children's process groups
and exits; the fork server and the resource tracker then see their pipes close and exit too.

Linux and other systems with ``/proc``; elsewhere the workers still exit, the seats are left
to notice their closed pipes.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

POLL_S = 0.5  # how often to look at the league where the system cannot wait on a process


def children(pid: int | None = None) -> list[tuple[int, int]]:
    """``(pid, process group)`` of every child of ``pid`` (this process), read from /proc."""
    parent = os.getpid() if pid is None else pid
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rpartition(")")[2].split()
        except OSError:  # ended while we looked
            continue
        if len(fields) > 2 and int(fields[1]) == parent:
            found.append((int(stat.parent.name), int(fields[2])))
    return found


def kill_children() -> None:
    """SIGKILL every child of this process; a child that leads its own process group (a seat
    process, with whatever it forked) is killed with its whole group."""
    own = os.getpgrp()
    for pid, group in children():
        with contextlib.suppress(OSError):
            if group == pid and group != own:
                os.killpg(group, signal.SIGKILL)
            else:
                os.kill(pid, signal.SIGKILL)


_AT_DEATH: list[Callable[[], None]] = []


def at_death(cleanup: Callable[[], None]) -> None:
    """Run ``cleanup`` when this process is stopped (SIGTERM, or the league gone), after its
    children are killed: the exit is ``os._exit``, past atexit and multiprocessing's finalizers,
    so what must outlive nothing (a sandbox's control groups) is removed here.  Best effort:
    ``cleanup`` may run inside a signal handler, so it must take no lock the process may hold."""
    _AT_DEATH.append(cleanup)


def _die(code: int) -> None:
    kill_children()
    for cleanup in _AT_DEATH:
        with contextlib.suppress(Exception):
            cleanup()
    os._exit(code)


def stop_on_sigterm() -> None:
    """SIGTERM (the league stopping its workers) kills this process's children, then exits."""
    def stop(signum: int, frame: Any) -> None:
        _die(128 + signum)

    signal.signal(signal.SIGTERM, stop)


def die_with(pid: int) -> None:
    """End this process (and its children) as soon as process ``pid`` ends, from a daemon
    thread that waits on it: a pidfd where the system has one, else a look every ``POLL_S``."""
    threading.Thread(target=_watch, args=(pid,), name="guild-lifeline", daemon=True).start()


def _watch(pid: int) -> None:
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:  # the league ended before we started
        _die(1)
    except (AttributeError, OSError):  # not Linux >= 5.3
        while _alive(pid):
            time.sleep(POLL_S)
        _die(1)
    else:
        select.select([fd], [], [])  # readable once the process has ended
        _die(1)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, another user's (the league's pid was reused)
        return False
    return True
