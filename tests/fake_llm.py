"""A small OpenAI-compatible chat server for the language-model tests (standard library only).

It listens on 127.0.0.1 on a free port, answers ``POST /v1/chat/completions``, and stops by
itself after ``lifetime`` seconds or ``max_requests`` requests, so a failing test cannot leave it
running. How it answers is chosen by the request's model name (see :data:`BEHAVIOURS`), so one
server serves every case; it records each request (model, user message, start and end times)
and the most requests it ever had in flight at once.
"""

from __future__ import annotations

import contextlib
import json
import re
import socket
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

RETRY_MARK = "previous reply was invalid"


def good_reply(user: str) -> dict:
    """A valid move that the grammar reads, with a say and notes naming the turn."""
    alias = re.search(r"^YOU ARE ([A-Z]+)\.", user, re.M)
    turn = re.search(r"^Turn (\d+) of", user, re.M)
    name = alias.group(1).title() if alias else "?"
    t = turn.group(1) if turn else "?"
    return {"action": "I wait by the well and listen.", "say": f"{name} is here.",
            "notes": f"seen turn {t}"}


def _json(obj: dict) -> str:
    return json.dumps(obj)


# model name -> (first answer, answer to the retry). An answer is (status, content, delay).
Answer = tuple[int, str, float]
GOOD: Answer = (200, "", 0.0)  # "" = the good reply for this observation
BEHAVIOURS: dict[str, tuple[Answer, Answer]] = {
    "good": (GOOD, GOOD),
    "fenced": ((200, "```json\n{JSON}\n```", 0.0), GOOD),
    "prose": ((200, "Sure. My move this turn is {JSON} - good luck to everyone!", 0.0), GOOD),
    "malformed-once": ((200, '{"action": "I wait", "say": }', 0.0), GOOD),
    "malformed": ((200, '{"action": "I wait", "say": }', 0.0),
                  (200, "I would rather not answer in JSON.", 0.0)),
    "noaction": ((200, '{"say": "hello", "notes": "x"}', 0.0),
                 (200, '{"action": 42}', 0.0)),
    "empty-action": ((200, '{"action": " \\t\\n "}', 0.0), (200, '[1, 2]', 0.0)),
    "long": ((200, _json({"action": "I wait " + "and wait " * 60, "say": "s" * 500,
                          "notes": "line one\nline\ttwo " + "n" * 900}), 0.0), GOOD),
    "unreadable": ((200, _json({"action": "I contemplate my options."}), 0.0), GOOD),
    "e500": ((500, "internal error", 0.0), (500, "internal error", 0.0)),
    "e500-once": ((500, "internal error", 0.0), GOOD),
    "e401": ((401, "bad key", 0.0), (401, "bad key", 0.0)),
    "e500-ansi": ((500, "\x1b[2J\x1b[31mred\u202e\x07", 0.0),
                  (500, "\x1b[2J\x1b[31mred\u202e\x07", 0.0)),
    "slow": ((200, "", 3.0), (200, "", 3.0)),
    "slowish": ((200, "", 0.3), (200, "", 0.3)),
    # a reply slow enough that six requests started together all start before the first ends,
    # even on a loaded machine (``slowish`` is not: a busy CI runner can start the sixth after
    # the first has ended)
    "unhurried": ((200, "", 1.0), (200, "", 1.0)),
}


def choice_reply(model: str, user: str, body: dict) -> str | None:
    """The reply of a ``choose-*`` model to a choosing-mode request (``agents.llm.choose``),
    None for other models. The number of choices is the schema's ``enum``."""
    if not model.startswith("choose-"):
        return None
    try:
        n = len(body["response_format"]["json_schema"]["schema"]["properties"]["action"]["enum"])
    except (KeyError, TypeError):
        n = 1
    turn = re.search(r"^Turn (\d+) of", user, re.M)
    t = int(turn.group(1)) if turn else 0
    kind = model[len("choose-"):]
    if kind == "first":
        return '{"action": 1}'
    if kind == "last":  # with a say and notes
        return json.dumps({"action": n, "say": f"turn {t}", "notes": f"took {n}"})
    if kind == "spread":  # a different choice each turn, in range
        return f'{{"action": {1 + (7 * t) % n}}}'
    if kind == "verbatim":  # the first choice, always the wait, as its sentence
        return json.dumps({"action": "I wait and watch the road."})
    if kind == "cut":  # cut off after the action, in the middle of the say
        return f'{{"action": {n}, "say": "I was about to'
    if kind == "bare":
        return f"{n}. because it is the last"
    if kind == "out-of-range":
        return json.dumps({"action": n + 1})
    if kind == "out-once":
        return json.dumps({"action": n + 1 if RETRY_MARK_CHOOSE not in user else 1})
    return '{"action": 0}'


