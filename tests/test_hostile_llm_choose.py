"""The choosing mode of language-model seats against hostile users and broken endpoints.

Each test asserts the behaviour the project's rules ask for: a reply never crashes the seat,
bad input is a one-line ValueError, time and memory are bounded, figures and exports stay right.
The defects a hostile review found are pinned here beside the behaviour that was already right.
"""

from __future__ import annotations

import contextlib
import json
import math
import threading
import time
import types
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import fake_llm
import pytest
from conftest import needs_module
from fake_llm import FakeLLM
from hypothesis import given, settings
from hypothesis import strategies as st
from test_llm_choose import CHOICES, chooser, expand, league

from agents import make_policy
from agents.baselines.rules import WAIT
from agents.baselines.scripted import Factor
from agents.llm import local
from agents.llm import local_stats as stats_mod
from agents.llm.choose import (
    admissible,
    choice_lines,
    choose_user_prompt,
    is_admissible,
    parse_choice,
    shown_labels,
)
from agents.llm.client import ChatClient
from league.cli.export_sft import chosen_number
from league.cli.guild import main
from sim import Game, GameConfig
from sim.codec.action_table import semantic
from sim.language.parser import parse
from sim.rules.world import SEATS

needs_module("httpx", "'guild-game[llm]'")

@pytest.fixture(scope="module")
def server():
    with FakeLLM(lifetime=180) as s:
        yield s


def behaviour(monkeypatch, name: str, content: str) -> str:
    """A fake model ``name`` that answers ``content`` to every request (first and retry)."""
    monkeypatch.setitem(fake_llm.BEHAVIOURS, name, ((200, content, 0.0), (200, content, 0.0)))
    return name


def seat_acts(out: Path, spec: str) -> tuple[dict, list[int], list[dict]]:
    """The results line of the one-episode league in ``out``, the seats ``spec`` held and
    their act events."""
    row = json.loads((out / "results.jsonl").read_text())
    seats = [s for s, name in enumerate(row["lineup"]) if name == spec]
    acts = [e for e in replay_of(out)["events"] if e["kind"] == "act" and e["seat"] in seats]
    return row, seats, acts


def replay_of(out: Path) -> dict:
    return json.loads((out / "replays" / "e000000.json").read_text())


# --- parse_choice: odd JSON ------------------------------------------------------------------

@pytest.mark.parametrize("text,want", [
    ('{"action": 2, "action": 3}', 3),              # duplicate keys: JSON's last one wins
    ('{"action": 9, "action": 2}', 2),
    ('{"action": 2, "action": 9}', None),
    ('{"action": NaN}', None), ('{"action": Infinity}', None), ('{"action": -Infinity}', None),
    ('{"action": -0}', None), ('{"action": 1e0}', None), ('{"action": 2.0}', None),
    ('{"action": true}', None), ('{"action": false}', None), ('{"action": {}}', None),
    ('{"action": "+2"}', None), ('{"action": "-1"}', None), ('{"action": "2.0"}', None),
    ('{"action": " 2 "}', 2), ('{"action": "\\u0032"}', 2), ('{"action": "0002"}', 2),
    ('{"action": "\\u0662"}', None),                # an Arabic-Indic two in a string
    ('{"action": "\\ud800"}', None), ('{"action": 1, "say": "\\ud800"}', 1),
    ("", None), ("   ", None), ("\n\t\r ", None), ("\ufeff", None), ("null", None),
    ('"2"', None), ("[2]", None), ("{}", None), ('{"Action": 2}', None),
    ('{"action": "I WALK   TO the docks. "}', 2), ('{"action": "walk to the chapel"}', 3),
    ('{"action": "I walk to The Docks.."}', None), ('{"action": "I walk to The Docks"}', 2),
    ('{"action": 3, "say": ' + '"x"' * 3 + "}", 3),   # broken JSON after a complete action
    ('{"action": 3, "say": "a}b"', 3),
])
def test_odd_json_is_read_as_its_choice_or_refused(text, want):
    choice, why = parse_choice(text, CHOICES)
    if want is None:
        assert choice is None and why
    else:
        assert choice is not None and why == "" and choice.number == want
        assert choice.action == CHOICES[want - 1]


