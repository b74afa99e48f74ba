"""Running a whole league: check the options, resume the directory, play, record, rank.

See ``league.core.lineups`` for the schedule, ``league.core.episode`` for one episode and its
faults, ``league.core.store`` for what is written and why nothing is lost, ``league.core.ladder``
for the statistics and ``league.procs.backends`` for where episodes run.

Nothing here prints: what a user should hear (a repaired results file, faulty policies) goes to
the ``on_note`` callback as it happens and is kept in ``LeagueRun.notes``; progress goes to
``on_progress``. The command line (``league.cli``) prints both.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from league.apart import sandbox
from league.apart.isolated import DEFAULT_MEMORY_MB, close_all
from league.core import ladder, policy_code, replay_seats, signing, verify
from league.core.atomic import write_atomic
from league.core.episode import FALLBACKS, FAULT_KINDS, Settings, built_policy, reach, trusted
from league.core.errors import LeagueError
from league.core.files import MAX_REPLAY_BYTES
from league.core.lineups import (
    SCHEME,
    SECRET_SCHEME,
    Draw,
    EpisodeSpec,
    Schedule,
    SecretDraw,
    episode_spec,
    schedule,
)
from league.core.signing import SIGNATURE, file_sha256
from league.core.store import (
    CODE,
    FORMAT,
    LADDER,
    MANIFEST,
    MAX_EPISODES,
    RESULTS,
    SECRETS,
    LeagueDir,
    check_out,
    shown,
    sync_files,
)
from league.core.verify_signature import Vouched
from league.procs import backends
from league.procs.workers import runs_local_model
from sim import GameConfig
from sim.rules.world import MAX_TURNS, MIN_TURNS, SEATS


@dataclass(frozen=True)
class LeagueOptions:
    """The options of ``guild league`` (see ``guild league --help``)."""

    policies: tuple[str, ...]
    episodes: int
    out: str
    seed: int | None = None   # None: a secret draw (league.core.lineups.SecretDraw)
    public_draw: bool = False  # accept --seed's public draw with seats that run apart
    workers: int = 1
    turns: int = 14
    honest_town: bool = False
    no_speech: bool = False
    decision_timeout: float | None = None
    episode_timeout: float | None = None
    start_timeout: float | None = None  # a seat process's episode reset (None: 60 s)
    plot: bool = False
    backend: str = "local"
    address: str | None = None
    trust: bool = False
    seat_memory: int = DEFAULT_MEMORY_MB
    sandbox: str = "bwrap"
    fallback: str | None = None  # --fallback: wait or factor (None: factor for llm:, else wait)
    signing_key: str | None = None  # --signing-key FILE (None: league.core.signing's default key)

    def apart(self) -> bool:
        """Whether any policy runs apart from the league's process (in a seat process)."""
        settings = Settings(policies=self.policies, trust=self.trust)
        return not all(trusted(name, settings) for name in self.policies)

    def manifest(self, episodes: int) -> dict:
        """``league.json``: everything that decides the episodes, plus the count asked for."""
        return {"format": FORMAT, "policies": list(self.policies), "seed": self.seed,
                **({} if self.seed is not None else {"draw": SECRET_SCHEME}),
                "turns": self.turns, "thievery": not self.honest_town,
                "speech": not self.no_speech, "decisionTimeout": self.decision_timeout,
                "episodeTimeout": self.episode_timeout, "lineups": SCHEME,
                **({"startTimeout": self.start_timeout} if self.start_timeout is not None
                   else {}),
                **({"trust": True} if self.trust else {}),
                **({"sandbox": self.sandbox, "seatMemory": self.seat_memory} if self.apart()
                   else {}),
                **({"fallback": self.fallback} if self.fallback is not None else {}),
                **signing.signed_by(self.signing_key),  # the key that signs signature.json
                **replay_seats.model_digests(self.policies),  # ppo: files' sha256
                **policy_code.code_digests(self.policies, self.out),  # module:, exec:
                "episodes": episodes}


Note = Callable[[str], None]
ProgressReport = Callable[[int, int], None]  # (episodes done, episodes to play) this run


@dataclass
class LeagueRun:
    """What a run did: episodes before and after, the new rows, the ladder, the time taken.

    ``notes`` are the messages for the user, in order (also sent to ``on_note``).
    """

    before: int
    rows: list[dict]
    ladder: dict
    seconds: float
    torn: bool
    notes: list[str] = field(default_factory=list)

    @property
    def new(self) -> int:
        return len(self.rows) - self.before


