"""``guild view REPLAY.json [-o page.html]``: one self-contained HTML page that plays a replay.

People would rather watch an episode than read its JSON.  The page (inline CSS and JS, no
network, no build step) draws the town from the room coordinates, moves the six seats turn by
turn, tells each turn's sentences with their outcomes, picks a highlight reel by salience
(RULES §15.3) and keeps a scoreboard.

The page computes no game rule itself: every frame (positions, purses, packs, shop stock and
prices, commissions, scores) is worked out here by re-deriving the replay with ``sim.replay``
(RULES §15.4) and embedded as JSON, so what the page shows is what the rules say, and the last
frame's scores are the replay's ``results``.  A replay that does not re-derive is refused.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import hmac
import html
import json
import os
import re
import sys
from collections.abc import Iterator, Mapping
from importlib import resources
from pathlib import Path

from league.core import files
from league.core.atomic import create_private, write_atomic
from league.core.episode import RESULT_KEYS
from league.core.errors import LeagueError
from league.core.files import (
    MAX_REPLAY_BYTES,
    REPLAY_PROTOCOL,
    check_replaceable,
    parse_replay,
    read_regular,
    short,
    world_option,
)
from league.core.signing import default_key_path, value_sha256
from sim import GameConfig, ReplayMismatch, replay
from sim.commandline import printable
from sim.game import Game
from sim.language.phrasing import outcome_text
from sim.replay import difference, purse_problem, same, town_problem
from sim.rules.errors import ConfigError, shown
from sim.rules.world import MAX_TURNS, SEATS, STANDARD_TOWN, World

PROTOCOL = REPLAY_PROTOCOL
HIGHLIGHTS = 8
TEMPLATE = "viewer.html"
DATA_MARK = "/*__REPLAY_DATA__*/"
DOCTYPE = "<!DOCTYPE html>\n"  # the template's first line; the stamp follows it (write_view)
MAX_PAGE_BYTES = 4 * MAX_REPLAY_BYTES  # a page read to check it; a larger one is written again
# in the head of every page (the template's comment), within files.HEAD_BYTES of its start
VIEW_MARK = b"Written by `guild view`"
STAMP_START = f"{DOCTYPE}<!-- guild view ".encode()  # a report's viewer page: write_view


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``guild view`` to the ``guild`` command line."""
    p = sub.add_parser(
        "view", help="write a self-contained HTML page that plays a replay",
        description="Write one self-contained HTML page (no network needed) that plays a "
                    "replay: the town map, the seats moving turn by turn, the chronicle, a "
                    "highlight reel and the scoreboard. Keys: left/right step, space plays "
                    "or pauses, Home/End jump.")
    p.add_argument("replay", metavar="REPLAY.json", help="a replay (e.g. a league's "
                   "replays/<id>.json)")
    p.add_argument("-o", "--out", metavar="PAGE.html",
                   help="where to write the page (default: the replay's path with .html; - "
                   "for standard output); a file there is replaced only if it is a page guild "
                   "view wrote")
    p.add_argument("--world", metavar="FILE",
                   help="the world file of a replay played in a variant town")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Handler of ``guild view``: read, re-derive, write the page (``-o -``: to standard
    output); 2 on a bad file, or on an output that would replace what is not a page of its
    own (the replay itself, say)."""
    if not args.replay:
        raise LeagueError("REPLAY.json is empty; give a replay file (e.g. a league's "
                          "replays/<id>.json)")
    if args.out == "":
        raise LeagueError("-o is empty; give the page's file name")
    for name, text in (("REPLAY.json", args.replay), ("-o", args.out or "")):
        if "\0" in text:
            raise LeagueError(f"{name}: a path cannot hold a NUL character")
    if args.out == "-" and sys.stdout is None:  # started with it closed (>&-): say so first
        raise LeagueError("-o -: standard output is closed; give the page's file name")
    src = Path(args.replay)
    raw = read_regular(src, MAX_REPLAY_BYTES, "replay")  # first: "." is said to be a folder
    world = _load_world(args.world) if args.world is not None else None  # "": refused
    payload = parse_replay(src, raw, world)  # its work bounded by what a game there holds
    if args.out == "-":  # the page needs no file beside it: a pipe may take it
        page = _utf8(_page_of(src, payload, world)[0], src)
        try:
            sys.stdout.flush()
            sys.stdout.buffer.write(page)
            sys.stdout.buffer.flush()
        except BrokenPipeError:  # the reader left: the command line's own exit (141)
            raise
        except OSError as e:  # opened for reading only (1</dev/null), a device that refuses
            raise LeagueError(f"-o -: cannot write to standard output ({e.strerror or e})"
                              ) from None
        return 0
    out = Path(args.out) if args.out is not None else src.with_suffix(".html")
    if _same_file(out, src):
        raise LeagueError(f"{printable(str(out))} is the replay being read; the page would "
                          "replace it (give the page another name with -o)")
    check_replaceable(out, is_view_page, "a page guild view wrote", "-o")
    page = _page_of(src, payload, world)[0]
    _write(out, _utf8(page, src))
    print(f"view: wrote {printable(str(out))}")
    return 0


def is_view_page(head: bytes) -> bool:
    """Whether ``head``, the start of a file, is that of a page this viewer wrote: its mark,
    or the stamp a report's viewer page begins with (:func:`_stamp`)."""
    return VIEW_MARK in head or head.startswith(STAMP_START)


