"""The scalar workloads of ``python -m bench``, in a module that imports only what every
version of the engine has had (``Game``, ``GameConfig``, ``Intent``, ``agents.play_episode``,
``parallel_env``, ``guild/Guild-v0`` and the parser): ``python -m bench.compare`` loads this
file into a process that imports another checkout's ``sim``, so that both checkouts run the
very same drivers.  Each ``bench_*`` function returns its figure (units per second).
"""

from __future__ import annotations

import importlib.util
import random
import time
from collections.abc import Callable, Sequence

from sim import Game, GameConfig, Intent

TURNS = 14
SEAT_STEPS = 6 * TURNS


def random_legal_intents(game: Game, rng: random.Random) -> list[Intent]:
    """One random, usually legal, structured intent per seat, drawn from the seat's room.

    Reads the state directly: this is a load generator for the engine, not a policy.
    """
    st = game.state
    w = game.world
    out = []
    for seat in range(6):
        here = st.room[seat]
        roll = rng.random()
        keeper = w.keeper_in_room[here]
        if roll < 0.35:
            out.append(Intent("move", to_room=rng.choice(w.rooms[here].exits)))
        elif roll < 0.55 and keeper >= 0:
            good = rng.choice(w.keepers[keeper].trade)
            kind = "sell" if st.items[seat][good] and rng.random() < 0.5 else "buy"
            out.append(Intent(kind, item=good, qty=rng.randint(1, 3), npc=keeper))
        elif roll < 0.62 and keeper == w.guild:
            good = st.quest_item[seat][rng.randint(0, 1)]
            out.append(Intent("give", item=good, qty=2, npc=keeper))
        elif roll < 0.70 and any(st.floor[here]):
            good = next(g for g, n in enumerate(st.floor[here]) if n)
            out.append(Intent("take", item=good))
        elif roll < 0.85:
            others = [s for s in range(6) if s != seat and st.room[s] == here]
            if others:
                other = rng.choice(others)
                kind = rng.choice(("rob", "trade", "hire", "accept", "give"))
                held = [g for g, n in enumerate(st.items[seat]) if n]
                if kind in ("trade", "give") and not held:
                    kind = "hire"
                out.append(Intent(kind, other=other, item=held[0] if held else -1,
                                  coin=rng.randint(1, 12)))
            else:
                out.append(Intent("wait"))
        else:
            out.append(Intent("wait"))
    return out


def _rate(fn: Callable[[int], int], seconds: float) -> float:
    """Units per second of ``fn(i)`` (which returns units done), run for about ``seconds``."""
    fn(0)  # warm up
    done, i, start = 0, 1, time.perf_counter()
    while True:
        done += fn(i)
        i += 1
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:
            return done / elapsed


def record_structured(episodes: int, seed: int = 7) -> list[list[list[Intent]]]:
    """The random structured intents of episodes 0..``episodes``-1 (seed = episode number),
    turn by turn, as ``random_legal_intents`` drew them while the episodes were played."""
    rng = random.Random(seed)
    recorded = []
    for i in range(episodes):
        game = Game(GameConfig(seed=i, turns=TURNS))
        turns = []
        while not game.done:
            intents = random_legal_intents(game, rng)
            game.play_turn(intents)
            turns.append(intents)
        recorded.append(turns)
    return recorded


def bench_structured(seconds: float, pool: int = 64) -> float:
    """Episodes/s of the engine alone on random structured intents.

    The intents of ``pool`` episodes are drawn before the clock starts and replayed, turn by
    turn, from the same seeds (the engine is deterministic, so each replay is the recorded
    episode again): the original's replay figure likewise replays recorded sentences.
    Drawing them inside the loop (``bench_structured_live``) would add the draws' own cost to
    the engine's.
    """
    recorded = record_structured(pool)

    def episode(i: int) -> int:
        game = Game(GameConfig(seed=i % pool, turns=TURNS))
        for intents in recorded[i % pool]:
            game.play_turn(intents)
        return 1
    return _rate(episode, seconds)


def bench_structured_live(seconds: float) -> float:
    """Episodes/s with ``random_legal_intents`` drawing every turn inside the timed loop (what
    ``scalar_structured_episodes_per_s`` measured before its intents were drawn ahead of the
    timed loop)."""
    rng = random.Random(7)

    def episode(i: int) -> int:
        game = Game(GameConfig(seed=i, turns=TURNS))
        while not game.done:
            game.play_turn(random_legal_intents(game, rng))
        return 1
    return _rate(episode, seconds)


