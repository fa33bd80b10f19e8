//! One direction of a link: random loss at ingress, a drop-tail queue, FIFO service at the
//! capacity (rate or trace, paused by outages), then propagation delay (plus delay spikes).
//!
//! Order of operations, as in Dummynet and Mahimahi: loss is drawn first (a lost packet never
//! occupies the queue); then drop-tail admission, where the queue counts the packets waiting
//! plus the one being transmitted (Dummynet's pipe queue); then service; then delay.
//!
//! Each packet's departure (end of transmission) is computed when it is enqueued, so a packet
//! costs its owner one wake-up (its arrival at the far end) and queue occupancy is tracked
//! incrementally as time advances.

use crate::capacity::{Capacity, MAHIMAHI_MTU_BYTES};
use crate::error::NetError;
use crate::loss::{Loss, LossModel};
use crate::packet::NetPacket;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// Drop-tail limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum QueueLimit {
    /// At most this many packets queued (including the one in transmission).
    Packets(u32),
    /// At most this many bytes queued (including the packet in transmission).
    Bytes(u64),
    /// No limit.
    Unlimited,
}

/// The link transmits nothing in [start_ns, start_ns + duration_ns); packets wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Outage {
    pub start_ns: u64,
    pub duration_ns: u64,
}

/// Packets whose transmission ends in [start_ns, start_ns + duration_ns) take `extra_delay_ns`
/// longer to arrive (e.g. a radio stall or handover); order is kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DelaySpike {
    pub start_ns: u64,
    pub duration_ns: u64,
    pub extra_delay_ns: u64,
}

/// Settings of one link direction.
#[derive(Debug, Clone, PartialEq)]
pub struct LinkConfig {
    /// None: infinitely fast (no serialisation, no queueing).
    pub capacity: Option<Capacity>,
    /// Propagation delay, ns.
    pub delay_ns: u64,
    pub queue: QueueLimit,
    pub loss: LossModel,
    pub outages: Vec<Outage>,
    pub delay_spikes: Vec<DelaySpike>,
}

impl LinkConfig {
    /// Check every setting; errors name the field.
    pub fn validate(&self) -> Result<(), NetError> {
        if let Some(Capacity::Rate { rate_bps: 0 }) = self.capacity {
            return Err(NetError::invalid("rate_bps", 0, "a rate > 0"));
        }
        match self.queue {
            QueueLimit::Packets(0) => return Err(NetError::invalid("queue_pkts", 0, "at least 1")),
            QueueLimit::Bytes(0) => return Err(NetError::invalid("queue_bytes", 0, "at least 1")),
            _ => {}
        }
        self.loss.validate()
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

/// A dropped packet, handed back to the caller.
#[derive(Debug)]
pub struct Dropped<P> {
    pub pkt: P,
    pub reason: DropReason,
}

/// Counters of one link direction.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LinkStats {
    /// Packets admitted to the queue.
    pub enqueued_pkts: u64,
    pub dropped_loss_pkts: u64,
    pub dropped_queue_pkts: u64,
    /// Bytes admitted (they finish or will finish transmission).
    pub tx_bytes: u64,
    pub delivered_pkts: u64,
    pub delivered_bytes: u64,
}

struct Entry<P> {
    arrival_ns: u64,
    depart_ns: u64,
    bytes: u32,
    pkt: P,
}

/// One direction of a link carrying packets of type `P`.
pub struct Link<P> {
    cfg: LinkConfig,
    loss: Loss,
    /// Packets admitted and not yet arrived, in FIFO order.
    fifo: VecDeque<Entry<P>>,
    /// Entries popped so far (absolute index of `fifo[0]`).
    popped: u64,
    /// Absolute index of the first entry still queued (depart > last `now` seen).
    served: u64,
    queued_pkts: u32,
    queued_bytes: u64,
    last_depart_ns: u64,
    last_arrival_ns: u64,
    /// Trace capacity: the last opportunity used (absolute index), if any.
    last_opportunity: Option<u64>,
    stats: LinkStats,
}

impl<P: NetPacket> Link<P> {
    /// A link with `cfg`, drawing its losses from `rng`.
    pub fn new(mut cfg: LinkConfig, rng: ChaCha8Rng) -> Self {
        cfg.outages.sort_by_key(|o| o.start_ns);
        let loss = Loss::new(cfg.loss.clone(), rng);
        Link {
            cfg,
            loss,
            fifo: VecDeque::new(),
            popped: 0,
            served: 0,
            queued_pkts: 0,
            queued_bytes: 0,
            last_depart_ns: 0,
            last_arrival_ns: 0,
            last_opportunity: None,
            stats: LinkStats::default(),
        }
    }

    /// Account transmissions finished by `now` (time never goes back).
    fn advance(&mut self, now_ns: u64) {
        let end = self.popped + self.fifo.len() as u64;
        while self.served < end {
            let e = &self.fifo[(self.served - self.popped) as usize];
            if e.depart_ns > now_ns {
                break;
            }
            self.queued_pkts -= 1;
            self.queued_bytes -= e.bytes as u64;
            self.served += 1;
        }
    }

