"""Language-model seats: a policy is a prompt (SENTENCES §17-§21, RULES §6.6).

:class:`LLMPolicy` plays a seat by asking any OpenAI-compatible chat endpoint
(``POST {base_url}/chat/completions``). The system message explains the game and the reply
format in our own words (:func:`system_prompt`, SENTENCES §18); the user message is the seat's
text view ``game.observation_text(seat, prompt=...)`` (§17), which already carries the operator
guidance block and the reply-format line. The reply is one JSON object ``{action, say, notes}``
read as §20.1 says (:func:`parse_reply`).

Failures, as the original host does them (§20.1, §21):

- an invalid reply (no object, bad JSON, no string ``action``, an empty one) or a failed request
  (HTTP error, timeout, refused connection, a body without a message) is asked again **once**,
  with one corrective line added to the user message and half the timeout (at least
  ``retry_floor`` seconds, 8 by default);
- a second failure plays the ``factor`` baseline for that turn, marked scripted;
- a service that rejects the credentials (HTTP 401 or 403) is switched off for the rest of the
  episode: every later decision is ``factor`` at once, with no network wait (§21);
- a valid reply whose sentence the grammar cannot read is *not* a failure: it is played, and its
  reason is shown to the seat next turn.

Deviation: the original plays ``factor`` at once when the game has no credentials at all. Here a
missing key variable sends no ``Authorization`` header instead, because local servers (vLLM,
llama.cpp, Ollama) need none; a service that wants one answers 401 and is switched off.

Protocol (see ``agents.policy``): ``act`` returns an :class:`agents.Decision` (sentence, say,
notes, scripted), and ``concurrent = True`` lets :func:`agents.decide_turn` and the league ask
all language-model seats of a turn at the same time, in threads (RULES §6.6). Every decision is
logged in ``records`` (system and user message, each attempt's raw reply or error, the token
counts the server reports, the time taken); the league writes them into the replay under
``"llm"`` (``take_records``), and ``guild export-sft`` turns them into training rows.
"""

from __future__ import annotations

import ipaddress
import json
import os
import threading
import time
import urllib.parse
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sim import Game
from sim.rules.world import (
    COMPLETION_BONUS,
    FINE_COIN,
    MAX_NOTES_LEN,
    MAX_PROMPT_LEN,
    MAX_SAY_LEN,
    MAX_SENTENCE_LEN,
    POINT_VALUE,
    POINTS_PER_UNIT,
    RETAINER_TURNS,
    SEATS,
)

from .baselines import Factor
from .policy import Decision

ELLIPSIS = "\u2026"
ASCII_SPACE = " \t\n\r\x0b\x0c"
CORRECTIVE = ("Your previous reply was invalid. Reply with only the JSON object described above "
              "(a string \"action\" is required), with nothing before or after it.")
DEFAULT_TIMEOUT = 24.0      # RULES §6.7 llmTimeoutSeconds
DEFAULT_MAX_TOKENS = 900    # RULES §6.7 maxOutputTokens
DEFAULT_RETRY_FLOOR = 8.0   # SENTENCES §20.1: the retry gets half the timeout, at least 8 s
DEFAULT_KEY_ENV = "OPENAI_API_KEY"

_FACTOR = Factor()


# --- the system message (SENTENCES §18, in our own words) --------------------------------------

