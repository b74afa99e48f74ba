"""``guild verify``: re-derive every replay and check what the league claims against it.

Per results line (``check_episode``): the line is the episode that ``league.json``'s lineup draw
puts at its index (seed and policy names by seat); ``replays/<id>.json`` exists, carries that
seed and lineup and ``league.json``'s turns, thievery and speech, re-derives with
``sim.replay`` (RULES §15.4: every recorded snapshot and the end reason follow from the
recorded acts) and gives exactly the line's 11 result keys (and the payload's own
``results``). Across the league (``league.core.verify_claims``): every episode that
``league.json`` claims is in ``results.jsonl`` exactly once, the fallbacks and faults agree with
the replays' scripted marks, each seat's ``fallbackPlay`` (what played its fallbacks) is what
``league.json``'s ``--fallback`` gives, and ``ladder.json`` is the ladder of the results.

Every disagreement is one line naming the file or episode, and what is printed is bounded
however many lines are bad (the first :data:`SHOWN_LINES` are named, the rest counted); a
directory that is not a league (no ``league.json``, unreadable files, a results file that is no
regular file or holds more lines than any league) is a ``LeagueError`` instead. The folder may
come from anyone: each string of it that a line shows (an id, a policy name, a seed that is not
a number) is cut and escaped (``league.core.store.shown``), so that none forges a line or acts
on the terminal.

A resume runs the same checks before the league signs again (:func:`check_resume`), or its key
would vouch for whatever the folder holds: ``league.json``'s settings against those
``signature.json`` signed (:func:`check_signed_settings`), the lines it signed by digest
(cheap), the lines after them (a crash, or no signature yet) by re-deriving their replays.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from league.core import replay_seats, verify_signature
from league.core import verify_claims as claims
from league.core.episode import RESULT_KEYS, Settings, trusted
from league.core.errors import LeagueError
from league.core.files import (
    MAX_REPLAY_BYTES,  # noqa: F401 - the cap of a replay verify reads, as callers know it
    REPLAY_PROTOCOL,
    check_regular,
    load_replay,
)
from league.core.lineups import SECRET_SCHEME, Draw, EpisodeSpec, SecretDraw, episode_spec
from league.core.signing import SIGNATURE
from league.core.store import (
    MANIFEST,
    MAX_RESULTS_BYTES,
    REPLAYS,
    RESULTS,
    SHOWN_NAME,
    load_results,
    read_manifest,
    row_problem,
    shown,
)
from sim import GameConfig, ReplayMismatch, replay
from sim.replay import same
from sim.rules.world import SEATS, STANDARD_TOWN

PROTOCOL = REPLAY_PROTOCOL
ROW_KEYS = ("id", "index", "group", "rotation", "seed", "lineup", *RESULT_KEYS, "fallbacks",
            "faults", "faultNotes")
# Keys the league writes that lines of older leagues lack (fallbackPlay, trusted) or that no
# one can check (wallTime): allowed, never required.  Any other key is no league's: a key
# added by hand would otherwise be signed with the lines on a resume.
LATER_KEYS = ("trusted", "fallbackPlay", "wallTime")


@dataclass
class Report:
    """What verification found: results lines checked, lines that fail, and every problem."""

    checked: int
    failed: int
    problems: list[str] = field(default_factory=list)
    torn: bool = False
    notes: list[str] = field(default_factory=list)  # what could not be checked, and why
    # the seats played again and the signature's key (league.core.replay_seats, .verify_signature)
    vouched: list[str] = field(default_factory=list)

    @property
    def first(self) -> str | None:
        return self.problems[0] if self.problems else None

    def lines(self) -> list[str]:
        """What ``guild verify`` prints: each problem, then a summary."""
        out = [f"verify: {p}" for p in self.problems] + [f"verify: {n}" for n in self.notes]
        out += [f"verify: {n}" for n in self.vouched]
        if self.problems:
            out.append(f"verify: {self.failed} of {self.checked} episodes do not verify; "
                       f"{len(self.problems)} problem{'s' * (len(self.problems) > 1)} in all")
        else:
            out.append(f"verify: all {self.checked} episodes verify, and {RESULTS}, the "
                       f"lineups, the fallbacks and the ladder agree with {MANIFEST}")
        return out


def verify_dir(root: str | Path, public_key: str | None = None) -> Report:
    """Check the league in ``root``; ``LeagueError`` if it is not one. With ``public_key``
    (64 hex digits) its signature must be by that key (``league.core.verify_signature``)."""
    if not os.fspath(root):  # Path("") is ".": it would be read as the current folder
        raise LeagueError("DIR is empty; give a league's --out directory")
    root = Path(root)
    if not root.is_dir():
        raise LeagueError(f"{root} is not a directory")
    if not os.path.lexists(root / RESULTS):
        raise LeagueError(f"{root} has no {RESULTS}; is it a league's --out directory?")
    check_regular(root / RESULTS, MAX_RESULTS_BYTES, "results file")  # not a FIFO, /dev/zero
    manifest = league_manifest(root / MANIFEST)
    rows, torn = load_results(root / RESULTS)
    problems = _guarded(lambda: claims.schedule_problems(rows, manifest["episodes"]),
                        f"{RESULTS}'s episode ids")
    draw, draw_problems = _draw(manifest)
    problems += draw_problems
    bad: dict[int, str] = {}
    marks: dict[int, claims.Marks] = {}
    secret: list[int] = []  # rows whose group's secret is not revealed yet
    seats = replay_seats.Seats(manifest)  # the deterministic seats, re-played
    for n, row in enumerate(rows):
        try:
            problem, seat_marks = check_episode(root, n, row, manifest, draw, secret, seats)
        except RecursionError:  # a line or a replay nested deeper than any real one
            problem, seat_marks = f"{NESTED} in the line or its replay", None
        if problem is not None:
            bad[n] = problem
        elif seat_marks is not None:
            marks[n] = seat_marks
    bad.update(claims.fallback_problems(rows, marks))
    bad.update(claims.fallback_play_problems(rows, manifest))
    for n in sorted(bad)[:SHOWN_LINES]:
        problems.append(f"{shown(rows[n].get('id', '?'))} ({RESULTS} line {n + 1}): {bad[n]}")
    if len(bad) > SHOWN_LINES:
        problems.append(f"{len(bad) - SHOWN_LINES} more lines of {RESULTS} do not verify (the "
                        f"first {SHOWN_LINES} are named above)")
    if all(not any(k not in r for k in ROW_KEYS) and row_problem(r) is None for r in rows):
        problems += _guarded(lambda: claims.ladder_problems(root, rows, manifest),
                             claims.LADDER)
    notes = []
    if secret:
        notes.append(f"the seeds and lineups of {len(secret)} episodes were not checked: their "
                     f"draw is secret until the league ends ({MANIFEST} holds only its "
                     "commitment); everything else was")
    signature = verify_signature.check(root, manifest, rows, public_key)
    problems += signature.problems
    return Report(len(rows), len(bad), problems, torn, notes, seats.notes() + signature.notes)


SHOWN_LINES = 20  # lines that do not verify named one by one; the rest are counted


# How to go on from a refused resume; the refusal says what differs.
RESTORE = "or start the league in another --out"
UNVOUCHED = "the league signs only what it can vouch for"
SHOWN_CHARS = 300  # of a problem in a refusal, or an error in a problem: a line may hold anything


def check_signed_settings(root: Path, old: dict) -> verify_signature.Vouched:
    """What the league's signature vouches for, after checking that every setting of
    ``league.json`` (``old``, as the folder holds it) is the one it signed; ``LeagueError`` in
    one line naming the first that is not.

    A resume compares its options with ``league.json`` (``LeagueDir.check_identity``), so an
    edited file would carry the league on under other rules or code and the run would sign the
    mix. The signature's ``manifest`` (``league.core.signing.manifest_digests``) holds each
    setting's digest; one signed before it lacks them, and only its other checks apply. Checked
    by the key ``old`` names: a run with another key is refused by the identity check, with
    that key named.
    """
    signed = verify_signature.vouched(
        root, old.get("signedBy"),
        f"restore it, or delete it to have every line of {RESULTS} checked against its "
        f"replay, {RESTORE}")
    changed = verify_signature.changed_setting(old, signed.settings or {})
    if changed is not None:
        raise LeagueError(f"{MANIFEST}'s {shown(changed, SHOWN_NAME)} is not what {SIGNATURE} "
                          f"signed (the file was edited); {UNVOUCHED}: restore it, {RESTORE}")
    return signed


def check_resume(root: Path, manifest: dict, rows: Sequence[dict], draw: Draw,
                 signed: verify_signature.Vouched | None = None) -> verify_signature.Vouched:
    """What the league's signature vouches for (its leading lines of ``rows``, the results
    lines of the league in ``root``, and their replays' digests); ``LeagueError`` in one line
    if the league must not sign over what is there.

    Signed lines must be the bytes signed and their replays the replays signed, or missing
    (the league plays a missing replay again). The lines after them must verify as ``guild
    verify`` checks them, except that a line whose replay is missing is left to the league,
    which plays it again and compares (``league.tournament``). ``manifest``: this run's;
    ``signed``: what :func:`check_signed_settings` found, if it was called.
    """
    if signed is None:
        signed = verify_signature.vouched(
            root, manifest.get("signedBy"),
            f"restore it, or delete it to have every line of {RESULTS} checked against its "
            f"replay, {RESTORE}")
    results = root / RESULTS
    if (signed.results is not None
            and verify_signature.head_sha256(results, signed.lines) != signed.results):
        if len(rows) < signed.lines:
            what = (f"{results} has {len(rows)} lines, fewer than the {signed.lines} that "
                    f"{SIGNATURE} signed")
        else:
            what = (f"{results} is not the file {SIGNATURE} signed: its first {signed.lines} "
                    "lines differ from those signed")
            found = _first_problem(root, rows, range(signed.lines), manifest, draw)
            if found is not None:
                what += f" (line {found[0] + 1} does not verify: {found[1]})"
        raise LeagueError(f"{what}; {UNVOUCHED}: restore the file as it was signed, {RESTORE}")
    changed = verify_signature.changed_replays(root, signed.replays)
    if changed:
        more = f", and {len(changed) - 1} more" if len(changed) > 1 else ""
        raise LeagueError(f"{root / REPLAYS / shown(changed[0])}.json is not the replay "
                          f"{SIGNATURE} signed (its sha256 differs{more}); {UNVOUCHED}: restore "
                          f"it, or delete it for the league to play it again, {RESTORE}")
    found = _first_problem(root, rows, range(signed.lines, len(rows)), manifest, draw)
    if found is not None:
        n, problem = found
        raise LeagueError(f"{results} line {n + 1} ({shown(rows[n].get('id'))}), which no "
                          f"signature covers yet, does not verify: {problem}; {UNVOUCHED}: "
                          f"restore the line and its replay as the league wrote them, "
                          f"{RESTORE}")
    return signed


def _first_problem(root: Path, rows: Sequence[dict], lines: range, manifest: dict,
                   draw: Draw) -> tuple[int, str] | None:
    """The first of ``lines`` (0-based) that does not verify, and why: its shape, its replay
    re-derived and its seats re-played, its fallbacks; a line whose replay is missing is
    checked for its shape only."""
    bad: dict[int, str] = {}
    marks: dict[int, claims.Marks] = {}
    seats: replay_seats.Seats | None = None
    for n in lines:
        row = rows[n]
        try:
            problem = _shape(row)
            if problem is None and (root / REPLAYS / f"{row['id']}.json").exists():
                seats = seats if seats is not None else replay_seats.Seats(manifest)
                problem, seat_marks = check_episode(root, n, row, manifest, draw, [], seats)
                if seat_marks is not None:
                    marks[n] = seat_marks
        except RecursionError:
            problem = f"{NESTED} in the line or its replay"
        if problem is not None:
            bad[n] = problem
    bad.update(claims.fallback_problems(rows, marks))
    bad.update((n, p) for n, p in claims.fallback_play_problems(rows, manifest).items()
               if n in lines and n not in bad)
    if not bad:
        return None
    n = min(bad)
    return n, one_line(bad[n])


def _shape(row: dict) -> str | None:
    """What a results line lacks to be one (None if nothing)."""
    problem = _key_problem(row)
    if problem is not None:
        return problem
    problem = row_problem(row)
    return None if problem is None else f"the line {problem}"


def _key_problem(row: dict) -> str | None:
    """A key the line lacks, or one no league writes (None if neither)."""
    missing = [k for k in ROW_KEYS if k not in row]
    if missing:
        return f"the line lacks {', '.join(missing)}"
    foreign = [k for k in row if k not in ROW_KEYS and k not in LATER_KEYS]
    if foreign:
        more = f" and {len(foreign) - 1} more" if len(foreign) > 1 else ""
        return f"the line holds a key no league writes: {shown(foreign[0], quoted=True)}{more}"
    return None


def one_line(text: str, limit: int = SHOWN_CHARS) -> str:
    """``text`` as one line of at most ``limit`` characters (and "..."), its runs of white
    space one space each, nothing in it acting on a terminal (:func:`shown`)."""
    return shown(" ".join(text.split()), limit)


def _draw(manifest: dict) -> tuple[Draw, list[str]]:
    """The draw ``league.json`` describes: ``--seed``, or the secrets it has revealed, each
    checked against its commitment."""
    if manifest.get("draw") != SECRET_SCHEME:
        return manifest["seed"], []
    pairs: list[tuple[int, bytes | None]] = []
    problems: list[str] = []
    commitments = manifest.get("commitments")
    if not isinstance(commitments, list) or not commitments:
        return SecretDraw(()), [f"{MANIFEST} names a secret draw but holds no commitment to it"]
    for c in commitments:
        if not isinstance(c, dict) or not isinstance(c.get("fromGroup"), int):
            problems.append(f"{MANIFEST} has a commitment that is not one: {shown(c)}")
        elif c.get("secret") is None:
            pairs.append((c["fromGroup"], None))  # not revealed: its groups go unchecked
        else:
            try:
                secret = bytes.fromhex(str(c["secret"]))
            except ValueError:
                secret = b""
            if hashlib.sha256(secret).hexdigest() != c.get("sha256"):
                problems.append(f"{MANIFEST}'s secret from group {c['fromGroup']} does not "
                                "match its commitment")
                pairs.append((c["fromGroup"], None))
            else:
                pairs.append((c["fromGroup"], secret))
    return SecretDraw(tuple(sorted(pairs, key=lambda p: p[0]))), problems


NESTED = "a value is nested too deeply"


def _guarded(check: Callable[[], list[str]], what: str) -> list[str]:
    """``check()``'s problems; a value nested deeper than Python can walk is one problem."""
    try:
        return check()
    except RecursionError:
        return [f"{what}: {NESTED}"]


