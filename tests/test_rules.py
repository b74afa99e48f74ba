"""Scenario tests of the resolvers, prices, commissions, robbery and scoring (RULES §6-13, §20).

Each fact is taken from docs/rules.md or the published scoring page; scenarios are staged with
``Game.restore`` and played with structured intents.
"""

from __future__ import annotations

import pytest
from scenario import edit, staged, turn

from sim import Game, GameConfig, Intent, IntentError, StateError, TurnError
from sim.rules.prices import ask_at, bid_at
from sim.rules.world import STANDARD_TOWN

HIDE, NAILS, ROPE, SALT, LAMP, RELIC = range(6)
ODA, BRAM, NESH, FEN, VELL = range(5)


# --- prices (§7) ---------------------------------------------------------------------------------
def test_price_tables_of_rules_7() -> None:
    assert [ask_at(6, s) for s in range(13)] == [12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 3, 3, 3]
    assert [bid_at(6, s) for s in range(13)] == [8, 7, 6, 6, 5, 4, 4, 3, 2, 2, 2, 2, 2]
    assert [ask_at(14, s) for s in range(13)] == [20, 19, 18, 17, 16, 15, 14, 13, 12, 11, 10,
                                                  9, 8]
    assert [bid_at(9, s) for s in range(13)] == [10, 9, 8, 8, 7, 6, 6, 5, 4, 4, 3, 2, 2]


def test_buying_two_hides_from_stock_8_costs_9_and_leaves_6() -> None:
    game = staged(s0={"room": 2})
    (act, *_) = turn(game, s0=Intent("buy", item=HIDE, qty=2))
    assert (act["reason"], act["qty"], act["coin"], act["npc"]) == ("ok", 2, 9, ODA)
    snap = game.snapshot()
    assert snap["npcs"][ODA]["stock"][HIDE] == 6 and snap["cogs"][0]["coin"] == 31


def test_selling_two_rope_into_stock_6_pays_9() -> None:
    game = staged(s0={"room": 3, "items": [0, 0, 2, 0, 0, 0]})
    edit(game, npcs=lambda n: n[BRAM]["stock"].__setitem__(ROPE, 6))
    (act, *_) = turn(game, s0=Intent("sell", item=ROPE, qty=2, npc=BRAM))
    assert (act["reason"], act["qty"], act["coin"]) == ("ok", 2, 9)


def test_buy_partial_fill_and_failures_in_check_order() -> None:
    game = staged(s0={"room": 2, "coin": 9}, s1={"room": 2, "items": [8, 0, 0, 0, 0, 0]},
                  s2={"room": 2})
    acts = turn(game, s0=Intent("buy", item=HIDE, qty=3), s1=Intent("buy", item=HIDE),
                s2=Intent("buy", item=LAMP, npc=ODA), s3=Intent("buy", item=HIDE, npc=ODA))
    assert (acts[0]["reason"], acts[0]["qty"], acts[0]["coin"]) == ("ok", 2, 9)  # 4 + 5
    assert acts[1]["reason"] == "carry_limit"
    assert acts[2]["reason"] == "out_of_stock"  # not traded: out_of_stock, not not_wanted
    assert acts[3]["reason"] == "no_npc_here"


def test_qty_zero_edge_cases_of_rules_20() -> None:
    game = staged(everyone=2, s1={"room": 2, "items": [1, 0, 0, 0, 0, 0]},
                  s2={"room": 2, "items": [1, 0, 0, 0, 0, 0]})
    edit(game, rooms=lambda r: r[2].__setitem__(HIDE, 1))
    acts = turn(game, s0=Intent("buy", item=HIDE, qty=0), s1=Intent("sell", item=HIDE, qty=0),
                s2=Intent("drop", item=HIDE, qty=0), s3=Intent("take", item=HIDE, qty=0))
    assert acts[0]["reason"] == "cannot_afford"
    assert acts[1]["reason"] == "npc_broke"
    assert acts[2]["reason"] == "ok" and "qty" not in acts[2]
    assert acts[3]["reason"] == "ok" and "qty" not in acts[3]


