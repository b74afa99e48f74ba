"""Trained Stable-Baselines3 models as league policies: ``make_policy("sb3:path/model.zip")``.

A MaskablePPO model trained on ``guild/Guild-v0`` or its batched twin (:class:`GuildVecEnv`, an
SB3 ``VecEnv`` over the batched engine; ``examples/sb3_maskable_ppo.py``) plays a seat from the
observation it was trained on (flat or ``Dict``, read from the model's observation space; a
flat one in this project's column order, ``flatten=True``, or in Gymnasium's
``FlattenObservation`` order, told apart by its bounds: :func:`flat_columns`), masked with
``sim.codec.action_table.legal_mask`` and decoded with ``to_intent``: the seat's own encoding,
so nothing hidden is read.  ``make_batched_policy("sb3:PATH")``
(:class:`BatchedSB3Policy`) chooses the same index in the same state on the batched engine, so
``guild evaluate sb3:PATH`` runs at batched speed.

Loading a zip is slow and leagues build a fresh policy every episode, so loaded models are
cached per process by (resolved path, mtime, size).  A model's index means a row of the action
table it was trained on: its ``guild.json`` records ``table_version`` (:func:`write_meta`). A
model saved without it (``model.save`` after training on ``guild/Guild-v0``) is known by its
number of actions; one of another version is refused with a ``ValueError`` naming the file.

**Loading runs the zip's code** (a zip is a pickle), so ``make_policy("sb3:PATH")`` unpickles
here only because a caller of your own asked for it: load only files you trust.  The command
line never does, unless told ``--trust``: ``guild evaluate``, ``guild play`` and ``guild train``
(its ``--against`` opponents) pass ``extract=`` (``league.apart.sb3_load``), which loads the
zip in a bubblewrap sandbox
(``agents.learn.sb3_extract``) and plays the network rebuilt here from its weights alone (from
Python: ``make_policy({"name": "sb3:PATH", "extract": league.apart.sb3_load.extract})``); a
league runs an ``sb3:`` seat in a sandboxed seat process.

``agents`` itself never imports this module; without the ``train`` extra (sb3-contrib, torch)
loading a model raises a ``ValueError`` that names the extra.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from agents.learn.sb3_extract import Extract
from agents.learn.sb3_net import META_NAME, Log1pFeatures  # noqa: F401 (models name it here)
from sim import Game, Intent
from sim.batched.observe import encode as encode_rows
from sim.codec.action_table import (
    EARLIER_TABLE_SIZES,
    TABLE_VERSION,
    action_table,
    n_actions,
    to_intent,
)
from sim.codec.encode import encode_flat, encode_view, layout, slices, split
from sim.game import seat_index
from sim.rules.world import STANDARD_TOWN

_log = logging.getLogger(__name__)



@dataclass
class _Loaded:
    model: Any
    flat: bool
    meta: dict


_CACHE: dict[tuple[str, int, int, bool], _Loaded] = {}
_LOCK = threading.Lock()


def read_meta(path: str | os.PathLike) -> dict:
    """The ``guild.json`` the trainer stored in a model zip ({} if absent or unreadable).

    The metadata is provenance only (the model plays without it), so an unreadable one is
    logged, not raised.
    """
    try:
        with zipfile.ZipFile(path) as z:
            if META_NAME in z.namelist():
                return json.loads(z.read(META_NAME).decode("utf-8"))
    except (OSError, zipfile.BadZipFile, ValueError):
        _log.warning("cannot read %s from the model %s", META_NAME, path, exc_info=True)
    return {}


def write_meta(path: str | os.PathLike, meta: dict) -> None:
    """Store ``meta`` and the action table's version as ``guild.json`` inside a model zip."""
    with zipfile.ZipFile(path, "a") as z:
        z.writestr(META_NAME, json.dumps({**meta, "table_version": TABLE_VERSION}, indent=1))


