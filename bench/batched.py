"""Batched-engine benchmarks: seat-steps per second at ``n`` episodes in lockstep.

``bench_engine`` times ``BatchedGuild.step`` alone; ``bench_full`` times the step plus the
observation and mask of every seat (``sim.batched.observe.encode``), the work a self-play trainer
needs per step.  Actions are uniformly random legal ones (``sample_legal`` over the masks),
drawn outside the timed region: the figures are the environment's cost, not the policy's.
Autoreset is on, so episode starts (the vectorised Nim setup) are included.

``python -m bench.batched [--quick] [--n N]`` prints the figures with their ratios to the
scalar engine (``bench_structured`` of ``python -m bench``) and to the original's seat-steps/s.
``N`` is 1 to the engine's ``MAX_ENVS``, checked before anything runs (a usage error is one
line, exit status 2).
"""

from __future__ import annotations

import time

import numpy as np

from bench import ORIGINAL_SEAT_STEPS_PER_S
from sim.commandline import OneLineParser

SEATS = 6


def _run(seconds: float, n: int, with_obs: bool) -> float:
    from agents.baselines.batched import sample_legal
    from sim.batched.engine import BatchedGuild
    from sim.batched.observe import all_seats, encode, offsets

    e = BatchedGuild(n, seed=0)
    rng = np.random.default_rng(0)
    r, s = all_seats(n)
    off, width = offsets(e.tables)
    obs = np.zeros((n * SEATS, width), np.float32)
    mask_at = off["action_mask"]

    def masks() -> np.ndarray:  # outside the timed region when the step does not encode
        encode(e, r, s, obs)
        return obs[:, mask_at:] > 0

    mask = masks()
    for _ in range(3):  # warm up (and compile the kernels on a fresh checkout)
        e.step(sample_legal(rng, mask).reshape(n, SEATS))
        mask = masks()
    steps, spent = 0, 0.0
    while spent < seconds:
        actions = sample_legal(rng, mask).reshape(n, SEATS)
        t0 = time.perf_counter()
        e.step(actions)
        if with_obs:
            encode(e, r, s, obs)
        spent += time.perf_counter() - t0
        mask = obs[:, mask_at:] > 0 if with_obs else masks()
        steps += 1
    return steps * n * SEATS / spent


def bench_engine(seconds: float, n: int = 4096) -> float:
    """Seat-steps/s of the engine step alone (rules, rewards, autoreset)."""
    return _run(seconds, n, False)


def bench_full(seconds: float, n: int = 4096) -> float:
    """Seat-steps/s of the step plus every seat's observation and action mask."""
    return _run(seconds, n, True)


def bench_vector_env(seconds: float, n: int = 4096) -> float:
    """Env-steps/s of ``GuildVectorEnv`` (one learning seat, five batched baselines)."""
    from agents.baselines.batched import sample_legal
    from sim.envs.vector import GuildVectorEnv

    env = GuildVectorEnv(n, flatten=True, autoreset_mode="same_step")
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    steps, spent = 0, 0.0
    while spent < seconds:
        a = sample_legal(rng, env.action_masks())
        t0 = time.perf_counter()
        env.step(a)
        spent += time.perf_counter() - t0
        steps += 1
    return steps * n / spent


def main(argv: list[str] | None = None) -> int:
    from sim.batched.engine import MAX_ENVS

    ap = OneLineParser(prog="python -m bench.batched", description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="about 1 s per figure")
    ap.add_argument("--n", type=int, default=4096,
                    help=f"episodes in lockstep, 1 to {MAX_ENVS:,} (4096)")
    args = ap.parse_args(argv)
    if not 1 <= args.n <= MAX_ENVS:  # before the scalar figure's second of work
        ap.error(f"--n must be 1 to {MAX_ENVS:,}; got {args.n}")
    secs = 1.0 if args.quick else 5.0
    from bench.workloads import SEAT_STEPS, bench_structured

    scalar = bench_structured(secs) * SEAT_STEPS
    print(f"scalar_structured_seat_steps_per_s: {scalar:.0f} seat-steps/s")
    for name, fn in (("engine", bench_engine), ("full", bench_full)):
        rate = fn(secs, args.n)
        print(f"batched_{name}_seat_steps_per_s: {rate:.0f} seat-steps/s "
              f"(n={args.n}; {rate / scalar:.1f} x scalar, "
              f"{rate / ORIGINAL_SEAT_STEPS_PER_S:.1f} x original)")
    print(f"batched_vector_env_steps_per_s: {bench_vector_env(secs, args.n):.0f} env-steps/s "
          f"(n={args.n}, five batched baselines)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
