"""Language-model seats: a policy is a prompt (SENTENCES §17-§21, RULES §6.6).

:class:`LLMPolicy` plays a seat by asking any OpenAI-compatible chat endpoint
(``POST {base_url}/chat/completions``): the system message explains the game and the reply
format in our own words (:func:`system_prompt`, SENTENCES §18), the user message is the seat's
text view (§17), and the reply, one JSON object ``{action, say, notes}``, is read as §20.1 says
(:func:`parse_reply`). Failures, as the original host does them (§20.1, §21): an invalid reply
or a failed request is asked again **once**, with a corrective line and half the timeout (at
least ``retry_floor`` seconds); a second failure plays the seat's fallback for that turn
(``factor``, or a wait under a league's ``--fallback wait``), marked scripted; a service that
rejects the credentials (HTTP 401 or 403) is switched off for the rest of the episode (the
fallback at once, no network wait). A valid reply whose sentence the grammar cannot read is
*not* a failure: it is played, and its reason shown to the seat next turn.

With ``choose="admissible"`` (``agents.llm.choose``) the model picks one of the seat's legal
acts by number instead of writing a sentence: another prompt, a schema with an ``enum`` (or the
local server's grammar), and a reply that is usable only as one of the choices.

By default (``response_format="auto"``) a request asks for JSON matching :data:`REPLY_SCHEMA`
in OpenAI's ``json_schema`` form, then llama-cpp-python's ``json_object`` + ``schema``, then no
format, remembering per endpoint and model the first form accepted (a refused form is not an
attempt, but its time counts against the attempt's timeout; each attempt records its
``format``). Deviation: with no API key set, no
``Authorization`` header is sent, since local servers need none, where the original plays
``factor`` at once.

``act`` returns an :class:`agents.Decision`, and ``concurrent = True`` lets the league ask all
language-model seats of a turn at once, in threads (RULES §6.6). Every decision is logged in
``records`` (mode, messages, each attempt's raw reply or error, token counts, time to the first
streamed token, seconds, the choice, whether the act was a legal row), which the league
stores in the replay under ``"llm"`` and ``guild export-sft`` turns into training rows. The
reading of prompts and replies is ``agents.llm.prompt`` (re-exported here), one HTTP request
``agents.llm.client``, and building a policy from an ``llm:`` spec ``agents.llm.spec``.
"""

from __future__ import annotations

import math
import os
import re
import threading
import time
import urllib.parse
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from agents.baselines.rules import WAIT
from agents.baselines.scripted import Factor
from agents.llm.choose import (
    MODES,
    Choice,
    choice_grammar,
    choice_schema,
    choose_system_prompt,
    choose_user_prompt,
    extras_for,
    is_admissible,
    parse_choice,
    shown_labels,
)
from agents.llm.choose import admissible as admissible_sentences
from agents.llm.client import ChatClient, RejectedError, no_reply
from agents.llm.prompt import (
    ASCII_SPACE,
    CORRECTIVE,
    ELLIPSIS,
    REPLY_SCHEMA,
    RESPONSE_FORMATS,
    Reply,
    clean,
    parse_reply,
    response_format,
    system_prompt,
)
from agents.policy import Decision
from sim import Game
from sim.commandline import NotRegularFileError, read_head
from sim.rules.errors import shown
from sim.rules.world import MAX_PROMPT_LEN

__all__ = ["ASCII_SPACE", "CORRECTIVE", "DEFAULT_KEY_ENV", "DEFAULT_MAX_TOKENS",
           "DEFAULT_RETRY_FLOOR", "DEFAULT_TIMEOUT", "ELLIPSIS", "LLMPolicy", "REPLY_SCHEMA",
           "Reply", "clean", "parse_reply", "system_prompt"]

