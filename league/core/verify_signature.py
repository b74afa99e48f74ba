"""What ``guild verify`` checks of a league's signature (``league.core.signing``).

``signature.json`` must be signed, over the canonical JSON of its other keys, by the Ed25519 key
that ``league.json`` names (``signedBy``), or by ``--public-key`` when that is given; and each
file it covers must still have the digest it signed: ``league.json``, ``results.jsonl``,
``ladder.json`` and the replay of every episode. Each difference is one line naming the file.

Without ``--public-key`` a valid signature proves only that whoever holds the key in
``league.json`` signed these files: a forger can rewrite a league, sign it with a key of their
own and put that key in ``league.json``. So verify prints the key's fingerprint (the first 16
hex digits of sha256 of the raw key) for the reader to compare with the publisher's, and
``--public-key HEX`` makes any other key a failure.

A league without ``signature.json`` is *unsigned*: a note for a league that may have been begun
before leagues were signed (``league.json`` without ``signedBy``; its signature may also have
been removed with that key, which nothing in its lines can tell), a problem for one that says it
is signed or records a setting only signed leagues record (:data:`SIGNED_ERA`). Unsigned, every
line is still checked against its replay: what is lost is who published it.

A resume asks first what the signature vouches for (:func:`vouched`): it re-signs only a
league whose signed lines and replays are still what it signed (``league.core.verify``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from league.core.errors import LeagueError
from league.core.files import MAX_REPLAY_BYTES, READ_CHUNK, open_regular, read_regular
from league.core.lineups import EpisodeSpec
from league.core.signing import (
    ALGORITHM,
    SIGNATURE,
    SIGNATURE_FORMAT,
    SIGNED_CAPS,
    SIGNED_FILES,
    canonical,
    file_sha256,
    fingerprint,
    sha256_hex,
    value_sha256,
)
from league.core.store import (
    LADDER,
    MANIFEST,
    MAX_RESULTS_BYTES,
    REPLAYS,
    RESULTS,
    read_manifest,
    shown,
)

HEX64 = re.compile(r"[0-9a-f]{64}")
EPISODE_ID = re.compile(r"e[0-9]{6,63}")  # a signed replay's name: never a path, nor one too
                                          # long for a file name (results ids: 64 at most)
SHOWN = 5  # files named one by one before the rest are counted
# league.json's keys that leagues record only since they are signed (a secret draw, ppo:
# models' and policy code's digests, --seat-memory, --start-timeout): a league.json holding one
# but no signedBy lost both by hand. The keys of results lines (trusted, fallbackPlay) are older
# than signing, so they prove nothing.
SIGNED_ERA = ("draw", "commitments", "models", "code", "seatMemory", "startTimeout")
MAX_SIGNATURE_BYTES = 256 << 20  # 1,000,000 episodes at ~90 bytes each, with room to spare


@dataclass
class Found:
    """The signature's problems (each one line) and notes (the fingerprint, an unsigned league)."""

    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def public_key_arg(text: str) -> str:
    """``--public-key``: 64 hex digits (the raw Ed25519 key), as ``league.json`` shows it."""
    key = text.strip().lower()
    if not HEX64.fullmatch(key):
        raise argparse.ArgumentTypeError(f"expected the 64 hex digits of an Ed25519 public key "
                                         f"(league.json's signedBy.publicKey); got "
                                         f"{text[:80]!r}")
    return key


