"""An ``sb3:`` zip as plain arrays: loaded in a sandbox, played from its weights alone.

A Stable-Baselines3 zip is a pickle, and loading it runs whatever code it names, so the command
line (``league.apart.sb3_load``) runs ``python -m agents.learn.sb3_extract -`` in a bubblewrap
sandbox (``league.apart.sandbox.run``) with the zip's bytes on stdin.  There sb3-contrib loads
the model and its description goes to stdout, free of pickles: an ``.npz`` of the policy
network's ``state_dict`` tensors plus ``__description__``, the UTF-8 JSON that rebuilds it:

* ``policy``: ``MaskableActorCriticPolicy`` or ``MaskableMultiInputActorCriticPolicy``;
* ``observation``: ``{"kind": "box", "shape": [N], "dtype": D}`` or ``{"kind": "dict",
  "spaces": [[KEY, [N], D], ...]}`` (one-dimensional boxes, in the model's order); a box's
  bounds are the float64 arrays ``__low__`` and ``__high__`` beside the weights (they tell
  which order a flat model's columns are in: ``agents.learn.sb3.flat_columns``);
* ``actions``: the size of its ``Discrete`` action space;
* ``net_arch`` (``{"pi": [...], "vf": [...]}``), ``activation`` (a ``torch.nn`` activation
  by name), ``features`` (``FlattenExtractor``, ``CombinedExtractor`` or ``Log1pFeatures``) and
  ``features_kwargs``, ``share_features_extractor``, ``normalize_images``;
* ``meta``: the zip's ``guild.json`` (``agents.learn.sb3_net.META_NAME``; ``{}`` without one).

:func:`rebuild` (in the league's process) trusts none of it: ``np.load(allow_pickle=False)`` of
stored ``.npy`` records, every field checked against an allowlist and the size against bounds
before anything is built, then the same sb3-contrib class with the weights loaded strictly.  It
runs the model's own code, so it chooses the same index in the same state as the model loaded
in-process; another kind of model (a CNN, a custom extractor or activation) is refused in one
line.  ``python -m agents.learn.sb3_extract MODEL.zip|-`` writes the description to stdout;
errors are one line on stderr, exit code 2.
"""

from __future__ import annotations

import io
import json
import math
import os
import sys
import zipfile
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import numpy as np

from agents.learn import zipdir

# The zip's bytes -> its description (this module's), made somewhere its pickles can do no
# harm (``league.apart.sb3_load.extract``: in a sandbox).  Raises ValueError naming the cause.
Extract = Callable[[bytes], bytes]

FORMAT = "guild-sb3-description"
VERSION = 1
DESCRIPTION = "__description__"       # the npz array holding the JSON
BOUNDS = ("__low__", "__high__")      # the npz arrays of a box observation's bounds
MAX_INPUT_BYTES = 512 << 20           # a zip larger than this is not loaded in a sandbox
MAX_OUTPUT_BYTES = 256 << 20          # the description, as the sandbox caps its stdout
MAX_DESCRIPTION_BYTES = 1 << 20       # its JSON
MAX_ARRAYS = 1024
MAX_WIDTH = 4096                      # a hidden layer's width
MAX_LAYERS = 16                       # hidden layers of each trunk
MAX_FEATURES = 1 << 16                # the observation's width
MAX_ACTIONS = 1 << 16
MAX_PARAMETERS = MAX_OUTPUT_BYTES // 4  # float32 numbers of the whole network

POLICIES = ("MaskableActorCriticPolicy", "MaskableMultiInputActorCriticPolicy")
FEATURES = ("FlattenExtractor", "CombinedExtractor", "Log1pFeatures")
ACTIVATIONS = ("Tanh", "ReLU", "LeakyReLU", "ELU", "SELU", "CELU", "GELU", "SiLU", "Mish",
               "Sigmoid", "Softplus", "Softsign", "Hardtanh", "Hardswish", "Tanhshrink",
               "Identity")
DTYPES = ("float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8")
FEATURES_KWARGS = {"FlattenExtractor": {}, "Log1pFeatures": {},
                   "CombinedExtractor": {"cnn_output_dim": int, "normalized_image": bool}}


def is_sb3(spec: object) -> bool:
    """Whether ``spec`` names a Stable-Baselines3 zip (a pickle: loading it runs its code), read
    as the policy registry reads it (``sim.policies``): ``sb3`` before the first colon, in any
    case and with any spaces, so that no spelling the registry loads escapes the sandbox."""
    if not isinstance(spec, str):
        return False
    head, colon, _ = spec.partition(":")
    return bool(colon) and head.strip().lower() == "sb3"


