"""Two checkouts side by side: ``python -m bench.compare OTHER [--rounds N] [--seconds S]``.

This machine's speed drifts between minutes by more than most changes move a figure, so a
before/after figure means something only when the two are measured interleaved.  Each round runs
every workload once in each checkout, each run in a fresh process, and the order of the two
checkouts alternates from round to round; the table gives each side's median and range, and the
ratio of the medians.  Both sides run this checkout's drivers (``bench/workloads.py``, loaded by
path into a process that imports the other checkout's ``sim``), so only the engine differs.

OTHER is a checkout (a folder holding ``sim/``) or a git revision of this repository, checked out
into a temporary worktree (removed at the end) and compiled there as ``pip install`` would
(``setup.py build_ext --inplace``, when the revision has a compiled build).  Comparing this
checkout with itself shows the noise floor.  The table header says which builds ran: a side
whose build is stale or absent runs as pure Python.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import tomllib
from dataclasses import dataclass, field

from bench.workloads import parse_pool

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)  # this checkout
WORKLOADS_FILE = os.path.join(HERE, "workloads.py")

# Figure name -> the workloads.py function that measures it (seconds -> units/s).
WORKLOADS: dict[str, str] = {
    "baseline_episodes_per_s": "bench_baselines",
    "scalar_structured_episodes_per_s": "bench_structured",
    "scalar_structured_live_episodes_per_s": "bench_structured_live",
    "scalar_sentence_episodes_per_s": "bench_sentences",
    "parse_sentences_per_s": "bench_parse",
    "gym_steps_per_s": "bench_gym",
    "parallel_joint_steps_per_s": "bench_parallel",
}

# One run, in a fresh interpreter: argv = tree, workloads file; stdin = the job (JSON); the last
# stdout line = the figure and the builds that ran (JSON).  It refuses to measure a ``sim`` that
# is not the tree's own (an installed copy found first, say).
_CHILD = r"""
import importlib.util, json, os, sys
tree, path = os.path.abspath(sys.argv[1]), sys.argv[2]
sys.path.insert(0, tree)
job = json.load(sys.stdin)
import sim
if os.path.dirname(os.path.dirname(os.path.abspath(sim.__file__))) != tree:
    sys.exit(f"imported sim from {sim.__file__}, not from {tree}")
spec = importlib.util.spec_from_file_location("guild_bench_workloads", path)
workloads = importlib.util.module_from_spec(spec)
spec.loader.exec_module(workloads)
run = getattr(workloads, job["function"])
value = run(job["seconds"], job["pool"]) if job["pool"] else run(job["seconds"])
builds = {name: getattr(sys.modules[name], "active", False)
          for name in ("sim.native", "agents.baselines.native") if name in sys.modules}
print(json.dumps({"value": value, "builds": builds}))
"""


@dataclass
class Side:
    """One checkout under comparison: its label, folder, figures and the builds that ran."""

    label: str
    tree: str
    values: dict[str, list[float]] = field(default_factory=dict)
    failures: dict[str, str] = field(default_factory=dict)
    builds: dict[str, bool] = field(default_factory=dict)


def measure(tree: str, workload: str, seconds: float, pool: list[str] | None = None,
            timeout: float = 600.0) -> tuple[float | None, dict[str, bool]]:
    """One workload's figure in a fresh process importing ``tree``'s engine, and the builds
    that ran there; ``ValueError`` (one line) if the run failed."""
    job = {"function": WORKLOADS[workload], "seconds": seconds,
           "pool": pool if workload == "parse_sentences_per_s" else None}
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    try:
        done = subprocess.run([sys.executable, "-c", _CHILD, tree, WORKLOADS_FILE],
                              input=json.dumps(job), capture_output=True, text=True, cwd=tree,
                              env=env, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise ValueError(f"{workload} did not finish within {timeout:.0f} s") from None
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        why = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
        raise ValueError(f"{workload} failed: {why[:300]}")
    answer = json.loads(lines[-1])
    return answer["value"], answer["builds"]


def checkout(other: str, work: str) -> tuple[str, str]:
    """The folder and label of OTHER: a checkout as it is, or a revision checked out (and
    built) under ``work``; ``ValueError`` if it is neither."""
    if os.path.isdir(os.path.join(other, "sim")):
        return os.path.abspath(other), os.path.abspath(other)
    found = subprocess.run(["git", "-C", ROOT, "rev-parse", "--verify", "--quiet",
                            f"{other}^{{commit}}"], capture_output=True, text=True)
    if found.returncode != 0:
        raise ValueError(f"{other!r} is neither a checkout (a folder holding sim/) nor a "
                         "revision of this repository")
    rev = found.stdout.strip()
    tree = os.path.join(work, "other")
    added = subprocess.run(["git", "-C", ROOT, "worktree", "add", "--detach", "--quiet", tree,
                            rev], capture_output=True, text=True)
    if added.returncode != 0:
        why = (added.stderr.strip().splitlines() or ["no message"])[-1]
        raise ValueError(f"could not check out {other!r} into a worktree: {why[:200]}")
    if os.path.exists(os.path.join(tree, "sim", "native.py")):
        build(tree, rev, os.path.join(work, "build-requires"))
    return tree, f"{other} ({rev[:12]})"


def build(tree: str, rev: str, requires_dir: str) -> None:
    """Compile a revision's worktree in place, as its ``pip install`` would: its build
    requirements (``[build-system] requires``: mypy carries mypyc) go into a folder of their own
    first, since pip installs them only into its isolated build environments.  A failed build
    leaves the revision running as pure Python, which the table's header then says."""
    print(f"bench.compare: compiling {rev[:12]} in its worktree (a minute or two)",
          file=sys.stderr)
    with open(os.path.join(tree, "pyproject.toml"), "rb") as f:
        requires = tomllib.load(f).get("build-system", {}).get("requires", [])
    steps = [[sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
              "--target", requires_dir, *requires],
             [sys.executable, "setup.py", "-q", "build_ext", "--inplace"]]
    env = {**os.environ, "GUILD_BUILD": "auto", "PYTHONPATH": requires_dir}
    for step in steps:
        done = subprocess.run(step, cwd=tree, capture_output=True, text=True, env=env)
        if done.returncode != 0:
            why = (done.stderr.strip().splitlines() or ["no message"])[-1]
            print(f"bench.compare: {rev[:12]} did not compile ({why[:200]}); it runs as pure "
                  "Python", file=sys.stderr)
            return