# Bounds of the numeric options, checked before anything is written. Episodes: MAX_EPISODES
# (league.core.store: ids keep their six digits, the results stay in memory, a row about 1 KB;
# a results file of more lines is no league's); seeds stay exact in any JSON reader that uses
# int64; a worker is a process (or a Ray task in flight) each.
MAX_WORKERS = 1024
SEED_RANGE = (-(2**63), 2**63 - 1)
MAX_SECONDS = 1e6  # time limits: larger ones overflow select() and thread waits


def _bounded(flag: str, value: int, low: int, high: int) -> None:
    if not low <= value <= high:
        got = str(value) if len(str(value)) <= 24 else f"a {len(str(abs(value)))}-digit number"
        raise LeagueError(f"{flag} must be {low}..{high}; got {got}")


def check_options(o: LeagueOptions) -> list[tuple[str, Any]]:
    """Refuse bad options before anything is written (each a ``LeagueError``, one line); the
    policies, each built once, for :func:`reach_policies`."""
    _bounded("--episodes", o.episodes, 1, MAX_EPISODES)
    _bounded("--workers", o.workers, 1, MAX_WORKERS)
    check_out(o.out)  # before any policy is built or asked: nothing is written to a bad --out
    if o.seed is not None:
        _bounded("--seed", o.seed, *SEED_RANGE)
        if o.apart() and not o.public_draw:
            raise LeagueError("--seed S draws every town in public (whoever knows S knows every "
                              "seat's commissions), and seats that run apart could search it; "
                              "leave --seed out for a secret draw, or add --public-draw")
    _bounded("--turns", o.turns, MIN_TURNS, MAX_TURNS)
    try:
        GameConfig(seed=0, turns=o.turns)
    except ValueError as e:
        raise LeagueError(f"--turns: {e}") from None
    for flag, value in (("--decision-timeout", o.decision_timeout),
                        ("--episode-timeout", o.episode_timeout),
                        ("--start-timeout", o.start_timeout)):
        if value is not None and not 0 < value <= MAX_SECONDS:
            raise LeagueError(f"{flag} must be a positive number of seconds, at most "
                              f"{MAX_SECONDS:g}; got {value}")
    if o.sandbox not in sandbox.MODES:
        raise LeagueError(f"--sandbox must be one of {', '.join(sandbox.MODES)}; "
                          f"got {o.sandbox!r}")
    if o.sandbox == "bwrap" and o.apart():
        try:
            sandbox.require()
        except sandbox.SandboxError as e:
            raise LeagueError(str(e)) from None
    if o.backend not in ("local", "ray"):
        raise LeagueError(f"--backend must be local or ray; got {o.backend!r}")
    if o.fallback is not None and o.fallback not in FALLBACKS:
        raise LeagueError(f"--fallback must be {' or '.join(FALLBACKS)}; got {o.fallback!r}")
    if o.address and o.backend != "ray":
        raise LeagueError("--address is for --backend ray")
    if o.backend == "ray" and not backends.ray_available():
        raise LeagueError("--backend ray needs Ray: pip install 'guild-game[ray]'")
    if o.plot:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            raise LeagueError("--plot needs matplotlib: pip install 'guild-game[plot]'") from None
    settings = Settings(policies=o.policies, decision_timeout=o.decision_timeout, trust=o.trust,
                        seat_memory=o.seat_memory, sandbox=o.sandbox, fallback=o.fallback,
                        hidden=(str(Path(o.out).resolve()),))
    built = []
    for spec in o.policies:
        try:
            built.append((spec, built_policy(spec, settings)))
        except Exception as e:  # a user's policy may raise anything while being built
            raise _refusal(spec, e) from None
    if o.workers > 1 or o.backend == "ray":
        _stop_local_servers()
    return built


def reach_policies(built: Sequence[tuple[str, Any]]) -> None:
    """Refuse the league (``LeagueError``, one line) unless every policy :func:`check_options`
    built can play: its endpoint answers, its program starts in its sandbox, it plays the
    league's town (a ``ppo:`` or ``sb3:`` model of another town's shapes does not)."""
    for spec, policy in built:
        try:
            reach(policy, spec)
        except Exception as e:  # a user's policy may raise anything
            raise _refusal(spec, e) from None