def _same_file(a: Path, b: Path) -> bool:
    """Whether ``a`` and ``b`` name one file (the same path, a hard link)."""
    try:
        return os.path.samefile(a, b)
    except (OSError, ValueError):
        return False


def write_view(src: Path, out: Path, option: str = "--out") -> bool:
    """Write the page of a league's replay ``src`` (standard town, never read through a link)
    to ``out`` unless ``out`` already is that page; whether it was written. ``LeagueError``
    (one line) for a bad replay, or for a file at ``out`` that is not a viewer page (it is
    kept; ``option`` names what chose ``out``; a symbolic link there is replaced).

    A page begins with a stamp: the digest of the replay and of this viewer (its module and
    template), what the replay re-derives to (:func:`facts_of`, for :func:`stamped_facts`),
    then a keyed digest of all that and the rest of the page (:func:`_stamp_key`). A page is
    up to date exactly when its stamp is the one it would get and the rest is what it was
    written with: a changed replay, a newer viewer or a page edited by hand rewrites it, and
    so does a page this user did not write (a league folder from someone else: anyone can
    compute an unkeyed digest of a page holding a script). Checking costs one read of the
    replay and one of the page.
    """
    raw = read_regular(src, MAX_REPLAY_BYTES, "replay", follow=False)
    source = _source_digest(raw)
    if _unedited(out, source) is not None:
        return False
    if not os.path.islink(out):  # a link is replaced, its target never written through
        check_replaceable(out, is_view_page, "a page guild view wrote", option)
    page, facts = _page_of(src, parse_replay(src, raw), None)
    body = _utf8(page.removeprefix(DOCTYPE), src)
    _write(out, DOCTYPE.encode() + _stamp(source, facts, body) + b"\n" + body)
    return True


# What a replay re-derives to that a results line claims too, each stamped on its page as a
# digest: a report compares its lines with them without deriving any replay again
FACT_KEYS = ("seed", "lineup", *(k for k in RESULT_KEYS if k != "names"))
_FACTS = re.compile(rf"[0-9a-f]{{16}}(?:\.[0-9a-f]{{16}}){{{len(FACT_KEYS) - 1}}}")


def facts_of(values: Mapping[str, object]) -> str:
    """The digests of ``values``' :data:`FACT_KEYS` (a key it lacks is null), one string."""
    return ".".join(value_sha256(values.get(key))[:16] for key in FACT_KEYS)


def differing_facts(facts: str, claim: Mapping[str, object]) -> list[str]:
    """The :data:`FACT_KEYS` whose value in ``claim`` (a results line) is not the replay's
    (``facts``: :func:`facts_of` of what it re-derives to), types and all; a key the line
    lacks or leaves null is not compared."""
    return [key for key, digest in zip(FACT_KEYS, facts.split("."))
            if claim.get(key) is not None and value_sha256(claim[key])[:16] != digest]


