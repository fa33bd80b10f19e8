//! One direction of a link: random loss at ingress, a drop-tail queue, FIFO service at the
//! capacity (a rate or a Mahimahi trace, paused by outages), then propagation delay (plus delay
//! spikes).
//!
//! Order of operations, as in Dummynet and Mahimahi:
//! 1. random loss is drawn first, once per offered packet (a lost packet never occupies the
//!    queue);
//! 2. drop-tail admission against the queue limit, where the queue counts the packets waiting
//!    plus the one being transmitted (like Dummynet's pipe queue);
//! 3. ECN marking, when the link has an `ecn_threshold_pkts`: an admitted ECT packet is marked
//!    CE if the queue already holds at least that many packets (step marking on the
//!    instantaneous queue at enqueue, as DCTCP and L4S switches do; RFC 3168 section 5);
//! 4. FIFO service at the capacity;
//! 5. propagation delay (plus any delay spike), without reordering.
//!
//! Each packet's departure (the end of its transmission) is computed when it is enqueued:
//! `depart = max(now, previous depart) + tx_time`, moved past outages (or to trace
//! opportunities). Its arrival at the far end is `depart + delay + spike extra`, never earlier
//! than the previous packet's arrival. So a packet costs its driver one wake-up (its arrival),
//! and queue occupancy is tracked with counters advanced lazily as `now` moves.

use crate::capacity::{Capacity, MAHIMAHI_MTU_BYTES};
use crate::error::NetError;
use crate::loss::{Loss, LossModel};
use crate::packet::NetPacket;
use crate::schedule::{OutageSchedule, SpikeSchedule};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

pub use crate::schedule::{DelaySpike, Outage};

/// Drop-tail limit. In a config: `{ packets = 100 }`, `{ bytes = 150000 }` or `"unlimited"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum QueueLimit {
    /// At most this many packets queued (the one in transmission included).
    Packets(u32),
    /// At most this many bytes queued (the packet in transmission included); a packet is
    /// admitted only if the bytes queued plus its own stay within the limit.
    Bytes(u64),
    /// No limit.
    #[default]
    Unlimited,
}

/// Settings of one link direction. Every field has a default (an ideal link: infinitely fast,
/// no delay, no limit, no loss).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LinkConfig {
    /// How the link serialises; `None`: infinitely fast (no serialisation, so no queue).
    pub capacity: Option<Capacity>,
    /// Propagation delay, ns.
    pub delay_ns: u64,
    /// Drop-tail limit.
    pub queue: QueueLimit,
    /// Random loss at ingress.
    pub loss: LossModel,
    /// Periods when the link transmits nothing.
    pub outages: Vec<Outage>,
    /// Periods when departing packets take longer to arrive.
    pub delay_spikes: Vec<DelaySpike>,
    /// ECN step marking: an ECT packet admitted while the queue holds at least this many packets
    /// (the one in transmission included) is marked CE. `None`: no marking (drop-tail only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ecn_threshold_pkts: Option<u32>,
}

impl LinkConfig {
    /// Check every setting; the error names the field (`capacity.rate_bps`, `queue.packets`,
    /// `queue.bytes`, `loss.p`, ...).
    pub fn validate(&self) -> Result<(), NetError> {
        if let Some(c) = &self.capacity {
            c.validate().map_err(|e| e.in_field("capacity"))?;
        }
        match self.queue {
            QueueLimit::Packets(0) => {
                return Err(NetError::invalid("queue.packets", 0, "at least 1"))
            }
            QueueLimit::Bytes(0) => return Err(NetError::invalid("queue.bytes", 0, "at least 1")),
            _ => {}
        }
        match (self.ecn_threshold_pkts, self.queue) {
            (Some(0), _) => {
                return Err(NetError::invalid(
                    "ecn_threshold_pkts",
                    0,
                    "at least 1 (or none: no marking)",
                ))
            }
            (Some(k), QueueLimit::Packets(limit)) if k >= limit => {
                return Err(NetError::invalid(
                    "ecn_threshold_pkts",
                    k,
                    &format!("below queue.packets ({limit}): the queue never holds more"),
                ))
            }
            _ => {}
        }
        self.loss.validate().map_err(|e| e.in_field("loss"))
    }
}

/// Why a packet was dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DropReason {
    /// The random loss model chose it.
    Loss,
    /// The queue was full.
    QueueFull,
}

/// A dropped packet, handed back to the caller with the reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dropped<P> {
    /// The packet.
    pub pkt: P,
    /// Why it was dropped.
    pub reason: DropReason,
}

