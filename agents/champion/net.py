"""A trained policy network played with numpy alone: the champion ships as plain arrays, so a
plain install (no torch) can field it.

The network is ``guild train``'s (``agents.learn.ppo.PolicyNet``): ``log1p(max(obs, 0))``,
``tanh`` hidden layers, a linear actor head over the action table, illegal actions masked by the
observation's last ``n_actions`` columns, and the best legal action played. It computes in
float64 from float32 weights, so a near-tie breaks the same way for one seat as for a batch.

**The file** is a ``.npz`` (``numpy.savez_compressed``) of ``layer0.weight``, ``layer0.bias``,
..., ``actor.weight``, ``actor.bias`` (float32) and ``meta``, one JSON string: the format, the
action table version, the observation width, the number of actions and the run that made it
(its recipe, steps, and the digests its ``summary.json`` records). It is read with
``allow_pickle=False``; anything malformed raises :class:`NetError` naming the file.
"""

from __future__ import annotations

import json
import os
import stat
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

FORMAT = "guild-numpy-policy"
FORMAT_VERSION = 1
MAX_FILE_BYTES = 16 << 20  # a shipped network is at most 2 MB; anything far larger is not one
MAX_UNPACKED_BYTES = 64 << 20  # what its records may unpack to, all together (read from the zip
MAX_RECORDS = 64               # directory and each record's header before any data is read)
MAX_LAYERS = 16


class NetError(ValueError):
    """A network file that cannot be played: unreadable, malformed or of another table."""


class NumpyNet:
    """The actor of a ``guild train`` network; :meth:`best` picks an action per row."""

    def __init__(self, layers: list[tuple[np.ndarray, np.ndarray]],
                 actor: tuple[np.ndarray, np.ndarray], meta: dict) -> None:
        self.layers = [(w.astype(np.float64).T.copy(), b.astype(np.float64)) for w, b in layers]
        self.actor = (actor[0].astype(np.float64).T.copy(), actor[1].astype(np.float64))
        self.meta = meta
        self.obs_width = int(meta["obs_width"])
        self.n_actions = int(meta["n_actions"])

    def logits(self, obs: np.ndarray) -> np.ndarray:
        """Masked logits ``[m, n_actions]`` (illegal: -inf) for float observations ``[m, w]``."""
        x = np.log1p(np.maximum(np.asarray(obs, np.float64), 0.0))
        for w, b in self.layers:
            x = np.tanh(x @ w + b)
        out = x @ self.actor[0] + self.actor[1]
        legal = np.asarray(obs)[:, -self.n_actions:] > 0
        return np.where(legal, out, -np.inf)

    def best(self, obs: np.ndarray) -> np.ndarray:
        """The best legal action of each row (the lowest index on an exact tie)."""
        return self.logits(obs).argmax(1)


def save_net(path: Path, layers: list[tuple[np.ndarray, np.ndarray]],
             actor: tuple[np.ndarray, np.ndarray], meta: dict) -> None:
    """Write a network file (module docstring), atomically; OSError naming ``path``."""
    arrays: dict[str, Any] = {}
    for i, (w, b) in enumerate(layers):
        arrays[f"layer{i}.weight"] = np.asarray(w, np.float32)
        arrays[f"layer{i}.bias"] = np.asarray(b, np.float32)
    arrays["actor.weight"] = np.asarray(actor[0], np.float32)
    arrays["actor.bias"] = np.asarray(actor[1], np.float32)
    meta = {"format": FORMAT, "format_version": FORMAT_VERSION, **meta}
    arrays["meta"] = np.array(json.dumps(meta, sort_keys=True))
    from agents.learn.ppo import atomic_write  # (only an export writes: a plain install reads)

    # atomically: a full disk or a kill mid-write leaves the file that was there, whole
    atomic_write(Path(path), lambda f: np.savez_compressed(f, **arrays))


