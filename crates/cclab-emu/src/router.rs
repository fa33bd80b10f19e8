//! The emulator's core, without I/O: packets come in from a port at `now`, are routed by
//! their IPv4 destination through the route's chain of hops (a cclab-net link, or a crossing
//! of a multi-port medium from one of its ports to another), and come out at a port when the
//! model says. Time is passed in (ns since start); the driver (`emu.rs`) reads the clock, the
//! TUNs and the timer. Unit-tested without root.

use crate::ledger::Ledger;
use crate::spec::Spec;
use crate::stats::{Histogram, LinkCounters, PortCounters};
use cclab_net::dcf::BROADCAST;
use cclab_net::link::{DropReason, Link, LinkStats};
use cclab_net::{radio, rng, MacStats, Medium, NetPacket};
use std::collections::HashMap;
use std::net::Ipv4Addr;

/// An IP packet inside the emulator.
#[derive(Debug)]
pub struct Pkt {
    /// The IP packet, exactly as read from the TUN (IFF_NO_PI: no extra header).
    pub data: Vec<u8>,
    /// Index of its route.
    route: u32,
    /// Index, in the route, of the hop (link or medium crossing) it is in.
    hop: u32,
    /// When it was read, ns since start.
    pub in_ns: u64,
}

impl NetPacket for Pkt {
    fn wire_bytes(&self) -> u32 {
        u32::try_from(self.data.len()).unwrap_or(u32::MAX)
    }
    /// The IPv4 header's ECN field, so a link with `ecn_threshold_pkts` marks real packets.
    fn ecn(&self) -> cclab_net::Ecn {
        crate::ecn::ipv4_ecn(&self.data)
    }
    /// CE into the real IPv4 header, checksum fixed.
    fn set_ce(&mut self) {
        crate::ecn::ipv4_set_ce(&mut self.data);
    }
    /// The IPv4 5-tuple, so FQ-CoDel puts each real flow in its own queue.
    fn flow_hash(&self) -> u64 {
        ipv4_flow_hash(&self.data)
    }
}

/// A deterministic hash of an IPv4 packet's flow: source and destination addresses, protocol,
/// and for TCP and UDP the ports (not for fragments, so that every fragment of a datagram
/// hashes alike), mixed by splitmix64's finaliser. No seed, unlike the kernel's
/// `skb_get_hash` (a jhash keyed at boot): the same packets give the same queues on every run.
/// 0 for anything that is not an IPv4 header.
pub fn ipv4_flow_hash(d: &[u8]) -> u64 {
    fn mix(mut z: u64) -> u64 {
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    if d.len() < 20 || d[0] >> 4 != 4 {
        return 0;
    }
    let ihl = usize::from(d[0] & 0x0f) * 4;
    let proto = d[9];
    let fragment = u16::from_be_bytes([d[6], d[7]]) & 0x3fff != 0; // MF or an offset
    let ports = match d.get(ihl..ihl + 4) {
        Some(p) if (proto == 6 || proto == 17) && ihl >= 20 && !fragment => {
            u32::from_be_bytes([p[0], p[1], p[2], p[3]])
        }
        _ => 0,
    };
    let addrs = u64::from_be_bytes([d[12], d[13], d[14], d[15], d[16], d[17], d[18], d[19]]);
    mix(mix(addrs) ^ (u64::from(ports) << 8 | u64::from(proto)))
}

/// A packet that leaves now: write `pkt.data` to port `port`.
#[derive(Debug)]
pub struct Out {
    pub port: usize,
    pub from_port: usize,
    pub pkt: Pkt,
    /// When the model says it arrives at the far end, ns since start.
    pub model_ns: u64,
    /// The lane (row of the stats' links) whose element handed it out last: a failed write to
    /// the port's TUN counts there (`LinkCounters::tun_write_errors_pkts`).
    pub lane: usize,
}

/// What happened to a packet offered at ingress.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ingress {
    /// In the first link (or medium) of its route.
    Queued,
    /// Dropped by the first element: its loss model, its full queue or its AQM.
    Dropped(DropReason),
    /// Not IPv4 (or too short to be).
    NotIpv4,
    /// No port owns the destination, or no route leads there.
    NoRoute,
}

/// IPv4 destination of an IP packet, None if it is not IPv4.
pub fn ipv4_dst(data: &[u8]) -> Option<Ipv4Addr> {
    if data.len() < 20 || data[0] >> 4 != 4 {
        return None;
    }
    Some(Ipv4Addr::new(data[16], data[17], data[18], data[19]))
}

/// A hop of a route as the router uses it.
#[derive(Debug, Clone, Copy)]
struct HopIx {
    element: u32,
    from: u32,
    to: u32,
    /// The element's lane the packet queues in: the one of port `from` (a link's only lane).
    lane: u32,
    /// The same lane among all lanes (its counters, its row in the stats).
    row: u32,
}

#[derive(Debug)]
struct RouteIx {
    from: usize,
    /// The port it leaves by; [`BROADCAST_ROUTE`]: every port of `fanout`.
    to: usize,
    hops: Vec<HopIx>,
    /// A broadcast route's receivers: the medium's other ports that are emulator ports.
    fanout: Vec<usize>,
}

/// `RouteIx::to` of a broadcast route.
const BROADCAST_ROUTE: usize = usize::MAX;
/// `HopIx::to` of a broadcast's hop (offered to the medium as [`BROADCAST`]).
const BROADCAST_PORT: u32 = u32::MAX;

/// "No event" in [`Router`]'s table of next events.
const NEVER: u64 = u64::MAX;

