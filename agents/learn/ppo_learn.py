"""The learner of ``guild train``: a compact PPO (CleanRL's single-file recipe) fed by the batched
engine through :class:`~agents.learn.ppo_arena.Arena`.

One update = ``episodes`` whole episodes of every row (no bootstrapping at the rollout's edge,
module docstring of ``agents.learn.ppo_arena``), generalised advantage estimation, then ``epochs``
passes of clipped-surrogate minibatch steps with a masked categorical (illegal logits at
``-1e9``), a value loss and an entropy bonus over the legal actions.

Everything random draws from the seed: the network's initial weights, a torch generator for
action samples and minibatch order, and the arena's numpy streams, so two runs with the same
seed, device, torch thread count and arithmetic (:func:`arithmetic`) produce the same weights,
and a checkpoint (:meth:`state`) taken between updates resumes the run exactly.
"""

from __future__ import annotations

import copy
import hashlib
import math
import platform
import time
from collections.abc import Sequence

import numpy as np
import torch

from agents.learn.ppo import MASKED, PolicyNet, model_dict, net_from_dict
from agents.learn.ppo_arena import AGAINST, MAX_SNAPSHOTS, Arena
from agents.learn.ppo_config import PPOConfig
from agents.learn.sb3_extract import Extract
from sim.codec.action_table import TABLE_VERSION
from sim.rules.world import World


def arithmetic(device: torch.device | str) -> str:
    """The floating-point path a run's weights depend on, beside its seed and thread count:
    torch's version and, on the CPU, the vendor and the instruction set torch's kernels use
    (MKL and ATen pick their kernels by them, and two paths round differently), or the GPU's
    name. Recorded with each digest, so a re-run knows which digests it can reproduce."""
    device = torch.device(device)
    if device.type == "cuda":
        return f"cuda {torch.cuda.get_device_name(device)}, torch {torch.__version__}"
    vendor = platform.machine() or "unknown"
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as f:
            for line in f:
                if line.startswith("vendor_id"):
                    vendor = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return (f"{device.type} {vendor} {torch.backends.cpu.get_cpu_capability()}, "
            f"torch {torch.__version__}")


