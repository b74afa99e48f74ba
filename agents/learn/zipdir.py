"""What a zip archive's end record says, read before ``zipfile`` builds its list of records."""

from __future__ import annotations

import zipfile
from typing import BinaryIO


def directory(f: BinaryIO) -> tuple[int, int] | None:
    """``(records, directory bytes)`` of the zip in ``f`` as ``ZipFile`` will read them, or
    None when they cannot be told: a huge directory would be a huge list of ``ZipInfo``, so a
    reader bounds both first.  Uses a private helper of ``zipfile`` (in every Python since 2.x);
    without it a caller's later checks still bound the records.  Leaves ``f`` at its start."""
    end = getattr(zipfile, "_EndRecData", lambda _: None)(f)
    f.seek(0)
    if end is None:
        return None
    return end[zipfile._ECD_ENTRIES_TOTAL], end[zipfile._ECD_SIZE]
