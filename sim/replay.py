"""Re-deriving an episode from its seed and recorded acts (RULES §15.4).

The recorded ``turn`` snapshots, ``act`` events and ``end`` reason are checked against what the
rules produce; the first difference raises ``ReplayMismatch`` naming the event.  Acts recorded
from structured intents carry a ``structured`` key (our extension of §15.2) and are replayed
from it; all others are replayed from their sentence.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from typing import NamedTuple

from .game import Game, GameConfig
from .rules.errors import ConfigError, ReplayMismatch, shown
from .rules.intents import Intent
from .rules.text import as_stored
from .rules.world import (
    MAX_NOTES_LEN,
    MAX_SAY_LEN,
    MAX_SENTENCE_LEN,
    SEATS,
    STANDARD_TOWN,
    World,
)


class TownProblem(NamedTuple):
    """Why a replay's recorded town is not the one given; ``standard``: it was played in the
    standard town (so the advice is to give no world)."""

    why: str
    standard: bool


def town_problem(config: object, world: World | None) -> TownProblem | None:
    """Why ``world`` (``None``: the standard town) is not the town a replay's ``config``
    records (its ``world``, RULES §16.1), or ``None``.  The record holds the rooms, goods,
    keepers and the guild, not the purses or the stock, so two towns that differ only there
    pass here; the opening snapshot shows those, and :func:`purse_problem` compares it."""
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


def purse_problem(config: GameConfig, events: Sequence[dict],
                  game: Game | None = None) -> TownProblem | None:
    """Why the opening snapshot of ``events`` (event 1, before any act) is not the one
    ``config``'s town gives, when the purses or the stock are all that differ there, or
    ``None``: the town's ``start_coin``, ``keeper_start_coin`` or opening stock are not those
    the game was played with (the replay's ``world`` does not record them).  ``standard``:
    the snapshot is the standard town's, so the game was played there.  Asked only of a town
    other than the standard one: there, such a difference is a mismatch of the record.
    ``game``: a fresh game of ``config`` already made (the replay's), not made again."""
    if (isinstance(events, (str, bytes)) or not isinstance(events, Sequence) or len(events) < 2
            or _standard(config.world)):
        return None
    opening = (game if game is not None else Game(config)).events[1]
    why = _purse_difference(config.world, opening, events[1])
    if why is None:
        return None
    standard = Game(replace(config, world=STANDARD_TOWN)).events[1] == events[1]
    if standard:
        why += ", and it is the standard town's: the game was played there"
    return TownProblem(why, standard)


def replay(config: dict | GameConfig, events: Sequence[dict], world: World | None = None) -> Game:
    """Play the recorded acts again and return the game; raise ``ReplayMismatch`` on a difference.

    Args:
        config: a ``GameConfig`` or its JSON form (``seed``, ``turns``, ``speech``,
            ``thievery``, optional ``players``).
        events: the episode's events in JSON form, starting with ``start``.
        world: the town, when it is not the standard one (a JSON ``config`` records the town
            it was played in: another one is refused before any act, :func:`town_problem`;
            so is one whose purses or stock differ, :func:`purse_problem`).
    """
    if isinstance(config, GameConfig) and world is not None:  # (a JSON config reads it below)
        if replace(config, world=world).world != config.world:  # (checks it is a World)
            raise ConfigError("world= is another town than the GameConfig's world: give the "
                              "town once, in the GameConfig or as world= with a JSON config")
    cfg = config if isinstance(config, GameConfig) else GameConfig.from_dict(config, world)
    problem = town_problem(config, world)  # (after the config: a world that is none says so)
    if problem is not None:
        advice = "replay it without world=" if problem.standard else _PASS_TOWN
        raise ReplayMismatch(f"{problem.why}; {advice}", 0)
    if isinstance(events, (str, bytes)) or not isinstance(events, Sequence):
        raise ReplayMismatch(f"events must be a list of event objects; got "
                             f"{type(events).__name__}", 0)
    events = list(events)
    if not events or not isinstance(events[0], dict) or events[0].get("kind") != "start":
        raise ReplayMismatch("event 0 must be the 'start' event", 0)
    game = Game(cfg)
    purses = purse_problem(cfg, events, game)
    if purses is not None:
        advice = "replay it without world=" if purses.standard else _PASS_TOWN
        raise ReplayMismatch(f"{purses.why}; {advice}", 1)
    try:
        return _play_record(game, events)
    except _Differs as e:
        if _standard(cfg.world):
            raise
        raise ReplayMismatch(f"{e} {_UNRECORDED}", e.index) from None


# What a replay's ``world`` does not record: a world file that differs from the game's town
# only there passes the town check and differs later, at the first event they decide.
_UNRECORDED = ("(does the town given differ from the game's where a replay does not record it: "
               "carry_limit, quest_items or keywords? then pass the one it was played in)")


class _Differs(ReplayMismatch):  # noqa: N818 - a ReplayMismatch
    """A recorded event differs from the rules' (not a malformed record)."""


def _play_record(game: Game, events: list) -> Game:
    """Play ``events`` (after the start event) in ``game``, matching every event."""
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
        for k, e in enumerate(batch):
            seat = e.get("seat")
            if (type(seat) is not int or not 0 <= seat < SEATS  # (not True for 1)
                    or by_seat[seat] is not None):
                raise ReplayMismatch(f"event {i}: bad or repeated seat {seat!r} in a turn", i)
            by_seat[seat] = e
            _stored_text(e, i + k)
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


_STORED = (("sentence", MAX_SENTENCE_LEN), ("say", MAX_SAY_LEN), ("text", MAX_NOTES_LEN))


def _stored_text(e: dict, i: int) -> None:
    """An act's texts must be as the game stores them (one line, cut to its cap, RULES §19):
    they are replayed as given, so a longer or multi-line one is a record the rules never
    wrote."""
    for field, cap in _STORED:
        text = e.get(field, "")
        if isinstance(text, str) and text and not as_stored(text, cap):
            raise ReplayMismatch(f"event {i} (act, turn {shown(e.get('turn'))}): field "
                                 f"{field!r} is not as the game stores it (one line of at most "
                                 f"{cap} characters): {shown(text, 60)}", i)


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
    if same(a, b):
        return
    if a.get("kind") != b.get("kind"):
        raise ReplayMismatch(f"event {i}: expected a {a.get('kind')!r} event, recorded "
                             f"{b.get('kind')!r}", i)
    path, ours, theirs = _first_difference(a, b) or ((), a, b)
    raise _Differs(f"event {i} ({a.get('kind')}, turn {a.get('turn')}): field "
                   f"{_path_text(path)!r} is {shown(theirs, 60)} in the record but the rules "
                   f"give {shown(ours, 60)}", i)


_PASS_TOWN = "pass the town it was played in (world=sim.rules.worldfile.load_world(FILE)[0])"

_Path = tuple[str | int, ...]


class _Absent:
    """A key one side lacks, as a message shows it (not ``None``, which the other may hold)."""

    def __repr__(self) -> str:
        return "(absent)"


_ABSENT = _Absent()


# JSON text of a value as json writes it (no cycle check: a value of JSON is a tree)
_ENCODE = json.JSONEncoder(separators=(",", ":"), check_circular=False).encode


def same(a: object, b: object) -> bool:
    """Whether ``a`` and ``b`` are one JSON value: equal, and of the same types throughout.

    Python's ``==`` holds ``True == 1 == 1.0``, so a record whose quantity is ``true`` or
    whose coin is ``4.0`` would pass for the rules' ``1`` and ``4``, and be shown as such.
    Their JSON texts are compared first (C code; a record keeps the rules' key order), then,
    when only the order of keys may differ, the values leaf by leaf."""
    if a != b:
        return False
    try:
        if _ENCODE(a) == _ENCODE(b):
            return True
    except (TypeError, ValueError):  # not JSON: compared leaf by leaf
        pass
    return _first_difference(a, b) is None


def difference(ours: object, theirs: object) -> tuple[str, object, object] | None:
    """Where ``theirs`` (a record) first differs from ``ours`` (what the rules give), types
    and all (:func:`same`): the field (``coin[2]``, empty for the whole value) and the two
    values; ``None`` when they are one value."""
    found = _first_difference(ours, theirs)
    return None if found is None else (_path_text(found[0]), found[1], found[2])


def _first_difference(a: object, b: object,
                      path: _Path = ()) -> tuple[_Path, object, object] | None:
    """The first place where ``a`` (the rules') and ``b`` (the record's) differ, as (path, a's
    value, b's value), going into dicts (keys in sorted order) and lists of equal length;
    ``None`` when they are equal, and of the same types (``True`` is not ``1``, nor ``1.0``
    ``1``)."""
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b), key=str):
            if (key in a) != (key in b):
                return (*path, key), a.get(key, _ABSENT), b.get(key, _ABSENT)
            found = _first_difference(a[key], b[key], (*path, key))
            if found is not None:
                return found
        return None
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for k, (x, y) in enumerate(zip(a, b)):
            found = _first_difference(x, y, (*path, k))
            if found is not None:
                return found
        return None
    return None if type(a) is type(b) and a == b else (path, a, b)


