"""The ladder's 95% interval: a Student t interval over rotation groups (the bootstrap it
replaces covered the mean half the time with two groups), and leagues whose ladder.json records
the older bootstrap still verify, report and resume as they were written."""

from __future__ import annotations

import html
import json
import math
import shutil
import statistics
from pathlib import Path

import numpy as np
import pytest
from leagues import league_args, rows

from agents.learn.evaluation import t_quantile
from league.cli.guild import main
from league.core import ladder as ladders
from league.core import signing
from sim.rules.world import SEATS

# How a ladder.json of the bootstrap says its interval: the wording such leagues hold on disk.
OLD_WORDING = ("95% percentile bootstrap over rotation groups, 2000 resamples, seeded from the "
               "league seed")
OLD_SECRET_WORDING = ("95% percentile bootstrap over rotation groups, 2000 resamples, seeded "
                      "from the commitment to the league's secret draw (league.json's first "
                      "sha256)")


def row(group: int, lineup: list[str], scores: list[float]) -> dict:
    """A results line with what the ladder reads; no commissions, robberies or faults."""
    zeros = [0] * SEATS
    return {"group": group, "lineup": lineup, "scores": scores, "turns": 14,
            "questPoints": zeros, "delivered": zeros, "robberies": zeros, "robbed": zeros,
            "fallbacks": zeros, "faults": [{}] * SEATS}


def t_of_means(means: list[float]) -> list[float]:
    """The textbook interval: mean +- t(0.975, n - 1) s / sqrt(n) of ``means``."""
    n = len(means)
    half = t_quantile(0.975, n - 1) * statistics.stdev(means) / math.sqrt(n)
    return [statistics.fmean(means) - half, statistics.fmean(means) + half]


def ci_of(rs: list[dict], policy: str = "a") -> list[float] | None:
    return ladders.build(rs, [policy], 0)["policies"][0]["ci95"]


@pytest.mark.parametrize("groups", [2, 3, 4, 10])
def test_the_interval_is_a_t_interval_over_the_group_means(groups: int) -> None:
    rng = np.random.default_rng(groups)
    rs = [row(g, ["a"] * SEATS, [round(float(x), 3) for x in rng.normal(g % 3, 1.0, SEATS)])
          for g in range(groups)]
    means = [statistics.fmean(r["scores"]) for r in rs]
    lo, hi = ci_of(rs)
    assert [lo, hi] == pytest.approx(t_of_means(means), abs=2e-6)
    if groups == 2:  # the bootstrap's was exactly the two group means
        assert lo < min(means) and max(means) < hi
    assert ci_of(rs[:1]) is None  # one group: no spread to measure


def test_groups_weigh_by_the_policy_s_seats_and_the_interval_is_centred_on_the_mean() -> None:
    """Policy ``a`` holds 1, 2 or 3 seats of a group: the interval is centred on the ladder's
    mean (seats pooled), its standard error the linearised one of a ratio of sums, and
    holding twice the seats with the same scores changes nothing."""
    seats = [1, 2, 3, 2, 1]
    rng = np.random.default_rng(7)
    rs = []
    for g, k in enumerate(seats):
        lineup = ["a"] * k + ["b"] * (SEATS - k)
        rs.append(row(g, lineup, [round(float(x), 3) for x in rng.normal(g, 1.5, SEATS)]))
    entry = ladders.build(rs, ["a"], 0)["policies"][0]
    lo, hi = entry["ci95"]
    assert (lo + hi) / 2 == pytest.approx(entry["meanScore"], abs=1.5e-6)
    sums = np.array([sum(r["scores"][:k]) for r, k in zip(rs, seats)])
    counts = np.array(seats, dtype=float)
    mean = sums.sum() / counts.sum()
    n = len(seats)
    se = math.sqrt(n / (n - 1) * sum((c / counts.sum()) ** 2 * (s / c - mean) ** 2
                                     for s, c in zip(sums, counts)))
    assert (hi - lo) / 2 == pytest.approx(t_quantile(0.975, n - 1) * se, abs=1.5e-6)
    doubled = [{**r, "lineup": ["a"] * (2 * k) + ["b"] * (SEATS - 2 * k),
                "scores": r["scores"][:k] * 2 + r["scores"][k:SEATS - k]}
               for r, k in zip(rs, seats) if 2 * k <= SEATS]
    kept = [r for r, k in zip(rs, seats) if 2 * k <= SEATS]
    assert ci_of(doubled) == pytest.approx(ci_of(kept), abs=1.5e-6)


