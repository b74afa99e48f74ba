"""Our own PPO models as policies: ``make_policy("ppo:runs/ppo")`` and its batched twin.

A model is one small torch network (:class:`PolicyNet`) over the flat observation of
``sim.codec.encode`` (the legal mask is its last ``n_actions`` columns, so the network masks
itself): an MLP on ``log1p(clamp(obs, 0))`` with an actor head over the action table and a
value head. Play is the masked argmax (or a masked sample), decoded with ``to_intent``.

**The model file** (``OUT/model.pt`` of ``guild train``) is a ``torch.save`` of plain dicts,
lists, numbers and tensors, read back with ``torch.load(weights_only=True)``: a model file is
untrusted input, so loading never runs pickled code. It records the action table's version
(an index means the row of the table the model was trained on), the observation width, the
number of actions, the network's shape and the provenance (seed, steps). Anything else, a
corrupt file, a foreign one or one of another table version, raises :class:`ModelError` (a
``ValueError``) in one line naming the file and what is wrong.

Leagues build a fresh policy every episode, so loaded models are cached per process by
(resolved path, mtime, size), as ``agents.learn.sb3`` does.
"""

from __future__ import annotations

import io
import os
import stat
import threading
import zipfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from agents.learn import zipdir
from agents.learn.ppo_config import check_network
from sim import Game, Intent
from sim.batched.observe import encode as encode_rows
from sim.codec.action_table import TABLE_VERSION, legal_mask, to_intent
from sim.codec.encode import encode_flat
from sim.commandline import printable
from sim.game import seat_index

try:
    import torch
    from torch import nn
except ImportError:  # pragma: no cover - only without the train extra
    torch = None  # type: ignore[assignment]
    nn = None  # type: ignore[assignment]

FORMAT = "guild-ppo"
FORMAT_VERSION = 1
MODEL_NAME = "model.pt"
MASKED = -1e9  # the logit of an illegal action: exp() of it is 0 in float32
MAX_WIDTH_IN = 1 << 16  # a sanity bound on the observation's width (this game's is 460)
MAX_MODEL_BYTES = 1 << 30  # a model file larger than this is refused unread
# Bounds on what a model file unpacks to, read from its zip directory before torch.load: a small
# file can hold a deflated record of hundreds of MB, which torch.load unpacks whole.  guild
# train's models are under 1 MB (2 x 128 units: its largest record, the 460 x 128 first layer,
# is 236 KB); one record holds one tensor, at most a 4096 x 4096 float32 layer (MAX_WIDTH of
# agents.learn.ppo_config) is 64 MB; a model of MAX_LAYERS layers in two trunks has under 80
# records.
MAX_RECORD_BYTES = 64 << 20
MAX_UNPACKED_BYTES = 256 << 20
MAX_RECORDS = 1024
MAX_DIRECTORY_BYTES = 1 << 20  # the zip's central directory: 63 bytes a record in torch's
KEYS = ("format", "format_version", "table_version", "obs_width", "n_actions", "network",
        "weights", "provenance")


class ModelError(ValueError):
    """A model file that cannot be played: unreadable, foreign, corrupt or of another table."""


def _need_torch() -> None:
    if torch is None:
        raise ModelError("ppo policies need torch (pip install torch==2.13.0, then pip install "
                         "-e '.[train]')")