def builds_text(builds: dict[str, bool]) -> str:
    if not builds:
        return "no compiled build"
    return ", ".join(f"{name.split('.')[0]} {'compiled' if on else 'pure Python'}"
                     for name, on in builds.items())


def cell(got: list[float], failure: str | None) -> str:
    if not got:
        return f"failed: {failure}" if failure else "-"
    median = statistics.median(got)
    if len(got) == 1:
        return f"{median:,.0f}"
    return f"{median:,.0f} ({min(got):,.0f}-{max(got):,.0f})"


def table(sides: tuple[Side, Side], workloads: list[str]) -> str:
    """Markdown: each workload's medians (ranges) on both sides and the ratio after/before."""
    before, after = sides
    rows = [f"| figure | {before.label} | {after.label} | ratio |", "|---|---|---|---|"]
    for name in workloads:
        a, b = before.values.get(name, []), after.values.get(name, [])
        ratio = (f"{statistics.median(b) / statistics.median(a):.2f}x"
                 if a and b and statistics.median(a) > 0 else "-")
        rows.append(f"| `{name}` | {cell(a, before.failures.get(name))} | "
                    f"{cell(b, after.failures.get(name))} | {ratio} |")
    return "\n".join(rows)


def run(sides: tuple[Side, Side], workloads: list[str], rounds: int, seconds: float) -> None:
    """``rounds`` rounds; in each, every workload on both sides, the first side alternating."""
    # the parser's sentences as this checkout has them, handed to both sides
    pool = parse_pool() if "parse_sentences_per_s" in workloads else None
    for r in range(rounds):
        for name in workloads:
            for side in (sides if r % 2 == 0 else sides[::-1]):
                if name in side.failures:
                    continue  # a workload that failed once is not run again on that side
                try:
                    value, builds = measure(side.tree, name, seconds, pool)
                except ValueError as e:
                    side.failures[name] = str(e)
                    print(f"bench.compare: round {r + 1}, {side.label}: {e}", file=sys.stderr)
                    continue
                side.builds.update(builds)
                if value is not None:  # None: its package is not installed there
                    side.values.setdefault(name, []).append(value)
                    print(f"bench.compare: round {r + 1}, {side.label}: {name} {value:,.1f}",
                          file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.compare", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("other", help="a checkout (folder holding sim/) or a git revision: 'before'")
    ap.add_argument("--rounds", type=int, default=3, metavar="N", help="rounds (default 3)")
    ap.add_argument("--seconds", type=float, default=5.0, metavar="S",
                    help="seconds per run (default 5)")
    ap.add_argument("--only", choices=list(WORKLOADS), action="append",
                    help="compare only this figure (repeatable; default: all)")
    args = ap.parse_args(argv)
    if not 1 <= args.rounds <= 100:
        ap.error(f"--rounds must be from 1 to 100; got {args.rounds}")
    if not 0 < args.seconds <= 600:
        ap.error(f"--seconds must be more than 0 and at most 600; got {args.seconds:g}")
    workloads = list(dict.fromkeys(args.only or WORKLOADS))
    work = tempfile.mkdtemp(prefix="guild-compare-")
    try:
        try:
            tree, label = checkout(args.other, work)
        except ValueError as e:
            ap.exit(2, f"python -m bench.compare: {e}\n")
        sides = (Side(label, tree), Side(f"this checkout ({ROOT})", ROOT))
        started = time.strftime("%Y-%m-%d %H:%M")
        run(sides, workloads, args.rounds, args.seconds)
    finally:
        if os.path.isdir(os.path.join(work, "other")):
            subprocess.run(["git", "-C", ROOT, "worktree", "remove", "--force",
                            os.path.join(work, "other")], capture_output=True)
        shutil.rmtree(work, ignore_errors=True)
    print(f"{args.rounds} interleaved rounds of {args.seconds:g} s per run, from {started}; "
          f"medians (ranges)")
    for side in sides:
        print(f"- {side.label}: {builds_text(side.builds)}")
    print()
    print(table(sides, workloads))
    return 1 if any(side.failures for side in sides) else 0


if __name__ == "__main__":
    raise SystemExit(main())
