"""Profiles: on-CPU folded stacks from perf, off-CPU and wake-up stacks from the probes, and
the flame graphs and figures built from them."""
