"""Environment faces: Gymnasium (``gym``), PettingZoo (``parallel``), batched (``vector``).

Thin faces over ``sim.Game`` and ``sim.batched.BatchedGuild``; ``face`` holds what they share
(spaces, observation and action decoding of one seat).  Nothing here is imported by ``import
sim``: Gymnasium resolves ``guild/Guild-v0`` to these modules only at ``make``.
"""