def check_table_version(path: str | os.PathLike, meta: dict, actions: int) -> None:
    """Refuse a model trained on another action table. Its ``guild.json`` says which; without
    one (a model saved by SB3 alone) its number of actions ``actions`` tells, when it is this
    table's in the standard town and no earlier version's."""
    version = meta.get("table_version")
    if version is None:
        size = len(action_table(STANDARD_TOWN))
        earlier = [v for v, n in EARLIER_TABLE_SIZES.items() if n == actions]
        if actions == size and not earlier:
            return
        told = (f"as version {earlier[0]}'s table had" if earlier else
                f"where this game's table, version {TABLE_VERSION}, has {size}")
        raise ValueError(f"sb3 model {str(path)!r} does not record its action table version "
                         f"and has {actions} actions ({told}): retrain it on guild/Guild-v0")
    if version != TABLE_VERSION:
        raise ValueError(f"sb3 model {str(path)!r} was trained on action table version "
                         f"{version!r}; this game's table is version {TABLE_VERSION}: retrain it")


def load_model(path: str | os.PathLike, extract: Extract | None = None) -> _Loaded:
    """Load (or fetch from the per-process cache) a MaskablePPO zip.

    Without ``extract`` the zip is unpickled here (it runs the zip's code: only for files you
    trust); with it, ``extract`` describes the zip elsewhere (in a sandbox) and the policy
    network is rebuilt here from that description, with no unpickling
    (``agents.learn.sb3_extract.rebuild``).  ``ValueError`` naming the file when it cannot be
    played.
    """
    p = Path(path).expanduser().resolve()
    try:
        st = p.stat()
    except OSError as e:
        raise ValueError(f"sb3 model {str(path)!r} cannot be read ({e.strerror})") from None
    if not p.is_file():
        raise ValueError(f"sb3 model {str(path)!r} is not a file")
    key = (str(p), st.st_mtime_ns, st.st_size, extract is not None)
    with _LOCK:
        hit = _CACHE.get(key)
        if hit is not None:
            return hit
        loaded = (_load_trusted(p, path) if extract is None
                  else _load_described(p, path, st.st_size, extract))
        for k in [k for k in _CACHE if k[0] == key[0] and k[3] == key[3]]:
            del _CACHE[k]  # an older version of the same file
        _CACHE[key] = loaded
        return loaded


def _import_error(e: ImportError) -> ValueError:
    return ValueError("sb3 policies need the 'train' extra (pip install torch==2.13.0 then "
                      f"pip install -e '.[train]'): {e}")


def _load_trusted(p: Path, path: str | os.PathLike) -> _Loaded:
    """Unpickle the zip in this process."""
    if not zipfile.is_zipfile(p):
        raise ValueError(f"sb3 model {str(path)!r} cannot be loaded as MaskablePPO (not a "
                         f"zip file)")
    meta = read_meta(p)
    try:
        import torch as _torch
        from sb3_contrib import MaskablePPO
    except ImportError as e:
        raise _import_error(e) from None
    try:
        # building the network draws from torch's generator: leave it as it was, so a
        # stochastic policy seeded before its model loads samples as one loaded after
        with _torch.random.fork_rng(devices=[]):
            model = MaskablePPO.load(str(p), device="cpu")
    except Exception as e:  # a corrupt zip or not a MaskablePPO model
        raise ValueError(f"sb3 model {str(path)!r} cannot be loaded as MaskablePPO "
                         f"({type(e).__name__}: {e})") from None
    from gymnasium import spaces as gspaces

    if not isinstance(model.action_space, gspaces.Discrete):
        raise ValueError(f"sb3 model {str(path)!r} does not choose among discrete actions "
                         f"(its action space is {str(model.action_space)[:80]})")
    check_table_version(path, meta, int(model.action_space.n))
    return _Loaded(model, not isinstance(model.observation_space, gspaces.Dict), meta)


