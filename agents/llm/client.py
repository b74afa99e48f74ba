"""One request to an OpenAI-compatible chat endpoint, and what comes back (RULES §6.6-6.7).

Kept apart from the policy (``agents.llm.seat``, re-exported by ``agents.llm``) so the network
side -- connections, proxies, timeouts, status codes, the shape of a response -- is in one
place, and the policy only decides what to ask and what to do with the answer. ``httpx`` (the
``llm`` extra) is imported here only, lazily.
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import socket
import threading
import time
import urllib.parse
import zlib
from collections.abc import Iterator
from typing import Any

# Bounds on what a server may send: a reply longer than any reply the policies read (a free
# reply of 900 tokens is about 4,000 characters), and one line of the event stream.
MAX_REPLY_CHARS = 32_000
MAX_LINE_BYTES = 1 << 20
# A whole response body that is not streamed: the longest reply read, JSON-escaped, and its
# envelope; and the part of an error's body that is read (only its start is recorded).
MAX_BODY_BYTES = 4 * MAX_REPLY_CHARS
MAX_ERROR_BYTES = 4096
# Compressed bodies are inflated here, a piece at a time, so that a small body that inflates
# to gigabytes (a "zip bomb") is stopped at the byte cap, not held whole in memory first; the
# request names the encodings read here, and no other is accepted.
ACCEPT_ENCODING = "gzip, deflate"
INFLATE_PIECE = 1 << 16
KEY_SHOWN = "[the API key]"


class RejectedError(Exception):
    """The service refused the credentials (HTTP 401/403)."""


class BodyError(Exception):
    """A response body read no further: too long, too slow, or in an encoding not read here."""


class ChatClient:
    """``POST {base_url}/chat/completions``, through one lazily made, thread-shared client.

    Each request has a connection of its own, none kept for the next: :func:`cut_at` must hold
    the socket to end it at the deadline, and a kept connection is reused without being made
    again.  Over https that costs a handshake a decision (tens of milliseconds beside replies
    of seconds).

    A loopback server is never reached through a proxy from the environment (``trust_env`` is
    off for it), so a local model works behind a corporate ``HTTP_PROXY``.
    """

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url.rstrip("/")
        self.trust_env = not is_loopback(urllib.parse.urlsplit(base_url).hostname or "")
        self._client: Any = None
        self._lock = threading.Lock()

    def complete(self, body: dict, headers: dict[str, str],
                 limit: float) -> tuple[str | None, dict[str, Any]]:
        """Send one request; the reply's text (None on failure) and the attempt's record.

        The record holds ``error`` (why there is no text), ``status`` (an HTTP status other
        than 200), ``usage`` (the token counts the server reports), ``reply`` (the raw text)
        and ``seconds``. ``limit`` bounds the whole exchange, the body included (it is read
        in pieces, the time checked at each, so a server that trickles cannot hold the seat),
        and the body is read up to :data:`MAX_BODY_BYTES`. The API key in ``headers`` never
        reaches the record or the text (a server may echo it). Raises
        :class:`RejectedError` on HTTP 401 or 403, the one failure that is not retried.
        """
        content, attempt = self._complete(body, headers, limit)
        return scrubbed(content, attempt, secret_of(headers))

    def _complete(self, body: dict, headers: dict[str, str],
                  limit: float) -> tuple[str | None, dict[str, Any]]:
        import httpx

        t0 = time.perf_counter()
        deadline = t0 + limit
        attempt: dict[str, Any] = {}
        try:
            with cut_at(deadline) as extensions, \
                    self._http().stream("POST", f"{self.base_url}/chat/completions", json=body,
                                        headers={**headers, "Accept-Encoding": ACCEPT_ENCODING},
                                        timeout=limit, extensions=extensions) as r:
                if r.status_code in (401, 403):
                    raise RejectedError(f"HTTP {r.status_code}: the service refused the "
                                        "credentials")
                if r.status_code != 200:
                    attempt["status"] = r.status_code  # 400/422: the policy may drop the format
                    text = read_body(r, MAX_ERROR_BYTES, deadline, limit, cut=True)
                    return None, done(attempt, t0, error=f"HTTP {r.status_code}: "
                                                         f"{text.decode('utf-8', 'replace')[:200]}")
                raw = read_body(r, MAX_BODY_BYTES, deadline, limit)
        except (httpx.HTTPError, BodyError) as e:
            return None, done(attempt, t0, error=failure(e, deadline, limit))
        try:
            data = json.loads(raw)
        except (ValueError, RecursionError):
            return None, done(attempt, t0, error="the response body is not JSON we can read")
        content, usage = content_of(data), usage_of(data)
        if usage:
            attempt["usage"] = usage
        if content is None:
            return None, done(attempt, t0, error="the response has no message content")
        attempt["reply"] = content = content[:MAX_REPLY_CHARS]
        return content, done(attempt, t0)

    def stream(self, body: dict, headers: dict[str, str],
               limit: float) -> tuple[str | None, dict[str, Any]]:
        """Like :meth:`complete`, but streamed, with ``limit`` bounding the whole reply.

        For a server of our own that answers one request at a time (``agents.llm.local``):
        closing the stream at the limit makes llama-cpp-python's server stop generating, so an
        abandoned request does not keep the server from the next one.
        """
        content, attempt = self._stream(body, headers, limit)
        return scrubbed(content, attempt, secret_of(headers))

    def _stream(self, body: dict, headers: dict[str, str],
                limit: float) -> tuple[str | None, dict[str, Any]]:
        import httpx

        t0 = time.perf_counter()
        deadline = t0 + limit
        attempt: dict[str, Any] = {}
        parts: list[str] = []
        size = 0
        try:
            with cut_at(deadline) as extensions, \
                    self._http().stream("POST", f"{self.base_url}/chat/completions",
                                        json={**body, "stream": True},
                                        headers={**headers, "Accept-Encoding": ACCEPT_ENCODING},
                                        timeout=limit, extensions=extensions) as r:
                if r.status_code != 200:
                    attempt["status"] = r.status_code
                    text = read_body(r, MAX_ERROR_BYTES, deadline, limit, cut=True)
                    return None, done(attempt, t0, error=f"HTTP {r.status_code}: "
                                                         f"{text.decode('utf-8', 'replace')[:200]}")
                # Lines split here, not by httpx: the limit is checked at every chunk, so a
                # server that trickles one endless line cannot hold the seat past it.
                pending = b""
                for chunk in body_pieces(r, deadline, limit):
                    pending += chunk
                    lines: list[bytes] = []
                    if b"\n" in chunk:  # only then: a long line is not scanned again per chunk
                        *lines, pending = pending.split(b"\n")
                    if len(pending) > MAX_LINE_BYTES:
                        return None, done(attempt, t0, error="a streamed line over "
                                                             f"{MAX_LINE_BYTES:,} bytes")
                    for raw in lines:
                        piece = self._piece(raw, attempt)
                        if piece:
                            if not parts:
                                attempt["first_token"] = round(time.perf_counter() - t0, 3)
                            parts.append(piece)
                            size += len(piece)
                    if size > MAX_REPLY_CHARS:  # enough: closing the stream stops the server
                        attempt["cut"] = f"at {MAX_REPLY_CHARS:,} characters"
                        break
        except (httpx.HTTPError, BodyError) as e:
            return None, done(attempt, t0, error=failure(e, deadline, limit))
        attempt["reply"] = "".join(parts)[:MAX_REPLY_CHARS]
        attempt["pieces"] = len(parts)  # streamed pieces: about one a sampled token
        return attempt["reply"], done(attempt, t0)

    @staticmethod
    def _piece(raw: bytes, attempt: dict[str, Any]) -> str:
        """The content of one server-sent line (``data: {...}``); its usage into ``attempt``."""
        line = raw.decode("utf-8", "replace").strip()
        if not line.startswith("data:") or line[5:].strip() == "[DONE]":
            return ""
        try:
            chunk = json.loads(line[5:])
        except (ValueError, RecursionError):
            return ""  # a ping or an error we cannot read
        if usage := usage_of(chunk):
            attempt["usage"] = usage  # a server that streams its counts
        return delta_text(chunk)

    def unreachable(self, limit: float) -> str | None:
        """Why nothing listens at the endpoint's host and port (refused, no such host, no
        connection within ``limit`` seconds, the name lookup included), or None when a
        connection is accepted. A bare TCP connection: nothing is sent (no key, no request)
        and nothing read, so a server that answers badly or slowly costs nothing here (the
        seat's fallback covers it). None too when the environment sends the requests through
        a proxy, which this check cannot see past."""
        url = urllib.parse.urlsplit(self.base_url)
        host = url.hostname or ""
        try:
            port = url.port or (443 if url.scheme == "https" else 80)
        except ValueError:
            return "its port is not a port number"
        # imported here: every seat process imports this module (urllib.request brings ssl,
        # address space a seat's cap counts), and only a league's own process probes
        from urllib.request import getproxies, proxy_bypass

        if self.trust_env and getproxies() and not proxy_bypass(host):
            return None
        outcome: list[str | None] = []

        def connect() -> None:
            try:
                socket.create_connection((host, port), timeout=limit).close()
                outcome.append(None)
            except OSError as e:
                outcome.append(f"{type(e).__name__}: {e.strerror or e}")

        worker = threading.Thread(target=connect, name="llm-probe", daemon=True)
        worker.start()
        worker.join(limit)
        return outcome[0] if outcome else f"no connection within {limit:g} s"

    def close(self) -> None:
        """Close the connections (they are reopened when needed)."""
        with self._lock:
            client, self._client = self._client, None
        if client is not None:
            client.close()

    def _http(self) -> Any:
        import httpx

        with self._lock:
            if self._client is None:
                # no connection kept for the next request: each starts with a connection of
                # its own, which cut_at can end at the deadline
                self._client = httpx.Client(trust_env=self.trust_env,
                                            limits=httpx.Limits(max_keepalive_connections=0))
            return self._client


def no_reply(limit: float) -> str:
    """The error of a request that ran out of time."""
    return f"no reply within {limit:g} s"


def failure(e: Exception, deadline: float, limit: float) -> str:
    """The error recorded for a request that raised ``e``: any failure of the connection at or
    after ``deadline`` is the deadline's (:func:`cut_at` ends the connection then)."""
    import httpx

    if isinstance(e, httpx.TimeoutException) or \
            (isinstance(e, httpx.HTTPError) and time.perf_counter() >= deadline):
        return no_reply(limit)
    if isinstance(e, BodyError):
        return str(e)
    return f"request failed: {type(e).__name__}: {e}"


@contextlib.contextmanager
def cut_at(deadline: float) -> Iterator[dict[str, Any]]:
    """The httpx request ``extensions`` that end the request's connection at ``deadline``
    (``time.perf_counter``), whatever it waits on then: its socket is shut down, which wakes a
    read. httpx's timeouts bound each read alone, so a server that sends its status line and
    headers a byte at a time, within each read's timeout, held a request for as long as it
    liked. The socket is taken as the connection is made (a copy of it, so its number is never
    another's by the time the deadline comes)."""
    lock = threading.Lock()
    held: list[socket.socket] = []
    due: list[bool] = []  # the deadline has come (a connection made later is ended at once)

    def end(sock: socket.socket) -> None:
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)

    def trace(event: str, info: dict[str, Any]) -> None:
        if event.endswith("connect_tcp.complete"):
            sock = getattr(info.get("return_value"), "get_extra_info", lambda _: None)("socket")
            if isinstance(sock, socket.socket):
                with lock:
                    held.append(sock.dup())
                    if due:
                        end(held[-1])

    def cut() -> None:
        with lock:
            due.append(True)
            for sock in held:
                end(sock)

    timer = threading.Timer(max(deadline - time.perf_counter(), 0.0), cut)
    timer.daemon = True
    timer.start()
    try:
        yield {"trace": trace}
    finally:
        timer.cancel()
        with lock:
            for sock in held:
                sock.close()
            held.clear()


