"""The body of ``guild train`` (``agents.learn.training.train`` checks the options, then calls
:func:`run_training`): the paired evaluation before, the updates with their curve, checkpoints
and TensorBoard scalars, the model file, the evaluation after, and the summary. TensorBoard
gets the evaluations too (``eval/diff``, ``eval/low``, ...), at the step each measured.
"""

from __future__ import annotations

import copy
import json
import math
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agents.learn.ppo import MODEL_NAME, BatchedPPOPolicy, save_model
from agents.learn.ppo_learn import Learner, arithmetic, engine_share
from agents.learn.ppo_pool import SELF
from agents.learn.ppo_records import (
    CHECKPOINT_NAME,
    CURVE_COLUMNS,
    Board,
    plot_curve,
    save_checkpoint,
    write_curve,
    write_text,
)
from agents.learn.sb3_extract import Extract
from agents.learn.stopping import interruptible
from agents.learn.train_options import (
    EVAL_OPPONENTS,
    EVAL_SEED0,
    SNAPSHOTS,
    TENSORBOARD,
    Town,
    TrainingError,
    TrainOptions,
    opponent_digests,
    run_record,
)
from sim.codec.action_table import TABLE_VERSION
from sim.commandline import printable
from sim.rules.world import DEFAULT_TURNS

Say = Callable[[str], None]
DIGESTS = 3        # updates whose weights' digest summary.json records (a re-run's check)


def evaluate(policy: Any, seeds: range, town: Town) -> dict:
    """The paired, seat-rotated comparison with factor (``agents.learn.evaluation``) in the
    run's town, as plain data."""
    from agents.learn.evaluation import paired_evaluation

    result = paired_evaluation(policy, against=EVAL_OPPONENTS, seeds=seeds, turns=town.turns,
                               world=town.world)
    return json.loads(json.dumps(result.to_dict()))  # plain values: checkpoints load them


def _line(when: str, e: dict) -> str:
    return (f"{when}: {e['diff']:+.3f} vs factor, 95% [{e['low']:+.3f}, {e['high']:+.3f}] "
            f"(mean score {e['mean']:+.3f}; factor in the same seats {e['baseline_mean']:+.3f})")


def run_training(options: TrainOptions, town: Town, out: Path, device: str,
                 checkpoint: dict | None, say: Say, log: Say, warn: Say,
                 progress: Callable[[float, dict], None], extract: Extract | None = None,
                 ) -> dict:
    """Train as ``options`` say, in ``town``, into ``out`` (module docstring); returns the
    summary. ``extract`` loads ``sb3:`` opponents in a sandbox (``agents.learn.ppo_arena``)."""
    if checkpoint is not None:
        o = options  # (train() has read the run's own options and town from the checkpoint)
        learner, curve, seconds, before, digests, opponents = _restore(o, town, out, device,
                                                                       checkpoint, extract)
        resumed: int | None = learner.steps
        log(f"resumed from the checkpoint at step {learner.steps:,} ({seconds:.0f} s trained)")
    else:
        o, resumed = options, None
        opponents = opponent_digests(o.against)  # once: the files the learner loads now
        learner = Learner(o.ppo, o.envs, o.self_play, o.seed, device, turns=town.turns,
                          against=o.against, league=o.league, world=town.world,
                          extract=extract)
        curve, seconds, before, digests = [], 0.0, None, []
    seeds = range(EVAL_SEED0, EVAL_SEED0 + o.eval_episodes)
    if not town.standard or town.turns != DEFAULT_TURNS:
        say(f"town: {town.shown()}")
    say(f"paired evaluation: seeds {seeds[0]}..{seeds[-1]}, the model in each of the six "
        f"seats against {' and '.join(EVAL_OPPONENTS)}, compared with factor in its place")
    board = Board(out, learner.steps)
    try:
        if before is None:  # (a resumed run's was logged when the run began)
            with interruptible():
                before = evaluate(BatchedPPOPolicy.from_net(_on_cpu(learner)), seeds, town)
            board.add_evaluation(learner.steps, before)
        say(_line("before training", before))
        first_step, session = learner.steps, time.perf_counter()
        seconds = _loop(o, town, out, learner, curve, seconds, before, digests, opponents,
                        board, log, progress)
        session = time.perf_counter() - session
        steps = learner.steps
        model = out / MODEL_NAME
        save_model(learner.net, model, {
            "trainer": "guild train", "seed": o.seed, "steps": steps,
            "updates": learner.updates, "train_seconds": round(seconds, 1), "envs": o.envs,
            "self_play": o.self_play, "league": o.league, "against": list(o.against),
            "device": device, "threads": o.threads, "digests": digests,
            "digest": learner.digest(), "world": town.summary(), "turns": town.turns,
            "hyperparameters": o.ppo.to_dict()})
        with interruptible():  # the saved file, as leagues play it
            after = evaluate(BatchedPPOPolicy(model), seeds, town)
        board.add_evaluation(steps, after)
    finally:
        board.close()
    rate = (steps - first_step) / session if steps > first_step else float("nan")
    say(_line("after training", after))
    pace = "no steps this session" if math.isnan(rate) else f"{rate:,.0f} steps/s this session"
    say(f"{steps:,} steps in {seconds:.0f} s ({pace}, {engine_share(learner):.0%} of it in the "
        f"engine); model: {printable(str(model))}")
    stopped_by = "steps" if steps >= o.steps else "minutes"
    if stopped_by == "minutes" and o.steps != TrainOptions.steps:  # steps asked, time ran out
        warn(f"train: stopped at its --minutes ({o.minutes:g}) with {steps:,} of the "
             f"{o.steps:,} --steps asked; add --resume and a larger --minutes to go on to them")
    write_curve(out / "curve.csv", curve)
    if o.plot:
        try:
            plot_curve(out / "curve.png", curve, after["baseline_mean"], after["mean"])
        except ImportError:
            warn("train: matplotlib missing; no curve.png (pip install matplotlib)")
    summary = {"policy": f"ppo:{model.resolve()}",  # docs/api.md §3: the spec that plays the model
               "model": str(model), "table_version": TABLE_VERSION, "steps": steps,
               "train_seconds": round(seconds, 1),
               "steps_per_second": None if math.isnan(rate) else round(rate, 1),
               "stopped_by": stopped_by,
               "engine_share": round(engine_share(learner), 3), "seed": o.seed,
               "envs": o.envs, "self_play": o.self_play, "league": o.league,
               "against": list(o.against), "device": device,
               "threads": o.threads, "resumed_from": resumed,
               "digests": digests, "digest": learner.digest(),
               "pool": learner.arena.pool.to_list() if o.league else None,
               "snapshots": sorted(p.name for p in (out / SNAPSHOTS).glob("*.pt")),
               "world": town.summary(), "turns": town.turns,
               "evaluation": {"seeds": [seeds[0], seeds[-1]], "against": list(EVAL_OPPONENTS),
                              "turns": town.turns},
               "before": before, "after": after, "hyperparameters": o.ppo.to_dict(),
               "config": _config_record(o.config_file),
               "tensorboard": str(out / TENSORBOARD) if board.enabled else None}
    write_text(out / "summary.json", json.dumps(summary, indent=1) + "\n")
    return summary


