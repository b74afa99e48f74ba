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

from ..rules.intents import Intent
from ..rules.offers import Offer
from ..rules.text import strip_ws
from ..rules.world import QTY_ALL, World
from .vocab import (
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
    NUMBER_WORDS,
    OFFER_WORDS,
    QUOTE_CHARS,
    QUOTE_MAP,
    REFLEXIVE_WORDS,
    VERBS,
    phrase_index,
    tokenize,
    world_phrases,
)

__all__ = ["parse", "lift_speech", "number_value", "tokenize"]

_INT64_MAX = (1 << 63) - 1
_NOT_A_NUMBER = -1
_NONE_MATCH = (-1, -1, False)

_new = object.__new__
_set = object.__setattr__


def _intent(kind: str, to_room: int, item: int, qty: int, npc: int, other: int, coin: int,
            reason: str, text: str) -> Intent:
    """Build an :class:`Intent` without its validating constructor (every value here already
    satisfies its constraints: ids >= -1, 0 <= qty, coin <= 2**63-1, known kind/reason)."""
    it = _new(Intent)
    _set(it, "kind", kind)
    _set(it, "to_room", to_room)
    _set(it, "item", item)
    _set(it, "qty", qty)
    _set(it, "npc", npc)
    _set(it, "other", other)
    _set(it, "coin", coin)
    _set(it, "reason", reason)
    _set(it, "text", text)
    return it


def lift_speech(sentence: str) -> tuple[str, str]:
    """§4: return ``(text to parse, spoken)``.

    Curly quotes and guillemets count as ``"``; the first pair is lifted (its content stripped
    of Unicode whitespace) and replaced by one space.  No pair: nothing is lifted.
    """
    conv = sentence
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


def _live_offerer(offers: Sequence[Offer], seat: int, turn: int) -> int:
    """§12 accept naming nobody: the offerer of the one offer to ``seat`` posted last turn."""
    found = -1
    count = 0
    for o in offers:
        if o.to == seat and o.posted_turn == turn - 1:
            count += 1
            found = o.sender
    return found if count == 1 else -1


