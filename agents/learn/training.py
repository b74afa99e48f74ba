"""``guild train``: our PPO (``agents.learn.ppo_learn``) on the batched engine, on CPU or a GPU.

``guild train`` (:func:`run`) and ``examples/train_ppo.py`` (:func:`main`) share this code, so
the command works from an installed wheel and the two cannot drift apart::

    guild train --minutes 10 --seed 0 --out runs/ppo
    guild train --config train.toml --lr 1e-3 --out runs/lr    # the file, then the flags

Every PPO hyperparameter is a flag and a key of ``--config FILE.toml``
(``agents.learn.train_args``); ``summary.json`` records them all, and the file's path and
sha256.

The learner plays one seat per row against lineups of the ``--against`` opponents (factor and
magpie by default; ``--self-play``: every place, against itself, its past snapshots and those
opponents; ``--league``: prioritized fictitious self-play over those opponents, its past
snapshots and itself; ``agents.learn.ppo_arena``), in towns whose seeds evaluations never use,
rewarded by its score change each turn. An ``sb3:`` opponent (a zip is a pickle) is loaded in a
sandbox unless ``--trust``, and a resume plays no ``module:`` or ``sb3:`` opponent that only its
checkpoint names (:func:`train`). Training stops at ``--steps`` or after ``--minutes``,
whichever comes first; both count the whole run, so ``--resume`` after a kill finishes the run
that was asked for. Before and after, the paired, seat-rotated evaluation
(``agents.learn.evaluation``) says, with a 95% interval, whether the model beats factor.

Writes to ``--out``: ``model.pt`` (``make_policy("ppo:OUT")``, ``guild league --policies
ppo:OUT,...``), ``checkpoint.pt`` (every ``--checkpoint-minutes`` and at the end), ``curve.csv``,
``curve.png``, ``tb/`` (TensorBoard, when installed) and ``summary.json``, whose ``"policy"`` is
the spec that plays the model (printed last, alone). A new run refuses an ``--out`` holding
another run's files; any run refuses a filesystem root, a league's folder and a non-empty folder
that is not a run's (:func:`check_out`); two trainings never write one ``--out`` at once (its
lock file lasts as long as the run). Ctrl-C and SIGTERM keep a checkpoint of the last whole
update (exit 130, 143), so ``--resume`` continues exactly; they stop the run inside its own
computations only, never inside a library's lock (``agents.learn.stopping``); a resume keeps
the run's hyperparameters and refuses other ones.

torch (the ``train`` extra) is imported inside the functions that need it, so importing this
module (and ``guild --help``) never needs it. :func:`train` is the library entry point and
prints nothing; :func:`run` is the command around it.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import json
import os
import re
import select
import signal
import stat
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import IO, Any

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]
from agents.learn.sb3_extract import Extract
from agents.learn.stopping import Terminated, stops_held
from agents.learn.train_args import (  # noqa: F401 (league.cli.train adds them here)
    add_arguments,
    build_parser,
    options_from_args,
)
from agents.learn.train_options import (
    DEVICES,
    SNAPSHOTS,
    SPEC_KINDS,
    TENSORBOARD,
    Town,
    TrainingError,
    TrainOptions,
    check_rollout,
    read_town,
    resumed_run,
)
from sim.commandline import NotRegularFileError, broken_pipe, printable, read_head

Say = Callable[[str], None]
Progress = Callable[[float, dict], None]


def _quiet(*_: Any) -> None:
    """The default for messages nobody asked to see."""


def resolve_device(device: str) -> str:
    """``auto`` -> ``cuda`` if torch sees a GPU, else ``cpu``; ``cuda`` without one refused."""
    import torch

    if device not in DEVICES:
        raise TrainingError(f"unknown device {device!r}; choose one of {', '.join(DEVICES)}")
    has_gpu = torch.cuda.is_available()
    if device == "cuda" and not has_gpu:
        raise TrainingError("--device cuda: torch sees no CUDA GPU on this machine "
                            "(use --device cpu or auto)")
    return "cuda" if device == "auto" and has_gpu else "cpu" if device == "auto" else device


def train(options: TrainOptions, *, say: Say = _quiet, log: Say = _quiet, warn: Say = _quiet,
          progress: Progress = _quiet, extract: Extract | None = None,
          trust: bool = False) -> dict:
    """Evaluate, train, save, evaluate again; return the summary (also ``OUT/summary.json``).

    An ``sb3:`` opponent (a zip is a pickle: loading it runs its code) is loaded through
    ``extract`` (``league.apart.sb3_load.extract``: in a sandbox, as ``guild train`` does), or
    unpickled here with ``trust``; with neither it is refused. A resume refuses the opponents
    its checkpoint names that run code (``module:Name``, ``sb3:``) unless ``options`` name them
    too, or ``trust`` (a checkpoint may come from anyone).

    Nothing is printed: ``say`` gets the result lines, ``log`` the lines about the run's
    course (checkpoints, resuming), ``warn`` what was left out (no matplotlib, no
    ``curve.png``), ``progress(done, figures)`` after every update (``done``: the fraction of
    the steps or minutes spent, whichever is further; ``figures``: steps, steps/s, score).
    Raises :class:`TrainingError` (one line) before any work for bad options, a missing
    torch, a missing GPU, an unusable ``--out`` (:func:`check_out`) or checkpoint, an
    ``--out`` holding another run without ``resume`` (its files are never overwritten), one
    another training is writing (``OUT/.train.lock``, deleted when the run ends), or a resume
    asking for other hyperparameters than its run's. A resume of a run that has spent its
    budget and written its summary trains and writes nothing: ``say`` gets one line, and the
    run's summary is returned.
    """
    try:
        import torch
    except ImportError as e:
        raise TrainingError(f"needs torch (pip install torch==2.13.0, then pip install -e "
                            f"'.[train]'): {e}") from None
    device = resolve_device(options.device)
    if trust:
        extract = None  # told to: sb3: opponents are unpickled here
    if not options.resume:  # (a resume checks the run's own, once its checkpoint is read)
        town = read_town(options)
        _check_run(options, town, extract, trust)
    out = Path(options.out)
    if out.exists() and not out.is_dir():
        raise TrainingError(f"--out {options.out!r} is not a directory")
    check_out(out)
    if options.resume and not out.is_dir():  # nothing to resume: no folder is made for it
        from agents.learn.ppo_records import no_checkpoint

        raise TrainingError(no_checkpoint(out))
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise TrainingError(f"cannot create --out {options.out!r} ({e.strerror})") from None
    with _hold(out):
        if options.resume:
            from agents.learn.ppo_records import CheckpointError, load_checkpoint

            try:
                checkpoint = load_checkpoint(out)
            except CheckpointError as e:
                raise TrainingError(str(e)) from None
            options, town = resumed_run(options, checkpoint, str(out / RUN_FILES[0]), warn,
                                        trust)
            done = _finished(options, checkpoint, out)
            if done is not None:
                say(f"the run in {printable(str(out))} is complete ({done['steps']:,} steps); "
                    "nothing to resume (ask more --steps or --minutes to go on)")
                return done
            _check_run(options, town, extract, trust)
        else:
            checkpoint = None
            kept = [name for name in RUN_FILES if (out / name).exists()]
            if kept:
                resumable = RUN_FILES[0] in kept  # the checkpoint
                raise TrainingError(f"--out {options.out!r} holds another run ({', '.join(kept)}"
                                    + ("): add --resume to continue it, or choose a new --out"
                                       if resumable else "; no checkpoint to resume it from): "
                                       "choose a new --out, or delete its files"))
            _clear_leftovers(out)
        threads = torch.get_num_threads()
        torch.set_num_threads(options.threads)
        try:
            from agents.learn.training_loop import run_training

            return run_training(options, town, out, device, checkpoint, say, log, warn,
                                progress, extract)
        finally:
            torch.set_num_threads(threads)


def _finished(options: TrainOptions, checkpoint: dict, out: Path) -> dict | None:
    """The summary of a run that has spent its steps or minutes and written its model and
    summary since its last checkpoint, or None: resuming it would only save, evaluate and log
    its end again. A run stopped between its last checkpoint and its summary is not finished."""
    try:
        steps, seconds = int(checkpoint["learner"]["steps"]), float(checkpoint["seconds"])
    except (KeyError, TypeError, ValueError):
        return None  # (a damaged checkpoint is refused when restored)
    if steps < options.steps and seconds < options.minutes * 60.0:
        return None
    try:
        summary = read_summary(out / "summary.json")
    except (OSError, ValueError):
        return None
    if (summary.get("steps") != steps or not isinstance(summary.get("policy"), str)
            or not (out / RUN_FILES[1]).is_file()):
        return None
    return {**summary, "policy": f"ppo:{(out / RUN_FILES[1]).resolve()}"}  # where it is now


MAX_SUMMARY_BYTES = 8 << 20  # a summary is a few kB (its snapshots' names may be thousands)


def read_summary(path: Path) -> dict:
    """A run's ``summary.json`` as a dict: read from a regular file of at most
    :data:`MAX_SUMMARY_BYTES` (a FIFO is not waited on, ``/dev/zero`` not read without end);
    ValueError naming the file for anything else, OSError when it cannot be read."""
    try:
        data = read_head(path, MAX_SUMMARY_BYTES + 1)
    except NotRegularFileError:
        raise ValueError(f"{str(path)!r} is not a regular file") from None
    if len(data) > MAX_SUMMARY_BYTES:
        raise ValueError(f"{str(path)!r} is larger than {MAX_SUMMARY_BYTES >> 20} MB: not the "
                         "summary of a guild train run")
    try:
        summary = json.loads(data)
    except ValueError:  # not UTF-8, not JSON
        raise ValueError(f"{str(path)!r} is not JSON") from None
    except RecursionError:  # hostile nesting: json recurses once per level
        raise ValueError(f"{str(path)!r} is nested too deeply for a run's summary") from None
    if not isinstance(summary, dict):
        raise ValueError(f"{str(path)!r} is not the summary of a guild train run (not a JSON "
                         "object)")
    return summary


def _check_run(options: TrainOptions, town: Town, extract: Extract | None = None,
               trust: bool = False) -> None:
    """What can be refused before any work: opponents that cannot play the town, an update
    too large for memory."""
    from sim.batched.tables import tables_for

    _check_opponents(options.against, town, extract, trust)
    check_rollout(options, tables_for(town.world).obs_width, town.turns)


def _check_opponents(against: Sequence[str], town: Town, extract: Extract | None = None,
                     trust: bool = False) -> None:
    """Every ``--against`` spec builds a batched policy that plays ``town``, or one line naming
    it (a policy of a kind that plays the scalar engine only, a model of another town's shapes,
    ``champion`` in a world file's town, one whose own code fails, or an ``sb3:`` model with
    neither ``extract`` nor ``trust``, included)."""
    from agents.learn.ppo_arena import fixed_players
    from agents.learn.sb3_extract import is_sb3
    from sim.policies import BATCHED_POLICIES, POLICIES, check_town

    for spec in against:
        kind, colon, _ = spec.partition(":")
        kind = kind.strip().lower()
        if (colon and "." not in kind and kind in POLICIES.names()
                and kind not in BATCHED_POLICIES.names()):
            raise TrainingError(f"--against {spec!r:.80}: {kind}: policies have no batched "
                                "form, and training plays its opponents on the batched engine "
                                f"({SPEC_KINDS})")
        if is_sb3(spec) and extract is None and not trust:
            raise TrainingError(f"--against {spec!r:.80}: an sb3 zip is a pickle (loading it "
                                "runs its code), and no sandbox was given to load it in "
                                "(guild train has one): add --trust if you trust the file")
        try:
            players = fixed_players([spec], 0, extract)
        except KeyboardInterrupt:
            raise
        except ValueError as e:
            raise TrainingError(f"--against {spec!r:.80}: {str(e)[:300]} (training plays its "
                                f"opponents on the batched engine: {SPEC_KINDS})") from None
        except BaseException as e:  # noqa: BLE001 - the opponent's own code failed (or exited)
            raise TrainingError(f"--against {spec!r:.80}: building it raised "
                                f"{type(e).__name__}: {str(e)[:200]}") from None
        try:
            check_town(players, town.world)
        except ValueError as e:
            raise TrainingError(f"--against {spec!r:.80} cannot play {town.shown()}: "
                                f"{str(e)[:300]}") from None


# What a run leaves in --out; a new run (no --resume) refuses a directory holding any of them.
RUN_FILES = ("checkpoint.pt", "model.pt", "summary.json", "curve.csv")
LOCK_NAME = ".train.lock"
LOCK_TRIES = 8  # runs that end while this one opens the lock file, before it gives up
# All a run may leave: its files, plot, TensorBoard folder and lock, and the temporary files of
# its atomic writes (".model.pt.tmp1234", agents.learn.ppo.atomic_save, ppo_records.write_text).
OWN_NAMES = (*RUN_FILES, "curve.png", TENSORBOARD, SNAPSHOTS, LOCK_NAME)
_OWN_TEMP = re.compile(rf"\.(?:{'|'.join(map(re.escape, RUN_FILES))})\.tmp\d+")
# A league's folder holds these (league.core.store.MANIFEST, RESULTS; agents never imports league).
LEAGUE_FILES = ("league.json", "results.jsonl")


# What a run writes inside those two folders, and nothing else there is a run's: tensorboard's
# event files (events.out.tfevents.TIME.HOST.PID.N; Board adds scalars only, so no subfolder)
# and the snapshots of training_loop._save_snapshot with their atomic writes' temporary files.
_OWN_INSIDE = {
    TENSORBOARD: re.compile(r"events\.out\.tfevents\.\d+\..+"),
    SNAPSHOTS: re.compile(r"step-\d{10,}\.pt|\.step-\d{10,}\.pt\.tmp\d+"),
}


def _run_folders(out: Path) -> str | None:
    """What is wrong with ``OUT/tb`` and ``OUT/snapshots`` (a link, a file: a run would write
    through it, wherever it points), or None when each is a folder or absent."""
    for name in _OWN_INSIDE:
        try:
            st = (out / name).lstat()
        except FileNotFoundError:
            continue
        except OSError as e:
            return f"{name!r}, which cannot be read ({e.strerror})"
        if not stat.S_ISDIR(st.st_mode):
            return f"{name!r}, which is not a folder a run made"
    return None


def _run_entries(out: Path) -> tuple[list[Path], str | None]:
    """The files a run left in ``OUT/tb`` and ``OUT/snapshots``, and what else is there (a
    description, None when nothing is): only a run's own may ever be cleared."""
    own: list[Path] = []
    for name, pattern in _OWN_INSIDE.items():
        folder = out / name
        try:
            st = folder.lstat()
        except FileNotFoundError:
            continue
        except OSError as e:
            return own, f"{name!r} cannot be read ({e.strerror})"
        if not stat.S_ISDIR(st.st_mode):
            return own, f"{name!r}, which is not a folder a run made"
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError as e:
            return own, f"{name + '/'!r} cannot be read ({e.strerror})"
        for entry in entries:
            if not (pattern.fullmatch(entry.name) and entry.is_file(follow_symlinks=False)):
                return own, f"{name + '/' + entry.name!r}, which no run writes"
            own.append(Path(entry.path))
    return own, None