/// Elements (links and media), routes and counters.
pub struct Router {
    /// Every element behind the same trait: the spec's links in order, then its media.
    pub elements: Vec<Box<dyn Medium<Pkt>>>,
    /// Per element: its `next_event_ns` (`NEVER`: none), taken again after every call on it,
    /// so that finding the next event is a scan of a few integers.
    next: Vec<u64>,
    /// Every lane: one per link (lane `i` is link `i`), then each medium's lanes in order.
    pub lane_names: Vec<String>,
    /// Per lane, counted here: packets in at the lane's port, out (delivered) from it, in it.
    pub lane_counters: Vec<LinkCounters>,
    /// Per lane: (element, lane within the element).
    lane_of: Vec<(u32, u32)>,
    pub port_names: Vec<String>,
    pub port_counters: Vec<PortCounters>,
    routes: Vec<RouteIx>,
    /// routes index of (from, to), at from * nports + to.
    route_of: Vec<Option<u32>>,
    addr_port: HashMap<Ipv4Addr, usize>,
    /// Per port: the route of its limited broadcasts (255.255.255.255), when it sits on a
    /// medium that carries them.
    broadcast_route: Vec<Option<u32>>,
    /// Lateness of every delivered packet, all links.
    pub lateness_all: Histogram,
    /// Every TCP connection's segments: taken in, dropped, handed on (ground truth for
    /// unneeded retransmissions).
    pub ledger: Ledger,
    free: Vec<Vec<u8>>,
}

impl Router {
    /// The elements of `spec`, each with its random stream from (seed, link or medium name),
    /// as in the simulator (crates/cclab-sim/src/world.rs).
    pub fn new(spec: &Spec) -> Router {
        let n = spec.ports.len();
        let mut route_of = vec![None; n * n];
        for (i, r) in spec.routes.iter().enumerate() {
            route_of[r.from * n + r.to] = Some(i as u32);
        }
        let mut addr_port = HashMap::new();
        for (i, p) in spec.ports.iter().enumerate() {
            for a in &p.addrs {
                addr_port.insert(*a, i);
            }
        }
        let mut elements: Vec<Box<dyn Medium<Pkt>>> = Vec::new();
        let mut lane_names = Vec::new();
        for l in &spec.links {
            // A radio link's two directions draw their fades from one stream (both stall).
            elements.push(Box::new(
                Link::new(l.config.clone(), rng::stream(spec.seed, &l.name))
                    .with_spike_rng(radio::spike_rng(spec.seed, &l.name)),
            ));
            lane_names.push(l.name.clone());
        }
        for m in &spec.media {
            let rng = rng::stream(spec.seed, &m.name);
            elements.push(m.model.build(m.lanes.len(), rng));
            lane_names.extend(m.lanes.iter().cloned());
        }
        let mut first_lane = Vec::with_capacity(elements.len());
        let mut lane_of = Vec::new();
        for (e, el) in elements.iter().enumerate() {
            first_lane.push(lane_of.len() as u32);
            lane_of.extend((0..el.lanes() as u32).map(|k| (e as u32, k)));
        }
        assert_eq!(lane_of.len(), lane_names.len(), "one name per lane");
        let mut routes: Vec<RouteIx> = spec
            .routes
            .iter()
            .map(|r| RouteIx {
                from: r.from,
                to: r.to,
                fanout: Vec::new(),
                hops: r
                    .hops
                    .iter()
                    .map(|h| {
                        let lanes = elements[h.element].lanes();
                        let lane = if h.from < lanes { h.from } else { 0 } as u32;
                        HopIx {
                            element: h.element as u32,
                            from: h.from as u32,
                            to: h.to as u32,
                            lane,
                            row: first_lane[h.element] + lane,
                        }
                    })
                    .collect(),
            })
            .collect();
        // Broadcast routes, as in an infrastructure BSS (and as the simulator's middleware
        // sends them, crates/cclab-sim/src/agents.rs): the station sends the datagram to the
        // access point (the medium's first port with no emulator port: a router), which sends
        // it on to everyone as a group-addressed frame. With no such port, straight to all.
        let mut broadcast_route = vec![None; n];
        for (m, md) in spec.media.iter().enumerate() {
            if md.model.kind() != cclab_net::MediumKind::Dcf {
                continue;
            }
            let e = spec.links.len() + m;
            let hop = |from: usize, to: u32| HopIx {
                element: e as u32,
                from: from as u32,
                to,
                lane: from as u32,
                row: first_lane[e] + from as u32,
            };
            let ap = md.ports.iter().position(|p| p.is_none());
            for (k, p) in md.ports.iter().enumerate() {
                let Some(p) = *p else { continue };
                broadcast_route[p] = Some(routes.len() as u32);
                let hops = match ap {
                    Some(ap) => vec![hop(k, ap as u32), hop(ap, BROADCAST_PORT)],
                    None => vec![hop(k, BROADCAST_PORT)],
                };
                routes.push(RouteIx {
                    from: p,
                    to: BROADCAST_ROUTE,
                    hops,
                    fanout: md
                        .ports
                        .iter()
                        .flatten()
                        .copied()
                        .filter(|&q| q != p)
                        .collect(),
                });
            }
        }
        Router {
            next: elements
                .iter()
                .map(|e| e.next_event_ns().unwrap_or(NEVER))
                .collect(),
            elements,
            lane_counters: vec![LinkCounters::default(); lane_names.len()],
            lane_names,
            lane_of,
            port_names: spec.ports.iter().map(|p| p.name.clone()).collect(),
            port_counters: vec![PortCounters::default(); n],
            routes,
            route_of,
            addr_port,
            broadcast_route,
            lateness_all: Histogram::default(),
            ledger: Ledger::default(),
            free: Vec::new(),
        }
    }

    /// A buffer holding a copy of `data` (recycled from delivered or dropped packets).
    pub fn buffer(&mut self, data: &[u8]) -> Vec<u8> {
        let mut b = self.free.pop().unwrap_or_default();
        b.clear();
        b.extend_from_slice(data);
        b
    }

    /// Give a packet's buffer back for reuse.
    pub fn recycle(&mut self, b: Vec<u8>) {
        if self.free.len() < 65_536 {
            self.free.push(b);
        }
    }

