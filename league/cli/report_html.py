"""The HTML of ``guild report``'s page (``league.cli.report`` reads the league and writes it).

Static on purpose: tables and inline SVG, drawn here, and no script, so the page shows the
same thing in any browser, offline, and nothing in a league folder can run in it. Every string
from the folder (policy names are chosen by whoever ran the league) goes through
:func:`esc`; numbers are formatted here.
"""

from __future__ import annotations

import html
import math
from collections.abc import Iterable, Sequence
from importlib import resources
from typing import TYPE_CHECKING
from urllib.parse import quote

from league.core.store import is_number
from sim.rules.world import SEATS

if TYPE_CHECKING:
    from league.cli.report import Episode, Tally

TEMPLATE = "report.html"
BODY_MARK = "<!--__REPORT_BODY__-->"
NONE = "-"  # a cell with nothing to show: never met, never sat there
NUM = ' class="num"'
# the chart: one row per policy, a shared score axis
CHART_W, LABEL_W, PAD_R, TOP, ROW_H, AXIS_H = 900, 200, 20, 10, 64, 34
BINS = 24  # about this many score bins, at a round width
LABEL_CHARS = 26
MAX_HEAD_TO_HEAD = 60  # policies in the head-to-head table: its cells grow as their square
# policies that held no seat shown one by one (a row, a reason; in the header, every policy
# named): a league.json may list a hundred thousand, and the rest are counted
SHOWN_SEATLESS = 100


def esc(value: object) -> str:
    """Text or an attribute value from the league folder, made inert: HTML escaped, and every
    character that is not printable shown as ``\\uXXXX``: controls and bidirectional overrides
    (which hide or reorder the text around them), invisible ones (a zero-width space makes two
    policies' names look alike) and lone surrogates (a folder name that is not UTF-8)."""
    text = "".join(c if c.isprintable() else f"\\u{ord(c):04x}" for c in str(value))
    return html.escape(text, quote=True)


def signed(x: float) -> str:
    return f"{x:+.3f}"


def frame(name: str) -> tuple[str, str]:
    """The page up to its body's content and after it (``viewer/report.html``)."""
    template = resources.files("league.cli").joinpath("viewer", TEMPLATE).read_text("utf-8")
    head, mark, tail = template.partition(BODY_MARK)
    assert mark, f"{TEMPLATE} lacks {BODY_MARK}"
    return head.replace("__TITLE__", esc(f"Guild league report: {name}")), tail


def summary(name: str, manifest: dict, ladder: dict, tally: Tally,
            warnings: Sequence[str] = (), planned: int | None = None) -> str:
    """The header and every section before the episodes table; ``warnings`` (one line each)
    head the page, ``planned`` is how many episodes league.json plans."""
    return "".join([
        _header(name, manifest, tally, planned),
        "<main>\n",
        "".join(f'<p class="note warn" id="warning-{k}">{esc(w)}</p>\n'
                for k, w in enumerate(warnings)),
        ladder_section(ladder, tally, planned),
        chart_section(ladder, tally),
        head_to_head_section(tally),
        seats_section(tally),
    ])


def unfinished(episodes: int, planned: int | None) -> bool:
    """Whether the results hold fewer episodes than league.json plans (a run was stopped, or
    is still playing)."""
    return planned is not None and episodes < planned


def _header(name: str, manifest: dict, tally: Tally, planned: int | None) -> str:
    seed = manifest.get("seed")
    draw = f"seed {seed} (public draw)" if seed is not None else "secret draw"
    count = (f"{tally.episodes} of {planned} episodes (unfinished)"
             if unfinished(tally.episodes, planned) else f"{tally.episodes} episodes")
    policies = manifest["policies"]
    more = len(policies) - SHOWN_SEATLESS
    facts = [
        f"policies: {', '.join(str(p) for p in policies[:SHOWN_SEATLESS])}"
        + (f" and {more:,} more" if more > 0 else ""),
        count, draw,
        f"{manifest.get('turns', '?')} turns",
        "thievery allowed" if manifest.get("thievery", True) else "honest town",
        "speech on" if manifest.get("speech", True) else "speech off",
    ]
    return (f"<header><h1>Guild league report: {esc(name)}</h1>\n"
            '<div class="meta" id="meta">'
            f"{' &middot; '.join(esc(f) for f in facts)}</div></header>\n")


