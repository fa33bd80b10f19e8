//! A port's state in the cell ([`Station`]: its queue, backoff, window, rate adaptation) and
//! its MAC counters ([`DcfStationStats`]); the exchange on the air is a list of [`Attempt`]s.

use super::rate::Arf;
use serde::Serialize;
use std::collections::VecDeque;

/// The most rates a station's ladder has (802.11g ERP-OFDM and 802.11n MCS 0-7: 8).
pub const MAX_RATES: usize = 8;

/// A port's MAC counters, besides its lane's [`LinkStats`](crate::LinkStats).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct DcfStationStats {
    /// Transmission attempts: first tries and retries (with RTS/CTS, the RTS starts one).
    pub attempts: u64,
    /// Attempts that collided.
    pub collisions: u64,
    /// Attempts that did not collide but were lost to the frame error rate.
    pub frame_errors: u64,
    /// Frames acknowledged.
    pub successes: u64,
    /// Frames dropped at the retry limit.
    pub retry_drops: u64,
    /// Rate adaptation's steps up.
    pub rate_increases: u64,
    /// Rate adaptation's steps down.
    pub rate_decreases: u64,
    /// Unicast data attempts at each rate of the ladder, slowest first (entry k at
    /// [`DcfCell::rates_bps`](super::DcfCell::rates_bps)`[k]`; broadcasts, sent at the basic
    /// rate, are not counted).
    pub attempts_by_rate: [u64; MAX_RATES],
}

#[derive(Debug)]
pub(super) struct Waiting<P> {
    pub(super) to: usize,
    pub(super) bytes: u32,
    pub(super) pkt: P,
}

/// One contender.
#[derive(Debug)]
pub(super) struct Station<P> {
    /// Frames waiting; the front one may be on the air (a delivered frame leaves it when its
    /// exchange starts, so it may already be gone while `sending`).
    pub(super) queue: VecDeque<Waiting<P>>,
    /// Frames held, the one in an exchange included (what the queue limit counts).
    pub(super) pkts: u32,
    /// Bytes held, likewise.
    pub(super) bytes: u64,
    /// Backoff pending: while the medium is idle, slots from the idle period's first boundary
    /// (the station transmits at `idle_from + DIFS + k slots`); while busy, the frozen count.
    /// None: no backoff pending (or, while `sending`, the exchange consumed it).
    pub(super) backoff: Option<u64>,
    /// Contention window, slots (CWmin..=CWmax).
    pub(super) cw: u32,
    /// Failed attempts of the front frame.
    pub(super) failures: u32,
    /// In the exchange on the air.
    pub(super) sending: bool,
    /// Frame error rate of this port.
    pub(super) fer: f64,
    /// Its queue limit, packets.
    pub(super) queue_limit_pkts: Option<u32>,
    /// Its rate adaptation toward each port (entry k: frames to port k), as ns-3 keeps one
    /// state per remote station; empty without rate adaptation.
    pub(super) arf: Vec<Arf>,
    pub(super) mac: DcfStationStats,
}

impl<P> Station<P> {
    /// Its current rate toward port `to`, an index in the ladder `rates_bps` (`top` without
    /// rate adaptation, and for a broadcast).
    pub(super) fn rate_index(&self, to: usize, top: usize) -> usize {
        self.arf.get(to).map_or(top, Arf::rate)
    }
}

/// One sender's part in the exchange on the air.
#[derive(Debug, Clone, Copy)]
pub(super) struct Attempt {
    pub(super) port: usize,
    /// A broadcast frame (one attempt only).
    pub(super) broadcast: bool,
    /// Its destination port ([`BROADCAST`](super::BROADCAST) for a broadcast).
    pub(super) to: usize,
    /// Wire bytes of its frame.
    pub(super) bytes: u32,
    /// An RTS opened the attempt.
    pub(super) rts: bool,
    pub(super) delivered: bool,
}
