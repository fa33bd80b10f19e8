//! The mesh chain against closed forms: one hop's saturated throughput from the airtimes, a
//! chain in one collision domain carrying 1, 1/2, 1/3 of it over 1, 2, 3 hops, and hidden
//! terminals colliding at the middle node where a layout within carrier sense does not.
//!
//! Figures are printed with `cargo test --release -p cclab-net --test mesh -- --nocapture`
//! (they are the ones in docs/mesh.md).

use cclab_net::mesh::{MeshChain, MeshSpec};
use cclab_net::*;

/// A packet and the node it is on its way to.
#[derive(Debug, Clone, Copy, PartialEq)]
struct P {
    id: u64,
    bytes: u32,
    /// The node it was last sent to (the driver's route).
    at: usize,
}
impl NetPacket for P {
    fn wire_bytes(&self) -> u32 {
        self.bytes
    }
}

const PAYLOAD_BYTES: u32 = 1500;

/// Node 0 always has frames for node 1; every node k < `hops` forwards what it receives to
/// k + 1 (static routes, zero-time forwarding). Returns the bits per second arriving at node
/// `hops` over `seconds`, and the chain.
fn chain_run(
    spec: MeshSpec,
    nodes: usize,
    hops: usize,
    seconds: u64,
    seed: u64,
) -> (f64, MeshChain<P>) {
    spec.validate("mesh", nodes).unwrap();
    let mut c: MeshChain<P> = MeshChain::new(spec, nodes, rng::stream(seed, "mesh"));
    let end_ns = seconds * NS_PER_S;
    let mut id = 0;
    let mut bytes_at_end = 0u64;
    let mut t = 0;
    loop {
        // Keep the source backlogged (its queue never empties between events).
        while c.queue_pkts(t, 0) < 64 {
            id += 1;
            let p = P {
                id,
                bytes: PAYLOAD_BYTES,
                at: 1,
            };
            c.enqueue(t, 0, 1, p).unwrap();
        }
        while let Some(mut p) = c.pop_delivered(t) {
            if p.at == hops {
                bytes_at_end += u64::from(p.bytes);
            } else {
                let from = p.at;
                p.at += 1;
                c.enqueue(t, from, from + 1, p).unwrap();
            }
        }
        while c.pop_dropped().is_some() {}
        match c.next_event_ns() {
            Some(n) if n <= end_ns => t = n,
            _ => break,
        }
    }
    (bytes_at_end as f64 * 8.0 / seconds as f64, c)
}

/// One saturated sender's cycle: DIFS, the mean backoff CWmin / 2 slots, the data frame (or
/// A-MPDU of `per_access` frames), SIFS, Ack (or BlockAck); bits per second of packets.
fn one_hop_closed_form_bps(spec: &MeshSpec, per_access: u32) -> f64 {
    let p = spec.params(2);
    let mpdu = p.mpdu_bytes(PAYLOAD_BYTES);
    let (data_ns, resp_ns) = if p.ampdu.is_some() {
        let psdu = per_access * mesh::ht::ampdu_subframe_bytes(mpdu);
        (p.ppdu_ns(psdu), p.block_ack_ns)
    } else {
        (p.ppdu_ns(mpdu), p.ack_ns)
    };
    let cycle_ns = p.difs_ns as f64
        + f64::from(p.cw_min) / 2.0 * p.slot_ns as f64
        + data_ns as f64
        + p.sifs_ns as f64
        + resp_ns as f64;
    f64::from(per_access) * f64::from(PAYLOAD_BYTES) * 8.0 / (cycle_ns * 1e-9)
}

#[test]
fn one_hop_saturated_throughput_is_the_airtime_closed_form() {
    // 2.4 GHz, HT40 MCS 11, long GI, 1500 B: DIFS 28 + 7.5 x 9 + DATA 156 + 6 (extension) +
    // SIFS 10 + Ack 34 = 301.5 µs per frame: 39.80 Mbit/s. With A-MPDUs of 42 frames (65535 B
    // / 1556 B): DATA 40 + 4 x ceil(523,174 / 432) + 6 = 4894 µs, BlockAck 38 µs. On 5 GHz
    // (SIFS 16, no extension, DIFS 34, Ack 28) the cycle is the same 301.5 µs.
    for (name, spec, per_access) in [
        ("no aggregation", MeshSpec::default(), 1),
        (
            "A-MPDU 64 KB",
            MeshSpec {
                ampdu: true,
                ..MeshSpec::default()
            },
            42,
        ),
        (
            "A-MPDU 16 frames",
            MeshSpec {
                ampdu: true,
                ampdu_max_frames: 16,
                ..MeshSpec::default()
            },
            16,
        ),
        (
            "MCS 7 short GI",
            MeshSpec {
                mcs: 7,
                guard_interval_ns: 400,
                ..MeshSpec::default()
            },
            1,
        ),
        (
            "5 GHz, A-MPDU 64 KB",
            MeshSpec {
                band_ghz: 5.0,
                ampdu: true,
                ..MeshSpec::default()
            },
            42,
        ),
    ] {
        let (sim, c) = chain_run(spec.clone(), 2, 1, 20, 1);
        let cf = one_hop_closed_form_bps(&spec, per_access);
        let err = sim / cf - 1.0;
        println!(
            "one hop, {name}: simulated {:.3} Mbit/s, closed form {:.3} Mbit/s ({:+.2} %)",
            sim / 1e6,
            cf / 1e6,
            100.0 * err
        );
        assert!(err.abs() < 0.03, "{name}: {sim} vs {cf}");
        let m = c.station_stats(0);
        assert_eq!(m.collisions + m.frame_errors, 0, "{name}: a clean hop");
    }
    assert!((one_hop_closed_form_bps(&MeshSpec::default(), 1) / 1e6 - 39.80).abs() < 0.01);
}

