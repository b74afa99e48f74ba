"""A seeded uniform-random policy over the seat's legal structured actions (RULES §8-9)."""

from __future__ import annotations

import random

from agents.baselines.view import SeatView
from sim import Game, Intent
from sim.game import seat_index

SAY_LINE = "Fair trading to all."


def legal_intents(game: Game, seat: int) -> list[Intent]:
    """The structured actions open to ``seat`` this turn, built from its view (RULES §17).

    One unit per goods action: a move to each exit; take each good on the floor; at a keeper,
    buy each good it trades that is in stock, sell each held good it trades, hand it each held
    good (a delivery when it is Guildmaster Vell) and ask it about the commissions; drop each
    held good; to each cog present, give each held good, offer it for its base value, hire it
    for up to 5 coin, and rob it (thievery on only); accept each open offer; wait; say a line.
    Every intent resolves (possibly to a failure reason); none raises in ``play_turn``.
    """
    v = SeatView(game, seat)
    w = v.world
    out = [Intent("move", to_room=e) for e in w.rooms[v.room].exits]
    n_goods = len(w.goods)
    held = [g for g in range(n_goods) if v.items[g] > 0]
    out += [Intent("take", item=g) for g in range(n_goods) if v.floor[g] > 0]
    npc = v.keeper
    if npc >= 0:
        deals = w.deals[npc]
        out += [Intent("buy", item=g, npc=npc) for g in range(n_goods)
                if deals[g] and v.stock[g] > 0]
        out += [Intent("sell", item=g, npc=npc) for g in held if deals[g]]
        out += [Intent("give", item=g, npc=npc) for g in held]
        out.append(Intent("quest", npc=npc))
    out += [Intent("drop", item=g) for g in held]
    for other in v.cogs:
        out += [Intent("give", item=g, other=other) for g in held]
        out += [Intent("trade", item=g, other=other, coin=w.goods[g].value) for g in held]
        if v.coin > 0:
            out.append(Intent("hire", other=other, coin=min(5, v.coin)))
        if v.thievery:
            out.append(Intent("rob", other=other))
    senders = []
    for o in v.offers:
        if o.sender not in senders:
            senders.append(o.sender)
    out += [Intent("accept", other=s) for s in senders]
    out.append(Intent("wait"))
    out.append(Intent("say", text=SAY_LINE))
    return out


class RandomPolicy:
    """Uniform over :func:`legal_intents`, from seeded generators (reproducible).

    Each seat draws from its own stream, derived from the policy's seed, the episode seed given
    to ``reset`` and the seat, so two random seats at one table are independent even when they
    were built with the same seed.
    """

    scripted = False
    name = "random"

    def __init__(self, seed: int = 0) -> None:
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise ValueError(f"seed must be an int; got {seed!r}")
        self.seed = seed
        self._base = seed
        self._rngs: dict[int, random.Random] = {}

    def __repr__(self) -> str:
        return f"RandomPolicy(seed={self.seed})"

    def reset(self, seed: int | None = None) -> None:
        """Start fresh streams: the policy's seed alone, or mixed with an episode ``seed``."""
        self._base = self.seed if seed is None else self.seed * 1_000_003 + seed
        self._rngs = {}

    def act(self, game: Game, seat: int) -> Intent:
        seat = seat_index(seat)  # before its generator is made for it
        rng = self._rngs.get(seat)
        if rng is None:
            rng = self._rngs[seat] = random.Random(self._base * 7 + seat)
        choices = legal_intents(game, seat)
        return choices[rng.randrange(len(choices))]
