"""The batched engine against the scalar one: same seeds, same action indices, same states.

Differential (STYLE.md "Differential against a reference"): after every turn each episode's
state (``Game.snapshot()`` plus offers, hints, last reasons, log sizes, clock), every seat's
observation and mask (``encode_flat``/``legal_mask``) and the rewards equal the scalar engine's.
Actions are drawn to make the rare intents happen: seats start herded into one room (dark or
lit, with hirelings, goods and offers about), and the draw favours offers, accepts of live
offers, hires, gifts and robberies, plus any index of the table, legal or not.  The hypothesis
test plays 45 batches of 64 episodes (2,880 episodes, every turn compared); a variant town, the
batched baselines, the faces and the kernels' derived tables and cache have their own tests.
"""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agents import Factor, Magpie
from agents.batched import BatchedFactor, BatchedMagpie, BatchedRandom, sample_legal
from sim import Game, GameConfig
from sim.batched import jit
from sim.batched.engine import BatchedGuild
from sim.batched.observe import all_seats, encode, legal_masks
from sim.batched.setup import SEED_MAX, SEED_MIN, draw_towns
from sim.batched.tables import Tables
from sim.codec.action_table import OFFER_PRICES, action_table, legal_mask, semantic, to_intent
from sim.codec.encode import encode_flat
from sim.envs.vector import GuildSelfPlay, GuildVectorEnv
from sim.rules.checks import check_structured
from sim.rules.intents import REASONS
from sim.rules.scoring import score
from sim.rules.setup import draw_town
from sim.rules.world import SEATS, STANDARD_TOWN, World
from sim.rules.worldfile import world_from_dict

W = STANDARD_TOWN
TABLE = action_table(W)
N_ACTIONS = len(TABLE)
T = Tables(W)
BLOCK = {b: [i for i, a in enumerate(TABLE) if a.block == b] for b in
         ("offer", "hire", "accept", "rob", "gift", "pay", "move", "buy", "sell", "deliver")}


def scalar_view(game: Game) -> dict:
    """The scalar state in the terms of ``BatchedGuild.export``."""
    st_ = game.state
    return {"snapshot": game.snapshot(), "offers": [o.to_json() for o in st_.offers],
            "hint": list(st_.hint), "last_reason": list(st_.last_reason),
            "room_log": [len(x) for x in st_.room_log],
            "heard": [len(x) for x in st_.heard_log], "turns_played": st_.turns_played,
            "done": st_.done, "quest_item": [list(q) for q in st_.quest_item]}


def herded_game(rng: np.random.Generator, turns: int, thievery: bool, turn: int,
                world: World = W) -> Game:
    """A seeded game restored into a crowded state at ``turn``: seats in one or two rooms."""
    seed = int(rng.integers(0, 2 ** 31 - 1))
    game = Game(GameConfig(seed=seed, turns=turns, thievery=thievery, world=world))
    snap = game.snapshot()
    rooms = rng.choice([5, 6, 5, 6, rng.integers(9)], size=2)
    for s, cog in enumerate(snap["cogs"]):
        cog["room"] = int(rooms[0] if rng.random() < 0.75 else rooms[1])
        cog["coin"] = int(rng.choice([0, 1, 3, 9, 40, 60]))
        pack = np.zeros(6, int)
        for _ in range(int(rng.integers(0, world.carry_limit + 1))):
            pack[rng.integers(6)] += 1
        cog["items"] = pack.tolist()
        cog["delivered"] = [int(rng.integers(0, 3)) for _ in range(2)]
        if rng.random() < 0.3:
            cog["retainerOf"] = int((s + rng.integers(1, 6)) % 6)
            cog["retainerTurns"] = int(rng.integers(1, 4))
    for npc in snap["npcs"]:
        npc["stock"] = [int(x) for x in rng.integers(0, 13, size=6)]
        npc["coin"] = int(rng.choice([0, 2, 5, 30, 120]))
    snap["rooms"] = [[int(x) for x in rng.integers(0, 3, size=6)] for _ in range(9)]
    snap["turn"] = turn
    game.restore(snap)
    return game


