//! The chain's rules on small deterministic cases: one exchange's timing, A-MPDU and BlockAck,
//! per-pair sensing and hidden terminals, selective retransmission, the retry limit, lazy
//! driving, determinism.

use super::*;
use crate::rng;
use crate::NS_PER_US;

const US: u64 = NS_PER_US;

/// (id, bytes).
#[derive(Debug, PartialEq)]
struct P(u32, u32);
impl NetPacket for P {
    fn wire_bytes(&self) -> u32 {
        self.1
    }
}

fn chain(spec: MeshSpec, ports: usize, seed: u64) -> MeshChain<P> {
    spec.validate("m", ports).unwrap();
    MeshChain::new(spec, ports, rng::stream(seed, "mesh"))
}

/// (time, id) of each delivery or drop.
type Times = Vec<(u64, u32)>;

/// Deliveries and drops, waking only at `next_event_ns`.
fn drain(c: &mut MeshChain<P>) -> (Times, Times) {
    let (mut out, mut drops) = (vec![], vec![]);
    while let Some(t) = c.next_event_ns() {
        while let Some(p) = c.pop_delivered(t) {
            out.push((t, p.0));
        }
        while let Some((t, d)) = c.pop_dropped() {
            drops.push((t, d.pkt.0));
        }
    }
    (out, drops)
}

#[test]
fn a_lone_frame_goes_after_difs() {
    // 2.4 GHz: DIFS 28 µs; MCS 11 HT40 1500 B + 50 B: 156 µs + 6 µs extension; SIFS 10, Ack
    // 34.
    let mut c = chain(MeshSpec::default(), 2, 1);
    c.enqueue(0, 0, 1, P(1, 1500)).unwrap();
    assert_eq!(c.next_event_ns(), Some(28 * US));
    assert_eq!(c.queue_pkts(100 * US, 0), 1, "held until its exchange ends");
    assert_eq!(drain(&mut c).0, [(190 * US, 1)]);
    let m = *c.station_stats(0);
    assert_eq!((m.attempts, m.successes, m.mpdus_acked), (1, 1, 1));
    assert_eq!(c.queue_pkts(300 * US, 0), 0);
    assert_eq!(m.residual_loss(), Some(0.0));
}

#[test]
fn an_ampdu_carries_the_queue_for_one_receiver_under_its_limits() {
    let spec = MeshSpec {
        ampdu: true,
        ampdu_max_frames: 3,
        ..MeshSpec::default()
    };
    let mut c = chain(spec, 3, 1);
    // Four frames for node 1 and one for node 2, all offered before the first boundary.
    for (id, to) in [(1, 1), (2, 2), (3, 1), (4, 1), (5, 1)] {
        c.enqueue(0, 0, to, P(id, 1500)).unwrap();
    }
    // First A-MPDU: 1, 3, 4 (3 frames of 1556 B = 4668 B: 37366 bits / 432 -> 87 symbols,
    // 40 + 348 + 6 = 394 µs), after DIFS (28 µs).
    let (out, _) = drain(&mut c);
    assert_eq!(&out[..3], [(422 * US, 1), (422 * US, 3), (422 * US, 4)]);
    let ids: Vec<u32> = out.iter().map(|o| o.1).collect();
    assert_eq!(ids, [1, 3, 4, 2, 5]);
    let m = *c.station_stats(0);
    assert_eq!((m.attempts, m.mpdus, m.mpdus_acked), (3, 5, 5));
    // A byte limit of two subframes.
    let spec = MeshSpec {
        ampdu: true,
        ampdu_max_bytes: 2 * 1556,
        ..MeshSpec::default()
    };
    let mut c = chain(spec, 2, 1);
    for id in 0..5 {
        c.enqueue(0, 0, 1, P(id, 1500)).unwrap();
    }
    drain(&mut c);
    assert_eq!(c.station_stats(0).attempts, 3);
}

/// Three nodes 0, 1, 2: node 0 and node 2 both send to node 1.
fn three(spacing_m: f64, seed: u64) -> MeshChain<P> {
    // 5 GHz, MCS 0 HT40, exponent 3: 1 hop at 40 m is 94.7 dB of loss, -78.7 dBm (SNR 12.2 dB over
    // -91 dBm: MCS 0's PER is small), 2 hops at 80 m -87.8 dBm, below the -82 dBm threshold.
    let spec = MeshSpec {
        mcs: 0,
        band_ghz: 5.0,
        spacing_m,
        path_loss_exponent: Some(3.0),
        ..MeshSpec::default()
    };
    chain(spec, 3, seed)
}