def test_restock_skips_turn_0_then_follows_trade_lists() -> None:
    game = Game(GameConfig(seed=1))
    stock0 = [n["stock"][:] for n in game.snapshot()["npcs"]]
    turn(game)
    stock1 = [n["stock"] for n in game.snapshot()["npcs"]]
    # Turn 1: Oda salt, Bram rope, Nesh salt, Fen hide, Vell lamp.
    assert stock1[ODA][SALT] == stock0[ODA][SALT] + 1
    assert stock1[BRAM][ROPE] == stock0[BRAM][ROPE] + 1
    assert stock1[NESH][SALT] == stock0[NESH][SALT] + 1
    assert stock1[FEN][HIDE] == stock0[FEN][HIDE] + 1
    assert stock1[VELL][LAMP] == stock0[VELL][LAMP] + 1


# --- commissions and scoring (§10, §13, the scoring page) ----------------------------------------
def test_doing_nothing_scores_exactly_zero() -> None:
    game = Game(GameConfig(seed=9))
    while not game.done:
        turn(game)
    res = game.results()
    assert res["scores"] == [0.0] * 6 and res["reason"] == "complete"
    assert res["turns"] == 14 and res["maxTurns"] == 14
    assert len(game.events) == 7 * 14 + 3


def test_results_have_exactly_the_11_keys() -> None:
    res = Game(GameConfig(seed=2, players=("a", "b", "c", "d", "e", "f"))).results()
    assert list(res) == ["names", "scores", "coin", "wealth", "questPoints", "delivered",
                         "robberies", "robbed", "turns", "maxTurns", "reason"]
    assert res["names"] == ["a", "b", "c", "d", "e", "f"] and res["reason"] == ""


def test_scoring_page_landmark_is_81_over_40() -> None:
    """Seed 5, seat 0 holds commissions rope and hide: the page's competent seat."""
    game = staged(seed=5, s0={"room": 2, "items": [0, 0, 0, 0, 0, 1]})
    assert [q["item"] for q in game.commissions(0)] == [ROPE, HIDE]
    a = turn(game, s0=Intent("buy", item=HIDE, qty=2))[0]
    assert a["coin"] == 9  # 4 + 5 at stock 8 and 7
    edit(game, cogs=lambda c: c[0].update(room=3),
         npcs=lambda n: n[BRAM]["stock"].__setitem__(ROPE, 6))
    a = turn(game, s0=Intent("buy", item=ROPE, qty=2))[0]
    assert a["coin"] == 17  # 8 + 9 at stock 6 and 5
    edit(game, cogs=lambda c: c[0].update(room=8))
    a = turn(game, s0=Intent("give", item=HIDE, qty=2, npc=VELL))[0]
    assert (a["reason"], a["qty"], a["coin"], a["salience"]) == ("ok", 2, 16, 90)
    a = turn(game, s0=Intent("give", item=ROPE, qty=2, npc=VELL))[0]
    assert a["coin"] == 16
    edit(game, cogs=lambda c: c[0].update(room=5),
         npcs=lambda n: n[FEN]["stock"].__setitem__(RELIC, 3))
    a = turn(game, s0=Intent("sell", item=RELIC, qty=1))[0]
    assert a["coin"] == 11  # (14 + 3) * 2 // 3
    res = game.results()
    assert res["coin"][0] == 25 and res["questPoints"][0] == 32
    assert res["scores"][0] == 81 / 40


def test_partial_delivery_and_overdelivery() -> None:
    game = staged(seed=5, s0={"room": 8, "items": [3, 0, 0, 0, 0, 0]})
    a = turn(game, s0=Intent("give", item=HIDE, qty=1, npc=VELL))[0]
    assert (a["qty"], a["coin"], a["salience"]) == (1, 4, 60)
    a = turn(game, s0=Intent("give", item=HIDE, qty=2, npc=VELL))[0]
    assert (a["qty"], a["coin"]) == (1, 12)  # only the need is credited; both units are gone
    assert game.snapshot()["cogs"][0]["items"][HIDE] == 0
    assert game.commissions(0)[1] == {"item": HIDE, "count": 2, "delivered": 2}
    a = turn(game, s0=Intent("give", item=HIDE, npc=VELL))[0]
    assert a["reason"] == "not_carrying"