@pytest.mark.parametrize("groups", [2, 3, 5])
def test_the_interval_covers_the_mean_95_percent_of_the_time(groups: int) -> None:
    """Normal group means of known mean 0.5: 2,000 ladders of ``groups`` groups each. The
    percentile bootstrap covered it about 50% of the time with two groups, 75% with three."""
    rng = np.random.default_rng(100 + groups)
    hits = 0
    draws = 2000
    for _ in range(draws):
        rs = [row(g, ["a"] * SEATS, [float(x)] * SEATS)
              for g, x in enumerate(rng.normal(0.5, 1.0, groups))]
        lo, hi = ci_of(rs)
        hits += lo <= 0.5 <= hi
    assert 0.93 <= hits / draws <= 0.97


def test_a_new_league_records_its_t_interval_and_verifies(league12, capsys) -> None:
    out = league12[0]
    ladder = json.loads((out / "ladder.json").read_text(encoding="utf-8"))
    assert ladder["interval"] == ladders.T_INTERVAL and ladders.kind_of(ladder) == "t"
    assert ladders.kept(out / "ladder.json") == "t"
    rs = rows(out)
    for e in ladder["policies"]:  # three policies: two seats of each group each
        groups = sorted({r["group"] for r in rs})
        means = [statistics.fmean(r["scores"][s] for r in rs if r["group"] == g
                                  for s, p in enumerate(r["lineup"]) if p == e["policy"])
                 for g in groups]
        assert e["ci95"] == pytest.approx(t_of_means(means), abs=2e-6)
    capsys.readouterr()
    assert main(["verify", str(out)]) == 0


def as_bootstrap(out: Path) -> dict:
    """Make ``out`` a league as it was written before the t interval: its ladder.json the
    bootstrap's, written and signed as a league writes and signs it."""
    manifest = json.loads((out / "league.json").read_text(encoding="utf-8"))
    rs = rows(out)
    old = ladders.build(rs, manifest["policies"],
                        ladders.bootstrap_seed(manifest["seed"], manifest.get("commitments")),
                        "bootstrap")
    (out / "ladder.json").write_text(json.dumps(old, indent=2, ensure_ascii=False) + "\n",
                                     encoding="utf-8")
    signing.sign_league(out, None, rs)
    return old


def test_a_bootstrap_league_verifies_reports_and_resumes(league12, tmp_path, capsys) -> None:
    out = tmp_path / "old"
    shutil.copytree(league12[0], out)
    old = as_bootstrap(out)
    assert old["interval"] == OLD_WORDING and ladders.kept(out / "ladder.json") == "bootstrap"
    new = json.loads((league12[0] / "ladder.json").read_text(encoding="utf-8"))
    assert [e["ci95"] for e in old["policies"]] != [e["ci95"] for e in new["policies"]]
    capsys.readouterr()
    assert main(["verify", str(out)]) == 0
    assert main(["report", str(out)]) == 0
    printed = capsys.readouterr()
    assert "warning" not in printed.err  # the page's ladder is ladder.json's: the bootstrap's
    page = (out / "report.html").read_text(encoding="utf-8")
    assert OLD_WORDING in page and ladders.T_INTERVAL not in page
    for e in old["policies"]:
        lo, hi = e["ci95"]
        assert f'data-lo="{lo}" data-hi="{hi}"' in page
    # resumed and extended by a group: it keeps its bootstrap, and verifies
    assert main(league_args(out, 18)) == 0
    capsys.readouterr()
    assert main(["verify", str(out)]) == 0
    resumed = json.loads((out / "ladder.json").read_text(encoding="utf-8"))
    manifest = json.loads((out / "league.json").read_text(encoding="utf-8"))
    assert resumed["episodes"] == 18 and ladders.kind_of(resumed) == "bootstrap"
    assert resumed == json.loads(json.dumps(ladders.build(
        rows(out), manifest["policies"], manifest["seed"], ladders.kind_of(resumed))))


def test_an_edited_ladder_cannot_switch_a_signed_league_to_the_bootstrap(league12, tmp_path,
                                                                         capsys) -> None:
    """The interval kept on resume was read from ladder.json unchecked: one edited to the
    bootstrap's wording turned a t league into a bootstrap one, which the run then signed."""
    out = tmp_path / "edited"
    shutil.copytree(league12[0], out)
    ladder = json.loads((out / "ladder.json").read_text(encoding="utf-8"))
    edited = json.dumps({**ladder, "interval": OLD_WORDING})
    (out / "ladder.json").write_text(edited, encoding="utf-8")
    capsys.readouterr()
    assert main(league_args(out, 18)) == 2
    assert "records the bootstrap interval but signature.json signed no bootstrap ladder" in \
        capsys.readouterr().err
    assert (out / "ladder.json").read_text(encoding="utf-8") == edited and len(rows(out)) == 12
    # nor the bootstrap ladder of its rows, which anyone can compute: none was signed
    manifest = json.loads((out / "league.json").read_text(encoding="utf-8"))
    forged = ladders.ladder_text(ladders.build(rows(out), manifest["policies"],
                                               manifest["seed"], "bootstrap"))
    (out / "ladder.json").write_text(forged, encoding="utf-8")
    assert main(league_args(out, 18)) == 2 and len(rows(out)) == 12
    (out / "ladder.json").unlink()  # as the refusal says: ranked with the t interval
    assert main(league_args(out, 18)) == 0
    assert ladders.kept(out / "ladder.json") == "t"