def stamped_facts(page: Path) -> str | None:
    """What the replay of ``page`` re-derives to (:func:`facts_of`), as its stamp says; None
    when it is no page with a stamp. Only for a page :func:`write_view` has just written or
    found up to date: the stamp is not checked again here."""
    try:
        with files.open_regular(page, MAX_PAGE_BYTES, "viewer page", follow=False) as f:
            head = f.read(len(DOCTYPE) + 512)
    except (LeagueError, OSError):
        return None
    return _facts_in(head.removeprefix(DOCTYPE.encode()).partition(b"\n")[0])


def _facts_in(stamp: bytes) -> str | None:
    """The facts a stamp line (:func:`_stamp`) holds, unchecked; None if it holds none."""
    parts = stamp.split(b" ")
    facts = parts[4].decode("ascii", "replace") if len(parts) == 7 else ""
    return facts if _FACTS.fullmatch(facts) else None


def _unedited(page: Path, source: str) -> str | None:
    """The facts stamped on ``page`` (:func:`facts_of`) when it is a regular file that begins
    with the doctype and the stamp of ``source`` (the replay and the viewer), of those facts
    and of what follows the stamp; else None."""
    try:
        data = read_regular(page, MAX_PAGE_BYTES, "viewer page", follow=False)
    except (LeagueError, ValueError):  # not there, not a regular file, too large: written again
        return None
    if not data.startswith(DOCTYPE.encode()) or _stamp_key() is None:
        return None
    stamp, _, body = data.removeprefix(DOCTYPE.encode()).partition(b"\n")
    facts = _facts_in(stamp)
    if facts is None or not hmac.compare_digest(stamp, _stamp(source, facts, body)):
        return None
    return facts


def _stamp(source: str, facts: str, body: bytes) -> bytes:
    """The line after the doctype (an HTML comment); without a key no page is kept."""
    key = _stamp_key()  # over the replay's digest too: a page is one replay's, not another's
    signed = f"{source}\n{facts}\n".encode() + body
    mac = hmac.new(key, signed, hashlib.sha256).hexdigest() if key else "unkeyed"
    return STAMP_START.removeprefix(DOCTYPE.encode()) + f"{source} {facts} {mac} -->".encode()


STAMP_KEY = "view-stamp.key"
_STAMP_KEY_BYTES = 32


def _stamp_key() -> bytes | None:
    """This user's key for page stamps, beside the league signing key (made on first use,
    mode 0600); None when it cannot be read or made, and then every page is written again."""
    try:
        folder = default_key_path().parent
    except (RuntimeError, KeyError):  # no home folder to be found (no HOME, no passwd entry)
        return None
    return _key_at(folder / STAMP_KEY)


@functools.cache
def _key_at(path: Path) -> bytes | None:
    if not (path.exists() or path.is_symlink()):
        try:
            create_private(path, os.urandom(_STAMP_KEY_BYTES))
        except OSError:
            return None
    try:
        key = read_regular(path, _STAMP_KEY_BYTES, "view stamp key")
    except LeagueError:  # not a regular file of a key's size: not ours to use
        return None
    return key if len(key) == _STAMP_KEY_BYTES else None


def _page_of(src: Path, payload: dict, world: World | None) -> tuple[str, str]:
    """The page of ``payload`` and what it re-derives to (:func:`facts_of`); a ``LeagueError``
    names the replay (a report makes many)."""
    try:
        return _render(payload, world)
    except RecursionError:  # a value nested deeper than any replay's, met after loading
        raise LeagueError(f"{src}: a value is nested too deeply for a replay") from None
    except LeagueError as e:
        raise LeagueError(f"{src}: {e}") from None


def _utf8(page: str, src: Path) -> bytes:
    try:
        return page.encode("utf-8")
    except UnicodeEncodeError:  # "\ud800" is JSON, but no text a page can hold
        raise LeagueError(f"{src} holds a lone surrogate (\\ud800-\\udfff), not Unicode "
                          "text; not a replay") from None


def _write(out: Path, page: bytes) -> None:
    """Write atomically: an interrupted run leaves the old page or the new one, never half."""
    try:
        write_atomic(out, page, sync=False)
    except OSError as e:
        raise LeagueError(f"cannot write {out} ({e.strerror or e})") from None


def _source_digest(replay: bytes) -> str:
    """The digest of ``replay``'s bytes and of the viewer that makes its page."""
    digest = hashlib.sha256(_viewer_digest().encode())
    digest.update(replay)
    return digest.hexdigest()