RETRY_MARK_CHOOSE = "previous reply was not one of the choices"


class FakeLLM:
    """The server; use as a context manager. ``url`` is the base URL (``.../v1``)."""

    def __init__(self, lifetime: float = 60.0, max_requests: int = 2000,
                 usage: bool = True) -> None:
        self.lifetime = lifetime
        self.max_requests = max_requests
        self.usage = usage
        self.requests: list[dict] = []
        self.requests_auth: str | None = None
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}/v1"

    def __enter__(self) -> FakeLLM:
        threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                         daemon=True).start()
        timer = threading.Timer(self.lifetime, self.stop)
        timer.daemon = True
        timer.start()
        self._timer = timer
        return self

    def __exit__(self, *exc: object) -> None:
        self._timer.cancel()
        self.stop()

    def stop(self) -> None:
        if not self._stop.is_set():
            self._stop.set()
            self._server.shutdown()
            self._server.server_close()

    def by_model(self, model: str) -> list[dict]:
        return [r for r in self.requests if r["model"] == model]

    def _answer(self, body: dict) -> tuple[int, str, dict | None]:
        model = body.get("model", "")
        user = next((m["content"] for m in body.get("messages", []) if m["role"] == "user"), "")
        retry = RETRY_MARK in user
        status, content, delay = BEHAVIOURS.get(model, (GOOD, GOOD))[1 if retry else 0]
        record = {"model": model, "user": user, "retry": retry, "body": body,
                  "start": time.perf_counter()}
        with self._lock:
            self.requests.append(record)
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            if delay:
                self._stop.wait(delay)
            if status != 200:
                return status, content, None
            good = _json(good_reply(user))
            text = good if content == "" else content.replace("{JSON}", good)
            chosen = choice_reply(model, user, body)
            text = text if chosen is None else chosen
            out: dict[str, Any] = {"id": "x", "object": "chat.completion", "model": model,
                                   "choices": [{"index": 0, "finish_reason": "stop",
                                                "message": {"role": "assistant",
                                                            "content": text}}]}
            if self.usage:
                out["usage"] = {"prompt_tokens": len(user) // 4, "completion_tokens": 17,
                                "total_tokens": len(user) // 4 + 17}
            return 200, json.dumps(out), None
        finally:
            with self._lock:
                self.in_flight -= 1
                record["end"] = time.perf_counter()

    def _handler(self) -> Callable[..., BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - the http.server hook name
                try:
                    if len(fake.requests) >= fake.max_requests:
                        self._send(503, "too many requests for this test server")
                        threading.Thread(target=fake.stop, daemon=True).start()
                        return
                    if self.path != "/v1/chat/completions":
                        self._send(404, "not found")
                        return
                    n = int(self.headers.get("Content-Length", "0"))
                    body = json.loads(self.rfile.read(n))
                    fake.requests_auth = self.headers.get("Authorization")
                    status, text, _ = fake._answer(body)
                    self._send(status, text)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a timeout test)

            def _send(self, status: int, text: str) -> None:
                data = text.encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: object) -> None:
                pass

        return Handler


def closed_port() -> int:
    """A port on 127.0.0.1 that nothing listens on (a refused connection)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# --- a server whose every answer a test writes ------------------------------------------------

Handle = Callable[[BaseHTTPRequestHandler, dict, threading.Event], None]


@contextlib.contextmanager
def endpoint(handle: Handle, protocol: str = "HTTP/1.1") -> Iterator[str]:
    """A loopback server whose every POST is answered by ``handle(handler, body, stop)``
    (``stop`` is set when the test ends, so a stalling answer ends too). The base URL.
    ``protocol``: HTTP/1.0 ends a body by closing the connection (an event stream)."""
    stop = threading.Event()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = protocol

        def do_POST(self) -> None:  # noqa: N802 - the http.server hook name
            raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            try:
                handle(self, json.loads(raw), stop)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up, as it should

        def log_message(self, *args: object) -> None:
            pass

    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05},
                     daemon=True).start()
    try:
        yield f"http://127.0.0.1:{srv.server_address[1]}/v1"
    finally:
        stop.set()
        srv.shutdown()
        srv.server_close()
