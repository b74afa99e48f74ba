"""What a training run is asked to do (``TrainOptions``, checked when built) and what a
checkpoint keeps of it, below both the command (``agents.learn.training``) and the loop
(``agents.learn.training_loop``).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from agents.learn.evaluation import MAX_SEEDS
from agents.learn.knobs import Knob
from agents.learn.ppo_config import PPOConfig
from sim.batched.engine import MAX_ENVS
from sim.commandline import printable
from sim.rules.world import DEFAULT_TURNS, MAX_TURNS, MIN_TURNS, STANDARD_TOWN, World

Say = Callable[[str], None]

DEVICES = ("auto", "cpu", "cuda")
EVAL_SEED0 = 100_000
EVAL_OPPONENTS = ("factor", "magpie")
AGAINST = EVAL_OPPONENTS  # the fixed opponents of training, by default those evaluated against
MAX_AGAINST = 16
MODEL_KINDS = ("ppo", "sb3")  # the opponents played from a model file, named by its path
# The opponents training plays (each on the batched engine), as error lines list them.
SPEC_KINDS = "factor, magpie, random, champion, ppo:MODEL, sb3:MODEL or a batched module:Name"
MAX_SPEC = 4096  # a spec's length: a path and a name, not a file's worth of text
# One torch thread: the network is small, so on a CPU more threads add synchronisation to
# every pass rather than speed, and the engine shares the same cores (README, 'Train a policy').
DEFAULT_THREADS = 1
# Bounds that turn typos into errors before anything is allocated: a row of the engine holds an
# episode's observations (about 26 kB per learning seat, up to six seats in self-play; at most
# the engine's MAX_ENVS rows), torch crashes (SIGSEGV) asked for 10**8 threads, and the seeds
# feed numpy and torch generators.
MAX_THREADS = 256
MAX_SEED = 2 ** 63 - 1


# The numeric options' ranges (agents.learn.knobs): the same check for a flag, a config file's key
# and the library.
KNOBS: dict[str, Knob] = {
    "steps": Knob(int, 1),
    "minutes": Knob(float, 0, open_low=True),
    "seed": Knob(int, 0, MAX_SEED),
    "envs": Knob(int, 1, MAX_ENVS),
    "threads": Knob(int, 1, MAX_THREADS),
    "checkpoint_minutes": Knob(float, 0, open_low=True),
    "eval_episodes": Knob(int, 2, MAX_SEEDS),
    "turns": Knob(int, MIN_TURNS, MAX_TURNS),
}
UNSET = ("turns",)  # knobs that may be None: turns unset is the world file's, else 14
# The observations one update may hold (its rollouts), in bytes: the standard town's largest run
# (16,384 episodes, six learning seats each, 14 turns of 460 numbers) holds 2.5 GB; a town of
# many rooms and goods, or a long game, could ask for far more before any work.  The run's
# memory peaks at two to three times its observations (the update joins the rollouts' blocks).
MAX_ROLLOUT_BYTES = 4 << 30


class TrainingError(ValueError):
    """Training cannot start: a bad option or config file, torch missing, no GPU for ``cuda``,
    ``--out`` unusable, or ``--resume`` with no usable checkpoint or other hyperparameters."""


SNAPSHOTS = "snapshots"  # OUT/snapshots/step-N.pt: the league's and self-play's past selves
TENSORBOARD = "tb"  # OUT/tb: TensorBoard's event files (agents.learn.ppo_records.Board)


@dataclass(frozen=True)
class TrainOptions:
    """What :func:`train` does; the defaults are those of ``guild train``.

    ``config_file`` is the ``(path, sha256)`` of the ``--config`` file the options came from
    (recorded in ``summary.json``); ``asked`` names the options a flag or that file set, which
    ``--resume`` holds against the run's even where they equal the defaults.
    """

    out: str = "runs/train"
    steps: int = 100_000_000
    minutes: float = 10.0
    seed: int = 0
    envs: int = 1024
    device: str = "auto"
    threads: int = DEFAULT_THREADS
    self_play: bool = False
    league: bool = False
    against: tuple[str, ...] = AGAINST
    checkpoint_minutes: float = 2.0
    resume: bool = False
    eval_episodes: int = 500
    world: str | None = None
    turns: int | None = None
    plot: bool = True
    ppo: PPOConfig = field(default_factory=PPOConfig)
    config_file: tuple[str, str] | None = None
    asked: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        for name, knob in KNOBS.items():
            if name in UNSET and getattr(self, name) is None:
                continue
            try:
                knob.check(getattr(self, name))
            except ValueError as e:
                raise TrainingError(f"{name} {e}") from None
        if "\0" in str(self.out):  # a path that no system call takes (a config file's string)
            raise TrainingError(f"out must be a folder's path; got {self.out!r:.40}")
        # ~ expanded as for --world and --config: else the run writes a folder named "~" and
        # the evaluation after it, which expands ~, loads another model
        object.__setattr__(self, "out", _expanded(self.out))
        if self.world is not None:
            try:
                object.__setattr__(self, "world", world_path(self.world))
            except ValueError as e:
                raise TrainingError(f"world {e}") from None
        if self.device not in DEVICES:
            raise TrainingError(f"device must be one of {', '.join(DEVICES)}; got "
                                f"{self.device!r}")
        object.__setattr__(self, "against", check_against(tuple(
            absolute_spec(a) for a in check_against(self.against))))
        if self.league and self.self_play:
            raise TrainingError("league and self_play exclude each other: the league already "
                                "plays the learner against itself and its snapshots")
        if not isinstance(self.ppo, PPOConfig):
            raise TrainingError(f"ppo must be a PPOConfig; got {type(self.ppo).__name__}")
        if not self.resume:  # (a resume takes the run's league and self-play, checked then)
            _check_pool_options(self)
        if self.envs * self.ppo.episodes > MAX_ENVS:  # an update's rollouts are held at once
            raise TrainingError(f"envs x episodes must be at most {MAX_ENVS:,}, the episodes "
                                f"an update holds in memory; got {self.envs:,} x "
                                f"{self.ppo.episodes:,}")


def _check_pool_options(options: TrainOptions) -> None:
    """``snapshot_every`` feeds a pool of the learner's past selves (self-play, the league) and
    ``fixed_share`` divides the league's seats: asked for without that pool they would change
    nothing and still be recorded in ``summary.json`` as the run's (TrainingError)."""
    pools = {"snapshot_every": (options.league or options.self_play, "--league or --self-play"),
             "fixed_share": (options.league, "--league")}
    for name, (used, needs) in pools.items():
        if not used and _asked(options.ppo, PPOConfig(), name, options.asked):
            raise TrainingError(f"{flag(name)} {shown(getattr(options.ppo, name))} is used only "
                                f"with {needs}: add it, or drop {flag(name)}")


