"""Which policies sit where, and on which seed: fair, duplicate-style episode groups.

Episodes come in groups of six. Group ``g`` draws one game seed and one base lineup (six
policies by seat); its episodes ``6g + r`` for ``r = 0..5`` replay that seed under the six
cyclic rotations of the lineup, so every entry of the lineup plays every seat -- starting room,
commissions and initiative luck (RULES §4, §6.3) cancel out, as in duplicate bridge.

How a group is drawn from the ``--policies`` list ``p[0..k-1]`` and ``--seed S``:

1. ``h = sha256("guild-league:v1:{S}:{g}")``; the game seed is the first 4 bytes of ``h`` as
   an unsigned big-endian int with the top bit cleared (0 .. 2**31 - 1).  This is the public
   draw of ``--seed S``: whoever knows ``S`` knows every town.  By default a league draws
   from a secret instead (:class:`SecretDraw`).
2. The base lineup takes the next six entries of the policy list repeated forever:
   ``p[(6g + j) mod k]`` for ``j = 0..5``. Over any ``k`` consecutive groups every policy
   fills exactly six base seats (with ``k >= 6`` a group holds six different policies; with
   ``k < 6`` each policy appears ``6 // k`` or ``6 // k + 1`` times).
3. The six are shuffled with ``random.Random(int(h[4:12]))`` so that neighbours in the cyclic
   seat order vary from group to group.
4. Rotation ``r`` seats ``base[(s - r) mod 6]`` at seat ``s`` (everyone moves ``r`` seats on).

Nothing depends on the worker count, the backend or the order episodes finish in, so the same
command always produces the same episodes.
"""

from __future__ import annotations

import hashlib
import hmac
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import overload

from league.core.errors import LeagueError
from sim.policies import POLICIES, TRUSTED_PREFIX
from sim.rules.errors import printable
from sim.rules.world import SEATS

SCHEME = "cyclic-fill-shuffle/sha256/v1"  # recorded in league.json; change it if the draw changes


@dataclass(frozen=True)
class EpisodeSpec:
    """One episode of a league: its place in the schedule, game seed and lineup by seat."""

    index: int
    group: int
    rotation: int
    seed: int
    lineup: tuple[str, ...]

    @property
    def id(self) -> str:
        """``e000012``: sorts like the index and names the replay file."""
        return f"e{self.index:06d}"


MAX_NAME_CHARS = 1024  # a policy spec (a name, a path, a URL); a report's page repeats each


def parse_policies(text: str) -> list[str]:
    """Split ``--policies`` on commas; refuse an empty list, a policy named twice or a name
    longer than :data:`MAX_NAME_CHARS` (which ``guild report`` would refuse after the play).

    A name twice would merge two entries on the ladder, so list it once and let the lineup
    draw give it its seats.
    """
    names = [p.strip() for p in text.split(",")]
    if not text.strip() or any(not n for n in names):
        raise LeagueError(f"--policies needs a comma-separated list of policies; got {text!r}")
    long = next((n for n in names if len(n) > MAX_NAME_CHARS), None)
    if long is not None:
        raise LeagueError(f"--policies names a policy of {len(long):,} characters "
                          f"({printable(long[:60])}...); a policy is named in at most "
                          f"{MAX_NAME_CHARS:,}")
    seen: dict[str, str] = {}
    for n in names:
        key = _key(n)  # (trusted:factor beside factor is two: a control)
        if key in seen:
            twice = f"{n!r} twice" if seen[key] == n else \
                f"one policy twice, as {seen[key]!r} and {n!r}"
            raise LeagueError(f"--policies names {twice}; list each policy once")
        seen[key] = n
    return names


TRUSTED = TRUSTED_PREFIX + ":"  # a policy the league runs in its own process (core.episode)


def _key(name: str) -> str:
    """``POLICIES.key``, through a ``trusted:`` prefix (``trusted:FACTOR`` is
    ``trusted:factor``: one policy, one ladder entry)."""
    name = name.strip()
    if name.lower().startswith(TRUSTED):
        return TRUSTED + POLICIES.key(name[len(TRUSTED):])
    return POLICIES.key(name)


