"""The guild game: a faithful, seed-compatible simulator (rules engine, parser, views).

Public names follow docs/api.md §1.  Importing ``sim`` imports no other package of the
project, and no heavy one: Gymnasium learns the environment ids when it is imported (before or
after ``sim``), and their modules (``sim.envs``) and the batched engine (``sim.batched``) load
on first use.

The wings, lowest first (each imports only from those below it, checked by import-linter):
``sim.rules`` (the game), ``sim.language`` (sentences and text), ``sim.game`` and
``sim.policies`` (the facade and the policy-name registry), ``sim.replay``, ``sim.codec``
(action table, numeric observation), ``sim.batched`` (the batched engine), ``sim.envs``
(Gymnasium, PettingZoo and vector faces).
"""

from . import native

native.choose()  # the compiled rules, or their sources if the build is stale (sim/native.py)

from .game import Game, GameConfig, check_seat, load_config
from .hooks import after_import
from .replay import replay
from .rules.errors import (
    ConfigError,
    GuildError,
    IntentError,
    ReplayMismatch,
    StateError,
    TurnError,
)
from .rules.intents import KINDS, REASONS, Intent
from .rules.world import STANDARD_TOWN, World
from .rules.worldfile import WorldFileError, load_world


def parallel_env(**kwargs):
    """The PettingZoo ``ParallelEnv`` (docs/api.md §2); PettingZoo is imported on first use."""
    from .envs.parallel import parallel_env as make

    return make(**kwargs)


def env(**kwargs):
    """The PettingZoo AEC environment: ``parallel_env``'s seats asked one after another, the
    same games (PettingZoo's usual pair of ``env()`` and ``parallel_env()``)."""
    from .envs.parallel import env as make

    return make(**kwargs)


def _register() -> None:
    """Register ``guild/Guild-v0`` by entry-point string, so nothing heavy loads until make()."""
    import gymnasium

    if "guild/Guild-v0" not in gymnasium.registry:
        # make_vec(..., vectorization_mode="vector_entry_point") gives the batched engine
        # (sim.envs.vector); "sync"/"async" wrap GuildEnv as usual.
        gymnasium.register(id="guild/Guild-v0", entry_point="sim.envs.gym:GuildEnv",
                           vector_entry_point="sim.envs.vector:GuildVectorEnv")


# Gymnasium (and numpy under it) costs ~0.2 s to import, two thirds of ``import sim``; a league
# of the baselines, a replay check or ``guild --help`` never needs it. So the id is registered
# now if Gymnasium is loaded, else the moment it is (``import sim; import gymnasium`` and the
# other order both find ``guild/Guild-v0``; so does ``gymnasium.make("sim:guild/Guild-v0")``).
after_import("gymnasium", _register)


def parse_sentence(text: str, game: Game, seat: int) -> Intent:
    """Parse ``text`` as ``seat``'s sentence against the game's current (start-of-turn) state.

    Pure and total: never raises on any string.  The game's 240-rune cut and one-lining are
    applied first, exactly as ``play_turn`` does.  A ``game`` that is not a ``Game`` or a seat
    that is not an int 0..5, or a ``text`` that is not a str (``None`` or bytes would be read
    as the words of their repr), raises ``TurnError``.
    """
    if not isinstance(game, Game):
        raise TurnError(f"parse_sentence: game must be a Game; got {type(game).__name__}")
    if not isinstance(text, str):
        raise TurnError(f"parse_sentence: text must be a str; got {type(text).__name__}")
    check_seat(seat)
    return game.intent_for(text, seat)[0]


__all__ = [
    "KINDS", "REASONS", "STANDARD_TOWN", "ConfigError", "Game", "GameConfig", "GuildError",
    "Intent", "IntentError", "ReplayMismatch", "StateError", "TurnError", "World",
    "WorldFileError", "env", "load_config", "load_world", "parallel_env", "parse_sentence",
    "replay",
]
