//! Queue disciplines of a link, after Linux 6.18's `net/sched`: drop-tail (the default, the
//! link's own FIFO), RED (`sch_red.c`), CoDel (`sch_codel.c`), FQ-CoDel (`sch_fq_codel.c`) and
//! PIE (`sch_pie.c`). One algorithm per file; this file holds the settings ([`QdiscConfig`], in
//! the scenario's units, embedded as-is in scenario files) and what the link needs to drive an
//! AQM.
//!
//! How a link runs an AQM (see `link.rs`): packets wait inside the qdisc and the transmitter
//! pulls them lazily, each at the exact time it becomes free (the AQM's clock is that time), as
//! a device's `qdisc_run` dequeues when its queue is woken. The device holds one packet at a
//! time (as a rate shaper does, or a NIC whose byte queue limit is one packet): we diverge from
//! a real NIC, whose ring takes packets from the qdisc ahead of the wire. When the transmitter
//! finds the qdisc empty it still asks once (CoDel leaves its dropping state, RED starts an idle
//! period, FQ-CoDel unlinks empty flows), as the kernel's dequeue returning NULL does.
//!
//! An AQM drops at enqueue (RED, PIE, the overlimit drops of CoDel) or from its queue (CoDel's
//! and FQ-CoDel's dequeue, and FQ-CoDel's overlimit batch from the head of the fattest flow);
//! the latter are kept for the driver ([`crate::Link::pop_dropped`]).
//!
//! Times: the settings are in ms as a scenario writes them; they are converted as tc does (to
//! whole microseconds, `get_time` in iproute2's `tc/tc_util.c`), then to the kernel's units
//! (CoDel's 1024 ns `codel_time_t`, PIE's 64 ns psched ticks).

mod codel;
mod fq_codel;
mod pie;
mod red;

use crate::error::NetError;
use crate::link::LinkStats;
use crate::packet::{Ecn, NetPacket};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// `psched_mtu()` of an Ethernet device with a 1500-byte MTU (`dev->mtu + dev->hard_header_len`):
/// the MTU the kernel's AQMs use (CoDel's minimum backlog, FQ-CoDel's quantum, PIE's 2-MTU
/// floor). We diverge: a link has no device, so this is fixed.
pub const PSCHED_MTU_BYTES: u32 = 1514;

/// Dequeue-time drops kept for [`crate::Link::pop_dropped`] at most; beyond this the oldest is
/// forgotten (still counted in `dropped_aqm_pkts`), so a driver that never collects them does not
/// grow without bound.
pub const MAX_PENDING_DROPS: usize = 65_536;

