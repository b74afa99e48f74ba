"""Public room logs and the speech class of the turn (RULES §12)."""

from __future__ import annotations

from .intents import Intent
from .outcome import Outcome
from .state import GameState
from .text import cut, one_line
from .world import MAX_ROOM_LOG, MAX_ROOM_LOG_LEN, MAX_SAY_LEN


def log_room(st: GameState, room: int, line: str) -> None:
    """Append a public line to ``room``'s log for this turn, keeping the newest 12 (§12.1)."""
    log = st.room_log[room]
    line = one_line(line)
    log.append(line if len(line) <= MAX_ROOM_LOG_LEN else cut(line, MAX_ROOM_LOG_LEN))
    if len(log) > MAX_ROOM_LOG:
        del log[0]


def speak(st: GameState, seat: int, room: int, say: str, it: Intent) -> bool:
    """Post a seat's speech in its start-of-turn room; True when its act is a ``say`` (§12.2).

    The say field is heard first; then the ``say`` intent's line, or the quote lifted from any
    other sentence.  A say field equal to the lifted line is heard twice (§12.3: the recorded
    behaviour of the original, not the later upstream change).
    """
    alias = st.aliases[seat]
    if say:
        log_room(st, room, f'{alias} says: "{say}"')
    if it.text and st.speech:
        spoken = cut(one_line(it.text), MAX_SAY_LEN)
        if spoken:
            log_room(st, room, f'{alias} says: "{spoken}"')
    return it.kind == "say"


def resolve_say(a: Outcome) -> None:
    """A ``say`` act resolves ``ok`` at once, with no act line (§12.2 step 2)."""
    a.reason = "ok"
