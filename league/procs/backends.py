"""Running many episodes: in this process, in worker processes, or as Ray tasks.

Every backend yields batches (lists) of ``(row, replay_json_or_None)`` in episode order,
whatever order the episodes finish in, so the results file is the same line for line on every
backend; a batch is what the league makes durable at once (a chunk of a worker, or several
finished ones, one episode in this process). Local workers (``league.procs.workers``) write replays
themselves (in parallel, straight to the shared disk, without fsync: the league syncs a batch's
replays together before its lines); Ray tasks may run on other machines, so they return the
replay text and the driver writes it, and the league refuses to start (``LeagueError``) rather
than let a policy that does not load there play ``factor`` in its name.
"""

from __future__ import annotations

import contextlib
import importlib.util
import logging
import os
import re
import signal
import socket
import subprocess
import sys
import sysconfig
import threading
from collections import deque
from collections.abc import Iterator, Sequence
from typing import Any

from league.core.episode import Settings, check_policy, play
from league.core.errors import LeagueError
from league.core.lineups import EpisodeSpec
from league.procs.workers import (
    Batch,
    Item,
    WorkerDiedError,
    chunk_size,
    run_chunk,
    run_processes,
    share_cpus_among,
)

__all__ = ["Batch", "Item", "WorkerDiedError", "chunk_size", "ray_available", "run_chunk",
           "run_inline", "run_processes", "run_ray", "ray_session"]


def run_inline(specs: Sequence[EpisodeSpec], settings: Settings) -> Iterator[Batch]:
    """One episode after another in this process (``--workers 1``): simplest to debug.

    Each episode is a batch of its own, so a slow policy's finished episodes are recorded at
    once."""
    for i in range(len(specs)):
        yield [play(specs[i], settings)]


# --- Ray -----------------------------------------------------------------------------------
# A Ray worker may run on another machine, with another import path: a policy module that only
# the driver can import would fail to build there, and every episode would quietly play factor
# in its name. So the policies' own modules travel with the tasks (``py_modules``), every node
# is asked to build every policy before any episode, and a task refuses to play rather than
# fall back when a policy does not build where it runs. (Ray uploads local code only with
# ray.init: a caller that started Ray itself must ship the code in its own runtime_env.)

CONNECT_TIMEOUT = 20.0  # seconds to reach --address before saying no Ray is there
PROBE_TIMEOUT = 120.0  # seconds for every node to answer the policy probe (ships code first)
_PROJECT = ("sim", "agents", "league", "feasibility", "bench")  # installed with the workers


def ray_available() -> bool:
    try:
        import ray  # noqa: F401
    except ImportError:
        return False
    return True


def policy_code(policies: Sequence[str]) -> list[str]:
    """The files and package directories of the ``module:Name`` policies, to ship to workers.

    Only the top-level module or package is looked up (``find_spec``), and only code outside
    the interpreter's installation and this project (which the workers have) is listed.
    """
    from sim.policies import POLICIES

    installed = {os.path.realpath(p) for p in sysconfig.get_paths().values()}
    found: list[str] = []
    for spec in policies:
        prefix, colon, _ = spec.strip().partition(":")
        if not colon or not prefix or ("." not in prefix and POLICIES.factory(prefix)):
            continue  # a registered name or prefix (ppo:, sb3:, llm:): installed code
        top = prefix.split(".")[0]
        try:
            found_spec = importlib.util.find_spec(top)
        except (ImportError, ValueError):
            found_spec = None
        if top in _PROJECT or found_spec is None:
            continue  # not importable here either: the probe will say so
        places = list(found_spec.submodule_search_locations or [])
        path = places[0] if len(places) == 1 else found_spec.origin
        if not path or not os.path.exists(path):
            continue  # built in, frozen, or a namespace split over several directories
        real = os.path.realpath(path)
        if not any(real.startswith(root + os.sep) for root in installed) and real not in found:
            found.append(real)
    return found


