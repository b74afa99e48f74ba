"""Whether every room, good and keeper of a town can be named in a sentence (world files).

A world file (:mod:`sim.rules.worldfile`) names the town's entries; a seat names them back in
sentences, through the phrase lists of SENTENCES §6 (:func:`sim.language.vocab.world_phrases`).
A town whose words the parser cannot tell apart is playable only in name, so a world file is
refused, in one line naming the file and the entry, when a name, plural or keyword:

* has no word the parser reads (§5: letters or digits), so no sentence can say it, or holds a
  double quote or a bar, which begin the spoken part of a sentence (§4; the bar in guild play);
* names two entries of one list (two goods, two rooms or two keepers, after §5 tokenising:
  ``brine`` on salt and on lamp, ``The Docks`` and ``the-docks``): every sentence saying it is
  ``ambiguous_target``, and a word moved to another entry without leaving the first would
  otherwise pass unseen;
* is one word that the grammar reads as something else: a count (§10: ``a``, ``two``, ``all``,
  ``12``), a reflexive word (§7: ``me``), or a little word of every sentence (``i``, ``the``,
  ``to``, ``from``...);
* of a good or a keeper, holds a coin word (§11: ``I hand Silver 2 rope`` gives 2 coins too),
  an offer word (§7: ``I take the deal`` accepts an offer) or ``pocket`` (§8.2: ``I pick up 2
  pocket watches`` is a robbery);
* of a keeper, holds a good's phrase, or the reverse (``I buy 2 rope from Salt Pete`` names two
  goods): buying, selling and handing over name a good and a keeper in one sentence;
* of a keeper, holds a count or a number (``I hand One-Eyed Jack 2 hides`` hands one: the
  hand-over names the keeper before the count, and the parser takes the first count it reads);
* of a keeper, is one word that is a seat's alias (``gizmo``): a hand-over names the keeper
  before the seat (§12), so ``I hand Gizmo 1 hide`` would hand it to the keeper, and no
  sentence could give that seat anything.

Every check is linear in the town's phrases (a keeper's phrase is looked up by its runs of
words, not compared with every good's), and ``sim.rules.worldfile_checks`` bounds the phrases
themselves.

Words shared *across* lists stay allowed, as in the standard town (``smith`` names The Smithy
and Smith Bram, SENTENCES §6), and so do the seats' aliases in rooms' names and within
keepers' longer names (``Tanner Gizmo``): a parse that depends on them is the phrasebook's
concern (``agents.baselines.rules``).  A good's
words may not hold an alias: every offer and gift of it (``I offer Bolt 1 bolt``) names a seat
in the good's place.

The rules may not import the parser (import-linter's sim-wings layers), so this module hands
:func:`check_words` to the world-file builder (``sim.rules.worldfile_build.WORD_CHECKS``) when
``sim.language`` is imported, which ``import sim`` does before any world file can be read.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import NamedTuple

from ..rules.world import COG_NAMES, Good, Keeper, Room, World
from ..rules.worldfile_build import WORD_CHECKS
from .vocab import COIN_WORDS, NUMBER_WORDS, OFFER_WORDS, QUOTE_CHARS, REFLEXIVE_WORDS, tokenize

__all__ = ["LITTLE_WORDS", "check_words", "entry_texts"]

# The words around the names in the game's own sentences ("I buy 2 rope from Smith Bram.",
# "I walk to the Docks.", "I ask Vell about my commissions.", "all the ropes"): a whole phrase
# made of one of them would be named by nearly every sentence.
# A straight or curly double quote starts the spoken part of a sentence (SENTENCES §4), and a
# bar starts it in guild play ("I walk to the docks | say hello").
SPEECH_MARKS = frozenset('"|' + QUOTE_CHARS)

# The seats' names (any six of them name a game's seats): a good's word that is one would be read
# as the seat in every offer and gift of it.
SEAT_WORDS = frozenset(w for a in COG_NAMES for w in tokenize(a))

LITTLE_WORDS = frozenset(("i", "the", "to", "from", "for", "and", "of", "up", "about", "my"))

_WHY_ONE_WORD = (
    (frozenset(NUMBER_WORDS), "a count to the parser (docs/sentences.md §10)"),
    (REFLEXIVE_WORDS, "a reflexive word, naming the speaker (docs/sentences.md §7)"),
    (LITTLE_WORDS, "a word of nearly every sentence ('I buy 2 rope from the smith')"),
)
_WHY_ANY_WORD = (
    (COIN_WORDS, "a coin word (docs/sentences.md §11): a number beside it is read as coins"),
    (OFFER_WORDS, "an offer word (docs/sentences.md §7): 'take' is then read as accepting "
                  "an offer"),
    (frozenset(("pocket", "pockets")), "a word that makes 'pick' a robbery (docs/sentences.md "
                                       "§8.2): 'I pick up ...' would rob"),
)

Locate = Callable[[str, int], str]
"""(table, id) -> where the file gives that entry: ``goods["salt"]`` or ``goods[3]``."""


class _Phrase(NamedTuple):
    """One phrase of an entry: its tokens, the entry's id, and the field that gives it."""

    toks: tuple[str, ...]
    entry: int
    field: str
    text: str


