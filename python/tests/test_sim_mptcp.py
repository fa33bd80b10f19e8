"""Multipath TCP connections on the simulator, through the public API and the CLI: the data
level, the summary's ``subflows`` (the keys the kernel backend writes too), the flows table's
``subflow`` column, the shipped S2 scenario."""

from __future__ import annotations

import copy
import json

import pytest
from click.testing import CliRunner

import cclab
from cclab.cli import cli

from .conftest import needs_core

pytestmark = needs_core

_TWO_PATHS = {
    "duration_s": 10,
    "nodes": [{"name": "snd"}, {"name": "rcv"}, {"name": "ne1", "kind": "router"}, {"name": "ne2", "kind": "router"}],
    "links": [
        {"endpoints": ["snd", "ne1"], "rate_bps": 10e6, "delay_ms": 10, "queue_pkts": 100, "loss": 0.005},
        {"endpoints": ["ne1", "rcv"], "delay_ms": 10},
        {"endpoints": ["snd", "ne2"], "rate_bps": 10e6, "delay_ms": 20, "queue_pkts": 100},
        {"endpoints": ["ne2", "rcv"], "delay_ms": 20},
    ],
    "flows": [{"name": "mp", "transport": "mptcp", "cc": "reno", "size_bytes": 4_000_000,
               "paths": [["snd", "ne1", "rcv"], ["snd", "ne2", "rcv"]]}],
}

#: The keys of a summary subflow row (shared with the kernel backend), then the simulator's.
SUBFLOW_KEYS = ["subflow", "path", "delivered_bytes", "goodput_bps", "sent_pkts", "retrans_pkts"]
SIM_EXTRAS = ["rto_count", "fast_retransmit_count", "cwr_count", "local_drop_count", "reinjected_pkts"]


def _run(d: dict, **over: object) -> cclab.RunResult:
    d = copy.deepcopy(d)
    d["flows"][0].update(over)
    return cclab.simulate(cclab.load_scenario(d))


def test_a_sized_connection_delivers_every_byte_over_both_subflows() -> None:
    r = _run(_TWO_PATHS)
    st = r.summary["flows"][0]
    assert st["delivered_bytes"] == 4_000_000
    assert st["completion_s"] is not None
    subs = st["subflows"]
    assert list(subs[0]) == SUBFLOW_KEYS + SIM_EXTRAS
    assert [s["subflow"] for s in subs] == [0, 1]
    assert [s["path"] for s in subs] == [["snd", "ne1", "rcv"], ["snd", "ne2", "rcv"]]
    assert all(s["delivered_bytes"] > 0 for s in subs)
    # The connection's counters are its subflows' sums.
    for k in ("retrans_pkts", "sent_pkts", "rto_count"):
        assert st[k] == sum(s[k] for s in subs)
    assert st["retrans_pkts"] > 0
    json.dumps(r.summary)


def test_the_flows_table_has_a_row_series_per_subflow() -> None:
    r = _run(_TWO_PATHS)
    fl = r.flows
    assert set(fl["subflow"]) == {0, 1}
    assert set(fl["flow"]) == {"mp"}
    # Each subflow's own delivered bytes never go back.
    for _, rows in fl.groupby("subflow"):
        assert rows["delivered_bytes"].is_monotonic_increasing


def test_tcp_flows_have_no_subflows_key_and_subflow_zero() -> None:
    d = copy.deepcopy(_TWO_PATHS)
    d["flows"] = [{"name": "t", "cc": "cubic", "path": ["snd", "ne2", "rcv"]}]
    r = cclab.simulate(cclab.load_scenario(d))
    assert "subflows" not in r.summary["flows"][0]
    assert (r.flows["subflow"] == 0).all()


def test_same_seed_same_traces() -> None:
    a, b = _run(_TWO_PATHS, size_bytes=0), _run(_TWO_PATHS, size_bytes=0)
    assert a.flows.equals(b.flows)
    assert a.events.equals(b.events)


def test_the_shipped_s2_scenario_runs_three_apps_over_three_paths() -> None:
    sc = cclab.load_scenario("s2-three-apps", duration_s=5)
    r = cclab.simulate(sc)
    flows = r.summary["flows"]
    assert [f["flow"] for f in flows] == ["app1", "app2", "app3"]
    assert [f["start_s"] for f in flows] == [0.0, 0.5, 1.0]
    for f in flows:
        assert [s["path"][1] for s in f["subflows"]] == ["ne1", "ne2", "ne3"]
    # The sender's 50 Mbit/s NICs are the bottleneck: three of them, nearly full.
    total_bps = sum(f["delivered_bytes"] for f in flows) * 8 / 5
    assert 115e6 < total_bps < 150e6


def test_the_shipped_s2_copies_are_identical() -> None:
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    a = (root / "scenarios" / "s2-three-apps.toml").read_bytes()
    b = (root / "python" / "cclab" / "scenarios" / "s2-three-apps.toml").read_bytes()
    assert a == b


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_cli_run_shows_the_subflows(tmp_path) -> None:
    r = CliRunner().invoke(cli, ["run", "s2-three-apps", "-o", str(tmp_path), "--set", "duration_s=2"])
    assert r.exit_code == 0, r.output
    assert "app1 subflow 2 (snd>ne3>rcv)" in r.output
    s = json.loads((tmp_path / "summary.json").read_text())
    assert len(s["flows"][2]["subflows"]) == 3
