"""cclab-link loses nothing the model did not drop (issue 18 part 5): per link, packets in =
delivered + the model's drops + in flight at the end, and the TUN errors (cclab-link's failed
reads and writes, the kernel's drops at the TUNs) are counted in summary.json."""

from __future__ import annotations

import os
import shutil

import pytest

from cclab.kernel.link import link_accounting

root_only = pytest.mark.skipif(
    os.geteuid() != 0 or not os.path.exists("/dev/net/tun") or shutil.which("ip") is None,
    reason="needs root, TUN and iproute2",
)


def test_accounting_puts_each_port_s_errors_on_the_links_it_feeds():
    stats = {
        "links": [{"name": "fwd", "in_pkts": 10, "delivered_pkts": 6, "dropped_pkts": 3, "in_flight_pkts": 1,
                   "tun_write_errors_pkts": 0},
                  {"name": "rev", "in_pkts": 5, "delivered_pkts": 3, "dropped_pkts": 0, "in_flight_pkts": 0,
                   "tun_write_errors_pkts": 2},
                  {"name": "host.nic", "enqueued_pkts": 4}],  # a device queue: not cclab-link's
        "ports": [{"name": "s0", "rx_errors": 1, "kernel_tx_dropped_pkts": 7, "kernel_rx_dropped_pkts": 0},
                  {"name": "r0", "rx_errors": 0, "kernel_tx_dropped_pkts": 0, "kernel_rx_dropped_pkts": 4}],
    }
    routes = [{"from": "s0", "to": "r0", "links": ["fwd"]}, {"from": "r0", "to": "s0", "links": ["rev"]}]
    fwd, rev = link_accounting(stats, routes)
    assert fwd == {"link": "fwd", "in_pkts": 10, "delivered_pkts": 6, "dropped_pkts": 3, "in_flight_pkts": 1,
                   "tun_write_errors_pkts": 0, "unaccounted_pkts": 0, "tun_read_errors": 1,
                   "kernel_tx_dropped_pkts": 7, "kernel_rx_dropped_pkts": 4}
    assert rev["unaccounted_pkts"] == 2 and rev["tun_write_errors_pkts"] == 2
    assert (rev["tun_read_errors"], rev["kernel_tx_dropped_pkts"], rev["kernel_rx_dropped_pkts"]) == (0, 0, 0)


ONE_GBIT = {"name": "gbit", "duration_s": 10,
            "bottleneck": {"rate_bps": "1Gbps", "delay_ms": 5, "queue_pkts": 1000, "loss": 1e-4},
            "flows": [{"cc": "cubic"}, {"cc": "cubic", "start_s": 1}]}


@root_only
def test_a_one_gbit_run_loses_nothing_the_model_did_not_drop():
    from cclab.kernel.backend import run_kernel

    r = run_kernel(ONE_GBIT)
    acc = r.summary["links"]["accounting"]
    assert {a["link"] for a in acc} == {"bottleneck.fwd", "bottleneck.rev"}
    fwd = next(a for a in acc if a["link"] == "bottleneck.fwd")
    # Two CUBIC flows at 1e-4 loss on a 10 ms path reach a few hundred Mbit/s here (218 000
    # packets in 10 s in one run); the point is many packets, not the rate.
    assert fwd["in_pkts"] > 50_000, fwd
    assert fwd["dropped_pkts"] > 0, fwd  # 1e-4 random loss: the model does drop
    for a in acc:
        assert a["in_pkts"] == a["delivered_pkts"] + a["dropped_pkts"] + a["in_flight_pkts"], a
        assert a["unaccounted_pkts"] == 0, a
        assert a["tun_write_errors_pkts"] == 0 and a["tun_read_errors"] == 0, a
        assert a["kernel_tx_dropped_pkts"] == 0 and a["kernel_rx_dropped_pkts"] == 0, a
    for p in r.summary["links"]["ports"]:
        assert p["tx_errors"] == 0 and p["rx_errors"] == 0, p
