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
//!
//! With a radio model ([`crate::radio`]: RLC acknowledged mode and random delay spikes), a
//! packet's transmission also carries its retransmitted PDUs, it reaches the far end when its
//! last PDU is through (plus the delay), in sequence, and not during a fade; a packet the RLC
//! discards stays in the FIFO until its discard time (it holds back the packets behind it) and
//! then comes out of [`Link::pop_dropped`] as [`DropReason::Rlc`].
//!
//! With an AQM ([`QdiscConfig`]: RED, CoDel, FQ-CoDel, PIE) step 2 and 3 are the AQM's, and
//! packets wait inside it: the transmitter pulls them lazily, one at a time, whenever it is free
//! at a time `tf <= now` (the AQM dequeues at `tf`, its clock, so sojourn times are exact), then
//! the departure and arrival are computed as above (rates, traces and outages all apply). This
//! catch-up runs at the start of every call that takes `now_ns`; [`Link::next_arrival_ns`] names
//! the next time a driver must call back (an arrival, or the next dequeue when none is in
//! flight). The link's `queue` limit, if set, still refuses packets at admission (before the
//! AQM, as `QueueFull`); `ecn_threshold_pkts` is refused with an AQM. Packets the AQM drops at
//! enqueue come back in `Err`; those it drops from its queue (CoDel, FQ-CoDel) wait in the link
//! for [`Link::pop_dropped`].

use crate::capacity::{Capacity, MAHIMAHI_MTU_BYTES};
use crate::error::NetError;
use crate::loss::{Loss, LossModel};
use crate::packet::NetPacket;
use crate::qdisc::{Aqm, Out, QdiscConfig};
use crate::radio::{RadioConfig, Rlc, SpikeProcess};
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
    /// Queue discipline: drop-tail (the default: `queue` and `ecn_threshold_pkts` above) or an
    /// AQM, which queues, drops and marks by its own rules.
    #[serde(default, skip_serializing_if = "QdiscConfig::is_drop_tail")]
    pub qdisc: QdiscConfig,
    /// A 3G radio bearer after the serialisation (RLC acknowledged mode, random delay spikes);
    /// `None`: a wire.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub radio: Option<RadioConfig>,
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
        if let (Some(k), false) = (self.ecn_threshold_pkts, self.qdisc.is_drop_tail()) {
            return Err(NetError::invalid(
                "ecn_threshold_pkts",
                k,
                "none with an AQM qdisc (the AQM marks; see its ecn setting)",
            ));
        }
        let rate = match self.capacity {
            Some(Capacity::Rate { rate_bps }) => Some(rate_bps),
            _ => None,
        };
        self.qdisc.validate_for_rate(rate)?;
        if let Some(r) = &self.radio {
            r.validate().map_err(|e| e.in_field("radio"))?;
        }
        self.loss.validate().map_err(|e| e.in_field("loss"))
    }
}

/// Why a packet was dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DropReason {
    /// The random loss model chose it.
    Random,
    /// The queue was full.
    QueueFull,
    /// The AQM decided it: an early (random or delay-based) drop, or its own limit.
    Aqm,
    /// A MAC gave up on the frame: every attempt allowed by its retry limit failed (an 802.11
    /// cell, [`crate::dcf`]: collisions or frame errors).
    Retry,
    /// The RLC discarded it: one of its PDUs failed MaxDAT transmissions ([`crate::radio`]).
    Rlc,
}

impl DropReason {
    /// The name in traces (`reason=...` in drop events) and in counters
    /// (`dropped_<name>_pkts`).
    pub fn name(self) -> &'static str {
        match self {
            DropReason::Random => "random",
            DropReason::QueueFull => "queue_full",
            DropReason::Aqm => "aqm",
            DropReason::Retry => "retry",
            DropReason::Rlc => "rlc",
        }
    }
}

/// A dropped packet, handed back to the caller with the reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dropped<P> {
    /// The packet.
    pub pkt: P,
    /// Why it was dropped.
    pub reason: DropReason,
}

