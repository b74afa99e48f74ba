"""``agents.learn.evaluation.paired_evaluation`` and ``guild evaluate``: paired, seat-rotated
figures.

The batched figures are checked against games rebuilt by hand on the scalar engine
(``play_episode`` and ``sim.rules.scoring.score``), seat by seat and seed by seed; the scalar
fallback must give the very same numbers for policies that have no batched form.
"""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
from differential import scalar_view
from leagues import ROOT, one_error_line

from agents import Factor, Magpie, play_episode
from agents.learn import evaluation
from agents.learn.evaluation import EvaluationError, mean_interval, paired_evaluation, t_quantile
from league.cli.guild import main
from sim import Game, GameConfig
from sim.batched.engine import BatchedGuild
from sim.rules.scoring import score
from sim.rules.world import MAX_TURNS

SEEDS = range(100_000, 100_020)


class ScalarOnly:
    """A scalar policy with no batched form: forces the scalar engine."""

    def __init__(self, inner: object) -> None:
        self.inner = inner
        self.name = f"scalar-{inner.name}"

    def act(self, game: Game, seat: int) -> str:
        return self.inner.act(game, seat)


def _by_hand(evaluated: object, seed: int, seat: int, against=(Factor, Magpie)) -> float:
    """The evaluated seat's final score, the other seats cycling through ``against``."""
    others = iter([against[j % len(against)]() for j in range(5)])
    lineup = [evaluated if s == seat else next(others) for s in range(6)]
    return score(play_episode(GameConfig(seed=seed), lineup).state, seat)


def test_factor_against_itself_is_exactly_zero() -> None:
    r = paired_evaluation("factor", seeds=SEEDS)
    assert (r.diff, r.low, r.high) == (0.0, 0.0, 0.0)
    assert r.per_seat == (0.0,) * 6 and r.mean == r.baseline_mean
    assert (r.engine, r.games, r.n_seeds, r.seeds) == ("batched", 120, 20, (100_000, 100_019))


def test_magpie_loses_to_factor_and_matches_games_rebuilt_by_hand() -> None:
    seeds = [100_000, 100_007]
    r = paired_evaluation("magpie", seeds=seeds)
    got = np.array([[_by_hand(Magpie(), s, k) for k in range(6)] for s in seeds])
    base = np.array([[_by_hand(Factor(), s, k) for k in range(6)] for s in seeds])
    assert r.mean == pytest.approx(got.mean(), abs=1e-12)
    assert r.baseline_mean == pytest.approx(base.mean(), abs=1e-12)
    assert r.per_seat == pytest.approx(tuple((got - base).mean(axis=0)), abs=1e-12)
    per_seed = (got - base).mean(axis=1)                  # the independent units
    assert r.diff == pytest.approx(per_seed.mean(), abs=1e-12)
    half = 12.706204736 * per_seed.std(ddof=1) / np.sqrt(2)   # t(0.975, 1 d.o.f.)
    assert (r.low, r.high) == pytest.approx((per_seed.mean() - half, per_seed.mean() + half))
    wide = paired_evaluation("magpie", seeds=SEEDS)
    assert wide.diff < 0 and wide.high < 0 and wide.low < wide.diff


def test_other_seats_cycle_through_against_in_seat_order() -> None:
    r = paired_evaluation("magpie", against=("random", "magpie", "factor"), seeds=[3, 4])
    cycled = paired_evaluation("magpie", against=("random", "magpie", "factor", "random",
                                                  "magpie"), seeds=[3, 4])
    assert (r.per_seat, r.mean, r.baseline_mean) == (cycled.per_seat, cycled.mean,
                                                    cycled.baseline_mean)
    one = paired_evaluation("factor", against=("magpie",), seeds=[3, 4], baseline="magpie")
    assert one.per_seat == pytest.approx(tuple(
        np.mean([_by_hand(Factor(), s, k, (Magpie,)) - _by_hand(Magpie(), s, k, (Magpie,))
                 for s in (3, 4)]) for k in range(6)), abs=1e-12)


