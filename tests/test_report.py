"""report.html and summary.md from a synthetic run directory (tests/reportdata.py): links
resolve, names are escaped, missing pieces are stated, the summary's figures and findings are
the run's."""

from __future__ import annotations

import html
import json
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import pytest
import rundocs
from reportdata import EVIL, METRICS, MUTEX_FRAME, build_run, tiny_diff_svg, tiny_svg

from harness.errors import BadInput
from harness.format.numbers import DASH, TIMES, human_ratio, percent
from harness.report import write_all, write_report, write_summary
from harness.report.data import Facts, finding_text, findings, flame_gaps, flames, note_kind
from harness.report.markdown import code, text
from harness.rundoc.jsonfile import load_run
from harness.rundoc.model import Cell, Profile, RunDoc
from harness.stats import compare_cells

pytestmark = pytest.mark.unit


class Links(HTMLParser):
    """Every href, src and object data of a page, and every id."""

    def __init__(self) -> None:
        super().__init__()
        self.refs: list[str] = []
        self.ids: set[str] = set()
        self.tags: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        for name, value in attrs:
            if value is None:
                continue
            if name == "id":
                self.ids.add(value)
            if name in ("href", "src") or (tag == "object" and name == "data"):
                self.refs.append(value)


def parse(path: Path) -> Links:
    parser = Links()
    parser.feed(path.read_text(encoding="utf-8"))
    return parser


def broken_links(run_dir: Path, refs: list[str], ids: set[str]) -> list[str]:
    broken = []
    for ref in refs:
        url = urlparse(ref)
        if url.scheme or url.netloc or ref.startswith("/"):
            broken.append(f"{ref}: not a relative link")
        elif not url.path:
            if unquote(url.fragment) not in ids:
                broken.append(f"{ref}: no such id")
        elif not (run_dir / unquote(url.path)).is_file():
            broken.append(f"{ref}: no such file")
    return broken


@pytest.fixture
def run(tmp_path: Path) -> tuple[Path, dict[str, Any]]:
    run_dir = tmp_path / "20261121T000107Z-43068e2"
    doc = build_run(run_dir, tiny_svg, tiny_diff_svg)
    return run_dir, doc


@pytest.fixture
def page_text(run: tuple[Path, dict[str, Any]]) -> str:
    """The report of `run`, written now, as text."""
    return write_report(run[0]).read_text()