def biased_actions(rng: np.random.Generator, game: Game) -> list[int]:
    """One index per seat, favouring the intents that need company and live offers."""
    st_ = game.state
    out = []
    for seat in range(SEATS):
        u = rng.random()
        live = [(o.sender - seat) % SEATS for o in st_.offers
                if o.to == seat and o.posted_turn == st_.turn - 1]
        if u < 0.25:
            legal = np.flatnonzero(legal_mask(st_, seat))
            out.append(int(rng.choice(legal)))
        elif u < 0.35:
            out.append(int(rng.integers(N_ACTIONS)))
        elif u < 0.50 and live:
            out.append(BLOCK["accept"][int(rng.choice(live)) - 1])
        elif u < 0.85:
            block = rng.choice(["offer", "hire", "rob", "gift", "pay", "accept", "buy", "sell",
                                "deliver"])
            out.append(int(rng.choice(BLOCK[str(block)])))
        else:
            target = int(rng.choice([5, 6, 8]))
            step = st_.world.step_toward(st_.room[seat], target)
            out.append(BLOCK["move"][step] if step >= 0 else 0)
    return out


def play_both(games: list[Game], rng: np.random.Generator, check_obs: bool = True) -> int:
    """Step the scalar games and a batched twin with the same actions; compare every turn."""
    turns = games[0].state.turns
    e = BatchedGuild(len(games), turns=turns, thievery=games[0].state.thievery,
                     world=games[0].world)
    e.load_games(games)
    r, s = all_seats(len(games))
    compared = 0
    while True:
        views = [scalar_view(g) for g in games]
        masks = [[legal_mask(g.state, seat) for seat in range(SEATS)] for g in games]
        flats = [[encode_flat(g.state, seat, masks[i][seat]) for seat in range(SEATS)]
                 for i, g in enumerate(games)]
        for i in range(len(games)):
            assert e.export(i) == views[i], f"episode {i} turn {e.turn[i]}"
        if check_obs:
            obs = encode(e, r, s).reshape(len(games), SEATS, -1)
            got = legal_masks(e, r, s).reshape(len(games), SEATS, -1)
            for i in range(len(games)):
                for seat in range(SEATS):
                    assert got[i, seat].tolist() == masks[i][seat]
                    np.testing.assert_array_equal(obs[i, seat], flats[i][seat])
        if games[0].done:
            return compared
        acts = np.array([biased_actions(rng, g) for g in games], np.int64)
        before = [[score(g.state, seat) for seat in range(SEATS)] for g in games]
        rewards, done = e.step(acts, autoreset=False)
        for i, g in enumerate(games):
            g.play_turn([to_intent(int(acts[i, seat]), g.world, seat, g.state.room[seat])
                         for seat in range(SEATS)])
            after = [score(g.state, seat) for seat in range(SEATS)]
            assert rewards[i].tolist() == [a - b for a, b in zip(after, before[i])]
            assert bool(done[i]) == g.done
        compared += len(games)


@settings(max_examples=45, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2 ** 32 - 1), turns=st.sampled_from([6, 8, 14]),
       thievery=st.booleans(), herded=st.floats(0, 1))
def test_batched_equals_scalar_turn_by_turn(seed: int, turns: int, thievery: bool,
                                            herded: float) -> None:
    rng = np.random.default_rng(seed)
    # One start turn per batch (a batch steps in lockstep); restored states start mid-episode.
    turn = int(rng.choice([0, 0, rng.integers(0, turns - 1)]))
    games = []
    for _ in range(64):
        if rng.random() < herded:
            games.append(herded_game(rng, turns, thievery, turn))
        else:
            game = Game(GameConfig(seed=int(rng.integers(-2 ** 40, 2 ** 40)), turns=turns,
                                   thievery=thievery))
            if turn:
                game.restore({**game.snapshot(), "turn": turn})
            games.append(game)
    play_both(games, rng, check_obs=True)


