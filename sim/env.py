"""Gymnasium face: one learning seat against five policies (``guild/Guild-v0``).

## Description
The guild game of RULES.md: six seats, fourteen turns, one act per turn.  The agent plays one
seat; the other five are played by policies (default: a mix of the original baselines).

## Action Space
``Discrete(n)`` over the structured action table of ``sim.actions`` (its docstring lists the
blocks); ``action_masks()`` and ``obs["action_mask"]`` give the legal ones (MaskablePPO).  With
``text_mode=True`` the action is one English sentence instead (a ``Text`` space).

## Observation Space
A one-level ``Dict`` of ``Box`` arrays (``sim.encode`` lists the keys), only what the seat may
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

import importlib
from collections.abc import Sequence

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from .actions import action_table, canonical, legal_mask, n_actions, to_intent
from .encode import _slices, encode, encode_flat, layout
from .game import Game, GameConfig
from .scoring import score
from .world import MAX_SENTENCE_LEN, SEATS, STANDARD_TOWN, World

DEFAULT_OPPONENTS = ("factor", "magpie", "factor", "magpie", "factor")


def _numba_available() -> bool:
    from .batched_numba import available

    return available()
# Everything below the surrogates (and newline) can appear in a sentence or a text view.
TEXT_CHARSET = "\n" + "".join(chr(c) for c in range(0x20, 0xD800))


def resolve_policy(spec):
    """A policy object from a spec; strings go through ``agents.make_policy`` at call time
    (``sim`` never imports ``agents`` on import, API.md §2)."""
    if isinstance(spec, str) or isinstance(spec, dict):
        return importlib.import_module("agents").make_policy(spec)
    if hasattr(spec, "act"):
        return spec
    if callable(spec):
        return _CallablePolicy(spec)
    raise ValueError(f"opponent must be a policy spec, an object with act(game, seat) or a "
                     f"callable; got {spec!r}")


class _CallablePolicy:
    def __init__(self, fn) -> None:
        self.fn = fn

    def act(self, game, seat):
        return self.fn(game, seat)


def seat_spaces(world: World, text_mode: bool, flat: bool) -> tuple[spaces.Space, spaces.Space]:
    """(observation space, action space) of one seat."""
    lay = layout(world)
    if text_mode:
        # No mask here: the action is a sentence; info["admissible"] lists the legal ones.
        obs = spaces.Dict({
            "observation_text": spaces.Text(max_length=60_000, charset=TEXT_CHARSET),
        })
        return obs, spaces.Text(max_length=MAX_SENTENCE_LEN * 4, min_length=0,
                                charset=TEXT_CHARSET)
    if flat:
        size = sum(shape[0] for shape, _ in lay.values())
        high = np.concatenate([np.full(shape, hi, np.float32) for shape, hi in lay.values()])
        obs = spaces.Box(np.zeros(size, np.float32), high, dtype=np.float32)
    else:
        obs = spaces.Dict({k: spaces.Box(0, 1, shape, np.int8) if k == "action_mask"
                           else spaces.Box(0.0, hi, shape, np.float32)
                           for k, (shape, hi) in lay.items()})
    return obs, spaces.Discrete(n_actions(world))


class SeatFace:
    """What both environments share: a seat's observation, mask and action decoding."""

    def __init__(self, world: World, text_mode: bool, flat: bool) -> None:
        self.world = world
        self.text_mode = text_mode
        self.flat = flat
        self.n_actions = n_actions(world)

    def observe(self, game: Game, seat: int) -> tuple[dict | np.ndarray, dict]:
        """The seat's observation and the face's part of ``info`` (mask computed once)."""
        st = game.state
        if self.text_mode:
            return ({"observation_text": game.observation_text(seat)},
                    {"admissible": self.admissible(game, seat)})
        if self.flat:
            flat = encode_flat(st, seat)
            return flat, {"action_mask": flat[-self.n_actions:].astype(np.int8)}
        obs = encode(st, seat)
        return obs, {"action_mask": obs["action_mask"]}

    def observe_all(self, game: Game) -> list[tuple[dict | np.ndarray, dict]]:
        """Every seat's ``observe``, in seat order.

        With the optional numba extra, the six rows are encoded in one compiled pass over a
        one-episode copy of the state (``sim.batched``), about six times cheaper than six
        Python passes; the batched differential tests hold that encoder equal to
        ``encode_flat``.  Without numba (or in text mode) it is six ``observe`` calls.
        """
        if self.text_mode or not _numba_available():
            return [self.observe(game, s) for s in range(SEATS)]
        rows = self._encode_rows(game)
        out = []
        for s in range(SEATS):
            flat = rows[s].copy()
            mask = flat[-self.n_actions:].astype(np.int8)
            if self.flat:
                out.append((flat, {"action_mask": mask}))
            else:
                obs = {k: flat[a:b] for k, (a, b) in self._slices.items()}
                obs["action_mask"] = mask
                out.append((obs, {"action_mask": mask}))
        return out

    def _encode_rows(self, game: Game) -> np.ndarray:
        from .batched import BatchedGuild
        from .batched_obs import all_seats, offsets
        from .batched_obs import encode as batch_encode

        st = game.state
        key = (st.turns, st.thievery)
        if getattr(self, "_batch_key", None) != key:
            self._batch = BatchedGuild(1, turns=st.turns, thievery=st.thievery,
                                       world=self.world, seed=0, backend="numba")
            self._batch_key = key
            self._rows = all_seats(1)
            offs, width = offsets(self._batch.tables)
            self._out = np.zeros((SEATS, width), np.float32)
            self._slices = _slices(self.world)
        self._batch.load_games([game])
        batch_encode(self._batch, self._rows[0], self._rows[1], self._out)
        return self._out

    def action(self, game: Game, seat: int, action):
        """The ``play_turn`` input for an action of this face."""
        if self.text_mode:
            if not isinstance(action, str):
                raise ValueError(f"text mode takes a sentence (str); got {action!r}")
            return action
        if isinstance(action, np.ndarray):
            action = action.item()
        if isinstance(action, bool) or not isinstance(action, (int, np.integer)):
            raise ValueError(f"action must be an int index; got {action!r}")
        return to_intent(int(action), self.world, seat, game.state.room[seat])

    def admissible(self, game: Game, seat: int) -> list[str]:
        mask = legal_mask(game.state, seat)
        room = game.state.room[seat]
        return [canonical(i, self.world, game.state.aliases, seat, room)
                for i in range(len(action_table(self.world))) if mask[i]]


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
