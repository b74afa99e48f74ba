"""Gymnasium face: one learning seat against five policies (``guild/Guild-v0``).

The environment's documentation, in Gymnasium's sections (spaces, rewards, episode end,
information, arguments), is :class:`GuildEnv`'s docstring.
"""

from __future__ import annotations

from collections.abc import Sequence

import gymnasium as gym
import numpy as np

from ..batched.setup import check_env_seed
from ..codec.action_table import legal_mask, to_intent
from ..game import Game, GameConfig
from ..policies import BATCHED_POLICIES, check_town
from ..rules.scoring import score
from ..rules.world import SEATS, STANDARD_TOWN, World
from .face import (
    SeatFace,
    check_seat,
    opponent_specs,
    resolve_policy,
    seat_spaces,
)
from .picture import seat_picture
from .row import RowEpisode


class GuildEnv(gym.Env):
    """The guild game for one learning seat against five policies (``guild/Guild-v0``).

    ## Description
    The guild game of docs/rules.md: six seats, fourteen turns, one act per turn.  The agent
    plays one seat; the other five are played by policies (default: a mix of the original
    baselines).

    When every opponent is named by a spec whose batched policy is its scalar twin (``"factor"``,
    ``"magpie"``) and actions are structured, a turn runs on a one-row batched engine and the
    twins' compiled kernels (``sim.envs.row``), several times faster; ``env.game`` is then the
    scalar ``Game`` replayed on demand, with the baselines' own sentences.  Observations, masks,
    rewards and infos are the same either way (``tests/test_gym_row.py``).

    ## Action Space
    ``Discrete(n)`` over the structured action table (``sim.codec.action_table.action_table``
    lists the blocks); ``action_masks()`` and ``obs["action_mask"]`` give the legal ones
    (MaskablePPO).  With ``text_mode=True`` the action is one English sentence instead (a
    ``Text`` space).

    ## Observation Space
    A one-level ``Dict`` of ``Box`` arrays (``sim.codec.encode.layout`` lists the keys), only what
    the seat may see; ``flatten=True`` gives one ``Box`` vector instead; ``text_mode=True`` gives
    ``{"observation_text": the text view of SENTENCES §17}`` (a ``Dict`` of one ``Text``; the
    legal acts are ``info["admissible"]``).

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
    ``flatten``, ``reward``, ``render_mode`` (``"ansi"`` or ``"human"``: the seat's view as
    text; ``"rgb_array"``: a picture of it, ``sim.envs.picture``).  Named opponents are built
    when the env is made, and one that does not play ``world`` (``champion`` in a world file's
    town) is refused then with a ``ValueError``; the default lineup at the first reset.

    An ``"sb3:model.zip"`` opponent is loaded in this process, the call being your own: the zip
    is a pickle and loading it runs its code (as ``"module:Name"`` runs the module's), so name
    only files you trust.  For one you do not, pass ``{"name": "sb3:model.zip", "extract":
    league.apart.sb3_load.extract}``: it is loaded in a bubblewrap sandbox and the network
    rebuilt here from its weights plays (what ``guild evaluate`` and ``guild play`` do unless
    ``--trust``).

    ## Version History
    v0: first release.
    """

    metadata = {"render_modes": ["ansi", "human", "rgb_array"], "render_fps": 4}

    def __init__(self, seat: int | None = None, opponents: Sequence | None = None,
                 turns: int = 14, thievery: bool = True, speech: bool = True,
                 world: World | None = None, text_mode: bool = False, flatten: bool = False,
                 reward: str = "dense", render_mode: str | None = None) -> None:
        seat = check_seat(seat)
        if reward not in ("dense", "terminal"):
            raise ValueError(f"reward must be 'dense' or 'terminal'; got {reward!r}")
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be one of {self.metadata['render_modes']}; "
                             f"got {render_mode!r}")
        self.fixed_seat = seat
        self.opponent_specs = opponent_specs(opponents)
        self.opponents: list | None = None
        self.world = STANDARD_TOWN if world is None else world
        GameConfig(turns=turns, thievery=thievery, speech=speech, world=self.world)  # validate
        self.turns, self.thievery, self.speech = turns, thievery, speech
        self.reward_mode = reward
        self.render_mode = render_mode
        self.face = SeatFace(self.world, text_mode, flatten)
        self.observation_space, self.action_space = seat_spaces(self.world, text_mode, flatten)
        self.seat = 0 if seat is None else seat
        self._score = 0.0
        self._game: Game | None = None      # the scalar path: the game itself
        self._row: RowEpisode | None = None  # the batched path: a one-row engine
        self._twins: list[tuple[object, list[int]]] | None = None
        self._groups: list[tuple[object, np.ndarray, np.ndarray]] = []  # twin, rows, seats
        self._mask = np.zeros(self.face.n_actions, bool)
        if opponents is not None:
            # Named opponents are built now, so that one that does not play this town (the
            # champion in a world file's town) is refused here, as make_vec refuses it; the
            # default lineup (factor and magpie, which play any town) waits for the first
            # reset, so that making the default env loads no policy code.
            self._resolve_opponents()

    # --- gymnasium API ---------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict | None = None):
        # checked as parallel_env and GuildVectorEnv check it: a numpy int is a seed, and a bad
        # one a ValueError naming the field (Gymnasium's own check takes Python ints only)
        super().reset(seed=check_env_seed(seed))
        rng = self.np_random
        game_seed = int(rng.integers(0, 2 ** 31 - 1))
        self.seat = int(rng.integers(0, SEATS)) if self.fixed_seat is None else self.fixed_seat
        if self.opponents is None:  # the default lineup, built at the first reset
            self._resolve_opponents()
        for k, p in enumerate(self.opponents):
            if hasattr(p, "reset"):
                p.reset(int(rng.integers(0, 2 ** 31 - 1)) + k)
        config = GameConfig(seed=game_seed, turns=self.turns, thievery=self.thievery,
                            speech=self.speech, world=self.world)
        self._score = 0.0
        if self._twins is None:
            self._game = Game(config)
            return self._observe()
        others = [s for s in range(SEATS) if s != self.seat]
        self._groups = [(twin, np.zeros(len(ks), np.int64),
                         np.array([others[k] for k in ks], np.int64))
                        for twin, ks in self._twins]
        self._row = self._row or RowEpisode(config)
        self._row.reset(config, self._replay)
        return self._observe()

    def _resolve_opponents(self) -> None:
        """Build the opponents from their specs and ask them whether they play the town
        (``sim.policies.check_town``: a ``ValueError`` before any game)."""
        opponents = [resolve_policy(s) for s in self.opponent_specs]
        check_town(opponents, self.world)
        self.opponents = opponents
        self._twins = None if self.face.text_mode else batched_twins(self.opponent_specs)

    @property
    def game(self) -> Game | None:
        """The scalar ``Game`` of the episode (on the batched path: replayed when read)."""
        return self._game if self._row is None else self._row.game

    def step(self, action):
        row = self._row
        if row is None:
            game = self._game
            if game is None or game.done:
                raise RuntimeError("step() called before reset() or after the episode ended")
            play_turn(game, self.seat, self.face.action(game, self.seat, action),
                      self.opponents)
            done, new = game.done, score(game.state, self.seat)
        else:
            if row.done:
                raise RuntimeError("step() called before reset() or after the episode ended")
            joint = np.empty(SEATS, np.int64)
            joint[self.seat] = self.face.index(action)
            for twin, rows, seats in self._groups:
                joint[seats] = twin.act(row.engine, rows, seats)
            done = row.step(joint)
            new = row.scores[self.seat]
        if self.reward_mode == "dense":
            reward = new - self._score
        else:
            reward = new if done else 0.0
        self._score = new
        obs, info = self._observe()
        if done:
            info["results"] = self._game.results() if row is None else row.results()
        if self.render_mode == "human":
            self.render()
        return obs, float(reward), done, False, info

    def action_masks(self) -> np.ndarray:
        """The legal-action mask (sb3-contrib MaskablePPO calls this)."""
        if self._row is None:
            if self._game is None:  # as step(): no episode to mask yet
                raise RuntimeError("action_masks() called before reset(); call reset() first")
            return np.array(legal_mask(self._game.state, self.seat), bool)
        return self._mask.copy()

    def render(self):
        if self.render_mode is None or self.game is None:
            return None
        if self.render_mode == "rgb_array":
            return seat_picture(self.world, self.game.observe(self.seat))
        text = self.game.observation_text(self.seat)
        if self.render_mode == "human":
            print(text)
            return None
        return text

    def _observe(self) -> tuple[dict | np.ndarray, dict]:
        """The learner's observation and ``info`` now."""
        if self._row is None:
            obs, face_info = self.face.observe(self._game, self.seat)
        else:
            rows = self._row.observe_seat(self.seat)
            self._mask = rows[0, -self.face.n_actions:] > 0
            obs, face_info = self.face.split(rows)[0]
        return obs, {"seat": self.seat, "score": self._score, **face_info}

    def _replay(self, game: Game, joint: np.ndarray) -> None:
        """One recorded turn into the scalar game as the scalar path plays it: the learner's
        recorded index, and each opponent's own scalar decision (sentence, say, notes) in the
        same state, which its batched twin's index matched in effect."""
        mine = to_intent(int(joint[self.seat]), self.world, self.seat,
                         game.state.room[self.seat])
        play_turn(game, self.seat, mine, self.opponents)


