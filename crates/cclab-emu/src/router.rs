//! The emulator's core, without I/O: packets come in from a port at `now`, are routed by
//! their IPv4 destination through the route's chain of cclab-net links, and come out at a port
//! when the model says. Time is passed in (ns since start); the driver (`emu.rs`) reads the
//! clock, the TUNs and the timer. Unit-tested without root.

use crate::spec::Spec;
use crate::stats::{Histogram, LinkCounters, PortCounters};
use cclab_net::link::{DropReason, Link};
use cclab_net::{rng, NetPacket};
use std::collections::HashMap;
use std::net::Ipv4Addr;

/// An IP packet inside the emulator.
#[derive(Debug)]
pub struct Pkt {
    /// The IP packet, exactly as read from the TUN (IFF_NO_PI: no extra header).
    pub data: Vec<u8>,
    /// Index of its route.
    route: u32,
    /// Index, in the route, of the link it is in.
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
}

/// What happened to a packet offered at ingress.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ingress {
    /// In the first link of its route.
    Queued,
    /// Dropped by the link's loss model or its full queue.
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

/// Links, routes and counters.
pub struct Router {
    pub links: Vec<Link<Pkt>>,
    pub link_names: Vec<String>,
    pub link_counters: Vec<LinkCounters>,
    pub port_names: Vec<String>,
    pub port_counters: Vec<PortCounters>,
    routes: Vec<(usize, usize, Vec<usize>)>,
    /// routes index of (from, to), at from * nports + to.
    route_of: Vec<Option<u32>>,
    addr_port: HashMap<Ipv4Addr, usize>,
    /// Lateness of every delivered packet, all links.
    pub lateness_all: Histogram,
    free: Vec<Vec<u8>>,
}

impl Router {
    /// The links of `spec`, each with its random stream from (seed, link name), as in the
    /// simulator (crates/cclab-sim/src/world.rs).
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
        Router {
            links: spec
                .links
                .iter()
                .map(|l| Link::new(l.config.clone(), rng::stream(spec.seed, &l.name)))
                .collect(),
            link_names: spec.links.iter().map(|l| l.name.clone()).collect(),
            link_counters: vec![LinkCounters::default(); spec.links.len()],
            port_names: spec.ports.iter().map(|p| p.name.clone()).collect(),
            port_counters: vec![PortCounters::default(); n],
            routes: spec
                .routes
                .iter()
                .map(|r| (r.from, r.to, r.links.clone()))
                .collect(),
            route_of,
            addr_port,
            lateness_all: Histogram::default(),
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
        let route = self
            .addr_port
            .get(&dst)
            .and_then(|&to| self.route_of[port * n + to]);
        let Some(route) = route else {
            pc.dropped_no_route_pkts += 1;
            return Ingress::NoRoute;
        };
        let pkt = Pkt {
            data: self.buffer(data),
            route,
            hop: 0,
            in_ns: now_ns,
        };
        self.offer(now_ns, pkt)
    }

    /// Offer `pkt` to the link of its current hop at `t_ns`.
    fn offer(&mut self, t_ns: u64, pkt: Pkt) -> Ingress {
        let l = self.routes[pkt.route as usize].2[pkt.hop as usize];
        let bytes = pkt.data.len() as u64;
        let c = &mut self.link_counters[l];
        c.in_pkts += 1;
        c.in_bytes += bytes;
        match self.links[l].enqueue(t_ns, pkt) {
            Ok(()) => {
                self.recycle_aqm_drops(l);
                let q = self.links[l].queue_pkts(t_ns);
                let qb = self.links[l].queue_bytes(t_ns);
                let c = &mut self.link_counters[l];
                c.max_queue_pkts = c.max_queue_pkts.max(q);
                c.max_queue_bytes = c.max_queue_bytes.max(qb);
                Ingress::Queued
            }
            Err(d) => {
                self.recycle(d.pkt.data);
                self.recycle_aqm_drops(l);
                Ingress::Dropped(d.reason)
            }
        }
    }

    /// Give back the buffers of packets link `l`'s AQM dropped from its queue (counted in its
    /// stats already).
    fn recycle_aqm_drops(&mut self, l: usize) {
        while let Some((_, d)) = self.links[l].pop_dropped() {
            self.recycle(d.pkt.data);
        }
    }

    /// When the model next hands a packet out of any link, ns since start.
    pub fn next_event_ns(&self) -> Option<u64> {
        self.links.iter().filter_map(|l| l.next_arrival_ns()).min()
    }

    /// Move every packet the model hands out by `now_ns`, in order of model time: onto the
    /// next link of its route (offered at its model arrival time), or into `out` when it
    /// reached its last link. Lateness (`now_ns` minus model time) is recorded per link.
    pub fn service(&mut self, now_ns: u64, out: &mut Vec<Out>) {
        loop {
            // The link whose head packet arrives first (few links: a scan is cheapest).
            let mut best: Option<(u64, usize)> = None;
            for (i, l) in self.links.iter().enumerate() {
                if let Some(t) = l.next_arrival_ns() {
                    if t <= now_ns && best.is_none_or(|(bt, _)| t < bt) {
                        best = Some((t, i));
                    }
                }
            }
            let Some((t, l)) = best else { return };
            let popped = self.links[l].pop_arrived(t);
            self.recycle_aqm_drops(l);
            let Some(mut pkt) = popped else {
                return;
            };
            let late = now_ns - t;
            self.link_counters[l].lateness.record(late);
            let (_, to, ref links) = self.routes[pkt.route as usize];
            let from = self.routes[pkt.route as usize].0;
            if (pkt.hop as usize) + 1 < links.len() {
                pkt.hop += 1;
                self.offer(t, pkt);
            } else {
                self.lateness_all.record(late);
                out.push(Out {
                    port: to,
                    from_port: from,
                    pkt,
                    model_ns: t,
                });
            }
        }
    }

    /// Packets still inside link `l` (queued or propagating).
    pub fn in_flight(&self, l: usize) -> u64 {
        self.links[l].len() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::Spec;

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
        assert_eq!(r.link_counters[0].max_queue_pkts, 3);
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
        assert_eq!(r.link_counters[1].in_pkts, 2);
        assert_eq!(r.links[1].stats().delivered_pkts, 2);
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
        let c = r.link_counters[0];
        let st = *r.links[0].stats();
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
}