def test_goods_given_to_other_keepers_are_lost_and_capped() -> None:
    game = staged(seed=5, s0={"room": 2, "items": [0, 0, 0, 0, 3, 0]})
    edit(game, npcs=lambda n: n[ODA]["stock"].__setitem__(LAMP, 11))
    a = turn(game, s0=Intent("give", item=LAMP, qty=3, npc=ODA))[0]
    assert (a["reason"], a["qty"]) == ("no_matching_commission", 3)
    snap = game.snapshot()
    assert snap["npcs"][ODA]["stock"][LAMP] == 12 and snap["cogs"][0]["items"][LAMP] == 0
    game = staged(seed=5, s0={"room": 8})
    assert turn(game, s0=Intent("give", coin=5, npc=VELL))[0]["reason"] == "no_target"


# --- robbery (§11) -------------------------------------------------------------------------------
def test_stolen_relic_swings_both_seats_by_14_over_40() -> None:
    game = staged(s0={"room": 6}, s1={"room": 6, "items": [0, 0, 0, 0, 0, 1]})
    before = game.results()["scores"]
    a = turn(game, s0=Intent("rob", other=1))[0]
    assert (a["reason"], a["item"], a["qty"], a["salience"]) == ("ok", RELIC, 1, 100)
    after = game.results()
    assert after["scores"][0] - before[0] == pytest.approx(14 / 40)
    assert after["scores"][1] - before[1] == pytest.approx(-14 / 40)
    assert after["robberies"][0] == 1 and after["robbed"][1] == 1


def test_lit_robbery_always_fails_and_pays_a_fine() -> None:
    game = staged(s0={"room": 0, "coin": 5}, s1={"room": 0, "items": [1, 0, 0, 0, 0, 0]})
    a = turn(game, s0=Intent("rob", other=1))[0]
    assert (a["reason"], a["coin"], a["salience"]) == ("robbery_failed", 5, 80)
    assert game.snapshot()["cogs"][1]["coin"] == 45
    assert ("{} tried to rob {} and the watch stopped him, paying 5 coin.".format(
        *game.aliases[:2]) in game.state.heard_log[0])


def test_hirelings_change_the_odds() -> None:
    # Dark, victim guarded by one hireling: 2 vs 2 fails.
    game = staged(s0={"room": 5}, s1={"room": 5, "items": [1, 0, 0, 0, 0, 0]},
                  s2={"room": 5, "retainerOf": 1, "retainerTurns": 2})
    assert turn(game, s0=Intent("rob", other=1))[0]["reason"] == "robbery_failed"
    # Both sides with one: 3 vs 2 succeeds.
    game = staged(s0={"room": 5}, s1={"room": 5, "items": [1, 0, 0, 0, 0, 0]},
                  s2={"room": 5, "retainerOf": 1, "retainerTurns": 2},
                  s3={"room": 5, "retainerOf": 0, "retainerTurns": 2})
    assert turn(game, s0=Intent("rob", other=1))[0]["reason"] == "ok"
    # Lit room, robber with two hirelings: 3 vs 3 still fails.
    game = staged(s0={"room": 0}, s1={"room": 0},
                  s2={"room": 0, "retainerOf": 0, "retainerTurns": 2},
                  s3={"room": 0, "retainerOf": 0, "retainerTurns": 2})
    assert turn(game, s0=Intent("rob", other=1))[0]["reason"] == "robbery_failed"


def test_robbery_takes_coin_when_pack_full_or_victim_empty() -> None:
    game = staged(s0={"room": 6, "items": [8, 0, 0, 0, 0, 0]},
                  s1={"room": 6, "items": [0, 0, 0, 0, 0, 1]},
                  s2={"room": 6, "coin": 0}, s3={"room": 6})
    acts = turn(game, s0=Intent("rob", other=1), s3=Intent("rob", other=2))
    assert (acts[0]["reason"], acts[0]["coin"]) == ("ok", 10)
    assert acts[3]["reason"] == "nothing_to_take" and game.results()["robbed"][2] == 0