    /// A packet read from `port` at `now_ns`.
    pub fn ingress(&mut self, now_ns: u64, port: usize, data: &[u8]) -> Ingress {
        let pc = &mut self.port_counters[port];
        pc.rx_pkts += 1;
        pc.rx_bytes += data.len() as u64;
        let Some(dst) = ipv4_dst(data) else {
            pc.dropped_not_ipv4_pkts += 1;
            return Ingress::NotIpv4;
        };
        let n = self.port_names.len();
        let route = if dst == Ipv4Addr::BROADCAST {
            self.broadcast_route[port]
        } else {
            self.addr_port
                .get(&dst)
                .and_then(|&to| self.route_of[port * n + to])
        };
        let Some(route) = route else {
            pc.dropped_no_route_pkts += 1;
            return Ingress::NoRoute;
        };
        self.ledger.entered(now_ns, data);
        let pkt = Pkt {
            data: self.buffer(data),
            route,
            hop: 0,
            in_ns: now_ns,
        };
        self.offer(now_ns, pkt)
    }

    /// The hop `pkt` is in.
    #[inline]
    fn hop_of(&self, pkt: &Pkt) -> HopIx {
        self.routes[pkt.route as usize].hops[pkt.hop as usize]
    }

    /// Offer `pkt` to the element of its current hop at `t_ns`.
    fn offer(&mut self, t_ns: u64, pkt: Pkt) -> Ingress {
        let h = self.hop_of(&pkt);
        let (e, row) = (h.element as usize, h.row as usize);
        let c = &mut self.lane_counters[row];
        c.in_pkts += 1;
        c.in_bytes += pkt.data.len() as u64;
        let el = &mut self.elements[e];
        let to = if h.to == BROADCAST_PORT {
            BROADCAST
        } else {
            h.to as usize
        };
        let res = match el.enqueue(t_ns, h.from as usize, to, pkt) {
            Ok(()) => {
                let q = el.queue_pkts(t_ns, h.lane as usize);
                let qb = el.queue_bytes(t_ns, h.lane as usize);
                let c = &mut self.lane_counters[row];
                c.in_flight_pkts += 1;
                c.max_queue_pkts = c.max_queue_pkts.max(q);
                c.max_queue_bytes = c.max_queue_bytes.max(qb);
                Ingress::Queued
            }
            Err(d) => {
                self.lane_counters[row].dropped_pkts += 1;
                self.ledger.dropped(&d.pkt.data);
                self.recycle(d.pkt.data);
                Ingress::Dropped(d.reason)
            }
        };
        self.settle(e);
        res
    }

    /// After a call on element `e` that took a time: give back the buffers of the packets it
    /// dropped on its own (an AQM's drop from its queue, a shared channel's loss on the air;
    /// counted in its stats already) and note when it next needs the router.
    #[inline(always)]
    fn settle(&mut self, e: usize) {
        while let Some((_, d)) = self.elements[e].pop_dropped() {
            let row = self.hop_of(&d.pkt).row as usize;
            let c = &mut self.lane_counters[row];
            c.in_flight_pkts = c.in_flight_pkts.saturating_sub(1);
            c.dropped_pkts += 1;
            self.ledger.dropped(&d.pkt.data);
            self.recycle(d.pkt.data);
        }
        self.next[e] = self.elements[e].next_event_ns().unwrap_or(NEVER);
    }

    /// When the model next needs the router (a packet comes out of an element, or an element
    /// must decide something), ns since start.
    pub fn next_event_ns(&self) -> Option<u64> {
        let t = self.next.iter().copied().min().unwrap_or(NEVER);
        (t != NEVER).then_some(t)
    }

    /// Whether no element holds a packet (none has anything left to do).
    pub fn is_empty(&self) -> bool {
        self.next.iter().all(|&t| t == NEVER)
    }

    /// Move every packet the model hands out by `now_ns`, in order of model time across all
    /// elements: onto the next hop of its route (offered at its model arrival time), or into
    /// `out` when it crossed its last hop. Lateness (`now_ns` minus model time) is recorded per
    /// lane (the lane the packet left from).
    pub fn service(&mut self, now_ns: u64, out: &mut Vec<Out>) {
        loop {
            // The element whose next event comes first (few elements: a scan is cheapest;
            // the earliest index wins a tie).
            let (mut t, mut e) = (NEVER, 0);
            for (i, &n) in self.next.iter().enumerate() {
                if n < t {
                    (t, e) = (n, i);
                }
            }
            if t > now_ns || t == NEVER {
                return;
            }
            let popped = self.elements[e].pop_delivered(t);
            self.settle(e);
            let Some(mut pkt) = popped else {
                // The element decided something at `t` (a shared channel's turn, an AQM's
                // dequeue); its next event is later, unless it made no progress.
                if self.next[e] <= t {
                    return;
                }
                continue;
            };
            let h = self.hop_of(&pkt);
            let late = now_ns - t;
            let c = &mut self.lane_counters[h.row as usize];
            c.delivered_pkts += 1;
            c.delivered_bytes += pkt.data.len() as u64;
            c.in_flight_pkts = c.in_flight_pkts.saturating_sub(1);
            c.lateness.record(late);
            let r = &self.routes[pkt.route as usize];
            if (pkt.hop as usize) + 1 < r.hops.len() {
                pkt.hop += 1;
                self.offer(t, pkt);
            } else if r.to == BROADCAST_ROUTE {
                self.lateness_all.record(late);
                let (from, fanout) = (r.from, r.fanout.clone());
                for (i, &q) in fanout.iter().enumerate() {
                    let copy = if i + 1 == fanout.len() {
                        std::mem::take(&mut pkt.data)
                    } else {
                        self.buffer(&pkt.data)
                    };
                    out.push(Out {
                        port: q,
                        from_port: from,
                        pkt: Pkt { data: copy, ..pkt },
                        model_ns: t,
                        lane: h.row as usize,
                    });
                }
            } else {
                self.lateness_all.record(late);
                self.ledger.delivered(t, &pkt.data);
                out.push(Out {
                    port: r.to,
                    from_port: r.from,
                    pkt,
                    model_ns: t,
                    lane: h.row as usize,
                });
            }
        }
    }