DEFAULT_TIMEOUT = 24.0      # RULES §6.7 llmTimeoutSeconds
DEFAULT_MAX_TOKENS = 900    # RULES §6.7 maxOutputTokens
DEFAULT_RETRY_FLOOR = 8.0   # SENTENCES §20.1: the retry gets half the timeout, at least 8 s
PROBE_TIMEOUT = 10.0        # seconds to connect when a league checks the endpoint first
DEFAULT_KEY_ENV = "OPENAI_API_KEY"
MAX_TIMEOUT = 3600.0        # seconds: a bound on timeout and retry_floor
MAX_URL_CHARS = 2000
MAX_MAX_TOKENS = 1_000_000  # a bound on max_tokens (no model replies with more)
SHOWN_CHARS = 80            # what an error line shows of a spec or an option's value
# A prompt_file is read up to this many bytes: the most that MAX_PROMPT_LEN characters of
# UTF-8 take (the prompt is cut there), so a huge or endless file costs nothing more.
MAX_PROMPT_FILE_BYTES = 4 * MAX_PROMPT_LEN
KEY_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
KEY_ENV_WORDS = ("KEY", "TOKEN", "SECRET")  # what a key's variable is named with (not PATH)

FALLBACKS = ("factor", "wait")
CHOOSE_CORRECTIVE = ("Your previous reply was not one of the choices. Reply with only "
                     '{"action": N}, N the number of one choice above.')

_FACTOR = Factor()
# (base_url, model) -> the response_format kind that endpoint accepted (``"auto"`` policies).
_ACCEPTED_FORMAT: dict[tuple[str, str], str] = {}


@dataclass(frozen=True)
class Ask:
    """One decision's request in a mode: the messages, the line a retry adds, how a reply is
    read, and (choosing mode) the choices with the schema and grammar that constrain it."""

    system: str
    user: str
    corrective: str
    read: Callable[[str], tuple[Reply | Choice | None, str]]
    choices: list[str] | None = None
    schema: dict | None = None
    grammar: str | None = None


# --- the policy -----------------------------------------------------------------------------------

