"""The scripted baselines of RULES §21, batched: action indices for many seats at once.

``agents.Factor`` and ``agents.Magpie`` write sentences for the scalar world; here the same
rules, in the same order, choose the action-table index with the same meaning, for every
``(episode, seat)`` pair at once, straight from the batched arrays (they read the same hidden
facts as ``agents.baselines.view.BaselineView``: other shops' stock, other seats' packs).

Every choice is exact (no snapping): each index's intent has the effect of the scalar
baseline's sentence in the same state, which the table was built for (``sim.codec.action_table``
version 2): factor's delivery ``I hand Vell <n> <goods>`` is "deliver n" (n is 1 or 2, a
commission's count), magpie's hawking ``1 <good> for <base + 2> coins`` is the offer row with
markup 2, buys are 1 or 2 units (a commission needs at most 2), sells are of all held units (the
sentence names the held count), pick-ups take 1, walks and robberies name a room or a seat.
``tests/test_batched_faces.py`` plays both faces of ``guild/Guild-v0`` side by side and finds
them equal.  ``BatchedRandom`` plays uniformly over the legal actions.

``act`` runs the rules compiled by numba (``agents.baselines.batched_kernels``), one loop per
seat rather than a dozen small array operations per rule.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from agents.baselines.batched_kernels import KernelCall, baseline_tables
from agents.baselines.scripted import factor_params, magpie_params
from sim.batched.observe import check_pairs, legal_masks
from sim.batched.setup import check_env_seed

if TYPE_CHECKING:
    from sim.batched.engine import BatchedGuild

# Far past every price, value and turn a town may have (sim.rules.world's MAX_VALUE, MAX_TURNS),
# yet small enough that ``value + margin`` cannot overflow int64 in a kernel: a parameter
# clipped to it decides as the scalar baseline's unbounded int does.
_FAR = 1 << 40


def _kernel_int(value: int) -> int:
    return max(-_FAR, min(_FAR, value))


class BatchedFactor:
    """RULES §21 factor for many seats: deliver, buy for the commissions, sell spares, pick up,
    walk toward the nearest stocked shop it can reach (or the Guildhall, or the market), wait."""

    name = "factor"
    batched = True
    # In every state ``act`` picks the index with the effect of the scalar Factor's
    # sentence, and keeps no state: ``guild/Guild-v0`` may play it in the scalar one's place.
    scalar_twin = True

    def __init__(self, sell_margin: int = 0, pickup_value: int = 8) -> None:
        self.sell_margin, self.pickup_value = factor_params(sell_margin, pickup_value)
        self._kernel = KernelCall("factor_rows")

    def act(self, e: BatchedGuild, r: np.ndarray, s: np.ndarray) -> np.ndarray:
        """The factor's action index for each seat ``s[i]`` of row ``r[i]`` (compiled; the
        pairs checked first, as the kernel reads without bounds checks)."""
        r, s = check_pairs(e, r, s)
        return self._kernel(r, s, e.state, baseline_tables(e.world),
                            _kernel_int(self.sell_margin), _kernel_int(self.pickup_value))


class BatchedMagpie:
    """RULES §21 magpie for many seats: rob in the dark, hawk goods, trade with the keeper,
    ramble (dark exits first with an empty pack; in a room without exits, wait)."""

    name = "magpie"
    batched = True
    # In every state ``act`` picks the index with the effect of the scalar Magpie's
    # sentence, and keeps no state: ``guild/Guild-v0`` may play it in the scalar one's place.
    scalar_twin = True

    def __init__(self, hawk_period: int = 3, sell_margin: int = 1, buy_margin: int = -1) -> None:
        self.hawk_period, self.sell_margin, self.buy_margin = magpie_params(
            hawk_period, sell_margin, buy_margin)
        self._kernel = KernelCall("magpie_rows")

    def act(self, e: BatchedGuild, r: np.ndarray, s: np.ndarray) -> np.ndarray:
        """The magpie's action index for each seat ``s[i]`` of row ``r[i]`` (compiled; the
        pairs checked first, as the kernel reads without bounds checks)."""
        r, s = check_pairs(e, r, s)
        return self._kernel(r, s, e.state, baseline_tables(e.world), e.thievery,
                            _kernel_int(self.hawk_period), _kernel_int(self.sell_margin),
                            _kernel_int(self.buy_margin))


class BatchedRandom:
    """Uniform over the legal actions of each seat (``legal_masks``), from its own stream."""

    name = "random"
    batched = True

    def __init__(self, seed: int | None = None) -> None:
        self.rng = np.random.default_rng(check_env_seed(seed, "random: seed"))

    def reset(self, seed: int | None = None) -> None:
        self.rng = np.random.default_rng(check_env_seed(seed, "random: seed"))

    def act(self, e: BatchedGuild, r: np.ndarray, s: np.ndarray) -> np.ndarray:
        """A legal index for each seat ``s[i]`` of row ``r[i]`` (``legal_masks`` checks the
        pairs)."""
        return sample_legal(self.rng, legal_masks(e, r, s))


def sample_legal(rng: np.random.Generator, mask: np.ndarray) -> np.ndarray:
    """One uniformly drawn legal index per row of a boolean mask (wait is always legal)."""
    cum = np.cumsum(mask, axis=1)
    pick = (rng.random(mask.shape[0]) * cum[:, -1]).astype(np.int64)
    return (cum > pick[:, None]).argmax(1)

