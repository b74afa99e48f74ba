"""League faults: faulty and slow policies fall back (they wait, or factor plays
them), gain no rank by failing, time limits work off the main thread, the library prints
nothing, and user mistakes give one line and exit 2."""

from __future__ import annotations

import inspect
import json
import threading
from pathlib import Path

import pytest
from faulty_policies import WAIT, BadReset, Raiser
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
    build_ladder,
    episode_spec,
    ladder_table,
    play_episode_spec,
    run_league,
)
from league.apart.isolated import MAX_TIMEOUTS
from league.cli.guild import main
from league.core.store import LeagueDir

# --- faults and time limits ------------------------------------------------------------------

def test_faulty_policies_fall_back_to_waiting_and_the_league_finishes(tmp_path, capsys) -> None:
    faulty = ["Raiser", "Garbage", "BadIntent", "Sleeper", "BadReset"]
    kinds = {"Raiser": {"raised": 6}, "Garbage": {"garbage": 6}, "BadIntent": {"garbage": 6},
             # a seat process that times out twice in an episode plays no more of it
             "Sleeper": {"timeout": MAX_TIMEOUTS}, "BadReset": {"raised": 1}}
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
                assert r["fallbackPlay"][seat] == payload["fallbackPlay"][seat] == "wait"
                acts = [e for e in payload["events"] if e["kind"] == "act" and e["seat"] == seat]
                assert len(acts) == 6 and all(e["scripted"] for e in acts)
                assert all(e["sentence"] == WAIT for e in acts)  # seats apart wait too
    ladder = json.loads((out / "ladder.json").read_text())
    assert {e["policy"]: e["fallbacks"] for e in ladder["policies"]} == {
        "factor": 0, **{F + n: 36 for n in faulty}}
    by_policy = {e["policy"]: e for e in ladder["policies"]}
    for n in faulty:
        assert f"policy '{F}{n}' faulted" in err and "it waited in 36 of its decisions" in err
        assert by_policy[F + n]["ranked"] is False and by_policy[F + n]["rank"] is None
    assert main(["verify", str(out)]) == 0


def test_a_slow_rival_costs_the_seats_after_it_no_time(tmp_path) -> None:
    """Seats apart are all sent their request at once, but the league serves a seat's requests
    for its view only when it turns to it: a Reader seated after a Sleeper waited out the
    Sleeper's whole limit, and was charged timeouts (two end its play: unranked)."""
    out = tmp_path / "slow"
    assert main(league_args(out, 6, "--turns", "6", "--decision-timeout", "0.7",
                            policies=f"{F}Sleeper,{F}Reader,factor,magpie,random,champion",
                            workers=1)) == 0
    after = 0  # episodes where the league turns to the Reader after waiting on the Sleeper
    for row in rows(out):
        reader, sleeper = row["lineup"].index(f"{F}Reader"), row["lineup"].index(f"{F}Sleeper")
        after += sleeper < reader
        assert row["faults"][reader] == {} and row["fallbacks"][reader] == 0, row
        assert row["faults"][sleeper] == {"timeout": MAX_TIMEOUTS}
    assert after >= 3


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
        if name.endswith("Sleeper"):  # cut off on turns 0 and 1, then it plays no more
            assert row["faults"][seat] == {"timeout": MAX_TIMEOUTS} and row["fallbacks"][seat] == 6
            assert "took over 0.05 s" in row["faultNotes"][seat]
        elif name.endswith("BadRecords"):  # no fault, but the note and the log say why
            assert row["faults"][seat] == {} and row["fallbacks"][seat] == 0
            assert "take_records raised RuntimeError: lost the log" in row["faultNotes"][seat]
    assert "take_records raised" in caplog.text
    assert row["reason"] == "complete" and "llm" not in payload


def test_run_league_prints_nothing_and_reports_through_callbacks(tmp_path, capsys) -> None:
    notes: list[str] = []
    progress: list[tuple[int, int]] = []
    options = LeagueOptions(policies=("factor", f"{F}Raiser"), episodes=6, seed=2,
                            public_draw=True, turns=6, workers=1, out=str(tmp_path / "quiet"))
    run = run_league(options, on_note=notes.append,
                     on_progress=lambda done, total: progress.append((done, total)))
    assert capsys.readouterr() == ("", "")
    assert run.notes == notes and len(notes) == 1
    assert notes[0].startswith(f"league: policy '{F}Raiser' faulted (raised ")
    assert progress == [(k, 6) for k in range(7)]


