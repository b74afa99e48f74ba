"""A small league of the baselines and the helpers the league tests share."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from conftest import needs

ROOT = Path(__file__).resolve().parents[1]
TESTS = Path(__file__).resolve().parent
BASELINES = "factor,magpie,random"
F = "faulty_policies:"  # tests/faulty_policies.py, importable from the tests directory


def league_args(out: Path, episodes: int = 12, *extra: str, policies: str = BASELINES,
                seed: int = 1, workers: int = 2) -> list[str]:
    # --public-draw: a seeded league is reproducible, which these tests rely on; the secret
    # draw has tests of its own (tests/test_secret_draw.py)
    return ["league", "--policies", policies, "--episodes", str(episodes), "--seed", str(seed),
            "--public-draw", "--workers", str(workers), "--out", str(out), *extra]


def lines(out: Path) -> list[str]:
    return (out / "results.jsonl").read_text(encoding="utf-8").splitlines()


def rows(out: Path) -> list[dict]:
    return [json.loads(x) for x in lines(out)]


def timeless(rs: list[dict]) -> list[dict]:
    """Rows without the one machine-dependent field."""
    return [{k: v for k, v in r.items() if k != "wallTime"} for r in rs]


def same_replays(a: Path, b: Path) -> bool:
    names = sorted(p.name for p in (a / "replays").iterdir())
    return names == sorted(p.name for p in (b / "replays").iterdir()) and all(
        (a / "replays" / n).read_bytes() == (b / "replays" / n).read_bytes() for n in names)


def one_error_line(err: str) -> str:
    assert "Traceback" not in err
    got = err.strip().splitlines()
    assert len(got) == 1, got
    return got[0]


def copy_league(src: Path, tmp_path: Path) -> Path:
    dst = tmp_path / "copy"
    shutil.copytree(src, dst)
    return dst


def rename(out: Path, old: str, new: str, replays: bool = True) -> None:
    """Rename a policy in a league's league.json, ladder.json, results.jsonl and (``replays``)
    every replay, as a hand or a hostile publisher could."""
    def swap(names: list[str]) -> list[str]:
        return [new if n == old else n for n in names]

    manifest = json.loads((out / "league.json").read_text(encoding="utf-8"))
    manifest["policies"] = swap(manifest["policies"])
    (out / "league.json").write_text(json.dumps(manifest), encoding="utf-8")
    ladder = json.loads((out / "ladder.json").read_text(encoding="utf-8"))
    for e in ladder["policies"]:
        e["policy"] = swap([e["policy"]])[0]
    (out / "ladder.json").write_text(json.dumps(ladder), encoding="utf-8")
    lines = []
    for r in rows(out):
        r["lineup"], r["names"] = swap(r["lineup"]), swap(r["names"])
        lines.append(json.dumps(r) + "\n")
    (out / "results.jsonl").write_text("".join(lines), encoding="utf-8")
    for path in (out / "replays").glob("*.json") if replays else ():
        payload = json.loads(path.read_text(encoding="utf-8"))
        payload["policyNames"] = swap(payload["policyNames"])
        payload["results"]["names"] = swap(payload["results"]["names"])
        path.write_text(json.dumps(payload), encoding="utf-8")


def policy_module(folder: Path, monkeypatch: Any, module: str, source: str,
                  apart: list[str]) -> None:
    """``source`` written as ``module`` in ``folder``, on this process's path (a seat apart is
    shown the module's file); ``apart`` is the league's ``--sandbox`` flags, and with none
    (bubblewrap) the test needs ``bwrap``."""
    if not apart:
        needs(shutil.which("bwrap") is not None, "bubblewrap (apt-get install bubblewrap)")
    (folder / f"{module}.py").write_text(source, encoding="utf-8")
    monkeypatch.syspath_prepend(str(folder))
