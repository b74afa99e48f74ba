"""Speed figures (``python -m bench``), and the original's figures they are compared with."""

# The compiled original (Nim 2.2.6 ``-d:release``, one thread) on this machine class, measured
# side by side with ours, 14-turn episodes: its own workload (3 factor + 3 magpie
# seats, decisions included) and the rules alone (replaying recorded sentences).
ORIGINAL_BASELINE_EPISODES_PER_S = 695
ORIGINAL_REPLAY_EPISODES_PER_S = 701
ORIGINAL_SEAT_STEPS_PER_S = ORIGINAL_REPLAY_EPISODES_PER_S * 6 * 14  # 58,884