class LLMPolicy:
    """A seat played by an OpenAI-compatible chat model.

    Args:
        model: the model name sent in the request.
        base_url: the API root, e.g. ``http://127.0.0.1:8000/v1``; requests go to
            ``{base_url}/chat/completions``.
        api_key_env: the environment variable holding the API key (read at each request, never
            stored in records); unset or empty sends no ``Authorization`` header. Its name must
            hold ``KEY``, ``TOKEN`` or ``SECRET``, so a spec cannot send ``PATH`` to its URL.
        timeout: seconds for one request, the reply's body included (at most 3600).
        retry_floor: the retry gets ``max(retry_floor, timeout / 2)`` seconds.
        max_tokens: the reply's token limit (``max_tokens`` in the request).
        temperature: sent when given; None leaves the server's default.
        prompt: the operator's guidance, cut to 4000 characters (SENTENCES §20.2).
        response_format: ``"auto"`` (ask for the schema in the forms the endpoint accepts),
            one of ``"json_schema"``, ``"json_object"`` (always that form), or ``"none"``.
        choose: ``"free"`` (the model writes its sentence) or ``"admissible"`` (it picks one
            of the seat's legal acts by number: ``agents.llm.choose``).
        talk: in the choosing mode, whether the answer may add ``say`` and ``notes`` (False:
            the action alone, fewest tokens).
        fallback: what plays a decision the model did not make: ``"factor"`` (RULES §21) or
            ``"wait"`` (a league's ``--fallback wait`` sets it).
    """

    scripted = False
    concurrent = True  # act() may run in a thread beside the other seats' (agents.decide_turn)

    def __init__(self, model: str, base_url: str, *, api_key_env: str = DEFAULT_KEY_ENV,
                 timeout: float = DEFAULT_TIMEOUT, retry_floor: float = DEFAULT_RETRY_FLOOR,
                 max_tokens: int = DEFAULT_MAX_TOKENS, temperature: float | None = None,
                 prompt: str = "", response_format: str = "auto", choose: str = "free",
                 fallback: str = "factor", talk: bool = True) -> None:
        try:
            import httpx  # noqa: F401 - fail at construction, not at the first turn
        except ImportError:
            raise ValueError("llm policies need httpx: pip install 'guild-game[llm]'") from None
        if not isinstance(model, str) or not model.strip():
            raise ValueError(f"llm policy: the model name must be a non-empty string; got "
                             f"{model!r}")
        check_base_url(base_url)
        for name, value in (("timeout", timeout), ("retry_floor", retry_floor)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) \
                    or not math.isfinite(value) or value < 0 or value > MAX_TIMEOUT \
                    or (name == "timeout" and value == 0):
                raise ValueError(f"llm policy: {name} must be a positive number of seconds, at "
                                 f"most {MAX_TIMEOUT:g}; got {value!r}")
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) \
                or not 1 <= max_tokens <= MAX_MAX_TOKENS:
            raise ValueError(f"llm policy: max_tokens must be an int from 1 to {MAX_MAX_TOKENS}; "
                             f"got {shown(max_tokens, SHOWN_CHARS)}")
        if temperature is not None and (isinstance(temperature, bool)
                                        or not isinstance(temperature, (int, float))
                                        or not math.isfinite(temperature)):
            raise ValueError(f"llm policy: temperature must be a finite number; got "
                             f"{temperature!r}")
        if not isinstance(prompt, str):
            raise ValueError(f"llm policy: prompt must be a string; got {type(prompt).__name__}")
        if response_format != "auto" and response_format not in RESPONSE_FORMATS:
            raise ValueError(f"llm policy: response_format must be auto, "
                             f"{', '.join(RESPONSE_FORMATS)}; got {response_format!r}")
        if choose not in MODES:
            raise ValueError(f"llm policy: choose must be one of {', '.join(MODES)}; got "
                             f"{choose!r}")
        if fallback not in FALLBACKS:
            raise ValueError(f"llm policy: fallback must be one of {', '.join(FALLBACKS)}; "
                             f"got {fallback!r}")
        if not isinstance(talk, bool):
            raise ValueError(f"llm policy: talk must be true or false; got {talk!r}")
        check_key_env(api_key_env)
        api_key(api_key_env)  # a key a header cannot carry is said now, not at each request
        self.model = model.strip()
        self.base_url = base_url.rstrip("/")
        self.api_key_env = api_key_env
        self.timeout = float(timeout)
        self.retry_timeout = max(float(retry_floor), self.timeout / 2)
        self.max_tokens = max_tokens
        self.temperature = None if temperature is None else float(temperature)
        self.prompt = prompt[:MAX_PROMPT_LEN]
        self.response_format = response_format
        self.choose = choose
        self.fallback = fallback
        self.talk = talk
        self._chat = ChatClient(self.base_url)
        self._lock = threading.Lock()
        self.records: list[dict] = []
        self.disabled = False  # the service refused the credentials this episode
        # over the policy's life, not an episode: whoever measures it (guild evaluate) must
        # learn that its fallback, not the model, played
        self.decisions = 0
        self.fallbacks = 0
        self.first_failure: str | None = None

    def __repr__(self) -> str:
        return f"LLMPolicy(model={self.model!r}, base_url={shown_url(self.base_url)!r})"

    def probe(self) -> None:
        """Before a league: a ValueError in one line when nothing listens at the endpoint, so
        that a wrong URL or a server not yet started is said at once, not found later as a
        seat whose every decision fell back."""
        why = self._chat.unreachable(min(self.timeout, PROBE_TIMEOUT))
        if why is not None:
            raise ValueError(f"llm policy {self.model!r}: nothing answers at "
                             f"{shown_url(self.base_url)} ({why[:200]}); start the server or "
                             "fix the URL")

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
        self._chat.close()

    def act(self, game: Game, seat: int) -> Decision:
        """Ask the model for ``seat``'s move; fall back as §20.1 and §21 say."""
        t0 = time.perf_counter()
        ask = self._ask(game, seat)
        record: dict[str, Any] = {"turn": game.turn, "seat": seat, "model": self.model,
                                  "mode": self.choose, "system": ask.system, "user": ask.user,
                                  "attempts": []}
        if ask.choices is not None:
            record["choices"] = len(ask.choices)
        reply: Reply | Choice | None = None
        if self.disabled:
            record["error"] = "the service refused the credentials earlier this episode"
        else:
            for n, limit in enumerate((self.timeout, self.retry_timeout)):
                text = ask.user if n == 0 else f"{ask.user}\n\n{ask.corrective}"
                try:
                    reply, attempt = self._attempt(ask, text, limit)
                except RejectedError as e:
                    self.disabled = True
                    record["attempts"].append({"retry": n > 0, "error": str(e)})
                    record["error"] = (f"the service refused the credentials; {self.fallback} "
                                       "plays the rest of the episode")
                    break
                attempt["retry"] = n > 0
                record["attempts"].append(attempt)
                if reply is not None:
                    break
        if reply is None:
            decision = Decision(self._fallback_act(game, seat), scripted=True)
        else:
            decision = Decision(reply.action, reply.say, reply.notes)
            if isinstance(reply, Choice):
                record["choice"] = reply.number
            # Was the model's own act one of the seat's legal rows? (always, when choosing)
            record["admissible"] = isinstance(reply, Choice) or is_admissible(
                game, seat, reply.action)
        record.update(action=decision.action, say=decision.say, notes=decision.notes,
                      scripted=decision.scripted, seconds=round(time.perf_counter() - t0, 3))
        with self._lock:
            self.records.append(record)
            self.decisions += 1
            if reply is None:
                self.fallbacks += 1
                if self.first_failure is None:
                    self.first_failure = record.get("error") or next(
                        (a["error"] for a in reversed(record["attempts"]) if a.get("error")),
                        "no usable reply")
        return decision

    def _ask(self, game: Game, seat: int) -> Ask:
        """What to send for ``seat`` this turn in this policy's mode, and how to read it."""
        if self.choose == "free":
            return Ask(system_prompt(game, seat), game.observation_text(seat, prompt=self.prompt),
                       CORRECTIVE, parse_reply)
        choices = admissible_sentences(game, seat)
        extras = extras_for(self.talk, game.config.speech)
        shown = shown_labels(game, seat, choices)
        return Ask(choose_system_prompt(game, self.prompt, extras),
                   choose_user_prompt(game, seat, choices, shown), CHOOSE_CORRECTIVE,
                   lambda text: parse_choice(text, choices, shown, extras), choices,
                   choice_schema(len(choices), extras), choice_grammar(len(choices), extras))

    def _fallback_act(self, game: Game, seat: int) -> str:
        """The act played when the model gave no usable reply: ``factor``'s, or a wait."""
        return _FACTOR.act(game, seat) if self.fallback == "factor" else WAIT

    # --- one request ---------------------------------------------------------------------

    def _attempt(self, ask: Ask, user: str,
                 limit: float) -> tuple[Reply | Choice | None, dict]:
        """One request and the reading of its reply; the attempt's record."""
        body: dict[str, Any] = {"model": self.model, "max_tokens": self.max_tokens,
                                "messages": [{"role": "system", "content": ask.system},
                                             {"role": "user", "content": user}]}
        if self.temperature is not None:
            body["temperature"] = self.temperature
        headers = {}
        try:
            key = api_key(self.api_key_env)
        except ValueError as e:  # the variable changed since the policy was built
            return None, {"error": str(e), "seconds": 0.0}
        if key:
            headers["Authorization"] = f"Bearer {key}"
        content, attempt = self._send(body, headers, limit, ask)
        # Where the time went, "unknown" where the endpoint does not say.
        attempt.setdefault("first_token", "unknown")
        attempt["cached_tokens"] = attempt.get("usage", {}).get("cached_tokens", "unknown")
        attempt.setdefault("usage", "unknown")
        if content is None:
            return None, attempt
        reply, why = ask.read(content)
        if why:
            attempt["error"] = why
        return reply, attempt

    def _formats(self) -> Sequence[str]:
        """The response_format kinds to try, in order."""
        if self.response_format != "auto":
            return (self.response_format,)
        known = _ACCEPTED_FORMAT.get((self.base_url, self.model))
        return RESPONSE_FORMATS if known is None else RESPONSE_FORMATS[
            RESPONSE_FORMATS.index(known):]

    def _send(self, body: dict, headers: dict[str, str], limit: float,
              ask: Ask) -> tuple[str | None, dict[str, Any]]:
        """Send ``body`` with each format in turn while the endpoint refuses the format, all
        within ``limit`` seconds: a server that is slow to refuse each format does not stretch
        one decision to several timeouts (the record's ``seconds`` is the whole time)."""
        kinds = self._formats()
        refused: list[str] = []
        t0 = time.perf_counter()
        deadline = t0 + limit
        for n, kind in enumerate(kinds):
            fmt = response_format(kind, ask.schema)
            if fmt is None:
                body.pop("response_format", None)
            else:
                body["response_format"] = fmt
            left = limit if n == 0 else max(deadline - time.perf_counter(), 0.001)
            content, attempt = self._chat.complete(body, headers, left)
            if content is None and refuses_format(attempt) and n + 1 < len(kinds) \
                    and time.perf_counter() < deadline:
                refused.append(kind)  # perhaps the format: try the next form at once
                continue
            attempt["format"] = kind
            if refused:
                attempt["refused_formats"] = refused
                attempt["seconds"] = round(time.perf_counter() - t0, 3)
                if attempt.get("error") == no_reply(left):
                    attempt["error"] = no_reply(limit)  # the decision's limit, not what was left
            if content is not None and self.response_format == "auto":
                _ACCEPTED_FORMAT[(self.base_url, self.model)] = kind
            return content, attempt
        raise AssertionError("unreachable: the last format always returns")


