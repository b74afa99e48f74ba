"""The structured intent: what a seat does this turn, with its slots (RULES §8, §15.1).

Sentences parse into an :class:`Intent`; agents may also build one directly.  Either way it goes
through the same resolution checks.
"""

from __future__ import annotations

from dataclasses import dataclass

from .errors import IntentError, shown
from .text import cut, one_line
from .world import MAX_SENTENCE_LEN

KINDS = ("move", "take", "drop", "buy", "sell", "give", "trade", "accept", "hire", "rob",
         "say", "quest", "wait", "none")

# Every outcome reason of RULES §14 / SENTENCES §14, in the spec's order.
REASONS = (
    "ok", "waited", "unparsed", "no_verb", "no_target", "ambiguous_target", "no_such_exit",
    "no_such_item", "not_carrying", "carry_limit", "no_npc_here", "not_wanted", "out_of_stock",
    "cannot_afford", "npc_broke", "no_matching_commission", "no_such_cog", "not_in_room",
    "self_target", "no_such_offer", "offer_expired", "bound_by_contract", "robbery_failed",
    "nothing_to_take", "thievery_forbidden", "rejected",
)
PARSER_REASONS = ("unparsed", "no_verb", "no_target", "ambiguous_target", "no_such_cog",
                  "self_target", "no_such_offer", "no_npc_here")

_INT64_MAX = (1 << 63) - 1


@dataclass(frozen=True, init=False)
class Intent:
    """One seat's act for a turn.

    Fields follow RULES §8: ``kind`` (one of :data:`KINDS`), ``to_room``, ``item``, ``npc``,
    ``other`` (a seat) with -1 for none, ``qty`` (999 = all), ``coin``, ``reason`` (``ok`` for a
    readable intent, else the parser's reason for ``none``) and ``text`` (the spoken line lifted
    from quotes, or the line of a ``say``).  ``toRoom=`` and ``spoken=`` are accepted as
    spellings of ``to_room`` and ``text`` so that RULES' names work too (both spellings at once
    with different values is an error).

    >>> Intent("move", to_room=5)
    Intent(kind='move', to_room=5, item=-1, qty=1, npc=-1, other=-1, coin=0, reason='ok', text='')
    """

    kind: str
    to_room: int
    item: int
    qty: int
    npc: int
    other: int
    coin: int
    reason: str
    text: str

    def __init__(self, kind: str = "none", to_room: int = -1, item: int = -1, qty: int = 1,
                 npc: int = -1, other: int = -1, coin: int = 0, reason: str | None = None,
                 text: str = "", *, toRoom: int | None = None,  # noqa: N803 - RULES spelling
                 spoken: str | None = None) -> None:
        if toRoom is not None:
            if not _same(to_room, -1) and not _same(to_room, toRoom):
                raise IntentError(f"Intent got to_room={shown(to_room)} and "
                                  f"toRoom={shown(toRoom)}: give one of the two spellings")
            to_room = toRoom
        if spoken is not None:
            if not _same(text, "") and not _same(text, spoken):
                raise IntentError(f"Intent got text={shown(text)} and "
                                  f"spoken={shown(spoken)}: give one of the two spellings")
            text = spoken
        if reason is None:
            reason = "unparsed" if kind == "none" else "ok"
        # One cheap pass for the common case; the slow path names what is wrong.
        if (not isinstance(kind, str) or not isinstance(reason, str)  # (a list is no key)
                or kind not in _KIND_SET or reason not in _REASON_SET or type(text) is not str
                or type(to_room) is not int or type(item) is not int or type(npc) is not int
                or type(other) is not int or type(qty) is not int or type(coin) is not int
                or min(to_room, item, npc, other) < -1 or not 0 <= qty <= _INT64_MAX
                or not 0 <= coin <= _INT64_MAX):
            _explain(kind, to_room, item, qty, npc, other, coin, reason, text)
        d = self.__dict__
        d["kind"] = kind
        d["to_room"] = to_room
        d["item"] = item
        d["qty"] = qty
        d["npc"] = npc
        d["other"] = other
        d["coin"] = coin
        d["reason"] = reason
        d["text"] = text

    @property
    def toRoom(self) -> int:  # noqa: N802 - RULES spelling
        return self.to_room

    @property
    def spoken(self) -> str:
        return self.text

    def to_json(self) -> dict:
        """The ``parsed`` record of the golden episodes: kind, toRoom, item, qty, npc, ..."""
        return {"kind": self.kind, "toRoom": self.to_room, "item": self.item, "qty": self.qty,
                "npc": self.npc, "other": self.other, "coin": self.coin,
                "reason": self.reason, "spoken": self.text}


class ParsedSentence(str):
    """A sentence handed over together with the intent it parses to, so the engine need not
    parse it again (the scripted baselines write thousands a second).

    It is a ``str`` everywhere else: logged, shown and replayed as its text.  The engine parses
    the text again (through its memo) and refuses one whose intent differs, unless the writer
    ``vouched`` that ``parse`` gives ``intent`` for this text in the state it is played in: only
    the project's scripted baselines do, whose tests check every such sentence in every golden
    state (``GUILD_CHECK_PARSED=1`` checks theirs too).  The text must already be as the game
    stores a sentence (one line, no outer whitespace, at most 240 runes): ``ValueError``
    otherwise, so that the engine can log it as it is.
    """

    intent: Intent
    vouched: bool

    def __new__(cls, sentence: str, intent: Intent, vouched: bool = False) -> ParsedSentence:
        if cut(one_line(sentence), MAX_SENTENCE_LEN) != sentence:
            raise IntentError("a ParsedSentence must be one line of at most "
                              f"{MAX_SENTENCE_LEN} runes without outer whitespace; got "
                              f"{sentence[:80]!r}")
        if not isinstance(intent, Intent):
            raise IntentError(f"ParsedSentence.intent must be an Intent; got "
                              f"{type(intent).__name__}")
        self = super().__new__(cls, sentence)
        self.intent = intent
        self.vouched = vouched is True
        return self


_KIND_SET = frozenset(KINDS)
_REASON_SET = frozenset(REASONS)


def _same(a: object, b: object) -> bool:
    """``a`` and ``b`` are one value of one type (a numpy array compared with ``==`` is no
    bool, and has no truth value)."""
    return type(a) is type(b) and bool(a == b)


def _explain(kind, to_room, item, qty, npc, other, coin, reason, text) -> None:
    """Raise ``IntentError`` naming the first bad field of an Intent."""
    if not isinstance(kind, str) or kind not in KINDS:
        raise IntentError(f"Intent.kind must be one of {', '.join(KINDS)}; got {kind!r}")
    for name, value in (("to_room", to_room), ("item", item), ("npc", npc),
                        ("other", other), ("qty", qty), ("coin", coin)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise IntentError(f"Intent.{name} must be an int; got {value!r}")
    for name, value in (("to_room", to_room), ("item", item), ("npc", npc), ("other", other)):
        if value < -1:
            raise IntentError(f"Intent.{name} must be -1 (none) or an id >= 0; got {value}")
    for name, value in (("qty", qty), ("coin", coin)):
        if not 0 <= value <= _INT64_MAX:
            raise IntentError(f"Intent.{name} must be between 0 and 2**63-1; got {value}")
    if reason not in REASONS:
        raise IntentError(f"Intent.reason must be one of the outcome reasons; got {reason!r}")
    raise IntentError(f"Intent.text must be a str; got {text!r}")