def test_write_all_reads_run_json_once(
    run: tuple[Path, dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The charts, report.html and summary.md are drawn from one typed read of run.json."""
    read: list[Path] = []

    def counted(path: Path) -> RunDoc:
        read.append(path)
        return load_run(path)

    # Every module of report/ that reads run.json: the package, the pages' writers.
    for module in ("", ".data", ".html", ".markdown"):
        monkeypatch.setattr(f"harness.report{module}.load_run", counted, raising=False)
    write_all(run[0])
    assert read == [run[0]]


def test_write_all_writes_both_files(run: tuple[Path, dict[str, Any]]) -> None:
    run_dir, _ = run
    paths = write_all(run_dir)
    assert paths == [run_dir / "report.html", run_dir / "summary.md"]
    assert all(p.is_file() and p.stat().st_size > 0 for p in paths)
    assert not list(run_dir.glob(".*.tmp"))


def test_every_link_in_the_report_resolves(run: tuple[Path, dict[str, Any]]) -> None:
    run_dir, _ = run
    page = parse(write_report(run_dir))
    assert broken_links(run_dir, page.refs, page.ids) == []
    linked = {unquote(r) for r in page.refs}
    for svg in run_dir.glob("flame/*.svg"):
        assert f"flame/{svg.name}" in linked
    assert "probes/evil cell#1/r1-sched.json" in linked  # quoted in the page, found on disk
    assert any(r == "probes/evil%20cell%231/r1-sched.json" for r in page.refs)


def test_the_report_is_self_contained(run: tuple[Path, dict[str, Any]], page_text: str) -> None:
    run_dir, _ = run
    page = parse(run_dir / "report.html")
    assert "script" not in page.tags
    assert "link" not in page.tags  # no external stylesheet
    assert "<style>" in page_text
    assert not re.search(r"https?://|@import|url\(", page_text)


def test_the_report_escapes_names(page_text: str) -> None:
    assert EVIL not in page_text
    assert "<script>" not in page_text
    assert html.escape(EVIL) in page_text
    assert html.escape(MUTEX_FRAME) in page_text
    assert "no CAP_BPF &lt;here&gt;" in page_text
    assert "&lt;boom&gt; &amp; done" in page_text
    assert "AMD EPYC &lt;7302&gt;" in page_text


def test_the_report_has_the_summary_figures(
    run: tuple[Path, dict[str, Any]], page_text: str
) -> None:
    _, doc = run
    for header in ("ops/s", "p99", "ctx sw/op", "futex wait/op", "run-queue p99", "mutex share"):
        assert f"<th>{header}</th>" in page_text
    assert "<th>vs none</th>" in page_text
    deadline = next(
        c
        for c in doc["comparisons"]
        if c["candidate"] == "deadline-tracker" and c["metric"] == "ops_per_sec"
    )
    assert deadline["significant"]
    assert f"{human_ratio(deadline['ratio'])} <span class=" in page_text
    assert "650.0k" in page_text and f"[637.0{DASH}663.0k]" in page_text
    assert "14.6%" in page_text  # tokio-timeout's mutex share, shown as a percentage
    # Host, commit and configuration in the header.
    for fact in (
        "bench-1",
        "43068e24df0123456789abcdef0123456789abcd",
        "5 repeats",
        "sched, futex",
    ):
        assert fact in page_text
    # Profile tables and probe highlights.
    assert "Top 10 frames by self time" in page_text
    assert "Frames that grew most vs none/concurrency=256" in page_text
    assert "+11.9 pp" in page_text
    assert "lost events over the repeats: 3" in page_text
    assert "syscall ← tokio::sync::Mutex&lt;T&gt;::lock" in page_text
    assert "Probe overhead" in page_text


def test_missing_pieces_are_stated(run: tuple[Path, dict[str, Any]], page_text: str) -> None:
    run_dir, doc = run
    assert "no off-CPU graph: the futex probe did not run" in page_text
    assert "no wake-up graph: the sched probe did not run" in page_text
    assert (
        "no on-CPU, off-CPU, wake-up or differential flame graph: run.json has no profile "
        "for this cell (the profiler did not run)" in page_text
    )
    assert "no profile: run.json has no profile for this cell" in page_text
    assert "no differential flame graph: this is the baseline cell" in page_text

    # A graph named in run.json but not on disk, one outside the run directory, and a cell
    # whose profile has no reason at all.
    (run_dir / "flame/tokio-timeout_concurrency-256.offcpu.svg").unlink()
    doc["cells"][1]["profile"]["wakeup_svg"] = "../outside.svg"
    (run_dir.parent / "outside.svg").write_text("<svg/>")
    del doc["cells"][2]["profile"]["notes"]
    (run_dir / "run.json").write_text(json.dumps(doc))
    page = parse(write_report(run_dir))
    page_text = (run_dir / "report.html").read_text()
    assert broken_links(run_dir, page.refs, page.ids) == []
    assert (
        "no off-CPU flame graph: flame/tokio-timeout_concurrency-256.offcpu.svg is named in "
        "run.json but is not in the run directory" in page_text
    )
    assert "no wake-up flame graph: ../outside.svg is named in run.json" in page_text
    assert "no off-CPU, wake-up or differential flame graph: run.json gives no reason" in page_text


def test_summary_has_the_table_and_findings(run: tuple[Path, dict[str, Any]]) -> None:
    run_dir, doc = run
    summary = write_summary(run_dir).read_text()
    assert "harness run timers --param concurrency=256 --repeat 5" in summary
    assert f"5 repeats {TIMES} 10.0 s (warm-up 2.0 s, interleaved order)" in summary
    header = next(line for line in summary.splitlines() if line.startswith("| strategy"))
    cols = [c.strip() for c in header.strip("|").split("|")]
    assert cols[:4] == ["strategy", "ops/s [95% CI]", "vs none [95% CI]", "p"]
    assert {"mutex share", "futex wait/op", "ctx sw/op", "runs"} <= set(cols)

    rows = {
        line.split("|")[1].strip(): [c.strip() for c in line.strip("|").split("|")]
        for line in summary.splitlines()
        if line.startswith("| `")
    }
    tokio = rows["`tokio-timeout`"]
    entry = next(
        c
        for c in doc["comparisons"]
        if c["candidate"] == "tokio-timeout" and c["metric"] == "ops_per_sec"
    )
    assert tokio[1] == f"400.0k [392.0{DASH}408.0k]"
    assert tokio[2].startswith(f"{human_ratio(entry['ratio'])} \\*")
    assert tokio[cols.index("mutex share")] == f"14.6% [14.3{DASH}14.9%]"
    assert tokio[cols.index("runs")] == "5/5"
    assert rows["`none`"][2] == "baseline"
    assert rows[code(EVIL)][cols.index("runs")] == "4/5"

    # Findings computed from the data.
    deadline_vs_tokio = human_ratio(650_000 / 400_000)
    shares = {c["strategy"]: c["profile"].get("mutex_share") for c in doc["cells"]}
    assert f"- `deadline-tracker`: {deadline_vs_tokio} the ops/s of `tokio-timeout`" in summary
    assert (
        f"mutex share {percent(shares['deadline-tracker'])} vs "
        f"{percent(shares['tokio-timeout'])}" in summary
    )
    assert "highest in `tokio-timeout` (14.6%), lowest in `deadline-tracker` (2.1%)" in summary
    assert f"`{MUTEX_FRAME}` grew the most, from 2.8% to 14.6%" in summary
    assert "1 of 20 repeats failed" in summary
    assert "probe futex unavailable: no CAP_BPF \\<here\\>" in summary

    # Links to the flame graphs resolve.
    targets = re.findall(r"\]\(([^)]+)\)", summary)
    assert "flame/tokio-timeout_concurrency-256.diff.svg" in targets
    assert all((run_dir / unquote(t)).is_file() for t in targets), targets
    assert "no off-CPU graph: the futex probe did not run" in summary


def run_findings(doc: dict[str, Any]) -> list[str]:
    """The findings of a document without its run directory (no probe files read)."""
    return [finding_text(f) for f in findings(Facts(RunDoc.model_validate(doc), None))]


def test_findings_state_only_what_the_data_shows(run: tuple[Path, dict[str, Any]]) -> None:
    _, doc = run
    said = run_findings(doc)
    assert said[0].startswith("the run's status is partial")
    for line in said:
        assert "nan" not in line.lower()
    # A run where every strategy does the same: no significant claims.
    for cell in doc["cells"]:
        for result in cell["repeats"]:
            result["ops_per_sec"] = 100.0
    doc["comparisons"] = compare_cells(doc["cells"], "none", METRICS)
    said = run_findings(doc)
    assert not any("(significant" in line for line in said)


def test_markdown_escaping() -> None:
    assert text("a|b <c> *d* _e_ snake_case") == "a\\|b \\<c\\> \\*d\\* \\_e\\_ snake_case"
    assert text("[x](y)") == "\\[x\\](y)"
    assert text(f"[95% CI 1{DASH}2]") == f"[95% CI 1{DASH}2]"
    assert code("a`b") == "``a`b``"
    assert code("`x`") == "`` `x` ``"
    assert code("a|b") == "`a\\|b`"


def test_a_run_in_progress_or_empty(tmp_path: Path) -> None:
    """A run.json written before any result: no cells' summaries, no comparisons."""
    doc = rundocs.run(
        [rundocs.cell("a", "x", {}, [])], run_id="r", suite="s", status="running", finished_at=None
    )
    (tmp_path / "run.json").write_text(json.dumps(doc))
    report, summary = write_all(tmp_path)
    page_text = report.read_text()
    assert "the run has not finished" in page_text
    assert "no profile: run.json has no profile for this cell" in page_text
    assert "0/0" in summary.read_text()
    (tmp_path / "run.json").write_text(json.dumps({**doc, "cells": []}))
    assert "no cells in this run" in write_report(tmp_path).read_text()


def test_not_a_run_directory(tmp_path: Path) -> None:
    with pytest.raises(BadInput, match=r"no run\.json"):
        write_all(tmp_path)
    (tmp_path / "run.json").write_text("{not json")
    with pytest.raises(BadInput, match="cannot read"):
        write_report(tmp_path)
    (tmp_path / "run.json").write_text("[]")
    with pytest.raises(BadInput, match="JSON object"):
        write_summary(tmp_path)


def test_profile_notes_are_matched_to_their_graph(tmp_path: Path) -> None:
    assert note_kind("no differential graph: the baseline cell has no on-CPU profile") == "diff"
    assert note_kind("no on-CPU profile: perf is not installed") == "oncpu"
    assert note_kind("no off-CPU graph: the futex probe did not run") == "offcpu"
    assert note_kind("no wake-up view: the sched probe did not run") == "wakeups"
    assert note_kind("no flame graphs: inferno is not installed") is None
    notes = ["no differential graph: the baseline cell has no on-CPU profile"]
    profile = {"folded": "folded/a.oncpu.folded", "notes": notes}
    cell = Cell.model_validate(rundocs.cell("a", "steady", {}, [], profile=profile))
    gaps = flame_gaps(flames(tmp_path, cell, "none"))
    assert gaps == [
        "no on-CPU, off-CPU or wake-up flame graph: run.json gives no reason",
        "no differential graph: the baseline cell has no on-CPU profile",
    ]
    cell.profile = Profile(notes=["no flame graphs: inferno is not installed"])
    assert flame_gaps(flames(tmp_path, cell, "none")) == [
        "no flame graphs: inferno is not installed"
    ]


def test_each_chart_is_drawn_once_and_both_reports_show_it(
    run: tuple[Path, dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    from matplotlib.figure import Figure

    saved: list[str] = []
    savefig = Figure.savefig

    def counted(fig: Figure, out: Any, **kwargs: Any) -> None:
        saved.append(str(kwargs.get("format")))
        savefig(fig, out, **kwargs)

    monkeypatch.setattr(Figure, "savefig", counted)
    run_dir, _ = run
    report, summary = write_all(run_dir)
    files = sorted(p.name for p in (run_dir / "charts").iterdir())
    assert files == [
        "steady.latency.png",
        "steady.latency.svg",
        "steady.ratios.png",
        "steady.ratios.svg",
    ]
    assert sorted(saved) == ["png", "png", "svg", "svg"]  # one PNG and one SVG a chart
    page, write_up = report.read_text(), summary.read_text()
    for png in ("charts/steady.ratios.png", "charts/steady.latency.png"):
        assert f'src="{png}"' in page and f"]({png})" in write_up


def test_a_chart_with_nothing_left_to_draw_leaves_no_file_and_no_figure(
    run: tuple[Path, dict[str, Any]],
) -> None:
    run_dir, doc = run
    write_all(run_dir)
    assert (run_dir / "charts" / "steady.latency.svg").is_file()
    for cell in doc["cells"]:  # the latency percentiles are gone from every repeat
        for result in cell["repeats"]:
            result.pop("latency_ns")
    (run_dir / "run.json").write_text(json.dumps(doc))
    report, summary = write_all(run_dir)
    assert sorted(p.name for p in (run_dir / "charts").iterdir()) == [
        "steady.ratios.png",
        "steady.ratios.svg",
    ]
    assert "steady.latency" not in report.read_text()
    assert "steady.latency" not in summary.read_text()