def test_robbery_check_order() -> None:
    game = staged(thievery=False, s0={"room": 6}, s1={"room": 6}, s2={"room": 5})
    acts = turn(game, s0=Intent("rob", other=1), s1=Intent("rob", other=2))
    assert acts[0]["reason"] == "thievery_forbidden"
    assert acts[1]["reason"] == "not_in_room"
    game = staged(s0={"room": 6, "retainerOf": 1, "retainerTurns": 1}, s1={"room": 6})
    assert turn(game, s0=Intent("rob", other=1))[0]["reason"] == "bound_by_contract"


def test_a_victim_who_walks_away_is_still_robbed() -> None:
    game = staged(s0={"room": 6}, s1={"room": 6, "items": [0, 1, 0, 0, 0, 0]})
    acts = turn(game, s0=Intent("rob", other=1), s1=Intent("move", to_room=7))
    assert acts[0]["reason"] == "ok" and acts[1]["reason"] == "ok"


# --- offers, hire and gifts (§9.5-9.8) -----------------------------------------------------------
def test_trade_offer_accept_and_consumption() -> None:
    game = staged(everyone=0, s0={"room": 0, "items": [0, 0, 0, 0, 1, 0]})
    a = turn(game, s0=Intent("trade", item=LAMP, qty=3, other=1, coin=12))[0]
    assert (a["reason"], a["qty"], a["coin"], a["salience"]) == ("ok", 1, 12, 40)
    acts = turn(game, s1=Intent("accept"), s2=Intent("accept", other=0))
    assert (acts[1]["reason"], acts[1]["other"], acts[1]["coin"]) == ("ok", 0, 12)
    assert acts[2]["reason"] == "no_such_offer"  # not addressed to seat 2
    snap = game.snapshot()
    assert snap["cogs"][1]["items"][LAMP] == 1 and snap["cogs"][0]["coin"] == 52


def test_offers_live_one_turn_and_expire_when_unpayable() -> None:
    game = staged(everyone=0, s0={"room": 0, "items": [0, 0, 0, 0, 1, 0]},
                  s1={"room": 0, "coin": 3})
    turn(game, s0=Intent("trade", item=LAMP, other=1, coin=12))
    a = turn(game, s1=Intent("accept", other=0))[1]
    assert (a["reason"], a["other"]) == ("offer_expired", 0)
    assert game.state.offers == []  # consumed even though it failed
    game = staged(everyone=0, s0={"room": 0, "items": [0, 0, 0, 0, 1, 0]})
    turn(game, s0=Intent("trade", item=LAMP, other=1, coin=1))
    turn(game)
    assert turn(game, s1=Intent("accept", other=0))[1]["reason"] == "no_such_offer"


def test_hire_clamps_fee_binds_for_three_turns() -> None:
    game = staged(everyone=0, s0={"room": 0, "coin": 10})
    a = turn(game, s0=Intent("hire", other=1, coin=15))[0]
    assert (a["reason"], a["coin"]) == ("ok", 10)  # clamped to the purse
    a = turn(game, s1=Intent("accept"))[1]
    assert (a["reason"], a["coin"], a["salience"]) == ("ok", 10, 70)
    # The bond is 3 turns; the open of the next turn already ticks it once.
    cogs = game.snapshot()["cogs"]
    assert (cogs[1]["retainerOf"], cogs[1]["retainerTurns"], cogs[1]["coin"]) == (0, 2, 50)
    assert game.observe(1)["standing"]["hiredTo"] == game.aliases[0]
    for left in (1, 0):
        turn(game)
        assert game.snapshot()["cogs"][1]["retainerTurns"] == left
    assert game.snapshot()["cogs"][1]["retainerOf"] == -1
    broke = staged(everyone=0, s0={"room": 0, "coin": 0})
    assert turn(broke, s0=Intent("hire", other=1))[0]["reason"] == "cannot_afford"


def test_gift_of_goods_and_coin_in_one_act() -> None:
    game = staged(everyone=0, s0={"room": 0, "items": [0, 0, 0, 0, 1, 0]},
                  s1={"room": 0, "items": [8, 0, 0, 0, 0, 0]})
    acts = turn(game, s0=Intent("give", item=LAMP, other=2, coin=5),
                s2=Intent("give", item=HIDE, other=1), s3=Intent("give", item=LAMP, other=1))
    assert (acts[0]["reason"], acts[0]["qty"], acts[0]["coin"], acts[0]["salience"]) == (
        "ok", 1, 5, 35)
    assert acts[2]["reason"] == "not_carrying"
    assert acts[3]["reason"] == "not_carrying"
    a = turn(game, s2=Intent("give", item=LAMP, other=1))[2]
    assert a["reason"] == "carry_limit"