def refuses_format(attempt: dict[str, Any]) -> bool:
    """Whether a failed attempt looks like the endpoint refusing ``response_format``: HTTP 400
    or 422, or any error status whose body names it (llama-cpp-python answers 500)."""
    status = attempt.get("status")
    return status is not None and (status in (400, 422)
                                   or "response_format" in attempt.get("error", ""))


# --- building from a spec -----------------------------------------------------------------------

def flag(value: str) -> bool:
    """A spec's yes/no option: ``1``/``true``/``yes`` or ``0``/``false``/``no``."""
    low = value.strip().lower()
    if low in ("1", "true", "yes"):
        return True
    if low in ("0", "false", "no"):
        return False
    raise ValueError(value)


# Options a spec may carry after "#": name -> (keyword, type).
OPTIONS: dict[str, tuple[str, type]] = {
    "timeout": ("timeout", float), "retry_floor": ("retry_floor", float),
    "max_tokens": ("max_tokens", int), "temperature": ("temperature", float),
    "key_env": ("api_key_env", str), "api_key_env": ("api_key_env", str),
    "prompt": ("prompt", str), "prompt_file": ("prompt_file", str),
    "format": ("response_format", str), "response_format": ("response_format", str),
    "choose": ("choose", str), "fallback": ("fallback", str), "talk": ("talk", flag),
}


