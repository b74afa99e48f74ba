"""The league (issue 7): fair lineups, durable results, resume and extend, faults, verify,
errors, the ladder, and the Ray backend against the local one."""

from __future__ import annotations

import io
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from conftest import needs_module
from hypothesis import given, settings
from hypothesis import strategies as st

from league import (
    LeagueOptions,
    Settings,
    build_ladder,
    episode_spec,
    group_draw,
    play_episode_spec,
    run_league,
)
from league.atomic import replacing, write_atomic
from league.cli import main
from league.episode import RESULT_KEYS
from league.progress import Progress
from league.store import LeagueDir, load_results

ROOT = Path(__file__).resolve().parents[1]
TESTS = Path(__file__).resolve().parent
BASELINES = "factor,magpie,random"
F = "faulty_policies:"  # tests/faulty_policies.py, importable from the tests directory


def league_args(out: Path, episodes: int = 12, *extra: str, policies: str = BASELINES,
                seed: int = 1, workers: int = 2) -> list[str]:
    return ["league", "--policies", policies, "--episodes", str(episodes), "--seed", str(seed),
            "--workers", str(workers), "--out", str(out), *extra]


def lines(out: Path) -> list[str]:
    return (out / "results.jsonl").read_text(encoding="utf-8").splitlines()


def rows(out: Path) -> list[dict]:
    return [json.loads(x) for x in lines(out)]


def timeless(rs: list[dict]) -> list[dict]:
    """Rows without the one machine-dependent field."""
    return [{k: v for k, v in r.items() if k != "wallTime"} for r in rs]


def same_replays(a: Path, b: Path) -> bool:
    names = sorted(p.name for p in (a / "replays").iterdir())
    return names == sorted(p.name for p in (b / "replays").iterdir()) and all(
        (a / "replays" / n).read_bytes() == (b / "replays" / n).read_bytes() for n in names)


def one_error_line(err: str) -> str:
    assert "Traceback" not in err
    got = err.strip().splitlines()
    assert len(got) == 1, got
    return got[0]


@pytest.fixture(scope="module")
def league12(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str]:
    """A 12-episode league of the baselines on 2 workers: (dir, stdout, stderr)."""
    out = tmp_path_factory.mktemp("league") / "l12"
    buf_out, buf_err = io.StringIO(), io.StringIO()
    old = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = buf_out, buf_err
    try:
        code = main(league_args(out))
    finally:
        sys.stdout, sys.stderr = old
    assert code == 0, buf_err.getvalue()
    return out, buf_out.getvalue(), buf_err.getvalue()


def copy_league(src: Path, tmp_path: Path) -> Path:
    dst = tmp_path / "copy"
    shutil.copytree(src, dst)
    return dst


# --- a league, its files and verification ----------------------------------------------------

def test_league_writes_one_line_and_one_replay_per_episode(league12) -> None:
    out, _, _ = league12
    rs = rows(out)
    assert [r["id"] for r in rs] == [f"e{i:06d}" for i in range(12)]
    for r in rs:
        assert set(RESULT_KEYS) <= set(r)
        assert r["names"] == r["lineup"] and len(r["lineup"]) == 6
        assert r["reason"] == "complete" and r["turns"] == r["maxTurns"] == 14
        assert r["fallbacks"] == [0] * 6 and isinstance(r["wallTime"], float)
        payload = json.loads((out / "replays" / f"{r['id']}.json").read_text())
        assert payload["protocol"] == "cogmud.replay.v1"
        assert payload["policyNames"] == r["lineup"]
        assert payload["config"]["seed"] == r["seed"]
        assert {k: payload["results"][k] for k in RESULT_KEYS} == {k: r[k] for k in RESULT_KEYS}
    assert sorted(p.name for p in (out / "replays").iterdir()) == [f"{r['id']}.json" for r in rs]
    manifest = json.loads((out / "league.json").read_text())
    assert manifest["policies"] == ["factor", "magpie", "random"]
    assert manifest["seed"] == 1 and manifest["episodes"] == 12


