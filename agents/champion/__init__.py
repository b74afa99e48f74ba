"""``champion``: the strongest built-in opponent, a ``guild train`` league-trained network
shipped as numpy arrays (``champion.npz``) and played with numpy alone (``agents.champion.net``),
so it works in a plain install, without torch.

It plays wherever a policy name is accepted: ``make_policy("champion")`` (scalar, leagues,
``guild play --opponents``, ``guild evaluate``), the batched registry (``guild evaluate`` at
batched speed, ``gymnasium.make_vec`` opponents, ``guild train --against champion``), and
``guild verify`` re-plays its seats. It plays the standard town only (its observation and
action table have that town's shapes): ``check_world`` refuses another, and the faces ask it
before the first turn (``sim.policies.check_town``). The recipe that made it is
``recipe.toml`` beside it (``guild train --config agents/champion/recipe.toml``); the file's
``meta`` records that run's summary digests, and ``recipe_digests.json`` the recipe's first
update re-run on machines that round otherwise (docs/training.md, "The champion").

Both forms choose the masked argmax of the same logits from the same observation
(``sim.codec.encode`` and its batched twin), so a seat plays alike in either engine.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import numpy as np

from agents.champion.net import NetError, NumpyNet, load_net
from sim import Game, Intent
from sim.batched.observe import encode as encode_rows
from sim.batched.tables import tables_for
from sim.codec.action_table import TABLE_VERSION, legal_mask, to_intent
from sim.codec.encode import encode_flat
from sim.game import seat_index
from sim.rules.world import STANDARD_TOWN

CHAMPION_FILE = Path(__file__).with_name("champion.npz")
RECIPE_FILE = Path(__file__).with_name("recipe.toml")
# The recipe's first update re-run on other arithmetic than the shipped run's (its "about")
RERUN_DIGESTS_FILE = Path(__file__).with_name("recipe_digests.json")
_NET: NumpyNet | None = None
_LOCK = threading.Lock()

__all__ = ["CHAMPION_FILE", "RECIPE_FILE", "RERUN_DIGESTS_FILE", "BatchedChampion", "Champion",
           "NetError", "champion_net"]


def champion_net() -> NumpyNet:
    """The shipped network, loaded once per process and checked against this game's table."""
    global _NET
    with _LOCK:
        if _NET is None:
            tables = tables_for(STANDARD_TOWN)
            _NET = load_net(CHAMPION_FILE, TABLE_VERSION, tables.obs_width, tables.n_actions)
        return _NET


class Champion:
    """The champion playing one seat of the scalar game from that seat's own encoding."""

    name = "champion"
    scripted = False

    def __init__(self) -> None:
        self.net = champion_net()

    def reset(self, seed: int | None = None) -> None:
        """Stateless: nothing to reset. Present, as on ``Factor`` and ``Magpie``, so
        ``GuildEnv.reset`` draws an opponent seed for it as ``GuildVectorEnv`` does for every
        opponent: both faces then draw the same game seeds episode after episode."""

    def act(self, game: Game, seat: int) -> Intent:
        seat = seat_index(seat)
        st = game.state
        return to_intent(self.index(game, seat), st.world, seat, st.room[seat])

    def index(self, game: Game, seat: int) -> int:
        """The action-table index it chooses for ``seat`` (always a legal one)."""
        return int(self.net.best(self.observation(game, seat))[0])

    def logits(self, game: Game, seat: int) -> np.ndarray:
        """Its masked logits for ``seat`` (``guild verify`` compares near-ties with them)."""
        return self.net.logits(self.observation(game, seat))[0]

    def check_world(self, world: Any) -> None:
        """``ValueError`` unless ``world`` is the standard town, the only one it was trained in
        (its observation and action table have that town's shapes)."""
        _check_town(world)

    def observation(self, game: Game, seat: int) -> np.ndarray:
        """Its input for ``seat`` (``index`` and ``logits`` read it: the seat is checked here)."""
        seat = seat_index(seat)
        st = game.state
        _check_town(st.world)
        return np.asarray(encode_flat(st, seat, legal_mask(st, seat)), np.float32)[None]


class BatchedChampion:
    """The champion choosing for many ``(row, seat)`` pairs of a batched engine at once."""

    name = "champion"
    batched = True
    # In every state ``act`` picks the scalar Champion's index and keeps no state:
    # ``guild/Guild-v0`` may play it in the scalar one's place.
    scalar_twin = True

    def __init__(self) -> None:
        self.net = champion_net()

    def check_world(self, world: Any) -> None:
        """As :meth:`Champion.check_world`."""
        _check_town(world)

    def act(self, engine: Any, rows: np.ndarray, seats: np.ndarray) -> np.ndarray:
        """Its index for each seat ``seats[i]`` of row ``rows[i]`` (``encode`` checks the
        pairs)."""
        _check_town(engine.world)
        return self.net.best(encode_rows(engine, rows, seats))


def _check_town(world: Any) -> None:
    if world is not STANDARD_TOWN and world != STANDARD_TOWN:
        raise ValueError("champion: it was trained in the standard town and plays only there; "
                         "this game uses another world (a world file's town)")