def check_against(against: object) -> tuple[str, ...]:
    """The fixed opponents: 1 to :data:`MAX_AGAINST` different policy specs, a list or a tuple
    (TrainingError otherwise; whether each has a batched form is checked when the arena builds
    them). A pool holding one spec twice would name two members alike."""
    if (not isinstance(against, (tuple, list)) or not 0 < len(against) <= MAX_AGAINST or
            not all(isinstance(a, str) and a.strip() and len(a) <= MAX_SPEC and "\0" not in a
                    for a in against)):
        raise TrainingError(f"against must list 1 to {MAX_AGAINST} policy specs ({SPEC_KINDS}); "
                            f"got {against!r:.80}")
    specs = tuple(a.strip() for a in against)
    seen = [a.lower() for a in specs]
    twice = sorted({a for a in seen if seen.count(a) > 1})
    if twice:
        raise TrainingError(f"against names {twice[0]!r:.80} twice; name each opponent once")
    return specs


def absolute_spec(spec: str, base: Path | None = None) -> str:
    """A ``ppo:``/``sb3:`` spec with its path absolute (``~`` expanded), as ``--world`` is kept:
    the checkpoint keeps the spec, and a resume from another folder must play the same file.
    A relative path is taken from ``base`` when given (a config file's folder), else from the
    current folder."""
    kind, colon, rest = spec.partition(":")
    if not colon or kind.strip().lower() not in MODEL_KINDS or not rest.strip():
        return spec
    path = Path(rest.strip()).expanduser()
    return f"{kind}:{((base or Path()) / path).resolve()}"