def _load_described(p: Path, path: str | os.PathLike, size: int, extract: Extract) -> _Loaded:
    """Have ``extract`` describe the zip (elsewhere); rebuild its policy network here."""
    try:
        from agents.learn import sb3_extract
        from agents.learn.sb3_extract import DescriptionError
    except ImportError as e:
        raise _import_error(e) from None
    if size > sb3_extract.MAX_INPUT_BYTES:
        raise ValueError(f"sb3 model {str(path)!r} is larger than "
                         f"{sb3_extract.MAX_INPUT_BYTES >> 20} MB ({size:,} bytes): too large "
                         "to load in a sandbox (--trust loads it in this process)")
    try:
        with open(p, "rb") as f:
            data = f.read(sb3_extract.MAX_INPUT_BYTES + 1)
    except OSError as e:
        raise ValueError(f"sb3 model {str(path)!r} cannot be read ({e.strerror})") from None
    try:
        blob = extract(data)
    except ValueError as e:
        raise ValueError(f"sb3 model {str(path)!r} cannot be loaded in a sandbox: {e}") from None
    try:
        model, meta = sb3_extract.rebuild(blob)
    except DescriptionError as e:
        raise ValueError(f"sb3 model {str(path)!r} cannot be played from its sandboxed "
                         f"description: {e}") from None
    except ImportError as e:
        raise _import_error(e) from None
    check_table_version(path, meta, int(model.action_space.n))
    from gymnasium import spaces as gspaces

    # a flat model's space has the bounds it was trained with (the description holds them),
    # which tell its columns' order (flat_columns), as in this process
    return _Loaded(model, not isinstance(model.observation_space, gspaces.Dict), meta)


def _uneven(low: np.ndarray, high: np.ndarray, widths: list[int]) -> int | None:
    """The first key (by its place in ``widths``) whose columns' bounds are not those of one
    layout key, [0, one upper bound for all of them]; None when every key's are."""
    at = 0
    for n, w in enumerate(widths):
        if (low[at:at + w] != 0).any() or (high[at:at + w] != high[at]).any():
            return n
        at += w
    return None


def flat_columns(path: str | os.PathLike, model: Any, world: Any) -> np.ndarray | None:
    """The columns of ``encode_flat``'s vector in the order a flat (``Box``) model was trained
    on, or None for that vector as it is.

    A model trained on ``flatten=True`` (``GuildVecEnv``) reads the layout's order; one trained
    through Gymnasium's ``FlattenObservation`` reads the ``Dict`` observation's, whose keys
    ``spaces.Dict`` sorts, and is fed ``gymnasium.spaces.flatten`` of it.  Both are as wide, so
    the bounds of the saved observation space tell them apart: ``layout`` gives each key one
    range, [0, its bound], so a model's bounds are even over each key's columns in the order it
    was trained on (whatever the bounds' values, which differ between towns of the same shapes).
    ``ValueError`` naming the model when its bounds fit neither order, or both while the orders
    differ.
    """
    from sim.envs.face import seat_spaces

    cut = slices(world)
    keys = list(seat_spaces(world, False, False)[0].spaces)  # the env's Dict: sorted keys
    # gymnasium.spaces.flatten(dict_space, split(v, world)) is v[order]
    order = np.concatenate([np.arange(*cut[k]) for k in keys])
    if np.array_equal(order, np.arange(order.size)):
        return None
    space = model.observation_space
    shape = tuple(getattr(space, "shape", ()) or ())
    if shape != order.shape:
        raise ValueError(f"sb3 model {str(path)!r} observes a flat vector of shape {shape}; "
                         f"this town's is {order.shape}")
    low = np.asarray(space.low, np.float64).reshape(-1)
    high = np.asarray(space.high, np.float64).reshape(-1)
    own = _uneven(low, high, [b - a for a, b in cut.values()])
    wrapped = _uneven(low, high, [cut[k][1] - cut[k][0] for k in keys])
    if own is None and wrapped is None:
        raise ValueError(f"sb3 model {str(path)!r} observes a flat vector whose bounds fit both "
                         "this town's layout (flatten=True) and FlattenObservation's, which "
                         "order its columns otherwise: which one it was trained on cannot be "
                         "told; retrain it on guild/Guild-v0 with flatten=True or a Dict")
    if own is None:
        return None
    if wrapped is None:
        return order
    if (low != 0).any():
        col = int(np.argmax(low != 0))
        why = f"its column {col} is bounded below by {low[col]:g}, where both have 0"
    else:
        first, second = list(cut)[own], keys[wrapped]
        why = (f"its bounds vary within flatten=True's {first!r} (columns "
               f"{cut[first][0]}..{cut[first][1] - 1}) and within FlattenObservation's "
               f"{second!r}")
    raise ValueError(f"sb3 model {str(path)!r} observes a flat vector of neither this town's "
                     f"layout (flatten=True) nor FlattenObservation's: {why}")