/// Counters of one link direction.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LinkStats {
    /// Packets admitted to the queue.
    pub enqueued_pkts: u64,
    /// Packets dropped by the random loss model.
    pub dropped_loss_pkts: u64,
    /// Packets refused because the queue was full.
    pub dropped_queue_pkts: u64,
    /// Bytes admitted: they finish, or will finish, transmission.
    pub tx_bytes: u64,
    /// Packets handed out at the far end.
    pub delivered_pkts: u64,
    /// ECT packets this link marked CE (`ecn_threshold_pkts`).
    pub ce_marks: u64,
    /// Bytes handed out at the far end.
    pub delivered_bytes: u64,
}

#[derive(Debug)]
struct Entry<P> {
    arrival_ns: u64,
    depart_ns: u64,
    bytes: u32,
    pkt: P,
}

/// One direction of a link carrying packets of type `P`.
///
/// Time is passed in, never read. It must not go back: a call with an earlier `now_ns` than
/// one already seen is treated as happening at the latest time seen.
#[derive(Debug)]
pub struct Link<P> {
    cfg: LinkConfig,
    loss: Loss,
    outages: OutageSchedule,
    spikes: SpikeSchedule,
    /// Packets admitted and not yet handed out, in FIFO order (queued, then propagating).
    fifo: VecDeque<Entry<P>>,
    /// Entries handed out so far (the absolute index of `fifo[0]`).
    popped: u64,
    /// Absolute index of the first entry still queued (its depart > `now_ns`).
    served: u64,
    queued_pkts: u64,
    queued_bytes: u64,
    /// Latest time seen.
    now_ns: u64,
    last_depart_ns: u64,
    last_arrival_ns: u64,
    /// Trace capacity: number of the first opportunity not yet used.
    next_opportunity: u64,
    stats: LinkStats,
}

impl<P: NetPacket> Link<P> {
    /// A link with `cfg`, drawing its losses from `rng` (see [`crate::rng::stream`]). The
    /// config should have passed [`LinkConfig::validate`]; if not, nothing panics (a rate of 0
    /// never transmits, out-of-range probabilities act as clamped).
    pub fn new(cfg: LinkConfig, rng: ChaCha8Rng) -> Self {
        Link {
            loss: Loss::new(cfg.loss.clone(), rng),
            outages: OutageSchedule::new(&cfg.outages),
            spikes: SpikeSchedule::new(&cfg.delay_spikes),
            cfg,
            fifo: VecDeque::new(),
            popped: 0,
            served: 0,
            queued_pkts: 0,
            queued_bytes: 0,
            now_ns: 0,
            last_depart_ns: 0,
            last_arrival_ns: 0,
            next_opportunity: 0,
            stats: LinkStats::default(),
        }
    }

    /// Move the clock to `now_ns` (never back) and account transmissions finished by then.
    /// Returns the clock.
    fn advance(&mut self, now_ns: u64) -> u64 {
        let now = now_ns.max(self.now_ns);
        self.now_ns = now;
        while let Some(e) = self.fifo.get((self.served - self.popped) as usize) {
            if e.depart_ns > now {
                break;
            }
            debug_assert!(self.queued_pkts > 0 && self.queued_bytes >= u64::from(e.bytes));
            self.queued_pkts -= 1;
            self.queued_bytes -= u64::from(e.bytes);
            self.served += 1;
        }
        now
    }

    /// End of transmission of a packet of `bytes` that reaches the head of the queue at `ready`.
    fn departure(&mut self, ready: u64, bytes: u32) -> u64 {
        match &self.cfg.capacity {
            None => self.outages.fit(ready, 0),
            Some(Capacity::Rate { rate_bps }) => {
                let tx = Capacity::tx_time_ns(*rate_bps, bytes);
                self.outages.fit(ready, tx).saturating_add(tx)
            }
            Some(Capacity::Trace(tr)) => {
                // One opportunity per MTU (at least one); opportunities inside an outage are lost.
                let needed = u64::from(bytes.div_ceil(MAHIMAHI_MTU_BYTES).max(1));
                let mut k = tr.first_at_or_after(ready).max(self.next_opportunity);
                let mut used = 0;
                loop {
                    let t = tr.opportunity_ns(k);
                    let free = self.outages.fit(t, 0);
                    if free != t {
                        k = tr.first_at_or_after(free).max(k.saturating_add(1));
                        continue;
                    }
                    used += 1;
                    if used == needed {
                        self.next_opportunity = k.saturating_add(1);
                        return t;
                    }
                    k = k.saturating_add(1);
                }
            }
        }
    }