class DescriptionError(ValueError):
    """A model the sandboxed loader cannot describe, or a description it cannot rebuild."""


# --- in the sandbox: load the zip, write its description ---------------------------------------

def describe(model: Any, meta: dict) -> bytes:
    """The ``.npz`` description of a loaded MaskablePPO ``model`` (see the module docstring)."""
    import torch
    from gymnasium import spaces
    from sb3_contrib.common.maskable.policies import (
        MaskableActorCriticPolicy,
        MaskableMultiInputActorCriticPolicy,
    )
    from stable_baselines3.common.torch_layers import CombinedExtractor, FlattenExtractor

    from agents.learn.sb3_net import Log1pFeatures

    policy = model.policy
    kind = type(policy)
    if kind not in (MaskableActorCriticPolicy, MaskableMultiInputActorCriticPolicy):
        raise DescriptionError(f"its policy class {kind.__name__} is not one the sandboxed "
                               f"loader rebuilds ({', '.join(POLICIES)})")
    extractor = policy.features_extractor_class
    if extractor not in (FlattenExtractor, CombinedExtractor, Log1pFeatures):
        raise DescriptionError(f"its features extractor {getattr(extractor, '__name__', '?')} "
                               f"is not one the sandboxed loader rebuilds ({', '.join(FEATURES)})")
    activation = policy.activation_fn
    if getattr(torch.nn, getattr(activation, "__name__", ""), None) is not activation:
        raise DescriptionError(f"its activation {getattr(activation, '__name__', '?')} is not "
                               "a torch.nn activation")
    if not isinstance(policy.action_space, spaces.Discrete) or policy.action_space.start != 0:
        raise DescriptionError(f"its action space {policy.action_space} is not Discrete(n)")

    def box(space: Any) -> tuple[list[int], str]:
        if not isinstance(space, spaces.Box) or len(space.shape) != 1:
            raise DescriptionError(f"its observation space holds {space}, not only "
                                   "one-dimensional boxes")
        return [int(space.shape[0])], str(space.dtype)

    obs_space = policy.observation_space
    if isinstance(obs_space, spaces.Dict):
        observation: dict = {"kind": "dict", "spaces": [[key, *box(sub)] for key, sub
                                                        in obs_space.spaces.items()]}
        bounds = {}
    else:
        shape, dtype = box(obs_space)
        observation = {"kind": "box", "shape": shape, "dtype": dtype}
        bounds = dict(zip(BOUNDS, (np.asarray(obs_space.low, np.float64),
                                   np.asarray(obs_space.high, np.float64))))
    arch = policy.net_arch
    net_arch = ({"pi": list(arch.get("pi", [])), "vf": list(arch.get("vf", []))}
                if isinstance(arch, dict) else {"pi": list(arch), "vf": list(arch)})
    description = {
        "format": FORMAT, "version": VERSION, "policy": kind.__name__,
        "observation": observation, "actions": int(policy.action_space.n),
        "net_arch": net_arch, "activation": activation.__name__,
        "features": extractor.__name__,
        "features_kwargs": dict(policy.features_extractor_kwargs or {}),
        "share_features_extractor": bool(policy.share_features_extractor),
        "normalize_images": bool(policy.normalize_images), "meta": meta,
    }
    text = json.dumps(description).encode("utf-8")
    weights = {k: v.detach().cpu().numpy() for k, v in policy.state_dict().items()}
    out = io.BytesIO()
    np.savez(out, **{DESCRIPTION: np.frombuffer(text, np.uint8)}, **bounds, **weights)
    return out.getvalue()


def _meta(data: bytes) -> dict:
    from agents.learn.sb3_net import META_NAME

    try:
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            if META_NAME in z.namelist():
                meta = json.loads(z.read(META_NAME).decode("utf-8"))
                return meta if isinstance(meta, dict) else {}
    except (OSError, zipfile.BadZipFile, ValueError):
        pass
    return {}


def load_and_describe(data: bytes) -> bytes:
    """Load the zip ``data`` with sb3-contrib (this runs its pickles: only in a sandbox) and
    describe it; :class:`DescriptionError` for a zip that is not such a model."""
    if not zipfile.is_zipfile(io.BytesIO(data)):
        raise DescriptionError("not a zip file")
    meta = _meta(data)
    try:
        from sb3_contrib import MaskablePPO
    except ImportError as e:
        raise DescriptionError(f"sb3-contrib cannot be imported in the sandbox ({e})") from None
    try:
        model = MaskablePPO.load(io.BytesIO(data), device="cpu")
    except Exception as e:  # a corrupt zip or not a MaskablePPO model
        first = str(e).strip().splitlines()[0][:200] if str(e).strip() else ""
        raise DescriptionError(f"not loadable as MaskablePPO ({type(e).__name__}"
                               f"{': ' + first if first else ''})") from None
    return describe(model, meta)


