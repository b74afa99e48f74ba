"""``guild train``'s options as flags and as the keys of a ``--config`` TOML file.

Every option of a run (:class:`~agents.learn.train_options.TrainOptions`) and every PPO
hyperparameter (:class:`~agents.learn.ppo_config.PPOConfig`) is a flag, its default and range in
``--help``, and a key of ``--config FILE.toml``, named as the flag without its dashes
(``ent-coef`` or ``ent_coef``)::

    lr = 1e-3
    ent-coef = 0.01
    hidden = [256, 256]
    minutes = 5

The defaults give way to the file and the file to the flags. Both are checked by the same
functions (``agents.learn.knobs``), so a bad value is one line naming the flag, or the key and
the file, with what is accepted (exit 2), before any work.
"""

from __future__ import annotations

import argparse
import difflib
import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agents.learn.knobs import Knob
from agents.learn.ppo_config import KNOBS as PPO_KNOBS
from agents.learn.ppo_config import PPOConfig, check_hidden
from agents.learn.train_options import (
    DEVICES,
    EVAL_SEED0,
    KNOBS,
    TrainingError,
    TrainOptions,
    absolute_spec,
    check_against,
    flag,
    shown,
    world_path,
)
from sim.commandline import NotRegularFileError, OneLineParser, read_head

MAX_CONFIG_BYTES = 64 << 10  # a config file is a few lines: anything larger is not one
Read = Callable[[Any], Any]
# Flags that say how this command runs rather than what the run is: not keys of a config file.
COMMAND_ONLY = ("config", "resume", "quiet", "trust")


@dataclass(frozen=True)
class Option:
    """One option: its field (``name``), help, how a config file's value is checked (``read``,
    ValueError saying what is accepted) and how a flag's text becomes that value (``parse``;
    None for an on/off flag, ``--x`` and ``--no-x``)."""

    name: str
    help: str
    read: Read
    parse: Read | None
    metavar: str | None = None
    aliases: tuple[str, ...] = ()

    @property
    def keys(self) -> tuple[str, ...]:
        """Its names as flags without their dashes (``--n-envs`` -> ``n-envs``)."""
        return (flag(self.name), *self.aliases)


def _number(name: str, metavar: str, help: str, knob: Knob,
            aliases: tuple[str, ...] = ()) -> Option:
    return Option(name, f"{help}; {knob.span()}", knob.check, knob.parse, metavar, aliases)


def _switch(name: str, help: str) -> Option:
    return Option(name, help, _bool, None)


def _bool(value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"must be true or false; got {value!r:.40}")
    return value


def _device(value: Any) -> str:
    if value not in DEVICES:
        raise ValueError(f"must be one of {', '.join(DEVICES)}; got {value!r:.40}")
    return str(value)


def _folder(value: Any) -> str:
    if not isinstance(value, str) or not value or "\0" in value:  # no path holds a NUL
        raise ValueError(f"must be a folder's path; got {value!r:.40}")
    return value


def _hidden(value: Any) -> tuple[int, ...]:
    """Layer widths as a list (a file) or ``128,128`` (a flag or a file)."""
    if isinstance(value, str):
        try:
            value = [int(part) for part in value.split(",")]
        except ValueError:
            pass  # check_hidden names what is accepted
    return check_hidden(value)


def _against(value: Any) -> tuple[str, ...]:
    """Policy specs as a list (a file) or ``factor,magpie`` (a flag or a file)."""
    if isinstance(value, str):
        value = value.split(",")
    if not isinstance(value, list):
        raise ValueError(f"must list policy specs; got {value!r:.40}")
    try:
        return check_against(tuple(value))
    except TrainingError as e:
        raise ValueError(str(e).removeprefix("against ")) from None


def _run(name: str, metavar: str, help: str, aliases: tuple[str, ...] = ()) -> Option:
    return _number(name, metavar, help, KNOBS[name], aliases)


def _ppo(name: str, metavar: str, help: str) -> Option:
    return _number(name, metavar, help, PPO_KNOBS[name])