/// The queue discipline of one link direction. In a scenario file: `{ kind = "codel" }`,
/// `{ kind = "fq_codel", target_ms = 5, ecn = false }`, ... Every field defaults to the kernel's
/// (or tc's) default. With an AQM the link's `queue` limit, if set, still caps packets/bytes at
/// admission (dropped as `QueueFull`); `ecn_threshold_pkts` is refused (the AQM marks).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum QdiscConfig {
    /// FIFO limited by the link's `queue` (the default; no AQM).
    #[default]
    DropTail,
    /// Random Early Detection (`sch_red.c` with a bfifo child), parameters as `tc qdisc ... red`
    /// takes them (Wlog, Plog and the idle table computed as iproute2's `tc/tc_red.c` does).
    Red {
        /// Hard limit of the bytes waiting (the bfifo child's limit). tc has no default; ours is
        /// tc-red(8)'s example, 400 000.
        #[serde(default = "d_red_limit")]
        limit_bytes: u64,
        /// Average queue (bytes) where marking starts; default `max_bytes / 3` (tc).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        min_bytes: Option<u64>,
        /// Average queue (bytes) where the probability reaches `probability`; default
        /// `3 * min_bytes`, or `limit_bytes / 4` when neither is given (tc).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        max_bytes: Option<u64>,
        /// Average packet size (tc's `avpkt`), for the EWMA weight and the idle decay.
        #[serde(default = "d_avpkt")]
        avpkt_bytes: u32,
        /// Burst (packets) the EWMA lets through; default `(2 min + max) / (3 avpkt)` (tc).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        burst_pkts: Option<u32>,
        /// max_P: the marking probability at `max_bytes`, in (0, 1].
        #[serde(default = "d_red_p")]
        probability: f64,
        /// Mark ECT packets CE instead of dropping them.
        #[serde(default)]
        ecn: bool,
        /// Drop (never mark) above `max_bytes`, even with `ecn`.
        #[serde(default)]
        harddrop: bool,
        /// Rate for the idle-time decay table (tc's `bandwidth`), bit/s; default: the link's
        /// rate (tc's 10 Mbit/s when the link has a trace or no rate).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        bandwidth_bps: Option<u64>,
    },
    /// Controlled Delay (`sch_codel.c`, `include/net/codel_impl.h`).
    Codel {
        /// Acceptable standing sojourn time.
        #[serde(default = "d_target")]
        target_ms: f64,
        /// Window over which the sojourn must stay above target before dropping.
        #[serde(default = "d_interval")]
        interval_ms: f64,
        /// Packets waiting at most (tail drop beyond).
        #[serde(default = "d_codel_limit")]
        limit_pkts: u32,
        /// Mark ECT packets CE instead of dropping them.
        #[serde(default)]
        ecn: bool,
        /// CE-mark every ECT packet whose sojourn exceeds this (DCTCP-style); none: off.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        ce_threshold_ms: Option<f64>,
    },
    /// Fair Queuing with CoDel per flow (`sch_fq_codel.c`); flows by [`NetPacket::flow_hash`].
    FqCodel {
        /// CoDel target.
        #[serde(default = "d_target")]
        target_ms: f64,
        /// CoDel interval.
        #[serde(default = "d_interval")]
        interval_ms: f64,
        /// Packets waiting at most, all flows (beyond: batch drop from the fattest flow).
        #[serde(default = "d_fq_limit")]
        limit_pkts: u32,
        /// Number of flow queues (1..=65536).
        #[serde(default = "d_flows")]
        flows: u32,
        /// DRR quantum, bytes (raised to 256 as the kernel does).
        #[serde(default = "d_quantum")]
        quantum_bytes: u32,
        /// Memory the queued packets may take (their skb truesize), bytes.
        #[serde(default = "d_memory")]
        memory_limit_bytes: u64,
        /// Mark ECT packets CE instead of dropping them (on by default, as in the kernel).
        #[serde(default = "yes")]
        ecn: bool,
        /// Packets dropped at most per overlimit event (from the fattest flow).
        #[serde(default = "d_batch")]
        drop_batch_pkts: u32,
        /// CE-mark every ECT packet whose sojourn exceeds this; none: off.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        ce_threshold_ms: Option<f64>,
    },
    /// Proportional Integral controller Enhanced (`sch_pie.c`, RFC 8033), queue delay from
    /// timestamps (the kernel's default: `dq_rate_estimator` off).
    Pie {
        /// Target queue delay.
        #[serde(default = "d_pie_target")]
        target_ms: f64,
        /// Period of the drop-probability update.
        #[serde(default = "d_pie_target")]
        tupdate_ms: f64,
        /// Integral gain, in 1/16 (0..=32).
        #[serde(default = "d_alpha")]
        alpha: u32,
        /// Proportional gain, in 1/16 (0..=32).
        #[serde(default = "d_beta")]
        beta: u32,
        /// Packets waiting at most.
        #[serde(default = "d_codel_limit")]
        limit_pkts: u32,
        /// Mark ECT packets CE instead of dropping them while the probability is <= 10 %.
        #[serde(default)]
        ecn: bool,
        /// Scale the drop probability by packet size / MTU.
        #[serde(default)]
        bytemode: bool,
    },
}

