"""A slow reset is charged to its own seat: a seat whose reset does not answer within its limit
takes a ``timeout`` and its fallback plays its episode, while the other seats play every turn
within the episode's deadline; seats' resets overlap instead of adding up, and a process
restarted within an episode is reset within the time of the decision it restarts for."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from leagues import league_args, rows
from reset_cheats import MARK, SLOW, WAIT

from league import Settings, episode_spec, play_episode_spec
from league.apart import isolated
from league.apart.isolated import MAX_TIMEOUTS, SeatFaultError, close_all, hosted
from league.cli.guild import main
from league.core.episode import episode_limit
from sim import Game, GameConfig

R = "reset_cheats:"  # tests/reset_cheats.py, importable from the tests directory
TURNS = 6
DECISION = 0.5  # --decision-timeout of these tests: the other seats answer far sooner
START = 3.0     # the start allowance the tests give a seat's reset (the league's is 60 s)


def _seats(row: dict, policy: str) -> list[int]:
    return [seat for seat, name in enumerate(row["lineup"]) if name == policy]


def test_a_stalling_reset_is_a_timeout_and_the_other_seats_play_every_turn_in_time(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Two seats stall in reset, two reset slowly but in time, two are factor: the stalls
    are cut off at the start allowance (together, not one after another) and wait out the
    episode as their fallback; every other seat plays its own game to the last turn."""
    monkeypatch.setattr(isolated, "START_TIMEOUT", START)
    policies = (f"{R}StallsReset", f"{R}SlowReset", "factor")
    settings = Settings(policies=policies, turns=TURNS, decision_timeout=DECISION)
    # the module's sandbox started once first: its start is the league's time, not a seat's
    warm = (f"{R}Waits", "factor")
    play_episode_spec(episode_spec(warm, 3, 0), Settings(policies=warm, turns=TURNS))
    row, replay = play_episode_spec(episode_spec(policies, 3, 0), settings)
    payload = json.loads(replay)
    assert (row["turns"], row["reason"]) == (TURNS, "complete"), row
    for seat in _seats(row, f"{R}StallsReset"):
        assert row["faults"][seat] == {"timeout": 1} and row["fallbacks"][seat] == TURNS
        assert row["faultNotes"][seat].startswith(f"turn 0: reset took over {START:g} s"), row
        assert row["faultNotes"][seat].endswith("; waits"), row
        acts = [e for e in payload["events"] if e["kind"] == "act" and e["seat"] == seat]
        assert [(e["sentence"], e["scripted"]) for e in acts] == [(WAIT, True)] * TURNS
    for seat in _seats(row, f"{R}SlowReset") + _seats(row, "factor"):
        assert row["faults"][seat] == {} and row["fallbacks"][seat] == 0, row
    # the stalls' resets were waited for until their allowance, at once: one wait, not two
    # (and the slow resets' seconds within it), and the episode within its deadline
    assert START <= row["wallTime"] < 2 * START < episode_limit(settings), row["wallTime"]
    close_all()