# The run's options: their order is --help's.
RUN_OPTIONS = (
    _run("steps", "N", "learning-seat steps, whole run: it stops at the first whole update that "
         "reaches N (--minutes usually stops first)"),
    _run("minutes", "M", "wall time for training, whole run, evaluation excluded"),
    _run("seed", "S", "training seed"),
    Option("out", "output directory", _folder, _folder, "DIR"),
    _run("envs", "K", "episodes stepped together in the batched engine", ("n-envs",)),
    Option("device", "where the network learns; auto takes a GPU if torch sees one", _device,
           _device, "|".join(DEVICES)),
    _run("threads", "T", "torch threads (1: fastest measured on 2 cores)"),
    _switch("self_play", "learn in all six seats against itself, past snapshots and the "
            "--against opponents"),
    _switch("league", "league training: opponents drawn from the --against ones, past "
            "snapshots and the learner itself, weighted toward those it loses to (PFSP)"),
    Option("against", "the opponents, comma-separated (a config file's list: paths relative "
           "to it): factor, magpie, random, champion, ppo:MODEL, sb3:MODEL (sandboxed; see "
           "--trust), module:Name", _against, _against, "P1,P2,..."),
    Option("world", "train and evaluate in the town of this world file (TOML or JSON; "
           "docs/feasibility.md; in a --config file, relative to that file's folder); a model "
           "trained there plays it with --world (and --turns) in guild evaluate and guild play",
           world_path, world_path, "FILE"),
    _run("turns", "N", "turns of every episode, trained and evaluated (default the world "
         "file's, else 14)"),
    _run("checkpoint_minutes", "M", "minutes between checkpoints"),
    _run("eval_episodes", "E", f"held-out seeds {EVAL_SEED0}.. for the paired evaluation "
         "before and after, each played in all six seats"),
    _switch("plot", "draw curve.png"),
)
PPO_OPTIONS = (
    _ppo("lr", "LR", "Adam's learning rate"),
    _ppo("ent_coef", "C", "entropy bonus: keeps the policy exploring"),
    _ppo("clip", "EPS", "PPO's clip range of the probability ratio"),
    _ppo("gamma", "G", "discount (1: the final score counts undiscounted)"),
    _ppo("gae_lambda", "L", "GAE's lambda"),
    _ppo("epochs", "N", "passes over each update's experience"),
    _ppo("minibatch", "N", "samples per gradient step (the update's are split evenly near it)"),
    _ppo("episodes", "N", "the rollout: whole episodes of every engine row gathered per "
         "update"),
    _ppo("vf_coef", "C", "weight of the value loss"),
    _ppo("max_grad_norm", "N", "the gradients' norm is clipped to it"),
    Option("hidden", "the network's hidden layer widths, comma-separated or, in a config "
           "file, a list", _hidden, _hidden, "W,W"),
    _switch("shared", "one trunk for the policy and value heads (--no-shared: two)"),
    _ppo("snapshot_every", "N", "self-play and league: updates between snapshots of the "
         "learner"),
    _ppo("anneal_steps", "N", "the learning rate falls linearly from --lr to 0 at this step "
         "(0: constant)"),
    _ppo("fixed_share", "F", "league: the --against opponents' guaranteed share of the "
         "opponent seats; the rest are drawn by PFSP weights over the whole pool"),
)
OPTIONS = RUN_OPTIONS + PPO_OPTIONS
PPO_NAMES = frozenset(PPOConfig.names())


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The options, shared by the example script and ``guild train``."""
    _add(p, RUN_OPTIONS, TrainOptions())
    p.add_argument("--config", metavar="FILE.toml", action=_Once,
                   help="options from a TOML file, keys named as the flags without dashes "
                   "(lr = 1e-3, ent-coef = 0.01, hidden = [256, 256]); flags override it")
    p.add_argument("--resume", action="store_true",
                   help="continue the run in --out from its last checkpoint")
    p.add_argument("--quiet", action="store_true",
                   help="no progress bar or progress lines; results and the summary only")
    p.add_argument("--trust", action="store_true",
                   help="load sb3: opponents in this process (a zip is a pickle: loading it "
                   "runs its code; only for files you trust); by default guild train loads "
                   "each in a bubblewrap sandbox and plays it from its weights alone (the "
                   "example script has no sandbox and refuses them). With --resume, also "
                   "play the module: and sb3: opponents the checkpoint names without their "
                   "being named again by --against (a checkpoint may come from anyone)")
    _add(p.add_argument_group("PPO hyperparameters (a resumed run keeps its own)"), PPO_OPTIONS,
         PPOConfig())


def _add(group: Any, options: tuple[Option, ...], defaults: object) -> None:
    """``options`` as flags; each defaults to None ("not given"): :func:`options_from_args`
    fills the defaults in after the config file, and ``--help`` shows them."""
    for o in options:
        flags = [f"--{k}" for k in o.keys]
        default = getattr(defaults, o.name)
        help = o.help if default is None else f"{o.help} (default {shown(default)})"
        if o.parse is None:
            group.add_argument(*flags, dest=o.name, action=argparse.BooleanOptionalAction,
                               default=None, help=help)
        else:
            group.add_argument(*flags, dest=o.name, type=_flag(o.parse), default=None,
                               metavar=o.metavar, help=help)


class _Once(argparse.Action):
    """An option given at most once: a second ``--config`` would silently drop the first
    file's keys, which no reader of the command line expects."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        if getattr(namespace, self.dest, None) is not None:
            parser.error(f"argument {option_string}: given twice; give one file (flags "
                         "override its keys)")
        setattr(namespace, self.dest, values)


def _flag(parse: Read) -> Read:
    """``parse`` as an argparse type: its ValueError becomes the one-line usage error that
    names the flag."""
    def convert(text: str) -> Any:
        try:
            return parse(text)
        except ValueError as e:
            raise argparse.ArgumentTypeError(str(e)) from None

    return convert


def build_parser(prog: str = "train_ppo.py") -> argparse.ArgumentParser:
    """The command's parser (``prog`` names it in usage and error lines)."""
    p = OneLineParser(prog=prog,
                      description="Train a guild seat with PPO on the batched engine.")
    add_arguments(p)
    return p