/// Counters of one link direction (or one lane of a medium).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct LinkStats {
    /// Packets admitted to the queue.
    pub enqueued_pkts: u64,
    /// Packets dropped by the random loss model.
    pub dropped_random_pkts: u64,
    /// Packets refused because the queue was full.
    pub dropped_queue_full_pkts: u64,
    /// Bytes that finish, or will finish, transmission (with an AQM: counted when the packet
    /// leaves the AQM for the transmitter).
    pub tx_bytes: u64,
    /// Packets handed out at the far end.
    pub delivered_pkts: u64,
    /// ECT packets this link marked CE (`ecn_threshold_pkts`, or the AQM).
    pub ce_marks: u64,
    /// Bytes handed out at the far end.
    pub delivered_bytes: u64,
    /// Packets the AQM dropped: at enqueue (early or over its limit) or from its queue.
    pub dropped_aqm_pkts: u64,
    /// Packets a MAC dropped after its retry limit ([`DropReason::Retry`]; 0 on a link). Left
    /// out of the serialised counters while 0, so the summaries of links and shared channels
    /// (and the reference trace hashes) are unchanged.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub dropped_retry_pkts: u64,
    /// Packets the RLC discarded after MaxDAT transmissions of a PDU ([`DropReason::Rlc`];
    /// counted at the discard). Left out of the serialised counters while 0, as above.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub dropped_rlc_pkts: u64,
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

impl LinkStats {
    /// Packets dropped for any reason (random loss, a full queue, an AQM, a MAC's retry limit,
    /// the RLC).
    pub fn dropped_pkts(&self) -> u64 {
        self.dropped_random_pkts
            + self.dropped_queue_full_pkts
            + self.dropped_aqm_pkts
            + self.dropped_retry_pkts
            + self.dropped_rlc_pkts
    }
}

#[derive(Debug)]
struct Entry<P> {
    arrival_ns: u64,
    depart_ns: u64,
    bytes: u32,
    /// The RLC discards it at `arrival_ns` instead of handing it out.
    rlc_drop: bool,
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
    /// The AQM and its state; None: drop-tail (the fast path above).
    aqm: Option<Box<AqmLink<P>>>,
    /// The radio model and its state; None: a wire.
    radio: Option<Box<RadioLink<P>>>,
    /// Hands over whole GSO skbs ([`Link::set_skb_handover`]).
    skb_handover: bool,
    /// With `skb_handover`: (call time, handover time) of the skb whose segment was admitted
    /// last; a segment that follows it in the same call time joins it.
    skb_open: Option<(u64, u64)>,
}

/// What a link with a radio model keeps beside it.
#[derive(Debug)]
struct RadioLink<P> {
    rlc: Rlc,
    spikes: SpikeProcess,
    /// Packets the RLC discarded, with the time, for [`Link::pop_dropped`].
    dropped: VecDeque<(u64, P)>,
}

/// What a link with an AQM keeps beside it.
#[derive(Debug)]
struct AqmLink<P> {
    q: Aqm<P>,
    /// Packets the AQM dropped from its queue, with the time, for [`Link::pop_dropped`].
    dropped: VecDeque<(u64, P)>,
    /// The transmitter will ask the AQM for a packet when it is next free (after it took one,
    /// or a packet was queued); false once the AQM answered that it is empty.
    poll_pending: bool,
}

impl<P: NetPacket> Link<P> {
    /// A link with `cfg`, drawing its losses from `rng` (see [`crate::rng::stream`]) and its
    /// AQM's random draws (RED, PIE) from another stream of the same key. The config should
    /// have passed [`LinkConfig::validate`]; if not, nothing panics (a rate of 0 never
    /// transmits, out-of-range probabilities act as clamped, AQM settings saturate).
    pub fn new(cfg: LinkConfig, rng: ChaCha8Rng) -> Self {
        let rate = match cfg.capacity {
            Some(Capacity::Rate { rate_bps }) => Some(rate_bps),
            _ => None,
        };
        // The AQM's random draws (RED, PIE) come from another stream of the same key, so the
        // loss draws stay those of a drop-tail link.
        let aqm = (!cfg.qdisc.is_drop_tail())
            .then(|| {
                let mut aqm_rng = rng.clone();
                aqm_rng.set_stream(rng.get_stream() ^ AQM_STREAM);
                Aqm::new(&cfg.qdisc, rate, aqm_rng)
            })
            .flatten()
            .map(|q| {
                Box::new(AqmLink {
                    q,
                    dropped: VecDeque::new(),
                    poll_pending: false,
                })
            });
        // The RLC's PDU errors and (unless a driver shares them, `with_spike_rng`) the fades
        // come from further streams of the same key, so the loss draws stay the same.
        let radio = cfg.radio.as_ref().map(|r| {
            let sub = |offset: u64| {
                let mut s = rng.clone();
                s.set_stream(rng.get_stream() ^ offset);
                s
            };
            Box::new(RadioLink {
                rlc: Rlc::new(r, cfg.capacity.as_ref(), sub(RLC_STREAM)),
                spikes: SpikeProcess::new(r, sub(SPIKE_STREAM)),
                dropped: VecDeque::new(),
            })
        });
        Link {
            aqm,
            radio,
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
            skb_handover: false,
            skb_open: None,
        }
    }

