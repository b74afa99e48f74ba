"""Where our PPO gathers experience: episodes of the batched engine, each seat played by the
learner or by an opponent drawn at the episode's start.

Every episode of the guild game lasts exactly ``turns`` turns, so the ``envs`` rows of one
:class:`~sim.batched.engine.BatchedGuild` start and end together: a rollout is whole episodes,
and the learner never needs a value to bootstrap across a rollout's edge. Each episode's town
is drawn from ``agents.learn.evaluation.TRAINING_SEEDS``, outside the seeds evaluations use. At
each start the arena draws who plays every seat of every row:

* **lineups** (default): one learning seat per row, anywhere at the table, the other five drawn
  from the fixed opponents (``guild train --against``, default factor and magpie) at random;
* **self-play**: every seat is the learner with probability one half (at least one per row),
  the others a fixed opponent or a past snapshot of the learner, in equal shares;
* **league**: one learning seat per row, every other seat drawn from the pool of fixed
  opponents, past snapshots and the learner itself with prioritized fictitious self-play
  weights (``agents.learn.ppo_pool``), which follow who the learner still loses to.

Experience is kept only from the learner's ``(row, seat)`` pairs (``learners``); the opponents
act through their batched forms (``sim.policies.BATCHED_POLICIES``: factor, magpie, random,
``champion``, ``ppo:MODEL``) and the snapshots' masked samples.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from agents.learn.evaluation import TRAINING_SEEDS, checked_actions
from agents.learn.ppo import PolicyNet, choose
from agents.learn.ppo_pool import FIXED_SHARE, Pool
from agents.learn.sb3_extract import Extract, is_sb3
from agents.learn.train_options import AGAINST, TrainingError, check_against
from sim.batched.engine import BatchedGuild
from sim.batched.observe import encode
from sim.policies import BATCHED_POLICIES, check_town
from sim.rules.world import SEATS, World


class OpponentError(TrainingError):
    """A fixed opponent failed during training: it raised, or answered other than one legal
    index per seat."""


LEARNER = 0  # who plays a seat: fixed opponent i is 1 + i, snapshot k is 1 + len(fixed) + k
SELF_SHARE = 0.5
MAX_SNAPSHOTS = 5


def fixed_players(against: Sequence[str], seed: int, extract: Extract | None = None,
                  ) -> list[Any]:
    """The batched policies of ``against`` (ValueError naming a spec without a batched form),
    each with a random stream of its own drawn from ``seed``. An ``sb3:`` zip is loaded through
    ``extract`` when given (a sandbox: ``agents.learn.sb3.load_model``), else unpickled here."""
    players = []
    for i, spec in enumerate(against):
        player = BATCHED_POLICIES.make(
            {"name": spec, "extract": extract} if extract is not None and is_sb3(spec)
            else spec)
        if hasattr(player, "reset"):
            player.reset(int(np.random.SeedSequence([seed, 2, i]).generate_state(1)[0]))
        players.append(player)
    return players


class Arena:
    """``envs`` episodes in lockstep and the lineup of each.

    Args:
        envs: rows of the engine (episodes per rollout).
        self_play: draw lineups for self-play (module docstring).
        seed: seeds the towns and the lineups (with ``generator``, the snapshots' samples).
        generator: the torch generator the snapshots sample with.
        turns: the episodes' length.
        against: the fixed opponents' specs.
        league: draw lineups from the PFSP pool (module docstring); excludes ``self_play``.
        world: the town (default the standard one).
        extract: loads ``sb3:`` opponents in a sandbox (:func:`fixed_players`).
        fixed_share: league: the fixed opponents' guaranteed share of the opponent seats.
    """

    def __init__(self, envs: int, self_play: bool, seed: int, generator: Any,
                 turns: int = 14, against: Sequence[str] = AGAINST,
                 league: bool = False, world: World | None = None,
                 extract: Extract | None = None, fixed_share: float = FIXED_SHARE) -> None:
        if self_play and league:
            raise ValueError("self-play and league training exclude each other")
        self.engine = BatchedGuild(envs, turns=turns, world=world, seed=seed)
        self.turns = turns
        self.self_play = self_play
        self.league = league
        self.rng = np.random.default_rng([seed, 1])
        self.generator = generator
        self.against = check_against(tuple(against))
        self.players = fixed_players(self.against, seed, extract)
        check_town(self.players, self.engine.world)
        self.pool = Pool(list(self.against), fixed_share)
        self.snapshots: list[PolicyNet] = []
        self.width = self.engine.tables.obs_width
        self.lineup = np.zeros((envs, SEATS), np.int64)
        self.learners = (np.zeros(0, np.int64), np.zeros(0, np.int64))
        self._groups: list[tuple[int, np.ndarray, np.ndarray]] = []

    def start(self) -> int:
        """New episodes in every row and who plays each seat; returns the learners' count."""
        n = self.engine.n
        self.engine.reset(self.rng.integers(TRAINING_SEEDS.start, TRAINING_SEEDS.stop, n))
        first = self.rng.integers(0, SEATS, n)  # a learning seat in every row
        fixed = len(self.players)
        if self.league:
            members = self.rng.choice(len(self.pool.members), size=(n, SEATS),
                                      p=self.pool.weights())
            lineup = 1 + members
            lineup[members == len(self.pool.members) - 1] = LEARNER  # "self"
        elif self.self_play:
            kinds = fixed + len(self.snapshots)
            lineup = 1 + self.rng.integers(0, kinds, (n, SEATS))
            lineup[self.rng.random((n, SEATS)) < SELF_SHARE] = LEARNER
        else:
            lineup = 1 + self.rng.integers(0, fixed, (n, SEATS))
        lineup[np.arange(n), first] = LEARNER
        self.lineup = lineup
        self.learners = np.nonzero(lineup == LEARNER)
        self._groups = []
        for who in np.unique(lineup[lineup != LEARNER]).tolist():
            rows, seats = np.nonzero(lineup == who)
            self._groups.append((who, rows, seats))
        return self.learners[0].size

    def observe(self, out: np.ndarray) -> np.ndarray:
        """The learners' observations into ``out`` (``[learners, width]`` float32)."""
        return encode(self.engine, self.learners[0], self.learners[1], out)

    def play_turn(self, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """One turn: the learners' ``actions`` and the opponents' own choices.

        Returns the learners' rewards (their score change) and every row's ``done``.
        """
        e = self.engine
        joint = np.zeros((e.n, SEATS), np.int64)
        joint[self.learners] = actions
        fixed = len(self.players)
        for who, rows, seats in self._groups:
            if who <= fixed:
                joint[rows, seats] = self._answer(who - 1, rows, seats)
            else:
                obs = encode(e, rows, seats)
                joint[rows, seats] = choose(self.snapshots[who - 1 - fixed], obs,
                                            self.generator, deterministic=False)
        rewards, done = e.step(joint, autoreset=False)
        return rewards[self.learners], done

    def learner_scores(self) -> np.ndarray:
        """The learners' current scores (their final ones once the episodes have ended)."""
        return self.engine.scores()[self.learners]

    def _answer(self, i: int, rows: np.ndarray, seats: np.ndarray) -> np.ndarray:
        """Fixed opponent ``i``'s action indices, one per seat asked, or :class:`OpponentError`
        naming it: a failing opponent ends the run in one line, never a silently wrong one."""
        spec = self.against[i]
        try:
            answer = self.players[i].act(self.engine, rows, seats)
        except (KeyboardInterrupt, MemoryError):
            raise
        except Exception as e:  # noqa: BLE001 - an opponent's own code
            raise OpponentError(f"opponent {spec!r:.80} raised {type(e).__name__}: "
                                f"{str(e)[:200]}") from None
        try:
            return checked_actions(answer, rows.size, self.engine.tables.n_actions)
        except ValueError as e:
            raise OpponentError(f"opponent {spec!r:.80} {e}") from None

    def end(self) -> None:
        """After an episode: league training updates the pool's win shares from it."""
        if self.league:
            self.pool.observe(self.lineup, self.engine.scores())

    def add_snapshot(self, net: PolicyNet, name: str) -> None:
        """Keep a frozen copy of the learner as an opponent (the latest few)."""
        self.snapshots = [*self.snapshots, net][-MAX_SNAPSHOTS:]
        self.pool.add_snapshot(name, MAX_SNAPSHOTS)

    # --- checkpoints -----------------------------------------------------------------------
    def state(self) -> dict:
        """The random streams: lineups and towns (one stream), the fixed opponents' own; the
        pool. The episodes themselves always restart at a checkpoint."""
        return {"lineups": self.rng.bit_generator.state,
                "players": [None if (rng := _stream(p)) is None else rng.bit_generator.state
                            for p in self.players],
                "pool": self.pool.state()}

    def load_state(self, state: dict) -> None:
        """Continue from :meth:`state`, the snapshots already restored (the pool names them);
        ValueError (or numpy's error for a bad stream) for one of other opponents."""
        players = state["players"]
        if not isinstance(players, list) or len(players) != len(self.players):
            raise ValueError(f"it keeps the streams of other opponents than {self.against}")
        self.pool.load_state(state["pool"], self.against, len(self.snapshots))
        self.rng.bit_generator.state = state["lineups"]
        for p, s in zip(self.players, players):
            if s is not None and (rng := _stream(p)) is not None:
                rng.bit_generator.state = s


def _stream(player: Any) -> np.random.Generator | None:
    """A fixed opponent's own random stream (random's), which a checkpoint keeps."""
    rng = getattr(player, "rng", None)
    return rng if isinstance(rng, np.random.Generator) else None
