"""PettingZoo face: all six seats act each turn, simultaneously, as the rules resolve them.

Agents ``seat_0`` .. ``seat_5``; spaces, observations, masks and rewards as in ``sim.envs.gym``
(per seat).  Options: ``seed`` (a default for ``reset``), ``turns``, ``thievery``, ``speech``,
``world``, ``text_mode``, ``flatten``, ``reward`` and ``render_mode`` (``"ansi"``/``"human"``).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from pettingzoo import ParallelEnv
from pettingzoo.utils.conversions import parallel_to_aec
from pettingzoo.utils.wrappers import BaseWrapper

from ..batched.setup import check_env_seed
from ..codec.action_table import legal_mask, to_intent
from ..game import Game, GameConfig
from ..rules.scoring import score
from ..rules.world import SEATS, STANDARD_TOWN, World
from .face import SeatFace, seat_spaces
from .row import RowEpisode


def parallel_env(**kwargs) -> GuildParallelEnv:
    """The PettingZoo ``ParallelEnv`` of docs/api.md §2."""
    return GuildParallelEnv(**kwargs)


def env(**kwargs) -> _CheckedSteps:
    """The PettingZoo AEC environment: the parallel one with its seats asked one after another
    (PettingZoo's ``parallel_to_aec``).  The turn still resolves when the last seat has chosen,
    as the rules resolve all six acts at once, so both faces play the same games.  Each seat's
    action is checked when it is given (:class:`_CheckedSteps`): the conversion only stores it,
    so a bad one surfaced at the last seat's step, blamed on nobody, and stayed."""
    parallel = GuildParallelEnv(**kwargs)
    return _CheckedSteps(parallel_to_aec(parallel), parallel)


class _CheckedSteps(BaseWrapper):
    """The AEC env whose ``step`` checks the selected seat's action before storing it.

    At module level so that the env pickles (a class made inside a function does not)."""

    def __init__(self, aec, parallel: GuildParallelEnv) -> None:
        super().__init__(aec)
        self._face = parallel.face

    def step(self, action) -> None:
        """A live seat's action is checked like any other (None included: a ``ValueError``
        naming the seat, nothing stored); only a terminated or truncated seat steps with None,
        PettingZoo's convention for removing it."""
        agent = self.agent_selection
        if not (self.terminations.get(agent) or self.truncations.get(agent)):
            self._face.checked(agent, action)
        super().step(action)


class GuildParallelEnv(ParallelEnv):
    metadata = {"render_modes": ["ansi", "human"], "name": "guild_v0", "is_parallelizable": True}

    def __init__(self, seed: int | None = None, turns: int = 14, thievery: bool = True,
                 speech: bool = True, world: World | None = None, text_mode: bool = False,
                 flatten: bool = False, reward: str = "dense",
                 render_mode: str | None = None) -> None:
        if reward not in ("dense", "terminal"):
            raise ValueError(f"reward must be 'dense' or 'terminal'; got {reward!r}")
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be one of {self.metadata['render_modes']}; "
                             f"got {render_mode!r}")
        self.world = STANDARD_TOWN if world is None else world
        GameConfig(turns=turns, thievery=thievery, speech=speech, world=self.world)  # validate
        self.default_seed = check_env_seed(seed)
        self.turns, self.thievery, self.speech = turns, thievery, speech
        self.reward_mode = reward
        self.render_mode = render_mode
        self.face = SeatFace(self.world, text_mode, flatten)
        self._spaces = seat_spaces(self.world, text_mode, flatten)
        self.possible_agents = [f"seat_{s}" for s in range(SEATS)]
        self.agents: list[str] = []
        self._game: Game | None = None  # text mode: the scalar game itself
        self._row: RowEpisode | None = None  # structured actions: the one-row batched engine
        self._scores = [0.0] * SEATS
        self._rng = np.random.default_rng(seed)

    def observation_space(self, agent: str):
        """Every seat has the same spaces, built once in ``__init__``."""
        return self._spaces[0]

    def action_space(self, agent: str):
        return self._spaces[1]

    def reset(self, seed: int | None = None, options: dict | None = None):
        seed = check_env_seed(seed)
        if seed is None:
            seed = self.default_seed if self._game is None and self._row is None else None
        if seed is not None:
            self._rng = np.random.default_rng(seed)
        game_seed = int(self._rng.integers(0, 2 ** 31 - 1))
        config = GameConfig(seed=game_seed, turns=self.turns, thievery=self.thievery,
                            speech=self.speech, world=self.world)
        if self.face.text_mode:
            self._game = Game(config)
        else:
            self._row = self._row or RowEpisode(config)
            self._row.reset(config, self._replay)
        self.agents = list(self.possible_agents)
        self._scores = [0.0] * SEATS
        return self._views()

    @property
    def game(self) -> Game | None:
        """The scalar ``Game`` of the episode (with structured actions: replayed on demand)."""
        return self._game if self._row is None else self._row.game

    def step(self, actions: dict):
        if not self.agents:
            raise RuntimeError("step() called before reset() or after the episode ended")
        agents = self.possible_agents  # every seat acts until the episode ends
        if not isinstance(actions, Mapping):
            raise ValueError(f"actions must be a dict of an action per agent ({agents[0]}.."
                             f"{agents[-1]}); got the {type(actions).__name__} {actions!r:.80}")
        missing = [a for a in agents if a not in actions]
        if missing:
            raise ValueError(f"step needs an action for every agent; missing {missing}")
        if len(actions) != len(agents):  # a key that is no agent would be dropped unplayed
            unknown = [a for a in actions if a not in self.agents]
            raise ValueError(f"step takes actions of the live agents {agents[0]}.."
                             f"{agents[-1]} only; got unknown agents {unknown!r:.200}")
        # each checked once, before any is played, and named when refused: the checked form
        # (a sentence, or a table index) is what is played
        picked = [self.face.checked(a, actions[a]) for a in agents]
        if self._row is None:
            game = self._game
            game._play([self.face.action(game, s, a) for s, a in enumerate(picked)], None, None,
                       None, stored=False)  # (play_turn's acts, uncopied)
            done, scores = game.done, [score(game.state, s) for s in range(SEATS)]
        else:
            done = self._row.step(np.array(picked, np.int64))
            scores = self._row.scores
        if self.reward_mode == "dense":
            rewards = {a: float(new - old) for a, new, old in zip(agents, scores, self._scores)}
        else:
            rewards = {a: float(new) if done else 0.0 for a, new in zip(agents, scores)}
        self._scores = list(scores)
        obs, infos = self._views()
        terms = dict.fromkeys(agents, done)
        truncs = dict.fromkeys(agents, False)
        if done:
            results = self._game.results() if self._row is None else self._row.results()
            for a in agents:
                infos[a]["results"] = results
            self.agents = []
        if self.render_mode == "human":
            self.render()
        return obs, rewards, terms, truncs, infos

    def action_masks(self, agent: str) -> np.ndarray:
        """The legal-action mask of ``agent``; an unknown agent is named with the known ones."""
        agents = self.possible_agents
        if not isinstance(agent, str) or agent not in agents:
            raise ValueError(f"action_masks: agent must be one of {agents[0]}..{agents[-1]}; "
                             f"got {agent!r:.80}")
        s = agents.index(agent)
        if self._row is None:
            if self._game is None:  # as step(): no episode to mask yet
                raise RuntimeError("action_masks() called before reset(); call reset() first")
            return np.array(legal_mask(self._game.state, s), bool)
        return self._row.observe()[s, -self.face.n_actions:] > 0

    def render(self):
        if self.game is None or self.render_mode is None:
            return None
        text = spectator_text(self.game)
        if self.render_mode == "human":
            print(text)
            return None
        return text

    def close(self) -> None:
        pass

    def _replay(self, game: Game, joint: np.ndarray) -> None:
        """One recorded turn into the scalar game, as ``step`` played it before the row engine."""
        game._play([to_intent(int(i), self.world, s, game.state.room[s])
                    for s, i in enumerate(joint)], None, None, None, stored=False)

    def _views(self) -> tuple[dict, dict]:
        agents = self.possible_agents
        if self._row is None:
            obs, infos = {}, {}
            for a, score_now, (o, face_info) in zip(agents, self._scores,
                                                    self.face.observe_all(self._game)):
                obs[a] = o
                infos[a] = {"score": score_now, **face_info}
            return obs, infos
        rows, masks = self.face.split_rows(self._row.observe())
        return dict(zip(agents, rows)), {a: {"score": score_now, "action_mask": mask}
                                         for a, score_now, mask in zip(agents, self._scores, masks)}


def spectator_text(game: Game) -> str:
    """A short town summary for ``render``: where each seat stands and its score."""
    st = game.state
    w = game.world
    lines = [f"Turn {min(st.turn, st.turns - 1) + 1} of {st.turns}"
             + (f" - over ({st.reason})" if st.done else "")]
    for s in range(SEATS):
        lines.append(f"  {st.aliases[s]:<9} {w.rooms[st.room[s]].name:<18} coin {st.coin[s]:>3} "
                     f"pack {sum(st.items[s])} score {score(st, s):+.3f}")
    return "\n".join(lines)
