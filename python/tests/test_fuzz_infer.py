"""Fuzzed traces for the inference importers (issue 18, part 2): CSV (empty, cut, wrong columns,
non-numeric cells), ``ss -tin`` logs and pcap captures (cut anywhere, bytes flipped, garbage)
either load and are judged, or raise InputError (or the estimators' ValueError) saying why;
never another exception or a warning. Below, one regression test per finding."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings

from cclab import infer

from . import fuzzing as fz


def ci(n: int) -> settings:
    return settings(max_examples=n, derandomize=True, database=None, deadline=None,
                    suppress_health_check=list(HealthCheck))


def _judge(tmp_path_factory, data: bytes, suffix: str) -> None:
    p = tmp_path_factory.mktemp("trace") / f"trace{suffix}"
    p.write_bytes(data)
    outcome, detail = fz.judge_trace(p)
    assert outcome in fz.GOOD, detail


@ci(150)
@given(fz.csv_texts())
def test_csv_traces_load_or_say_why(tmp_path_factory, data):
    _judge(tmp_path_factory, data, ".csv")


@ci(50)
@given(fz.ss_texts())
def test_ss_logs_load_or_say_why(tmp_path_factory, data):
    _judge(tmp_path_factory, data, ".log")


@ci(150)
@given(fz.pcap_inputs())
def test_pcaps_load_or_say_why(tmp_path_factory, data):
    _judge(tmp_path_factory, data, ".pcap")


# -- Regressions -----------------------------------------------------------------------------------
def test_a_pcap_cut_mid_record_is_read_up_to_the_cut(tmp_path):
    whole = fz.pcap_bytes(40)
    p = tmp_path / "cut.pcap"
    p.write_bytes(whole[:-700])  # mid-way through the last records
    cut = infer.load_trace(p)
    p.write_bytes(whole)
    full = infer.load_trace(p)
    assert 2 <= len(cut) < len(full)
    assert list(cut["cwnd_pkts"]) == list(full["cwnd_pkts"][: len(cut)])


@pytest.mark.parametrize("header", ["t,snd_cwnd,rtt,ca_state", "t_s,cwnd_pkts,srtt_ms,ca_state"])
def test_non_numeric_cells_are_missing_values_not_errors(tmp_path, header):
    p = tmp_path / "t.csv"
    rows = [f"{i / 10},{10 + i},{'abc' if i == 3 else 20000},{'open' if i % 2 else 0}" for i in range(30)]
    p.write_text(header + "\n" + "\n".join(rows) + "\n0.5,oops,1,1\n")
    df = infer.load_trace(p)
    assert len(df) == 30 and df.attrs["dropped_rows"] == 1


def test_an_ss_line_with_cwnd_but_no_number_is_not_a_sample(tmp_path):
    p = tmp_path / "ss.log"
    p.write_text(" cubic cwnd:- rto:204\n cubic cwnd:10\n cubic cwnd:12\n")
    assert list(infer.load_trace(p)["cwnd_pkts"]) == [10, 12]
    p.write_text(" cubic cwnd:- rto:204\n cubic cwnd:10\n")
    with pytest.raises(infer.InputError, match="fewer than 2"):
        infer.load_trace(p)


def test_a_stray_huge_time_is_refused_naming_the_column(tmp_path):
    # Before: a RuntimeWarning (an overflowing cast in per_rtt) and a meaningless verdict.
    p = tmp_path / "t.csv"
    p.write_text("t_s,cwnd_pkts\n1e300,3\n" + "".join(f"{i / 100},{2 + i % 3}\n" for i in range(1, 60)))
    with pytest.raises(infer.InputError, match="t_s: the samples span 1e\\+300 s"):
        infer.load_trace(p)
    p.write_text("t_s,cwnd_pkts\n" + "".join(f"{1.7e9 + i / 100},{2 + i % 3}\n" for i in range(60)))
    assert len(infer.load_trace(p)) == 60  # epoch times are fine


def test_a_cwnd_beyond_32_bits_is_refused(tmp_path):
    # Before: overflow warnings in the features and a meaningless verdict.
    p = tmp_path / "t.csv"
    p.write_text("t_s,cwnd_pkts\n" + "".join(f"{i / 100},{1e300 if i == 7 else 2 + i % 3}\n" for i in range(60)))
    with pytest.raises(infer.InputError, match="cwnd_pkts: a cwnd of 1e\\+300 is not accepted"):
        infer.load_trace(p)
