"""The original's two scripted baselines, rule for rule (RULES §21, SENTENCES §21).

Both write plain sentences that go through the same parser as anyone's; they never speak and
never write notes. Given the same state they write the original's sentence byte for byte (the
golden episodes check every factor and magpie seat). They decide from :class:`BaselineView`,
which is the seat's own view plus the two hidden reads the original's rules need (see
``agents.seat_view``).
"""

from __future__ import annotations

from sim import Game
from sim.language.parser import parse
from sim.language.vocab import REFLEXIVE_WORDS, tokenize
from sim.rules.intents import Intent, ParsedSentence
from sim.rules.prices import buy_walk
from sim.rules.world import COG_NAMES, World, per_world

from .seat_view import BaselineView

WAIT = "I wait and watch the road."


# The sentences the baselines write.  Those that name no seat are few in any town, so each is
# parsed once per town (``phrasebook``) and handed to the engine with its intent.
def _hand(w: World, npc: int, good: int, n: int) -> str:
    return f"I hand {w.keepers[npc].name} {w.item_name(good, n)} for my commission."


def _buy(w: World, npc: int, good: int, n: int) -> str:
    return f"I buy {w.item_name(good, n)} from {w.keepers[npc].name}."


def _sell(w: World, npc: int, good: int, n: int) -> str:
    return f"I sell {w.item_name(good, n)} to {w.keepers[npc].name}."


def _pick_up(w: World, good: int) -> str:
    return f"I pick up the {w.goods[good].name}."


def _walk(w: World, room: int) -> str:
    return f"I walk to {w.rooms[room].name}."


def _wander(w: World, room: int) -> str:
    return f"I wander over to {w.rooms[room].name}."


def _rob(alias: str) -> str:
    return f"I jump {alias} here in the dark and take what he is carrying."


def _hawk(w: World, alias: str, good: int) -> str:
    g = w.goods[good]
    return f"I offer {alias} 1 {g.name} for {g.value + 2} coins."


def _vocabulary(w: World) -> list[str]:
    """Every sentence without a seat's alias that a baseline can write in ``w`` (quantities up
    to the carry limit; a rarer one is simply parsed by the engine)."""
    units = range(1, w.carry_limit + 1)
    out = [WAIT]
    for good in range(w.n_goods):
        out += [_hand(w, w.guild, good, n) for n in units]
        for k in w.keepers:
            if w.deals[k.id][good]:
                out += [_buy(w, k.id, good, n) for n in units]
                out += [_sell(w, k.id, good, n) for n in units]
        out.append(_pick_up(w, good))
    for room in range(w.n_rooms):
        out += [_walk(w, room), _wander(w, room)]
    return out


def _named_vocabulary(w: World, alias: str) -> list[str]:
    """Every sentence naming seat ``alias`` that a baseline can write in ``w``."""
    return [_rob(alias)] + [_hawk(w, alias, good) for good in range(w.n_goods)]


# Words that would make a parse depend on the game's aliases or on the speaker.
_SEAT_WORDS = frozenset(t for name in COG_NAMES for t in tokenize(name)) | {"cog"} | \
    REFLEXIVE_WORDS


@per_world(maxsize=8)
def phrasebook(w: World) -> dict[str, ParsedSentence]:
    """The baselines' sentences in ``w`` with the intent each parses to, keeping only those
    whose parse cannot depend on the game but through the one seat a sentence names:

    * no word of another alias, nor a reflexive word: the aliases' order and the speaker enter
      only as the named seat's id (stored as ``other`` 1 here, the named alias's seat in
      play: see ``_said``);
    * the same intent in a room with a keeper and one with another or none: no keeper is
      filled in from the room;
    * offers and the turn only matter to ``accept``, which the baselines never write.
    """
    keeper_rooms = {w.keeper_in_room[r]: r for r in range(w.n_rooms)}
    if len(keeper_rooms) < 2:  # no two rooms with different keepers to compare: parse always
        return {}
    room_a, room_b = list(keeper_rooms.values())[:2]
    book = {}

    def learn(sentence: str, aliases: tuple[str, ...], named: str) -> None:
        if not _SEAT_WORDS.isdisjoint(tokenize(sentence.replace(named, "", 1) if named
                                               else sentence)):
            return
        it = parse(w, aliases, 0, room_a, [], 0, sentence)
        if (it == parse(w, aliases, 0, room_b, [], 0, sentence) and it.kind != "accept"
                and it.other == (1 if named else -1)):
            book[sentence] = ParsedSentence(sentence, it)

    for sentence in _vocabulary(w):
        learn(sentence, tuple(COG_NAMES[:6]), "")
    for name in COG_NAMES:  # the named seat at 1, the speaker at 0, other aliases around
        aliases = (next(n for n in COG_NAMES if n != name), name,
                   *[n for n in COG_NAMES if n != name][1:5])
        for sentence in _named_vocabulary(w, name):
            learn(sentence, aliases, name)
    return book