def test_an_episode_with_a_reset_that_never_returns_ends_within_the_deadline(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Every stalling seat of the table at once: the deadline (a start plus every turn's
    time) holds, and the one other policy still plays all its turns."""
    monkeypatch.setattr(isolated, "START_TIMEOUT", START)
    policies = (f"{R}StallsReset", "factor")
    spec = episode_spec(policies, 5, 0)
    settings = Settings(policies=policies, turns=TURNS, decision_timeout=DECISION)
    assert episode_limit(settings) == START + TURNS * (2 * DECISION + 1)
    row, _ = play_episode_spec(spec, settings)
    assert (row["turns"], row["reason"]) == (TURNS, "complete"), row
    stalls = _seats(row, f"{R}StallsReset")
    assert len(stalls) == 3
    assert all(row["faults"][s] == {"timeout": 1} for s in stalls), row
    assert all(row["faults"][s] == {} for s in _seats(row, "factor")), row
    assert row["wallTime"] < episode_limit(settings), row["wallTime"]
    close_all()


def _league(out: Path, policy: str, *extra: str) -> list[dict]:
    assert main(league_args(out, 2, "--turns", str(TURNS), "--decision-timeout", str(DECISION),
                            *extra, policies=f"factor,{policy}", workers=1)) == 0
    return rows(out)


def test_a_slow_start_plays_under_a_tight_episode_timeout(tmp_path: Path) -> None:
    """A reset that takes longer than the deadline leaves once every turn has its full time
    (a model loading) still plays: its start has the start timeout, within the episode."""
    deadline = TURNS * (DECISION + 1) + 1.0  # a second to spare beyond the turns' time
    policy = f"{R}SlowerReset"
    got = _league(tmp_path / "slow", policy, "--episode-timeout", str(deadline))
    for row in got:
        assert (row["turns"], row["reason"]) == (TURNS, "complete"), row
        assert all(row["faults"][s] == {} and row["fallbacks"][s] == 0
                   for s in _seats(row, policy)), row


def test_a_league_with_a_stalling_seat_plays_the_games_a_waiting_seat_would(
        tmp_path: Path) -> None:
    """Its fallback waits, as the control does of its own accord: every seat's results are
    the same, but the stalling policy is charged for it and unranked, the control is not."""
    stall, control = f"{R}StallsReset", f"{R}Waits"
    started = time.monotonic()
    stalled = _league(tmp_path / "stall", stall, "--start-timeout", str(START))
    took = time.monotonic() - started
    waited = _league(tmp_path / "wait", control, "--start-timeout", str(START))
    keys = ("scores", "coin", "wealth", "questPoints", "delivered", "robberies", "robbed",
            "turns", "reason")
    assert len(stalled) == len(waited) == 2
    for a, b in zip(stalled, waited):
        assert [n.replace(stall, control) for n in a["lineup"]] == b["lineup"]
        assert {k: a[k] for k in keys} == {k: b[k] for k in keys}
        assert a["turns"] == TURNS and a["reason"] == "complete", a
        for seat, name in enumerate(a["lineup"]):
            mine = name == stall
            assert a["faults"][seat] == ({"timeout": 1} if mine else {}), a
            assert a["fallbacks"][seat] == (TURNS if mine else 0)
            assert b["faults"][seat] == {} and b["fallbacks"][seat] == 0, b
    assert any(s != 0 for r in stalled for s in r["scores"])  # factor played: real games
    # two episodes, each one start allowance (its three stalls at once) and six quick turns
    assert took < 2 * (2 * START + TURNS * (DECISION + 1)), took
    ladder = {e["policy"]: e for e in
              json.loads((tmp_path / "stall" / "ladder.json").read_text())["policies"]}
    assert ladder[stall]["ranked"] is False and ladder[stall]["notOwnShare"] == 1.0
    assert ladder["factor"]["ranked"] is True
    control_ladder = {e["policy"]: e for e in
                      json.loads((tmp_path / "wait" / "ladder.json").read_text())["policies"]}
    assert control_ladder[control]["ranked"] is True
    assert ladder["factor"]["meanScore"] == control_ladder["factor"]["meanScore"]
    assert main(["verify", str(tmp_path / "stall")]) == 0


def test_a_restarted_process_is_reset_within_its_decisions_time(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A program that crashes, then stalls in the reset of each process started afresh for
    it: each restart costs one decision's limit (not a start's), is a timeout, and the
    second ends its play for the episode."""
    monkeypatch.setenv(MARK, str(tmp_path / "reset-once"))
    policy = hosted(f"{R}CrashesThenStallsReset", timeout=DECISION)
    game = Game(GameConfig(seed=2, turns=TURNS))
    policy.reset(2)
    policy.begin(game, 0)
    policy.ready()  # the first reset answers at once (and leaves the mark)
    policy.post(game, 0)
    with pytest.raises(SeatFaultError) as crashed:
        policy.act(game, 0)
    assert crashed.value.kind == "crashed" and not crashed.value.fatal
    faults = []
    for _ in range(MAX_TIMEOUTS):
        started = time.monotonic()
        policy.post(game, 0)  # a new process: its reset goes now, its act once it answers
        with pytest.raises(SeatFaultError) as e:
            policy.act(game, 0)
        took = time.monotonic() - started
        assert DECISION <= took < isolated.START_TIMEOUT / 4, took
        faults.append(e.value)
    assert [f.kind for f in faults] == ["timeout"] * MAX_TIMEOUTS
    assert all(str(f).startswith(f"reset took over {DECISION:g} s") for f in faults)
    assert [f.fatal for f in faults] == [False, True]  # the second ends its play
    policy.close()
    close_all()


def test_trusted_resets_overlap_and_one_that_never_returns_is_charged(tmp_path: Path) -> None:
    """In the league's process a slow reset is the user's own choice, but it is still charged
    to its own seat: abandoned at the limit (together with the others), a timeout, and every
    decision while it still runs another one; the others play every turn."""
    limit = 2 * SLOW
    policies = (f"trusted:{R}StallsReset", f"trusted:{R}SlowReset", "factor")
    spec = episode_spec(policies, 4, 0)
    row, _ = play_episode_spec(spec, Settings(policies=policies, turns=TURNS,
                                              decision_timeout=limit))
    assert (row["turns"], row["reason"]) == (TURNS, "complete"), row
    for seat in _seats(row, f"trusted:{R}StallsReset"):
        assert row["faults"][seat] == {"timeout": 1 + TURNS} and row["fallbacks"][seat] == TURNS
        assert row["faultNotes"][seat] == f"turn 0: reset took over {limit:g} s; waits"
    for seat in _seats(row, f"trusted:{R}SlowReset") + _seats(row, "factor"):
        assert row["faults"][seat] == {} and row["fallbacks"][seat] == 0, row
    # one after another the resets would take 2 * limit + 2 * SLOW; at once, one limit
    assert limit <= row["wallTime"] < 2 * limit, row["wallTime"]


def test_a_trusted_reset_still_running_at_the_deadline_is_charged_for_the_episode() -> None:
    """Without a decision limit a trusted reset may run until the episode's deadline; if it
    has not returned by then it is that seat's fault, and the episode ends after its first
    turn (a deadline ends episodes between turns), which the seat's fallback played."""
    policies = (f"trusted:{R}StallsReset", "factor")
    spec = episode_spec(policies, 1, 0)
    row, _ = play_episode_spec(spec, Settings(policies=policies, turns=TURNS,
                                              episode_timeout=0.5))
    assert (row["turns"], row["reason"]) == (1, "deadline"), row
    for seat, name in enumerate(row["lineup"]):
        if name == "factor":
            assert row["faults"][seat] == {} and row["fallbacks"][seat] == 0
        else:  # and its first turn came while the reset still ran: another timeout
            assert row["faults"][seat] == {"timeout": 2} and row["fallbacks"][seat] == 1
            assert row["faultNotes"][seat] == ("turn 0: reset had not returned by the "
                                               "episode's deadline; waits")
