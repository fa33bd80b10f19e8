//! A shared channel: N ports (stations) on one transmitter, the simplest multi-port medium.
//!
//! Each port has its own transmit queue (a station's device queue, drop-tail, `queue_pkts`
//! each). The channel carries one packet at a time at `rate_bps`, each transmission taking
//! `overhead_us` of airtime besides its bits (a MAC's inter-frame spaces, preamble and
//! acknowledgement, averaged), and hands the packet to its destination port `delay_ms` later.
//! When the channel frees, the next transmission goes to the next port, in port order after the
//! last one that sent, that has a packet waiting: every backlogged station gets one packet per
//! round, whatever its load. That is the long-run sharing of 802.11 DCF without its collisions
//! and backoff: an access point gets no more turns than any one station, the mechanism behind
//! S1 (a WLAN cell whose AP must carry every station's ACKs). A loss model, drawn per
//! transmission, stands for frames lost on the air.
//!
//! Decisions are taken lazily in time order, as the AQM links do: before any call at `now`, every
//! turn due by then is taken, each looking only at packets offered at or before its time; a
//! packet offered to an idle channel starts at once. So a driver wakes at
//! [`Medium::next_event_ns`] and results do not depend on how often it calls.

use crate::capacity::Capacity;
use crate::error::NetError;
use crate::link::{DropReason, Dropped, LinkStats};
use crate::loss::{Loss, LossModel};
use crate::medium::{earliest, Flight, Medium};
use crate::packet::NetPacket;
use crate::spec::ms_to_ns;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// A shared channel as a scenario gives it (the scenario's units).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SharedSpec {
    /// Bit rate of every transmission.
    pub rate_bps: u64,
    /// Propagation delay from any port to any other, ms.
    #[serde(default)]
    pub delay_ms: f64,
    /// Each port's transmit queue limit, packets (the one being sent included); None: no limit.
    #[serde(default)]
    pub queue_pkts: Option<u32>,
    /// Airtime each transmission takes besides its bits, µs.
    #[serde(default)]
    pub overhead_us: f64,
    /// Frames lost on the air, drawn per transmission.
    #[serde(default = "no_loss")]
    pub loss_model: LossModel,
}

fn no_loss() -> LossModel {
    LossModel::None
}

impl SharedSpec {
    /// Check every value; errors name the field under `path` (`media[0].rate_bps`).
    pub fn validate(&self, path: &str) -> Result<(), NetError> {
        if self.rate_bps == 0 {
            return Err(NetError::field(
                format!("{path}.rate_bps"),
                "0 is not accepted: a rate > 0 bps",
            ));
        }
        for (name, v) in [
            ("delay_ms", self.delay_ms),
            ("overhead_us", self.overhead_us),
        ] {
            if !(v.is_finite() && v >= 0.0) {
                return Err(NetError::field(
                    format!("{path}.{name}"),
                    format!("{v} is not accepted: a finite number >= 0"),
                ));
            }
        }
        if self.queue_pkts == Some(0) {
            return Err(NetError::field(
                format!("{path}.queue_pkts"),
                "0 is not accepted: at least 1",
            ));
        }
        self.loss_model
            .validate()
            .map_err(|e| NetError::field(format!("{path}.loss_model"), e.to_string()))
    }
}

#[derive(Debug)]
struct Waiting<P> {
    to: usize,
    bytes: u32,
    pkt: P,
}

/// An N-port shared channel carrying packets of type `P` (see the module doc).
#[derive(Debug)]
pub struct SharedChannel<P> {
    spec: SharedSpec,
    delay_ns: u64,
    overhead_ns: u64,
    loss: Loss,
    /// Per port: packets waiting to be sent (the front one may be on the air).
    queues: Vec<VecDeque<Waiting<P>>>,
    /// Per port: bytes in `queues`.
    queued_bytes: Vec<u64>,
    /// The port on the air and when it finishes, if any.
    sending: Option<(usize, u64)>,
    /// The port that sent last (round-robin starts after it).
    last_port: usize,
    /// Sent, not yet handed out, in arrival order.
    flight: Flight<P>,
    now_ns: u64,
    stats: Vec<LinkStats>,
    dropped: VecDeque<(u64, Dropped<P>)>,
}

impl<P: NetPacket> SharedChannel<P> {
    /// A channel of `ports` ports, drawing air losses from `rng`.
    pub fn new(spec: SharedSpec, ports: usize, rng: ChaCha8Rng) -> Self {
        SharedChannel {
            delay_ns: ms_to_ns(spec.delay_ms),
            overhead_ns: (spec.overhead_us * 1000.0).round() as u64,
            loss: Loss::new(spec.loss_model.clone(), rng),
            queues: (0..ports).map(|_| VecDeque::new()).collect(),
            queued_bytes: vec![0; ports],
            sending: None,
            last_port: ports.saturating_sub(1),
            flight: Flight::default(),
            now_ns: 0,
            stats: vec![LinkStats::default(); ports],
            dropped: VecDeque::new(),
            spec,
        }
    }