def check_spaces(path: str | os.PathLike, model: Any, world: Any) -> None:
    """``ValueError`` in one line unless ``model`` (a loaded MaskablePPO or the policy rebuilt
    from its description) observes and chooses as a seat of ``world`` does: the width of the
    observation (``sim.codec.encode.layout``; a ``Dict`` one key by key; a flat one in an order
    :func:`flat_columns` knows) and the number of actions of the town's table."""
    lay = layout(world)
    width, table = sum(shape[0] for shape, _ in lay.values()), n_actions(world)
    obs_space, act_space = model.observation_space, model.action_space
    parts = getattr(obs_space, "spaces", None)  # a Dict observation: its keys' boxes
    shapes = ({k: tuple(getattr(v, "shape", ()) or ()) for k, v in parts.items()}
              if parts is not None else None)
    observed = (sum(int(np.prod(s)) for s in shapes.values()) if shapes is not None
                else int(np.prod(obs_space.shape or ())))
    actions = int(act_space.n)
    if (observed, actions) != (width, table):
        raise ValueError(f"sb3 model {str(path)!r} was trained for {observed} observed numbers "
                         f"and {actions} actions; this town has {width} and {table}")
    if shapes is None:
        flat_columns(path, model, world)
        return
    for key, (shape, _) in lay.items():
        if shapes.get(key) != shape:
            has = ("no" if key not in shapes else
                   f"{int(np.prod(shapes[key]))} numbers in its")
            raise ValueError(f"sb3 model {str(path)!r} observes {has} {key!r}; this town has "
                             f"{shape[0]} there")