VARIANT, _ = world_from_dict({
    "start_coin": 30, "keeper_start_coin": 25, "carry_limit": 5,
    "quest_items": ["hide", "rope", "salt"], "guild": "Keeper Nesh",
    "rooms": {"Market Square": {"dark": True}, "The Chapel": {"exits": [0, 6, 8, 4]},
              "Warehouse Yard": {"exits": [3, 5, 7]}},
    "goods": {"relic": {"value": 5}, "hide": {"value": 12}},
    "keepers": {"Smith Bram": {"trade": ["rope"], "opening": [12]},
                "Tanner Oda": {"trade": ["hide", "salt", "lamp"], "opening": [0, 1, 2]}},
})


@pytest.mark.parametrize("seed", [0, 1])
def test_batched_equals_scalar_in_a_variant_town(seed: int) -> None:
    """Other exits, darkness, prices, purses, pack size, trade lists and guild keeper."""
    rng = np.random.default_rng(seed)
    games = [herded_game(rng, 8, True, 0, VARIANT) if k % 2 else
             Game(GameConfig(seed=k, turns=8, world=VARIANT)) for k in range(48)]
    play_both(games, rng)


def test_setup_is_seed_compatible() -> None:
    seeds = np.array(list(range(-300, 300)) + [SEED_MIN, SEED_MAX, 2 ** 40, -(2 ** 40)])
    rooms, quests, floor = draw_towns(seeds)
    for i, seed in enumerate(seeds.tolist()):
        a, b, c = draw_town(seed, W)
        assert (rooms[i].tolist(), quests[i].tolist(), floor[i].tolist()) == (a, b, c)
    with pytest.raises(ValueError, match="out of range"):
        draw_towns(np.array([SEED_MAX + 1]))


def test_reset_equals_fresh_games() -> None:
    seeds = np.arange(40) * 7919 - 100
    e = BatchedGuild(len(seeds))
    e.reset(seeds)
    for i, seed in enumerate(seeds.tolist()):
        assert e.export(i) == scalar_view(Game(GameConfig(seed=seed)))


def test_autoreset_is_same_step() -> None:
    e = BatchedGuild(5, turns=6, seed=3)
    first = e.seed.copy()
    for t in range(6):
        rewards, done = e.step(np.zeros((5, SEATS), np.int64))
        assert done.all() == (t == 5)
    assert (e.turn == 0).all() and not e.done.any()
    assert not np.array_equal(e.seed, first)
    for i in range(5):
        assert e.export(i) == scalar_view(Game(GameConfig(seed=int(e.seed[i]), turns=6)))


def test_bad_actions_raise() -> None:
    e = BatchedGuild(2)
    with pytest.raises(ValueError, match="between 0 and"):
        e.step(np.full((2, SEATS), N_ACTIONS))
    with pytest.raises(ValueError, match="shape"):
        e.step(np.zeros((3, SEATS), np.int64))



