//! Link behaviour: serialisation, delay, drop-tail, occupancy, outages, spikes, traces, seeds.

use cclab_net::*;

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
        loss: LossModel::None,
        outages: vec![],
        delay_spikes: vec![],
    }
}

fn link(c: LinkConfig) -> Link<P> {
    Link::new(c, rng::stream(1, "l"))
}

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
    // 1000 B at 8 Mbps = 1 ms each; 10 ms propagation.
    let mut l = link(cfg(8_000_000, 10, QueueLimit::Unlimited));
    for i in 0..3 {
        l.enqueue(0, P(i, 1000)).unwrap();
    }
    assert_eq!(drain(&mut l), vec![(11 * MS, 0), (12 * MS, 1), (13 * MS, 2)]);
    // An idle link starts serving at once.
    l.enqueue(100 * MS, P(3, 1000)).unwrap();
    assert_eq!(drain(&mut l), vec![(111 * MS, 3)]);
}

#[test]
fn drop_tail_in_packets_counts_the_packet_in_service() {
    let mut l = link(cfg(8_000_000, 0, QueueLimit::Packets(3)));
    for i in 0..3 {
        assert!(l.enqueue(0, P(i, 1000)).is_ok());
    }
    let d = l.enqueue(0, P(9, 1000)).unwrap_err();
    assert_eq!(d.reason, DropReason::QueueFull);
    assert_eq!(l.queue_pkts(0), 3);
    assert_eq!(l.queue_pkts(MS), 2, "the first left at 1 ms");
    assert!(l.enqueue(MS, P(4, 1000)).is_ok());
    assert_eq!(l.stats().dropped_queue_pkts, 1);
}

#[test]
fn drop_tail_in_bytes() {
    let mut l = link(cfg(8_000_000, 0, QueueLimit::Bytes(2500)));
    assert!(l.enqueue(0, P(0, 1000)).is_ok());
    assert!(l.enqueue(0, P(1, 1000)).is_ok());
    assert!(l.enqueue(0, P(2, 1000)).is_err());
    assert!(l.enqueue(0, P(3, 500)).is_ok());
    assert_eq!(l.queue_bytes(0), 2500);
}

#[test]
fn occupancy_falls_as_packets_leave() {
    let mut l = link(cfg(8_000_000, 50, QueueLimit::Unlimited));
    for i in 0..10 {
        l.enqueue(0, P(i, 1000)).unwrap();
    }
    assert_eq!(l.queue_pkts(0), 10);
    assert_eq!(l.queue_pkts(5 * MS - 1), 6);
    assert_eq!(l.queue_pkts(5 * MS), 5);
    assert_eq!(l.queue_pkts(20 * MS), 0);
    assert_eq!(l.queue_bytes(20 * MS), 0);
}

#[test]
fn outage_holds_packets_then_releases_them() {
    let mut c = cfg(8_000_000, 0, QueueLimit::Unlimited);
    c.outages = vec![Outage { start_ns: 2 * MS, duration_ns: 10 * MS }];
    let mut l = link(c);
    for i in 0..4 {
        l.enqueue(0, P(i, 1000)).unwrap();
    }
    // 0 leaves at 1 ms, 1 would overlap the outage start (1..2 ms fits exactly), 2 and 3 wait.
    assert_eq!(drain(&mut l), vec![(MS, 0), (2 * MS, 1), (13 * MS, 2), (14 * MS, 3)]);
    // Arriving during the outage: served after it.
    l.enqueue(20 * MS, P(5, 1000)).unwrap();
    assert_eq!(drain(&mut l), vec![(21 * MS, 5)]);
}

#[test]
fn delay_spike_adds_delay_without_reordering() {
    let mut c = cfg(8_000_000, 10, QueueLimit::Unlimited);
    c.delay_spikes = vec![DelaySpike { start_ns: 2 * MS, duration_ns: MS, extra_delay_ns: 100 * MS }];
    let mut l = link(c);
    for i in 0..4 {
        l.enqueue(0, P(i, 1000)).unwrap();
    }
    // Packet 1 departs at 2 ms (in the spike): arrives at 112 ms; 2 and 3 may not overtake it.
    assert_eq!(drain(&mut l), vec![(11 * MS, 0), (112 * MS, 1), (112 * MS, 2), (112 * MS, 3)]);
}

#[test]
fn trace_capacity_one_packet_per_opportunity_and_loops() {
    let tr = MahimahiTrace::parse("1\n2\n2\n5\n").unwrap();
    let mut c = cfg(1, 0, QueueLimit::Unlimited);
    c.capacity = Some(Capacity::Trace(tr));
    let mut l = link(c);
    for i in 0..6 {
        l.enqueue(0, P(i, 1500)).unwrap();
    }
    let got: Vec<u64> = drain(&mut l).into_iter().map(|(t, _)| t / MS).collect();
    assert_eq!(got, vec![1, 2, 2, 5, 6, 7], "second period starts at 5 ms");
    // A 3000 B packet needs two opportunities: the ones at 10 and 11 ms.
    l.enqueue(8 * MS, P(9, 3000)).unwrap();
    assert_eq!(drain(&mut l)[0].0 / MS, 11);
}

#[test]
fn losses_follow_the_seed() {
    let run = |seed: u64| {
        let mut c = cfg(1_000_000_000, 0, QueueLimit::Unlimited);
        c.loss = LossModel::Bernoulli { p: 0.1 };
        let mut l: Link<P> = Link::new(c, rng::stream(seed, "bottleneck.fwd"));
        (0..1000).map(|i| l.enqueue(i * MS, P(i as u32, 100)).is_err()).collect::<Vec<_>>()
    };
    assert_eq!(run(1), run(1));
    assert_ne!(run(1), run(2));
    let lost = run(1).iter().filter(|&&x| x).count();
    assert!((60..140).contains(&lost), "{lost}");
}

#[test]
fn infinite_capacity_never_queues() {
    let mut c = cfg(1, 5, QueueLimit::Packets(1));
    c.capacity = None;
    let mut l = link(c);
    for i in 0..10 {
        l.enqueue(0, P(i, 1500)).unwrap();
    }
    assert_eq!(l.queue_pkts(0), 0);
    assert_eq!(drain(&mut l).len(), 10);
}

#[test]
fn config_validation_names_the_field() {
    let c = cfg(0, 0, QueueLimit::Unlimited);
    assert!(c.validate().unwrap_err().to_string().starts_with("rate_bps"));
    let c = cfg(1, 0, QueueLimit::Packets(0));
    assert!(c.validate().unwrap_err().to_string().starts_with("queue_pkts"));
}