#[test]
fn a_chain_in_one_collision_domain_carries_one_over_hops() {
    // Five nodes 1 m apart in the anechoic room: every node senses every other (-36 dBm at 4 m),
    // SNR above 50 dB. Node 0's traffic crosses 1, 2, 3 hops.
    let spec = MeshSpec::default();
    let (one, c) = chain_run(spec.clone(), 5, 1, 20, 1);
    for a in 0..5 {
        for b in 0..5 {
            assert!(a == b || c.senses(a, b));
        }
    }
    for hops in [2, 3, 4] {
        let (g, c) = chain_run(spec.clone(), 5, hops, 20, 1);
        let ratio = g / one;
        let coll: u64 = (0..5).map(|k| c.station_stats(k).collisions).sum();
        let att: u64 = (0..5).map(|k| c.station_stats(k).attempts).sum();
        println!(
            "{hops} hops: {:.3} Mbit/s = {:.4} of one hop ({:.3} Mbit/s) x {hops}; collisions per attempt {:.3}",
            g / 1e6,
            ratio * hops as f64,
            one / 1e6,
            coll as f64 / att as f64
        );
        if hops <= 3 {
            assert!(
                (ratio * hops as f64 - 1.0).abs() < 0.05,
                "{hops} hops: {ratio}"
            );
        }
        let hidden: u64 = (0..5).map(|k| c.station_stats(k).hidden_collisions).sum();
        assert_eq!(hidden, 0);
    }
}

/// Nodes 0 and 2 both saturate node 1 (two 1-hop flows into the middle), `spacing_m` apart
/// on 5 GHz at MCS 0 with exponent 3 (40 m: the ends do not sense each other; 10 m: they do).
fn into_the_middle(spacing_m: f64) -> (f64, MeshChain<P>) {
    let spec = MeshSpec {
        mcs: 0,
        band_ghz: 5.0,
        spacing_m,
        path_loss_exponent: Some(3.0),
        ..MeshSpec::default()
    };
    spec.validate("mesh", 3).unwrap();
    let mut c: MeshChain<P> = MeshChain::new(spec, 3, rng::stream(1, "mesh"));
    let end_ns = 20 * NS_PER_S;
    let (mut id, mut bytes, mut t) = (0, 0u64, 0);
    loop {
        for s in [0, 2] {
            while c.queue_pkts(t, s) < 8 {
                id += 1;
                c.enqueue(
                    t,
                    s,
                    1,
                    P {
                        id,
                        bytes: PAYLOAD_BYTES,
                        at: 1,
                    },
                )
                .unwrap();
            }
        }
        while let Some(p) = c.pop_delivered(t) {
            bytes += u64::from(p.bytes);
        }
        while c.pop_dropped().is_some() {}
        match c.next_event_ns() {
            Some(n) if n <= end_ns => t = n,
            _ => break,
        }
    }
    (bytes as f64 * 8.0 / 20.0, c)
}

#[test]
fn hidden_terminals_collide_at_the_middle_node() {
    let (hidden_bps, h) = into_the_middle(40.0);
    let (sensed_bps, s) = into_the_middle(10.0);
    assert!(!h.senses(0, 2) && s.senses(0, 2));
    let sum = |c: &MeshChain<P>, f: fn(&mesh::MeshStationStats) -> u64| {
        f(c.station_stats(0)) + f(c.station_stats(2))
    };
    let (h_att, h_coll, h_hidden) = (
        sum(&h, |m| m.attempts),
        sum(&h, |m| m.collisions),
        sum(&h, |m| m.hidden_collisions),
    );
    let (s_att, s_coll, s_hidden) = (
        sum(&s, |m| m.attempts),
        sum(&s, |m| m.collisions),
        sum(&s, |m| m.hidden_collisions),
    );
    println!(
        "hidden (40 m): {:.3} Mbit/s, {h_att} attempts, {h_coll} collisions ({h_hidden} hidden), residual loss {:.3}",
        hidden_bps / 1e6,
        h.station_stats(0).residual_loss().unwrap_or(0.0)
    );
    println!(
        "within carrier sense (10 m): {:.3} Mbit/s, {s_att} attempts, {s_coll} collisions ({s_hidden} hidden), residual loss {:.3}",
        sensed_bps / 1e6,
        s.station_stats(0).residual_loss().unwrap_or(0.0)
    );
    // Within carrier sense: only same-slot collisions (Bianchi's two stations: ~ 0.1 per
    // attempt), none hidden. Hidden: most attempts collide, all of them hidden.
    assert_eq!(s_hidden, 0);
    assert!((s_coll as f64 / s_att as f64) < 0.15);
    assert!(h_hidden as f64 / h_att as f64 > 0.3, "{h_hidden} / {h_att}");
    // (A few collisions are with the middle node's own Ack to the other end: not hidden.)
    assert!(
        h_hidden as f64 >= 0.99 * h_coll as f64,
        "{h_hidden} of {h_coll}"
    );
    assert!(hidden_bps < 0.7 * sensed_bps);
    assert!(h.station_stats(0).retry_drops > 0 && s.station_stats(0).retry_drops == 0);
}

