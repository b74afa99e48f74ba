"""The original's two scripted baselines, rule for rule (RULES §21, SENTENCES §21).

Both write plain sentences that go through the same parser as anyone's; they never speak and
never write notes. Given the same state they write the original's sentence byte for byte (the
golden episodes check every factor and magpie seat). They decide from :class:`BaselineView`,
which is the seat's own view plus the two hidden reads the original's rules need (see
``agents.seat_view``).
"""

from __future__ import annotations

from sim import Game
from sim.rules.prices import buy_walk

from .seat_view import BaselineView

WAIT = "I wait and watch the road."


def _int(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{name} must be an int; got {value!r}")
    return value


class Factor:
    """The competent baseline and universal fallback (RULES §21 factor; SENTENCES §21.1).

    First rule that applies: (1) at Guildmaster Vell, hand in what a commission still needs;
    (2) at a keeper, buy what a commission still needs (clamped to stock, free slots and what the
    purse affords), else sell a good no open commission needs when ``bid >= base + sell_margin``
    and the shop can pay; (3) pick up a needed good, or one with ``base >= pickup_value``;
    (4) walk one step toward the nearest shop stocking a still-needed good (else the Guildhall
    while a commission is open, else Market Square); (5) wait.

    Args:
        sell_margin: sell a spare good only if the bid is at least its base value plus this (0).
        pickup_value: pick up a good nobody needs only if its base value is at least this (8).
    """

    scripted = True
    name = "factor"

    def __init__(self, sell_margin: int = 0, pickup_value: int = 8) -> None:
        self.sell_margin = _int("sell_margin", sell_margin)
        self.pickup_value = _int("pickup_value", pickup_value)

    def __repr__(self) -> str:
        return f"Factor(sell_margin={self.sell_margin}, pickup_value={self.pickup_value})"

    def reset(self, seed: int | None = None) -> None:
        """Stateless: nothing to reset."""

    def act(self, game: Game, seat: int) -> str:
        """The factor's sentence for ``seat`` in the game's start-of-turn state."""
        v = BaselineView(game, seat)
        w = v.world
        goods = w.goods
        items = v.items
        npc = v.keeper
        open_quests = [(g, out) for g, out in v.quests if out > 0]
        needed = {g for g, _ in open_quests}  # goods an open commission names (rules 2-3)
        # Rule 1: standing at the guild's keeper, hand in what an open commission needs.
        if npc >= 0 and npc == w.guild:
            for good, out in open_quests:
                units = min(out, items[good])
                if units > 0:
                    return (f"I hand {w.keepers[npc].name} {w.item_name(good, units)} "
                            "for my commission.")
        # Rule 2: a keeper here: buy for the commissions, then sell a spare good.
        if npc >= 0:
            deals = w.deals[npc]
            stock = v.stock
            for good, out in open_quests:
                want = out - items[good]
                if want <= 0 or not deals[good] or v.free <= 0:
                    continue
                units = min(want, stock[good], v.free)
                # affordable: the rules' price walk from the current stock with the purse
                n = buy_walk(w.ask_table[good], stock[good], units, v.coin)[0]
                if n > 0:
                    return f"I buy {w.item_name(good, n)} from {w.keepers[npc].name}."
            for good in range(len(goods)):
                held = items[good]
                if held <= 0 or good in needed or not deals[good]:
                    continue
                bid = w.bid_table[good][v.stock[good]]
                if bid >= goods[good].value + self.sell_margin and v.shop_coin >= bid:
                    return f"I sell {w.item_name(good, held)} to {w.keepers[npc].name}."
        # Rule 3: pick up a good on the floor that is needed or valuable.
        if v.free > 0:
            floor = v.floor
            for good in range(len(goods)):
                if floor[good] > 0 and (good in needed
                                        or goods[good].value >= self.pickup_value):
                    return f"I pick up the {goods[good].name}."
        # Rule 4: walk toward a target room.
        target = -1
        any_open = False
        dist_here = w.dist[v.room]
        for good, out in open_quests:
            any_open = True
            if items[good] < out and target < 0:
                best, best_d = -1, 0
                for k in w.keepers:  # HIDDEN STATE (scripted-baseline view): other shops' stock
                    if w.deals[k.id][good] and v.stock_of(k.id, good) > 0:
                        d = dist_here[k.room]
                        if best < 0 or d < best_d:
                            best, best_d = k.room, d
                target = best
        if target < 0:
            target = w.keepers[w.guild].room if any_open else 0
        step = w.step_toward(v.room, target)
        if step >= 0:
            return f"I walk to {w.rooms[step].name}."
        # Rule 5.
        return WAIT


class Magpie:
    """The thief-peddler; ignores commissions (RULES §21 magpie; SENTENCES §21.2).

    First rule that applies: (1) in a dark room with thievery on, rob the first other seat here
    carrying goods (not its own employer while bound); (2) on turns divisible by
    ``hawk_period``, offer the first other seat here 1 unit of its lowest-id good for base + 2
    coins; (3) at a keeper, sell all of the first held good it trades with
    ``bid >= base + sell_margin`` and the coin to pay, else buy 1 of the first traded good in
    stock with ``ask <= base + buy_margin`` it can afford and carry; (4) wander: the first dark
    exit not just come from (empty pack only), else the first exit not just come from, else the
    first exit.

    Args:
        hawk_period: offer goods on turns where ``turn % hawk_period == 0`` (3; 0 = never).
        sell_margin: sell when the bid is at least base value plus this (+1).
        buy_margin: buy when the ask is at most base value plus this (-1).
    """

    scripted = True
    name = "magpie"

    def __init__(self, hawk_period: int = 3, sell_margin: int = 1, buy_margin: int = -1) -> None:
        self.hawk_period = _int("hawk_period", hawk_period)
        if self.hawk_period < 0:
            raise ValueError(f"hawk_period must be >= 0 (0 = never); got {hawk_period}")
        self.sell_margin = _int("sell_margin", sell_margin)
        self.buy_margin = _int("buy_margin", buy_margin)

    def __repr__(self) -> str:
        return (f"Magpie(hawk_period={self.hawk_period}, sell_margin={self.sell_margin}, "
                f"buy_margin={self.buy_margin})")

    def reset(self, seed: int | None = None) -> None:
        """Stateless: nothing to reset."""

    def act(self, game: Game, seat: int) -> str:
        """The magpie's sentence for ``seat`` in the game's start-of-turn state."""
        v = BaselineView(game, seat)
        w = v.world
        goods = w.goods
        items = v.items
        carrying = v.free < w.carry_limit
        # Rule 1: rob in the dark.
        if v.dark and v.thievery:
            for other in v.cogs:
                if other != v.employer and v.carries(other):  # HIDDEN STATE: other packs
                    return (f"I jump {v.aliases[other]} here in the dark and take what he is "
                            "carrying.")
        # Rule 2: hawk the lowest-id held good to the first other seat here.
        if self.hawk_period > 0 and v.turn % self.hawk_period == 0 and carrying and v.cogs:
            good = next(g for g in range(len(goods)) if items[g] > 0)
            return (f"I offer {v.aliases[v.cogs[0]]} 1 {goods[good].name} for "
                    f"{goods[good].value + 2} coins.")
        # Rule 3: trade with the keeper here.
        npc = v.keeper
        if npc >= 0:
            deals, stock = w.deals[npc], v.stock
            for good in range(len(goods)):
                if items[good] > 0 and deals[good]:
                    bid = w.bid_table[good][stock[good]]
                    if bid >= goods[good].value + self.sell_margin and v.shop_coin >= bid:
                        return f"I sell {w.item_name(good, items[good])} to {w.keepers[npc].name}."
            for good in range(len(goods)):
                if deals[good] and stock[good] > 0 and v.free > 0:
                    ask = w.ask_table[good][stock[good]]
                    if ask <= goods[good].value + self.buy_margin and v.coin >= ask:
                        return f"I buy 1 {goods[good].name} from {w.keepers[npc].name}."
        # Rule 4: ramble.
        exits = w.rooms[v.room].exits
        step = -1
        if not carrying:
            step = next((e for e in exits if w.rooms[e].dark and e != v.prev_room), -1)
        if step < 0:
            step = next((e for e in exits if e != v.prev_room), exits[0])
        return f"I wander over to {w.rooms[step].name}."
