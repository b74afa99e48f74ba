"""League training's opponent pool: prioritized fictitious self-play (PFSP) over the fixed
opponents (``guild train --against``), the learner's past snapshots and the learner itself.

AlphaStar's league picks a main agent's opponents with probability growing with how often that
opponent beats it (Vinyals et al., 2019, "hard" weighting ``(1 - p)^2``, where ``p`` is the
agent's chance to beat the opponent). The guild game has six seats and no winner, so ``p`` is
counted seat against seat: over every row where the learner and opponent ``k`` both sit, each
pair (learning seat, seat of ``k``) is a win when the learner ends with the higher score, half
a win for a tie. Each rollout (one an update, unless ``--episodes``) moves ``p`` toward that
share (an exponential average, rate :data:`RATE`), so the weights follow the learner as it
improves.

An opponent seat is drawn from the pool with probability

    ``share / F`` for each fixed opponent, plus ``(1 - share) * w_k / sum(w)``,
    ``w_k = (1 - p_k)^2 + FLOOR``, for every member ``k`` (fixed, snapshot, self),

where ``share`` is ``guild train --fixed-share`` (default :data:`FIXED_SHARE`), so the
opponents the evaluation plays against (factor and magpie by default) keep at least that
share of the seats however well the learner beats them, and the rest go mostly to whatever it
still loses to. The learner itself counts ``p = 1/2``; a seat drawn as the learner is a
learning seat (its experience is kept, as in self-play).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

FIXED_SHARE = 0.5  # the fixed opponents' guaranteed share of the opponent seats, by default
RATE = 0.2         # how far each rollout moves a member's win share toward the rollout's
FLOOR = 0.02       # keeps every member drawn now and then: its share is measured, not assumed
SELF = "self"
SNAPSHOT = re.compile(r"snapshot@\d{1,20}")  # a snapshot member's name: snapshot@STEPS


@dataclass
class Member:
    """One entry of the pool: its name (``factor``, ``snapshot@STEPS``, ``self``), whether it is
    fixed, and the learner's estimated share of seat-against-seat wins over it."""

    name: str
    fixed: bool
    win: float = 0.5

    def to_dict(self) -> dict:
        return {"name": self.name, "fixed": self.fixed, "win": round(self.win, 4)}


class Pool:
    """The members in draw order: fixed opponents, snapshots (oldest first), then ``self``.
    In a lineup member ``i`` plays as ``1 + i`` and ``self`` as the learner, 0."""

    def __init__(self, fixed: list[str], share: float = FIXED_SHARE) -> None:
        if not fixed:
            raise ValueError("the pool needs at least one fixed opponent")
        if not 0.0 <= share <= 1.0:
            raise ValueError(f"the fixed opponents' share must be in [0, 1]; got {share!r:.20}")
        self.share = share
        self.members = [Member(name, True) for name in fixed] + [Member(SELF, False)]

    @property
    def fixed(self) -> int:
        return sum(m.fixed for m in self.members)

    def add_snapshot(self, name: str, keep: int) -> None:
        """Add a snapshot before ``self``, dropping the oldest beyond ``keep``."""
        self.members.insert(len(self.members) - 1, Member(name, False))
        if len(self.members) - 1 - self.fixed > keep:
            del self.members[self.fixed]

    def weights(self) -> np.ndarray:
        """Each member's probability of filling an opponent seat (module docstring)."""
        f = self.fixed
        share = np.zeros(len(self.members))
        share[:f] = self.share / f
        hard = np.array([(1.0 - (0.5 if m.name == SELF else m.win)) ** 2 + FLOOR
                         for m in self.members])
        return share + (1.0 - self.share) * hard / hard.sum()

    def observe(self, lineup: np.ndarray, scores: np.ndarray) -> None:
        """Move each member's win share toward this episode's (module docstring).

        ``lineup`` is ``[rows, seats]`` of who played each seat: 0 the learner (``self``
        included), ``1 + i`` member ``i``; ``scores`` the final scores.
        """
        learner = lineup == 0
        for i, member in enumerate(self.members):
            if member.name == SELF:
                continue
            theirs = lineup == 1 + i
            rows = learner.any(1) & theirs.any(1)
            if not rows.any():
                continue
            ls, ts = learner[rows], theirs[rows]
            s = scores[rows]
            # every (learning seat, their seat) pair of a row: [rows, seats, seats]
            pairs = ls[:, :, None] & ts[:, None, :]
            diff = s[:, :, None] - s[:, None, :]
            wins = ((diff > 0) + 0.5 * (diff == 0))[pairs].mean()
            member.win += RATE * (float(wins) - member.win)

    def to_list(self) -> list[dict]:
        """The members with their win shares and draw weights (summary.json)."""
        return [{**m.to_dict(), "weight": round(float(w), 4)}
                for m, w in zip(self.members, self.weights())]

    def state(self) -> list[dict]:
        """The members, exactly (a resumed run draws the same lineups)."""
        return [{"name": m.name, "fixed": m.fixed, "win": m.win} for m in self.members]

    def load_state(self, state: list[dict], fixed: Sequence[str], snapshots: int) -> None:
        """Continue from :meth:`state`, whose members must be the fixed opponents ``fixed`` in
        order, ``snapshots`` snapshots and ``self``, each with a win share in [0, 1]: a pool of
        others would draw lineups of players that are not there, or weights that are no
        probabilities (ValueError naming what is wrong)."""
        if not isinstance(state, list) or len(state) != len(fixed) + snapshots + 1:
            raise ValueError(f"its pool is not the {len(fixed)} fixed opponents, {snapshots} "
                             "snapshots and self")
        members = []
        for i, d in enumerate(state):
            name, is_fixed, win = d["name"], d["fixed"], d["win"]
            if i < len(fixed):
                right = name == fixed[i] and is_fixed is True
            elif i == len(state) - 1:
                right = name == SELF and is_fixed is False
            else:
                right = (isinstance(name, str) and SNAPSHOT.fullmatch(name) is not None
                         and is_fixed is False)
            if not right:
                raise ValueError(f"its pool's member {i} is {name!r:.40}, not the run's")
            if type(win) not in (int, float) or not 0.0 <= win <= 1.0:
                raise ValueError(f"its pool's member {name!r:.40} has a win share of "
                                 f"{win!r:.20}, not one in [0, 1]")
            members.append(Member(name, is_fixed, float(win)))
        self.members = members