def test_episodes_come_in_groups_of_six_rotations(league12) -> None:
    rs = rows(league12[0])
    for g in range(2):
        group = rs[6 * g:6 * g + 6]
        assert len({r["seed"] for r in group}) == 1
        base = group[0]["lineup"]
        for r in group:
            k = r["rotation"]
            assert r["lineup"] == [base[(s - k) % 6] for s in range(6)]
        # with three policies, each sits twice per table and plays every seat twice per group
        for seat in range(6):
            assert sorted(r["lineup"][seat] for r in group) == sorted(base)
    assert rs[0]["seed"] != rs[6]["seed"]


def test_verify_passes_on_a_fresh_league(league12, capsys) -> None:
    assert main(["verify", str(league12[0])]) == 0
    assert "all 12 episodes verify" in capsys.readouterr().out


def _edit_replay(out: Path, episode: str, edit) -> None:
    path = out / "replays" / f"{episode}.json"
    payload = json.loads(path.read_text())
    edit(payload)
    path.write_text(json.dumps(payload))


def _first_act(payload: dict, seat: int) -> dict:
    return next(e for e in payload["events"] if e["kind"] == "act" and e["seat"] == seat)


@pytest.mark.parametrize("what", ["sentence", "snapshot", "replay-results", "claimed-score",
                                  "missing"])
def test_a_hand_edited_episode_fails_verification(league12, tmp_path, capsys, what) -> None:
    out = copy_league(league12[0], tmp_path)
    ep = "e000007"
    if what == "sentence":  # a different act: the recorded snapshots no longer follow
        _edit_replay(out, ep, lambda p: _first_act(p, 0).update(
            sentence="I walk to the Docks.", intent="move"))
    elif what == "snapshot":
        _edit_replay(out, ep, lambda p: p["events"][-2]["cogs"][3].update(coin=999))
    elif what == "replay-results":
        _edit_replay(out, ep, lambda p: p["results"]["scores"].__setitem__(2, 9.5))
    elif what == "claimed-score":
        text = lines(out)
        row = json.loads(text[7])
        row["scores"][2] += 1.0
        text[7] = json.dumps(row)
        (out / "results.jsonl").write_text("\n".join(text) + "\n")
    else:
        (out / "replays" / f"{ep}.json").unlink()
    capsys.readouterr()
    assert main(["verify", str(out)]) == 1
    report = capsys.readouterr().out
    assert "1 of 12 episodes do not verify" in report and ep in report


# --- the ladder ----------------------------------------------------------------------------

def test_the_printed_ladder_matches_the_results(league12) -> None:
    out, printed, err = league12
    rs = rows(out)
    ladder = json.loads((out / "ladder.json").read_text())
    by_policy = {e["policy"]: e for e in ladder["policies"]}
    for name in ("factor", "magpie", "random"):
        seats = [(r, s) for r in rs for s, p in enumerate(r["lineup"]) if p == name]
        e = by_policy[name]
        assert e["seats"] == len(seats) == 24 and e["episodes"] == 12
        mean = sum(r["scores"][s] for r, s in seats) / 24
        assert e["meanScore"] == pytest.approx(mean, abs=1e-6)  # stored to 6 decimals
        done = sum((r["questPoints"][s] - 4 * r["delivered"][s]) // 8 for r, s in seats)
        assert e["commissionsCompleted"] == done and e["commissions"] == 48
        assert e["robberies"] == sum(r["robberies"][s] for r, s in seats)
        assert e["robbed"] == sum(r["robbed"][s] for r, s in seats)
        lo, hi = e["ci95"]
        assert lo <= e["meanScore"] <= hi
    assert [e["rank"] for e in ladder["policies"]] == [1, 2, 3]
    means = [e["meanScore"] for e in ladder["policies"]]
    assert means == sorted(means, reverse=True)
    table = printed.splitlines()
    head = next(i for i, line in enumerate(table) if line.startswith("rank"))
    assert "mean" in table[head] and "95% CI" in table[head] and "fallbacks" in table[head]
    for k, e in enumerate(ladder["policies"]):
        cells = table[head + 2 + k].split()
        assert cells[:3] == [str(k + 1), e["policy"], f"{e['meanScore']:+.3f}"]
    assert "12/12 episodes" in err  # plain progress lines when stderr is not a terminal


def test_progress_draws_a_bar_on_a_terminal() -> None:
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    tty, plain = Tty(), io.StringIO()
    for stream in (tty, plain):
        p = Progress(5, stream)
        for _ in range(5):
            p.update()
        p.close()
    assert "5/5" in tty.getvalue() and "\r" in tty.getvalue()
    assert plain.getvalue().splitlines()[-1].startswith("league: 5/5 episodes")


# --- determinism, resume, extend -------------------------------------------------------------

def test_the_same_command_gives_the_same_results(league12, tmp_path) -> None:
    out = tmp_path / "again"
    assert main(league_args(out, workers=1)) == 0
    assert timeless(rows(out)) == timeless(rows(league12[0]))
    assert (out / "ladder.json").read_text() == (league12[0] / "ladder.json").read_text()
    assert same_replays(out, league12[0])


def test_a_larger_episode_count_extends_a_finished_league(league12, tmp_path) -> None:
    out = copy_league(league12[0], tmp_path)
    before = lines(out)
    replays = {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in (out / "replays").iterdir()}
    assert main(league_args(out, 14, "--plot")) == 0
    after = lines(out)
    assert len(after) == 14 and after[:12] == before
    assert [json.loads(x)["id"] for x in after[12:]] == ["e000012", "e000013"]
    for name, (data, mtime) in replays.items():
        p = out / "replays" / name
        assert (p.read_bytes(), p.stat().st_mtime_ns) == (data, mtime)
    assert json.loads((out / "league.json").read_text())["episodes"] == 14
    assert (out / "ladder.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # running the same command again plays nothing and changes nothing
    assert main(league_args(out, 14)) == 0
    assert lines(out) == after
    assert main(["verify", str(out)]) == 0


def _start(out: Path, episodes: int) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(TESTS)]),
           "GUILD_TEST_SLOW": "0.01"}
    cmd = [sys.executable, "-m", "league", *league_args(
        out, episodes, "--turns", "6", policies=f"factor,{F}Slow", seed=3)]
    return subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)


