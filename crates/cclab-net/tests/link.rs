//! Link behaviour: serialisation, delay, drop-tail, occupancy, outages, spikes, traces, seeds,
//! and a randomized comparison with a naive reference model.

use cclab_net::*;
use rand::{Rng, SeedableRng};

#[derive(Debug, Clone, Copy, PartialEq)]
struct P(u32, u32); // (id, bytes)
impl NetPacket for P {
    fn wire_bytes(&self) -> u32 {
        self.1
    }
}

const MS: u64 = NS_PER_MS;

fn cfg(rate_bps: u64, delay_ms: u64, queue: QueueLimit) -> LinkConfig {
    LinkConfig {
        capacity: Some(Capacity::Rate { rate_bps }),
        delay_ns: delay_ms * MS,
        queue,
        ..LinkConfig::default()
    }
}

fn link(c: LinkConfig) -> Link<P> {
    Link::new(c, rng::stream(1, "l"))
}

/// Every packet with the time it came out, waking up exactly at `next_arrival_ns`.
fn drain(l: &mut Link<P>) -> Vec<(u64, u32)> {
    let mut out = vec![];
    while let Some(t) = l.next_arrival_ns() {
        let p = l.pop_arrived(t).unwrap();
        out.push((t, p.0));
    }
    out
}

#[test]
fn serialisation_and_delay_are_exact() {
    // 1000 B at 8 Mbit/s = 1 ms each; 10 ms propagation; FIFO.
    let mut l = link(cfg(8_000_000, 10, QueueLimit::Unlimited));
    for i in 0..3 {
        l.enqueue(0, P(i, 1000)).unwrap();
    }
    assert_eq!(l.next_arrival_ns(), Some(11 * MS));
    assert!(
        l.pop_arrived(11 * MS - 1).is_none(),
        "not before its arrival"
    );
    assert_eq!(
        drain(&mut l),
        vec![(11 * MS, 0), (12 * MS, 1), (13 * MS, 2)]
    );
    // An idle link starts serving at once; a packet behind a busy one waits for it.
    l.enqueue(100 * MS, P(3, 1000)).unwrap();
    l.enqueue(100 * MS + MS / 2, P(4, 500)).unwrap();
    assert_eq!(drain(&mut l), vec![(111 * MS, 3), (111 * MS + MS / 2, 4)]);
    // Rounding up: 1 byte at 3 bit/s = 8/3 s.
    let mut l = link(cfg(3, 0, QueueLimit::Unlimited));
    l.enqueue(0, P(0, 1)).unwrap();
    assert_eq!(l.next_arrival_ns(), Some(2_666_666_667));
    assert_eq!(l.stats().tx_bytes, 1);
}

#[test]
fn drop_tail_in_packets_counts_the_packet_in_service() {
    let mut l = link(cfg(8_000_000, 0, QueueLimit::Packets(3)));
    for i in 0..3 {
        assert!(l.enqueue(0, P(i, 1000)).is_ok());
    }
    let d = l.enqueue(0, P(9, 1000)).unwrap_err();
    assert_eq!((d.pkt, d.reason), (P(9, 1000), DropReason::QueueFull));
    assert_eq!(l.queue_pkts(0), 3);
    assert_eq!(
        l.queue_pkts(MS - 1),
        3,
        "the first is still in transmission"
    );
    assert_eq!(l.queue_pkts(MS), 2, "the first left at 1 ms");
    assert!(l.enqueue(MS, P(4, 1000)).is_ok());
    assert!(l.enqueue(MS, P(5, 1000)).is_err());
    let s = l.stats();
    assert_eq!(
        (s.enqueued_pkts, s.dropped_queue_full_pkts, s.tx_bytes),
        (4, 2, 4000)
    );
}