def _refusal(spec: str, e: Exception) -> LeagueError:
    """A policy's refusal as the league's one line, shown inert: its text may come from the
    policy's own code (a ``check_world`` or a constructor raising escape codes)."""
    msg = str(e).splitlines()[0] if str(e) else type(e).__name__
    msg = shown(msg, 1000)
    return LeagueError(msg if isinstance(e, ValueError) else
                       f"policy {shown(spec)!r} cannot be built: {type(e).__name__}: {msg}")


def _stop_local_servers() -> None:
    """Stop the model servers that checking an ``llm:local`` seat started here: the episodes
    play in workers, which start their own, so these would sit idle all league."""
    local = sys.modules.get("agents.llm.local")  # imported only if a spec named it
    if local is not None:
        local.stop_all()


def run_league(o: LeagueOptions, *, on_note: Note | None = None,
               on_progress: ProgressReport | None = None) -> LeagueRun:
    """Play the league's missing episodes into ``o.out`` and rank it.

    Resumes what is there (same configuration only), extends it when ``o.episodes`` is larger,
    and leaves finished episodes' lines and files untouched. ``on_progress(done, total)`` is
    called with 0 before the first new episode and after each one is recorded.
    """
    notes: list[str] = []

    def note(message: str) -> None:
        notes.append(message)
        if on_note is not None:
            on_note(message)

    built = check_options(o)
    # A new league's policies must be able to play before its folder is made; a league begun
    # before is checked once it is known to have episodes to play (missing, or lost replays),
    # still before anything is written: re-ranking a finished one (--report, --plot) needs no
    # server.
    begun = os.path.exists(os.path.join(o.out, MANIFEST))
    if not begun:
        reach_policies(built)
    signing.prepare(o.signing_key, o.out, note)  # the key is usable (made on first use)
    started = time.perf_counter()
    ray = (backends.ray_session(o.workers, o.address, o.policies) if o.backend == "ray"
           else contextlib.nullcontext())
    with ray, LeagueDir(o.out) as d:
        old = d.read_manifest()
        manifest = o.manifest(o.episodes)  # once: it loads the key and hashes ppo: models
        for name, digest in manifest.get(CODE, {}).items():
            if digest.get("capped"):
                note(f"league: policy {shown(name)!r} has too much code to hash whole (over "
                     f"{policy_code.MAX_CODE_FILES} files, {policy_code.MAX_CODE_BYTES >> 20} MB "
                     f"or {policy_code.MAX_CODE_ENTRIES} "
                     "folder entries): league.json records the sha256 of its first files (by "
                     "path) only, so a change in the others goes unnoticed on resume")
        d.check_identity(manifest)  # before the draw, which may write the secret
        # ... against league.json as it was signed: an edited one would carry the league on
        # under the edited settings (options given to match it pass the identity check)
        signed = verify.check_signed_settings(d.root, old) if old is not None else None
        _check_not_fewer(o, old)
        draw, commitments = _draw(d, o, old)
        rows, torn = d.resume(manifest, draw)
        # before anything is written: the league signs again at the end, so what it resumes
        # must be what it signed, or verify as guild verify checks it
        signed = verify.check_resume(d.root, manifest, rows, draw, signed)
        kind = _kept_interval(d.root, signed, rows, o.policies,
                              ladder.bootstrap_seed(o.seed, commitments))
        if o.fallback is None and rows and "fallbackPlay" not in rows[0]:
            o = replace(o, fallback="factor")  # begun before --fallback: factor played them all
        key = draw.seat_key() if isinstance(draw, SecretDraw) else None  # of group 0's secret
        if begun and (len(rows) < o.episodes or _lost(d, rows)):  # it will play: can it?
            reach_policies(built)  # before anything is written, as for a new league
        del built  # built to be checked; the episodes build their own
        _replay_lost(d, o, rows, note, draw, key, signed)
        d.tidy()
        if torn:
            note(f"league: cut the unfinished last line of {d.results} (an interrupted run)")
        before = len(rows)
        if commitments is not None:
            draw, commitments = _extended(d, o, draw, commitments, before, old)
        manifest = {**manifest, "episodes": max(o.episodes, before)}
        d.write_manifest(_with_draw(manifest, commitments))
        specs = schedule(o.policies, draw, before, o.episodes)
        try:
            if specs:
                _play_into(d, o, specs, rows, on_progress, key)
        finally:
            close_all()  # seat processes of episodes played here (workers close their own)
        if commitments is not None and len(rows) >= o.episodes:  # ended: reveal the secrets
            d.write_manifest(_with_draw(manifest, commitments, draw))
        result = ladder.build(rows, o.policies, ladder.bootstrap_seed(o.seed, commitments),
                              kind)
        write_atomic(d.root / LADDER, ladder.ladder_text(result))
        if o.plot:
            ladder.plot(result, d.root / "ladder.png")
        signing.sign_league(d.root, o.signing_key, rows)  # last: the files are final
    for message in fault_summary(rows[before:]):
        note(message)
    return LeagueRun(before, rows, result, time.perf_counter() - started, torn, notes)


