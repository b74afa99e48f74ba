"""Language-model seats: reading replies, the policy against a local
OpenAI-compatible server (every case of SENTENCES §20.1 and §21), concurrent turns, the league."""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path

import pytest
from conftest import needs_module
from fake_llm import FakeLLM, closed_port, good_reply

from agents import Decision, Factor, LLMPolicy, decide_turn, make_policy, play_episode
from agents.llm.seat import CORRECTIVE, parse_reply, system_prompt
from league.cli.guild import main
from sim import Game, GameConfig
from sim.rules.world import SEATS

needs_module("httpx", "'guild-game[llm]'")

GOOD_ACTION = "I wait by the well and listen."


@pytest.fixture(scope="module")
def server():
    with FakeLLM(lifetime=120) as s:
        yield s


def policy(server: FakeLLM, model: str, **kw) -> LLMPolicy:
    kw.setdefault("timeout", 5.0)
    kw.setdefault("retry_floor", 0.0)
    return LLMPolicy(model, server.url, **kw)


def decide(server: FakeLLM, model: str, seed: int = 3, **kw) -> tuple[Game, LLMPolicy, Decision]:
    game = Game(GameConfig(seed=seed, turns=6))
    p = policy(server, model, **kw)
    return game, p, p.act(game, 0)


# --- reading a reply (§20.1) ---------------------------------------------------------------------

def test_parse_reply_extracts_the_object_from_fences_and_prose():
    obj = '{"action": "I go to the Docks.", "say": "hi", "notes": "n", "extra": 1}'
    for text in (obj, f"```json\n{obj}\n```", f"Here you go: {obj} Cheers."):
        reply, why = parse_reply(text)
        assert why == "" and reply is not None
        assert (reply.action, reply.say, reply.notes) == ("I go to the Docks.", "hi", "n")


@pytest.mark.parametrize("text", ["no braces at all", '{"action": "I wait", }', "[1, {}]",
                                  '{"say": "hi"}', '{"action": 7}', '{"action": " \\n\\t "}',
                                  "} backwards {"])
def test_parse_reply_refuses_invalid_replies(text):
    reply, why = parse_reply(text)
    assert reply is None and why


def test_parse_reply_cleans_and_caps_fields_by_rune():
    reply, _ = parse_reply(json.dumps({
        "action": "\t I\nwait\r " + "é" * 300, "say": 42, "notes": "🙂" * 700}))
    assert reply is not None
    assert reply.action.startswith("I wait ") and len(reply.action) == 240
    assert reply.action.endswith("é…")
    assert reply.say == ""  # not a string: counts as empty
    assert len(reply.notes) == 600 and reply.notes == "🙂" * 599 + "…"
    short, _ = parse_reply('{"action": "I wait.", "notes": "  keep  "}')
    assert short is not None and short.notes == "keep" and short.say == ""


def test_system_prompt_is_the_same_for_every_seat_but_the_alias():
    game = Game(GameConfig(seed=5))
    texts = [system_prompt(game, s) for s in range(SEATS)]
    for s, text in enumerate(texts):
        assert game.aliases[s] in text
        assert texts[0].replace(game.aliases[0], "X") == text.replace(game.aliases[s], "X")
    assert "JSON" in texts[0] and "Guildmaster Vell" in texts[0] and "Cutpurse Alley" in texts[0]


# --- building from a spec -----------------------------------------------------------------------

def test_make_policy_builds_from_an_llm_spec_with_options(tmp_path: Path):
    guidance = tmp_path / "guide.txt"
    guidance.write_text("Be bold.", encoding="utf-8")
    p = make_policy(f"llm:my@model@http://127.0.0.1:9/v1/#timeout=2.5&max_tokens=50"
                    f"&temperature=0.2&key_env=MY_KEY&retry_floor=1&prompt_file={guidance}")
    assert isinstance(p, LLMPolicy)
    assert (p.model, p.base_url, p.timeout, p.max_tokens, p.temperature, p.api_key_env) == (
        "my@model", "http://127.0.0.1:9/v1", 2.5, 50, 0.2, "MY_KEY")
    assert p.retry_timeout == 1.25 and p.prompt == "Be bold."
    assert make_policy({"name": "llm:m@http://h/v1", "timeout": 3}).timeout == 3
    assert LLMPolicy("m", "http://h/v1").retry_timeout == 12.0  # half of 24, at least 8
    assert LLMPolicy("m", "http://h/v1", prompt="x" * 5000).prompt == "x" * 4000


