//! A link with a 3G radio model: RLC retransmission delays and discards against their closed
//! forms, in-sequence delivery, retransmissions taking capacity, random delay spikes, and the
//! model changing nothing when it is off.

use cclab_net::radio::{spike_rng, SpikeProcess};
use cclab_net::*;

#[derive(Debug, Clone, Copy, PartialEq)]
struct P(u32, u32); // (id, bytes)
impl NetPacket for P {
    fn wire_bytes(&self) -> u32 {
        self.1
    }
}

const MS: u64 = NS_PER_MS;
const RATE_BPS: u64 = 384_000;
const R_NS: u64 = 400 * MS;

fn radio_link(radio: RadioConfig, seed: u64) -> Link<P> {
    let c = LinkConfig {
        capacity: Some(Capacity::Rate { rate_bps: RATE_BPS }),
        delay_ns: 150 * MS,
        radio: Some(radio),
        ..LinkConfig::default()
    };
    c.validate().unwrap();
    Link::new(c, rng::stream(seed, "radio.fwd"))
}

fn bernoulli(e: f64, max_dat: u32) -> RadioConfig {
    RadioConfig {
        pdu_loss: LossModel::Bernoulli { p: e },
        max_dat,
        ..RadioConfig::default()
    }
}

/// Packets with a time, ns.
type Timed = Vec<(u64, P)>;

/// Offer `(time, packet)` in time order, taking out every arrival and drop when it happens
/// (the link's clock never runs ahead of the time recorded); then drain. Returns what was
/// delivered and what the RLC discarded, each with its time.
fn run(l: &mut Link<P>, offers: &[(u64, P)]) -> (Timed, Timed) {
    let (mut out, mut dropped) = (Vec::new(), Vec::new());
    let mut take = |l: &mut Link<P>, until: u64| {
        while let Some(t) = l.next_arrival_ns().filter(|&t| t <= until) {
            while let Some(p) = l.pop_arrived(t) {
                out.push((t, p));
            }
            while let Some((td, d)) = l.pop_dropped() {
                assert_eq!((d.reason, td), (DropReason::Rlc, t));
                dropped.push((td, d.pkt));
            }
        }
    };
    for &(t, p) in offers {
        take(l, t);
        l.enqueue(t, p).unwrap();
    }
    take(l, u64::MAX);
    (out, dropped)
}

/// The share of packets delayed by k retransmission intervals, k = 0..M-1, and the share
/// discarded, for packets far enough apart that none waits for another: the closed forms
/// P(K = k) = (1 - e^(k+1))^n - (1 - e^k)^n and 1 - (1 - e^M)^n.
#[test]
fn delay_shares_and_residual_loss_match_the_closed_forms() {
    // e = 0.05, n = 36 PDUs (1500 B in 42 B PDUs), M = 4; 40 000 packets 3 s apart (more than
    // M intervals plus a transmission, so no packet is held by another). A packet's delay past
    // its unhindered arrival (end of its first transmission + 150 ms) is in (K R - 31.25 ms,
    // K R]: rounding to intervals gives K. Shares checked within 5 standard errors + 1e-4.
    let (e, n, m, packets) = (0.05f64, 36i32, 4u32, 40_000u32);
    let mut l = radio_link(bernoulli(e, m), 1);
    let tx_ns = Capacity::tx_time_ns(RATE_BPS, 1500);
    let mut counts = vec![0u32; m as usize + 1];
    let mut delivered = 0;
    for i in 0..packets {
        let t0 = u64::from(i) * 3000 * MS;
        l.enqueue(t0, P(i, 1500)).unwrap();
        let t = l.next_arrival_ns().unwrap();
        assert!(t < t0 + 3000 * MS);
        match l.pop_arrived(t) {
            Some(p) => {
                assert_eq!(p.0, i);
                let late = t - (t0 + tx_ns + 150 * MS);
                let k = ((late + R_NS / 2) / R_NS) as usize;
                assert!(k < m as usize && late + tx_ns > k as u64 * R_NS, "{late}");
                counts[k] += 1;
                delivered += 1;
            }
            None => {
                let (td, d) = l.pop_dropped().unwrap();
                assert_eq!((d.pkt.0, d.reason), (i, DropReason::Rlc));
                // Discarded M intervals after a PDU's first transmission, then the delay.
                assert!(
                    td >= t0 + u64::from(m) * R_NS + 150 * MS
                        && td <= t0 + tx_ns + u64::from(m) * R_NS + 150 * MS
                );
                counts[m as usize] += 1;
            }
        }
    }
    assert_eq!(l.stats().dropped_rlc_pkts, u64::from(packets - delivered));
    assert_eq!(l.stats().dropped_pkts(), u64::from(packets - delivered));
    let cdf = |k: i32| {
        if k < 0 {
            0.0
        } else {
            (1.0 - e.powi(k + 1)).powi(n)
        }
    };
    for k in 0..=m as i32 {
        let want = if k == m as i32 {
            1.0 - (1.0 - e.powi(k)).powi(n)
        } else {
            cdf(k) - cdf(k - 1)
        };
        let got = f64::from(counts[k as usize]) / f64::from(packets);
        let tol = 5.0 * (want * (1.0 - want) / f64::from(packets)).sqrt() + 1e-4;
        assert!(
            (got - want).abs() < tol,
            "k = {k}: {got} vs {want} (tol {tol})"
        );
    }
}