@functools.cache
def _viewer_digest() -> str:
    """The digest of the code that makes a page: this module (source or compiled) and its
    template."""
    digest = hashlib.sha256(Path(__file__).read_bytes())
    digest.update(resources.files("league.cli").joinpath("viewer", TEMPLATE).read_bytes())
    return digest.hexdigest()


def _load_world(path: str) -> World:
    return world_option(path)[0]


def render_page(payload: dict, world: World | None = None) -> str:
    """The whole HTML page for a replay payload (see :func:`view_model`)."""
    return _render(payload, world)[0]


def _render(payload: dict, world: World | None) -> tuple[str, str]:
    """The page of a replay payload, and what the replay re-derives to (:func:`facts_of`)."""
    model, facts = _derived(payload, world)
    template = resources.files("league.cli").joinpath("viewer", TEMPLATE).read_text("utf-8")
    # "<" escaped so no sentence in the data can close the <script> element.
    data = json.dumps(model, separators=(",", ":"), ensure_ascii=False).replace("<", "\\u003c")
    title = f"Guild replay: seed {model['seed']}"
    # The title first: the data, inserted last, is never searched for the title mark.
    return (template.replace("__TITLE__", html.escape(title)).replace(DATA_MARK, data),
            facts_of(facts))


def view_model(payload: dict, world: World | None = None) -> dict:
    """Everything the page shows, frame by frame, re-derived from the replay's events.

    Frame 0 is the town before turn 1; frame k is the town after turn k, with the acts of turn
    k.  The replay is re-derived once (``sim.replay`` checks every recorded snapshot against
    the rules); each frame is then that turn's snapshot restored into one scratch game, so the
    rules (not the page) compute the scores, and time and memory grow linearly with the
    replay.  ``LeagueError`` if the replay is too long, does not re-derive or its results
    differ from what its events give.
    """
    return _derived(payload, world)[0]


def _derived(payload: dict, world: World | None) -> tuple[dict, dict]:
    """:func:`view_model`, and the seed, lineup and results the replay re-derives to."""
    config, events = payload["config"], payload["events"]
    problem = town_problem(config, world)
    if problem is not None:
        advice = ("leave out --world" if problem.standard else
                  "pass its world file with --world FILE" if world is None else
                  "pass the world file it was played in")
        raise LeagueError(f"{problem.why}; {advice}")
    world = world if world is not None else STANDARD_TOWN
    policies = payload.get("policyNames", [f"P{i + 1}" for i in range(SEATS)])
    if not (isinstance(policies, list) and len(policies) == SEATS
            and all(isinstance(p, str) for p in policies)):
        raise LeagueError(f"the replay's policyNames is not a list of {SEATS} policy names")
    _check_length(config, events)
    try:
        cfg = GameConfig.from_dict({**config, "players": policies}, world)
    except (ConfigError, TypeError) as e:
        raise LeagueError(f"the replay's config is invalid: {e}") from None
    purses = purse_problem(cfg, events)  # a town that matches the record but in purses, stock
    if purses is not None:
        advice = "leave out --world" if purses.standard else "pass the world file it was played in"
        raise LeagueError(f"{purses.why}; {advice}")
    n_frames = sum(1 for e in events if isinstance(e, dict) and e.get("kind") == "turn")
    try:
        final = replay(cfg, events)
        frames_of = _frame_games(cfg, final, n_frames)
        results = final.results()
        acts_by_turn: dict[int, list[dict]] = {}
        for e in events:
            if isinstance(e, dict) and e.get("kind") == "act":
                acts_by_turn.setdefault(e.get("turn", -1), []).append(e)
        aliases = final.aliases
        frames = [_frame(game, k, [_act_view(e, world, aliases)
                                   for e in acts_by_turn.get(k - 1, [])])
                  for k, game in frames_of]
    except ReplayMismatch as e:
        hint = "" if world is not STANDARD_TOWN else " (a variant town? pass --world FILE)"
        raise LeagueError(f"the replay does not re-derive{hint}: {short(e)}") from None
    except (ValueError, TypeError, KeyError, AttributeError, IndexError) as e:
        raise LeagueError(f"the replay's events are malformed ({type(e).__name__}: "
                          f"{short(e)})") from None
    if "results" in payload and not same(results, payload["results"]):
        where, ours, theirs = difference(results, payload["results"]) or ("", results, None)
        raise LeagueError(f"the replay's results differ from what its events give: results"
                          f"{'.' + where if where[:1].isalpha() else where} is "
                          f"{shown(theirs, 60)} in the replay, the events give {shown(ours, 60)}")
    facts = {"seed": cfg.seed, "lineup": policies, **results}
    model = {
        "seed": cfg.seed, "turns": cfg.turns, "speech": cfg.speech, "thievery": cfg.thievery,
        "names": aliases, "policies": [printable(p) for p in policies],
        "rooms": [{"id": r.id, "name": r.name, "desc": r.desc, "x": r.x, "y": r.y,
                   "dark": r.dark, "exits": list(r.exits)} for r in world.rooms],
        "keepers": [{"name": k.name, "room": k.room, "trade": list(k.trade)}
                    for k in world.keepers],
        "goods": [g.name for g in world.goods],
        "guild": world.guild,
        "frames": frames,
        "highlights": highlights(frames, world, aliases),
        "results": {**results, "names": [printable(str(n)) for n in results["names"]]},
    }
    return model, facts