class SB3Policy:
    """A trained MaskablePPO model playing one seat from that seat's own encoding.

    Args:
        path: the model zip.
        deterministic: take the most likely legal action (default) or sample one.
        extract: load the zip through this describer (a sandbox, :func:`load_model`) instead
            of unpickling it in this process.
    """

    scripted = False

    def __init__(self, path: str, deterministic: bool = True,
                 extract: Extract | None = None) -> None:
        if not isinstance(deterministic, bool):
            raise ValueError(f"deterministic must be a bool; got {deterministic!r}")
        if extract is not None and not callable(extract):
            raise ValueError(f"extract must be callable (bytes -> bytes); got {extract!r:.60}")
        self.path = str(path)
        self.deterministic = deterministic
        self.extract = extract
        self._loaded: _Loaded | None = None
        self._seed: int | None = None
        self._rng: Any = None  # torch's generator state for sampling, this policy's own
        self._columns: tuple[Any, np.ndarray | None] | None = None  # (world, flat_columns)

    def __repr__(self) -> str:
        return f"SB3Policy({self.path!r}, deterministic={self.deterministic})"

    def reset(self, seed: int | None = None) -> None:
        """Seed this policy's own sampler, so that stochastic play is reproducible per episode
        without touching torch's global generator, which the caller's own sampling draws from
        (None: fresh entropy)."""
        if seed is not None and (isinstance(seed, bool) or
                                 not isinstance(seed, (int, np.integer))):
            raise ValueError(f"seed must be an int or None; got {seed!r:.60}")
        self._seed = seed
        if not self.deterministic:
            self._rng = _generator_state(seed)

    def probe(self) -> None:
        """Load the model now (a ``ValueError`` naming the file when it cannot be played): a
        league checks its seats before the first episode, not at their first decision."""
        self._model()

    def _model(self) -> _Loaded:
        if self._loaded is None:  # lazily: building a league lineup must stay cheap
            self._loaded = load_model(self.path, self.extract)
        return self._loaded

    def check_world(self, world: Any) -> None:
        """``ValueError`` unless the model's observation and action spaces have ``world``'s
        shapes, asked before the first turn (``sim.policies.check_town``): a model trained in
        one town plays any town of the same shapes."""
        loaded = self._model()
        check_spaces(self.path, loaded.model, world)

    def columns(self, world: Any) -> np.ndarray | None:
        """:func:`flat_columns` for ``world``, worked out once per town."""
        loaded = self._model()
        if not loaded.flat:
            return None
        hit = self._columns
        if hit is None or hit[0] is not world:
            hit = self._columns = (world, flat_columns(self.path, loaded.model, world))
        return hit[1]

    def predict(self, obs: Any, mask: np.ndarray) -> np.ndarray:
        """The model's choice; a stochastic one draws from this policy's own generator state
        (seeded by :meth:`reset`), the caller's global torch stream left as it was."""
        model = self._model().model
        if self.deterministic:
            action, _ = model.predict(obs, action_masks=mask, deterministic=True)
            return np.asarray(action)
        import torch as _torch

        if self._rng is None:
            self._rng = _generator_state(None)
        with _torch.random.fork_rng(devices=[]):
            _torch.set_rng_state(self._rng)
            action, _ = model.predict(obs, action_masks=mask, deterministic=False)
            self._rng = _torch.get_rng_state()
        return np.asarray(action)

    def act(self, game: Game, seat: int) -> Intent:
        """The model's choice for ``seat`` in the start-of-turn state, always a legal index.

        ``game`` is the whole game in this process, or, in a league's sandbox, the seat's own
        view (``league.seat.host``: no state, only what the seat is sent), whose vector
        ``encode_view`` builds, the same as ``encode_flat`` of the state."""
        seat = seat_index(seat)
        loaded = self._model()
        st = getattr(game, "state", None)
        if st is not None:
            flat = encode_flat(st, seat)
            world, room = st.world, st.room[seat]
        else:  # a seat's view: what it was sent
            view = game.observe(seat)
            world, room = game.world, view["room"]["id"]
            flat = encode_view(view, world, game.aliases, game.legal)
        mask = flat[-n_actions(world):] > 0  # the legal mask: the vector's last columns
        if loaded.flat:
            columns = self.columns(world)
            obs: Any = flat if columns is None else flat[columns]
        else:
            obs = split(flat, world)
        index = int(self.predict(obs, mask).item())
        return to_intent(index, world, seat, room)


def _generator_state(seed: int | None) -> Any:
    """The state torch's global CPU generator has after ``torch.manual_seed(seed)``, so a seed
    draws the choices it drew when the policy seeded torch itself (fresh entropy for None)."""
    import torch as _torch

    g = _torch.Generator()
    if seed is None:
        g.seed()
    else:
        g.manual_seed(int(seed) % (2 ** 63))
    return g.get_state()


def from_spec(spec: str, **params: Any) -> SB3Policy:
    """``make_policy("sb3:PATH")``: check the file now, load the model on first use."""
    path = spec.strip()
    if not path:
        raise ValueError("an sb3 policy needs a model path: 'sb3:path/to/model.zip'")
    if not Path(path).expanduser().is_file():
        raise ValueError(f"sb3 model {path!r} does not exist")
    return SB3Policy(str(Path(path).expanduser()), **params)