def run_ray(specs: Sequence[EpisodeSpec], settings: Settings, workers: int,
            address: str | None) -> Iterator[Batch]:
    """Episodes as Ray tasks, yielded in order, a chunk at a time; same chunks and results
    as local workers.

    Uses the running Ray instance if this process already called ``ray.init``; otherwise
    starts a local one with ``workers`` CPUs, or joins the cluster at ``address``. The nodes
    need this project installed; the ``module:Name`` policies' code is shipped with the job.
    Raises ``LeagueError`` (before any episode) when Ray cannot be reached or a policy cannot
    be built on some node.
    """
    try:
        import ray
    except ImportError:
        raise LeagueError("--backend ray needs Ray: pip install 'guild-game[ray]'") from None
    started = not ray.is_initialized()
    if started:
        _init(ray, workers, address, policy_code(settings.policies))
    ours = started or _OWN_SESSION  # Ray shipped the policies' code: no advice on runtime_env
    pending: deque[Any] = deque()
    try:
        try:
            _probe(ray, settings)
        except LeagueError as e:
            if ours:
                raise
            raise LeagueError(f"{e} (Ray was started before the league: give ray.init "
                              "runtime_env={'py_modules': [...]} with the policies' code)"
                              ) from None
        task = ray.remote(num_cpus=1, max_retries=0)(_ray_chunk)
        settings_ref = ray.put(settings)
        size = chunk_size(len(specs), workers)
        todo = iter([specs[i:i + size] for i in range(0, len(specs), size)])
        for chunk in todo:
            pending.append(task.remote(list(chunk), settings_ref, workers))
            if len(pending) >= 4 * workers:
                break
        while pending:
            items = _get(ray, pending.popleft())
            try:
                nxt = next(todo, None)
                if nxt is not None:
                    pending.append(task.remote(list(nxt), settings_ref, workers))
            except ray.exceptions.RayError as e:  # the cluster went while we submit
                raise _failure(ray, e) from None
            yield items
    finally:
        for ref in pending:
            with contextlib.suppress(Exception):  # a dead node's tasks cannot be cancelled
                ray.cancel(ref, force=True)
        if started:
            ray.shutdown()


_OWN_SESSION = False  # Ray was started by ray_session (the league), not by our caller


@contextlib.contextmanager
def ray_session(workers: int, address: str | None, policies: Sequence[str]) -> Iterator[None]:
    """Ray started (or joined) for a whole league, before its directory is touched: a cluster
    it cannot use is refused (``LeagueError``) with nothing written. Shut down at the end."""
    global _OWN_SESSION
    import ray  # check_options made sure it is there

    if ray.is_initialized():  # the caller's own instance: theirs to shut down
        yield
        return
    _init(ray, workers, address, policy_code(policies))
    _OWN_SESSION = True
    try:
        yield
    finally:
        _OWN_SESSION = False
        ray.shutdown()


def _init(ray: Any, workers: int, address: str | None, code: list[str]) -> None:
    """``ray.init`` shipping ``code``, with a one-line ``LeagueError`` instead of a hang or a
    traceback. Ray accepts local paths to upload only here, for the whole job, not per task.

    ``ray.init`` installs SIGTERM handlers of its own (exit 15 with Ray's dump); the league's
    (``guild league``: 143, one line, finished episodes kept) are put back after it. Stopped
    while Ray starts (Ctrl-C, SIGTERM), it shuts down what has started before going on.
    """
    env: dict[str, Any] = {"py_modules": code} if code else {}
    kw: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False,
                          "logging_level": logging.WARNING}  # errors stay one line
    if address:
        _reachable(address)  # ray.init may retry for minutes, printing each time
        kw["address"] = address  # remote nodes have their own paths
    else:
        kw["num_cpus"] = workers
        env["env_vars"] = {"PYTHONPATH": _pythonpath()}
    if env:
        kw["runtime_env"] = env
    handlers = _handlers()
    try:
        ray.init(**kw)
    except Exception as e:  # connection refused, bad address, a cluster already running...
        _shutdown(ray)
        _restore(handlers)
        msg = str(e).splitlines()[0] if str(e) else type(e).__name__
        if not address and "num_cpus" in msg:
            raise LeagueError("a Ray cluster already runs here (ray start or RAY_ADDRESS), and "
                              "Ray will not start another with --workers CPUs: use it with "
                              "--address auto, or stop it first") from None
        raise LeagueError(f"cannot start or reach Ray at {address or 'a local instance'}: {msg}"
                          ) from None
    except BaseException as e:
        _shutdown(ray)
        _restore(handlers)
        on_term = handlers.get(signal.SIGTERM)
        if isinstance(e, SystemExit) and e.code == signal.SIGTERM and callable(on_term):
            on_term(signal.SIGTERM, None)  # Ray's handler took the SIGTERM: the league's says it
        raise
    _restore(handlers)


