"""The S1 middleware's public surface: the scenario's ``middleware`` table (defaults, --set,
errors by field), the core's bounds (``cclab._core.middleware_bounds``, the one implementation
of eq. 2-5), the hosts it runs on, the kernel backend's refusals and the per-step table."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from click.testing import CliRunner

from cclab.cli import cli
from cclab.kernel.middleware import LOG_COLUMNS, middleware_hosts, read_log
from cclab.scenario import Middleware, ScenarioError, load_scenario

from .conftest import needs_core


def cell(**middleware) -> dict:
    return {
        "duration_s": 2,
        "bottleneck": {"rate_bps": "20Mbps", "delay_ms": 256, "queue_pkts": 100},
        "senders": [{"name": "phone1"}, {"name": "phone2"}, {"name": "idle"}],
        "receivers": [{"name": "server"}],
        "flows": [{"sender": "phone1"}, {"sender": "phone2"}],
        "middleware": middleware,
    }


def problems(data) -> dict[str, str]:
    with pytest.raises(ScenarioError) as e:
        load_scenario(data)
    return dict(e.value.problems)


def test_defaults_are_the_papers_improved_middleware():
    m = Middleware()
    assert (m.table, m.candidate_rule, m.bw_max_bps, m.f_exponent, m.segment_bytes) == (
        "improved", "rtt_span", 54e6, -0.15, 1500)
    assert (m.interval_ms, m.count_interval_ms, m.count_window_ms, m.count_bytes, m.min_terminals) == (
        500, 500, 1500, 64, 1)
    core = m.to_core_dict()
    assert core["bw_max_bps"] == 54_000_000 and isinstance(core["bw_max_bps"], int)
    assert core["hosts"] == [] and core["enabled"] is True


@needs_core
def test_scenario_carries_it_to_the_core():
    sc = load_scenario(cell(), **{"middleware.table": "before", "middleware.bw_max_bps": "24Mbps"})
    d = sc.to_core_dict()
    assert d["middleware"]["table"] == "before" and d["middleware"]["bw_max_bps"] == 24_000_000
    assert middleware_hosts(d) == ["phone1", "phone2"]
    rows = [{"from_ratio_rtt_ms": "0ms", "upper_pkts": 40, "lower_pkts": 4},
            {"from_ratio_rtt_ms": "0.1s", "upper_pkts": 20, "lower_pkts": 2}]
    d = load_scenario(cell(table=rows, hosts=["idle", "phone2"])).to_core_dict()
    assert d["middleware"]["table"][1] == {"from_ratio_rtt_ms": 100.0, "upper_pkts": 20, "lower_pkts": 2}
    assert middleware_hosts(d) == ["phone2", "idle"]  # the network's order, as the core's
    assert middleware_hosts(load_scenario(cell(enabled=False)).to_core_dict()) == []
    no_mw = {k: v for k, v in cell().items() if k != "middleware"}
    assert "middleware" not in load_scenario(no_mw).to_core_dict()


@needs_core
def test_bad_fields_are_named():
    assert "middleware.table" in problems(cell(table="fastest"))
    assert "middleware.table[0].upper_pkts" in problems(
        cell(table=[{"from_ratio_rtt_ms": 0, "upper_pkts": 0, "lower_pkts": 1}]))
    # Cross-row and cross-field checks are the core's, reported the same way.
    assert "middleware.table[1].from_ratio_rtt_ms" in problems(
        cell(table=[{"from_ratio_rtt_ms": 0, "upper_pkts": 9, "lower_pkts": 1},
                    {"from_ratio_rtt_ms": 0, "upper_pkts": 5, "lower_pkts": 1}]))
    assert "middleware.count_window_ms" in problems(cell(count_window_ms=100))
    p = problems(cell(hosts=["tablet"]))
    assert "no host" in p["middleware.hosts[0]"]
    assert "unknown key" in problems(cell(bwmax=1))["middleware.bwmax"]
    assert "middleware.candidate_rule" in problems(cell(candidate_rule="average"))


@needs_core
def test_bounds_come_from_the_core():
    from cclab import _core

    spec = json.dumps(Middleware().to_core_dict())
    # Six terminals, 100 ms of queue on a 512 ms path: candidate 1 = eq. 2 at 612 and at 512 ms
    # (350, 293), the improved table's row 1 = (700, 150).
    b = _core.middleware_bounds(spec, 6, 612.0, 512.0)
    assert (b["lower_pkts"], b["upper_pkts"]) == (150, 350)
    assert (b["upper1_pkts"], b["lower1_pkts"], b["upper2_pkts"], b["lower2_pkts"], b["row"]) == (350, 293, 700, 150, 1)
    assert b["ratio_rtt_ms"] == 100.0 and b["ideal_cwnd_pkts"] == pytest.approx(350.8245670959)
    assert _core.middleware_bounds(spec, 1, 512.0, 512.0)["upper_pkts"] == 1000  # eq. 2 = 2304: the table
    assert _core.middleware_bounds(spec, 3, 0.0, 512.0) is None  # no RTT yet
    later = json.dumps(Middleware(min_terminals=4).to_core_dict())
    assert _core.middleware_bounds(later, 3, 600.0, 512.0) is None
    assert _core.middleware_bounds(later, 4, 600.0, 512.0) is not None
    with pytest.raises(_core.ConfigError) as e:
        _core.middleware_bounds(json.dumps({"table": "x"}), 1, 1.0, 1.0)
    assert e.value.field == "middleware.table"


@needs_core
def test_cli_set_turns_it_on(tmp_path):
    out = tmp_path / "o"
    r = CliRunner().invoke(cli, ["run", "s0-25ms", "-o", str(out), "--set", "duration_s=2",
                                 "--set", "middleware.table=improved", "--set", "middleware.candidate_rule=ideal"])
    assert r.exit_code == 0, r.output
    s = json.loads((out / "summary.json").read_text())
    assert s["scenario"]["middleware"]["table"] == "improved"
    assert s["scenario"]["middleware"]["candidate_rule"] == "ideal"
    r = CliRunner().invoke(cli, ["run", "s0-25ms", "-o", str(out), "--set", "middleware.table=fast"])
    assert r.exit_code == 2 and "middleware.table" in r.output


@needs_core
def test_the_kernel_backend_refuses_what_it_cannot_do():
    from cclab.kernel.backend import parity

    sc = load_scenario({**cell(), "flows": [{"sender": "phone1", "cc": "bbr"},
                                            {"sender": "phone2", "max_cwnd_pkts": 50},
                                            {"sender": "idle", "cc": "reno"}]}, **{"middleware.hosts": ["phone1", "phone2"]})
    p = "\n".join(parity(sc))
    assert "flows[0].cc = 'bbr'" in p and "cclab_cubic_mw" in p
    assert "flows[1].max_cwnd_pkts" in p
    assert "flows[2]" not in p  # idle does not run the middleware here


def test_the_log_reads_back_typed(tmp_path):
    path = tmp_path / "t.csv"
    rows = [dict.fromkeys(LOG_COLUMNS, "") | {"t_s": 0.1, "host": "t1", "n": 1},
            {"t_s": 0.6, "host": "t1", "flow": "10.0.0.1:4000->10.0.1.1:5201", "cc": "cclab_cubic_mw", "n": 2,
             "rtt_ms": 21.3, "min_rtt_ms": 20.0, "ratio_rtt_ms": 1.3, "row": 0, "lower_pkts": 25, "upper_pkts": 30,
             "cwnd_before_pkts": 41, "cwnd_after_pkts": 30, "ssthresh_pkts": "", "ca_state": 0}]
    pd.DataFrame(rows, columns=LOG_COLUMNS).to_csv(path, index=False)
    log = read_log(path)
    assert list(log.columns) == LOG_COLUMNS
    assert log["flow"].tolist() == ["", "10.0.0.1:4000->10.0.1.1:5201"]
    assert pd.isna(log["lower_pkts"].iloc[0]) and log["upper_pkts"].iloc[1] == 30
    assert pd.isna(log["ssthresh_pkts"].iloc[1])


@needs_core
def test_a_scenario_file_gives_rows_and_units(tmp_path):
    f = tmp_path / "cell.toml"
    f.write_text('duration_s = 2\n[bottleneck]\nrate_bps = "20Mbps"\n[[flows]]\n'
                 '[middleware]\nbw_max_bps = "24Mbps"\ncount_interval_ms = "0.25s"\ncount_window_ms = "1s"\n'
                 '[[middleware.table]]\nfrom_ratio_rtt_ms = 0\nupper_pkts = 1000\nlower_pkts = 200\n'
                 '[[middleware.table]]\nfrom_ratio_rtt_ms = "51ms"\nupper_pkts = 700\nlower_pkts = 150\n')
    m = load_scenario(f).to_core_dict()["middleware"]
    assert m["bw_max_bps"] == 24_000_000 and m["count_interval_ms"] == 250.0 and m["count_window_ms"] == 1000.0
    assert [r["from_ratio_rtt_ms"] for r in m["table"]] == [0.0, 51.0]