class BatchedSB3Policy:
    """A MaskablePPO model on the batched engine: the same observation, mask and choice as
    :class:`SB3Policy`, for many ``(row, seat)`` pairs in one forward pass."""

    batched = True

    def __init__(self, path: str, deterministic: bool = True,
                 extract: Extract | None = None) -> None:
        self._scalar = SB3Policy(path, deterministic, extract)
        self.name = f"sb3:{path}"

    def check_world(self, world: Any) -> None:
        """As :meth:`SB3Policy.check_world`."""
        self._scalar.check_world(world)

    def reset(self, seed: int | None = None) -> None:
        """As :meth:`SB3Policy.reset`: a stochastic model's own sampler, seeded."""
        self._scalar.reset(seed)

    def act(self, engine: Any, rows: np.ndarray, seats: np.ndarray) -> np.ndarray:
        loaded = self._scalar._model()
        flat = encode_rows(engine, rows, seats)
        n_actions = engine.tables.n_actions
        mask = flat[:, -n_actions:] > 0
        obs: Any = flat
        if not loaded.flat:
            obs = {k: flat[:, a:b] for k, (a, b) in slices(engine.world).items()}
        else:
            columns = self._scalar.columns(engine.world)
            if columns is not None:
                obs = flat[:, columns]
        return self._scalar.predict(obs, mask).astype(np.int64).reshape(-1)


def batched_from_spec(spec: str, **params: Any) -> BatchedSB3Policy:
    """``make_batched_policy("sb3:PATH")``: the file is checked now, loaded on first use."""
    return BatchedSB3Policy(from_spec(spec, **params).path, **params)