def check(root: Path, manifest: dict, rows: Sequence[dict],
          public_key: str | None = None) -> Found:
    """The signature of the league in ``root`` (``rows``: its results lines)."""
    found = Found()
    signed_by = manifest.get("signedBy")
    path = root / SIGNATURE
    if not path.exists():
        if public_key is not None:
            found.problems.append(f"{SIGNATURE} is missing: the league is unsigned, so it "
                                  "cannot be signed by the --public-key given")
        elif signed_by is not None:
            found.problems.append(f"{SIGNATURE} is missing, but {MANIFEST} says the league is "
                                  "signed (signedBy); a first run stopped before its end "
                                  "leaves none: run the same command again to sign it")
        elif (later := next((k for k in SIGNED_ERA if k in manifest), None)) is not None:
            found.problems.append(f"{SIGNATURE} is missing, and {MANIFEST} names no signing key "
                                  f"(signedBy) though it records {later}, which only a league "
                                  "that signs records: its signature was removed")
        else:
            found.notes.append(f"unsigned: the league has no {SIGNATURE} (begun before leagues "
                               "were signed, or its signature was removed); nothing vouches "
                               "for who published it, only that its replays give its results")
        return found
    key = _league_key(signed_by)
    if key is None:
        found.problems.append(f"{MANIFEST}'s signedBy is not an {ALGORITHM} public key "
                              "(algorithm and 64 hex digits of publicKey)")
        return found
    if public_key is not None and public_key != key:
        found.problems.append(f"{MANIFEST} names signing key {fingerprint(key)}, not the "
                              f"--public-key given ({fingerprint(public_key)}); the league was "
                              "not signed by its publisher")
        return found
    body = _read(path, found)
    if body is None:
        return found
    if not _valid(body, key):
        found.problems.append(f"{SIGNATURE}'s signature does not hold for its contents under "
                              f"key {fingerprint(key)} ({MANIFEST}'s signedBy); "
                              f"{SIGNATURE} was changed or signed by another key")
        return found
    found.problems += _files(root, body, rows)
    found.problems += _replays(root, body["replays"], rows)
    if public_key is not None:
        found.notes.append(f"signed by the --public-key given (fingerprint {fingerprint(key)})")
    else:
        found.notes.append(f"signed by key {fingerprint(key)} ({MANIFEST}'s signedBy); "
                           "compare this fingerprint with the publisher's, or pass "
                           "--public-key to require their key")
    return found


@dataclass(frozen=True)
class Vouched:
    """What a valid ``signature.json`` signed: the first ``lines`` lines of ``results.jsonl``
    (sha256 ``results``) and the replays' digests; nothing at all without one."""

    lines: int = 0
    results: str | None = None  # None: there is no signature
    replays: dict[str, str] = field(default_factory=dict)
    settings: dict[str, str] | None = None  # league.json's, by key (None: not signed so)
    ladder: str | None = None  # ladder.json's sha256


def vouched(root: Path, signed_by: object, fix: str) -> Vouched:
    """What the signature in ``root`` vouches for, if it is one by ``signed_by`` (league.json's
    entry); ``LeagueError`` in one line, ending with ``fix``, when the file is there but is not
    a valid signature by that key."""
    path = root / SIGNATURE
    if not path.exists():
        return Vouched()
    key = _league_key(signed_by)
    if key is None:
        raise LeagueError(f"{path} is there, but {MANIFEST} names no {ALGORITHM} key "
                          f"(signedBy) to check it with; {fix}")
    found = Found()
    body = _read(path, found, str(path))
    if body is None:
        raise LeagueError(f"{found.problems[0]}; {fix}")
    if not _valid(body, key):
        raise LeagueError(f"{path}'s signature does not hold for its contents under the "
                          f"league's key {fingerprint(key)} ({MANIFEST}'s signedBy): it was "
                          f"changed or signed by another key; {fix}")
    if not isinstance(body["files"].get(RESULTS), str):
        raise LeagueError(f"{path} does not cover {RESULTS}; {fix}")
    ladder = body["files"].get(LADDER)
    return Vouched(len(body["replays"]), body["files"][RESULTS], body["replays"],
                   body.get("manifest"), ladder if isinstance(ladder, str) else None)


def head_sha256(path: Path, lines: int) -> str | None:
    """sha256 of the first ``lines`` complete lines of ``path`` (None when it has fewer),
    read a line at a time: a results file may be large. ``LeagueError`` (one line) when it is
    no regular file or too large (a FIFO would block its reader)."""
    if not os.path.lexists(path):
        return None if lines else hashlib.sha256().hexdigest()
    with open_regular(path, MAX_RESULTS_BYTES, "results file") as f:
        return _head_sha256(f, lines)


def _head_sha256(f: BinaryIO, lines: int) -> str | None:
    """sha256 of the next ``lines`` complete lines of ``f`` (None when it has fewer)."""
    digest = hashlib.sha256()
    for _ in range(lines):
        line = f.readline()
        if not line.endswith(b"\n"):
            return None
        digest.update(line)
    return digest.hexdigest()


def changed_replays(root: Path, signed: dict[str, str]) -> list[str]:
    """The signed replays that are there but are not the bytes signed (a missing one is not
    listed: the league plays it again; a folder in a replay's place is listed)."""
    missing, changed = _sorted_replays(root, signed)
    return changed + [ep for ep in missing if (root / REPLAYS / f"{ep}.json").exists()]