def _restore(o: TrainOptions, town: Town, out: Path, device: str, checkpoint: dict,
             extract: Extract | None = None,
             ) -> tuple[Learner, list, float, dict, list, dict[str, str]]:
    """The run a checkpoint holds (its options ``o`` and ``town`` read from it): its learner,
    curve, seconds trained, "before" figures, first digests and the opponents' digests it
    began with; :class:`TrainingError` for one damaged inside. Everything is checked here,
    before the first update (the learner's state: its network, snapshots, optimizer, random
    streams, counts and league pool, ``Learner.load_state``): a damaged checkpoint is one line
    naming it, never a failure mid-run nor a run going on from a wrong state."""
    try:
        learner = Learner(o.ppo, o.envs, o.self_play, o.seed, device, turns=town.turns,
                          against=o.against, league=o.league, world=town.world,
                          extract=extract)
        learner.load_state(checkpoint["learner"], str(out / CHECKPOINT_NAME))
        curve = [list(row) for row in checkpoint["curve"]]
        if not all(len(row) == len(CURVE_COLUMNS) and all(
                type(x) in (int, float) for x in row) for row in curve):
            raise ValueError("its curve is not rows of numbers")
        seconds = float(checkpoint["seconds"])
        if not 0 <= seconds < math.inf:
            raise ValueError(f"it has trained for {seconds} seconds")
        before = json.loads(json.dumps(dict(checkpoint["before"]), allow_nan=True))
        _line("before training", before)  # the figures it must print
        digests = [dict(d) for d in checkpoint.get("digests", [])]
        opponents = _began_with(checkpoint)
    except TrainingError:
        raise
    except (KeyError, TypeError, ValueError, RuntimeError, ArithmeticError, AttributeError,
            IndexError) as e:  # damaged inside
        raise TrainingError(f"--resume: checkpoint {str(out / CHECKPOINT_NAME)!r} cannot "
                            f"be restored ({type(e).__name__}: {str(e)[:100]})") from None
    return learner, curve, seconds, before, digests, opponents


