"""The original's two scripted baselines, rule for rule (RULES §21, SENTENCES §21): the
sentences they write, and their decisions as functions of the start-of-turn state.

``agents.baselines`` holds the policies (``Factor``, ``Magpie``: parameters, checks, the
``Policy`` interface); their decisions live here, with this module compiled at install
(``agents.baselines.native``), since a league asks them 84 times an episode. Both write plain
sentences that go through the same parser as anyone's; they never speak and never write notes. Given
the same state they write the original's sentence byte for byte (the golden episodes check
every factor and magpie seat). They decide from :class:`BaselineView`, which is the seat's own
view plus the two hidden reads the original's rules need (see ``agents.baselines.view``).
"""

from __future__ import annotations

from typing import SupportsIndex

from agents.baselines.view import BaselineView
from sim import Game
from sim.language.parser import parse
from sim.language.vocab import REFLEXIVE_WORDS, tokenize
from sim.rules.intents import Intent, ParsedSentence
from sim.rules.prices import buy_walk
from sim.rules.world import COG_NAMES, World, per_world

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


# The most units a phrasebook sentence names: the standard town's carry limit.  A larger pack
# (a world file's ``carry_limit``, up to 999) would make the book grow with it, millions of
# sentences parsed before the first decision in a large town; a rarer quantity is simply parsed
# by the engine (and its parse memo), as any sentence missing from the book is.
_BOOK_UNITS = 8


def _vocabulary(w: World) -> list[str]:
    """Every sentence without a seat's alias that a baseline can write in ``w`` (quantities up
    to the carry limit, at most ``_BOOK_UNITS``; a rarer one is simply parsed by the engine)."""
    units = range(1, min(w.carry_limit, _BOOK_UNITS) + 1)
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
            book[sentence] = ParsedSentence(sentence, it, vouched=True)

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
                                           it.coin, it.reason, it.text), vouched=True)


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
        # magpie rule 4: the wander sentence by [room][prev_room + 1][carrying] (the wait in a
        # room without exits)
        wander_or_wait = (*self.wander, self.wait)  # index -1: no exit to wander to
        self.ramble = tuple(tuple((wander_or_wait[_ramble(w, room, prev, False)],
                                   wander_or_wait[_ramble(w, room, prev, True)])
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
    exit not just come from, else the first exit; -1 in a room without exits (a world file's
    town may have one), where the magpie waits as the factor does with nowhere to walk."""
    exits = w.rooms[room].exits
    if not exits:
        return -1
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
    town, say = _last
    if town is not w or say is None:
        say = phrases(w)
        _last = (w, say)
    return say


def factor_sentence(game: Game, seat: SupportsIndex, sell_margin: int, pickup_value: int) -> str:
    """The factor's sentence for ``seat`` in the game's start-of-turn state (rules and
    parameters: :class:`agents.Factor`)."""
    v = BaselineView(game, seat)
    w = v.world
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
    stock = v.stock  # the keeper's here (None without one)
    if stock is not None:
        deals = w.deals[npc]
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
            if bid >= values[good] + sell_margin and v.shop_coin >= bid:
                return say.sell(npc, good, held)
    # Rule 3: pick up a good on the floor that is needed or valuable.
    if free > 0:
        for good, n in enumerate(v.floor):
            if n > 0 and (good in needed or values[good] >= pickup_value):
                return say.pick_up[good]
    # Rule 4: walk toward a target room.
    here = v.room
    target = -1
    for good, out in open_quests:
        if items[good] < out:
            best, best_d = -1, 0
            dist_here = w.dist[here]
            for k, room in say.shops[good]:
                # HIDDEN STATE (scripted-baseline view): other shops' stock.  A shop it cannot
                # reach (distance -1: a world file's town may be cut in parts) is no target.
                d = dist_here[room]
                if d >= 0 and v.stock_of(k, good) > 0:
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


def magpie_sentence(game: Game, seat: SupportsIndex, hawk_period: int, sell_margin: int,
                    buy_margin: int) -> str:
    """The magpie's sentence for ``seat`` in the game's start-of-turn state (rules and
    parameters: :class:`agents.Magpie`)."""
    v = BaselineView(game, seat)
    w = v.world
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
    if hawk_period > 0 and v.turn % hawk_period == 0 and carrying and (cogs := v.cogs):
        good = next(g for g, n in enumerate(items) if n > 0)
        first = cogs[0]
        return say.hawk(v.aliases[first], first, good)
    # Rule 3: trade with the keeper here.
    npc = v.keeper
    stock = v.stock  # the keeper's here (None without one)
    if stock is not None:
        values, traded = say.values, say.traded[npc]
        for good in traded:
            if items[good] > 0:
                bid = w.bid_table[good][stock[good]]
                if bid >= values[good] + sell_margin and v.shop_coin >= bid:
                    return say.sell(npc, good, items[good])
        if v.free > 0:
            for good in traded:
                if stock[good] > 0:
                    ask = w.ask_table[good][stock[good]]
                    if ask <= values[good] + buy_margin and v.coin >= ask:
                        return say.buy(npc, good, 1)
    # Rule 4: ramble (the first dark exit not just come from, empty pack only; else the
    # first exit not just come from; else the first exit; in a room without exits, wait:
    # see ``_ramble``).
    return say.ramble[v.room][v.prev_room + 1][carrying]