def main(argv: list[str] | None = None) -> int:
    """``python -m agents.learn.sb3_extract MODEL.zip|-``: the description on stdout; 2 and one line
    on stderr when the zip is not a model the sandboxed loader describes."""
    args = sys.argv[1:] if argv is None else argv
    # stdout carries the description alone: whatever the model or a library prints goes to
    # stderr (the model's code runs during the load, in this process)
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    if len(args) != 1:
        print("usage: python -m agents.learn.sb3_extract MODEL.zip|-", file=sys.stderr)
        return 2
    try:
        if args[0] == "-":
            data = sys.stdin.buffer.read(MAX_INPUT_BYTES + 1)
        else:
            with open(args[0], "rb") as f:
                data = f.read(MAX_INPUT_BYTES + 1)
        if len(data) > MAX_INPUT_BYTES:
            raise DescriptionError(f"larger than {MAX_INPUT_BYTES >> 20} MB")
        blob = load_and_describe(data)
    except OSError as e:
        print(f"cannot read the model ({e.strerror or e})", file=sys.stderr)
        return 2
    except DescriptionError as e:
        print(str(e), file=sys.stderr)
        return 2
    out.write(blob)
    out.close()
    return 0


# --- in the league's process: rebuild the network from the description ------------------------

def _check_archive(blob: bytes) -> list[str]:
    """The array names of an npz that unpacks to what it holds: a bounded zip directory of
    stored (uncompressed) ``.npy`` records, each header declaring a plain dtype and a shape
    whose bytes are exactly the record's (``np.load`` allocates what a header declares)."""
    if len(blob) > MAX_OUTPUT_BYTES:
        raise DescriptionError(f"its description is larger than {MAX_OUTPUT_BYTES >> 20} MB")
    f = io.BytesIO(blob)
    names = []
    try:
        end = zipdir.directory(f)
        if end is not None and (end[0] > MAX_ARRAYS + 1 or end[1] > MAX_DESCRIPTION_BYTES):
            raise DescriptionError(f"its description lists {end[0]:,} arrays in a directory "
                                   f"of {end[1]:,} bytes")
        with zipfile.ZipFile(f) as z:
            records = z.infolist()
            if len(records) > MAX_ARRAYS + 1:
                raise DescriptionError(f"its description holds {len(records):,} arrays")
            for r in records:
                if r.compress_type != zipfile.ZIP_STORED or r.file_size != r.compress_size:
                    raise DescriptionError(f"its description's record {r.filename[:60]!r} is "
                                           "compressed (np.savez stores them)")
                if not r.filename.endswith(".npy"):
                    raise DescriptionError(f"its description holds {r.filename[:60]!r}, not "
                                           "an array")
                with z.open(r) as member:
                    version = np.lib.format.read_magic(member)
                    readers = {(1, 0): np.lib.format.read_array_header_1_0,
                               (2, 0): np.lib.format.read_array_header_2_0}
                    if version not in readers:
                        raise ValueError(f"npy format version {version}")
                    shape, _, dtype = readers[version](member)
                    body = r.file_size - member.tell()
                if dtype.hasobject or dtype.fields is not None or dtype.subdtype is not None:
                    raise DescriptionError(f"its description's array {r.filename[:60]!r} is "
                                           f"of dtype {dtype}, not plain numbers")
                if math.prod(shape) * dtype.itemsize != body:
                    raise DescriptionError(f"its description's array {r.filename[:60]!r} "
                                           f"declares {shape} of {dtype}, not its {body:,} "
                                           "bytes")
                names.append(r.filename[:-4])
    except DescriptionError:
        raise
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, ValueError, OSError,
            TypeError) as e:
        raise DescriptionError(f"its description is not an npz archive of arrays "
                               f"({type(e).__name__}: {str(e)[:100]})") from None
    if len(set(names)) != len(names):
        raise DescriptionError("its description holds an array twice")
    return names


def _ints(value: Any, what: str, lo: int, hi: int, most: int) -> list[int]:
    if (not isinstance(value, list) or len(value) > most or
            not all(type(v) is int and lo <= v <= hi for v in value)):
        raise DescriptionError(f"its {what} is not a list of at most {most} sizes {lo}..{hi}: "
                               f"{value!r:.80}")
    return value