#[test]
fn the_same_seed_gives_the_same_run() {
    let spec = MeshSpec {
        environment: mesh::Environment::Campus,
        ampdu: true,
        ..MeshSpec::default()
    };
    let a = chain_run(spec.clone(), 5, 4, 3, 7);
    let b = chain_run(spec.clone(), 5, 4, 3, 7);
    let c = chain_run(spec, 5, 4, 3, 8);
    assert_eq!(a.0, b.0);
    assert_eq!(*a.1.station_stats(2), *b.1.station_stats(2));
    assert_ne!(*a.1.station_stats(2), *c.1.station_stats(2));
}

/// `n` saturated senders (nodes 1..=n) to a silent node 0 for `seconds`, driven through the
/// `Medium` trait: delivery times, and collisions per attempt.
fn saturate_into_zero(m: &mut dyn Medium<P>, n: usize, seconds: u64) -> Vec<u64> {
    let end_ns = seconds * NS_PER_S;
    let (mut id, mut t, mut times) = (0, 0, vec![]);
    loop {
        for s in 1..=n {
            while m.queue_pkts(t, s) < 2 {
                id += 1;
                m.enqueue(
                    t,
                    s,
                    0,
                    P {
                        id,
                        bytes: PAYLOAD_BYTES,
                        at: 0,
                    },
                )
                .unwrap();
            }
        }
        while m.pop_delivered(t).is_some() {
            times.push(t);
        }
        match m.next_event_ns() {
            Some(x) if x <= end_ns => t = x,
            _ => break,
        }
    }
    times
}

#[test]
fn in_one_collision_domain_the_chain_is_the_dcf_cell() {
    // The same PHY on both: HT MCS 7, 20 MHz, long GI, 5 GHz (SIFS 16 µs, no signal
    // extension), 38 B of MAC overhead, Ack at 24 Mbit/s, AckTimeout 45 µs; retry limit 1000
    // (Bianchi's setting). Nodes 1 m apart: everyone senses everyone.
    let dcf = DcfSpec {
        standard: dcf::Standard::Dot11n,
        ht_mcs: Some(7),
        sifs_us: Some(16.0),
        signal_extension_us: Some(0.0),
        retry_limit: 1000,
        ..DcfSpec::default()
    };
    let mesh = MeshSpec {
        mcs: 7,
        channel_width_mhz: 20,
        band_ghz: 5.0,
        mac_overhead_bytes: 38,
        retry_limit: 1000,
        ..MeshSpec::default()
    };
    for n in [1, 2, 5, 10] {
        let mut cell: DcfCell<P> = DcfCell::new(dcf.clone(), n + 1, rng::stream(1, "m"));
        let mut chain: MeshChain<P> = MeshChain::new(mesh.clone(), n + 1, rng::stream(1, "m"));
        let a = saturate_into_zero(&mut cell, n, 20);
        let b = saturate_into_zero(&mut chain, n, 20);
        let p_cell = (1..=n)
            .map(|s| cell.station_stats(s).collisions)
            .sum::<u64>() as f64
            / (1..=n).map(|s| cell.station_stats(s).attempts).sum::<u64>() as f64;
        let p_mesh = (1..=n)
            .map(|s| chain.station_stats(s).collisions)
            .sum::<u64>() as f64
            / (1..=n)
                .map(|s| chain.station_stats(s).attempts)
                .sum::<u64>() as f64;
        let err = b.len() as f64 / a.len() as f64 - 1.0;
        println!(
            "{n} senders: DCF cell {} frames (p {p_cell:.4}), mesh {} ({:+.2} %, p {p_mesh:.4})",
            a.len(),
            b.len(),
            100.0 * err
        );
        if n <= 5 {
            // The same backoff draws from the same stream, the same delivery times: nodes up
            // to 5 m away from node 0 have error rates below 2^-53 (no draw is taken) and a
            // collision is a certain loss (no draw either), as in the cell.
            assert_eq!(a, b, "{n} senders");
        }
        // At 10 m the error rate is ~1e-12: the chain draws, and its stream moves apart.
        assert!(err.abs() < 0.01, "{n}: {err}");
        assert!((p_mesh - p_cell).abs() < 0.01, "{n}: {p_mesh} vs {p_cell}");
    }
}
