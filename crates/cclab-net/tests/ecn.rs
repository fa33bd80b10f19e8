//! ECN step marking at a link's queue: which packets are marked, the counter, validation, and
//! that a link without a threshold never touches a packet.

use cclab_net::*;

#[derive(Debug, Clone, Copy, PartialEq)]
struct P {
    id: u32,
    ecn: Ecn,
}
impl NetPacket for P {
    fn wire_bytes(&self) -> u32 {
        1000
    }
    fn ecn(&self) -> Ecn {
        self.ecn
    }
    fn set_ce(&mut self) {
        self.ecn = Ecn::Ce;
    }
}

/// 8 Mbit/s: a 1000-byte packet takes 1 ms to serialise.
fn link(threshold: Option<u32>, queue: QueueLimit) -> Link<P> {
    let cfg = LinkConfig {
        capacity: Some(Capacity::Rate {
            rate_bps: 8_000_000,
        }),
        queue,
        ecn_threshold_pkts: threshold,
        ..LinkConfig::default()
    };
    cfg.validate().unwrap();
    Link::new(cfg, rng::stream(1, "l"))
}

fn drain(l: &mut Link<P>) -> Vec<P> {
    let mut out = vec![];
    while let Some(t) = l.next_arrival_ns() {
        out.push(l.pop_arrived(t).unwrap());
    }
    out
}

#[test]
fn ect_packets_are_marked_once_the_queue_holds_k() {
    let mut l = link(Some(3), QueueLimit::Packets(10));
    // A burst of 6 ECT(0) packets at t = 0: the queue holds 0, 1, 2, 3, 4, 5 at their enqueue.
    for id in 0..6 {
        l.enqueue(0, P { id, ecn: Ecn::Ect0 }).unwrap();
    }
    let got: Vec<Ecn> = drain(&mut l).iter().map(|p| p.ecn).collect();
    use Ecn::*;
    assert_eq!(got, [Ect0, Ect0, Ect0, Ce, Ce, Ce]);
    assert_eq!(l.stats().ce_marks, 3);
}

#[test]
fn not_ect_and_ce_packets_are_left_alone_and_drop_tail_still_drops() {
    let mut l = link(Some(1), QueueLimit::Packets(3));
    let ecns = [Ecn::Ect1, Ecn::NotEct, Ecn::Ce, Ecn::Ect0, Ecn::Ect0];
    let mut dropped = 0;
    for (id, ecn) in ecns.into_iter().enumerate() {
        if let Err(d) = l.enqueue(0, P { id: id as u32, ecn }) {
            assert_eq!(d.reason, DropReason::QueueFull);
            assert_eq!(d.pkt.ecn, Ecn::Ect0, "a dropped packet is not marked");
            dropped += 1;
        }
    }
    assert_eq!(dropped, 2, "queue limit 3: packets 4 and 5 are dropped");
    let got: Vec<Ecn> = drain(&mut l).iter().map(|p| p.ecn).collect();
    // The first ECT(1) found an empty queue; Not-ECT is never marked; CE stays CE (not counted).
    assert_eq!(got, [Ecn::Ect1, Ecn::NotEct, Ecn::Ce]);
    assert_eq!(l.stats().ce_marks, 0);
}

#[test]
fn marking_follows_the_instantaneous_queue_as_it_drains() {
    let mut l = link(Some(2), QueueLimit::Unlimited);
    let p = |id| P { id, ecn: Ecn::Ect0 };
    l.enqueue(0, p(0)).unwrap();
    l.enqueue(0, p(1)).unwrap();
    l.enqueue(0, p(2)).unwrap(); // queue holds 2: marked
                                 // At 2.5 ms two packets have left: the queue holds 1, so the next one is not marked.
    l.enqueue(2_500_000, p(3)).unwrap();
    let got: Vec<(u32, Ecn)> = drain(&mut l).iter().map(|p| (p.id, p.ecn)).collect();
    assert_eq!(
        got,
        [(0, Ecn::Ect0), (1, Ecn::Ect0), (2, Ecn::Ce), (3, Ecn::Ect0)]
    );
    assert_eq!(l.stats().ce_marks, 1);
}

#[test]
fn without_a_threshold_nothing_is_marked() {
    let mut l = link(None, QueueLimit::Unlimited);
    for id in 0..50 {
        l.enqueue(0, P { id, ecn: Ecn::Ect0 }).unwrap();
    }
    assert!(drain(&mut l).iter().all(|p| p.ecn == Ecn::Ect0));
    assert_eq!(l.stats().ce_marks, 0);
}

#[test]
fn the_threshold_is_validated_and_named() {
    let bad = |k: u32, queue: QueueLimit| {
        let c = LinkConfig {
            ecn_threshold_pkts: Some(k),
            queue,
            ..LinkConfig::default()
        };
        match c.validate() {
            Err(NetError::InvalidField {
                field, accepted, ..
            }) => (field, accepted),
            other => panic!("{other:?}"),
        }
    };
    let (field, accepted) = bad(0, QueueLimit::Unlimited);
    assert_eq!(field, "ecn_threshold_pkts");
    assert!(accepted.contains("at least 1"), "{accepted}");
    let (field, accepted) = bad(100, QueueLimit::Packets(100));
    assert_eq!(field, "ecn_threshold_pkts");
    assert!(accepted.contains("below queue.packets (100)"), "{accepted}");
    let ok = LinkConfig {
        ecn_threshold_pkts: Some(99),
        queue: QueueLimit::Packets(100),
        ..LinkConfig::default()
    };
    assert!(ok.validate().is_ok());
    // Deserialises from the field name; absent means none.
    let c: LinkConfig = serde_json::from_str(r#"{"ecn_threshold_pkts": 20}"#).unwrap();
    assert_eq!(c.ecn_threshold_pkts, Some(20));
    let c: LinkConfig = serde_json::from_str("{}").unwrap();
    assert_eq!(c.ecn_threshold_pkts, None);
}