def _wait_for_lines(out: Path, n: int, proc: subprocess.Popen) -> None:
    end = time.monotonic() + 30
    while time.monotonic() < end:
        path = out / "results.jsonl"
        if path.exists() and path.read_bytes().count(b"\n") >= n:
            return
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.02)
    pytest.fail(f"no {n} results within 30 s")


def test_interrupted_and_killed_runs_resume_without_loss_or_duplicates(tmp_path) -> None:
    out, total = tmp_path / "crash", 36
    # Ctrl-C: the run stops cleanly with exit code 130
    proc = _start(out, total)
    _wait_for_lines(out, 4, proc)
    os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert "interrupted" in err and "Traceback" not in err
    kept = lines(out)
    assert 4 <= len(kept) < total
    # kill -9 of the whole process group (parent and workers) mid-way
    proc = _start(out, total)
    _wait_for_lines(out, len(kept) + 4, proc)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=30)
    data = (out / "results.jsonl").read_bytes()
    complete = data[:data.rfind(b"\n") + 1].decode().splitlines()
    assert complete[:len(kept)] == kept and len(complete) < total
    # the same command finishes the league
    proc = _start(out, total)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    final = lines(out)
    assert final[:len(complete)] == complete
    assert [json.loads(x)["index"] for x in final] == list(range(total))
    assert not list((out / "replays").glob("*.tmp"))
    assert len(list((out / "replays").glob("*.json"))) == total
    assert main(["verify", str(out)]) == 0


@given(cut=st.integers(min_value=0, max_value=10**9))
@settings(max_examples=40, deadline=None)
def test_a_results_file_cut_anywhere_loads_its_complete_lines(league12, tmp_path_factory,
                                                              cut) -> None:
    """A crash can stop an append at any byte: only whole lines count, and repair cuts back."""
    data = (league12[0] / "results.jsonl").read_bytes()
    cut %= len(data) + 1
    path = tmp_path_factory.mktemp("cut") / "results.jsonl"
    path.write_bytes(data[:cut])
    whole = data[:cut].count(b"\n")
    got, torn = load_results(path, repair=True)
    assert got == [json.loads(x) for x in data.splitlines()[:whole]]
    assert torn == (cut > 0 and data[cut - 1:cut] != b"\n")
    assert path.read_bytes() == b"".join(data.splitlines(keepends=True)[:whole])


