"""The seat protocol's economy and the seat processes' plumbing: a program receives
just the view fields it asked for, may fetch more with ``need``, cannot block the league by
not reading, and hosted seats are forked from a zygote, in sessions of their own, under their
limits, and die with the league process."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from league.apart.isolated import IsolatedPolicy, SeatFaultError, close_all, hosted
from league.seat import zygote as seat_zygote
from league.seat.protocol import VIEW_FIELDS, act_request, view
from sim import Game, GameConfig, seat_view
from sim.codec.action_table import legal_mask, to_intent
from sim.seat_view import turn_view

BASE = {"type", "turn", "seat", "turns", "aliases", "commissions"}
C = "cheats:"  # tests/cheats.py


def _program(tmp_path: Path, body: str) -> list[str]:
    """A seat program in Python: ``body`` answers each act request ``r`` (``answer(r)``)."""
    path = tmp_path / "bot.py"
    path.write_text(textwrap.dedent("""
        import hashlib, json, sys
        def say(obj):
            sys.stdout.write(json.dumps(obj) + "\\n"); sys.stdout.flush()
        def ask(names):
            say({"need": names}); return json.loads(sys.stdin.readline())
    """) + textwrap.dedent(body))
    return [sys.executable, str(path)]


def _game() -> Game:
    return Game(GameConfig(seed=11))


@pytest.mark.parametrize("reset, fields", [
    ({"fields": ["legal"]}, {"legal"}),
    ({"fields": []}, set()),
    ({}, set(VIEW_FIELDS)),  # says nothing of fields: gets them all
])
def test_a_program_receives_only_the_fields_it_asked_for(tmp_path: Path, reset: dict,
                                                         fields: set[str]) -> None:
    argv = _program(tmp_path, f"""
        for line in sys.stdin:
            r = json.loads(line)
            if r["type"] == "reset":
                say({reset!r})
            else:
                say({{"action": 7, "notes": json.dumps(sorted(r))}})
    """)
    game, seat = _game(), 3
    legal = [i for i, ok in enumerate(legal_mask(game.state, seat)) if ok]
    assert 7 in legal  # the index answered below (a walk, legal from where seat 3 stands)
    policy = IsolatedPolicy(argv, timeout=20)
    policy.reset(11)
    decision = policy.act(game, seat)
    assert set(json.loads(decision.notes)) == BASE | fields
    assert decision.action == to_intent(7, game.world, seat, game.state.room[seat])
    policy.close()
    close_all()


def test_an_act_request_is_the_turn_view_a_policy_function_is_called_with() -> None:
    """One builder for every path (``sim.seat_view``); the protocol keeps its names for it."""
    game = _game()
    for fields in (VIEW_FIELDS, ("legal",), ()):
        assert act_request(game, 4, fields) == {"type": "act", **turn_view(game, 4, fields)}
    assert view is seat_view.view and VIEW_FIELDS is seat_view.VIEW_FIELDS
    assert list(turn_view(game, 4)) == [*seat_view.TURN_FIELDS, *VIEW_FIELDS]


def test_need_fetches_the_same_view_the_request_would_carry(tmp_path: Path) -> None:
    argv = _program(tmp_path, """
        for line in sys.stdin:
            r = json.loads(line)
            if r["type"] == "reset":
                say({"fields": []})
            else:
                got = ask(["observation", "admissible"])
                digest = hashlib.sha256(json.dumps(got, sort_keys=True).encode()).hexdigest()
                say({"action": got["admissible"][0], "notes": digest})
    """)
    game, seat = _game(), 2
    policy = IsolatedPolicy(argv, timeout=20)
    policy.reset(11)
    decision = policy.act(game, seat)
    expected = json.loads(json.dumps({"type": "view",
                                      **view(game, seat, ["observation", "admissible"])}))
    digest = hashlib.sha256(json.dumps(expected, sort_keys=True).encode()).hexdigest()
    assert decision.notes == digest
    assert decision.action == expected["admissible"][0]
    policy.close()
    close_all()


@pytest.mark.parametrize("need", ['["observation"]', '["state"]', '"observation"'])
def test_endless_or_bad_needs_are_garbage_and_the_program_restarts(tmp_path: Path,
                                                                   need: str) -> None:
    argv = _program(tmp_path, f"""
        for line in sys.stdin:
            r = json.loads(line)
            if r["type"] == "reset":
                say({{"fields": []}})
            else:
                while True:
                    say({{"need": {need}}}); sys.stdin.readline()
    """)
    policy = IsolatedPolicy(argv, timeout=20)
    policy.reset(1)
    with pytest.raises(SeatFaultError) as e:
        policy.act(_game(), 0)
    assert e.value.kind == "garbage"
    assert ("over 4 times" in str(e.value)) == (need == '["observation"]')
    assert policy._proc is None  # restarted for the next decision
    close_all()


def test_a_program_that_stops_reading_cannot_block_the_league(tmp_path: Path) -> None:
    """It answers without ever reading: once the pipe is full, the league's write times out
    instead of blocking forever."""
    argv = _program(tmp_path, """
        import time
        while True:
            say({"action": 0}); time.sleep(0.0005)
    """)
    policy = IsolatedPolicy(argv, timeout=0.5)
    policy.reset(1)
    game = _game()
    faults = []
    for _ in range(60):  # a request is about 5 KB: a 64 KB pipe is full long before 60
        try:
            policy.act(game, 0)
        except SeatFaultError as e:
            faults.append(e)
            break
    assert faults and faults[0].kind == "timeout"
    assert "did not read its requests" in str(faults[0])
    close_all()


def test_a_hosted_seat_learns_what_its_policy_reads(tmp_path: Path) -> None:
    """First episode: nothing is sent and the observation is fetched; the next reset asks for
    the observation with every act."""
    policy = hosted(f"{C}Observes", timeout=20)
    game = _game()
    policy.reset(1)
    assert policy.act(game, 0).action
    assert policy._fields == ()
    policy.close()
    again = hosted(f"{C}Observes", timeout=20)
    again.reset(2)
    assert again.act(game, 0).action
    assert again._fields == ("observation",)
    again.close()
    close_all()


def _children(pid: int) -> set[int]:
    out: set[int] = set()
    for task in Path(f"/proc/{pid}/task").iterdir():
        text = (task / "children").read_text().split()
        out |= {int(x) for x in text}
    return out


def test_hosted_seats_are_forked_apart_under_limits_and_die_with_the_league() -> None:
    policy = hosted(f"{C}Waits", timeout=20, memory_mb=1024)
    policy.reset(1)
    policy.act(_game(), 0)
    pid = policy._proc.pid
    assert pid not in _children(os.getpid())      # not a child of the league process...
    # ...but of the zygote, which runs no policy (an earlier test's may still be running)
    zygote = next(z for z in seat_zygote._ZYGOTES.values() if pid in _children(z.proc.pid))
    assert zygote.launch is None
    assert os.getsid(pid) == pid                  # in a session of its own
    limits = Path(f"/proc/{pid}/limits").read_text()
    assert f"{1024 * 1024 * 1024}" in next(x for x in limits.splitlines() if "address" in x)
    os.kill(zygote.proc.pid, signal.SIGKILL)      # the league process's zygote goes...
    until = time.monotonic() + 10
    while Path(f"/proc/{pid}").exists() and _state(pid) != "Z" and time.monotonic() < until:
        time.sleep(0.02)
    assert not Path(f"/proc/{pid}").exists() or _state(pid) == "Z"  # ...and its seats with it
    assert policy.act(_game(), 0).action          # the next decision starts a new zygote
    assert policy._proc.pid != pid
    policy.close()
    close_all()


def test_a_zygote_that_stops_answering_costs_one_seat_start_not_the_league(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A zygote that does not answer (stopped here; on a machine, stalled) is given
    ``ANSWER_S``: the seat it was asked for fails to start, naming the wait, and the zygote is
    killed, so the next seat starts from a new one instead of reading its late answer."""
    first = hosted(f"{C}Waits", timeout=20)
    first.reset(1)
    first.act(_game(), 0)                          # holds its process: the next seat is forked
    zygote = next(z for z in seat_zygote._ZYGOTES.values() if z.launch is None and z.alive())
    monkeypatch.setattr(seat_zygote, "ANSWER_S", 0.5)
    zygote.sock.settimeout(0.5)
    os.kill(zygote.proc.pid, signal.SIGSTOP)
    second = hosted(f"{C}Waits", timeout=20)
    try:
        started = time.monotonic()
        with pytest.raises(SeatFaultError) as e:
            second.reset(1)
            second.act(_game(), 0)
        assert e.value.kind == "crashed" and "did not answer within 0.5 s" in str(e.value)
        assert time.monotonic() - started < 10
        assert not zygote.alive()
        # the new zygote gets the usual bound: a fresh one on a loaded machine may take 0.5 s
        monkeypatch.undo()
        third = hosted(f"{C}Waits", timeout=20)
        third.reset(1)
        assert third.act(_game(), 0).action         # from a new zygote
        third.close()
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(zygote.proc.pid, signal.SIGKILL)
        first.close()
        second.close()
        close_all()
        seat_zygote.close_zygotes()


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1].split()[0]
    except (OSError, IndexError):
        return "Z"


