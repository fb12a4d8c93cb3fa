"""The run.json document as typed records: the one definition of what a run directory's
run.json holds (docs/run-json.md explains every key; docs/run.schema.json is generated from
these classes by `make schema`).

Format history (`schema_version`):
- 1: the shape the harness modules wrote into a nested dict; never written down.
- 2: this model. The keys of 1, each with a defined type; unknown keys are refused.
  Optional keys added since keep the version: every version-2 file still loads (see the
  table in docs/run-json.md).
"""

from __future__ import annotations

from typing import Annotated, Any, Final, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, SerializerFunctionWrapHandler, model_serializer
from pydantic.json_schema import SkipJsonSchema

from harness.params import ParamValue

SchemaVersion = Literal[2]
SCHEMA_VERSION: Final[SchemaVersion] = 2

Status = Literal["running", "complete", "partial", "failed", "interrupted", "abandoned"]
Verdict = Literal["better", "worse", "no change", "changed", "inconclusive"]
Ratios = dict[str, float | None]

T = TypeVar("T")


class _LeftOut:
    """Marks a field that is left out of the file while it is None."""


LEFT_OUT = _LeftOut()
# A key that only some documents have: absent (never null) when it does not apply, so that
# `"path" in entry` says whether a probe wrote a file.
Absent = Annotated[T | SkipJsonSchema[None], LEFT_OUT]