# --- the ladder ------------------------------------------------------------------------------
LADDER_HEAD = ("rank", "policy", "mean", "95% interval", "episodes", "seats", "commissions",
               "robs/seat", "robbed/seat", "faults", "fallbacks")


def ladder_section(ladder: dict, tally: Tally, planned: int | None = None) -> str:
    entries, benched = _without_bench(ladder["policies"])
    notes = [ladder.get(k) for k in ("statistic", "interval", "ranking")]
    rows = "".join(_ladder_row(e) for e in entries)
    unranked = "".join(f"<li><b>{esc(e['policy'])}</b>: {esc(e['unranked'])}</li>"
                       for e in entries if e.get("unranked"))
    parts = [
        '<section class="panel" id="ladder"><h2>Ladder</h2>\n',
        "<p class=\"note\">Each policy's mean score over the seats it held, at mixed tables "
        "drawn from the whole list; unranked policies (too many decisions not their own, "
        "or no seat) are listed below the ranked ones, with the reason.</p>\n",
    ]
    if unfinished(tally.episodes, planned):
        n = tally.episodes
        parts.append(f'<p class="note warn" id="unfinished">The league is unfinished: '
                     f"results.jsonl holds {n} of its {planned} episodes (a run was stopped, "
                     f"or is still playing). This ladder, like every table here, is of those "
                     f"{n}.</p>\n")
    parts.append(_table("ladder-table", [(h, h not in ("policy",)) for h in LADDER_HEAD],
                        rows))
    if unranked:
        parts.append(f'<p class="note">Unranked:</p><ul class="unranked">{unranked}</ul>\n')
    if benched:
        parts.append(f'<p class="note" id="benched">And {benched:,} more policies that held no '
                     "seat (too few episodes to seat every policy): unranked, not listed one "
                     "by one.</p>\n")
    parts += [f'<p class="note">{esc(n)}</p>\n' for n in notes if isinstance(n, str)]
    parts.append("</section>\n")
    return "".join(parts)


def _without_bench(entries: Sequence[dict]) -> tuple[list[dict], int]:
    """``entries`` but those of policies that held no seat after the first
    :data:`SHOWN_SEATLESS` of them, and how many were left out."""
    shown: list[dict] = []
    benched = 0
    for e in entries:
        if e.get("seats") == 0:
            benched += 1
            if benched > SHOWN_SEATLESS:
                continue
        shown.append(e)
    return shown, max(benched - SHOWN_SEATLESS, 0)


def _ladder_row(e: dict) -> str:
    mean, ci, share = e.get("meanScore"), e.get("ci95"), e.get("notOwnShare")
    ranked = e.get("rank") is not None
    cells = [
        _td(NONE if e.get("rank") is None else e["rank"], "num rank"),
        _td(e["policy"], "policy"),
        f'<td class="num mean"{_data(value=mean)}>{NONE if mean is None else signed(mean)}</td>',
        f'<td class="num ci"{_data(lo=ci[0], hi=ci[1]) if ci else ""}>'
        f'{esc(f"[{signed(ci[0])}, {signed(ci[1])}]" if ci else "n/a")}</td>',
        _td(_or(e.get("episodes")), "num"), _td(_or(e.get("seats")), "num"),
        _td(_commissions(e), "num"),
        _td(_fixed(e.get("robberiesPerSeat")), "num"), _td(_fixed(e.get("robbedPerSeat")), "num"),
        _td(_or(e.get("faults")), "num faults"),
        _td(f"{_or(e.get('fallbacks'))}" + (f" ({share:.1%})" if _finite(share) else ""),
            "num fallbacks"),
    ]
    return (f'<tr class="{"ranked" if ranked else "unranked"}"{_data(policy=e["policy"])}>'
            f"{''.join(cells)}</tr>\n")


def _commissions(e: dict) -> str:
    done, total = e.get("commissionsCompleted"), e.get("commissions")
    rate = e.get("completionRate")
    if not isinstance(done, int) or not isinstance(total, int):
        return "n/a"
    return f"{done}/{total}" + (f" ({rate:.0%})" if _finite(rate) else "")


