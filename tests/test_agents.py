"""The agents package: the original baselines byte for byte, their behaviour over whole
episodes (RULES §18, §21), the random policy, and building policies from specs."""

from __future__ import annotations

import pytest
from golden import episode, episode_params
from hypothesis import given, settings
from hypothesis import strategies as st

from agents import (
    Factor,
    Magpie,
    Policy,
    RandomPolicy,
    SeatView,
    legal_intents,
    make_policy,
    play_episode,
)
from sim import Game, GameConfig, Intent, parse_sentence

BASELINES = {"factor": Factor, "magpie": Magpie}
F, M = "factor", "magpie"
TABLES = {
    "all-factor": [F] * 6,
    "all-magpie": [M] * 6,
    "mixed": [F, M, F, M, F, M],
    "mixed-2": [M, M, F, F, M, F],
}


def _golden_game(setup: dict) -> Game:
    cfg = GameConfig(seed=setup["seed"], turns=setup["turns"],
                     speech=setup["config"]["speech"], thievery=setup["config"]["thievery"])
    game = Game(cfg)
    if setup["overrides"]:
        game.restore(setup["initial"])
    return game


# --- the golden sentences ------------------------------------------------------------------

@pytest.mark.parametrize("episode_id", episode_params(
    lambda setup: bool(set(setup["policies"]) & set(BASELINES)), "with a factor or magpie seat"))
def test_baselines_write_the_golden_sentences(episode_id: int | None) -> None:
    """Every factor/magpie seat of the recording: same start-of-turn state, same sentence."""
    ep = episode(episode_id)
    setup = ep["setup"]
    policies = {name: cls() for name, cls in BASELINES.items()}
    game = _golden_game(setup)
    checked, wrong = 0, []
    for line in ep["turns"]:
        seats = line["seats"]
        for s in seats:
            if s["policy"] in policies:
                before = game.snapshot()
                got = policies[s["policy"]].act(game, s["seat"])
                assert game.snapshot() == before, "a policy changed the game"
                checked += 1
                if got != s["input"]["sentence"]:
                    wrong.append((line["turn"], s["seat"], s["policy"], got,
                                  s["input"]["sentence"]))
        game.play_turn([s["input"]["sentence"] for s in seats],
                       says=[s["input"]["say"] for s in seats],
                       notes=[s["input"]["notes"] for s in seats],
                       scripted=[s["scripted"] for s in seats])
    assert checked > 0
    assert not wrong, "(turn, seat, policy, ours, original): " + repr(wrong[:5])


# --- whole episodes ------------------------------------------------------------------------

@pytest.mark.parametrize("thievery", [True, False])
@pytest.mark.parametrize("table", sorted(TABLES))
@pytest.mark.parametrize("seed", [1, 7, 11, 42])
def test_no_baseline_sentence_is_unreadable(seed: int, table: str, thievery: bool) -> None:
    names = TABLES[table]
    game = play_episode(GameConfig(seed=seed, thievery=thievery), names)
    acts = [e for e in game.events if e["kind"] == "act"]
    assert len(acts) == 6 * 14
    for e in acts:
        assert e["intent"] != "none", e
        assert e["scripted"] is True


def test_baseline_sentences_parse_against_their_own_state() -> None:
    """Each baseline sentence parses to an intent against the state it was written for."""
    game = Game(GameConfig(seed=3))
    seats = [Factor(), Magpie(), Factor(), Magpie(), Factor(), Magpie()]
    while not game.done:
        sentences = [p.act(game, s) for s, p in enumerate(seats)]
        for s, text in enumerate(sentences):
            assert parse_sentence(text, game, s).kind != "none", text
        game.play_turn(sentences, scripted=[True] * 6)


@pytest.mark.parametrize("seed", [0, 1, 7, 11, 42, 1234])
def test_every_factor_delivers_all_four_units(seed: int) -> None:
    res = play_episode(GameConfig(seed=seed, turns=14), [F] * 6).results()
    assert res["delivered"] == [4] * 6
    assert res["questPoints"] == [32] * 6


@pytest.mark.parametrize("seed", [1, 7, 11, 42])
def test_factor_table_beats_magpie_table(seed: int) -> None:
    factor = play_episode(GameConfig(seed=seed), [F] * 6).results()["scores"]
    magpie = play_episode(GameConfig(seed=seed), [M] * 6).results()["scores"]
    assert sum(factor) / 6 > sum(magpie) / 6