    /// Offer a packet at `now_ns`: loss, then drop-tail admission, then the departure and
    /// arrival times are fixed. Lost or refused packets come back in `Err`.
    pub fn enqueue(&mut self, now_ns: u64, mut pkt: P) -> Result<(), Dropped<P>> {
        let now = self.advance(now_ns);
        if self.loss.drop_next() {
            self.stats.dropped_loss_pkts = self.stats.dropped_loss_pkts.saturating_add(1);
            return Err(Dropped {
                pkt,
                reason: DropReason::Loss,
            });
        }
        let bytes = pkt.wire_bytes();
        let full = match self.cfg.queue {
            QueueLimit::Packets(limit) => self.queued_pkts >= u64::from(limit),
            QueueLimit::Bytes(limit) => self.queued_bytes.saturating_add(u64::from(bytes)) > limit,
            QueueLimit::Unlimited => false,
        };
        if full {
            self.stats.dropped_queue_pkts = self.stats.dropped_queue_pkts.saturating_add(1);
            return Err(Dropped {
                pkt,
                reason: DropReason::QueueFull,
            });
        }
        if let Some(k) = self.cfg.ecn_threshold_pkts {
            if self.queued_pkts >= u64::from(k) && pkt.ecn().is_ect() {
                pkt.set_ce();
                self.stats.ce_marks = self.stats.ce_marks.saturating_add(1);
            }
        }
        let ready = now.max(self.last_depart_ns);
        let depart = self.departure(ready, bytes);
        debug_assert!(depart >= ready);
        self.last_depart_ns = depart;
        let extra = self.spikes.extra_at(depart);
        let arrival = depart
            .saturating_add(self.cfg.delay_ns)
            .saturating_add(extra)
            .max(self.last_arrival_ns);
        self.last_arrival_ns = arrival;
        self.stats.enqueued_pkts = self.stats.enqueued_pkts.saturating_add(1);
        self.stats.tx_bytes = self.stats.tx_bytes.saturating_add(u64::from(bytes));
        self.fifo.push_back(Entry {
            arrival_ns: arrival,
            depart_ns: depart,
            bytes,
            pkt,
        });
        if depart > now {
            self.queued_pkts += 1;
            self.queued_bytes = self.queued_bytes.saturating_add(u64::from(bytes));
        } else {
            // Sent at once (no serialisation, no outage): it never counts as queued. Every
            // earlier packet departed by `ready` = `now`, so all of them are served already.
            debug_assert_eq!(self.served + 1, self.popped + self.fifo.len() as u64);
            self.served += 1;
        }
        Ok(())
    }

    /// When the earliest packet still in the link reaches the far end, ns.
    pub fn next_arrival_ns(&self) -> Option<u64> {
        self.fifo.front().map(|e| e.arrival_ns)
    }

    /// The next packet that has reached the far end by `now_ns`, in FIFO order.
    pub fn pop_arrived(&mut self, now_ns: u64) -> Option<P> {
        if self.fifo.front()?.arrival_ns > now_ns.max(self.now_ns) {
            return None;
        }
        self.advance(now_ns);
        debug_assert!(
            self.served > self.popped,
            "a packet arrived before it was sent"
        );
        let e = self.fifo.pop_front()?;
        self.popped += 1;
        self.stats.delivered_pkts = self.stats.delivered_pkts.saturating_add(1);
        self.stats.delivered_bytes = self
            .stats
            .delivered_bytes
            .saturating_add(u64::from(e.bytes));
        Some(e.pkt)
    }

    /// Packets waiting or in transmission at `now_ns` (packets propagating do not count).
    pub fn queue_pkts(&mut self, now_ns: u64) -> u32 {
        self.advance(now_ns);
        u32::try_from(self.queued_pkts).unwrap_or(u32::MAX)
    }

    /// Bytes waiting or in transmission at `now_ns`.
    pub fn queue_bytes(&mut self, now_ns: u64) -> u64 {
        self.advance(now_ns);
        self.queued_bytes
    }

    /// Packets in the link (queued or propagating), not yet handed out.
    pub fn len(&self) -> usize {
        self.fifo.len()
    }

    /// Whether no packet is in the link.
    pub fn is_empty(&self) -> bool {
        self.fifo.is_empty()
    }

    /// Counters so far.
    pub fn stats(&self) -> &LinkStats {
        &self.stats
    }

    /// The link's settings.
    pub fn config(&self) -> &LinkConfig {
        &self.cfg
    }
}