def parse_options(fragment: str, options: dict[str, tuple[str, type]]) -> dict[str, Any]:
    """The ``key=value&...`` options after a spec's ``#``, typed by ``options``."""
    kwargs: dict[str, Any] = {}
    for pair in fragment.split("&") if fragment else ():
        key, eq, value = pair.partition("=")
        if key not in options or not eq:
            raise ValueError(f"llm policy spec: unknown option {shown(pair, SHOWN_CHARS)} after "
                             f"'#'; known: {', '.join(sorted(options))} (as key=value)")
        name, kind = options[key]
        value = urllib.parse.unquote(value)
        try:
            kwargs[name] = kind(value)
        except ValueError:
            kind_name = {flag: "true or false", int: "an int"}.get(kind, f"a {kind.__name__}")
            raise ValueError(f"llm policy spec: option {key} needs {kind_name}; got "
                             f"{shown(value, SHOWN_CHARS)}") from None
    return kwargs


def read_prompt_file(kwargs: dict[str, Any]) -> dict[str, Any]:
    """``kwargs`` with a ``prompt_file`` read into ``prompt``: a regular file (a FIFO would
    block, a device never end), read up to :data:`MAX_PROMPT_FILE_BYTES`."""
    prompt_file = kwargs.pop("prompt_file", None)
    if prompt_file is not None:
        if "prompt" in kwargs:
            raise ValueError("llm policy: give prompt or prompt_file, not both")
        if not isinstance(prompt_file, (str, os.PathLike)):
            raise ValueError(f"llm policy: prompt_file must be a path; got {prompt_file!r}")
        kwargs["prompt"] = read_text_head(prompt_file, MAX_PROMPT_FILE_BYTES, "prompt_file")
    return kwargs