class Learner:
    """The network, its optimizer and the arena it plays in; :meth:`update` trains once.

    Args:
        config: the hyperparameters.
        envs: rows of the engine (episodes gathered per update and episode slot).
        self_play: the arena's self-play lineups.
        seed: seeds everything (module docstring).
        device: where the network learns (``"cpu"`` or ``"cuda"``); the engine is CPU.
        turns: episode length.
        against: the fixed opponents (batched policy specs).
        league: the arena's league lineups (prioritized fictitious self-play).
        world: the town (default the standard one).
        extract: loads ``sb3:`` opponents in a sandbox (``agents.learn.ppo_arena``).
    """

    def __init__(self, config: PPOConfig, envs: int, self_play: bool, seed: int,
                 device: str = "cpu", turns: int = 14, against: Sequence[str] = AGAINST,
                 league: bool = False, world: World | None = None,
                 extract: Extract | None = None) -> None:
        self.config = config
        self.device = torch.device(device)
        self.generator = torch.Generator().manual_seed(seed)
        self.arena = Arena(envs, self_play, seed, self.generator, turns, against, league, world,
                           extract, config.fixed_share)
        self.turns = turns
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            net = PolicyNet(self.arena.width, self.arena.engine.tables.n_actions,
                            config.hidden, config.shared)
        self.net = net.to(self.device)
        self.optimizer = torch.optim.Adam(self.net.parameters(), lr=config.lr, eps=1e-5)
        self.steps = 0
        self.updates = 0
        self.engine_seconds = 0.0
        self.learner_seconds = 0.0
        self.snapshot: PolicyNet | None = None  # the one the last update took, if it took one

    # --- one update -------------------------------------------------------------------------
    def update(self) -> dict:
        """Gather ``episodes`` rollouts, learn from them; returns the update's figures."""
        self._set_lr()
        blocks = [self._episode() for _ in range(self.config.episodes)]
        t0 = time.perf_counter()
        obs, actions, logp, adv, ret = (torch.cat([b[k] for b in blocks]) for k in range(5))
        figures = self._learn(obs, actions, logp, adv, ret)
        self.learner_seconds += time.perf_counter() - t0
        scores = np.concatenate([b[5] for b in blocks])
        self.steps += int(actions.shape[0])
        self.updates += 1
        self.snapshot = None
        if ((self.arena.self_play or self.arena.league)
                and self.updates % self.config.snapshot_every == 0):
            self.snapshot = copy.deepcopy(self.net).cpu().eval()
            self.arena.add_snapshot(self.snapshot, f"snapshot@{self.steps}")
        figures.update(score=float(scores.mean()), episodes=int(scores.size))
        return figures

    def _episode(self) -> tuple:
        """One episode of every row: the learners' observations, actions, log-probabilities,
        advantages and returns (flattened), and their final scores."""
        arena, dev, turns = self.arena, self.device, self.turns
        t0 = time.perf_counter()
        m = arena.start()
        obs = np.zeros((turns, m, arena.width), np.float32)
        actions = torch.zeros((turns, m), dtype=torch.long)
        logp = torch.zeros((turns, m))
        values = torch.zeros((turns, m))
        rewards = np.zeros((turns, m), np.float32)
        learn = 0.0
        for t in range(turns):
            arena.observe(obs[t])
            t1 = time.perf_counter()
            with torch.no_grad():
                logits, value = self.net(torch.from_numpy(obs[t]).to(dev))
                logits = logits.cpu()
                u = torch.rand(logits.shape, generator=self.generator).clamp_(1e-12, 1.0)
                a = (logits - torch.log(-torch.log(u))).argmax(-1)  # Gumbel-max sample
                logp[t] = torch.log_softmax(logits, -1).gather(1, a[:, None]).squeeze(1)
                values[t] = value.cpu()
                actions[t] = a
            learn += time.perf_counter() - t1
            rewards[t], done = arena.play_turn(a.numpy())
        if not done.all():
            raise RuntimeError("an episode outlived its turns; the arena's rollouts assume "
                               "every row ends together")
        scores = arena.learner_scores()
        arena.end()
        t1 = time.perf_counter()
        adv = _advantages(torch.from_numpy(rewards), values, self.config.gamma,
                          self.config.gae_lambda)
        ret = adv + values
        learn += time.perf_counter() - t1
        self.learner_seconds += learn
        self.engine_seconds += time.perf_counter() - t0 - learn
        width = arena.width
        return (torch.from_numpy(obs).reshape(-1, width), actions.reshape(-1),
                logp.reshape(-1), adv.reshape(-1), ret.reshape(-1), scores)

    def _set_lr(self) -> None:
        """The learning rate of the next update: ``lr``, or with ``anneal_steps`` falling
        linearly from ``lr`` at step 0 to 0 at that step (counted in steps, not time, so the
        run is the same on a slower machine)."""
        c = self.config
        lr = c.lr
        if c.anneal_steps:
            lr = c.lr * max(0.0, 1.0 - self.steps / c.anneal_steps)
        for group in self.optimizer.param_groups:
            group["lr"] = lr

    def lr(self) -> float:
        return float(self.optimizer.param_groups[0]["lr"])

    def digest(self) -> str:
        """sha256 of the weights (every tensor's bytes in the network's order): two runs with
        the same seed, options, device, thread count and :func:`arithmetic` give the same
        digest."""
        h = hashlib.sha256()
        for name, t in self.net.state_dict().items():
            h.update(name.encode())
            h.update(t.detach().cpu().contiguous().numpy().tobytes())
        return h.hexdigest()

    def _learn(self, obs, actions, old_logp, adv, ret) -> dict:
        c, dev = self.config, self.device
        n = actions.shape[0]
        parts = max(1, round(n / c.minibatch))  # equal minibatches near the configured size
        size = n // parts
        sums = {"policy_loss": 0.0, "value_loss": 0.0, "entropy": 0.0, "approx_kl": 0.0,
                "clip_fraction": 0.0}
        count = 0
        self.net.train()
        for _ in range(c.epochs):
            order = torch.randperm(n, generator=self.generator)
            for start in range(0, parts * size, size):
                i = order[start:start + size]
                o, a = obs[i].to(dev), actions[i].to(dev)
                old, ad, r = old_logp[i].to(dev), adv[i].to(dev), ret[i].to(dev)
                ad = (ad - ad.mean()) / (ad.std() + 1e-8)
                logits, value = self.net(o)
                logps = torch.log_softmax(logits, -1)
                new = logps.gather(1, a[:, None]).squeeze(1)
                ratio = torch.exp(new - old)
                policy_loss = torch.max(-ad * ratio,
                                        -ad * ratio.clamp(1 - c.clip, 1 + c.clip)).mean()
                value_loss = 0.5 * (value - r).pow(2).mean()
                entropy = _entropy(logps, logits > MASKED)
                loss = policy_loss + c.vf_coef * value_loss - c.ent_coef * entropy
                self.optimizer.zero_grad(set_to_none=True)
                loss.backward()
                torch.nn.utils.clip_grad_norm_(self.net.parameters(), c.max_grad_norm)
                self.optimizer.step()
                with torch.no_grad():
                    sums["policy_loss"] += float(policy_loss)
                    sums["value_loss"] += float(value_loss)
                    sums["entropy"] += float(entropy)
                    sums["approx_kl"] += float(((ratio - 1) - (new - old)).mean())
                    sums["clip_fraction"] += float(((ratio - 1).abs() > c.clip).float().mean())
                count += 1
        self.net.eval()
        return {k: v / max(count, 1) for k, v in sums.items()}

    # --- files ------------------------------------------------------------------------------
    def model(self, provenance: dict) -> dict:
        """The model file's dict (``agents.learn.ppo``)."""
        return model_dict(self.net, provenance)

    def state(self) -> dict:
        """Everything a resumed run needs, as plain values and tensors (``weights_only``)."""
        return {"table_version": TABLE_VERSION, "config": self.config.to_dict(),
                "model": self.model({}), "optimizer": self.optimizer.state_dict(),
                "generator": self.generator.get_state(), "arena": self.arena.state(),
                "snapshots": [model_dict(s, {}) for s in self.arena.snapshots],
                "steps": self.steps, "updates": self.updates,
                "engine_seconds": self.engine_seconds, "learner_seconds": self.learner_seconds}

    def load_state(self, state: dict, name: str) -> None:
        """Continue from :meth:`state`; ``name`` (the file) is for error messages. A state this
        learner cannot continue exactly (a checkpoint damaged or forged: tensors of other
        shapes, a pool that is not its opponents', snapshots and itself, negative counts)
        raises ValueError, or the error torch or numpy raise, before any update."""
        from pathlib import Path

        net = net_from_dict(state["model"], Path(name))
        self.net.load_state_dict(net.state_dict())
        kept = state["snapshots"]
        if not isinstance(kept, list) or len(kept) > MAX_SNAPSHOTS:
            raise ValueError(f"it holds {_count(kept)} snapshots; a run keeps at most "
                             f"{MAX_SNAPSHOTS}")
        shapes = _shapes(self.net)
        snapshots = [net_from_dict(s, Path(name)) for s in kept]
        if any(_shapes(s) != shapes for s in snapshots):
            raise ValueError("a snapshot's layers are not the shapes of the learner's")
        self.arena.snapshots = [s.eval() for s in snapshots]
        self._load_optimizer(state["optimizer"])
        self.generator.set_state(state["generator"])
        self.arena.load_state(state["arena"])
        self.steps, self.updates = _counter(state, "steps"), _counter(state, "updates")
        self.engine_seconds = _seconds(state, "engine_seconds")
        self.learner_seconds = _seconds(state, "learner_seconds")

    def _load_optimizer(self, state: dict) -> None:
        """Adam's state, checked: torch loads moments of any shape, and the first step with
        them fails mid-run (or, with other settings or non-finite moments, learns wrong)."""
        def settings() -> list[dict]:
            return [{k: v for k, v in g.items() if k not in ("params", "lr")}
                    for g in self.optimizer.param_groups]

        ours = settings()
        self.optimizer.load_state_dict(state)
        if settings() != ours:
            raise ValueError("its optimizer's settings are not this learner's")
        for p in self.net.parameters():
            for key, value in self.optimizer.state.get(p, {}).items():
                if key not in ADAM_STATE or not isinstance(value, torch.Tensor):
                    raise ValueError(f"its optimizer holds {key!r:.40}, which Adam does not")
                want = () if key == "step" else p.shape
                if (value.shape != want or not bool(torch.isfinite(value).all())
                        or (key != "exp_avg" and bool((value < 0).any()))):
                    raise ValueError(f"its optimizer's {key} is not a finite tensor of shape "
                                     f"{tuple(want)}")