def entry_texts(entry: Room | Good | Keeper) -> list[tuple[str, str]]:
    """(field, text) of every phrase that names ``entry`` (SENTENCES §6), the name first: a
    word given twice is blamed on the name."""
    texts = [("name", entry.name)]
    if isinstance(entry, Good):
        texts.append(("plural", entry.plural))
    texts += [(f"keywords[{j}]", w) for j, w in enumerate(entry.keywords)]
    return texts


def check_words(world: World, locate: Locate) -> tuple[str, str] | None:
    """The first word of ``world`` that a sentence could not use, as ``(where, message)`` for
    the world-file error, or ``None``: see the module docstring for the rules."""
    tables: tuple[tuple[str, str, Sequence], ...] = (
        ("rooms", "room", world.rooms), ("goods", "good", world.goods),
        ("keepers", "keeper", world.keepers))
    phrases: dict[str, list[_Phrase]] = {}
    for table, kind, entries in tables:
        owner: dict[tuple[str, ...], _Phrase] = {}
        mine = phrases[table] = []
        for e in entries:
            seen: set[tuple[str, ...]] = set()
            for field, text in entry_texts(e):
                toks = tokenize(text)
                problem = _one_phrase(table, text, toks)
                if problem:
                    return f"{locate(table, e.id)}.{field}", problem
                here = _Phrase(toks, e.id, field, text)
                first = owner.setdefault(toks, here)
                if first.entry != e.id:
                    return _shared(table, kind, entries, first, here, locate)
                if toks not in seen:
                    seen.add(toks)
                    mine.append(here)
    return _goods_in_keepers(world, phrases["goods"], phrases["keepers"], locate)


def _shared(table: str, kind: str, entries: Sequence, first: _Phrase, later: _Phrase,
            locate: Locate) -> tuple[str, str]:
    """The error for one phrase naming two entries, blamed on the later one unless only the
    first was changed by the file (its location then names the file's key, not an id)."""
    def touched(p: _Phrase) -> bool:
        return locate(table, p.entry) != f"{table}[{p.entry}]"

    blamed, other = ((first, later) if touched(first) and not touched(later)
                     else (later, first))
    return (f"{locate(table, blamed.entry)}.{blamed.field}",
            f"{blamed.text!r} also names the {kind} {entries[other.entry].name!r} "
            f"({locate(table, other.entry)}.{other.field}); a word names one {kind} only, "
            "or every sentence saying it is ambiguous (docs/sentences.md §6)")