def _check_length(config: dict, events: list) -> None:
    """Refuse, before any work, a replay longer than any game may be (``MAX_TURNS``)."""
    turns = config.get("turns")
    if isinstance(turns, int) and not isinstance(turns, bool) and turns > MAX_TURNS:
        raise LeagueError(f"the replay has {turns} turns; a game has at most {MAX_TURNS}")
    # A start event, a snapshot per turn and its six acts, an end: anything longer is not a game.
    most = 2 + (MAX_TURNS + 1) * (SEATS + 1)
    if len(events) > most:
        raise LeagueError(f"the replay has {len(events)} events; a game of at most "
                          f"{MAX_TURNS} turns has at most {most}")


def _frame_games(cfg: GameConfig, final: Game, n_frames: int) -> Iterator[tuple[int, Game]]:
    """``(k, game standing after k turns)`` for each of the first ``n_frames`` snapshots.

    The snapshots are the final game's own (the replay matched the recorded ones to them);
    each is restored into one scratch game, so only one extra game exists at a time.  The
    last frame is the final game itself, which knows how the episode ended.
    """
    snaps = [e for e in final.events if e.get("kind") == "turn"][:n_frames]
    scratch = Game(cfg)
    for k, snap in enumerate(snaps[:-1]):
        scratch.restore({key: v for key, v in snap.items() if key != "kind"})
        yield k, scratch
    yield max(len(snaps) - 1, 0), final


def _frame(game: Game, k: int, acts: list[dict]) -> dict:
    """One frame: the state after ``k`` turns, shown as the page needs it."""
    w, snap, res = game.world, game.snapshot(), game.results()
    cogs = []
    for s, c in enumerate(snap["cogs"]):
        comms = game.commissions(s)
        cogs.append({
            "room": c["room"], "coin": c["coin"], "pack": _goods_text(w, c["items"]),
            "carried": sum(c["items"]), "score": res["scores"][s], "wealth": res["wealth"][s],
            "points": res["questPoints"][s], "delivered": res["delivered"][s],
            "commissions": [{"item": w.goods[q["item"]].plural, "count": q["count"],
                             "delivered": q["delivered"]} for q in comms],
            "robberies": c["robberies"], "robbed": c["robbed"],
            "hiredTo": c["retainerOf"] if c["retainerTurns"] > 0 else -1,
        })
    stalls = []
    for n, keeper in enumerate(w.keepers):
        stock = snap["npcs"][n]["stock"]
        stalls.append({"coin": snap["npcs"][n]["coin"], "goods": [
            {"item": w.goods[g].name, "stock": count_name(w, g, stock[g]),
             "ask": w.ask_table[g][stock[g]],
             "bid": w.bid_table[g][stock[g]]} for g in keeper.trade]})
    done = game.done
    label = ("Before turn 1" if k == 0 else
             f"After turn {k} of {game.config.turns}" + (f" - {res['reason']}" if done else ""))
    return {"turn": k, "label": label, "done": done, "cogs": cogs, "stalls": stalls,
            "ground": [_goods_text(w, f) for f in snap["rooms"]], "acts": acts}