SENTENCE_POOL = (
    "I walk to the docks.", "I go to the Guildhall.", "I head to Tanner's Row.",
    "I pick up the rope.", "I buy two hides from Tanner Oda.", "I sell all my nails.",
    "I hand Guildmaster Vell two hides for my commission.", "I rob Gizmo.",
    "I offer Bolt one lamp for twelve coins.", "I accept the offer.", "I hire Bolt for 5 coins.",
    "I wait by the well and listen.", 'I say "anyone selling rope?"', "I walk to the market.",
    "I ask the keeper about my commissions.", "I wander over to the alley.",
)


def bench_sentences(seconds: float) -> float:
    rng = random.Random(11)

    def episode(i: int) -> int:
        game = Game(GameConfig(seed=i, turns=TURNS))
        while not game.done:
            game.play_turn([rng.choice(SENTENCE_POOL) for _ in range(6)])
        return 1
    return _rate(episode, seconds)


def parse_pool() -> list[str]:
    """The parser figure's sentences: ``SENTENCE_POOL`` and the phrasebook's examples
    (``bench.compare`` hands another checkout this very list, which may predate the
    phrasebook)."""
    from sim.language.vocab import PHRASEBOOK

    return list(SENTENCE_POOL + PHRASEBOOK)


def bench_parse(seconds: float, pool: Sequence[str] | None = None) -> float:
    """Sentences/s of the raw parser (no memo) over ``pool`` (default ``parse_pool()``)."""
    from sim.language.parser import parse

    if pool is None:
        pool = parse_pool()
    game = Game(GameConfig(seed=3))
    st = game.state

    def batch(i: int) -> int:
        for s in pool:
            parse(game.world, st.aliases, i % 6, st.room[i % 6], st.offers, st.turn, s)
        return len(pool)
    return _rate(batch, seconds)


# The original's own workload: seats 0, 2, 4 factor and 1, 3, 5 magpie.
BASELINE_LINEUP = ("factor", "magpie") * 3


def bench_baselines(seconds: float) -> float | None:
    if importlib.util.find_spec("agents") is None:
        return None
    import agents

    def episode(i: int) -> int:
        agents.play_episode(GameConfig(seed=i, turns=TURNS),
                            [agents.make_policy(p) for p in BASELINE_LINEUP])
        return 1
    return _rate(episode, seconds)


def masked_random(mask, rng: random.Random) -> int:
    """A uniformly random legal action of a 0/1 ``action_mask``: the faces' benchmark driver.

    ``mask.nonzero()`` and Python's ``random`` cost much less a draw than ``np.flatnonzero``
    and a numpy ``Generator.integers`` call (the earlier driver), so that the figures measure
    the environment rather than the driver.
    """
    return rng.choice(mask.nonzero()[0].tolist())


def bench_gym(seconds: float) -> float | None:
    """Gymnasium steps/s: one masked-random learning seat, five baseline opponents."""
    if importlib.util.find_spec("agents") is None:
        return None
    import gymnasium

    env = gymnasium.make("guild/Guild-v0")
    rng = random.Random(0)
    return _rate(lambda i: gym_episode(env, i, rng), seconds)


def gym_episode(env, seed: int, rng: random.Random) -> int:
    """One episode of ``bench_gym``'s driver; returns its steps."""
    obs, info = env.reset(seed=seed)
    steps, done = 0, False
    while not done:
        obs, r, done, trunc, info = env.step(masked_random(obs["action_mask"], rng))
        steps += 1
    return steps


def bench_parallel(seconds: float) -> float:
    """PettingZoo joint steps/s (one step = all six seats), masked-random actions."""
    import sim

    env = sim.parallel_env()
    rng = random.Random(0)
    return _rate(lambda i: parallel_episode(env, i, rng), seconds)


def parallel_episode(env, seed: int, rng: random.Random) -> int:
    """One episode of ``bench_parallel``'s driver; returns its joint steps."""
    obs, infos = env.reset(seed=seed)
    steps = 0
    while env.agents:
        acts = {}
        for a in env.agents:
            acts[a] = masked_random(obs[a]["action_mask"], rng)
        obs, rewards, terms, truncs, infos = env.step(acts)
        steps += 1
    return steps

