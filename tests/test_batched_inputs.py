"""What the batched engine's entry points refuse, and that they refuse it before anything runs.

The compiled kernels index without bounds checks, so a row or seat out of range given to
``encode``, ``legal_masks`` or a batched policy's ``act`` read (or wrote) outside the engine's
arrays: a crash, or another row's data; so did an action past the table given to
``BatchedGuild.step_checked``.  Such calls run in a forked child here, so that a crash
fails its case instead of ending the run.  Also: the batch size's bound, the engine's seeds,
``observe(out=...)``, ``load_games`` and ``python -m bench.batched --n``.  Last, the truly scalar
``GuildEnv`` (opponents as dict specs: no batched twins) plays the vector env's games.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable

import gymnasium
import numpy as np
import pytest
from conftest import needs

import sim
from agents.baselines.batched import BatchedFactor, BatchedMagpie, BatchedRandom, sample_legal
from agents.champion import BatchedChampion
from sim.batched.engine import MAX_ENVS, BatchedGuild
from sim.batched.observe import encode, legal_masks
from sim.envs.vector import GuildSelfPlay, GuildVectorEnv

ENGINE = BatchedGuild(2, seed=1)


def _in_child(call: Callable[..., object], *args: object) -> str:
    """What ``call(*args)`` does in a forked child: ``"ValueError: <message>"``, ``"returned"``,
    another exception's name, or the signal that killed it."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report, then leave without pytest's exit handlers
        os.close(read)
        try:
            call(*args)
            said = "returned"
        except ValueError as e:
            said = f"ValueError: {e}"
        except BaseException as e:  # noqa: BLE001 - reported to the parent, which fails
            said = type(e).__name__
        os.write(write, said.encode()[:4000])
        os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as f:
        said = f.read().decode()
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        return f"killed by signal {os.WTERMSIG(status)}"
    return said


def _ints(*xs: int) -> np.ndarray:
    return np.array(xs, np.int64)


ACTS = {
    "encode": lambda r, s: encode(ENGINE, r, s),
    "legal_masks": lambda r, s: legal_masks(ENGINE, r, s),
    "factor": lambda r, s: BatchedFactor().act(ENGINE, r, s),
    "magpie": lambda r, s: BatchedMagpie().act(ENGINE, r, s),
    "random": lambda r, s: BatchedRandom(1).act(ENGINE, r, s),
    "champion": lambda r, s: BatchedChampion().act(ENGINE, r, s),
}
BAD_PAIRS = [  # rows, seats, the message
    (_ints(5), _ints(0), r"rows must be from 0 to 1; got row 5 \(rows\[0\]\)"),
    (_ints(0, 3_000_000), _ints(0, 0), r"got row 3000000 \(rows\[1\]\)"),
    (_ints(10 ** 9), _ints(0), "got row 1000000000"),
    (_ints(-1), _ints(0), "got row -1"),
    (np.array([2 ** 64 - 1], np.uint64), _ints(0), "got row 18446744073709551615"),
    (_ints(0), _ints(7), r"seats must be from 0 to 5; got seat 7 \(seats\[0\]\)"),
    (_ints(0), _ints(-3), "got seat -3"),
    (_ints(1), _ints(6), "got seat 6"),
    (_ints(0, 1), _ints(0), "same length.*got 2 rows and 1 seats"),
    (np.array([0.7]), _ints(1), "rows must be a 1-d array of ints; got float64"),
    (_ints(0), np.array([1.9]), "seats must be a 1-d array of ints; got float64"),
    (_ints(0), np.array([True]), "seats must be a 1-d array of ints; got bool"),
    ([1, True], _ints(0, 0), r"rows must be a 1-d array of ints; got True \(rows\[1\]\)"),
]


@pytest.mark.parametrize("entry", ACTS)
def test_every_batched_entry_point_refuses_pairs_outside_the_engine(entry: str) -> None:
    """Rows past n crashed the process (exit 139) or read other memory, seat 7 read row 1's
    data, seat -3 gave a mask for no seat, a float row was cut to 0, a short seats array was
    read past its end; now each is a ValueError naming the argument and the value."""
    needs(hasattr(os, "fork"), "os.fork (a POSIX system): the calls run in a forked child")
    for rows, seats, match in BAD_PAIRS:
        said = _in_child(ACTS[entry], rows, seats)
        assert said.startswith("ValueError: "), f"{entry}({rows!r}, {seats!r}): {said}"
        assert re.search(match, said), (entry, said)
    # good pairs still answer, whatever their int type
    want = ACTS[entry](_ints(1, 0), _ints(3, 5))
    got = ACTS[entry](np.array([1, 0], np.uint8), [3, 5])
    assert np.array_equal(got, want)