# --- movement, ground, speech, logs --------------------------------------------------------------
def test_move_only_along_exits_and_logs_in_the_room_left() -> None:
    game = staged(s0={"room": 0})
    a = turn(game, s0=Intent("move", to_room=8))[0]
    assert a["reason"] == "no_such_exit"
    a = turn(game, s0=Intent("move", to_room=1))[0]
    assert a["reason"] == "ok"
    cog = game.snapshot()["cogs"][0]
    assert (cog["room"], cog["prevRoom"]) == (1, 0)
    assert f"{game.aliases[0]} left for The Copper Kettle." in game.state.heard_log[0]


def test_speech_is_heard_next_turn_and_switch_blanks_it() -> None:
    game = staged(everyone=0)
    game.play_turn([Intent("say", text="hello")] + [Intent("wait")] * 5,
                   says=["first"] + [""] * 5)
    heard = game.observe(1)["heard"]
    assert heard[:2] == [f'{game.aliases[0]} says: "first"', f'{game.aliases[0]} says: "hello"']
    mute = staged(speech=False, everyone=0)
    acts = mute.play_turn([Intent("say", text="hello")] + [Intent("wait")] * 5,
                          says=["first"] + [""] * 5)
    assert acts[0]["reason"] == "ok" and "say" not in acts[0]
    assert all("says" not in line for line in mute.observe(1)["heard"])


def test_a_structured_say_of_any_length_is_spoken_stored_and_replayed_as_a_sentence_is() -> None:
    """§12.2 speaks cut(oneLine(text), 160); the act's sentence and record keep to it, within a
    stored sentence's 240 runes (§19): a longer text was recorded whole (a sentence of 1 MB)
    and made a replay that could not be played again."""
    from sim.replay import replay

    game = staged(everyone=0)
    long = "x" * 5000
    acts = game.play_turn([Intent("say", text=long), Intent("say", text="a\nb")]
                          + [Intent("wait")] * 4)
    assert acts[0]["sentence"] == f'I say "{long[:160]}"' and len(acts[0]["sentence"]) <= 240
    assert acts[0]["structured"]["spoken"] == long[:160]
    assert acts[1]["sentence"] == 'I say "a b"'
    heard = game.observe(2)["heard"]
    assert f'{game.aliases[0]} says: "{long[:160]}"' in heard
    played = Game(GameConfig(seed=5))  # a town as its config makes it, to be replayed
    for _ in range(3):
        played.play_turn([Intent("say", text=long)] + ["I wait."] * 5)
    payload = played.replay_payload(["p"] * 6)
    assert replay(payload["config"], payload["events"]).events == played.events


@pytest.mark.parametrize("text, spoken", [
    ("", "I say."), (" \n ", "I say."), ('he said "hi"', "he said 'hi'"),
    ("\u00abx\u00bb and \u201cy\u201d \u201ez", "'x' and 'y' 'z"), ("plain", "plain"),
    ("a" * 159 + " b", "a" * 159), ("a" * 159 + "\u3000b", "a" * 159)])
def test_a_structured_say_records_a_sentence_that_reads_back_as_the_same_act(
        text: str, spoken: str) -> None:
    """The sentence recorded for a hand-built say parses to the line it spoke (SENTENCES §4: the
    first two quote marks lift a line, so none may be inside it; §12: a say with nothing to
    lift speaks its whole sentence). "he said "hi"" was recorded, heard "he said "hi"" and
    read back as "he said"; an empty say was heard as nothing and read back as 'I say ""'."""
    from sim import parse_sentence
    from sim import replay as sim_replay

    game = staged(everyone=0)
    act = game.play_turn([Intent("say", text=text)] + [Intent("wait")] * 5)[0]
    assert act["structured"]["spoken"] == spoken
    again = parse_sentence(act["sentence"], game, 0)
    assert (again.kind, again.text) == ("say", spoken)
    assert f'{game.aliases[0]} says: "{spoken}"' in game.observe(1)["heard"]
    played = Game(GameConfig(seed=5))  # a cut that left a blank at 160 did not replay
    while not played.done:
        played.play_turn([Intent("say", text=text)] + [Intent("wait")] * 5)
    payload = played.replay_payload(["p"] * 6)
    assert sim_replay(payload["config"], payload["events"]).events == played.events


