"""The choosing mode of language-model seats (agents.llm.choose): the choices are the seat's
legal rows, a reply is read only as one of them, retries and fallbacks follow SENTENCES §20.1
and RULES §21, and the prompt puts its stable part first."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from conftest import needs_module
from fake_llm import FakeLLM
from hypothesis import given, settings
from hypothesis import strategies as st
from test_llm import league  # one episode of 6 turns, seed 4

from agents import Decision, LLMPolicy, make_policy
from agents.baselines.rules import WAIT
from agents.baselines.scripted import Factor
from agents.llm.choose import (
    admissible,
    choice_grammar,
    choice_schema,
    choose_system_prompt,
    choose_user_prompt,
    extras_for,
    is_admissible,
    label,
    parse_choice,
)
from agents.llm.client import usage_of
from agents.llm.local_stats import league_stats, quantiles
from agents.llm.seat import CHOOSE_CORRECTIVE
from league.cli.guild import main
from sim import Game, GameConfig
from sim.codec.action_table import legal_mask, semantic, to_intent
from sim.language.parser import parse
from sim.rules.world import MAX_NOTES_LEN, MAX_SAY_LEN, SEATS

needs_module("httpx", "'guild-game[llm]'")

CHOICES = ["I wait and watch the road.", "I walk to The Docks.", "I walk to The Chapel."]


@pytest.fixture(scope="module")
def server():
    with FakeLLM(lifetime=180) as s:
        yield s


def played_game(seed: int, turns: int) -> Game:
    """A game after ``turns`` turns of factor play (towns with goods, cogs and offers)."""
    game = Game(GameConfig(seed=seed))
    factor = Factor()
    for _ in range(turns):
        game.play_turn([factor.act(game, s) for s in range(SEATS)])
    return game


# --- the choices -------------------------------------------------------------------------------

@pytest.mark.parametrize("seed,turns", [(1, 0), (5, 3), (9, 7)])
def test_the_choices_are_the_legal_rows_each_read_back_as_its_act(seed, turns):
    game = played_game(seed, turns)
    for seat in range(SEATS):
        mask = legal_mask(game.state, seat)
        rows = [i for i, ok in enumerate(mask) if ok]
        choices = admissible(game, seat)
        assert len(choices) == len(rows) == sum(mask) >= 1
        room = game.state.room[seat]
        for i, sentence in zip(rows, choices):
            parsed = parse(game.world, game.aliases, seat, room, game.state.offers, game.turn,
                           sentence)
            assert semantic(parsed) == semantic(to_intent(i, game.world, seat, room))


# --- reading a reply ---------------------------------------------------------------------------

@pytest.mark.parametrize("text,number,say,notes", [
    ('{"action": 2}', 2, "", ""),
    ('{"action": 3, "say": "hello", "notes": "n"}', 3, "hello", "n"),
    ('  ```json\n{"action": 1, "say": "a\\tb"}\n```', 1, "a b", ""),
    ('{"action": "2"}', 2, "", ""),
    ('{"action": " i walk to the  chapel. "}', 3, "", ""),
    ('{"action": 2, "say": "I was about to', 2, "", ""),     # cut off after the action
    ('{"action": 1 , "notes": "x', 1, "", ""),
    ('{"action": "I walk to The Docks.", "say": "cut', 2, "", ""),
    ("3", 3, "", ""),
    ("2. I walk to The Docks, because", 2, "", ""),
])
def test_a_usable_reply_is_read_as_its_choice(text, number, say, notes):
    choice, why = parse_choice(text, CHOICES)
    assert why == "" and choice is not None
    assert (choice.number, choice.action, choice.say, choice.notes) == (
        number, CHOICES[number - 1], say, notes)


@pytest.mark.parametrize("text", [
    "", "no idea", '{"action": 0}', '{"action": 4}', '{"action": -1}', '{"action": true}',
    '{"action": 2.0}', '{"action": "I walk to Market Square."}', '{"action": null}',
    '{"say": "hi"}', '{"action": 1', '{"action": 12', "[1, 2]", '{"action": [1]}',
    '{"action": "99999999999999999999"}', "Sure! {not json",
    '{"action": ' + "9" * 4500 + ', "say": "x', "7" * 4600, '{"action": ' + "1" * 5000 + "}",
])
def test_an_unusable_reply_is_refused_with_a_reason(text):
    choice, why = parse_choice(text, CHOICES)
    assert choice is None and why


def test_say_and_notes_are_cleaned_and_capped():
    text = json.dumps({"action": 1, "say": "s" * 500, "notes": "line\none " + "n" * 900})
    choice, _ = parse_choice(text, CHOICES)
    assert len(choice.say) == MAX_SAY_LEN and choice.say.endswith("\u2026")
    assert len(choice.notes) == MAX_NOTES_LEN and "\n" not in choice.notes


@settings(max_examples=300, deadline=None)
@given(text=st.text(max_size=300), n=st.integers(1, 130))
def test_parse_choice_never_raises_and_only_returns_a_listed_choice(text, n):
    choices = [f"choice {k}" for k in range(1, n + 1)]
    choice, why = parse_choice(text, choices)
    if choice is None:
        assert why
    else:
        assert 1 <= choice.number <= n and choice.action == choices[choice.number - 1]


@settings(max_examples=200, deadline=None)
@given(n=st.integers(1, 130), data=st.data())
def test_every_number_the_grammar_allows_is_read_back(n, data):
    k = data.draw(st.integers(1, n))
    say = data.draw(st.text(max_size=40))
    choices = [f"choice {j}" for j in range(1, n + 1)]
    text = json.dumps({"action": k, "say": say}, ensure_ascii=False)
    choice, _ = parse_choice(text, choices)
    assert choice is not None and choice.number == k


def test_the_schema_and_grammar_allow_exactly_the_choices():
    schema = choice_schema(4)
    assert schema["properties"]["action"]["enum"] == [1, 2, 3, 4]
    assert schema["required"] == ["action"] and list(schema["properties"]) == [
        "action", "say", "notes"]
    assert list(choice_schema(4, extras_for(True, False))["properties"]) == ["action", "notes"]
    assert list(choice_schema(4, extras_for(False, True))["properties"]) == ["action"]
    grammar = choice_grammar(12)
    numbers = re.search(r"^number ::= (.*)$", grammar, re.M).group(1)
    assert sorted(int(x) for x in re.findall(r'"(\d+)"', numbers)) == list(range(1, 13))
    assert grammar.startswith('root ::= "{\\"action\\": " number')  # the action comes first
    assert "say" not in choice_grammar(3, ("notes",))
    assert choice_grammar(3, ()).splitlines()[0] == 'root ::= "{\\"action\\": " number "}"'


def test_without_talk_the_answer_is_the_action_alone(server):
    game = played_game(3, 1)
    p = chooser(server, "choose-first", talk=False)
    assert p.act(game, 0) == Decision(admissible(game, 0)[0])
    body = server.by_model("choose-first")[-1]["body"]
    assert list(body["response_format"]["json_schema"]["schema"]["properties"]) == ["action"]
    assert '"say"' not in body["messages"][0]["content"]
    assert body["messages"][0]["content"] == choose_system_prompt(game, "", ())


# --- the prompt ----------------------------------------------------------------------------------

def test_the_system_message_is_shared_by_every_seat_and_turn_of_an_episode():
    game = played_game(2, 0)
    first = choose_system_prompt(game)
    assert "THE TOWN:" in first and all(a.upper() not in first for a in game.aliases)
    later = played_game(2, 5)
    assert choose_system_prompt(later) == first
    assert choose_system_prompt(game, "Hoard salt.").startswith(first)


def expand(lines: list[str]) -> list[tuple[int, str]]:
    """The (number, label) pairs the choice lines list, merged entries spelled out."""
    out = []
    for line in lines:
        for entry in line.split(" | "):
            if m := re.fullmatch(r"(\d+) (.*)", entry):
                out.append((int(m.group(1)), m.group(2)))
                continue
            m = re.fullmatch(r"(.*?)((?:\d+/)+\d+)(.*): ((?:\d+/)+\d+)", entry)
            assert m, entry
            values, ks = m.group(2).split("/"), m.group(4).split("/")
            assert len(values) == len(ks) >= 2
            out += [(int(k), f"{m.group(1)}{v}{m.group(3)}") for k, v in zip(ks, values)]
    return out


def test_the_user_message_lists_every_choice_once_in_order_and_the_seats_facts():
    for seed, turns in ((4, 4), (5, 4), (11, 9)):
        game = played_game(seed, turns)
        for seat in range(SEATS):
            choices = admissible(game, seat)
            user = choose_user_prompt(game, seat, choices)
            view, listed = user.split("\nYOUR CHOICES:\n")
            npc = game.observe(seat)["room"].get("npc")
            keeper = npc["name"] if npc else ""
            assert expand(listed.splitlines()) == [(k, label(c, keeper))
                                                   for k, c in enumerate(choices, 1)]
            obs = game.observe(seat)
            assert f"You are {obs['name']}: {obs['coin']} coin" in view
            assert all(h in view for h in obs["heard"])
            assert "THE TOWN:" not in user and "SENTENCES THE TOWN" not in user


def test_a_label_drops_the_pronoun_the_stop_and_the_keeper_here():
    assert label("I buy 2 salt from Keeper Nesh.", "Keeper Nesh") == "buy 2 salt"
    assert label("I sell all the salt to Keeper Nesh.", "Keeper Nesh") == "sell all the salt"
    assert label("I hand Guildmaster Vell 2 hides.", "Guildmaster Vell") == \
        "hand Guildmaster Vell 2 hides"
    assert label("I walk to The Docks.") == "walk to The Docks"


# --- the policy against a server -----------------------------------------------------------------

def chooser(server: FakeLLM, model: str, **kw) -> LLMPolicy:
    kw.setdefault("timeout", 5.0)
    kw.setdefault("retry_floor", 0.0)
    return LLMPolicy(model, server.url, choose="admissible", **kw)


def test_a_choice_is_played_as_its_sentence_with_say_and_notes(server):
    game = played_game(3, 2)
    p = chooser(server, "choose-last")
    d = p.act(game, 1)
    choices = admissible(game, 1)
    n = len(choices)
    assert d == Decision(choices[-1], "turn 3", f"took {n}", scripted=False)
    body = server.by_model("choose-last")[-1]["body"]
    assert body["messages"][0]["content"] == choose_system_prompt(game)
    assert body["messages"][1]["content"] == choose_user_prompt(game, 1, choices)
    assert body["max_tokens"] == p.max_tokens
    fmt = body["response_format"]
    assert fmt["json_schema"]["schema"]["properties"]["action"]["enum"] == list(range(1, n + 1))
    rec = p.records[-1]
    assert rec["mode"] == "admissible" and rec["choices"] == n and rec["choice"] == n
    attempt = rec["attempts"][0]
    assert attempt["first_token"] == "unknown" and attempt["cached_tokens"] == "unknown"
    assert attempt["usage"]["completion_tokens"] == 17 and attempt["seconds"] >= 0


@pytest.mark.parametrize("model", ["choose-cut", "choose-bare", "choose-verbatim"])
def test_cut_bare_and_verbatim_replies_count_at_once(server, model):
    game = played_game(6, 1)
    p = chooser(server, model)
    d = p.act(game, 0)
    want = 0 if model == "choose-verbatim" else -1
    assert d.action == admissible(game, 0)[want] and not d.scripted and d.say == ""
    assert len(p.records[-1]["attempts"]) == 1


def test_a_reply_outside_the_choices_is_asked_again_once(server):
    game = played_game(7, 0)
    p = chooser(server, "choose-out-once")
    d = p.act(game, 2)
    assert d == Decision(admissible(game, 2)[0])
    reqs = server.by_model("choose-out-once")[-2:]
    assert not reqs[0]["user"].endswith(CHOOSE_CORRECTIVE)
    assert reqs[1]["user"].endswith(CHOOSE_CORRECTIVE)
    assert [("error" in a) for a in p.records[-1]["attempts"]] == [True, False]


@pytest.mark.parametrize("fallback,want", [("factor", None), ("wait", WAIT)])
def test_two_unusable_replies_play_the_fallback_marked_scripted(server, fallback, want):
    game = played_game(8, 2)
    p = chooser(server, "choose-out-of-range", fallback=fallback)
    d = p.act(game, 3)
    assert d.scripted and d.action == (want or Factor().act(game, 3))
    assert "choice" not in p.records[-1] and len(p.records[-1]["attempts"]) == 2


def test_cached_tokens_are_read_where_the_endpoint_reports_them():
    openai = {"usage": {"prompt_tokens": 300, "completion_tokens": 6, "total_tokens": 306,
                        "prompt_tokens_details": {"cached_tokens": 256}}}
    assert usage_of(openai)["cached_tokens"] == 256
    llama = {"usage": {"prompt_tokens": 9}, "timings": {"cache_n": 120, "prompt_n": 9}}
    assert usage_of(llama) == {"prompt_tokens": 9, "cached_tokens": 120}
    assert usage_of({"usage": {"prompt_tokens": True, "prompt_tokens_details": "x"}}) == {}


def test_spec_options_choose_and_fallback(server):
    p = make_policy(f"llm:choose-first@{server.url}#choose=admissible&fallback=wait&talk=no")
    assert (p.choose, p.fallback, p.talk) == ("admissible", "wait", False)
    p = make_policy(f"llm:good@{server.url}")
    assert (p.choose, p.fallback, p.talk) == ("free", "factor", True)
    for bad in ("choose=menu", "fallback=random", "talk=maybe"):
        with pytest.raises(ValueError, match=bad.split("=")[0]):
            make_policy(f"llm:good@{server.url}#{bad}")


# --- leagues ---------------------------------------------------------------------------------

def test_a_choosing_league_plays_only_understood_acts_and_verifies(server, tmp_path: Path,
                                                                    capsys):
    spec = f"llm:choose-spread@{server.url}#choose=admissible"
    assert league(tmp_path / "lg", f"{spec},factor") == 0
    row = json.loads((tmp_path / "lg" / "results.jsonl").read_text())
    seats = [s for s, name in enumerate(row["lineup"]) if name == spec]
    assert seats and all(row["fallbacks"][s] == 0 for s in seats)
    payload = json.loads((tmp_path / "lg" / "replays" / "e000000.json").read_text())
    acts = [e for e in payload["events"] if e["kind"] == "act" and e["seat"] in seats]
    assert len(acts) == 6 * len(seats)
    assert all(e["intent"] != "none" and not e["scripted"] for e in acts)
    recs = payload["llm"]
    assert all(1 <= r["choice"] <= r["choices"] for r in recs)
    assert main(["verify", str(tmp_path / "lg")]) == 0
    stats = league_stats(tmp_path / "lg")
    assert stats["modes"] == {"admissible": 6 * len(seats)} and stats["fallbacks"] == 0
    assert stats["admissibleShare"] == 1.0 == stats["understoodShare"]
    assert 0 <= stats["decisionSeconds"]["median"] <= stats["decisionSeconds"]["p95"]
    assert stats["firstTokenSeconds"] is None  # not streamed: unknown
    held = 2 * len(seats)
    assert stats["commissions"][spec].endswith(f"/{held}")
    # export-sft: the model's rows are the prompts it was sent and the number it answered
    assert main(["export-sft", str(tmp_path / "lg"), "--out", str(tmp_path / "sft"),
                 "--val-fraction", "0", "--only-llm"]) == 0
    rows = [json.loads(x) for x in (tmp_path / "sft" / "train.jsonl").read_text().splitlines()]
    by = {(r["turn"], r["seat"]): r for r in recs}
    assert len(rows) == len(recs)
    for row in rows:
        rec = by[(row["meta"]["turn"], row["meta"]["seat"])]
        assert row["prompt"][1]["content"] == rec["user"]
        assert json.loads(row["completion"][0]["content"]) == {"action": rec["choice"]}
    capsys.readouterr()


def test_fallback_wait_reaches_a_choosing_seat_and_unranks_it(server, tmp_path: Path, capsys):
    spec = f"llm:choose-out-of-range@{server.url}#choose=admissible&retry_floor=0"
    out = tmp_path / "lg"
    assert league(out, f"{spec},factor", "--fallback", "wait") == 0
    row = json.loads((out / "results.jsonl").read_text())
    seats = [s for s, name in enumerate(row["lineup"]) if name == spec]
    assert all(row["fallbacks"][s] == 6 for s in seats)
    payload = json.loads((out / "replays" / "e000000.json").read_text())
    acts = [e for e in payload["events"] if e["kind"] == "act" and e["seat"] in seats]
    assert all(e["scripted"] and e["sentence"] == WAIT for e in acts)
    ladder = json.loads((out / "ladder.json").read_text())
    rows = {r["policy"]: r for r in ladder["policies"]}
    assert rows[spec]["ranked"] is False and rows[spec]["rank"] is None
    assert main(["verify", str(out)]) == 0
    capsys.readouterr()


def test_free_mode_records_whether_the_models_act_was_a_legal_row(server):
    game = played_game(1, 0)  # seat 0 stands in The Smithy with 40 coin; nails cost 5
    p = LLMPolicy("good", server.url, timeout=5.0, retry_floor=0.0)
    p.act(game, 0)
    assert p.records[-1]["admissible"] is True and p.records[-1]["mode"] == "free"
    p = LLMPolicy("unreadable", server.url, timeout=5.0, retry_floor=0.0)
    p.act(game, 0)
    assert p.records[-1]["admissible"] is False and not p.records[-1]["scripted"]
    assert is_admissible(game, 0, "I buy 2 nails from Smith Bram.")
    assert not is_admissible(game, 0, "I buy 3 nails from Smith Bram.")  # legal, not a row
    assert not is_admissible(game, 0, "I walk to The Docks.")  # no road from here


def test_quantiles_are_the_median_and_the_nearest_rank_95th_percentile():
    assert quantiles([]) is None
    assert quantiles([3.0]) == {"median": 3.0, "p95": 3.0}
    assert quantiles([4.0, 1.0, 2.0, 3.0]) == {"median": 2.5, "p95": 4.0}
    assert quantiles([float(k) for k in range(1, 101)]) == {"median": 50.5, "p95": 95.0}


def test_the_speed_bench_times_whole_turns_of_six_choosing_seats(server, capsys):
    from bench.llm import bench_llm

    before = len(server.by_model("choose-spread"))
    figures = bench_llm(f"llm:choose-spread@{server.url}#choose=admissible", 2)
    assert len(server.by_model("choose-spread")) - before == 1 + 2 * SEATS
    assert figures["fallbacks"] == 0 and figures["decisions_per_s"] > 0
    assert 0 <= figures["decision_median_s"] <= figures["decision_p95_s"]
    assert figures["first_token_median_s"] != figures["first_token_median_s"]  # NaN: unknown