@pytest.mark.parametrize("trust", [False, True])
def test_a_faults_note_reaches_the_terminal_inert(tmp_path, capsys, trust) -> None:
    """The fault line quotes the seat's own exception: its escapes and newlines are shown as
    text, in one line, whether the seat ran apart or in the league's process."""
    policy = f"{'trusted:' if trust else ''}{F}Shouter"
    assert main(league_args(tmp_path / "loud", 6, "--turns", "6", policies=f"factor,{policy}",
                            workers=1)) == 0
    err = capsys.readouterr().err
    faulted = [line for line in err.splitlines() if "faulted" in line]
    assert len(faulted) == 1 and "RuntimeError: \\u001b[2J\\u001b[H\\u001b]0;owned" in faulted[0]
    assert "\x1b" not in err and "\x07" not in err
    assert not any(line.startswith("verify: OK") for line in err.splitlines())


def test_a_worker_that_dies_stops_the_league_with_one_line(tmp_path, capsys) -> None:
    """Trusted code runs in the worker: when it kills the worker the league stops, in one
    line (the same policy run apart only crashes its own seat: test_isolation.py)."""
    out = tmp_path / "died"
    assert main(league_args(out, 12, policies=f"factor,trusted:{F}Exiter")) == 1
    assert "worker process died" in one_error_line(capsys.readouterr().err)


# --- no free rides: what plays a failed decision, and the ladder ------------------------------

T = f"trusted:{F}"  # in the league's process: fast, and a traceback to read


def _league(out: Path, policies: str, *extra: str) -> list[dict]:
    assert main(league_args(out, 6, "--turns", "6", *extra, policies=policies, workers=1)) == 0
    return rows(out)


def _scores(rs: list[dict]) -> list[list[float]]:
    return [r["scores"] for r in rs]


def _acts(out: Path, row: dict, seat: int) -> list[dict]:
    payload = json.loads((out / "replays" / f"{row['id']}.json").read_text())
    assert payload["fallbackPlay"] == row["fallbackPlay"]
    return [e for e in payload["events"] if e["kind"] == "act" and e["seat"] == seat]


def test_a_policy_that_always_raises_waits_scores_as_a_waiting_seat_and_is_unranked(
        tmp_path, capsys) -> None:
    raiser = _league(tmp_path / "raiser", f"factor,{T}Raiser")
    waiter = _league(tmp_path / "waiter", f"factor,{T}Waiter")  # waits of its own accord
    assert _scores(raiser) == _scores(waiter)  # failing gains it nothing over doing nothing
    assert _scores(raiser) != _scores(_league(tmp_path / "factor", f"factor,{T}Raiser",
                                              "--fallback", "factor"))
    seats = 0
    for r in raiser:
        for seat, name in enumerate(r["lineup"]):
            if name == f"{T}Raiser":
                seats += 1
                assert r["fallbackPlay"][seat] == "wait"
                assert r["faults"][seat] == {"raised": 6} and r["fallbacks"][seat] == 6
                acts = _acts(tmp_path / "raiser", r, seat)
                assert [(e["sentence"], e["scripted"]) for e in acts] == [(WAIT, True)] * 6
    ladder = json.loads((tmp_path / "raiser" / "ladder.json").read_text())
    top, bottom = ladder["policies"]
    assert (top["policy"], top["rank"], top["ranked"], top["unranked"]) == ("factor", 1, True,
                                                                            None)
    assert (top["faults"], top["fallbacks"], top["notOwnShare"]) == (0, 0, 0.0)
    n = 6 * seats
    assert {k: bottom[k] for k in ("policy", "rank", "ranked", "faults", "fallbacks",
                                   "decisions", "notOwnShare", "unranked")} == {
        "policy": f"{T}Raiser", "rank": None, "ranked": False, "faults": n, "fallbacks": n,
        "decisions": n, "notOwnShare": 1.0,
        "unranked": f"100.0% of its decisions ({n} of {n}) were not its own (faults: raised {n})"}
    out = capsys.readouterr().out.splitlines()
    row = next(x for x in out if f"{T}Raiser" in x and not x.startswith("unranked"))
    assert row.split()[0] == "-" and row.split()[-3:] == [str(n), str(n), "(100.0%)"]
    assert f"unranked: {T}Raiser: 100.0% of its decisions ({n} of {n})" in "\n".join(out)
    assert main(["verify", str(tmp_path / "raiser")]) == 0