def _kept_interval(root: Path, signed: Vouched, rows: list[dict], policies: Sequence[str],
                   seed: int | str) -> ladder.Kind:
    """The interval the league's ladder keeps (a bootstrap league stays one: ``ladder.kept``),
    when its signature vouches for it: the signed ladder.json is this one, or was the
    bootstrap ladder of the lines it signed (a run stopped between writing its ladder and
    signing it). An edited one would switch a league signed with the t interval to the
    bootstrap, and the run would sign it."""
    kind = ladder.kept(root / LADDER)
    if (kind == "bootstrap" and signed.results is not None
            and signed.ladder != file_sha256(root / LADDER, what="ladder")
            and signed.ladder != hashlib.sha256(ladder.ladder_text(ladder.build(
                rows[:signed.lines], policies, seed, "bootstrap")).encode()).hexdigest()):
        raise LeagueError(f"{shown(str(root / LADDER))} records the bootstrap interval but "
                          f"{SIGNATURE} signed no bootstrap ladder (it was edited): restore it, "
                          "or remove it to rank with the t interval")
    return kind


def _check_not_fewer(o: LeagueOptions, old: dict | None) -> None:
    """A league's folder reports all its episodes: asking for fewer than it holds would report
    more than was asked, so it is refused (asking for more extends the league)."""
    held = old.get("episodes") if old is not None else None
    if isinstance(held, int) and o.episodes < held:
        raise LeagueError(f"--out {o.out} holds a league of {held} episodes, more than "
                          f"--episodes {o.episodes}: give --episodes {held} to resume or rank it, "
                          "more to extend it, or a new --out")


# --- the secret draw ---------------------------------------------------------------------------

def _draw(d: LeagueDir, o: LeagueOptions, old: dict | None) -> tuple[Draw, list[dict] | None]:
    """The league's draw and, for a secret one, its commitments (``league.json``'s
    ``commitments``: ``{"fromGroup", "sha256"}``, and ``"secret"`` once revealed).

    A new league draws a secret (``os.urandom``) and writes it to the league's folder (the
    league's user alone may read it; no sandbox sees the folder) before ``league.json``
    commits to it, so a resume after ``kill -9`` finds it.  A resume checks every secret
    against its commitment."""
    if o.seed is not None:
        return o.seed, None
    commitments = old.get("commitments") if old is not None else None
    lost = (f"{d.manifest_path} has no commitments to the league's secret draw, but "
            "{}: the file was edited; restore it, or start the league in another --out")
    if not commitments:
        # A new league (check_identity refused another one's folder), or one stopped before
        # league.json committed to its first secret: nothing was played with that one. Not
        # over episodes played: a new secret would leave their draw unverifiable for good.
        if d.results.is_file() and d.results.stat().st_size:
            raise LeagueError(lost.format(f"{d.results} holds episodes"))
        secret = os.urandom(32)
        d.write_secrets([{"fromGroup": 0, "secret": secret.hex()}])
        return SecretDraw(((0, secret),)), [_commitment(0, secret)]
    if not (isinstance(commitments, list) and all(
            isinstance(c, dict) and type(c.get("fromGroup")) is int
            and isinstance(c.get("sha256"), str) for c in commitments)):
        raise LeagueError(f"{d.manifest_path}: its commitments are not a list of "
                          "{fromGroup, sha256}; the file was edited")
    secrets: dict[int, bytes] = {}
    for x in d.read_secrets():
        try:
            secrets[x["fromGroup"]] = bytes.fromhex(x["secret"])
        except ValueError:
            raise LeagueError(f"{d.root / SECRETS} holds a secret that is not hex; the "
                              "league's draw cannot go on") from None
    pairs = []
    for c in commitments:
        secret = secrets.get(c["fromGroup"])
        if secret is None or hashlib.sha256(secret).hexdigest() != c["sha256"]:
            raise LeagueError(f"{d.root / SECRETS} is missing or does not match the commitment "
                              f"in {d.manifest_path}; the league's draw cannot go on")
        pairs.append((int(c["fromGroup"]), secret))
    return SecretDraw(tuple(pairs)), [{k: c[k] for k in ("fromGroup", "sha256")}
                                      for c in commitments]


