"""Running many episodes: in this process, in worker processes, or as Ray tasks.

Every backend yields ``(row, replay_json_or_None)`` in episode order, whatever order the
episodes finish in, so the results file is the same line for line on every backend. Local
workers write replays themselves (in parallel, straight to the shared disk); Ray tasks may run
on other machines, so they return the replay text and the driver writes it.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import sys
from collections import deque
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from .episode import Settings, play
from .errors import LeagueError
from .lineups import EpisodeSpec

Item = tuple[dict, "str | None"]


class WorkerDiedError(RuntimeError):
    """A worker process ended abruptly (e.g. a policy called ``os._exit`` or crashed C code)."""


def chunk_size(n: int, workers: int) -> int:
    """Episodes per task: big enough to amortise messaging, small enough to balance load."""
    return max(1, min(16, n // (workers * 8) or 1))


def run_chunk(specs: Sequence[EpisodeSpec], settings: Settings) -> list[Item]:
    """Play ``specs`` in order (the unit of work of every backend)."""
    return [play(spec, settings) for spec in specs]


def run_inline(specs: Sequence[EpisodeSpec], settings: Settings) -> Iterator[Item]:
    """One episode after another in this process (``--workers 1``): simplest to debug."""
    for i in range(len(specs)):
        yield play(specs[i], settings)


# --- worker processes ------------------------------------------------------------------------

_SETTINGS: Settings | None = None


def _init_worker(settings: Settings) -> None:
    global _SETTINGS
    _SETTINGS = settings
    # Ctrl-C goes to the whole process group; only the parent handles it (and stops us).
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _worker_chunk(specs: Sequence[EpisodeSpec]) -> list[Item]:
    assert _SETTINGS is not None, "worker not initialised"
    return run_chunk(specs, _SETTINGS)


def _context() -> Any:
    """``forkserver`` where available (no fork of a threaded parent), else ``spawn``.

    The fork server imports ``league.episode`` once, so each worker starts with ``sim`` and
    ``agents`` already loaded.
    """
    methods = multiprocessing.get_all_start_methods()
    if "forkserver" in methods:
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload(["league.episode"])
        return ctx
    return multiprocessing.get_context("spawn")


def run_processes(specs: Sequence[EpisodeSpec], settings: Settings,
                  workers: int) -> Iterator[Item]:
    """Episodes spread over ``workers`` processes, yielded in order.

    At most ``4 * workers`` chunks are in flight, so a slow writer never lets results pile up.
    On any exit (including Ctrl-C in the parent) queued work is cancelled and the workers are
    stopped.
    """
    size = chunk_size(len(specs), workers)
    chunks = (specs[i:i + size] for i in range(0, len(specs), size))
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=_context(),
                               initializer=_init_worker, initargs=(settings,))
    pending: deque[Future] = deque()
    clean = False
    try:
        todo = iter(chunks)
        for chunk in todo:
            pending.append(pool.submit(_worker_chunk, chunk))
            if len(pending) >= 4 * workers:
                break
        while pending:
            try:
                items = pending.popleft().result()
            except BrokenProcessPool:
                raise WorkerDiedError("a worker process died (a policy may have ended the process "
                                 "or crashed the interpreter)") from None
            nxt = next(todo, None)
            if nxt is not None:
                pending.append(pool.submit(_worker_chunk, nxt))
            yield from items
        clean = True
    finally:
        if not clean:
            # Stop the workers without cancelling futures first: on Python 3.11 the pool's
            # manager thread then sets an exception on each pending future, and a cancelled
            # one raises InvalidStateError from that thread (a traceback on Ctrl-C).
            for proc in list(getattr(pool, "_processes", {}).values()):
                proc.terminate()
            pool.shutdown(wait=True)
        else:
            pool.shutdown(wait=True, cancel_futures=True)


# --- Ray -----------------------------------------------------------------------------------

def ray_available() -> bool:
    try:
        import ray  # noqa: F401
    except ImportError:
        return False
    return True


def run_ray(specs: Sequence[EpisodeSpec], settings: Settings, workers: int,
            address: str | None) -> Iterator[Item]:
    """Episodes as Ray tasks, yielded in order; same chunks and results as local workers.

    Uses the running Ray instance if this process already called ``ray.init``; otherwise
    starts a local one with ``workers`` CPUs, or joins the cluster at ``address``. The cluster's
    nodes need this project and the policies' modules importable (install them there, or start
    the cluster with a runtime environment that provides them).
    """
    try:
        import ray
    except ImportError:
        raise LeagueError("--backend ray needs Ray: pip install 'guild-game[ray]'") from None
    started = False
    if not ray.is_initialized():
        kw: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False,
                              "runtime_env": {"env_vars": {"PYTHONPATH": _pythonpath()}}}
        if address:
            kw["address"] = address
            kw.pop("runtime_env")  # remote nodes have their own paths
        else:
            kw["num_cpus"] = workers
        try:
            ray.init(**kw)
        except Exception as e:  # connection refused, bad address...
            raise LeagueError(f"cannot start or reach Ray at {address or 'a local instance'}: "
                              f"{str(e).splitlines()[0] if str(e) else type(e).__name__}"
                              ) from None
        started = True
    task = ray.remote(num_cpus=1, max_retries=0)(_ray_chunk)
    settings_ref = ray.put(settings)
    size = chunk_size(len(specs), workers)
    chunks = (specs[i:i + size] for i in range(0, len(specs), size))
    pending: deque[Any] = deque()
    todo = iter(chunks)
    try:
        for chunk in todo:
            pending.append(task.remote(list(chunk), settings_ref))
            if len(pending) >= 4 * workers:
                break
        while pending:
            try:
                items = ray.get(pending.popleft())
            except ray.exceptions.WorkerCrashedError:
                raise WorkerDiedError("a Ray worker died (a policy may have ended the process "
                                      "or crashed the interpreter)") from None
            nxt = next(todo, None)
            if nxt is not None:
                pending.append(task.remote(list(nxt), settings_ref))
            yield from items
    finally:
        for ref in pending:
            ray.cancel(ref, force=True)
        if started:
            ray.shutdown()


def _ray_chunk(specs: Sequence[EpisodeSpec], settings: Settings) -> list[Item]:
    return run_chunk(specs, settings)


def _pythonpath() -> str:
    """This process's import path, so local Ray workers find the project and the policies."""
    paths = [os.path.abspath(p or os.curdir) for p in sys.path]
    return os.pathsep.join(dict.fromkeys(paths))