@dataclass(frozen=True)
class SecretDraw:
    """A league's secret draw: ``secrets`` as ``(first group, 32 secret bytes)``, ascending.

    Group ``g`` uses the last secret whose first group is at most ``g`` (a finished league
    that is extended draws a new secret from its next whole group on).  Instead of step 1,
    ``h = HMAC-SHA256(secret, "guild-league:v2:{g}")``; the game seed is the first 6 bytes
    of ``h`` (48 bits: exact, RULES §4 allows up to about 2**50) and the shuffle takes
    ``h[6:14]``.  A secret absent from ``secrets`` (not revealed yet) raises ``KeyError``.
    """

    secrets: tuple[tuple[int, bytes | None], ...]  # None: committed to, not revealed

    def secret_for(self, group: int) -> bytes:
        found = [secret for first, secret in self.secrets if first <= group]
        if not found or found[-1] is None:
            raise KeyError(group)
        return found[-1]

    def seat_key(self) -> bytes:
        """The key seat seeds are derived with (``league.seat.protocol.seat_seed``): a seat's
        reset seed then tells nothing of the town, even to a search of the public draw."""
        return hmac.new(self.secret_for(0), b"guild-league:v2:seats", hashlib.sha256).digest()


Draw = int | SecretDraw  # --seed S (the public draw of the module docstring) or a secret one
SECRET_SCHEME = "hmac-sha256/48-bit/v2"  # league.json's "draw" for a secret draw


def group_draw(policies: Sequence[str], draw: Draw, group: int) -> tuple[int, list[str]]:
    """The game seed and the base lineup of one group (steps 1-3 of the module docstring)."""
    if not policies:
        raise LeagueError("a league needs at least one policy")
    if isinstance(draw, SecretDraw):
        h = hmac.new(draw.secret_for(group), f"guild-league:v2:{group}".encode(),
                     hashlib.sha256).digest()
        seed = int.from_bytes(h[:6], "big")
        h = h[2:]  # so that h[4:12] below is the shuffle's h[6:14]
    else:
        h = hashlib.sha256(f"guild-league:v1:{draw}:{group}".encode()).digest()
        seed = int.from_bytes(h[:4], "big") & 0x7FFF_FFFF
    k = len(policies)
    base = [policies[(SEATS * group + j) % k] for j in range(SEATS)]
    random.Random(int.from_bytes(h[4:12], "big")).shuffle(base)
    return seed, base


def episode_spec(policies: Sequence[str], league_seed: Draw, index: int) -> EpisodeSpec:
    """Episode ``index`` of the league: group ``index // 6``, rotation ``index % 6``."""
    if index < 0:
        raise ValueError(f"episode index must be >= 0; got {index}")
    group, rotation = divmod(index, SEATS)
    seed, base = group_draw(policies, league_seed, group)
    lineup = tuple(base[(s - rotation) % SEATS] for s in range(SEATS))
    return EpisodeSpec(index, group, rotation, seed, lineup)


class Schedule(Sequence[EpisodeSpec]):
    """Episodes ``start .. stop - 1`` of a league, drawn on demand (a league may be huge)."""

    def __init__(self, policies: Sequence[str], league_seed: Draw, start: int, stop: int) -> None:
        self.policies, self.seed = tuple(policies), league_seed
        self._range = range(start, max(start, stop))

    def __len__(self) -> int:
        return len(self._range)

    @overload
    def __getitem__(self, i: int) -> EpisodeSpec: ...

    @overload
    def __getitem__(self, i: slice) -> list[EpisodeSpec]: ...

    def __getitem__(self, i: int | slice) -> EpisodeSpec | list[EpisodeSpec]:
        if isinstance(i, slice):
            return [episode_spec(self.policies, self.seed, k) for k in self._range[i]]
        return episode_spec(self.policies, self.seed, self._range[i])


def schedule(policies: Sequence[str], league_seed: Draw, start: int, stop: int) -> Schedule:
    """Episodes ``start .. stop - 1`` of the league of ``policies`` and ``league_seed``."""
    return Schedule(policies, league_seed, start, stop)
