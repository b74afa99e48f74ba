"""League training (``guild train --league``, ``--against``): the PFSP pool's weights and win
shares, the arena's lineups and training towns outside the reserved evaluation seeds, the pool
in summary.json and TensorBoard, snapshot files, and resume in league mode."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stdout
from pathlib import Path

import numpy as np
import pytest
from conftest import needs, needs_module
from hypothesis import given, settings
from hypothesis import strategies as st

from agents.learn.evaluation import DEFAULT_SEEDS, RESERVED_SEEDS, TRAINING_SEEDS
from agents.learn.ppo_pool import FIXED_SHARE, FLOOR, SELF, Pool
from league.cli.guild import main as guild

ENVS = 16


def _train(out: Path, *args: str) -> tuple[int, str]:
    buf = io.StringIO()
    with redirect_stdout(buf):
        code = guild(["train", "--out", str(out), "--envs", str(ENVS), "--eval-episodes", "2",
                      "--quiet", "--no-plot", *args])
    return code, buf.getvalue()


# --- the pool ----------------------------------------------------------------------------------

@given(wins=st.lists(st.floats(0, 1), min_size=1, max_size=4),
       snaps=st.lists(st.floats(0, 1), max_size=5),
       share=st.one_of(st.just(FIXED_SHARE), st.floats(0, 1)))
@settings(max_examples=200, deadline=None)
def test_pool_weights_are_a_distribution_keeping_the_fixed_share(wins, snaps, share) -> None:
    """Weights sum to 1, the fixed opponents keep at least their share of the seats (FIXED_SHARE
    unless --fixed-share says), every member is drawn sometimes unless the fixed share is all,
    and among members the one the learner beats less weighs more."""
    pool = Pool([f"p{i}" for i in range(len(wins))], share)
    for i, _ in enumerate(snaps):
        pool.add_snapshot(f"snapshot@{i}", keep=5)
    for m, w in zip(pool.members, wins + snaps):
        m.win = w
    w = pool.weights()
    assert w.sum() == pytest.approx(1.0) and (w >= 0).all()
    assert w[:len(wins)].sum() >= share - 1e-12
    assert pool.members[-1].name == SELF
    hard = w - np.array([share / len(wins) if m.fixed else 0 for m in pool.members])
    if share < 0.99:  # (beyond, the PFSP part is below the subtraction's rounding)
        for a, b in zip(pool.members, hard):
            for c, d in zip(pool.members, hard):
                if a.name != SELF and c.name != SELF and a.win < c.win - 1e-6:
                    assert b > d
    assert min(hard) >= (1 - share) * FLOOR / (len(w) * (1 + FLOOR)) - 1e-12
    if share == 1:
        assert w[len(wins):].sum() == 0  # snapshots and self never fill a seat


@pytest.mark.parametrize("share", [-0.1, 1.5, float("nan")])
def test_pool_refuses_a_fixed_share_outside_0_to_1(share) -> None:
    with pytest.raises(ValueError, match="share must be in"):
        Pool(["factor"], share)


def test_pool_keeps_the_latest_snapshots_before_self() -> None:
    pool = Pool(["factor"])
    for k in range(7):
        pool.add_snapshot(f"snapshot@{k}", keep=5)
    assert [m.name for m in pool.members] == (["factor"] + [f"snapshot@{k}" for k in range(2, 7)]
                                              + [SELF])


def test_win_shares_count_each_learning_seat_against_each_opponent_seat() -> None:
    """Row 0: learner seats 0 and 1 score 3 and 1, factor seats 2 and 3 score 2 and 2: pairs
    (3>2, 3>2, 1<2, 1<2) give 2 of 4. Row 1: one learner scoring 1, one factor scoring 1: a
    tie, half. The share is 2.5 of 5; the estimate moves RATE of the way there."""
    from agents.learn.ppo_pool import RATE

    pool = Pool(["factor", "magpie"])
    lineup = np.array([[0, 0, 1, 1, 2, 2], [0, 1, 2, 2, 2, 2]])
    scores = np.array([[3, 1, 2, 2, 9, 9], [1, 1, 0, 0, 0, 0]], float)
    pool.observe(lineup, scores)
    assert pool.members[0].win == pytest.approx(0.5 + RATE * (2.5 / 5 - 0.5))
    # magpie: row 0, learners 3 and 1 against 9 and 9: 0 of 4; row 1, 1 against 0 four times
    assert pool.members[1].win == pytest.approx(0.5 + RATE * (4 / 8 - 0.5))
    pool.observe(lineup, np.array([[5, 5, 0, 0, 0, 0], [5, 0, 0, 0, 0, 0]], float))
    assert pool.members[0].win > 0.5 and pool.members[1].win > 0.5


# --- the arena ---------------------------------------------------------------------------------

def test_training_towns_lie_outside_the_reserved_seeds_evaluations_use() -> None:
    torch = needs_module("torch", "torch==2.13.0, then pip install -e '.[train]'")
    from agents.learn.ppo_arena import Arena

    assert DEFAULT_SEEDS[0] in RESERVED_SEEDS and DEFAULT_SEEDS[-1] in RESERVED_SEEDS
    assert TRAINING_SEEDS.start >= RESERVED_SEEDS.stop
    for league in (False, True):
        arena = Arena(64, False, 0, torch.Generator(), league=league)
        arena.start()
        seeds = arena.engine.state.seed
        assert (seeds >= TRAINING_SEEDS.start).all() and (seeds < TRAINING_SEEDS.stop).all()
        assert len(set(seeds.tolist())) == 64


def test_league_lineups_draw_the_pool_by_its_weights() -> None:
    """One learning seat per row at least; opponent seats follow the pool's weights; a
    fixed opponent beaten less often is drawn more often."""
    torch = needs_module("torch", "torch==2.13.0, then pip install -e '.[train]'")
    from agents.learn.ppo_arena import LEARNER, Arena

    arena = Arena(4096, False, 1, torch.Generator(), against=("factor", "magpie", "random"),
                  league=True)
    arena.pool.members[0].win, arena.pool.members[1].win = 0.2, 0.9
    arena.start()
    lineup = arena.lineup
    assert ((lineup == LEARNER).sum(1) >= 1).all()
    counts = np.bincount(lineup.ravel(), minlength=4)
    w = arena.pool.weights()
    seats = lineup.size - lineup.shape[0]  # every row's drawn seats but the first learner's
    assert counts[1] / seats == pytest.approx(w[0], abs=0.02)
    assert counts[1] > counts[2] > 0 and counts[3] > 0


def test_fixed_share_one_fills_every_opponent_seat_with_the_fixed_opponents() -> None:
    """``--fixed-share 1``: no seat goes to the learner's copies; at the default, some do."""
    torch = needs_module("torch", "torch==2.13.0, then pip install -e '.[train]'")
    from agents.learn.ppo_arena import LEARNER, Arena

    for share, copies in ((1.0, False), (FIXED_SHARE, True)):
        arena = Arena(1024, False, 3, torch.Generator(), league=True, fixed_share=share)
        arena.start()
        learners = (arena.lineup == LEARNER).sum(1)
        assert (learners >= 1).all() and bool((learners > 1).any()) is copies