def _effect(it, game: Game, seat: int) -> tuple:
    """An intent's slots with quantities cut to what they can move (``all`` == held)."""
    sem = list(semantic(it))
    at = {"sell": 2, "drop": 2, "give": 4}.get(it.kind)
    if at is not None and (it.kind != "give" or it.npc >= 0):
        sem[at] = min(it.qty, game.state.items[seat][it.item])
    return tuple(sem)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_batched_baselines_choose_the_scalar_sentence(seed: int) -> None:
    """Batched factor/magpie pick the index meaning the scalar baseline's sentence (module
    docstring of ``agents.batched`` lists the two snapped amounts)."""
    rng = np.random.default_rng(seed)
    lineups = [["factor", "magpie"] * 3, ["magpie"] * 6, ["factor"] * 3 + ["random"] * 3]
    scalar = {"factor": Factor(), "magpie": Magpie()}
    batched = {"factor": BatchedFactor(), "magpie": BatchedMagpie()}
    prices = {g: min(OFFER_PRICES, key=lambda p: (abs(p - W.values[g] - 2), -p))
              for g in range(6)}
    checked = snapped = 0
    for k in range(36):
        game = herded_game(rng, 14, True, 0) if k % 2 else Game(GameConfig(seed=k + 100 * seed))
        lineup = lineups[k % 3]
        e = BatchedGuild(1)
        while not game.done:
            e.load_games([game])
            sentences = []
            for seat in range(SEATS):
                for name in ("factor", "magpie"):
                    sentence = scalar[name].act(game, seat)
                    want = _effect(game.intent_for(sentence, seat)[0], game, seat)
                    index = int(batched[name].act(e, np.array([0]), np.array([seat]))[0])
                    it = check_structured(to_intent(index, W, seat, game.state.room[seat]), W,
                                          seat, game.state.room[seat], game.state.offers,
                                          game.state.turn)
                    got = _effect(it, game, seat)
                    checked += 1
                    if got != want:
                        snapped += 1
                        if want[0] == "trade":  # hawking price snapped to the table
                            assert got == (*want[:-1], prices[want[2]]), (sentence, got)
                        else:  # factor hands in 1 of 2 needed units when holding more
                            assert want[:4] == got[:4] and (want[4], got[4]) == (2, 1), \
                                (sentence, got)
                            assert game.state.items[seat][want[3]] > 2
                    if name == lineup[seat]:
                        sentences.append(sentence)
                if lineup[seat] == "random":
                    legal = np.flatnonzero(legal_mask(game.state, seat))
                    sentences.append(to_intent(int(rng.choice(legal)), W, seat,
                                               game.state.room[seat]))
            game.play_turn(sentences)
    assert checked > 3000 and snapped < checked // 20


class _Waiter:
    """A batched opponent that always waits (the same act in both engines)."""

    batched = True

    def act(self, e: BatchedGuild, r: np.ndarray, s: np.ndarray) -> np.ndarray:
        return np.zeros(r.size, np.int64)


@pytest.mark.parametrize("reward", ["dense", "terminal"])
def test_vector_env_equals_scalar_games(reward: str) -> None:
    """GuildVectorEnv rows are scalar games: same obs, rewards, ends and next episodes."""
    n, turns = 12, 6
    env = GuildVectorEnv(n, opponents=[_Waiter()] * 5, turns=turns, flatten=True,
                         reward=reward)
    obs, info = env.reset(seed=5)
    rng = np.random.default_rng(5)
    games = [Game(GameConfig(seed=int(x), turns=turns)) for x in info["game_seed"]]
    seats = info["seat"].tolist()
    assert len(set(seats)) > 1
    episodes = 0
    for _ in range(2 * turns):
        for i, g in enumerate(games):
            np.testing.assert_array_equal(obs[i], encode_flat(g.state, seats[i]))
            assert info["action_mask"][i].tolist() == legal_mask(g.state, seats[i])
        acts = np.array([biased_actions(rng, g)[seats[i]] for i, g in enumerate(games)])
        obs, rewards, term, trunc, info = env.step(acts)
        assert not trunc.any()
        for i, g in enumerate(games):
            before = score(g.state, seats[i])
            joint = [to_intent(0, W, s, g.state.room[s]) for s in range(SEATS)]
            joint[seats[i]] = to_intent(int(acts[i]), W, seats[i], g.state.room[seats[i]])
            g.play_turn(joint)
            after = score(g.state, seats[i])
            assert rewards[i] == (after - before if reward == "dense" else
                                  (after if g.done else 0.0))
            assert bool(term[i]) == g.done
            if g.done:
                episodes += 1
                assert info["_final_obs"][i]
                np.testing.assert_array_equal(info["final_obs"][i],
                                              encode_flat(g.state, seats[i]))
                assert info["final_info"]["score"][i] == after
                games[i] = Game(GameConfig(seed=int(info["game_seed"][i]), turns=turns))
                seats[i] = int(info["seat"][i])
    assert episodes == 2 * n