def play_turn(game: Game, seat: int, mine, opponents: Sequence) -> None:
    """One turn of ``game``: ``seat`` plays ``mine``, the other seats (in order) ask
    ``opponents`` for theirs."""
    actions: list = [None] * SEATS
    says, notes = [""] * SEATS, [""] * SEATS
    scripted = [False] * SEATS
    actions[seat] = mine
    others = [s for s in range(SEATS) if s != seat]
    for policy, s in zip(opponents, others):
        answer = policy.act(game, s)
        # A policy may answer with a decision record (agents.Decision: action, say, notes,
        # scripted); duck-typed because sim never imports agents.
        actions[s] = getattr(answer, "action", answer)
        says[s] = getattr(answer, "say", "") or ""
        notes[s] = getattr(answer, "notes", "") or ""
        scripted[s] = bool(getattr(policy, "scripted", False)
                           or getattr(answer, "scripted", False))
    game._play(actions, says, notes, scripted, stored=False)  # (play_turn's acts, uncopied)


def batched_twins(specs: Sequence) -> list[tuple[object, list[int]]] | None:
    """The opponents' batched twins, one per distinct name with the opponent positions it
    plays, or None (the scalar path) unless every spec is a plain name whose batched policy
    says ``scalar_twin``: it picks, in every state, the index with the effect of the scalar
    policy of that name, and keeps no state (factor, magpie; not random, whose stream is its
    own)."""
    positions: dict[str, list[int]] = {}
    for k, spec in enumerate(specs):
        if not isinstance(spec, str) or ":" in spec or not spec.strip():
            return None
        positions.setdefault(spec.strip().lower(), []).append(k)
    twins = []
    for name, ks in positions.items():
        try:
            twin = BATCHED_POLICIES.make(name) if BATCHED_POLICIES.factory(name) else None
        except Exception:  # the twin only speeds up: a broken one is skipped, as unknown
            return None
        if getattr(twin, "scalar_twin", False) is not True:
            return None
        twins.append((twin, ks))
    return twins