#[test]
fn drop_tail_in_bytes() {
    let mut l = link(cfg(8_000_000, 0, QueueLimit::Bytes(2500)));
    assert!(l.enqueue(0, P(0, 1000)).is_ok());
    assert!(l.enqueue(0, P(1, 1000)).is_ok());
    assert_eq!(
        l.enqueue(0, P(2, 1000)).unwrap_err().reason,
        DropReason::QueueFull
    );
    assert!(
        l.enqueue(0, P(3, 500)).is_ok(),
        "exactly at the limit is admitted"
    );
    assert!(l.enqueue(0, P(4, 1)).is_err());
    assert_eq!(l.queue_bytes(0), 2500);
    assert_eq!(l.queue_bytes(MS), 1500);
    assert!(l.enqueue(MS, P(5, 1000)).is_ok());
    let mut l = link(cfg(8_000_000, 0, QueueLimit::Bytes(999)));
    assert!(
        l.enqueue(0, P(0, 1000)).is_err(),
        "a packet bigger than the whole queue"
    );
}

#[test]
fn lost_packets_never_occupy_the_queue() {
    let mut c = cfg(8_000_000, 0, QueueLimit::Packets(1));
    c.loss = LossModel::Bernoulli { p: 1.0 };
    let mut l = link(c);
    for i in 0..10 {
        assert_eq!(
            l.enqueue(0, P(i, 1000)).unwrap_err().reason,
            DropReason::Random
        );
    }
    assert_eq!(l.queue_pkts(0), 0);
    assert_eq!(
        (
            l.stats().dropped_random_pkts,
            l.stats().dropped_queue_full_pkts
        ),
        (10, 0)
    );
}

#[test]
fn occupancy_falls_as_packets_leave() {
    let mut l = link(cfg(8_000_000, 50, QueueLimit::Unlimited));
    for i in 0..10 {
        l.enqueue(0, P(i, 1000)).unwrap();
    }
    let at = |l: &mut Link<P>, t| (l.queue_pkts(t), l.queue_bytes(t));
    assert_eq!(at(&mut l, 0), (10, 10_000));
    assert_eq!(at(&mut l, 5 * MS - 1), (6, 6000));
    assert_eq!(at(&mut l, 5 * MS), (5, 5000));
    assert_eq!(at(&mut l, 20 * MS), (0, 0));
    assert_eq!(l.len(), 10, "all still propagating");
    assert_eq!(drain(&mut l).len(), 10);
    let s = *l.stats();
    assert_eq!((s.delivered_pkts, s.delivered_bytes), (10, 10_000));
}

#[test]
fn outage_holds_packets_then_releases_them() {
    let mut c = cfg(8_000_000, 0, QueueLimit::Unlimited);
    c.outages = vec![Outage {
        start_ns: 2 * MS + MS / 2,
        duration_ns: 10 * MS,
    }];
    let mut l = link(c);
    for i in 0..4 {
        l.enqueue(0, P(i, 1000)).unwrap();
    }
    // 0 and 1 fit before 2.5 ms; 2 would overlap the outage, so it starts at 12.5 ms.
    assert_eq!(l.queue_pkts(5 * MS), 2, "held by the outage");
    let half = MS / 2;
    assert_eq!(
        drain(&mut l),
        vec![
            (MS, 0),
            (2 * MS, 1),
            (13 * MS + half, 2),
            (14 * MS + half, 3)
        ]
    );
    // Offered during the outage: served after it.
    let mut c = cfg(8_000_000, 1, QueueLimit::Unlimited);
    c.outages = vec![Outage {
        start_ns: 10 * MS,
        duration_ns: 10 * MS,
    }];
    let mut l = link(c);
    l.enqueue(15 * MS, P(5, 1000)).unwrap();
    assert_eq!(drain(&mut l), vec![(22 * MS, 5)]);
}

