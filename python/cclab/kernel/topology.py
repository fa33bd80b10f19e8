"""The scenario's network on the kernel: the core's lowering (``Scenario.lowered()``, the very
network the simulator builds) turned into namespaces, TUN interfaces, addresses, routes and the
``cclab-link`` spec.

- Each host is a network namespace; each of its links (and each medium it is on) is an
  interface there: a TUN device ``cl<k>`` (k counts the host's links in declaration order, then
  its media) with its own address
  ``10.77.<host>.<k+1>``. A dumbbell host has one (its access link, modelled or not).
- Routers are not namespaces: they live inside ``cclab-link``, which moves a packet from the TUN
  it was read on across the link directions of its flow's route and writes it into the TUN that
  owns its destination address. So every element runs on one clock (the emulator's), a router
  forwards in zero time as in the simulator, and no kernel forwarding path (TTL, ICMP, its own
  queues) is added that the simulator does not have.
- Routes: in a sender's namespace a /32 route to the receiver's interface address through the
  sender's interface for that flow (with that interface's address as the preferred source), and
  the same for the receiver's ACKs. Two flows between the same two interfaces must take the same
  links (a route is per destination address): ``plan`` refuses the scenario otherwise.
- A Multipath TCP flow's subflow 0 is routed as above; each later subflow between its own pair
  of addresses by policy rules at both ends (``mptcp.py``), and cclab-link carries each pair
  across its own path's links.
- A host's device (its interface queue and NIC, the lowering's ``devices``) is an htb + pfifo on
  that interface's TUN (``device.py``); its TSQ limit is the namespace's
  ``tcp_limit_output_bytes``. Only Linux's own TSQ rule and pacing shift run on the kernel: another
  ``tsq`` runs as Linux's rule with its ``tsq_limit_bytes`` as the cap, a deviation in the summary.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .mptcp import Subflow, plan_subflows

__all__ = ["KernelPlan", "plan_network", "flow_paths"]


def _ns_part(name: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in name.lower())[:12].strip("-") or "h"


@dataclass
class Interface:
    """One host interface: the TUN device ``dev`` in the host's namespace."""

    host: str
    link: str
    dev: str
    addr: str
    port: str
    #: Destination addresses routed out of this interface.
    routes: list[str] = field(default_factory=list)
    #: The host's device on this interface (the lowering's ``devices`` entry), if any.
    device: dict[str, Any] | None = None


@dataclass
class KernelPlan:
    """Everything the kernel backend creates for one scenario."""

    #: host name -> namespace name part (``cclab-<run>-<part>``)
    hosts: dict[str, str]
    #: (host, scenario link) -> interface
    interfaces: dict[tuple[str, str], Interface]
    #: per flow: sender interface, receiver interface (the data's), receiver's ACK interface
    flows: list[tuple[Interface, Interface, Interface]]
    #: cclab-link's links (simulated directions, named as in the simulator), media and routes
    links: list[dict[str, Any]]
    routes: list[dict[str, Any]]
    problems: list[str]
    media: list[dict[str, Any]] = field(default_factory=list)
    #: Where the kernel runs something close to, not exactly, what the scenario asks (the
    #: summary's ``deviations``).
    deviations: list[str] = field(default_factory=list)
    #: host name -> its stack below TCP (tsq, tsq_limit_bytes, pacing_shift, device)
    stacks: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: Multipath TCP flows (scenario index) -> their subflows, one per path (``mptcp.py``)
    subflows: dict[int, list[Subflow]] = field(default_factory=dict)

    def emulator_spec(self, seed: int, ns: dict[str, str], stats_path: Path, interval_ms: float) -> dict[str, Any]:
        """cclab-link's spec, with ``ns`` mapping host names to namespace names."""
        ports = [{"name": i.port, "netns": ns[i.host], "dev": i.dev, "addrs": [i.addr]}
                 for i in self.interfaces.values()]
        extra = {"media": self.media} if self.media else {}
        return {"seed": seed, "ports": ports, "links": self.links, **extra, "routes": self.routes,
                "stats_path": str(stats_path), "links_path": str(stats_path.with_name("links.csv")),
                "links_interval_ms": interval_ms}


