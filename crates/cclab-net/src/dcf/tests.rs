//! The cell's rules on small deterministic scenarios: timing of one exchange, the slot grid,
//! RTS/CTS, collisions and the retry limit, backoff freezing, queue limits, lazy driving.

use super::*;
use crate::rng;
use crate::NS_PER_US;

const US: u64 = NS_PER_US;

/// (id, bytes, the port the test addressed it to).
#[derive(Debug, PartialEq)]
struct P(u32, u32, usize);
impl NetPacket for P {
    fn wire_bytes(&self) -> u32 {
        self.1
    }
}

fn cell(spec: DcfSpec, ports: usize, seed: u64) -> DcfCell<P> {
    DcfCell::new(spec, ports, rng::stream(seed, "cell"))
}

/// Deliveries as (time, port, id).
type Out = Vec<(u64, usize, u32)>;
/// Drops as (time, id, reason).
type Drops = Vec<(u64, u32, DropReason)>;

/// Deliver everything, waking only at `next_event_ns`.
fn drain(c: &mut DcfCell<P>) -> (Out, Drops) {
    let (mut out, mut drops) = (vec![], vec![]);
    while let Some(t) = c.next_event_ns() {
        while let Some(p) = c.pop_delivered(t) {
            out.push((t, p.2, p.0));
        }
        while let Some((t, d)) = c.pop_dropped() {
            drops.push((t, d.pkt.0, d.reason));
        }
    }
    (out, drops)
}

#[test]
fn a_lone_frame_goes_after_difs_and_later_ones_on_the_slot_grid() {
    // 802.11g: DIFS 28 µs, DATA(1500 B) 254 µs, SIFS 10 µs, Ack 34 µs.
    let mut c = cell(DcfSpec::default(), 2, 1);
    c.enqueue(0, 1, 0, P(1, 1500, 0)).unwrap();
    assert_eq!(
        c.next_event_ns(),
        Some(28 * US),
        "DIFS, no backoff: idle medium"
    );
    assert_eq!(
        c.busy_until_ns(28 * US),
        Some(326 * US),
        "DATA + SIFS + Ack"
    );
    assert_eq!(c.queue_pkts(100 * US, 1), 1, "held until its exchange ends");
    assert_eq!(drain(&mut c).0, [(282 * US, 0, 1)]);
    assert_eq!(c.queue_pkts(400 * US, 1), 0);
    // Offered at 1 ms, long after its post-backoff ran out: the first boundary after 1 ms on
    // the grid 326 + 28 + 9 j µs is j = 72, 1002 µs.
    c.enqueue(1_000 * US, 1, 0, P(2, 1500, 0)).unwrap();
    assert_eq!(drain(&mut c).0, [(1_256 * US, 0, 2)]);
    // Offered exactly on a boundary (the exchange ends at 1002 + 298 µs; then DIFS and 40
    // slots): it waits for the next one.
    let t = (1_002 + 298 + 28 + 360) * US;
    c.enqueue(t, 1, 0, P(3, 1500, 0)).unwrap();
    assert_eq!(c.next_event_ns(), Some(t + 9 * US));
    let s = c.stats(1);
    assert_eq!((s.enqueued_pkts, s.tx_bytes), (3, 3000));
    assert_eq!(c.stats(0).delivered_bytes, 3000);
}

#[test]
fn rts_cts_adds_its_handshake_and_a_collision_then_costs_an_rts() {
    let spec = DcfSpec {
        rts_threshold_bytes: Some(1000),
        retry_limit: 1,
        ..DcfSpec::default()
    };
    let mut c = cell(spec.clone(), 3, 1);
    c.enqueue(0, 1, 0, P(1, 1500, 0)).unwrap();
    // DIFS, RTS 34, SIFS, CTS 34, SIFS, DATA 254.
    assert_eq!(drain(&mut c).0, [(370 * US, 0, 1)]);
    // Two stations at the same boundary collide; RTS 34 + CTSTimeout (10 + 9 + 20) = 73 µs.
    // A 500 B frame (PSDU 536 B, no RTS) collides with them: the longest frame counts.
    let mut c = cell(spec, 3, 1);
    c.enqueue(0, 1, 0, P(1, 1500, 0)).unwrap();
    c.enqueue(0, 2, 0, P(2, 1500, 0)).unwrap();
    c.enqueue(0, 0, 1, P(3, 500, 1)).unwrap();
    let data_500 = c.params().data_ns(500);
    assert_eq!(data_500, 20 * US + 20 * 4 * US + 6 * US);
    let (out, drops) = drain(&mut c);
    assert!(out.is_empty());
    let end = 28 * US + data_500 + 39 * US;
    assert_eq!(
        drops,
        [3, 1, 2].map(|id| (end, id, DropReason::Retry)),
        "retry limit 1: dropped after the one attempt, in port order"
    );
    for port in 0..3 {
        let m = c.station_stats(port);
        assert_eq!((m.attempts, m.collisions, m.retry_drops), (1, 1, 1));
        assert_eq!(c.stats(port).dropped_retry_pkts, 1);
    }
    // The counter shows in the serialised lane only when it counted something.
    let json = |s: &LinkStats| serde_json::to_value(s).unwrap();
    assert_eq!(json(c.stats(0))["dropped_retry_pkts"], 1);
    assert!(json(&LinkStats::default())
        .get("dropped_retry_pkts")
        .is_none());
}

