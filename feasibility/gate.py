"""The feasibility gate: every seat, alone, must have a plan that finishes both commissions
(RULES §18).

Two sets of cases are checked against one world and one turn count:

* **seeded** - the original enforcement test: for each seed (default 0..199) the setup draw of
  RULES §4 gives each of the 6 seats a starting room and two commission goods;
* **exhaustive** - every starting room x every ordered pair of distinct commission goods, so a
  variant town cannot pass only because the seeds happened not to draw its bad corner.

For each case the greedy plan of RULES §18 must fit in ``turns - 2`` turns and in the starting
coin (and, for variant towns, the four units it carries at once must fit the carry limit).  The
optimal plan (:mod:`feasibility.optimal`) is reported beside it, with the slack of each, so a
failure says whether even the best plan fails or only the greedy route is too slow or too dear.

Both plans are one seat's alone, priced on the keepers' opening stock, as RULES §18 prices them:
the other five seats wait, and restock (RULES §6.2), goods handed to keepers (§9.4) and loose
goods are not counted.  Restock and hand-overs only add stock, so a plan that fits here fits
in the game for a seat alone; a plan that does not, or no plan, is "not provably feasible on
the opening stock", not "impossible": the seat may still finish in the game.  Nor does a pass
say that six seats at once all finish: they compete for the same shelves, and RULES §18's two
suppliers of every commission good are the only guard against that.

The verdict is the greedy plans' alone; the optimal plans only explain it.  Their search is
bounded by :data:`DEFAULT_SEARCH_STEPS` (``search_steps``): a town too large to search within
it gets its verdict all the same, and the cases left unsearched are counted and named as such.
"""

from __future__ import annotations

import itertools
import json
import os
import re
from array import array
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TextIO, overload

from sim.rules.errors import shown
from sim.rules.setup import draw_town, seed_in_range
from sim.rules.world import DEFAULT_TURNS, MAX_TURNS, MIN_TURNS, SEATS, STANDARD_TOWN, World

from .greedy import Source, cheapest_source, greedy_plan
from .optimal import OptimalSearch, OutOfEffort, SearchEffort
from .plan import Plan, allowance

DEFAULT_SEEDS = range(0, 200)
"""RULES §18: seeds 0..199 x 6 seats = 1,200 seat-seeds."""

DEFAULT_SEARCH_STEPS = 20_000_000
"""The optimal search's steps for a whole gate (:class:`feasibility.optimal.SearchEffort`), about
a minute of search at most.  The standard town's gate spends 6,351; a town of 64 rooms and 32
commission goods whose 8 keepers each sell every good spends 9.5 million, and one of 16 such
keepers would need 66 million (64 such keepers: 4 billion)."""


MIN_SUPPLIERS = 2
"""RULES §18: every commission good has at least 2 suppliers (keepers that trade it), so that no
one shop, its shelf emptied by the other seats, can close a commission for the whole table."""


def suppliers(world: World, good: int) -> tuple[int, ...]:
    """The keepers that trade ``good`` (RULES §18's suppliers), in id order."""
    return tuple(k.id for k in world.keepers if good in k.trade)


def supply_problem(world: World, good: int) -> str | None:
    """Why commission good ``good`` breaks RULES §18's ``MIN_SUPPLIERS``, or ``None``."""
    ids = suppliers(world, good)
    if len(ids) >= MIN_SUPPLIERS:
        return None
    names = ", ".join(world.keepers[k].name for k in ids)
    has = ("no supplier" if not ids else f"one supplier ({names})" if len(ids) == 1 else
           f"{len(ids)} suppliers ({names})")
    return (f"commission good {world.goods[good].name} has {has}; RULES §18 asks for "
            f"{MIN_SUPPLIERS} or more")


@dataclass(frozen=True, slots=True)
class Case:
    """One seat's situation: where it starts and what its two commissions ask for.

    ``seed``/``seat`` are set for seeded cases and ``None`` for exhaustive ones.
    """

    start: int
    goods: tuple[int, int]
    seed: int | None = None
    seat: int | None = None