class Record(BaseModel):
    """A JSON object of run.json: its keys are exactly the fields, with their types."""

    model_config = ConfigDict(extra="forbid", strict=True, use_attribute_docstrings=True)

    @model_serializer(mode="wrap")
    def _leave_out_absent(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        fields = type(self).model_fields
        return {
            key: value
            for key, value in data.items()
            if value is not None or LEFT_OUT not in fields[key].metadata
        }


class Git(Record):
    """The checkout the harness ran from."""

    commit: str | None
    """HEAD's full hash; null outside a git checkout or before the first commit."""
    dirty: bool | None
    """Tracked or untracked (not ignored) files differ from HEAD; null when unknown."""


class SuiteSource(Record):
    """The suite's folder and the checkout it is in: for a suite of another repository, the
    commit that was measured (`git` is the harness's own)."""

    folder: str
    """The suite's folder, absolute."""
    commit: str | None
    """HEAD's full hash of the git working tree the folder is in; null outside one."""
    dirty: bool | None
    """Files of that working tree differ from HEAD; null when unknown."""


class Host(Record):
    """Facts of the machine that move benchmark figures (null: could not be read)."""

    hostname: str | None
    kernel: str | None
    """Kernel release (uname -r)."""
    cpu_model: str | None
    logical_cpus: int | None
    """Online logical CPUs."""
    governor: str
    """cpufreq scaling governor of cpu0, `unknown` without cpufreq."""
    smt: bool | None
    """Simultaneous multithreading active."""
    isolated_cpus: list[int] | None
    """CPUs isolated from the scheduler (isolcpus)."""
    turbo: bool | None
    """Turbo/boost enabled."""
    memory_bytes: Absent[int] = None
    """MemTotal of /proc/meminfo (absent in runs from before it was recorded)."""
    toolchains: Absent[dict[str, str]] = None
    """The compilers the workloads are built with: `rustc`, `go` -> their version line."""


class Scale(Record):
    """How `make bench` scaled its matrix's parameters to this machine."""

    logical_cpus: int
    reference_threads: int
    """The machine size the matrix's values are written for."""
    minimum: int
    """No scaled value goes below this."""
    params: list[str]
    """The scaled parameters: value x logical_cpus / reference_threads."""


class ScratchFile(Record):
    """A file the harness wrote for the workload (suite.toml [scratch]) and removed after."""

    dir: str
    """The folder it was made in (the suite's dir parameter, or <results>/scratch)."""
    size_mb: int
    """Its size in MiB."""
    path: str
    """The file, `<dir>/harness-scratch-<run_id>/data-<size>m` (HARNESS_SCRATCH_FILE)."""


class Config(Record):
    """What was asked for: the plan of the run."""

    binary: str
    """The workload executable."""
    strategies: list[str]
    scenario: str | list[str]
    """The scenario, or the list of them when the run has several."""
    params: dict[str, list[ParamValue]]
    """The swept parameters: name -> values (one cell per combination and strategy)."""
    duration_s: float
    """Measured seconds per repeat."""
    warmup_s: float
    """Warm-up seconds before each measured window."""
    repeats: int
    """Repeats of every cell."""
    order: Literal["interleaved", "sequential"]
    probes: list[str]
    """The run's probes (`sched`, `futex`, `gc`, `oncpu`, `bt:<script>`): every one on the
    explain repeats, `measurement_probes` on the others (on every repeat in runs without
    `explain_repeats`)."""
    probes_named: Absent[list[str]] = None
    """Those named in --probes (or $HARNESS_PROBES) themselves, not only through `all` or the
    default: the notes show that one of these does not apply to the workload's processes."""
    probe_overhead: bool
    """Each cell also ran without probes and with each probe alone (--probe-overhead)."""
    probes_unavailable: Absent[dict[str, str]] = None
    """The run's probes that could not run on this machine, and why (their `harness doctor`
    line, at the run's start): no cell has their figures. Empty when every probe could run;
    absent in runs from before it was recorded."""
    measurement_probes: Absent[list[str]] = None
    """The probes of the measurement repeats (the cell's `repeats`): those cheap enough for
    the figures, sched counters-only (docs/probes.md); absent in runs from before the split
    (every probe)."""
    measurement_set: Absent[str] = None
    """Their key in `cells[].probe_rounds` (and `probe_overhead`): `none`, a probe's name,
    `all`, else the names joined by `+`."""
    explain_repeats: Absent[int] = None
    """Explain repeats per cell: with every probe, in rounds of their own spread over the
    cell's (every round with --probe-overhead); 0 when no probe needs them (explain-only, or
    sched for its full mode), or when none were asked for."""
    explain_set: Absent[str] = None
    """The explain repeats' key in `cells[].probe_variants` and `probe_rounds` (`all`, the
    one probe's name, or `explain` when the measurement repeats carry the same probes, sched
    counters-only); absent without explain repeats."""
    baseline: str
    """The strategy the others are compared with (but those compared with their twin)."""
    compare_with: Absent[dict[str, str]] = None
    """The twins the suite's describe names for the run's strategies (strategy -> the strategy
    it is compared with instead of the baseline), whether or not the twin ran: a strategy
    whose twin is not among `strategies` is compared with the baseline. Absent when the suite
    names none (and in runs from before it was recorded)."""
    scale: Scale | None
    """Set by `harness bench` when suite.toml scales its matrix; null otherwise."""
    perf_frequency_hz: int
    """oncpu sampling frequency per CPU."""
    callgraph: Literal["fp", "dwarf"]
    """oncpu stack unwinding: frame pointers or DWARF."""
    mutex_patterns: list[str]
    """Frame substrings that make an on-CPU sample lock-related (mutex_share)."""
    offwake_kernel_stacks: Absent[bool] = None
    """offwake took the kernel stacks too (--kernel-stacks); false: user stacks only. Absent in
    runs from before the option, whose offwake took both."""
    command: list[str]
    """The harness command line."""
    cpuset: Absent[dict[str, list[int]]] = None
    """--cpuset (or harness bench's split): role -> the CPUs its processes were pinned to."""
    cpuset_auto: Absent[bool] = None
    """The cpuset is harness bench's automatic client/server split (pins only workloads
    whose ready event lists a server process)."""
    scratch: Absent[list[ScratchFile]] = None
    """The scratch files of a suite with [scratch], one per distinct folder and size."""
    confirms: Absent[str] = None
    """The run id of the nightly run whose provisional changes this run confirms (`harness
    history confirm`): its cells are those changes' cells and their baseline cells,
    interleaved; the history keeps its repeats apart from the series' points. Absent in
    every other run."""


class Metric(Record):
    """A metric worth summarising, as the workload's `describe` (or a probe) declares it."""

    name: str
    """Key in a repeat's result; nested objects joined by dots (`latency_ns.p99`)."""
    unit: Absent[str] = None
    better: Absent[str] = None
    """`higher` or `lower`; anything else (or none) means no direction."""
    headline: Absent[bool] = None
    """A column of the summary table; the first one is compared with the baseline."""
    label: Absent[str] = None
    """The heading of its column in the tables and reports (default: the harness's own for
    the shared metrics, else the name)."""


class Failure(Record):
    """A repeat that did not produce a result."""

    repeat: int
    """1-based."""
    exit_code: int | None
    """Negative: killed by that signal; null: never started."""
    error: str
    """Why it failed, and the workload's last line on stderr."""
    stderr_tail: list[str]
    """The workload's last lines on stderr."""
    elapsed_s: float


class Summary(Record):
    """One metric over a cell's successful repeats, in the metric's unit."""

    median: float
    min: float
    max: float
    ci95_low: float
    """Lower end of the order-statistic interval of the median."""
    ci95_high: float
    ci_coverage: float
    """Probability that [ci95_low, ci95_high] covers the median: 0.95 or more from 6
    repeats on, less below (the interval is then [min, max])."""
    n: int
    """Repeats that reported the metric."""


class BpfProgram(Record):
    """One BPF program of a probe over the measured window."""

    id: int
    name: str
    run_cnt: int
    run_time_ns: int


class BpfStats(Record):
    """A BPF probe's own cost over the measured window(s), from the kernel's BPF run-time
    statistics (BPF_ENABLE_STATS, on while the probes run; harness/probes/bpfstats.py)."""

    unavailable: Absent[str] = None
    """The statistics could not be enabled, and why."""
    window_ns: Absent[int] = None
    """From the snapshot at measure_start to the one at measure_end (summed over repeats)."""
    cpus: Absent[int] = None
    """Online CPUs."""
    run_cnt: Absent[int] = None
    """Runs of the probe's programs (every event they are attached to, also other tasks')."""
    run_time_ns: Absent[int] = None
    """Time in those runs."""
    ns_per_run: Absent[float] = None
    """run_time_ns / run_cnt."""
    cpu_share: Absent[float] = None
    """run_time_ns / (window_ns x cpus): the probe's share of the machine's CPU time."""
    programs: Absent[list[BpfProgram]] = None
    """Per program (one repeat's record only)."""


class ProbeRepeat(Record):
    """One repeat's output of one probe: a summary and the raw file, or why there is none."""

    repeat: int
    """1-based."""
    unavailable: Absent[str] = None
    """The probe cannot run here (no privileges, no BTF, not built), and why."""
    not_applicable: Absent[str] = None
    """Nothing in the workload's processes for the probe to watch (gc: no Go program or JVM),
    and what they are."""
    error: Absent[str] = None
    """The probe ran and failed, and why."""
    path: Absent[str] = None
    """The raw output, relative to the run directory (probes/<cell>/r<N>-<probe>.json)."""
    window_ns: Absent[int] = None
    """Collectors: length of the measured window they counted over."""
    lost_events: Absent[int] = None
    """Collectors: events dropped (0 is required for exact figures)."""
    totals: Absent[dict[str, Any]] = None
    """Collectors: their totals over the window (see docs/probes.md)."""
    frequency_hz: Absent[int] = None
    """oncpu: the frequency perf sampled at; config.perf_frequency_hz unless the kernel
    lowered perf_event_max_sample_rate below it during the run."""
    script: Absent[str] = None
    """bpftrace: the script."""
    diff: Absent[dict[str, Any]] = None
    """bpftrace: each map's value at measure_end minus measure_start."""
    not_diffed: Absent[list[str]] = None
    """bpftrace: maps whose window difference could not be taken."""
    output: Absent[list[Any]] = None
    """bpftrace: what the script printed besides maps."""
    notes: Absent[list[str]] = None
    """bpftrace: caveats of the window difference; perfstat: events not counted, multiplexed."""
    per_op: Absent[dict[str, Any]] = None
    """bpftrace: the numbers of `diff` divided by the repeat's op count."""
    bpf_stats: Absent[BpfStats] = None
    """BPF probes: their programs' run count and run time over the window."""


class ProbeSummary(Record):
    """One probe over a cell's repeats."""

    repeats: list[ProbeRepeat]
    paths: Absent[list[str]] = None
    """Raw files of the repeats that produced output."""
    lost_events: Absent[int] = None
    """Sum over those repeats."""
    totals: Absent[dict[str, Any]] = None
    """Collectors' totals added up over the repeats (numbers add, histograms bucket by
    bucket)."""
    unavailable: Absent[str] = None
    """No repeat produced output: the last repeat's reason."""
    not_applicable: Absent[str] = None
    """No repeat produced output: the probe does not apply to the workload's processes (the
    last repeat's reason)."""
    error: Absent[str] = None
    """No repeat produced output: the last repeat's error."""
    bpf_stats: Absent[BpfStats] = None
    """BPF probes: their programs' cost over the repeats (counts and windows summed)."""


class TopFrame(Record):
    frame: str
    samples: int
    """On-CPU samples with this frame as the leaf (self time)."""
    share: float
    """samples / the client's samples."""


class GrownFrame(Record):
    frame: str
    baseline_share: float
    """Self share in the baseline cell's client samples."""
    share: float
    """Self share in this cell's client samples."""
    delta: float
    """share - baseline_share (> 0)."""


class Profile(Record):
    """Flame graphs and the figures read off the stacks (docs/profiles.md); paths relative to
    the run directory. Empty until the profiles are drawn at the end of the run."""

    notes: Absent[list[str]] = None
    """What is missing and why (`no off-CPU graph: ...`)."""
    folded: Absent[str] = None
    """On-CPU folded stacks of every process, all repeats."""
    svg: Absent[str] = None
    """On-CPU flame graph."""
    samples: Absent[int] = None
    """On-CPU samples of every process."""
    client_samples: Absent[int] = None
    """On-CPU samples of the measured client."""
    mutex_share: Absent[float] = None
    """Share (0-1) of the client's samples with a lock-related frame, over all repeats."""
    top_self: Absent[list[TopFrame]] = None
    """The client's 10 frames with the most self time."""
    diff_svg: Absent[str] = None
    """Differential flame graph against the baseline cell (red: more than the baseline)."""
    diff_baseline: Absent[str] = None
    """Id of that baseline cell."""
    grew: Absent[list[GrownFrame]] = None
    """The 10 frames whose self share grew most against the baseline."""
    offcpu_folded: Absent[str] = None
    """futex waits, weighted by blocked ns."""
    offcpu_svg: Absent[str] = None
    offcpu_ns: Absent[int] = None
    """ns blocked in futex waits, all repeats."""
    wakeup_folded: Absent[str] = None
    """waker thread -> wakee thread, weighted by wake-ups."""
    wakeup_svg: Absent[str] = None
    wakeups: Absent[int] = None
    """Wake-ups of the workload's threads, all repeats."""
    offwake_folded: Absent[str] = None
    """offwake: every blocking of every process, blocked stack `--` waker stack, weighted by
    blocked ns, all repeats."""
    offwake_svg: Absent[str] = None
    """The off-wake flame graph."""
    offwake_diff_svg: Absent[str] = None
    """The off-wake differential graph against the baseline cell (red: more blocked time)."""
    offwake_ns: Absent[int] = None
    """ns off CPU of the workload's threads, all repeats."""

    @property
    def empty(self) -> bool:
        """Nothing drawn or read: the profiler did not run for the cell."""
        return all(getattr(self, key) is None for key in type(self).model_fields)

    def file(self, key: str) -> str | None:
        """The path a key names (`svg`, `offcpu_folded`...: a flame kind's keys)."""
        value = getattr(self, key, None)
        return value if isinstance(value, str) and value else None


class OverheadInterval(Record):
    """One probe set's ops/s ratio, paired by repeat round (each round's ops/s with the probes
    / without in the same round, or explain / measurement; harness/probes/overhead_pairs.py)."""

    n: int
    """Rounds with both sides."""
    ratio: float | None
    """Median of the rounds' ratios."""
    ci95_low: Absent[float] = None
    """Interval of that median from order statistics ([min, max] below 6 rounds)."""
    ci95_high: Absent[float] = None
    ci_coverage: Absent[float] = None
    """Probability that [ci95_low, ci95_high] covers the median."""
    p_value: Absent[float] = None
    """Wilcoxon signed-rank, two-sided, of the log ratios against 0."""
    significant: bool
    """p < 0.05."""
    reason: Absent[str] = None
    """Why there is no p, or why it cannot be significant (fewer than 6 rounds)."""


class Cell(Record):
    """One strategy at one scenario and parameter combination, and its repeats."""

    id: str
    """`<strategy>/<param>=<value>...` over the swept params, `<scenario>/` first when the run
    has several scenarios."""
    strategy: str
    scenario: str
    params: dict[str, ParamValue]
    """The parameters the harness set (--param, the sweep)."""
    baseline: Absent[str] = None
    """The strategy this cell is compared with, at the same scenario and params: its twin
    (`config.compare_with`) when the run has it, else `config.baseline`. Absent for a cell of
    the baseline without a twin, which is compared with nothing (and in runs from before it
    was recorded: read those with RunDoc.baseline_of)."""
    resolved_params: dict[str, Any]
    """Every parameter as the workload resolved it (from its first result)."""
    repeats: list[dict[str, Any]]
    """Each successful repeat's result object (docs/workload-contract.md), plus the per-op
    metrics derived from its probes (docs/probes.md) and mutex_share."""
    failures: list[Failure]
    summary: dict[str, Summary]
    """Every numeric metric of the repeats (dotted name) -> its summary."""
    probes: dict[str, ProbeSummary]
    """Probe name -> what it recorded; empty without probes."""
    profile: Profile
    probe_variants: Absent[dict[str, list[dict[str, Any]]]] = None
    """--probe-overhead: probe set (`none`, a probe's name) -> the result objects of the
    repeats run with it; they feed probe_overhead only."""
    probe_overhead: Absent[Ratios] = None
    """--probe-overhead: probe set -> median ops/s with it / without probes (null: a side
    has no repeat)."""
    probe_rounds: Absent[dict[str, list[int]]] = None
    """--probe-overhead: probe set -> the round of each of its successful repeats (in the
    order of probe_variants, or of repeats for the main set)."""
    probe_overhead_paired: Absent[dict[str, OverheadInterval]] = None
    """--probe-overhead: probe set -> its ratio paired by round, with interval and p."""
    explain_summary: Absent[dict[str, Summary]] = None
    """The explain repeats' figures, as `summary` ("with probes"): apart from the cell's."""
    explain_ratio: Absent[OverheadInterval] = None
    """The perturbation: ops/s of each explain repeat / the measurement repeat of its round,
    paired, with interval and p."""
    stability: Absent[dict[str, list[str]]] = None
    """Metric (the headline one, CPU per op) -> its stability warnings over the repeats
    (spread, bimodal, drift: harness/stability.py); absent when there are none."""

    @property
    def runs(self) -> tuple[int, int]:
        """(successful repeats, failed repeats)."""
        return len(self.repeats), len(self.failures)

    def variant(self, key: str | None) -> list[dict[str, Any]]:
        """The result objects of the repeats run with probe set `key` (none without one)."""
        return list((self.probe_variants or {}).get(key) or []) if key else []


class Comparison(Record):
    """A candidate cell against the cell it is compared with (its `baseline`) of the same
    scenario and params, on one metric."""

    metric: str
    scenario: str
    params: dict[str, ParamValue]
    baseline: str
    """The strategy it is compared with: the cell's `baseline`."""
    candidate: str
    """The compared strategy."""
    better: str | None
    """The metric's direction, as declared."""
    baseline_median: float | None
    candidate_median: float | None
    n_baseline: int
    n_candidate: int
    ratio: float | None
    """candidate median / baseline median."""
    ci95_low: float | None
    """95% percentile-bootstrap interval of the ratio."""
    ci95_high: float | None
    p_value: float | None
    """Two-sided Mann-Whitney U."""
    significant: bool
    """p < 0.05."""
    verdict: Verdict
    reason: str | None
    """Why a figure is missing or cannot be significant."""


class Plot(Record):
    scenario: str
    kind: str
    """The plot's name in the workload's describe `plots` (pools: `wait`, the wait-time
    CDFs; `per_conn`, work per connection)."""
    path: str
    """PNG, relative to the run directory."""


class Owner(Record):
    """The harness process that runs the run; a reused pid has another start time."""

    pid: int
    start_ticks: int
    """Its start time: field 22 of /proc/<pid>/stat, clock ticks since boot."""
    boot_id: str
    """/proc/sys/kernel/random/boot_id of the boot it ran in."""


class RunDoc(Record):
    """results/runs/<run_id>/run.json."""

    schema_version: SchemaVersion
    run_id: str
    """<UTC start time>-<short commit> (`nogit` outside a checkout), -2, -3... if taken."""
    suite: str
    status: Status
    """`running` until the end; then `complete`, `partial` (some repeats failed), `failed`
    (none succeeded, or a write error stopped it: see `error`) or `interrupted` (Ctrl-C,
    SIGTERM, SIGHUP); `abandoned` when its harness died before the end (SIGKILL, out of
    memory) and a later harness found it."""
    started_at: str
    """UTC, ISO 8601 (2026-11-21T03:04:04Z)."""
    finished_at: str | None
    """UTC, ISO 8601; null while running; for an abandoned run, when its harness last wrote
    run.json."""
    git: Git
    suite_source: Absent[SuiteSource] = None
    """The suite's folder and its checkout (absent in runs of older harnesses)."""
    host: Host
    config: Config
    metrics: list[Metric]
    """The workload's declared metrics, then the probes' when the run has probes."""
    cells: list[Cell]
    comparisons: list[Comparison]
    """Every cell compared with another (its `baseline`) x declared metric; empty until the
    run ends."""
    plots: list[Plot]
    probe_overhead: Absent[Ratios] = None
    """--probe-overhead: probe set -> geometric mean of the cells' ratios."""
    probe_overhead_paired: Absent[dict[str, OverheadInterval]] = None
    """--probe-overhead: probe set -> the rounds' ratios of every cell pooled, paired."""
    explain_ratio: Absent[OverheadInterval] = None
    """The cells' `explain_ratio` rounds pooled: explain / measurement ops/s over the run."""
    error: Absent[str] = None
    """Why the run ended `failed` before its end (a write error such as a full disk), in one
    line naming the path; absent otherwise."""
    owner: Absent[Owner] = None
    """The harness process that runs it (left out by harnesses before it was added)."""
    abandoned_reason: Absent[str] = None
    """Status `abandoned`: what happened, and what was cleaned up."""

    def units(self) -> dict[str, str]:
        """Declared metric -> its unit (empty without one)."""
        return {m.name: m.unit or "" for m in self.metrics}

    def baseline_of(self, cell: Cell) -> str | None:
        """The strategy the cell is compared with (None: with nothing)."""
        return compared_with(cell.strategy, cell.baseline, self.config.baseline)

    def named_probes(self) -> frozenset[str]:
        """The probes the user named in --probes (config.probes_named)."""
        return frozenset(self.config.probes_named or ())


def compared_with(strategy: str, recorded: str | None, run_baseline: str | None) -> str | None:
    """The strategy a cell of `strategy` is compared with: the one its run.json `baseline`
    records, else (a run from before cells recorded it) the run's baseline for any other
    strategy; None for the baseline's own cell."""
    if recorded is not None:
        return recorded
    return None if strategy == run_baseline else run_baseline