impl<P: NetPacket> crate::element::Element<P> for Link<P> {
    fn enqueue(&mut self, now_ns: u64, pkt: P) -> Result<(), Dropped<P>> {
        Link::enqueue(self, now_ns, pkt)
    }
    fn next_arrival_ns(&self) -> Option<u64> {
        Link::next_arrival_ns(self)
    }
    fn pop_arrived(&mut self, now_ns: u64) -> Option<P> {
        Link::pop_arrived(self, now_ns)
    }
    fn queue_pkts(&mut self, now_ns: u64) -> u32 {
        Link::queue_pkts(self, now_ns)
    }
    fn queue_bytes(&mut self, now_ns: u64) -> u64 {
        Link::queue_bytes(self, now_ns)
    }
    fn stats(&self) -> &LinkStats {
        Link::stats(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{rng, NS_PER_MS};

    #[derive(Debug)]
    struct P(u32);
    impl NetPacket for P {
        fn wire_bytes(&self) -> u32 {
            self.0
        }
    }

    fn rate_link(rate_bps: u64, queue: QueueLimit) -> Link<P> {
        let cfg = LinkConfig {
            capacity: Some(Capacity::Rate { rate_bps }),
            queue,
            ..LinkConfig::default()
        };
        Link::new(cfg, rng::stream(1, "t"))
    }

    #[test]
    fn validate_names_the_field() {
        let field = |c: LinkConfig| match c.validate() {
            Err(NetError::InvalidField { field, .. }) => field,
            other => panic!("{other:?}"),
        };
        let rate0 = LinkConfig {
            capacity: Some(Capacity::Rate { rate_bps: 0 }),
            ..LinkConfig::default()
        };
        assert_eq!(field(rate0), "capacity.rate_bps");
        assert_eq!(
            field(LinkConfig {
                queue: QueueLimit::Packets(0),
                ..LinkConfig::default()
            }),
            "queue.packets"
        );
        assert_eq!(
            field(LinkConfig {
                queue: QueueLimit::Bytes(0),
                ..LinkConfig::default()
            }),
            "queue.bytes"
        );
        let bad_loss = LinkConfig {
            loss: LossModel::Bernoulli { p: 2.0 },
            ..LinkConfig::default()
        };
        assert_eq!(field(bad_loss), "loss.p");
        assert!(LinkConfig::default().validate().is_ok());
    }

    #[test]
    fn config_deserialises_with_defaults_and_refuses_unknown_fields() {
        let c: LinkConfig = serde_json::from_str(
            r#"{"capacity": {"kind": "rate", "rate_bps": 8000000}, "delay_ns": 5,
                "queue": {"packets": 10}, "loss": {"kind": "bernoulli", "p": 0.5},
                "outages": [{"start_ns": 1, "duration_ns": 2}],
                "delay_spikes": [{"start_ns": 3, "duration_ns": 4, "extra_delay_ns": 5}]}"#,
        )
        .unwrap();
        assert_eq!(c.queue, QueueLimit::Packets(10));
        assert_eq!(
            c.outages,
            [Outage {
                start_ns: 1,
                duration_ns: 2
            }]
        );
        assert_eq!(
            serde_json::from_str::<LinkConfig>(&serde_json::to_string(&c).unwrap()).unwrap(),
            c
        );
        assert_eq!(
            serde_json::from_str::<LinkConfig>("{}").unwrap(),
            LinkConfig::default()
        );
        let q: QueueLimit = serde_json::from_str(r#""unlimited""#).unwrap();
        assert_eq!(q, QueueLimit::Unlimited);
        assert!(serde_json::from_str::<LinkConfig>(r#"{"delay_ms": 5}"#).is_err());
        assert!(serde_json::from_str::<LinkConfig>(
            r#"{"outages": [{"start_ns": 1, "duration_ns": 2, "x": 0}]}"#
        )
        .is_err());
        assert!(serde_json::from_str::<LinkConfig>(
            r#"{"capacity": {"kind": "trace", "opportunities_ms": [1], "y": 0}}"#
        )
        .is_err());
    }

    #[test]
    fn time_going_back_is_read_as_the_latest_time() {
        let mut l = rate_link(8_000_000, QueueLimit::Unlimited);
        l.enqueue(10 * NS_PER_MS, P(1000)).unwrap();
        assert_eq!(l.queue_pkts(11 * NS_PER_MS), 0);
        assert_eq!(l.queue_pkts(0), 0, "not re-queued by an earlier now");
        l.enqueue(0, P(1000)).unwrap();
        assert_eq!(l.next_arrival_ns(), Some(11 * NS_PER_MS));
        assert!(
            l.pop_arrived(0).is_some(),
            "the link's clock is already at 11 ms"
        );
        assert!(l.pop_arrived(0).is_none());
        assert_eq!(l.len(), 1);
        assert_eq!(l.pop_arrived(12 * NS_PER_MS).map(|p| p.0), Some(1000));
        assert!(l.is_empty());
    }

    #[test]
    fn unvalidated_configs_do_not_panic() {
        let mut l = rate_link(0, QueueLimit::Packets(0));
        assert_eq!(
            l.enqueue(0, P(1)).unwrap_err().reason,
            DropReason::QueueFull
        );
        let mut l = rate_link(0, QueueLimit::Unlimited);
        l.enqueue(5, P(1500)).unwrap();
        l.enqueue(6, P(1500)).unwrap();
        assert_eq!(
            l.next_arrival_ns(),
            Some(u64::MAX),
            "a rate of 0 never finishes"
        );
        assert_eq!(l.queue_pkts(u64::MAX - 1), 2);
        assert_eq!(l.pop_arrived(u64::MAX).map(|p| p.0), Some(1500));
    }
}
