"""eBPF-assisted benchmarking harness."""

from harness.mplconfig import ensure_writable

ensure_writable()  # before any module imports matplotlib