    /// Airtime of a packet of `bytes`, ns.
    fn airtime_ns(&self, bytes: u32) -> u64 {
        Capacity::tx_time_ns(self.spec.rate_bps, bytes).saturating_add(self.overhead_ns)
    }

    /// Finish the transmission on the air if it ends by `t`; returns whether the channel is free.
    fn finish_by(&mut self, t: u64) -> bool {
        let Some((port, end)) = self.sending else {
            return true;
        };
        if end > t {
            return false;
        }
        self.sending = None;
        let w = self.queues[port]
            .pop_front()
            .expect("the port on the air has a packet");
        self.queued_bytes[port] -= u64::from(w.bytes);
        if self.loss.drop_next() {
            let st = &mut self.stats[port];
            st.dropped_random_pkts = st.dropped_random_pkts.saturating_add(1);
            self.dropped.push_back((
                end,
                Dropped {
                    pkt: w.pkt,
                    reason: DropReason::Random,
                },
            ));
        } else {
            self.flight
                .push(end.saturating_add(self.delay_ns), w.to, w.bytes, w.pkt);
        }
        true
    }

    /// Put the next backlogged port after `last_port` on the air at `t`.
    fn start_next(&mut self, t: u64) {
        let n = self.queues.len();
        for k in 1..=n {
            let port = (self.last_port + k) % n;
            if let Some(w) = self.queues[port].front() {
                let end = t.saturating_add(self.airtime_ns(w.bytes));
                self.stats[port].tx_bytes =
                    self.stats[port].tx_bytes.saturating_add(u64::from(w.bytes));
                self.sending = Some((port, end));
                self.last_port = port;
                return;
            }
        }
    }

    /// Take every turn due by `now_ns` (never going back in time).
    fn catch_up(&mut self, now_ns: u64) -> u64 {
        let now = now_ns.max(self.now_ns);
        self.now_ns = now;
        while let Some((_, end)) = self.sending {
            if end > now || !self.finish_by(end) {
                break;
            }
            self.start_next(end);
        }
        now
    }
}

impl<P: NetPacket> Medium<P> for SharedChannel<P> {
    fn ports(&self) -> usize {
        self.queues.len()
    }

    fn enqueue(&mut self, now_ns: u64, from: usize, to: usize, pkt: P) -> Result<(), Dropped<P>> {
        let now = self.catch_up(now_ns);
        let n = self.queues.len();
        if from >= n || to >= n || from == to {
            // A driver bug; refuse rather than panic.
            return Err(Dropped {
                pkt,
                reason: DropReason::QueueFull,
            });
        }
        if let Some(limit) = self.spec.queue_pkts {
            if self.queues[from].len() >= limit as usize {
                let st = &mut self.stats[from];
                st.dropped_queue_full_pkts = st.dropped_queue_full_pkts.saturating_add(1);
                return Err(Dropped {
                    pkt,
                    reason: DropReason::QueueFull,
                });
            }
        }
        let bytes = pkt.wire_bytes();
        self.queues[from].push_back(Waiting { to, bytes, pkt });
        self.queued_bytes[from] = self.queued_bytes[from].saturating_add(u64::from(bytes));
        self.stats[from].enqueued_pkts = self.stats[from].enqueued_pkts.saturating_add(1);
        if self.sending.is_none() {
            self.start_next(now);
        }
        Ok(())
    }

    fn next_event_ns(&self) -> Option<u64> {
        earliest(self.flight.next_arrival_ns(), self.sending.map(|(_, e)| e))
    }

    fn pop_delivered(&mut self, now_ns: u64) -> Option<P> {
        let now = self.catch_up(now_ns);
        self.flight.pop_due(now, &mut self.stats)
    }

    fn pop_dropped(&mut self) -> Option<(u64, Dropped<P>)> {
        self.dropped.pop_front()
    }

    fn lanes(&self) -> usize {
        self.queues.len()
    }

    fn queue_pkts(&mut self, now_ns: u64, lane: usize) -> u32 {
        self.catch_up(now_ns);
        self.queues
            .get(lane)
            .map_or(0, |q| u32::try_from(q.len()).unwrap_or(u32::MAX))
    }

    fn queue_bytes(&mut self, now_ns: u64, lane: usize) -> u64 {
        self.catch_up(now_ns);
        self.queued_bytes.get(lane).copied().unwrap_or(0)
    }