    /// Serve whole GSO skbs, as the kernel backend's host device does (htb over a pfifo, on a
    /// TUN): htb dequeues an skb while its class has tokens and charges all of its bytes at
    /// once (`htb_dequeue_tree` -> `htb_charge_class`, net/sched/sch_htb.c), the core segments
    /// it after the qdisc (`sch_direct_xmit` -> `validate_xmit_skb` -> `skb_gso_segment`,
    /// net/core/dev.c) and `tun_net_xmit` takes every segment at once; the next skb, of any
    /// flow, waits until the tokens are back (the first skb's transmission time). So the
    /// segments of an skb ([`NetPacket::gso_follows`]) leave together when the transmitter
    /// takes the skb, and it stays busy for all of them. Only a drop-tail link with a rate;
    /// otherwise nothing changes. A NIC sends (and a link serialises) segment by segment.
    pub fn set_skb_handover(&mut self, on: bool) {
        let rate = matches!(self.cfg.capacity, Some(Capacity::Rate { .. }));
        self.skb_handover = on && rate && self.aqm.is_none() && self.radio.is_none();
    }

    /// The link with its radio's delay spikes drawn from `rng` ([`crate::radio::spike_rng`]):
    /// give the two directions of a link the same stream and they stall together. Without a
    /// radio model, the link is unchanged.
    pub fn with_spike_rng(mut self, rng: ChaCha8Rng) -> Self {
        if let (Some(st), Some(r)) = (self.radio.as_deref_mut(), self.cfg.radio.as_ref()) {
            st.spikes = SpikeProcess::new(r, rng);
        }
        self
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
    #[inline(always)]
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
    #[inline]
    pub fn enqueue(&mut self, now_ns: u64, mut pkt: P) -> Result<(), Dropped<P>> {
        if self.aqm.is_some() {
            return self.enqueue_aqm(now_ns, pkt);
        }
        let now = self.advance(now_ns);
        let bytes = pkt.wire_bytes();
        if let Some(reason) = self.refuse(bytes, self.queued_pkts, self.queued_bytes) {
            return Err(Dropped { pkt, reason });
        }
        if let Some(k) = self.cfg.ecn_threshold_pkts {
            if self.queued_pkts >= u64::from(k) && pkt.ecn().is_ect() {
                pkt.set_ce();
                self.stats.ce_marks = self.stats.ce_marks.saturating_add(1);
            }
        }
        let ready = now.max(self.last_depart_ns);
        self.stats.enqueued_pkts = self.stats.enqueued_pkts.saturating_add(1);
        if self.skb_handover {
            self.hand_over(now, bytes, pkt);
        } else {
            self.transmit(ready, bytes, pkt);
        }
        Ok(())
    }

    /// [`Link::transmit`] for a link that hands over whole skbs ([`Link::set_skb_handover`]):
    /// an skb's first segment waits for the transmitter; it and the segments that follow it
    /// leave (depart) when the transmitter takes it, and each adds its transmission time to
    /// the transmitter's busy time (`last_depart_ns`).
    #[cold]
    #[inline(never)]
    fn hand_over(&mut self, now: u64, bytes: u32, pkt: P) {
        let open = self
            .skb_open
            .filter(|&(at, _)| at == now && pkt.gso_follows());
        let ready = match open {
            Some(_) => self.last_depart_ns,
            None => now.max(self.last_depart_ns),
        };
        let busy_until = self.departure(ready, bytes);
        let start = match open {
            Some((_, start)) => start,
            None => match self.cfg.capacity {
                Some(Capacity::Rate { rate_bps }) => {
                    busy_until.saturating_sub(Capacity::tx_time_ns(rate_bps, bytes))
                }
                _ => busy_until,
            },
        };
        self.skb_open = Some((now, start));
        self.last_depart_ns = busy_until;
        let extra = self.spikes.extra_at(start);
        let arrival = start
            .saturating_add(self.cfg.delay_ns)
            .saturating_add(extra)
            .max(self.last_arrival_ns);
        self.last_arrival_ns = arrival;
        self.stats.tx_bytes = self.stats.tx_bytes.saturating_add(u64::from(bytes));
        self.queue_entry(now, start, arrival, bytes, false, pkt);
    }

    /// Steps 1 and 2 of the module doc for a packet of `bytes`: the loss draw, then the
    /// `queue` limit against `waiting_pkts`/`waiting_bytes` (what waits, the packet in
    /// transmission included). Returns why it is dropped (counted), if it is.
    #[inline(always)]
    fn refuse(&mut self, bytes: u32, waiting_pkts: u64, waiting_bytes: u64) -> Option<DropReason> {
        if self.loss.drop_next() {
            self.stats.dropped_random_pkts = self.stats.dropped_random_pkts.saturating_add(1);
            return Some(DropReason::Random);
        }
        let full = match self.cfg.queue {
            QueueLimit::Packets(limit) => waiting_pkts >= u64::from(limit),
            QueueLimit::Bytes(limit) => waiting_bytes.saturating_add(u64::from(bytes)) > limit,
            QueueLimit::Unlimited => false,
        };
        if full {
            self.stats.dropped_queue_full_pkts =
                self.stats.dropped_queue_full_pkts.saturating_add(1);
            return Some(DropReason::QueueFull);
        }
        None
    }

    /// Start sending `pkt` (`bytes`) once the transmitter is free, at `ready` (>= the last
    /// departure): its departure and arrival are fixed, and it counts as queued until it
    /// departs. Drop-tail calls it at enqueue; an AQM when it dequeues. `self.now_ns` must be
    /// the time of the call being served.
    #[inline(always)]
    fn transmit(&mut self, ready: u64, bytes: u32, pkt: P) {
        let now = self.now_ns;
        if self.radio.is_some() {
            return self.transmit_radio(ready, bytes, pkt);
        }
        let depart = self.departure(ready, bytes);
        debug_assert!(depart >= ready);
        self.last_depart_ns = depart;
        let extra = self.spikes.extra_at(depart);
        let arrival = depart
            .saturating_add(self.cfg.delay_ns)
            .saturating_add(extra)
            .max(self.last_arrival_ns);
        self.last_arrival_ns = arrival;
        self.stats.tx_bytes = self.stats.tx_bytes.saturating_add(u64::from(bytes));
        self.queue_entry(now, depart, arrival, bytes, false, pkt);
    }

    /// [`Link::transmit`] through the radio model: the RLC draws the packet's PDU errors, the
    /// transmission carries the retransmitted PDUs too, the packet is through when its last PDU
    /// is (or discarded), then the delay and the scheduled spikes apply, in sequence, and the
    /// arrival waits out any fade.
    #[cold]
    #[inline(never)]
    fn transmit_radio(&mut self, ready: u64, bytes: u32, pkt: P) {
        let now = self.now_ns;
        let Some(st) = self.radio.as_deref_mut() else {
            return;
        };
        let (retx_bytes, discard) = st.rlc.draw(bytes);
        let on_air = bytes.saturating_add(u32::try_from(retx_bytes).unwrap_or(u32::MAX));
        let depart = self.departure(ready, on_air);
        debug_assert!(depart >= ready);
        self.last_depart_ns = depart;
        let Some(st) = self.radio.as_deref_mut() else {
            return;
        };
        // When PDU j ends its first transmission: the packet's PDUs go first in its slot, its
        // retransmitted PDUs' work after them. With a trace (or no rate), at the departure.
        let done = match self.cfg.capacity {
            Some(Capacity::Rate { rate_bps }) => {
                let start = depart.saturating_sub(Capacity::tx_time_ns(rate_bps, on_air));
                let rlc = &st.rlc;
                rlc.done_ns(|j| {
                    start.saturating_add(Capacity::tx_time_ns(rate_bps, rlc.bytes_through_pdu(j)))
                })
            }
            _ => st.rlc.done_ns(|_| depart),
        };
        let extra = self.spikes.extra_at(depart);
        let arrival = done
            .saturating_add(self.cfg.delay_ns)
            .saturating_add(extra)
            .max(self.last_arrival_ns);
        let arrival = st.spikes.hold(arrival);
        self.last_arrival_ns = arrival;
        self.stats.tx_bytes = self.stats.tx_bytes.saturating_add(u64::from(on_air));
        self.queue_entry(now, depart, arrival, bytes, discard, pkt);
    }

    /// Put a packet whose departure and arrival are fixed into the FIFO, counting it as queued
    /// until it departs.
    #[inline(always)]
    fn queue_entry(
        &mut self,
        now: u64,
        depart: u64,
        arrival: u64,
        bytes: u32,
        rlc_drop: bool,
        pkt: P,
    ) {
        self.fifo.push_back(Entry {
            arrival_ns: arrival,
            depart_ns: depart,
            bytes,
            rlc_drop,
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
    }

    /// [`Link::enqueue`] with an AQM: catch up to `now`, then loss, the link's own `queue`
    /// limit, and the AQM's verdict; a packet admitted while the transmitter is free leaves at
    /// once (through the AQM, or around it when it may be bypassed).
    #[cold]
    #[inline(never)]
    fn enqueue_aqm(&mut self, now_ns: u64, pkt: P) -> Result<(), Dropped<P>> {
        let now = self.catch_up(now_ns);
        let (in_aqm_pkts, in_aqm_bytes) = self
            .aqm
            .as_deref()
            .map_or((0, 0), |st| (st.q.len() as u64, st.q.backlog_bytes()));
        let bytes = pkt.wire_bytes();
        let (waiting_pkts, waiting_bytes) = (
            self.queued_pkts + in_aqm_pkts,
            self.queued_bytes + in_aqm_bytes,
        );
        if let Some(reason) = self.refuse(bytes, waiting_pkts, waiting_bytes) {
            return Err(Dropped { pkt, reason });
        }
        let Some(st) = self.aqm.as_deref_mut() else {
            // Not reached (enqueue comes here only with an AQM): send it as drop-tail would.
            self.transmit(now.max(self.last_depart_ns), bytes, pkt);
            return Ok(());
        };
        if st.q.can_bypass() && st.q.len() == 0 && self.last_depart_ns <= now {
            // __dev_xmit_skb: an empty qdisc with TCQ_F_CAN_BYPASS and a free device sends the
            // packet directly, leaving the qdisc's state untouched.
            st.poll_pending = true;
            self.stats.enqueued_pkts = self.stats.enqueued_pkts.saturating_add(1);
            self.transmit(now, bytes, pkt);
            return Ok(());
        }
        let mut out = Out {
            drops: &mut st.dropped,
            stats: &mut self.stats,
        };
        if let Err(pkt) = st.q.enqueue(now, pkt, bytes, &mut out) {
            self.stats.dropped_aqm_pkts = self.stats.dropped_aqm_pkts.saturating_add(1);
            return Err(Dropped {
                pkt,
                reason: DropReason::Aqm,
            });
        }
        st.poll_pending = true;
        self.stats.enqueued_pkts = self.stats.enqueued_pkts.saturating_add(1);
        self.catch_up(now);
        Ok(())
    }

    /// With an AQM: run, in time order, every AQM timer and every dequeue due by `now_ns`
    /// (the transmitter asks for a packet each time it is free), then account departures.
    /// Afterwards every pending event is later than the returned clock.
    #[inline(never)]
    fn catch_up(&mut self, now_ns: u64) -> u64 {
        let now = now_ns.max(self.now_ns);
        while let Some(st) = self.aqm.as_deref_mut() {
            // The transmitter is free from the last departure (or from now, when the AQM got
            // its packet after that).
            let poll = st
                .poll_pending
                .then(|| self.last_depart_ns.max(self.now_ns))
                .filter(|&t| t <= now);
            if let Some(t) = st.q.next_timer_ns().filter(|&t| t <= now) {
                if poll.is_none_or(|p| t <= p) {
                    st.q.on_timer(t, poll.unwrap_or(now));
                    continue;
                }
            }
            let Some(t) = poll else { break };
            let mut out = Out {
                drops: &mut st.dropped,
                stats: &mut self.stats,
            };
            match st.q.dequeue(t, &mut out) {
                Some((pkt, bytes)) => self.transmit(t, bytes, pkt),
                None => st.poll_pending = false,
            }
        }
        self.advance(now)
    }

    /// The next packet the AQM dropped from its queue (CoDel, FQ-CoDel), with the time of the
    /// drop, ns; oldest first. Drops happen during any call that takes `now_ns` (the link
    /// catches up to it), so a driver should collect them after each call. Packets dropped at
    /// enqueue are not here: they come back from [`Link::enqueue`]. At most
    /// [`crate::qdisc::MAX_PENDING_DROPS`] are kept (older ones are forgotten, still counted).
    ///
    /// With a radio model, packets the RLC discarded come out here too ([`DropReason::Rlc`]),
    /// at the time they would have reached the far end (the discard plus the delay: when the
    /// packets behind them go on).
    pub fn pop_dropped(&mut self) -> Option<(u64, Dropped<P>)> {
        if let Some((t, pkt)) = self
            .aqm
            .as_deref_mut()
            .and_then(|st| st.dropped.pop_front())
        {
            let reason = DropReason::Aqm;
            return Some((t, Dropped { pkt, reason }));
        }
        let (t, pkt) = self.radio.as_deref_mut()?.dropped.pop_front()?;
        let reason = DropReason::Rlc;
        Some((t, Dropped { pkt, reason }))
    }

    /// When the driver must call back, ns: the earliest packet still in flight reaches the far
    /// end; with an AQM and none in flight, the transmitter takes the AQM's next packet (a call
    /// at that time puts it in flight and names its arrival).
    #[inline]
    pub fn next_arrival_ns(&self) -> Option<u64> {
        if let Some(e) = self.fifo.front() {
            return Some(e.arrival_ns);
        }
        let st = self.aqm.as_deref()?;
        (st.q.len() > 0).then(|| self.last_depart_ns.max(self.now_ns))
    }

    /// The next packet that has reached the far end by `now_ns`, in FIFO order.
    #[inline]
    pub fn pop_arrived(&mut self, now_ns: u64) -> Option<P> {
        if self.aqm.is_some() || self.radio.is_some() {
            return self.pop_arrived_late(now_ns);
        }
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

    /// [`Link::pop_arrived`] with an AQM or a radio model: catch up to `now_ns` first, and
    /// set aside the packets the RLC discarded (kept apart so drop-tail's path stays as it
    /// was).
    #[cold]
    #[inline(never)]
    fn pop_arrived_late(&mut self, now_ns: u64) -> Option<P> {
        let now = self.catch_up(now_ns);
        let e = loop {
            if self.fifo.front()?.arrival_ns > now {
                return None;
            }
            let e = self.fifo.pop_front()?;
            if self.served == self.popped {
                // Handed on before its departure: the RLC had every PDU through (or discarded
                // the packet) before the end of the airtime its retransmitted PDUs add to its
                // slot (a slot longer than the retransmission interval: a slow bearer). It
                // leaves the queue count now; the transmitter stays busy to the slot's end
                // (`last_depart_ns`). (Counting it on to its departure would need a wake-up
                // then; left uncounted, the count stayed one too high for good.)
                debug_assert!(e.depart_ns > now);
                self.queued_pkts = self.queued_pkts.saturating_sub(1);
                self.queued_bytes = self.queued_bytes.saturating_sub(u64::from(e.bytes));
                self.served += 1;
            }
            self.popped += 1;
            if !e.rlc_drop {
                break e;
            }
            self.stats.dropped_rlc_pkts = self.stats.dropped_rlc_pkts.saturating_add(1);
            if let Some(st) = self.radio.as_deref_mut() {
                st.dropped.push_back((e.arrival_ns, e.pkt));
            }
        };
        self.stats.delivered_pkts = self.stats.delivered_pkts.saturating_add(1);
        self.stats.delivered_bytes = self
            .stats
            .delivered_bytes
            .saturating_add(u64::from(e.bytes));
        Some(e.pkt)
    }

    /// Run `f` on each packet that has started transmission by `now_ns` and is still here (in
    /// transmission, or sent and propagating), oldest first. The packet in transmission is the
    /// first one not yet departed: a transmitter serves its FIFO back to back.
    pub fn for_each_started(&mut self, now_ns: u64, f: &mut dyn FnMut(&mut P)) {
        let now = if self.aqm.is_some() {
            self.catch_up(now_ns)
        } else {
            self.advance(now_ns)
        };
        let in_service = (self.served - self.popped) as usize;
        debug_assert!(self.fifo.get(in_service).is_none_or(|e| e.depart_ns > now));
        // Departed ones, then the head of the queue (its transmitter was free by now). A link
        // that hands over whole skbs has no packet in transmission: a departed one was taken.
        let in_transmission = usize::from(!self.skb_handover);
        for e in self.fifo.iter_mut().take(in_service + in_transmission) {
            f(&mut e.pkt);
        }
    }

    /// Packets waiting (in the AQM, if any) or in transmission at `now_ns` (packets
    /// propagating do not count).
    pub fn queue_pkts(&mut self, now_ns: u64) -> u32 {
        if self.aqm.is_none() {
            self.advance(now_ns);
            return u32::try_from(self.queued_pkts).unwrap_or(u32::MAX);
        }
        self.catch_up(now_ns);
        let waiting = self.aqm.as_ref().map_or(0, |st| st.q.len() as u64);
        u32::try_from(self.queued_pkts + waiting).unwrap_or(u32::MAX)
    }

    /// Bytes waiting or in transmission at `now_ns`.
    pub fn queue_bytes(&mut self, now_ns: u64) -> u64 {
        if self.aqm.is_none() {
            self.advance(now_ns);
            return self.queued_bytes;
        }
        self.catch_up(now_ns);
        self.queued_bytes + self.aqm.as_ref().map_or(0, |st| st.q.backlog_bytes())
    }

    /// Packets in the link (waiting in the AQM, in transmission or propagating), not yet handed
    /// out or dropped.
    pub fn len(&self) -> usize {
        self.fifo.len() + self.aqm.as_ref().map_or(0, |st| st.q.len())
    }

    /// Whether no packet is in the link.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
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

/// A link direction as a medium: two ports, packets enter at 0 and leave at 1; one lane.
impl<P: NetPacket> crate::medium::Medium<P> for Link<P> {
    fn ports(&self) -> usize {
        2
    }
    #[inline]
    fn enqueue(&mut self, now_ns: u64, from: usize, to: usize, pkt: P) -> Result<(), Dropped<P>> {
        debug_assert!(
            from == 0 && to == 1,
            "a link carries packets from port 0 to port 1"
        );
        Link::enqueue(self, now_ns, pkt)
    }
    #[inline]
    fn next_event_ns(&self) -> Option<u64> {
        Link::next_arrival_ns(self)
    }
    #[inline]
    fn pop_delivered(&mut self, now_ns: u64) -> Option<P> {
        Link::pop_arrived(self, now_ns)
    }
    fn pop_dropped(&mut self) -> Option<(u64, Dropped<P>)> {
        Link::pop_dropped(self)
    }
    fn for_each_started(&mut self, now_ns: u64, f: &mut dyn FnMut(&mut P)) {
        Link::for_each_started(self, now_ns, f)
    }
    fn lanes(&self) -> usize {
        1
    }
    fn queue_pkts(&mut self, now_ns: u64, _lane: usize) -> u32 {
        Link::queue_pkts(self, now_ns)
    }
    fn queue_bytes(&mut self, now_ns: u64, _lane: usize) -> u64 {
        Link::queue_bytes(self, now_ns)
    }
    fn stats(&self, _lane: usize) -> &LinkStats {
        Link::stats(self)
    }
}

/// Stream (nonce) offset of a link's AQM draws from its loss draws ("AQM" in ASCII).
const AQM_STREAM: u64 = 0x41_51_4d;
/// Stream offset of a link's RLC PDU-error draws ("RLC").
const RLC_STREAM: u64 = 0x52_4c_43;
/// Stream offset of a link's own delay-spike draws ("SPK"), when no shared stream is given.
const SPIKE_STREAM: u64 = 0x53_50_4b;

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
    fn started_packets_are_the_sent_ones_and_the_one_in_transmission() {
        // Packet k has 1500 + k bytes: about 1 ms each at 12 Mbit/s; 10 ms of delay.
        let mut l = rate_link(12_000_000, QueueLimit::Unlimited);
        l.cfg.delay_ns = 10 * NS_PER_MS;
        for k in 0..4 {
            l.enqueue(0, P(1500 + k)).unwrap();
        }
        let started = |l: &mut Link<P>, t: u64| {
            let mut v = Vec::new();
            l.for_each_started(t, &mut |p: &mut P| v.push(p.0 - 1500));
            v
        };
        assert_eq!(started(&mut l, 0), vec![0]);
        assert_eq!(started(&mut l, NS_PER_MS - 1), vec![0]);
        // The first sent (propagating), the second in transmission.
        assert_eq!(started(&mut l, NS_PER_MS), vec![0, 1]);
        assert_eq!(
            started(&mut l, 2 * NS_PER_MS + NS_PER_MS / 2),
            vec![0, 1, 2]
        );
        assert_eq!(
            started(&mut l, 3 * NS_PER_MS + NS_PER_MS / 2),
            vec![0, 1, 2, 3]
        );
        // Handed out at the far end: no longer here.
        assert!(l.pop_arrived(11 * NS_PER_MS).is_some());
        assert_eq!(started(&mut l, 11 * NS_PER_MS), vec![1, 2, 3]);
    }

    /// A segment of a GSO skb: its number, its bytes, and whether it follows the segment
    /// offered before it in the same skb.
    #[derive(Debug)]
    struct Seg(u32, u32, bool);

    impl NetPacket for Seg {
        fn wire_bytes(&self) -> u32 {
            self.1
        }
        fn gso_follows(&self) -> bool {
            self.2
        }
    }

    /// At 8 Mbit/s (1000 bytes: 1 ms), 10 ms of delay: an skb of three 1000-byte segments and
    /// one of two at 0, a lone segment at 1 ms. Returns each segment's arrival, ms.
    fn arrivals_ms(handover: bool) -> Vec<(u32, f64)> {
        let cfg = LinkConfig {
            capacity: Some(Capacity::Rate {
                rate_bps: 8_000_000,
            }),
            delay_ns: 10 * NS_PER_MS,
            ..LinkConfig::default()
        };
        let mut l = Link::new(cfg, rng::stream(1, "t"));
        l.set_skb_handover(handover);
        for (k, follows) in [(0, false), (1, true), (2, true), (3, false), (4, true)] {
            l.enqueue(0, Seg(k, 1000, follows)).unwrap();
        }
        l.enqueue(NS_PER_MS, Seg(5, 1000, true)).unwrap();
        let mut out = Vec::new();
        while let Some(t) = l.next_arrival_ns() {
            let p = l.pop_arrived(t).unwrap();
            out.push((p.0, t as f64 / NS_PER_MS as f64));
        }
        out
    }

    #[test]
    fn a_link_that_hands_over_skbs_sends_each_whole_and_stays_busy_for_it() {
        // Segment by segment: 1, 2, 3 ms for the first skb, then 4, 5, then 6 ms (+ delay).
        let each = arrivals_ms(false);
        assert_eq!(
            each.iter().map(|a| a.1).collect::<Vec<_>>(),
            [11., 12., 13., 14., 15., 16.]
        );
        // Whole skbs: the first leaves at 0, the second when the first's 3 ms are spent, the
        // lone segment (offered later: it follows nothing) when the second's 2 ms are.
        let whole = arrivals_ms(true);
        assert_eq!(
            whole.iter().map(|a| a.0).collect::<Vec<_>>(),
            [0, 1, 2, 3, 4, 5]
        );
        assert_eq!(
            whole.iter().map(|a| a.1).collect::<Vec<_>>(),
            [10., 10., 10., 13., 13., 15.]
        );
    }

    #[test]
    fn a_handed_over_skb_has_left_the_queue_and_nothing_is_in_transmission() {
        let mut l: Link<Seg> = Link::new(
            LinkConfig {
                capacity: Some(Capacity::Rate {
                    rate_bps: 8_000_000,
                }),
                ..LinkConfig::default()
            },
            rng::stream(1, "t"),
        );
        l.set_skb_handover(true);
        for (k, follows) in [(0, false), (1, true), (2, false), (3, true)] {
            l.enqueue(0, Seg(k, 1000, follows)).unwrap();
        }
        let started = |l: &mut Link<Seg>, t: u64| {
            let mut v = Vec::new();
            l.for_each_started(t, &mut |p: &mut Seg| v.push(p.0));
            v
        };
        // The first skb was taken at 0; the second waits until 2 ms (htb's tokens).
        assert_eq!(l.queue_pkts(0), 2);
        assert_eq!(l.queue_bytes(NS_PER_MS), 2000);
        assert_eq!(started(&mut l, 2 * NS_PER_MS - 1), vec![0, 1]);
        assert_eq!(started(&mut l, 2 * NS_PER_MS), vec![0, 1, 2, 3]);
        assert_eq!(l.queue_pkts(2 * NS_PER_MS), 0);
        // Only a drop-tail link with a rate hands over skbs.
        let mut ideal: Link<Seg> = Link::new(LinkConfig::default(), rng::stream(1, "t"));
        ideal.set_skb_handover(true);
        assert!(!ideal.skb_handover);
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