# --- the score distributions -----------------------------------------------------------------
def chart_section(ladder: dict, tally: Tally) -> str:
    intervals = {e["policy"]: e.get("ci95") for e in ladder["policies"]}
    means = {e["policy"]: e.get("meanScore") for e in ladder["policies"]}
    return ('<section class="panel" id="distributions"><h2>Score distributions</h2>\n'
            "<p class=\"note\">Each policy's episode scores, one per seat it held, in bins of "
            "equal width (bar height: how many of its seats, its tallest bar full height); the "
            "black mark is its ladder mean, the red bar its ladder interval.</p>\n"
            f"{chart(tally, intervals, means)}</section>\n")


def chart(tally: Tally, intervals: dict[str, list[float] | None],
          means: dict[str, float | None] | None = None) -> str:
    """One SVG: a histogram row per policy that sat, on a shared score axis; a policy's mean
    is marked as the ladder gives it (``means``), so the page shows one mean, not two roundings
    of it."""
    names = [n for n in tally.order if len(tally.scores.get(n, ())) > 0]
    if not names:
        return '<p class="note">No episodes yet.</p>\n'
    lo = min(min(tally.scores[n]) for n in names)
    hi = max(max(tally.scores[n]) for n in names)
    start, step, bins = _bins(lo, hi)
    axis = Axis(start, start + bins * step)
    height = TOP + ROW_H * len(names) + AXIS_H
    parts = [f'<svg id="chart" xmlns="http://www.w3.org/2000/svg" role="img" '
             f'aria-label="score distributions" viewBox="0 0 {CHART_W} {height}" '
             f'width="{CHART_W}" height="{height}">\n', axis.grid(TOP, height - AXIS_H)]
    for i, name in enumerate(names):
        parts.append(_row(name, tally.scores[name], (means or {}).get(name),
                          intervals.get(name), TOP + i * ROW_H, axis, start, step, bins))
    parts.append("</svg>\n")
    return "".join(parts)


class Axis:
    """Scores to x positions, and the axis drawn under the rows."""

    def __init__(self, lo: float, hi: float) -> None:
        self.lo, self.hi = lo, hi

    def x(self, v: float) -> float:
        v = min(max(v, self.lo), self.hi)
        return LABEL_W + (v - self.lo) / (self.hi - self.lo) * (CHART_W - LABEL_W - PAD_R)

    def grid(self, top: int, bottom: int) -> str:
        step = _nice((self.hi - self.lo) / 6)
        digits = max(0, -math.floor(math.log10(step) + 1e-9)) + (1 if _mantissa(step) == 2.5
                                                                  else 0)
        first = math.ceil(self.lo / step - 1e-9)
        out = [f'<line class="axis" x1="{LABEL_W}" y1="{bottom}" x2="{CHART_W - PAD_R}" '
               f'y2="{bottom}"/>\n']
        k = first
        while k * step <= self.hi + 1e-9:
            v = k * step
            x = self.x(v)
            label = f"{v:+.{digits}f}" if abs(v) > step / 1e6 else "0"
            out.append(f'<line class="grid" x1="{x:.1f}" y1="{top}" x2="{x:.1f}" '
                       f'y2="{bottom}"/><text class="tick" x="{x:.1f}" y="{bottom + 16}">'
                       f"{label}</text>\n")
            k += 1
        out.append(f'<text class="tick" x="{(LABEL_W + CHART_W - PAD_R) / 2:.0f}" '
                   f'y="{bottom + 31}">episode score</text>\n')
        return "".join(out)