@pytest.mark.parametrize("text", [
    '{"action": 1}{"action": 3}', '{"action": 1}\n{"action": 3}', '[{"action": 3}, 1]',
    '{"x": {"action": 2}}', '{"action": 1, "x": {"action": 3}}', 'x' * 10_000 + '{"action": 1}',
    '{"say": "' + "\\u00e9" * 3000 + '", "action": 2}', '{"action": ' + "3" * 10 + "}",
])
def test_ambiguous_or_huge_replies_never_raise_and_name_only_a_listed_choice(text):
    choice, why = parse_choice(text, CHOICES)
    assert (choice is None) == bool(why)
    if choice is not None:
        assert choice.action == CHOICES[choice.number - 1]
        json.dumps([choice.action, choice.say, choice.notes])


@settings(max_examples=300, deadline=None)
@given(n=st.integers(1, 130), data=st.data())
def test_every_prefix_of_a_json_reply_reads_as_its_choice_or_as_none(n, data):
    """A reply cut off anywhere never names another choice (numbers, digit strings, sentences
    and labels; with say and notes, escaped or not, compact or indented)."""
    k = data.draw(st.integers(1, n))
    choices = [f"I do thing {j}." for j in range(1, n + 1)]
    answer = data.draw(st.sampled_from([k, str(k), choices[k - 1], f"do thing {k}"]))
    fields: dict = {"action": answer}
    for extra in ("say", "notes"):
        if data.draw(st.booleans()):
            fields[extra] = data.draw(st.text(max_size=25))
    text = json.dumps(fields, ensure_ascii=data.draw(st.booleans()),
                      indent=data.draw(st.sampled_from([None, 1])))
    assert parse_choice(text, choices)[0].number == k
    for i in range(len(text)):
        choice, why = parse_choice(text[:i], choices)
        assert choice is None or choice.number == k, (text, i)


@pytest.mark.parametrize("text", [
    '{"a": ' + "[" * 2000 + "]" * 2000 + ', "action": 1}',
    '{"action": 1, "say": ' + '{"":' * 1100 + "1" + "}" * 1100 + "}",
])
def test_a_deeply_nested_reply_does_not_raise(text):
    choice, why = parse_choice(text, CHOICES)
    assert choice is None or choice.number == 1


def test_a_bare_decimal_is_not_a_choice():
    assert parse_choice("2.5", CHOICES)[0] is None


def test_a_reply_repeating_a_shown_label_is_read_as_that_choice():
    game = Game(GameConfig(seed=1))  # seat 0 stands in The Smithy, before Smith Bram
    choices = admissible(game, 0)
    want = choices.index("I buy 2 nails from Smith Bram.") + 1
    assert "buy 1/2 nails" in choose_user_prompt(game, 0, choices)  # as the model reads it
    shown = shown_labels(game, 0, choices)  # what the seat passes: the labels it listed
    choice, why = parse_choice('{"action": "buy 2 nails"}', choices, shown)
    assert choice is not None and choice.number == want, why


# --- the seat against a hostile endpoint -----------------------------------------------------

def test_a_deeply_nested_reply_plays_the_fallback(server, monkeypatch):
    deep = '{"a": ' + "[" * 2000 + "]" * 2000 + "}"  # shorter than MAX_REPLY_CHARS
    model = behaviour(monkeypatch, "hostile-deep", deep)
    game = Game(GameConfig(seed=2))
    p = chooser(server, model, fallback="wait")
    d = p.act(game, 0)
    assert d.scripted and d.action == WAIT
    json.dumps(p.records)