def test_against_sets_the_fixed_opponents_and_refuses_what_has_no_batched_form(
        tmp_path, capsys) -> None:
    needs_module("torch", "torch==2.13.0, then pip install -e '.[train]'")
    from agents.learn.ppo_arena import Arena

    code, printed = _train(tmp_path / "a", "--against", "magpie,random", "--steps", "1")
    assert code == 0, printed
    summary = json.loads(printed.strip().splitlines()[-2])
    assert summary["against"] == ["magpie", "random"] and summary["league"] is False
    import torch

    arena = Arena(32, False, 0, torch.Generator(), against=("magpie", "random"))
    arena.start()
    assert set(np.unique(arena.lineup)) == {0, 1, 2}
    assert [type(p).__name__ for p in arena.players] == ["BatchedMagpie", "BatchedRandom"]
    for bad, words in ((["--against", "llm:x@http://127.0.0.1:9"], "--against 'llm:x"),
                       (["--against", "nobody"], "unknown policy 'nobody'"),
                       (["--league", "--self-play"], "exclude each other")):
        code, _ = _train(tmp_path / "b", *bad, "--steps", "1")
        err = capsys.readouterr().err.strip()
        assert code == 2 and words in err and len(err.splitlines()) == 1, err
        assert not (tmp_path / "b" / "model.pt").exists()


