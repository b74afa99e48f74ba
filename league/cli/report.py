"""``guild report DIR [--out FILE]``: one static HTML page per league, and a viewer page per
replay beside it.

The page (``DIR/report.html`` by default; ``league.cli.report_html`` draws it) shows the
ladder, each policy's score distribution, a head-to-head table, the results by seat position
and every episode, linked to its viewer page (``guild view``'s page, rewritten only when its
replay or the viewer changed). Every table is of ``results.jsonl``: the ladder too is computed
from it (``league.core.ladder.build``), so a page can be made at any time, of a league that is
still playing or was stopped before it wrote ``ladder.json``, and never shows a ladder that
its own tables contradict. A ``ladder.json`` that is not the ladder of the results is said in
one line (run ``guild verify``), and so are more episodes than ``league.json`` plans, a line
that holds an episode again (the tables count every line) and a line whose seed, lineup or
results are not what its replay re-derives to (each viewer page's stamp says what that is:
``html_viewer.stamped_facts``); the report is a view, not a check, and goes on.

The viewer pages go to ``DIR/view/`` for the league's own page, and beside any other page
(``--out site/a.html``: ``site/a-view/``), so a league that cannot be written to (a published
one) can be reported from elsewhere and two leagues' pages in one folder keep their own.
Links are relative, so the page and its viewer pages can be moved together; nothing is fetched.

A league folder is input from anyone: every file is read through a size cap (a regular file
only, checked before it is opened: ``league.core.files.open_regular``), ``results.jsonl``
one capped line at a time, twice (the tallies, then the episodes table, written straight to
the page). Memory grows with the number of seats, not with the file: what the ladder needs of
a line is kept in flat arrays (:class:`LadderRows`; a seat's faults as totals of the league's
kinds and of any other), and the ladder is computed policy by policy over each one's lines, so
its time grows with the seats, not with the policies times the lines; ``league.json`` lists
at most ``store.MAX_POLICIES`` policies. A replay is read once a run however many lines name
it, never through a link. Anything wrong is a ``LeagueError``: one line, exit 2. The page never
replaces a file it did not write (``--out results.jsonl``), nor a viewer page a file that is
not one, and every string from the folder is escaped (``report_html.esc``).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
from array import array
from bisect import bisect_left
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from league.cli import report_html
from league.cli.html_viewer import differing_facts, stamped_facts, write_view
from league.core import ladder as ladders
from league.core import verify_claims as claims
from league.core.atomic import replacing
from league.core.errors import LeagueError
from league.core.files import (
    check_outside,
    check_replaceable,
    open_regular,
    read_regular,
    resolved,
)
from league.core.lineups import MAX_NAME_CHARS
from league.core.store import (
    LADDER,
    MANIFEST,
    MAX_EPISODES,
    MAX_RESULTS_BYTES,
    MAX_SCORE,  # noqa: F401 - the bound the page's numbers are checked against
    REPLAYS,
    RESULTS,
    check_policy_count,
    is_count,
    is_number,
    row_problem,
)
from sim.rules.world import SEATS

REPORT = "report.html"
VIEWS = "view"  # DIR/view/<id>.html: the viewer page of each replay, for DIR/report.html
VIEWS_SUFFIX = "-view"  # a page elsewhere, site/a.html: its viewer pages in site/a-view/
MAX_JSON_BYTES = 64 << 20  # league.json, ladder.json: kilobytes in any real league
MAX_LINE_BYTES = 1 << 20  # a results line is under a kilobyte, fault notes and all
PAGE_MARK = b"Written by `guild report`"  # in the head of every page the report writes
BY_SEAT = ("questPoints", "delivered", "robberies", "robbed", "fallbacks")  # counts the
# ladder adds up seat by seat
# a seat's faults as the ladder adds them up: the league's kinds, then any other kind's
FAULT_BUCKETS = (*ladders.FAULT_ORDER, "other")
_T = TypeVar("_T")


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``guild report`` to the ``guild`` subcommands."""
    p = sub.add_parser(
        "report", help="write a league's HTML page: ladder, score distributions, "
        "head-to-head, seat positions, every replay",
        description="Write one static HTML page for a league, at any time (no network needed: "
        "inline CSS and SVG, no script): the ladder of results.jsonl with its intervals, "
        "faults and fallbacks; each policy's score distribution; head-to-head mean score "
        "differences; mean scores by seat; and every episode, linked to its replay's viewer "
        f"page, written to DIR/{VIEWS}/, or beside an --out page (FILE{VIEWS_SUFFIX}/; pages "
        "you wrote that are up to date are kept: each is stamped with a key kept in your "
        "config folder, view-stamp.key beside the league signing key, and where none can be "
        "kept every page is written again). Links are relative: the pages can be moved "
        "together.")
    p.add_argument("dir", metavar="DIR", help="a league's --out directory")
    p.add_argument("--out", metavar="FILE", help=f"where to write the page (DIR/{REPORT}); "
                   "an existing file is replaced only if it is such a page")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Handler of ``guild report``; a bad folder raises ``LeagueError`` (one line, exit 2)."""
    done = build_report(args.dir, args.out)
    for warning in done.warnings:  # the page says them too
        print(f"guild report: warning: {warning}", file=sys.stderr)
    n = done.episodes
    episodes = f"{n} episode{'' if n == 1 else 's'}"
    if done.unfinished:
        episodes = f"{n} of {done.planned} episodes: the league is unfinished"
    print(f"report: {_shown(done.page)} ({episodes}; viewer pages in "
          f"{_shown(done.views)}: {done.written} written, {n - done.written} "
          "already up to date)")
    return 0


def _shown(path: Path) -> str:
    """A path as printable text: a file name that is not UTF-8 must not stop the run at its
    last line (any locale's stdout takes it)."""
    return repr(os.fsencode(path))[2:-1] if not str(path).isprintable() else str(path)


def write_report(out: str | Path, page: str | Path | None = None) -> Path:
    """Write the report of the league in ``out`` (to ``page``, default ``out/report.html``)
    and its replays' viewer pages; the page's path."""
    return build_report(out, page).page


@dataclass(frozen=True)
class Built:
    """What :func:`build_report` wrote."""

    page: Path
    views: Path
    episodes: int
    written: int  # viewer pages written (the others were up to date)
    planned: int | None = None  # the episodes league.json plans, when it says
    warnings: tuple[str, ...] = ()  # what the page warns of, one line each

    @property
    def unfinished(self) -> bool:
        """Fewer episodes than league.json plans (a run was stopped, or is still playing)."""
        return report_html.unfinished(self.episodes, self.planned)


def build_report(out: str | Path, page: str | Path | None = None) -> Built:
    """Read the league in ``out``, write the viewer pages and the report page."""
    for given, what in ((out, "DIR"), (page, "--out")):  # Path("") is the current folder
        if given is not None and not os.fspath(given):
            raise LeagueError(f"{what} is empty; give a path")
    root = Path(out)
    if not root.is_dir():
        raise LeagueError(f"{root} is not a directory")
    if not (root / MANIFEST).exists():
        raise LeagueError(f"{root} has no {MANIFEST}; is it a league's --out directory?")
    target = Path(page) if page is not None else root / REPORT
    _check_target(target, root)
    league = read_league(root)
    views = views_of(root, target)
    if views.is_symlink():  # a folder from elsewhere must not send the pages elsewhere
        raise LeagueError(f"{views} is a symbolic link; the viewer pages go in a folder of "
                          "their own")
    written, warnings = _write_page(league, target, views)
    return Built(target, views, league.tally.episodes, written, league.planned, warnings)


def views_of(root: Path, target: Path) -> Path:
    """The folder of the viewer pages of a page at ``target``: ``DIR/view/`` for the league's
    own page, else beside the page and named after it, so nothing is written in a league
    that is only read (it may be read-only, or someone else's) and two leagues' pages in one
    folder do not overwrite each other's viewer pages (their ids are the same)."""
    if resolved(target) == resolved(root / REPORT):
        return root / VIEWS
    return target.parent / f"{target.stem}{VIEWS_SUFFIX}"


def _check_target(target: Path, root: Path) -> None:
    """``LeagueError`` unless writing the page to ``target`` loses nothing: it must be new or
    a page this command wrote (``--out results.jsonl`` would replace the league's results),
    and not in the folders of replays and viewer pages (a viewer page would replace it)."""
    if str(target) == "-":
        raise LeagueError("--out -: the page links its viewer pages by relative paths, so it "
                          "is written to a file; give its path")
    if "\0" in str(target):
        raise LeagueError("--out: a path cannot hold a NUL character")
    check_outside(target, (root / VIEWS, root / REPLAYS), "--out")
    check_replaceable(target, lambda head: PAGE_MARK in head, "a page guild report wrote",
                      "--out")


# --- reading ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Episode:
    """What the report needs of one results line."""

    id: str
    seed: int | None
    lineup: tuple[str, ...]
    scores: tuple[float, ...]
    fallbacks: int
    faults: int


@dataclass
class Tally:
    """Per policy: its seat scores, its scores by seat position, its head-to-head sums.

    Head-to-head compares two policies within the episodes where both sat: per episode the
    mean score of the row policy's seats minus that of the column policy's, averaged over
    those episodes.
    """

    order: list[str]
    episodes: int = 0
    scores: dict[str, array] = field(default_factory=dict)
    seat_sum: dict[tuple[str, int], float] = field(default_factory=dict)
    seat_n: dict[tuple[str, int], int] = field(default_factory=dict)
    pair_sum: dict[tuple[str, str], float] = field(default_factory=dict)
    pair_n: dict[tuple[str, str], int] = field(default_factory=dict)
    _listed: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        self._listed.update(self.order)

    def add(self, ep: Episode) -> None:
        """Count one episode in."""
        self.episodes += 1
        mine: dict[str, list[float]] = {}
        for seat, (name, score) in enumerate(zip(ep.lineup, ep.scores)):
            if name not in self.scores:
                self.scores[name] = array("d")
                if name not in self._listed:  # a set: the order may list many policies
                    self._listed.add(name)
                    self.order.append(name)
            self.scores[name].append(score)
            self.seat_sum[name, seat] = self.seat_sum.get((name, seat), 0.0) + score
            self.seat_n[name, seat] = self.seat_n.get((name, seat), 0) + 1
            mine.setdefault(name, []).append(score)
        means = {name: sum(s) / len(s) for name, s in mine.items()}
        for a, ma in means.items():
            for b, mb in means.items():
                if a != b:
                    self.pair_sum[a, b] = self.pair_sum.get((a, b), 0.0) + ma - mb
                    self.pair_n[a, b] = self.pair_n.get((a, b), 0) + 1

    def head_to_head(self, a: str, b: str) -> tuple[float, int] | None:
        """``a``'s mean score difference with ``b`` and over how many episodes (None: never
        met)."""
        n = self.pair_n.get((a, b), 0)
        return (self.pair_sum[a, b] / n, n) if n else None

    def at_seat(self, name: str, seat: int) -> tuple[float, int] | None:
        """``name``'s mean score in ``seat`` and how many times it sat there (None: never)."""
        n = self.seat_n.get((name, seat), 0)
        return (self.seat_sum[name, seat] / n, n) if n else None


@dataclass(frozen=True)
class League:
    """A league folder as the report reads it."""

    root: Path
    manifest: dict
    ladder: dict  # of results.jsonl (as ladder.json has it only when the lines cannot say)
    tally: Tally
    planned: int | None = None  # the episodes league.json plans, when it says
    warnings: tuple[str, ...] = ()


def read_league(root: Path) -> League:
    """The league in ``root`` with its results tallied and ranked; ``LeagueError`` for a bad
    folder."""
    manifest = _manifest(root / MANIFEST)
    claimed, unread = None, None  # ladder.json, or why it cannot be read: a view goes on
    if os.path.lexists(root / LADDER):
        try:
            claimed = _ladder(root / LADDER, len(manifest["policies"]))
        except LeagueError as e:
            unread = str(e)
    tally = Tally(list(manifest["policies"]))
    rows: LadderRows | None = LadderRows()
    lacking = None  # why the ladder cannot be computed: a line lacks what it needs, say
    ids = _Seen()
    for n, row, ep in _lines(root / RESULTS, frozenset(manifest["policies"])):
        tally.add(ep)
        ids.add(n, ep.id)
        if rows is not None:
            problem = LadderRows.problem(row)
            if problem is None:
                rows.add(row)
            else:  # no ladder of these lines: let the memory go
                rows, lacking = None, f"{RESULTS} line {n} {problem}"
    odd = next((p for p in manifest["policies"] if not _unicode(p)), None)
    if rows is not None and odd is not None:  # its bootstrap seed hashes each name's UTF-8
        rows = None
        lacking = f"{MANIFEST} names a policy that is not Unicode text ({_quoted(odd)})"
    warnings = []
    if rows is not None:
        ladder = ladder_of(rows, manifest, kind=ladders.kind_of(claimed))  # as it was written
        if claimed is not None and "ranking" not in claimed and not rows.fallback_play:
            ladder = claims.before_ranking(ladder)  # ranked, as it was, before the rule
        differs = _mismatch(claimed, ladder, rows, manifest) if claimed is not None else None
        if differs or unread:
            warnings.append((f"{LADDER} does not match {RESULTS} ({differs})" if differs else
                             unread) + f"; the page shows the ladder of {RESULTS}: run guild "
                            f"verify {_shown(root)}")
    else:
        ladder = claimed if claimed is not None else {"policies": []}
        warnings.append(f"{lacking}, so no ladder can be computed; "
                        + (f"the page shows {LADDER} as it is, unchecked" if claimed is not None
                           else f"the page shows none ({unread})" if unread
                           else "the page shows none"))
    ranked = [e["policy"] for e in ladder["policies"]]
    tally.order[:] = dict.fromkeys(ranked + tally.order)  # ladder order, then the rest
    planned = manifest.get("episodes")
    planned = planned if is_count(planned) else None
    warnings += _count_warnings(tally.episodes, planned, ids, root)
    return League(root, manifest, ladder, tally, planned, tuple(warnings))


class _Seen:
    """Which episode ids the lines hold, so that a line holding one again shows (and its
    replay is read once): a league's ids (``e000012``) a bit each, the memory of a league's
    largest count, not of the file; any other id (no league's: guild verify names it) in a
    set."""

    def __init__(self) -> None:
        self.bits = bytearray()
        self.others: set[str] = set()
        self.first: tuple[int, str] | None = None  # the first line that repeats an episode
        self.repeats = 0  # lines that repeat an episode

    def add(self, n: int, rid: str) -> bool:
        """Line ``n`` holds episode ``rid``; whether an earlier line held it."""
        again = self._again(rid)
        if again:
            self.repeats += 1
            self.first = self.first or (n, rid)
        return again

    def _again(self, rid: str) -> bool:
        index = int(rid[1:]) if rid[:1] == "e" and rid[1:].isdigit() and rid[1:].isascii() else -1
        if not 0 <= index < MAX_EPISODES or rid != f"e{index:06d}":
            again = rid in self.others
            self.others.add(rid)
            return again
        byte, bit = divmod(index, 8)
        if byte >= len(self.bits):
            self.bits.extend(bytes(max(byte + 1 - len(self.bits), len(self.bits))))
        again = bool(self.bits[byte] >> bit & 1)
        self.bits[byte] |= 1 << bit
        return again


def _count_warnings(episodes: int, planned: int | None, ids: _Seen, root: Path) -> list[str]:
    """What the page says when the results hold more episodes than ``league.json`` plans or
    an episode twice: its tables count every line as it is, so a repeated line weighs twice."""
    out = []
    check = f"the page counts every line as it is: run guild verify {_shown(root)}"
    if planned is not None and episodes > planned:
        out.append(f"{RESULTS} holds {episodes} episodes, more than the {planned} {MANIFEST} "
                   f"plans; {check}")
    if ids.first is not None:
        n, rid = ids.first
        more = f" ({ids.repeats} lines repeat an episode)" if ids.repeats > 1 else ""
        out.append(f"{RESULTS} line {n} holds episode {rid} again{more}; {check}")
    return out


def _unicode(text: str) -> bool:
    """Whether ``text`` is Unicode text (JSON's ``"\\ud800"`` is not: a lone surrogate)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


class LadderRows(Sequence[dict]):
    """The lines of ``results.jsonl`` as :func:`league.core.ladder.build` reads them, kept in
    flat arrays: a few dozen numbers a line, where a parsed line takes kilobytes (a long
    league's report stays small). A line is made a dict again each time it is read."""

    _NO_FAULTS = ({},) * SEATS  # read only: the ladder adds them up

    def __init__(self) -> None:
        self.group = array("q")
        self.turns = array("q")
        self.lineup = array("I")  # SEATS policy numbers a line: indexes of ``names``
        self.scores = array("d")
        self.by_seat = {key: array("q") for key in BY_SEAT}
        # only the lines with a fault, in order, and their seats' FAULT_BUCKETS totals: a
        # line's own fault kinds are not kept (a line may hold thousands of them)
        self.fault_lines = array("Q")
        self.fault_counts = array("q")
        self.names: list[str] = []
        self.number: dict[str, int] = {}
        self.fallback_play = False  # some line has it: ranked by the rule (ladder_differences)
        self.lines_of: dict[str, array] = {}  # each policy's lines, in order

    @staticmethod
    def problem(row: dict) -> str | None:
        """What the ladder needs that a line (already :func:`row_problem`-checked) lacks."""
        for key, what in (("group", "rotation group"), ("turns", "number of turns")):
            if not is_count(row.get(key)):  # at most store.MAX_COUNT: an array("q") holds it
                return f"has no {what}"
        for key in BY_SEAT:
            v = row.get(key)
            if not (isinstance(v, list) and len(v) == SEATS and all(map(is_count, v))):
                return f"has no {key} by seat"
        if row.get("faults") is None:  # its shape, when it is there: row_problem
            return "has no faults by seat"
        return None

    def add(self, row: dict) -> None:
        """Keep a line that :meth:`problem` passed."""
        n = len(self.group)
        self.group.append(row["group"])
        self.turns.append(row["turns"])
        for name in row["lineup"]:
            if name not in self.number:
                self.number[name] = len(self.names)
                self.names.append(name)
                self.lines_of[name] = array("Q")
            lines = self.lines_of[name]
            if not lines or lines[-1] != n:
                lines.append(n)
            self.lineup.append(self.number[name])
        self.scores.extend(float(x) for x in row["scores"])
        for key, values in self.by_seat.items():
            values.extend(row[key])
        if any(row["faults"]):  # each seat's kinds are few, and sum to a count: row_problem
            self.fault_lines.append(n)
            for faults in row["faults"]:
                known = [faults.get(kind, 0) for kind in ladders.FAULT_ORDER]
                self.fault_counts.extend([*known, sum(faults.values()) - sum(known)])
        self.fallback_play = self.fallback_play or "fallbackPlay" in row

    def __len__(self) -> int:
        return len(self.group)

    def __getitem__(self, i: int) -> dict:  # type: ignore[override]  # no slices
        if not 0 <= i < len(self.group):
            raise IndexError(i)
        seats = slice(SEATS * i, SEATS * (i + 1))
        return {"group": self.group[i], "turns": self.turns[i],
                "lineup": [self.names[k] for k in self.lineup[seats]],
                "scores": list(self.scores[seats]),
                **{key: list(values[seats]) for key, values in self.by_seat.items()},
                "faults": self._faults(i)}

    def _faults(self, i: int) -> Sequence[dict]:
        """Line ``i``'s faults by seat, as totals by kind (:data:`FAULT_BUCKETS`)."""
        k = bisect_left(self.fault_lines, i)
        if k == len(self.fault_lines) or self.fault_lines[k] != i:
            return self._NO_FAULTS
        width = len(FAULT_BUCKETS)
        counts = self.fault_counts[k * SEATS * width:(k + 1) * SEATS * width]
        return [{kind: c for kind, c in zip(FAULT_BUCKETS, counts[s * width:(s + 1) * width])
                 if c} for s in range(SEATS)]


class _Some(Sequence[dict]):
    """The lines of ``rows`` numbered ``numbers``."""

    def __init__(self, rows: LadderRows, numbers: Sequence[int]) -> None:
        self.rows, self.numbers = rows, numbers

    def __len__(self) -> int:
        return len(self.numbers)

    def __getitem__(self, k: int) -> dict:  # type: ignore[override]  # no slices
        return self.rows[self.numbers[k]]


def ladder_of(rows: LadderRows, manifest: dict, first: int | None = None,
              kind: ladders.Kind = "t") -> dict:
    """The ladder of the first ``first`` lines (all by default) with ``kind``'s interval: what
    ``ladder.build`` gives (a mean to its last rounded digit), built policy by policy, each
    over its own lines: ``build`` reads every line for every policy, the square of a folder's
    many policies."""
    seed = ladders.bootstrap_seed(manifest.get("seed"), _commitments(manifest))
    n = len(rows) if first is None else min(first, len(rows))
    entries = []
    seatless = None  # the entry of a policy without a seat: one for all of them, but the name
    for name in manifest["policies"]:
        lines = rows.lines_of.get(name, array("Q"))
        mine = lines[:bisect_left(lines, n)]
        if mine or seatless is None:
            entry = ladders.build(_Some(rows, mine), [name], seed, kind)["policies"][0]
            seatless = seatless if mine else entry
            entries.append(entry)
        else:
            entries.append({**seatless, "policy": name})
    sizes = Counter(rows.group[:n])
    return {**ladders.build([], [], seed, kind), "episodes": n, "groups": len(sizes),
            "completeGroups": sum(1 for k in sizes.values() if k == SEATS),  # a rotation a seat
            "policies": ladders.ranked(entries, kind)}


def _commitments(manifest: dict) -> list[dict] | None:
    """A secret draw's commitments, if league.json holds them as a league writes them."""
    c = manifest.get("commitments")
    return c if isinstance(c, list) and c and isinstance(c[0], dict) else None


def _mismatch(claimed: dict, derived: dict, rows: LadderRows, manifest: dict) -> str | None:
    """How ``ladder.json`` first differs from the ladder of the results, as ``guild verify``
    compares them (None: it does not). One of fewer episodes than the results is held to the
    ladder of its first lines: an earlier run wrote it, and a run stopped since (or still
    playing) has not written its own."""
    k, n = claimed.get("episodes"), len(rows)
    if is_count(k) and k > n:
        return f"{LADDER} counts {k} episodes, {RESULTS} holds {n}"
    if is_count(k) and k < n:
        derived = ladder_of(rows, manifest, k, ladders.kind_of(claimed))
    diffs = claims.ladder_differences(claimed, derived, rows.fallback_play)
    return diffs[0] if diffs else None


def _json_file(path: Path, what: str) -> Any:
    raw = read_regular(path, MAX_JSON_BYTES, what)
    try:
        return json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise LeagueError(f"{path} is not UTF-8 text") from None
    except json.JSONDecodeError as e:
        raise LeagueError(f"{path} is not JSON (line {e.lineno} column {e.colno}: {e.msg})"
                          ) from None
    except (ValueError, RecursionError):
        raise LeagueError(f"{path} is not valid JSON (or is nested too deeply)") from None


def _manifest(path: Path) -> dict:
    data = _json_file(path, "league manifest")
    policies = data.get("policies") if isinstance(data, dict) else None
    check_policy_count(path, policies)  # each costs a ladder entry and a row of the page
    if not (isinstance(policies, list) and policies and all(isinstance(p, str) for p in policies)):
        raise LeagueError(f"{path} does not describe a league (no list of policies)")
    long = next((p for p in policies if len(p) > MAX_NAME_CHARS), None)
    if long is not None:
        raise LeagueError(f"{path} names a policy of {len(long):,} characters "
                          f"({_quoted(long)}); a policy is named in at most "
                          f"{MAX_NAME_CHARS:,}")
    return data


def _quoted(text: str, limit: int = 40) -> str:
    """``text`` cut and quoted for a one-line message: escapes show, none acts on the
    terminal."""
    return repr(text if len(text) <= limit else text[:limit] + "...")


def _ladder(path: Path, policies: int) -> dict:
    """``ladder.json``, each entry checked for what the page shows (when the lines cannot
    give the ladder) and the comparison reads; it ranks no more than ``policies``, those of
    ``league.json`` (each is a row of the page)."""
    data = _json_file(path, "ladder")
    entries = data.get("policies") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        raise LeagueError(f"{path} is not a ladder (no list of policies)")
    if len(entries) > policies:
        raise LeagueError(f"{path} ranks {len(entries):,} policies, more than the {policies:,} "
                          f"{MANIFEST} lists; not this league's ladder")
    for n, e in enumerate(entries, start=1):
        problem = _entry_problem(e)
        if problem:
            raise LeagueError(f"{path}: entry {n} {problem}")
    return data


def _entry_problem(e: object) -> str | None:
    if not isinstance(e, dict) or not isinstance(e.get("policy"), str):
        return "has no policy name"
    if not is_number(e.get("meanScore"), none=True):
        return "has a mean score that is not a number"
    ci = e.get("ci95")
    if ci is not None and not (isinstance(ci, list) and len(ci) == 2
                               and all(is_number(x) for x in ci)):
        return "has an interval that is not two numbers"
    for key in ("rank", "episodes", "seats", "faults", "fallbacks", "decisions"):
        if not is_count(e.get(key), none=True):
            return f"has a {key} that is not a count"
    if not isinstance(e.get("unranked"), (str, type(None))):
        return "has an unranked reason that is not text"
    return None


def episodes(path: Path, policies: frozenset[str]) -> Iterator[Episode]:
    """Each complete line of ``results.jsonl``, checked (see :func:`_lines`)."""
    return (ep for _, _, ep in _lines(path, policies))


def _lines(path: Path, policies: frozenset[str]) -> Iterator[tuple[int, dict, Episode]]:
    """Each complete line of ``results.jsonl``: its number, itself and what the page shows of
    it, checked (its lineup only of ``policies``, the league's). A torn last line (a run
    stopped mid-append) is left out, as the league itself leaves it; no file is no line yet
    (a league stopped before its first episode ended)."""
    if not os.path.lexists(path):
        return
    with open_regular(path, MAX_RESULTS_BYTES, "results file") as f:
        read = 0
        for n in itertools.count(1):
            line = _line(f, path, n)
            read += len(line)
            if not line.endswith(b"\n") or read > MAX_RESULTS_BYTES:
                return
            row = _row(line, path, n, policies)
            yield n, row, _episode(row)


def _line(f: Any, path: Path, n: int) -> bytes:
    try:
        line = f.readline(MAX_LINE_BYTES + 1)
    except OSError as e:
        raise LeagueError(f"{path}: cannot read it ({e.strerror or e})") from None
    if len(line) > MAX_LINE_BYTES:
        raise LeagueError(f"{path} line {n} is over {MAX_LINE_BYTES:,} bytes; not a results "
                          "line")
    return line


def _row(line: bytes, path: Path, n: int, policies: frozenset[str]) -> dict:
    try:
        row = json.loads(line)
    except (ValueError, RecursionError):
        raise LeagueError(f"{path} line {n} is not valid JSON") from None
    if not isinstance(row, dict):
        raise LeagueError(f"{path} line {n} is not a JSON object")
    problem = row_problem(row)
    if problem:
        raise LeagueError(f"{path} line {n} {problem}")
    stranger = next((p for p in row["lineup"] if p not in policies), None)
    if stranger is not None:  # a league seats only its own policies
        raise LeagueError(f"{path} line {n} seats {_quoted(stranger)}, a policy league.json "
                          "does not list")
    return row


def _episode(row: dict) -> Episode:
    return Episode(row["id"], row.get("seed"), tuple(row["lineup"]),
                   tuple(float(s) for s in row["scores"]),
                   sum(row.get("fallbacks") or ()),
                   sum(sum(d.values()) for d in row.get("faults") or ()))


# --- writing ---------------------------------------------------------------------------------
def _write_page(league: League, target: Path, views: Path) -> tuple[int, tuple[str, ...]]:
    """Write the viewer pages (a read of the results), then the page, its episodes table
    streamed from another read; how many viewer pages were written, and what the page warns
    of."""
    base = Path(os.path.relpath(views, target.parent if str(target.parent) else "."))
    name = league.root.resolve().name
    head, tail = report_html.frame(name)
    policies = frozenset(league.manifest["policies"])
    try:
        with replacing(target) as tmp, open(tmp, "w", encoding="utf-8") as f:
            _make(views)  # once the page's folder is known to take a file: it is beside it
            written, unlike = _write_views(league, views)
            warnings = (*league.warnings, *unlike)
            f.write(head)
            f.write(report_html.summary(name, league.manifest, league.ladder, league.tally,
                                        warnings=warnings, planned=league.planned))
            f.write(report_html.episodes_head())
            for ep in _first(episodes(league.root / RESULTS, policies), league.tally.episodes):
                f.write(report_html.episode_row(ep, (base / f"{ep.id}.html").as_posix()))
            f.write(report_html.episodes_tail())
            f.write(tail)
    except OSError as e:
        raise LeagueError(f"cannot write {target} ({e.strerror or e})") from None
    return written, warnings


def _write_views(league: League, views: Path) -> tuple[int, list[str]]:
    """Write each episode's viewer page, once however many lines hold it, and compare each
    line with what its replay re-derives to, as the page's stamp says; how many pages were
    written, and the warning (one line) when a line is not its replay's."""
    seen = _Seen()
    written, unlike = 0, 0
    first: tuple[int, str, list[str]] | None = None
    lines = _lines(league.root / RESULTS, frozenset(league.manifest["policies"]))
    for n, row, ep in _first(lines, league.tally.episodes):
        page = views / f"{ep.id}.html"
        if not seen.add(n, ep.id):
            written += write_view(league.root / REPLAYS / f"{ep.id}.json", page)
        facts = stamped_facts(page)
        differs = [] if facts is None else differing_facts(facts, row)
        if differs:
            unlike += 1
            first = first or (n, ep.id, differs)
    if first is None:
        return written, []
    n, rid, keys = first
    more = f" ({unlike} lines are not their replay's)" if unlike > 1 else ""
    return written, [f"{RESULTS} line {n} ({rid}) claims other {', '.join(keys)} than "
                     f"{REPLAYS}/{rid}.json re-derives to{more}; the page shows the lines as "
                     f"they are: run guild verify {_shown(league.root)}"]


def _make(views: Path) -> None:
    try:
        views.mkdir(exist_ok=True)
    except OSError as e:
        raise LeagueError(f"cannot make {views} ({e.strerror or e})") from None


def _first(items: Iterable[_T], n: int) -> Iterator[_T]:
    """The first ``n`` items: the episodes tallied, even if more were appended since."""
    for k, item in enumerate(items):
        if k >= n:
            return
        yield item
