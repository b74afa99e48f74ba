"""The parser against every sentence the original parsed (the golden episodes), and its
properties: total (never raises), deterministic, well-formed intents (SENTENCES §2-§13)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from golden import episode, episode_params
from hypothesis import given, settings
from hypothesis import strategies as st
from parsing import ALIASES, run

from sim.language.parser import parse
from sim.language.vocab import PHRASEBOOK, VERB_TABLE
from sim.rules.intents import KINDS, PARSER_REASONS, REASONS, Intent
from sim.rules.offers import Offer
from sim.rules.world import STANDARD_TOWN

# ---------------------------------------------------------------------------------------------
# The golden parses of the original implementation.

def _golden_cases(lines: list[dict[str, Any]]) -> Iterator[tuple[int, int, dict, Intent]]:
    """Each recorded seat parse with our parse of the same sentence at the start of its turn."""
    setup = next(rec for rec in lines if rec["type"] == "setup")
    names = tuple(setup["setup"]["names"])
    rooms = [c["room"] for c in setup["initial"]["cogs"]]
    offers: list[Offer] = []
    for rec in lines:
        if rec["type"] != "turn":
            continue
        for s in rec["seats"]:
            seat = s["seat"]
            got = parse(STANDARD_TOWN, names, seat, rooms[seat], offers, rec["turn"],
                        s["sentence"])
            yield rec["turn"], seat, s, got
        rooms = [c["room"] for c in rec["state"]["cogs"]]
        offers = [Offer(o["kind"], o["from"], o["to"], o["item"], o["qty"], o["coin"],
                        o["postedTurn"]) for o in rec["offers"]]


@pytest.mark.parametrize("episode_id", episode_params())
def test_golden_parses(episode_id: int | None) -> None:
    ep = episode(episode_id)
    count = 0
    for turn, seat, s, got in _golden_cases([ep["setup"], *ep["turns"]]):
        count += 1
        assert got.to_json() == s["parsed"], (
            f"episode {episode_id} turn {turn} seat {seat} sentence {s['sentence']!r}: "
            f"got {got.to_json()} want {s['parsed']}")
    assert count > 0


# ---------------------------------------------------------------------------------------------
# Properties: total, deterministic, well-formed.

_ANY_CHAR = st.characters(codec=None, exclude_categories=())
_WORDS = st.sampled_from(sorted(
    {v.word for v in VERB_TABLE} | set(ALIASES) | set(" ".join(PHRASEBOOK).split())
    | {"for", "coins", "999", "0", "all", "myself", "me", "offer", "in", "down", "nothing",
       "pocket", "purse", "Tanner's", "'s", "\u201c", "\u201d", "\u00ab", "\u00bb", '"', "''",
       "\u0130", "\u03a3", "\ud800", "\x00", "9" * 25, "9223372036854775808", "\u3000"}))
_SENTENCES = st.one_of(
    st.text(_ANY_CHAR, max_size=300),
    st.lists(st.one_of(_WORDS, st.text(_ANY_CHAR, max_size=3)), max_size=40).map(" ".join),
)


def _well_formed(it: Intent) -> None:
    assert it.kind in KINDS
    assert it.reason in REASONS
    assert (it.reason == "ok") == (it.kind != "none")
    if it.kind == "none":
        assert it.reason in PARSER_REASONS
    if it.kind == "say":
        assert it.text
    assert -1 <= it.to_room < 9 and -1 <= it.item < 6 and -1 <= it.npc < 5
    assert -1 <= it.other < 6
    assert 0 <= it.qty < 2**63 and 0 <= it.coin < 2**63
    assert isinstance(it.text, str) and it.text == it.text.strip(
        "\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008"
        "\u2009\u200a\u2028\u2029\u202f\u205f\u3000")
    # the fast constructor produced values the validating constructor accepts
    assert Intent(it.kind, it.to_room, it.item, it.qty, it.npc, it.other, it.coin, it.reason,
                  it.text) == it


@settings(max_examples=400, deadline=None)
@given(sentence=_SENTENCES, seat=st.integers(0, 5), room=st.integers(0, 8),
       turn=st.integers(0, 40))
def test_parse_is_total_and_deterministic(sentence: str, seat: int, room: int,
                                          turn: int) -> None:
    offers = (Offer("trade", (seat + 1) % 6, seat, 2, 1, 5, turn - 1),)
    first = parse(STANDARD_TOWN, ALIASES, seat, room, offers, turn, sentence)
    again = parse(STANDARD_TOWN, list(ALIASES), seat, room, list(offers), turn, sentence)
    assert first == again
    _well_formed(first)


@pytest.mark.parametrize("sentence", [
    "", " ", "\x00", "\ud800\udfff", "'" * 1000, "9" * 100_000, "go " * 20_000 + "docks",
    '"' * 7, "\u201c" * 3 + "x", "I take " + "all " * 1000 + "rope", "\U0010ffff" * 500,
    "I go to the docks" + "\u0301" * 100, "\u0130\u03a3\u0345\u1e9e\ufb00",
])
def test_parse_junk(sentence: str) -> None:
    _well_formed(run(sentence))