def opponent_digests(against: tuple[str, ...]) -> dict[str, str]:
    """sha256 of each model file among the fixed opponents (``ppo:``, ``sb3:``), so that a
    resumed run can tell that one changed under it."""
    digests = {}
    for spec in against:
        kind, _, rest = spec.partition(":")
        if kind.strip().lower() not in MODEL_KINDS or not rest.strip():
            continue
        path = Path(rest.strip()).expanduser()
        if path.is_dir():
            path = path / ("model.pt" if kind.lower() == "ppo" else "model.zip")
        try:
            if path.is_file():
                with open(path, "rb") as f:
                    digests[spec] = hashlib.file_digest(f, "sha256").hexdigest()
        except OSError:
            continue
    return digests


def runs_code(spec: str) -> bool:
    """Whether building the opponent ``spec`` runs code a file brings: a ``module:Name`` is
    imported, an ``sb3:`` zip is a pickle. Built-in names and ``ppo:`` models (plain tensors)
    run none."""
    kind, colon, _ = spec.partition(":")
    return bool(colon) and kind.strip().lower() != "ppo"


def _spec_key(spec: str) -> str:
    """``spec`` as two namings of one opponent compare (a model kind in any case)."""
    kind, _, rest = spec.strip().partition(":")
    kind = kind.strip().lower()
    return f"{kind}:{rest.strip()}" if kind in MODEL_KINDS else spec.strip()


def _check_recorded(options: TrainOptions, against: tuple[str, ...], trust: bool) -> None:
    """Refuse the opponents a checkpoint names that run code (:func:`runs_code`) unless this
    command names them too, or ``trust``: a checkpoint is a file anyone may have written, and
    resuming must not import or unpickle what its user never asked for."""
    if trust:
        return
    named = ({_spec_key(a) for a in options.against}
             if _asked(options, TrainOptions(), "against", options.asked) else set())
    unnamed = [a for a in against if runs_code(a) and _spec_key(a) not in named]
    if unnamed:
        listed = ", ".join(f"{a!r:.80}" for a in unnamed[:3])
        raise TrainingError(
            f"--resume: the run in {str(options.out)!r} plays {listed}, read from its "
            "checkpoint; such an opponent runs code (a module is imported, an sb3 zip is a "
            "pickle) and a checkpoint may come from anyone: name the run's opponents again "
            f"(--against {','.join(against)!r:.200}), or add --trust")


def _config_pair(value: object) -> tuple[str, str]:
    """A checkpoint's record of the run's config file: its ``(path, sha256)``."""
    if (not isinstance(value, (list, tuple)) or len(value) != 2
            or not all(isinstance(v, str) for v in value)):
        raise ValueError(f"its config_file is not a (path, sha256) pair: {value!r:.60}")
    return value[0], value[1]


def run_options(options: TrainOptions, checkpoint: dict | None, warn: Say,
                trust: bool = False) -> TrainOptions:
    """The options a resumed run continues with: the run's own seed, envs, self-play,
    hyperparameters and evaluation seeds (its "before" figures were played on them), and its
    ``--steps``, ``--minutes`` and config file unless this resume names others. A
    different seed, envs, self-play or evaluation count asked for is named and ignored; a
    different hyperparameter is refused (:class:`TrainingError`): the update would change
    under the run, and its weights would equal no uninterrupted run's. So are opponents of
    the checkpoint that run code and that ``options`` do not name, unless ``trust``
    (:func:`_check_recorded`)."""
    if checkpoint is None:
        return options
    run = checkpoint["run"]
    ppo = PPOConfig.from_dict(run["ppo"])
    changed = [name for name in PPOConfig.names()
               if _asked(options.ppo, PPOConfig(), name, options.asked)
               and getattr(options.ppo, name) != getattr(ppo, name)]
    if changed:
        said = ", ".join(f"{flag(name)} {shown(getattr(ppo, name))} (asked: "
                         f"{shown(getattr(options.ppo, name))})" for name in changed)
        raise TrainingError(f"--resume: the run in {options.out!r} trained with {said}; a "
                            "resumed run keeps its hyperparameters: drop the change, or train "
                            "a new --out")
    kept = {"seed": run["seed"], "envs": run["envs"], "self_play": run["self_play"],
            "league": bool(run.get("league", False)),
            "against": run.get("against", AGAINST),
            "ppo": ppo, "eval_episodes": checkpoint["before"]["n_seeds"]}
    kept["against"] = _recorded(check_against, kept["against"])
    _check_recorded(options, kept["against"], trust)
    for name in ("seed", "envs", "self_play", "league", "against", "eval_episodes"):
        if getattr(options, name) != kept[name] and _asked(options, TrainOptions(), name,
                                                           options.asked):
            warn(f"train: --resume keeps the run's {name} {kept[name]!r} (not "
                 f"{getattr(options, name)!r})")
    for spec, digest in run.get("opponents", {}).items():
        now = opponent_digests((spec,)).get(spec)
        if now != digest:
            warn(f"train: --resume: opponent {spec!r:.120} is not the file the run began with "
                 f"({'missing' if now is None else 'its sha256 changed'}); the run goes on "
                 "against the file as it is now and will not equal an uninterrupted one")
    for name in ("steps", "minutes"):  # the run's budget, unless this resume asks another
        if name in run and not _asked(options, TrainOptions(), name, options.asked):
            kept[name] = run[name]
    if options.config_file is None and run.get("config_file"):
        kept["config_file"] = _config_pair(run["config_file"])  # where its options came from
    threads = run.get("threads", options.threads)
    if threads != options.threads:  # float sums differ with the thread count
        warn(f"train: the run used {threads} torch threads, this resume {options.threads}: "
             f"the weights will not equal those of an uninterrupted run (--threads {threads})")
    return _recorded(lambda kept: replace(options, **kept), kept)


