"""League faults (issue 7, 14): faulty and slow policies fall back to factor, time limits work
off the main thread, the library prints nothing, and user mistakes give one line and exit 2."""

from __future__ import annotations

import json
import threading

import pytest
from leagues import (
    F,
    copy_league,
    league_args,
    lines,
    one_error_line,
    rows,
)

from league import (
    LeagueOptions,
    Settings,
    episode_spec,
    play_episode_spec,
    run_league,
)
from league.cli import main
from league.store import LeagueDir

# --- faults and time limits ------------------------------------------------------------------

def test_faulty_policies_fall_back_to_factor_and_the_league_finishes(tmp_path, capsys) -> None:
    faulty = ["Raiser", "Garbage", "BadIntent", "Sleeper", "BadReset"]
    kinds = {"Raiser": {"raised": 6}, "Garbage": {"garbage": 6}, "BadIntent": {"garbage": 6},
             "Sleeper": {"timeout": 6}, "BadReset": {"raised": 1}}
    out = tmp_path / "faults"
    policies = ",".join(["factor"] + [F + n for n in faulty])
    assert main(league_args(out, 6, "--turns", "6", "--decision-timeout", "0.05",
                            policies=policies)) == 0  # it returns: the 30 s sleeps were cut off
    err = capsys.readouterr().err
    for r in rows(out):
        payload = json.loads((out / "replays" / f"{r['id']}.json").read_text())
        for seat, name in enumerate(r["lineup"]):
            short = name.removeprefix(F)
            if name == "factor":
                assert r["fallbacks"][seat] == 0 and r["faults"][seat] == {}
            else:
                assert r["fallbacks"][seat] == 6
                assert r["faults"][seat] == kinds[short]
                acts = [e for e in payload["events"] if e["kind"] == "act" and e["seat"] == seat]
                assert len(acts) == 6 and all(e["scripted"] for e in acts)
    ladder = json.loads((out / "ladder.json").read_text())
    assert {e["policy"]: e["fallbacks"] for e in ladder["policies"]} == {
        "factor": 0, **{F + n: 36 for n in faulty}}
    for n in faulty:
        assert f"policy '{F}{n}' faulted" in err
    assert main(["verify", str(out)]) == 0