#[test]
fn far_nodes_do_not_sense_each_other_and_collide_at_the_middle() {
    let mut c = three(40.0, 1);
    assert!(c.senses(1, 0) && c.senses(0, 1) && c.senses(1, 2));
    assert!(!c.senses(2, 0) && !c.senses(0, 2));
    let snr = c.snr_db(0, 1).unwrap();
    assert!((snr - 12.2).abs() < 0.1, "snr {snr}");
    assert!(c.frame_error_rate(0, 1, 1500).unwrap() < 0.02);
    assert_eq!(c.frame_error_rate(0, 2, 1500), Some(1.0));
    // Both send at once: they collide at node 1; neither sender sensed the other.
    c.enqueue(0, 0, 1, P(1, 1500)).unwrap();
    c.enqueue(0, 2, 1, P(2, 1500)).unwrap();
    c.pop_delivered(2_000 * US);
    for s in [0, 2] {
        let m = c.station_stats(s);
        assert_eq!((m.collisions, m.hidden_collisions), (1, 1), "node {s}");
    }
    // Close together (10 m: all sense all), the same offers collide too (same boundary), but
    // not as hidden terminals.
    let mut c = three(10.0, 1);
    assert!(c.senses(2, 0));
    c.enqueue(0, 0, 1, P(1, 1500)).unwrap();
    c.enqueue(0, 2, 1, P(2, 1500)).unwrap();
    c.pop_delivered(2_000 * US);
    let m = *c.station_stats(0);
    assert_eq!((m.collisions, m.hidden_collisions), (1, 0));
}

#[test]
fn a_hidden_sender_collides_with_a_frame_already_on_the_air() {
    // Node 0 starts at 34 µs (5 GHz DIFS); node 2, which cannot sense it, gets a frame at 100 µs and
    // sends at its first boundary: node 1 decodes neither.
    let mut c = three(40.0, 1);
    c.enqueue(0, 0, 1, P(1, 1500)).unwrap();
    assert_eq!(c.queue_pkts(100 * US, 0), 1);
    c.enqueue(100 * US, 2, 1, P(2, 1500)).unwrap();
    // MCS 0 HT40: 1550 B is 231 symbols, 960 µs.
    c.pop_delivered(3_000 * US);
    // (node 0's retry, after its timeout at 1039 µs, can hit the tail of node 2's frame too.)
    assert!(c.station_stats(0).hidden_collisions >= 1);
    assert!(c.station_stats(2).hidden_collisions >= 1);
    assert_eq!(
        c.station_stats(0).collisions,
        c.station_stats(0).hidden_collisions
    );
    // With node 2 in sense of node 0, node 2 defers and both get through.
    let mut c = three(10.0, 1);
    c.enqueue(0, 0, 1, P(1, 1500)).unwrap();
    c.enqueue(100 * US, 2, 1, P(2, 1500)).unwrap();
    let (out, drops) = drain(&mut c);
    assert_eq!(out.len(), 2);
    assert!(drops.is_empty());
    assert_eq!(
        c.station_stats(0).collisions + c.station_stats(2).collisions,
        0
    );
}

#[test]
fn out_of_range_frames_are_dropped_after_the_retry_limit() {
    let spec = MeshSpec {
        spacing_m: 1000.0,
        retry_limit: 3,
        ..MeshSpec::default()
    };
    let mut c = chain(spec, 2, 1);
    c.enqueue(0, 0, 1, P(1, 1500)).unwrap();
    let (out, drops) = drain(&mut c);
    assert!(out.is_empty());
    assert_eq!(drops.len(), 1);
    let m = *c.station_stats(0);
    assert_eq!((m.attempts, m.frame_errors, m.retry_drops), (3, 3, 1));
    assert_eq!(m.residual_loss(), Some(1.0));
    assert_eq!(c.stats(0).dropped_retry_pkts, 1);
}

#[test]
fn lost_mpdus_are_retransmitted_alone() {
    // A frame error floor of 0.5 per MPDU: every MPDU eventually delivered (retry limit 20),
    // A-MPDUs shrink to the lost ones, and MPDU counts add up.
    let spec = MeshSpec {
        ampdu: true,
        frame_error_rate: Some(0.5),
        retry_limit: 20,
        ..MeshSpec::default()
    };
    let mut c = chain(spec, 2, 3);
    for id in 0..40 {
        c.enqueue(0, 0, 1, P(id, 1500)).unwrap();
    }
    let (out, drops) = drain(&mut c);
    assert!(drops.is_empty());
    let mut ids: Vec<u32> = out.iter().map(|o| o.1).collect();
    ids.sort_unstable();
    assert_eq!(ids, (0..40).collect::<Vec<_>>(), "each once");
    let m = *c.station_stats(0);
    assert_eq!(m.mpdus_acked, 40);
    assert_eq!(m.mpdus, m.mpdus_acked + m.mpdu_errors);
    assert!(m.mpdu_errors > 20 && m.mpdu_errors < 70, "{m:?}");
    assert!(m.attempts > 2 && m.attempts < 20, "{m:?}");
}