def test_write_atomic_replaces_whole_files_and_cleans_up_after_a_failure(tmp_path) -> None:
    target = tmp_path / "f.json"
    write_atomic(target, "old")
    with pytest.raises(TypeError):
        write_atomic(target, 42)  # type: ignore[arg-type]  # fails while writing
    assert target.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["f.json"]
    with replacing(target) as a, replacing(target) as b:  # two writers of one path
        assert a != b and a.parent == b.parent == tmp_path and a.name.endswith(".tmp")
        a.write_text("a")
        b.write_text("b")
    assert target.read_text() == "a" and [p.name for p in tmp_path.iterdir()] == ["f.json"]
    umask = os.umask(0)
    os.umask(umask)
    assert target.stat().st_mode & 0o777 == 0o666 & ~umask  # not mkstemp's owner-only mode


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
    spec = episode_spec(["factor", f"{F}Sleeper", f"{F}BadRecords"], 5, 0)
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
    out = tmp_path / "died"
    assert main(league_args(out, 12, policies=f"factor,{F}Exiter")) == 1
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


# --- lineups and the ladder's statistics (properties) -----------------------------------------

NAMES = st.lists(st.text("abcdefgh:._", min_size=1, max_size=6), min_size=1, max_size=9,
                 unique=True)


@given(policies=NAMES, seed=st.integers(-10**12, 10**12), group=st.integers(0, 10**6))
@settings(max_examples=200)
def test_a_group_plays_one_seed_under_six_rotations(policies, seed, group) -> None:
    specs = [episode_spec(policies, seed, 6 * group + r) for r in range(6)]
    game_seed, base = group_draw(policies, seed, group)
    assert 0 <= game_seed < 2**31
    for r, spec in enumerate(specs):
        assert (spec.group, spec.rotation, spec.seed) == (group, r, game_seed)
        assert list(spec.lineup) == [base[(s - r) % 6] for s in range(6)]
    for seat in range(6):  # every lineup entry plays every seat once
        assert sorted(s.lineup[seat] for s in specs) == sorted(base)
    assert episode_spec(policies, seed, 6 * group + 2) == specs[2]  # pure


@given(policies=NAMES, seed=st.integers(-10**6, 10**6), start=st.integers(0, 10**4))
@settings(max_examples=100)
def test_any_k_consecutive_groups_give_every_policy_six_seats(policies, seed, start) -> None:
    k = len(policies)
    seats = [p for g in range(start, start + k) for p in group_draw(policies, seed, g)[1]]
    assert all(seats.count(p) == 6 for p in policies)
    if k >= 6:
        assert len(set(group_draw(policies, seed, start)[1])) == 6


@given(data=st.data())
@settings(max_examples=40, deadline=None)
def test_the_ladder_is_a_function_of_the_episodes_not_their_order(league12, data) -> None:
    rs = rows(league12[0])
    shuffled = data.draw(st.permutations(rs))
    assert build_ladder(shuffled, ["factor", "magpie", "random"], 1) == \
        build_ladder(rs, ["factor", "magpie", "random"], 1)


@given(score=st.floats(-3, 3, allow_nan=False).map(lambda x: round(x, 3)),
       groups=st.integers(2, 6))
@settings(max_examples=50, deadline=None)
def test_equal_scores_give_a_zero_width_interval(score, groups) -> None:
    keys = {k: [0] * 6 for k in ("questPoints", "delivered", "robberies", "robbed",
                                 "fallbacks")}
    rs = [{"group": g, "lineup": ["a"] * 6, "scores": [score] * 6, "turns": 14, **keys}
          for g in range(groups) for _ in range(6)]
    e = build_ladder(rs, ["a"], 0)["policies"][0]
    assert e["meanScore"] == pytest.approx(score) and e["seats"] == 36 * groups
    assert e["ci95"] == [pytest.approx(score)] * 2


# --- the Ray backend -------------------------------------------------------------------------

def test_ray_and_local_backends_give_identical_results(league12, tmp_path) -> None:
    ray = needs_module("ray", "'guild-game[ray]'")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        out = tmp_path / "ray"
        assert main(league_args(out, 12, "--backend", "ray")) == 0
    finally:
        ray.shutdown()
    assert timeless(rows(out)) == timeless(rows(league12[0]))
    assert same_replays(out, league12[0])
    assert main(["verify", str(out)]) == 0