_SIGNALS = (signal.SIGTERM, signal.SIGINT)


def _handlers() -> dict[int, Any]:
    """The signal handlers ``ray.init`` replaces (only the main thread may set them)."""
    if threading.current_thread() is not threading.main_thread():
        return {}
    return {sig: signal.getsignal(sig) for sig in _SIGNALS}


def _restore(handlers: dict[int, Any]) -> None:
    for sig, handler in handlers.items():
        if handler is not None:  # None: set outside Python, cannot be put back
            signal.signal(sig, handler)


def _shutdown(ray: Any) -> None:
    """``ray.shutdown`` of a half-started Ray, so no Ray process is left behind."""
    with contextlib.suppress(Exception):
        ray.shutdown()


def _reachable(address: str) -> None:
    """Refuse in one line, within ``CONNECT_TIMEOUT`` seconds, an ``--address`` with no Ray.

    ``ray.init`` itself retries for minutes when something listens there but does not answer
    as Ray does, and prints a warning per attempt; a thread cannot stop it. So a child process
    connects first (and is killed if it takes too long); a plain TCP check before it answers
    at once for an address where nothing listens or a host that does not exist.
    """
    if address not in ("auto", "local"):
        host, colon, port = address.split("://", 1)[-1].rstrip("/").rpartition(":")
        if not colon or not host or not port.isdigit():
            raise LeagueError(f"--address must be HOST:PORT (or auto); got {address!r}")
        try:
            socket.create_connection((host.strip("[]"), int(port)), CONNECT_TIMEOUT / 4).close()
        except OSError as e:
            why = "timed out" if isinstance(e, TimeoutError) else (e.strerror or str(e))
            raise LeagueError(f"no Ray cluster at {address} ({why}); start one with "
                              "`ray start --head`, or check the address") from None
    env = {**os.environ, "RAY_gcs_server_port_wait_time_s": "5"}  # 5 attempts, not 20
    try:
        child = subprocess.run([sys.executable, "-c", _TRY_CONNECT, address], env=env,
                               capture_output=True, text=True, timeout=CONNECT_TIMEOUT)
    except subprocess.TimeoutExpired:
        raise LeagueError(f"no Ray cluster answered at {address} within "
                          f"{CONNECT_TIMEOUT:.0f} s (is it a Ray head's address?)") from None
    if child.returncode != 0:
        last = (child.stderr.strip().splitlines() or ["no reason given"])[-1]
        raise LeagueError(f"cannot reach a Ray cluster at {address}: {last}")


_TRY_CONNECT = """import sys, ray
ray.init(address=sys.argv[1], include_dashboard=False, log_to_driver=False, logging_level=40)
"""


def _probe(ray: Any, settings: Settings) -> None:
    """Build every policy once on every node with CPUs (one that runs apart in its sandbox, so
    a node where the sandbox cannot start refuses the league); refuse the league if one fails
    there."""
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    check = ray.remote(num_cpus=1, max_retries=0)(_policy_trouble)
    nodes = [n["NodeID"] for n in ray.nodes() if n.get("Alive") and
             n.get("Resources", {}).get("CPU", 0) >= 1]
    refs = [check.options(scheduling_strategy=NodeAffinitySchedulingStrategy(node, soft=False))
            .remote(settings) for node in nodes]
    try:
        answers = ray.get(refs, timeout=PROBE_TIMEOUT)
    except ray.exceptions.GetTimeoutError:
        for ref in refs:
            with contextlib.suppress(Exception):
                ray.cancel(ref, force=True)
        raise LeagueError(f"Ray workers did not answer within {PROBE_TIMEOUT:.0f} s (no free "
                          "CPU on the cluster?)") from None
    except ray.exceptions.RayError as e:
        if _interrupted(ray, e):
            raise KeyboardInterrupt from None
        raise LeagueError(f"Ray cannot run the policy check: {_ray_said(e)}") from None
    for trouble in answers:
        if trouble is not None:
            raise LeagueError(trouble)


