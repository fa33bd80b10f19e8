"""A host's stack below TCP on the kernel (the simulator's ``cclab_net::host``): the interface
queue and the NIC draining it, on the host's TUN device inside its namespace.

- The queue: an htb root whose one class runs at the NIC's rate (``device_rate_bps``), with a
  pfifo of ``device_queue_pkts`` under it. htb holds the packets, so until it releases one the
  skb's truesize stays in the socket's ``sk_wmem_alloc`` (the TUN frees it as soon as it takes
  it): TCP Small Queues see the same queue as in the simulator, and a packet the pfifo refuses
  is a local drop (``NET_XMIT_DROP``: the socket enters CWR).
- GSO off on that device (``ethtool -K dev gso off`` through pyroute2). TCP still builds GSO
  skbs (``sk_setup_caps``, net/core/sock.c, gives every TCP socket ``NETIF_F_GSO``): the pfifo
  holds whole skbs and counts them as packets (``txqueuelen`` counts skbs, the simulator's
  queue segments), and the core segments an skb after htb has dequeued it
  (``validate_xmit_skb``), so the TUN takes all its segments at once. htb charges the whole skb
  to its tokens and the next skb waits out that debt. Measured in S2's setup
  (``bench/s2_kernel_probe.py``): an skb's segments reach the TUN about 1 us apart, the next
  skb follows after 1.00 times the first's transmission time (the simulator's
  ``device_release = "start"``).
- ``tcp_limit_output_bytes`` of the namespace is the host's ``tsq_limit_bytes`` (a sysctl, set
  by the backend with the other per-namespace knobs).
"""

from __future__ import annotations

import json
import subprocess
from typing import Any

from .netns import KernelUnavailable, _in_netns

__all__ = ["configure_device", "device_stats"]

#: htb's bucket: two full-size frames, so the class sends at its rate packet by packet.
_BURST_BYTES = 3028


def _tc(ns: str, *args: str) -> str:
    p = subprocess.run(["ip", "netns", "exec", ns, "tc", *args], capture_output=True, text=True)
    if p.returncode != 0:
        raise KernelUnavailable(f"{ns}: tc {' '.join(args)}: {p.stderr.strip()}")
    return p.stdout


def _gso_off(dev: str) -> None:
    from pyroute2.ethtool import Ethtool

    e = Ethtool()
    try:
        f = e.get_features(dev)
        for name in ("tx-generic-segmentation", "tx-tcp-segmentation"):
            if name in f.features:
                f.features[name].enable = False
        e.set_features(dev, f)
        if f.features["tx-generic-segmentation"].enable or e.get_features(dev).features[
                "tx-generic-segmentation"].enable:
            raise RuntimeError("GSO still on")
    finally:
        e.close()


def configure_device(ns: str, dev: str, rate_bps: int, queue_pkts: int) -> None:
    """Make ``dev`` in ``ns`` a NIC of ``rate_bps`` behind a pfifo of ``queue_pkts`` packets."""
    _in_netns(ns, _gso_off, dev)
    rate = f"{int(rate_bps)}bit"
    _tc(ns, "qdisc", "replace", "dev", dev, "root", "handle", "1:", "htb", "default", "1")
    _tc(ns, "class", "add", "dev", dev, "parent", "1:", "classid", "1:1", "htb", "rate", rate, "ceil", rate,
        "burst", str(_BURST_BYTES), "cburst", str(_BURST_BYTES))
    _tc(ns, "qdisc", "add", "dev", dev, "parent", "1:1", "handle", "10:", "pfifo", "limit", str(int(queue_pkts)))


def device_stats(ns: str, dev: str) -> dict[str, Any]:
    """The interface queue's counters (the pfifo under htb), named as a link's."""
    for q in json.loads(_tc(ns, "-s", "-j", "qdisc", "show", "dev", dev)):
        if q.get("kind") == "pfifo":
            return {"enqueued_pkts": int(q.get("packets", 0)) + int(q.get("qlen", 0)),
                    "dropped_queue_full_pkts": int(q.get("drops", 0)), "tx_bytes": int(q.get("bytes", 0)),
                    "delivered_pkts": int(q.get("packets", 0)), "queue_pkts": int(q.get("qlen", 0))}
    raise KernelUnavailable(f"{ns}: no pfifo on {dev}")