def _extended(d: LeagueDir, o: LeagueOptions, draw: Draw, commitments: list[dict],
              before: int, old: dict | None) -> tuple[Draw, list[dict]]:
    """A finished league (its secrets revealed) that is extended draws a new secret from its
    next whole group on; the rotations left in a group it ended in keep that group's seed."""
    revealed = all("secret" in c for c in (old or {}).get("commitments") or [{}])
    first = -(-before // SEATS)
    if not revealed or first * SEATS >= o.episodes or not isinstance(draw, SecretDraw):
        return draw, commitments
    secret = os.urandom(32)
    known = [{"fromGroup": g, "secret": s.hex()} for g, s in draw.secrets]
    d.write_secrets([*known, {"fromGroup": first, "secret": secret.hex()}])
    return (SecretDraw((*draw.secrets, (first, secret))),
            [*commitments, _commitment(first, secret)])


def _commitment(first: int, secret: bytes) -> dict:
    return {"fromGroup": first, "sha256": hashlib.sha256(secret).hexdigest()}


def _with_draw(manifest: dict, commitments: list[dict] | None,
               revealed: Draw | None = None) -> dict:
    """``manifest`` with the secret draw's commitments (and, once the league has ended, the
    secrets of ``revealed`` themselves, so that anyone can reproduce and verify it)."""
    if commitments is None:
        return manifest
    if not isinstance(revealed, SecretDraw):
        return {**manifest, "commitments": commitments}
    secrets = dict(revealed.secrets)
    return {**manifest, "commitments": [{**c, "secret": secrets[c["fromGroup"]].hex()}
                                        for c in commitments]}


def _episodes(d: LeagueDir, o: LeagueOptions, specs: Sequence[EpisodeSpec],
              key: bytes | None) -> Iterator[backends.Batch]:
    """Play ``specs`` on the chosen backend: batches of ``(row, replay text or None if
    written)``, in order."""
    settings = Settings(policies=o.policies, turns=o.turns, thievery=not o.honest_town,
                        speech=not o.no_speech, decision_timeout=o.decision_timeout,
                        episode_timeout=o.episode_timeout, start_timeout=o.start_timeout,
                        replay_dir=None if o.backend == "ray" else str(d.replays),
                        trust=o.trust, seat_memory=o.seat_memory, sandbox=o.sandbox,
                        hidden=(str(d.root.resolve()),), fallback=o.fallback, seat_key=key)
    workers = min(o.workers, len(specs))
    if o.backend == "ray":
        return backends.run_ray(specs, settings, o.workers, o.address)
    if workers == 1:
        return backends.run_inline(specs, settings)
    return backends.run_processes(specs, settings, workers)


def _replay_lost(d: LeagueDir, o: LeagueOptions, rows: list[dict], note: Note, draw: Draw,
                 key: bytes | None, signed: Vouched) -> None:
    """Play again the finished episodes whose replay file is gone; their lines stay as they are.

    Episodes are deterministic, so the new replay is the lost one byte for byte: one the
    signature vouches for must be the replay it signed, and a line it does not cover must be
    what its episode gives. Otherwise (a seat that does not play the same twice, or one that
    ran into a time limit) the league cannot give the replay back: the run is refused and the
    replays it wrote are removed again.
    """
    lost = [episode_spec(o.policies, draw, n) for n, r in enumerate(rows)
            if not _replay_of(d, r).is_file()]
    if not lost:
        return
    wrong: dict[int, str] = {}
    with contextlib.closing(_episodes(d, o, lost, key)) as batches:
        for batch in batches:
            for row, replay_text in batch:
                path = _replay_of(d, row)
                if replay_text is not None:  # under the league's lock: the only writer
                    write_atomic(path, replay_text, sync=False, sole=True)
                n, old = row["index"], rows[row["index"]]
                if n < signed.lines:
                    digest = file_sha256(path, MAX_REPLAY_BYTES, "replay")
                    if digest != signed.replays.get(row["id"]):
                        wrong[n] = (f"its replay was missing, and its episode played again "
                                    f"does not give the replay {SIGNATURE} signed")
                elif _timeless(row, old) != _timeless(old, old):
                    wrong[n] = (f"which no signature covers yet, is not what its episode "
                                f"gives when played again (its replay was missing): "
                                f"{_first_difference(old, row)}")
    if wrong:  # refused: the folder goes back to what it was
        for spec in lost:
            (d.replays / f"{spec.id}.json").unlink(missing_ok=True)
        n = min(wrong)
        raise LeagueError(f"{d.results} line {n + 1} ({rows[n]['id']}), {wrong[n]} (a seat "
                          f"that does not play the same twice, or that ran into a time limit, "
                          f"cannot give it again); {verify.UNVOUCHED}: restore the line's "
                          f"replay from a copy, {verify.RESTORE}")
    sync_files(d.replays, [f"{s.id}.json" for s in lost])
    note(f"league: played {len(lost)} episodes again whose replay was missing "
         f"({', '.join(s.id for s in lost[:5])}{', ...' * (len(lost) > 5)})")


def _replay_of(d: LeagueDir, row: dict) -> Path:
    return d.replays / f"{row['id']}.json"


def _lost(d: LeagueDir, rows: list[dict]) -> bool:
    """Whether a finished episode's replay is gone (the run plays it again)."""
    return any(not _replay_of(d, r).is_file() for r in rows)


def _first_difference(line: dict, played: dict) -> str:
    """The first key (but wall time) in which a results line differs from its episode."""
    key = next(k for k in line if k != "wallTime" and line[k] != played.get(k))
    width = verify.SHOWN_CHARS // 3
    return (f"{RESULTS} claims {key} {verify.one_line(json.dumps(line[key]), width)} but the "
            f"episode gives {verify.one_line(json.dumps(played.get(key)), width)}")


def _timeless(row: dict, like: dict) -> dict:
    """The keys of ``like`` (a line written before ``fallbackPlay`` lacks it) but wall time."""
    return {k: row.get(k) for k in like if k != "wallTime"}


def _play_into(d: LeagueDir, o: LeagueOptions, specs: Schedule, rows: list[dict],
               on_progress: ProgressReport | None, key: bytes | None) -> None:
    batches = _episodes(d, o, specs, key)
    report = on_progress if on_progress is not None else (lambda done, total: None)
    report(0, len(specs))
    appender = d.appender()
    done = 0
    try:
        with contextlib.closing(batches):
            for batch in batches:
                for row, replay_text in batch:
                    if replay_text is not None:
                        write_atomic(d.replays / f"{row['id']}.json", replay_text,
                                     sync=False, sole=True)
                new = [row for row, _ in batch]
                appender.append(new)  # their replays made durable first, then their lines
                for row in new:
                    rows.append(row)
                    done += 1
                    report(done, len(specs))
    finally:
        appender.close()


def fault_summary(rows: list[dict]) -> list[str]:
    """One line per policy that needed the fallback in ``rows``, with its first fault."""
    seen: dict[str, dict] = {}
    for r in rows:
        for seat, name in enumerate(r["lineup"]):
            kinds = r["faults"][seat]
            if not kinds:
                continue
            w = seen.setdefault(name, {"n": 0, "kinds": {}, "first": None, "play": set()})
            w["play"].add(r.get("fallbackPlay", ["factor"] * len(r["lineup"]))[seat])
            w["n"] += r["fallbacks"][seat]
            for k, v in kinds.items():
                w["kinds"][k] = w["kinds"].get(k, 0) + v
            if w["first"] is None:
                # the note is the seat's own text (its exception, its stderr): shown inert
                w["first"] = f"{shown(r['id'])} seat {seat}, {shown(r['faultNotes'][seat], 400)}"
    out = []
    for name, w in seen.items():
        kinds = ", ".join(f"{k} {w['kinds'][k]}" for k in FAULT_KINDS if k in w["kinds"])
        who = ("it waited in" if w["play"] == {"wait"} else "factor played"
               if w["play"] == {"factor"} else "its fallback played")
        out.append(f"league: policy {shown(name, 300, quoted=True)} faulted ({kinds}); {who} "
                   f"{w['n']} of its decisions; first: {w['first']}")
    return out


def default_workers(policies: Sequence[str] = ()) -> int:
    """The CPUs this process may use; 1 when a seat of ``policies`` runs a model on this machine
    (``llm:local``): each worker starts its own model server with its own copy of the model,
    which a larger model may not have the memory for (several workers share the CPUs among
    their servers: ``league.procs.workers``; docs/llm.md)."""
    if runs_local_model(policies):
        return 1
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1