def test_fallback_factor_gives_the_old_play_back(tmp_path) -> None:
    out = tmp_path / "factor"
    raiser = _league(out, f"factor,{T}Raiser", "--fallback", "factor")
    # factor played every decision the Raiser failed: the games of factor in its place
    assert _scores(raiser) == _scores(_league(tmp_path / "ff", "factor,trusted:factor"))
    assert all(r["fallbackPlay"] == ["factor"] * 6 for r in raiser)
    assert json.loads((out / "league.json").read_text())["fallback"] == "factor"
    ladder = json.loads((out / "ladder.json").read_text())
    assert [(e["policy"], e["rank"]) for e in ladder["policies"]] == [("factor", 1),
                                                                      (f"{T}Raiser", None)]
    assert main(["verify", str(out)]) == 0


def test_llm_seats_keep_factor_as_their_fallback_by_default(tmp_path) -> None:
    from fake_llm import FakeLLM

    out = tmp_path / "llm"
    with FakeLLM(lifetime=60) as server:
        llm = f"llm:slowish@{server.url}"  # answers in 0.3 s: past the 0.1 s limit
        assert main(["league", "--policies", f"{llm},{T}Raiser", "--episodes", "1", "--turns",
                     "6", "--workers", "1", "--seed", "4", "--decision-timeout", "0.1",
                     "--out", str(out)]) == 0
    (row,) = rows(out)
    assert sorted(set(row["lineup"])) == sorted({llm, f"{T}Raiser"})
    for seat, name in enumerate(row["lineup"]):
        sentences = [e["sentence"] for e in _acts(out, row, seat)]
        if name == llm:
            assert row["fallbackPlay"][seat] == "factor" and row["fallbacks"][seat] == 6
            assert "took over 0.1 s; plays factor from now on" in row["faultNotes"][seat]
            assert any(x != WAIT for x in sentences)  # factor's play, not waiting
        else:
            assert row["fallbackPlay"][seat] == "wait" and sentences == [WAIT] * 6
    assert "fallback" not in json.loads((out / "league.json").read_text())


def test_a_resume_with_another_fallback_is_refused_in_one_line(tmp_path, capsys) -> None:
    out = tmp_path / "wait"
    _league(out, f"factor,{T}Raiser", "--fallback", "wait")
    capsys.readouterr()
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    for extra, was in ((["--fallback", "factor"], '"factor"'), ([], "null")):
        argv = league_args(out, 12, "--turns", "6", *extra, policies=f"factor,{T}Raiser")
        assert main(argv) == 2
        assert one_error_line(capsys.readouterr().err).endswith(
            f'(--fallback was "wait", now {was}); use the same options or another --out')
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
    assert main(league_args(out, 12, "--turns", "6", "--fallback", "wait",
                            policies=f"factor,{T}Raiser")) == 0  # the same value resumes
    assert len(rows(out)) == 12


def _line_of(function: object, text: str) -> int:
    source, start = inspect.getsourcelines(function)
    return start + next(i for i, line in enumerate(source) if text in line)


def test_the_fault_note_names_the_exception_and_the_file_and_line(tmp_path) -> None:
    spec = episode_spec([f"{T}Raiser", f"{T}BadReset", f"{T}DeepRaiser"], 0, 0)
    row, _ = play_episode_spec(spec, Settings(policies=tuple(spec.lineup), turns=6))
    from faulty_policies import DeepRaiser

    expected = {
        "Raiser": "turn 0: raised RuntimeError: boom (at faulty_policies.py:"
                  f"{_line_of(Raiser.act, 'raise RuntimeError')})",
        "BadReset": "turn 0: reset raised ValueError: cannot reset (at faulty_policies.py:"
                    f"{_line_of(BadReset.reset, 'raise ValueError')}); waits",
        # raised deep in json, named where the policy's own code called it
        "DeepRaiser": "turn 0: raised JSONDecodeError: Expecting property name enclosed in "
                      "double quotes: line 1 column 2 (char 1) (at faulty_policies.py:"
                      f"{_line_of(DeepRaiser.act, 'json.loads')})"}
    for seat, name in enumerate(row["lineup"]):
        assert row["faultNotes"][seat] == expected[name.removeprefix(T)]


