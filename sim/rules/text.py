"""Text handling shared by the engine and the parser (RULES §19).

Deliberate difference from the original: Nim 2.2's Unicode ``strip`` inspects only the last byte
of a trailing 3- or 4-byte UTF-8 character, so a sentence ending in "造" (E9 80 A0) loses a byte
(A0 reads as a no-break space) and a trailing U+2003 survives.  That produces invalid UTF-8; we
strip Unicode whitespace correctly instead (RULES §23).
No golden episode depends on the bug.

A Python string can also hold what no UTF-8 text can: a lone surrogate (U+D800-U+DFFF, which a
JSON escape such as ``"\\ud800"`` produces).  :func:`one_line`, the door of every sentence, line
said and note, turns each into U+FFFD, so that whatever the game keeps can be written out (a
replay, the next turn's view sent to a seat apart).  The original reads bytes and never meets
one.
"""

from __future__ import annotations

import re

# The Unicode whitespace of RULES §19, as one string for str.strip.
UNICODE_WS = ("\u0009\u000a\u000b\u000c\u000d\u0020\u0085\u00a0\u1680"
              + "".join(chr(c) for c in range(0x2000, 0x200B))
              + "\u2028\u2029\u202f\u205f\u3000")

# The quote marks speech is lifted by (SENTENCES §4 step 1), besides the straight one.
QUOTE_CHARS = "\u201c\u201d\u201e\u00ab\u00bb"
_UNQUOTE = str.maketrans({c: "'" for c in '"' + QUOTE_CHARS})

_FLATTEN = str.maketrans({"\n": " ", "\r": " ", "\t": " "})
_SURROGATES = re.compile(f"[{chr(0xD800)}-{chr(0xDFFF)}]")  # chr: mypyc takes no surrogate literal


def strip_ws(text: str) -> str:
    """Strip RULES §19's Unicode whitespace from both ends."""
    return text.strip(UNICODE_WS)


def one_line(text: str) -> str:
    """``oneLine``: newlines, carriage returns and tabs become spaces; then strip both ends
    (and a lone surrogate becomes U+FFFD: the module docstring)."""
    if not text.isascii():
        text = no_surrogates(text)
    # No newline, return or tab to flatten (the common case). Three scans for one character
    # are cheaper than ``isprintable``, which looks every character up in Unicode's tables.
    if "\n" not in text and "\r" not in text and "\t" not in text:
        return text.strip(UNICODE_WS)
    return text.translate(_FLATTEN).strip(UNICODE_WS)


def no_surrogates(text: str) -> str:
    """``text`` with each lone surrogate replaced by U+FFFD (the module docstring)."""
    return _SURROGATES.sub("\ufffd", text)


def cut(text: str, n: int) -> str:
    """Keep the first ``n`` runes (code points); never splits a character."""
    return text if len(text) <= n else text[:n]


def unquoted(text: str) -> str:
    """``text`` with each quote mark a straight single quote: spoken text a sentence can quote
    whole (no lifted line holds one; SENTENCES §4)."""
    return text.translate(_UNQUOTE) if '"' in text or not text.isascii() else text


def as_stored(text: str, cap: int) -> bool:
    """Whether ``text`` is some text's ``cut(one_line(...), cap)``: one line without outer
    whitespace, except what a cut at exactly ``cap`` characters leaves at its end."""
    if len(text) > cap:
        return False
    core = one_line(text)
    return core == text or (len(text) == cap and text.startswith(core)
                            and one_line(text[len(core):]) == "")