impl QdiscConfig {
    /// Each discipline with every field at its default: what `{ kind = "red" }` etc. give. The
    /// constructors fall back on these, so the defaults live only in the `d_*` functions below.
    pub(crate) fn red_defaults() -> Self {
        QdiscConfig::Red {
            limit_bytes: d_red_limit(),
            min_bytes: None,
            max_bytes: None,
            avpkt_bytes: d_avpkt(),
            burst_pkts: None,
            probability: d_red_p(),
            ecn: false,
            harddrop: false,
            bandwidth_bps: None,
        }
    }

    pub(crate) fn codel_defaults() -> Self {
        QdiscConfig::Codel {
            target_ms: d_target(),
            interval_ms: d_interval(),
            limit_pkts: d_codel_limit(),
            ecn: false,
            ce_threshold_ms: None,
        }
    }

    pub(crate) fn fq_codel_defaults() -> Self {
        QdiscConfig::FqCodel {
            target_ms: d_target(),
            interval_ms: d_interval(),
            limit_pkts: d_fq_limit(),
            flows: d_flows(),
            quantum_bytes: d_quantum(),
            memory_limit_bytes: d_memory(),
            ecn: yes(),
            drop_batch_pkts: d_batch(),
            ce_threshold_ms: None,
        }
    }

    pub(crate) fn pie_defaults() -> Self {
        QdiscConfig::Pie {
            target_ms: d_pie_target(),
            tupdate_ms: d_pie_target(),
            alpha: d_alpha(),
            beta: d_beta(),
            limit_pkts: d_codel_limit(),
            ecn: false,
            bytemode: false,
        }
    }
}

fn d_red_limit() -> u64 {
    400_000
}
fn d_avpkt() -> u32 {
    1000
}
fn d_red_p() -> f64 {
    0.02
}
fn d_target() -> f64 {
    5.0
}
fn d_interval() -> f64 {
    100.0
}
fn d_codel_limit() -> u32 {
    1000
}
fn d_fq_limit() -> u32 {
    10_240
}
fn d_flows() -> u32 {
    1024
}
fn d_quantum() -> u32 {
    PSCHED_MTU_BYTES
}
fn d_memory() -> u64 {
    32 << 20
}
fn yes() -> bool {
    true
}
fn d_batch() -> u32 {
    64
}
fn d_pie_target() -> f64 {
    15.0
}
fn d_alpha() -> u32 {
    2
}
fn d_beta() -> u32 {
    20
}

/// A time in ms as tc takes it: whole microseconds (rounded; tc truncates its parse), at most
/// u32 (the netlink attribute). Saturates on bad input.
pub(crate) fn ms_to_us(ms: f64) -> u32 {
    let us = (ms * 1000.0).round();
    if us.is_nan() || us <= 0.0 {
        0
    } else if us >= f64::from(u32::MAX) {
        u32::MAX
    } else {
        us as u32
    }
}

fn check_ms(field: &str, v: f64, zero_ok: bool) -> Result<(), NetError> {
    let max = f64::from(u32::MAX) / 1000.0;
    let ok = v.is_finite() && v <= max && if zero_ok { v >= 0.0 } else { v >= 0.001 };
    if ok {
        Ok(())
    } else {
        let lo = if zero_ok { "0" } else { "0.001 (1 us)" };
        Err(NetError::invalid(
            field,
            v,
            &format!("a time in ms from {lo} to {max}"),
        ))
    }
}

fn check_range(field: &str, v: u64, lo: u64, hi: u64) -> Result<(), NetError> {
    if (lo..=hi).contains(&v) {
        Ok(())
    } else {
        Err(NetError::invalid(field, v, &format!("from {lo} to {hi}")))
    }
}

impl QdiscConfig {
    /// Whether this is the plain drop-tail FIFO (for `skip_serializing_if`).
    pub fn is_drop_tail(&self) -> bool {
        matches!(self, QdiscConfig::DropTail)
    }