def test_a_seat_process_s_long_message_is_cut_and_keeps_its_place(tmp_path) -> None:
    # Apart, in its seat process: the host cuts the message, not the place, and the league's
    # note (its own words, the message, the place) still fits its 300 characters.
    from faulty_policies import LongRaiser

    spec = episode_spec([f"{F}LongRaiser", "factor"], 0, 0)
    row, _ = play_episode_spec(spec, Settings(policies=tuple(spec.lineup), turns=6))
    seat = row["lineup"].index(f"{F}LongRaiser")
    note = row["faultNotes"][seat]
    assert note.startswith("turn 0: its policy failed: KeyError: 'kkk") and len(note) <= 300
    assert note.endswith(f"(at faulty_policies.py:{_line_of(LongRaiser.act, 'raise')})")


def test_a_long_exception_message_is_cut_and_keeps_its_place() -> None:
    from league.apart.calls import explain

    def chatty() -> None:
        raise RuntimeError("why " * 5000)

    try:
        chatty()
    except RuntimeError as e:
        note = explain(e)
    assert note.startswith("RuntimeError: why why") and len(note) < 300
    assert note.endswith(f"test_league_faults.py:{_line_of(chatty, 'raise')})")


def _ladder_row(scores: list[float], fallbacks: list[int], faults: list[dict]) -> dict:
    return {"group": 0, "lineup": list("abcdef"), "scores": scores, "turns": 10,
            "questPoints": [0] * 6, "delivered": [0] * 6, "robberies": [0] * 6,
            "robbed": [0] * 6, "fallbacks": fallbacks, "faults": faults}


def test_more_than_a_tenth_of_decisions_not_its_own_unranks_a_policy() -> None:
    # one seat each, 10 decisions each: 1 fallback (10%) is ranked, 2 (20%) is not
    row = _ladder_row([1, 5, 2, 4, 0, 3], [1, 2, 0, 10, 0, 0],
                      [{"raised": 1}, {"timeout": 1, "raised": 1}, {}, {}, {}, {}])
    ladder = build_ladder([row], list("abcdef"), 0)
    got = [(e["policy"], e["rank"], e["ranked"], e["faults"], e["notOwnShare"])
           for e in ladder["policies"]]
    assert got == [("f", 1, True, 0, 0.0), ("c", 2, True, 0, 0.0), ("a", 3, True, 1, 0.1),
                   ("e", 4, True, 0, 0.0),  # below them, by score: b and d scored the most
                   ("b", None, False, 2, 0.2), ("d", None, False, 0, 1.0)]
    why = {e["policy"]: e["unranked"] for e in ladder["policies"]}
    assert why["b"] == ("20.0% of its decisions (2 of 10) were not its own (faults: raised 1, "
                        "timeout 1)")
    assert why["d"] == ("100.0% of its decisions (10 of 10) were not its own (no faults: "
                        "fallbacks of its own)")
    assert why["a"] is None
    text = ladder_table(ladder).splitlines()
    assert [x.split()[0] for x in text[2:8]] == ["1", "2", "3", "4", "-", "-"]
    assert text[-2:] == [f"unranked: b: {why['b']}", f"unranked: d: {why['d']}"]


# --- user mistakes: one line, exit 2 ---------------------------------------------------------

