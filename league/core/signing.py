"""Signed leagues: the league's Ed25519 key, and ``signature.json`` over what a league claims.

**The key.** A league signs with a private key that lives outside its ``--out`` folder: by
default ``$XDG_CONFIG_HOME/guild/league-key.pem`` (else ``~/.config/guild/league-key.pem``),
created on first use (the file mode 0600, its folder 0700), or the file of ``guild league
--signing-key FILE`` (created there when missing). It is read by the league's own process only:
no worker's settings carry it, and the seats' sandboxes see neither the home folder nor
anything but their seat. Its public half (the raw 32 bytes, in hex) is ``league.json``'s
``"signedBy": {"algorithm": "ed25519", "publicKey": HEX}``, part of the league's identity: a
resume with another key is refused (``league.core.store.IDENTITY``).

**What is signed.** At the end of every run the league writes ``signature.json``::

    {"format": "guild.signature.v1",
     "files": {"league.json": SHA256, "results.jsonl": SHA256, "ladder.json": SHA256},
     "replays": {"e000000": SHA256, ...},      # every episode of results.jsonl
     "manifest": {"turns": SHA256, ...},       # each setting of league.json
     "signature": HEX}

``manifest`` holds the sha256 of the canonical JSON of each key's value in ``league.json``
(one this version records but the file lacks: of ``null``), except the keys a run changes
(``league.core.store.RUN_KEYS``: the episode count, a secret draw's commitments). A run stopped
after it wrote ``league.json`` but before it signed leaves a file whose whole digest differs
from the one signed; these tell a resume that every setting is still the one signed
(``league.core.verify.check_signed_settings``), so no edited ``league.json`` can carry a league
on under other rules or code. Signatures written before it lack the map and are read as before.

``signature`` is the Ed25519 signature of the canonical JSON (sorted keys, no spaces, ASCII) of
everything else in the object. A run that is stopped before its end leaves the previous
signature, which then covers fewer lines than ``results.jsonl`` holds (``guild verify`` says
so); running the same command again re-signs, once it has checked that the signed lines and
replays are still the ones signed and that the lines after them verify
(``league.core.verify.check_resume``). Every replay is hashed again at each end of a run (a
small cost beside playing them), so nothing is cached.

``guild verify`` checks a signature with :mod:`league.core.verify_signature`.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from league.core.atomic import create_private, write_atomic
from league.core.errors import LeagueError
from league.core.files import MAX_REPLAY_BYTES, read_regular, sha256_regular
from league.core.store import (
    LADDER,
    MANIFEST,
    MAX_LADDER_BYTES,
    MAX_MANIFEST_BYTES,
    MAX_RESULTS_BYTES,
    REPLAYS,
    RESULTS,
    RUN_KEYS,
    SETTINGS,
    SIGNATURE,
    check_out,
    read_manifest,
)

ALGORITHM = "ed25519"
SIGNATURE_FORMAT = "guild.signature.v1"
SIGNED_FILES = (MANIFEST, RESULTS, LADDER)
# the most each signed file may hold: a larger one is no league's, and is not read
SIGNED_CAPS = {MANIFEST: MAX_MANIFEST_BYTES, RESULTS: MAX_RESULTS_BYTES, LADDER: MAX_LADDER_BYTES}
MAX_KEY_BYTES = 64 << 10  # a PEM Ed25519 key is about 120 bytes
MAX_HASHED_BYTES = 1 << 40  # a ppo: model hashed for league.json: read in blocks, never whole
KEY_NAME = "league-key.pem"
FINGERPRINT_HEX = 16  # a key's fingerprint: the first 16 hex digits of sha256 of its raw bytes


def default_key_path() -> Path:
    """``$XDG_CONFIG_HOME/guild/league-key.pem``, else ``~/.config/guild/league-key.pem``."""
    base = os.environ.get("XDG_CONFIG_HOME", "")
    root = Path(base) if base and os.path.isabs(base) else Path.home() / ".config"
    return root / "guild" / KEY_NAME


def key_path(given: str | os.PathLike | None) -> Path:
    """The key file a league uses: ``--signing-key`` when given, else the default. An empty
    path is refused: ``Path("")`` would be the current folder."""
    if given is None:
        return default_key_path()
    if not os.fspath(given):
        raise LeagueError("--signing-key must be a file's path; got ''")
    return Path(given).expanduser()


def _crypto() -> Any:
    try:
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import ed25519
    except ImportError:  # pragma: no cover - a core dependency
        raise LeagueError("signing leagues needs the cryptography package: "
                          "pip install 'cryptography>=41'") from None
    return ed25519, serialization


# Loaded keys by (resolved path, inode, size, mtime): a run asks several times (the manifest is
# built before and after the episodes, and signed at the end).
_KEYS: dict[tuple, Any] = {}


def ensure_key(given: str | os.PathLike | None, out: str | os.PathLike) -> tuple[Any, bool]:
    """The league's private key and whether it was created now; ``LeagueError`` in one line
    when the file is unusable or lies inside the league's ``--out`` folder."""
    path = key_path(given)
    flag = "--signing-key" if given is not None else "the league's signing key"
    if os.fspath(out) and _inside(path, Path(out)):
        raise LeagueError(f"{flag} {path} is inside --out {out}, which is published with the "
                          "league; keep the key elsewhere")
    check_out(out)  # before a key is made for a league that will not run
    created = False
    if not path.exists():
        signed = _signed_by(Path(out) / MANIFEST)
        if signed is not None:  # a resume elsewhere, without the league's key: make none
            raise LeagueError(f"{out} is signed by key {signed[:16]}... ({MANIFEST}'s "
                              f"signedBy), but {flag} {path} does not exist; pass "
                              "--signing-key with the league's key, or use another --out")
        _create(path)
        created = True
    return load_key(path, flag), created