def test_a_replay_plays_hand_built_acts_as_they_were_recorded() -> None:
    """Records written before hand-built says were made speakable hold 'I say "he said "hi""'
    and acts of none/ok: a replay takes a recorded intent as it was played, so they still play
    (only a live one is held to what a sentence can say)."""
    from sim import replay

    game = Game(GameConfig(seed=5))
    game.play_turn([Intent("say", text='he said "hi"'), Intent("none", reason="no_verb")]
                   + ["I wait."] * 4)
    while not game.done:
        game.play_turn(["I wait."] * 6)
    events = [dict(e) for e in game.events]
    for i, e in enumerate(events):  # as the earlier code recorded them
        if e["kind"] == "act" and e["turn"] == 0 and e["seat"] in (0, 1):
            said = e["seat"] == 0
            e["structured"] = {**e["structured"], **({"spoken": 'he said "hi"'} if said
                                                     else {"reason": "ok"})}
            events[i] = {**e, **({"sentence": 'I say "he said "hi""'} if said
                                 else {"reason": "ok"})}
    assert replay(game.config, events).events == events


@pytest.mark.parametrize("kind, reason", [("none", "ok"), ("none", "robbery_failed"),
                                          ("none", "waited"), ("wait", "no_verb"),
                                          ("move", "carry_limit")])
def test_a_hand_built_intent_with_a_reason_no_sentence_is_read_with_is_refused(
        kind: str, reason: str) -> None:
    """An act of ``none`` carries the reason its sentence was read with (RULES §8, §9.13), and
    any other kind ``ok``: Intent("none", reason="ok") played as an act no rule produces."""
    game = staged(everyone=0)
    with pytest.raises(IntentError, match=f"reason must be .*got '{reason}'"):
        game.play_turn([Intent(kind, to_room=1, reason=reason)] + [Intent("wait")] * 5)
    act = game.play_turn([Intent("none", reason="no_verb")] + [Intent("wait")] * 5)[0]
    assert (act["intent"], act["reason"]) == ("none", "no_verb")


@pytest.mark.parametrize("text", [None, b"I go to the docks", 3])
def test_parse_sentence_refuses_what_is_not_text(text: object) -> None:
    """bytes were read as their repr ("b'I go to the docks'": a move) and None as "None"."""
    from sim import parse_sentence

    with pytest.raises(TurnError, match="text must be a str"):
        parse_sentence(text, staged(everyone=0), 0)


def test_room_log_keeps_the_newest_12_lines() -> None:
    game = staged(everyone=0)
    game.play_turn([Intent("say", text="x" * 3)] * 6, says=["y"] * 6)
    assert len(game.state.heard_log[0]) == 12


def test_end_early_is_a_deadline_and_idempotent() -> None:
    game = Game(GameConfig(seed=4))
    turn(game)
    game.end_early()
    game.end_early()
    assert game.done and game.results()["reason"] == "deadline"
    assert [e["kind"] for e in game.events[-2:]] == ["turn", "end"]
    assert game.events[-1] == {"kind": "end", "turn": 1, "text": "deadline"}
    with pytest.raises(TurnError, match="over"):
        turn(game)


# --- bad input -----------------------------------------------------------------------------------
def test_refused_calls_change_nothing() -> None:
    game = Game(GameConfig(seed=4))
    before = (game.snapshot(), list(game.events))
    with pytest.raises(TurnError, match="6"):
        game.play_turn(["I wait."] * 5)
    with pytest.raises(ValueError, match=r"actions\[2\]\.item"):
        game.play_turn([Intent("wait")] * 2 + [Intent("take", item=6)] + [Intent("wait")] * 3)
    with pytest.raises(TurnError, match=r"actions\[1\]"):
        game.play_turn(["I wait."] + [3] + ["I wait."] * 4)
    with pytest.raises(TurnError, match=r"notes\[0\]"):
        game.play_turn(["I wait."] * 6, notes=[1] * 6)
    assert (game.snapshot(), game.events) == before