    /// Check every setting; the error names the field as `qdisc.<name>` (`qdisc.target_ms`,
    /// `qdisc.flows`, ...). RED's derived parameters (Wlog, Plog, the idle table) must be
    /// computable as tc computes them, with `bandwidth_bps` or tc's 10 Mbit/s; a link checks them
    /// again with its own rate ([`crate::LinkConfig::validate`]).
    pub fn validate(&self) -> Result<(), NetError> {
        self.validate_for_rate(None)
    }

    /// [`Self::validate`] for a link of rate `link_rate_bps` (RED's default bandwidth).
    pub(crate) fn validate_for_rate(&self, link_rate_bps: Option<u64>) -> Result<(), NetError> {
        self.check(link_rate_bps).map_err(|e| e.in_field("qdisc"))
    }

    /// The checks, naming fields without the `qdisc.` prefix.
    fn check(&self, link_rate_bps: Option<u64>) -> Result<(), NetError> {
        match self {
            QdiscConfig::DropTail => Ok(()),
            QdiscConfig::Red { .. } => red::RedParams::from_config(self, link_rate_bps).map(|_| ()),
            QdiscConfig::Codel { .. } => codel::check(self),
            QdiscConfig::FqCodel { .. } => fq_codel::check(self),
            QdiscConfig::Pie { .. } => pie::check(self),
        }
    }
}

/// A packet waiting in a qdisc: its size and the algorithm's enqueue timestamp (CoDel time,
/// psched ticks or ns, as the algorithm keeps it).
#[derive(Debug)]
pub(crate) struct Item<P> {
    pub pkt: P,
    pub bytes: u32,
    pub t: u64,
}

/// Where an AQM reports what it did beside returning packets: dropped packets (time, packet),
/// kept for the driver, and the link's counters (`dropped_aqm_pkts`, `ce_marks`).
pub(crate) struct Out<'a, P> {
    pub drops: &'a mut VecDeque<(u64, P)>,
    pub stats: &'a mut LinkStats,
}

impl<P: NetPacket> Out<'_, P> {
    /// A packet the AQM dropped from its queue at `t_ns` (at dequeue, or in FQ-CoDel's
    /// overlimit batch).
    pub fn drop(&mut self, t_ns: u64, pkt: P) {
        self.stats.dropped_aqm_pkts = self.stats.dropped_aqm_pkts.saturating_add(1);
        if self.drops.len() >= MAX_PENDING_DROPS {
            self.drops.pop_front();
        }
        self.drops.push_back((t_ns, pkt));
    }

    /// `INET_ECN_set_ce` (include/net/inet_ecn.h): ECT(0)/ECT(1) become CE and true; a packet
    /// already CE is left so and true (the kernel's `IP_ECN_set_ce` returns 1 for CE too, so it
    /// is "marked" rather than dropped); Not-ECT false. `ce_marks` counts ECT packets marked.
    pub fn set_ce(&mut self, pkt: &mut P) -> bool {
        match pkt.ecn() {
            Ecn::Ect0 | Ecn::Ect1 => {
                pkt.set_ce();
                self.stats.ce_marks = self.stats.ce_marks.saturating_add(1);
                true
            }
            Ecn::Ce => true,
            Ecn::NotEct => false,
        }
    }
}

/// A running AQM (every kind but drop-tail).
#[derive(Debug)]
pub(crate) enum Aqm<P> {
    Red(red::Red<P>),
    Codel(codel::Codel<P>),
    FqCodel(fq_codel::FqCodel<P>),
    Pie(pie::Pie<P>),
}

impl<P: NetPacket> Aqm<P> {
    /// The AQM `cfg` asks for (None for drop-tail), on a link of `link_rate_bps`, drawing from
    /// `rng`. Never panics, whatever the config (bad values saturate).
    pub fn new(cfg: &QdiscConfig, link_rate_bps: Option<u64>, rng: ChaCha8Rng) -> Option<Self> {
        Some(match cfg {
            QdiscConfig::DropTail => return None,
            QdiscConfig::Red { .. } => Aqm::Red(red::Red::new(cfg, link_rate_bps, rng)),
            QdiscConfig::Codel { .. } => Aqm::Codel(codel::Codel::new(cfg)),
            QdiscConfig::FqCodel { .. } => Aqm::FqCodel(fq_codel::FqCodel::new(cfg)),
            QdiscConfig::Pie { .. } => Aqm::Pie(pie::Pie::new(cfg, rng)),
        })
    }