def _said(w: World, sentence: str, other: int = -1) -> str:
    """``sentence``, carrying its intent when the town's phrasebook has it; ``other`` is the
    seat whose alias the sentence names (the book holds such intents with ``other`` 1)."""
    known = phrasebook(w).get(sentence)
    if known is None or other < 0:
        return known or sentence
    it = known.intent
    return ParsedSentence(sentence, Intent(it.kind, it.to_room, it.item, it.qty, it.npc, other,
                                           it.coin, it.reason, it.text))


class Phrases:
    """One town's baseline sentences by what they say, each written and looked up in the
    phrasebook once: a decision then costs a list index or a dict hit, not an f-string, a
    plural and a phrasebook lookup (the baselines decide thousands of times a second)."""

    def __init__(self, w: World) -> None:
        self.world = w
        self.wait = _said(w, WAIT)
        self.walk = [_said(w, _walk(w, room)) for room in range(w.n_rooms)]
        self.wander = [_said(w, _wander(w, room)) for room in range(w.n_rooms)]
        self.pick_up = [_said(w, _pick_up(w, good)) for good in range(w.n_goods)]
        # The town's constant facts the rules scan, laid out as the rules read them.
        self.values = tuple(g.value for g in w.goods)
        self.traded = tuple(tuple(g for g, ok in enumerate(row) if ok) for row in w.deals)
        self.shops = tuple(tuple((k.id, k.room) for k in w.keepers if w.deals[k.id][good])
                           for good in range(w.n_goods))          # factor rule 4, keeper order
        self.guild_room = w.keepers[w.guild].room
        # factor rule 4's step, the walk sentence toward each room from each room (or None)
        steps = [[w.step_toward(a, b) for b in range(w.n_rooms)] for a in range(w.n_rooms)]
        self.walk_to = tuple(tuple(self.walk[step] if step >= 0 else None for step in row)
                             for row in steps)
        # magpie rule 4: the wander sentence by [room][prev_room + 1][carrying]
        self.ramble = tuple(tuple((self.wander[_ramble(w, room, prev, False)],
                                   self.wander[_ramble(w, room, prev, True)])
                                  for prev in range(-1, w.n_rooms)) for room in range(w.n_rooms))
        self._memo: dict[tuple, str] = {}  # bounded: keepers x goods x units, seats x goods

    def hand(self, npc: int, good: int, n: int) -> str:
        return self._memo.get((_hand, npc, good, n)) or self._trade(_hand, npc, good, n)

    def buy(self, npc: int, good: int, n: int) -> str:
        return self._memo.get((_buy, npc, good, n)) or self._trade(_buy, npc, good, n)

    def sell(self, npc: int, good: int, n: int) -> str:
        return self._memo.get((_sell, npc, good, n)) or self._trade(_sell, npc, good, n)

    def rob(self, alias: str, other: int) -> str:
        key = (_rob, alias, other)
        said = self._memo.get(key)
        if said is None:
            said = self._memo[key] = _said(self.world, _rob(alias), other)
        return said

    def hawk(self, alias: str, other: int, good: int) -> str:
        key = (_hawk, alias, other, good)
        said = self._memo.get(key)
        if said is None:
            said = self._memo[key] = _said(self.world, _hawk(self.world, alias, good), other)
        return said

    def _trade(self, write, npc: int, good: int, n: int) -> str:
        said = self._memo[write, npc, good, n] = _said(self.world, write(self.world, npc, good, n))
        return said


def _ramble(w: World, room: int, prev: int, carrying: bool) -> int:
    """Magpie rule 4: the first dark exit not just come from (empty pack only), else the first
    exit not just come from, else the first exit."""
    exits = w.rooms[room].exits
    step = -1
    if not carrying:
        step = next((e for e in exits if w.rooms[e].dark and e != prev), -1)
    if step < 0:
        step = next((e for e in exits if e != prev), exits[0])
    return step


@per_world(maxsize=8)
def phrases(w: World) -> Phrases:
    """The town's :class:`Phrases` (built on the first decision in it)."""
    return Phrases(w)