def system_prompt(game: Game, seat: int) -> str:
    """The system message for ``seat``: the same for every seat except the alias (§18).

    Built from the game's town, so a variant town names its own dark rooms and guildmaster.
    """
    w = game.world
    alias = game.aliases[seat]
    guild = w.keepers[w.guild]
    guildhall = w.rooms[guild.room].name
    dark = [r.name for r in w.rooms if r.dark]
    dark_text = " and ".join(dark) if dark else "no room of this town"
    fee_turns = RETAINER_TURNS
    return "\n".join([
        f"You are {alias}, one of {SEATS} cogs trading in a small town for "
        f"{game.config.turns} turns. You act by writing ONE sentence of plain English each "
        "turn. There is no menu of moves: the town reads your sentence and decides whether the "
        "act happened.",
        "",
        "Each turn you do exactly one thing. The town understands: going to a neighbouring "
        "place; picking something up from the ground or dropping it; buying from or selling to "
        "the shopkeeper in your room; handing goods to a shopkeeper; offering another cog a "
        "trade of goods for coin; accepting an offer made to you last turn; hiring another cog; "
        "robbing another cog; asking a shopkeeper about your commissions; speaking; and "
        "waiting. Name the thing, the place or the cog plainly.",
        "",
        "A sentence the town cannot read costs you the turn, and next turn you are told why. "
        "Nothing else punishes it.",
        "",
        "You can act only on what is in your room. You never see other rooms, nor other cogs' "
        "goods or coin.",
        "",
        "Prices follow stock: a shop asks more for what it is short of, pays about two thirds "
        "of its asking price, buys only the goods it deals in, and can run out of coin.",
        "",
        f"You hold two commissions, settled by {guild.name} at {guildhall}. Every unit you "
        f"hand in scores {POINTS_PER_UNIT} points, finishing a commission scores "
        f"{COMPLETION_BONUS} more, and partial delivery counts.",
        "",
        f"Robbery works only in the dark ({dark_text}). Anywhere else the watch stops it and "
        f"the robber pays the intended victim {FINE_COIN} coins. A hireling beside you protects "
        "you, and a hireling of your own helps you rob. A successful robbery takes the "
        "victim's single most valuable good.",
        "",
        "Hiring is the only promise the town enforces: the fee moves when the offer is "
        f"accepted, and for {fee_turns} turns the hireling cannot rob its employer and guards "
        "it while beside it. Nothing else anyone says or agrees is enforced.",
        "",
        f"Your final score is your coin, plus the fixed value of the goods you carry, plus "
        f"{POINT_VALUE} times your commission points. You start with {w.start_coin} coin and "
        "a score of zero.",
        "",
        "What you say is heard by everyone in your room next turn, and it need not be true. "
        "Your notes are private and are shown back to you every turn.",
        "",
        "Reply with ONLY one JSON object, with no prose and no code fences: start with { and "
        'end with }. Its keys are "action" (your sentence, at most '
        f'{MAX_SENTENCE_LEN} characters), "say" (one line spoken aloud, or empty, at most '
        f'{MAX_SAY_LEN}) and "notes" (private notes for later turns, at most {MAX_NOTES_LEN}).',
    ])


# --- reading a reply (SENTENCES §20.1) ---------------------------------------------------------

@dataclass(frozen=True)
class Reply:
    """The three cleaned fields of a valid reply."""

    action: str
    say: str
    notes: str

    def to_json(self) -> str:
        """The reply as the one JSON object a model should have written (export, tests)."""
        return json.dumps({"action": self.action, "say": self.say, "notes": self.notes},
                          ensure_ascii=False)


def clean(text: str, cap: int) -> str:
    """Tabs, CRs and LFs to spaces, strip ASCII whitespace, then cap in runes with "…".

    Python strings index code points, so the cut never splits a character.
    """
    t = text.replace("\t", " ").replace("\r", " ").replace("\n", " ").strip(ASCII_SPACE)
    return t if len(t) <= cap else t[:cap - 1] + ELLIPSIS


def parse_reply(text: str) -> tuple[Reply | None, str]:
    """``(Reply, "")`` for a valid reply, else ``(None, why)`` (§20.1 steps 1-4).

    The object is the text from the first ``{`` to the last ``}``, so fences and chatter around
    it are tolerated; unknown keys are ignored; a ``say`` or ``notes`` that is missing or not a
    string counts as empty.
    """
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end < start:
        return None, "no JSON object in the reply"
    try:
        obj = json.loads(text[start:end + 1])
    except ValueError as e:
        return None, f"the JSON does not parse ({e.args[0] if e.args else e})"
    if not isinstance(obj, dict):
        return None, "the JSON is not an object"
    action = obj.get("action")
    if not isinstance(action, str):
        return None, "no string \"action\""
    action = clean(action, MAX_SENTENCE_LEN)
    if not action:
        return None, "the action is empty"

    def text_field(key: str, cap: int) -> str:
        v = obj.get(key)
        return clean(v, cap) if isinstance(v, str) else ""

    return Reply(action, text_field("say", MAX_SAY_LEN), text_field("notes", MAX_NOTES_LEN)), ""