@pytest.mark.parametrize("spec", ["llm:", "llm:model", "llm:model@ftp://h", "llm:@http://h/v1",
                                  "llm:m@http://h/v1#nope=1", "llm:m@http://h/v1#timeout=abc",
                                  "llm:m@http://h/v1#timeout=0", "llm:m@http://h/v1#prompt_file=/no"])
def test_bad_llm_specs_are_one_clear_error(spec):
    with pytest.raises(ValueError, match="llm"):
        make_policy(spec)


# --- each reply case against the local server (§20.1, §21) --------------------------------------

def test_a_good_reply_is_played_with_its_say_and_notes(server, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    game, p, d = decide(server, "good", prompt="Hoard salt.", temperature=0.3, max_tokens=77)
    want = good_reply(game.observation_text(0))
    assert d == Decision(want["action"], want["say"], want["notes"], scripted=False)
    req = server.by_model("good")[-1]
    body = req["body"]
    assert body["max_tokens"] == 77 and body["temperature"] == 0.3
    assert [m["role"] for m in body["messages"]] == ["system", "user"]
    assert body["messages"][0]["content"] == system_prompt(game, 0)
    assert req["user"] == game.observation_text(0, prompt="Hoard salt.")
    assert "Hoard salt." in req["user"] and server.requests_auth is None
    rec = p.records[-1]
    assert rec["turn"] == 0 and rec["seat"] == 0 and rec["user"] == req["user"]
    assert len(rec["attempts"]) == 1 and rec["attempts"][0]["reply"]
    assert rec["attempts"][0]["usage"]["completion_tokens"] == 17
    assert rec["action"] == want["action"] and rec["scripted"] is False


def test_the_api_key_comes_from_the_named_environment_variable(server, monkeypatch):
    monkeypatch.setenv("GUILD_TEST_KEY", "sekrit")
    _, p, _ = decide(server, "good", api_key_env="GUILD_TEST_KEY")
    assert server.requests_auth == "Bearer sekrit"
    assert "sekrit" not in json.dumps(p.records)


@pytest.mark.parametrize("model", ["fenced", "prose"])
def test_replies_in_fences_or_prose_are_read_at_once(server, model):
    game, p, d = decide(server, model)
    assert d.action == GOOD_ACTION and not d.scripted
    assert len(p.records[-1]["attempts"]) == 1


@pytest.mark.parametrize("model", ["malformed-once", "e500-once"])
def test_one_invalid_reply_or_failed_request_is_retried_with_a_corrective_line(server, model):
    game, p, d = decide(server, model)
    assert d.action == GOOD_ACTION and not d.scripted
    first, retry = server.by_model(model)[-2:]
    assert not first["retry"] and retry["retry"]
    assert retry["user"] == first["user"] + "\n\n" + CORRECTIVE
    attempts = p.records[-1]["attempts"]
    assert [a["retry"] for a in attempts] == [False, True]
    assert attempts[0]["error"] and "error" not in attempts[1]


@pytest.mark.parametrize("model", ["malformed", "noaction", "empty-action", "e500"])
def test_a_second_failure_plays_factor_marked_scripted(server, model):
    game, p, d = decide(server, model)
    assert d == Decision(Factor().act(game, 0), scripted=True)
    assert len(server.by_model(model)) >= 2
    rec = p.records[-1]
    assert rec["scripted"] and len(rec["attempts"]) == 2
    assert all(a["error"] for a in rec["attempts"])
    acts = game.play_turn([d.action] + [Factor().act(game, s) for s in range(1, SEATS)],
                          scripted=[d.scripted] + [True] * 5)
    assert acts[0]["scripted"] is True


def test_an_overlong_reply_is_capped_with_an_ellipsis(server):
    _, p, d = decide(server, "long")
    assert len(d.action) == 240 and d.action.endswith("…") and d.action.startswith("I wait")
    assert len(d.say) == 160 and d.say.endswith("…")
    assert len(d.notes) == 600 and "\n" not in d.notes and "\t" not in d.notes
    assert not d.scripted and len(p.records[-1]["attempts"]) == 1


def test_an_unreadable_but_valid_action_is_played_and_explained_next_turn(server):
    game, p, d = decide(server, "unreadable")
    assert d.action == "I contemplate my options." and not d.scripted
    assert len(server.by_model("unreadable")) == 1 or not server.by_model("unreadable")[-1][
        "retry"]
    acts = game.play_turn([d.action] + [Factor().act(game, s) for s in range(1, SEATS)])
    assert acts[0]["intent"] == "none" and acts[0]["reason"] != "ok"
    assert 'YOUR LAST SENTENCE: "I contemplate my options." - ' in game.observation_text(0)


def test_a_slow_reply_past_the_timeout_falls_back_in_bounded_time(server):
    game, p, d = decide(server, "slow", timeout=0.4)  # the server would take 3 s
    assert d.scripted and d.action == Factor().act(game, 0)
    assert [a["error"] for a in p.records[-1]["attempts"]] == ["no reply within 0.4 s",
                                                               "no reply within 0.2 s"]


def test_a_refused_connection_falls_back_to_factor():
    p = LLMPolicy("good", f"http://127.0.0.1:{closed_port()}/v1", timeout=2, retry_floor=0)
    game = Game(GameConfig(seed=4))
    d = p.act(game, 2)
    assert d == Decision(Factor().act(game, 2), scripted=True)
    errors = [a["error"] for a in p.records[-1]["attempts"]]
    assert len(errors) == 2 and all("ConnectError" in e for e in errors)


def test_refused_credentials_switch_the_service_off_for_the_episode(server):
    game, p, d = decide(server, "e401")
    assert d.scripted and p.disabled
    assert len(server.by_model("e401")) == 1  # no retry
    n = len(server.requests)
    d2 = p.act(game, 1)
    assert d2 == Decision(Factor().act(game, 1), scripted=True)
    assert len(server.requests) == n  # no network wait
    assert p.records[-1]["attempts"] == [] and "refused" in p.records[-1]["error"]
    p.reset(0)
    assert not p.disabled and p.records == []


# --- whole episodes and concurrency (RULES §6.6) ------------------------------------------------

def turn_groups(requests: list[dict]) -> dict[int, list[dict]]:
    out: dict[int, list[dict]] = {}
    for r in requests:
        turn = int(r["user"].split(" of ", 1)[0].removeprefix("Turn "))
        out.setdefault(turn, []).append(r)
    return out


def test_a_whole_episode_with_six_llm_seats_completes(server):
    before = len(server.by_model("good"))
    seats = [policy(server, "good") for _ in range(SEATS)]
    game = play_episode(GameConfig(seed=8, turns=6), seats)
    assert game.done and game.results()["turns"] == 6
    acts = [e for e in game.events if e["kind"] == "act"]
    assert len(acts) == 36 and not any(e["scripted"] for e in acts)
    assert all(e["sentence"] == GOOD_ACTION and e["say"].endswith(" is here.") for e in acts)
    assert acts[-1]["text"] == "seen turn 6"  # notes kept and stored
    assert len(server.by_model("good")) - before == 36
    records = [r for p in seats for r in p.take_records()]
    assert sorted((r["turn"], r["seat"]) for r in records) == [
        (t, s) for t in range(6) for s in range(SEATS)]
    assert "seen turn 5" in next(r["user"] for r in records if r["turn"] == 5)


def test_the_six_requests_of_a_turn_overlap(server):
    shared = policy(server, "unhurried")  # one object for all six seats is fine too
    game = play_episode(GameConfig(seed=9, turns=6), [shared] * SEATS)
    assert game.done
    groups = turn_groups(server.by_model("unhurried"))
    assert sorted(groups) == [1, 2, 3, 4, 5, 6]
    for turn, reqs in groups.items():
        assert len(reqs) == SEATS
        assert max(r["start"] for r in reqs) < min(r["end"] for r in reqs), turn
    assert server.max_in_flight >= SEATS  # (how much time that saves is for bench/)


def test_decide_turn_mixes_threaded_and_plain_seats_and_raises_errors(server):
    game = Game(GameConfig(seed=2))
    seats = [policy(server, "good"), Factor(), policy(server, "good"), Factor(), Factor(),
             Factor()]
    answers = decide_turn(game, seats)
    assert isinstance(answers[0], Decision) and answers[1] == Factor().act(game, 1)

    class Boom:
        concurrent = True

        def act(self, game, seat):
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        decide_turn(game, [Boom(), policy(server, "good")] + [Factor()] * 4)


# --- the league ---------------------------------------------------------------------------------

def test_a_league_refuses_an_endpoint_where_nothing_listens_before_any_episode(tmp_path, capsys):
    # A wrong URL or a server not started: said at once, in one line, nothing played.
    port = closed_port()
    out = tmp_path / "lg"
    assert league(out, f"llm:good@http://127.0.0.1:{port}/v1,factor") == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert f"nothing answers at http://127.0.0.1:{port}/v1 (ConnectionRefusedError" in err
    assert "start the server or fix the URL" in err
    assert not (out / "results.jsonl").exists() and not (out / "replays").exists()


def test_a_finished_league_is_ranked_again_with_its_server_gone_but_not_extended(
        tmp_path, capsys):
    # Re-running a finished league (for a --report) plays nothing: no server is needed. One
    # that has episodes to play still refuses before playing them, and changes nothing.
    out = tmp_path / "lg"
    with FakeLLM(lifetime=60) as gone:
        spec = f"llm:good@{gone.url},factor"
        assert league(out, spec) == 0
    capsys.readouterr()
    assert league(out, spec, "--report") == 0
    assert (out / "report.html").stat().st_size > 0
    assert "nothing answers" not in capsys.readouterr().err
    def files() -> dict:
        return {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}

    before = files()
    for more in (["--episodes", "2"], []):  # more episodes; then a lost replay to play again
        if not more:
            (out / "replays" / "e000000.json").unlink()
            before = files()
        assert league(out, spec, *more) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and f"nothing answers at {gone.url}" in err
        assert files() == before  # refused before anything is written or played


def test_guild_evaluate_refuses_an_endpoint_where_nothing_listens(capsys):
    # Its seat would play factor's every act, and the figures would measure factor.
    port = closed_port()
    code = main(["evaluate", f"llm:good@http://127.0.0.1:{port}/v1", "--seeds", "0..1"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1
    assert err.startswith("guild evaluate: error: ")
    assert f"nothing answers at http://127.0.0.1:{port}/v1" in err


def test_guild_evaluate_plays_a_listening_endpoint(server, capsys):
    before = len(server.by_model("good"))
    assert main(["evaluate", f"llm:good@{server.url}", "--seeds", "0..1", "--turns", "6"]) == 0
    out = capsys.readouterr().out
    assert "paired difference" in out and "12 games per side" in out
    assert len(server.by_model("good")) - before == 12 * 6  # its seat, each game, each turn


@pytest.mark.parametrize("model", ["e401", "e500"])
def test_guild_evaluate_says_when_the_fallback_played_not_the_model(server, model, capsys):
    # An endpoint that answers every request with an error: every decision is factor's, so
    # the figures measure factor; evaluate says so, and fails, past the league's 10%.
    code = main(["evaluate", f"llm:{model}@{server.url}", "--seeds", "0..1", "--turns", "6"])
    captured = capsys.readouterr()
    assert code == 1 and "paired difference +0.000" in captured.out  # factor against factor
    assert captured.out.startswith(f"evaluate: llm:{model}@{server.url} in factor's place")
    err = captured.err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(
        f"evaluate: error: llm:{model}@{server.url}: its fallback (factor) played 72 of its 72 "
        "decisions (100.0%; the first: ")
    assert err[0].endswith("), not the model; over 10%, the figures measure the fallback (a "
                           "league leaves such a policy unranked)")
    assert ("refused the credentials" if model == "e401" else "500") in err[0]


def test_guild_evaluate_shows_a_servers_words_inert(server, capsys):
    # The first failure is the server's text: its escape sequences cleared the terminal and
    # its bidi override reordered the line
    code = main(["evaluate", f"llm:e500-ansi@{server.url}", "--seeds", "0..1", "--turns", "6"])
    err = capsys.readouterr().err
    assert code == 1 and len(err.strip().splitlines()) == 1
    assert not any(c in err for c in "\x1b\u202e\x07"), repr(err)
    assert "\\x1b[2J\\x1b[31mred\\u202e\\x07" in err, err


def test_guild_evaluate_says_nothing_when_the_model_played(server, capsys):
    # "malformed-once": the first request of each decision is unreadable, the retry is good;
    # the model plays every decision, and nothing is said.
    assert main(["evaluate", f"llm:malformed-once@{server.url}", "--seeds", "0..1",
                 "--turns", "6"]) == 0
    assert "fallback" not in capsys.readouterr().err


def test_a_listening_endpoint_passes_the_probe_whatever_it_answers(server):
    # A connection accepted says a server is there; nothing is sent to it.
    p = policy(server, "e500")
    before = len(server.requests)
    p.probe()
    assert p.records == [] and len(server.requests) == before


def test_the_probe_reads_nothing_so_a_silent_server_costs_no_time():
    # A server that accepts and never answers (or answers without end) passes at once: the
    # probe only connects; its seat's timeouts and fallback deal with the replies.
    with socket.create_server(("127.0.0.1", 0)) as silent:
        port = silent.getsockname()[1]
        p = LLMPolicy("m", f"http://127.0.0.1:{port}/v1", timeout=5)
        t0 = time.monotonic()
        p.probe()
        assert time.monotonic() - t0 < 2


def test_an_endpoint_with_credentials_is_refused_without_showing_them(capsys):
    # A user and password in the URL would be recorded wherever the spec is (and sent as Basic
    # auth): refused before anything is probed, the URL shown without them.
    port = closed_port()
    code = main(["evaluate", f"llm:m@http://bob:s3cret@127.0.0.1:{port}/v1", "--seeds", "0..1"])
    err = capsys.readouterr().err
    assert code == 2 and "s3cret" not in err and "bob" not in err and len(err.splitlines()) == 1
    assert f"the base URL 'http://127.0.0.1:{port}/v1' may not hold a user or password" in err
    assert "key_env" in err and "nothing answers" not in err



def league(out: Path, policies: str, *extra: str) -> int:
    return main(["league", "--policies", policies, "--episodes", "1", "--turns", "6",
                 "--workers", "1", "--seed", "4", "--out", str(out), *extra])


def test_the_league_runs_llm_seats_concurrently_and_records_prompts_and_replies(
        server, tmp_path: Path, capsys):
    before = len(server.by_model("slowish"))
    out = tmp_path / "lg"
    assert league(out, f"llm:slowish@{server.url}") == 0
    row = json.loads((out / "results.jsonl").read_text())
    assert row["turns"] == 6 and row["fallbacks"] == [0] * 6 and row["faults"] == [{}] * 6
    payload = json.loads((out / "replays" / "e000000.json").read_text())
    recs = payload["llm"]
    assert [(r["turn"], r["seat"]) for r in recs] == [(t, s) for t in range(6)
                                                     for s in range(SEATS)]
    acts = [e for e in payload["events"] if e["kind"] == "act"]
    by = {(e["turn"], e["seat"]): e for e in acts}
    for r in recs:
        assert r["model"] == "slowish" and r["attempts"][0]["usage"]["total_tokens"] > 0
        assert by[(r["turn"], r["seat"])]["sentence"] == r["action"]
        assert r["user"].startswith(f"Turn {r['turn'] + 1} of 6.")
    groups = turn_groups(server.by_model("slowish")[before:])
    assert all(max(q["start"] for q in g) < min(q["end"] for q in g) for g in groups.values())
    assert main(["verify", str(out)]) == 0
    assert "all 1 episodes verify" in capsys.readouterr().out


def test_league_llm_faults_fall_back_and_still_verify(server, tmp_path: Path, capsys):
    failing = f"llm:e500@{server.url}#retry_floor=0"  # every request: HTTP 500
    slow = f"llm:slowish@{server.url}"
    assert league(tmp_path / "a", f"{failing},factor") == 0
    row = json.loads((tmp_path / "a" / "results.jsonl").read_text())
    llm_seats = [s for s, name in enumerate(row["lineup"]) if name == failing]
    assert llm_seats and all(row["fallbacks"][s] == 6 for s in llm_seats)
    payload = json.loads((tmp_path / "a" / "replays" / "e000000.json").read_text())
    assert all(e["scripted"] for e in payload["events"] if e["kind"] == "act")
    assert all(r["scripted"] for r in payload["llm"])
    # A decision timeout shorter than the server's answer: a fault, factor plays it.
    assert league(tmp_path / "b", f"{slow},factor", "--decision-timeout", "0.1") == 0
    row = json.loads((tmp_path / "b" / "results.jsonl").read_text())
    assert any(f.get("timeout") for f in row["faults"])
    assert "faulted (timeout" in capsys.readouterr().err
    for d in ("a", "b"):
        assert main(["verify", str(tmp_path / d)]) == 0