def test_hostile_replies_never_play_an_act_outside_the_choices(server, monkeypatch):
    game = Game(GameConfig(seed=3))
    choices = admissible(game, 0)
    for n, content in enumerate([
            '{"action": 0}', '{"action": 99999999999}', '{"action": "I rob Gizmo."}',
            '{"action": "I buy 3 nails from Smith Bram."}', "\x00" * 100, "\ud800",
            '{"action": [' + "1," * 5000 + "1]}", "9" * 20_000]):
        model = behaviour(monkeypatch, f"hostile-{n}", content)
        p = chooser(server, model, fallback="wait")
        d = p.act(game, 0)
        assert d.scripted and d.action == WAIT, content[:40]
        assert d.action in choices and json.dumps(p.records)


def test_without_talk_a_say_the_model_adds_is_not_spoken(server, monkeypatch):
    reply = '{"action": 1, "say": "Gizmo, give me all your coin", "notes": "x"}'
    model = behaviour(monkeypatch, "chatty", reply)
    game = Game(GameConfig(seed=1))
    d = chooser(server, model, talk=False).act(game, 0)
    assert d.action == admissible(game, 0)[0] and not d.scripted
    assert (d.say, d.notes) == ("", "")


# --- spec options ----------------------------------------------------------------------------

@pytest.mark.parametrize("option,name", [
    ("talk=maybe", "talk"), ("talk=", "talk"), ("choose=", "choose"),
    ("choose=Admissible", "choose"), ("fallback=WAIT", "fallback"), ("fallback=", "fallback"),
    ("max_tokens=1e3", "max_tokens"), ("timeout=-1", "timeout"), ("timeout=0", "timeout"),
    ("bogus=1", "bogus"), ("talk", "talk"),
])
def test_a_bad_spec_option_is_a_one_line_value_error(server, option, name):
    with pytest.raises(ValueError, match=name) as e:
        make_policy(f"llm:choose-first@{server.url}#choose=admissible&{option}")
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("option", ["temperature=nan", "temperature=inf", "timeout=nan",
                                    "timeout=inf", "retry_floor=nan"])
def test_a_non_finite_number_option_is_refused(server, option):
    name = option.split("=")[0]
    with pytest.raises(ValueError, match=name):
        make_policy(f"llm:choose-first@{server.url}#choose=admissible&{option}")


# --- llm:local options (no server is started: the pool is stubbed) ---------------------------

class ReachedPoolError(Exception):
    """The spec got as far as starting the servers."""


@pytest.fixture
def gguf(tmp_path: Path, monkeypatch) -> Path:
    """A file that looks like a GGUF model, llama-cpp-python seen as installed, no servers."""
    path = tmp_path / "m.gguf"
    path.write_bytes(b"GGUF" + bytes(28))
    monkeypatch.setattr(local, "importlib", types.SimpleNamespace(
        util=types.SimpleNamespace(find_spec=lambda name: object())))

    def pool_for(model, **kw):
        raise ReachedPoolError(kw)

    monkeypatch.setattr(local, "pool_for", pool_for)
    return path


def test_local_defaults_choose_without_talk_or_cache(gguf, monkeypatch):
    seen: dict = {}

    def pool_for(model, **kw):
        seen.update(kw)
        return types.SimpleNamespace(servers=[types.SimpleNamespace(
            url="http://127.0.0.1:9/v1", model=model)])

    monkeypatch.setattr(local, "pool_for", pool_for)
    p = local.from_spec(f"local@{gguf}")
    assert (p.choose, p.talk, p.max_tokens) == ("admissible", False,
                                                local.LOCAL_CHOOSE_MAX_TOKENS)
    assert seen["cache"] is False and seen["slots"] == 1 and seen["threads"] >= 1
    p = local.from_spec(f"local@{gguf}#choose=free&cache=no&talk=yes&threads=3")
    assert (p.choose, p.talk, seen["cache"], seen["threads"]) == ("free", True, False, 3)


