"""Episodes in local worker processes (``--workers N``), and the chunks every backend plays.

A league of our own baselines only forks its workers from the league's process on Linux while
it has no other thread: they start at once, with the engine already imported.
Other leagues (other people's code may start threads, or hold locks a fork would copy) take
workers from a fork server that imports the engine once (the largest fixed cost of a short
league); while it starts, a league of our own baselines only (which
cannot end or crash the process) plays its first episodes here, one at a time, instead of
waiting; episodes are deterministic, so who plays one changes nothing but ``wallTime``.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import multiprocessing.forkserver
import multiprocessing.util
import os
import signal
import sys
import threading
from collections import deque
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from league.apart.isolated import close_all
from league.core.episode import IN_PROCESS, Settings, play
from league.core.lineups import EpisodeSpec
from league.procs import lifeline
from league.seat.zygote import leave_all_cgroups

Item = tuple[dict, "str | None"]
Batch = list[Item]


class WorkerDiedError(RuntimeError):
    """A worker process ended abruptly (e.g. a policy called ``os._exit`` or crashed C code)."""


def chunk_size(n: int, workers: int) -> int:
    """Episodes per task: big enough to amortise messaging, small enough to balance load."""
    return max(1, min(16, n // (workers * 8) or 1))


def run_chunk(specs: Sequence[EpisodeSpec], settings: Settings) -> list[Item]:
    """Play ``specs`` in order (the unit of work of every backend)."""
    return [play(spec, settings) for spec in specs]


_SETTINGS: Settings | None = None


def runs_local_model(policies: Sequence[str]) -> bool:
    """Whether a seat of ``policies`` runs a language model on this machine (``llm:local``,
    trusted or not; an endpoint that happens to be named local does not)."""
    from agents.llm.spec import is_local
    from league.core.replay_seats import spec_of

    for name in policies:
        spec = spec_of(name)
        if spec.lower().startswith("llm:") and is_local(spec[len("llm:"):]):
            return True
    return False


def share_cpus_among(workers: int, policies: Sequence[str]) -> None:
    """Count this process as one of ``workers`` (worker processes or Ray tasks) running
    ``policies`` side by side: each starts its own model server for an ``llm:local`` seat, and
    each server takes its share of the CPUs. Set anew for every league: a Ray worker process
    outlives its league."""
    from agents.llm.local import share_cpus

    share_cpus(workers if workers > 1 and runs_local_model(policies) else 1)


def _init_worker(settings: Settings, league: int, workers: int) -> None:
    global _SETTINGS
    _SETTINGS = settings
    share_cpus_among(workers, settings.policies)
    # Ctrl-C goes to the whole process group; only the parent handles it (and stops us).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # No orphans: die with the league (pid ``league``) and kill our seat processes then.
    lifeline.stop_on_sigterm()
    lifeline.die_with(league)
    lifeline.at_death(leave_all_cgroups)  # stopped: no finalizer below runs
    # A worker leaves through os._exit, past atexit, running only the finalizers registered
    # in it (multiprocessing forgets those its parent registered): this one ends its seat
    # processes and zygotes when it ends normally, and removes their sandboxes' control groups.
    multiprocessing.util.Finalize(None, close_all, exitpriority=100)


def _worker_chunk(specs: Sequence[EpisodeSpec]) -> list[Item]:
    assert _SETTINGS is not None, "worker not initialised"
    return run_chunk(specs, _SETTINGS)


def forks_here(settings: Settings) -> bool:
    """Whether the workers are forked from this process: only our baselines play (no one
    else's code has run here), on Linux (fork is unsafe on macOS), and no other thread runs
    (a fork copies only the calling thread, and any lock another thread holds stays held)."""
    return (helps(settings) and sys.platform.startswith("linux")
            and "fork" in multiprocessing.get_all_start_methods()
            and threading.active_count() == 1)


def _context() -> Any:
    """``forkserver`` where available (no fork of a threaded parent), else ``spawn``.

    The fork server imports ``league.core.episode`` once, so each worker starts with ``sim`` and
    ``agents`` already loaded, and plays one short episode (``league.procs.warm``), so each starts
    with the town's caches filled too.
    """
    methods = multiprocessing.get_all_start_methods()
    if "forkserver" in methods:
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload(["league.core.episode", "league.procs.warm"])
        with _safe_path():
            multiprocessing.forkserver.ensure_running()
        return ctx
    return multiprocessing.get_context("spawn")


@contextlib.contextmanager
def _safe_path() -> Iterator[None]:
    """The fork server starts as ``python -c``, which puts the current folder first on its
    import path, and it imports our packages there (the preload; Python 3.11 does not give it
    our path): a ``agents.py`` or ``json.py`` beside a bot would run in the league's own
    process, outside every sandbox. ``PYTHONSAFEPATH`` (Python 3.11 and later) keeps the
    folder off; it is set for that start only, as seat programs may rely on their folder."""
    old = os.environ.get("PYTHONSAFEPATH")
    os.environ["PYTHONSAFEPATH"] = "1"
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("PYTHONSAFEPATH", None)
        else:
            os.environ["PYTHONSAFEPATH"] = old


def helps(settings: Settings) -> bool:
    """Whether this process may play episodes while the workers start: only our baselines."""
    return all(name.strip().lower() in IN_PROCESS for name in settings.policies)


def _start_workers(pool: ProcessPoolExecutor, workers: int, failed: list[BaseException]) -> None:
    """Start the pool's processes (a trivial task each spawns one, waiting for the fork
    server); run in a thread, so that the league can play meanwhile."""
    try:
        for _ in range(workers):
            pool.submit(int)
    except BaseException as e:  # raised again in the league's thread
        failed.append(e)


def run_processes(specs: Sequence[EpisodeSpec], settings: Settings,
                  workers: int) -> Iterator[Batch]:
    """Episodes spread over ``workers`` processes, yielded in order, a chunk at a time.

    While the workers start, this process plays the first episodes itself when ``helps``. Then
    at most ``4 * workers`` chunks are in flight, so a slow writer never lets results pile up;
    a batch is one chunk, or several finished ones when the writer is behind.
    On any exit (including Ctrl-C in the parent) queued work is cancelled and the workers are
    stopped.
    """
    size = chunk_size(len(specs), workers)
    forked = forks_here(settings)
    context = multiprocessing.get_context("fork") if forked else _context()
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=context,
                               initializer=_init_worker,
                               initargs=(settings, os.getpid(), workers))
    failed: list[BaseException] = []
    starter = threading.Thread(target=_start_workers, args=(pool, workers, failed),
                               name="league-workers-start", daemon=True)
    if forked:  # here, before any thread of the pool's exists: forks are quick
        starter.run()
    else:
        starter.start()
    pending: deque[Future] = deque()
    clean = False
    try:
        # Episodes played in this process, from the first one, recorded four chunks at a time:
        # the sync of a batch is time this process does not play.
        here = 0
        while helps(settings) and starter.is_alive() and here < len(specs):
            batch = [play(spec, settings) for spec in specs[here:here + 1]]
            here += 1
            while here % (4 * size) and here < len(specs) and starter.is_alive():
                batch.append(play(specs[here], settings))
                here += 1
            yield batch
        if not forked:
            starter.join()
        if failed:
            raise failed[0]
        todo = (specs[i:i + size] for i in range(here, len(specs), size))
        for chunk in todo:
            pending.append(pool.submit(_worker_chunk, chunk))
            if len(pending) >= 4 * workers:
                break
        while pending:
            items = _result(pending.popleft())
            nxt = next(todo, None)
            if nxt is not None:
                pending.append(pool.submit(_worker_chunk, nxt))
            # Chunks already finished behind this one are recorded with it: when the league
            # falls behind (a slow disk), it catches up with one sync for several chunks. (Not
            # one that failed: what came before it is recorded first, as it always was.)
            while pending and pending[0].done() and pending[0].exception() is None:
                items += _result(pending.popleft())
                nxt = next(todo, None)
                if nxt is not None:
                    pending.append(pool.submit(_worker_chunk, nxt))
            yield items
        clean = True
    finally:
        if not forked:
            starter.join()
        if not clean:
            # Stop the workers without cancelling futures first: on Python 3.11 the pool's
            # manager thread then sets an exception on each pending future, and a cancelled
            # one raises InvalidStateError from that thread (a traceback on Ctrl-C).
            for proc in list(getattr(pool, "_processes", {}).values()):
                proc.terminate()
            pool.shutdown(wait=True)
        else:
            pool.shutdown(wait=True, cancel_futures=True)


def _result(future: Future) -> list[Item]:
    try:
        return future.result()
    except BrokenProcessPool:
        raise WorkerDiedError("a worker process died (a policy may have ended the process or "
                              "crashed the interpreter)") from None