def test_a_forked_seat_reports_how_it_ended() -> None:
    policy = hosted(f"{C}Exits", timeout=20)
    policy.reset(1)
    with pytest.raises(SeatFaultError) as e:
        policy.act(_game(), 0)
    assert e.value.kind == "crashed" and "status 1" in str(e.value)
    close_all()


def test_an_exec_program_dies_with_its_league_process(tmp_path: Path) -> None:
    """A program that ignores the end of its input still ends when the process that runs the
    league is killed (kill -9 leaves no time to clean up)."""
    argv = _program(tmp_path, """
        import os, time
        for line in sys.stdin:
            r = json.loads(line)
            pid = str(os.getpid())
            say({"fields": []} if r["type"] == "reset" else {"action": 0, "notes": pid})
        time.sleep(600)  # input closed: a hostile program lingers
    """)
    league = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import sys, time
        from league.apart.isolated import IsolatedPolicy
        from sim import Game, GameConfig
        p = IsolatedPolicy({argv!r}, timeout=20)
        p.reset(1)
        print(p.act(Game(GameConfig(seed=1)), 0).notes, flush=True)
        time.sleep(600)
    """)], stdout=subprocess.PIPE, text=True, cwd=Path(__file__).parent.parent)
    pid = int(league.stdout.readline())
    assert _state(pid) != "Z"
    league.kill()
    league.wait()
    until = time.monotonic() + 10
    while Path(f"/proc/{pid}").exists() and _state(pid) != "Z" and time.monotonic() < until:
        time.sleep(0.02)
    assert not Path(f"/proc/{pid}").exists() or _state(pid) == "Z"
