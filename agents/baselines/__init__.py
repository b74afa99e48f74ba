"""The built-in opponents: the original's scripted baselines and a uniform random player.

``scripted`` holds ``Factor`` and ``Magpie`` (RULES §21, SENTENCES §21), whose decisions are
``rules`` over the seat's ``view``; ``random_policy`` plays uniformly over the legal structured
acts; ``batched`` holds the three for the batched engine, one decision per row and seat (its
factor and magpie run the numba kernels of ``batched_kernels``).  ``rules`` and ``view`` are
compiled at install (``native``), which is chosen here, before either is imported.
"""

from agents.baselines import native

native.choose()  # the compiled baselines, or their sources if the build is stale

from agents.baselines.scripted import Factor, Magpie  # noqa: E402

__all__ = ["Factor", "Magpie"]
