"""The probe drivers: each starts its tool (a libbpf collector, perf, bpftrace) on the
workload's processes, opens and closes its window on the session's events, and hands back
its output (probes/probe.py says what a driver offers); probes/kinds/ says what each kind
makes of it."""
