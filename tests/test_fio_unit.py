"""The fio suite's wrapper without fio: the json+ mapping checked against SAVED real fio 3.33
output (tests/fixtures/fio/randrw-2jobs.json: two SIGUSR1 status snapshots and the final
status of a 70/30 randrw job, numjobs=2, psync, as fio-bench reads them), the derived job
file, and the parameter checks."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

SUITE = Path(__file__).resolve().parent.parent / "workloads" / "fio"
sys.path.insert(0, str(SUITE))

from fio_suite import jobfiles, json_plus, params  # noqa: E402

pytestmark = pytest.mark.unit

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "fio" / "randrw-2jobs.json"


@pytest.fixture(scope="module")
def documents() -> list[dict[str, Any]]:
    return json_plus.split_documents(FIXTURE.read_text())


def test_every_status_document_is_found_and_the_signal_note_skipped(
    documents: list[dict[str, Any]],
) -> None:
    text = FIXTURE.read_text()
    assert "fio: terminating on signal 2" in text  # fio's note between documents
    assert len(documents) == 3
    assert all(doc["fio version"] == "fio-3.33" for doc in documents)
    stamps = [doc["timestamp_ms"] for doc in documents]
    assert stamps == sorted(stamps)
    # A document cut short (fio still writing it) is left for the next read.
    assert len(json_plus.split_documents(text[: text.rfind("}") - 10])) == 2


def test_percentiles_follow_fios_own_rule_on_its_own_bins(
    documents: list[dict[str, Any]],
) -> None:
    """One job and direction, cumulative: our percentiles of fio's bins are fio's."""
    for doc in documents:
        for job in doc["jobs"]:
            for direction in ("read", "write"):
                clat = job[direction]["clat_ns"]
                ours = json_plus.percentiles({int(k): v for k, v in clat["bins"].items()})
                fios = clat["percentile"]
                assert ours["p50"] == fios["50.000000"]
                assert ours["p90"] == fios["90.000000"]
                assert ours["p99"] == fios["99.000000"]
                assert ours["p999"] == fios["99.900000"]
                assert sum(clat["bins"].values()) == clat["N"]


def test_a_snapshot_sums_jobs_per_direction(documents: list[dict[str, Any]]) -> None:
    doc = documents[1]
    snap = json_plus.snapshot(doc)
    for direction in ("read", "write"):
        totals = snap.directions[direction]
        assert totals.io_bytes == sum(job[direction]["io_bytes"] for job in doc["jobs"])
        assert totals.ios == sum(job[direction]["clat_ns"]["N"] for job in doc["jobs"])
        assert sum(totals.bins.values()) == totals.ios
    assert snap.directions["trim"].ios == 0
    assert snap.job_errors == []


def test_the_window_is_the_difference_of_two_snapshots(documents: list[dict[str, Any]]) -> None:
    start, end = json_plus.snapshot(documents[0]), json_plus.snapshot(documents[1])
    cpu = json_plus.CpuWindow(cpu_ns=1_000_000, window_s=0.5)
    metrics = json_plus.window_metrics(start, end, cpu)
    window_s = (documents[1]["timestamp_ms"] - documents[0]["timestamp_ms"]) / 1000
    assert metrics["window_s"] == pytest.approx(window_s)
    read, write = metrics["read"], metrics["write"]
    for name, figures in (("read", read), ("write", write)):
        ios = end.directions[name].ios - start.directions[name].ios
        assert figures["ops"] == ios > 0
        assert figures["iops"] == pytest.approx(ios / window_s)
        io_bytes = end.directions[name].io_bytes - start.directions[name].io_bytes
        assert figures["bw_bytes"] == pytest.approx(io_bytes / window_s)
        # bs 4k: bytes and completions agree, but fio reads its byte counters a moment
        # before it sums the bins (the jobs go on meanwhile): within 1%
        assert abs(io_bytes / 4096 - ios) <= 0.01 * ios
    assert metrics["ops"] == read["ops"] + write["ops"]
    assert metrics["iops"] == pytest.approx(read["iops"] + write["iops"])
    assert metrics["bw_bytes"] == pytest.approx(read["bw_bytes"] + write["bw_bytes"])
    # a ratio of rates: CPU ns per second of the wrapper's window / IOs per second of fio's
    assert metrics["cpu_ns_per_op"] == pytest.approx(1_000_000 / 0.5 / metrics["iops"])
    assert "trim" not in metrics


def test_summed_latency_comes_from_the_merged_bins_not_added_percentiles(
    documents: list[dict[str, Any]],
) -> None:
    start, end = json_plus.snapshot(documents[0]), json_plus.snapshot(documents[1])
    metrics = json_plus.window_metrics(start, end, cpu=None)
    merged = json_plus.difference(start, end)
    bins = merged["read"].bins + merged["write"].bins
    assert metrics["latency_ns"] == json_plus.percentiles(bins)
    for p in ("p50", "p90", "p99", "p999", "max"):
        low = min(metrics["read"]["latency_ns"][p], metrics["write"]["latency_ns"][p])
        high = max(metrics["read"]["latency_ns"][p], metrics["write"]["latency_ns"][p])
        assert low <= metrics["latency_ns"][p] <= high
    assert "cpu_ns_per_op" not in metrics
    hist = metrics["clat_hist"]
    assert sum(hist["counts"]) == metrics["ops"]
    assert hist["le_ns"] == sorted(hist["le_ns"])


def test_percentiles_of_a_small_histogram() -> None:
    bins = {100: 50, 200: 40, 300: 9, 400: 1}
    figures = json_plus.percentiles(bins)
    assert figures == {
        "p50": 100.0, "p90": 200.0, "p99": 300.0, "p999": 400.0, "max": 400.0,
        "mean": (100 * 50 + 200 * 40 + 300 * 9 + 400) / 100,
    }  # fmt: skip
    assert json_plus.percentiles({}) == {}


def test_bucket_upper_bounds_match_fios_buckets() -> None:
    assert json_plus.bucket_upper(100) == 100  # exact below 128 ns
    # 128..255: width 2, means 129, 131, ...; 1024..2047: width 16, means 1032, 1048, ...
    assert json_plus.bucket_upper(129) == 130
    assert json_plus.bucket_upper(1032) == 1040
    assert json_plus.bucket_upper(60160) == 60160 + 256  # 32768..65535: width 512


def test_a_job_error_is_reported() -> None:
    doc = json.loads(json.dumps({"timestamp_ms": 1, "jobs": [{"jobname": "j", "error": 5}]}))
    assert json_plus.snapshot(doc).job_errors == [("j", 5)]
    with pytest.raises(json_plus.FioOutputError):
        json_plus.snapshot({"timestamp_ms": 1})


JOB = """; a comment
[global]
rw=randread
include common.fio