if torch is not None:

    class PolicyNet(nn.Module):
        """Actor and critic MLPs over ``log1p(clamp(obs, 0))``; ``shared`` joins their trunks.

        ``log1p`` brings 0/1 flags and coin counts in the hundreds to one scale inside the
        network, so the model needs no normalisation statistics beside it. The legal mask is
        read from the observation's last ``n_actions`` columns.
        """

        def __init__(self, obs_width: int, n_actions: int, hidden: Sequence[int] = (128, 128),
                     shared: bool = True) -> None:
            super().__init__()
            self.obs_width, self.n_actions = int(obs_width), int(n_actions)
            self.network = check_network({"hidden": list(hidden), "shared": shared})
            self.actor_trunk = _trunk(obs_width, hidden)
            self.critic_trunk = None if shared else _trunk(obs_width, hidden)
            self.actor = _layer(hidden[-1], n_actions, 0.01)
            self.critic = _layer(hidden[-1], 1, 1.0)

        def features(self, obs: torch.Tensor) -> torch.Tensor:
            return torch.log1p(torch.clamp(obs, min=0.0))

        def masked_logits(self, obs: torch.Tensor) -> torch.Tensor:
            """Actor logits with illegal actions at :data:`MASKED`."""
            h = self.actor_trunk(self.features(obs))
            return self._mask(self.actor(h), obs)

        def forward(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            """``(masked logits [m, n_actions], value [m])``."""
            x = self.features(obs)
            h = self.actor_trunk(x)
            hv = h if self.critic_trunk is None else self.critic_trunk(x)
            return self._mask(self.actor(h), obs), self.critic(hv).squeeze(-1)

        def _mask(self, logits: torch.Tensor, obs: torch.Tensor) -> torch.Tensor:
            legal = obs[:, -self.n_actions:] > 0
            return torch.where(legal, logits, torch.full_like(logits, MASKED))

    def _layer(n_in: int, n_out: int, gain: float) -> nn.Linear:
        layer = nn.Linear(n_in, n_out)
        nn.init.orthogonal_(layer.weight, gain)
        nn.init.zeros_(layer.bias)
        return layer

    def _trunk(n_in: int, hidden: Sequence[int]) -> nn.Sequential:
        layers: list[nn.Module] = []
        for width in hidden:
            layers += [_layer(n_in, width, 2 ** 0.5), nn.Tanh()]
            n_in = width
        return nn.Sequential(*layers)


# --- the model file -----------------------------------------------------------------------------
def model_dict(net: PolicyNet, provenance: Mapping[str, Any]) -> dict:
    """What ``model.pt`` holds: plain values and CPU tensors only."""
    return {"format": FORMAT, "format_version": FORMAT_VERSION, "table_version": TABLE_VERSION,
            "obs_width": net.obs_width, "n_actions": net.n_actions,
            "network": dict(net.network),
            "weights": {k: v.detach().cpu().clone() for k, v in net.state_dict().items()},
            "provenance": dict(provenance)}


def save_model(net: PolicyNet, path: str | os.PathLike, provenance: Mapping[str, Any]) -> None:
    """Write the model atomically (a temporary file, then ``os.replace``)."""
    atomic_save(model_dict(net, provenance), Path(path))


def atomic_save(obj: Any, path: Path) -> None:
    """``torch.save`` to ``path`` so that a reader never sees half a file, even after a kill.

    The archive is built in memory and written by Python: torch's writer turns a failed write
    (a full disk) into a RuntimeError ("unexpected pos") that says nothing of the cause, where
    Python's is the OSError (ENOSPC, EIO, ...) the command reports in one line. A model or a
    checkpoint is a few MB."""
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    atomic_write(path, lambda f: f.write(buffer.getbuffer()))


def atomic_write(path: Path, fill: Callable[[BinaryIO], object]) -> None:
    """Write ``path`` through ``fill`` atomically: a temporary file beside it, synced, then
    ``os.replace``. A kill mid-write leaves the previous file whole; a failed write (a full
    disk, a file that cannot be replaced) leaves no temporary file."""
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    try:
        with open(tmp, "wb") as f:
            fill(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as e:
        tmp.unlink(missing_ok=True)
        if e.filename is None:  # a write's error names no file: name the one being written
            raise OSError(e.errno, e.strerror or str(e), str(path)) from None
        raise
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def read_model(path: str | os.PathLike) -> tuple[PolicyNet, dict]:
    """Build the network a model file describes; ``(net, the file's dict)`` or ModelError."""
    _need_torch()
    p = Path(path)
    data = _load(p)
    return net_from_dict(data, p), data


def net_from_dict(data: Any, path: Path) -> PolicyNet:
    """The network of a loaded model dict, every field checked against this game's table."""
    def bad(what: str) -> ModelError:
        return ModelError(f"ppo model {str(path)!r}: {what}")

    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise bad("not a guild PPO model (no 'format': 'guild-ppo' record)")
    missing = [k for k in KEYS if k not in data]
    if missing:
        raise bad(f"missing fields {missing}")
    if type(data["format_version"]) is not int or data["format_version"] != FORMAT_VERSION:
        raise bad(f"model format {data['format_version']!r:.40}; this version reads "
                  f"{FORMAT_VERSION}")
    if type(data["table_version"]) is not int or data["table_version"] != TABLE_VERSION:
        raise bad(f"trained on action table version {data['table_version']!r:.40}, but this "
                  f"game's table is version {TABLE_VERSION}: retrain it")
    width, n = data["obs_width"], data["n_actions"]
    if type(width) is not int or type(n) is not int or not (0 < n < width <= MAX_WIDTH_IN):
        raise bad(f"bad sizes obs_width={width!r:.40}, n_actions={n!r:.40} (at most "
                  f"{MAX_WIDTH_IN} observed numbers)")
    try:
        network = check_network(data["network"])
    except ValueError as e:
        raise bad(str(e)) from None
    with torch.device("meta"):  # shapes only: nothing allocated before the weights match
        net = PolicyNet(width, n, **network)
    weights = data["weights"]
    expect = net.state_dict()
    if not isinstance(weights, dict) or set(weights) != set(expect):
        raise bad("its weights do not match its network (different layers)")
    for k, v in expect.items():
        w = weights[k]
        if (not isinstance(w, torch.Tensor) or w.layout != torch.strided or
                w.device.type != "cpu" or w.shape != v.shape or not w.is_floating_point()):
            raise bad(f"its weights do not match its network ({k}: expected {list(v.shape)} "
                      "dense floats)")
        if not torch.isfinite(w).all():
            raise bad(f"its weights hold NaN or infinite values ({k})")
    net = net.to_empty(device="cpu")
    net.load_state_dict(weights)
    net.eval()
    return net


def _load(path: Path) -> Any:
    try:
        _check_file(path, os.stat(path))  # before open: opening a FIFO blocks
        with open(path, "rb") as f:
            _check_file(path, os.fstat(f.fileno()))
            check_archive(f, path)
            f.seek(0)
            return torch.load(f, map_location="cpu", weights_only=True)
    except ModelError:
        raise
    except OSError as e:
        raise ModelError(f"ppo model {str(path)!r} cannot be read ({e.strerror})") from None
    except Exception as e:  # torch raises many kinds for foreign or truncated files
        raise ModelError(f"ppo model {str(path)!r} is not a readable torch model file "
                         f"({load_error(e)})") from None


def _check_file(path: Path, st: os.stat_result) -> None:
    if not stat.S_ISREG(st.st_mode):  # a FIFO would block, /dev/zero never end
        raise ModelError(f"ppo model {str(path)!r} is not a regular file")
    if st.st_size > MAX_MODEL_BYTES:
        raise ModelError(f"ppo model {str(path)!r} is larger than {MAX_MODEL_BYTES >> 20} MB "
                         f"({st.st_size:,} bytes): not a model of this trainer")


def check_archive(f: BinaryIO, path: Path, kind: str = "ppo model") -> None:
    """Refuse (:class:`ModelError`) a model file that would unpack to more than any model holds,
    from its zip directory alone (nothing is decompressed): more than
    :data:`MAX_RECORDS` records or a directory over :data:`MAX_DIRECTORY_BYTES`, a record over
    :data:`MAX_RECORD_BYTES` or all of them over :data:`MAX_UNPACKED_BYTES` unpacked.
    ``torch.save`` writes a zip archive; another file is not a model.  ``kind`` names the file
    in the messages (``agents.learn.ppo_records`` checks training checkpoints with it too)."""
    model = kind == "ppo model"

    def bad(what: str) -> ModelError:
        return ModelError(f"{kind} {str(path)!r} {what}; a {'model file' if model else kind} "
                          f"holds at most {MAX_RECORDS} records of {MAX_RECORD_BYTES >> 20} MB "
                          f"each and {MAX_UNPACKED_BYTES >> 20} MB in all unpacked"
                          + (" (guild train's are under 1 MB)" if model else ""))

    try:
        end = zipdir.directory(f)
        if end is not None and (end[0] > MAX_RECORDS or end[1] > MAX_DIRECTORY_BYTES):
            raise bad(f"lists {end[0]:,} records in a directory of {end[1]:,} bytes")
        with zipfile.ZipFile(f) as archive:
            records = archive.infolist()
    except ModelError:
        raise
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, ValueError) as e:
        raise ModelError(f"{kind} {str(path)!r} is not a readable torch "
                         f"{'model ' if model else ''}file (not a zip archive as torch.save "
                         f"writes: {load_error(e)})") from None
    if len(records) > MAX_RECORDS:
        raise bad(f"holds {len(records):,} records")
    total = 0
    for record in records:
        if record.file_size > MAX_RECORD_BYTES:
            raise bad(f"would unpack record {record.filename[:60]!r} to "
                      f"{record.file_size:,} bytes")
        total += record.file_size
    if total > MAX_UNPACKED_BYTES:
        raise bad(f"would unpack to {total:,} bytes")


def load_error(e: Exception) -> str:
    """A short reason for a failed ``torch.load`` (torch's own messages run to pages)."""
    text = str(e).strip()
    if text.startswith("Weights only load failed"):
        return "not a torch file of plain tensors and values"
    first = text.splitlines()[0][:100] if text else ""
    return f"{type(e).__name__}: {first}" if first else type(e).__name__


_CACHE: dict[tuple[str, int, int], tuple[PolicyNet, dict]] = {}
_LOCK = threading.Lock()


def load_model(path: str | os.PathLike) -> tuple[PolicyNet, dict]:
    """Load (or fetch from the per-process cache) a model file; ModelError if unplayable."""
    p = Path(path).expanduser().resolve()
    try:
        st = p.stat()
    except OSError as e:
        raise ModelError(f"ppo model {str(path)!r} cannot be read ({e.strerror})") from None
    _check_file(Path(path), st)
    key = (str(p), st.st_mtime_ns, st.st_size)
    with _LOCK:
        hit = _CACHE.get(key)
        if hit is None:
            hit = read_model(p)
            for k in [k for k in _CACHE if k[0] == key[0]]:
                del _CACHE[k]  # an older version of the same file
            _CACHE[key] = hit
        return hit


def resolve_path(spec: str) -> Path:
    """The model file of ``ppo:PATH``: PATH itself or PATH/model.pt for a run directory."""
    path = spec.strip()
    if not path:
        raise ModelError("a ppo policy needs a model path: 'ppo:runs/ppo' or "
                         "'ppo:runs/ppo/model.pt'")
    p = Path(path).expanduser()
    if p.is_dir():
        p = p / MODEL_NAME
    if not p.exists():
        raise ModelError(f"ppo model {str(p)!r} does not exist")
    if not p.is_file():
        raise ModelError(f"ppo model {str(p)!r} is not a regular file")
    return p.resolve()


# --- the policies -------------------------------------------------------------------------------
def choose(net: PolicyNet, obs: np.ndarray, generator: Any = None,
           deterministic: bool = True) -> np.ndarray:
    """Action indices for a batch of flat observations: masked argmax, or a masked sample."""
    with torch.no_grad():
        logits = net.masked_logits(torch.from_numpy(obs))
        if not deterministic:
            u = torch.rand(logits.shape, generator=generator).clamp_(1e-12, 1.0)
            logits = logits - torch.log(-torch.log(u))  # Gumbel-max: a sample of softmax
        return logits.argmax(-1).numpy()


class _Policy:
    def __init__(self, path: str | os.PathLike, deterministic: bool = True) -> None:
        if not isinstance(deterministic, bool):
            raise ValueError(f"deterministic must be a bool; got {deterministic!r}")
        self.path = str(path)
        self.name = f"ppo:{self.path}"  # how evaluations and leagues label it
        self.deterministic = deterministic
        self._net: PolicyNet | None = None
        self._provenance: dict = {}
        self._generator = None

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.path!r}, deterministic={self.deterministic})"

    @classmethod
    def from_net(cls, net: PolicyNet, name: str = "<in memory>", deterministic: bool = True):
        """Play a network in memory (during training) without saving it first."""
        policy = cls(name, deterministic)
        policy._net = net
        return policy

    def reset(self, seed: int | None = None) -> None:
        """Seed the sampler so that stochastic play is reproducible per episode."""
        if not self.deterministic and seed is not None:
            _need_torch()
            self._generator = torch.Generator().manual_seed(int(seed) % 2 ** 63)

    def net(self) -> PolicyNet:
        if self._net is None:
            self._net, data = load_model(self.path)
            provenance = data.get("provenance")
            self._provenance = provenance if isinstance(provenance, dict) else {}
        return self._net

    def check_world(self, world: Any) -> None:
        """``ModelError`` (a ``ValueError``) unless the model's observation and action table
        have ``world``'s shapes, asked before the first turn (``sim.policies.check_town``): a
        model trained in one town plays any town of the same shapes."""
        from sim.batched.tables import tables_for

        tables = tables_for(world)
        self._check_sizes(tables.obs_width, tables.n_actions)

    def _check_sizes(self, width: int, n_actions: int) -> None:
        net = self.net()
        if (width, n_actions) != (net.obs_width, net.n_actions):
            raise ModelError(f"ppo model {self.path!r} was trained for {net.obs_width} observed "
                             f"numbers and {net.n_actions} actions; this town has {width} and "
                             f"{n_actions}{_trained_in(self._provenance)}")