def test_make_vec_with_vector_entry_point() -> None:
    gymnasium.register(id="guild/GuildBatchedTest-v0", entry_point="sim.envs.gym:GuildEnv",
                       vector_entry_point="sim.envs.vector:GuildVectorEnv")
    try:
        env = gymnasium.make_vec("guild/GuildBatchedTest-v0", num_envs=4,
                                 vectorization_mode="vector_entry_point", seat=1)
        assert env.metadata["autoreset_mode"] == AutoresetMode.SAME_STEP
        obs, info = env.reset(seed=0)
        assert obs in env.observation_space
        assert env.single_action_space.n == N_ACTIONS
        for _ in range(15):
            obs, r, term, trunc, info = env.step(env.unwrapped.action_masks().argmax(1))
            assert obs in env.observation_space and r.dtype == np.float64
        assert (info["seat"] == 1).all()
        with pytest.raises(ValueError, match="batched"):
            GuildVectorEnv(2, opponents=[Factor()] * 5)
    finally:
        del gymnasium.registry["guild/GuildBatchedTest-v0"]


def test_self_play_rows_are_seats() -> None:
    n, turns = 3, 6
    sp = GuildSelfPlay(n, turns=turns, seed=2)
    obs, _ = sp.reset()
    assert obs.shape == (n * SEATS, sp.single_observation_space.shape[0])
    rng = np.random.default_rng(2)
    games = [Game(GameConfig(seed=int(x), turns=turns)) for x in sp.engine.seed]
    for _ in range(turns):
        for i, g in enumerate(games):
            for seat in range(SEATS):
                np.testing.assert_array_equal(obs[SEATS * i + seat], encode_flat(g.state, seat))
        assert (sp.masks == (obs[:, -N_ACTIONS:] > 0)).all()
        acts = sample_legal(rng, sp.masks)
        obs, rewards, term, trunc, infos = sp.step(acts)
        for i, g in enumerate(games):
            before = [score(g.state, s) for s in range(SEATS)]
            g.play_turn([to_intent(int(acts[SEATS * i + s]), W, s, g.state.room[s])
                         for s in range(SEATS)])
            expect = [score(g.state, s) - before[s] for s in range(SEATS)]
            np.testing.assert_allclose(rewards[SEATS * i:SEATS * (i + 1)], expect, rtol=1e-6)
            assert term[SEATS * i] == g.done
            if g.done:
                np.testing.assert_array_equal(infos["final_obs"][SEATS * i],
                                              encode_flat(g.state, 0))
    assert term.all() and (sp.engine.turn == 0).all()
    fresh = [Game(GameConfig(seed=int(x), turns=turns)) for x in sp.engine.seed]
    np.testing.assert_array_equal(obs[SEATS], encode_flat(fresh[1].state, 0))


def test_batched_random_plays_legal_actions() -> None:
    e = BatchedGuild(64, seed=1)
    r, s = all_seats(64)
    policy = BatchedRandom(3)
    for _ in range(14):
        acts = policy.act(e, r, s)
        assert legal_masks(e, r, s)[np.arange(r.size), acts].all()
        e.step(acts.reshape(64, SEATS))


def test_vector_env_seeds_like_the_sync_vector_env() -> None:
    """Same seed, same towns and learning seats as ``make_vec(..., "sync")`` of GuildEnv, for
    the first episode and the ones autoreset after it (the trajectories in between may differ
    where the batched baselines snap an amount)."""
    n, turns = 24, 6
    sync = gymnasium.make_vec("guild/Guild-v0", num_envs=n, vectorization_mode="sync",
                              vector_kwargs={"autoreset_mode": AutoresetMode.SAME_STEP},
                              flatten=True, turns=turns)
    env = GuildVectorEnv(n, flatten=True, turns=turns)
    for seed in (0, 11):
        o1, i1 = sync.reset(seed=seed)
        o2, i2 = env.reset(seed=seed)
        for _ in range(2):
            np.testing.assert_array_equal(o1, o2)
            assert (i1["seat"] == i2["seat"]).all() and len(set(i2["seat"].tolist())) > 1
            for _ in range(turns):
                a = np.zeros(n, np.int64)
                o1, _, t1, _, i1 = sync.step(a)
                o2, _, t2, _, i2 = env.step(a)
            assert t1.all() and t2.all()