def plan_network(lowered: dict[str, Any]) -> KernelPlan:
    """Plan the namespaces, interfaces, addresses and routes of ``lowered`` (the core's lowering,
    ``Scenario.lowered()``)."""
    problems: list[str] = []
    hosts_used: list[str] = []
    for f in lowered["flows"]:
        for h in (f["sender"], f["receiver"]):
            if h not in hosts_used:
                hosts_used.append(h)
    host_ix = {h: i for i, h in enumerate(hosts_used)}
    parts: dict[str, str] = {}
    for h in hosts_used:
        part, n = _ns_part(h), 1
        while part in parts.values():
            n += 1
            part = f"{_ns_part(h)[:10]}-{n}"
        parts[h] = part
    interfaces: dict[tuple[str, str], Interface] = {}
    for h in hosts_used:
        mine = [p["name"] for p in lowered["pairs"] if h in p["endpoints"]]
        mine += [m["name"] for m in lowered.get("media", []) if h in m["nodes"]]
        if len(mine) > 250:
            problems.append(f"host {h!r} has {len(mine)} links: at most 250 interfaces per host on the kernel")
        for k, link in enumerate(mine[:250]):
            interfaces[(h, link)] = Interface(host=h, link=link, dev=f"cl{k}", addr=f"10.77.{host_ix[h]}.{k + 1}",
                                              port=f"h{host_ix[h]}i{k}")
    stacks = {h: lowered.get("stacks", {}).get(h, {}) for h in hosts_used}
    deviations: list[str] = []
    senders = {f["sender"] for f in lowered["flows"]}
    for h, st in stacks.items():
        if st.get("tsq") == "off":
            # What runs instead: Linux 6.18 has no way to turn TSQ off. A TUN orphans its skbs on
            # transmit, so without a device nothing below TCP holds them and TSQ never binds on
            # either backend; with a device (htb), TSQ's floor of two skbs still applies.
            if st.get("device"):
                deviations.append(f"host {h!r}: tsq = 'off' runs as Linux's TSQ with tcp_limit_output_bytes at its "
                                  "maximum; 6.18 keeps the floor of two skbs (max(2 truesize, pacing_rate >> 10))")
        elif st.get("tsq", "linux") != "linux":
            # The other rules (the paper's eq. 2, a fixed limit, cclab's adaptive one) are changes
            # to tcp_small_queue_check that 6.18 does not have: Linux's rule runs, with its cap
            # tcp_limit_output_bytes at the rule's tsq_limit_bytes.
            deviations.append(f"host {h!r}: tsq = {st['tsq']!r} (simulator-only) runs as Linux's TSQ (tsq = 'linux': "
                              f"min(max(2 truesize, pacing_rate >> 10), tcp_limit_output_bytes = "
                              f"{st.get('tsq_limit_bytes')}))")
        if st.get("device") and h in senders and st.get("device_release", "end") != "start":
            # The kernel backend's device is htb + TUN: tun_net_xmit (drivers/net/tun.c) orphans
            # a whole skb when htb hands it over, before its segments are on the wire, where a
            # NIC frees each on TX completion (device_release = "end", the simulator's default).
            deviations.append(f"host {h!r}: device_release = {st.get('device_release', 'end')!r} runs as 'start': "
                              "the kernel backend's device (htb + TUN) gives a socket back a whole skb's bytes "
                              "below TCP when its transmission starts, not as each segment is sent")
        if st.get("pacing_shift", 10) != 10:
            problems.append(f"host {h!r}: pacing_shift = {st['pacing_shift']} is simulator-only (a driver sets "
                            "sk_pacing_shift on the kernel; no socket option does)")
    for dev in lowered.get("devices", []):
        i = interfaces.get((dev["host"], dev["interface"]))
        if i is not None:
            i.device = {"name": dev["name"], "rate_bps": dev["spec"]["rate_bps"],
                        "queue_pkts": dev["spec"]["queue_pkts"] - 1}
    if len(hosts_used) > 250:
        problems.append(f"{len(hosts_used)} hosts: at most 250 on the kernel backend")
    names = [link["name"] for link in lowered["links"]]
    media = lowered.get("media", [])

    def hop(h: dict[str, int]) -> Any:
        """A route hop as cclab-link reads it: a link direction's name, or a medium crossing."""
        e = h["element"]
        if e < len(names):
            return names[e]
        return {"medium": media[e - len(names)]["name"], "from": h["from"], "to": h["to"]}

    def label(x: Any) -> str:
        return x if isinstance(x, str) else f"{x['medium']}:{x['from']}>{x['to']}"

    links = [{"name": link["name"], **{k: v for k, v in link["spec"].items() if v is not None}}
             for link in lowered["links"]]
    def on_medium(m: dict[str, Any]) -> list[str | None]:
        """Per medium port, the emulator port of the host interface on it (a router: none)."""
        return [i.port if (i := interfaces.get((node, m["name"]))) is not None else None for node in m["nodes"]]

    media_spec = [{"name": m["name"], "kind": m["kind"], "lanes": m["lanes"], "ports": on_medium(m),
                   "spec": {k: v for k, v in m["spec"].items() if v is not None}} for m in media]
    routes: dict[tuple[str, str], list[Any]] = {}
    route_owner: dict[tuple[str, str], str] = {}
    flows = []
    subflows: dict[int, list[Subflow]] = {}

    def carry(frm: Interface, to: Interface, hops: list[dict[str, int]], owner: str, via: Interface | None) -> None:
        """cclab-link carries packets read on ``frm`` for ``to``'s address across ``hops``; with
        ``via``, a /32 route to ``to`` out of ``via`` in its host's main table."""
        key = (frm.port, to.port)
        want = [hop(h) for h in hops]
        if key in routes and routes[key] != want:
            problems.append(
                f"flows {route_owner[key]!r} and {owner!r} go from {frm.host}'s interface on {frm.link!r} to "
                f"{to.host}'s on {to.link!r} by different links ({' -> '.join(map(label, routes[key]))} vs "
                f"{' -> '.join(map(label, want))}): on the kernel a route is per destination address; give them "
                "different interfaces (hosts) or the same path")
            return
        routes[key] = want
        route_owner[key] = owner
        if via is not None and to.addr not in via.routes:
            via.routes.append(to.addr)

    for i, f in enumerate(lowered["flows"]):
        s_if = interfaces.get((f["sender"], f["sender_link"]))
        r_if = interfaces.get((f["receiver"], f["receiver_link"]))
        a_if = interfaces.get((f["receiver"], f["ack_link"]))
        if s_if is None or r_if is None or a_if is None:
            continue
        carry(s_if, r_if, f["fwd"], f["flow"], s_if)
        carry(a_if, s_if, f["rev"], f["flow"], a_if)
        flows.append((s_if, r_if, a_if))
        if f.get("subflows"):
            # Subflow 0 is the route above; each later one crosses its own path's links between
            # its own pair of addresses (policy rules at both ends, mptcp.configure). Only an
            # announced address needs a main-table route at the sender, so that the path manager's
            # "any" source becomes the path's first interface.
            sfs, sf_problems = plan_subflows(i, f, interfaces)
            problems += sf_problems
            subflows[i] = sfs
            for sf, lw in ((sf, f["subflows"][sf.k]) for sf in sfs[1:]):
                carry(sf.snd, sf.rcv, lw["fwd"], f"{f['flow']} subflow {sf.k}", sf.snd if sf.how == "signal" else None)
                carry(sf.ack, sf.snd, lw["rev"], f"{f['flow']} subflow {sf.k}", None)
    # A host that reaches one address through two interfaces cannot be routed per destination.
    for h in hosts_used:
        seen: dict[str, str] = {}
        for i in (i for i in interfaces.values() if i.host == h):
            for dst in i.routes:
                if dst in seen and seen[dst] != i.dev:
                    problems.append(f"host {h!r} sends to {dst} through two interfaces ({seen[dst]}, {i.dev}): on the "
                                    "kernel a route is per destination address")
                seen[dst] = i.dev
    return KernelPlan(hosts=parts, interfaces=interfaces, flows=flows, links=links, media=media_spec,
                      routes=[{"from": a, "to": b, "links": ls} for (a, b), ls in routes.items()], problems=problems,
                      stacks=stacks, deviations=deviations, subflows=subflows)


def flow_paths(lowered: dict[str, Any]) -> dict[str, dict[str, list[str]]]:
    """Each flow's path as the simulator's summary.json names it (``paths``): per direction the
    link directions and medium crossings (``<medium>:<from node>><to node>``), and the nodes."""
    names = [link["name"] for link in lowered["links"]]
    media = lowered.get("media", [])

    def label(h: dict[str, int]) -> str:
        e = h["element"]
        if e < len(names):
            return names[e]
        m = media[e - len(names)]
        return f"{m['name']}:{m['nodes'][h['from']]}>{m['nodes'][h['to']]}"

    return {f["flow"]: {"fwd": [label(h) for h in f["fwd"]], "rev": [label(h) for h in f["rev"]],
                        "fwd_nodes": list(f["fwd_nodes"]), "rev_nodes": list(f["rev_nodes"])}
            for f in lowered["flows"]}