def test_the_episode_timeout_ends_episodes_with_reason_deadline(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("GUILD_TEST_SLOW", "0.01")
    out = tmp_path / "deadline"
    assert main(league_args(out, 6, "--episode-timeout", "0.1", policies=f"factor,{F}Slow",
                            workers=1)) == 0
    for r in rows(out):
        assert r["reason"] == "deadline" and 0 < r["turns"] < 14 and r["maxTurns"] == 14
    assert main(["verify", str(out)]) == 0


def test_time_limits_work_off_the_main_thread(caplog) -> None:
    """No signals: an episode played in any thread still cuts an overrunning policy off."""
    spec = episode_spec(["factor", f"{F}Sleeper", f"trusted:{F}BadRecords"], 5, 0)
    settings = Settings(policies=tuple(spec.lineup), turns=6, decision_timeout=0.05)
    got: list = []
    worker = threading.Thread(target=lambda: got.append(play_episode_spec(spec, settings)))
    worker.start()
    worker.join(timeout=60)  # a guard that it returns at all, not a speed claim
    assert not worker.is_alive() and got
    row, replay_text = got[0]
    payload = json.loads(replay_text)
    for seat, name in enumerate(row["lineup"]):
        if name.endswith("Sleeper"):  # cut off on turn 0, still asleep for the other turns
            assert row["faults"][seat] == {"timeout": 6} and row["fallbacks"][seat] == 6
            assert "took over 0.05 s" in row["faultNotes"][seat]
        elif name.endswith("BadRecords"):  # no fault, but the note and the log say why
            assert row["faults"][seat] == {} and row["fallbacks"][seat] == 0
            assert "take_records raised RuntimeError: lost the log" in row["faultNotes"][seat]
    assert "take_records raised" in caplog.text
    assert row["reason"] == "complete" and "llm" not in payload


def test_run_league_prints_nothing_and_reports_through_callbacks(tmp_path, capsys) -> None:
    notes: list[str] = []
    progress: list[tuple[int, int]] = []
    options = LeagueOptions(policies=("factor", f"{F}Raiser"), episodes=6, seed=2, turns=6,
                            workers=1, out=str(tmp_path / "quiet"))
    run = run_league(options, on_note=notes.append,
                     on_progress=lambda done, total: progress.append((done, total)))
    assert capsys.readouterr() == ("", "")
    assert run.notes == notes and len(notes) == 1
    assert notes[0].startswith(f"league: policy '{F}Raiser' faulted (raised ")
    assert progress == [(k, 6) for k in range(7)]


def test_a_worker_that_dies_stops_the_league_with_one_line(tmp_path, capsys) -> None:
    """Trusted code runs in the worker: when it kills the worker the league stops, in one
    line (the same policy run apart only crashes its own seat: test_isolation.py)."""
    out = tmp_path / "died"
    assert main(league_args(out, 12, policies=f"factor,trusted:{F}Exiter")) == 1
    assert "worker process died" in one_error_line(capsys.readouterr().err)


# --- user mistakes: one line, exit 2 ---------------------------------------------------------

def test_user_mistakes_exit_2_with_one_line(league12, tmp_path, capsys) -> None:
    a_file = tmp_path / "file"
    a_file.write_text("x")
    cases = {
        "unknown policy": (league_args(tmp_path / "a", policies="factor,nosuch"), "nosuch"),
        "module without the class": (league_args(tmp_path / "a", policies="sim:Nope"), "Nope"),
        "unbuildable policy": (league_args(tmp_path / "a", policies=f"{F}Unbuildable"),
                               "no model file"),
        "policy twice": (league_args(tmp_path / "a", policies="factor,factor"), "twice"),
        "unwritable dir": (league_args(a_file / "sub"), "cannot write"),
        "no episodes": (league_args(tmp_path / "a", 0), "--episodes"),
        "too few turns": (league_args(tmp_path / "a", 6, "--turns", "3"), "--turns"),
        "bad number": (league_args(tmp_path / "a", 6, "--decision-timeout", "-1"),
                       "--decision-timeout"),
        "address without ray": (league_args(tmp_path / "a", 6, "--address", "x:1"),
                                "--address"),
        "missing option": (["league", "--episodes", "6"], "required"),
        "no command": ([], "choose a command"),
        "verify a missing dir": (["verify", str(tmp_path / "nothing")], "not a directory"),
    }
    for name, (argv, words) in cases.items():
        assert main(argv) == 2, name
        line = one_error_line(capsys.readouterr().err)
        assert words in line, (name, line)
    assert not (tmp_path / "a").exists()  # nothing was written for a refused command


@pytest.mark.parametrize("change", ["seed", "policies", "turns", "honest-town", "timeout"])
def test_a_directory_of_another_configuration_is_refused(league12, tmp_path, capsys,
                                                         change) -> None:
    out = copy_league(league12[0], tmp_path)
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    argv = {"seed": league_args(out, seed=2),
            "policies": league_args(out, policies="factor,magpie"),
            "turns": league_args(out, 12, "--turns", "10"),
            "honest-town": league_args(out, 12, "--honest-town"),
            "timeout": league_args(out, 12, "--decision-timeout", "5")}[change]
    assert main(argv) == 2
    assert "different configuration" in one_error_line(capsys.readouterr().err)
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before


def test_two_runs_cannot_share_a_directory(league12, tmp_path, capsys) -> None:
    out = copy_league(league12[0], tmp_path)
    with LeagueDir(out):  # as a running league holds it
        assert main(league_args(out, 14)) == 2
    assert "another league is running" in one_error_line(capsys.readouterr().err)
    assert len(lines(out)) == 12


def test_foreign_or_damaged_results_files_are_refused(league12, tmp_path, capsys) -> None:
    out = copy_league(league12[0], tmp_path)
    (out / "league.json").unlink()
    assert main(league_args(out)) == 2
    assert "league.json" in one_error_line(capsys.readouterr().err)
    out = copy_league(league12[0], tmp_path / "b")
    text = lines(out)
    text[3] = "{not json"
    (out / "results.jsonl").write_text("\n".join(text) + "\n")
    assert main(league_args(out)) == 2
    assert "line 4" in one_error_line(capsys.readouterr().err)
    out = copy_league(league12[0], tmp_path / "c")
    text = lines(out)
    text[2], text[3] = text[3], text[2]  # lines out of their places: not this league's order
    (out / "results.jsonl").write_text("\n".join(text) + "\n")
    assert main(league_args(out)) == 2
    assert "line 3" in one_error_line(capsys.readouterr().err)
