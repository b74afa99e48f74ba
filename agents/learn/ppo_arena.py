"""Where our PPO gathers experience: episodes of the batched engine, each seat played by the
learner or by an opponent drawn at the episode's start.

Every episode of the guild game lasts exactly ``turns`` turns, so the ``envs`` rows of one
:class:`~sim.batched.engine.BatchedGuild` start and end together: a rollout is whole episodes,
and the learner never needs a value to bootstrap across a rollout's edge. At each start the
arena draws who plays every seat of every row:

* **lineups** (default): one learning seat per row, anywhere at the table, the other five
  factor or magpie at random, the company the paired evaluation plays against;
* **self-play**: every seat is the learner with probability one half (at least one per row),
  the others factor, magpie or a past snapshot of the learner, in equal shares.

Experience is kept only from the learner's ``(row, seat)`` pairs (``learners``); the opponents
act through the batched baselines of ``agents.baselines.batched`` and the snapshots' masked samples.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from agents.baselines.batched import BatchedFactor, BatchedMagpie
from agents.learn.ppo import PolicyNet, choose
from sim.batched.engine import BatchedGuild
from sim.batched.observe import encode
from sim.rules.world import SEATS

LEARNER, FACTOR, MAGPIE = 0, 1, 2  # who plays a seat; snapshot k is 3 + k
SELF_SHARE = 0.5
MAX_SNAPSHOTS = 5


class Arena:
    """``envs`` episodes in lockstep and the lineup of each.

    Args:
        envs: rows of the engine (episodes per rollout).
        self_play: draw lineups for self-play (module docstring) rather than one learner per
            row against factor and magpie.
        seed: seeds the towns and the lineups (with ``generator``, the snapshots' samples).
        generator: the torch generator the snapshots sample with.
        turns: the episodes' length.
    """

    def __init__(self, envs: int, self_play: bool, seed: int, generator: Any,
                 turns: int = 14) -> None:
        self.engine = BatchedGuild(envs, turns=turns, seed=seed)
        self.turns = turns
        self.self_play = self_play
        self.rng = np.random.default_rng([seed, 1])
        self.generator = generator
        self.baselines = {FACTOR: BatchedFactor(), MAGPIE: BatchedMagpie()}
        self.snapshots: list[PolicyNet] = []
        self.width = self.engine.tables.obs_width
        self.lineup = np.zeros((envs, SEATS), np.int64)
        self.learners = (np.zeros(0, np.int64), np.zeros(0, np.int64))
        self._groups: list[tuple[int, np.ndarray, np.ndarray]] = []

    def start(self) -> int:
        """New episodes in every row and who plays each seat; returns the learners' count."""
        n = self.engine.n
        self.engine.reset()
        first = self.rng.integers(0, SEATS, n)  # a learning seat in every row
        if self.self_play:
            kinds = 2 + len(self.snapshots)
            lineup = 1 + self.rng.integers(0, kinds, (n, SEATS))
            lineup[self.rng.random((n, SEATS)) < SELF_SHARE] = LEARNER
        else:
            lineup = 1 + self.rng.integers(0, 2, (n, SEATS))
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
        for who, rows, seats in self._groups:
            if who in self.baselines:
                joint[rows, seats] = self.baselines[who].act(e, rows, seats)
            else:
                obs = encode(e, rows, seats)
                joint[rows, seats] = choose(self.snapshots[who - 3], obs, self.generator,
                                            deterministic=False)
        rewards, done = e.step(joint, autoreset=False)
        return rewards[self.learners], done

    def learner_scores(self) -> np.ndarray:
        """The learners' current scores (their final ones once the episodes have ended)."""
        return self.engine.scores()[self.learners]

    def add_snapshot(self, net: PolicyNet) -> None:
        """Keep a frozen copy of the learner as a self-play opponent (the latest few)."""
        self.snapshots = [*self.snapshots, net][-MAX_SNAPSHOTS:]

    # --- checkpoints -----------------------------------------------------------------------
    def state(self) -> dict:
        """The random streams (the episodes themselves always restart at a checkpoint)."""
        return {"lineups": self.rng.bit_generator.state,
                "towns": self.engine.seed_rng.bit_generator.state}

    def load_state(self, state: dict) -> None:
        self.rng.bit_generator.state = state["lineups"]
        self.engine.seed_rng.bit_generator.state = state["towns"]