#[test]
fn delivery_is_in_sequence_and_waits_for_the_packets_ahead() {
    // Back to back (a packet every 20 ms, the bearer's 1000 B take 20.8 ms): with 10 % PDU
    // errors most packets need a retransmission and many are done before the one ahead.
    let mut l = radio_link(bernoulli(0.1, 3), 2);
    let offers: Vec<(u64, P)> = (0..3000)
        .map(|i| (u64::from(i) * 20 * MS, P(i, 1000)))
        .collect();
    let (out, dropped) = run(&mut l, &offers);
    assert_eq!(out.len() + dropped.len(), 3000);
    assert!(!dropped.is_empty(), "M = 3 with 10 % errors discards some");
    let mut all: Vec<(u64, u32)> = out.iter().chain(&dropped).map(|(t, p)| (*t, p.0)).collect();
    all.sort_by_key(|&(t, id)| (t, id));
    assert!(
        all.windows(2).all(|w| w[0].1 < w[1].1),
        "ids in order of time: in sequence"
    );
    // Held: a packet handed out at the same instant as the one before it was through earlier
    // (no two are through at once unhindered: their transmissions end 20.8 ms apart).
    let held = out.windows(2).filter(|w| w[0].0 == w[1].0).count();
    assert!(held > 500, "{held}");
    // Behind a discarded packet, nothing is handed out before its discard.
    for (td, d) in &dropped {
        assert!(out.iter().filter(|(_, p)| p.0 > d.0).all(|(t, _)| t >= td));
    }
}

#[test]
fn retransmitted_pdus_take_capacity() {
    // Every transmission fails, MaxDAT 2: each PDU is sent twice, so a 1000 B packet occupies
    // the bearer for 2000 B and the next one leaves that much later.
    let mut l = radio_link(bernoulli(1.0, 2), 3);
    l.enqueue(0, P(0, 1000)).unwrap();
    l.enqueue(0, P(1, 1000)).unwrap();
    assert_eq!(l.stats().tx_bytes, 4000);
    assert_eq!(l.queue_pkts(Capacity::tx_time_ns(RATE_BPS, 2000) - 1), 2);
    assert_eq!(l.queue_pkts(Capacity::tx_time_ns(RATE_BPS, 2000)), 1);
    let (out, dropped) = run(&mut l, &[]);
    assert!(out.is_empty());
    assert_eq!(dropped.len(), 2);
    assert_eq!(l.stats().dropped_rlc_pkts, 2);
}

#[test]
fn error_free_radio_changes_nothing_and_keeps_the_loss_draws() {
    // A radio model with no PDU errors and no spikes delivers exactly as the wire does, and
    // the link's own random losses are the same draws with or without it.
    let base = LinkConfig {
        capacity: Some(Capacity::Rate { rate_bps: RATE_BPS }),
        delay_ns: 150 * MS,
        loss: LossModel::Bernoulli { p: 0.1 },
        ..LinkConfig::default()
    };
    let with_radio = LinkConfig {
        radio: Some(RadioConfig::default()),
        ..base.clone()
    };
    let run = |c: LinkConfig| {
        let mut l: Link<P> = Link::new(c, rng::stream(4, "x.fwd"));
        let mut lost = Vec::new();
        let mut out = Vec::new();
        for i in 0..2000u32 {
            let t = u64::from(i) * 7 * MS;
            while let Some(ta) = l.next_arrival_ns().filter(|&ta| ta <= t) {
                out.extend(std::iter::from_fn(|| l.pop_arrived(ta)).map(|p| (ta, p)));
            }
            if let Err(d) = l.enqueue(t, P(i, 40 + i % 1460)) {
                lost.push(d.pkt.0);
            }
        }
        out.extend(run(&mut l, &[]).0);
        (lost, out)
    };
    let (a, b) = (run(base), run(with_radio));
    assert!(a.0.len() > 100);
    assert_eq!(a, b);
}

