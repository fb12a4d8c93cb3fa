"""eBPF-assisted benchmarking harness."""