def _row(name: str, scores: Sequence[float], mean: float | None, ci: list[float] | None,
         top: int, axis: Axis, start: float, step: float, bins: int) -> str:
    counts = [0] * bins
    for s in scores:
        counts[min(bins - 1, max(0, int((s - start) / step)))] += 1
    most = max(counts)
    base, tall = top + ROW_H - 12, ROW_H - 22
    shown = name if len(name) <= LABEL_CHARS else name[:LABEL_CHARS - 1] + "\u2026"
    out = [f'<g class="dist"{_data(policy=name, n=len(scores), mean=mean)}>'
           f'<text class="label" x="{LABEL_W - 10}" y="{top + tall / 2 + 4:.0f}">'
           f"<title>{esc(name)}</title>{esc(shown)}</text>"
           f'<text class="label n" x="{LABEL_W - 10}" y="{top + tall / 2 + 20:.0f}">'
           f"{len(scores)} seats</text>\n"]
    for b, c in enumerate(counts):
        if not c:
            continue
        x0, x1 = axis.x(start + b * step), axis.x(start + (b + 1) * step)
        h = max(1.0, c / most * tall)
        out.append(f'<rect class="bar" x="{x0 + 0.5:.1f}" y="{base - h:.1f}" '
                   f'width="{max(1.0, x1 - x0 - 1):.1f}" height="{h:.1f}"><title>'
                   f"{c} of {len(scores)} seats scored "
                   f"{signed(start + b * step)} to {signed(start + (b + 1) * step)}"
                   "</title></rect>\n")
    if mean is not None:  # a number: the ladder's, computed or checked (report._entry_problem)
        out.append(f'<rect class="mean" x="{axis.x(mean) - 1:.1f}" y="{top + 2}" width="2" '
                   f'height="{base - top - 2}"><title>{esc(name)}: mean {signed(mean)}</title>'
                   "</rect>\n")
    if ci:
        x0, x1 = axis.x(ci[0]), axis.x(ci[1])
        out.append(f'<rect class="ci" x="{x0:.1f}" y="{base + 2}" width="{max(2.0, x1 - x0):.1f}"'
                   f' height="4"><title>{esc(name)}: 95% interval [{signed(ci[0])}, '
                   f"{signed(ci[1])}]</title></rect>\n")
    out.append("</g>\n")
    return "".join(out)


def _bins(lo: float, hi: float) -> tuple[float, float, int]:
    """``(start, width, count)``: about :data:`BINS` bins of a round width covering
    ``[lo, hi]``."""
    step = _nice(max(hi - lo, 1e-6) / BINS)
    start = math.floor(lo / step) * step
    bins = max(1, math.floor((hi - start) / step) + 1)
    return start, step, bins


def _nice(x: float) -> float:
    """The round number (1, 2, 2.5 or 5 times a power of ten) at or above ``x``."""
    power = 10.0 ** math.floor(math.log10(x))
    return next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= x * (1 - 1e-9))


def _mantissa(x: float) -> float:
    return round(x / 10.0 ** math.floor(math.log10(x) + 1e-9), 6)


# --- head-to-head and seats ------------------------------------------------------------------
def _seated(tally: Tally) -> list[str]:
    return [n for n in tally.order if len(tally.scores.get(n, ())) > 0]


def head_to_head_section(tally: Tally) -> str:
    seated = _seated(tally)
    names = seated[:MAX_HEAD_TO_HEAD]  # the ladder's first: the table grows as the square
    rows = []
    for a in names:
        cells = [f'<th scope="row">{esc(a)}</th>']
        for b in names:
            met = tally.head_to_head(a, b) if a != b else None
            cells.append(_diff_cell(met, row=a, col=b))
        rows.append(f"<tr{_data(policy=a)}>{''.join(cells)}</tr>\n")
    head = [("row \u2212 column", False)] + [(n, True) for n in names]
    return ('<section class="panel" id="head-to-head"><h2>Head to head</h2>\n'
            "<p class=\"note\">Over the episodes where both sat: the row policy's mean score "
            "in the episode minus the column policy's, averaged; below it, how many episodes "
            f"that is. A dash ({esc(NONE)}): they never shared a table.</p>\n"
            + (f'<p class="note warn">The first {len(names)} of the {len(seated)} policies '
               "that sat, in ladder order: the table of all would have "
               f"{len(seated) ** 2:,} cells.</p>\n" if len(names) < len(seated) else "")
            + f"{_table('h2h-table', head, ''.join(rows))}</section>\n")


def _diff_cell(met: tuple[float, int] | None, **keys: str) -> str:
    if met is None:
        return f'<td class="none"{_data(**keys)}>{NONE}</td>'
    mean, n = met
    sign = "pos" if mean > 0 else "neg" if mean < 0 else ""
    return (f'<td class="num {sign}"{_data(**keys, mean=round(mean, 6), n=n)}>{signed(mean)}'
            f'<span class="n">{n} episode{"s" * (n != 1)}</span></td>')