def test_tables_are_the_rules_checks_and_classes() -> None:
    """Every action's checked kind in every room, and every kind's class, come from the rules:
    ``check_structured`` and ``class_of`` of the action's intent, for any acting seat."""
    from sim.batched.tables import RULES_KIND
    from sim.rules.turn import class_of

    for seat in range(SEATS):
        for i in range(N_ACTIONS):
            for room in range(W.n_rooms):
                it = check_structured(to_intent(i, W, seat, room), W, seat, room, (), 0)
                kind = int(T.checked_kind[i, room])
                assert RULES_KIND[kind] == it.kind, (i, room)
                assert T.kind_class[kind] == class_of(it), (i, room)
                reason = int(T.checked_reason[i, room])
                assert (REASONS[reason] if reason >= 0 else "ok") == it.reason


def test_kernel_cache_is_named_by_every_source(tmp_path, monkeypatch) -> None:
    """Editing a rule the kernels call (not only a kernel file) names a new cache directory:
    numba alone would keep serving the old compiled rule."""
    for rel in jit.SOURCES:
        dest = tmp_path / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes((jit._PACKAGE / rel).read_bytes())
    monkeypatch.setattr(jit, "_PACKAGE", tmp_path)
    before = jit.fingerprint()
    rule = tmp_path / "rules" / "robbery.py"
    rule.write_text(rule.read_text().replace("return attack > defence",
                                             "return attack >= defence"))
    assert jit.fingerprint() != before
    assert {"rules/robbery.py", "rules/prices.py", "rules/commissions.py",
            "rules/scoring.py"} <= set(jit.SOURCES)


def test_engines_step_safely_in_threads() -> None:
    """The kernels release the GIL and each engine has its own work arrays: two engines
    stepped in two threads end exactly as when stepped one after the other."""
    import threading

    rng = np.random.default_rng(9)
    acts = rng.integers(0, N_ACTIONS, size=(14, 256, SEATS))

    def run(e: BatchedGuild) -> None:
        for a in acts:
            e.step(a, autoreset=False)
            e.observe()

    alone = BatchedGuild(256, seed=4)
    run(alone)
    pair = [BatchedGuild(256, seed=4), BatchedGuild(256, seed=4)]
    assert pair[0].scratch.features is not pair[1].scratch.features
    threads = [threading.Thread(target=run, args=(e,)) for e in pair]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for e in pair:
        for name in ("room", "coin", "items", "stock", "delivered", "points", "last_reason"):
            np.testing.assert_array_equal(getattr(e, name), getattr(alone, name))
        np.testing.assert_array_equal(e.observe(), alone.observe())


def test_observe_and_masks_have_seat_axes() -> None:
    e = BatchedGuild(5, seed=4)
    e.step(np.full((5, SEATS), BLOCK["move"][0]))
    obs, masks = e.observe(), e.masks()
    assert obs.shape[:2] == (5, SEATS) and masks.shape == (5, SEATS, N_ACTIONS)
    game = Game(GameConfig(seed=int(e.seed[3])))
    game.play_turn([to_intent(BLOCK["move"][0], W, s, game.state.room[s]) for s in range(6)])
    for seat in range(SEATS):
        np.testing.assert_array_equal(obs[3, seat], encode_flat(game.state, seat))
        assert masks[3, seat].tolist() == legal_mask(game.state, seat)