def _one_phrase(table: str, text: str, toks: tuple[str, ...]) -> str:
    """Why phrase ``text`` (tokens ``toks``) of ``table`` cannot name its entry, or ``""``."""
    mark = next((c for c in text if c in SPEECH_MARKS), None)
    if mark is not None:
        return (f"{text!r} holds {mark!r}: a sentence that names it would start speaking "
                "there (docs/sentences.md §4; '|' begins speech in guild play); use another "
                "character")
    if not toks:
        return (f"{text!r} has no word a sentence can say (letters or digits, "
                "docs/sentences.md §5)")
    if len(toks) == 1:
        word = toks[0]
        if word.isdigit():
            return f"{text!r} is a number to the parser (docs/sentences.md §10); use a word"
        for words, why in _WHY_ONE_WORD:
            if word in words:
                return f"{text!r} is {why}; use another word"
    if table == "keepers" and len(toks) == 1 and toks[0] in SEAT_WORDS:
        return (f"{text!r} is a seat's name (the seats are {', '.join(COG_NAMES)}): 'I hand "
                f"{toks[0].title()} 1 hide' would hand it to the keeper, who is named first "
                "(docs/sentences.md §12), and no sentence could give that seat anything; use "
                "another word")
    if table == "keepers":
        count = next((w for w in toks if w in NUMBER_WORDS or w.isdigit()), None)
        if count is not None:
            return (f"{text!r} holds {count!r}, a count to the parser (docs/sentences.md §10): "
                    f"'I hand {text} 2 hides' would hand {count}; use another word")
    if table == "goods":
        seat = next((w for w in toks if w in SEAT_WORDS), None)
        if seat is not None:
            return (f"{text!r} holds {seat!r}, a seat's name (the seats are "
                    f"{', '.join(COG_NAMES)}): 'I offer {seat.title()} 1 {text}' would name "
                    "the seat twice and the good not at all; use another word")
    if table != "rooms":
        for word in toks:
            for words, why in _WHY_ANY_WORD:
                if word in words:
                    what = "is" if len(toks) == 1 else f"holds {word!r},"
                    return f"{text!r} {what} {why}; use another word"
    return ""


def _goods_in_keepers(world: World, goods: list[_Phrase], keepers: list[_Phrase],
                      locate: Locate) -> tuple[str, str] | None:
    """A keeper phrase holding a good's phrase, or the reverse: a sentence naming both (to buy,
    sell or hand over) would name two goods, or two keepers.  The first keeper phrase (in
    order) with a good phrase either way, and the first such good phrase; each found through
    indexes of the phrases' runs of words, so the check is linear in the phrases."""
    first_good: dict[tuple[str, ...], int] = {}  # a good phrase -> its first index
    holding: dict[tuple[str, ...], int] = {}     # a run of a good phrase -> the first holder
    for n, g in enumerate(goods):
        first_good.setdefault(g.toks, n)
        for run in _runs(g.toks):
            holding.setdefault(run, n)
    for k in keepers:
        found = [first_good[run] for run in _runs(k.toks) if run in first_good]
        if k.toks in holding:
            found.append(holding[k.toks])
        if found:
            g = goods[min(found)]
            if _holds(k.toks, g.toks):
                what = "is" if k.toks == g.toks else f"holds {g.text!r},"
                other = world.goods[1 if g.entry == 0 else 0].plural
                return (f"{locate('keepers', k.entry)}.{k.field}",
                        f"{k.text!r} {what} a word for the good "
                        f"{world.goods[g.entry].name!r} ({locate('goods', g.entry)}): "
                        f"'I buy 2 {other} from {k.text}' would name two goods; a keeper's "
                        "words may not name a good")
            if _holds(g.toks, k.toks):
                return (f"{locate('goods', g.entry)}.{g.field}",
                        f"{g.text!r} holds {k.text!r}, a word for the keeper "
                        f"{world.keepers[k.entry].name!r} ({locate('keepers', k.entry)}): "
                        f"'I buy 2 {g.text} from ...' would name two keepers; a good's words "
                        "may not name a keeper")
    return None


def _runs(toks: tuple[str, ...]) -> list[tuple[str, ...]]:
    """Every run of consecutive words of ``toks`` (a bounded phrase: a few dozen runs)."""
    return [toks[i:j] for i in range(len(toks)) for j in range(i + 1, len(toks) + 1)]


def _holds(outer: tuple[str, ...], inner: tuple[str, ...]) -> bool:
    """Whether the tokens ``inner`` occur in ``outer`` one after another."""
    n = len(inner)
    return any(outer[i:i + n] == inner for i in range(len(outer) - n + 1))


if check_words not in WORD_CHECKS:
    WORD_CHECKS.append(check_words)