@dataclass(frozen=True, slots=True)
class Outcome:
    """The verdict on one case: both plans and, if the greedy plan fails, why.

    ``optimal`` is ``None`` when no plan on the keepers' opening stock fits the purse (the game's
    restock and hand-overs may still make one), or when the search's steps ran out before this
    case (``searched`` false: the optimal plan is not known)."""

    case: Case
    greedy: Plan | None
    optimal: Plan | None
    problems: tuple[str, ...]  # empty when the greedy plan fits
    searched: bool = True

    @property
    def ok(self) -> bool:
        return not self.problems


def pair_name(world: World, goods: Iterable[int]) -> str:
    """``"rope+salt"``: the two goods in id order (the order of RULES §18's pair table)."""
    return "+".join(world.goods[g].name for g in sorted(goods))


_Checked = tuple[Plan | None, Plan | None, tuple[str, ...], bool]


class Checker:
    """Checks cases against one world and turn count; results are cached per (room, goods).

    ``search_steps`` bounds the optimal search over every case this checker sees (``None``:
    no bound)."""

    def __init__(self, world: World = STANDARD_TOWN, turns: int = DEFAULT_TURNS,
                 search_steps: int | None = DEFAULT_SEARCH_STEPS) -> None:
        self.world = world
        self.turns = turns
        self.allowed = allowance(turns)
        self.effort = SearchEffort(search_steps)
        self._searches: dict[tuple[int, ...], OptimalSearch] = {}
        self._cache: dict[tuple[int, tuple[int, int]], _Checked] = {}

    def check(self, case: Case) -> Outcome:
        key = (case.start, case.goods)
        if key not in self._cache:
            self._cache[key] = self._check(case.start, case.goods)
        greedy, optimal, problems, searched = self._cache[key]
        return Outcome(case, greedy, optimal, problems, searched)

    def check_all(self, cases: list[Case]) -> list[Outcome]:
        """``check`` of every case, each (room, goods) checked once (:meth:`settle`)."""
        self.settle((c.start, c.goods) for c in cases)
        return [self.check(c) for c in cases]

    def settle(self, keys: Iterable[tuple[int, tuple[int, int]]]) -> None:
        """Check every (room, goods) of ``keys`` not checked yet, one commission pair at a time:
        each pair's search (its memo) is dropped when the pair is done, so memory holds one
        search, not one per pair (a town of many commission goods has hundreds of pairs)."""
        todo = sorted(set(keys) - set(self._cache), key=lambda k: (sorted(k[1]), k))
        for key in todo:
            self._cache[key] = self._check(*key)
            if len(self._searches) > 1:  # a new pair began: forget the finished ones
                pair = tuple(sorted(key[1]))
                self._searches = {pair: self._searches[pair]}
        self._searches = {}

    def verdict(self, key: tuple[int, tuple[int, int]]) -> _Checked:
        """The checked plans of a (room, goods) :meth:`settle` has seen."""
        return self._cache[key]

    def _check(self, start: int, goods: tuple[int, int]) -> _Checked:
        w = self.world
        pair = tuple(sorted(goods))
        if pair not in self._searches:
            self._searches[pair] = OptimalSearch(w, (pair[0], pair[1]), effort=self.effort)
        try:
            optimal, searched = self._searches[pair].plan(start), True
        except OutOfEffort:
            optimal, searched = None, False
        g = greedy_plan(w, start, goods)
        if isinstance(g, str):
            return None, optimal, (g,), searched
        problems = []
        if g.turns > self.allowed:
            problems.append(f"needs {g.turns} turns > {self.allowed} allowed "
                            f"({self.turns} - 2)")
        if g.coin > w.start_coin:
            problems.append(f"needs {g.coin} coin > {w.start_coin} held")
        if g.carry > w.carry_limit:
            problems.append(f"carries {g.carry} units at once > carry limit {w.carry_limit}")
        return g, optimal, tuple(problems), searched

    def seeded_cases(self, seeds: Iterable[int]) -> list[Case]:
        """The setup draw (RULES §4) of each seed: one case per seat."""
        return list(self.seeded(seeds).cases())

    def seeded(self, seeds: Iterable[int]) -> SeededOutcomes:
        """The setup draw (RULES §4) of each seed, one case per seat, held compactly; their
        outcomes can be read once :meth:`settle` has checked ``.keys``."""
        out = SeededOutcomes(self)
        for seed in seeds:
            starts, commissions, _floor = draw_town(seed, self.world)
            out.add(seed, [(starts[seat], (commissions[seat][0], commissions[seat][1]))
                           for seat in range(SEATS)])
        return out


    def exhaustive_cases(self) -> list[Case]:
        """Every starting room x every ordered pair of distinct commission goods."""
        q = self.world.quest_items
        return [Case(r, (a, b)) for r in range(self.world.n_rooms) for a in q for b in q
                if a != b]