#[test]
fn collisions_double_the_window_and_frames_are_dropped_at_the_retry_limit() {
    // cw_min = cw_max = 0: two backlogged stations collide on every attempt.
    let spec = DcfSpec {
        cw_min: Some(0),
        cw_max: Some(0),
        retry_limit: 3,
        ..DcfSpec::default()
    };
    let mut c = cell(spec, 3, 7);
    c.enqueue(0, 1, 0, P(1, 1500, 0)).unwrap();
    c.enqueue(0, 2, 0, P(2, 1500, 0)).unwrap();
    let (out, drops) = drain(&mut c);
    assert!(out.is_empty());
    // Each round: DIFS + DATA 254 + AckTimeout 39 = 321 µs, three attempts.
    assert_eq!(
        drops,
        [
            (963 * US, 1, DropReason::Retry),
            (963 * US, 2, DropReason::Retry)
        ]
    );
    assert_eq!(c.station_stats(1).collisions, 3);
    // The window doubles (2 CW + 1) up to CWmax and returns to CWmin after the drop: one
    // station whose every attempt is lost (frame error rate 1).
    let spec = DcfSpec {
        cw_min: Some(3),
        cw_max: Some(20),
        retry_limit: 5,
        frame_error_rates: vec![0.0, 1.0],
        ..DcfSpec::default()
    };
    let mut c = cell(spec, 2, 1);
    c.enqueue(0, 1, 0, P(1, 1500, 0)).unwrap();
    let mut after_each = vec![];
    while let Some(t) = c.next_event_ns() {
        assert!(c.pop_delivered(t).is_none());
        if c.busy_until_ns(t).is_none() {
            after_each.push((c.stations[1].failures, c.stations[1].cw));
        }
    }
    assert_eq!(after_each, [(1, 7), (2, 15), (3, 20), (4, 20), (0, 3)]);
    let m = c.station_stats(1);
    assert_eq!(
        (m.attempts, m.frame_errors, m.collisions, m.retry_drops),
        (5, 5, 0, 1)
    );
}

#[test]
fn backoff_freezes_while_another_station_transmits() {
    // Two stations offered a frame at 0 collide at 28 µs, then draw from CW 31. Find a seed
    // where the draws differ: the smaller (B) goes first, the other (A) freezes meanwhile.
    let slot = 9 * US;
    for seed in 1..50 {
        let mut c = cell(DcfSpec::default(), 3, seed);
        c.enqueue(0, 1, 0, P(1, 1500, 0)).unwrap();
        c.enqueue(0, 2, 0, P(2, 1500, 0)).unwrap();
        let end = 28 * US + 254 * US + 39 * US;
        assert_eq!(c.busy_until_ns(28 * US), Some(end), "the collision");
        let (k1, k2) = (
            c.backoff_slots(end, 1).unwrap(),
            c.backoff_slots(end, 2).unwrap(),
        );
        if k1 == k2 {
            continue;
        }
        let (a, b, ka, kb) = if k1 > k2 {
            (1, 2, k1, k2)
        } else {
            (2, 1, k2, k1)
        };
        // Counting down in idle slots after DIFS: k - j after j slots.
        let t0 = end + 28 * US;
        assert_eq!(c.backoff_slots(t0, a), Some(ka));
        if kb > 0 {
            assert_eq!(c.backoff_slots(t0 + slot + 1, a), Some(ka - 1));
        }
        let b_start = t0 + kb * slot;
        let b_end = b_start + 254 * US + 10 * US + 34 * US;
        assert_eq!(c.busy_until_ns(b_start), Some(b_end), "B is on the air");
        assert_eq!(c.backoff_slots(b_start, b), None, "B's backoff is spent");
        // Frozen through B's whole exchange and the DIFS after it.
        for t in [
            b_start,
            b_start + 100 * US,
            b_end - 1,
            b_end,
            b_end + 28 * US,
        ] {
            assert_eq!(c.backoff_slots(t, a), Some(ka - kb), "at {t}");
        }
        assert_eq!(
            c.backoff_slots(b_end + 28 * US + 2 * slot, a),
            Some(ka - kb - 2)
        );
        // A resumes and sends exactly when the rest of its count ends.
        let a_start = b_end + 28 * US + (ka - kb) * slot;
        let (out, _) = drain(&mut c);
        assert_eq!(
            out,
            [
                (b_start + 254 * US, 0, b as u32),
                (a_start + 254 * US, 0, a as u32)
            ]
        );
        return;
    }
    panic!("no seed gave two different backoffs");
}