def test_certification_fixture() -> None:
    """Seed 11, 8 turns, [factor x3, magpie, factor x2]: 59 events, a theft, seat 2 wins 69/40."""
    game = play_episode(GameConfig(seed=11, turns=8), [F, F, F, M, F, F])
    assert len(game.events) == 59
    thefts = [e for e in game.events
              if e["kind"] == "act" and e["intent"] == "rob" and e["reason"] == "ok"]
    assert thefts and all(e["seat"] == 3 for e in thefts)
    res = game.results()
    best = max(res["scores"])
    assert res["scores"].index(best) == 2
    assert best == 69 / 40
    assert sorted(res["scores"])[-2] < best


@pytest.mark.parametrize("seed", [1, 7, 11, 42])
def test_honest_town_magpie_never_robs(seed: int) -> None:
    for names in ([M] * 6, [F, M, F, M, F, M]):
        game = play_episode(GameConfig(seed=seed, thievery=False), names)
        assert not [e for e in game.events if e["kind"] == "act" and e["intent"] == "rob"]
        res = game.results()
        assert res["robberies"] == [0] * 6 and res["robbed"] == [0] * 6


def test_play_episode_marks_baselines_scripted_and_restores() -> None:
    game = play_episode(GameConfig(seed=5, turns=6), [F, M, RandomPolicy(1), F, M, F])
    acts = [e for e in game.events if e["kind"] == "act"]
    assert {e["seat"] for e in acts if e["scripted"]} == {0, 1, 3, 4, 5}
    assert game.done and game.results()["turns"] == 6
    start = Game(GameConfig(seed=5, turns=6)).snapshot()
    start["cogs"][0]["coin"] = 3
    seen: list[int] = []
    game = play_episode(GameConfig(seed=5, turns=6), [F] * 6, initial=start,
                        on_turn=lambda g, a: seen.append(g.turn))
    assert seen == [1, 2, 3, 4, 5, 6]
    assert game.events[1]["cogs"][0]["coin"] == 3
    with pytest.raises(ValueError, match="exactly 6"):
        play_episode(GameConfig(), [F] * 5)


# --- thresholds ----------------------------------------------------------------------------

def test_thresholds_default_to_the_shipped_values() -> None:
    f, m = Factor(), Magpie()
    assert (f.sell_margin, f.pickup_value) == (0, 8)
    assert (m.hawk_period, m.sell_margin, m.buy_margin) == (3, 1, -1)
    with pytest.raises(ValueError):
        Factor(sell_margin="1")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        Magpie(hawk_period=-1)


def test_thresholds_change_behaviour() -> None:
    never = play_episode(GameConfig(seed=2), [Magpie(hawk_period=0)] * 6)
    assert not [e for e in never.events if e["kind"] == "act" and e["intent"] == "trade"]
    hawk = play_episode(GameConfig(seed=2), [Magpie(hawk_period=1)] * 6)
    assert [e for e in hawk.events if e["kind"] == "act" and e["intent"] == "trade"]
    # a factor in Market Square beside a lamp picks it up at pickup value 8, not at 12
    game = Game(GameConfig(seed=0))
    snap = game.snapshot()
    snap["cogs"][0]["room"] = 0
    snap["rooms"][0] = [0, 0, 0, 0, 1, 0]
    game.restore(snap)
    assert Factor().act(game, 0) == "I pick up the lamp."
    assert Factor(pickup_value=12).act(game, 0).startswith("I walk to ")
    # a spare lamp sells at a bid of 10 only when the margin allows (base 11)
    snap["cogs"][0]["room"] = 1
    snap["cogs"][0]["items"] = [0, 0, 0, 0, 1, 0]
    snap["npcs"][2]["stock"][4] = 1
    game.restore(snap)
    assert Factor(sell_margin=-1).act(game, 0) == "I sell 1 lamp to Keeper Nesh."
    assert not Factor().act(game, 0).startswith("I sell")


# --- the random policy ---------------------------------------------------------------------

def _random_events(seed: int, policy_seed: int) -> list[dict]:
    pols = [RandomPolicy(policy_seed + k) for k in range(6)]
    return play_episode(GameConfig(seed=seed, turns=10), pols).events


def test_random_policy_is_reproducible() -> None:
    assert _random_events(4, 100) == _random_events(4, 100)
    assert _random_events(4, 100) != _random_events(4, 200)
    p = RandomPolicy(9)
    game = Game(GameConfig(seed=1))
    first = [p.act(game, s) for s in range(6)]
    p.reset()
    assert [p.act(game, s) for s in range(6)] == first


@settings(max_examples=100, deadline=None)
@given(seed=st.integers(0, 10_000), policy_seed=st.integers(0, 10_000),
       thievery=st.booleans(), speech=st.booleans())
