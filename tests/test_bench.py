"""The benchmark drivers measure what their figures say (bench/__main__.py).

``scalar_structured_episodes_per_s`` replays recorded structured intents: that is only the
engine's own workload if a replay plays the recorded episode again. The faces' figures draw
masked-random actions: every draw must be legal and every legal action drawable.
"""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bench.workloads import TURNS, masked_random, random_legal_intents, record_structured
from sim import Game, GameConfig


def test_replayed_structured_intents_play_the_recorded_episodes() -> None:
    recorded = record_structured(3)
    rng = random.Random(7)  # record_structured's default seed: the same draws again
    for i, turns in enumerate(recorded):
        live = Game(GameConfig(seed=i, turns=TURNS))
        replay = Game(GameConfig(seed=i, turns=TURNS))
        assert len(turns) == TURNS
        for intents in turns:
            drawn = random_legal_intents(live, rng)
            assert drawn == intents
            live.play_turn(drawn)
            replay.play_turn(intents)
        assert replay.done and replay.events == live.events
        assert replay.results() == live.results()


@settings(max_examples=200, deadline=None)
@given(st.lists(st.booleans(), min_size=1, max_size=300).filter(any), st.integers(0, 2**32))
def test_masked_random_draws_only_legal_actions(bits: list[bool], seed: int) -> None:
    mask = np.array(bits, dtype=np.int8)
    rng = random.Random(seed)
    drawn = {masked_random(mask, rng) for _ in range(4 * len(bits))}
    assert all(type(a) is int and mask[a] == 1 for a in drawn)


def test_masked_random_reaches_every_legal_action() -> None:
    mask = np.zeros(500, dtype=np.int8)
    mask[[0, 17, 250, 499]] = 1
    rng = random.Random(0)
    assert {masked_random(mask, rng) for _ in range(200)} == {0, 17, 250, 499}


def test_rounds_print_each_figures_median_and_its_range(monkeypatch, capsys) -> None:
    """Figures read from one measurement share its run: one run a round, round-robin."""
    import bench.__main__ as bench

    drawn = {"baseline_episodes_per_s": iter([900.0, 1200.0, 1000.0]),
             "parse_sentences_per_s": iter([95_000.0, 101_000.0, 99_000.0])}
    order: list[str] = []

    def fake(name: str):
        def measure(sizes: bench.Sizes) -> float:
            assert sizes == bench.QUICK
            order.append(name)
            return next(drawn[name])
        return measure

    for name in drawn:
        monkeypatch.setattr(bench.FIGURES[name][0], "measure", fake(name))
    assert bench.main(["--quick", "--rounds", "3", "--only", "baseline_episodes_per_s",
                       "--only", "parse_sentences_per_s", "--only", "baseline_vs_original"]) == 0
    out, err = capsys.readouterr()
    assert out.splitlines() == ["baseline_episodes_per_s: 1000.0 episodes/s",
                                "parse_sentences_per_s: 99000 sentences/s",
                                "baseline_vs_original: 1.44 x"]  # 1000 / 695
    assert "baseline_episodes_per_s: 900.0 episodes/s to 1200.0 episodes/s over 3 rounds" in err
    assert "baseline_vs_original: 1.29 x to 1.73 x over 3 rounds" in err
    assert order == ["baseline_episodes_per_s", "parse_sentences_per_s"] * 3  # round-robin


@pytest.mark.parametrize("argv", [["--rounds", "0", "--only", "parse_sentences_per_s"],
                                  ["--rounds", "3"], ["--only", "no_such_figure"]])
def test_bad_bench_options_print_one_line_and_exit_2(argv, capsys) -> None:
    import bench.__main__ as bench

    with pytest.raises(SystemExit) as exit_:
        bench.main(argv)
    assert exit_.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("python -m bench: error: ")


def test_instruction_workloads_play_what_their_figures_play(monkeypatch, tmp_path) -> None:
    """``bench.instructions`` plays the baseline figure's lineup and league episodes whose
    replays it writes to a folder it removes; a bad count is one line and exit 2."""
    import tempfile

    import agents
    import bench.instructions as instructions
    import bench.workloads as workloads

    played = []
    real = agents.play_episode
    monkeypatch.setattr(agents, "play_episode",
                        lambda config, seats: played.append((config.seed, list(seats)))
                        or real(config, seats))
    assert instructions.main(["baseline", "2"]) == 0
    assert played == [(0, ["factor", "magpie"] * 3), (1, ["factor", "magpie"] * 3)]
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    written = []
    remove = instructions.shutil.rmtree
    monkeypatch.setattr(instructions.shutil, "rmtree", lambda folder: written.extend(
        sorted(p.suffix for p in Path(folder).iterdir())) or remove(folder))
    assert instructions.main(["league", "2"]) == 0
    assert written == [".json", ".json"]  # one replay an episode, then the folder goes
    assert list(tmp_path.iterdir()) == []
    # the faces' drivers: 14 steps an episode, as the figures count them
    steps = []
    for name, driver in (("parallel", "parallel_episode"), ("gym", "gym_episode")):
        real_driver = getattr(workloads, driver)
        monkeypatch.setattr(workloads, driver, lambda *a, _real=real_driver: steps.append(
            _real(*a)))
        assert instructions.main([name, "2"]) == 0
    assert steps == [14] * 4
    with pytest.raises(SystemExit) as exit_:
        instructions.main(["league", "0"])
    assert exit_.value.code == 2


def test_bench_leagues_keep_their_replays_until_the_bench_ends(monkeypatch, tmp_path) -> None:
    """Each bench league gets a folder of its own inside one folder, removed (once) at exit:
    no league runs right after a large deletion of the bench's own making."""
    import tempfile

    import bench.__main__ as bench_main

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(bench_main, "_LEAGUES", [])
    at_exit = []
    monkeypatch.setattr(bench_main.atexit, "register", lambda fn, *args: at_exit.append((fn, args)))
    first, second = Path(bench_main._league_folder()), Path(bench_main._league_folder())
    assert first != second and first.parent == second.parent
    assert first.parent.parent == tmp_path and first.is_dir() and second.is_dir()
    assert len(at_exit) == 1
    fn, args = at_exit[0]
    fn(*args)
    assert list(tmp_path.iterdir()) == []