#[test]
fn queue_limits_in_packets_and_bytes_refuse_at_that_port_only() {
    let spec = DcfSpec {
        queue_pkts: Some(2),
        queue_bytes: Some(2_500),
        ..DcfSpec::default()
    };
    let mut c = cell(spec, 3, 1);
    c.enqueue(0, 1, 0, P(1, 1000, 0)).unwrap();
    c.enqueue(0, 1, 0, P(2, 1000, 0)).unwrap();
    let e = c.enqueue(0, 1, 0, P(3, 100, 0)).unwrap_err();
    assert_eq!((e.pkt.0, e.reason), (3, DropReason::QueueFull), "2 packets");
    c.enqueue(0, 2, 0, P(4, 1500, 0)).unwrap();
    let e = c.enqueue(0, 2, 0, P(5, 1001, 0)).unwrap_err();
    assert_eq!(e.pkt.0, 5, "1500 + 1001 B > 2500 B");
    c.enqueue(0, 2, 0, P(6, 1000, 0)).unwrap();
    assert_eq!((c.queue_pkts(0, 1), c.queue_bytes(0, 1)), (2, 2000));
    assert_eq!((c.queue_pkts(0, 2), c.queue_bytes(0, 2)), (2, 2500));
    assert_eq!(c.stats(1).dropped_queue_full_pkts, 1);
    assert_eq!(c.stats(2).dropped_queue_full_pkts, 1);
    assert_eq!(c.stats(0).dropped_queue_full_pkts, 0);
    assert!(c.enqueue(0, 1, 1, P(7, 10, 1)).is_err(), "from == to");
    assert!(c.enqueue(0, 1, 3, P(8, 10, 3)).is_err(), "no such port");
    let (out, drops) = drain(&mut c);
    assert_eq!(out.len(), 4);
    assert!(drops.is_empty());
    assert_eq!(c.stats(0).delivered_pkts, 4);
}

#[test]
fn lazy_calls_give_the_same_result_as_exact_ones() {
    // Four stations offering on their own schedules, small queues, frame errors and a retry
    // limit of 2: refusals, retry drops and collisions all happen.
    let offers: Vec<(u64, usize, u32)> = (0..600u32)
        .map(|i| {
            (
                u64::from(i) * 97_000 + u64::from(i % 7) * 13_000,
                (i % 4) as usize + 1,
                i,
            )
        })
        .collect();
    let spec = DcfSpec {
        queue_pkts: Some(3),
        frame_error_rate: 0.2,
        retry_limit: 2,
        delay_ms: 0.1,
        ..DcfSpec::default()
    };
    let run = |step: Option<u64>| {
        let mut c = cell(spec.clone(), 5, 3);
        let (mut out, mut drops, mut refused) = (vec![], vec![], 0);
        let mut take = |c: &mut DcfCell<P>, w: u64| {
            while let Some(p) = c.pop_delivered(w) {
                out.push(p.0);
            }
            while let Some((t, d)) = c.pop_dropped() {
                drops.push((t, d.pkt.0));
            }
        };
        for &(t, from, id) in &offers {
            match step {
                Some(s) => {
                    // Wake on a coarse grid instead of at next_event_ns.
                    let mut w = (t / s) * s;
                    while w <= t {
                        take(&mut c, w);
                        w += s;
                    }
                }
                None => {
                    while let Some(e) = c.next_event_ns().filter(|&e| e <= t) {
                        take(&mut c, e);
                    }
                }
            }
            refused += u32::from(c.enqueue(t, from, 0, P(id, 1200, 0)).is_err());
        }
        while let Some(e) = c.next_event_ns() {
            take(&mut c, e);
        }
        let failures: u64 = (1..5).map(|k| c.station_stats(k).collisions).sum();
        (out, drops, refused, failures)
    };
    let exact = run(None);
    assert!(exact.1.len() > 5 && exact.2 > 5 && exact.3 > 5, "{exact:?}");
    assert_eq!(
        exact.0.len() + exact.1.len() + exact.2 as usize,
        offers.len()
    );
    assert_eq!(run(Some(1_700_000)), exact);
    assert_eq!(run(Some(9_000)), exact);
}