def _path_text(path: _Path) -> str:
    """``("cogs", 2, "coin")`` as ``cogs[2].coin``."""
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else f".{part}" if text else str(part)
    return text


def _purse_difference(world: World, mine: dict, recorded: object) -> str | None:
    """Why the recorded opening snapshot differs from ``mine`` (the rules', in ``world``) when
    only purses and stock differ there (the town's parts a replay's ``world`` does not record),
    naming the first such difference by the world file's key; else ``None``."""
    if not isinstance(recorded, dict) or recorded.get("kind") != "turn" or recorded == mine:
        return None
    if _without_purses(mine) != _without_purses(recorded):
        return None  # more differs than the purses and stock: a mismatch of the record
    found = _first_difference(mine, recorded)
    if found is None:
        return None
    path, ours, theirs = found
    match path:
        case ("cogs", int(seat), "coin"):
            what = f"start_coin (seat {seat}'s purse)"
        case ("npcs", int(k), "coin") if k < world.n_keepers:
            what = f"keeper_start_coin ({world.keepers[k].name}'s purse)"
        case ("npcs", int(k), "stock", int(g)) if k < world.n_keepers and g < world.n_goods:
            what = f"{world.keepers[k].name}'s opening stock of {world.goods[g].name}"
        case _:
            return None
    return (f"the town's purses or stock likely differ from those the game was played with "
            f"(the opening snapshot differs only there: {what} is {shown(theirs, 20)} in the "
            f"record, {shown(ours, 20)} in the world given)")


def _standard(world: World) -> bool:
    return world is STANDARD_TOWN or world == STANDARD_TOWN


_PURSES = {"cogs": ("coin",), "npcs": ("coin", "stock")}


def _without_purses(snapshot: dict) -> dict:
    """``snapshot`` without its seats' and keepers' purses and the keepers' stock."""
    out = dict(snapshot)
    for key, fields in _PURSES.items():
        rows = snapshot.get(key)
        if isinstance(rows, list):
            out[key] = [{f: v for f, v in row.items() if f not in fields}
                        if isinstance(row, dict) else row for row in rows]
    return out