def _clear_leftovers(out: Path) -> None:
    """Remove what a run killed before its first checkpoint left (its TensorBoard log, its
    snapshots): a new run in that folder would show two runs' curves as one, and list the
    dead run's snapshots as its own. Only files a run writes are removed (:func:`check_out`
    refused a folder holding anything else; checked again here, under the run's lock)."""
    own, foreign = _run_entries(out)
    if foreign is not None:
        raise TrainingError(f"--out {str(out)!r} holds {foreign}; choose an empty or a new "
                            "folder (nothing was deleted)")
    for path in own:
        try:
            path.unlink(missing_ok=True)
        except OSError as e:
            raise TrainingError(f"cannot clear {str(path)!r}, left by a run stopped before "
                                f"its first checkpoint ({e.strerror})") from None
    for name in _OWN_INSIDE:  # emptied: gone, as if the dead run had never begun
        with contextlib.suppress(OSError):
            (out / name).rmdir()


def check_out(out: Path) -> None:
    """Refuse (:class:`TrainingError`, one line) an ``--out`` that is the root of a filesystem,
    a league's folder, or a folder holding files that no training run writes when it holds no
    run's own (:data:`RUN_FILES`), or whose ``tb/`` or ``snapshots/`` hold anything a run does
    not write there (a new run clears those two, :func:`_clear_leftovers`): a run writes and,
    resumed, replaces its files in ``--out``. An empty folder, a new one and a run's folder
    (``--resume`` continues it; a new run is refused there, see :func:`train`) pass."""
    shown = str(out)
    real = Path(os.path.realpath(out))
    if real.parent == real:  # "/", a drive's root, or a link to one
        raise TrainingError(f"--out {shown!r} is the root of a filesystem; give the run a "
                            "folder of its own (e.g. runs/train)")
    if not out.is_dir():
        return  # created for the run
    try:
        names = sorted(os.listdir(out))
    except OSError as e:
        raise TrainingError(f"cannot read --out {shown!r} ({e.strerror})") from None
    league = [n for n in LEAGUE_FILES if n in names]
    if league:
        raise TrainingError(f"--out {shown!r} is a league's folder (it holds "
                            f"{', '.join(league)}); give the run a folder of its own")
    if any(n in RUN_FILES for n in names):  # a training run's folder: --resume writes in
        folders = _run_folders(out)  # its tb/ and snapshots/, which must be its own
        if folders is not None:
            raise TrainingError(f"--out {shown!r} holds {folders}; a run writes only in "
                                "folders of its own (nothing was written)")
        return
    foreign = [n for n in names if n not in OWN_NAMES and not _OWN_TEMP.fullmatch(n)]
    if foreign:
        more = f" and {len(foreign) - 3} more" if len(foreign) > 3 else ""
        raise TrainingError(f"--out {shown!r} is not empty and not a training run's folder "
                            f"(it holds {', '.join(repr(n) for n in foreign[:3])}{more}); "
                            "choose an empty or a new folder")
    _, inside = _run_entries(out)
    if inside is not None:
        raise TrainingError(f"--out {shown!r} is not a training run's folder (it holds "
                            f"{inside}); choose an empty or a new folder")


