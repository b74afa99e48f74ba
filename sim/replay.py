"""Re-deriving an episode from its seed and recorded acts (RULES §15.4).

The recorded ``turn`` snapshots, ``act`` events and ``end`` reason are checked against what the
rules produce; the first difference raises ``ReplayMismatch`` naming the event.  Acts recorded
from structured intents carry a ``structured`` key (our extension of §15.2) and are replayed
from it; all others are replayed from their sentence.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from .game import Game, GameConfig
from .rules.errors import ReplayMismatch
from .rules.intents import Intent
from .rules.world import SEATS, STANDARD_TOWN, World


class TownProblem(NamedTuple):
    """Why a replay's recorded town is not the one given; ``standard``: it was played in the
    standard town (so the advice is to give no world)."""

    why: str
    standard: bool


def town_problem(config: object, world: World | None) -> TownProblem | None:
    """Why ``world`` (``None``: the standard town) is not the town a replay's ``config``
    records (its ``world``, RULES §16.1), or ``None``.  The record holds the rooms, goods,
    keepers and the guild, not the purses or the stock, so two towns that differ only there
    pass here and part at the first act they change."""
    recorded = config.get("world") if isinstance(config, dict) else None
    town = STANDARD_TOWN if world is None else world
    if recorded is None or recorded == town.to_json():
        return None
    if recorded == STANDARD_TOWN.to_json():
        return TownProblem("the replay was played in the standard town, not the world given",
                           True)
    if world is None:
        return TownProblem("the replay was played in a world file's town, not the standard "
                           "one", False)
    return TownProblem("the replay was played in another town than the world given", False)


def replay(config: dict | GameConfig, events: Sequence[dict], world: World | None = None) -> Game:
    """Play the recorded acts again and return the game; raise ``ReplayMismatch`` on a difference.

    Args:
        config: a ``GameConfig`` or its JSON form (``seed``, ``turns``, ``speech``,
            ``thievery``, optional ``players``).
        events: the episode's events in JSON form, starting with ``start``.
        world: the town, when it is not the standard one (a JSON ``config`` records the town
            it was played in: another one is refused before any act, :func:`town_problem`).
    """
    cfg = config if isinstance(config, GameConfig) else GameConfig.from_dict(config, world)
    problem = town_problem(config, world)  # (after the config: a world that is none says so)
    if problem is not None:
        advice = ("replay it without world=" if problem.standard else
                  "pass the town it was played in (world=sim.rules.worldfile.load_world(FILE)"
                  "[0])")
        raise ReplayMismatch(f"{problem.why}; {advice}", 0)
    if isinstance(events, (str, bytes)) or not isinstance(events, Sequence):
        raise ReplayMismatch(f"events must be a list of event objects; got "
                             f"{type(events).__name__}", 0)
    events = list(events)
    if not events or not isinstance(events[0], dict) or events[0].get("kind") != "start":
        raise ReplayMismatch("event 0 must be the 'start' event", 0)
    game = Game(cfg)
    i = 1
    # The opening snapshot of turn 0.
    i = _expect(game, events, i, 1)
    while i < len(events):
        ev = events[i]
        kind = ev.get("kind") if isinstance(ev, dict) else None
        if kind == "end":
            reason = ev.get("text", "")
            if not game.done:
                if reason != "deadline":
                    raise ReplayMismatch(f"event {i}: recorded end {reason!r} before the last "
                                         "turn; only 'deadline' can end an episode early", i)
                game.end_early()
            _compare(game.events[-1], ev, i)
            i += 1
            if i != len(events):
                raise ReplayMismatch(f"event {i}: events recorded after the end", i)
            return game
        if kind != "act":
            raise ReplayMismatch(f"event {i}: expected an 'act' or 'end' event, got {kind!r}", i)
        batch = events[i:i + SEATS]
        if len(batch) < SEATS or any(not isinstance(e, dict) or e.get("kind") != "act"
                                     for e in batch):
            raise ReplayMismatch(f"event {i}: a turn needs {SEATS} act events in a row", i)
        if game.done:
            raise ReplayMismatch(f"event {i}: acts recorded after the last turn", i)
        by_seat: list[dict | None] = [None] * SEATS
        for e in batch:
            seat = e.get("seat")
            if not isinstance(seat, int) or not 0 <= seat < SEATS or by_seat[seat] is not None:
                raise ReplayMismatch(f"event {i}: bad or repeated seat {seat!r} in a turn", i)
            by_seat[seat] = e
        actions = [_action(e) for e in by_seat]  # type: ignore[arg-type]
        start = len(game.events)
        try:
            game._play(actions, [e.get("say", "") for e in by_seat],
                       [e.get("text", "") for e in by_seat],
                       [bool(e.get("scripted", False)) for e in by_seat], stored=True)
        except ValueError as err:
            raise ReplayMismatch(f"event {i}: the recorded turn cannot be played: {err}",
                                 i) from err
        produced = game.events[start:start + SEATS]
        for k in range(SEATS):
            _compare(produced[k], events[i + k], i + k)
        i = _expect(game, events, i + SEATS, start + SEATS)
    if not game.done:
        # An unfinished recording is fine: the game stands where the record stops.
        return game
    raise ReplayMismatch(f"event {len(events)}: the recorded episode has no 'end' event",
                         len(events))


def _action(e: dict) -> str | Intent:
    s = e.get("structured")
    if isinstance(s, dict):
        try:
            return Intent(s.get("kind", "none"), s.get("toRoom", -1), s.get("item", -1),
                          s.get("qty", 1), s.get("npc", -1), s.get("other", -1),
                          s.get("coin", 0), s.get("reason"), s.get("spoken", ""))
        except ValueError as err:
            raise ReplayMismatch(
                f"act of seat {e.get('seat')}: bad structured intent: {err}") from err
    sentence = e.get("sentence", "")
    return sentence if isinstance(sentence, str) else ""


def _expect(game: Game, events: Sequence[dict], i: int, produced_at: int) -> int:
    """Match the snapshot that follows a turn (or the final closing snapshot)."""
    if produced_at >= len(game.events):
        return i
    mine = game.events[produced_at]
    if mine["kind"] == "turn":
        if i >= len(events):
            return i
        _compare(mine, events[i], i)
        i += 1
    return i


def _compare(mine: dict, recorded: dict, i: int) -> None:
    if not isinstance(recorded, dict):
        raise ReplayMismatch(f"event {i}: not an object", i)
    a = {k: v for k, v in mine.items() if k != "structured"}
    b = {k: v for k, v in recorded.items() if k != "structured"}
    if a == b:
        return
    if a.get("kind") != b.get("kind"):
        raise ReplayMismatch(f"event {i}: expected a {a.get('kind')!r} event, recorded "
                             f"{b.get('kind')!r}", i)
    for key in sorted(set(a) | set(b)):
        if a.get(key) != b.get(key):
            raise ReplayMismatch(f"event {i} ({a.get('kind')}, turn {a.get('turn')}): field "
                                 f"{key!r} is {b.get(key)!r} in the record but the rules give "
                                 f"{a.get(key)!r}", i)
