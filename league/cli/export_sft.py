"""``guild export-sft DIR``: supervised training rows from a league's replays.

Every act of every finished episode becomes one row in the conversational prompt-completion
form that fine-tuning libraries read (e.g. TRL's ``SFTTrainer``)::

    {"prompt": [{"role": "system", "content": ...}, {"role": "user", "content": ...}],
     "completion": [{"role": "assistant", "content": "{\\"action\\": ..., \\"say\\": ...,
                                                       \\"notes\\": ...}"}],
     "meta": {"episode", "seed", "turn", "seat", "alias", "policy", "source", "scripted",
              "fallback", "intent", "reason"}}

Where a language-model seat's decision was recorded (the replay's ``"llm"`` key), the prompt is
exactly what the model was sent (with its operator guidance, without the retry's corrective
line) and the completion its cleaned reply (``source: "llm"``). Every other act -- baselines,
other policies, the turns a model lost to a fallback -- is rebuilt by replaying the episode:
``agents.llm.prompt``'s system message and the seat's ``observation_text`` at that turn, with
the sentence played (and its spoken line) as the reply (``source: "replay"``); ``fallback``
marks an act the seat's fallback played for its policy (it failed, or the model gave no usable
reply), which a fine-tune of that policy may want to leave out. ``--only-llm``
keeps the model's own decisions only; an episode that does not re-derive is skipped and counted.

The split is by game seed, so the six seat rotations of a league group never straddle it: an
episode goes to validation when the first 8 bytes of ``sha256("guild-sft:v1:<seed>")``, read
as a big-endian fraction of 2**64, are below ``--val-fraction``; otherwise to train. Outputs in
``--out`` (default ``DIR/sft``): ``train.jsonl``, ``validation.jsonl``, ``manifest.json``
(counts, source directory, split rule).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from league.cli.report import VIEWS
from league.core.atomic import replacing, write_atomic
from league.core.errors import LeagueError
from league.core.files import check_outside, check_replaceable, load_replay
from league.core.store import MANIFEST, REPLAYS, RESULTS, load_results, row_problem, shown
from league.core.verify import league_manifest
from sim import Game, GameConfig, ReplayMismatch, replay
from sim.replay import _action  # the recorded act as replay plays it (sentence or structured)
from sim.rules.world import SEATS, STANDARD_TOWN

FORMAT = "guild.sft.v1"
SPLITS = ("train", "validation")
# How an export's files begin (json.dumps of a row; of the manifest, indented), to tell them
# from someone else's file of the same name before replacing it.
ROW_MARK = b'{"prompt": [{"role": "system"'
MANIFEST_MARK = f'{{\n  "format": "{FORMAT}"'.encode()
SPLIT_RULE = ("validation if int.from_bytes(sha256(f'guild-sft:v1:{seed}').digest()[:8], 'big') "
              "/ 2**64 < valFraction, else train (all episodes of one seed on one side)")


def register(sub: Any) -> None:
    """Add ``export-sft`` to the ``guild`` command line."""
    p = sub.add_parser("export-sft", help="write supervised training rows (prompt messages and "
                       "completion) from a league's replays, split by seed",
                       description="Write one training row per act of every finished "
                       "episode: the prompt messages the seat saw (recorded ones for language-"
                       "model seats, rebuilt from the replay for the others) and the reply JSON "
                       "as the completion; split into train and validation by game seed.")
    p.add_argument("dir", metavar="DIR", help="a league's --out directory")
    p.add_argument("--out", metavar="OUT", default=None,
                   help="where to write train.jsonl, validation.jsonl, manifest.json "
                        "(default DIR/sft)")
    p.add_argument("--val-fraction", type=_fraction, default=0.1, metavar="F",
                   help="share of seeds held out for validation (0.1)")
    p.add_argument("--only-llm", action="store_true",
                   help="only decisions a language model made itself (recorded in the replay)")
    p.set_defaults(handler=_handle)


def _fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number from 0 to 1, got {text!r}") from None
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"expected a number from 0 to 1, got {text!r}")
    return value


def _handle(args: argparse.Namespace) -> int:
    out = args.out if args.out is not None else Path(args.dir) / "sft"  # as given: "" is refused
    manifest = export(args.dir, out, args.val_fraction, args.only_llm)
    if manifest["skipped"]:
        print(f"export-sft: skipped {manifest['skipped']} of {manifest['episodes']} episodes; "
              f"first: {manifest['firstSkipped']}", file=sys.stderr)
    c = manifest["counts"]
    print(f"export-sft: {c['train']['rows']} train rows ({c['train']['episodes']} episodes), "
          f"{c['validation']['rows']} validation rows ({c['validation']['episodes']} "
          f"episodes) in {out}")
    return 0


def split_of(seed: int, val_fraction: float) -> str:
    """``"validation"`` or ``"train"`` for an episode of game seed ``seed`` (see the module)."""
    digest = hashlib.sha256(f"guild-sft:v1:{seed}".encode()).digest()
    return "validation" if int.from_bytes(digest[:8], "big") / 2**64 < val_fraction else "train"


def export(root: str | Path, out: str | Path, val_fraction: float = 0.1,
           only_llm: bool = False) -> dict:
    """Write the rows of the league in ``root`` to ``out``; return the manifest written.

    Prints nothing: episodes that could not be exported are counted in the manifest
    (``skipped``, ``firstSkipped``), which the command line reports.

    ``LeagueError`` (one line) when ``root`` is not a league directory, a results line is not
    one (its id names a replay's file: no path is followed out of ``replays/``) or ``out`` is
    unusable or one of the league's own folders (``replays/``, ``view/``); all before anything
    is written.
    """
    for given, what in ((root, "DIR"), (out, "--out")):  # Path("") is the current folder
        if not os.fspath(given):
            raise LeagueError(f"{what} must be a folder's path; got ''")
    root, out = Path(root), Path(out)
    if not root.is_dir():
        raise LeagueError(f"{root} is not a directory")
    if not (root / RESULTS).is_file():
        raise LeagueError(f"{root} has no {RESULTS}; is it a league's --out directory?")
    league = _league(root)
    rows, _torn = load_results(root / RESULTS)
    for n, row in enumerate(rows, start=1):  # as guild report and guild verify check them
        problem = row_problem(row)
        if problem is not None:
            raise LeagueError(f"{root / RESULTS} line {n} {problem}")
    check_outside(out, (root / REPLAYS, root / VIEWS), "--out")  # verify reads every file
    files = {s: out / f"{s}.jsonl" for s in SPLITS}
    for s in SPLITS:  # only an export's own files are replaced (an empty one loses nothing)
        check_replaceable(files[s], lambda head: head == b"" or head.startswith(ROW_MARK),
                          "rows guild export-sft wrote", "--out")
    check_replaceable(out / "manifest.json", lambda head: head.startswith(MANIFEST_MARK),
                      "a manifest guild export-sft wrote", "--out")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise LeagueError(f"cannot write to --out {out}: {e.strerror or e}") from None
    counts = {s: {"rows": 0, "episodes": 0, "seeds": set()} for s in SPLITS}
    by_source: dict[str, int] = {}
    skipped: list[str] = []
    with contextlib.ExitStack() as stack:  # both files replaced at the end, or neither
        tmps = {s: stack.enter_context(replacing(files[s])) for s in SPLITS}
        handles = {s: stack.enter_context(open(tmps[s], "w", encoding="utf-8"))
                   for s in SPLITS}
        for row in rows:
            try:
                payload = _load(root, row)
                episode = list(episode_rows(payload, row, only_llm))
            except (LeagueError, ReplayMismatch, ValueError, KeyError, TypeError) as e:
                skipped.append(shown(f"{row['id']}: {e}", 300))  # a replay's text, inert
                continue
            side = split_of(row["seed"], val_fraction)
            c = counts[side]
            c["episodes"] += 1
            c["seeds"].add(row["seed"])
            for r in episode:
                handles[side].write(json.dumps(r, ensure_ascii=False) + "\n")
                c["rows"] += 1
                by_source[r["meta"]["source"]] = by_source.get(r["meta"]["source"], 0) + 1
        for s in SPLITS:
            handles[s].flush()
            os.fsync(handles[s].fileno())
    manifest = {
        "format": FORMAT, "source": str(root.resolve()), "league": league,
        "episodes": len(rows), "skipped": len(skipped), "firstSkipped": skipped[0] if skipped
        else None, "onlyLlm": only_llm,
        "split": {"by": "seed", "valFraction": val_fraction, "rule": SPLIT_RULE},
        "counts": {s: {"rows": counts[s]["rows"], "episodes": counts[s]["episodes"],
                       "seeds": len(counts[s]["seeds"])} for s in SPLITS},
        "bySource": dict(sorted(by_source.items())),
        "files": {s: files[s].name for s in SPLITS},
        "rowFormat": "prompt (system and user messages), completion (one assistant message: "
                     "the reply JSON object), meta",
    }
    write_atomic(out / "manifest.json", json.dumps(manifest, indent=2) + "\n")
    return manifest


def _league(root: Path) -> dict:
    """What ``league.json`` says about the league (policies, seed, rules), for the export's
    provenance; ``LeagueError`` (one line) when it is missing or is no league's."""
    data = league_manifest(root / MANIFEST)
    keys = ("policies", "seed", "turns", "thievery", "speech")
    return {k: data[k] for k in keys if k in data}


def _load(root: Path, row: dict) -> dict:
    """The replay of ``row`` (checked by ``row_problem``: its id is a file's name), read as
    ``guild view`` and ``guild report`` read one: a regular file of a replay's size, JSON
    nested no deeper than Python walks, a replay's shape; else ``LeagueError`` (one line)."""
    if "seed" not in row:
        raise LeagueError("the results line lacks its seed")
    path = root / REPLAYS / f"{row['id']}.json"
    if not os.path.lexists(path):
        raise LeagueError(f"replay {path} is missing")
    return load_replay(path)


def chosen_number(game: Game, seat: int, rec: dict | None, event: dict) -> int | None:
    """For a seat that played in the choosing mode, the 1-based number among its choices now
    of the act it played (a fallback's sentence counts when it is one of them in other words);
    None for another mode or an act that is none of them."""
    if rec is None or rec.get("mode") != "admissible":
        return None
    from agents.llm.choose import choice_number

    sentence = event.get("sentence")
    return choice_number(game, seat, sentence) if isinstance(sentence, str) else None


def _fallback_seats(acts: list[dict], fallbacks: object) -> list[bool]:
    """Per seat, whether its scripted acts are its fallback's, not its policy's: the results
    line counts as many fallbacks as the replay marks scripted acts (a policy that is not
    scripted by nature; every fallback is marked scripted). A scripted policy's acts are its
    own: where it also fell back (rare), which acts did is not told, and none is flagged."""
    marked = [sum(1 for e in acts if e.get("seat") == s and e.get("scripted"))
              for s in range(SEATS)]
    counts = fallbacks if isinstance(fallbacks, list) and len(fallbacks) == SEATS else [0] * SEATS
    return [m > 0 and counts[s] == m for s, m in enumerate(marked)]


def episode_rows(payload: dict, row: dict, only_llm: bool = False) -> Iterator[dict]:
    """The rows of one episode, in turn then seat order (see the module for what they hold)."""
    from agents.llm.prompt import Reply, system_prompt  # the system message the seats get

    config = payload["config"]
    if config.get("world", STANDARD_TOWN.to_json()) != STANDARD_TOWN.to_json():
        raise LeagueError("the replay is not played in the standard town, which every league "
                          "episode is")
    cfg = GameConfig.from_dict({**config, "players": row["lineup"]})
    events = payload["events"]
    replay(cfg, events)  # raises ReplayMismatch unless the record re-derives
    records = {(r.get("turn"), r.get("seat")): r for r in payload.get("llm", [])
               if isinstance(r, dict)}
    game = Game(cfg)
    acts = [e for e in events if e.get("kind") == "act"]
    fell = _fallback_seats(acts, row.get("fallbacks"))
    for k in range(0, len(acts) - SEATS + 1, SEATS):
        batch = sorted(acts[k:k + SEATS], key=lambda e: e["seat"])
        for e in batch:
            seat = e["seat"]
            rec = records.get((e["turn"], seat))
            own = (rec is not None and not rec.get("scripted") and not e.get("scripted")
                   and rec.get("action") == e.get("sentence"))
            if only_llm and not own:
                continue
            number = chosen_number(game, seat, rec, e)
            if rec is not None and isinstance(rec.get("system"), str) \
                    and isinstance(rec.get("user"), str) \
                    and (number is not None or rec.get("mode") != "admissible"):
                system, user = rec["system"], rec["user"]
            else:  # no record, or a choosing seat's act that is not among its choices
                system, user = system_prompt(game, seat), game.observation_text(seat)
                number = None
            say = rec.get("say", "") if own else e.get("say", "")
            notes = rec.get("notes", "") if own else ""
            if number is not None:  # the choosing mode's answer (agents.llm.choose)
                answer = {"action": number, **({"say": say} if say else {}),
                          **({"notes": notes} if notes else {})}
                content = json.dumps(answer, ensure_ascii=False)
            else:
                content = Reply(rec["action"] if own else e.get("sentence", ""), say,
                                notes).to_json()
            yield {"prompt": [{"role": "system", "content": system},
                              {"role": "user", "content": user}],
                   "completion": [{"role": "assistant", "content": content}],
                   "meta": {"episode": row["id"], "seed": row["seed"], "turn": e["turn"],
                            "seat": seat, "alias": game.aliases[seat],
                            "policy": row["lineup"][seat], "source": "llm" if own else "replay",
                            "scripted": bool(e.get("scripted")),
                            "fallback": bool(e.get("scripted")) and fell[seat],
                            "intent": e.get("intent"),
                            "reason": e.get("reason")}}
        # Play the recorded turn exactly as sim.replay does, to reach the next turn's state.
        game._play([_action(e) for e in batch], [e.get("say", "") for e in batch],
                   [e.get("text", "") for e in batch],
                   [bool(e.get("scripted", False)) for e in batch], stored=True)