@pytest.mark.parametrize("option,name", [
    ("cache=maybe", "cache"), ("cache=", "cache"), ("threads=0", "threads"),
    ("threads=two", "threads"), ("slots=0", "slots"), ("ctx=100", "ctx"),
    ("choose=menu", "choose"), ("port=0", "port"), ("port=70000", "port"),
])
def test_a_bad_local_option_is_refused_before_any_server_starts(gguf, option, name):
    with pytest.raises(ValueError, match=name):
        local.from_spec(f"local@{gguf}#{option}")


@pytest.mark.parametrize("option,name", [
    ("fallback=random", "fallback"), ("timeout=-1", "timeout"),
    ("response_format=xml", "response_format"),
])
def test_a_bad_seat_option_is_refused_before_the_server_starts(gguf, option, name):
    with pytest.raises(ValueError, match=name):
        local.from_spec(f"local@{gguf}#{option}")


@pytest.mark.parametrize("option", ["port=65535", "port=65534&slots=2"])
def test_the_highest_ports_are_accepted(gguf, option):
    with pytest.raises(ReachedPoolError):
        local.from_spec(f"local@{gguf}#{option}")


# --- the streamed client ---------------------------------------------------------------------

@contextlib.contextmanager
def sse_server(script: list, content_type: str = "text/event-stream") -> Iterator[str]:
    """A server answering every POST with ``script``: strings or bytes written as they come,
    floats slept. The base URL."""

    def handle(h: BaseHTTPRequestHandler, body: dict, stop: threading.Event) -> None:
        h.send_response(200)
        h.send_header("Content-Type", content_type)
        h.end_headers()
        for item in script:
            if isinstance(item, float):
                time.sleep(item)
                continue
            h.wfile.write(item if isinstance(item, bytes) else item.encode())
            h.wfile.flush()

    with fake_llm.endpoint(handle, protocol="HTTP/1.0") as url:
        yield url


def data(obj: object) -> str:
    return f"data: {json.dumps(obj)}\n\n"


def piece(text: str) -> str:
    return data({"choices": [{"delta": {"content": text}}]})


def stream(url: str, limit: float = 2.0) -> tuple[str | None, dict]:
    chat = ChatClient(url)
    try:
        return chat.stream({"model": "m", "messages": []}, {}, limit)
    finally:
        chat.close()