def parse(world: World, aliases: Sequence[str], seat: int, room: int,
          offers: Sequence[Offer], turn: int, sentence: str) -> Intent:
    """Parse ``sentence`` written by ``seat`` standing in ``room`` (SENTENCES §2-§13).

    ``aliases`` are the six aliases in seat order (the speaker's included); ``offers`` and
    ``turn`` are used only by an ``accept`` that names nobody.  Never raises.
    """
    text, spoken = lift_speech(sentence)
    toks = tokenize(text)
    n = len(toks)
    if n == 0:  # §3 step 3
        if spoken:
            return _intent("say", -1, -1, 1, -1, -1, 0, "ok", spoken)
        return _intent("none", -1, -1, 1, -1, -1, 0, "unparsed", spoken)

    # §6-§7 whole-sentence matches: collect every phrase match once, in start/list order.
    index = phrase_index(world, aliases)
    found: tuple[list[tuple[int, int, int]], ...] = ([], [], [], [])
    for p, t in enumerate(toks):
        cands = index.get(t)
        if cands is not None:
            for which, phrase, ident, ln in cands:
                if ln == 1 or toks[p:p + ln] == phrase:
                    found[which].append((p, ln, ident))
    room_m, item_m, npc_m, alias_m = found
    w_room = _best(room_m, 0) if room_m else _NONE_MATCH
    w_item = _best(item_m, 0) if item_m else _NONE_MATCH
    w_npc = _best(npc_m, 0) if npc_m else _NONE_MATCH
    w_alias = _best(alias_m, 0) if alias_m else _NONE_MATCH
    w_cog = w_alias
    if w_alias[0] < 0:
        for p, t in enumerate(toks):
            if t in REFLEXIVE_WORDS:
                w_cog = (seat, p, False)
                break
    offer_flag = not OFFER_WORDS.isdisjoint(toks)

    # §8 verb scan: the first token with a verb-table entry whose guard holds.
    kind = ""
    verb_at = -1
    for i, t in enumerate(toks):
        entries = VERBS.get(t)
        if entries is None:
            continue
        for intent_kind, guard in entries:
            if guard == G_ALWAYS:
                ok = True
            elif guard == G_ROOM:
                ok = w_room[0] >= 0
            elif guard == G_GOOD_NO_ROOM:
                ok = w_item[0] >= 0 and w_room[0] < 0
            elif guard == G_OTHER_COG:
                ok = w_cog[0] >= 0 and w_cog[0] != seat
            elif guard == G_NPC:
                ok = w_npc[0] >= 0
            elif guard == G_TARGET:
                ok = w_npc[0] >= 0 or w_cog[0] >= 0
            elif guard == G_OFFER:
                ok = offer_flag
            elif guard == G_IN_OVER:
                near = toks[i + 1:i + 4]
                ok = "in" in near or "over" in near
            elif guard == G_NEXT_FOR:
                ok = i + 1 < n and toks[i + 1] == "for"
            elif guard == G_DOWN:
                ok = "down" in toks[i + 1:i + 4]
            elif guard == G_NOTHING:
                ok = "nothing" in toks[i + 1:i + 4]
            elif guard == G_POCKET:
                later = toks[i + 1:]
                ok = "pocket" in later or "pockets" in later
            elif guard == G_PURSE:
                later = toks[i + 1:]
                ok = "purse" in later or "purses" in later
            else:  # pragma: no cover - every guard of the table is listed above
                ok = False
            if ok:
                kind = intent_kind
                verb_at = i
                break
        if kind:
            break
    if not kind:  # §8.4 the verbless purchase, else no_verb with every slot at its default
        if w_npc[0] >= 0 and w_item[0] >= 0:
            kind = "buy"
        else:
            return _intent("none", -1, -1, 1, -1, -1, 0, "no_verb", spoken)

    # §9 slots: the tail match if it found something, else the whole-sentence match.
    start = verb_at + 1
    if start:
        m = _best(room_m, start) if room_m else _NONE_MATCH
        room_s = m if m[0] >= 0 else w_room
        m = _best(item_m, start) if item_m else _NONE_MATCH
        item_s = m if m[0] >= 0 else w_item
        m = _best(npc_m, start) if npc_m else _NONE_MATCH
        npc_s = m if m[0] >= 0 else w_npc
        m = _best(alias_m, start) if alias_m else _NONE_MATCH
        cog_s = m if m[0] >= 0 else w_cog
    else:  # verbless purchase: the tail is the whole sentence
        room_s, item_s, npc_s, cog_s = w_room, w_item, w_npc, w_cog
    to_room = room_s[0]
    item = item_s[0]
    npc = npc_s[0]
    other = cog_s[0]

    # §10 quantity: the first number from token 0 up to (not including) the good.
    vals = [number_value(t) for t in toks]
    qty = 1
    for v in (vals[:item_s[1]] if item >= 0 else vals):
        if v >= 0:
            qty = v
            break

    # §11 coin: a number (not 999) beside a coin word, else one right after "for", else 0.
    coin = 0
    for k in range(n):
        v = vals[k]
        if v >= 0 and v != QTY_ALL and (
                (k + 1 < n and toks[k + 1] in COIN_WORDS) or (k > 0 and toks[k - 1] in COIN_WORDS)):
            coin = v
            break
    else:
        for k in range(n - 1):
            if toks[k] == "for":
                v = vals[k + 1]
                if v >= 0 and v != QTY_ALL:
                    coin = v
                    break

    # §12 per-intent checks and defaults.
    reason = "ok"
    if kind == "move":
        if room_s[2]:
            reason = "ambiguous_target"
        elif to_room < 0:
            reason = "no_target"
    elif kind == "take" or kind == "drop":
        if item_s[2]:
            reason = "ambiguous_target"
        elif item < 0:
            reason = "no_target"
    elif kind == "buy" or kind == "sell":
        if item_s[2]:
            reason = "ambiguous_target"
        elif item < 0:
            reason = "no_target"
        elif npc_s[2]:
            reason = "ambiguous_target"
        elif npc < 0:
            kir = world_phrases(world).keeper_in_room
            npc = kir[room] if 0 <= room < len(kir) else -1
            if npc < 0:
                reason = "no_target"
    elif kind == "give":
        if item_s[2] or npc_s[2] or cog_s[2]:
            reason = "ambiguous_target"
        else:
            if other == seat:
                other = -1
            if npc < 0 and other < 0:
                reason = "no_target"
            elif item < 0 and coin <= 0:
                reason = "no_target"
    elif kind == "trade" or kind == "hire" or kind == "rob":
        if cog_s[2]:
            reason = "ambiguous_target"
        elif other < 0:
            reason = "no_such_cog"
        elif other == seat:
            reason = "self_target"
        elif kind == "trade":
            if item < 0:
                reason = "no_target"
        elif kind == "hire" and coin <= 0:
            coin = 1
    elif kind == "accept":
        if cog_s[2]:
            reason = "ambiguous_target"
        else:
            if other == seat:
                other = -1
            if other < 0:
                other = _live_offerer(offers, seat, turn)
                if other < 0:
                    reason = "no_such_offer"
    elif kind == "quest":
        if npc_s[2]:
            reason = "ambiguous_target"
        elif npc < 0:
            kir = world_phrases(world).keeper_in_room
            npc = kir[room] if 0 <= room < len(kir) else -1
            if npc < 0:
                reason = "no_npc_here"
    elif kind == "say":
        if not spoken:  # §13: the original sentence, verb and all, stripped
            spoken = strip_ws(sentence)
    if reason != "ok":
        kind = "none"
    return _intent(kind, to_room, item, qty, npc, other, coin, reason, spoken)