#[test]
fn the_background_takes_airtime() {
    let bg = |f: Option<f64>| {
        let spec = MeshSpec {
            background_busy_fraction: f,
            ..MeshSpec::default()
        };
        let mut c = chain(spec, 2, 1);
        for id in 0..2000 {
            c.enqueue(0, 0, 1, P(id, 1500)).unwrap();
        }
        // The background never stops: drive until the last delivery.
        let mut last = 0;
        let mut n = 0;
        while n < 2000 {
            let t = c.next_event_ns().unwrap();
            while c.pop_delivered(t).is_some() {
                n += 1;
                last = t;
            }
        }
        last
    };
    let (quiet, busy) = (bg(None), bg(Some(0.3)));
    let r = busy as f64 / quiet as f64;
    // 30 % busy: about 1 / 0.7 = 1.43 times as long (background bursts also cut frames).
    assert!((1.3..1.7).contains(&r), "{r}");
}

#[test]
fn lazy_driving_and_seeds() {
    // The same offers driven at every event and on a coarse grid give the same deliveries;
    // another seed gives other times.
    let run = |seed: u64, grid_ns: Option<u64>| {
        let mut c = three(40.0, seed);
        let mut out = vec![];
        for id in 0..200u32 {
            let t = u64::from(id) * 150 * US;
            let from = if id % 2 == 0 { 0 } else { 2 };
            c.enqueue(t, from, 1, P(id, 1200)).unwrap();
            if let Some(g) = grid_ns {
                let mut now = t - t % g;
                while now < t + 150 * US {
                    while let Some(p) = c.pop_delivered(now) {
                        out.push(p.0);
                    }
                    now += g;
                }
            }
        }
        let (rest, _) = drain(&mut c);
        out.extend(rest.iter().map(|r| r.1));
        (out, *c.station_stats(1), c.stats(1).delivered_pkts)
    };
    let (a, _, _) = run(1, None);
    let (b, _, _) = run(1, Some(7 * US));
    assert_eq!(a, b);
    assert_ne!(run(1, None).0, run(2, None).0);
}

#[test]
fn a_lost_ack_makes_a_retry_the_receiver_discards() {
    // 5 GHz, MCS 0 HT40 (Acks at 12 Mbit/s, QPSK 1/2), exponent 3. Y -110 m, X -70 m, S 0,
    // R 40 m: X, saturating Y, is below S's sense threshold (-86 dBm at S) but at S it takes
    // the Ack's SINR to about 6 dB, under its 12 dB anchor; S's data still reaches R (X is
    // -92 dBm there). So S's frames get through and their Acks do not.
    let spec = MeshSpec {
        mcs: 0,
        band_ghz: 5.0,
        positions_m: vec![-110.0, -70.0, 0.0, 40.0],
        path_loss_exponent: Some(3.0),
        retry_limit: 7,
        ..MeshSpec::default()
    };
    let mut c = chain(spec, 4, 1);
    assert!(!c.senses(2, 1) && !c.senses(1, 2) && c.senses(3, 2) && c.senses(0, 1));
    let mut t = 0;
    let (mut got, mut x_id) = (vec![], 1000);
    for id in 0..200 {
        c.enqueue(t, 2, 3, P(id, 1500)).unwrap();
    }
    while t < 2 * crate::NS_PER_S {
        while c.queue_pkts(t, 1) < 4 {
            x_id += 1;
            c.enqueue(t, 1, 0, P(x_id, 1500)).unwrap();
        }
        while let Some(p) = c.pop_delivered(t) {
            if p.0 < 1000 {
                got.push(p.0);
            }
        }
        while c.pop_dropped().is_some() {}
        t = c.next_event_ns().unwrap();
    }
    let s = *c.station_stats(2);
    assert!(s.response_losses * 5 > s.attempts, "{s:?}");
    // Each of S's packets arrives once, whatever its Acks did; only real losses are drops.
    let mut sorted = got.clone();
    sorted.sort_unstable();
    sorted.dedup();
    assert_eq!(sorted.len(), got.len(), "no duplicates");
    assert_eq!(got.len() as u64 + s.retry_drops, 200, "{s:?}");
    assert!(s.mpdus > 200 + s.retry_drops, "{s:?}");
}