#[test]
fn outage_on_an_infinitely_fast_link_holds_packets() {
    let mut c = LinkConfig {
        delay_ns: MS,
        queue: QueueLimit::Packets(2),
        ..LinkConfig::default()
    };
    c.outages = vec![Outage {
        start_ns: 10 * MS,
        duration_ns: 5 * MS,
    }];
    let mut l = link(c);
    l.enqueue(0, P(0, 1500)).unwrap();
    assert_eq!(l.queue_pkts(0), 0, "no serialisation, so no queue");
    l.enqueue(11 * MS, P(1, 1500)).unwrap();
    l.enqueue(12 * MS, P(2, 1500)).unwrap();
    assert!(
        l.enqueue(12 * MS, P(3, 1500)).is_err(),
        "held packets count towards the limit"
    );
    assert_eq!(drain(&mut l), vec![(MS, 0), (16 * MS, 1), (16 * MS, 2)]);
}

#[test]
fn delay_spike_adds_delay_without_reordering() {
    let mut c = cfg(8_000_000, 10, QueueLimit::Unlimited);
    c.delay_spikes = vec![DelaySpike {
        start_ns: 2 * MS,
        duration_ns: MS,
        extra_delay_ns: 100 * MS,
    }];
    let mut l = link(c);
    for i in 0..4 {
        l.enqueue(0, P(i, 1000)).unwrap();
    }
    // Packet 1 departs at 2 ms (in the window): arrives at 112 ms; 2 (departs at 3 ms, outside
    // the window) and 3 may not overtake it.
    assert_eq!(
        drain(&mut l),
        vec![(11 * MS, 0), (112 * MS, 1), (112 * MS, 2), (112 * MS, 3)]
    );
    l.enqueue(200 * MS, P(4, 1000)).unwrap();
    assert_eq!(
        drain(&mut l),
        vec![(211 * MS, 4)],
        "back to normal after the window"
    );
}

#[test]
fn trace_capacity_one_packet_per_opportunity_and_loops() {
    let tr = MahimahiTrace::parse("1\n2\n2\n5\n").unwrap();
    let mut c = cfg(1, 0, QueueLimit::Unlimited);
    c.capacity = Some(Capacity::Trace(tr));
    let mut l = link(c);
    for i in 0..6 {
        l.enqueue(0, P(i, if i == 0 { 40 } else { 1500 })).unwrap();
    }
    let got: Vec<u64> = drain(&mut l).into_iter().map(|(t, _)| t / MS).collect();
    assert_eq!(
        got,
        vec![1, 2, 2, 5, 6, 7],
        "small or full-size, one opportunity each; period 5 ms"
    );
    // Third period: opportunities at 11, 12, 12, 15 ms. Those passing while the queue is empty
    // are wasted (10 ms); a packet offered at 10.5 ms takes the one at 11 ms, and a 3000 B
    // packet needs two (both at 12 ms); the next packet gets the one at 15 ms.
    l.enqueue(10 * MS + MS / 2, P(8, 100)).unwrap();
    l.enqueue(10 * MS + MS / 2, P(9, 3000)).unwrap();
    l.enqueue(10 * MS + MS / 2, P(10, 1)).unwrap();
    assert_eq!(
        drain(&mut l),
        vec![(11 * MS, 8), (12 * MS, 9), (15 * MS, 10)]
    );
    // An opportunity at the instant the packet arrives is used.
    l.enqueue(16 * MS, P(11, 1500)).unwrap();
    assert_eq!(drain(&mut l), vec![(16 * MS, 11)]);
}

#[test]
fn trace_opportunities_during_an_outage_are_lost() {
    let mut c = cfg(1, 0, QueueLimit::Unlimited);
    c.capacity = Some(Capacity::Trace(
        MahimahiTrace::parse("1\n2\n3\n4\n").unwrap(),
    ));
    c.outages = vec![Outage {
        start_ns: 2 * MS,
        duration_ns: 4 * MS,
    }]; // [2, 6) ms
    let mut l = link(c);
    for i in 0..3 {
        l.enqueue(0, P(i, 1500)).unwrap();
    }
    assert_eq!(drain(&mut l), vec![(MS, 0), (6 * MS, 1), (7 * MS, 2)]);
}