try:
    from stable_baselines3.common.vec_env import VecEnv as _VecEnv

    class GuildVecEnv(_VecEnv):
        """``GuildVectorEnv`` (flat observation, same-step autoreset) as an SB3 ``VecEnv``.

        The batched engine behind a Stable-Baselines3 learner (MaskablePPO reads
        ``action_masks()``); an episode is done when its game ends or ``max_episode_steps``
        cuts it, and finished episodes report ``info["episode"]`` (``r``: the return, with the
        default dense reward the score reached; ``l``: the steps played) and
        ``info["terminal_observation"]``, and every info ``"TimeLimit.truncated"``, as SB3's own
        ``VecMonitor`` and ``DummyVecEnv`` do.  ``env_kwargs`` go to ``GuildVectorEnv``
        (``opponents``, ``seat``, ``turns``, ``max_episode_steps``...).

        Seeding is SB3's ``VecEnv`` convention: ``seed`` (env ``i`` gets ``seed + i``) and a
        later :meth:`seed` (``MaskablePPO(seed=...)`` calls it) are used by the next
        :meth:`reset` only; every other reset continues each env's stream of towns, so each
        ``learn()`` (which resets) meets new games, not the first ones again.
        """

        def __init__(self, num_envs: int, seed: int | None = 0, **env_kwargs: Any) -> None:
            from sim.envs.vector import GuildVectorEnv

            if seed is not None and (isinstance(seed, bool) or
                                     not isinstance(seed, (int, np.integer)) or seed < 0):
                raise ValueError(f"seed must be a non-negative int or None; got {seed!r:.60}")
            self.env = GuildVectorEnv(num_envs, flatten=True, autoreset_mode="same_step",
                                      **env_kwargs)
            self._actions: np.ndarray | None = None
            # each env's episode so far, for info["episode"] when it ends
            self._returns = np.zeros(num_envs, np.float64)
            self._lengths = np.zeros(num_envs, np.int64)
            super().__init__(num_envs, self.env.single_observation_space,
                             self.env.single_action_space)
            if seed is not None:  # for the first reset, as a seed() before it
                self._seeds = [int(seed) + i for i in range(num_envs)]

        def reset(self) -> np.ndarray:
            """Start every env anew, from the seeds of :meth:`seed` (or the constructor) if
            given since the last reset, else where each env's stream of towns left off."""
            given = [s for s in self._seeds if s is not None]
            if given and len(given) != self.num_envs:
                raise ValueError(f"seeds must be given for all {self.num_envs} envs or none; "
                                 f"got {self._seeds!r:.80}")
            obs, _ = self.env.reset(seed=[int(s) for s in given] if given else None)
            self._returns[:] = 0.0
            self._lengths[:] = 0
            self._reset_seeds()
            self._reset_options()
            return obs

        def step_async(self, actions: np.ndarray) -> None:
            """Keep ``actions`` for ``step_wait``, refusing them now unless they are table
            indices (a float would be cut to an index; MaskablePPO gives int arrays)."""
            self._actions = self.env.check_actions(actions)

        def step_wait(self) -> tuple:
            """SB3's step: ``done`` where a game ended or ``max_episode_steps`` cut it, each
            info's ``TimeLimit.truncated`` as ``DummyVecEnv`` sets it (a cut episode's last
            value is bootstrapped), and a finished env's ``terminal_observation`` and
            ``episode`` (its return and length, as ``VecMonitor`` counts them)."""
            obs, reward, terminated, truncated, info = self.env.step_checked(self._actions)
            done = terminated | truncated
            self._returns += reward
            self._lengths += 1
            cut = truncated & ~terminated
            infos: list[dict] = [{"TimeLimit.truncated": bool(c)} for c in cut.tolist()]
            for i in np.flatnonzero(done).tolist():
                infos[i]["terminal_observation"] = info["final_obs"][i]
                infos[i]["episode"] = {"r": float(self._returns[i]),
                                       "l": int(self._lengths[i]), "t": 0.0}
            self._returns[done] = 0.0
            self._lengths[done] = 0
            return obs, reward.astype(np.float32), done, infos

        def action_masks(self) -> np.ndarray:
            return self.env.action_masks()

        def _indices(self, indices: Any) -> list[int]:
            """SB3's ``indices`` (None: all, an int, or ints) as env numbers, each checked."""
            picked = list(self._get_indices(indices))
            for i in picked:
                if (isinstance(i, bool) or not isinstance(i, (int, np.integer))
                        or not 0 <= i < self.num_envs):
                    raise ValueError(f"indices must be env numbers 0..{self.num_envs - 1}; "
                                     f"got {i!r:.40} in {indices!r:.80}")
            return [int(i) for i in picked]

        def env_method(self, method_name: str, *args: Any, indices: Any = None,
                       **kwargs: Any) -> list:
            """``action_masks`` of the envs ``indices`` (MaskablePPO's call), the only method."""
            picked = self._indices(indices)
            if method_name != "action_masks":
                raise AttributeError(f"GuildVecEnv's envs have no method {method_name!r} "
                                     "(only action_masks)")
            masks = self.env.action_masks()
            return [masks[i] for i in picked]

        def has_attr(self, attr_name: str) -> bool:
            return attr_name == "action_masks"

        def get_attr(self, attr_name: str, indices: Any = None) -> list:
            picked = self._indices(indices)
            if attr_name == "render_mode":
                return [None] * len(picked)
            raise AttributeError(f"GuildVecEnv's envs have no attribute {attr_name!r} to get")

        def set_attr(self, attr_name: str, value: Any, indices: Any = None) -> None:
            self._indices(indices)
            raise AttributeError(f"GuildVecEnv's envs have no attribute {attr_name!r} to set")

        def env_is_wrapped(self, wrapper_class: Any, indices: Any = None) -> list[bool]:
            return [False] * len(self._indices(indices))

        def close(self) -> None:
            pass

except ImportError:  # pragma: no cover - only without the train extra
    GuildVecEnv = None  # type: ignore[assignment,misc]
