"""The seat zygote reaps its seats without ever letting the league signal a pid that may be
another process's by then, and hands out a pidfd for every seat, however soon it ends.

A seat's pid is free again once the zygote reaps it; the league used to kill an ended seat by
that pid and its process group (``--sandbox none``), so a process that had been given the pid
meanwhile was killed.  The zygote now kills a seat's group as it reaps the seat, and the
league signals forked seats through their pidfd alone.  And a seat that ended between the
fork and ``pidfd_open`` was reaped by the SIGCHLD handler first: the spawn failed with "sent no
pidfd" and lost the seat's own error.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from conftest import needs

from league.apart.seat_process import SeatProcess
from league.seat import zygote as seat_zygote

ROOT = Path(__file__).resolve().parent.parent

needs(sys.platform.startswith("linux"), "Linux (pidfds, process groups)")

# In a pid namespace of its own (unshare), the next pid is set through ns_last_pid, so the
# process started after the seat has ended gets the seat's pid.
REUSE = """
import os, subprocess, sys
from league.apart.seat_process import SeatProcess

seat = SeatProcess.forked("x", 512, 60, env=dict(os.environ),
                          argv=[sys.executable, "-c", "import sys; sys.exit(3)"])
assert seat.exit_code(20) == 3
with open("/proc/sys/kernel/ns_last_pid", "w") as f:
    f.write(str(seat.pid - 1))
bystander = subprocess.Popen(["sleep", "60"], start_new_session=True)
assert bystander.pid == seat.pid, (bystander.pid, seat.pid)
seat.kill()
try:
    bystander.wait(1)
    print("killed", bystander.returncode)
except subprocess.TimeoutExpired:
    print("alive")
    bystander.kill()
"""


def test_an_ended_seat_is_never_killed_through_a_pid_another_process_now_holds() -> None:
    needs(os.getuid() == 0 and shutil.which("unshare") is not None,
          "root and unshare (a pid namespace of its own, to hand the seat's pid on)")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(["unshare", "-pf", "--mount-proc", sys.executable, "-c", REUSE],
                          env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["alive"], (done.stdout, done.stderr[-2000:])


def test_a_seat_that_ends_at_once_still_gets_its_pidfd() -> None:
    z = seat_zygote.zygote(dict(os.environ))
    failed = []
    for _ in range(600):  # about 2 in 300 lost it (the handler reaped the seat first)
        pipes = [os.pipe() for _ in range(3)]
        try:
            _, pidfd = z.spawn({"exec": ["/nonexistent-program"], "memory_mb": 512,
                                "cpu_s": 10}, [pipes[0][0], pipes[1][1], pipes[2][1]])
            os.close(pidfd)
        except OSError as e:
            failed.append(str(e))
        for r, w in pipes:
            os.close(r)
            os.close(w)
    assert failed == []
    assert z.alive()


def test_what_a_forked_seat_left_running_in_its_group_ends_with_it() -> None:
    """The zygote kills an ended seat's group as it reaps it, unasked."""
    seat = SeatProcess.forked("x", 512, 60, env=dict(os.environ),
                              argv=["/bin/sh", "-c", LEAVES])
    try:
        left = _left_pid(seat)
        assert seat.exit_code(20) == 3
        assert _ends(left), "the seat's sleep outlived it"
    finally:
        seat.kill()


def _left_pid(seat: SeatProcess) -> int:
    """The pid the seat's shell printed: the process it left running."""
    line = b""
    end = time.monotonic() + 30
    while not line.endswith(b"\n") and time.monotonic() < end:
        try:
            line += os.read(seat._out, 64)
        except BlockingIOError:
            time.sleep(0.01)
    return int(line)


def _ends(pid: int) -> bool:
    end = time.monotonic() + 20
    while Path(f"/proc/{pid}").exists() and _state(pid) != "Z" and time.monotonic() < end:
        time.sleep(0.05)
    return not Path(f"/proc/{pid}").exists() or _state(pid) == "Z"


LEAVES = "sleep 300 </dev/null >/dev/null 2>&1 & echo $!; exit 3"


def test_a_program_that_ended_on_its_own_has_what_it_left_killed_with_it() -> None:
    """An exec: seat outside a sandbox, found ended (and reaped) before it is killed: its
    group is killed all the same (its pid is held while the group has members)."""
    seat = SeatProcess.command(["/bin/sh", "-c", LEAVES], 512, 60)
    left = _left_pid(seat)
    assert seat.exit_code(20) == 3 and not seat.alive()  # reaped
    seat.kill()
    assert _ends(left), "the program's sleep outlived it"


def test_a_forked_seats_group_is_killed_before_its_zygote_is_closed() -> None:
    """A seat killed, then its zygote closed at once (a league's end): the zygote has reaped
    it, and killed its group, before kill returns."""
    seat = SeatProcess.forked("x", 512, 60, env=dict(os.environ),
                              argv=["/bin/sh", "-c", "sleep 300 </dev/null >/dev/null 2>&1 & "
                                                     "echo $!; sleep 300"])
    left = _left_pid(seat)
    seat.kill()
    seat_zygote.close_zygotes()
    assert _ends(left), "the seat's sleep outlived its zygote"


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except OSError:
        return "gone"
