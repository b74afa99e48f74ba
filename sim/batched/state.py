"""The batched state: every field of RULES §5 as an ``[episode, ...]`` array, and its
conversion to and from the scalar engine's state.

Field for field the scalar ``GameState`` (``sim.rules.state``), with two encodings that keep
the arrays fixed-size (``-1`` = none; ``K`` = the dummy keeper of ``sim.batched.tables``);
:class:`BatchState` lists the arrays.

Offers: a seat posts at most one offer a turn and an offer lives until the open two turns
later, so slot ``turn % 2`` holds the offers posted this turn and the other slot last turn's.
The scalar list order (oldest first) is recovered as (posted turn, initiative position).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..rules.intents import REASONS
from ..rules.offers import Offer
from ..rules.world import SEATS
from . import source
from .tables import HIRE_OFFER, NO_OFFER, REASON_CODE, TRADE_OFFER, Tables


class BatchState(NamedTuple):
    """The arrays of N episodes; the kernels change them in place.

    | array | shape | meaning |
    |---|---|---|
    | room, prev_room, coin, carried | [N, 6] | seat fields; ``carried`` = pack size |
    | items | [N, 6, goods] | packs |
    | quest_item, quest_count, delivered | [N, 6, 2] | commissions |
    | retainer_of, retainer_turns, robberies, robbed | [N, 6] | bonds and theft counters |
    | hint | [N, 6] bool | asked a keeper last turn (§9.3) |
    | last_reason | [N, 6] | code of ``REASONS`` of the last act, -1 before the first |
    | floor | [N, rooms, goods] | loose goods |
    | stock, shop_coin | [N, K + 1, goods], [N, K + 1] | shops; row K is the dummy, always 0 |
    | off_kind/to/item/qty/coin | [N, 2, 6] | live offers by ``posted_turn % 2`` and sender |
    | room_log, heard | [N, rooms] | public lines this turn / last turn (counted, capped at 12) |
    | turn, turns_played, done, seed | [N] | clock, end flag, the episode's game seed |
    | points | [N, 6] | wealth + 3 x commission points (``sim.rules.scoring.score_points``) |
    """

    room: np.ndarray
    prev_room: np.ndarray
    coin: np.ndarray
    carried: np.ndarray
    items: np.ndarray
    quest_item: np.ndarray
    quest_count: np.ndarray
    delivered: np.ndarray
    retainer_of: np.ndarray
    retainer_turns: np.ndarray
    robberies: np.ndarray
    robbed: np.ndarray
    hint: np.ndarray
    last_reason: np.ndarray
    floor: np.ndarray
    stock: np.ndarray
    shop_coin: np.ndarray
    off_kind: np.ndarray
    off_to: np.ndarray
    off_item: np.ndarray
    off_qty: np.ndarray
    off_coin: np.ndarray
    room_log: np.ndarray
    heard: np.ndarray
    turn: np.ndarray
    turns_played: np.ndarray
    done: np.ndarray
    seed: np.ndarray
    points: np.ndarray


class Scratch(NamedTuple):
    """Work arrays of the kernels, one set per engine (the kernels allocate nothing)."""

    kind: np.ndarray      # [6] checked kind of each seat's action this turn
    reason: np.ndarray    # [6] its reason code
    logged: np.ndarray    # [6] bool: it leaves a public line
    here: np.ndarray      # [6] the seat's start-of-turn room
    order: np.ndarray     # [6] the seats in initiative order this turn
    features: np.ndarray  # [n_features] bool: one seat's mask conditions


def scratch_for(tb: Tables) -> Scratch:
    """Fresh work arrays for the kernels of ``tb``'s town."""
    return Scratch(np.zeros(SEATS, np.int64), np.zeros(SEATS, np.int64),
                   np.zeros(SEATS, bool), np.zeros(SEATS, np.int64), np.zeros(SEATS, np.int64),
                   np.zeros(tb.n_features, bool))


def allocate(n: int, tb: Tables) -> BatchState:
    """Zeroed arrays for ``n`` episodes of ``tb``'s town (``reset`` fills them)."""
    g, rm, k = tb.n_goods, tb.n_rooms, tb.n_keepers
    seat, quests, offers = (n, SEATS), (n, SEATS, 2), (n, 2, SEATS)
    shapes = {"items": (n, SEATS, g), "quest_item": quests, "quest_count": quests,
              "delivered": quests, "floor": (n, rm, g), "stock": (n, k + 1, g),
              "shop_coin": (n, k + 1), "off_kind": offers, "off_to": offers,
              "off_item": offers, "off_qty": offers, "off_coin": offers, "room_log": (n, rm),
              "heard": (n, rm), "turn": (n,), "turns_played": (n,), "done": (n,),
              "seed": (n,)}
    flags = ("hint", "done")
    return BatchState(**{f: np.zeros(shapes.get(f, seat), bool if f in flags else np.int64)
                         for f in BatchState._fields})