def _signed_by(manifest: Path) -> str | None:
    """The public key a league folder's ``league.json`` names, if it names one;
    ``LeagueError`` (one line) when the file is there but is no league's (a FIFO, a device, too
    large, no JSON object), before a key is made for a league that cannot resume."""
    data = read_manifest(manifest)
    signed = data.get("signedBy") if data is not None else None
    key = signed.get("publicKey") if isinstance(signed, dict) else None
    return key if isinstance(key, str) else None


def _inside(path: Path, folder: Path) -> bool:
    try:
        path.resolve().relative_to(folder.resolve())
    except (ValueError, OSError):
        return False
    return True


def _create(path: Path) -> None:
    """A fresh key at ``path`` (mode 0600; a folder it creates is 0700). Two leagues creating
    the same default key at once both end up with the one that was linked first."""
    ed25519, serialization = _crypto()
    pem = ed25519.Ed25519PrivateKey.generate().private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption())
    try:
        create_private(path, pem)
    except OSError as e:
        raise LeagueError(f"cannot create the league's signing key {path}: "
                          f"{e.strerror or e}") from None


def load_key(path: Path, flag: str = "--signing-key") -> Any:
    """The Ed25519 private key in ``path`` (PEM, PKCS#8, unencrypted). Only a regular file of
    a key's size is read: a FIFO would block the league, ``/dev/zero`` fill its memory."""
    ed25519, serialization = _crypto()
    try:
        st = path.stat()
        cache = (str(path.resolve()), st.st_ino, st.st_size, st.st_mtime_ns)
    except (OSError, RuntimeError) as e:  # RuntimeError: a loop of links (before 3.13)
        raise LeagueError(f"cannot read {flag} {path}: {getattr(e, 'strerror', None) or e}"
                          ) from None
    if cache in _KEYS:
        return _KEYS[cache]
    try:
        data = read_regular(path, MAX_KEY_BYTES, "signing key")
    except LeagueError as e:
        raise LeagueError(f"{flag}: {e}") from None
    try:
        key = serialization.load_pem_private_key(data, password=None)
    except TypeError:
        raise LeagueError(f"{flag} {path} is encrypted; guild needs an unencrypted Ed25519 "
                          "key (keep the file private instead: mode 0600)") from None
    except (ValueError, UnicodeError):
        raise LeagueError(f"{flag} {path} is not an Ed25519 private key in PEM (PKCS#8); "
                          "create one with: openssl genpkey -algorithm ed25519") from None
    if not isinstance(key, ed25519.Ed25519PrivateKey):
        raise LeagueError(f"{flag} {path} holds a {type(key).__name__.removeprefix('_')}, not "
                          "an Ed25519 private key")
    _KEYS[cache] = key
    return key