def _step_checked(a: object) -> None:
    BatchedGuild(2, seed=1).step_checked(a)


def test_step_checked_still_refuses_what_the_kernel_would_read_past_its_tables_with() -> None:
    """``step_checked`` skips ``step``'s naming of a bad action, for callers that checked
    already; an index past the action table (or negative, or a float, or a wrong shape) given
    to it unchecked reached the compiled step kernel, which reads its tables without bounds
    checks: unchecked, one run died of signal 11 and another stepped on with what it read.
    Each is a ValueError now."""
    needs(hasattr(os, "fork"), "os.fork (a POSIX system): the calls run in a forked child")
    n = ENGINE.tables.n_actions
    bad = [np.full((2, 6), n), np.full((2, 6), 10 ** 9), np.full((2, 6), -1),
           np.zeros((2, 5), np.int64), np.zeros((3, 6), np.int64), np.zeros((2, 6)),
           np.zeros((2, 6), bool)]
    for a in bad:
        said = _in_child(_step_checked, a)
        assert said.startswith("ValueError: step_checked: actions must be an int array of "
                               f"shape (2, 6) of table indices from 0 to {n - 1}"), said
    assert _in_child(_step_checked, np.zeros((2, 6), np.uint8)) == "returned"


def test_batch_size_is_bounded_before_anything_is_allocated() -> None:
    """BatchedGuild(10**7) committed 25 GB; 10**12 envs ended in numpy's MemoryError."""
    with pytest.raises(ValueError, match=rf"^n must be at most {MAX_ENVS:,} .*got 16385$"):
        BatchedGuild(MAX_ENVS + 1)
    with pytest.raises(ValueError, match=r"^n must be at most .*got 1000000000000$"):
        BatchedGuild(10 ** 12)
    with pytest.raises(ValueError, match=r"^num_envs must be at most .*got 1000000000000$"):
        GuildSelfPlay(10 ** 12)
    with pytest.raises(ValueError, match=r"^num_envs must be at most .*got 1000000000000$"):
        GuildVectorEnv(10 ** 12)
    with pytest.raises(ValueError, match=r"^num_envs must be at most .*got 1000000000000$"):
        gymnasium.make_vec("guild/Guild-v0", num_envs=10 ** 12,
                           vectorization_mode="vector_entry_point")


@pytest.mark.parametrize("seed", [1.5, "x", -1, True, np.bool_(False)])
def test_the_engines_seed_is_checked_as_the_faces_seeds(seed: object) -> None:
    """1.5 and 'x' were a TypeError, -1 numpy's message, True taken for 1."""
    with pytest.raises(ValueError, match=r"^seed must be an int >= 0 or None; got "):
        BatchedGuild(2, seed=seed)


@pytest.mark.parametrize("seeds, match", [
    ([2 ** 63, 1], r"^seed 9223372036854775808 is out of range"),
    ([1, 2 ** 64], r"^seed 18446744073709551616 is out of range"),
    ([-(2 ** 63) - 1, 0], r"^seed -9223372036854775809 is out of range"),
    ([True, 1], r"^seeds must be a 1-d array of ints; got True \(seeds\[0\]\)"),
])
def test_a_reset_seed_out_of_range_is_named_as_given(seeds: list, match: str) -> None:
    """[2**63, 1] was refused as 'got float64' (numpy's type for it), [True, 1] taken as ints."""
    e = BatchedGuild(2, seed=0)
    before = e.seed.copy()
    with pytest.raises(ValueError, match=match):
        e.reset(seeds)
    assert np.array_equal(e.seed, before)


