"""The parser's vocabulary as data, built once (SENTENCES §1, §5-§8, §10-§11, §19).

Constant word lists (numbers, coin words, offer words, reflexive words, the ordered verb table
with its guards, the phrasebook) live here, together with the token rules of §5 that both
sentences and phrase tables use.  Phrase tables for rooms, goods and keepers are derived from a
:class:`~sim.rules.world.World` and cached per world instance; the cog table is derived from the six
aliases of a game and cached per alias tuple.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from ..rules.text import QUOTE_CHARS
from ..rules.world import QTY_ALL, Good, World, per_world

# ---------------------------------------------------------------------------------------------
# §4 speech lifting: the characters that count as a straight double quote.
QUOTE_MAP = {ord(c): '"' for c in QUOTE_CHARS}

# ---------------------------------------------------------------------------------------------
# §5 normalisation and tokenisation.


class _CharMap(dict):
    """Lazy per-code-point map of §5.2 for ``str.translate`` (input is already lowercased):
    letters and ASCII digits stay, ``'`` and U+2019 become ``'``, everything else a space."""

    def __missing__(self, code: int) -> str:
        ch = chr(code)
        if ch.isalpha() or "0" <= ch <= "9":
            out = ch
        elif ch == "'" or ch == "\u2019":
            out = "'"
        else:
            out = " "
        if code < 0x20000:  # cache the planes real text uses; bound memory for junk input
            self[code] = out
        return out


_CHAR_MAP = _CharMap()


def lower_runes(text: str) -> str:
    """§5.1: lowercase one character at a time with the simple mapping.

    ``str.lower`` differs from a per-character simple lowering only for U+0130 (two characters
    in Python; the spec wants a plain ``i``) and for Greek capital sigma (Python applies the
    final-sigma context rule), so those two are replaced first.
    """
    if "\u0130" in text:
        text = text.replace("\u0130", "i")
    if "\u03a3" in text:
        text = text.replace("\u03a3", "\u03c3")
    return text.lower()


# The same map for ASCII text as a byte table (bytes.translate is a plain table lookup).
_ASCII_TABLE = bytes(ord(_CHAR_MAP[c]) for c in range(128)) + bytes(128)


def normalise(text: str) -> str:
    """§5 normalise: per-rune lowercase, keep letters/ASCII digits/apostrophes, rest spaces."""
    if text.isascii():  # the common case: str.lower is per-character there
        return text.lower().encode("ascii").translate(_ASCII_TABLE).decode("ascii")
    return lower_runes(text).translate(_CHAR_MAP)


def tokenize(text: str) -> tuple[str, ...]:
    """§5 tokenise: split the normalised text, drop a possessive ``'s``, strip ``'`` at both
    ends and keep non-empty words."""
    norm = normalise(text)
    if "'" not in norm:  # no apostrophe: the words as they are
        return tuple(norm.split())
    out = []
    for word in norm.split():
        if "'" in word:  # (a word without one neither ends in 's nor is empty)
            if word.endswith("'s"):
                word = word[:-2]
            word = word.strip("'")
            if not word:
                continue
        out.append(word)
    return tuple(out)


# ---------------------------------------------------------------------------------------------
# §10 number words and §11 coin words; §7 offer and reflexive words.

NUMBER_WORDS: dict[str, int] = {
    "a": 1, "an": 1, "one": 1,
    "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9,
    "ten": 10, "eleven": 11, "twelve": 12,
    "thirteen": 13, "fourteen": 14, "fifteen": 15, "sixteen": 16, "seventeen": 17,
    "eighteen": 18, "nineteen": 19, "twenty": 20,
    "thirty": 30, "forty": 40, "fifty": 50, "hundred": 100,
    "both": 2, "couple": 2, "dozen": 12,
    "all": QTY_ALL, "every": QTY_ALL, "everything": QTY_ALL,
}
COIN_WORDS = frozenset(("coin", "coins", "gp", "silver", "piece", "pieces", "crown", "crowns"))
OFFER_WORDS = frozenset(("offer", "offers", "deal", "bargain", "terms", "proposal"))
REFLEXIVE_WORDS = frozenset(("myself", "me", "self", "himself", "herself", "itself",
                             "yourself"))

# ---------------------------------------------------------------------------------------------
# §8.2 guards and §8.3 the verb table.

G_ALWAYS = "always"
G_ROOM = "room-named"
G_GOOD_NO_ROOM = "good-but-no-room"
G_OTHER_COG = "other-cog-named"
G_NPC = "npc-named"
G_TARGET = "target-named"
G_OFFER = "offer-word"
G_IN_OVER = "in-over-near"
G_NEXT_FOR = "next-is-for"
G_DOWN = "down-near"
G_NOTHING = "nothing-near"
G_POCKET = "pocket-later"
G_PURSE = "purse-later"

GUARDS = (G_ALWAYS, G_ROOM, G_GOOD_NO_ROOM, G_OTHER_COG, G_NPC, G_TARGET, G_OFFER, G_IN_OVER,
          G_NEXT_FOR, G_DOWN, G_NOTHING, G_POCKET, G_PURSE)


class Verb(NamedTuple):
    """One row of the verb table: the word, the intent it decides, and its guard."""

    word: str
    intent: str
    guard: str


def _rows(words: str, intent: str, guard: str = G_ALWAYS) -> list[Verb]:
    return [Verb(w, intent, guard) for w in words.split()]


# Rows 1-112 of §8.3, in table order (order matters between entries with the same word).
VERB_TABLE: tuple[Verb, ...] = tuple(
    _rows("go goes going walk walks head heads move travel run ride enter cross return wander",
          "move")
    + _rows("slip off", "move", G_ROOM)
    + _rows("make", "move", G_NEXT_FOR)
    + _rows("leave", "drop", G_GOOD_NO_ROOM)
    + _rows("leave", "move")
    + _rows("take takes", "accept", G_OFFER)
    + _rows("take takes", "take")
    + _rows("pick", "rob", G_POCKET)
    + _rows("pick picks grab", "take")
    + _rows("lift", "rob", G_OTHER_COG)
    + _rows("lift collect scoop pocket", "take")
    + _rows("drop drops put discard", "drop")
    + _rows("set", "drop", G_DOWN)
    + _rows("buy buys purchase acquire", "buy")
    + _rows("pay", "give", G_OTHER_COG)
    + _rows("pay", "buy")
    + _rows("sell sells offload unload flog", "sell")
    + _rows("give gives hand hands deliver delivers present donate", "give")
    + _rows("turn", "give", G_IN_OVER)
    + _rows("have has", "give", G_TARGET)
    + _rows("offer offers propose trade swap barter", "trade")
    + _rows("accept accepts agree deal shake", "accept")
    + _rows("hire hires employ retain engage", "hire")
    + _rows("rob robs steal stealing mug jump ambush waylay", "rob")
    + _rows("cut", "rob", G_PURSE)
    + _rows("ask", "quest", G_NPC)
    + _rows("ask", "say")
    + _rows("asks", "quest", G_NPC)
    + _rows("asks", "say")
    + _rows("say says tell tells shout call announce whisper", "say")
    + _rows("enquire inquire check consult read", "quest")
    + _rows("wait waits rest linger idle listen watch stay look", "wait")
    + _rows("do", "wait", G_NOTHING)
)


def _verbs_by_word() -> dict[str, tuple[tuple[str, str], ...]]:
    out: dict[str, list[tuple[str, str]]] = {}
    for v in VERB_TABLE:
        out.setdefault(v.word, []).append((v.intent, v.guard))
    return {w: tuple(e) for w, e in out.items()}


VERBS: dict[str, tuple[tuple[str, str], ...]] = _verbs_by_word()
"""word -> ((intent, guard), ...) in table order."""

# ---------------------------------------------------------------------------------------------
# §19 the phrasebook.

PHRASEBOOK: tuple[str, ...] = (
    "I walk down to the Docks.",
    "I pick up the coil of rope.",
    "I drop the relic here.",
    "I buy two hides from Tanner Oda.",
    "I sell three nails to Dockmaster Fen.",
    "I hand Guildmaster Vell two hides for my commission.",
    "I offer Gizmo one lamp for twelve coins.",
    "I accept Gizmo's offer.",
    "I hire Bolt for fifteen coins to walk the road with me.",
    "I jump Ratchet here in the dark and take what he is carrying.",
    "I ask Guildmaster Vell about my commissions.",
    "I wait by the well and listen.",
)

# ---------------------------------------------------------------------------------------------
# §6 phrase tables.

ROOMS, GOODS, NPCS, COGS = 0, 1, 2, 3
"""Indices of the four phrase lists."""

Phrase = tuple[tuple[str, ...], int]
"""A phrase (its tokens) and the id it names."""

# first token -> ((list index, phrase tokens, id, length), ...), in list order per list.
PhraseIndex = dict[str, tuple[tuple[int, tuple[str, ...], int, int], ...]]


class WorldPhrases(NamedTuple):
    """The room, goods and NPC phrase lists of one world (§6), in list order."""

    rooms: tuple[Phrase, ...]
    goods: tuple[Phrase, ...]
    npcs: tuple[Phrase, ...]


def _phrases(entries: Sequence[tuple[int, Sequence[str]]]) -> tuple[Phrase, ...]:
    out = []
    for ident, texts in entries:
        for text in texts:
            toks = tokenize(text)
            if toks:
                out.append((toks, ident))
    return tuple(out)


def _good_phrases(goods: Sequence[Good]) -> tuple[Phrase, ...]:
    """§6 goods: each good's keywords, then its name and its plural unless a keyword already
    says them.  The game writes a count with the name or the plural (``2 pepper``, RULES §2.2),
    so a seat names a good by them even when a town's keywords leave them out (a world file
    that renames salt to pepper); in the standard town they are always keywords, so its list is
    exactly the keywords of SENTENCES §6."""
    out: list[Phrase] = []
    for g in goods:
        mine = [toks for toks in map(tokenize, g.keywords) if toks]
        for text in (g.name, g.plural):
            toks = tokenize(text)
            if toks and toks not in mine:
                mine.append(toks)
        out.extend((toks, g.id) for toks in mine)
    return tuple(out)


@per_world
def world_phrases(world: World) -> WorldPhrases:
    """§6 rooms (keywords then name), goods (keywords, then name and plural when no keyword
    says them), NPCs (keywords then name) of ``world``, built once per world instance."""
    return WorldPhrases(
        rooms=_phrases([(r.id, (*r.keywords, r.name)) for r in world.rooms]),
        goods=_good_phrases(world.goods),
        npcs=_phrases([(k.id, (*k.keywords, k.name)) for k in world.keepers]),
    )


def cog_phrases(aliases: Sequence[str]) -> tuple[Phrase, ...]:
    """§6 cogs: each seat's alias in seat order (id = seat)."""
    return _phrases([(seat, (alias,)) for seat, alias in enumerate(aliases)])


@per_world(maxsize=1024)
def phrase_index(world: World, names: tuple[str, ...]) -> PhraseIndex:
    """All four phrase lists of §6 indexed by first token, cached per world and alias tuple
    (``names``: the six aliases in seat order, as a tuple)."""
    wp = world_phrases(world)
    lists = (wp.rooms, wp.goods, wp.npcs, cog_phrases(names))
    built: dict[str, list[tuple[int, tuple[str, ...], int, int]]] = {}
    for which, phrases in enumerate(lists):
        for toks, ident in phrases:
            built.setdefault(toks[0], []).append((which, toks, ident, len(toks)))
    return {t: tuple(e) for t, e in built.items()}
