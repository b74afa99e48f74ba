"""The batched engine: thousands of episodes in lockstep on ``[episode, ...]`` numpy arrays.

Bit for bit the rules of the scalar engine (``tests/test_batched.py`` proves it).

State (``-1`` = none; ``K`` = the dummy keeper of ``sim.batched.tables``):

| array | shape | meaning |
|---|---|---|
| room, prev_room, coin, carried | [N, 6] | seat fields of RULES §5; ``carried`` = pack size |
| items | [N, 6, goods] | packs |
| quest_item, quest_count, delivered | [N, 6, 2] | commissions |
| retainer_of, retainer_turns, robberies, robbed | [N, 6] | bonds and theft counters |
| hint | [N, 6] bool | asked a keeper last turn (§9.3) |
| last_reason | [N, 6] | code of ``REASONS`` of the last act, -1 before the first |
| floor | [N, rooms, goods] | loose goods |
| stock, shop_coin | [N, K + 1, goods], [N, K + 1] | shops; row K is the dummy, always 0 |
| off_kind/to/item/qty/coin | [N, 2, 6] | live offers by ``posted_turn % 2`` and sender |
| room_log, heard | [N, rooms] | public lines this turn / last turn (capped at 12) |
| turn, turns_played, done, seed | [N] | clock, end flag, the episode's game seed |

Offers: a seat posts at most one offer a turn and an offer lives until the open two turns
later, so slot ``turn % 2`` holds the offers posted this turn and the other slot last turn's.
The scalar list order (oldest first) is recovered as (posted turn, initiative position).

Autoreset: :meth:`BatchedGuild.step` with ``autoreset=True`` starts a new episode (next seed of
the engine's seed stream) in every row that just ended, in the same call (Gymnasium's
``SAME_STEP`` mode).  Faces that need the last observation call ``step(autoreset=False)``,
read it, then :meth:`reset_done`.

Observations and masks: :meth:`BatchedGuild.observe` / :meth:`BatchedGuild.masks`, or
``sim.batched.observe`` for chosen ``(episode, seat)`` pairs.  Faces: ``sim.envs.vector``
(``GuildVectorEnv`` for Gymnasium, ``GuildSelfPlay`` for six-seat self-play).  Backends:
this numpy code is the reference; ``backend="numba"`` runs the compiled twin in
``sim.batched.step_kernel`` (same results, several times faster).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..rules.intents import REASONS
from ..rules.offers import Offer
from ..rules.prices import STOCK_CAP
from ..rules.world import (
    COMMISSION_COUNT,
    COMPLETION_BONUS,
    MAX_ROOM_LOG,
    MIN_TURNS,
    POINT_VALUE,
    POINTS_PER_UNIT,
    SCORE_SCALE,
    SEATS,
    STANDARD_TOWN,
    World,
    per_world,
)
from . import resolve_numpy as res
from .setup import check_seeds, draw_towns
from .tables import NO_OFFER, Kind, R, Tables

SEED_HIGH = 2 ** 31 - 1  # game seeds drawn for new episodes: 0 <= seed < 2**31 - 1, as GuildEnv


@per_world
def tables_for(world: World) -> Tables:
    """The batched tables of a town, cached by identity (as the action table)."""
    return Tables(world)


@dataclass
class TurnIntents:
    """The decoded and checked intents of one turn, ``[N, 6]`` each (``sim.rules.checks``)."""

    kind: np.ndarray
    item: np.ndarray
    qty: np.ndarray
    coin: np.ndarray
    other: np.ndarray
    to_room: np.ndarray
    here: np.ndarray      # start-of-turn room: where every act is logged
    keeper: np.ndarray    # the keeper standing there (dummy K when none)
    reason: np.ndarray
    logged: np.ndarray


class BatchedGuild:
    """``n`` episodes of the guild game stepped together from ``[n, 6]`` action indices.

    Args:
        n: number of episodes (rows).
        turns: the horizon of every episode (RULES §6.7; at least 6).
        thievery: False plays the honest-town variant (§6.8).
        world: the town (default the standard one).
        seed: seeds the stream of game seeds drawn for new episodes (``reset()`` without
            explicit seeds, and autoreset).
        backend: ``"numpy"`` (default, the reference), ``"numba"`` (the compiled twin of
            ``sim.batched.step_kernel``; raises if numba is missing) or ``"auto"`` (numba if
            installed).
    """

    def __init__(self, n: int, turns: int = 14, thievery: bool = True,
                 world: World | None = None, seed: int | None = None,
                 backend: str = "numpy") -> None:
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
            raise ValueError(f"n must be a positive int; got {n!r}")
        if isinstance(turns, bool) or not isinstance(turns, int) or turns < MIN_TURNS:
            raise ValueError(f"turns must be an int of at least {MIN_TURNS}; got {turns!r}")
        from .step_kernel import available

        if backend not in ("numpy", "numba", "auto"):
            raise ValueError(f"backend must be 'numpy', 'numba' or 'auto'; got {backend!r}")
        if backend == "numba" and not available():
            raise ValueError("backend='numba' needs the numba package (pip install numba)")
        if backend == "auto":
            backend = "numba" if available() else "numpy"
        self.backend = backend
        self.n = int(n)
        self.turns = turns
        self.thievery = bool(thievery)
        self.world = world or STANDARD_TOWN
        self.tables = tables_for(self.world)
        self.seed_rng = np.random.default_rng(seed)
        self.rows = np.arange(self.n)
        self._alloc()
        self.reset()

    # --- state ------------------------------------------------------------------------------
    def _alloc(self) -> None:
        tb, n = self.tables, self.n
        g, rm, k = tb.n_goods, tb.n_rooms, tb.n_keepers
        i64 = np.int64
        seat = (n, SEATS)
        self.room = np.zeros(seat, i64)
        self.prev_room = np.zeros(seat, i64)
        self.coin = np.zeros(seat, i64)
        self.carried = np.zeros(seat, i64)
        self.items = np.zeros((n, SEATS, g), i64)
        self.quest_item = np.zeros((n, SEATS, 2), i64)
        self.quest_count = np.zeros((n, SEATS, 2), i64)
        self.delivered = np.zeros((n, SEATS, 2), i64)
        self.retainer_of = np.zeros(seat, i64)
        self.retainer_turns = np.zeros(seat, i64)
        self.robberies = np.zeros(seat, i64)
        self.robbed = np.zeros(seat, i64)
        self.hint = np.zeros(seat, bool)
        self.last_reason = np.zeros(seat, i64)
        self.floor = np.zeros((n, rm, g), i64)
        self.stock = np.zeros((n, k + 1, g), i64)
        self.shop_coin = np.zeros((n, k + 1), i64)
        self.off_kind = np.zeros((n, 2, SEATS), i64)
        self.off_to = np.zeros((n, 2, SEATS), i64)
        self.off_item = np.zeros((n, 2, SEATS), i64)
        self.off_qty = np.zeros((n, 2, SEATS), i64)
        self.off_coin = np.zeros((n, 2, SEATS), i64)
        self.room_log = np.zeros((n, rm), i64)
        self.heard = np.zeros((n, rm), i64)
        self.turn = np.zeros(n, i64)
        self.turns_played = np.zeros(n, i64)
        self.done = np.zeros(n, bool)
        self.seed = np.zeros(n, i64)
        self.points = np.zeros(seat, i64)  # wealth + 3 x commission points (RULES §13)

    def reset(self, seeds: np.ndarray | None = None, rows: np.ndarray | None = None) -> None:
        """Start new episodes in ``rows`` (default all) from game ``seeds`` (default: drawn).

        Seed-compatible with ``Game(GameConfig(seed=s))``: the same town, turn 0 open.
        """
        rows = self.rows if rows is None else np.asarray(rows, np.int64)
        if seeds is None:
            seeds = self.seed_rng.integers(0, SEED_HIGH, size=rows.size)
        seeds = check_seeds(seeds)
        if seeds.shape != rows.shape:
            raise ValueError(f"need one seed per row: {seeds.shape[0]} seeds, {rows.size} rows")
        if rows.size == 0:
            return
        tb = self.tables
        starts, quests, floor = draw_towns(seeds, self.world)
        self.seed[rows] = seeds
        self.room[rows] = starts
        self.prev_room[rows] = -1
        self.coin[rows] = self.world.start_coin
        self.carried[rows] = 0
        self.items[rows] = 0
        self.quest_item[rows] = quests
        self.quest_count[rows] = COMMISSION_COUNT
        self.delivered[rows] = 0
        self.retainer_of[rows] = -1
        for a in (self.retainer_turns, self.robberies, self.robbed, self.hint, self.off_kind,
                  self.off_to, self.off_item, self.off_qty, self.off_coin, self.room_log,
                  self.heard, self.turn, self.turns_played, self.done):
            a[rows] = 0
        self.last_reason[rows] = -1
        self.floor[rows] = floor
        self.stock[rows] = tb.opening_stock
        self.shop_coin[rows, :tb.n_keepers] = self.world.keeper_start_coin
        self.shop_coin[rows, tb.n_keepers] = 0
        self.points[rows] = self._points(rows)

    def reset_done(self) -> np.ndarray:
        """Start new episodes in the rows that have ended; returns those rows."""
        rows = np.flatnonzero(self.done)
        if rows.size:
            self.reset(rows=rows)
        return rows

    # --- the turn (RULES §6) ----------------------------------------------------------------
    def step(self, actions: np.ndarray, autoreset: bool = True) -> tuple[np.ndarray, np.ndarray]:
        """Resolve one turn of every episode from ``actions`` (``[n, 6]`` table indices).

        Returns ``(rewards, done)``: the change of each seat's score (RULES §13; ``[n, 6]``
        float64, equal to the scalar env's dense reward) and whether the episode just ended.
        Any index of the table is allowed, legal or not; indices outside it raise.
        """
        a = np.asarray(actions)
        if a.shape != (self.n, SEATS) or not np.issubdtype(a.dtype, np.integer):
            raise ValueError(f"actions must be an int array of shape ({self.n}, {SEATS}); "
                             f"got {a.dtype} {a.shape}")
        if a.size and (a.min() < 0 or a.max() >= self.tables.n_actions):
            raise ValueError(f"action indices must be between 0 and "
                             f"{self.tables.n_actions - 1}; got {int(a.min())}..{int(a.max())}")
        if self.done.any():
            raise ValueError("step: some episodes have ended; call reset_done() first")
        a = a.astype(np.int64, copy=False)
        old = self.points.copy()
        if self.backend == "numba":
            from . import step_kernel

            step_kernel.step(self, np.ascontiguousarray(a))
        else:
            t = self._decode(a)
            self._resolve(t)
            self._close_turn(t)
            self.points = self._points(self.rows)
        scale, base = SCORE_SCALE, self.world.start_coin
        rewards = (self.points - base) / scale - (old - base) / scale
        done = self.done.copy()
        if autoreset and done.any():
            self.reset_done()
        return rewards, done

    def _decode(self, a: np.ndarray) -> TurnIntents:
        """Index -> intent (``sim.codec.action_table.to_intent``), then the structured checks."""
        tb = self.tables
        here = self.room.copy()
        keeper = tb.keeper_here[here]
        kind = tb.kind[a]
        needs_keeper = tb.to_keeper[a] & (keeper == tb.n_keepers)
        reason = np.full((self.n, SEATS), -1, np.int64)
        # sim.rules.checks: a quest with no keeper here fails no_npc_here; buy/sell/give no_target.
        reason[needs_keeper] = np.where(kind[needs_keeper] == Kind.QUEST, R["no_npc_here"],
                                        R["no_target"])
        kind = np.where(needs_keeper, Kind.NONE, kind)
        other = (np.arange(SEATS) + tb.rel[a]) % SEATS
        return TurnIntents(kind=kind, item=tb.item[a], qty=tb.qty[a], coin=tb.coin[a], other=other,
                           to_room=tb.to_room[a], here=here, keeper=keeper, reason=reason,
                           logged=np.zeros((self.n, SEATS), bool))

    def _resolve(self, t: TurnIntents) -> None:
        """RULES §6.3: classes 2-7 in order; within a class, seats in initiative order."""
        self.hint[:] = False
        res.quiet_all(self, t)  # quest (class 2), wait and none (class 7): no shared state
        order = (np.arange(SEATS)[None, :] + self.turn[:, None]) % SEATS  # seat at position k
        by_position = np.take_along_axis(t.kind, order, axis=1)
        present = np.bincount(t.kind.ravel(), minlength=len(Kind))
        for cls in (2, 3, 4, 5):
            kinds = [(kind, res.RESOLVERS[kind]) for kind in res.SEQUENTIAL[cls]
                     if present[kind]]
            if not kinds:
                continue
            for k in range(SEATS):
                col = by_position[:, k]
                for code, fn in kinds:
                    r = np.flatnonzero(col == code)
                    if r.size:
                        fn(self, t, r, order[r, k])
        res.move_all(self, t)  # class 6
        self.last_reason[:] = t.reason

    def _close_turn(self, t: TurnIntents) -> None:
        """Count the turn's public lines, advance the clock, open the next turn or settle."""
        tb = self.tables
        nr = tb.n_rooms
        lines = np.bincount((self.rows[:, None] * nr + t.here).ravel(),
                            weights=t.logged.ravel(), minlength=self.n * nr)
        self.room_log = np.minimum(MAX_ROOM_LOG, self.room_log + lines.reshape(self.n, nr)
                                   .astype(np.int64))
        self.turns_played += 1
        self.turn += 1
        self.done = self.turns_played >= self.turns
        rows = self.rows if not self.done.any() else np.flatnonzero(~self.done)
        if rows.size:
            self._open_turn(rows)

    def _open_turn(self, rows: np.ndarray) -> None:
        """RULES §6.2 for ``rows``: expire offers, tick retainers, restock, rotate logs."""
        tb = self.tables
        sel = slice(None) if rows.size == self.n else rows  # views when every row opens
        turn = self.turn[sel]
        seats = np.arange(SEATS)
        self.off_kind.reshape(-1)[((rows * 2 + (turn & 1))[:, None] * SEATS + seats)
                                  .ravel()] = NO_OFFER  # posted two turns ago
        rt = self.retainer_turns[sel]
        ended = rt == 1
        self.retainer_turns[sel] = rt - (rt > 0)
        self.retainer_of[sel] = np.where(ended, -1, self.retainer_of[sel])
        goods = tb.restock[:, turn % tb.restock_period].T  # [rows, keepers]
        nk1, ng = tb.n_keepers + 1, tb.n_goods
        flat = ((rows[:, None] * nk1 + np.arange(tb.n_keepers)) * ng + np.maximum(goods, 0))
        stock = self.stock.reshape(-1)
        st = stock[flat]
        stock[flat] = np.where((goods >= 0) & (turn[:, None] > 0) & (st < STOCK_CAP), st + 1, st)
        self.heard[sel] = self.room_log[sel]
        self.room_log[sel] = 0

    def _points(self, rows: np.ndarray) -> np.ndarray:
        """wealth + 3 x commission points of every seat (the integer part of RULES §13)."""
        sel = slice(None) if rows.size == self.n else rows
        d = self.delivered[sel]
        qp = (POINTS_PER_UNIT * d + COMPLETION_BONUS * (d >= self.quest_count[sel])).sum(-1)
        return self.coin[sel] + self.items[sel] @ self.tables.values + POINT_VALUE * qp

    def observe(self, out: np.ndarray | None = None) -> np.ndarray:
        """Every seat's observation, ``[n, 6, obs_dim]`` float32, row for row equal to
        ``sim.codec.encode.encode_flat`` (RULES §17); ``out`` may be a reused buffer."""
        from .observe import all_seats, encode

        r, s = all_seats(self.n)
        flat = None if out is None else out.reshape(self.n * SEATS, -1)
        return encode(self, r, s, flat).reshape(self.n, SEATS, -1)

    def masks(self) -> np.ndarray:
        """Every seat's legal mask, ``[n, 6, n_actions]`` bool, equal to ``legal_mask``."""
        from .observe import all_seats, legal_masks

        r, s = all_seats(self.n)
        return legal_masks(self, r, s).reshape(self.n, SEATS, -1)

    def scores(self) -> np.ndarray:
        """Every seat's score, ``[n, 6]`` float64, exactly as ``sim.rules.scoring.score``."""
        return (self.points - self.world.start_coin) / SCORE_SCALE

    # --- conversion to and from the scalar engine (tests, curricula) --------------------------
    def load_games(self, games: list, rows: np.ndarray | None = None) -> None:
        """Copy the states of scalar ``Game`` objects into ``rows`` (default ``0..len-1``).

        Everything the batched engine keeps is copied (offers, hints, reasons, log sizes).
        """
        rows = np.arange(len(games)) if rows is None else np.asarray(rows, np.int64)
        nk = self.tables.n_keepers
        for i, game in zip(rows.tolist(), games):
            st = game.state
            if st.turns != self.turns or st.thievery != self.thievery or st.world != self.world:
                raise ValueError("load_games: the game's turns, thievery or world differ")
            self.seed[i] = game.config.seed
            self.room[i] = st.room
            self.prev_room[i] = st.prev_room
            self.coin[i] = st.coin
            self.items[i] = st.items
            self.carried[i] = [sum(p) for p in st.items]
            self.quest_item[i] = st.quest_item
            self.quest_count[i] = st.quest_count
            self.delivered[i] = st.delivered
            self.retainer_of[i] = st.retainer_of
            self.retainer_turns[i] = st.retainer_turns
            self.robberies[i] = st.robberies
            self.robbed[i] = st.robbed
            self.hint[i] = st.hint
            self.last_reason[i] = [R[x] if x else -1 for x in st.last_reason]
            self.floor[i] = st.floor
            self.stock[i, :nk] = st.stock
            self.stock[i, nk] = 0
            self.shop_coin[i, :nk] = st.shop_coin
            self.shop_coin[i, nk] = 0
            self.off_kind[i] = NO_OFFER
            for o in st.offers:
                slot = o.posted_turn & 1
                if self.off_kind[i, slot, o.sender] != NO_OFFER:
                    raise ValueError("load_games: two live offers from one seat in one turn")
                self.off_kind[i, slot, o.sender] = 1 if o.kind == "trade" else 2
                self.off_to[i, slot, o.sender] = o.to
                self.off_item[i, slot, o.sender] = o.item
                self.off_qty[i, slot, o.sender] = o.qty
                self.off_coin[i, slot, o.sender] = o.coin
            self.room_log[i] = [len(x) for x in st.room_log]
            self.heard[i] = [len(x) for x in st.heard_log]
            self.turn[i] = st.turn
            self.turns_played[i] = st.turns_played
            self.done[i] = st.done
        self.points[rows] = self._points(rows)

    def export(self, i: int) -> dict:
        """Row ``i`` in the scalar engine's terms: ``Game.snapshot()`` plus the rest.

        Keys: ``snapshot`` (RULES §15.2 form), ``offers`` (``Offer.to_json`` list, oldest
        first), ``hint``, ``last_reason`` (names, "" before the first act), ``room_log`` and
        ``heard`` (line counts), ``turns_played``, ``done``, ``quest_item``.
        """
        nk = self.tables.n_keepers
        snap = {
            "turn": int(self.turn[i]),
            "rooms": self.floor[i].tolist(),
            "npcs": [{"stock": self.stock[i, n].tolist(), "coin": int(self.shop_coin[i, n])}
                     for n in range(nk)],
            "cogs": [{"room": int(self.room[i, s]), "prevRoom": int(self.prev_room[i, s]),
                      "coin": int(self.coin[i, s]), "items": self.items[i, s].tolist(),
                      "delivered": self.delivered[i, s].tolist(),
                      "retainerOf": int(self.retainer_of[i, s]),
                      "retainerTurns": int(self.retainer_turns[i, s]),
                      "robberies": int(self.robberies[i, s]), "robbed": int(self.robbed[i, s])}
                     for s in range(SEATS)],
        }
        return {"snapshot": snap, "offers": [o.to_json() for o in self.offers(i)],
                "hint": self.hint[i].tolist(),
                "last_reason": [REASONS[x] if x >= 0 else "" for x in self.last_reason[i]],
                "room_log": self.room_log[i].tolist(), "heard": self.heard[i].tolist(),
                "turns_played": int(self.turns_played[i]), "done": bool(self.done[i]),
                "quest_item": self.quest_item[i].tolist()}

    def offers(self, i: int) -> list[Offer]:
        """Row ``i``'s live offers as the scalar list: by posted turn, then initiative.

        Between turns slot ``turn % 2`` is empty, except after the last turn, which is never
        opened: then it still holds the offers posted the turn before (as the scalar list does).
        """
        out = []
        turn = int(self.turn[i])
        for posted in (turn - 2, turn - 1):
            if posted < 0:
                continue
            slot = posted & 1
            for k in range(SEATS):
                s = (k + posted) % SEATS
                kind = int(self.off_kind[i, slot, s])
                if kind == NO_OFFER:
                    continue
                out.append(Offer("trade" if kind == 1 else "hire", s,
                                 int(self.off_to[i, slot, s]), int(self.off_item[i, slot, s]),
                                 int(self.off_qty[i, slot, s]), int(self.off_coin[i, slot, s]),
                                 posted))
        return out
