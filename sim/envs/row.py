"""One episode on a one-row batched engine, its scalar ``Game`` rebuilt only when read.

The structured faces step this instead of ``sim.Game``: the compiled kernels resolve a turn
and encode all six observations in one call each, several times faster than the scalar engine
and the Python encoder.  For table actions the batched differential tests hold the two
engines equal turn by turn, so observations, masks, rewards and ends do not change.  Whoever
reads ``game`` (event log, text view, snapshots, ``render``) gets the scalar ``Game`` of the
same episode: the recorded turns are replayed into it on demand, and only then.
"""

from __future__ import annotations

import copy
from collections.abc import Callable

import numpy as np

from ..batched import source
from ..batched.engine import BatchedGuild
from ..game import Game, GameConfig
from ..rules.scoring import score_of
from ..rules.world import SEATS

# How a face replays one recorded turn (the joint table indices) into the scalar game.
Replay = Callable[[Game, np.ndarray], None]

_BOUND = ("_step", "_encode_seat", "_encode_all")  # RowEpisode's kernels, bound to its buffers
_ROW = np.zeros(1, np.int64)
_SIX_ROWS = np.zeros(SEATS, np.int64)
_SIX_SEATS = np.arange(SEATS, dtype=np.int64)


class RowEpisode:
    """The engine of a structured face: row 0 of a ``BatchedGuild``, plus the lazy ``game``."""

    def __init__(self, config: GameConfig) -> None:
        self.engine = BatchedGuild(1, turns=config.turns, thievery=config.thievery,
                                   world=config.world, seed=0)
        self.config = config
        self.scores = [0.0] * SEATS
        # The kernels of a turn, bound to buffers of this episode's own (``BatchedGuild.bind``):
        # the joint action, one seat's row, all six seats' rows. Each is an array of its own,
        # no view of another, so that a deep copy of the face binds its copies consistently.
        width = self.engine.tables.obs_width
        self._obs = np.zeros((SEATS, width), np.float32)
        self._obs_seat = np.zeros((1, width), np.float32)
        self._joint = np.zeros((1, SEATS), np.int64)
        self._seat = np.zeros(1, np.int64)
        self._bind()
        self._turns: list[np.ndarray] = []
        self._replay: Replay | None = None
        self._game: Game | None = None

    def _bind(self) -> None:
        self._step = self.engine.bind("step_rows", (self._joint,))
        self._encode_seat = self.engine.bind("encode_rows", (_ROW, self._seat, self._obs_seat))
        self._encode_all = self.engine.bind("encode_rows", (_SIX_ROWS, _SIX_SEATS, self._obs))

    def __getstate__(self) -> dict:
        """The state to pickle: the bound kernels' compiled entry points do not pickle, and
        are bound again on loading (a deep copy keeps them; see ``BatchedGuild.bind``)."""
        return {k: v for k, v in self.__dict__.items() if k not in _BOUND}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._bind()

    def __deepcopy__(self, memo: dict) -> RowEpisode:
        copied = RowEpisode.__new__(RowEpisode)
        memo[id(self)] = copied
        copied.__dict__.update(copy.deepcopy(self.__dict__, memo))
        return copied

    def reset(self, config: GameConfig, replay: Replay) -> None:
        """A new episode from ``config`` (its seed); ``replay`` rebuilds its turns on demand."""
        self.config = config
        self.engine.reset(np.array([config.seed], np.int64))
        self.scores = [0.0] * SEATS
        self._turns = []
        self._replay = replay
        self._game = None

    def step(self, joint: np.ndarray) -> bool:
        """Resolve one turn from six checked table indices; True when the episode ends."""
        self._joint[0] = joint  # six table indices the face has checked
        self._step()
        self._turns.append(joint)
        # The score formula on Python ints: the same floats as ``engine.scores()`` without
        # numpy's per-call cost on a one-row array.
        start = self.config.world.start_coin
        self.scores = [score_of(p, start) for p in self.engine.state.points[0].tolist()]
        return bool(self.engine.state.done[0])

    @property
    def done(self) -> bool:
        return bool(self.engine.state.done[0])

    def observe(self) -> np.ndarray:
        """The six seats' encoded rows (``encode_flat`` order, mask last); a reused buffer."""
        self._encode_all()
        return self._obs

    def observe_seat(self, seat: int) -> np.ndarray:
        """``seat``'s encoded row, ``[1, obs]``; a reused buffer."""
        self._seat[0] = seat
        self._encode_seat()
        return self._obs_seat

    def results(self) -> dict:
        """``Game.results()`` of this episode, read from the batched row (by the rules' Python
        functions, ``sim.batched.source``, which read a stand-in for a ``GameState``)."""
        return source.scoring.results(_ResultsView(self), self.config.names)

    @property
    def game(self) -> Game:
        """The scalar ``Game`` of this episode, caught up with every turn played so far."""
        if self._game is None:
            self._game = Game(self.config)
        game = self._game
        for joint in self._turns[game.state.turns_played:]:
            self._replay(game, joint)
        return game


class _ResultsView:
    """Row 0 of the batch with the ``GameState`` fields ``sim.rules.scoring.results`` reads."""

    def __init__(self, ep: RowEpisode) -> None:
        st = ep.engine.state
        self.world = ep.config.world
        for name in ("coin", "items", "quest_count", "delivered", "robberies", "robbed"):
            setattr(self, name, getattr(st, name)[0].tolist())
        self.turns_played = int(st.turns_played[0])
        self.turns = ep.config.turns
        self.done = bool(st.done[0])
        self.reason = "complete"  # a live game ends only when its turns run out (RULES §6.4)
