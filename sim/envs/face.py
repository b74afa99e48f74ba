"""What the single-seat and parallel faces share: spaces, observations, action decoding.

Opponent specs resolve through :mod:`sim.policies` (a registry other packages fill), so no
module of ``sim`` imports ``agents``.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Iterable
from operator import itemgetter

import numpy as np
from gymnasium import spaces

from ..codec.action_table import (
    action_table,
    canonical,
    check_index,
    legal_mask,
    n_actions,
    to_intent,
)
from ..codec.encode import encode, encode_flat, layout, slices
from ..game import Game
from ..language.phrasing import OUTCOMES, outcome_text
from ..language.textview import render_observation
from ..policies import POLICIES, is_policy_function, required_positional
from ..rules.world import (
    COG_NAMES,
    MAX_NOTES_LEN,
    MAX_ROOM_LOG,
    MAX_ROOM_LOG_LEN,
    MAX_SENTENCE_LEN,
    QUESTS,
    SEATS,
    World,
    per_world,
)

DEFAULT_OPPONENTS = ("factor", "magpie", "factor", "magpie", "factor")
# The longest sentence text mode takes: its action space's ``Text(max_length=...)``.
MAX_TEXT_ACTION = MAX_SENTENCE_LEN * 4
# The text observation's ``Text(max_length=...)`` in a town whose longest view is shorter (the
# standard town's, about a tenth of it): a larger town's space is :func:`text_view_bound`.
TEXT_VIEW_LENGTH = 60_000


# What a text space samples from: newline and the printable Basic Multilingual Plane.
TEXT_CHARSET = "\n" + "".join(chr(c) for c in range(0x20, 0xD800))
_NOT_TEXT = re.compile("[\ud800-\udfff]")  # lone surrogates, which the rules replace


class AnyText(spaces.Text):
    """Gymnasium's ``Text`` that holds any Unicode text of its lengths. A seat's view repeats
    what other seats said, emoji and control characters included (the rules flatten line
    breaks and replace lone surrogates, nothing else), and a sentence may hold them too; a
    ``charset`` listing all of Unicode would be a million characters. It samples from
    ``TEXT_CHARSET``."""

    def __init__(self, max_length: int, min_length: int = 0) -> None:
        super().__init__(max_length=max_length, min_length=min_length, charset=TEXT_CHARSET)

    def contains(self, x: object) -> bool:
        return (isinstance(x, str) and self.min_length <= len(x) <= self.max_length
                and _NOT_TEXT.search(x) is None)


def check_seat(seat: object) -> int | None:
    """``seat`` as a plain int (0..5), or None; a float or bool is refused even where it
    equals a seat (``1.0 in range(6)``), since it would fail only later, as an index."""
    if seat is None:
        return None
    if isinstance(seat, bool) or not isinstance(seat, (int, np.integer)) or not (
            0 <= seat < SEATS):
        raise ValueError(f"seat must be an int 0..{SEATS - 1} or None; got {seat!r}")
    return int(seat)


def opponent_specs(opponents: object) -> list:
    """The five opponents' specs (``None``: :data:`DEFAULT_OPPONENTS`), or a ``ValueError``
    naming what is wrong: a single spec such as ``"factor"`` is not read as its characters."""
    if opponents is None:
        return list(DEFAULT_OPPONENTS)
    if isinstance(opponents, (str, bytes, dict)) or not isinstance(opponents, Iterable):
        raise ValueError(f"opponents must be a sequence of {SEATS - 1} policies (for example "
                         f"[{opponents!r:.60}] * {SEATS - 1}); got the "
                         f"{type(opponents).__name__} {opponents!r:.60}")
    specs = list(opponents)
    if len(specs) != SEATS - 1:
        raise ValueError(f"opponents must name {SEATS - 1} policies; got {len(specs)}")
    return specs


def resolve_policy(spec):
    """A policy object from a spec (``sim.policies``), an object with ``act`` or a callable.

    A class and a factory (a plain function requiring no argument) build the policy, as
    ``make_policy`` and their ``module:Name`` specs do (a class has an ``act`` too, but not one
    that plays); any other callable is played as ``act``, so it must take ``(game, seat)``:
    one that cannot is refused here, not by a ``TypeError`` on the first turn."""
    if (isinstance(spec, (str, dict, type)) or is_policy_function(spec)
            or required_positional(spec) == 0):
        return POLICIES.make(spec)
    if hasattr(spec, "act"):
        return spec
    if callable(spec):
        try:
            inspect.signature(spec).bind(None, None)
        except TypeError:
            raise ValueError(f"opponent {spec!r} is a callable that cannot be called as "
                             "fn(game, seat); an opponent is a policy spec, a class, a factory, "
                             "an object with act(game, seat), a policy function of the seat's "
                             "view or such a callable") from None
        except ValueError:
            pass  # no signature to read (some builtins): it is called as it is
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
        obs = spaces.Dict({"observation_text": AnyText(
            max_length=max(TEXT_VIEW_LENGTH, text_view_bound(world)))})
        return obs, AnyText(max_length=MAX_TEXT_ACTION)
    if flat:
        size = sum(shape[0] for shape, _ in lay.values())
        high = np.concatenate([np.full(shape, hi, np.float32) for shape, hi in lay.values()])
        obs = spaces.Box(np.zeros(size, np.float32), high, dtype=np.float32)
    else:
        obs = spaces.Dict({k: spaces.Box(0, 1, shape, np.int8) if k == "action_mask"
                           else spaces.Box(0.0, hi, shape, np.float32)
                           for k, (shape, hi) in lay.items()})
    return obs, spaces.Discrete(n_actions(world))


@per_world
def text_view_bound(world: World) -> int:
    """A length no seat's text view of ``world`` exceeds (as the envs render it: no operator
    prompt), so that every observation lies in the space.

    The view of a made-up seat with every part at its longest is rendered by the text view
    itself, so the bound follows its wording: every number as wide as int64's widest; every
    name (alias, room, keeper, good) and description the town's longest, and one character
    more for a good's count (the longer of its two forms); every room's exits, the most any
    room has; every good in the pack and on the ground, the longest price table; the most log
    lines, offers, retainers at their caps, the longest outcome, sentence and notes; the map
    as it is.  A seat holds two commissions and hears at most one offer from each other seat.
    """
    wide = -(10 ** 19)  # one character wider than any int64 (the parser's, a purse's)
    alias = max((*COG_NAMES, f"Cog {SEATS}"), key=len)
    room = max((r.name for r in world.rooms), key=len)
    keeper = max((k.name for k in world.keepers), key=len)
    good = max((g.name for g in world.goods), key=len)
    # no good is called this, so _count shows it as it is, whichever form a count would pick
    counted = max((n for g in world.goods for n in (g.name, g.plural)), key=len) + "~"
    outcome = max((outcome_text(r, room) for r in OUTCOMES), key=len)
    goods = [{"item": counted, "count": wide} for _ in world.goods]
    quest = {"item": counted, "count": wide, "delivered": -wide, "points": wide,
             "outstanding": wide, "settledBy": keeper, "at": room,
             "cheapest": {"npc": keeper, "at": room, "ask": wide}}
    price = {"item": good, "stock": wide, "ask": wide, "bid": wide}
    view = {
        "turn": wide, "turns": wide, "name": alias, "coin": wide, "items": goods, "carried": 0,
        "carryLimit": wide, "quests": [quest] * QUESTS,
        "room": {"name": room, "desc": max((r.desc for r in world.rooms), key=len),
                 "dark": True,
                 "exits": [{"name": room}] * max(len(r.exits) for r in world.rooms),
                 "ground": goods, "cogs": [alias] * (SEATS - 1),
                 "npc": {"name": keeper, "coin": wide,
                         "goods": [price] * max(len(k.trade) for k in world.keepers)}},
        "heard": ["x" * MAX_ROOM_LOG_LEN] * MAX_ROOM_LOG,
        "standing": {"hiredTo": alias, "hiredToTurns": wide,
                     "retainers": [{"name": alias, "turns": wide}] * (SEATS - 1)},
        "map": [{"name": r.name, "exits": [world.rooms[e].name for e in r.exits],
                 "npc": world.keepers[world.keeper_in_room[r.id]].name
                 if world.keeper_in_room[r.id] >= 0 else "", "dark": r.dark}
                for r in world.rooms],
        "lastReason": "ok", "lastSentence": "x" * MAX_SENTENCE_LEN, "lastOutcome": outcome,
        "notes": "x" * MAX_NOTES_LEN,
    }
    offers = ({"kind": "trade", "from": alias, "coin": wide, "item": counted, "qty": wide},
              {"kind": "hire", "from": alias, "coin": wide})
    return max(len(render_observation({**view, "offers": [offer] * (SEATS - 1)}, world, "",
                                      speech))
               for offer in offers for speech in (True, False))


def check_flags(**flags: object) -> None:
    """Each flag True or False: a string such as ``"no"`` is truthy, and would turn it on."""
    for name, value in flags.items():
        if not isinstance(value, (bool, np.bool_)):
            raise ValueError(f"{name} must be True or False; got {value!r:.40}")


class SeatFace:
    """What both environments share: a seat's observation, mask and action decoding."""

    def __init__(self, world: World, text_mode: bool, flat: bool) -> None:
        check_flags(text_mode=text_mode, flatten=flat)
        if text_mode and flat:  # text mode's observation is a sentence: nothing to flatten
            raise ValueError("flatten=True and text_mode=True exclude each other: text mode "
                             "observes text, which has no flat vector")
        self.world = world
        self.text_mode = text_mode
        self.flat = flat
        self.n_actions = n_actions(world)
        self._slices = slices(world)
        # The observation keys but the mask (set apart, as int8), and one call that cuts a
        # row into their arrays (``split`` cuts a hundred views a turn).
        self._keys = tuple(k for k in self._slices if k != "action_mask")
        self._cut = itemgetter(*(slice(*self._slices[k]) for k in self._keys))

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

        The six rows are encoded in one compiled pass over a one-episode copy of the state
        (``sim.batched``), several times cheaper than six Python passes; the batched
        differential tests hold that encoder equal to ``encode_flat``.  In text mode it is six
        ``observe`` calls.
        """
        if self.text_mode:
            return [self.observe(game, s) for s in range(SEATS)]
        return self.split(self._encode_rows(game))

    def split(self, rows: np.ndarray) -> list[tuple[dict | np.ndarray, dict]]:
        """``observe``'s answers from encoded rows (``[seats, obs]``, mask last), in row order."""
        obs, masks = self.split_rows(rows)
        return [(o, {"action_mask": m}) for o, m in zip(obs, masks)]

    def split_rows(self, rows: np.ndarray) -> tuple[list[dict | np.ndarray], list[np.ndarray]]:
        """``split`` without the info dicts: each row's observation and int8 mask.

        One copy for all rows: each seat's arrays are views of it, so they outlive ``rows``.
        """
        flat = rows.copy()
        masks = list(flat[:, -self.n_actions:].astype(np.int8))
        if self.flat:
            return list(flat), masks
        keys, cut = self._keys, self._cut
        out = []
        for row, mask in zip(flat, masks):
            obs = dict(zip(keys, cut(row)))
            obs["action_mask"] = mask
            out.append(obs)
        return out, masks

    def _encode_rows(self, game: Game) -> np.ndarray:
        from ..batched.engine import BatchedGuild
        from ..batched.observe import all_seats
        from ..batched.observe import encode as batch_encode

        st = game.state
        key = (st.turns, st.thievery)
        if getattr(self, "_batch_key", None) != key:
            self._batch = BatchedGuild(1, turns=st.turns, thievery=st.thievery,
                                       world=self.world, seed=0)
            self._batch_key = key
            self._rows = all_seats(1)
            self._out = np.zeros((SEATS, self._batch.tables.obs_width), np.float32)
        self._batch.load_games([game])
        batch_encode(self._batch, self._rows[0], self._rows[1], self._out)
        return self._out

    def action(self, game: Game, seat: int, action):
        """The ``play_turn`` input for an action of this face."""
        if self.text_mode:
            return self.check(action)
        return to_intent(self.index(action), self.world, seat, game.state.room[seat])

    def checked(self, agent: str, action):
        """:meth:`check` of ``agent``'s action, its error naming the agent (the same type:
        an IntentError stays one)."""
        try:
            return self.check(action)
        except ValueError as e:
            raise type(e)(f"{agent}: {e}") from None

    def check(self, action):
        """``action`` if this face takes it (a sentence in text mode, else a table index);
        otherwise the ``ValueError`` playing it would raise."""
        if not self.text_mode:
            return self.index(action)
        if not isinstance(action, str):
            raise ValueError(f"text mode takes a sentence (str); got {action!r:.80}")
        if len(action) > MAX_TEXT_ACTION:  # outside the action space's Text(max_length)
            raise ValueError(f"a text-mode action may be at most {MAX_TEXT_ACTION} "
                             f"characters long; got a sentence of {len(action)}")
        return action

    def index(self, action) -> int:
        """A structured action as a checked table index (the errors of ``action``)."""
        if type(action) is int and 0 <= action < self.n_actions:
            return action  # the common case, answered before the general checks
        if isinstance(action, np.ndarray):
            if action.size != 1:  # .item() would say only that it cannot convert
                raise ValueError(f"action must be one int index; got an array of shape "
                                 f"{action.shape}")
            action = action.item()
        if isinstance(action, bool) or not isinstance(action, (int, np.integer)):
            raise ValueError(f"action must be an int index; got {action!r}")
        return check_index(int(action), self.world)

    def admissible(self, game: Game, seat: int) -> list[str]:
        mask = legal_mask(game.state, seat)
        room = game.state.room[seat]
        return [canonical(i, self.world, game.state.aliases, seat, room)
                for i in range(len(action_table(self.world))) if mask[i]]