    /// Offer `pkt` (`bytes` on the wire) at `now_ns`. `Err` gives the offered packet back when
    /// the AQM drops it (early or overlimit); other packets it drops go to `out`.
    pub fn enqueue(&mut self, now_ns: u64, pkt: P, bytes: u32, out: &mut Out<P>) -> Result<(), P> {
        match self {
            Aqm::Red(q) => q.enqueue(now_ns, pkt, bytes, out),
            Aqm::Codel(q) => q.enqueue(now_ns, pkt, bytes),
            Aqm::FqCodel(q) => q.enqueue(now_ns, pkt, bytes, out),
            Aqm::Pie(q) => q.enqueue(now_ns, pkt, bytes, out),
        }
    }

    /// The transmitter is free at `now_ns`: the next packet to send, if any (drops on the way
    /// go to `out`).
    pub fn dequeue(&mut self, now_ns: u64, out: &mut Out<P>) -> Option<(P, u32)> {
        let it = match self {
            Aqm::Red(q) => q.dequeue(now_ns),
            Aqm::Codel(q) => q.dequeue(now_ns, out),
            Aqm::FqCodel(q) => q.dequeue(now_ns, out),
            Aqm::Pie(q) => q.dequeue(now_ns),
        };
        it.map(|i| (i.pkt, i.bytes))
    }

    /// Packets waiting.
    pub fn len(&self) -> usize {
        match self {
            Aqm::Red(q) => q.len(),
            Aqm::Codel(q) => q.len(),
            Aqm::FqCodel(q) => q.len(),
            Aqm::Pie(q) => q.len(),
        }
    }

    /// Bytes waiting.
    pub fn backlog_bytes(&self) -> u64 {
        match self {
            Aqm::Red(q) => q.backlog_bytes(),
            Aqm::Codel(q) => q.backlog_bytes(),
            Aqm::FqCodel(q) => q.backlog_bytes(),
            Aqm::Pie(q) => q.backlog_bytes(),
        }
    }

    /// `TCQ_F_CAN_BYPASS` (set by codel_init and fq_codel_init): a packet offered while the
    /// qdisc is empty and the device free goes straight to the device (`__dev_xmit_skb`),
    /// leaving the qdisc's state untouched.
    pub fn can_bypass(&self) -> bool {
        matches!(self, Aqm::Codel(_) | Aqm::FqCodel(_))
    }

    /// When the AQM's own timer next fires (PIE's probability update), ns.
    pub fn next_timer_ns(&self) -> Option<u64> {
        match self {
            Aqm::Pie(q) => q.next_timer_ns(),
            _ => None,
        }
    }

    /// Run the timer due at `t_ns`; nothing else happens in the link until `horizon_ns`
    /// (>= `t_ns`), so an idle AQM may run every tick up to it at once.
    pub fn on_timer(&mut self, t_ns: u64, horizon_ns: u64) {
        if let Aqm::Pie(q) = self {
            q.on_timer(t_ns, horizon_ns);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fallback_defaults_are_what_a_bare_kind_gives() {
        for (kind, want) in [
            ("red", QdiscConfig::red_defaults()),
            ("codel", QdiscConfig::codel_defaults()),
            ("fq_codel", QdiscConfig::fq_codel_defaults()),
            ("pie", QdiscConfig::pie_defaults()),
        ] {
            let got: QdiscConfig =
                serde_json::from_str(&format!(r#"{{"kind": "{kind}"}}"#)).unwrap();
            assert_eq!(got, want, "{kind}");
        }
    }
}
