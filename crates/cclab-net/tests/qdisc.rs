//! Queue disciplines on a link (RED, CoDel, FQ-CoDel, PIE), driven as the simulator drives a
//! link: wake at `next_arrival_ns`, offer packets at their times, collect `pop_dropped` after
//! every call.

use cclab_net::*;
use std::collections::HashMap;

#[derive(Debug, Clone, Copy, PartialEq)]
struct Pk {
    id: u32,
    flow: u64,
    bytes: u32,
    sent_ns: u64,
    ecn: Ecn,
}
impl NetPacket for Pk {
    fn wire_bytes(&self) -> u32 {
        self.bytes
    }
    fn ecn(&self) -> Ecn {
        self.ecn
    }
    fn set_ce(&mut self) {
        self.ecn = Ecn::Ce;
    }
    fn flow_hash(&self) -> u64 {
        self.flow
    }
}

const MS: u64 = NS_PER_MS;

/// A constant-bit-rate source: `bytes`-byte packets of `flow` at `rate_bps` over [start, end).
fn cbr(flow: u64, bytes: u32, rate_bps: u64, start_ns: u64, end_ns: u64) -> Vec<Pk> {
    let gap = u64::from(bytes) * 8 * NS_PER_S / rate_bps;
    (0..)
        .map(|k| start_ns + k * gap)
        .take_while(|&t| t < end_ns)
        .map(|t| Pk {
            id: 0,
            flow,
            bytes,
            sent_ns: t,
            ecn: Ecn::NotEct,
        })
        .collect()
}

/// Sources merged in time order, numbered.
fn merge(mut v: Vec<Pk>) -> Vec<Pk> {
    v.sort_by_key(|p| (p.sent_ns, p.flow));
    for (i, p) in v.iter_mut().enumerate() {
        p.id = i as u32;
    }
    v
}

#[derive(Default, Debug)]
struct Run {
    /// (model arrival time, packet).
    delivered: Vec<(u64, Pk)>,
    /// (time, packet, reason): refused at enqueue or dropped from the queue.
    dropped: Vec<(u64, Pk, DropReason)>,
    /// How many of `dropped` came from `pop_dropped`.
    dequeue_drops: u64,
}

/// Drive `l` exactly as the simulator's event loop does, until `end_ns`, checking at every
/// step that packets are conserved.
fn run(l: &mut Link<Pk>, src: &[Pk], end_ns: u64) -> Run {
    let mut r = Run::default();
    let mut i = 0;
    loop {
        let ts = src.get(i).map(|p| p.sent_ns);
        let tl = l.next_arrival_ns();
        let Some(t) = [ts, tl].into_iter().flatten().min() else {
            break;
        };
        if t > end_ns {
            break;
        }
        if tl == Some(t) {
            while let Some(p) = l.pop_arrived(t) {
                r.delivered.push((t, p));
            }
        } else {
            if let Err(d) = l.enqueue(t, src[i]) {
                r.dropped.push((t, d.pkt, d.reason));
            }
            i += 1;
        }
        while let Some((td, d)) = l.pop_dropped() {
            assert_eq!(d.reason, DropReason::Aqm);
            assert!(td <= t, "a drop is reported once it happened");
            r.dropped.push((td, d.pkt, d.reason));
            r.dequeue_drops += 1;
        }
        let s = *l.stats();
        assert_eq!(
            i as u64,
            r.delivered.len() as u64 + r.dropped.len() as u64 + l.len() as u64
        );
        assert_eq!(
            s.enqueued_pkts,
            r.delivered.len() as u64 + r.dequeue_drops + l.len() as u64
        );
        assert_eq!(
            s.dropped_random_pkts + s.dropped_queue_full_pkts + s.dropped_aqm_pkts,
            r.dropped.len() as u64
        );
    }
    r
}

fn link(rate_bps: u64, qdisc: QdiscConfig) -> Link<Pk> {
    let cfg = LinkConfig {
        capacity: Some(Capacity::Rate { rate_bps }),
        delay_ns: 10 * MS,
        qdisc,
        ..LinkConfig::default()
    };
    cfg.validate().unwrap();
    Link::new(cfg, rng::stream(1, "bottleneck.fwd"))
}

fn codel(target_ms: f64, limit_pkts: u32) -> QdiscConfig {
    QdiscConfig::Codel {
        target_ms,
        interval_ms: 100.0,
        limit_pkts,
        ecn: false,
        ce_threshold_ms: None,
    }
}