@pytest.mark.parametrize("kwargs, field", [
    ({"kind": "fly"}, "kind"), ({"item": -2}, "item"), ({"qty": -1}, "qty"),
    ({"coin": 2 ** 64}, "coin"), ({"other": "x"}, "other"), ({"reason": "bogus"}, "reason"),
])
def test_malformed_intents_name_the_field(kwargs: dict, field: str) -> None:
    with pytest.raises(ValueError, match=field):
        Intent(**kwargs)


@pytest.mark.parametrize("path, value, field", [
    (("cogs", 0, "coin"), -1, r"cogs\[0\]\.coin"),
    (("cogs", 1, "room"), 9, r"cogs\[1\]\.room"),
    (("cogs", 2, "items"), [9, 0, 0, 0, 0, 0], "carry limit"),
    (("npcs", 3, "stock"), [13, 0, 0, 0, 0, 0], r"npcs\[3\]\.stock\[0\]"),
    (("rooms", 4), [0, -1, 0, 0, 0, 0], r"rooms\[4\]\[1\]"),
    (("cogs", 0, "retainerOf"), 0, "retainerOf"),
])
def test_restore_refuses_impossible_states(path: tuple, value, field: str) -> None:
    game = Game(GameConfig(seed=4))
    snap = game.snapshot()
    target = snap
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    before = game.snapshot()
    with pytest.raises(StateError, match=field):
        game.restore(snap)
    assert game.snapshot() == before


def test_structured_intents_get_the_parser_defaults() -> None:
    game = staged(everyone=2)
    acts = turn(game, s0=Intent("buy", item=HIDE), s1=Intent("quest"),
                s2=Intent("rob", other=2), s3=Intent("move"))
    assert acts[0]["npc"] == ODA and acts[0]["reason"] == "ok"
    assert acts[1]["npc"] == ODA and acts[1]["reason"] == "ok"
    assert (acts[2]["intent"], acts[2]["reason"]) == ("none", "self_target")
    assert (acts[3]["intent"], acts[3]["reason"]) == ("none", "no_target")
    assert game.state.hint[1]


@pytest.mark.parametrize("slot, value, limit", [("to_room", 9, 9), ("item", 40, 6),
                                                ("npc", 5, 5), ("other", 6, 6)])
def test_an_id_beyond_the_town_names_its_seat_and_slot(slot, value, limit) -> None:
    """An id past the town's tables is the caller's mistake: refused, naming the seat's action
    and the slot, and the turn is not played."""
    game = Game(GameConfig(seed=4))
    before = game.snapshot()
    actions: list = ["I wait."] * 6
    actions[3] = Intent("move", **{slot: value})
    with pytest.raises(IntentError, match=fr"^actions\[3\]\.{slot} must be -1 or below {limit}; "
                                          fr"got {value}$"):
        game.play_turn(actions)
    assert game.snapshot() == before and game.turn == 0


def test_world_json_has_the_spectator_keys() -> None:
    w = STANDARD_TOWN.to_json()
    assert set(w) == {"rooms", "items", "npcs", "guild", "pointsPerUnit"}
    assert w["rooms"][5]["dark"] and w["npcs"][4]["trade"] == [2, 4]


def test_configs_of_different_towns_differ() -> None:
    """A config is its town too: equal settings in another town are another config."""
    from dataclasses import replace

    poor = replace(STANDARD_TOWN, start_coin=30)
    assert GameConfig(seed=3) == GameConfig(seed=3, world=STANDARD_TOWN)
    assert GameConfig(seed=3) != GameConfig(seed=3, world=poor)
    assert len({GameConfig(seed=3), GameConfig(seed=3, world=poor)}) == 2


def test_robbery_odds_of_rules_11() -> None:
    """Attack 1 + guards (+1 dark) must beat defence 1 + guards (+2 lit): the one definition."""
    from sim.rules.robbery import robbery_succeeds

    assert robbery_succeeds(0, 0, True) and not robbery_succeeds(0, 1, True)
    assert robbery_succeeds(1, 1, True) and not robbery_succeeds(2, 0, False)
    assert robbery_succeeds(3, 0, False) and not robbery_succeeds(3, 1, False)
