"""The batched engine: thousands of episodes in lockstep, held equal to ``sim.rules``.

:class:`BatchedGuild` (``engine``) keeps the state as ``[episode, ...]`` arrays (``state``) and
steps every row at once with kernels compiled by numba (``kernels_step``, ``kernels_observe``,
built by ``jit``; ``observe`` is their Python face) that call the rules' own formulas, read from
their sources (``source``) where mypyc compiled the scalar ones; ``tables`` holds a town's
constants as arrays and ``setup`` draws starting towns from seeds.  The differential tests hold
every row equal to ``sim.Game``.
"""

from .engine import BatchedGuild

__all__ = ["BatchedGuild"]
