"""Policies that attack the sandbox a league runs untrusted seats in (``league.apart.sandbox``).

Fixtures of ``tests/test_sandbox.py``.  Each cheat tries one attack from inside its seat
process and reports what it saw in the notes of the decision it plays (a short JSON object,
kept in the replay's act events as ``text``), or in the message of the exception it raises
(the results' ``faultNotes``).  The league never reads a file a seat wrote, and neither do the
tests: the evidence travels through the seat protocol like any other answer.

The test may copy this file next to a policy's files and append constants (``LEAGUE_PID``,
``OUT``, ``PORT``...), so one source serves every test: nothing here imports anything but the
standard library and ``agents`` (which the sandbox shows).
"""

from __future__ import annotations

import errno
import json
import os
import secrets
import signal
import socket
import sys
import threading
import time

from agents.policy import Decision

WAIT = "I wait and watch the road."

# Set by a test that copies this file (appended at its end).
LEAGUE_PID: int | None = None   # the league's process, as the machine numbers it
SECRET_NAME = "GUILD_TEST_SECRET"  # an environment variable of the league's
SECRET_VALUE = "s3cret"
OUT: str | None = None          # the league's --out folder
PORT: int | None = None         # a TCP port the test listens on (127.0.0.1, outside)
ABSTRACT: str | None = None     # an abstract unix socket the test listens on (outside)
SECRET_FILE = "secret.txt"      # a file of the league's next to this module, mode 0600
FILL_CAP_MB = 256               # the scratch filler stops here even if nothing stops it


def _errno(e: OSError) -> str:
    return errno.errorcode.get(e.errno or 0, type(e).__name__)


def report(**evidence: object) -> Decision:
    """Wait, and tell the test what was seen (at most 600 characters of notes)."""
    text = json.dumps(evidence, separators=(",", ":"), sort_keys=True)
    return Decision(WAIT, notes=text)


def _pids() -> list[int]:
    return sorted(int(p) for p in os.listdir("/proc") if p.isdigit())


# --- 1. the league's process ------------------------------------------------------------------

class ReadsLeague:
    """Reads the environment, command line and memory of every other process it can name."""

    def act(self, game, seat):
        me = os.getpid()
        pids = _pids()
        targets = [p for p in pids if p != me] + [os.getppid()]
        if LEAGUE_PID is not None:
            targets.append(LEAGUE_PID)
        tried: dict[str, str] = {}
        leaked = False
        for pid in dict.fromkeys(targets):
            for name in ("environ", "cmdline", "mem"):
                try:
                    with open(f"/proc/{pid}/{name}", "rb") as f:
                        data = f.read(1 << 16)
                    tried[f"{pid}/{name}"] = "READ"
                    leaked = leaked or SECRET_VALUE.encode() in data
                except OSError as e:
                    tried[f"{pid}/{name}"] = _errno(e)
        with open("/proc/self/environ", "rb") as f:
            own = f.read()
        leaked = (leaked or SECRET_VALUE.encode() in own or SECRET_NAME in os.environ
                  or any(SECRET_VALUE in v for v in os.environ.values()))
        return report(me=me, pids=pids, tried=tried, leaked=leaked, env=sorted(os.environ),
                      pwd=os.environ.get("PWD"))


# --- 2. privileges ----------------------------------------------------------------------------

