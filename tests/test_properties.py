"""Hypothesis properties of the engine over random seeds and intents (RULES §5, §15, §17).

Conservation of coin, bounds on every count, determinism, replay of any episode (and its tamper
check), and no leak of hidden state into a seat's observation.
"""

from __future__ import annotations

import copy

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sim import KINDS, Game, GameConfig, Intent, ReplayMismatch, replay
from sim.rules.world import SEATS

TOTAL_COIN = 6 * 40 + 5 * 120  # RULES §5: 840 in unedited play

intents = st.builds(
    Intent,
    kind=st.sampled_from(KINDS),
    to_room=st.integers(-1, 8),
    item=st.integers(-1, 5),
    qty=st.one_of(st.sampled_from([0, 1, 2, 999]), st.integers(0, 12)),
    npc=st.integers(-1, 4),
    other=st.integers(-1, 5),
    coin=st.integers(0, 60),
    text=st.sampled_from(["", "hello there", "x" * 200]),
)
# A sentence face too, so sentences and structured intents mix in one turn.
sentences = st.sampled_from([
    "I walk to the docks.", "I pick up the rope.", "I buy two hides.", "I sell all my nails.",
    "I rob Gizmo.", "I accept the offer.", "I hire Bolt for 5 coins.", "I wait.",
    "I offer Piston one hide for 9 coins.", 'I say "hello"', "I hand Vell two rope.",
    "blah", "",
])
actions = st.one_of(intents, intents, sentences)
turns_of_actions = st.lists(st.lists(actions, min_size=6, max_size=6), min_size=1, max_size=14)
configs = st.builds(GameConfig, seed=st.integers(-(10 ** 12), 10 ** 12),
                    turns=st.integers(6, 14), thievery=st.booleans(), speech=st.booleans())

SETTINGS = settings(max_examples=150, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


# Notes as seats write them: none (keeps the last), text, and blanks that clear them (§6.1).
six_notes = st.lists(st.sampled_from(["", "plan A", " ", "\n", "\u00a0", "x" * 700]),
                     min_size=6, max_size=6)


def play(cfg: GameConfig, turns: list[list], notes: list[list[str]] | None = None) -> Game:
    game = Game(cfg)
    for t, acts in enumerate(turns):
        if game.done:
            break
        game.play_turn(acts, says=["hi"] * 6, notes=notes[t] if notes else ["n"] * 6)
    return game


def check_invariants(game: Game) -> None:
    snap = game.snapshot()
    coin = sum(c["coin"] for c in snap["cogs"]) + sum(n["coin"] for n in snap["npcs"])
    assert coin == TOTAL_COIN
    for c in snap["cogs"]:
        assert c["coin"] >= 0 and min(c["items"]) >= 0 and sum(c["items"]) <= 8
        assert 0 <= c["room"] <= 8 and 0 <= c["retainerTurns"] <= 3
    for n in snap["npcs"]:
        assert all(0 <= s <= 12 for s in n["stock"]) and n["coin"] >= 0
    assert all(min(r) >= 0 for r in snap["rooms"])
    res = game.results()
    assert all(w >= c for w, c in zip(res["wealth"], res["coin"]))
    assert all(0 <= q <= 32 for q in res["questPoints"])


@SETTINGS
@given(configs, turns_of_actions)
def test_every_turn_keeps_coin_and_bounds(cfg: GameConfig, turns: list[list]) -> None:
    game = Game(cfg)
    for acts in turns:
        if game.done:
            break
        game.play_turn(acts)
        check_invariants(game)
        assert sum(1 for e in game.events if e["kind"] == "act") == 6 * game.state.turns_played


@SETTINGS
@given(configs, turns_of_actions)
def test_same_inputs_same_events(cfg: GameConfig, turns: list[list]) -> None:
    assert play(cfg, turns).events == play(cfg, turns).events


@SETTINGS
@given(configs, turns_of_actions, st.data())
def test_any_episode_replays_and_tampering_is_caught(cfg: GameConfig, turns: list[list],
                                                     data: st.DataObject) -> None:
    game = play(cfg, turns, data.draw(st.lists(six_notes, min_size=len(turns),
                                               max_size=len(turns))))
    if data.draw(st.booleans()):
        game.end_early()
    again = replay(cfg.to_dict(), game.events)
    assert again.events == game.events and again.results() == game.results()
    # Tamper with one recorded turn snapshot: the replay must name that event.
    snaps = [i for i, e in enumerate(game.events) if e["kind"] == "turn"]
    i = data.draw(st.sampled_from(snaps))
    events = copy.deepcopy(game.events)
    seat = data.draw(st.integers(0, SEATS - 1))
    events[i]["cogs"][seat]["coin"] += 1
    try:
        replay(cfg.to_dict(), events)
    except ReplayMismatch as err:
        assert f"event {i}" in str(err)
    else:
        raise AssertionError("a tampered snapshot replayed without error")


@SETTINGS
@given(configs, turns_of_actions, st.integers(0, SEATS - 1), st.data())
def test_observation_hides_other_seats(cfg: GameConfig, turns: list[list], seat: int,
                                       data: st.DataObject) -> None:
    game = play(cfg, turns[:cfg.turns - 1])  # restore needs a running episode
    before = game.observe(seat)
    text_before = game.observation_text(seat)
    other = data.draw(st.sampled_from([s for s in range(SEATS) if s != seat]))
    snap = copy.deepcopy(game.snapshot())
    cog = snap["cogs"][other]
    cog["coin"] += 17
    cog["items"] = [0, 0, 0, 0, 0, 0]
    cog["items"][data.draw(st.integers(0, 5))] = data.draw(st.integers(0, 8))
    cog["delivered"] = [data.draw(st.integers(0, 2)), data.draw(st.integers(0, 2))]
    game.restore(snap)
    game.state.notes[other] = "secret plan"
    game.state.quest_item[other] = game.state.quest_item[other][::-1]
    assert game.observe(seat) == before
    assert game.observation_text(seat) == text_before


@settings(max_examples=50, deadline=None)
@given(configs)
def test_waiting_table_scores_zero_and_has_7t_plus_3_events(cfg: GameConfig) -> None:
    game = Game(cfg)
    while not game.done:
        game.play_turn([Intent("wait")] * 6)
    assert game.results()["scores"] == [0.0] * 6
    assert len(game.events) == 7 * cfg.turns + 3
    assert [e["kind"] for e in game.events[-2:]] == ["turn", "end"]


@given(st.text(alphabet=st.sampled_from("ab \n\r\t\x00\x0b\x85\u2003\u3000\x7f"), max_size=12)
       | st.text(max_size=40))
def test_one_line_flattens_then_strips_any_text(text: str) -> None:
    """RULES §19's ``oneLine``: newline, return and tab become spaces, then Unicode whitespace
    goes from both ends; its shortcut for lines with none of the three changes nothing."""
    from sim.rules.text import UNICODE_WS, one_line

    flat = text.replace("\n", " ").replace("\r", " ").replace("\t", " ")
    assert one_line(text) == flat.strip(UNICODE_WS)
