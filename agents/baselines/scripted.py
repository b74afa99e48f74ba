"""The original's two scripted baselines as policies (RULES §21, SENTENCES §21).

``Factor`` and ``Magpie`` hold their parameters and answer the :class:`agents.Policy`
interface; their rules, and the sentences they write, are ``agents.baselines.rules`` (compiled
at install, ``agents.baselines.native``). Given the same state they write the original's sentence
byte for byte (the golden episodes check every factor and magpie seat).
"""

from __future__ import annotations

from agents.baselines.rules import factor_sentence, magpie_sentence
from sim import Game

__all__ = ["Factor", "Magpie", "factor_params", "magpie_params"]

# A parameter outside int64 cannot reach the batched kernels (numba types it int64), nor a
# compiled build of the rules; the scalar and batched forms accept the same values.
_LOW, _HIGH = -(2 ** 63), 2 ** 63 - 1


def _int(name: str, value: object) -> int:
    if type(value) is not int and (isinstance(value, bool) or not isinstance(value, int)):
        raise ValueError(f"{name} must be an int; got {value!r:.40}")
    if not _LOW <= value <= _HIGH:
        raise ValueError(f"{name} must fit in 64 bits (between -2**63 and 2**63 - 1); got "
                         f"{value!r:.40}")
    return int(value)


def factor_params(sell_margin: object, pickup_value: object) -> tuple[int, int]:
    """The factor's ``(sell_margin, pickup_value)`` as ints, or ValueError naming the bad one
    (shared by ``Factor`` and ``agents.baselines.batched.BatchedFactor``)."""
    return _int("sell_margin", sell_margin), _int("pickup_value", pickup_value)


def magpie_params(hawk_period: object, sell_margin: object,
                  buy_margin: object) -> tuple[int, int, int]:
    """The magpie's ``(hawk_period, sell_margin, buy_margin)`` as ints, or ValueError naming
    the bad one (shared by ``Magpie`` and ``agents.baselines.batched.BatchedMagpie``)."""
    period = _int("hawk_period", hawk_period)
    if period < 0:
        raise ValueError(f"hawk_period must be >= 0 (0 = never); got {hawk_period}")
    return period, _int("sell_margin", sell_margin), _int("buy_margin", buy_margin)


class Factor:
    """The competent baseline and universal fallback (RULES §21 factor; SENTENCES §21.1).

    First rule that applies: (1) at Guildmaster Vell, hand in what a commission still needs;
    (2) at a keeper, buy what a commission still needs (clamped to stock, free slots and what the
    purse affords), else sell a good no open commission needs when ``bid >= base + sell_margin``
    and the shop can pay; (3) pick up a needed good, or one with ``base >= pickup_value``;
    (4) walk one step toward the nearest shop stocking a still-needed good (else the Guildhall
    while a commission is open, else Market Square); (5) wait.  In a world file's town cut in
    parts, a shop it cannot reach is no target, and a target it cannot reach means (5).

    Args:
        sell_margin: sell a spare good only if the bid is at least its base value plus this (0).
        pickup_value: pick up a good nobody needs only if its base value is at least this (8).
    """

    scripted = True
    concurrent = False  # decides at once: never worth a thread (agents.policy.decide_turn)
    name = "factor"

    def __init__(self, sell_margin: int = 0, pickup_value: int = 8) -> None:
        self.sell_margin, self.pickup_value = factor_params(sell_margin, pickup_value)

    def __repr__(self) -> str:
        return f"Factor(sell_margin={self.sell_margin}, pickup_value={self.pickup_value})"

    def reset(self, seed: int | None = None) -> None:
        """Stateless: nothing to reset."""

    def act(self, game: Game, seat: int) -> str:
        """The factor's sentence for ``seat`` in the game's start-of-turn state."""
        return factor_sentence(game, seat, self.sell_margin, self.pickup_value)


class Magpie:
    """The thief-peddler; ignores commissions (RULES §21 magpie; SENTENCES §21.2).

    First rule that applies: (1) in a dark room with thievery on, rob the first other seat here
    carrying goods (not its own employer while bound); (2) on turns divisible by
    ``hawk_period``, offer the first other seat here 1 unit of its lowest-id good for base + 2
    coins; (3) at a keeper, sell all of the first held good it trades with
    ``bid >= base + sell_margin`` and the coin to pay, else buy 1 of the first traded good in
    stock with ``ask <= base + buy_margin`` it can afford and carry; (4) wander: the first dark
    exit not just come from (empty pack only), else the first exit not just come from, else the
    first exit; in a room without exits (a world file's town may have one), wait (``I wait and
    watch the road.``, as the factor's rule 5).

    Args:
        hawk_period: offer goods on turns where ``turn % hawk_period == 0`` (3; 0 = never).
        sell_margin: sell when the bid is at least base value plus this (+1).
        buy_margin: buy when the ask is at most base value plus this (-1).
    """

    scripted = True
    concurrent = False  # decides at once: never worth a thread (agents.policy.decide_turn)
    name = "magpie"

    def __init__(self, hawk_period: int = 3, sell_margin: int = 1, buy_margin: int = -1) -> None:
        self.hawk_period, self.sell_margin, self.buy_margin = magpie_params(
            hawk_period, sell_margin, buy_margin)

    def __repr__(self) -> str:
        return (f"Magpie(hawk_period={self.hawk_period}, sell_margin={self.sell_margin}, "
                f"buy_margin={self.buy_margin})")

    def reset(self, seed: int | None = None) -> None:
        """Stateless: nothing to reset."""

    def act(self, game: Game, seat: int) -> str:
        """The magpie's sentence for ``seat`` in the game's start-of-turn state."""
        return magpie_sentence(game, seat, self.hawk_period, self.sell_margin,
                               self.buy_margin)