    /// Number of lanes (rows of the stats' links and of the links series).
    pub fn lanes(&self) -> usize {
        self.lane_names.len()
    }

    /// Packets still inside lane `l` (entered at its port, queued or propagating), counted
    /// by the router.
    pub fn in_flight(&self, l: usize) -> u64 {
        self.lane_counters[l].in_flight_pkts
    }

    /// Lane `l`'s queue at `now_ns` (packets, bytes), or at the earliest event the router has
    /// not handled yet if that is earlier: asking an element about a time moves it there (a
    /// shared channel takes its turns), which must not run ahead of a packet still to be
    /// offered to it at its model time.
    pub fn lane_queue(&mut self, now_ns: u64, l: usize) -> (u32, u64) {
        let t = self.next.iter().fold(now_ns, |t, &n| t.min(n));
        let (e, k) = self.lane_of[l];
        let (e, k) = (e as usize, k as usize);
        let q = self.elements[e].queue_pkts(t, k);
        let qb = self.elements[e].queue_bytes(t, k);
        self.settle(e);
        (q, qb)
    }

    /// The element's own counters of lane `l` (for a medium: drops and tx_bytes at the lane
    /// the packet entered by, delivered at the lane of the port it left by).
    pub fn lane_stats(&self, l: usize) -> &LinkStats {
        let (e, k) = self.lane_of[l];
        self.elements[e as usize].stats(k as usize)
    }