_last: tuple[World | None, Phrases | None] = (None, None)  # the town decided in last, its phrases


def _phrases(w: World) -> Phrases:
    """``phrases(w)``, kept in ``_last``: a decision finds its town's phrases by one identity
    test (a run plays one town after another, not mixed)."""
    global _last
    _last = (w, phrases(w))
    return _last[1]


def _int(name: str, value: object) -> int:
    if type(value) is int:  # the usual case, at once (fresh policies every episode)
        return value
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
    concurrent = False  # decides at once: never worth a thread (agents.policy.decide_turn)
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
        town, say = _last
        if town is not w:
            say = _phrases(w)
        values = say.values
        items = v.items
        npc = v.keeper
        open_quests = [(g, out) for g, out in v.quests if out > 0]
        # Rule 1: standing at the guild's keeper, hand in what an open commission needs.
        if npc == w.guild:
            for good, out in open_quests:
                units = min(out, items[good])
                if units > 0:
                    return say.hand(npc, good, units)
        needed = dict(open_quests)  # goods an open commission names (rules 2-3), as keys
        free = v.free
        # Rule 2: a keeper here: buy for the commissions, then sell a spare good.
        if npc >= 0:
            deals = w.deals[npc]
            stock = v.stock
            for good, out in open_quests:
                want = out - items[good]
                if want <= 0 or not deals[good] or free <= 0:
                    continue
                units = min(want, stock[good], free)
                # affordable: the rules' price walk from the current stock with the purse
                n = buy_walk(w.ask_table[good], stock[good], units, v.coin)[0]
                if n > 0:
                    return say.buy(npc, good, n)
            for good in say.traded[npc]:
                held = items[good]
                if held <= 0 or good in needed:
                    continue
                bid = w.bid_table[good][stock[good]]
                if bid >= values[good] + self.sell_margin and v.shop_coin >= bid:
                    return say.sell(npc, good, held)
        # Rule 3: pick up a good on the floor that is needed or valuable.
        if free > 0:
            for good, n in enumerate(v.floor):
                if n > 0 and (good in needed or values[good] >= self.pickup_value):
                    return say.pick_up[good]
        # Rule 4: walk toward a target room.
        here = v.room
        target = -1
        for good, out in open_quests:
            if items[good] < out:
                best, best_d = -1, 0
                dist_here = w.dist[here]
                for k, room in say.shops[good]:
                    # HIDDEN STATE (scripted-baseline view): other shops' stock
                    if v.stock_of(k, good) > 0:
                        d = dist_here[room]
                        if best < 0 or d < best_d:
                            best, best_d = room, d
                target = best
                if target >= 0:
                    break
        if target < 0:
            target = say.guild_room if open_quests else 0
        walk = say.walk_to[here][target]
        if walk is not None:
            return walk
        # Rule 5.
        return say.wait


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
    concurrent = False  # decides at once: never worth a thread (agents.policy.decide_turn)
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
        town, say = _last
        if town is not w:
            say = _phrases(w)
        items = v.items
        carrying = v.free < w.carry_limit
        # Rule 1: rob in the dark.
        if v.dark and v.thievery:
            employer = v.employer
            for other in v.cogs:
                if other != employer and v.carries(other):  # HIDDEN STATE: other packs
                    return say.rob(v.aliases[other], other)
        # Rule 2: hawk the lowest-id held good to the first other seat here.
        if self.hawk_period > 0 and v.turn % self.hawk_period == 0 and carrying and (
                cogs := v.cogs):
            good = next(g for g, n in enumerate(items) if n > 0)
            first = cogs[0]
            return say.hawk(v.aliases[first], first, good)
        # Rule 3: trade with the keeper here.
        npc = v.keeper
        if npc >= 0:
            values, traded, stock = say.values, say.traded[npc], v.stock
            for good in traded:
                if items[good] > 0:
                    bid = w.bid_table[good][stock[good]]
                    if bid >= values[good] + self.sell_margin and v.shop_coin >= bid:
                        return say.sell(npc, good, items[good])
            if v.free > 0:
                for good in traded:
                    if stock[good] > 0:
                        ask = w.ask_table[good][stock[good]]
                        if ask <= values[good] + self.buy_margin and v.coin >= ask:
                            return say.buy(npc, good, 1)
        # Rule 4: ramble (the first dark exit not just come from, empty pack only; else the
        # first exit not just come from; else the first exit: see ``_ramble``).
        return say.ramble[v.room][v.prev_room + 1][carrying]