def _goods_text(w: World, counts: list[int]) -> str:
    return ", ".join(count_name(w, g, n) for g, n in enumerate(counts) if n > 0)


def singular(w: World, item: int) -> str:
    """What one of good ``item`` is called on the page.

    The rules name one of a good by its ``name`` (``itemName``, RULES §2.2), and the standard
    town's nails are named "nails": the rules' sentences say "1 nails". A good whose name is
    its plural but whose keywords hold that word without its final "s" ("nail") is called by
    that keyword when there is one; "rope" and "salt" stay as they are.
    """
    g = w.goods[item]
    short = g.name[:-1]
    if g.name == g.plural and g.name.endswith("s") and short in g.keywords:
        return short
    return g.name


def count_name(w: World, item: int, n: int) -> str:
    """``"1 nail"``, ``"2 nails"``, ``"1 hide"``, ``"3 rope"``: a count and the good's name."""
    return f"{n} {singular(w, item) if n == 1 else w.goods[item].plural}"


def _act_view(e: dict, w: World, aliases: list[str]) -> dict:
    """One act as the chronicle tells it: who, the sentence, what came of it."""
    room = e.get("room", -1)
    room_name = w.rooms[room].name if 0 <= room < len(w.rooms) else "?"
    reason = str(e.get("reason", ""))
    return {"seat": e.get("seat", 0), "turn": e.get("turn", 0), "order": e.get("order", 0),
            "intent": e.get("intent", ""), "ok": reason == "ok", "reason": reason,
            "salience": e.get("salience", 0), "sentence": printable(str(e.get("sentence", ""))),
            "say": printable(str(e.get("say", ""))), "outcome": outcome(e, w, aliases, room_name),
            "other": e.get("other", -1), "item": e.get("item", -1), "qty": e.get("qty", 0),
            "coin": e.get("coin", 0)}


def outcome(e: dict, w: World, aliases: list[str], room_name: str) -> str:
    """What came of an act, in words: what happened when it succeeded, why not otherwise."""
    reason, kind = e.get("reason", ""), e.get("intent", "")
    qty, coin = e.get("qty", 0), e.get("coin", 0)

    def name(table, i: int, attr: str = "name") -> str:
        return getattr(table[i], attr) if isinstance(i, int) and 0 <= i < len(table) else "?"

    item = e.get("item", -1)
    goods = count_name(w, item, qty) if isinstance(item, int) and 0 <= item < w.n_goods else ""
    keeper = name(w.keepers, e.get("npc", -1))
    other = e.get("other", -1)
    cog = aliases[other] if isinstance(other, int) and 0 <= other < len(aliases) else "?"
    if kind == "rob" and reason == "robbery_failed":
        return f"the attempt on {cog} failed; paid a fine of {coin} coin."
    if reason != "ok":
        return outcome_text(reason, room_name)
    if kind == "move":
        return f"walked to {name(w.rooms, e.get('toRoom', -1))}."
    if kind == "take":
        return f"picked up {goods}."
    if kind == "drop":
        return f"dropped {goods}."
    if kind == "buy":
        return f"bought {goods} from {keeper} for {coin} coin."
    if kind == "sell":
        return f"sold {goods} to {keeper} for {coin} coin."
    if kind == "give" and e.get("npc", -1) >= 0:
        return f"delivered {goods} to {keeper}: {coin} commission points."
    if kind == "give":
        parts = [p for p in (goods if qty > 0 else "", f"{coin} coin" if coin > 0 else "") if p]
        return f"handed {cog} {' and '.join(parts)}."
    if kind == "trade":
        return f"offered {cog} {goods} for {coin} coin."
    if kind == "hire":
        return f"offered to hire {cog} for {coin} coin."
    if kind == "accept":
        if goods:
            return f"accepted {cog}'s offer: {goods} for {coin} coin."
        return f"was hired by {cog} for {coin} coin."
    if kind == "rob":
        return f"robbed {cog} of {goods or f'{coin} coin'}."
    if kind == "quest":
        return f"asked {keeper} about the commissions."
    if kind == "say":
        return "spoke."
    return outcome_text(reason, room_name)