@contextlib.contextmanager
def _hold(out: Path) -> Iterator[None]:
    """Hold ``OUT/.train.lock`` while the run lasts and delete it after, however the run ends
    (an advisory ``flock``: two trainings writing one directory would mix their checkpoints and
    models). The kernel drops the lock of a killed process; the file it leaves is taken over by
    the next run, which deletes it in turn."""
    path = out / LOCK_NAME
    f = _lock(path)
    try:
        yield
    finally:
        _unlock(path, f)


def _lock(path: Path) -> IO[str]:
    """``path`` opened and locked, or :class:`TrainingError` if another training holds it."""
    shown = str(path.parent)
    for _ in range(LOCK_TRIES):
        try:  # never through a link: the lock would create or lock its target
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC
                         | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0), 0o644)
        except OSError as e:
            if e.errno == errno.ELOOP:
                raise TrainingError(f"--out {shown!r}: its {LOCK_NAME} is a symbolic link, "
                                    "which no run makes; delete it") from None
            raise TrainingError(f"cannot write in --out {shown!r} ({e.strerror})") from None
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise TrainingError(f"--out {shown!r}: its {LOCK_NAME} is not a regular file, "
                                "which no run makes; delete it")
        f = os.fdopen(fd, "a")
        if fcntl is None:  # pragma: no cover - Windows: no advisory locks there
            return f
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            f.close()
            raise TrainingError(f"--out {shown!r} is in use by another guild train (wait for "
                                "it or choose another --out)") from None
        if _is_file_at(f, path):
            return f
        f.close()  # a run that ended deleted the file between our open and lock: lock anew
    raise TrainingError(f"--out {shown!r}: its lock file keeps changing; another guild train "
                        "is starting or ending there")