def _loop(o: TrainOptions, town: Town, out: Path, learner: Learner, curve: list, seconds: float,
          before: dict, digests: list, opponents: dict[str, str], board: Board, log: Say,
          progress: Callable[[float, dict], None]) -> float:
    """Update until the steps or minutes are spent, adding to ``curve``, ``digests`` (the first
    :data:`DIGESTS` updates') and ``board``, keeping checkpoints and writing each snapshot of
    self-play or the league to ``OUT/snapshots/``; returns the seconds trained, whole run.
    Ctrl-C keeps a checkpoint."""
    def record() -> dict:
        return {"run": run_record(o, town, opponents), "learner": learner.state(),
                "curve": list(curve), "seconds": seconds, "before": before,
                "digests": list(digests)}

    started, first_step = time.perf_counter(), learner.steps
    base, budget = seconds, o.minutes * 60.0
    saved = started
    boundary: dict | None = None  # the state before the update under way, for Ctrl-C
    try:
        while learner.steps < o.steps and seconds < budget:
            boundary = copy.deepcopy(record())  # (the optimizer's tensors change in place)
            with interruptible():  # where a stop lands (agents.learn.stopping)
                f = learner.update()
            now = time.perf_counter()
            seconds = base + now - started
            rate = (learner.steps - first_step) / max(now - started, 1e-9)
            curve.append([learner.steps, round(seconds, 2), round(f["score"], 5), f["episodes"],
                          round(f["entropy"], 5), round(f["approx_kl"], 6)])
            boundary = None
            if learner.updates <= DIGESTS:
                digests.append({"updates": learner.updates, "steps": learner.steps,
                                "sha256": learner.digest(),
                                "arithmetic": arithmetic(learner.device)})
            if learner.snapshot is not None:
                _save_snapshot(out, learner, o)
            board.add(learner.steps, {**_pool_scalars(learner),
                                      "train/lr": learner.lr(),
                                      "train/mean_score": f["score"],
                                      "train/entropy": f["entropy"],
                                      "loss/policy": f["policy_loss"],
                                      "loss/value": f["value_loss"],
                                      "train/approx_kl": f["approx_kl"],
                                      "train/clip_fraction": f["clip_fraction"],
                                      "speed/steps_per_s": rate,
                                      "speed/engine_share": engine_share(learner)})
            progress(max(learner.steps / o.steps, seconds / budget),
                     {"steps": learner.steps, "steps_per_s": rate, "score": f["score"]})
            if now - saved >= o.checkpoint_minutes * 60.0:
                save_checkpoint(out, record())
                saved = time.perf_counter()
                log(f"checkpoint at step {learner.steps:,}")
    except KeyboardInterrupt:  # Ctrl-C: keep what was learnt; --resume continues from it,
        # from the last whole update (half an update's weights would not resume exactly)
        save_checkpoint(out, boundary if boundary is not None else record())
        raise
    save_checkpoint(out, record())
    return seconds


def _began_with(checkpoint: dict) -> dict[str, str]:
    """The opponents' digests the run began with, kept through every resume (a run begun
    before they were recorded has none), so that each resume is compared with its run's start,
    not with the files an earlier resume found."""
    kept = checkpoint["run"].get("opponents") or {}
    return {str(k): str(v) for k, v in dict(kept).items()}


def _save_snapshot(out: Path, learner: Learner, o: TrainOptions) -> None:
    """The update's snapshot as a model file (``ppo:OUT/snapshots/step-N.pt`` plays it)."""
    folder = out / SNAPSHOTS
    folder.mkdir(exist_ok=True)
    save_model(learner.snapshot, folder / f"step-{learner.steps:010d}.pt", {
        "trainer": "guild train", "snapshot_of": str(out), "seed": o.seed,
        "steps": learner.steps, "updates": learner.updates, "hyperparameters": o.ppo.to_dict()})


def _pool_scalars(learner: Learner) -> dict:
    """TensorBoard's view of the league's pool: each member's draw weight and the learner's
    win share over it (snapshots by their place, newest ``snapshot-1``)."""
    arena = learner.arena
    if not arena.league:
        return {}
    members = arena.pool.to_list()
    newest = len(members) - 1  # self is last, the newest snapshot just before it
    out = {}
    for i, m in enumerate(members):
        name = m["name"] if m["fixed"] or m["name"] == SELF else f"snapshot-{newest - i}"
        out[f"pool/weight/{name}"] = m["weight"]
        if name != SELF:
            out[f"pool/win/{name}"] = m["win"]
    return out


def _config_record(config_file: tuple[str, str] | None) -> dict | None:
    """The ``--config`` file the options came from, as summary.json names it."""
    if config_file is None:
        return None
    path, sha256 = config_file
    return {"path": path, "sha256": sha256}


def _on_cpu(learner: Learner) -> Any:
    """The learner's network as the evaluation plays it (a CPU copy when it learns on a GPU)."""
    return learner.net if learner.device.type == "cpu" else copy.deepcopy(learner.net).cpu()