def check_episode(root: Path, n: int, row: dict, manifest: dict, draw: Draw | None = None,
                  secret: list[int] | None = None, seats: replay_seats.Seats | None = None,
                  ) -> tuple[str | None, claims.Marks | None]:
    """What is wrong with results line ``n`` (None when it verifies), and the replay's marks."""
    problem = _key_problem(row)
    if problem is not None:
        return problem, None
    index = row["index"]
    if not isinstance(index, int) or isinstance(index, bool) or index < 0:
        return f"index {shown(index, quoted=True)} is not an episode index", None
    try:
        spec = episode_spec(manifest["policies"],
                            manifest["seed"] if draw is None else draw, index)
    except KeyError:  # its group's secret is not revealed yet: the rest is still checked
        if secret is not None:
            secret.append(n)
        shape = _shape(row)  # the spec is the line's own: it must have a line's shape
        if shape is not None:
            return shape, None
        group, rotation = divmod(index, SEATS)
        spec = EpisodeSpec(index, group, rotation, row["seed"], tuple(row["lineup"]))
    if row["id"] != spec.id:
        return f"id {shown(row['id'])} does not go with index {index} ({spec.id})", None
    if (row["group"], row["rotation"]) != (spec.group, spec.rotation):
        return (f"group {shown(row['group'])}, rotation {shown(row['rotation'])} are not the "
                f"episode's ({spec.group}, {spec.rotation})"), None
    if row["seed"] != spec.seed:
        return f"seed {shown(row['seed'])}, but {MANIFEST}'s draw gives {spec.seed}", None
    if row["lineup"] != list(spec.lineup):
        return (f"lineup {_names(row['lineup'])}, but {MANIFEST}'s draw seats "
                f"{_names(spec.lineup)}"), None
    ran = how_seats_ran(row["lineup"], manifest)
    if "trusted" in row and row["trusted"] != ran["trusted"]:  # lines before --trust lack it
        return _not_as_ran(RESULTS, "trusted", row["trusted"], ran["trusted"]), None
    return _check_replay(root, row, seats, ran, manifest)