def test_observe_fills_the_buffer_it_is_given_or_refuses_it() -> None:
    """A Fortran-order or strided ``out`` came back right but unfilled (the result was a
    reshaped copy); a wrong shape was numpy's reshape error, a read-only one numba's."""
    e = BatchedGuild(2, seed=1)
    want = e.observe()
    buf = np.zeros(want.shape, np.float32)
    assert e.observe(out=buf) is not None and np.array_equal(buf, want)
    for bad in (np.zeros(want.shape, np.float32, order="F"),
                np.zeros(want.shape[:2] + (2 * want.shape[2],), np.float32)[:, :, ::2]):
        with pytest.raises(ValueError, match=r"^out must be C-contiguous"):
            e.observe(out=bad)
    for bad in (np.zeros((2, 6, 3), np.float32), np.zeros(want.shape), [[0.0]]):
        with pytest.raises(ValueError, match=r"^out must be a float32 array of shape"):
            e.observe(out=bad)
    frozen = np.zeros((1, want.shape[2]), np.float32)
    frozen.flags.writeable = False
    with pytest.raises(ValueError, match=r"^out must be writeable"):
        encode(e, _ints(0), _ints(0), frozen)


def test_load_games_checks_every_game_before_copying_any() -> None:
    """Rows 0 and 1 were overwritten before game 2 (another horizon) was refused."""
    e = BatchedGuild(3, turns=6, seed=0)
    before = [e.export(i) for i in range(3)]
    games = [sim.Game(sim.GameConfig(seed=s, turns=t)) for s, t in ((111, 6), (222, 6), (333, 7))]
    with pytest.raises(ValueError, match=r"games\[2\] has turns=7; this engine plays turns=6"):
        e.load_games(games)
    assert [e.export(i) for i in range(3)] == before
    thief = sim.Game(sim.GameConfig(seed=1, turns=6, thievery=False))
    with pytest.raises(ValueError, match=r"games\[1\] has thievery=False"):
        e.load_games([games[0], thief])
    assert [e.export(i) for i in range(3)] == before


@pytest.mark.parametrize("n", ["0", "-3", "16385", "99999999999"])
def test_bench_batched_refuses_a_bad_n_in_one_line_before_any_work(
        n: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    """--n 0 ran a second of scalar work, then ended in a traceback; --n had no bound."""
    import bench.workloads
    from bench import batched

    def no_work(*args: object) -> float:
        raise AssertionError("a benchmark ran before --n was checked")

    monkeypatch.setattr(bench.workloads, "bench_structured", no_work)
    with pytest.raises(SystemExit) as done:
        batched.main(["--quick", "--n", n])
    assert done.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"--n must be 1 to {MAX_ENVS:,}; got {n}" in err


def _equal(a: object, b: object) -> bool:
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    if isinstance(a, np.ndarray) and a.dtype == object:
        return a.shape == b.shape and all(_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b))
    return np.array_equal(a, b)


@pytest.mark.parametrize("seed", [3, 2 ** 40 + 7])
def test_the_scalar_guild_env_plays_the_vector_envs_games(seed: int) -> None:
    """Opponents given as dict specs keep ``GuildEnv`` on the scalar engine (sentences parsed,
    no batched twins), which ``tests/test_faces_equal.py`` does not reach: it must play the same
    games as the batched vector env, observations, rewards, ends and info alike."""
    lineup = ["factor", "magpie", "magpie", "factor", "factor"]
    kw = dict(seat=None, turns=6, max_episode_steps=5 if seed == 3 else None)
    fast = gymnasium.make_vec("guild/Guild-v0", num_envs=3,
                              vectorization_mode="vector_entry_point", opponents=lineup, **kw)
    sync = gymnasium.make_vec("guild/Guild-v0", num_envs=3, vectorization_mode="sync",
                              opponents=[{"name": o} for o in lineup], **kw)
    assert all(env.unwrapped._twins is None for env in sync.envs)  # the scalar path
    rng = np.random.default_rng(seed)
    o1, i1 = fast.reset(seed=seed)
    o2, i2 = sync.reset(seed=seed)
    for t in range(15):  # two episodes and more, through NEXT_STEP autoresets
        assert _equal(o1, o2) and _equal(i1, i2), f"step {t}"
        a = sample_legal(rng, i1["action_mask"].astype(bool))
        o1, r1, d1, u1, i1 = fast.step(a)
        o2, r2, d2, u2, i2 = sync.step(a)
        assert np.array_equal(r1, r2) and np.array_equal(d1, d2) and np.array_equal(u1, u2), t
    fast.close()
    sync.close()