def _observation(desc: dict, bounds: dict[str, np.ndarray]) -> tuple[Any, int]:
    """The observation space a description names (a box with its ``bounds``, when given), and
    its width."""
    from gymnasium import spaces

    obs = desc.get("observation")

    def box(shape: Any, dtype: Any, given: dict[str, np.ndarray] | None = None) -> Any:
        if not isinstance(shape, list) or len(shape) != 1:
            raise DescriptionError(f"its observation shape {shape!r:.40} is not one-dimensional")
        (width,) = _ints(shape, "observation shape", 1, MAX_FEATURES, 1)
        if dtype not in DTYPES:
            raise DescriptionError(f"its observation dtype {dtype!r:.40} is not one of {DTYPES}")
        kind = np.dtype(dtype)
        lo, hi = ((-np.inf, np.inf) if kind.kind == "f"
                  else (np.iinfo(kind).min, np.iinfo(kind).max))
        if given:
            lo, hi = (given[name] for name in BOUNDS)
            if kind.kind != "f" or any(a.dtype != np.float64 or a.shape != (width,)
                                       or np.isnan(a).any() for a in (lo, hi)) or (lo > hi).any():
                raise DescriptionError(f"its observation bounds are not two float64 arrays of "
                                       f"{width} numbers, low <= high, of a float box")
            lo, hi = lo.astype(kind), hi.astype(kind)  # as saved: the model's own dtype
        return spaces.Box(lo, hi, (width,), kind), width

    if len(bounds) not in (0, len(BOUNDS)):
        raise DescriptionError(f"its observation bounds are not both of {BOUNDS}")
    if isinstance(obs, dict) and obs.get("kind") == "box":
        return box(obs.get("shape"), obs.get("dtype"), bounds)
    if bounds:
        raise DescriptionError("its observation bounds belong to a box, not a dict")
    if isinstance(obs, dict) and obs.get("kind") == "dict" and isinstance(obs.get("spaces"), list):
        parts = OrderedDict()
        width = 0
        for item in obs["spaces"][:MAX_ARRAYS + 1]:
            if (not isinstance(item, list) or len(item) != 3 or not isinstance(item[0], str) or
                    not item[0] or len(item[0]) > 200 or item[0] in parts):
                raise DescriptionError(f"its observation's part {item!r:.80} is not [KEY, "
                                       "SHAPE, DTYPE]")
            parts[item[0]], w = box(item[1], item[2])
            width += w
        if not parts or len(parts) > MAX_ARRAYS or width > MAX_FEATURES:
            raise DescriptionError(f"its observation has {len(parts)} parts of {width} numbers")
        space = spaces.Dict(parts)
        if list(space.spaces) != list(parts):
            raise DescriptionError("its observation's parts cannot keep their order")
        return space, width
    raise DescriptionError(f"its observation {obs!r:.80} is not a box or a dict of boxes")


def _parameters(width: int, pi: list[int], vf: list[int], actions: int) -> int:
    """The numbers in the network: both trunks, the action and the value heads."""
    def trunk(dims: list[int]) -> tuple[int, int]:
        total, d = 0, width
        for w in dims:
            total, d = total + (d + 1) * w, w
        return total, d

    (p, dp), (v, dv) = trunk(pi), trunk(vf)
    return p + v + (dp + 1) * actions + (dv + 1)


def read(blob: bytes) -> tuple[dict, dict[str, np.ndarray]]:
    """The description's JSON and its arrays, read without unpickling anything."""
    names = _check_archive(blob)
    if DESCRIPTION not in names:
        raise DescriptionError("its description has no __description__")
    try:
        with np.load(io.BytesIO(blob), allow_pickle=False) as npz:
            arrays = {name: npz[name] for name in names}
    except (ValueError, OSError, EOFError, zipfile.BadZipFile) as e:
        raise DescriptionError(f"its description's arrays cannot be read ({e})") from None
    text = arrays.pop(DESCRIPTION)
    if text.dtype != np.uint8 or text.ndim != 1 or text.size > MAX_DESCRIPTION_BYTES:
        raise DescriptionError("its description's __description__ is not UTF-8 JSON bytes")
    try:
        desc = json.loads(text.tobytes().decode("utf-8"))
    except (ValueError, RecursionError) as e:
        raise DescriptionError(f"its description's JSON cannot be read ({e})") from None
    if not isinstance(desc, dict) or desc.get("format") != FORMAT:
        raise DescriptionError(f"its description is not a {FORMAT}")
    if desc.get("version") != VERSION:
        raise DescriptionError(f"its description is of version {desc.get('version')!r:.20}; "
                               f"this loader reads version {VERSION}")
    return desc, arrays