def test_a_bootstrap_league_stopped_before_it_signed_resumes_as_one(league12, tmp_path,
                                                                      monkeypatch) -> None:
    """A run stops between writing ladder.json and signing it: the league's own ladder, not
    the one signed, is the bootstrap ladder of its results, and the league resumes as one."""
    out = tmp_path / "stopped"
    shutil.copytree(league12[0], out)
    as_bootstrap(out)
    with monkeypatch.context() as m:
        m.setattr(signing, "sign_league", lambda *a, **k: (_ for _ in ()).throw(
            KeyboardInterrupt()))
        assert main(league_args(out, 18)) == 130  # as on Ctrl-C
    assert len(rows(out)) == 18 and ladders.kept(out / "ladder.json") == "bootstrap"
    assert main(league_args(out, 24)) == 0
    assert ladders.kept(out / "ladder.json") == "bootstrap"
    assert main(["verify", str(out)]) == 0


def test_verify_holds_each_ladder_to_the_interval_it_records(league12, tmp_path,
                                                             capsys) -> None:
    """A bootstrap ladder given the t intervals, or a t ladder the bootstrap's, is not the
    ladder of the results."""
    out = tmp_path / "mixed"
    shutil.copytree(league12[0], out)
    t_ladder = json.loads((out / "ladder.json").read_text(encoding="utf-8"))
    old = as_bootstrap(out)
    top = old["policies"][0]["policy"]
    mixed = {**old, "policies": [{**e, "ci95": t["ci95"]}
                                 for e, t in zip(old["policies"], t_ladder["policies"])]}
    for wrong in (mixed, {**mixed, "interval": ladders.T_INTERVAL,
                          "ranking": t_ladder["ranking"],
                          "policies": [{**e, "ci95": o["ci95"]} for e, o in
                                       zip(t_ladder["policies"], old["policies"])]}):
        (out / "ladder.json").write_text(json.dumps(wrong), encoding="utf-8")
        signing.sign_league(out, None, rows(out))
        capsys.readouterr()
        assert main(["verify", str(out)]) == 1
        assert f"verify: ladder.json: policies[{top}].ci95[0] is " in capsys.readouterr().out


def test_a_secret_draw_s_bootstrap_says_what_seeded_it(tmp_path, capsys) -> None:
    """No league seed: a bootstrap ladder was seeded from the commitment to the secret, and
    says so, on the page too; the new interval needs no seed."""
    out = tmp_path / "secret"
    assert main(["league", "--policies", "factor,magpie", "--episodes", "12", "--turns", "6",
                 "--workers", "1", "--out", str(out)]) == 0
    assert json.loads((out / "ladder.json").read_text(encoding="utf-8"))["interval"] == \
        ladders.T_INTERVAL
    assert as_bootstrap(out)["interval"] == OLD_SECRET_WORDING
    capsys.readouterr()
    assert main(["verify", str(out)]) == 0
    assert main(["report", str(out)]) == 0
    assert "warning" not in capsys.readouterr().err
    assert OLD_SECRET_WORDING in html.unescape((out / "report.html").read_text(encoding="utf-8"))


def test_kept_reads_the_interval_a_ladder_json_records(tmp_path) -> None:
    path = tmp_path / "ladder.json"
    assert ladders.kept(path) == "t"  # none yet: a new league's
    for text, kind in ((json.dumps({"interval": OLD_WORDING}), "bootstrap"),
                       (json.dumps({"interval": OLD_SECRET_WORDING}), "bootstrap"),
                       (json.dumps({"interval": ladders.T_INTERVAL}), "t"),
                       ("{not json", "t"), (json.dumps([OLD_WORDING]), "t")):
        path.write_text(text, encoding="utf-8")
        assert ladders.kept(path) == kind, text
    path.unlink()
    path.mkdir()
    assert ladders.kept(path) == "t"  # not a file: the league writes its ladder anew