class Privileges:
    """Reads its capabilities and uid, and tries to become root."""

    def act(self, game, seat):
        with open("/proc/self/status") as f:
            status = dict(line.split(":", 1) for line in f.read().splitlines() if ":" in line)
        caps = {k: status[k].strip() for k in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb")}
        tried = {}
        for name, call in (("setuid0", lambda: os.setuid(0)), ("setgid0", lambda: os.setgid(0)),
                           ("setgroups", lambda: os.setgroups([0]))):
            try:
                call()
                tried[name] = "OK"
            except OSError as e:
                tried[name] = _errno(e)
        return report(uid=os.getuid(), euid=os.geteuid(), gid=os.getgid(),
                      groups=os.getgroups(), caps=caps, nnp=status["NoNewPrivs"].strip(),
                      tried=tried)


# --- 3. a file only root may read -------------------------------------------------------------

class ReadsSecret:
    """Reads (and tries to open up) a root-only file next to its own module."""

    def act(self, game, seat):
        here = os.path.dirname(os.path.abspath(__file__))
        path = os.path.join(here, SECRET_FILE)
        seen = SECRET_FILE in os.listdir(here)
        try:
            with open(path) as f:
                got = "READ:" + f.read(40)
        except OSError as e:
            got = _errno(e)
        try:
            os.chmod(path, 0o644)
            chmod = "OK"
        except OSError as e:
            chmod = _errno(e)
        return report(seen=seen, read=got, chmod=chmod)


# --- 4. writing outside its scratch -----------------------------------------------------------

def _write(path: str, mode: str = "w") -> str:
    try:
        with open(path, mode) as f:
            f.write("cheat\n")
        return "OK"
    except OSError as e:
        return _errno(e)


class WritesOutside:
    """Writes to its own folder, the repository, root's home, /usr, the league's --out..."""

    def act(self, game, seat):
        here = os.path.dirname(os.path.abspath(__file__))
        targets = {"pkg": os.path.join(here, "x"), "work": "/work/x", "main": "/work/main/x",
                   "agents": "/work/main/agents/x", "root": "/root/x", "usr": "/usr/x",
                   "etc": "/etc/x", "top": "/x", "dev": "/dev/x", "prefix":
                   os.path.join(sys.prefix, "x"), "scratch": "/scratch/x"}
        wrote = {k: _write(v) for k, v in targets.items()}
        listing: object = None
        peek: object = None
        replays = 0
        if OUT is not None:
            wrote["out"] = _write(os.path.join(OUT, "x"))
            wrote["results"] = _write(os.path.join(OUT, "results.jsonl"), "a")
            try:
                os.mkdir(os.path.join(OUT, f"cheat-{secrets.token_hex(4)}"))
                wrote["mkdir"] = "OK"
            except OSError as e:
                wrote["mkdir"] = _errno(e)
            try:
                listing = sorted(os.listdir(OUT))
            except OSError as e:
                listing = _errno(e)
            try:  # the league's results (and its replays: every seat's hidden state)
                with open(os.path.join(OUT, "results.jsonl"), "rb") as f:
                    peek = f"READ:{len(f.read())}"
            except OSError as e:
                peek = _errno(e)
            replays = 0
            try:
                for name in os.listdir(os.path.join(OUT, "replays")):
                    with open(os.path.join(OUT, "replays", name), "rb") as f:
                        replays += bool(f.read(1))
            except OSError:
                pass
        return report(wrote=wrote, out=listing, peek=peek, replays=replays)


# --- 5. signals -------------------------------------------------------------------------------

KILLED: dict | None = None


class KillsEveryone:
    """Sends SIGSTOP and SIGKILL to every pid it sees, its parent, a range of small pids and of
    process groups, every process it may signal (-1) and the league's own pid.  (Its own
    process group, 0, is :class:`KillsOwnGroup`'s.)"""

    def act(self, game, seat):
        global KILLED
        if KILLED is None:
            targets = [*_pids(), os.getppid(), *range(-300, 4097)]
            if LEAGUE_PID is not None:
                targets.append(LEAGUE_PID)
            sent: list[int] = []
            errors: dict[str, int] = {}
            for pid in dict.fromkeys(t for t in targets if t != 0):
                for sig in (signal.SIGSTOP, signal.SIGKILL):
                    try:
                        os.kill(pid, sig)
                        if pid not in sent:
                            sent.append(pid)
                    except OSError as e:
                        errors[_errno(e)] = errors.get(_errno(e), 0) + 1
            KILLED = {"sent": sent, "errors": errors}
        return report(me=os.getpid(), **KILLED)


class KillsOwnGroup:
    """Sends SIGSTOP, then SIGKILL, to its own process group (``kill(0, ...)``), then waits a
    moment before it answers."""

    def act(self, game, seat):
        os.kill(0, signal.SIGSTOP)
        os.kill(0, signal.SIGKILL)
        time.sleep(1.0)
        return report(me=os.getpid(), group=os.getpgrp())


# --- 6. a daemon ------------------------------------------------------------------------------

DAEMON: int | None = None


def _sleep_forever() -> None:
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(sig, signal.SIG_IGN)
    while True:
        time.sleep(3600)


class LeavesDaemon:
    """Double fork and setsid: a grandchild with no parent, no terminal and no pipes, that
    ignores SIGTERM and SIGHUP and sleeps, hoping to outlive the league."""

    def act(self, game, seat):
        global DAEMON
        if DAEMON is None:
            r, w = os.pipe()
            child = os.fork()
            if child == 0:
                try:
                    os.close(r)
                    os.setsid()
                    if os.fork() == 0:
                        null = os.open("/dev/null", os.O_RDWR)
                        for fd in (0, 1, 2):
                            os.dup2(null, fd)
                        os.write(w, str(os.getpid()).encode())
                        os.close(w)
                        _sleep_forever()
                finally:
                    os._exit(0)
            os.close(w)
            os.waitpid(child, 0)
            DAEMON = int(os.read(r, 32) or b"0")
            os.close(r)
        return report(uid=os.getuid(), daemon=DAEMON, alive=os.path.exists(f"/proc/{DAEMON}"),
                      pids=_pids())


# --- 7. a fork bomb ---------------------------------------------------------------------------

BOMB: str | None = None
BOMB_SECONDS = 4.0   # how long every process of the bomb keeps forking
BOMB_FANOUT = 24     # children per process...
BOMB_DEPTH = 2       # ...and generations: 1 + 24 + 576 processes per seat if nothing stops it


def _bomb() -> str:
    end = time.monotonic() + BOMB_SECONDS
    depth = made = failed = 0
    first = ""
    while time.monotonic() < end and made < BOMB_FANOUT:
        try:
            pid = os.fork()
        except OSError as e:
            failed += 1
            first = first or _errno(e)
            time.sleep(0.005)
            continue
        if pid == 0:  # a child: forks its own children, then sleeps
            depth += 1
            made = failed = 0
            if depth >= BOMB_DEPTH:
                break
            continue
        made += 1
    if depth:
        try:
            _sleep_forever()
        finally:
            os._exit(0)
    time.sleep(1.0)  # the children's children come up
    return (f"BOMB uid={os.getuid()} procs={len(_pids())} forked={made} failed={failed} "
            f"err={first or '-'}")


class ForkBomb:
    """Forks endlessly on its first decision (every child forks too, and then sleeps); then
    raises what it saw on every decision."""

    def act(self, game, seat):
        global BOMB
        if BOMB is None:
            BOMB = _bomb()
        raise RuntimeError(BOMB)


# --- 8. filling its scratch -------------------------------------------------------------------

FILLED: dict | None = None


def _fill(folder: str) -> list:
    """Write zeros into ``folder`` until the disk is full (or FILL_CAP_MB): [bytes, errno]."""
    path = os.path.join(folder, f"fill-{os.getpid()}-{secrets.token_hex(4)}")
    chunk = b"\1" * (1 << 20)
    total, why = 0, "cap"
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except OSError as e:
        return [0, _errno(e)]
    try:
        while total < FILL_CAP_MB << 20:
            try:
                total += os.write(fd, chunk)
            except OSError as e:
                why = _errno(e)
                break
    finally:
        os.close(fd)
        os.unlink(path)
    return [total, why]


class FillsScratch:
    """Writes to its working folder, /tmp and /dev/shm until nothing more fits."""

    def act(self, game, seat):
        global FILLED
        if FILLED is None:
            FILLED = {"cwd": os.getcwd(), "scratch": _fill("."), "tmp": _fill("/tmp"),
                      "shm": _fill("/dev/shm"), "home": os.environ.get("HOME"),
                      "tmpdir": os.environ.get("TMPDIR")}
        return report(**FILLED)


# --- 10. sleeping -----------------------------------------------------------------------------

class Sleeps:
    """Sleeps through every decision."""

    def act(self, game, seat):
        time.sleep(3600)
        return WAIT


class SleepsFirstTurn:
    """Sleeps forever on the first turn, then waits like anyone."""

    def act(self, game, seat):
        if game.turn == 0:
            time.sleep(3600)
        return WAIT


# --- 11. memory across the rotations of one town ----------------------------------------------

TOKEN = secrets.token_hex(6)  # this process (every seat is pid 1: its pid says nothing)
RESETS: list[int] = []


class Remembers:
    """Keeps every reset seed it was given in its module; reports its process's token, how many
    resets the process has seen and their seeds."""

    def reset(self, seed=None):
        RESETS.append(int(seed or 0))

    def act(self, game, seat):
        return report(t=TOKEN, n=len(RESETS), s=RESETS[-12:])


# --- 12. network ------------------------------------------------------------------------------

def _connect(family: int, address: object, kind: int = socket.SOCK_STREAM) -> list:
    """[outcome, milliseconds] of one connection attempt."""
    started = time.monotonic()
    try:
        with socket.socket(family, kind) as s:
            s.settimeout(5)
            s.connect(address)
            if kind == socket.SOCK_DGRAM:
                s.send(b"\0" * 12)
        got = "OK"
    except socket.gaierror as e:
        got = f"gai{e.errno}"
    except TimeoutError:
        got = "timeout"
    except OSError as e:
        got = _errno(e)
    return [got, round((time.monotonic() - started) * 1000)]


class Phones:
    """Connects to the test's listener on 127.0.0.1, to public addresses (TCP and UDP), to an
    abstract unix socket outside, and resolves a name."""

    def act(self, game, seat):
        tried = {
            "lo": _connect(socket.AF_INET, ("127.0.0.1", PORT or 1)),
            "lo1": _connect(socket.AF_INET, ("127.0.0.1", 1)),
            "dns": _connect(socket.AF_INET, ("1.1.1.1", 53)),
            "web": _connect(socket.AF_INET, ("8.8.8.8", 443)),
            "udp": _connect(socket.AF_INET, ("8.8.8.8", 53), socket.SOCK_DGRAM),
            "v6": _connect(socket.AF_INET6, ("2606:4700:4700::1111", 443)),
        }
        if ABSTRACT is not None:
            tried["unix"] = _connect(socket.AF_UNIX, "\0" + ABSTRACT)
        started = time.monotonic()
        try:
            socket.getaddrinfo("example.com", 443)
            tried["name"] = ["OK", 0]
        except OSError as e:
            tried["name"] = [f"gai{getattr(e, 'errno', '')}",
                             round((time.monotonic() - started) * 1000)]
        links = sorted(name for _, name in socket.if_nameindex())
        return report(tried=tried, links=links)


COLLUDE = "guild-collude"      # the abstract unix sockets the seats of Colludes listen on
# Their loopback ports: COLLUDE_PORT + seat, below Linux's ephemeral range (32768-60999 by
# default): a connect to a free port inside it now and then draws that very port as its own
# source and connects to itself (TCP's simultaneous open), which would read as a reached seat.
COLLUDE_PORT = 20000
_SERVING: list = []


def _serve(listener: socket.socket, seat: int) -> None:
    while True:
        try:
            conn, _ = listener.accept()
            with conn:
                conn.sendall(str(seat).encode())
        except OSError:
            return


class Colludes:
    """Each seat serves its seat number on an abstract unix socket and on the loopback (port
    ``COLLUDE_PORT`` + seat), from a thread that outlives the episode (its process may be
    pooled), and asks every other seat's socket and port: the seats of one policy, and a pooled
    process that played another seat of the same town, must not reach each other."""

    def act(self, game, seat):
        import threading

        served = []
        if not _SERVING:
            for family, address in ((socket.AF_UNIX, f"\0{COLLUDE}-{seat}"),
                                    (socket.AF_INET, ("127.0.0.1", COLLUDE_PORT + seat))):
                try:
                    listener = socket.socket(family, socket.SOCK_STREAM)
                    listener.bind(address)
                    listener.listen(8)
                except OSError as e:
                    served.append(_errno(e))
                    continue
                _SERVING.append(listener)
                served.append("OK")
                threading.Thread(target=_serve, args=(listener, seat), daemon=True).start()
        reached = {}
        for other in range(6):
            if other == seat:
                continue
            for name, family, address in (
                    ("unix", socket.AF_UNIX, f"\0{COLLUDE}-{other}"),
                    ("lo", socket.AF_INET, ("127.0.0.1", COLLUDE_PORT + other))):
                outcome, _ = _connect(family, address)
                if outcome == "OK":
                    reached[f"{name}{other}"] = outcome
        return report(served=served, listening=len(_SERVING), reached=reached)


class ServesItself:
    """Honest: serves on its own loopback (127.0.0.1, a port the kernel picks) from a child
    process, as a local model server would, and asks it, every decision; reports what came
    back."""

    def act(self, game, seat):
        try:
            listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            listener.bind(("127.0.0.1", 0))
            listener.listen(1)
        except OSError as e:
            return report(answer=_errno(e))
        pid = os.fork()
        if pid == 0:  # the server: answers one question, then ends
            try:
                conn, _ = listener.accept()
                with conn:
                    conn.sendall(b"served:" + conn.recv(64))
            finally:
                os._exit(0)
        try:
            with socket.create_connection(listener.getsockname(), timeout=5) as s:
                s.sendall(b"ping")
                with s.makefile("rb") as answer:  # all of it: the server closes
                    got = answer.read().decode()
        except OSError as e:
            got = _errno(e)
        finally:
            listener.close()
            os.kill(pid, signal.SIGKILL)  # a server nobody reached waits no longer
            os.waitpid(pid, 0)
        return report(answer=got)


# --- honest, and still hit: threads count against the sandbox's process limit -----------------

THREADS = 20    # a numerical library's thread per core (OpenBLAS, OpenMP) on a 20-core machine
_THREADED = False


class ThreadPerCore:
    """Honest: waits at once, every decision; its library starts a thread per core when
    first used (once per process, as a library does at import) and keeps them idle."""

    def reset(self, seed=None):
        global _THREADED
        if not _THREADED:
            _THREADED = True
            stop = threading.Event()
            for _ in range(THREADS):
                threading.Thread(target=stop.wait, daemon=True).start()

    def act(self, game, seat):
        return WAIT


# --- the town's seed, searched through the public draw -----------------------------------------

SEARCH_SEEDS = 300   # league seeds tried (a real attack would try many more)
SEARCH_GROUPS = 4    # groups tried per league seed


class SeedSearch:
    """Looks for its town: which ``--seed S`` and group give a game seed whose seat seed is
    the one it was reset with (the public draw of ``league.core.lineups``, step 1)."""

    found: list[int] | None = None

    def reset(self, seed: int | None) -> None:
        import hashlib

        from league.seat.protocol import seat_seed

        self.found = None
        for league_seed in range(SEARCH_SEEDS):
            for group in range(SEARCH_GROUPS):
                h = hashlib.sha256(f"guild-league:v1:{league_seed}:{group}".encode()).digest()
                game_seed = int.from_bytes(h[:4], "big") & 0x7FFF_FFFF
                if any(seat_seed(game_seed, s) == seed for s in range(6)):
                    self.found = [league_seed, group]
                    return

    def act(self, game, seat):
        return report(found=self.found)


# --- memory, all of a sandbox's processes together ----------------------------------------------

HOG_CHILDREN = 12    # each touches HOG_MB: 1.2 GB in all, over a 512 MB sandbox in the test
HOG_MB = 100


class MemoryHog:
    """Forks children that each fill ``HOG_MB`` (under the per-process address-space limit, so
    only a limit on the whole sandbox stops them) and counts those the kernel killed."""

    def act(self, game, seat):
        kids = []
        for _ in range(HOG_CHILDREN):
            pid = os.fork()
            if pid == 0:
                try:
                    block = bytearray(HOG_MB << 20)
                    for i in range(0, len(block), 4096):
                        block[i] = 1
                    time.sleep(3)
                finally:
                    os._exit(0)
            kids.append(pid)
        killed = 0
        for pid in kids:
            _, status = os.waitpid(pid, 0)
            killed += os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
        return report(killed=killed, children=len(kids))
