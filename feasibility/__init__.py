"""The feasibility gate: can a competent seat, alone, finish both commissions in time and purse?

RULES §18 makes this the enforcement test for every rule constant: change a room, an exit, a
stock level, a base value, the starting coin or the turn count, and the gate says, before anyone
plays, whether the slack is gone.  :mod:`~feasibility.greedy` is the original oracle, exactly;
:mod:`~feasibility.optimal` the best plan by search; :mod:`~feasibility.gate` runs both over the
seeded seats and over every (starting room, commission pair); ``python -m feasibility`` is the
command line.  This package imports only ``sim``.
"""

from .gate import (
    DEFAULT_SEARCH_STEPS,
    DEFAULT_SEEDS,
    Case,
    Checker,
    GateReport,
    Outcome,
    SeededOutcomes,
    Summary,
    run_gate,
)
from .greedy import Source, cheapest_source, greedy_plan
from .optimal import OptimalSearch, OutOfEffort, SearchEffort, optimal_plan
from .plan import TURN_MARGIN, UNITS, Plan, Step, allowance

__all__ = [
    "DEFAULT_SEARCH_STEPS", "DEFAULT_SEEDS", "TURN_MARGIN", "UNITS", "Case", "Checker",
    "GateReport", "OptimalSearch", "OutOfEffort", "Outcome", "Plan", "SearchEffort",
    "SeededOutcomes", "Source", "Step", "Summary", "allowance", "cheapest_source", "greedy_plan",
    "optimal_plan", "run_gate",
]