def how_seats_ran(lineup: Sequence[str], manifest: dict) -> dict[str, list]:
    """Where each seat's policy ran, as its replay records it: ``trusted`` (in the league's
    process) and ``sandbox`` (null in the process, else ``league.json``'s ``--sandbox``), both
    following from the names and the options."""
    settings = Settings(policies=tuple(lineup), trust=manifest.get("trust") is True)
    ran = [trusted(name, settings) for name in lineup]
    return {"trusted": ran, "sandbox": [None if t else manifest.get("sandbox") for t in ran]}


def _not_as_ran(where: str, key: str, claimed: object, expected: list) -> str:
    return (f"{where} claims {key} {one_line(json.dumps(claimed), 120)}, but the policies and "
            f"{MANIFEST}'s options give {one_line(json.dumps(expected), 120)}")


def _check_replay(root: Path, row: dict, seats: replay_seats.Seats | None = None,
                  ran: dict[str, list] | None = None, manifest: dict | None = None,
                  ) -> tuple[str | None, claims.Marks | None]:
    path = root / REPLAYS / f"{row['id']}.json"
    where = f"{REPLAYS}/{path.name}"
    if not os.path.lexists(path):
        return f"replay {where} is missing", None
    try:  # a regular file of the league's own, no link, FIFO or /dev/zero; parsed bounded
        payload = load_replay(path, follow=False)
    except LeagueError as e:
        return str(e).replace(str(path), f"replay {where}", 1), None
    config, events = payload["config"], payload["events"]
    if config.get("world") != STANDARD_TOWN.to_json():
        return (f"replay {where} is not played in the standard town, which every league "
                "episode is"), None
    if config.get("seed") != row["seed"] or payload.get("policyNames") != row["lineup"]:
        return (f"replay {where} has seed {shown(config.get('seed'))} and policies "
                f"{shown(payload.get('policyNames'), 200)}, not the results line's"), None
    try:
        cfg = GameConfig.from_dict({**config, "players": row["lineup"]})
    except (ValueError, TypeError, KeyError, AttributeError) as e:
        return f"replay {where} has an invalid config: {shown(str(e), SHOWN_CHARS)}", None
    for key, played in (("turns", cfg.turns), ("thievery", cfg.thievery),
                        ("speech", cfg.speech)):
        if (manifest is not None and key in manifest
                and (played != manifest[key] or type(played) is not type(manifest[key]))):
            return (f"replay {where} is played with {key} {shown(json.dumps(played))}, but "
                    f"{MANIFEST} gives {shown(json.dumps(manifest[key]), 60)}"), None
    try:
        game = replay(cfg, events)
    except ReplayMismatch as e:
        return f"replay {where} does not re-derive: {shown(str(e), SHOWN_CHARS)}", None
    except ValueError as e:
        return f"replay {where} has an invalid config: {shown(str(e), SHOWN_CHARS)}", None
    except (TypeError, KeyError, AttributeError, IndexError) as e:
        return f"replay {where} has malformed events ({type(e).__name__})", None
    if not game.done:
        return f"replay {where} stops before the episode ends", None
    derived = game.results()
    for key in RESULT_KEYS:  # of the same JSON types too: a score of 1 is not 1.0
        if not same(derived[key], row[key]):
            return (f"{RESULTS} claims {key} {shown(row[key], 200, quoted=True)} but replay "
                    f"{where} gives {shown(derived[key], 200, quoted=True)}"), None
    if not same(derived, payload.get("results")):
        return f"replay {where}'s own results differ from what its events give", None
    if "fallbackPlay" in row and payload.get("fallbackPlay") != row["fallbackPlay"]:
        return f"replay {where}'s fallbackPlay differs from the results line's", None
    for key, expected in (ran or {}).items():  # replays before --trust or --sandbox lack them
        if key in payload and payload[key] != expected:
            return _not_as_ran(f"replay {where}", key, payload[key], expected), None
    replayed = seats.check(row, cfg, events) if seats is not None else None
    if replayed is not None:  # a seat did not play as its (deterministic) policy does
        return f"replay {where}: {replayed}", None
    return None, claims.replay_marks(events)


def _names(lineup: object) -> str:
    """A lineup as a problem line shows it: ``a,b,c,d,e,f``, each name shown inert."""
    if not isinstance(lineup, (list, tuple)):
        return shown(lineup, quoted=True)
    more = ",..." if len(lineup) > SEATS else ""
    return ",".join(shown(name, SHOWN_NAME) for name in lineup[:SEATS]) + more


def league_manifest(path: Path) -> dict:
    """``league.json``, which says what the league claims; without it there is nothing to check."""
    data = read_manifest(path)
    if data is None:
        raise LeagueError(f"{path.parent} has no {MANIFEST}; it says which episodes the "
                          "league holds, so there is nothing to check against")
    ok = (isinstance(data.get("policies"), list)
          and data["policies"] and all(isinstance(p, str) for p in data["policies"])
          and (isinstance(data.get("seed"), int) or (data.get("seed") is None
                                                      and data.get("draw") == SECRET_SCHEME))
          and isinstance(data.get("episodes"), int) and data["episodes"] >= 1)
    if not ok:
        raise LeagueError(f"{path} does not describe a league (policies, seed or a secret "
                          "draw, episodes)")
    return data
