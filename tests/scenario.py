"""Small helpers to stage scenarios: a game, seats placed, packs and purses set."""

from __future__ import annotations

import copy

from sim import Game, GameConfig, Intent

WAIT = Intent("wait")


def staged(seed: int = 0, turns: int = 14, thievery: bool = True, speech: bool = True,
           everyone: int | None = None, **cogs: dict) -> Game:
    """A fresh game whose seats are edited through ``restore``.

    ``cogs`` maps ``s<seat>`` to fields of that seat's snapshot entry, e.g.
    ``staged(s0={"room": 5, "items": [0, 0, 0, 0, 0, 1]})``; ``everyone`` first puts all six
    seats in one room.
    """
    game = Game(GameConfig(seed=seed, turns=turns, thievery=thievery, speech=speech))
    snap = copy.deepcopy(game.snapshot())
    if everyone is not None:
        for cog in snap["cogs"]:
            cog["room"] = everyone
    for key, fields in cogs.items():
        snap["cogs"][int(key[1:])].update(fields)
    game.restore(snap)
    return game


def edit(game: Game, **fields) -> None:
    """Restore the current snapshot with top-level changes (``npcs``/``rooms`` callbacks)."""
    snap = copy.deepcopy(game.snapshot())
    for key, fn in fields.items():
        fn(snap[key])
    game.restore(snap)


def turn(game: Game, **acts) -> list[dict]:
    """Play one turn: ``acts`` maps ``s<seat>`` to a sentence or Intent; others wait."""
    actions: list = [WAIT] * 6
    for key, action in acts.items():
        actions[int(key[1:])] = action
    return game.play_turn(actions)


def fork(game: Game) -> Game:
    """A copy of ``game`` to change freely (the town is shared; it never changes)."""
    copied = copy.copy(game)
    copied.state = copy.deepcopy(game.state, {id(game.world): game.world})
    copied.events = []
    return copied


def played_game(seed: int, played: int, turns: int, thievery: bool) -> Game:
    """A game after ``played`` turns of factor and magpie seats (drawn per seat) playing their
    own sentence or, six times in ten, a random legal one (seeded): packs, meetings, offers
    and bonds happen, so every group of legal moves shows up somewhere."""
    import random

    from agents import make_policy
    from league.cli import play_text

    game = Game(GameConfig(seed=seed, turns=turns, thievery=thievery))
    rng = random.Random(seed)
    policies = [make_policy(rng.choice(("factor", "magpie"))) for _ in range(len(game.aliases))]
    for _ in range(played):
        game.play_turn([rng.choice(play_text.legal_moves(game, s)).sentence
                        if rng.random() < 0.6 else p.act(game, s)
                        for s, p in enumerate(policies)])
    return game
