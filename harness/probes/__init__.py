"""eBPF probes attached to a workload's processes for exactly the measured window.

registry: the probe kinds, each a module of kinds/ declaring what kind.py lists; spec:
which probes a run asks for; availability: whether each can run here; probe: what a
driver offers; drivers/: the drivers (a libbpf collector, perf, bpftrace) and a probe's child
process; session: the probes of one repeat; metrics: per-op figures from their output;
record: what goes into run.json; overhead: the cost of probing; live and report: `harness
probe` and its summary; terminal and log2: what the kinds' sections and metrics share.
"""