def _is_file_at(f: IO[str], path: Path) -> bool:
    """Whether the open file ``f`` is still the one at ``path``."""
    try:
        here = os.lstat(path)
    except FileNotFoundError:
        return False
    held = os.fstat(f.fileno())
    return (here.st_dev, here.st_ino) == (held.st_dev, held.st_ino)


def _unlock(path: Path, f: IO[str]) -> None:
    """Delete the lock file while still holding it, then release it: a run that opened the
    file meanwhile finds it gone once it locks it, and locks a new one (:func:`_lock`)."""
    with f:
        if fcntl is not None:
            with contextlib.suppress(OSError):
                os.unlink(path)
    if fcntl is None:  # pragma: no cover - Windows: an open file cannot be deleted
        with contextlib.suppress(OSError):
            os.unlink(path)


# --- the command (guild train, examples/train_ppo.py) ---------------------------------

def run(args: argparse.Namespace, extract: Extract | None = None) -> int:
    """Train with the parsed options, printing as the command does; returns the exit code.
    ``sb3:`` opponents load through ``extract`` (``guild train`` passes the sandboxed loader)
    unless ``--trust``; without either they are refused (:func:`train`).

    The progress bar (tqdm, on stderr) and the progress lines go away with ``--quiet``; the
    summary is printed as one JSON line, and then, as the last line of standard output, the
    policy spec that plays the model alone (``guild league --policies "$(guild train ... |
    tail -n 1),factor"``). A reader that leaves (``guild train ... | head -1``) stops what is
    printed, not the run: it trains to its end and saves every file, as ``guild league``
    does, and the exit status is then 141.
    """
    streams = _Streams()
    try:
        options = options_from_args(args)
    except TrainingError as e:
        return _refuse(e, streams)
    bar = None if args.quiet else _Bar(streams)
    try:
        with stops_held():
            summary = train(options, say=streams.say, log=_quiet if args.quiet else streams.say,
                            warn=streams.warn,
                            progress=_quiet if bar is None else bar.update,
                            extract=extract, trust=bool(getattr(args, "trust", False)))
    except TrainingError as e:
        return _refuse(e, streams)
    except KeyboardInterrupt as e:  # (on its own line, above the progress bar)
        how = "terminated" if isinstance(e, Terminated) else "interrupted"
        if _has_checkpoint(options):
            streams.warn(f"train: {how}; add --resume to continue from the last checkpoint in "
                         f"{printable(options.out)}")
        else:  # stopped before its first checkpoint (in the first evaluation, say)
            streams.warn(f"train: {how} before its first checkpoint: run the same command "
                         "again to begin anew")
        return 128 + signal.SIGTERM if isinstance(e, Terminated) else 130
    except OSError as e:  # a full disk, a file made read-only under the run: not a traceback
        name = e.filename
        where = "" if not name else " " + printable(
            os.fsdecode(name) if isinstance(name, (str, bytes)) else str(name))
        streams.warn(f"train: the run stopped on a file error{where}: "
                     f"{printable(e.strerror or str(e))}; fix "
                     "it (space, permissions), then " + (
                         "add --resume to continue from its last checkpoint"
                         if _has_checkpoint(options) else
                         "run the same command again to begin anew (it stopped before its "
                         "first checkpoint)"))
        return 1
    finally:
        if bar is not None:
            bar.close()
    streams.say(json.dumps(summary))
    streams.say(printable(summary["policy"]))  # a path's newline would forge a last line
    return broken_pipe() if streams.stdout_left else 0


