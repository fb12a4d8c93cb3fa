"""The suite's describe (strategies, parameters, metrics) and the checks of `--param`."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SUITE_DIR = Path(__file__).resolve().parent.parent
CUSTOM = "custom"
BASELINE = "randread-4k"
STRATEGIES = {
    "randread-4k": "4 KiB random reads, O_DIRECT, libaio, iodepth 32 (randread-4k.fio)",
    "seqwrite-1m": "1 MiB sequential writes, O_DIRECT, libaio, iodepth 8 (seqwrite-1m.fio)",
    "poisson-rate": "fio's poisson-rate-submission example: 4 KiB random reads at rate_iops "
    "500 with Poisson gaps, libaio, iodepth 32 (poisson-rate.fio)",
    CUSTOM: "your own fio job file, given as --param job_file=PATH",
}
SCENARIOS = [{"name": "default", "help": "the job file with the parameters given", "params": {}}]

# fio options passed through as parameters: "" (the default) keeps the job file's own value.
FIO_OPTIONS = {
    "rw": "I/O pattern (read, write, randread, randwrite, rw, randrw, ...)",
    "bs": "block size, e.g. 4k or 1m (fio's syntax)",
    "ioengine": "psync, libaio, io_uring, ... (fio --enghelp)",
    "iodepth": "I/Os in flight per job (no effect with synchronous engines)",
    "numjobs": "clones of each job (threads of the one fio process)",
    "direct": "1: O_DIRECT (no page cache), 0: buffered",
    "rate_iops": "IOPS cap per job (read,write as fio spells it)",
    "rate": "bandwidth cap per job in bytes/s (fio's syntax, e.g. 10m)",
    "rate_process": "linear or poisson: how the rate's issue times are spread",
    "io_submit_mode": "inline or offload (offload hangs at the end in fio 3.33: README)",
    "thinktime": "stall between I/Os (fio's time syntax, default unit us)",
    "rwmixread": "share of reads in a mixed rw/randrw job, in %",
}
# Options the wrapper sets itself: a parameter or fio_options may not set them.
RESERVED = ("thread", "filename", "size", "time_based", "runtime", "ramp_time", "unlink")

METRICS: list[dict[str, Any]] = [
    {"name": "iops", "unit": "req/s", "better": "higher", "label": "IOPS", "headline": True},
    {"name": "latency_ns.p50", "unit": "ns", "better": "lower", "label": "p50", "headline": True},
    {"name": "latency_ns.p99", "unit": "ns", "better": "lower", "label": "p99", "headline": True},
    {"name": "bw_bytes", "unit": "B/s", "better": "higher", "label": "bandwidth"},
    {"name": "latency_ns.p90", "unit": "ns", "better": "lower", "label": "p90"},
    {"name": "latency_ns.p999", "unit": "ns", "better": "lower", "label": "p99.9"},
    {"name": "latency_ns.max", "unit": "ns", "better": "lower", "label": "max"},
    {"name": "cpu_ns_per_op", "unit": "ns", "better": "lower", "label": "CPU/op"},
    # Per direction, the rates only: a direction without IOs (randread's writes) reports
    # zeros and no latency; read.latency_ns.p99 etc. are in the result when there are IOs.
    *[
        {"name": f"{d}.{m}", "unit": u, "better": "higher", "label": f"{d} {label}"}
        for d in ("read", "write")
        for m, u, label in (("iops", "req/s", "IOPS"), ("bw_bytes", "B/s", "bandwidth"))
    ],
]
PLOTS = [
    {
        "name": "clat",
        "chart": "cdf",
        "title": "completion latency (CDF, all jobs and directions)",
        "metrics": [{"name": "clat_hist", "label": "completion latency"}],
    }
]


class BadInput(Exception):
    """Exit 2: the one line says what is wrong."""


@dataclass(frozen=True)
class Params:
    file_size_mb: int
    dir: str
    job_file: str
    fio_options: str
    options: dict[str, str]  # FIO_OPTIONS given a non-empty value

    def as_json(self) -> dict[str, Any]:
        return {
            "file_size_mb": self.file_size_mb,
            "dir": self.dir,
            "job_file": self.job_file,
            "fio_options": self.fio_options,
            **{name: self.options.get(name, "") for name in FIO_OPTIONS},
        }


def param_specs() -> list[dict[str, Any]]:
    specs: list[dict[str, Any]] = [
        {"name": "file_size_mb", "type": "int", "default": 64, "min": 1, "max": 1048576,
         "help": "the scratch file's size in MiB: fio's size (the harness makes the file)"},
        {"name": "dir", "type": "string", "default": "",
         "help": "folder of the scratch file; \"\" = <results>/scratch/"},
        {"name": "job_file", "type": "string", "default": "",
         "help": "with --strategy custom: the fio job file to run (an absolute path: the "
         "harness runs fio-bench in the suite's folder)"},
        {"name": "fio_options", "type": "string", "default": "",
         "help": "more fio options, space-separated name=value or name, e.g. "
         "'norandommap randrepeat=0'"},
    ]  # fmt: skip
    for name, help_text in FIO_OPTIONS.items():
        specs.append(
            {"name": name, "type": "string", "default": "",
             "help": f"fio's {name}: {help_text}; \"\" = the job file's own"}
        )  # fmt: skip
    return specs


def describe() -> dict[str, Any]:
    return {
        "suite": "fio",
        "contract_version": 2,
        "baseline": BASELINE,
        "strategies": [{"name": n, "help": h} for n, h in STRATEGIES.items()],
        "default_scenario": "default",
        "scenarios": SCENARIOS,
        "params": param_specs(),
        "metrics": METRICS,
        "plots": PLOTS,
    }


_JSON_NUMBER = re.compile(r"-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?")


def parse_int(name: str, text: str) -> int:
    """docs/workload-contract.md "Parameter values": any JSON number with an integral value."""
    stripped = text.strip()
    match = _JSON_NUMBER.fullmatch(stripped)
    if not match:
        raise BadInput(f"error: --param {name}={text}: not an integer")
    if match.group(2) is None and match.group(3) is None:
        return int(stripped)
    value = float(stripped)
    if not math.isfinite(value) or value != int(value) or abs(value) > 2**53 - 1:
        raise BadInput(f"error: --param {name}={text}: not an integer")
    return int(value)


def parse_params(pairs: list[str]) -> Params:
    values: dict[str, str] = {}
    known = [spec["name"] for spec in param_specs()]
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep:
            raise BadInput(f"error: --param {pair}: expected name=value")
        if name not in known:
            raise BadInput(f"error: unknown parameter '{name}' (valid: {', '.join(known)})")
        values[name] = value
    size = parse_int("file_size_mb", values.get("file_size_mb", "64"))
    if not 1 <= size <= 1048576:
        raise BadInput(f"error: --param file_size_mb={size}: out of range 1..1048576")
    return Params(
        file_size_mb=size,
        dir=values.get("dir", ""),
        job_file=values.get("job_file", ""),
        fio_options=values.get("fio_options", ""),
        options={n: v for n, v in values.items() if n in FIO_OPTIONS and v != ""},
    )


def job_file_path(strategy: str, params: Params) -> Path:
    """The strategy's job file, or the user's for `custom`."""
    if strategy not in STRATEGIES:
        raise BadInput(f"error: unknown strategy '{strategy}' (valid: {', '.join(STRATEGIES)})")
    if strategy == CUSTOM:
        if not params.job_file:
            raise BadInput("error: --strategy custom needs --param job_file=PATH")
        return Path(params.job_file).absolute()
    if params.job_file:
        raise BadInput(
            f"error: --param job_file is for --strategy custom, not '{strategy}' "
            f"(which runs {strategy}.fio)"
        )
    return SUITE_DIR / f"{strategy}.fio"
