"""``guild report DIR [--out FILE]``: one static HTML page per league, and a viewer page per
replay beside it.

The page (``DIR/report.html`` by default; ``league.cli.report_html`` draws it) shows the
ladder as ``ladder.json`` has it, each policy's score distribution, a head-to-head table, the
results by seat position and every episode, linked to its viewer page ``DIR/view/<id>.html``
(``guild view``'s page, rewritten only when its replay or the viewer changed). Links are
relative, so the folder can be moved or published as it is; nothing is fetched.

A league folder is input from anyone: every file is read through a size cap (a regular file
only, checked before it is opened: ``league.core.files.open_regular``), ``results.jsonl``
one capped line at a time, twice (the tallies, then the episodes table, written straight to
the page), so memory grows with the number of seats, not with the file. Anything wrong is a
``LeagueError``: one line, exit 2. The page never replaces a file it did not write (``--out
results.jsonl``), and every string from the folder is escaped (``report_html.esc``).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import stat
from array import array
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from league.cli import report_html
from league.cli.html_viewer import write_view
from league.core.atomic import replacing
from league.core.errors import LeagueError
from league.core.files import open_regular, read_regular
from league.core.store import (
    LADDER,
    MANIFEST,
    MAX_RESULTS_BYTES,
    MAX_SCORE,  # noqa: F401 - the bound the page's numbers are checked against
    REPLAYS,
    RESULTS,
    is_count,
    is_number,
    row_problem,
)

REPORT = "report.html"
VIEWS = "view"  # DIR/view/<id>.html: the viewer page of each replay
MAX_JSON_BYTES = 64 << 20  # league.json, ladder.json: kilobytes in any real league
MAX_LINE_BYTES = 1 << 20  # a results line is under a kilobyte, fault notes and all
MAX_NAME_CHARS = 1024  # a policy spec (a name, a path, a URL); the page repeats each name
PAGE_MARK = b"Written by `guild report`"  # in the head of every page the report writes
MARK_BYTES = 8192  # the head read for it: the template's head with the longest title


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``guild report`` to the ``guild`` subcommands."""
    p = sub.add_parser(
        "report", help="write a league's HTML page: ladder, score distributions, "
        "head-to-head, seat positions, every replay",
        description="Write one static HTML page for a league (no network needed: inline CSS "
        "and SVG, no script): the ladder with its intervals, faults and fallbacks; each "
        "policy's score distribution; head-to-head mean score differences; mean scores by "
        "seat; and every episode, linked to its replay's viewer page, written to DIR/view/ "
        "(pages already up to date are kept). Links are relative: the folder can be moved.")
    p.add_argument("dir", metavar="DIR", help="a league's --out directory")
    p.add_argument("--out", metavar="FILE", help=f"where to write the page (DIR/{REPORT}); "
                   "an existing file is replaced only if it is such a page")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Handler of ``guild report``; a bad folder raises ``LeagueError`` (one line, exit 2)."""
    done = build_report(args.dir, args.out)
    episodes = f"{done.episodes} episode{'' if done.episodes == 1 else 's'}"
    print(f"report: {_shown(done.page)} ({episodes}; viewer pages in "
          f"{_shown(done.views)}: {done.written} written, {done.episodes - done.written} "
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


def build_report(out: str | Path, page: str | Path | None = None) -> Built:
    """Read the league in ``out``, write the viewer pages and the report page."""
    root = Path(out)
    if not root.is_dir():
        raise LeagueError(f"{root} is not a directory")
    if not (root / MANIFEST).exists():
        raise LeagueError(f"{root} has no {MANIFEST}; is it a league's --out directory?")
    target = Path(page) if page is not None else root / REPORT
    _check_target(target, root)
    league = read_league(root)
    views = root / VIEWS
    if views.is_symlink():  # a folder from elsewhere must not send the pages elsewhere
        raise LeagueError(f"{views} is a symbolic link; the viewer pages go in a folder of "
                          "the league's own")
    try:
        views.mkdir(exist_ok=True)
    except OSError as e:
        raise LeagueError(f"cannot make {views} ({e.strerror or e})") from None
    written = _write_page(league, target, views)
    return Built(target, views, league.tally.episodes, written)


def _check_target(target: Path, root: Path) -> None:
    """``LeagueError`` unless writing the page to ``target`` loses nothing: it must be new or
    a page this command wrote (``--out results.jsonl`` would replace the league's results),
    and not in the folders of replays and viewer pages (a viewer page would replace it)."""
    if str(target) == "-":
        raise LeagueError("--out -: the page links its viewer pages by relative paths, so it "
                          "is written to a file; give its path")
    if "\0" in str(target):
        raise LeagueError("--out: a path cannot hold a NUL character")
    if _resolved(target.parent) in (_resolved(root / VIEWS), _resolved(root / REPLAYS)):
        raise LeagueError(f"--out {target}: {VIEWS}/ and {REPLAYS}/ hold the league's replays "
                          "and their viewer pages; write the page elsewhere")
    try:
        st = os.lstat(target)
    except FileNotFoundError:
        return
    except OSError as e:
        raise LeagueError(f"cannot write {target} ({e.strerror or e})") from None
    if stat.S_ISDIR(st.st_mode):
        raise LeagueError(f"{target} is a directory; --out names the page's file")
    if not stat.S_ISREG(st.st_mode):
        raise LeagueError(f"{target} exists and is not a regular file (a link, device or "
                          "FIFO); the report replaces only a page of its own")
    try:
        fd = os.open(target, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0)
                     | getattr(os, "O_NONBLOCK", 0))
        with os.fdopen(fd, "rb") as f:
            head = f.read(MARK_BYTES)
    except OSError as e:
        raise LeagueError(f"cannot read {target} ({e.strerror or e})") from None
    if PAGE_MARK not in head:
        raise LeagueError(f"{target} exists and is not a page guild report wrote; it is kept "
                          "(choose another --out, or remove it)")


def _resolved(path: Path) -> Path:
    """``path`` without its links (as it is when a link loops: then it names nothing)."""
    try:
        return path.resolve()
    except (OSError, RuntimeError):
        return path


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
    ladder: dict
    tally: Tally


def read_league(root: Path) -> League:
    """The league in ``root`` with its results tallied; ``LeagueError`` for a bad folder."""
    manifest = _manifest(root / MANIFEST)
    ladder = _ladder(root / LADDER)
    order = list(dict.fromkeys([e["policy"] for e in ladder["policies"]]
                               + manifest["policies"]))
    tally = Tally(order)
    for ep in episodes(root / RESULTS, frozenset(manifest["policies"])):
        tally.add(ep)
    return League(root, manifest, ladder, tally)


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


def _ladder(path: Path) -> dict:
    """``ladder.json``, each entry checked for what the page shows."""
    if not path.exists():
        raise LeagueError(f"{path.parent} has no {LADDER}; a league writes it after every run")
    data = _json_file(path, "ladder")
    entries = data.get("policies") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        raise LeagueError(f"{path} is not a ladder (no list of policies)")
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
    """Each complete line of ``results.jsonl``, checked (its lineup only of ``policies``, the
    league's); a torn last line (a run stopped mid-append) is left out, as the league itself
    leaves it."""
    with open_regular(path, MAX_RESULTS_BYTES, "results file") as f:
        read = 0
        for n in itertools.count(1):
            line = _line(f, path, n)
            read += len(line)
            if not line.endswith(b"\n") or read > MAX_RESULTS_BYTES:
                return
            yield _episode(line, path, n, policies)


def _line(f: Any, path: Path, n: int) -> bytes:
    try:
        line = f.readline(MAX_LINE_BYTES + 1)
    except OSError as e:
        raise LeagueError(f"{path}: cannot read it ({e.strerror or e})") from None
    if len(line) > MAX_LINE_BYTES:
        raise LeagueError(f"{path} line {n} is over {MAX_LINE_BYTES:,} bytes; not a results "
                          "line")
    return line


def _episode(line: bytes, path: Path, n: int, policies: frozenset[str]) -> Episode:
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
    return Episode(row["id"], row.get("seed"), tuple(row["lineup"]),
                   tuple(float(s) for s in row["scores"]),
                   sum(row.get("fallbacks") or ()),
                   sum(sum(d.values()) for d in row.get("faults") or ()))


# --- writing ---------------------------------------------------------------------------------
def _write_page(league: League, target: Path, views: Path) -> int:
    """Write the page, the episodes table streamed from a second read of the results (the
    viewer pages written on the way); how many viewer pages were written."""
    base = Path(os.path.relpath(views, target.parent if str(target.parent) else "."))
    name = league.root.resolve().name
    head, tail = report_html.frame(name)
    written = 0
    try:
        with replacing(target) as tmp, open(tmp, "w", encoding="utf-8") as f:
            f.write(head)
            f.write(report_html.summary(name, league.manifest, league.ladder, league.tally))
            f.write(report_html.episodes_head())
            for ep in _first(episodes(league.root / RESULTS,
                                      frozenset(league.manifest["policies"])),
                             league.tally.episodes):
                replay = league.root / REPLAYS / f"{ep.id}.json"
                written += write_view(replay, views / f"{ep.id}.html")
                f.write(report_html.episode_row(ep, (base / f"{ep.id}.html").as_posix()))
            f.write(report_html.episodes_tail())
            f.write(tail)
    except OSError as e:
        raise LeagueError(f"cannot write {target} ({e.strerror or e})") from None
    return written


def _first(items: Iterator[Episode], n: int) -> Iterator[Episode]:
    """The first ``n`` items: the episodes tallied, even if more were appended since."""
    for k, item in enumerate(items):
        if k >= n:
            return
        yield item