def _has_checkpoint(options: TrainOptions) -> bool:
    """Whether ``--resume`` has a checkpoint to continue from."""
    return (Path(options.out) / RUN_FILES[0]).is_file()


def _refuse(e: TrainingError, streams: _Streams) -> int:
    streams.warn(f"train: error: {printable(str(e))}")
    return 2


_ACTIVE_BAR: Any = None


def _write(message: str, file: Any = None) -> None:
    """Print around the progress bar (tqdm.write keeps it on its own line)."""
    if _ACTIVE_BAR is not None:
        _ACTIVE_BAR.write(message, file=file or sys.stdout)
    else:
        print(message, file=file or sys.stdout, flush=True)


class _Streams:
    """Standard output and error of one run. A reader that leaves (a closed pipe) only stops
    what is printed to it: hours of training must not be lost to ``| head``. The stream is
    then pointed at ``os.devnull``, so later lines, the bar and Python's last flush go nowhere
    instead of raising again."""

    def __init__(self) -> None:
        self.stdout_left = False

    def say(self, message: str) -> None:
        self.write(message, sys.stdout)

    def warn(self, message: str) -> None:
        self.write(message, sys.stderr)

    def write(self, message: str, file: Any) -> None:
        try:
            _write(message, file)
        except BrokenPipeError:
            self.left(file)

    def left(self, stream: Any) -> None:
        """Silence the streams whose reader left: ``stream``, which raised, or what polls as
        broken (tqdm writes to both streams; with ``2>&1`` they share the pipe)."""
        gone = [s for s in (sys.stdout, sys.stderr) if s is not None and _broken(s)] or [stream]
        for s in gone:
            self.stdout_left |= s is sys.stdout
            _silence(s)