def seats_section(tally: Tally) -> str:
    names = _seated(tally)
    rows = []
    for name in names:
        cells = [f'<th scope="row">{esc(name)}</th>']
        for seat in range(SEATS):
            cells.append(_mean_cell(tally.at_seat(name, seat), policy=name, seat=str(seat)))
        scores = tally.scores[name]
        cells.append(_mean_cell((sum(scores) / len(scores), len(scores)), policy=name,
                                seat="all"))
        rows.append(f"<tr{_data(policy=name)}>{''.join(cells)}</tr>\n")
    head = [("policy", False)] + [(f"seat {s}", True) for s in range(SEATS)] + [("all", True)]
    return ('<section class="panel" id="seats"><h2>By seat position</h2>\n'
            "<p class=\"note\">Mean score of each policy in each seat, with the number of "
            "seats it held there. Initiative rotates: in turn t, seat t mod 6 acts first and "
            "the others follow in seat order, wrapping round (RULES §6.3).</p>\n"
            f"{_table('seat-table', head, ''.join(rows))}</section>\n")


def _mean_cell(met: tuple[float, int] | None, **keys: str) -> str:
    if met is None:
        return f'<td class="none"{_data(**keys)}>{NONE}</td>'
    mean, n = met
    return (f'<td class="num"{_data(**keys, mean=round(mean, 6), n=n)}>{signed(mean)}'
            f'<span class="n">{n} seat{"s" * (n != 1)}</span></td>')


# --- the episodes ----------------------------------------------------------------------------
def episodes_head() -> str:
    head = [("episode", False), ("seed", True)] + [(f"seat {s}", False) for s in range(SEATS)]
    head += [("fallbacks", True), ("faults", True)]
    return ('<section class="panel" id="episodes"><h2>Episodes</h2>\n'
            "<p class=\"note\">Each episode's policies and scores by seat (the best in bold); "
            "its id opens the replay in the viewer.</p>\n"
            f'<div class="scroll"><table id="episodes-table"><thead><tr>{_ths(head)}</tr>'
            "</thead><tbody>\n")


def episode_row(ep: Episode, href: str) -> str:
    best = max(ep.scores)
    seats = "".join(
        f'<td class="seat"{_data(policy=p, score=s)}>{esc(p)} '
        f'<span class="score{" best" if s == best else ""}">{signed(s)}</span></td>'
        for p, s in zip(ep.lineup, ep.scores))
    link = quote(href, errors="surrogateescape")  # a folder name need not be UTF-8
    return (f'<tr{_data(episode=ep.id)}><td><a href="{esc(link)}">{esc(ep.id)}</a>'
            f'</td>{_td(_or(ep.seed), "num")}{seats}{_td(ep.fallbacks, "num")}'
            f'{_td(ep.faults, "num")}</tr>\n')


def episodes_tail() -> str:
    return "</tbody></table></div></section>\n</main>\n"


# --- small pieces ----------------------------------------------------------------------------
def _table(ident: str, head: Sequence[tuple[str, bool]], rows: str) -> str:
    return (f'<div class="scroll"><table id="{ident}"><thead><tr>{_ths(head)}</tr></thead>'
            f"<tbody>\n{rows}</tbody></table></div>\n")


def _ths(head: Iterable[tuple[str, bool]]) -> str:
    return "".join(f"<th{NUM if num else ''}>{esc(h)}</th>" for h, num in head)


def _td(value: object, cls: str = "") -> str:
    return f'<td class="{cls}">{esc(value)}</td>' if cls else f"<td>{esc(value)}</td>"


def _data(**attrs: object) -> str:
    """``data-*`` attributes (escaped): what the tests and any reader's script can read."""
    return "".join(f' data-{k}="{esc(v)}"' for k, v in attrs.items() if v is not None)


def _or(x: object) -> object:
    return "n/a" if x is None else x


def _fixed(x: object) -> str:
    return f"{x:.2f}" if _finite(x) else "n/a"


def _finite(x: object) -> bool:
    """A number the page can format (an unchecked ladder.json may hold an int of hundreds
    of digits, which no float holds)."""
    return is_number(x)