#[test]
fn losses_follow_the_seed() {
    let run = |seed: u64| {
        let mut c = cfg(1_000_000_000, 0, QueueLimit::Unlimited);
        c.loss = LossModel::Bernoulli { p: 0.1 };
        let mut l: Link<P> = Link::new(c, rng::stream(seed, "bottleneck.fwd"));
        (0..1000)
            .map(|i| l.enqueue(i * MS, P(i as u32, 100)).is_err())
            .collect::<Vec<_>>()
    };
    assert_eq!(run(1), run(1));
    assert_ne!(run(1), run(2));
    let lost = run(1).iter().filter(|&&x| x).count();
    assert!((60..140).contains(&lost), "{lost}");
}

#[test]
fn per_element_streams_are_independent() {
    // The forward link's drops are the same whether or not another lossy link exists and
    // whatever traffic it carries.
    let lossy = || LinkConfig {
        loss: LossModel::Bernoulli { p: 0.3 },
        ..LinkConfig::default()
    };
    let drops = |with_other: bool| {
        let mut fwd: Link<P> = Link::new(lossy(), rng::stream(9, "bottleneck.fwd"));
        let mut rev: Link<P> = Link::new(lossy(), rng::stream(9, "bottleneck.rev"));
        let mut out = vec![];
        for i in 0..500u32 {
            if with_other {
                for _ in 0..3 {
                    let _ = rev.enqueue(u64::from(i), P(i, 40));
                }
            }
            out.push(fwd.enqueue(u64::from(i), P(i, 1500)).is_err());
        }
        out
    };
    assert_eq!(drops(false), drops(true));
}

#[test]
fn links_work_behind_the_medium_trait() {
    let mut e: Box<dyn Medium<P>> = Box::new(link(cfg(8_000_000, 10, QueueLimit::Packets(1))));
    e.enqueue(0, 0, 1, P(0, 1000)).unwrap();
    assert!(e.enqueue(0, 0, 1, P(1, 1000)).is_err());
    assert_eq!((e.queue_pkts(0, 0), e.queue_bytes(0, 0)), (1, 1000));
    assert_eq!(e.next_event_ns(), Some(11 * MS));
    assert_eq!(e.pop_delivered(11 * MS), Some(P(0, 1000)));
    assert_eq!(e.stats(0).delivered_pkts, 1);
}

#[test]
fn config_validation_names_the_field() {
    let c = cfg(0, 0, QueueLimit::Unlimited);
    assert!(c
        .validate()
        .unwrap_err()
        .to_string()
        .starts_with("capacity.rate_bps = 0"));
    let c = cfg(1, 0, QueueLimit::Packets(0));
    assert!(c
        .validate()
        .unwrap_err()
        .to_string()
        .starts_with("queue.packets = 0"));
}

