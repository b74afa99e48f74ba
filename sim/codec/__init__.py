"""The numeric codec shared by the environments and the batched engine.

``action_table``: the flat structured action table (index <-> Intent, canonical sentences, the
legal mask).  ``encode``: the numeric per-seat observation and its layout (RULES §17).
"""