def _broken(stream: Any) -> bool:
    """Whether ``stream`` is a pipe whose reader has left (its write end polls as an error)."""
    try:
        poll = select.poll()
        poll.register(stream.fileno(), select.POLLOUT)
        return any(events & select.POLLERR for _, events in poll.poll(0))
    except (AttributeError, OSError, ValueError):  # no poll(), or not a file (a test's capture)
        return False


def _silence(stream: Any) -> None:
    """Point ``stream``'s descriptor at ``os.devnull`` and drop what it holds."""
    with contextlib.suppress(OSError, ValueError):
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, stream.fileno())
        os.close(null)
        stream.flush()


class _Bar:
    """A tqdm bar over the run's budget (steps or minutes, whichever is nearer its end)."""

    def __init__(self, streams: _Streams) -> None:
        self.bar: Any = None
        self.streams = streams

    def update(self, done: float, figures: dict) -> None:
        try:
            self._update(done, figures)
        except BrokenPipeError:  # stderr's reader left: training goes on
            self.streams.left(sys.stderr)

    def _update(self, done: float, figures: dict) -> None:
        global _ACTIVE_BAR
        if self.bar is None:
            from tqdm import tqdm

            self.bar = _ACTIVE_BAR = tqdm(total=1000, desc="train", file=sys.stderr,
                                          bar_format="{desc} {percentage:3.0f}%|{bar:24}| "
                                          "{elapsed}{postfix}", leave=True)
        self.bar.n = min(1000, int(done * 1000))
        self.bar.set_postfix_str(f"{figures['steps']:,} steps, {figures['steps_per_s']:,.0f} "
                                 f"steps/s, mean score {figures['score']:+.3f}")
        if done >= 1.0:  # the budget is spent: the lines that follow go below the bar
            self.close()

    def close(self) -> None:
        global _ACTIVE_BAR
        if self.bar is not None:
            bar, self.bar = self.bar, None
            _ACTIVE_BAR = None
            try:
                bar.close()
            except BrokenPipeError:
                self.streams.left(sys.stderr)


def main(argv: Sequence[str] | None = None, prog: str = "train_ppo.py") -> int:
    """Command-line entry point; returns the exit code."""
    try:
        args = build_parser(prog).parse_args(argv)
    except SystemExit as e:
        return e.code if isinstance(e.code, int) else 2
    return run(args)