    /// MAC counters of the station at lane `l` (None: not a port of a medium with a MAC).
    pub fn lane_mac_stats(&self, l: usize) -> Option<MacStats> {
        let (e, k) = self.lane_of[l];
        self.elements[e as usize].mac_stats(k as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::Spec;
    use cclab_net::{MediumModel, SharedChannel};

    fn ip(dst: [u8; 4], len: usize) -> Vec<u8> {
        let mut p = vec![0u8; len];
        p[0] = 0x45;
        p[16..20].copy_from_slice(&dst);
        p
    }

    fn spec(links: &str, routes: &str) -> Spec {
        Spec::parse(&format!(
            r#"{{"seed": 3, "ports": [
                {{"name": "a", "netns": null, "dev": "ta", "addrs": ["10.0.0.1"]}},
                {{"name": "b", "netns": null, "dev": "tb", "addrs": ["10.0.0.2"]}},
                {{"name": "c", "netns": null, "dev": "tc", "addrs": ["10.0.0.3", "10.0.0.4"]}}],
              "links": {links}, "routes": {routes}}}"#
        ))
        .unwrap()
    }

    /// Drive the router as the real-time loop would, but with exact times.
    fn drain(r: &mut Router) -> Vec<Out> {
        let mut out = vec![];
        while let Some(t) = r.next_event_ns() {
            r.service(t, &mut out);
        }
        out
    }

    #[test]
    fn delay_and_rate_are_the_models() {
        let s = spec(
            r#"[{"name": "l", "rate_bps": 12000000, "delay_ms": 10}]"#,
            r#"[{"from": "a", "to": "b", "links": ["l"]}]"#,
        );
        let mut r = Router::new(&s);
        for _ in 0..3 {
            assert_eq!(r.ingress(0, 0, &ip([10, 0, 0, 2], 1500)), Ingress::Queued);
        }
        let out = drain(&mut r);
        let t: Vec<u64> = out.iter().map(|o| o.model_ns).collect();
        assert_eq!(t, [11_000_000, 12_000_000, 13_000_000]);
        assert!(out.iter().all(|o| o.port == 1 && o.from_port == 0));
        assert_eq!(r.lane_counters[0].max_queue_pkts, 3);
        assert_eq!(r.lateness_all.count(), 3);
        assert_eq!(r.lateness_all.max_ns(), 0);
    }

    #[test]
    fn chains_add_up_and_a_shared_link_serves_both_routes() {
        let s = spec(
            r#"[{"name": "acc", "delay_ms": 1}, {"name": "bn", "rate_bps": 12000000, "delay_ms": 5},
                {"name": "back", "delay_ms": 2}]"#,
            r#"[{"from": "a", "to": "b", "links": ["acc", "bn"]},
                {"from": "c", "to": "b", "links": ["bn"]},
                {"from": "b", "to": "a", "links": ["back"]}]"#,
        );
        let mut r = Router::new(&s);
        r.ingress(0, 0, &ip([10, 0, 0, 2], 1500));
        r.ingress(0, 2, &ip([10, 0, 0, 2], 1500));
        r.ingress(0, 1, &ip([10, 0, 0, 1], 100));
        let out = drain(&mut r);
        let got: Vec<(usize, usize, u64)> = out
            .iter()
            .map(|o| (o.from_port, o.port, o.model_ns))
            .collect();
        // c's packet enters the bottleneck at 0 (departs 1 ms), a's at 1 ms after the access
        // link (waits for c's, departs 2 ms); each then propagates 5 ms.
        assert_eq!(
            got,
            [(1, 0, 2_000_000), (2, 1, 6_000_000), (0, 1, 7_000_000)]
        );
        assert_eq!(r.lane_counters[1].in_pkts, 2);
        assert_eq!(r.lane_stats(1).delivered_pkts, 2);
    }

    #[test]
    fn unknown_and_non_ipv4_are_counted_and_dropped() {
        let s = spec(
            r#"[{"name": "l"}]"#,
            r#"[{"from": "a", "to": "b", "links": ["l"]}]"#,
        );
        let mut r = Router::new(&s);
        assert_eq!(r.ingress(0, 0, &ip([10, 9, 9, 9], 60)), Ingress::NoRoute);
        // c owns the address, but no route a -> c exists.
        assert_eq!(r.ingress(0, 0, &ip([10, 0, 0, 4], 60)), Ingress::NoRoute);
        let mut v6 = ip([10, 0, 0, 2], 60);
        v6[0] = 0x60;
        assert_eq!(r.ingress(0, 0, &v6), Ingress::NotIpv4);
        assert_eq!(r.ingress(0, 0, &[0x45, 0]), Ingress::NotIpv4);
        let pc = &r.port_counters[0];
        assert_eq!(
            (
                pc.rx_pkts,
                pc.dropped_no_route_pkts,
                pc.dropped_not_ipv4_pkts
            ),
            (4, 2, 2)
        );
        assert!(drain(&mut r).is_empty());
    }

    #[test]
    fn flows_hash_by_their_five_tuple_and_fq_codel_serves_them() {
        let tcp = |src: u8, sport: u16, len: usize| {
            let mut p = ip([10, 0, 0, 2], len);
            p[9] = 6;
            p[12..16].copy_from_slice(&[10, 0, 0, src]);
            p[20..22].copy_from_slice(&sport.to_be_bytes());
            p[22..24].copy_from_slice(&5201u16.to_be_bytes());
            p
        };
        let h = |d: &[u8]| ipv4_flow_hash(d);
        assert_eq!(
            h(&tcp(1, 4000, 1500)),
            h(&tcp(1, 4000, 60)),
            "size is not the flow"
        );
        assert_ne!(h(&tcp(1, 4000, 1500)), h(&tcp(1, 4001, 1500)));
        assert_ne!(h(&tcp(1, 4000, 1500)), h(&tcp(3, 4000, 1500)));
        let (mut frag, mut frag2) = (tcp(1, 4000, 1500), tcp(1, 9, 1500));
        frag[6] = 0x20; // MF: a fragment's ports are not used
        frag2[6] = 0x20;
        assert_eq!(h(&frag), h(&frag2));
        assert_eq!(h(&[0x60; 40]), 0);
        // A link with FQ-CoDel in the router: every packet comes out, each flow in order.
        let mut s = spec(
            r#"[{"name": "l", "rate_bps": 12000000, "delay_ms": 1}]"#,
            r#"[{"from": "a", "to": "b", "links": ["l"]}]"#,
        );
        s.links[0].config.qdisc = serde_json::from_str(r#"{"kind": "fq_codel"}"#).unwrap();
        let mut r = Router::new(&s);
        for i in 0..20u16 {
            let sport = if i % 4 == 0 { 2 } else { 1 };
            assert_eq!(r.ingress(0, 0, &tcp(1, sport, 1500)), Ingress::Queued);
        }
        let out = drain(&mut r);
        assert_eq!(out.len(), 20);
        // Flow 2 (5 packets, a new flow) is not stuck behind flow 1's 15.
        let pos2: Vec<usize> = (0..20).filter(|&k| out[k].pkt.data[21] == 2).collect();
        assert!(pos2[0] <= 2 && pos2[4] < 15, "{pos2:?}");
    }

    #[test]
    fn loss_and_queue_drops_are_the_simulators_draws() {
        let s = spec(
            r#"[{"name": "bottleneck.fwd", "rate_bps": 1000000, "queue_pkts": 5, "loss": 0.2}]"#,
            r#"[{"from": "a", "to": "b", "links": ["bottleneck.fwd"]}]"#,
        );
        let mut r = Router::new(&s);
        let got: Vec<Ingress> = (0..200)
            .map(|i| r.ingress(i * 1_000_000, 0, &ip([10, 0, 0, 2], 1000)))
            .collect();
        // The same link built directly from (seed, name) makes the same decisions.
        let mut l: Link<Pkt> =
            Link::new(s.links[0].config.clone(), rng::stream(3, "bottleneck.fwd"));
        for (i, g) in got.iter().enumerate() {
            let p = Pkt {
                data: vec![0; 1000],
                route: 0,
                hop: 0,
                in_ns: 0,
            };
            let want = match l.enqueue(i as u64 * 1_000_000, p) {
                Ok(()) => Ingress::Queued,
                Err(d) => Ingress::Dropped(d.reason),
            };
            assert_eq!(*g, want, "packet {i}");
        }
        let c = r.lane_counters[0].clone();
        let st = *r.lane_stats(0);
        assert!(
            st.dropped_random_pkts > 10 && st.dropped_queue_full_pkts > 10,
            "{st:?}"
        );
        let out = drain(&mut r);
        assert_eq!(
            c.in_pkts,
            out.len() as u64 + st.dropped_random_pkts + st.dropped_queue_full_pkts
        );
    }

    #[test]
    fn a_radio_link_runs_the_simulators_model_in_the_router() {
        // A 3G downlink with RLC errors, discards (MaxDAT 3) and random fades: driven as the
        // real-time loop drives it, the router hands out exactly what the same link built from
        // (seed, name) does, at the same times, and counts the RLC's discards.
        let s = spec(
            r#"[{"name": "cell.fwd", "rate_bps": 384000, "delay_ms": 150,
                 "radio": {"pdu_loss_model": {"kind": "bernoulli", "p": 0.1}, "max_dat": 3,
                           "spike_rate_per_s": 0.2, "spike_duration_mean_ms": 1500}}]"#,
            r#"[{"from": "a", "to": "b", "links": ["cell.fwd"]}]"#,
        );
        let mut r = Router::new(&s);
        let mut l: Link<Pkt> = Link::new(s.links[0].config.clone(), rng::stream(3, "cell.fwd"))
            .with_spike_rng(radio::spike_rng(3, "cell.fwd"));
        let (mut got, mut want, mut want_drops) = (vec![], vec![], 0u64);
        let mut take = |r: &mut Router, l: &mut Link<Pkt>, until: u64| {
            while let Some(t) = r.next_event_ns().filter(|&t| t <= until) {
                r.service(t, &mut got);
            }
            while let Some(t) = l.next_arrival_ns().filter(|&t| t <= until) {
                want.extend(std::iter::from_fn(|| l.pop_arrived(t)).map(|_| t));
                while let Some((_, d)) = l.pop_dropped() {
                    assert_eq!(d.reason, DropReason::Rlc);
                    want_drops += 1;
                }
            }
        };
        for i in 0..2000u64 {
            let t = i * 40_000_000;
            take(&mut r, &mut l, t);
            assert_eq!(r.ingress(t, 0, &ip([10, 0, 0, 2], 1000)), Ingress::Queued);
            let p = Pkt {
                data: vec![0; 1000],
                route: 0,
                hop: 0,
                in_ns: 0,
            };
            l.enqueue(t, p).unwrap();
        }
        take(&mut r, &mut l, u64::MAX);
        let times: Vec<u64> = got.iter().map(|o| o.model_ns).collect();
        assert_eq!(times, want);
        let st = *r.lane_stats(0);
        assert!(st.dropped_rlc_pkts > 10, "{st:?}");
        assert_eq!(st.dropped_rlc_pkts, want_drops);
        assert_eq!(got.len() as u64 + st.dropped_rlc_pkts, 2000);
        assert_eq!(
            r.lane_counters[0].in_flight_pkts, 0,
            "discards leave the lane"
        );
        let doc = crate::stats::stats_json(&r, 80.0, 0);
        assert_eq!(doc["links"][0]["dropped_rlc_pkts"], st.dropped_rlc_pkts);
    }

    /// Ports a, b, c; a cell whose port 0 is a, 1 is c, 2 (the AP) leads to b; a link "wan"
    /// behind the AP, and "wan.rev" back.
    fn cell_spec(cell: &str, routes: &str) -> Spec {
        Spec::parse(&format!(
            r#"{{"seed": 3, "ports": [
                {{"name": "a", "netns": null, "dev": "ta", "addrs": ["10.0.0.1"]}},
                {{"name": "b", "netns": null, "dev": "tb", "addrs": ["10.0.0.2"]}},
                {{"name": "c", "netns": null, "dev": "tc", "addrs": ["10.0.0.3"]}}],
              "links": [{{"name": "wan", "rate_bps": 12000000, "delay_ms": 10}},
                        {{"name": "wan.rev", "delay_ms": 10, "queue_pkts": 4}}],
              "media": [{{"name": "cell", "kind": "shared",
                          "lanes": ["cell.a", "cell.c", "cell.ap"], "spec": {cell}}}],
              "routes": {routes}}}"#
        ))
        .unwrap()
    }

    const CELL: &str = r#"{"rate_bps": 12000000, "delay_ms": 0.5, "overhead_us": 100}"#;

    #[test]
    fn a_dcf_cell_carries_a_limited_broadcast_to_its_other_hosts() {
        // Ports a and c are stations of the cell (medium ports 0, 1); the AP (2) is no port.
        let text = cell_spec(CELL, "[]");
        let mut s = Spec::parse(
            r#"{"seed": 3, "ports": [
                {"name": "a", "netns": null, "dev": "ta", "addrs": ["10.0.0.1"]},
                {"name": "b", "netns": null, "dev": "tb", "addrs": ["10.0.0.2"]},
                {"name": "c", "netns": null, "dev": "tc", "addrs": ["10.0.0.3"]}],
              "links": [], "routes": [],
              "media": [{"name": "cell", "kind": "dcf", "ports": ["a", "c", null],
                          "lanes": ["cell.a", "cell.c", "cell.ap"], "spec": {}}]}"#,
        )
        .unwrap();
        assert_eq!(s.media[0].ports, [Some(0), Some(2), None]);
        let mut r = Router::new(&s);
        assert_eq!(
            r.ingress(0, 0, &ip([255, 255, 255, 255], 100)),
            Ingress::Queued
        );
        // From b, which is on no medium: no route.
        assert_eq!(
            r.ingress(0, 1, &ip([255, 255, 255, 255], 100)),
            Ingress::NoRoute
        );
        let mut out = Vec::new();
        r.service(1_000_000, &mut out);
        // To the AP first: DIFS 28 + DATA (136 B at 54 Mbit/s: 20 + 6 x 4 + 6 = 50 us) + SIFS
        // 10 + Ack 34 = 122 us; then the AP's group-addressed frame after DIFS and its backoff
        // (0..15 slots of 9 us): 74 us at the 24 Mbit/s basic rate; to c only.
        let t = times(&out);
        assert_eq!((t.len(), t[0].0, t[0].1), (1, 0, 2));
        let relay = t[0].2 - 122_000 - 28_000 - 74_000;
        assert!(relay.is_multiple_of(9_000) && relay <= 15 * 9_000, "{t:?}");
        assert_eq!(out[0].pkt.data.len(), 100);
        // Each station's MAC counters, in the stats document as in the simulator's summary:
        // a's unicast to the AP, the AP's broadcast (one attempt each).
        let doc = crate::stats::stats_json(&r, 1.0, 0);
        let links = doc["links"].as_array().unwrap();
        for (l, lane) in links.iter().enumerate() {
            let mac = r.lane_mac_stats(l).expect("every lane is a station");
            assert_eq!(lane["mac"], serde_json::to_value(mac).unwrap());
            assert_eq!(lane["mac"]["kind"], "dcf");
        }
        let attempts: Vec<u64> = links
            .iter()
            .map(|l| l["mac"]["attempts"].as_u64().unwrap())
            .collect();
        assert_eq!(attempts, [1, 0, 1]);
        // A shared channel does not carry broadcasts (no route is made for them).
        s.media[0].model = text.media[0].model.clone();
        let mut r = Router::new(&s);
        assert_eq!(
            r.ingress(0, 0, &ip([255, 255, 255, 255], 100)),
            Ingress::NoRoute
        );
    }

    fn times(out: &[Out]) -> Vec<(usize, usize, u64)> {
        out.iter()
            .map(|o| (o.from_port, o.port, o.model_ns))
            .collect()
    }

    #[test]
    fn a_route_crosses_a_cell_then_a_link_at_the_models_times() {
        let s = cell_spec(
            CELL,
            r#"[{"from": "a", "to": "b", "links": [{"medium": "cell", "from": 0, "to": 2}, "wan"]},
                {"from": "c", "to": "b", "links": [{"medium": "cell", "from": 1, "to": 2}, "wan"]}]"#,
        );
        // Two packets from each station at 0. Airtime 1.1 ms (1 ms of bits + 0.1 ms overhead),
        // the stations take turns: a's first 0-1.1, c's 1.1-2.2, a's 2.2-3.3, c's 3.3-4.4, each
        // at the AP 0.5 ms after; then the wan link (1 ms each, FIFO) and 10 ms.
        let want = [
            (0, 1, 12_600_000),
            (2, 1, 13_700_000),
            (0, 1, 14_800_000),
            (2, 1, 15_900_000),
        ];
        let offer = |r: &mut Router| {
            for port in [0, 0, 2, 2] {
                assert_eq!(
                    r.ingress(0, port, &ip([10, 0, 0, 2], 1500)),
                    Ingress::Queued
                );
            }
        };
        let mut exact = Router::new(&s);
        offer(&mut exact);
        assert!(!exact.is_empty());
        assert_eq!(
            exact.next_event_ns(),
            Some(1_100_000),
            "the first turn ends"
        );
        assert_eq!(times(&drain(&mut exact)), want);
        assert!(exact.is_empty() && exact.next_event_ns().is_none());
        assert_eq!(exact.lateness_all.max_ns(), 0);
        // A late driver (one call at 20 ms) gets the same packets, in the same order, at the
        // same model times; lateness is counted per lane.
        let mut late = Router::new(&s);
        offer(&mut late);
        let mut out = vec![];
        late.service(20_000_000, &mut out);
        assert_eq!(times(&out), want);
        assert_eq!(late.lateness_all.max_ns(), 20_000_000 - 12_600_000);
        let lane = |r: &Router, name: &str| r.lane_names.iter().position(|n| n == name).unwrap();
        assert_eq!(
            late.lane_names,
            ["wan", "wan.rev", "cell.a", "cell.c", "cell.ap"]
        );
        let (la, lc, ap) = (
            lane(&late, "cell.a"),
            lane(&late, "cell.c"),
            lane(&late, "cell.ap"),
        );
        assert_eq!(
            late.lane_counters[la].lateness.max_ns(),
            20_000_000 - 1_600_000
        );
        assert_eq!(late.lane_counters[lc].lateness.count(), 2);
        // Counted at the lane of the port a packet entered by.
        for (l, n) in [(la, 2), (lc, 2), (ap, 0), (0, 4)] {
            let c = &late.lane_counters[l];
            assert_eq!(
                (c.in_pkts, c.delivered_pkts, c.in_flight_pkts),
                (n, n, 0),
                "{l}"
            );
        }
        assert_eq!(late.lane_counters[la].max_queue_pkts, 2);
        assert_eq!(late.lane_stats(la).tx_bytes, 3000);
        // The channel's own count of delivered packets is at the port they left by.
        assert_eq!(late.lane_stats(ap).delivered_pkts, 4);
    }

    #[test]
    fn stations_sending_at_once_take_turns_on_the_channel() {
        let s = cell_spec(
            CELL,
            r#"[{"from": "a", "to": "b", "links": [{"medium": "cell", "from": 0, "to": 2}]},
                {"from": "c", "to": "b", "links": [{"medium": "cell", "from": 1, "to": 2}]}]"#,
        );
        let mut r = Router::new(&s);
        for port in [0, 0, 0, 0, 2, 2] {
            r.ingress(0, port, &ip([10, 0, 0, 2], 1500));
        }
        let got = times(&drain(&mut r));
        // a has 4 packets, c 2: one each per round while both have some, then a alone.
        let want: Vec<(usize, usize, u64)> = [0, 2, 0, 2, 0, 0]
            .iter()
            .enumerate()
            .map(|(k, &from)| (from, 1, (k as u64 + 1) * 1_100_000 + 500_000))
            .collect();
        assert_eq!(got, want);
        // The same channel built from (seed, medium name) and offered the same packets.
        let MediumModel::Shared(sp) = &s.media[0].model else {
            panic!("a shared channel")
        };
        let mut ch: SharedChannel<Pkt> = SharedChannel::new(sp.clone(), 3, rng::stream(3, "cell"));
        for from in [0, 0, 0, 0, 1, 1] {
            let p = Pkt {
                data: vec![0; 1500],
                route: 0,
                hop: 0,
                in_ns: 0,
            };
            ch.enqueue(0, from, 2, p).unwrap();
        }
        let mut direct = vec![];
        while let Some(t) = ch.next_event_ns() {
            while ch.pop_delivered(t).is_some() {
                direct.push((2, t));
            }
        }
        assert_eq!(direct, got.iter().map(|g| (2, g.2)).collect::<Vec<_>>());
    }

    #[test]
    fn packets_are_conserved_per_lane_through_links_and_media() {
        let s = cell_spec(
            r#"{"rate_bps": 6000000, "delay_ms": 1, "queue_pkts": 3, "overhead_us": 50,
                "loss_model": {"kind": "bernoulli", "p": 0.1}}"#,
            r#"[{"from": "a", "to": "b", "links": [{"medium": "cell", "from": 0, "to": 2}, "wan"]},
                {"from": "c", "to": "b", "links": [{"medium": "cell", "from": 1, "to": 2}, "wan"]},
                {"from": "b", "to": "a", "links": ["wan.rev", {"medium": "cell", "from": 2, "to": 0}]},
                {"from": "a", "to": "c", "links": [{"medium": "cell", "from": 0, "to": 2},
                                                   {"medium": "cell", "from": 2, "to": 1}]}]"#,
        );
        let mut r = Router::new(&s);
        let check = |r: &Router| {
            for l in 0..r.lanes() {
                let (c, st) = (&r.lane_counters[l], r.lane_stats(l));
                let drops = st.dropped_random_pkts
                    + st.dropped_queue_full_pkts
                    + st.dropped_aqm_pkts
                    + st.dropped_retry_pkts
                    + st.dropped_rlc_pkts;
                // The router's own count of the model's drops is the model's.
                assert_eq!(c.dropped_pkts, drops, "{}", r.lane_names[l]);
                assert_eq!(
                    c.in_pkts,
                    c.delivered_pkts + c.dropped_pkts + c.in_flight_pkts,
                    "{}",
                    r.lane_names[l]
                );
            }
        };
        let dsts = [[10, 0, 0, 2], [10, 0, 0, 1], [10, 0, 0, 2], [10, 0, 0, 3]];
        let (mut out, mut offered, mut refused) = (vec![], 0u64, 0u64);
        let mut inside_seen = false;
        for i in 0..3000u64 {
            let now = i * 1_000_000;
            let (port, dst) = match i % 4 {
                0 => (0, dsts[0]),
                1 => (1, dsts[1]),
                2 => (2, dsts[2]),
                _ => (0, dsts[3]),
            };
            match r.ingress(now, port, &ip(dst, 1000)) {
                Ingress::Queued => offered += 1,
                Ingress::Dropped(_) => refused += 1,
                other => panic!("{other:?}"),
            }
            if i % 7 == 0 {
                r.service(now, &mut out);
                check(&r);
                inside_seen |= (0..r.lanes()).any(|l| r.in_flight(l) > 0);
                let _ = r.lane_queue(now, 2 + (i as usize % 3));
            }
        }
        assert!(inside_seen && !r.is_empty());
        out.extend(drain(&mut r));
        check(&r);
        assert!(r.is_empty());
        assert!((0..r.lanes()).all(|l| r.in_flight(l) == 0));
        // Every packet offered came out or was dropped by some lane.
        let drops: u64 = (0..r.lanes())
            .map(|l| {
                let st = r.lane_stats(l);
                st.dropped_random_pkts + st.dropped_queue_full_pkts + st.dropped_aqm_pkts
            })
            .sum();
        assert_eq!(offered + refused, out.len() as u64 + drops);
        let cell = 2..5;
        let cell_drops: u64 = cell
            .clone()
            .map(|l| r.lane_stats(l).dropped_random_pkts)
            .sum();
        assert!(cell_drops > 50, "the air loses packets: {cell_drops}");
        assert!(
            cell.clone()
                .map(|l| r.lane_stats(l).dropped_queue_full_pkts)
                .sum::<u64>()
                > 0
        );
        // The medium's own delivered counts (at the port left by) add up to the router's (at
        // the port entered by) over the medium's lanes.
        let own: u64 = cell.clone().map(|l| r.lane_stats(l).delivered_pkts).sum();
        let ours: u64 = cell
            .clone()
            .map(|l| r.lane_counters[l].delivered_pkts)
            .sum();
        assert_eq!(own, ours);
        // Each route's packets come out in model-time order.
        for w in out.windows(2) {
            if (w[0].from_port, w[0].port) == (w[1].from_port, w[1].port) {
                assert!(w[0].model_ns <= w[1].model_ns);
            }
        }
        // The stats document: links then lanes, every entry with the same keys.
        let doc = crate::stats::stats_json(&r, 1.0, 0);
        let links = doc["links"].as_array().unwrap();
        let names: Vec<&str> = links.iter().map(|l| l["name"].as_str().unwrap()).collect();
        assert_eq!(names, ["wan", "wan.rev", "cell.a", "cell.c", "cell.ap"]);
        let keys =
            |v: &serde_json::Value| v.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
        assert!(links.iter().all(|l| keys(l) == keys(&links[0])));
        // A shared channel has no MAC: no `mac` object.
        assert!(links.iter().all(|l| l.get("mac").is_none()));
        for l in links {
            let n = |k: &str| l[k].as_u64().unwrap();
            assert_eq!(
                n("in_pkts"),
                n("delivered_pkts")
                    + n("dropped_random_pkts")
                    + n("dropped_queue_full_pkts")
                    + n("dropped_aqm_pkts")
                    + n("in_flight_pkts")
            );
        }
        assert!(
            links[4]["in_pkts"].as_u64().unwrap() > 0,
            "the AP lane carries b -> a and a -> c"
        );
    }

    #[test]
    fn sampling_a_lane_does_not_run_a_medium_ahead_of_its_packets() {
        let s = cell_spec(
            CELL,
            r#"[{"from": "b", "to": "a", "links": ["wan.rev", {"medium": "cell", "from": 2, "to": 0}]}]"#,
        );
        let mut r = Router::new(&s);
        r.ingress(0, 1, &ip([10, 0, 0, 1], 1500));
        // The loop samples the links series at 10.5 ms before it hands the router that time:
        // the packet reaches the cell at 10 ms all the same, and takes its turn then.
        assert_eq!(r.next_event_ns(), Some(10_000_000));
        for l in 0..r.lanes() {
            r.lane_queue(10_500_000, l);
        }
        let mut out = vec![];
        r.service(10_500_000, &mut out);
        out.extend(drain(&mut r));
        assert_eq!(times(&out), [(1, 0, 10_000_000 + 1_100_000 + 500_000)]);
    }
}