def test_league_training_records_its_pool_snapshots_and_resumes_exactly(tmp_path) -> None:
    """summary.json holds the pool with weights and win shares, the snapshots are model files
    that play, TensorBoard gets pool/ scalars, and half a run plus --resume equals the run."""
    torch = needs_module("torch", "torch==2.13.0, then pip install -e '.[train]'")
    args = ["--league", "--against", "factor,magpie,random", "--snapshot-every", "1",
            "--seed", "4"]
    code, printed = _train(tmp_path / "whole", *args, "--steps", str(ENVS * 14 * 3))
    assert code == 0, printed
    summary = json.loads((tmp_path / "whole" / "summary.json").read_text())
    names = [m["name"] for m in summary["pool"]]
    assert names[:3] == ["factor", "magpie", "random"] and names[-1] == SELF
    assert sum(m["weight"] for m in summary["pool"]) == pytest.approx(1, abs=1e-3)
    assert all(m["win"] != 0.5 for m in summary["pool"][:3])  # measured, not the prior
    # (learning seats per row vary in a league: fewer updates than ENVS-row lineups need)
    assert len(summary["snapshots"]) == len(summary["digests"]) >= 2
    snap = tmp_path / "whole" / "snapshots" / summary["snapshots"][0]
    from agents import make_policy
    from sim import Game, GameConfig

    policy = make_policy(f"ppo:{snap}")
    game = Game(GameConfig(seed=1))
    game.play_turn([policy.act(game, s) for s in range(6)])
    tb = tmp_path / "whole" / "tb"
    needs(summary["tensorboard"] is not None, "tensorboard (pip install -e '.[train]')")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(tb))
    events.Reload()
    tags = events.Tags()["scalars"]
    assert {"pool/weight/factor", "pool/win/factor", "pool/weight/self",
            "train/lr"} <= set(tags)
    # half, then --resume
    half = tmp_path / "half"
    code, printed = _train(half, *args, "--steps", str(ENVS * 14 + 1))
    assert code == 0, printed
    code, printed = _train(half, *args, "--steps", str(ENVS * 14 * 3), "--resume")
    assert code == 0, printed
    a = torch.load(tmp_path / "whole" / "model.pt", weights_only=True)["weights"]
    b = torch.load(half / "model.pt", weights_only=True)["weights"]
    assert all(torch.equal(a[k], b[k]) for k in a)
    again = json.loads((half / "summary.json").read_text())
    assert again["digest"] == summary["digest"] and again["digests"] == summary["digests"]
    assert again["pool"] == summary["pool"]


def test_lr_anneals_linearly_to_zero_at_anneal_steps() -> None:
    needs_module("torch", "torch==2.13.0, then pip install -e '.[train]'")
    from agents.learn.ppo_config import PPOConfig
    from agents.learn.ppo_learn import Learner

    learner = Learner(PPOConfig(lr=1e-3, anneal_steps=ENVS * 14 * 2), ENVS, False, 0)
    learner.update()
    assert learner.lr() == pytest.approx(1e-3)
    learner.update()
    assert learner.lr() == pytest.approx(1e-3 * 0.5)
    learner.update()
    assert learner.lr() == 0.0


def test_evaluate_says_when_its_seeds_are_training_towns(capsys) -> None:
    big = TRAINING_SEEDS.start
    assert guild(["evaluate", "magpie", "--seeds", f"{big}..{big + 3}"]) == 0
    err = capsys.readouterr().err
    assert "where guild train draws its towns" in err
    assert guild(["evaluate", "magpie", "--seeds", "0..3"]) == 0
    assert "guild train" not in capsys.readouterr().err