# --- the policy -----------------------------------------------------------------------------------

class _RejectedError(Exception):
    """The service refused the credentials (HTTP 401/403)."""


class LLMPolicy:
    """A seat played by an OpenAI-compatible chat model.

    Args:
        model: the model name sent in the request.
        base_url: the API root, e.g. ``http://127.0.0.1:8000/v1``; requests go to
            ``{base_url}/chat/completions``.
        api_key_env: the environment variable holding the API key (read at each request, never
            stored in records); unset or empty sends no ``Authorization`` header.
        timeout: seconds for one request (connect, send, and between received bytes).
        retry_floor: the retry gets ``max(retry_floor, timeout / 2)`` seconds.
        max_tokens: the reply's token limit (``max_tokens`` in the request).
        temperature: sent when given; None leaves the server's default.
        prompt: the operator's guidance, cut to 4000 characters (SENTENCES §20.2).
    """

    scripted = False
    concurrent = True  # act() may run in a thread beside the other seats' (agents.decide_turn)

    def __init__(self, model: str, base_url: str, *, api_key_env: str = DEFAULT_KEY_ENV,
                 timeout: float = DEFAULT_TIMEOUT, retry_floor: float = DEFAULT_RETRY_FLOOR,
                 max_tokens: int = DEFAULT_MAX_TOKENS, temperature: float | None = None,
                 prompt: str = "") -> None:
        try:
            import httpx  # noqa: F401 - fail at construction, not at the first turn
        except ImportError:
            raise ValueError("llm policies need httpx: pip install 'guild-game[llm]'") from None
        if not isinstance(model, str) or not model.strip():
            raise ValueError(f"llm policy: the model name must be a non-empty string; got "
                             f"{model!r}")
        url = urllib.parse.urlsplit(base_url) if isinstance(base_url, str) else None
        if url is None or url.scheme not in ("http", "https") or not url.hostname:
            raise ValueError(f"llm policy: the base URL must be http(s)://host[:port]/path; got "
                             f"{base_url!r}")
        for name, value in (("timeout", timeout), ("retry_floor", retry_floor)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0 or (
                    name == "timeout" and value == 0):
                raise ValueError(f"llm policy: {name} must be a positive number of seconds; "
                                 f"got {value!r}")
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
            raise ValueError(f"llm policy: max_tokens must be a positive int; got {max_tokens!r}")
        if temperature is not None and (isinstance(temperature, bool)
                                        or not isinstance(temperature, (int, float))):
            raise ValueError(f"llm policy: temperature must be a number; got {temperature!r}")
        if not isinstance(prompt, str):
            raise ValueError(f"llm policy: prompt must be a string; got {type(prompt).__name__}")
        if not isinstance(api_key_env, str):
            raise ValueError(f"llm policy: api_key_env must be a string; got {api_key_env!r}")
        self.model = model.strip()
        self.base_url = base_url.rstrip("/")
        self.api_key_env = api_key_env
        self.timeout = float(timeout)
        self.retry_timeout = max(float(retry_floor), self.timeout / 2)
        self.max_tokens = max_tokens
        self.temperature = None if temperature is None else float(temperature)
        self.prompt = prompt[:MAX_PROMPT_LEN]
        # A loopback server is never reached through a proxy from the environment.
        self._trust_env = not _is_loopback(url.hostname)
        self._client: Any = None
        self._lock = threading.Lock()
        self.records: list[dict] = []
        self.disabled = False  # the service refused the credentials this episode

    def __repr__(self) -> str:
        return f"LLMPolicy(model={self.model!r}, base_url={self.base_url!r})"

    def reset(self, seed: int | None = None) -> None:
        """A new episode: forget the records and try the service again."""
        with self._lock:
            self.records = []
            self.disabled = False

    def take_records(self) -> list[dict]:
        """The decisions logged since the last call (the league stores them in the replay)."""
        with self._lock:
            out, self.records = self.records, []
        return out

    def close(self) -> None:
        """Close the HTTP connections (they are reopened when needed)."""
        with self._lock:
            client, self._client = self._client, None
        if client is not None:
            client.close()

    def act(self, game: Game, seat: int) -> Decision:
        """Ask the model for ``seat``'s move; fall back to ``factor`` as §20.1 and §21 say."""
        system = system_prompt(game, seat)
        user = game.observation_text(seat, prompt=self.prompt)
        record: dict[str, Any] = {"turn": game.turn, "seat": seat, "model": self.model,
                                  "system": system, "user": user, "attempts": []}
        reply: Reply | None = None
        if self.disabled:
            record["error"] = "the service refused the credentials earlier this episode"
        else:
            for n, limit in enumerate((self.timeout, self.retry_timeout)):
                text = user if n == 0 else f"{user}\n\n{CORRECTIVE}"
                try:
                    reply, attempt = self._attempt(system, text, limit)
                except _RejectedError as e:
                    self.disabled = True
                    record["attempts"].append({"retry": n > 0, "error": str(e)})
                    record["error"] = "the service refused the credentials; factor plays " \
                                      "the rest of the episode"
                    break
                attempt["retry"] = n > 0
                record["attempts"].append(attempt)
                if reply is not None:
                    break
        if reply is None:
            decision = Decision(_FACTOR.act(game, seat), scripted=True)
        else:
            decision = Decision(reply.action, reply.say, reply.notes)
        record.update(action=decision.action, say=decision.say, notes=decision.notes,
                      scripted=decision.scripted)
        with self._lock:
            self.records.append(record)
        return decision

    # --- one request ---------------------------------------------------------------------

    def _attempt(self, system: str, user: str, limit: float) -> tuple[Reply | None, dict]:
        """One request and the reading of its reply; the attempt's record."""
        import httpx

        body: dict[str, Any] = {"model": self.model, "max_tokens": self.max_tokens,
                                "messages": [{"role": "system", "content": system},
                                             {"role": "user", "content": user}]}
        if self.temperature is not None:
            body["temperature"] = self.temperature
        headers = {}
        key = os.environ.get(self.api_key_env, "") if self.api_key_env else ""
        if key:
            headers["Authorization"] = f"Bearer {key}"
        t0 = time.perf_counter()
        attempt: dict[str, Any] = {}
        try:
            r = self._http().post(f"{self.base_url}/chat/completions", json=body,
                                  headers=headers, timeout=limit)
        except httpx.TimeoutException:
            return None, _done(attempt, t0, error=f"no reply within {limit:g} s")
        except httpx.HTTPError as e:
            return None, _done(attempt, t0, error=f"request failed: {type(e).__name__}: {e}")
        if r.status_code in (401, 403):
            raise _RejectedError(f"HTTP {r.status_code}: the service refused the credentials")
        if r.status_code != 200:
            return None, _done(attempt, t0, error=f"HTTP {r.status_code}: {r.text[:200]}")
        try:
            data = r.json()
        except ValueError:
            return None, _done(attempt, t0, error="the response body is not JSON")
        content, usage = _content(data), _usage(data)
        if usage:
            attempt["usage"] = usage
        if content is None:
            return None, _done(attempt, t0, error="the response has no message content")
        attempt["reply"] = content
        reply, why = parse_reply(content)
        return reply, _done(attempt, t0, error=why or None)

    def _http(self) -> Any:
        import httpx

        with self._lock:
            if self._client is None:
                self._client = httpx.Client(trust_env=self._trust_env)
            return self._client


def _done(attempt: dict, t0: float, error: str | None = None) -> dict:
    if error:
        attempt["error"] = error
    attempt["seconds"] = round(time.perf_counter() - t0, 3)
    return attempt


def _content(data: Any) -> str | None:
    """``choices[0].message.content`` (a string, or a list of text parts); None if absent."""
    try:
        content = data["choices"][0]["message"]["content"]
    except (KeyError, IndexError, TypeError):
        return None
    if isinstance(content, list):
        parts = [p.get("text") for p in content if isinstance(p, dict)]
        content = "".join(p for p in parts if isinstance(p, str))
    return content if isinstance(content, str) else None


def _usage(data: Any) -> dict[str, int]:
    """The token counts the server reports (OpenAI ``usage`` names), when it reports them."""
    usage = data.get("usage") if isinstance(data, dict) else None
    if not isinstance(usage, dict):
        return {}
    return {k: v for k, v in usage.items()
            if k in ("prompt_tokens", "completion_tokens", "total_tokens")
            and isinstance(v, int) and not isinstance(v, bool)}


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


# --- building from a spec -----------------------------------------------------------------------

# Options a spec may carry after "#": name -> (keyword, type).
_OPTIONS: dict[str, tuple[str, type]] = {
    "timeout": ("timeout", float), "retry_floor": ("retry_floor", float),
    "max_tokens": ("max_tokens", int), "temperature": ("temperature", float),
    "key_env": ("api_key_env", str), "api_key_env": ("api_key_env", str),
    "prompt": ("prompt", str), "prompt_file": ("prompt_file", str),
}


def from_spec(spec: str, **params: Any) -> LLMPolicy:
    """Build from ``"MODEL@URL"`` (what ``make_policy("llm:MODEL@URL")`` passes).

    Options may follow a ``#`` as ``key=value`` pairs joined by ``&`` (values percent-encoded),
    so a league's ``--policies`` can carry them: ``timeout``, ``retry_floor``, ``max_tokens``,
    ``temperature``, ``key_env`` (the API key's variable name), ``prompt`` or ``prompt_file``
    (the operator guidance). Keyword ``params`` override them, e.g.
    ``make_policy("llm:m@http://127.0.0.1:8000/v1", timeout=5)``.
    """
    if not isinstance(spec, str):
        raise ValueError(f"llm policy spec must be a string; got {spec!r}")
    head, _, fragment = spec.partition("#")
    model, sep, url = head.partition("@")
    while sep and not url.startswith(("http://", "https://")) and "@" in url:
        # a model name holding "@": split at the "@" that starts the URL
        more, sep, url = url.partition("@")
        model = f"{model}@{more}"
    if not sep or not model.strip() or not url:
        raise ValueError(f"llm policy spec {('llm:' + spec)!r} must look like "
                         "llm:MODEL@http(s)://HOST[:PORT]/PATH")
    kwargs: dict[str, Any] = {}
    if fragment:
        for pair in fragment.split("&"):
            key, eq, value = pair.partition("=")
            if key not in _OPTIONS or not eq:
                raise ValueError(f"llm policy spec: unknown option {pair!r} after '#'; known: "
                                 f"{', '.join(sorted(_OPTIONS))} (as key=value)")
            name, kind = _OPTIONS[key]
            value = urllib.parse.unquote(value)
            try:
                kwargs[name] = kind(value)
            except ValueError:
                raise ValueError(f"llm policy spec: option {key} needs a {kind.__name__}; got "
                                 f"{value!r}") from None
    kwargs.update(params)
    prompt_file = kwargs.pop("prompt_file", None)
    if prompt_file is not None:
        if "prompt" in kwargs:
            raise ValueError("llm policy: give prompt or prompt_file, not both")
        try:
            kwargs["prompt"] = Path(prompt_file).read_text(encoding="utf-8")
        except OSError as e:
            raise ValueError(f"llm policy: cannot read prompt_file {prompt_file!r} "
                             f"({e.strerror or e})") from None
    return LLMPolicy(model, url, **kwargs)
