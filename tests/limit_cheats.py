"""Policies that test the sandbox's limits (``league.apart.sandbox``): what a seat may see of
its package's neighbours, how much CPU it can take from other seats, how much memory it holds.

Fixtures of ``tests/test_sandbox_limits.py``, in the manner of ``tests/sandbox_cheats.py``: each
reports what it saw in the notes of the decisions it plays (a short JSON object, kept in the
replay's act events), and the test may copy this file into a package of its own and append
constants.  Nothing here imports anything but the standard library and ``agents``.
"""

from __future__ import annotations

import errno
import json
import os
import secrets
import signal
import time

from agents.policy import Decision

WAIT = "I wait and watch the road."
TOKEN = secrets.token_hex(6)  # this process (every seat is pid 1: its pid says nothing)

# Set by a test that copies this file (appended at its end).
SIBLINGS: tuple[str, ...] = ()  # the folders beside this package's, each with FILES
FILES: tuple[str, ...] = ()     # a rival's files in each of them
DATA = "data.txt"               # this package's own data file, next to the module


def _errno(e: OSError) -> str:
    return errno.errorcode.get(e.errno or 0, type(e).__name__)


def report(**evidence: object) -> Decision:
    """Wait, and tell the test what was seen (at most 600 characters of notes)."""
    text = json.dumps(evidence, separators=(",", ":"), sort_keys=True)
    return Decision(WAIT, notes=text)


def _read(path: str) -> str:
    try:
        with open(path, "rb") as f:
            return f"READ:{len(f.read())}"
    except OSError as e:
        return _errno(e)


# --- a rival's files beside its own package ---------------------------------------------------

class ReadsSiblings:
    """Reads its own data file, lists the package above its own and reads every file of the
    packages beside it (a rival's policy and credentials)."""

    def act(self, game, seat):
        here = os.path.dirname(os.path.abspath(__file__))
        above = os.path.dirname(here)
        try:
            listing: object = sorted(os.listdir(above))
        except OSError as e:
            listing = _errno(e)
        rivals = {f"{sibling}/{name}": _read(os.path.join(above, sibling, name))
                  for sibling in SIBLINGS for name in FILES}
        return report(own=_read(os.path.join(here, DATA)), above=listing, rivals=rivals,
                      init=_read(os.path.join(above, "__init__.py")))


class Quiet:
    """Honest: waits."""

    def act(self, game, seat):
        return WAIT


# --- CPU: many processes against one ----------------------------------------------------------

SPINNERS = 32      # busy children each of its seat processes starts, and leaves running
_SPINNING: list[int] = []


class Spinner:
    """Forks ``SPINNERS`` children that spin forever on its first decision (once per process:
    they keep spinning while the process is idle, pooled for a later episode, and while other
    seats decide), then waits; reports how many of its children run, and its uid.  Each child
    starts a session of its own: where the kernel groups the root's processes by session
    (autogroup), each is then a group of its own, as heavy as any other seat."""

    def act(self, game, seat):
        if not _SPINNING:
            for _ in range(SPINNERS):
                pid = os.fork()
                if pid == 0:
                    os.setsid()
                    signal.signal(signal.SIGTERM, signal.SIG_IGN)
                    while True:
                        pass
                _SPINNING.append(pid)
        alive = sum(os.path.exists(f"/proc/{pid}") for pid in _SPINNING)
        return report(spinning=alive, uid=os.getuid())


WORK_S = 0.05      # CPU seconds an honest seat spends on each decision


class Worker:
    """Honest: spends ``WORK_S`` of CPU time on each decision; reports it and the wall time it
    took."""

    def act(self, game, seat):
        started = time.monotonic()
        end = time.process_time() + WORK_S
        while time.process_time() < end:
            pass
        return report(cpu=WORK_S, wall=round(time.monotonic() - started, 3))


# --- control groups: where a seat runs ---------------------------------------------------------

class SeesGroups:
    """Honest: waits; reports its control groups by controller, as its cgroup namespace shows
    them (rooted at its sandbox's groups: a seat's cpu group, beside the sandbox's, shows as
    ``/../SANDBOX.seat-N``)."""

    def act(self, game, seat):
        groups = {}
        with open("/proc/self/cgroup") as f:
            for line in f:
                _, controllers, group = line.strip().split(":", 2)
                groups.update((name, group) for name in controllers.split(","))
        return report(cpu=groups.get("cpu"), memory=groups.get("memory"), t=TOKEN)


# --- memory: all of a seat's processes together -----------------------------------------------

HOG_CHILDREN = 4   # each touches HOG_MB: 400 MB in all, over the test's --seat-memory
HOG_MB = 100


_HOGGED: dict = {}


class SeatHog:
    """On its process's first decision, forks children that each fill ``HOG_MB`` and hold it a
    moment (each under its address-space limit, and all of them far under the sandbox's
    memory) and counts those the kernel killed; reports that, and its memory control group,
    every decision."""

    def act(self, game, seat):
        if not _HOGGED:
            _HOGGED.update(self._hog())
        return report(**_HOGGED)

    @staticmethod
    def _hog() -> dict:
        kids = []
        for _ in range(HOG_CHILDREN):
            pid = os.fork()
            if pid == 0:
                try:
                    block = bytearray(HOG_MB << 20)
                    for i in range(0, len(block), 4096):
                        block[i] = 1
                    time.sleep(2)
                finally:
                    os._exit(0)
            kids.append(pid)
        killed = 0
        for pid in kids:
            _, status = os.waitpid(pid, 0)
            killed += os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
        with open("/proc/self/cgroup") as f:
            group = next((line.split(":", 2)[2].strip() for line in f
                          if line.split(":", 2)[1] == "memory"), None)
        return {"killed": killed, "children": len(kids), "group": group, "t": TOKEN}