/// Time each delivered packet waited in the queue: arrival - delay - transmission - sent.
fn sojourns_ms(r: &Run, rate_bps: u64, from_ns: u64) -> Vec<f64> {
    let mut v: Vec<f64> = r
        .delivered
        .iter()
        .filter(|(_, p)| p.sent_ns >= from_ns)
        .map(|(t, p)| {
            let tx = u64::from(p.bytes) * 8 * NS_PER_S / rate_bps;
            (t - 10 * MS - tx - p.sent_ns) as f64 / 1e6
        })
        .collect();
    v.sort_by(f64::total_cmp);
    v
}

fn median(v: &[f64]) -> f64 {
    v[v.len() / 2]
}

fn fq_codel(target_ms: f64, limit_pkts: u32) -> QdiscConfig {
    QdiscConfig::FqCodel {
        target_ms,
        interval_ms: 100.0,
        limit_pkts,
        flows: 1024,
        quantum_bytes: 1514,
        memory_limit_bytes: 32 << 20,
        ecn: true,
        drop_batch_pkts: 64,
        ce_threshold_ms: None,
    }
}

fn pie() -> QdiscConfig {
    serde_json::from_str(r#"{"kind": "pie"}"#).unwrap()
}

/// codel.h's reciprocal square root, written out again: Q0.16, one Newton step per count.
fn newton(rec: u16, count: u32) -> u16 {
    let inv = u64::from(rec) << 16;
    let inv2 = (inv * inv) >> 32;
    let val = ((3u64 << 32).wrapping_sub(u64::from(count) * inv2) >> 2).wrapping_mul(inv) >> 31;
    (val >> 16) as u16
}

#[test]
fn codel_drop_spacing_follows_the_control_law() {
    // 2x overload of a 100 Mbit/s link (80 us per packet), no limit in the way: once CoDel
    // starts dropping it never stops, and the k-th drop comes interval / sqrt(k - 1) after the
    // previous one's scheduled time.
    let rate = 100_000_000;
    let src = merge(cbr(1, 1000, 2 * rate, 0, 3 * NS_PER_S));
    let mut l = link(rate, codel(5.0, 1_000_000));
    let r = run(&mut l, &src, 3 * NS_PER_S);
    let drops: Vec<u64> = r.dropped.iter().map(|d| d.0).collect();
    assert_eq!(
        r.dequeue_drops as usize,
        drops.len(),
        "CoDel drops at dequeue only"
    );
    assert!(drops.len() > 150, "{} drops", drops.len());
    // The packet dequeued at t waited t/2: the sojourn passes 5 ms at 10 ms, and the first
    // drop comes at the first dequeue after an interval more.
    assert!(
        (110 * MS..110 * MS + 81_000).contains(&drops[0]),
        "first drop at {}",
        drops[0]
    );
    // Scheduled drop times in codel_time_t (1024 ns): D1 = the first drop, then
    // D(k+1) = D(k) + reciprocal_scale(interval, rec(k) << 16).
    let interval = (100_000u64 * 1000) >> 10;
    let (mut rec, mut sched) = (0xffffu16, drops[0] >> 10);
    for (k, &t) in drops.iter().enumerate().skip(1) {
        let count = k as u32; // count before this drop
        if count > 1 {
            rec = newton(rec, count);
        }
        sched += (interval * (u64::from(rec) << 16)) >> 32;
        // A drop happens at the first dequeue (every 80 us) at or after its scheduled time.
        let late = (t >> 10) as i64 - sched as i64;
        assert!(
            (0..=80).contains(&late),
            "drop {k}: {late} units after its schedule"
        );
        // And the spacing is interval / sqrt(count) within the Q0.16 approximation and the
        // dequeue granularity (rec(2) = 0.5 rather than 0.707: one Newton step from 1.0).
        if count >= 10 {
            let want = 0.1 / f64::from(count).sqrt();
            let got = (t - drops[k - 1]) as f64 / 1e9;
            assert!(
                (got - want).abs() < 0.01 * want + 170e-6,
                "drop {k}: {got} vs {want}"
            );
        }
    }
}

#[test]
fn codel_drops_nothing_while_the_sojourn_stays_below_target() {
    let rate = 10_000_000; // 1000 B = 0.8 ms
                           // Bursts of 6 packets every 10 ms (4.8 Mbit/s): the last waits 4 ms, under 5 ms.
    let mut v = vec![];
    for b in 0..1000u64 {
        v.extend(cbr(
            1,
            1000,
            1_000_000_000,
            b * 10 * MS,
            b * 10 * MS + 48_000,
        ));
    }
    // Above target for less than an interval is no reason to drop either: 40 packets every
    // second (32 ms of queue, above 5 ms for ~27 ms).
    for b in 0..10u64 {
        v.extend(cbr(
            2,
            1000,
            1_000_000_000,
            b * NS_PER_S + 5 * MS,
            b * NS_PER_S + 5 * MS + 320_000,
        ));
    }
    let src = merge(v);
    let mut l = link(rate, codel(5.0, 1000));
    let r = run(&mut l, &src, 20 * NS_PER_S);
    assert!(r.dropped.is_empty(), "{} drops", r.dropped.len());
    assert_eq!(r.delivered.len(), src.len());
    let s = sojourns_ms(&r, rate, 0);
    assert!(*s.last().unwrap() > 20.0, "the long bursts did queue");
}

#[test]
fn codel_holds_a_standing_queue_near_target() {
    // An unresponsive source 2 % and 5 % faster than a 10 Mbit/s link: drop-tail would fill its
    // buffer (1000 packets, 0.8 s); CoDel holds the sojourn near its 5 ms target, dropping about
    // the excess. (At 10 % it settles near 35 ms: the sqrt control law needs a long episode to
    // reach the drop rate of a large unresponsive excess.)
    let rate = 10_000_000;
    for (load, max_median) in [(10_200_000, 7.5), (10_500_000, 10.0)] {
        let src = merge(cbr(1, 1000, load, 0, 40 * NS_PER_S));
        let mut l = link(rate, codel(5.0, 1000));
        let r = run(&mut l, &src, 41 * NS_PER_S);
        let s = sojourns_ms(&r, rate, 10 * NS_PER_S);
        let (med, p90) = (median(&s), s[s.len() * 9 / 10]);
        assert!(
            (5.0..max_median).contains(&med),
            "load {load}: median {med} ms"
        );
        assert!(p90 < 2.5 * 5.0, "load {load}: p90 {p90} ms");
        let excess = 1.0 - rate as f64 / load as f64;
        let frac = r.dropped.len() as f64 / src.len() as f64;
        assert!(
            frac > 0.9 * excess && frac < excess * 1.5,
            "load {load}: dropped {frac}"
        );
        assert_eq!(l.stats().dropped_aqm_pkts, r.dropped.len() as u64);
    }
}

#[test]
fn codel_marks_ect_packets_instead_of_dropping() {
    let rate = 10_000_000;
    let mut src = merge(cbr(1, 1000, 10_500_000, 0, 20 * NS_PER_S));
    for p in &mut src {
        p.ecn = Ecn::Ect0;
    }
    let mut l = link(
        rate,
        QdiscConfig::Codel {
            target_ms: 5.0,
            interval_ms: 100.0,
            limit_pkts: 1000,
            ecn: true,
            ce_threshold_ms: None,
        },
    );
    let r = run(&mut l, &src, 21 * NS_PER_S);
    let ce = r.delivered.iter().filter(|(_, p)| p.ecn == Ecn::Ce).count() as u64;
    assert!(ce > 100, "{ce} marks");
    assert_eq!(l.stats().ce_marks, ce);
    // Marking does not shrink an unresponsive queue: it reaches the limit, which drops.
    assert!(r.dropped.iter().all(|d| d.2 == DropReason::Aqm));
    assert_eq!(r.dequeue_drops, 0, "no early drop of an ECT packet");
}

#[test]
fn fq_codel_shares_bytes_equally_between_backlogged_flows() {
    // Flow 1 sends 3x what flow 2 sends, both above half the link: each gets half.
    let rate = 10_000_000;
    let src = merge(
        [
            cbr(1, 1000, 18_000_000, 0, 20 * NS_PER_S),
            cbr(2, 1000, 6_000_000, 0, 20 * NS_PER_S),
        ]
        .concat(),
    );
    let mut l = link(rate, fq_codel(5.0, 10_240));
    let r = run(&mut l, &src, 21 * NS_PER_S);
    let mut by: HashMap<u64, u64> = HashMap::new();
    for (t, p) in &r.delivered {
        if (2 * NS_PER_S..20 * NS_PER_S).contains(t) {
            *by.entry(p.flow).or_default() += u64::from(p.bytes);
        }
    }
    let (a, b) = (by[&1] as f64, by[&2] as f64);
    assert!((a / b - 1.0).abs() < 0.03, "flow 1 {a} B, flow 2 {b} B");
    assert!(
        (a + b) / 18.0 > 0.99 * rate as f64 / 8.0,
        "the link stays busy"
    );
    // Flow 2's excess (1 Mbit/s) and flow 1's (13 Mbit/s) are dropped by their own CoDel.
    let d2 = r.dropped.iter().filter(|d| d.1.flow == 2).count() as f64;
    let d1 = r.dropped.iter().filter(|d| d.1.flow == 1).count() as f64;
    assert!(d1 > 8.0 * d2 && d2 > 0.0, "drops flow 1 {d1}, flow 2 {d2}");
}

#[test]
fn fq_codel_lets_a_sparse_flow_skip_ahead_of_a_bulk_one() {
    let rate = 10_000_000;
    let mut v = cbr(1, 1000, 20_000_000, 0, 5 * NS_PER_S);
    v.extend(cbr(2, 100, 16_000, 3 * MS, 5 * NS_PER_S)); // one 100 B packet per 50 ms
    let src = merge(v);
    let mut l = link(rate, fq_codel(5.0, 10_240));
    let r = run(&mut l, &src, 6 * NS_PER_S);
    let wait = |flow: u64| {
        let d: Vec<(u64, Pk)> = r
            .delivered
            .iter()
            .filter(|(_, p)| p.flow == flow)
            .copied()
            .collect();
        sojourns_ms(
            &Run {
                delivered: d,
                ..Run::default()
            },
            rate,
            NS_PER_S,
        )
    };
    let (bulk, sparse) = (wait(1), wait(2));
    assert_eq!(sparse.len(), 80, "every sparse packet after 1 s delivered");
    // A new flow goes first: it waits at most for the bulk packet being sent (0.8 ms).
    assert!(
        *sparse.last().unwrap() <= 0.81,
        "sparse waits up to {} ms",
        sparse.last().unwrap()
    );
    assert!(median(&bulk) > 20.0, "bulk median {} ms", median(&bulk));
}

#[test]
fn fq_codel_overlimit_drops_come_from_the_fattest_flow() {
    // A 100-packet limit, CoDel out of the way (1 s target): flow 1 floods at 3x the link,
    // flow 2 sends a third of it; only flow 1 loses packets, in batches from its head.
    let rate = 10_000_000;
    let src = merge(
        [
            cbr(1, 1000, 30_000_000, 0, 2 * NS_PER_S),
            cbr(2, 1000, 3_000_000, 0, 2 * NS_PER_S),
        ]
        .concat(),
    );
    let mut l = link(rate, fq_codel(1000.0, 100));
    let r = run(&mut l, &src, 3 * NS_PER_S);
    assert!(r.dropped.len() > 1000);
    assert!(r
        .dropped
        .iter()
        .all(|d| d.1.flow == 1 && d.2 == DropReason::Aqm));
    assert!(r.dequeue_drops > 0, "batches drop packets already queued");
    let sent2 = src.iter().filter(|p| p.flow == 2).count();
    assert_eq!(
        r.delivered.iter().filter(|(_, p)| p.flow == 2).count(),
        sent2
    );
    // Head drops: a batch takes the oldest packets of the flow, so within a batch (same time)
    // the ids rise and the offered packet, the newest, survives.
    let first_t = r.dropped[0].0;
    let batch: Vec<u32> = r
        .dropped
        .iter()
        .filter(|d| d.0 == first_t)
        .map(|d| d.1.id)
        .collect();
    assert!(
        batch.len() > 1 && batch.windows(2).all(|w| w[0] < w[1]),
        "{batch:?}"
    );
}

#[test]
fn pie_probability_rises_above_target_and_decays_below() {
    // 1.2x the link for 20 s, then half of it for 5 s.
    let rate = 10_000_000;
    let src = merge(
        [
            cbr(1, 1000, 12_000_000, 0, 20 * NS_PER_S),
            cbr(1, 1000, 5_000_000, 20 * NS_PER_S, 25 * NS_PER_S),
        ]
        .concat(),
    );
    let mut l = link(rate, pie());
    let r = run(&mut l, &src, 26 * NS_PER_S);
    let frac = |a_ms: u64, b_ms: u64| {
        let n = src
            .iter()
            .filter(|p| (a_ms * MS..b_ms * MS).contains(&p.sent_ns))
            .count() as f64;
        let d = r
            .dropped
            .iter()
            .filter(|d| (a_ms * MS..b_ms * MS).contains(&d.0))
            .count() as f64;
        d / n
    };
    assert_eq!(
        frac(0, 500),
        0.0,
        "no probability before the first update (HZ/2)"
    );
    let (early, late) = (frac(500, 1000), frac(5000, 20_000));
    assert!(
        early > 0.0 && late > 1.5 * early,
        "drops rise: {early} then {late}"
    );
    assert!(
        (0.15..0.19).contains(&late),
        "PIE matches the 1/6 excess: {late}"
    );
    assert_eq!(
        frac(21_000, 25_000),
        0.0,
        "below target the probability decays to nothing"
    );
    assert_eq!(r.dequeue_drops, 0, "PIE drops at enqueue only");
    // Meanwhile the queue delay is held near the 15 ms target.
    let during: Vec<f64> = {
        let d: Vec<(u64, Pk)> = r
            .delivered
            .iter()
            .filter(|(_, p)| (5 * NS_PER_S..20 * NS_PER_S).contains(&p.sent_ns))
            .copied()
            .collect();
        sojourns_ms(
            &Run {
                delivered: d,
                ..Run::default()
            },
            rate,
            0,
        )
    };
    assert!(
        (10.0..20.0).contains(&median(&during)),
        "median {} ms",
        median(&during)
    );
}

#[test]
fn red_drops_early_without_ecn_and_marks_with_it() {
    let rate = 10_000_000;
    let red = |ecn: bool| QdiscConfig::Red {
        limit_bytes: 400_000,
        min_bytes: Some(30_000),
        max_bytes: Some(90_000),
        avpkt_bytes: 1000,
        burst_pkts: None,
        probability: 0.02,
        ecn,
        harddrop: false,
        bandwidth_bps: None,
    };
    let mut src = merge(cbr(1, 1000, 12_000_000, 0, 10 * NS_PER_S));
    for p in &mut src {
        p.ecn = Ecn::Ect0;
    }
    // Without ECN: the average is held around max (the 17 % excess needs more than max_P),
    // so the queue stays near 90 kB (72 ms) instead of the 400 kB limit.
    let mut l = link(rate, red(false));
    let r = run(&mut l, &src, 11 * NS_PER_S);
    let s = sojourns_ms(&r, rate, 3 * NS_PER_S);
    assert!(
        (24.0..80.0).contains(&median(&s)),
        "median {} ms",
        median(&s)
    );
    assert!(
        r.dropped[0].0 < 500 * MS,
        "first drop at {}",
        r.dropped[0].0
    );
    assert_eq!(l.stats().ce_marks, 0);
    // With ECN the same packets are marked instead; an unresponsive source then fills the
    // 400 kB bfifo (1.6 s at 2 Mbit/s of excess), which drops.
    let mut l = link(rate, red(true));
    let r = run(&mut l, &src, 11 * NS_PER_S);
    assert!(l.stats().ce_marks > 1000, "{:?}", l.stats());
    assert!(
        r.dropped[0].0 > 1500 * MS,
        "first drop at {}",
        r.dropped[0].0
    );
    let s = sojourns_ms(&r, rate, 3 * NS_PER_S);
    assert!(median(&s) > 300.0, "median {} ms", median(&s));
}

#[test]
fn a_late_driver_sees_the_same_model_times() {
    // The lazy catch-up makes every dequeue at its exact time, whenever the driver calls: a
    // driver polling every 3.3 ms (as a busy emulator might) gets the same arrivals and drops.
    let rate = 10_000_000;
    let src = merge(
        [
            cbr(1, 1000, 9_000_000, 0, 3 * NS_PER_S),
            cbr(2, 300, 4_000_000, 7, 3 * NS_PER_S),
            cbr(3, 1500, 2_000_000, 11, 3 * NS_PER_S),
        ]
        .concat(),
    );
    for q in [
        codel(5.0, 1000),
        fq_codel(5.0, 10_240),
        pie(),
        serde_json::from_str(r#"{"kind": "red"}"#).unwrap(),
    ] {
        let mut exact = link(rate, q.clone());
        let r = run(&mut exact, &src, u64::MAX);
        let mut late = link(rate, q);
        let (mut delivered, mut dropped) = (vec![], vec![]);
        let mut i = 0;
        let mut now = 0;
        while now < 5 * NS_PER_S {
            now += 3_300_000;
            while i < src.len() && src[i].sent_ns <= now {
                if let Err(d) = late.enqueue(src[i].sent_ns, src[i]) {
                    dropped.push((src[i].sent_ns, d.pkt.id));
                }
                i += 1;
            }
            late.queue_pkts(now);
            while let Some(t) = late.next_arrival_ns().filter(|&t| t <= now) {
                delivered.push((t, late.pop_arrived(now).unwrap().id));
            }
            while let Some((t, d)) = late.pop_dropped() {
                dropped.push((t, d.pkt.id));
            }
        }
        let want: Vec<(u64, u32)> = r.delivered.iter().map(|(t, p)| (*t, p.id)).collect();
        let q = &late.config().qdisc;
        assert!(
            delivered == want,
            "{q:?}: {} vs {} delivered",
            delivered.len(),
            want.len()
        );
        let mut want: Vec<(u64, u32)> = r.dropped.iter().map(|d| (d.0, d.1.id)).collect();
        want.sort();
        dropped.sort();
        assert!(
            dropped == want,
            "{q:?}: {} vs {} dropped",
            dropped.len(),
            want.len()
        );
        assert!(!want.is_empty(), "{q:?} dropped nothing");
        assert_eq!(exact.stats(), late.stats());
    }
}

#[test]
fn packets_are_conserved_under_every_aqm_with_loss_limits_and_outages() {
    // Four flows (two ECT), random sizes, a lossy link with a byte limit and an outage, at a
    // rate or by a trace; `run` checks conservation after every call.
    let mut v = vec![];
    let mut x: u64 = 7;
    let mut t = 0;
    for id in 0..20_000u32 {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        t += (x >> 40) % 1_000_000;
        let flow = (x >> 20) % 4;
        let ecn = if flow < 2 { Ecn::Ect0 } else { Ecn::NotEct };
        v.push(Pk {
            id,
            flow,
            bytes: 40 + ((x >> 8) % 1461) as u32,
            sent_ns: t,
            ecn,
        });
    }
    let qs = [
        codel(5.0, 50),
        QdiscConfig::Codel { target_ms: 2.0, interval_ms: 20.0, limit_pkts: 1000, ecn: true, ce_threshold_ms: Some(1.0) },
        fq_codel(5.0, 64),
        serde_json::from_str(r#"{"kind": "fq_codel", "flows": 2, "memory_limit_bytes": 60000, "drop_batch_pkts": 3}"#).unwrap(),
        pie(),
        serde_json::from_str(r#"{"kind": "pie", "ecn": true, "bytemode": true, "limit_pkts": 40}"#).unwrap(),
        serde_json::from_str(r#"{"kind": "red", "limit_bytes": 60000, "ecn": true}"#).unwrap(),
        serde_json::from_str(r#"{"kind": "red", "limit_bytes": 60000, "ecn": true, "harddrop": true}"#).unwrap(),
    ];
    // A Mahimahi trace of 1 ms slots alternating 1 and 0 opportunities (6 Mbit/s on average).
    let trace: String = (1..=1000)
        .filter(|k| k % 2 == 1)
        .map(|k| format!("{k}\n"))
        .collect();
    let trace = MahimahiTrace::parse(&trace).unwrap();
    for (k, q) in qs.into_iter().enumerate() {
        let capacity = match k % 2 {
            0 => Capacity::Rate {
                rate_bps: 8_000_000,
            },
            _ => Capacity::Trace(trace.clone()),
        };
        let cfg = LinkConfig {
            capacity: Some(capacity),
            delay_ns: 5 * MS,
            queue: QueueLimit::Bytes(80_000),
            loss: LossModel::Bernoulli { p: 0.01 },
            outages: vec![Outage {
                start_ns: 4 * NS_PER_S,
                duration_ns: 300 * MS,
            }],
            qdisc: q.clone(),
            ..LinkConfig::default()
        };
        cfg.validate().unwrap();
        let mut l: Link<Pk> = Link::new(cfg, rng::stream(3, "x"));
        let r = run(&mut l, &v, u64::MAX);
        assert!(l.is_empty() && l.queue_pkts(u64::MAX) == 0, "{q:?}");
        let s = l.stats();
        assert_eq!(s.delivered_pkts as usize, r.delivered.len());
        assert!(
            s.dropped_aqm_pkts > 0 && s.dropped_random_pkts > 0,
            "{q:?}: {s:?}"
        );
        let ce = r.delivered.iter().filter(|(_, p)| p.ecn == Ecn::Ce).count() as u64;
        assert!(ce <= s.ce_marks, "{q:?}");
        // FIFO per flow: no reordering inside a flow.
        for f in 0..4 {
            let ids: Vec<u32> = r
                .delivered
                .iter()
                .filter(|(_, p)| p.flow == f)
                .map(|(_, p)| p.id)
                .collect();
            assert!(
                ids.windows(2).all(|w| w[0] < w[1]),
                "{q:?}: flow {f} reordered"
            );
        }
    }
}

#[test]
fn queue_counters_count_the_waiting_and_the_one_in_transmission() {
    let mut l = link(8_000_000, codel(5.0, 1000)); // 1 ms per 1000 B
    for k in 0..5 {
        l.enqueue(
            0,
            Pk {
                id: k,
                flow: 0,
                bytes: 1000,
                sent_ns: 0,
                ecn: Ecn::NotEct,
            },
        )
        .unwrap();
    }
    assert_eq!((l.queue_pkts(0), l.queue_bytes(0), l.len()), (5, 5000, 5));
    assert_eq!(l.next_arrival_ns(), Some(11 * MS), "the first left at once");
    assert_eq!(
        (l.queue_pkts(2_500_000), l.queue_bytes(2_500_000)),
        (3, 3000)
    );
    assert_eq!(l.len(), 5, "two propagating");
    assert_eq!(l.stats().tx_bytes, 3000, "counted when they leave the AQM");
}

#[test]
fn link_config_takes_a_qdisc_and_checks_it() {
    let c: LinkConfig =
        serde_json::from_str(r#"{"qdisc": {"kind": "fq_codel", "ecn": false}}"#).unwrap();
    assert!(matches!(
        c.qdisc,
        QdiscConfig::FqCodel {
            ecn: false,
            flows: 1024,
            ..
        }
    ));
    let text = serde_json::to_string(&LinkConfig::default()).unwrap();
    assert!(!text.contains("qdisc"), "drop-tail is not written: {text}");
    let back: LinkConfig = serde_json::from_str(&serde_json::to_string(&c).unwrap()).unwrap();
    assert_eq!(back, c);
    let field = |c: LinkConfig| match c.validate() {
        Err(NetError::InvalidField { field, .. }) => field,
        other => panic!("{other:?}"),
    };
    let bad: LinkConfig =
        serde_json::from_str(r#"{"qdisc": {"kind": "codel", "target_ms": -5}}"#).unwrap();
    assert_eq!(field(bad), "qdisc.target_ms");
    let both: LinkConfig =
        serde_json::from_str(r#"{"ecn_threshold_pkts": 10, "qdisc": {"kind": "pie"}}"#).unwrap();
    assert_eq!(field(both), "ecn_threshold_pkts");
    // RED's idle table is derived from the link's own rate when no bandwidth is given.
    let slow: LinkConfig = serde_json::from_str(
        r#"{"capacity": {"kind": "rate", "rate_bps": 1}, "qdisc": {"kind": "red"}}"#,
    )
    .unwrap();
    assert_eq!(field(slow), "qdisc.bandwidth_bps");
    assert!(
        serde_json::from_str::<LinkConfig>(r#"{"qdisc": {"kind": "codel", "limit": 5}}"#).is_err()
    );
}

#[test]
fn unvalidated_qdisc_settings_do_not_panic() {
    let nonsense = [
        r#"{"kind": "codel", "target_ms": -1, "interval_ms": 1e300, "limit_pkts": 0}"#,
        r#"{"kind": "fq_codel", "flows": 0, "quantum_bytes": 0, "limit_pkts": 0, "drop_batch_pkts": 0, "memory_limit_bytes": 0}"#,
        r#"{"kind": "pie", "target_ms": 0, "tupdate_ms": 0, "alpha": 4000000000, "beta": 4000000000, "limit_pkts": 0}"#,
        r#"{"kind": "pie", "target_ms": 1e-9, "tupdate_ms": 1e-9, "alpha": 4294967295, "beta": 4294967295, "bytemode": true, "ecn": true}"#,
        r#"{"kind": "red", "min_bytes": 4294967295, "avpkt_bytes": 1, "bandwidth_bps": 18446744073709551615}"#,
        r#"{"kind": "red", "limit_bytes": 0, "min_bytes": 5000000000, "max_bytes": 1, "avpkt_bytes": 0, "probability": -3, "burst_pkts": 0, "bandwidth_bps": 0}"#,
        r#"{"kind": "red", "probability": 1e300, "min_bytes": 1, "max_bytes": 4294967295}"#,
    ];
    for text in nonsense {
        let q: QdiscConfig = serde_json::from_str(text).unwrap();
        assert!(q.validate().is_err(), "{text}");
        for rate_bps in [0, 1, 10_000_000, u64::MAX] {
            let cfg = LinkConfig {
                capacity: Some(Capacity::Rate { rate_bps }),
                qdisc: q.clone(),
                ..LinkConfig::default()
            };
            let mut l: Link<Pk> = Link::new(cfg, rng::stream(1, "n"));
            let src: Vec<Pk> = (0..300u32)
                .map(|id| Pk {
                    id,
                    flow: u64::from(id % 3),
                    bytes: id % 2000,
                    sent_ns: u64::from(id) * 100_000,
                    ecn: Ecn::Ect1,
                })
                .collect();
            run(&mut l, &src, u64::MAX - 1);
            l.queue_pkts(u64::MAX);
        }
    }
}

#[test]
fn every_kind_parses_from_its_name_alone_with_kernel_defaults() {
    let c: QdiscConfig = serde_json::from_str(r#"{"kind": "codel"}"#).unwrap();
    assert_eq!(
        c,
        QdiscConfig::Codel {
            target_ms: 5.0,
            interval_ms: 100.0,
            limit_pkts: 1000,
            ecn: false,
            ce_threshold_ms: None
        }
    );
    let c: QdiscConfig = serde_json::from_str(r#"{"kind": "fq_codel"}"#).unwrap();
    let QdiscConfig::FqCodel {
        limit_pkts,
        flows,
        quantum_bytes,
        memory_limit_bytes,
        ecn,
        drop_batch_pkts,
        ..
    } = c
    else {
        panic!("{c:?}")
    };
    assert_eq!(
        (
            limit_pkts,
            flows,
            quantum_bytes,
            memory_limit_bytes,
            ecn,
            drop_batch_pkts
        ),
        (10_240, 1024, 1514, 32 << 20, true, 64)
    );
    let c: QdiscConfig = serde_json::from_str(r#"{"kind": "pie"}"#).unwrap();
    assert!(matches!(
        c,
        QdiscConfig::Pie { target_ms, tupdate_ms, alpha: 2, beta: 20, limit_pkts: 1000, ecn: false, bytemode: false }
            if target_ms == 15.0 && tupdate_ms == 15.0
    ));
    let c: QdiscConfig = serde_json::from_str(r#"{"kind": "red"}"#).unwrap();
    assert!(matches!(
        c,
        QdiscConfig::Red {
            limit_bytes: 400_000,
            avpkt_bytes: 1000,
            ..
        }
    ));
    assert!(c.validate().is_ok(), "the defaults are valid");
    let c: QdiscConfig = serde_json::from_str(r#"{"kind": "drop_tail"}"#).unwrap();
    assert!(c.is_drop_tail() && QdiscConfig::default().is_drop_tail());
    for text in [
        r#"{"kind": "codel", "target": 5}"#,
        r#"{"kind": "sfq"}"#,
        r#"{"kind": "pie", "target_ms": 15, "x": 1}"#,
    ] {
        assert!(serde_json::from_str::<QdiscConfig>(text).is_err(), "{text}");
    }
    // Round trip.
    let c = QdiscConfig::FqCodel {
        target_ms: 2.5,
        interval_ms: 50.0,
        limit_pkts: 100,
        flows: 16,
        quantum_bytes: 300,
        memory_limit_bytes: 1 << 20,
        ecn: false,
        drop_batch_pkts: 8,
        ce_threshold_ms: Some(1.0),
    };
    let back: QdiscConfig = serde_json::from_str(&serde_json::to_string(&c).unwrap()).unwrap();
    assert_eq!(back, c);
}

#[test]
fn validate_names_the_field_under_qdisc() {
    let field = |text: &str| {
        let c: QdiscConfig = serde_json::from_str(text).unwrap();
        match c.validate() {
            Err(NetError::InvalidField { field, .. }) => field,
            other => panic!("{text}: {other:?}"),
        }
    };
    assert_eq!(
        field(r#"{"kind": "codel", "target_ms": 0}"#),
        "qdisc.target_ms"
    );
    assert_eq!(
        field(r#"{"kind": "codel", "interval_ms": -1}"#),
        "qdisc.interval_ms"
    );
    assert_eq!(
        field(r#"{"kind": "codel", "limit_pkts": 0}"#),
        "qdisc.limit_pkts"
    );
    assert_eq!(
        field(r#"{"kind": "codel", "ce_threshold_ms": -1}"#),
        "qdisc.ce_threshold_ms"
    );
    assert_eq!(field(r#"{"kind": "fq_codel", "flows": 0}"#), "qdisc.flows");
    assert_eq!(
        field(r#"{"kind": "fq_codel", "flows": 65537}"#),
        "qdisc.flows"
    );
    assert_eq!(
        field(r#"{"kind": "fq_codel", "quantum_bytes": 2000000}"#),
        "qdisc.quantum_bytes"
    );
    assert_eq!(
        field(r#"{"kind": "fq_codel", "drop_batch_pkts": 0}"#),
        "qdisc.drop_batch_pkts"
    );
    assert_eq!(field(r#"{"kind": "pie", "alpha": 33}"#), "qdisc.alpha");
    assert_eq!(
        field(r#"{"kind": "pie", "tupdate_ms": 0}"#),
        "qdisc.tupdate_ms"
    );
    assert_eq!(
        field(r#"{"kind": "red", "probability": 0}"#),
        "qdisc.probability"
    );
    assert_eq!(
        field(r#"{"kind": "red", "min_bytes": 90000, "max_bytes": 30000}"#),
        "qdisc.max_bytes"
    );
    assert_eq!(
        field(r#"{"kind": "red", "avpkt_bytes": 0}"#),
        "qdisc.avpkt_bytes"
    );
    assert_eq!(
        field(r#"{"kind": "red", "limit_bytes": 0}"#),
        "qdisc.limit_bytes"
    );
    assert_eq!(
        field(r#"{"kind": "red", "burst_pkts": 1, "min_bytes": 30000}"#),
        "qdisc.burst_pkts"
    );
}