def _trained_in(provenance: Mapping[str, Any]) -> str:
    """Where ``guild train`` says the model was trained, as a hint (its file's path, shown
    inert), or nothing for a model that does not say."""
    if "world" not in provenance:
        return ""
    town, turns = provenance.get("world"), provenance.get("turns")
    at = f", {turns} turns" if isinstance(turns, int) and not isinstance(turns, bool) else ""
    if town is None:
        return f" (it was trained in the standard town{at})"
    path = town.get("path") if isinstance(town, Mapping) else None
    if not isinstance(path, str):
        return ""
    return f" (it was trained in the town of {printable(path[:200])}{at})"


class PPOPolicy(_Policy):
    """A trained model playing one seat of the scalar game from that seat's own encoding.

    Args:
        path: the model file.
        deterministic: the most likely legal action (default) or a sample.
    """

    scripted = False

    def act(self, game: Game, seat: int) -> Intent:
        seat = seat_index(seat)
        st = game.state
        return to_intent(self.index(game, seat), st.world, seat, st.room[seat])

    def index(self, game: Game, seat: int) -> int:
        """The action-table index the model chooses for ``seat`` (always a legal one)."""
        seat = seat_index(seat)
        st = game.state
        mask = legal_mask(st, seat)
        obs = np.asarray(encode_flat(st, seat, mask), np.float32)[None]
        self._check_sizes(obs.shape[1], len(mask))
        return int(choose(self.net(), obs, self._generator, self.deterministic)[0])


class BatchedPPOPolicy(_Policy):
    """The same model choosing for many ``(row, seat)`` pairs of a batched engine at once."""

    batched = True

    def act(self, engine: Any, rows: np.ndarray, seats: np.ndarray) -> np.ndarray:
        obs = encode_rows(engine, rows, seats)
        self._check_sizes(obs.shape[1], engine.tables.n_actions)
        return choose(self.net(), obs, self._generator, self.deterministic)


def from_spec(spec: str, **params: Any) -> PPOPolicy:
    """``make_policy("ppo:PATH")``: the model is loaded (once per process) and checked now, so
    a bad file is refused before a league starts rather than faulting every episode."""
    policy = PPOPolicy(resolve_path(spec), **params)
    policy.net()
    return policy


def batched_from_spec(spec: str, **params: Any) -> BatchedPPOPolicy:
    """The batched registry's ``ppo:PATH`` (``sim.envs.vector``, evaluation at batched speed)."""
    policy = BatchedPPOPolicy(resolve_path(spec), **params)
    policy.net()
    return policy
