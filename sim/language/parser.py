"""The sentence parser: one English sentence -> one :class:`~sim.rules.intents.Intent` (SENTENCES).

:func:`parse` is pure and total: it never raises on any ``str`` (any length, any code point,
lone surrogates, NUL, digit strings of any size) and the same inputs always give the same
result.  The pipeline follows SENTENCES §3: lift speech (§4), normalise and tokenise (§5),
whole-sentence phrase matches (§6-§7), the verb scan (§8), slots (§9), quantity (§10), coin
(§11), per-intent checks (§12) and the ``say`` fallback (§13).

Whitespace stripping uses :func:`sim.rules.text.strip_ws`, which strips Unicode whitespace
correctly;
the original (Nim 2.2) mis-strips text ending in some 3/4-byte characters (RULES §23), a bug we
deliberately do not reproduce.  The game one-lines and cuts the sentence to 240 runes before
calling :func:`parse`; the parser itself has no length cap.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..rules.checks import check_slots
from ..rules.intents import Intent
from ..rules.offers import Offer
from ..rules.text import strip_ws
from ..rules.world import QTY_ALL, World
from .vocab import (
    COGS,
    COIN_WORDS,
    G_ALWAYS,
    G_DOWN,
    G_GOOD_NO_ROOM,
    G_IN_OVER,
    G_NEXT_FOR,
    G_NOTHING,
    G_NPC,
    G_OFFER,
    G_OTHER_COG,
    G_POCKET,
    G_PURSE,
    G_ROOM,
    G_TARGET,
    GOODS,
    NPCS,
    NUMBER_WORDS,
    OFFER_WORDS,
    QUOTE_CHARS,
    QUOTE_MAP,
    REFLEXIVE_WORDS,
    ROOMS,
    VERBS,
    phrase_index,
    tokenize,
)

__all__ = ["parse", "lift_speech", "number_value", "tokenize"]

_INT64_MAX = (1 << 63) - 1
_NOT_A_NUMBER = -1
_NONE_MATCH = (-1, -1, False)

_new = object.__new__


def _intent(kind: str, to_room: int, item: int, qty: int, npc: int, other: int, coin: int,
            reason: str, text: str) -> Intent:
    """Build an :class:`Intent` without its validating constructor (every value here already
    satisfies its constraints: ids >= -1, 0 <= qty, coin <= 2**63-1, known kind/reason)."""
    it = _new(Intent)
    it.__dict__.update(kind=kind, to_room=to_room, item=item, qty=qty, npc=npc, other=other,
                       coin=coin, reason=reason, text=text)
    return it


def lift_speech(sentence: str) -> tuple[str, str]:
    """§4: return ``(text to parse, spoken)``.

    Curly quotes and guillemets count as ``"``; the first pair is lifted (its content stripped
    of Unicode whitespace) and replaced by one space.  No pair: nothing is lifted.
    """
    conv = sentence
    if not sentence.isascii():  # the curly quotes and guillemets are not ASCII
        for q in QUOTE_CHARS:
            if q in sentence:
                conv = sentence.translate(QUOTE_MAP)
                break
    i = conv.find('"')
    if i < 0:
        return conv, ""
    j = conv.find('"', i + 1)
    if j < 0:
        return conv, ""
    return conv[:i] + " " + conv[j + 1:], strip_ws(conv[i + 1:j])


def number_value(token: str) -> int:
    """§10: a token's number value, or -1 when it is not a number.

    ASCII digit strings (leading zeros allowed) up to 2**63-1; the number words of §10.
    """
    v = NUMBER_WORDS.get(token)
    if v is not None:
        return v
    if not (token.isdigit() and token.isascii()):
        return _NOT_A_NUMBER
    if len(token) > 19:  # avoid int() on huge strings (and its digit limit)
        token = token.lstrip("0")
        if len(token) > 19:
            return _NOT_A_NUMBER
        if not token:
            return 0
    v = int(token)
    return v if v <= _INT64_MAX else _NOT_A_NUMBER


def _best(matches: list[tuple[int, int, int]], start: int) -> tuple[int, int, bool]:
    """§6 best match among ``matches`` (start, length, id; in start then list order) that start
    at ``start`` or later: ``(id, pos, ambiguous)``."""
    bid = -1
    bpos = -1
    blen = 0
    amb = False
    for p, ln, ident in matches:
        if p < start or ln < blen:
            continue
        if ln > blen:
            bid, bpos, blen, amb = ident, p, ln, False
        elif ident != bid:
            amb = True
    return bid, bpos, amb


def parse(world: World, aliases: Sequence[str], seat: int, room: int,
          offers: Sequence[Offer], turn: int, sentence: str) -> Intent:
    """Parse ``sentence`` written by ``seat`` standing in ``room`` (SENTENCES §2-§13).

    ``aliases`` are the six aliases in seat order (the speaker's included); ``offers`` and
    ``turn`` are used only by an ``accept`` that names nobody.  Never raises.
    """
    text, spoken = lift_speech(sentence)
    toks = tokenize(text)
    if not toks:  # §3 step 3
        if spoken:
            return _intent("say", -1, -1, 1, -1, -1, 0, "ok", spoken)
        return _intent("none", -1, -1, 1, -1, -1, 0, "unparsed", spoken)
    found = _phrase_matches(world, aliases, toks)
    whole = _whole_sentence(found, toks, seat)
    kind, verb_at = _scan_verbs(toks, whole, seat)
    if not kind:  # §8.4 the verbless purchase, else no_verb with every slot at its default
        if whole[NPCS][0] >= 0 and whole[GOODS][0] >= 0:
            kind = "buy"
        else:
            return _intent("none", -1, -1, 1, -1, -1, 0, "no_verb", spoken)
    room_s, item_s, npc_s, cog_s = _slots(found, whole, verb_at + 1)
    qty = _quantity(toks, item_s)
    coin = _coin(toks)
    # §12 per-intent checks and defaults, shared with hand-built intents.
    npc, other, coin, reason = check_slots(
        kind, room_s[0], item_s[0], npc_s[0], cog_s[0], coin, world, seat, room, offers, turn,
        (room_s[2], item_s[2], npc_s[2], cog_s[2]))
    if kind == "say" and not spoken:  # §13: the original sentence, verb and all, stripped
        spoken = strip_ws(sentence)
    if reason != "ok":
        kind = "none"
    return _intent(kind, room_s[0], item_s[0], qty, npc, other, coin, reason, spoken)


Match = tuple[int, int, bool]
"""A slot's best match: (id, token position, ambiguous); ``(-1, -1, False)`` for none."""


def _phrase_matches(world: World, aliases: Sequence[str], toks: tuple[str, ...]
                    ) -> tuple[list[tuple[int, int, int]], ...]:
    """§6-§7: every phrase match of the four lists (rooms, goods, keepers, cogs), each a list
    of (start, length, id) in start, then list, order."""
    index = phrase_index(world, aliases if type(aliases) is tuple else tuple(aliases))
    found: tuple[list[tuple[int, int, int]], ...] = ([], [], [], [])
    for p, t in enumerate(toks):
        cands = index.get(t)
        if cands is not None:
            for which, phrase, ident, ln in cands:
                if ln == 1 or toks[p:p + ln] == phrase:
                    found[which].append((p, ln, ident))
    return found


def _whole_sentence(found: tuple[list[tuple[int, int, int]], ...], toks: tuple[str, ...],
                    seat: int) -> list[Match]:
    """§6-§7 whole-sentence matches per list; a reflexive word names the speaker as the cog."""
    whole = [_best(m, 0) if m else _NONE_MATCH for m in found]
    if whole[COGS][0] < 0 and not REFLEXIVE_WORDS.isdisjoint(toks):
        for p, t in enumerate(toks):
            if t in REFLEXIVE_WORDS:
                whole[COGS] = (seat, p, False)
                break
    return whole


def _scan_verbs(toks: tuple[str, ...], whole: list[Match], seat: int) -> tuple[str, int]:
    """§8: the first token with a verb-table entry whose guard holds: (intent kind, position),
    or ``("", -1)``."""
    offer_flag = not OFFER_WORDS.isdisjoint(toks)
    last: dict[str, int] = {}
    for i, t in enumerate(toks):
        entries = VERBS.get(t)
        if entries is None:
            continue
        for intent_kind, guard in entries:
            if guard == G_ALWAYS or _guard_holds(guard, toks, i, whole, seat, offer_flag, last):
                return intent_kind, i
    return "", -1


_LATER_WORDS = {G_POCKET: frozenset(("pocket", "pockets")), G_PURSE: frozenset(("purse", "purses"))}


def _guard_holds(guard: str, toks: tuple[str, ...], i: int, whole: list[Match], seat: int,
                 offer_flag: bool, last: dict[str, int]) -> bool:
    """§8.2: whether the verb at token ``i`` may decide the intent (G_ALWAYS: always).
    ``last`` keeps, per "later in the sentence" guard, the last position of its words, found
    once a parse (a sentence of many failing verbs stays linear)."""
    if guard == G_ALWAYS:
        return True
    if guard == G_ROOM:
        return whole[ROOMS][0] >= 0
    if guard == G_GOOD_NO_ROOM:
        return whole[GOODS][0] >= 0 and whole[ROOMS][0] < 0
    if guard == G_OTHER_COG:
        return whole[COGS][0] >= 0 and whole[COGS][0] != seat
    if guard == G_NPC:
        return whole[NPCS][0] >= 0
    if guard == G_TARGET:
        return whole[NPCS][0] >= 0 or whole[COGS][0] >= 0
    if guard == G_OFFER:
        return offer_flag
    if guard == G_IN_OVER:
        near = toks[i + 1:i + 4]
        return "in" in near or "over" in near
    if guard == G_NEXT_FOR:
        return i + 1 < len(toks) and toks[i + 1] == "for"
    if guard == G_DOWN:
        return "down" in toks[i + 1:i + 4]
    if guard == G_NOTHING:
        return "nothing" in toks[i + 1:i + 4]
    words = _LATER_WORDS.get(guard)
    if words is not None:
        end = last.get(guard)
        if end is None:
            end = last[guard] = max((p for p, t in enumerate(toks) if t in words), default=-1)
        return end > i
    return False  # pragma: no cover - every guard of the table is listed above


def _slots(found: tuple[list[tuple[int, int, int]], ...], whole: list[Match],
           start: int) -> list[Match]:
    """§9: per slot, the best match after the verb if there is one, else the whole-sentence
    match (``start`` 0, the verbless purchase, reads the whole sentence)."""
    if not start:
        return whole
    out = []
    for m, w in zip(found, whole):
        tail = _best(m, start) if m else _NONE_MATCH
        out.append(tail if tail[0] >= 0 else w)
    return out


def _value(token: str) -> int:
    """:func:`number_value`, with the word lookup first: most tokens are not digits."""
    return number_value(token) if token.isdigit() else NUMBER_WORDS.get(token, _NOT_A_NUMBER)


def _quantity(toks: tuple[str, ...], item_s: Match) -> int:
    """§10: the first number from token 0 up to (not including) the good; 1 if none."""
    for t in (toks[:item_s[1]] if item_s[0] >= 0 else toks):
        v = _value(t)
        if v >= 0:
            return v
    return 1


def _coin(toks: tuple[str, ...]) -> int:
    """§11: a number (not 999) beside a coin word, else one right after "for", else 0."""
    n = len(toks)
    for k in range(n):
        if (k + 1 < n and toks[k + 1] in COIN_WORDS) or (k > 0 and toks[k - 1] in COIN_WORDS):
            v = _value(toks[k])
            if v >= 0 and v != QTY_ALL:
                return v
    for k in range(n - 1):
        if toks[k] == "for":
            v = _value(toks[k + 1])
            if v >= 0 and v != QTY_ALL:
                return v
    return 0