def highlights(frames: list[dict], w: World = STANDARD_TOWN, aliases: list[str] | None = None,
               n: int = HIGHLIGHTS) -> list[dict]:
    """The ``n`` most salient happenings (ties: the earlier), in the order they began.

    A happening is told once however often it repeats: acts of one seat with the same outcome,
    and a robber's robberies of one cog (robbery takes whatever is carried, so the goods
    differ), are one highlight with their count and turns. Otherwise one magpie robbing one
    victim in the dark, turn after turn, fills the reel by itself.
    """
    groups: dict[tuple, list[tuple[int, dict]]] = {}
    for f in frames:
        for a in f["acts"]:
            groups.setdefault(_happening(a), []).append((f["turn"], a))
    # each group's most salient act, the earliest of equals, decides its place in the reel
    best = {key: min(acts, key=lambda t: (-t[1]["salience"], t[0], t[1]["order"]))
            for key, acts in groups.items()}
    top = sorted(groups, key=lambda k: (-best[k][1]["salience"], best[k][0],
                                        best[k][1]["order"]))[:n]
    top.sort(key=lambda k: (groups[k][0][0], groups[k][0][1]["order"]))
    return [_highlight(groups[k], w, aliases) for k in top]


def _happening(a: dict) -> tuple:
    """What makes two acts the same happening: a robber and its victim for a robbery that
    succeeded, else the seat and the act's outcome in words."""
    if _robbery(a):
        return (a["seat"], "robbed", a.get("other", -1))
    return (a["seat"], a["intent"], a["outcome"])


def _robbery(a: dict) -> bool:
    return a["intent"] == "rob" and a["ok"]


def _highlight(acts: list[tuple[int, dict]], w: World, aliases: list[str] | None) -> dict:
    """One highlight: the group's first act, told for all of them."""
    first_turn, first = acts[0]
    frames = [turn for turn, _ in acts]
    text = first["outcome"]
    if len(acts) > 1:
        text = (_robberies(acts, w, aliases) if _robbery(first)
                else f"{text.rstrip('.')} ({_times(len(acts))}).")
    return {**first, "frame": first_turn, "frames": frames, "count": len(acts),
            "salience": max(a["salience"] for _, a in acts), "when": _turns_text(frames),
            "outcome": text}


def _robberies(acts: list[tuple[int, dict]], w: World, aliases: list[str] | None) -> str:
    """``robbed Bolt 8 times: 1 rope, 4 nails and 3 hides in all.``"""
    other = acts[0][1].get("other", -1)
    cog = aliases[other] if aliases and isinstance(other, int) and 0 <= other < len(aliases) \
        else "?"
    taken = [0] * w.n_goods
    coin = 0
    for _, a in acts:
        item, qty = a.get("item", -1), a.get("qty", 0)
        if isinstance(item, int) and 0 <= item < w.n_goods and isinstance(qty, int) and qty > 0:
            taken[item] += qty
        elif isinstance(a.get("coin"), int):
            coin += a["coin"]
    parts = [count_name(w, g, k) for g, k in enumerate(taken) if k > 0]
    parts += [f"{coin} coin"] if coin > 0 else []
    loot = ", ".join(parts[:-1]) + " and " + parts[-1] if len(parts) > 1 else "".join(parts)
    return f"robbed {cog} {_times(len(acts))}" + (f": {loot} in all." if loot else ".")


def _times(k: int) -> str:
    return {1: "once", 2: "twice"}.get(k, f"{k} times")


def _turns_text(frames: list[int]) -> str:
    """``Turn 4``, ``Turns 4 and 8``, ``Turns 3-10``, ``Turns 3-5, 9`` (runs joined by an en
    dash)."""
    runs: list[list[int]] = []
    for t in sorted(set(frames)):
        if runs and t == runs[-1][1] + 1:
            runs[-1][1] = t
        else:
            runs.append([t, t])
    if len(runs) == 1 and runs[0][0] == runs[0][1]:
        return f"Turn {runs[0][0]}"
    parts = [f"{a}" if a == b else f"{a}\u2013{b}" for a, b in runs]
    return "Turns " + (" and ".join(parts) if len(parts) == 2 else ", ".join(parts))