def test_random_actions_never_raise(seed: int, policy_seed: int, thievery: bool,
                                    speech: bool) -> None:
    pols: list[Policy] = [RandomPolicy(policy_seed + k) for k in range(4)] + [Factor(), Magpie()]
    game = play_episode(GameConfig(seed=seed, turns=8, thievery=thievery, speech=speech), pols)
    acts = [e for e in game.events if e["kind"] == "act"]
    assert len(acts) == 48
    assert all(e["intent"] != "none" for e in acts), "a legal intent failed its checks"


def test_legal_intents_cover_the_seat_options() -> None:
    game = Game(GameConfig(seed=0))
    for seat in range(6):
        view = SeatView(game, seat)
        kinds = [it.kind for it in legal_intents(game, seat)]
        assert kinds.count("move") == len(game.world.rooms[view.room].exits)
        assert "wait" in kinds and "say" in kinds
        assert ("quest" in kinds) == (view.keeper >= 0)
        assert all(isinstance(it, Intent) for it in legal_intents(game, seat))


# --- building policies ---------------------------------------------------------------------

def test_make_policy_builds_the_builtins_and_module_specs() -> None:
    assert isinstance(make_policy("factor"), Factor)
    assert isinstance(make_policy("Magpie"), Magpie)
    assert isinstance(make_policy("random", seed=3), RandomPolicy)
    assert make_policy("factor", sell_margin=2).sell_margin == 2
    assert make_policy("agents:Factor", pickup_value=9).pickup_value == 9
    assert make_policy("agents.baselines:Magpie", hawk_period=4).hawk_period == 4
    assert make_policy({"name": "magpie", "buy_margin": -2}).buy_margin == -2
    assert isinstance(make_policy(Factor), Factor)
    p = Factor()
    assert make_policy(p) is p
    assert isinstance(p, Policy)


@pytest.mark.parametrize("spec, params, match", [
    ("grifter", {},
     r"unknown policy 'grifter'; known: champion, exec, factor, llm, magpie, ppo, random, sb3"),
    ("", {}, "unknown policy"),
    ("no.such.module:Thing", {}, "cannot import module 'no.such.module'"),
    ("agents:Nobody", {}, "has no 'Nobody'"),
    ("agents:", {}, "module.path:Name"),
    ("factor", {"margin": 1}, "bad parameters"),
    ("sim:KINDS", {}, "neither a policy nor"),
    ("agents:SeatView", {}, "bad parameters"),
    (42, {}, "unknown policy 42"),
    ({"seed": 1}, {}, "'name' key"),
])
def test_make_policy_errors(spec: object, params: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        make_policy(spec, **params)  # type: ignore[arg-type]


def test_make_policy_refuses_params_for_an_object() -> None:
    with pytest.raises(ValueError, match="parameters"):
        make_policy(Factor(), sell_margin=1)


def test_random_seats_of_one_policy_draw_independent_streams() -> None:
    """Six seats in one room with the same (empty) packs have equally long legal lists; equal
    streams would make all six pick the same position, per-seat streams do not."""
    from scenario import staged

    from agents.baselines.random_policy import legal_intents

    game = staged(everyone=0)
    sizes = {len(legal_intents(game, s)) for s in range(6)}
    assert len(sizes) == 1
    # A league builds one fresh RandomPolicy(0) per seat and resets each with the episode seed.
    policies = [RandomPolicy(0) for _ in range(6)]
    for p in policies:
        p.reset(42)
    picks = [legal_intents(game, s).index(p.act(game, s)) for s, p in enumerate(policies)]
    assert len(set(picks)) > 1


@pytest.mark.parametrize("args, kwargs, words", [
    (({"seed": 1}, ["factor"] * 6), {}, "config must be a GameConfig"),
    ((None, None), {}, "config must be a GameConfig"),
    ((GameConfig(seed=1), None), {}, "needs exactly 6 policies"),
    ((GameConfig(seed=1), ["factor"] * 6), {"on_turn": 5}, "on_turn must be callable"),
])
def test_play_episode_names_a_bad_argument_before_any_turn(args, kwargs, words) -> None:
    """A dict config raised AttributeError, None policies TypeError, and on_turn=5 a TypeError
    after a turn had been played."""
    with pytest.raises(ValueError, match=words):
        play_episode(*args, **kwargs)


def test_a_spec_mapping_whose_name_is_a_mapping_is_refused_in_one_step() -> None:
    """A chain of 5,000 {"name": {"name": ...}} raised RecursionError."""
    spec: dict = {"name": "factor"}
    for _ in range(5000):
        spec = {"name": spec}
    with pytest.raises(ValueError, match="not another mapping"):
        make_policy(spec)
    assert make_policy({"name": "factor"}).name == "factor"