def read_text_head(path: str | os.PathLike, cap: int, what: str) -> str:
    """The first ``cap`` bytes of the regular file ``path`` as UTF-8 text (a character cut at
    the end dropped); a one-line ValueError naming ``what`` otherwise. The file is opened
    without blocking, so a FIFO put in its place is refused rather than waited on."""
    try:
        data = read_head(path, cap)
    except NotRegularFileError:
        raise ValueError(f"llm policy: {what} {str(path)!r} is not a regular file") from None
    except (OSError, ValueError) as e:  # ValueError: a NUL in the path
        raise ValueError(f"llm policy: cannot read {what} {str(path)!r} "
                         f"({getattr(e, 'strerror', None) or e})") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        if len(data) == cap and e.start >= cap - 3 and e.reason == "unexpected end of data":
            return data[:e.start].decode("utf-8")
        raise ValueError(f"llm policy: {what} {str(path)!r} is not UTF-8 text (byte "
                         f"{e.start})") from None


def check_base_url(base_url: Any) -> None:
    """A one-line ValueError unless ``base_url`` is an http(s) URL with a host, a valid port if
    any, no user or password (a key in the URL would be recorded wherever the spec is), and no
    space or control character; it is shown without what follows an "@"."""
    if not isinstance(base_url, str):
        raise ValueError(f"llm policy: the base URL must be a string; got {base_url!r}")
    shown = shown_url(base_url)
    if len(base_url) > MAX_URL_CHARS:
        raise ValueError(f"llm policy: the base URL {shown[:60]!r}... is over "
                         f"{MAX_URL_CHARS:,} characters")
    if "@" in base_url.partition("://")[2].partition("/")[0]:  # user:pw@host, not a path's @
        raise ValueError(f"llm policy: the base URL {shown!r} may not hold a user or password "
                         "('@'); put the API key in an environment variable and name it with "
                         f"key_env (default {DEFAULT_KEY_ENV})")
    if any(c.isspace() or not c.isprintable() for c in base_url):
        raise ValueError(f"llm policy: the base URL {shown!r} holds a space or a control "
                         "character")
    try:
        url = urllib.parse.urlsplit(base_url)
    except ValueError as e:  # an unclosed "[" of an IPv6 address
        raise ValueError(f"llm policy: the base URL {shown!r} is not a URL ({e})") from None
    if url.scheme not in ("http", "https") or not url.hostname:
        raise ValueError(f"llm policy: the base URL must be http(s)://host[:port]/path; got "
                         f"{shown!r}")
    try:
        port = url.port
    except ValueError:
        port = 0
    if port == 0:
        raise ValueError(f"llm policy: the base URL {shown!r} has no valid port (a port is a "
                         "number in 1..65535)")


def check_key_env(name: Any) -> None:
    """A one-line ValueError unless ``name`` is "" (no key) or a variable's name that holds
    KEY, TOKEN or SECRET (``OPENAI_API_KEY_2``, ``HF_TOKEN``): a spec's option must not send
    some other variable of the runner's (``PATH``, ``HOME``) to the spec's URL as a key."""
    if not isinstance(name, str):
        raise ValueError(f"llm policy: key_env must be a string; got {name!r}")
    if name and not (KEY_ENV_NAME.fullmatch(name)
                     and any(w in name.upper() for w in KEY_ENV_WORDS)):
        raise ValueError(f"llm policy: key_env must name an environment variable whose name "
                         f"holds KEY, TOKEN or SECRET (letters, digits, _), such as "
                         f"{DEFAULT_KEY_ENV}; got {name[:80]!r}")


def api_key(name: str) -> str:
    """The API key in the environment variable ``name`` ("" when no name or unset), without
    surrounding whitespace (a line's end); a one-line ValueError naming the variable, never
    its value, when the key holds a character that an HTTP header cannot carry (a line break,
    a control character, non-ASCII), which would otherwise be sent in error messages or raise
    in the request."""
    key = os.environ.get(name, "").strip() if name else ""  # a key read from a file ends a line
    if any(not "!" <= c <= "~" for c in key):
        raise ValueError(f"llm policy: the API key in ${name} holds a line break, a space, a "
                         "control or a non-ASCII character; set the variable to the key alone")
    return key


def shown_url(url: str) -> str:
    """``url`` without what may be secret in it: anything up to an "@" after the scheme (a
    user and password) and the query. Fit for an error line, a log or a repr."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        scheme, rest = "", url
    return f"{scheme}{sep}{rest.rpartition('@')[2]}".partition("?")[0]