def _sorted_replays(root: Path, signed: dict[str, str]) -> tuple[list[str], list[str]]:
    """The signed replays that are missing (or a folder), and those that cannot be read or
    are not the bytes signed."""
    missing, changed = [], []
    for ep, digest in signed.items():
        path = root / REPLAYS / f"{ep}.json"
        if not path.exists() or path.is_dir():
            missing.append(ep)
            continue
        try:  # a FIFO, a device or a file larger than any replay is not the one signed
            data = read_regular(path, MAX_REPLAY_BYTES, "replay")
        except LeagueError:
            changed.append(ep)
            continue
        if sha256_hex(data) != digest:
            changed.append(ep)
    return missing, changed


def _league_key(signed_by: object) -> str | None:
    if not (isinstance(signed_by, dict) and signed_by.get("algorithm") == ALGORITHM):
        return None
    key = signed_by.get("publicKey")
    return key if isinstance(key, str) and HEX64.fullmatch(key) else None


def _read(path: Path, found: Found, called: str = SIGNATURE) -> dict | None:
    """``signature.json`` if it has the v1 shape; else a problem (naming it ``called``) and
    None."""
    try:  # a regular file only: a FIFO or /dev/zero in its place is refused unread
        body = json.loads(read_regular(path, MAX_SIGNATURE_BYTES, "signature").decode("utf-8"))
    except LeagueError as e:
        found.problems.append(str(e).replace(str(path), called, 1))
        return None
    except (OSError, ValueError, RecursionError) as e:
        found.problems.append(f"{called} cannot be read as JSON ({type(e).__name__})")
        return None
    ok = (isinstance(body, dict) and body.get("format") == SIGNATURE_FORMAT
          and isinstance(body.get("files"), dict) and isinstance(body.get("replays"), dict)
          and isinstance(body.get("signature"), str)
          and all(isinstance(v, str) for v in body["files"].values())
          and all(isinstance(k, str) and EPISODE_ID.fullmatch(k) and isinstance(v, str)
                  for k, v in body["replays"].items())
          and _settings_map(body.get("manifest", {})))
    if not ok:
        found.problems.append(f"{called} is not a {SIGNATURE_FORMAT} signature (format, "
                              "files, replays, signature)")
        return None
    return body


def _settings_map(settings: object) -> bool:
    """Whether ``settings`` is a signature's ``manifest``: a sha256 by key (signatures written
    before it lack one)."""
    return isinstance(settings, dict) and all(
        isinstance(v, str) and HEX64.fullmatch(v) for v in settings.values())


def changed_setting(manifest: dict, signed: dict[str, str]) -> str | None:
    """The first key (by name) of ``signed`` (a signature's ``manifest``) whose value in
    ``manifest`` (``league.json`` as it is) is not the one signed; None when none is. A key
    ``signed`` lacks (recorded by a later version) is not compared."""
    for key in sorted(signed):
        try:
            same = value_sha256(manifest.get(key)) == signed[key]
        except (ValueError, RecursionError):  # nested past what JSON can write back
            same = False
        if not same:
            return key
    return None


def _valid(body: dict, key: str) -> bool:
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    signed = {k: v for k, v in body.items() if k != "signature"}
    try:
        public = Ed25519PublicKey.from_public_bytes(bytes.fromhex(key))
        public.verify(bytes.fromhex(body["signature"]), canonical(signed))
    except (InvalidSignature, ValueError):
        return False
    return True


def _files(root: Path, body: dict, rows: Sequence[dict]) -> list[str]:
    """A problem per signed file that is not the one signed. Each is read as a regular file of
    at most its cap, in blocks (a FIFO in its place would block verify, ``/dev/zero`` fill its
    memory)."""
    files, signed_lines = body["files"], len(body["replays"])
    out = []
    for name in SIGNED_FILES:
        if name not in files:
            out.append(f"{SIGNATURE} does not cover {name}")
            continue
        path = root / name
        if not os.path.lexists(path):
            out.append(f"{name} is missing; {SIGNATURE} signed it")
            continue
        try:
            if file_sha256(path, SIGNED_CAPS[name], name) == files[name]:
                continue
            after = _lines_after(path, signed_lines, files[name]) if name == RESULTS else None
            setting = _setting(path, body.get("manifest")) if name == MANIFEST else None
        except LeagueError as e:  # its message names the path: named here as the league does
            out.append(f"{str(e).replace(str(path), name, 1)}; {SIGNATURE} signed it")
            continue
        if after is not None:
            out.append(_after(after, signed_lines, rows))
        elif setting is not None:
            out.append(f"{MANIFEST}'s {shown(setting)} is not what {SIGNATURE} signed; it was "
                       "changed after the league signed it")
        else:
            out.append(f"{name} is not the file {SIGNATURE} signed (its sha256 differs); it "
                       "was changed after the league signed it")
    return out


