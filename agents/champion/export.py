"""Turn a ``guild train`` run into a champion file (needs torch, the ``train`` extra)::

    python -m agents.champion.export runs/champion [--out FILE]

It writes ``RUN/champion.npz`` unless ``--out`` names another file.  The built-in
``champion`` is replaced only when ``--out`` names the package's own file
(``agents/champion/champion.npz``), since every later ``champion`` seat plays whatever that file
holds: a default that wrote it would swap the built-in opponent, unannounced, in every install
the command ran in.

Keeps the actor's layers only (the value head plays no part in choosing), as float32, and
records in ``meta`` what the run's ``summary.json`` says of it: seed, steps, hyperparameters,
the recipe file's sha256, the first updates' digests and the final one, so a re-run of the
recipe can be checked against the shipped weights.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from agents.champion import CHAMPION_FILE
from agents.champion.net import save_net
from sim.commandline import OneLineParser, printable

DEFAULT_NAME = "champion.npz"  # RUN/champion.npz unless --out names another file

KEPT = ("seed", "steps", "train_seconds", "steps_per_second", "envs", "league", "against",
        "threads", "device", "digests", "digest", "hyperparameters", "config", "after")


def export(run: Path, out: Path) -> dict:
    """Write ``out`` from the run in ``run`` (atomically: a failed write leaves the file that
    was there); returns the file's meta. ValueError naming the file for an ``out`` that is one
    of the run's own files, or a run whose files are not a finished run's."""
    from agents.learn.ppo import read_model
    from agents.learn.training import read_summary

    _check_out(run, out)
    net, data = read_model(run / "model.pt")
    path = run / "summary.json"
    summary = read_summary(path)
    if type(summary.get("steps")) is not int or not isinstance(
            summary.get("digest"), str) or not isinstance(summary.get("digests"), list):
        raise ValueError(f"{str(path)!r} is not the summary of a guild train run (it needs "
                         "steps, digest and digests)")
    provenance = data.get("provenance")
    if not isinstance(provenance, dict) or provenance.get("digest") != summary["digest"]:
        raise ValueError(f"{str(run)!r}: model.pt and summary.json are not of the same run")
    if not net.network["shared"]:
        raise ValueError("export keeps the actor's trunk: train with a shared trunk")
    state = {k: v.detach().numpy() for k, v in net.state_dict().items()}
    layers = []
    for i in range(0, len(net.network["hidden"]) * 2, 2):
        layers.append((state[f"actor_trunk.{i}.weight"], state[f"actor_trunk.{i}.bias"]))
    actor = (state["actor.weight"], state["actor.bias"])
    meta = {"table_version": data["table_version"], "obs_width": net.obs_width,
            "n_actions": net.n_actions, "hidden": net.network["hidden"],
            "run": {k: summary.get(k) for k in KEPT}}
    save_net(out, layers, actor, meta)
    return meta


def _check_out(run: Path, out: Path) -> None:
    """Refuse an ``out`` that is one of the run's own files, or in its ``tb/`` or
    ``snapshots/`` (through links and relative paths): the export would replace the model or
    the summary it was made from."""
    from agents.learn.training import OWN_NAMES, SNAPSHOTS, TENSORBOARD

    target = os.path.realpath(out)
    folders = [os.path.realpath(run / name) for name in (TENSORBOARD, SNAPSHOTS)]
    if (any(target == os.path.realpath(run / name) for name in OWN_NAMES)
            or any(target.startswith(folder + os.sep) for folder in folders)):
        raise ValueError(f"--out {str(out)!r} is one of the run's own files; name a file "
                         f"outside them (default {str(run / DEFAULT_NAME)!r})")


def main(argv: list[str] | None = None) -> int:
    p = OneLineParser(prog="python -m agents.champion.export",
                      description="a guild train run -> a champion network file")
    p.add_argument("run", type=Path, help="the run's --out folder")
    p.add_argument("--out", type=Path, default=None,
                   help="the file to write (RUN/champion.npz; never one of the run's own "
                        "files), written atomically; naming the package's "
                        f"{CHAMPION_FILE.name} ({CHAMPION_FILE}) replaces the built-in champion")
    args = p.parse_args(argv)
    out: Path = args.run / DEFAULT_NAME if args.out is None else args.out
    try:
        meta = export(args.run, out)
    except OSError as e:  # a file that cannot be read or written (a full disk): name it
        where = os.fsdecode(e.filename) if isinstance(e.filename, (str, bytes)) else str(out)
        if os.path.basename(where).startswith(f".{out.name}.tmp"):  # the atomic write's own
            where = str(out)
        print(f"export: {printable(where)}: {printable(e.strerror or str(e))}",
              file=sys.stderr)
        return 2
    except (ValueError, KeyError) as e:
        print(f"export: {printable(str(e))}", file=sys.stderr)
        return 2
    builtin = " (the built-in champion now plays it)" if _same_file(out, CHAMPION_FILE) else ""
    print(f"wrote {printable(str(out))} ({out.stat().st_size:,} bytes): "
          f"{meta['run']['steps']:,} steps, digest {meta['run']['digest'][:16]}{builtin}")
    return 0


def _same_file(a: Path, b: Path) -> bool:
    """Whether ``a`` and ``b`` name one file (through links and relative paths)."""
    try:
        return a.samefile(b)
    except OSError:
        return False


if __name__ == "__main__":
    raise SystemExit(main())