def _get(ray: Any, ref: Any) -> list[Item]:
    """One chunk's items, or the error that stops the league (a worker died, a refusal)."""
    try:
        items = ray.get(ref)
    except ray.exceptions.RayError as e:
        raise _failure(ray, e) from None
    if isinstance(items, str):  # a node that joined after the probe cannot build a policy
        raise LeagueError(items)
    return items


def _failure(ray: Any, e: BaseException) -> BaseException:
    """What a Ray error while episodes run stops the league with, as the local backend would:
    ``KeyboardInterrupt`` for a task interrupted (a policy's Ctrl-C; the league cancels no task
    it still waits for), ``LeagueError`` for a refusal, else ``WorkerDiedError`` (one line,
    finished episodes kept: a dead worker or node, a lost object, an error of Ray's own)."""
    if _interrupted(ray, e):
        return KeyboardInterrupt()
    if isinstance(e, ray.exceptions.RuntimeEnvSetupError):
        return LeagueError(f"Ray cannot set up a worker for the policies: {_ray_said(e)}")
    if isinstance(e, ray.exceptions.WorkerCrashedError):
        return WorkerDiedError("a Ray worker died (a policy may have ended the process or "
                               "crashed the interpreter)")
    cause = getattr(e, "cause", None) if isinstance(e, ray.exceptions.RayTaskError) else None
    if isinstance(cause, LeagueError):  # raised by the episode, as in a local worker
        return LeagueError(str(cause))
    if cause is not None:
        return WorkerDiedError(f"a Ray task failed: {type(cause).__name__}: {_ray_said(cause)}")
    return WorkerDiedError(f"Ray failed while episodes ran ({type(e).__name__}: "
                           f"{_ray_said(e)})")


def _interrupted(ray: Any, e: BaseException) -> bool:
    """Whether ``e`` is a task stopped by Ctrl-C (Ray reports a ``KeyboardInterrupt`` in a task
    as its cancellation)."""
    cancelled = (KeyboardInterrupt, ray.exceptions.TaskCancelledError)
    return isinstance(e, cancelled) or isinstance(getattr(e, "cause", None), cancelled)


_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _ray_said(e: BaseException, limit: int = 200) -> str:
    """The first line of a Ray error that says something (of a task's error, its cause's),
    without colour codes or the ``ray::task() (pid=...)`` heading, cut to ``limit``."""
    cause = getattr(e, "cause", None)
    if isinstance(cause, BaseException) and cause is not e:
        e = cause
    lines = [_ANSI.sub("", line).strip() for line in str(e).splitlines()]
    lines = [line for line in lines if line and not line.startswith("ray::")]
    text = lines[0] if lines else type(e).__name__
    return text if len(text) <= limit else text[:limit - 3] + "..."


_BUILT: set[str] = set()  # policies this worker process has built once


def _policy_trouble(settings: Settings) -> str | None:
    """None if every policy builds in this worker (one that runs apart: in its sandbox, which
    must start on this node); else one line naming the policy and us."""
    for spec in settings.policies:
        if spec in _BUILT:
            continue
        try:
            check_policy(spec, settings)
        except Exception as e:  # a user's policy may raise anything while being built
            where = f"{socket.gethostname()} ({_node_ip()}), pid {os.getpid()}"
            return (f"policy {spec!r} cannot be built on Ray worker {where}: "
                    f"{type(e).__name__}: {_first_line(e)}; no episode was played with it")
        _BUILT.add(spec)
    return None


def _ray_chunk(specs: Sequence[EpisodeSpec], settings: Settings,
               workers: int = 1) -> list[Item] | str:
    share_cpus_among(workers, settings.policies)
    return _policy_trouble(settings) or run_chunk(specs, settings)


def _node_ip() -> str:
    try:
        import ray

        return str(ray.util.get_node_ip_address())
    except Exception:  # outside Ray, or an older Ray: the host name says enough
        return "?"


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__


def _pythonpath() -> str:
    """This process's import path, so local Ray workers find the project and the policies."""
    paths = [os.path.abspath(p or os.curdir) for p in sys.path]
    return os.pathsep.join(dict.fromkeys(paths))
