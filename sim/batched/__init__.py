"""The batched engine: thousands of episodes in lockstep, held equal to ``sim.rules``.

:class:`BatchedGuild` (``engine``) keeps the state as ``[episode, ...]`` arrays (``state``) and
steps every row at once with compiled kernels (``kernels``, ``observe``) that call the rules'
own formulas; ``tables`` holds a town's constants as arrays and ``setup`` draws starting towns
from seeds.  The differential tests hold every row equal to ``sim.Game``.
"""

from .engine import BatchedGuild

__all__ = ["BatchedGuild"]