def test_odd_stream_chunks_are_skipped_and_the_pieces_joined():
    script = [": ping\n\n", "data: [1, 2]\n\n", "data: 5\n\n", 'data: "x"\n\n', "data: null\n\n",
              "data: NaN\n\n", "data: {not json\n\n", "event: error\n\n",
              data({"choices": "abc"}), data({"choices": [{"delta": "xyz"}]}),
              data({"choices": [{"delta": {"content": ["a"]}}]}),
              data({"choices": [{"delta": {"content": None}}]}),
              data({"choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 2}}),
              piece('{"action"'), 'data:{"choices":[{"delta":{"content":": 2}"}}]}\r\n\r\n',
              data({"usage": {"prompt_tokens": 9, "completion_tokens": True},
                    "timings": {"cache_n": 4}}),
              "data: [DONE]\n\n"]
    with sse_server(script) as url:
        content, attempt = stream(url)
    assert content == '{"action": 2}' and attempt["pieces"] == 2
    assert attempt["usage"] == {"prompt_tokens": 9, "cached_tokens": 4}
    assert isinstance(attempt["first_token"], float) and "error" not in attempt
    assert parse_choice(content, CHOICES)[0].number == 2
    json.dumps(attempt)


def test_a_stream_without_pieces_is_an_empty_reply_not_a_choice():
    with sse_server([data({"usage": {"prompt_tokens": 3}}), "data: [DONE]\n\n"]) as url:
        content, attempt = stream(url)
    assert content == "" and "first_token" not in attempt and attempt["pieces"] == 0
    assert parse_choice(content, CHOICES)[0] is None


def test_a_deeply_nested_stream_line_does_not_raise():
    with sse_server(["data: " + "[" * 100_000 + "\n\n", piece('{"action": 1}'),
                     "data: [DONE]\n\n"]) as url:
        content, attempt = stream(url)
    assert content in (None, '{"action": 1}')


def test_a_deeply_nested_response_body_does_not_raise():
    body = '{"choices": [{"message": {"content": "1"}}], "x": ' + "[" * 100_000 + "]" * 100_000
    with sse_server([body + "}"], content_type="application/json") as url:
        chat = ChatClient(url)
        try:
            content, attempt = chat.complete({"model": "m", "messages": []}, {}, 5.0)
        finally:
            chat.close()
    assert content is None and attempt["error"]


def test_a_trickled_line_is_cut_at_the_limit():
    with sse_server(["data: {"] + [0.1, " "] * 100) as url:  # 10 s of trickle
        t0 = time.perf_counter()
        content, attempt = stream(url, limit=0.3)
        took = time.perf_counter() - t0
    assert content is None and "0.3" in attempt["error"]
    assert took < 5, f"took {took:.1f} s for a 0.3 s limit against 10 s of trickle"


def test_a_huge_streamed_reply_is_bounded():
    with sse_server([piece("x" * 100_000)] * 40 + ["data: [DONE]\n\n"]) as url:
        content, attempt = stream(url)
    assert len(content or "") < 1_000_000 and len(attempt.get("reply", "")) < 1_000_000


# --- the prompt's choice lines -----------------------------------------------------------------

WORDS = st.sampled_from(["buy", "walk", "to", "Pier", "7", "1", "2", "12", "salt", "for",
                         "coins", "Gizmo", "Room", "x2", "3rd", "0"])


@settings(max_examples=400, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["buy", "walk", "offer", "hand"]),
                          st.lists(WORDS, min_size=1, max_size=5)), min_size=1, max_size=40))
def test_choice_lines_list_every_label_once_in_order_even_with_digits_in_names(entries):
    labels = [" ".join([verb, *rest]) for verb, rest in entries]
    lines = choice_lines(labels)
    assert expand(lines) == list(enumerate(labels, 1))


# --- export-sft ---------------------------------------------------------------------------------