#[test]
fn nothing_is_delivered_during_a_spike_and_both_directions_stall_together() {
    // Fades every 20 s on average, 0.5 s to 2 s mean; a packet every 50 ms for 20 minutes.
    let radio = RadioConfig {
        spike_rate_per_s: 0.05,
        spike_duration_min_ns: 500 * MS,
        spike_duration_mean_ns: 2000 * MS,
        ..RadioConfig::default()
    };
    let dir = |name: &str| radio_link(radio.clone(), 6).with_spike_rng(spike_rng(6, name));
    let (mut fwd, mut rev) = (dir("cell.fwd"), dir("cell.rev"));
    let offers = |bytes: u32, offset_ns: u64| -> Vec<(u64, P)> {
        (0..24_000u32)
            .map(|i| (u64::from(i) * 50 * MS + offset_ns, P(i, bytes)))
            .collect()
    };
    let outs = [
        run(&mut fwd, &offers(1000, 0)).0,
        run(&mut rev, &offers(60, 7 * MS)).0,
    ];
    let mut fades = Vec::new();
    let mut probe = SpikeProcess::new(&radio, spike_rng(6, "cell"));
    let mut t = 0;
    while let Some((s, e)) = probe.fade_after(t) {
        if s > 1300 * NS_PER_S {
            break;
        }
        fades.push((s, e));
        t = e;
    }
    assert!(fades.len() > 30, "{}", fades.len());
    for out in outs {
        assert_eq!(out.len(), 24_000);
        let mut held = 0;
        for (t, _) in &out {
            assert!(
                fades.iter().all(|&(s, e)| !(s <= *t && *t < e)),
                "delivered at {t} inside a fade"
            );
            held += usize::from(fades.iter().any(|&(_, e)| e == *t));
        }
        assert!(held > 100, "packets held to the end of a fade: {held}");
    }
}

#[test]
fn each_pdu_is_timed_from_its_own_first_transmission_and_delivery_waits_in_sequence() {
    // Gilbert-Elliott errors that flip state at every first transmission (Bad, Good, Bad, ...)
    // and a retransmission that always gets through (457 slots per interval, an odd number of
    // steps of a chain with 1 - p_gb - p_bg = -1, from Bad: Good). Packet 0 (126 B, PDUs 0-2)
    // loses PDUs 0 and 2 once; packet 1 (42 B, one PDU) gets through at once.
    let radio = RadioConfig {
        pdu_loss: LossModel::GilbertElliott {
            p_good_bad: 1.0,
            p_bad_good: 1.0,
            loss_good: 0.0,
            loss_bad: 1.0,
        },
        ..RadioConfig::default()
    };
    let mut l = radio_link(radio, 7);
    l.enqueue(0, P(0, 126)).unwrap();
    l.enqueue(0, P(1, 42)).unwrap();
    let tx = |bytes| Capacity::tx_time_ns(RATE_BPS, bytes);
    // Packet 0 holds the bearer for 126 B + 2 PDUs resent = 210 B.
    assert_eq!(l.stats().tx_bytes, 210 + 42);
    assert_eq!(l.queue_pkts(tx(210) - 1), 2);
    assert_eq!(l.queue_pkts(tx(210)), 1);
    // Its last PDU (first sent at tx(126)) is through one interval later; PDU 0's retry, at
    // tx(42) + R, came earlier.
    let arrival0 = tx(126) + R_NS + 150 * MS;
    assert_eq!(l.next_arrival_ns(), Some(arrival0));
    assert!(l.pop_arrived(arrival0 - 1).is_none());
    // Packet 1 was through at tx(210) + tx(42), long before, but is handed on only after it.
    assert_eq!(l.pop_arrived(arrival0), Some(P(0, 126)));
    assert_eq!(l.next_arrival_ns(), Some(arrival0));
    assert_eq!(l.pop_arrived(arrival0), Some(P(1, 42)));
    assert!(l.is_empty());
}