@pytest.mark.parametrize("inner", [Factor, Magpie])
def test_scalar_engine_gives_the_batched_numbers(inner: type) -> None:
    seeds = [100_001, 100_002, 100_003]
    scalar = paired_evaluation(ScalarOnly(inner()), seeds=seeds)
    batched = paired_evaluation(inner.name, seeds=seeds)
    assert (scalar.engine, batched.engine) == ("scalar", "batched")
    fields = ("mean", "baseline_mean", "diff", "low", "high", "per_seat", "games", "seeds")
    assert [getattr(scalar, f) for f in fields] == [getattr(batched, f) for f in fields]


def test_random_seats_draw_the_same_numbers_on_both_sides() -> None:
    r = paired_evaluation("random", against=("random", "magpie"), baseline="random",
                          seeds=SEEDS)
    assert (r.diff, r.low, r.high) == (0.0, 0.0, 0.0)
    again = paired_evaluation("magpie", against=("random", "factor"), seeds=[9, 10])
    assert paired_evaluation("magpie", against=("random", "factor"), seeds=[9, 10]).per_seat \
        == again.per_seat


def test_chunks_of_seeds_change_nothing(monkeypatch) -> None:
    whole = paired_evaluation({"name": "magpie", "hawk_period": 2}, seeds=range(7))
    monkeypatch.setattr(evaluation, "CHUNK_SEEDS", 3)
    chunked = paired_evaluation({"name": "magpie", "hawk_period": 2}, seeds=range(7))
    assert chunked.spec == "magpie" and chunked.mean != chunked.baseline_mean
    assert [chunked.mean, chunked.baseline_mean, chunked.per_seat] == [
        whole.mean, whole.baseline_mean, whole.per_seat]


def test_seeds_are_game_seeds() -> None:
    e = BatchedGuild(2)
    e.reset(np.array([SEEDS[0], SEEDS[-1]]))
    for i, seed in enumerate((SEEDS[0], SEEDS[-1])):
        assert e.export(i) == scalar_view(Game(GameConfig(seed=seed)))


def test_result_is_json_ready() -> None:
    d = paired_evaluation("magpie", seeds=[1, 2]).to_dict()
    assert json.loads(json.dumps(d)) == d
    assert d["seeds"] == [1, 2] and len(d["per_seat"]) == 6 and d["against"] == ["factor",
                                                                                  "magpie"]


def test_student_t() -> None:
    assert [round(t_quantile(0.975, df), 3) for df in (1, 2, 4, 9, 30, 120)] == [
        12.706, 4.303, 2.776, 2.262, 2.042, 1.980]
    assert t_quantile(0.975, 10 ** 6) == pytest.approx(1.959966, abs=1e-6)
    mean, low, high = mean_interval(np.array([2.0, 4.0]))
    assert (mean, low, high) == pytest.approx((3.0, 3 - 12.7062047, 3 + 12.7062047))


@pytest.mark.parametrize(("kwargs", "field"), [
    ({"policy": "no_such_policy"}, "policy"),
    ({"baseline": "no_such_policy"}, "baseline"),
    ({"against": ()}, "against"),
    ({"against": ("factor", "no_such_policy")}, r"against\[1\]"),
    ({"seeds": range(5, 2)}, "seeds"),
    ({"seeds": [7]}, "seeds"),
    ({"seeds": [7, 7, 7, 7]}, "seeds: each seed once"),  # one game is no four samples
    ({"seeds": "abc"}, "seeds"),
    ({"seeds": [1, 2.5]}, "seeds"),
    ({"seeds": range(1_000_001)}, "seeds"),
    ({"seeds": [1, 2 ** 62]}, "seed"),
    ({"turns": 5}, "turns"),
    ({"turns": MAX_TURNS + 1}, "turns"),
    ({"turns": True}, "turns"),
])
def test_bad_arguments_name_the_field(kwargs: dict, field: str) -> None:
    args = {"policy": "magpie", "seeds": [1, 2], **kwargs}
    with pytest.raises(EvaluationError, match=f"^{field}"):
        paired_evaluation(args.pop("policy"), **args)
    assert issubclass(EvaluationError, ValueError)