def _recorded(check: Callable[[Any], Any], value: Any) -> Any:
    """``check(value)`` for a value read from a checkpoint: its :class:`TrainingError` (made for
    an option a user gives) becomes the ValueError of a checkpoint damaged inside."""
    try:
        return check(value)
    except TrainingError as e:
        raise ValueError(str(e)) from None


def _asked(options: object, defaults: object, name: str, asked: frozenset[str]) -> bool:
    """Whether ``name`` was asked for: named by a flag or the config file, or (options built in
    code) away from its default."""
    return name in asked or getattr(options, name) != getattr(defaults, name)


def flag(name: str) -> str:
    """An option's flag (and config file key) without its dashes: ``ent_coef`` -> ``ent-coef``."""
    return name.replace("_", "-")


def shown(value: object) -> str:
    """A value as a flag takes it: ``128,128``, ``0.0003``, ``true``."""
    if isinstance(value, tuple):
        return ",".join(map(str, value))
    if isinstance(value, bool):
        return str(value).lower()
    return f"{value:g}" if isinstance(value, float) else str(value)


def run_record(options: TrainOptions, town: Town, opponents: dict[str, str]) -> dict:
    """What a checkpoint keeps of the options and the town (plain values); ``opponents``: the
    opponents' digests taken when the run began (:func:`opponent_digests`), which every
    resume compares with the files as they are then."""
    return {**town.record(), "seed": options.seed, "envs": options.envs,
            "self_play": options.self_play,
            "league": options.league, "against": list(options.against),
            "opponents": dict(opponents),
            "threads": options.threads, "ppo": options.ppo.to_dict(),
            # the run asked for: a resume that names none finishes it
            "steps": options.steps, "minutes": options.minutes,
            "config_file": list(options.config_file) if options.config_file else None}