def public_hex(key: Any) -> str:
    """The raw 32 bytes of ``key``'s public half (a private or public key), in hex."""
    _, serialization = _crypto()
    public = key.public_key() if hasattr(key, "public_key") else key
    return public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw).hex()


def fingerprint(public_key_hex: str) -> str:
    """The first 16 hex digits of sha256 of the raw public key: what a reader compares."""
    return hashlib.sha256(bytes.fromhex(public_key_hex)).hexdigest()[:FINGERPRINT_HEX]


def signed_by(given: str | os.PathLike | None) -> dict:
    """``league.json``'s ``signedBy`` entry for the key ``given`` (or the default key), which
    :func:`ensure_key` has already checked or created."""
    flag = "--signing-key" if given is not None else "the league's signing key"
    return {"signedBy": {"algorithm": ALGORITHM,
                         "publicKey": public_hex(load_key(key_path(given), flag))}}


# --- signature.json ------------------------------------------------------------------------------

def canonical(obj: object) -> bytes:
    """The bytes that are signed: sorted keys, no spaces, ASCII."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode()


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def file_sha256(path: Path, cap: int = MAX_HASHED_BYTES, what: str = "file") -> str:
    """sha256 of a regular file's bytes, in hex (read in blocks); ``LeagueError`` (a
    ``ValueError``, one line) for a FIFO, a device or a file over ``cap`` bytes."""
    return sha256_regular(path, cap, what)


def value_sha256(value: object) -> str:
    """sha256 of a JSON value's canonical text (:func:`canonical`), in hex."""
    return sha256_hex(canonical(value))


def manifest_digests(manifest: dict) -> dict[str, str]:
    """``signature.json``'s ``manifest``: the sha256 of each setting of ``league.json`` (those a
    run changes left out; one this version records but the file lacks signed as ``null``, so
    adding it by hand is an edit too)."""
    keys = (set(manifest) | set(SETTINGS)) - RUN_KEYS
    return {key: value_sha256(manifest.get(key)) for key in sorted(keys)}


def contents(root: Path, ids: Iterable[str]) -> dict:
    """What is signed for the league in ``root``: the three files', the replays' and
    ``league.json``'s settings' digests."""
    manifest = read_manifest(root / MANIFEST)
    return {"format": SIGNATURE_FORMAT,
            "files": {name: file_sha256(root / name, SIGNED_CAPS[name], name)
                      for name in SIGNED_FILES},
            "replays": {i: file_sha256(root / REPLAYS / f"{i}.json", MAX_REPLAY_BYTES, "replay")
                        for i in ids},
            "manifest": manifest_digests(manifest if manifest is not None else {})}


def sign_dir(root: str | os.PathLike, key: Any, ids: Iterable[str]) -> dict:
    """Write ``signature.json`` for the league in ``root`` (episodes ``ids``) with ``key``."""
    root = Path(root)
    body = contents(root, ids)
    signed = {**body, "signature": key.sign(canonical(body)).hex()}
    write_atomic(root / SIGNATURE, json.dumps(signed, indent=1, sort_keys=True) + "\n")
    return signed


def sign_league(root: str | os.PathLike, given: str | os.PathLike | None,
                rows: Iterable[dict]) -> dict:
    """The league's last step of a run: sign what ``root`` holds now (its final
    ``league.json``, ``results.jsonl`` of ``rows``, ``ladder.json`` and their replays)."""
    flag = "--signing-key" if given is not None else "the league's signing key"
    return sign_dir(root, load_key(key_path(given), flag), [r["id"] for r in rows])


def prepare(given: str | os.PathLike | None, out: str | os.PathLike,
            note: Callable[[str], None]) -> None:
    """Before a run: the key must be usable (``LeagueError`` otherwise); a new one is noted."""
    _, created = ensure_key(given, out)
    if created:
        note(f"league: created the league's signing key {key_path(given)} (keep it private; "
             "league.json publishes its public key)")
