"""The per-seat view (RULES §17) and its text form (SENTENCES §17)."""

from __future__ import annotations

from scenario import edit, staged, turn

from sim import Game, GameConfig, Intent
from sim.language.vocab import PHRASEBOOK

HIDE, NAILS, ROPE, SALT, LAMP, RELIC = range(6)


def test_view_holds_own_purse_pack_commissions_and_room() -> None:
    game = staged(seed=5, s0={"room": 2, "coin": 33, "items": [2, 0, 0, 0, 0, 1]},
                  s1={"room": 2}, s2={"room": 3})
    obs = game.observe(0)
    assert obs["coin"] == 33 and obs["carried"] == 3 and obs["carryLimit"] == 8
    assert obs["items"] == [{"item": "hide", "count": 2, "value": 6},
                            {"item": "relic", "count": 1, "value": 14}]
    assert [q["item"] for q in obs["quests"]] == ["rope", "hide"]
    assert obs["quests"][0]["outstanding"] == 16 and obs["quests"][0]["points"] == 0
    assert obs["room"]["name"] == "Tanner's Row"
    assert [e["name"] for e in obs["room"]["exits"]] == ["The Copper Kettle", "The Smithy"]
    assert obs["room"]["cogs"] == [game.aliases[1]]  # seat 2 is elsewhere
    npc = obs["room"]["npc"]
    assert npc["name"] == "Tanner Oda"
    assert npc["goods"] == [{"item": "hide", "stock": 8, "ask": 4, "bid": 2},
                            {"item": "salt", "stock": 5, "ask": 10, "bid": 6}]
    assert len(obs["map"]) == 9 and "stock" not in str(obs["map"])


def test_hint_appears_only_after_a_successful_quest() -> None:
    game = staged(seed=5, s0={"room": 2})
    assert "cheapest" not in str(game.observe(0)["quests"])
    turn(game, s0=Intent("quest"))
    quests = game.observe(0)["quests"]
    # Rope: Bram (stock 7 after turn 1's restock) asks 7, Nesh (4) 10, Vell (4) 10.
    assert quests[0]["cheapest"] == {"npc": "Smith Bram", "at": "The Smithy", "ask": 7}
    assert quests[1]["cheapest"]["npc"] == "Tanner Oda"
    assert "Cheapest right now: Smith Bram at The Smithy asks 7" in game.observation_text(0)
    turn(game)
    assert "cheapest" not in str(game.observe(0)["quests"])


def test_offers_and_standing_are_shown_to_the_addressee_only() -> None:
    game = staged(everyone=0, s0={"room": 0, "items": [0, 0, 0, 0, 1, 0]})
    turn(game, s0=Intent("trade", item=LAMP, other=1, coin=12), s2=Intent("hire", other=3,
                                                                          coin=4))
    a0 = game.aliases[0]
    assert game.observe(1)["offers"] == [{"kind": "trade", "from": a0, "coin": 12,
                                          "item": "lamp", "qty": 1}]
    assert game.observe(4)["offers"] == []
    assert f"{a0} offers you 1 lamp for 12 coin" in game.observation_text(1)
    turn(game, s3=Intent("accept"))
    assert game.observe(3)["standing"]["hiredTo"] == game.aliases[2]
    assert game.observe(2)["standing"]["retainers"] == [{"name": game.aliases[3], "turns": 2}]
    assert f"{game.aliases[3]} is hired to you for 2 more turns" in game.observation_text(2)


def test_heard_lines_are_the_current_rooms_last_turn() -> None:
    game = staged(s0={"room": 0}, s1={"room": 1})
    turn(game, s0=Intent("move", to_room=1), s1=Intent("wait"))
    heard = game.observe(0)["heard"]  # seat 0 now stands in the Kettle
    assert f"{game.aliases[1]} waited and watched." in heard
    assert all(game.aliases[0] not in line for line in heard)


def test_text_view_sections_in_order_and_outcome() -> None:
    game = Game(GameConfig(seed=11))
    game.play_turn(["I go north."] + ["I wait."] * 5, notes=["remember the alley"] * 6)
    text = game.observation_text(0)
    heads = ["Turn 2 of 14.", "YOU ARE ", "YOUR COMMISSIONS", "YOU ARE IN:",
             "ON THE GROUND HERE:", "COGS HERE:", "SHOPKEEPER HERE:",
             "WHAT HAPPENED HERE LAST TURN:", "THE TOWN:", "Shopkeepers:",
             "YOUR LAST SENTENCE:", "SENTENCES THE TOWN HAS UNDERSTOOD BEFORE",
             "YOUR NOTES FROM EARLIER TURNS:", "Reply with ONLY a JSON object"]
    positions = [text.index(h) for h in heads]
    assert positions == sorted(positions)
    assert 'YOUR LAST SENTENCE: "I go north." - an action, but nothing to do it to.' in text
    assert all(f"  {line}" in text for line in PHRASEBOOK)
    assert "remember the alley" in text


def test_no_last_sentence_before_acting_and_no_say_key_when_mute() -> None:
    game = Game(GameConfig(seed=2, speech=False))
    text = game.observation_text(3)
    assert "YOUR LAST SENTENCE" not in text and '"say"' not in text
    assert '"say"' in Game(GameConfig(seed=2)).observation_text(3)


def test_keeper_coin_and_prices_follow_trades() -> None:
    game = staged(s0={"room": 3})
    edit(game, npcs=lambda n: n[1]["stock"].__setitem__(ROPE, 6))
    turn(game, s0=Intent("buy", item=ROPE, qty=2))
    goods = game.observe(0)["room"]["npc"]["goods"]
    rope = next(g for g in goods if g["item"] == "rope")
    assert rope["stock"] == 5 and rope["ask"] == 9 and rope["bid"] == 6  # 4 + turn-1 restock
    assert game.observe(0)["room"]["npc"]["coin"] == 120 + 17