class SeededOutcomes(Sequence[Outcome]):
    """The seeded cases' outcomes: each seed once, a (room, goods) number per case (its seat is
    its place among the seed's six), and the checker's verdict per (room, goods), an
    :class:`Outcome` made when one is read.  Seeds share their few (room, goods): a million
    seeds (six million cases) take about 32 MB here where objects took over a GB.  Reads as a
    list; ``+`` with a list gives a list."""

    __slots__ = ("_checker", "_seeds", "_keys", "keys", "_index")

    def __init__(self, checker: Checker) -> None:
        self._checker = checker
        self._seeds = array("q")  # one a seed: its seats' cases follow in seat order
        self._keys = array("i")   # one a case: the number of its (room, goods) in keys
        self.keys: list[tuple[int, tuple[int, int]]] = []  # each (room, goods) once
        self._index: dict[tuple[int, tuple[int, int]], int] = {}

    def add(self, seed: int, keys: Sequence[tuple[int, tuple[int, int]]]) -> None:
        """A seed's cases: each seat's (room, goods), in seat order."""
        assert len(keys) == SEATS
        self._seeds.append(seed)
        for key in keys:
            n = self._index.get(key)
            if n is None:
                n = self._index[key] = len(self.keys)
                self.keys.append(key)
            self._keys.append(n)

    def case(self, i: int) -> Case:
        start, goods = self.keys[self._keys[i]]
        return Case(start, goods, self._seeds[i // SEATS], i % SEATS)

    def cases(self) -> Iterator[Case]:
        return (self.case(i) for i in range(len(self)))

    def __len__(self) -> int:
        return len(self._keys)

    @overload
    def __getitem__(self, i: int) -> Outcome: ...
    @overload
    def __getitem__(self, i: slice) -> list[Outcome]: ...

    def __getitem__(self, i: int | slice) -> Outcome | list[Outcome]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError("seeded outcome index out of range")
        return Outcome(self.case(i), *self._checker.verdict(self.keys[self._keys[i]]))

    def __iter__(self) -> Iterator[Outcome]:
        return (self[i] for i in range(len(self)))

    def __add__(self, other: object) -> list[Outcome]:
        if not isinstance(other, (list, SeededOutcomes)):
            return NotImplemented
        return [*self, *other]

    def __radd__(self, other: object) -> list[Outcome]:
        if not isinstance(other, list):
            return NotImplemented
        return [*other, *self]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (list, SeededOutcomes)):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # equal to a list, so unhashable as one

    def __repr__(self) -> str:
        return f"<{len(self)} seeded outcomes>"


@dataclass
class Summary:
    """Figures over a set of outcomes, for one oracle's plans (greedy or optimal)."""

    cases: int = 0
    without_plan: int = 0
    unsearched: int = 0  # optimal only: cases the search's steps did not reach
    distribution: dict[int, int] = field(default_factory=dict)
    worst_turns: int | None = None
    worst_turns_case: Case | None = None
    worst_coin: int | None = None
    worst_coin_case: Case | None = None
    worst_carry: int | None = None  # the most units a plan holds at once
    # worst coin and turns per pair, keyed by the pair's good ids in order (a name may hold "+")
    pair_coin: dict[tuple[int, int], int] = field(default_factory=dict)
    pair_turns: dict[tuple[int, int], int] = field(default_factory=dict)
    slack_turns: int | None = None
    slack_coin: int | None = None
    slack_carry: int | None = None  # the carry limit less worst_carry

    @classmethod
    def of(cls, world: World, allowed: int, outcomes: list[Outcome], oracle: str) -> Summary:
        s = cls(cases=len(outcomes))
        dist: Counter[int] = Counter()
        for o in outcomes:
            p = o.greedy if oracle == "greedy" else o.optimal
            if oracle == "optimal" and not o.searched:
                s.unsearched += 1
                continue
            if p is None:
                s.without_plan += 1
                continue
            dist[p.turns] += 1
            if s.worst_turns is None or p.turns > s.worst_turns:
                s.worst_turns, s.worst_turns_case = p.turns, o.case
            if s.worst_coin is None or p.coin > s.worst_coin:
                s.worst_coin, s.worst_coin_case = p.coin, o.case
            s.worst_carry = max(s.worst_carry or 0, p.carry)
            a, b = sorted(o.case.goods)
            s.pair_coin[a, b] = max(s.pair_coin.get((a, b), p.coin), p.coin)
            s.pair_turns[a, b] = max(s.pair_turns.get((a, b), p.turns), p.turns)
        s.distribution = dict(sorted(dist.items()))
        s.pair_coin = dict(sorted(s.pair_coin.items()))
        s.pair_turns = {k: s.pair_turns[k] for k in s.pair_coin}
        if s.worst_turns is not None and s.worst_coin is not None:
            s.slack_turns = allowed - s.worst_turns
            s.slack_coin = world.start_coin - s.worst_coin
        if s.worst_carry is not None:
            s.slack_carry = world.carry_limit - s.worst_carry
        return s


@dataclass
class GateReport:
    """Everything the gate found; ``ok`` is the verdict (every greedy plan fits, each seat's
    alone on the keepers' opening stock, and every commission good has 2 suppliers).

    ``world_name`` heads the text report (``"standard town"``, ``"world lean.toml"``);
    ``world_file`` is the world file's path as given (``--world``), ``None`` for a town read
    from no file: it is the JSON's ``world``."""

    world: World
    world_name: str
    turns: int
    seeds: tuple[int, int] | None
    sources: dict[int, Source | None]
    seeded: Sequence[Outcome]  # a SeededOutcomes from run_gate: read it as a list
    exhaustive: list[Outcome]
    search_steps: int | None = DEFAULT_SEARCH_STEPS  # the optimal search's bound (None: none)
    search_used: int = 0                             # steps it spent
    world_file: str | None = None                    # the path as given (None: no file)

    @property
    def allowed(self) -> int:
        return allowance(self.turns)

    @property
    def unsearched(self) -> int:
        """Cases whose optimal plan is not known: the search's steps ran out first."""
        return sum(not o.searched for o in self.outcomes())

    def outcomes(self) -> Iterator[Outcome]:
        """Every outcome, the seeded ones first."""
        return itertools.chain(self.seeded, self.exhaustive)

    @property
    def cases(self) -> int:
        return len(self.seeded) + len(self.exhaustive)

    @property
    def failures(self) -> list[Outcome]:
        return list(self.iter_failures())

    def iter_failures(self) -> Iterator[Outcome]:
        """The failing outcomes, one at a time (a failing town over many seeds has millions)."""
        return (o for o in self.outcomes() if not o.ok)

    @property
    def supply_problems(self) -> dict[int, str]:
        """Each commission good with too few suppliers (RULES §18), and why: it fails the town
        whatever its plans, as a second supplier is what lets a seat go elsewhere."""
        found = {g: supply_problem(self.world, g) for g in self.world.quest_items}
        return {g: why for g, why in found.items() if why is not None}

    @property
    def ok(self) -> bool:
        return not self.supply_problems and next(self.iter_failures(), None) is None

    def summary(self, which: str, oracle: str) -> Summary:
        outcomes = self.seeded if which == "seeded" else self.exhaustive
        return Summary.of(self.world, self.allowed, outcomes, oracle)

    def to_json(self) -> dict:
        """A JSON-ready dict of the whole report (``python -m feasibility --json``)."""
        return {**self._json_head(), "failures": [failure_json(self, o) for o in self.failures]}

    def write_json(self, out: TextIO) -> None:
        """Write ``json.dumps(self.to_json(), indent=1, ensure_ascii=False)`` to ``out``, one
        failure at a time: a failing gate over many seeds has hundreds of thousands, each with
        two plans, and their whole list would take gigabytes.  A lone surrogate (a byte of the
        path that is no UTF-8, as Python reads it) is written as its ``\\u`` escape: the same
        JSON string, in text any UTF-8 output can write."""
        head = _dumps({**self._json_head(), "failures": []})
        empty = "[]\n}"
        assert head.endswith(empty)
        first = True
        for o in self.iter_failures():
            text = _dumps(failure_json(self, o))
            out.write((head[:-len(empty)] + "[\n" if first else ",\n")
                      + "  " + text.replace("\n", "\n  "))
            first = False
        out.write(head if first else "\n ]\n}")

    def _json_head(self) -> dict:
        """Everything of :meth:`to_json` but the failures."""
        w = self.world
        return {
            "ok": self.ok,
            "world": self.world_file,
            "turns": self.turns,
            "allowed_turns": self.allowed,
            "start_coin": w.start_coin,
            "carry_limit": w.carry_limit,
            "seeds": list(self.seeds) if self.seeds else None,
            "sources": {w.goods[g].name: (s.to_json(w) if s else None)
                        for g, s in self.sources.items()},
            "suppliers": {w.goods[g].name: [w.keepers[k].name for k in suppliers(w, g)]
                          for g in w.quest_items},
            "supply_failures": [{"good": w.goods[g].name, "suppliers": [
                w.keepers[k].name for k in suppliers(w, g)], "reason": why}
                                for g, why in self.supply_problems.items()],
            "seeded": {o: _summary_json(w, self.summary("seeded", o))
                       for o in ("greedy", "optimal")},
            "exhaustive": {o: _summary_json(w, self.summary("exhaustive", o))
                           for o in ("greedy", "optimal")},
            "search_steps": {"limit": self.search_steps, "used": self.search_used,
                             "unsearched_cases": self.unsearched},
        }


_SURROGATE = re.compile("[\ud800-\udfff]")


def _dumps(value: object) -> str:
    """``json.dumps(value, indent=1, ensure_ascii=False)`` with each lone surrogate escaped."""
    return _SURROGATE.sub(lambda m: f"\\u{ord(m[0]):04x}",
                          json.dumps(value, indent=1, ensure_ascii=False))


def _case_json(world: World, case: Case | None) -> dict | None:
    if case is None:
        return None
    return {"seed": case.seed, "seat": case.seat, "start": world.rooms[case.start].name,
            "goods": [world.goods[g].name for g in case.goods]}


def pair_names(world: World, pairs: Iterable[tuple[int, int]]) -> dict[tuple[int, int], str]:
    """Each pair's name (:func:`pair_name`), unique among ``pairs``: two pairs whose names read
    alike (goods ``a+b`` and ``c`` against ``a`` and ``b+c``) each add the goods' ids,
    ``"a+b+c (ids 0,2)"``, so that no JSON key or table row stands for two pairs."""
    names = {pair: pair_name(world, pair) for pair in pairs}
    alike = Counter(names.values())
    return {pair: name if alike[name] == 1 else f"{name} (ids {','.join(map(str, sorted(pair)))})"
            for pair, name in names.items()}


def _by_pair_name(world: World, figures: dict[tuple[int, int], int]) -> dict[str, int]:
    """A pair's figures keyed by its name (``"rope+salt"``), as JSON keys must be strings."""
    names = pair_names(world, figures)
    return {names[pair]: v for pair, v in figures.items()}


def _summary_json(world: World, s: Summary) -> dict:
    return {"cases": s.cases, "without_plan": s.without_plan, "unsearched": s.unsearched,
            "distribution": {str(k): v for k, v in s.distribution.items()},
            "worst_turns": s.worst_turns, "worst_turns_case": _case_json(world, s.worst_turns_case),
            "worst_coin": s.worst_coin, "worst_coin_case": _case_json(world, s.worst_coin_case),
            "pair_coin": _by_pair_name(world, s.pair_coin),
            "pair_turns": _by_pair_name(world, s.pair_turns),
            "worst_carry": s.worst_carry,
            "slack_turns": s.slack_turns, "slack_coin": s.slack_coin, "slack_carry": s.slack_carry}


def failure_json(report: GateReport, o: Outcome) -> dict:
    """One failure: which seat and seed (``null`` for an exhaustive case), the goods, turns
    needed vs allowed, coin needed vs held, units carried at once vs the carry limit, the
    reason, and both plans.

    ``optimal`` ``null`` (searched) and ``optimal_fits`` false say that no plan on the opening
    stock fits, not that the game cannot be finished (the module docstring)."""
    w = report.world
    d = _case_json(w, o.case) or {}
    d.update(
        scope="seeded" if o.case.seed is not None else "exhaustive",
        turns_needed=o.greedy.turns if o.greedy else None,
        turns_allowed=report.allowed,
        coin_needed=o.greedy.coin if o.greedy else None,
        coin_held=w.start_coin,
        carry_needed=o.greedy.carry if o.greedy else None,
        carry_limit=w.carry_limit,
        reason="; ".join(o.problems),
        greedy=o.greedy.to_json(w) if o.greedy else None,
        optimal=o.optimal.to_json(w) if o.optimal else None,
        optimal_searched=o.searched,
        optimal_fits=(bool(o.optimal and o.optimal.turns <= report.allowed) if o.searched
                      else None),
    )
    return d


def run_gate(world: World = STANDARD_TOWN, turns: int = DEFAULT_TURNS,
             seeds: range | None = DEFAULT_SEEDS, exhaustive: bool = True,
             world_name: str | None = None,
             search_steps: int | None = DEFAULT_SEARCH_STEPS,
             world_file: str | os.PathLike[str] | None = None) -> GateReport:
    """Run the gate of RULES §18 (seeded cases, and the exhaustive ones unless disabled).

    Each case is one seat alone on the keepers' opening stock (the module docstring says what
    a verdict proves).

    ``world_file`` is the path ``world`` was read from, as given (the JSON's ``world``;
    ``None``: no file).  ``world_name`` heads the text report; by default ``"world FILE"``,
    else ``"standard town"``, or ``"variant town"`` for another town built in Python.

    ``search_steps`` bounds the optimal plans' search (``None``: no bound; 0: none searched);
    the verdict, the greedy plans', does not depend on it.

    ``ValueError`` for what the command line cannot ask: a world that is no ``World`` (a
    path: read it with ``sim.load_world``), turns out of the game's range, seeds that are not
    a range of step 1 (the report says "seeds A..B") or that no game takes, or nothing to
    check (a PASS over no case would be no verdict)."""
    if not isinstance(world, World):
        raise ValueError(f"world must be a World; got {shown(world)} (a world file is read "
                         "with sim.load_world(path)[0])")
    if world_file is not None and not (isinstance(world_file, (str, os.PathLike))
                                       and isinstance(os.fspath(world_file), str)):
        raise ValueError("world_file must be a path (str or os.PathLike of str) or None; got "
                         f"{shown(world_file)}")
    if isinstance(turns, bool) or not isinstance(turns, int) or not (
            MIN_TURNS <= turns <= MAX_TURNS):
        raise ValueError(f"turns must be an int {MIN_TURNS}..{MAX_TURNS}; got {turns!r:.40}")
    if seeds is not None and not (isinstance(seeds, range) and seeds.step == 1):
        raise ValueError(f"seeds must be a range of step 1 (or None); got {seeds!r:.60}")
    for seed in (seeds[0], seeds[-1]) if seeds else ():  # the ends bound the whole range
        if not seed_in_range(seed):
            raise ValueError(f"seeds: seed {shown(seed)} is out of range: seed * 7919 + 17 must "
                             "fit in a signed 64-bit integer")
    if not seeds and not exhaustive:
        raise ValueError("nothing to check: give seeds, or leave exhaustive on")
    checker = Checker(world, turns, search_steps)
    seeded = checker.seeded(seeds or ())
    every_cases = checker.exhaustive_cases() if exhaustive else []
    checker.settle([*seeded.keys, *((c.start, c.goods) for c in every_cases)])
    every = checker.check_all(every_cases)
    sources = {g: cheapest_source(world, g) for g in world.quest_items}
    span = (seeds.start, seeds.stop - 1) if seeds else None
    path = None if world_file is None else os.fspath(world_file)
    if world_name is None:
        world_name = (f"world {path}" if path is not None else
                      "standard town" if world == STANDARD_TOWN else "variant town")
    return GateReport(world, world_name, turns, span, sources, seeded, every, search_steps,
                      checker.effort.used, path)