[one]
bs=4k
[two]
include sub/x.fio
bs=8k
"""


def _job(tmp_path: Path, text: str, **included: str) -> Path:
    for name, body in included.items():
        (tmp_path / name.replace("__", "/")).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name.replace("__", "/")).write_text(body)
    path = tmp_path / "job.fio"
    path.write_text(text)
    return path


def test_options_go_last_in_every_job_section_and_includes_are_inlined(tmp_path: Path) -> None:
    job = _job(tmp_path, JOB, **{"common.fio": "iodepth=4\n", "sub__x.fio": "direct=1"})
    derived = jobfiles.derive(job, [("thread", None), ("size", "64m")])
    lines = derived.splitlines()
    assert lines[: lines.index("[one]")] == [
        "; a comment", "[global]", "rw=randread", f"; include {tmp_path}/common.fio",
        "iodepth=4", "", "",
    ]  # fmt: skip
    assert lines[lines.index("[one]") :] == [
        "[one]", "bs=4k", "thread", "size=64m",
        "[two]", f"; include {tmp_path}/sub/x.fio", "direct=1", "bs=8k", "", "thread", "size=64m",
    ]  # fmt: skip
    assert jobfiles.job_names(lines) == ["one", "two"]
    assert "include " not in derived.replace("; include ", "")  # fio reads no other file


def test_sections_are_read_as_fio_reads_them(tmp_path: Path) -> None:
    # fio: a section is any line starting with `[` (name: its text less the last character),
    # a global one any name starting with "global".
    text = "[globalish]\nrw=read\n  [job ; comment\nbs=4k\n"
    lines = jobfiles.checked_lines(_job(tmp_path, text))
    assert jobfiles.job_names(lines) == ["jo"]
    derived = jobfiles.derive(tmp_path / "job.fio", [("thread", None)]).splitlines()
    assert derived == ["[globalish]", "rw=read", "  [job ; comment", "bs=4k", "", "thread"]


def test_a_job_file_without_a_job_is_refused(tmp_path: Path) -> None:
    with pytest.raises(jobfiles.JobFileError, match="defines no job"):
        jobfiles.derive(_job(tmp_path, "[global]\nrw=read\n"), [])
    with pytest.raises(jobfiles.JobFileError, match="cannot read job file"):
        jobfiles.read_job_file(Path("/nonexistent/job.fio"))


def test_fio_options_parse_flags_and_values() -> None:
    assert jobfiles.parse_options(" norandommap  randrepeat=0 ") == [
        ("norandommap", None),
        ("randrepeat", "0"),
    ]
    with pytest.raises(ValueError):
        jobfiles.parse_options("=3")


@pytest.mark.parametrize("text", ["64", "64.0", "6.4e1", "-0", " 8 "])
def test_int_spellings_accepted(text: str) -> None:
    assert params.parse_int("n", text) == int(float(text))


@pytest.mark.parametrize("text", ["8.5", "+8", "08", "0x10", "1_000", "8.", ".5", "inf", ""])
def test_int_spellings_rejected(text: str) -> None:
    with pytest.raises(params.BadInput):
        params.parse_int("n", text)


def test_params_resolve_and_unknown_ones_are_bad_input() -> None:
    parsed = params.parse_params(["rate_iops=500", "iodepth=", "file_size_mb=16"])
    assert parsed.options == {"rate_iops": "500"}  # "" keeps the job file's own
    assert parsed.file_size_mb == 16
    assert parsed.as_json()["iodepth"] == ""
    with pytest.raises(params.BadInput, match="unknown parameter 'ramp_time'"):
        params.parse_params(["ramp_time=1"])
    with pytest.raises(params.BadInput, match="needs --param job_file"):
        params.job_file_path("custom", parsed)
    with pytest.raises(params.BadInput, match="is for --strategy custom"):
        params.job_file_path("randread-4k", params.parse_params(["job_file=x.fio"]))
    assert params.job_file_path("poisson-rate", parsed).name == "poisson-rate.fio"
    assert params.job_file_path("poisson-rate", parsed).is_file()


def test_describe_declares_every_strategy_and_string_fio_options() -> None:
    doc = params.describe()
    assert doc["baseline"] in [s["name"] for s in doc["strategies"]]
    specs = {p["name"]: p for p in doc["params"]}
    for name in params.FIO_OPTIONS:
        assert specs[name]["type"] == "string" and specs[name]["default"] == ""
    assert specs["file_size_mb"]["default"] <= 256
    assert specs["dir"]["default"] == ""
    for strategy in params.STRATEGIES:
        if strategy != params.CUSTOM:
            assert (params.SUITE_DIR / f"{strategy}.fio").is_file()