def test_a_lone_surrogate_in_a_choosing_reply_does_not_break_export(server, monkeypatch,
                                                                      tmp_path, capsys):
    model = behaviour(monkeypatch, "surrogate",
                      '{"action": 1, "say": "hi \\ud800 there", "notes": "n\\udfff"}')
    spec = f"llm:{model}@{server.url}#choose=admissible"
    out = tmp_path / "lg"
    assert league(out, f"{spec},factor") == 0
    capsys.readouterr()
    main(["export-sft", str(out), "--out", str(tmp_path / "sft"), "--val-fraction", "0"])
    rows = (tmp_path / "sft" / "train.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(rows) == 6 * SEATS


def test_export_of_a_choosing_league_of_fallbacks_keeps_numbers_true(server, tmp_path, capsys):
    """Every row that answers with a number names the act that was played, among the choices
    of that turn; the others are sentences with the free prompt."""
    spec = f"llm:choose-out-of-range@{server.url}#choose=admissible&retry_floor=0"
    out = tmp_path / "lg"
    assert league(out, f"{spec},factor") == 0
    assert main(["export-sft", str(out), "--out", str(tmp_path / "sft"),
                 "--val-fraction", "0"]) == 0
    capsys.readouterr()
    payload = replay_of(out)
    acts = {(e["turn"], e["seat"]): e["sentence"] for e in payload["events"]
            if e["kind"] == "act"}
    recs = {(r["turn"], r["seat"]): r for r in payload["llm"]}
    rows = [json.loads(x) for x in (tmp_path / "sft" / "train.jsonl").read_text().splitlines()]
    numbered = 0
    for row in rows:
        key = (row["meta"]["turn"], row["meta"]["seat"])
        answer = json.loads(row["completion"][0]["content"])
        if isinstance(answer["action"], int):
            numbered += 1
            user = row["prompt"][1]["content"]
            assert key in recs and user == recs[key]["user"] and "YOUR CHOICES:" in user
            assert 1 <= answer["action"] <= recs[key]["choices"]
            assert row["meta"]["source"] == "replay" and row["meta"]["scripted"]
        else:
            assert answer["action"] == acts[key]
            assert "YOUR CHOICES:" not in row["prompt"][1]["content"]
    assert numbered > 0


def test_chosen_number_finds_the_choice_that_is_the_same_act():
    game = Game(GameConfig(seed=1))
    seat = 1
    sentence = Factor().act(game, seat)
    choices = admissible(game, seat)
    assert sentence not in choices and is_admissible(game, seat, sentence)
    st_ = game.state

    def meaning(text: str) -> tuple:
        return semantic(parse(game.world, st_.aliases, seat, st_.room[seat], st_.offers,
                              game.turn, text))

    want = [k for k, c in enumerate(choices, 1) if meaning(c) == meaning(sentence)]
    assert len(want) == 1
    got = chosen_number(game, seat, {"mode": "admissible"}, {"sentence": sentence})
    assert got == want[0]


# --- leagues and --fallback ----------------------------------------------------------------------

def test_a_spec_fallback_wait_is_played_or_refused_in_a_league(server, tmp_path, capsys):
    spec = f"llm:choose-out-of-range@{server.url}#choose=admissible&retry_floor=0&fallback=wait"
    out = tmp_path / "lg"
    rc = league(out, f"{spec},factor")
    err = capsys.readouterr().err
    if rc != 0:  # refusing the option with a clear line is right too
        assert "fallback" in err
        return
    row, seats, acts = seat_acts(out, spec)
    assert acts and all(e["scripted"] and e["sentence"] == WAIT for e in acts)


def test_a_spec_fallback_other_than_the_leagues_is_refused_in_one_line(server, tmp_path,
                                                                         capsys):
    spec = f"llm:choose-out-of-range@{server.url}#choose=admissible&retry_floor=0&fallback=factor"
    out = tmp_path / "lg"
    assert league(out, f"{spec},factor", "--fallback", "wait") == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "#fallback=factor" in err[0] and "--fallback factor" in err[0]
    assert not (out / "results.jsonl").exists()


def test_a_spec_fallback_equal_to_the_leagues_is_played(server, tmp_path, capsys):
    spec = f"llm:choose-out-of-range@{server.url}#choose=admissible&retry_floor=0&fallback=wait"
    out = tmp_path / "lg"
    assert league(out, f"{spec},factor", "--fallback", "wait") == 0
    capsys.readouterr()
    row, seats, acts = seat_acts(out, spec)
    assert acts and all(e["scripted"] and e["sentence"] == WAIT for e in acts)
    assert all(row["fallbackPlay"][s] == "wait" for s in seats)


# --- local_stats ------------------------------------------------------------------------------

ROW = {"id": "e000000", "lineup": ["llm:m@http://h/v1"] + ["factor"] * 5,
       "scores": [1.0] * 6, "fallbacks": [0] * 6, "wallTime": 1.0}
REPLAY = {"policyNames": ROW["lineup"], "results": {"scores": [1.0] * 6}, "events": [],
          "llm": [{"turn": 0, "seat": 0, "scripted": False, "mode": "admissible",
                   "admissible": True, "seconds": 0.5, "attempts": [{"reply": "1"}]}]}


def league_dir(root: Path, rows: list, replay: object) -> Path:
    d = root / "lg"
    (d / "replays").mkdir(parents=True)
    (d / "results.jsonl").write_text(
        "".join(r if isinstance(r, str) else json.dumps(r) + "\n" for r in rows))
    (d / "replays" / "e000000.json").write_text(
        replay if isinstance(replay, str) else json.dumps(replay))
    return d


def test_local_stats_of_a_small_league_dir(tmp_path):
    s = stats_mod.league_stats(league_dir(tmp_path, [ROW], REPLAY))
    assert (s["episodes"], s["seatEpisodes"], s["decisions"], s["replies"]) == (1, 1, 1, 1)
    assert s["admissibleShare"] == 1.0 and s["decisionSeconds"]["median"] == 0.5
    json.dumps(s)


@pytest.mark.parametrize("rows,replay", [
    (["\n", "not json\n", ROW], REPLAY),  # a bad line before the last (a torn last is left out)
    ([{**ROW, "id": "missing"}], REPLAY),
    ([{k: v for k, v in ROW.items() if k != "lineup"}], REPLAY),
])
def test_local_stats_names_an_unreadable_league_in_one_line(tmp_path, capsys, rows, replay):
    d = league_dir(tmp_path, rows, replay)
    assert stats_mod.main([str(d)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("local_stats: cannot read the league") and err.count("\n") == 1


@pytest.mark.parametrize("rows,replay", [
    (["5\n"], REPLAY),
    (["[]\n"], REPLAY),
    ([{**ROW, "lineup": [1, 2, 3, 4, 5, 6]}], REPLAY),
    ([{**ROW, "scores": []}], REPLAY),
    ([{**ROW, "wallTime": None}], REPLAY),
    ([{**ROW, "fallbacks": None}], REPLAY),
    ([ROW], "[]"),
    ([ROW], {**REPLAY, "llm": [5]}),
    ([ROW], {**REPLAY, "llm": [{"attempts": [5]}]}),
    ([ROW], {**REPLAY, "llm": [{"attempts": None}]}),
    ([ROW], {**REPLAY, "events": [5]}),
    ([], {**REPLAY, "llm": [{"seat": 9, "scripted": True}]}),
    (["[" * 100_000 + "\n"], REPLAY),
], ids=["int-row", "list-row", "int-lineup", "short-scores", "null-wall", "null-fallbacks",
        "list-replay", "int-record", "int-attempt", "null-attempts", "int-event",
        "seat-out-of-range", "deep-row"])
def test_local_stats_never_raises_on_malformed_files(tmp_path, capsys, rows, replay):
    d = league_dir(tmp_path, rows, replay)
    assert stats_mod.main([str(d)]) == 2
    assert capsys.readouterr().err.startswith("local_stats: cannot read the league")


def test_local_stats_reads_the_complete_lines_before_a_torn_one(tmp_path):
    d = league_dir(tmp_path, [ROW, '{"id": "e0000'], REPLAY)
    assert stats_mod.league_stats(d)["episodes"] == 1


def test_local_stats_counts_trusted_llm_seats(server, tmp_path, capsys):
    spec = f"trusted:llm:choose-spread@{server.url}#choose=admissible"
    out = tmp_path / "lg"
    assert league(out, f"{spec},factor") == 0
    capsys.readouterr()
    recs = replay_of(out)["llm"]
    assert len(recs) == 6 * 3
    s = stats_mod.league_stats(out)
    assert s["decisions"] == len(recs) and s["seatEpisodes"] == 3


def test_local_stats_fallback_share_of_a_seat_that_timed_out(server, tmp_path, capsys):
    spec = f"llm:unhurried@{server.url}#retry_floor=0"
    out = tmp_path / "lg"
    assert league(out, f"{spec},factor", "--decision-timeout", "0.2") == 0
    capsys.readouterr()
    row = json.loads((out / "results.jsonl").read_text())
    assert sum(row["fallbacks"]) == 6 * 3  # the league: all 18 decisions fell back
    share = stats_mod.league_stats(out)["fallbackShare"]
    assert share is not None and math.isclose(share, 1.0)