def load_net(path: str | os.PathLike, table_version: int, obs_width: int,
             n_actions: int) -> NumpyNet:
    """The network in ``path``, checked against this game's table and observation."""
    path = Path(path)

    def bad(what: str) -> NetError:
        return NetError(f"network {str(path)!r}: {what}")

    arrays = _read(path, bad)
    if "meta" not in arrays:
        raise bad("no 'meta' record")
    try:
        meta = json.loads(str(arrays.pop("meta")))
    except (ValueError, RecursionError):
        raise bad("its 'meta' record is not JSON") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise bad(f"not a {FORMAT} file")
    if meta.get("format_version") != FORMAT_VERSION:
        raise bad(f"format version {meta.get('format_version')!r:.20}; this reads "
                  f"{FORMAT_VERSION}")
    if meta.get("table_version") != table_version:
        raise bad(f"trained on action table version {meta.get('table_version')!r:.20}, this "
                  f"game's is {table_version}")
    if (meta.get("obs_width"), meta.get("n_actions")) != (obs_width, n_actions):
        raise bad(f"made for {meta.get('obs_width')!r:.20} observed numbers and "
                  f"{meta.get('n_actions')!r:.20} actions; this town has {obs_width} and "
                  f"{n_actions}")
    layers = []
    width = obs_width
    for i in range(MAX_LAYERS + 1):
        w, b = arrays.pop(f"layer{i}.weight", None), arrays.pop(f"layer{i}.bias", None)
        if w is None and b is None:
            break
        layers.append(_layer(bad, f"layer{i}", w, b, width))
        width = layers[-1][0].shape[0]
    if not layers or len(layers) > MAX_LAYERS:
        raise bad(f"needs 1 to {MAX_LAYERS} hidden layers")
    actor = _layer(bad, "actor", arrays.pop("actor.weight", None),
                   arrays.pop("actor.bias", None), width)
    if actor[0].shape[0] != n_actions:
        raise bad(f"its actor has {actor[0].shape[0]} outputs, not {n_actions}")
    if arrays:
        raise bad(f"unexpected records {sorted(arrays)[:5]}")
    return NumpyNet(layers, actor, meta)


def _read(path: Path, bad: Any) -> dict[str, np.ndarray]:
    """The file's records, read only after its size, the zip directory and every record's
    ``.npy`` header show it unpacks to at most :data:`MAX_UNPACKED_BYTES` of plain arrays (a
    FIFO or a device is refused unopened; nothing is unpickled)."""
    try:
        st = os.stat(path)
        if not stat.S_ISREG(st.st_mode):
            raise bad("not a regular file")
        if st.st_size > MAX_FILE_BYTES:
            raise bad(f"larger than {MAX_FILE_BYTES >> 20} MB")
        arrays = {}
        with open(path, "rb") as f, zipfile.ZipFile(f) as z:
            infos = z.infolist()
            if len(infos) > MAX_RECORDS or sum(i.file_size for i in infos) > MAX_UNPACKED_BYTES:
                raise bad(f"unpacks to more than a network holds (at most {MAX_RECORDS} records "
                          f"and {MAX_UNPACKED_BYTES >> 20} MB)")
            for info in infos:
                if not info.filename.endswith(".npy"):
                    raise bad(f"not a readable .npz (record {info.filename[:40]!r} is not an "
                              "array)")
                with z.open(info) as member:
                    version = np.lib.format.read_magic(member)
                    read_header = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                                   else np.lib.format.read_array_header_2_0)
                    shape, _, dtype = read_header(member)
                    if dtype.hasobject or int(np.prod(shape)) * dtype.itemsize > info.file_size:
                        raise bad(f"not a readable .npz (record {info.filename[:40]!r} is not "
                                  "a plain array)")
                with z.open(info) as member:
                    arrays[info.filename[:-4]] = np.lib.format.read_array(member,
                                                                          allow_pickle=False)
    except NetError:
        raise
    except Exception as e:  # OSError, zipfile's, zlib's, numpy's: all mean "not a network"
        raise bad(f"not a readable .npz ({type(e).__name__}: {str(e)[:80]})") from None
    return arrays


def _layer(bad: Any, name: str, w: Any, b: Any, n_in: int) -> tuple[np.ndarray, np.ndarray]:
    if (not isinstance(w, np.ndarray) or not isinstance(b, np.ndarray) or w.ndim != 2
            or b.shape != (w.shape[0],) or w.shape[1] != n_in or w.dtype != np.float32
            or b.dtype != np.float32):
        raise bad(f"{name} is not a float32 layer taking {n_in} inputs")
    if not (np.isfinite(w).all() and np.isfinite(b).all()):
        raise bad(f"{name} holds NaN or infinite values")
    return w, b