def test_user_mistakes_exit_2_with_one_line(league12, tmp_path, capsys) -> None:
    a_file = tmp_path / "file"
    a_file.write_text("x")
    cases = {
        "unknown policy": (league_args(tmp_path / "a", policies="factor,nosuch"), "nosuch"),
        "module without the class": (league_args(tmp_path / "a", policies="sim:Nope"), "Nope"),
        "unbuildable policy": (league_args(tmp_path / "a", policies=f"{F}Unbuildable"),
                               "no model file"),
        "a module nowhere": (league_args(tmp_path / "a", policies="nosuchmodule:Bot,factor"),
                             "add that folder to PYTHONPATH"),  # whole, and no place of ours
        "a file that is no model": (league_args(tmp_path / "a", policies=f"sb3:{a_file},factor"),
                                    "not a zip file"),
        "policy twice": (league_args(tmp_path / "a", policies="factor,factor"), "twice"),
        "policy twice in two cases": (league_args(tmp_path / "a", policies="factor,Factor"),
                                      "one policy twice, as 'factor' and 'Factor'"),
        # guild report refuses a name this long: refused before the play, not after it
        "a name too long": (league_args(tmp_path / "a", policies="exec:python3 bot.py "
                                        + "A" * 1100 + ",factor"),
                            "names a policy of 1,120 characters (exec:python3 bot.py AAA"),
        "unwritable dir": (league_args(a_file / "sub"), "cannot write"),
        "no episodes": (league_args(tmp_path / "a", 0), "--episodes"),
        "too few turns": (league_args(tmp_path / "a", 6, "--turns", "3"), "--turns"),
        "bad number": (league_args(tmp_path / "a", 6, "--decision-timeout", "-1"),
                       "--decision-timeout"),
        "address without ray": (league_args(tmp_path / "a", 6, "--address", "x:1"),
                                "--address"),
        "missing option": (["league", "--episodes", "6"], "required"),
        "no command": ([], "choose a command: league, verify, view, play, train"),
        "verify a missing dir": (["verify", str(tmp_path / "nothing")], "not a directory"),
    }
    for name, (argv, words) in cases.items():
        assert main(argv) == 2, name
        line = one_error_line(capsys.readouterr().err)
        assert words in line, (name, line)
        if name != "unbuildable policy":  # that one raised in the policy's own file
            assert "(at " not in line, (name, line)  # the user's mistake, no line of ours
    assert not (tmp_path / "a").exists()  # nothing was written for a refused command


@pytest.mark.parametrize("change", ["seed", "policies", "turns", "honest-town", "timeout",
                                    "fallback"])
def test_a_directory_of_another_configuration_is_refused(league12, tmp_path, capsys,
                                                         change) -> None:
    out = copy_league(league12[0], tmp_path)
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    argv = {"seed": league_args(out, seed=2),
            "policies": league_args(out, policies="factor,magpie"),
            "turns": league_args(out, 12, "--turns", "10"),
            "honest-town": league_args(out, 12, "--honest-town"),
            "timeout": league_args(out, 12, "--decision-timeout", "5"),
            "fallback": league_args(out, 12, "--fallback", "wait")}[change]
    assert main(argv) == 2
    assert "different configuration" in one_error_line(capsys.readouterr().err)
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before


def test_two_runs_cannot_share_a_directory(league12, tmp_path, capsys) -> None:
    out = copy_league(league12[0], tmp_path)
    with LeagueDir(out):  # as a running league holds it
        assert main(league_args(out, 14)) == 2
    assert "another league is running" in one_error_line(capsys.readouterr().err)
    assert len(lines(out)) == 12


@pytest.mark.parametrize("name", ["ladder.json", "signature.json", "replays/e000000.json"])
def test_a_folder_with_a_league_file_but_no_league_json_is_refused_untouched(
        tmp_path, capsys, name) -> None:
    # A user's own ladder.json, or what is left of a league whose league.json was lost: no
    # new league begins over it (its ladder written over, a secret drawn, then refused).
    out = tmp_path / "mine"
    (out / name).parent.mkdir(parents=True)
    (out / name).write_text('{"mine": true}\n', encoding="utf-8")
    assert main(["league", "--policies", "factor,magpie", "--episodes", "6", "--workers", "1",
                 "--out", str(out)]) == 2  # a secret draw: its secret.json is not written
    line = one_error_line(capsys.readouterr().err)
    assert f"{out / name} exists but {out / 'league.json'} does not" in line
    assert sorted(str(p.relative_to(out)) for p in out.rglob("*")
                  if p.name != ".lock") == sorted({name, str(Path(name).parent)} - {"."})
    assert (out / name).read_text(encoding="utf-8") == '{"mine": true}\n'


def test_a_fresh_folder_with_a_placeholder_in_replays_takes_a_league(tmp_path) -> None:
    out = tmp_path / "fresh"
    (out / "replays").mkdir(parents=True)
    (out / "replays" / ".gitkeep").write_text("")
    assert main(league_args(out, 6, workers=1)) == 0


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