def load_game(st: BatchState, tb: Tables, i: int, game) -> None:
    """Copy a scalar ``Game``'s state into row ``i`` (offers, hints, reasons, log sizes too)."""
    gs = game.state
    nk = tb.n_keepers
    st.seed[i] = game.config.seed
    for name in ("room", "prev_room", "coin", "items", "quest_item", "quest_count",
                 "delivered", "retainer_of", "retainer_turns", "robberies", "robbed", "hint",
                 "floor"):
        getattr(st, name)[i] = getattr(gs, name)
    st.carried[i] = [sum(p) for p in gs.items]
    st.last_reason[i] = [REASON_CODE[x] if x else -1 for x in gs.last_reason]
    st.stock[i, :nk] = gs.stock
    st.stock[i, nk] = 0
    st.shop_coin[i, :nk] = gs.shop_coin
    st.shop_coin[i, nk] = 0
    st.off_kind[i] = NO_OFFER
    for o in gs.offers:
        slot = o.posted_turn & 1
        if st.off_kind[i, slot, o.sender] != NO_OFFER:
            raise ValueError("load_games: two live offers from one seat in one turn")
        st.off_kind[i, slot, o.sender] = TRADE_OFFER if o.kind == "trade" else HIRE_OFFER
        st.off_to[i, slot, o.sender] = o.to
        st.off_item[i, slot, o.sender] = o.item
        st.off_qty[i, slot, o.sender] = o.qty
        st.off_coin[i, slot, o.sender] = o.coin
    st.room_log[i] = [len(x) for x in gs.room_log]
    st.heard[i] = [len(x) for x in gs.heard_log]
    st.turn[i] = gs.turn
    st.turns_played[i] = gs.turns_played
    st.done[i] = gs.done
    st.points[i] = [source.scoring.score_points(gs.coin[s], gs.items[s], tb.values,
                                                gs.quest_count[s], gs.delivered[s])
                    for s in range(SEATS)]


def export_row(st: BatchState, tb: Tables, i: int) -> dict:
    """Row ``i`` in the scalar engine's terms: ``Game.snapshot()`` plus the rest.

    Keys: ``snapshot`` (RULES §15.2 form), ``offers`` (``Offer.to_json`` list, oldest first),
    ``hint``, ``last_reason`` (names, "" before the first act), ``room_log`` and ``heard``
    (line counts), ``turns_played``, ``done``, ``quest_item``.
    """
    return {"snapshot": _snapshot(st, tb, i),
            "offers": [o.to_json() for o in row_offers(st, i)],
            "hint": st.hint[i].tolist(),
            "last_reason": [REASONS[x] if x >= 0 else "" for x in st.last_reason[i]],
            "room_log": st.room_log[i].tolist(), "heard": st.heard[i].tolist(),
            "turns_played": int(st.turns_played[i]), "done": bool(st.done[i]),
            "quest_item": st.quest_item[i].tolist()}


def row_offers(st: BatchState, i: int) -> list[Offer]:
    """Row ``i``'s live offers as the scalar list: by posted turn, then initiative.

    Between turns slot ``turn % 2`` is empty, except after the last turn, which is never
    opened: then it still holds the offers posted the turn before (as the scalar list does).
    """
    out = []
    turn = int(st.turn[i])
    for posted in (turn - 2, turn - 1):
        if posted < 0:
            continue
        slot = posted & 1
        for k in range(SEATS):
            s = source.turn.acting_seat(posted, k)
            kind = int(st.off_kind[i, slot, s])
            if kind == NO_OFFER:
                continue
            out.append(Offer("trade" if kind == TRADE_OFFER else "hire", s,
                             int(st.off_to[i, slot, s]), int(st.off_item[i, slot, s]),
                             int(st.off_qty[i, slot, s]), int(st.off_coin[i, slot, s]), posted))
    return out


class _RowView:
    """Row ``i`` of a batch with the ``GameState`` field names ``snapshot`` reads."""

    def __init__(self, st: BatchState, tb: Tables, i: int) -> None:
        nk = tb.n_keepers
        self.turn = int(st.turn[i])
        self.floor = st.floor[i].tolist()
        self.stock = st.stock[i, :nk].tolist()
        self.shop_coin = st.shop_coin[i, :nk].tolist()
        for name in ("room", "prev_room", "coin", "items", "delivered", "retainer_of",
                     "retainer_turns", "robberies", "robbed"):
            setattr(self, name, getattr(st, name)[i].tolist())


def _snapshot(st: BatchState, tb: Tables, i: int) -> dict:
    """RULES §15.2's snapshot of row ``i``, written by the scalar engine's own ``snapshot``."""
    return source.state.snapshot(_RowView(st, tb, i))  # type: ignore[arg-type]