def _setting(path: Path, signed: dict[str, str] | None) -> str | None:
    """The first setting of ``league.json`` at ``path`` that is not the one signed (None when
    the signature signed none one by one, or all are as signed)."""
    if not signed:
        return None
    manifest = read_manifest(path)
    return changed_setting(manifest if manifest is not None else {}, signed)


def _after(after: tuple[int, int], signed_lines: int, rows: Sequence[dict]) -> str:
    """The problem of a results file that is the signed lines and more: ``after`` is how many
    complete lines follow them, and how many bytes of a line without its newline end it."""
    lines, torn = after
    if lines == 0:
        return (f"{RESULTS} is not the file {SIGNATURE} signed: an unfinished line ({torn} "
                f"byte{'s' * (torn > 1)} without a newline) follows the {signed_lines} lines it "
                "signed (what a run stopped while writing leaves, or an edit)")
    what = f"{lines} line{'s' * (lines > 1)}"
    unfinished = " and an unfinished line" if torn else ""
    stranger = next((n for n in range(signed_lines, len(rows))
                     if rows[n].get("id") != _episode_id(n) or rows[n].get("index") != n), None)
    if stranger is not None:
        return (f"{RESULTS} has {what}{unfinished} after the {signed_lines} that {SIGNATURE} "
                f"covers that {'are not' if lines > 1 else 'is not'} the league's next "
                f"episode{'s' * (lines > 1)} "
                f"(line {stranger + 1} is {shown(rows[stranger].get('id'))}, not "
                f"{_episode_id(stranger)}): added after the league signed it, not by a run")
    return (f"{RESULTS} has {what}{unfinished} after the {signed_lines} that {SIGNATURE} "
            "covers (a run stopped before it signed; run the same command again to sign "
            f"{'them' if lines > 1 else 'it'})")


def _episode_id(index: int) -> str:
    return EpisodeSpec(index, 0, 0, 0, ()).id


def _lines_after(path: Path, lines: int, digest: str) -> tuple[int, int] | None:
    """How many complete lines of the results file ``path`` follow its first ``lines``, and
    how many bytes of an unfinished line end it, when those are the signed ones (sha256
    ``digest``) and anything follows them; else None. Read in blocks, at most the cap of a
    results file."""
    with open_regular(path, MAX_RESULTS_BYTES, "results file") as f:
        if _head_sha256(f, lines) != digest:
            return None
        rest = f.read(READ_CHUNK)
        if not rest:
            return None
        after, torn, read = 0, 0, f.tell()
        while rest and read <= MAX_RESULTS_BYTES:
            ends = rest.count(b"\n")
            after += ends
            torn = len(rest) - rest.rfind(b"\n") - 1 if ends else torn + len(rest)
            rest = f.read(READ_CHUNK)
            read += len(rest)
    return after, torn


def _replays(root: Path, signed: dict, rows: Sequence[dict]) -> list[str]:
    missing, changed = _sorted_replays(root, signed)
    ids = [r.get("id") for r in rows]
    unsigned = [i for i in ids if isinstance(i, str) and i not in signed]
    out = [f"{REPLAYS}/{shown(ep)}.json is missing; {SIGNATURE} signed it"
           for ep in missing[:SHOWN]]
    if len(missing) > SHOWN:
        out.append(f"{len(missing) - SHOWN} more replays that {SIGNATURE} signed are missing")
    out += [f"{REPLAYS}/{shown(ep)}.json is not the replay {SIGNATURE} signed (its sha256 "
            "differs)" for ep in changed[:SHOWN]]
    if len(changed) > SHOWN:
        out.append(f"{len(changed) - SHOWN} more replays are not the ones {SIGNATURE} signed")
    if unsigned:
        named = ", ".join(map(shown, unsigned[:SHOWN])) + (", ..." if len(unsigned) > SHOWN else "")
        out.append(f"{len(unsigned)} replays of {RESULTS} are not covered by {SIGNATURE} "
                   f"({named})")
    return out