    fn stats(&self, lane: usize) -> &LinkStats {
        &self.stats[lane.min(self.stats.len() - 1)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng;

    /// (id, bytes, the port the test addressed it to).
    #[derive(Debug, PartialEq)]
    struct P(u32, u32, usize);
    impl NetPacket for P {
        fn wire_bytes(&self) -> u32 {
            self.1
        }
    }

    fn chan(ports: usize, overhead_us: f64, queue_pkts: Option<u32>) -> SharedChannel<P> {
        let spec = SharedSpec {
            rate_bps: 12_000_000,
            delay_ms: 0.5,
            queue_pkts,
            overhead_us,
            loss_model: LossModel::None,
        };
        SharedChannel::new(spec, ports, rng::stream(1, "cell"))
    }

    /// Deliver everything, waking only at `next_event_ns`; (time, port, packet id).
    fn drain(c: &mut SharedChannel<P>) -> Vec<(u64, usize, u32)> {
        let mut out = vec![];
        while let Some(t) = c.next_event_ns() {
            while let Some(p) = c.pop_delivered(t) {
                out.push((t, p.2, p.0));
            }
        }
        out
    }

    #[test]
    fn one_transmission_at_a_time_with_overhead_then_delay() {
        let mut c = chan(3, 100.0, None);
        c.enqueue(0, 0, 2, P(1, 1500, 2)).unwrap(); // 1 ms of bits + 0.1 ms overhead
        c.enqueue(0, 1, 2, P(2, 1500, 2)).unwrap();
        assert_eq!(drain(&mut c), [(1_600_000, 2, 1), (2_700_000, 2, 2)]);
        assert_eq!(c.stats(0).tx_bytes, 1500);
        assert_eq!(c.stats(2).delivered_pkts, 2);
    }

    #[test]
    fn backlogged_ports_take_turns_whatever_their_load() {
        // Port 0 offers 30 packets, port 1 offers 10, port 2 (an "AP") 10: round robin.
        let mut c = chan(4, 0.0, None);
        for i in 0..30 {
            c.enqueue(0, 0, 3, P(i, 1500, 3)).unwrap();
        }
        for i in 0..10 {
            c.enqueue(0, 1, 3, P(100 + i, 1500, 3)).unwrap();
            c.enqueue(0, 2, 3, P(200 + i, 1500, 3)).unwrap();
        }
        let order: Vec<u32> = drain(&mut c).iter().map(|d| d.2 / 100).collect();
        // The first packet went on the air when offered (port 0); then 1, 2, 0, 1, 2, ...
        assert_eq!(&order[..7], &[0, 1, 2, 0, 1, 2, 0]);
        let first_30: Vec<u32> = order[..30].to_vec();
        for port in 0..3 {
            assert_eq!(
                first_30.iter().filter(|&&p| p == port).count(),
                10,
                "{order:?}"
            );
        }
    }

    #[test]
    fn lazy_calls_give_the_same_result_as_exact_ones() {
        let offers: Vec<(u64, usize, u32)> = (0..200u32)
            .map(|i| (u64::from(i) * 370_000, (i % 3) as usize, i))
            .collect();
        let run = |step: Option<u64>| {
            let mut c = chan(4, 50.0, Some(5));
            let mut out = vec![];
            let mut drops = 0;
            for &(t, from, id) in &offers {
                if let Some(s) = step {
                    // Wake at a coarse grid instead of at next_event_ns.
                    let mut w = (t / s) * s;
                    while w <= t {
                        while let Some(p) = c.pop_delivered(w) {
                            out.push((p.2, p.0));
                        }
                        w += s;
                    }
                } else {
                    while let Some(e) = c.next_event_ns().filter(|&e| e <= t) {
                        while let Some(p) = c.pop_delivered(e) {
                            out.push((p.2, p.0));
                        }
                    }
                }
                drops += c.enqueue(t, from, 3, P(id, 1500, 3)).is_err() as u32;
            }
            out.extend(drain(&mut c).iter().map(|d| (d.1, d.2)));
            (out, drops)
        };
        let exact = run(None);
        assert_eq!(exact.0.len() + exact.1 as usize, 200);
        assert!(exact.1 > 0, "the 5-packet station queues overflow");
        assert_eq!(run(Some(3_300_000)), exact);
    }

    #[test]
    fn a_full_station_queue_refuses_and_validate_names_fields() {
        let mut c = chan(2, 0.0, Some(2));
        c.enqueue(0, 0, 1, P(1, 100, 1)).unwrap();
        c.enqueue(0, 0, 1, P(2, 100, 1)).unwrap();
        assert_eq!(
            c.enqueue(0, 0, 1, P(3, 100, 1)).unwrap_err().reason,
            DropReason::QueueFull
        );
        assert_eq!(c.queue_pkts(0, 0), 2);
        assert!(
            c.enqueue(0, 1, 1, P(4, 100, 1)).is_err(),
            "from == to is refused"
        );
        let bad = SharedSpec {
            rate_bps: 0,
            delay_ms: 0.0,
            queue_pkts: None,
            overhead_us: 0.0,
            loss_model: LossModel::None,
        };
        assert!(
            matches!(bad.validate("media[1]"), Err(NetError::Field { field, .. }) if field == "media[1].rate_bps")
        );
    }
}