def body_pieces(r: Any, deadline: float, limit: float) -> Iterator[bytes]:
    """The body of the streamed response ``r``, in pieces of bounded size, inflated here when
    compressed; :class:`BodyError` once ``deadline`` (``time.perf_counter``) has passed."""
    encoding = r.headers.get("content-encoding", "").strip().lower()
    if encoding not in ("", "identity", "gzip", "x-gzip", "deflate"):
        raise BodyError(f"the response body is in an encoding not read here "
                        f"({encoding[:40]!r})")
    inflate = None if encoding in ("", "identity") else zlib.decompressobj(zlib.MAX_WBITS | 32)
    timeouts = r.request.extensions.get("timeout")
    if isinstance(timeouts, dict):  # a silent body waits only what is left (httpcore reads it
        timeouts["read"] = max(deadline - time.perf_counter(), 0.001)  # as the body starts)
    for raw in r.iter_raw():
        if time.perf_counter() > deadline:
            raise BodyError(no_reply(limit))
        if inflate is None:
            yield raw
            continue
        while raw:  # each round inflates at most a piece, or takes in the whole input
            try:
                piece = inflate.decompress(raw, INFLATE_PIECE)
            except zlib.error:
                raise BodyError("the response body's compression is corrupt") from None
            raw = inflate.unconsumed_tail
            yield piece
            if time.perf_counter() > deadline:
                raise BodyError(no_reply(limit))
    if time.perf_counter() > deadline:  # a body ended by the connection's end: cut_at's?
        raise BodyError(no_reply(limit))
    if inflate is not None:
        yield inflate.flush()  # what the inflater still holds: less than a piece