/// Naive reference: departures by scanning every outage until none overlaps, occupancy by
/// scanning every admitted packet. The link must agree at every step.
#[test]
fn agrees_with_a_naive_reference_on_random_traffic() {
    let mut r = rand_chacha::ChaCha8Rng::seed_from_u64(42);
    let (mut queue_drops, mut held) = (0, 0);
    for round in 0..20 {
        let rate = r.random_range(1_000_000..100_000_000u64);
        let queue = match round % 3 {
            0 => QueueLimit::Packets(r.random_range(1..50)),
            1 => QueueLimit::Bytes(r.random_range(1500..60_000)),
            _ => QueueLimit::Unlimited,
        };
        let mut c = cfg(rate, r.random_range(0..50), queue);
        c.outages = (0..r.random_range(0..6))
            .map(|_| Outage {
                start_ns: r.random_range(0..2_000 * MS),
                duration_ns: r.random_range(0..300 * MS),
            })
            .collect();
        c.delay_spikes = (0..r.random_range(0..4))
            .map(|_| DelaySpike {
                start_ns: r.random_range(0..2_000 * MS),
                duration_ns: r.random_range(0..200 * MS),
                extra_delay_ns: r.random_range(0..500 * MS),
            })
            .collect();
        let mut l = link(c.clone());
        let mut admitted: Vec<(u64, u64, u32, u32)> = vec![]; // (depart, arrival, bytes, id)
        let (mut now, mut last_dep, mut last_arr) = (0u64, 0u64, 0u64);
        let mut delivered = vec![];
        for id in 0..3000u32 {
            now += r.random_range(0..2 * MS);
            let bytes = r.random_range(40..=1500);
            let queued: Vec<_> = admitted.iter().filter(|a| a.0 > now).collect();
            let (qp, qb) = (
                queued.len() as u64,
                queued.iter().map(|a| u64::from(a.2)).sum::<u64>(),
            );
            assert_eq!(
                (u64::from(l.queue_pkts(now)), l.queue_bytes(now)),
                (qp, qb),
                "round {round} id {id}"
            );
            let full = match queue {
                QueueLimit::Packets(n) => qp >= u64::from(n),
                QueueLimit::Bytes(n) => qb + u64::from(bytes) > n,
                QueueLimit::Unlimited => false,
            };
            let got = l.enqueue(now, P(id, bytes));
            assert_eq!(got.is_err(), full, "round {round} id {id}");
            queue_drops += u32::from(full);
            if !full {
                let tx = Capacity::tx_time_ns(rate, bytes);
                let mut start = now.max(last_dep);
                // Inside an outage, or a transmission that would run into one.
                while let Some(o) = c.outages.iter().find(|o| {
                    let end = o.start_ns + o.duration_ns;
                    o.duration_ns > 0
                        && start < end
                        && (start >= o.start_ns || start + tx > o.start_ns)
                }) {
                    start = o.start_ns + o.duration_ns;
                }
                held += u32::from(start > now.max(last_dep));
                let dep = start + tx;
                let extra: u64 = c
                    .delay_spikes
                    .iter()
                    .filter(|s| dep >= s.start_ns && dep < s.start_ns + s.duration_ns)
                    .map(|s| s.extra_delay_ns)
                    .sum();
                let arr = (dep + c.delay_ns + extra).max(last_arr);
                (last_dep, last_arr) = (dep, arr);
                admitted.push((dep, arr, bytes, id));
            }
            while let Some(p) = l.pop_arrived(now) {
                delivered.push((now, p.0));
            }
            assert_eq!(
                l.next_arrival_ns(),
                admitted.get(delivered.len()).map(|a| a.1),
                "round {round} id {id}"
            );
        }
        let mut t = now;
        while let Some(a) = l.next_arrival_ns() {
            t = t.max(a);
            while let Some(p) = l.pop_arrived(t) {
                delivered.push((t, p.0));
            }
        }
        // Each packet came out at the first poll at or after its reference arrival, in order.
        assert_eq!(delivered.len(), admitted.len());
        for (i, (&(t_out, id), a)) in delivered.iter().zip(&admitted).enumerate() {
            assert_eq!(id, a.3, "round {round}: FIFO order at {i}");
            assert!(t_out >= a.1, "round {round}: {id} came out early");
        }
        let s = l.stats();
        assert_eq!(s.enqueued_pkts, admitted.len() as u64);
        assert_eq!(
            s.tx_bytes,
            admitted.iter().map(|a| u64::from(a.2)).sum::<u64>()
        );
        assert_eq!(
            (s.delivered_pkts, s.delivered_bytes),
            (s.enqueued_pkts, s.tx_bytes)
        );
    }
    assert!(
        queue_drops > 100 && held > 10,
        "the traffic exercised drops ({queue_drops}) and outages ({held})"
    );
}