def test_guild_evaluate_prints_the_figures_and_writes_json(tmp_path, capsys) -> None:
    out = tmp_path / "eval.json"
    assert main(["evaluate", "magpie", "--seeds", "100000..100009", "--json", str(out)]) == 0
    lines = capsys.readouterr().out.splitlines()
    r = paired_evaluation("magpie", seeds=range(100_000, 100_010))
    # The first line says what is measured, in the names given (and how a league differs).
    assert lines[0].startswith("evaluate: magpie in factor's place against factor, magpie, "
                               "paired on the same seeds and seats")
    assert "league" in lines[0]
    lines = lines[1:]
    assert lines[0].startswith("lineup: magpie in each seat in turn, the others factor, magpie")
    assert lines[1] == f"mean score magpie {r.mean:+.3f}, factor {r.baseline_mean:+.3f}"
    assert lines[2] == (f"paired difference {r.diff:+.3f} (95% interval [{r.low:+.3f}, "
                        f"{r.high:+.3f}]) over 60 games per side, seat-rotated")
    assert lines[3].startswith("per seat: 0 ") and lines[4].startswith("time ")
    saved = json.loads(out.read_text(encoding="utf-8"))
    assert saved.pop("world") is None  # the standard town
    assert {k: v for k, v in saved.items() if k != "seconds"} == {
        k: v for k, v in r.to_dict().items() if k != "seconds"}
    assert not list(tmp_path.glob("*.tmp"))


def test_guild_evaluate_falls_back_to_the_scalar_engine(capsys) -> None:
    assert main(["evaluate", "agents.baselines:Magpie", "--seeds", "1..2"]) == 0
    scalar = capsys.readouterr().out.splitlines()
    assert main(["evaluate", "magpie", "--seeds", "1..2"]) == 0
    batched = capsys.readouterr().out.splitlines()
    assert "(scalar engine" in scalar[-1] and "(batched engine" in batched[-1]
    assert [x.replace("agents.baselines:Magpie", "magpie") for x in scalar[:-1]] == batched[:-1]


@pytest.mark.parametrize("argv", [
    ["nosuch"],
    ["magpie", "--seeds", "5..2"],
    ["magpie", "--seeds", "abc"],
    ["magpie", "--seeds", "0..1000000"],
    ["magpie", "--seeds", "3..3"],
    ["magpie", "--turns", "3"],
    ["magpie", "--against", ""],
    ["magpie", "--against", "factor,,magpie"],
    ["magpie", "--baseline", "nosuch"],
    ["magpie", "--json", "/no/such/dir/x.json"],
    ["magpie", "--world", "/no/such/town.toml"],
])
def test_guild_evaluate_bad_input_is_one_line_and_exit_2(argv: list[str], capsys) -> None:
    assert main(["evaluate", *argv]) == 2
    err = capsys.readouterr()
    assert err.out == ""
    assert one_error_line(err.err).startswith("guild evaluate: error: ")


def test_guild_evaluate_plays_a_world_files_town(tmp_path, capsys) -> None:
    # guild evaluate --world: the town and its turns, as paired_evaluation(world=...) plays them
    from sim.rules.worldfile import load_world

    town = tmp_path / "town.toml"
    town.write_text("turns = 9\nstart_coin = 30\n", encoding="utf-8")
    out = tmp_path / "eval.json"
    assert main(["evaluate", "magpie", "--world", str(town), "--seeds", "0..4",
                 "--json", str(out)]) == 0
    lines = capsys.readouterr().out.splitlines()
    r = paired_evaluation("magpie", seeds=range(5), turns=9, world=load_world(town)[0])
    standard = paired_evaluation("magpie", seeds=range(5), turns=9)
    assert "seeds 0..4, 9 turns" in lines[1] and r.mean != standard.mean
    assert lines[2] == f"mean score magpie {r.mean:+.3f}, factor {r.baseline_mean:+.3f}"
    assert lines[-1] == f"town: the world file {town}, not the standard town"
    assert json.loads(out.read_text(encoding="utf-8"))["world"] == str(town)
    assert main(["evaluate", "magpie", "--world", str(town), "--seeds", "0..1",
                 "--turns", "7"]) == 0
    assert "seeds 0..1, 7 turns" in capsys.readouterr().out


def test_guild_evaluate_as_a_command() -> None:
    cmd = [sys.executable, "-m", "league", "evaluate", "factor", "--seeds", "0..1"]
    ok = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert ok.returncode == 0, ok.stderr
    assert ("paired difference +0.000 (95% interval [+0.000, +0.000]) over 12 games per side, "
            "seat-rotated") in ok.stdout
    bad = subprocess.run([*cmd[:-1], "2..1"], cwd=ROOT, capture_output=True, text=True,
                         timeout=120)
    assert bad.returncode == 2 and one_error_line(bad.stderr).startswith("guild evaluate:")