def read_body(r: Any, cap: int, deadline: float, limit: float, cut: bool = False) -> bytes:
    """The body of the streamed response ``r``, read up to ``cap`` bytes: beyond them the rest
    is left unread, and a :class:`BodyError` unless ``cut`` (keep the first ``cap``)."""
    data = bytearray()
    for piece in body_pieces(r, deadline, limit):
        data += piece
        if len(data) > cap:
            if cut:
                break
            raise BodyError(f"the response body is over {cap:,} bytes")
    return bytes(data[:cap])


def secret_of(headers: dict[str, str]) -> str:
    """The credential in a request's ``Authorization`` header ("" when none)."""
    auth = headers.get("Authorization", "").strip()
    return auth.partition(" ")[2].strip() or auth


def scrubbed(content: str | None, attempt: dict[str, Any],
             secret: str) -> tuple[str | None, dict[str, Any]]:
    """``content`` and the record's texts with ``secret`` replaced: a server, an HTTP library's
    message or a proxy's error page that echoes the key does not put it in a replay."""
    if not secret:
        return content, attempt
    for field in ("error", "reply"):
        if isinstance(attempt.get(field), str):
            attempt[field] = attempt[field].replace(secret, KEY_SHOWN)
    return (None if content is None else content.replace(secret, KEY_SHOWN)), attempt


