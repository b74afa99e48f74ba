"""The league: fair lineups, durable results, resume and extend, verify, the ladder,
and the Ray backend against the local one.  Faults, time limits and user mistakes are in
``test_league_faults.py``."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import needs_module
from hypothesis import given, settings
from hypothesis import strategies as st
from leagues import (
    ROOT,
    TESTS,
    F,
    copy_league,
    league_args,
    lines,
    one_error_line,
    rows,
    same_replays,
    timeless,
)

from league import (
    build_ladder,
    episode_spec,
    group_draw,
)
from league.cli.guild import main
from league.cli.progress import Progress
from league.core.atomic import TMP_SUFFIX, replacing, write_atomic
from league.core.episode import RESULT_KEYS
from league.core.store import LeagueDir, load_results

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


def test_a_smaller_episode_count_is_refused_and_changes_nothing(league12, tmp_path,
                                                                capsys) -> None:
    """A folder reports every episode it holds: asking for fewer would report more than was
    asked, so it is one line and exit 2, with nothing written."""
    out = copy_league(league12[0], tmp_path)
    files = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert main(league_args(out, 6)) == 2
    line = one_error_line(capsys.readouterr().err)
    assert "holds a league of 12 episodes, more than --episodes 6" in line
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == files


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
    """A crash can stop an append at any byte: only whole lines count, and a run's tidying
    cuts back to them."""
    data = (league12[0] / "results.jsonl").read_bytes()
    cut %= len(data) + 1
    folder = tmp_path_factory.mktemp("cut")
    path = folder / "results.jsonl"
    path.write_bytes(data[:cut])
    whole = data[:cut].count(b"\n")
    got, torn = load_results(path)
    assert got == [json.loads(x) for x in data.splitlines()[:whole]]
    assert torn == (cut > 0 and data[cut - 1:cut] != b"\n")
    assert path.read_bytes() == data[:cut]  # reading changes nothing
    LeagueDir(folder).tidy()
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


def test_write_atomic_of_a_sole_writer_replaces_whole_files_too(tmp_path, monkeypatch) -> None:
    """``sole=True`` (a league's replays) writes through ``.NAME.tmp``: a failure mid-write
    leaves the old file and no temp file; the temp name is one ``LeagueDir.resume`` deletes."""
    target = tmp_path / "f.json"
    write_atomic(target, b"old", sole=True)
    real_write = os.write
    during: list[str] = []

    def torn(fd: int, data: bytes) -> int:
        real_write(fd, bytes(data[:2]))
        during.extend(p.name for p in tmp_path.glob(f"*{TMP_SUFFIX}"))  # as resume finds them
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "write", torn)
    with pytest.raises(OSError):
        write_atomic(target, b"new content", sync=False, sole=True)
    monkeypatch.undo()
    assert during == [".f.json.tmp"]
    assert target.read_bytes() == b"old" and [p.name for p in tmp_path.iterdir()] == ["f.json"]
    with pytest.raises(TypeError):
        write_atomic(target, 42, sole=True)  # type: ignore[arg-type]
    write_atomic(target, "caf\u00e9", sole=True)
    assert target.read_text(encoding="utf-8") == "caf\u00e9"
    assert [p.name for p in tmp_path.iterdir()] == ["f.json"]
    umask = os.umask(0)
    os.umask(umask)
    assert target.stat().st_mode & 0o777 == 0o666 & ~umask


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
    rs = [{"group": g, "lineup": ["a"] * 6, "scores": [score] * 6, "turns": 14,
           "faults": [{}] * 6, **keys} for g in range(groups) for _ in range(6)]
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