def options_from_args(args: argparse.Namespace) -> TrainOptions:
    """The options of a parsed command line: the defaults, then ``--config``'s keys, then the
    flags given. Raises :class:`TrainingError` (one line) for a bad config file."""
    values, source = ({}, None) if args.config is None else read_config(args.config)
    if "world" in values and args.world is None and not args.resume:
        _check_world(args.config, values["world"])  # (a resume keeps the run's own town)
    values.update({o.name: getattr(args, o.name) for o in OPTIONS
                   if getattr(args, o.name) is not None})
    return make_options(values, resume=args.resume, config_file=source)


def _check_world(config: str, world: str) -> None:
    """A config file's ``world`` names a world file: else one line naming the config file and
    its key, as any other bad key's (not the world file's error alone, far from its cause)."""
    from sim.rules.worldfile import WorldFileError, world_and_turns

    try:
        world_and_turns(world, None)
    except WorldFileError as e:
        raise TrainingError(f"--config {config!r}: key 'world': {e}") from None


def make_options(values: dict[str, Any], resume: bool = False,
                 config_file: tuple[str, str] | None = None) -> TrainOptions:
    """:class:`TrainOptions` from checked values by option name, PPO's among them."""
    ppo = {k: v for k, v in values.items() if k in PPO_NAMES}
    run = {k: v for k, v in values.items() if k not in PPO_NAMES}
    try:
        config = PPOConfig(**ppo)
    except ValueError as e:
        raise TrainingError(str(e)) from None
    return TrainOptions(**run, ppo=config, resume=resume, config_file=config_file,
                        asked=frozenset(values))


_KEYS = {key: o for o in OPTIONS for k in o.keys for key in (k, k.replace("-", "_"))}


def read_config(path: str) -> tuple[dict[str, Any], tuple[str, str]]:
    """The checked values of a config file by option name, and its ``(path, sha256)``;
    :class:`TrainingError` (one line naming the file, and the key) otherwise."""
    data = _read_bounded(path)
    table = _parse_toml(path, data)
    values: dict[str, Any] = {}
    given: dict[str, str] = {}  # option name -> the key that set it
    for key, value in table.items():
        o = _option(path, key)
        if o.name in given:
            raise TrainingError(f"--config {path!r}: {given[o.name]!r} and {key!r} both set "
                                f"{flag(o.name)}")
        try:
            values[o.name] = o.read(value)
        except ValueError as e:
            raise TrainingError(f"--config {path!r}: {key} {e}") from None
        given[o.name] = key
    # A path in the file is relative to the file (its target, when the file given is a link:
    # the one whose sha256 the summary records), as a shipped recipe is run from anywhere.
    folder = Path(path).resolve().parent
    if "world" in values:
        values["world"] = str(folder / values["world"])
    if "against" in values:
        values["against"] = tuple(absolute_spec(a, folder) for a in values["against"])
    return values, (str(Path(path).resolve()), hashlib.sha256(data).hexdigest())


def _option(path: str, key: str) -> Option:
    """The option a config file's key names; :class:`TrainingError` for an unknown key."""
    o = _KEYS.get(key)
    if o is not None:
        return o
    if key in COMMAND_ONLY:
        raise TrainingError(f"--config {path!r}: {key!r} is not a key: --{key} is a flag of "
                            "this command only")
    near = difflib.get_close_matches(key, list(_KEYS), n=1)
    hint = f" (did you mean {near[0]!r}?)" if near else ""
    raise TrainingError(f"--config {path!r}: unknown key {key!r:.40}{hint}; the keys are the "
                        "flags of guild train without dashes (guild train --help)")


def _read_bounded(path: str) -> bytes:
    """The file's bytes: a regular file of at most :data:`MAX_CONFIG_BYTES` (a FIFO or a device
    is refused without waiting on it)."""
    try:
        data = read_head(path, MAX_CONFIG_BYTES + 1)
    except NotRegularFileError:
        raise TrainingError(f"--config {path!r} is not a regular file") from None
    except OSError as e:  # also a regular file that fails to read (/proc/self/mem, a bad disk)
        raise TrainingError(f"--config {path!r}: cannot read it ({e.strerror})") from None
    if len(data) > MAX_CONFIG_BYTES:
        raise TrainingError(f"--config {path!r} is larger than {MAX_CONFIG_BYTES >> 10} KiB: "
                            "not a config file of guild train")
    return data


def _parse_toml(path: str, data: bytes) -> dict[str, Any]:
    import tomllib

    try:
        return tomllib.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise TrainingError(f"--config {path!r} is not TOML (not UTF-8 text)") from None
    except tomllib.TOMLDecodeError as e:
        raise TrainingError(f"--config {path!r} is not TOML ({str(e)[:120]})") from None
    except RecursionError:  # hostile nesting: tomllib recurses once per level
        raise TrainingError(f"--config {path!r} is nested too deeply for a config of guild "
                            "train") from None
    except ValueError:  # Python's int digit limit, raised by tomllib's int()
        raise TrainingError(f"--config {path!r} holds a number too long for any option of "
                            "guild train") from None
