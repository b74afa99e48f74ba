"""The field checks of a world file (:mod:`sim.rules.worldfile`): one-line errors and references.

Every check raises :class:`WorldFileError` with a message that names the file and the entry, so
a town author can find the mistake without reading a traceback.  The checks live apart from the
table building (:mod:`sim.rules.worldfile_build`) because both the builder and any future reader
of another format need the same wording.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping, Sequence
from typing import Any

from .errors import ConfigError, shown

MAX_NAME_CHARS = 40   # a name, plural or keyword: the standard town's longest is 17
MAX_KEYWORDS = 16     # keywords of one entry: the standard town's most is 6
MAX_DESC_CHARS = 300  # a room's description: the standard town's longest is 66
# Each is printed in the text view every turn (its room list names every exit of every room),
# and the word checks compare every keeper's phrases with every good's: bounded, they keep the
# view and the checks proportional to a town, whatever a 1 MiB file holds.


class WorldFileError(ConfigError):
    """A world file cannot be read, or describes an impossible town.  The message is one line
    that names the file and the offending entry."""


class Names:
    """Resolve a reference (id, digit string, name or unique keyword, any case) to an id.

    A keyword shared by two entries is dropped rather than resolved to either, so an ambiguous
    reference fails loudly instead of silently picking one.
    """

    def __init__(self, kind: str, entries: Sequence[tuple[str, Sequence[str]]]) -> None:
        self.kind = kind
        self.count = len(entries)
        self.labels = [name for name, _ in entries]
        self.names: dict[str, int] = {}
        keywords: dict[str, set[int]] = {}
        for i, (name, extra) in enumerate(entries):
            self.names.setdefault(name.lower(), i)
            for w in extra:
                keywords.setdefault(str(w).lower(), set()).add(i)
        self.keywords = {w: min(ids) for w, ids in keywords.items() if len(ids) == 1}
        self.shared = {w: sorted(ids) for w, ids in keywords.items() if len(ids) > 1}
        self.before: Names | None = None  # the same table before the file patched it

    def patched(self, before: Names) -> Names:
        """These names, knowing the ones a patch replaced (:meth:`renamed_note`)."""
        self.before = before
        return self
    def lookup(self, ref: Any) -> int | None:
        """The id ``ref`` names, or ``None`` (booleans are never ids, though ``True == 1``)."""
        if isinstance(ref, bool):
            return None
        if isinstance(ref, int):
            return ref if 0 <= ref < self.count else None
        if isinstance(ref, str):
            s = ref.strip()
            if s.isascii() and s.isdigit():  # an id; 19+ digits are no id (and no int())
                return self.lookup(int(s)) if len(s) < 19 else None
            key = s.lower()
            return self.names.get(key, self.keywords.get(key))
        return None

    def known(self) -> list[str]:
        """Every name and unique keyword, for a "did you mean" hint."""
        return [*self.names, *self.keywords]

    def renamed_note(self, ref: Any) -> str:
        """`` (this file renames 'salt' to 'pepper')`` when ``ref`` named an entry before the
        file patched its name away, else ``""``: the reference must use the new name."""
        i = self.before.lookup(ref) if self.before is not None and isinstance(ref, str) else None
        if i is None or i >= self.count or self.lookup(ref) is not None:
            return ""
        return (f" (this file renames {self.before.labels[i]!r} to {self.labels[i]!r}; "
                "name it so)")

    def shared_note(self, ref: Any) -> str:
        """`` ('brine' is a keyword of both 'salt' and 'lamp')`` when ``ref`` is a keyword of
        several entries (so it names none), else ``""``."""
        ids = self.shared.get(ref.strip().lower()) if isinstance(ref, str) else None
        if not ids:
            return ""
        labels = [repr(self.labels[i]) for i in ids]
        which = ("both " if len(labels) == 2 else "") + ", ".join(labels[:-1])
        return f" ({shown(ref, 80)} is a keyword of {which} and {labels[-1]})"


class Fields:
    """Type and range checks of one file's fields; each failure names ``source`` and the entry.

    ``where`` is the entry's location in the file (``rooms[3].exits[1]``), empty for the file
    as a whole.
    """

    def __init__(self, source: str) -> None:
        self.source = source

    def fail(self, where: str, msg: str) -> WorldFileError:
        """The error to raise (returned, so call sites read ``raise f.fail(...)``)."""
        return WorldFileError(f"{self.source}: {where}: {msg}" if where
                              else f"{self.source}: {msg}")

    def integer(self, v: Any, where: str, lo: int, hi: int) -> int:
        """``v`` as an int in ``lo..hi`` (booleans are not integers here)."""
        if isinstance(v, bool) or not isinstance(v, int):
            raise self.fail(where, f"must be an integer; got {shown(v, 80)}")
        if v < lo:
            what = "negative values are not allowed" if v < 0 else f"must be at least {lo}"
            raise self.fail(where, f"{what}; got {shown(v)}")
        if v > hi:
            raise self.fail(where, f"must be at most {hi}; got {shown(v)}")
        return v

    def string(self, v: Any, where: str, limit: int = MAX_NAME_CHARS,
               blank: bool = False) -> str:
        """``v`` as a string of one line of at most ``limit`` characters, stripped (non-blank
        unless ``blank``): a line break or a control character in a name would write lines of
        its own into every report (a forged "PASS:"), a format character (a right-to-left
        override) would print it backwards, and no sentence could name it.  Other characters
        (a no-break space, an emoji's joiner, letters of any script) are text."""
        if not isinstance(v, str) or not (blank or v.strip()):
            raise self.fail(where, f"must be a non-empty string; got {shown(v, 80)}")
        if _NOT_PLAIN.search(v):
            raise self.fail(where, f"must be one line of printable text, without control or "
                                   f"format characters; got {ascii(v)[:80]}")
        if len(v.strip()) > limit:
            raise self.fail(where, f"at most {limit} characters; got {len(v.strip())}")
        return v.strip()

    def boolean(self, v: Any, where: str) -> bool:
        """``v`` as true or false (no truthy numbers or strings)."""
        if not isinstance(v, bool):
            raise self.fail(where, f"must be true or false; got {shown(v, 80)}")
        return v

    def sequence(self, v: Any, where: str) -> list:
        """``v`` as a list (a string is not a list of letters)."""
        if isinstance(v, (str, bytes)) or not isinstance(v, Sequence):
            raise self.fail(where, f"must be a list; got {shown(v, 80)}")
        return list(v)

    def strings(self, v: Any, where: str) -> tuple[str, ...]:
        """``v`` as a list of non-blank strings, stripped and lowercased (keywords), at most
        :data:`MAX_KEYWORDS` of them."""
        items = self.sequence(v, where)
        if len(items) > MAX_KEYWORDS:
            raise self.fail(where, f"at most {MAX_KEYWORDS} keywords; got {len(items)}")
        return tuple(self.string(x, f"{where}[{i}]").lower() for i, x in enumerate(items))

    def ref(self, v: Any, names: Names, where: str) -> int:
        """The id that reference ``v`` names among ``names``."""
        i = names.lookup(v)
        if i is None:
            hint = suggest(v, names.known()) if isinstance(v, str) else ""
            raise self.fail(where, f"unknown {names.kind} {shown(v, 80)}{hint}"
                                   f"{names.shared_note(v)}{names.renamed_note(v)}")
        return i

    def keys(self, d: Mapping, allowed: Sequence[str], where: str) -> None:
        """Reject any key of ``d`` not in ``allowed``, so a typo never passes silently."""
        for k in d:
            if k not in allowed:
                hint = suggest(k, allowed) if isinstance(k, str) else ""
                raise self.fail(where, f"unknown key {shown(k, 80)}{hint} (allowed: "
                                       f"{', '.join(allowed)})")

    def unique(self, names: Sequence[str | None], where: Sequence[str], kind: str) -> None:
        """Reject two entries with one name (any case); ``where[i]`` locates entry i."""
        seen: dict[str, int] = {}
        for i, n in enumerate(names):
            key = (n or "").lower()
            if key in seen:
                raise self.fail(f"{where[i]}.name", f"{kind} name {shown(n, 80)} is already "
                                                    f"used by {where[seen[key]]}")
            seen[key] = i




# control characters (Cc), line and paragraph separators, lone surrogates, and the format
# characters that reorder text on a terminal (bidi marks, embeddings, overrides, isolates)
_NOT_PLAIN = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff"
                        "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def suggest(word: str, options: Sequence[str]) -> str:
    """`` (did you mean 'x'?)`` for a near miss, else ``""``."""
    opts = list(options)
    close = difflib.get_close_matches(word.lower(), [o.lower() for o in opts], n=1)
    if not close:
        return ""
    match = next(o for o in opts if o.lower() == close[0])
    return f" (did you mean {match!r}?)"


def counted(count: int, noun: str) -> str:
    """``1 good`` / ``2 goods``: error messages count things in plain English."""
    return f"{count} {noun}{'' if count == 1 else 's'}"
