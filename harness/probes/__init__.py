"""eBPF probes attached to a workload's processes for exactly the measured window.

spec: which probes a run asks for; availability: whether each can run here; process: a
probe's child process; collector and bpftrace: the two kinds of probe; session: the probes
of one repeat; metrics: per-op figures from their output; record: what goes into run.json;
overhead: the cost of probing; report: the readable summary of `harness probe`.
"""
