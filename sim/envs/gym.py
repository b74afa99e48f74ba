"""Gymnasium face: one learning seat against five policies (``guild/Guild-v0``).

## Description
The guild game of RULES.md: six seats, fourteen turns, one act per turn.  The agent plays one
seat; the other five are played by policies (default: a mix of the original baselines).

## Action Space
``Discrete(n)`` over the structured action table of ``sim.codec.action_table`` (its docstring lists
the blocks); ``action_masks()`` and ``obs["action_mask"]`` give the legal ones (MaskablePPO).  With
``text_mode=True`` the action is one English sentence instead (a ``Text`` space).

## Observation Space
A one-level ``Dict`` of ``Box`` arrays (``sim.codec.encode`` lists the keys), only what the seat may
see; ``flatten=True`` gives one ``Box`` vector instead; ``text_mode=True`` gives the text view
of SENTENCES §17 and the mask.

## Rewards
``reward="dense"`` (default): the change in the seat's score each turn, so an episode's return
is its final score.  ``reward="terminal"``: the final score on the last step only.

## Episode End
Terminated after the last turn (``turns``, default 14).  Never truncated by the env itself.

## Information
``info["score"]`` and ``info["seat"]`` every step; ``info["action_mask"]``, or in text mode
``info["admissible"]`` (canonical sentences of the legal actions, in table order);
``info["results"]`` (RULES §13) at the end.

## Arguments
``seat`` (0..5, or None to draw one per episode), ``opponents`` (5 policy specs or objects:
``"factor"``, ``"magpie"``, ``"random"``, ``"module:Name"``, or anything with
``act(game, seat)``), ``turns``, ``thievery``, ``speech``, ``world``, ``text_mode``,
``flatten``, ``reward``, ``render_mode`` (``"ansi"`` or ``"human"``).

## Version History
v0: first release.
"""

from __future__ import annotations

from collections.abc import Sequence

import gymnasium as gym
import numpy as np

from ..codec.action_table import legal_mask
from ..game import Game, GameConfig
from ..rules.scoring import score
from ..rules.world import SEATS, STANDARD_TOWN, World
from .face import DEFAULT_OPPONENTS, SeatFace, resolve_policy, seat_spaces


class GuildEnv(gym.Env):
    __doc__ = __doc__
    metadata = {"render_modes": ["ansi", "human"], "render_fps": 4}

    def __init__(self, seat: int | None = None, opponents: Sequence | None = None,
                 turns: int = 14, thievery: bool = True, speech: bool = True,
                 world: World | None = None, text_mode: bool = False, flatten: bool = False,
                 reward: str = "dense", render_mode: str | None = None) -> None:
        if seat is not None and (isinstance(seat, bool) or seat not in range(SEATS)):
            raise ValueError(f"seat must be 0..5 or None; got {seat!r}")
        if reward not in ("dense", "terminal"):
            raise ValueError(f"reward must be 'dense' or 'terminal'; got {reward!r}")
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be one of {self.metadata['render_modes']}; "
                             f"got {render_mode!r}")
        self.fixed_seat = seat
        specs = list(DEFAULT_OPPONENTS if opponents is None else opponents)
        if len(specs) != SEATS - 1:
            raise ValueError(f"opponents must name {SEATS - 1} policies; got {len(specs)}")
        self.opponent_specs = specs
        self.opponents: list | None = None
        self.world = world or STANDARD_TOWN
        GameConfig(turns=turns, thievery=thievery, speech=speech, world=self.world)  # validate
        self.turns, self.thievery, self.speech = turns, thievery, speech
        self.reward_mode = reward
        self.render_mode = render_mode
        self.face = SeatFace(self.world, text_mode, flatten)
        self.observation_space, self.action_space = seat_spaces(self.world, text_mode, flatten)
        self.game: Game | None = None
        self.seat = 0 if seat is None else seat
        self._score = 0.0

    # --- gymnasium API ---------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        rng = self.np_random
        game_seed = int(rng.integers(0, 2 ** 31 - 1))
        self.seat = int(rng.integers(0, SEATS)) if self.fixed_seat is None else self.fixed_seat
        if self.opponents is None:
            self.opponents = [resolve_policy(s) for s in self.opponent_specs]
        for k, p in enumerate(self.opponents):
            if hasattr(p, "reset"):
                p.reset(int(rng.integers(0, 2 ** 31 - 1)) + k)
        self.game = Game(GameConfig(seed=game_seed, turns=self.turns, thievery=self.thievery,
                                    speech=self.speech, world=self.world))
        self._score = 0.0
        obs, info = self.face.observe(self.game, self.seat)
        return obs, self._info(info)

    def step(self, action):
        game = self.game
        if game is None or game.done:
            raise RuntimeError("step() called before reset() or after the episode ended")
        mine = self.face.action(game, self.seat, action)
        actions: list = [None] * SEATS
        says, notes = [""] * SEATS, [""] * SEATS
        scripted = [False] * SEATS
        actions[self.seat] = mine
        others = [s for s in range(SEATS) if s != self.seat]
        for policy, s in zip(self.opponents, others):
            answer = policy.act(game, s)
            # A policy may answer with a decision record (agents.Decision: action, say, notes,
            # scripted); duck-typed because sim never imports agents.
            actions[s] = getattr(answer, "action", answer)
            says[s] = getattr(answer, "say", "") or ""
            notes[s] = getattr(answer, "notes", "") or ""
            scripted[s] = bool(getattr(policy, "scripted", False)
                               or getattr(answer, "scripted", False))
        game.play_turn(actions, says=says, notes=notes, scripted=scripted)
        new = score(game.state, self.seat)
        done = game.done
        if self.reward_mode == "dense":
            reward = new - self._score
        else:
            reward = new if done else 0.0
        self._score = new
        obs, info = self.face.observe(game, self.seat)
        info = self._info(info)
        if done:
            info["results"] = game.results()
        if self.render_mode == "human":
            self.render()
        return obs, float(reward), done, False, info

    def action_masks(self) -> np.ndarray:
        """The legal-action mask (sb3-contrib MaskablePPO calls this)."""
        return np.array(legal_mask(self.game.state, self.seat), bool)

    def render(self):
        if self.game is None or self.render_mode is None:
            return None
        text = self.game.observation_text(self.seat)
        if self.render_mode == "human":
            print(text)
            return None
        return text

    def _info(self, face_info: dict) -> dict:
        return {"seat": self.seat, "score": self._score, **face_info}