def done(attempt: dict, t0: float, error: str | None = None) -> dict:
    """Finish an attempt's record: its error (if any) and the seconds since ``t0``."""
    if error:
        attempt["error"] = error
    attempt["seconds"] = round(time.perf_counter() - t0, 3)
    return attempt


def content_of(data: Any) -> str | None:
    """``choices[0].message.content`` (a string, or a list of text parts); None if absent."""
    try:
        content = data["choices"][0]["message"]["content"]
    except (KeyError, IndexError, TypeError):
        return None
    if isinstance(content, list):
        parts = [p.get("text") for p in content if isinstance(p, dict)]
        content = "".join(p for p in parts if isinstance(p, str))
    return content if isinstance(content, str) else None


def delta_text(chunk: Any) -> str:
    """A streamed chunk's ``choices[0].delta.content`` ("" when it has none)."""
    try:
        text = chunk["choices"][0]["delta"]["content"]
    except (KeyError, IndexError, TypeError):
        return ""
    return text if isinstance(text, str) else ""


def usage_of(data: Any) -> dict[str, int]:
    """The token counts the server reports, when it reports them: OpenAI's ``usage`` names,
    and ``cached_tokens`` (prompt tokens the server did not read again) from OpenAI's
    ``usage.prompt_tokens_details`` or llama.cpp's ``timings.cache_n``."""
    if not isinstance(data, dict):
        return {}
    usage = data.get("usage")
    usage = usage if isinstance(usage, dict) else {}
    out = {k: v for k, v in usage.items()
           if k in ("prompt_tokens", "completion_tokens", "total_tokens") and _count(v)}
    details = usage.get("prompt_tokens_details")
    timings = data.get("timings")
    for source, key in ((details, "cached_tokens"), (timings, "cache_n")):
        if isinstance(source, dict) and _count(source.get(key)):
            out["cached_tokens"] = source[key]
    return out


def _count(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def is_loopback(host: str) -> bool:
    """Whether ``host`` names this machine (``localhost`` or a loopback address)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