    /// First instant >= t at which the link is not in an outage.
    fn after_outages(&self, mut t: u64) -> u64 {
        for o in &self.cfg.outages {
            if t >= o.start_ns && t < o.start_ns.saturating_add(o.duration_ns) {
                t = o.start_ns + o.duration_ns;
            }
        }
        t
    }

    /// When a packet of `bytes` whose service may start at `ready` finishes transmission.
    fn departure(&mut self, ready: u64, bytes: u32) -> u64 {
        match &self.cfg.capacity {
            None => ready,
            Some(Capacity::Rate { rate_bps }) => {
                let tx = Capacity::tx_time_ns(*rate_bps, bytes);
                let mut start = self.after_outages(ready);
                // A transmission that would overlap an outage starts after it.
                for o in &self.cfg.outages {
                    let o_end = o.start_ns.saturating_add(o.duration_ns);
                    if start < o_end && start.saturating_add(tx) > o.start_ns {
                        start = o_end;
                    }
                }
                start + tx
            }
            Some(Capacity::Trace(tr)) => {
                let needed = bytes.div_ceil(MAHIMAHI_MTU_BYTES).max(1) as u64;
                let mut k = tr.first_at_or_after(ready);
                if let Some(last) = self.last_opportunity {
                    k = k.max(last + 1);
                }
                let mut used = 0;
                let mut t = tr.opportunity_ns(k);
                loop {
                    let free = self.after_outages(t);
                    if free != t {
                        k = tr.first_at_or_after(free).max(k + 1);
                        t = tr.opportunity_ns(k);
                        continue;
                    }
                    used += 1;
                    if used == needed {
                        break;
                    }
                    k += 1;
                    t = tr.opportunity_ns(k);
                }
                self.last_opportunity = Some(k);
                t
            }
        }
    }

    /// Offer a packet at `now_ns`. Lost or refused packets come back in `Err`.
    pub fn enqueue(&mut self, now_ns: u64, pkt: P) -> Result<(), Dropped<P>> {
        self.advance(now_ns);
        if self.loss.drop_next() {
            self.stats.dropped_loss_pkts += 1;
            return Err(Dropped { pkt, reason: DropReason::Loss });
        }
        let bytes = pkt.wire_bytes();
        let full = match self.cfg.queue {
            QueueLimit::Packets(l) => self.queued_pkts >= l,
            QueueLimit::Bytes(l) => self.queued_bytes + bytes as u64 > l,
            QueueLimit::Unlimited => false,
        };
        if full && self.cfg.capacity.is_some() {
            self.stats.dropped_queue_pkts += 1;
            return Err(Dropped { pkt, reason: DropReason::QueueFull });
        }
        let ready = now_ns.max(self.last_depart_ns);
        let depart = self.departure(ready, bytes);
        self.last_depart_ns = depart;
        let extra: u64 = self
            .cfg
            .delay_spikes
            .iter()
            .filter(|s| depart >= s.start_ns && depart < s.start_ns.saturating_add(s.duration_ns))
            .map(|s| s.extra_delay_ns)
            .sum();
        let arrival = (depart + self.cfg.delay_ns + extra).max(self.last_arrival_ns);
        self.last_arrival_ns = arrival;
        self.stats.enqueued_pkts += 1;
        self.stats.tx_bytes += bytes as u64;
        self.fifo.push_back(Entry { arrival_ns: arrival, depart_ns: depart, bytes, pkt });
        if depart > now_ns {
            self.queued_pkts += 1;
            self.queued_bytes += bytes as u64;
        } else {
            // Served at once (no capacity limit): it never counts as queued.
            debug_assert_eq!(self.served + 1, self.popped + self.fifo.len() as u64);
            self.served += 1;
        }
        Ok(())
    }

    /// When the earliest packet in flight reaches the far end, ns.
    pub fn next_arrival_ns(&self) -> Option<u64> {
        self.fifo.front().map(|e| e.arrival_ns)
    }

    /// The next packet that has arrived by `now_ns`, in FIFO order.
    pub fn pop_arrived(&mut self, now_ns: u64) -> Option<P> {
        if self.fifo.front()?.arrival_ns > now_ns {
            return None;
        }
        self.advance(now_ns);
        let e = self.fifo.pop_front()?;
        self.popped += 1;
        debug_assert!(self.served >= self.popped, "a packet arrived before it was sent");
        self.stats.delivered_pkts += 1;
        self.stats.delivered_bytes += e.bytes as u64;
        Some(e.pkt)
    }

    /// Packets waiting or in transmission at `now_ns`.
    pub fn queue_pkts(&mut self, now_ns: u64) -> u32 {
        self.advance(now_ns);
        self.queued_pkts
    }

    /// Bytes waiting or in transmission at `now_ns`.
    pub fn queue_bytes(&mut self, now_ns: u64) -> u64 {
        self.advance(now_ns);
        self.queued_bytes
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