@dataclass(frozen=True)
class Town:
    """The town a run trains and is evaluated in (``path``: the world file it was read from,
    None for a town read from no file) and its episodes' length."""

    world: World = STANDARD_TOWN
    turns: int = DEFAULT_TURNS
    path: str | None = None

    @property
    def standard(self) -> bool:
        return self.path is None and self.world == STANDARD_TOWN

    @property
    def sha256(self) -> str:
        """The town's digest: its full world-file form as canonical JSON, so the same town
        read from two files (or a file rewritten with other comments) has one digest."""
        from sim.rules.worldfile import world_to_dict

        text = json.dumps(world_to_dict(self.world), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()

    def record(self) -> dict:
        """What a checkpoint keeps of it: the whole town (a resume never re-reads the file,
        which may have changed), its file's path and the turns."""
        from sim.rules.worldfile import world_to_dict

        return {"world": None if self.standard else world_to_dict(self.world),
                "world_file": self.path, "turns": self.turns}

    def summary(self) -> dict | None:
        """How ``summary.json`` and a model file name it: None for the standard town."""
        return None if self.standard else {"path": self.path, "sha256": self.sha256}

    def shown(self) -> str:
        """The town in a line of the command's output (a path's control characters escaped:
        it may hold any)."""
        where = ("the standard town" if self.standard else "a town read from no file"
                 if self.path is None else f"the town of {printable(self.path)}")
        return f"{where}, {self.turns} turns"


def world_path(value: object) -> str:
    """A world file's path as an option holds it (``~`` expanded); ValueError otherwise."""
    if not isinstance(value, str) or not value or "\0" in value:
        raise ValueError(f"must be a world file's path; got {value!r:.40}")
    return os.path.expanduser(value)


def read_town(options: TrainOptions) -> Town:
    """The town ``options`` ask for (``--world``, ``--turns``); :class:`TrainingError` in one
    line for a file that is no world file."""
    from sim.rules.worldfile import WorldFileError, world_and_turns

    try:
        world, turns = world_and_turns(options.world, options.turns)
    except WorldFileError as e:
        raise TrainingError(str(e)) from None
    path = None if options.world is None else str(Path(options.world).resolve())
    return Town(world, turns, path)


def run_town(checkpoint: dict, options: TrainOptions, warn: Say) -> Town:
    """The town a resumed run continues in: the one its checkpoint holds (a run begun before
    towns were recorded trained in the standard town, 14 turns), whatever ``--world`` and
    ``--turns`` ask, which are named and ignored when they differ, as another seed is.  The
    file need not be there any more: the checkpoint holds the whole town."""
    from sim.rules.worldfile import world_from_dict

    run = checkpoint["run"]
    data, turns = run.get("world"), run.get("turns", DEFAULT_TURNS)
    world = STANDARD_TOWN if data is None else world_from_dict(data, "its town")[0]
    path = run.get("world_file")
    kept = Town(world, KNOBS["turns"].check(turns), None if path is None else str(path))
    if options.world is not None:
        try:
            asked: Town | None = read_town(options)
        except TrainingError:
            asked = None
        where = printable(options.world)
        if asked is None:
            warn(f"train: --resume keeps the run's town ({kept.shown()}); {where} cannot be "
                 "read now, and need not be: the checkpoint holds the town")
        elif asked.world != kept.world:
            now = " as the file reads now" if asked.path == kept.path else ""
            warn(f"train: --resume keeps the run's town ({kept.shown()}), not the town of "
                 f"{where}{now}")
        elif options.turns is None and asked.turns != kept.turns:
            warn(f"train: --resume keeps the run's {kept.turns} turns (not the file's "
                 f"{asked.turns})")
    if options.turns is not None and options.turns != kept.turns:
        warn(f"train: --resume keeps the run's {kept.turns} turns (not {options.turns})")
    return kept


def resumed_run(options: TrainOptions, checkpoint: dict, where: str, warn: Say,
                trust: bool = False) -> tuple[TrainOptions, Town]:
    """The options and town a resume continues with (:func:`run_options`, :func:`run_town`);
    :class:`TrainingError` for a checkpoint damaged inside (``where``: its path), other
    hyperparameters asked, or opponents that run code it alone names (unless ``trust``)."""
    try:
        return (run_options(options, checkpoint, warn, trust),
                run_town(checkpoint, options, warn))
    except TrainingError:
        raise
    except (KeyError, TypeError, ValueError, RuntimeError, ArithmeticError,
            AttributeError) as e:  # damaged inside
        raise TrainingError(f"--resume: checkpoint {where!r} cannot be restored "
                            f"({type(e).__name__}: {str(e)[:100]})") from None


def check_rollout(options: TrainOptions, width: int, turns: int) -> None:
    """Refuse a run whose update could hold more than :data:`MAX_ROLLOUT_BYTES` of
    observations (``width`` float32 numbers a learning seat and turn), before any work.  A
    row of self-play or the league may seat the learner six times (the league draws the
    learner itself for seats it still loses to), so those count six."""
    from sim.rules.world import SEATS

    learners = SEATS if options.self_play or options.league else 1
    size = options.envs * options.ppo.episodes * turns * learners * width * 4
    if size > MAX_ROLLOUT_BYTES:
        raise TrainingError(
            f"an update would hold {size / 2 ** 30:.1f} GiB of observations ({options.envs:,} "
            f"envs x {options.ppo.episodes} episodes x {turns} turns x {learners} learning "
            f"seat{'s' if learners > 1 else ''} x {width} numbers); at most "
            f"{MAX_ROLLOUT_BYTES >> 30} GiB: lower --envs or --episodes")


def _expanded(out: str | os.PathLike) -> str | Path:
    """``out`` with ``~`` expanded, of the type it was given (a Path stays a Path)."""
    text = os.path.expanduser(os.fspath(out))
    return Path(text) if isinstance(out, Path) else text
