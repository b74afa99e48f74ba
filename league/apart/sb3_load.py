"""``sb3:`` models on the command line load in a sandbox: a zip is a pickle, and loading it runs
its code.

``guild evaluate`` and ``guild play`` pass every policy spec through :func:`guard`.  Unless the
user says ``--trust``, an ``sb3:PATH`` spec becomes ``{"name": "sb3:PATH", "extract":
extract}``: :func:`extract` runs ``python -m agents.learn.sb3_extract -`` in a bubblewrap sandbox
(``league.apart.sandbox.run``: no view of the machine, not even of the zip's folder; the zip's bytes
come on stdin), bounded by :data:`MEMORY_MB` of memory, :data:`TIMEOUT` seconds and
:data:`MAX_OUTPUT` bytes of output, and the policy network is rebuilt in this process from the
description it writes (weights and architecture, no pickle: ``agents.learn.sb3_extract``).  The
model is loaded when the spec is guarded, so a file that cannot be played is refused before any
game starts, in one line naming it; the policy then plays it from the per-process cache.

With ``--trust`` the zip is unpickled in this process, as ``make_policy("sb3:PATH")`` does.  A
league (``guild league``) runs an ``sb3:`` seat in a sandboxed seat process of its own instead
(``league.core.episode``).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

from agents.learn import sb3_extract
from league.apart import sandbox

MEMORY_MB = sandbox.RUN_MEMORY_MB       # the sandboxed load's address space
TIMEOUT = sandbox.RUN_TIMEOUT           # ... its wall and CPU seconds
MAX_OUTPUT = sb3_extract.MAX_OUTPUT_BYTES  # ... the description it may write


def extract(data: bytes) -> bytes:
    """The description of the zip ``data``, made in a sandbox (``agents.learn.sb3_extract``).

    ``ValueError`` in one line when it cannot be made: no sandbox here, or the zip is not a
    MaskablePPO model the sandboxed loader describes (the loader's own line).
    """
    try:
        return sandbox.run([sys.executable, "-m", "agents.learn.sb3_extract", "-"], stdin=data,
                           timeout=TIMEOUT, memory_mb=MEMORY_MB, max_output=MAX_OUTPUT)
    except sandbox.SandboxError as e:
        raise ValueError(f"no sandbox can start here ({sandbox.problem() or e}): install "
                         "bubblewrap (Debian/Ubuntu: apt-get install bubblewrap), or load it "
                         "in this process with --trust if you trust the file (a zip is a "
                         "pickle: loading it runs its code)") from None
    except sandbox.RunError as e:
        if e.returncode == 2 and e.last_line:  # the loader's own one-line refusal
            raise ValueError(e.last_line) from None
        raise ValueError(f"the sandboxed loader failed ({e})") from None


def sandboxed(spec: str) -> dict[str, Any]:
    """``sb3:PATH`` as a spec that ``make_policy`` and ``make_batched_policy`` build into a
    policy playing the model loaded in a sandbox; loads it now (``ValueError`` naming the file
    if it cannot be played)."""
    from agents.learn.sb3 import from_spec, load_model

    text = spec.strip()
    path = from_spec(text.partition(":")[2]).path  # checks that the file exists
    load_model(path, extract)
    return {"name": text, "extract": extract}


def guard(specs: Sequence[Any], trust: bool) -> list[Any]:
    """``specs`` with each ``sb3:`` one :func:`sandboxed` (unless ``trust``); equal specs
    become the same object, so a paired evaluation still sees one role in them (and a model
    is loaded once)."""
    if trust:
        return list(specs)
    made: dict[str, dict[str, Any]] = {}
    out: list[Any] = []
    for spec in specs:
        if sb3_extract.is_sb3(spec):
            key = spec.strip()  # paths are case-sensitive
            if key not in made:
                made[key] = sandboxed(spec)
            out.append(made[key])
        else:
            out.append(spec)
    return out