def test_a_policy_that_raises_is_one_line_naming_its_own_code(tmp_path, monkeypatch,
                                                               capsys) -> None:
    """An evaluation has no fallback: a policy's exception stops it, said where it was raised."""
    (tmp_path / "broken_policy.py").write_text(
        "class Broken:\n    def act(self, game, seat):\n        return {}['npc']\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert main(["evaluate", "broken_policy:Broken", "--seeds", "1..2"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert err.startswith("guild evaluate: error: a policy raised KeyError: 'npc' at ")
    assert f"{tmp_path / 'broken_policy.py'}:3 in act" in err


STATEFUL = '''
SEEN = []  # (class, object id, its episode, seat, its own turn count, the game's turn)


class Counter:
    """Counts its own turns since its reset, as a policy with memory does."""

    episode = -1

    def reset(self, seed):
        self.turns = 0
        self.episode += 1

    def act(self, game, seat):
        SEEN.append((type(self).__name__, id(self), self.episode, seat, self.turns, game.turn))
        self.turns += 1
        return "I wait and watch the road."


class Bot(Counter):
    pass


class bot(Counter):  # noqa: N801 - a class that differs from Bot in case alone
    pass
'''


def test_every_opponent_seat_gets_a_policy_object_of_its_own(tmp_path, monkeypatch) -> None:
    """As in a league, where every seat builds its own policy: one object in five seats had
    five resets a game and a turn count five times the game's."""
    (tmp_path / "stateful.py").write_text(STATEFUL)
    monkeypatch.syspath_prepend(str(tmp_path))
    import stateful

    r = paired_evaluation("factor", against=("stateful:Counter",), seeds=[1, 2], turns=6)
    assert r.engine == "scalar"
    assert [(own, turn) for *_, own, turn in stateful.SEEN] == [
        (turn, turn) for *_, turn in stateful.SEEN]
    seats_of: dict[tuple[int, int], set[int]] = {}
    for _, obj, episode, seat, _, _ in stateful.SEEN:
        seats_of.setdefault((obj, episode), set()).add(seat)
    assert all(len(seats) == 1 for seats in seats_of.values())
    assert len({obj for _, obj, *_ in stateful.SEEN}) == 10  # five seats, on each side


def test_module_specs_that_differ_in_case_alone_are_two_policies(tmp_path, monkeypatch) -> None:
    (tmp_path / "casey.py").write_text(STATEFUL)
    monkeypatch.syspath_prepend(str(tmp_path))
    import casey

    r = paired_evaluation("factor", against=("casey:Bot", "casey:bot"), seeds=[1, 2], turns=6)
    assert r.against == ("casey:Bot", "casey:bot")
    assert {name for name, *_ in casey.SEEN} == {"Bot", "bot"}
    # a registered name is one policy whatever its case
    assert (evaluation._lineup(["Magpie", "magpie"]) == evaluation._lineup(["magpie"])).all()


def test_evaluate_and_a_league_tell_policies_apart_alike() -> None:
    """One rule decides whether two specs are one policy (``Registry.key``): a registered prefix
    in any case, the rest as written."""
    from league.core.errors import LeagueError
    from league.core.lineups import parse_policies

    for same in (["Magpie", "magpie"], ["PPO:a.pt", "ppo:a.pt"]):
        assert evaluation._key(same[0]) == evaluation._key(same[1])
        with pytest.raises(LeagueError, match="one policy twice"):
            parse_policies(",".join(same))
    assert evaluation._key("casey:Bot") != evaluation._key("casey:bot")
    assert parse_policies("casey:Bot,casey:bot") == ["casey:Bot", "casey:bot"]
    # through the league's trusted: prefix too (trusted:FACTOR made a second ladder entry)
    for same in (["trusted:factor", "trusted:FACTOR"], ["TRUSTED:Magpie", "trusted:magpie"]):
        with pytest.raises(LeagueError, match="one policy twice"):
            parse_policies(",".join(["factor", *same]))
    assert parse_policies("trusted:casey:Bot,trusted:casey:bot") == ["trusted:casey:Bot",
                                                                      "trusted:casey:bot"]