#[test]
fn a_port_can_have_its_own_queue_limit() {
    let spec = DcfSpec {
        queue_pkts: Some(2),
        queue_pkts_by_port: vec![None, Some(5)],
        ..DcfSpec::default()
    };
    let mut c = cell(spec, 3, 1);
    let offered = |c: &mut DcfCell<P>, from: usize| {
        (0..8)
            .filter(|&i| c.enqueue(0, from, 2, P(i, 1500, 2)).is_ok())
            .count()
    };
    // Port 0 takes queue_pkts, port 1 its own limit, port 2 (no entry) queue_pkts.
    assert_eq!(offered(&mut c, 0), 2);
    assert_eq!(offered(&mut c, 1), 5);
    assert!(c.enqueue(0, 2, 0, P(9, 1500, 0)).is_ok());
    assert_eq!(Medium::stats(&c, 1).dropped_queue_full_pkts, 3);
    let e = DcfSpec {
        queue_pkts_by_port: vec![None, Some(0)],
        ..DcfSpec::default()
    }
    .validate_ports("m", 3)
    .unwrap_err();
    assert!(e.to_string().contains("m.queue_pkts_by_port[1]"), "{e}");
    let e = DcfSpec {
        queue_pkts_by_port: vec![None; 4],
        ..DcfSpec::default()
    }
    .validate_ports("m", 3)
    .unwrap_err();
    assert!(e.to_string().contains("m.queue_pkts_by_port"), "{e}");
}

#[test]
fn a_broadcast_goes_once_at_the_basic_rate_without_an_ack() {
    // 802.11g: a 100-byte packet broadcast (PSDU 136 B) at the 24 Mbit/s control rate: 20 µs
    // preamble + ceil((16 + 8 x 136 + 6) / 96) = 12 symbols of 4 µs + 6 µs = 74 µs. No SIFS and
    // Ack: the next DIFS starts when the frame ends.
    let mut c = cell(DcfSpec::default(), 3, 1);
    c.enqueue(0, 0, BROADCAST, P(1, 100, BROADCAST)).unwrap();
    assert_eq!(c.params().broadcast_ns(100), 74 * US);
    assert_eq!(c.busy_until_ns(28 * US), Some((28 + 74) * US));
    assert_eq!(drain(&mut c).0, [((28 + 74) * US, BROADCAST, 1)]);
    assert_eq!(c.station_stats(0).successes, 1);
    // Delivered once, counted at the sender's lane.
    assert_eq!(c.stats(0).delivered_pkts, 1);
    // A collision loses it after its one attempt, even with retries left; the unicast frame in
    // the same collision is retried and delivered.
    let mut c = cell(DcfSpec::default(), 3, 1);
    c.enqueue(0, 0, BROADCAST, P(1, 100, BROADCAST)).unwrap();
    c.enqueue(0, 1, 2, P(2, 1500, 2)).unwrap();
    let (out, drops) = drain(&mut c);
    assert_eq!(drops.len(), 1);
    assert_eq!((drops[0].1, drops[0].2), (1, DropReason::Retry));
    assert_eq!(out.iter().map(|o| o.2).collect::<Vec<_>>(), [2]);
    assert_eq!(c.station_stats(1).collisions, 1);
    // A bad port is refused, not a panic.
    assert!(c.enqueue(0, 0, 7, P(3, 100, 7)).is_err());
}
