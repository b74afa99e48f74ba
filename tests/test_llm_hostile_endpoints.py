"""Language-model seats against hostile endpoints, keys, URLs and files.

What a server sends is bounded in time (the whole exchange, however slowly the body trickles)
and in memory (the body, an error's body, a compressed body); the API key never reaches a
record however a server or the HTTP library echoes it, and a key a header cannot carry is one
line naming its variable; a spec's URL, ``key_env`` and ``prompt_file`` reach only what they
should; a local model the server cannot load is reported with the server's own last line.
Bounds on time are generous (a loaded two-core runner): a limit of 1 s must end within 20 s
against a server that would hold it for 40.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import threading
import time
import tracemalloc
import zlib
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest
from conftest import needs_module
from fake_llm import endpoint

from agents import LLMPolicy, make_policy
from agents.llm import local
from agents.llm.client import MAX_BODY_BYTES, ChatClient
from agents.llm.seat import MAX_PROMPT_FILE_BYTES
from sim import Game, GameConfig
from sim.rules.world import MAX_PROMPT_LEN

needs_module("httpx", "'guild-game[llm]'")

HOLD = 40.0  # seconds a stalling server holds on before giving up by itself
KEY_VAR = "GUILD_HOSTILE_KEY"


# --- a server that answers as each test says ---------------------------------------------------

def head(h: BaseHTTPRequestHandler, status: int, **headers: str) -> None:
    h.send_response(status)
    for name, value in headers.items():
        h.send_header(name.replace("_", "-"), value)
    h.end_headers()


def answer(h: BaseHTTPRequestHandler, status: int, data: bytes, **headers: str) -> None:
    head(h, status, Content_Length=str(len(data)), **headers)
    h.wfile.write(data)


def reply(content: str) -> bytes:
    return json.dumps({"choices": [{"message": {"role": "assistant",
                                                "content": content}}]}).encode()


def trickle(h: BaseHTTPRequestHandler, stop: threading.Event) -> None:
    """A byte every 0.2 s until the client leaves or ``HOLD`` seconds pass."""
    end = time.monotonic() + HOLD
    while time.monotonic() < end and not stop.wait(0.2):
        h.wfile.write(b" ")
        h.wfile.flush()


def chunked(h: BaseHTTPRequestHandler, pieces: Iterator[bytes]) -> None:
    for piece in pieces:
        h.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
    h.wfile.write(b"0\r\n\r\n")


def call(url: str, limit: float = 1.0, streamed: bool = False,
         headers: dict[str, str] | None = None) -> tuple[str | None, dict, float]:
    """One request by a fresh client: its text, its record and the seconds it took."""
    chat = ChatClient(url)
    t0 = time.monotonic()
    try:
        send = chat.stream if streamed else chat.complete
        content, attempt = send({"model": "m", "messages": []}, headers or {}, limit)
    finally:
        chat.close()
    return content, attempt, time.monotonic() - t0


# --- the time limit holds for the whole exchange ----------------------------------------------

def test_a_body_that_trickles_cannot_hold_a_decision_past_its_limit():
    def handle(h, body, stop):
        head(h, 200, Content_Type="application/json", Content_Length="100000000")
        trickle(h, stop)

    with endpoint(handle) as url:
        content, attempt, took = call(url, limit=1.0)
    assert content is None and attempt["error"] == "no reply within 1 s"
    assert took < 20, f"a 1 s limit took {took:.1f} s against a trickling body"


@pytest.mark.parametrize("streamed", [False, True])
def test_headers_that_trickle_cannot_hold_a_decision_past_its_limit(streamed):
    # each read had the whole limit of its own: a header line every 0.2 s held it for ever
    def handle(h, body, stop):
        h.wfile.write(b"HTTP/1.1 200 OK\r\n")
        end = time.monotonic() + HOLD
        while time.monotonic() < end and not stop.wait(0.2):
            h.wfile.write(b"X-Slow: 1\r\n")
            h.wfile.flush()

    with endpoint(handle) as url:
        content, attempt, took = call(url, limit=1.0, streamed=streamed)
    assert content is None and attempt["error"] == "no reply within 1 s"
    assert took < 20, f"a 1 s limit took {took:.1f} s against trickling headers"


@pytest.mark.parametrize("streamed", [False, True])
def test_an_error_body_is_read_only_in_part(streamed):
    # 8 KB at once, then a byte every 0.2 s: the error is said from its start, at once.
    def handle(h, body, stop):
        head(h, 503, Content_Type="text/plain", Content_Length="100000000")
        h.wfile.write(b"busy " * 1600)
        h.wfile.flush()
        trickle(h, stop)

    with endpoint(handle) as url:
        content, attempt, took = call(url, limit=10.0, streamed=streamed)
    assert content is None and attempt["status"] == 503
    assert attempt["error"].startswith("HTTP 503: busy busy") and len(attempt["error"]) < 300
    assert took < 8, f"an error's body held the client {took:.1f} s"


# --- memory: the body is read up to a cap ------------------------------------------------------

def test_an_endless_body_is_refused_at_the_cap():
    def handle(h, body, stop):
        head(h, 200, Content_Type="application/json", Transfer_Encoding="chunked")
        chunked(h, (b'{"choices": [{"message": {"content": "' if n == 0 else b"a" * (1 << 20)
                    for n in range(64) if not stop.is_set()))

    with endpoint(handle) as url:
        content, attempt, _ = call(url, limit=10.0)
    assert content is None and attempt["error"] == f"the response body is over " \
                                                   f"{MAX_BODY_BYTES:,} bytes"


def test_a_compressed_body_is_inflated_a_piece_at_a_time():
    # 64 MiB of zeros in about 64 KB of gzip: inflated whole, it would take 64 MiB at once.
    deflate = zlib.compressobj(9, zlib.DEFLATED, 31)
    bomb = b"".join(deflate.compress(bytes(1 << 20)) for _ in range(64)) + deflate.flush()
    small = zlib.compressobj(9, zlib.DEFLATED, 31)
    good = small.compress(reply('{"action": "I wait."}')) + small.flush()

    def handle(h, body, stop):
        answer(h, 200, bomb if body["model"] == "bomb" else good,
               Content_Type="application/json", Content_Encoding="gzip")

    with endpoint(handle) as url:
        chat = ChatClient(url)
        try:
            tracemalloc.start()
            content, attempt = chat.complete({"model": "bomb", "messages": []}, {}, 30.0)
            peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
            assert content is None and "over" in attempt["error"]
            assert peak < 16 << 20, f"{peak / 2**20:.0f} MiB held for a {len(bomb):,}-byte body"
            content, attempt = chat.complete({"model": "good", "messages": []}, {}, 30.0)
            assert content == '{"action": "I wait."}', attempt
        finally:
            tracemalloc.stop()
            chat.close()


# --- the API key -------------------------------------------------------------------------------

@pytest.mark.parametrize("key", ["sk-abc\r123", "sk-abc\n123", "sk-abc\x1b123", "sk-ключ123",
                                 "sk-abc 123"])
def test_a_key_a_header_cannot_carry_is_one_line_naming_its_variable(key, monkeypatch):
    monkeypatch.setenv(KEY_VAR, key)
    with pytest.raises(ValueError, match=f"the API key in \\${KEY_VAR} holds") as e:
        LLMPolicy("m", "http://127.0.0.1:9/v1", api_key_env=KEY_VAR)
    assert "abc" not in str(e.value) and "123" not in str(e.value)
    assert len(str(e.value).splitlines()) == 1


def test_a_key_spoiled_after_the_build_is_never_sent_nor_recorded(monkeypatch):
    seen: list[str | None] = []

    def handle(h, body, stop):
        seen.append(h.headers.get("Authorization"))
        answer(h, 200, reply('{"action": "I wait."}'), Content_Type="application/json")

    monkeypatch.setenv(KEY_VAR, "  sk-abc123\r\n")  # surrounding whitespace is dropped
    with endpoint(handle) as url:
        p = LLMPolicy("m", url, api_key_env=KEY_VAR, timeout=10)
        game = Game(GameConfig(seed=1))
        assert not p.act(game, 0).scripted
        monkeypatch.setenv(KEY_VAR, "sk-abc123\r\nX-Injected: 1")
        decision = p.act(game, 0)
    assert seen == ["Bearer sk-abc123"]
    assert decision.scripted
    rec = p.take_records()[-1]
    assert all(f"${KEY_VAR}" in a["error"] for a in rec["attempts"])
    assert "abc123" not in json.dumps(rec) and "abc123" not in p.first_failure


def test_a_server_that_echoes_the_key_does_not_put_it_in_the_records(monkeypatch):
    def handle(h, body, stop):
        auth = h.headers.get("Authorization", "")
        if body["model"] == "error":
            answer(h, 500, f"bad request from {auth}".encode(), Content_Type="text/plain")
        else:
            answer(h, 200, reply(json.dumps({"action": "I wait.", "say": f"your {auth}",
                                             "notes": auth})), Content_Type="application/json")

    monkeypatch.setenv(KEY_VAR, "sk-echoed-secret-42")
    game = Game(GameConfig(seed=1))
    with endpoint(handle) as url:
        failing = LLMPolicy("error", url, api_key_env=KEY_VAR, timeout=10)
        failing.act(game, 0)
        echoing = LLMPolicy("echo", url, api_key_env=KEY_VAR, timeout=10)
        decision = echoing.act(game, 0)
    assert "sk-echoed-secret-42" not in json.dumps(failing.take_records())
    assert "sk-echoed-secret-42" not in (failing.first_failure or "")
    assert "the API key" in failing.first_failure
    assert not decision.scripted and "sk-echoed" not in decision.say + decision.notes
    assert "sk-echoed-secret-42" not in json.dumps(echoing.take_records())


# --- what a spec's options may reach -----------------------------------------------------------

def test_key_env_names_only_a_key_variable():
    # Another of the runner's variables (a path, a password) is not sent to the spec's URL.
    for name in ["HOME", "PATH", "PWD", "MY KEY", "1_KEY", "A-KEY"]:
        with pytest.raises(ValueError, match="key_env must name an environment variable"):
            make_policy(f"llm:m@http://127.0.0.1:9/v1#key_env={name}")
    for name in ["MY_TOKEN", "groq_api_key", "KEY", "OPENAI_API_KEY_2", "LLM_SECRET",
                 ""]:  # "": no key at all
        assert make_policy(f"llm:m@http://127.0.0.1:9/v1#key_env={name}").api_key_env == name


@contextlib.contextmanager
def unblocked(fifo: Path) -> Iterator[None]:
    """After 20 s, open ``fifo`` for writing and close it: a reader blocked on it (the defect)
    then reads nothing and goes on, so a test of it fails rather than hangs."""
    def release() -> None:
        with contextlib.suppress(OSError):
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))

    timer = threading.Timer(20.0, release)
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()


def test_a_prompt_file_that_is_a_fifo_is_refused_not_waited_on(tmp_path: Path):
    fifo = tmp_path / "guide"
    os.mkfifo(fifo)
    with unblocked(fifo), pytest.raises(ValueError, match="prompt_file .* is not a regular file"):
        make_policy(f"llm:m@http://127.0.0.1:9/v1#prompt_file={fifo}")


def test_a_huge_prompt_file_is_read_only_as_far_as_the_prompt_goes(tmp_path: Path):
    big = tmp_path / "guide.txt"
    with big.open("wb") as f:
        f.write("€".encode() * 6000)  # 18,000 bytes: cut inside a character at the cap
        f.truncate(256 << 20)
    tracemalloc.start()
    try:
        p = make_policy(f"llm:m@http://127.0.0.1:9/v1#prompt_file={big}")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert p.prompt == "€" * MAX_PROMPT_LEN
    assert peak < 4 * MAX_PROMPT_FILE_BYTES + (1 << 20), f"{peak:,} bytes to read a prompt"


def test_a_prompt_file_not_in_utf8_is_one_line_naming_it(tmp_path: Path):
    bad = tmp_path / "guide.txt"
    bad.write_bytes(b"Be bold \xff\xfe.")
    with pytest.raises(ValueError, match="prompt_file .* is not UTF-8 text"):
        make_policy(f"llm:m@http://127.0.0.1:9/v1#prompt_file={bad}")


# --- the URL and the timeout -------------------------------------------------------------------

@pytest.mark.parametrize("url,why", [
    ("http://127.0.0.1:abc/v1", "no valid port"), ("http://127.0.0.1:99999/v1", "no valid port"),
    ("http://127.0.0.1:0/v1", "no valid port"), ("http://[::1/v1", "is not a URL"),
    ("http://127.0.0.1 :8765/v1", "space or a control"), ("http://a\nb/v1", "space or a control"),
    ("http://exa mple.com/v1", "space or a control"), ("http://a\x00b/v1", "space or a control"),
    ("http://" + "a" * 5000 + "/v1", "over 2,000 characters"),
])
def test_a_bad_url_is_refused_when_the_policy_is_built(url, why):
    with pytest.raises(ValueError, match=f"llm policy: the base URL .*{why}") as e:
        make_policy(f"llm:m@{url}")
    assert len(str(e.value).splitlines()) == 1 and len(str(e.value)) < 400


@pytest.mark.parametrize("url", ["http://bob:s3cret@127.0.0.1:9/v1", "http://:s3cret@h/v1",
                                 "https://s3cret@h/v1"])
def test_credentials_in_the_url_are_refused_without_being_shown(url):
    with pytest.raises(ValueError, match="may not hold a user or password.*key_env") as e:
        make_policy(f"llm:m@{url}")
    assert "s3cret" not in str(e.value) and "bob" not in str(e.value)


def test_an_at_sign_in_the_path_is_no_credential():
    assert make_policy("llm:@cf/meta/llama@http://127.0.0.1:9/v1/@org").base_url == \
        "http://127.0.0.1:9/v1/@org"


def test_llm_local_reads_and_sends_no_key(monkeypatch):
    # Its own server takes none: a malformed $OPENAI_API_KEY refused the seat, a good one was
    # sent to the local server.
    import types

    monkeypatch.setenv("OPENAI_API_KEY", "sk-abc\r123")
    server = types.SimpleNamespace(url="http://127.0.0.1:9/v1", model="m.gguf")
    seat = local.LocalPolicy(types.SimpleNamespace(servers=[server]))
    assert seat.api_key_env == ""


def test_the_repr_shows_no_query():
    p = LLMPolicy("m", "http://127.0.0.1:9/v1?api-key=s3cret")
    assert "s3cret" not in repr(p) and "127.0.0.1:9/v1" in repr(p)


@pytest.mark.parametrize("option", ["timeout=1e308", "retry_floor=1e308", "timeout=3601"])
def test_a_timeout_beyond_an_hour_is_refused(option):
    name = option.partition("=")[0]
    with pytest.raises(ValueError, match=f"{name} must be a positive number of seconds, at most"):
        make_policy(f"llm:m@http://127.0.0.1:9/v1#{option}")


@pytest.mark.parametrize("option", ["max_tokens=1000001", "max_tokens=" + "9" * 4000,
                                    "max_tokens=0"])
def test_max_tokens_is_bounded(option):
    # 4,000 digits made an int that was sent to the server as the reply's token limit
    with pytest.raises(ValueError, match="max_tokens must be an int from 1 to 1000000") as e:
        make_policy(f"llm:m@http://127.0.0.1:9/v1#{option}")
    assert len(str(e.value)) < 200
    assert make_policy("llm:m@http://127.0.0.1:9/v1#max_tokens=1000000").max_tokens == 10**6


@pytest.mark.parametrize("spec", ["llm:m" + "x" * 5000, "llm:m@http://h/v1#" + "z" * 5000,
                                  "llm:m@http://h/v1#max_tokens=" + "9" * 5000,
                                  "llm:m@http://h/v1#timeout=" + "x" * 5000])
def test_an_error_shows_a_long_spec_cut(spec):
    # each echoed the whole spec or value: one error line of 5,000 characters
    with pytest.raises(ValueError, match=r"llm policy.*\.\.\.") as e:
        make_policy(spec)
    assert len(str(e.value).splitlines()) == 1 and len(str(e.value)) < 400


# --- the formats an endpoint refuses share the decision's limit -------------------------------

def test_formats_refused_slowly_do_not_stretch_a_decision_past_its_limit():
    # json_schema is refused after 2 s and json_object after 5: within the 6 s limit only the
    # first refusal fits, so the plain request is never sent and the retry follows at 6 s.
    asked: list[str] = []

    def handle(h, body, stop):
        kind = (body.get("response_format") or {}).get("type", "none")
        retry = "previous reply" in body["messages"][-1]["content"]
        asked.append(f"{kind}{' (retry)' if retry else ''}")
        if not retry and kind != "none" and stop.wait(2.0 if kind == "json_schema" else 5.0):
            return
        if not retry and kind != "none":
            answer(h, 400, b'{"error": "response_format is not supported"}',
                   Content_Type="application/json")
        else:
            answer(h, 200, reply('{"action": "I wait."}'), Content_Type="application/json")

    with endpoint(handle) as url:
        p = LLMPolicy("slow-refusals", url, timeout=6, retry_floor=6)
        t0 = time.monotonic()
        decision = p.act(Game(GameConfig(seed=1)), 0)
        took = time.monotonic() - t0
    first = p.take_records()[-1]["attempts"][0]
    assert asked == ["json_schema", "json_object", "json_schema (retry)"]
    assert first["error"] == "no reply within 6 s" and first["refused_formats"] == ["json_schema"]
    assert first["seconds"] >= 5.5  # the refusal's time counted in
    assert not decision.scripted and took < 40


# --- llm:local ---------------------------------------------------------------------------------

def test_a_model_the_server_cannot_load_is_reported_with_its_last_line(tmp_path: Path,
                                                                       monkeypatch):
    fake = tmp_path / "fake"
    (fake / "llama_cpp" / "server").mkdir(parents=True)
    (fake / "llama_cpp" / "__init__.py").write_text("")
    (fake / "llama_cpp" / "server" / "__init__.py").write_text("")
    (fake / "llama_cpp" / "server" / "__main__.py").write_text(
        "def main():\n    raise ValueError('Failed to load model from file: m.gguf')\n")
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF" + bytes(28))
    monkeypatch.syspath_prepend(str(fake))
    monkeypatch.setenv("PYTHONPATH", str(fake))
    try:
        with pytest.raises(ValueError) as e:
            local.from_spec(f"local@{gguf}")
    finally:
        local.stop_all()
    assert str(e.value).endswith("did not start: exit code 1: ValueError: Failed to load model "
                                 "from file: m.gguf"), str(e.value)


def test_the_server_exits_with_its_error_while_its_parent_lives(tmp_path: Path):
    fake = tmp_path / "llama_cpp" / "server"
    fake.mkdir(parents=True)
    (tmp_path / "llama_cpp" / "__init__.py").write_text("")
    (fake / "__init__.py").write_text("")
    (fake / "__main__.py").write_text("def main():\n    raise SystemExit('no such model')\n")
    serve = Path(local.__file__).with_name("local_serve.py")
    proc = subprocess.Popen([sys.executable, str(serve)], stdin=subprocess.PIPE,
                            stderr=subprocess.PIPE, env={**os.environ, "PYTHONPATH": str(tmp_path)})
    timer = threading.Timer(60.0, proc.kill)  # stdin stays open: the server's parent lives
    timer.start()
    try:
        err = proc.stderr.read()
        proc.wait()
    finally:
        timer.cancel()
        proc.stdin.close()
        proc.stderr.close()
    assert proc.returncode == 1 and err.decode().strip().splitlines()[-1] == "no such model"


def test_a_model_path_that_is_a_fifo_is_refused_not_waited_on(tmp_path: Path):
    fifo = tmp_path / "m.gguf"
    os.mkfifo(fifo)
    with unblocked(fifo), pytest.raises(ValueError, match="is not a regular file"):
        local.check_gguf(fifo)


def test_a_model_path_in_an_unknown_home_is_one_line():
    with pytest.raises(ValueError, match="llm:local: cannot find the model file"):
        local.check_gguf("~no-such-user-here/m.gguf")
