"""The gate's compact text table (RULES §18): worst case, distribution, failures.

Its failure lines say "no plan on the opening stock": what the plans leave out is in
:mod:`feasibility.gate`'s docstring."""

from __future__ import annotations

from sim.rules.errors import printable
from sim.rules.world import World

from .gate import (
    MIN_SUPPLIERS,
    Case,
    GateReport,
    Outcome,
    Summary,
    pair_name,
    pair_names,
    suppliers,
)
from .optimal import OptimalSearch

SHOWN_FAILURES = 12
"""Failures listed in the text table (``--json`` lists every one)."""


def describe_case(world: World, case: Case) -> str:
    """``"seed 17 seat 3 (start The Docks, rope+salt)"``; exhaustive cases name no seed."""
    goods = "+".join(world.goods[g].name for g in case.goods)
    where = f"start {world.rooms[case.start].name}, {goods}"
    if case.seed is None:
        return f"any seed: {where}"
    return f"seed {case.seed} seat {case.seat} ({where})"


def describe_failure(report: GateReport, o: Outcome) -> str:
    """One line: the case, why the greedy plan fails, and what the optimal plan would need
    (on the opening stock, as the line says: the module docstring)."""
    if not o.searched:
        best = "optimal plan not searched (the search's steps ran out)"
    elif o.optimal is None:
        search = OptimalSearch(report.world, (o.case.goods[0], o.case.goods[1]))
        short = search.shortfalls(o.case.start)
        best = ("no plan on the opening stock: " + "; ".join(short) if short else
                f"no plan on the opening stock within {report.world.start_coin} coin")
    else:
        fits = "fits" if o.optimal.turns <= report.allowed else "does not fit either"
        best = (f"optimal plan on opening stock ({o.optimal.turns} turns / {o.optimal.coin} "
                f"coin) {fits}")
    return f"{describe_case(report.world, o.case)}: {'; '.join(o.problems)}; {best}"


def _dist(s: Summary) -> str:
    return " ".join(f"{k}:{v}" for k, v in s.distribution.items()) or "-"


def _num(v: int | None) -> str:
    return "-" if v is None else str(v)


def _oracle_rows(g: Summary, o: Summary) -> list[str]:
    """The two oracles' worst figures and slack: turns against the allowance, coin against
    the purse, units carried at once against the carry limit.  A negative slack is a plan that
    does not fit; in the greedy row it fails the gate."""
    rows = [f"  {'oracle':<8} {'worst turns':>11} {'worst coin':>10} {'worst carry':>11} "
            f"{'slack turns':>11} {'slack coin':>10} {'slack carry':>11}  plan lengths"]
    for name, s in (("greedy", g), ("optimal", o)):
        extra = f"  ({s.without_plan} without a plan)" if s.without_plan else ""
        if s.unsearched:
            extra += f"  ({s.unsearched} of {s.cases} not searched)"
        rows.append(f"  {name:<8} {_num(s.worst_turns):>11} {_num(s.worst_coin):>10} "
                    f"{_num(s.worst_carry):>11} {_num(s.slack_turns):>11} "
                    f"{_num(s.slack_coin):>10} {_num(s.slack_carry):>11}  {_dist(s)}{extra}")
    return rows


def format_text(report: GateReport) -> str:
    """The table printed by ``python -m feasibility``."""
    w = report.world
    lines = [f"feasibility gate (RULES §18): {printable(report.world_name)}; {report.turns} turns "
             f"(plans must fit in {report.allowed}), start coin {w.start_coin}, "
             f"carry limit {w.carry_limit}"]
    srcs = []
    for g, s in report.sources.items():
        srcs.append(f"{w.goods[g].name} -" if s is None else
                    f"{w.goods[g].name} {w.keepers[s.keeper].name} @ {w.rooms[s.room].name} "
                    f"{s.cost}")
    lines.append("greedy sources (2 units at opening stock): " + ", ".join(srcs))
    lines.append(f"suppliers ({MIN_SUPPLIERS} or more a commission good): " + ", ".join(
        f"{w.goods[g].name} {len(suppliers(w, g))}" for g in w.quest_items))
    short = report.supply_problems
    lines += [f"  {why}" for why in short.values()]

    if report.seeds is not None:
        a, b = report.seeds
        g = report.summary("seeded", "greedy")
        o = report.summary("seeded", "optimal")
        lines.append(f"seeded: seeds {a}..{b} x 6 seats = {g.cases} seat-seeds")
        lines += _oracle_rows(g, o)
        if g.worst_turns_case is not None:
            worst = next(x for x in report.seeded if x.case == g.worst_turns_case)
            assert worst.greedy is not None
            lines.append(f"  worst greedy plan: {describe_case(w, g.worst_turns_case)}, "
                         f"{worst.greedy.turns} turns: {worst.greedy.route(w)}")
        if g.worst_coin_case is not None:
            lines.append(f"  worst greedy cost: {g.worst_coin} "
                         f"({pair_name(w, g.worst_coin_case.goods)})")
        names = pair_names(w, g.pair_coin)
        lines.append("  greedy pair costs: " + ", ".join(f"{names[k]} {v}"
                                                          for k, v in g.pair_coin.items()))

    if report.exhaustive:
        g = report.summary("exhaustive", "greedy")
        o = report.summary("exhaustive", "optimal")
        n_pairs = g.cases // w.n_rooms if w.n_rooms else 0
        lines.append(f"exhaustive: {w.n_rooms} start rooms x {n_pairs} ordered pairs = "
                     f"{g.cases} cases")
        lines += _oracle_rows(g, o)
        pairs = pair_names(w, sorted({*g.pair_coin, *o.pair_coin}))
        width = max([14, *map(len, pairs.values())])
        lines.append(f"  {'pair':<{width}} {'greedy turns/coin':>18} {'optimal turns/coin':>19}"
                     "   (worst over start rooms)")
        for pair, name in pairs.items():
            gt = f"{_num(g.pair_turns.get(pair))}/{_num(g.pair_coin.get(pair))}"
            ot = f"{_num(o.pair_turns.get(pair))}/{_num(o.pair_coin.get(pair))}"
            lines.append(f"  {name:<{width}} {gt:>18} {ot:>19}")

    if report.unsearched:
        lines.append(f"optimal search: stopped at its {report.search_steps:,} steps with "
                     f"{report.unsearched} of {report.cases} "
                     "cases not searched (--search-steps N searches further; the verdict is "
                     "the greedy plans' and stands)")
    shown: list = []
    failed = 0
    for o in report.iter_failures():  # counted, and the first few kept: there may be millions
        failed += 1
        if len(shown) < SHOWN_FAILURES:
            shown.append(o)
    thin = (f"{len(short)} commission good{'s' if len(short) > 1 else ''} with fewer than "
            f"{MIN_SUPPLIERS} suppliers ({', '.join(w.goods[g].name for g in short)})")
    if not failed:
        lines.append("failures: none")
        lines.append(f"FAIL: every plan fits, but {thin}" if short else
                     "PASS: every plan fits")
    else:
        more = f", first {len(shown)} shown (--json lists all)" if failed > len(shown) else ""
        lines.append(f"failures: {failed}{more}")
        lines += [f"  {describe_failure(report, o)}" for o in shown]
        lines.append(f"FAIL: {failed} of {report.cases} plans do not fit"
                     + (f"; {thin}" if short else ""))
    return "\n".join(lines)