ADAM_STATE = ("step", "exp_avg", "exp_avg_sq")  # what Adam keeps per parameter


def _shapes(net: torch.nn.Module) -> dict[str, tuple[int, ...]]:
    return {k: tuple(v.shape) for k, v in net.state_dict().items()}


def _count(value: object) -> str:
    return f"{len(value):,}" if isinstance(value, list) else type(value).__name__


def _counter(state: dict, key: str) -> int:
    """A count of a checkpoint (steps, updates): an int, 0 or more."""
    value = state[key]
    if type(value) is not int or value < 0:
        raise ValueError(f"its {key} is {value!r:.40}, not a count")
    return value


def _seconds(state: dict, key: str) -> float:
    """Seconds of a checkpoint: a finite number, 0 or more."""
    value = state[key]
    if type(value) not in (int, float) or not 0 <= value < math.inf:
        raise ValueError(f"its {key} is {value!r:.40}, not seconds")
    return float(value)


def _advantages(rewards: torch.Tensor, values: torch.Tensor, gamma: float,
                lam: float) -> torch.Tensor:
    """GAE over ``[turns, m]`` whole episodes: the last turn is terminal (next value 0)."""
    adv = torch.zeros_like(values)
    running = torch.zeros_like(values[0])
    following = torch.zeros_like(values[0])
    for t in range(values.shape[0] - 1, -1, -1):
        delta = rewards[t] + gamma * following - values[t]
        running = delta + gamma * lam * running
        adv[t] = running
        following = values[t]
    return adv


def _entropy(logps: torch.Tensor, legal: torch.Tensor) -> torch.Tensor:
    """Mean entropy over the legal actions. ``exp`` of the illegal log-probabilities (about
    -1e9) is exact but takes a slow path on CPU; they are zeroed first."""
    logps = torch.where(legal, logps, torch.zeros_like(logps))
    return -(logps.exp() * logps).sum(-1).mean()  # illegal: 1 * 0


def engine_share(learner: Learner) -> float:
    """The fraction of the loop's time spent in the engine, the baselines and the encoder."""
    total = learner.engine_seconds + learner.learner_seconds
    return learner.engine_seconds / total if total else float("nan")