def rebuild(blob: bytes) -> tuple[Any, dict]:
    """The sb3-contrib policy (``predict(obs, action_masks=...)``) a description holds, and the
    model's ``guild.json``; :class:`DescriptionError` for anything out of bounds or foreign.
    A box observation's space has the model's own bounds when the description holds them."""
    import torch
    from sb3_contrib.common.maskable import policies
    from stable_baselines3.common import torch_layers

    from agents.learn.sb3_net import Log1pFeatures

    desc, arrays = read(blob)
    name = desc.get("policy")
    if name not in POLICIES:
        raise DescriptionError(f"its policy class {name!r:.60} is not one of {POLICIES}")
    features = desc.get("features")
    if features not in FEATURES:
        raise DescriptionError(f"its features extractor {features!r:.60} is not one of "
                               f"{FEATURES}")
    kwargs = desc.get("features_kwargs")
    allowed = FEATURES_KWARGS[features]
    if (not isinstance(kwargs, dict) or not set(kwargs) <= set(allowed) or
            not all(type(v) is allowed[k] for k, v in kwargs.items())):
        raise DescriptionError(f"its features extractor's arguments {kwargs!r:.80} are not "
                               f"among {sorted(allowed)}")
    activation = desc.get("activation")
    if activation not in ACTIVATIONS:
        raise DescriptionError(f"its activation {activation!r:.60} is not one of {ACTIVATIONS}")
    flags = (desc.get("share_features_extractor"), desc.get("normalize_images"))
    if not all(type(f) is bool for f in flags):
        raise DescriptionError("its share_features_extractor and normalize_images are not "
                               "true or false")
    space, width = _observation(desc, {name: arrays.pop(name) for name in BOUNDS
                                       if name in arrays})
    if (features == "CombinedExtractor") != (desc["observation"]["kind"] == "dict"):
        raise DescriptionError(f"its features extractor {features} does not read its "
                               f"observation ({desc['observation']['kind']})")
    actions = desc.get("actions")
    if type(actions) is not int or not 1 <= actions <= MAX_ACTIONS:
        raise DescriptionError(f"its action count {actions!r:.40} is not 1..{MAX_ACTIONS}")
    arch = desc.get("net_arch")
    if not isinstance(arch, dict) or set(arch) != {"pi", "vf"}:
        raise DescriptionError(f"its net_arch {arch!r:.80} is not {{'pi': [...], 'vf': [...]}}")
    pi = _ints(arch["pi"], "net_arch pi", 1, MAX_WIDTH, MAX_LAYERS)
    vf = _ints(arch["vf"], "net_arch vf", 1, MAX_WIDTH, MAX_LAYERS)
    count = _parameters(width, pi, vf, actions)
    if count > MAX_PARAMETERS:
        raise DescriptionError(f"its network has {count:,} parameters, over "
                               f"{MAX_PARAMETERS:,}")
    given = sum(a.size for a in arrays.values())
    if given != count:
        raise DescriptionError(f"its description holds {given:,} weights for a network of "
                               f"{count:,}")
    weights = {}
    for key, a in arrays.items():
        if a.dtype.kind != "f" or a.dtype.itemsize != 4:
            raise DescriptionError(f"its weights {key[:60]!r} are {a.dtype}, not float32")
        if not np.isfinite(a).all():
            raise DescriptionError(f"its weights {key[:60]!r} hold NaN or infinite values")
        weights[key] = torch.from_numpy(np.ascontiguousarray(a, np.float32))
    extractor = (Log1pFeatures if features == "Log1pFeatures"
                 else getattr(torch_layers, features))
    # Building the network draws its initial weights from torch's generator: leave it as it
    # was, so a stochastic policy seeded before its model loads samples as one loaded after.
    with torch.random.fork_rng(devices=[]):
        try:
            policy = getattr(policies, name)(
                space, _discrete(actions), lambda _: 0.0, net_arch={"pi": pi, "vf": vf},
                activation_fn=getattr(torch.nn, activation), ortho_init=False,
                features_extractor_class=extractor, features_extractor_kwargs=dict(kwargs),
                share_features_extractor=flags[0], normalize_images=flags[1])
            policy.load_state_dict(weights, strict=True)
        except (RuntimeError, ValueError, TypeError, AssertionError) as e:
            first = str(e).strip().splitlines()[0][:200] if str(e).strip() else ""
            raise DescriptionError(f"its weights do not fit its network ({first})") from None
    policy.set_training_mode(False)
    meta = desc.get("meta")
    return policy, meta if isinstance(meta, dict) else {}


def _discrete(n: int) -> Any:
    from gymnasium import spaces

    return spaces.Discrete(n)


if __name__ == "__main__":
    raise SystemExit(main())
