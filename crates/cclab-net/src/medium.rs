//! The interface every packet-moving element offers its driver (the simulator's event loop or
//! the real-time emulator): a medium with ports. A packet is offered at `now` entering at one
//! port and addressed to another; the driver asks when the medium next needs it, and takes
//! what has come out (with the port it left by). A [`Link`](crate::link::Link) direction is a
//! medium of two ports (in at 0, out at 1); a [`SharedChannel`](crate::shared::SharedChannel)
//! joins N ports on one transmitter (a WLAN cell, a mesh channel), so the simulator holds media,
//! not links.
//!
//! A medium reports its queues as lanes: one per port that transmits (a link direction: one;
//! a shared channel: one per port), each with the links table's columns. A medium whose ports
//! are 802.11 stations also reports each port's MAC counters ([`MacStats`]).

use crate::dcf::DcfStationStats;
use crate::link::{Dropped, LinkStats};
use crate::mesh::MeshStationStats;
use serde::{Serialize, Serializer};
use std::collections::VecDeque;

/// A deterministic packet-moving state machine with ports, driven by `now`.
pub trait Medium<P> {
    /// Number of ports.
    fn ports(&self) -> usize;
    /// Offer a packet at `now_ns`, entering at port `from` and leaving at port `to`; a lost or
    /// refused packet comes back in `Err`.
    fn enqueue(&mut self, now_ns: u64, from: usize, to: usize, pkt: P) -> Result<(), Dropped<P>>;
    /// When the driver must call [`Medium::pop_delivered`] next, ns (a packet comes out, or
    /// the medium must decide something then).
    fn next_event_ns(&self) -> Option<u64>;
    /// The next packet out by `now_ns`, in order. It leaves by the port it was addressed to
    /// at enqueue (the driver's route knows which: the port is not returned, so a link's hot
    /// path moves the packet once).
    fn pop_delivered(&mut self, now_ns: u64) -> Option<P>;
    /// A packet the medium dropped on its own since the last call (an AQM's drop from its
    /// queue), with the time it was dropped; drivers collect these after each call that takes
    /// a time. Packets refused at enqueue come back from `enqueue` instead.
    fn pop_dropped(&mut self) -> Option<(u64, Dropped<P>)> {
        None
    }
    /// Run `f` on each packet taken that has started transmission by `now_ns` and not yet come
    /// out (in transmission, or sent and propagating), in order. Default: none (only a link
    /// reports them; a host's device is one).
    fn for_each_started(&mut self, _now_ns: u64, _f: &mut dyn FnMut(&mut P)) {}
    /// Number of queues it reports (see the module doc).
    fn lanes(&self) -> usize;
    /// Packets queued in `lane` at `now_ns` (the one in transmission included).
    fn queue_pkts(&mut self, now_ns: u64, lane: usize) -> u32;
    /// Bytes queued in `lane` at `now_ns`.
    fn queue_bytes(&mut self, now_ns: u64, lane: usize) -> u64;
    /// Counters of `lane` so far.
    fn stats(&self, lane: usize) -> &LinkStats;
    /// MAC counters of the station at `lane`'s port so far (None: the medium has no MAC, or no
    /// such lane).
    fn mac_stats(&self, _lane: usize) -> Option<MacStats> {
        None
    }
}

/// A medium port's MAC counters: the station's own type, by medium. In summaries it is one
/// object: `kind` (`"dcf"` or `"mesh"`), the counters under their field names, and the figures
/// derived from them (`collision_prob`, `residual_loss`; for the DCF cell `mean_rate_bps`, for
/// the mesh `hidden_share`; null when their denominator is 0).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum MacStats {
    /// A station of an 802.11 DCF cell.
    Dcf {
        /// The station's counters ([`DcfCell::station_stats`](crate::DcfCell::station_stats)).
        stats: DcfStationStats,
        /// Its mean data rate over its unicast attempts, bit/s
        /// ([`DcfCell::mean_rate_bps`](crate::DcfCell::mean_rate_bps); None: no attempt).
        mean_rate_bps: Option<f64>,
    },
    /// A node of an 802.11s mesh chain.
    Mesh {
        /// The node's counters ([`MeshChain::station_stats`](crate::MeshChain::station_stats)).
        stats: MeshStationStats,
    },
}

impl MacStats {
    /// Transmission attempts (DCF: frames, RTS included; mesh: data PPDUs).
    pub fn attempts(&self) -> u64 {
        match self {
            MacStats::Dcf { stats: s, .. } => s.attempts,
            MacStats::Mesh { stats: s } => s.attempts,
        }
    }

    /// Attempts that collided.
    pub fn collisions(&self) -> u64 {
        match self {
            MacStats::Dcf { stats: s, .. } => s.collisions,
            MacStats::Mesh { stats: s } => s.collisions,
        }
    }

    /// Frames (mesh: MPDUs) dropped at the retry limit.
    pub fn retry_drops(&self) -> u64 {
        match self {
            MacStats::Dcf { stats: s, .. } => s.retry_drops,
            MacStats::Mesh { stats: s } => s.retry_drops,
        }
    }

    /// The collision probability per attempt, `collisions / attempts` (Bianchi's p for a
    /// saturated DCF station; None: no attempt).
    pub fn collision_prob(&self) -> Option<f64> {
        ratio(self.collisions(), self.attempts())
    }

    /// The loss MAC retries leave: of the frames (mesh: MPDUs) whose fate is settled, the
    /// fraction dropped at the retry limit. DCF: `retry_drops / (successes + retry_drops)`;
    /// mesh: [`MeshStationStats::residual_loss`], `retry_drops / (mpdus_acked + retry_drops)`.
    /// Frames still queued or in an exchange at the end are not counted. None: none settled.
    pub fn residual_loss(&self) -> Option<f64> {
        match self {
            MacStats::Dcf { stats: s, .. } => {
                ratio(s.retry_drops, s.successes.saturating_add(s.retry_drops))
            }
            MacStats::Mesh { stats: s } => s.residual_loss(),
        }
    }

    /// Mesh only: the share of collisions with a transmitter the sender does not sense,
    /// `hidden_collisions / collisions` (None: no collision, or a DCF station: every station
    /// of a cell senses every other).
    pub fn hidden_share(&self) -> Option<f64> {
        match self {
            MacStats::Dcf { .. } => None,
            MacStats::Mesh { stats: s } => ratio(s.hidden_collisions, s.collisions),
        }
    }
}

/// `num / den`, None when `den` is 0.
fn ratio(num: u64, den: u64) -> Option<f64> {
    (den > 0).then(|| num as f64 / den as f64)
}

/// The summary's `mac` object (see [`MacStats`]).
#[derive(Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum MacStatsOut<'a> {
    Dcf {
        #[serde(flatten)]
        counters: &'a DcfStationStats,
        collision_prob: Option<f64>,
        residual_loss: Option<f64>,
        mean_rate_bps: Option<f64>,
    },
    Mesh {
        #[serde(flatten)]
        counters: &'a MeshStationStats,
        collision_prob: Option<f64>,
        residual_loss: Option<f64>,
        hidden_share: Option<f64>,
    },
}

impl Serialize for MacStats {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let (collision_prob, residual_loss) = (self.collision_prob(), self.residual_loss());
        match self {
            MacStats::Dcf {
                stats: counters,
                mean_rate_bps,
            } => MacStatsOut::Dcf {
                counters,
                collision_prob,
                residual_loss,
                mean_rate_bps: *mean_rate_bps,
            },
            MacStats::Mesh { stats: counters } => MacStatsOut::Mesh {
                counters,
                collision_prob,
                residual_loss,
                hidden_share: self.hidden_share(),
            },
        }
        .serialize(s)
    }
}

/// A multi-port medium's frames on their way out: delivered on the air, handed to the driver at
/// their arrival time (the end of the frame plus the propagation delay), in order. Shared by
/// the shared channel and the DCF cell.
#[derive(Debug)]
pub(crate) struct Flight<P> {
    queue: VecDeque<(u64, usize, u32, P)>,
}

impl<P> Default for Flight<P> {
    fn default() -> Self {
        Flight {
            queue: VecDeque::new(),
        }
    }
}

impl<P> Flight<P> {
    /// A frame of `bytes` for port `to` arrives at `arrival_ns` (never before the one pushed
    /// last: frames end in order on one channel, and the delay is the same for all).
    pub(crate) fn push(&mut self, arrival_ns: u64, to: usize, bytes: u32, pkt: P) {
        self.queue.push_back((arrival_ns, to, bytes, pkt));
    }

    /// When the next frame arrives.
    pub(crate) fn next_arrival_ns(&self) -> Option<u64> {
        self.queue.front().map(|f| f.0)
    }

    /// The next frame that has arrived by `now_ns`, counted as delivered in its port's lane.
    pub(crate) fn pop_due(&mut self, now_ns: u64, stats: &mut [LinkStats]) -> Option<P> {
        if self.queue.front()?.0 > now_ns {
            return None;
        }
        let (_, to, bytes, pkt) = self.queue.pop_front()?;
        let st = &mut stats[to];
        st.delivered_pkts = st.delivered_pkts.saturating_add(1);
        st.delivered_bytes = st.delivered_bytes.saturating_add(u64::from(bytes));
        Some(pkt)
    }
}

/// The earlier of two optional times.
pub(crate) fn earliest(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{rng, Capacity, Link, LinkConfig, NetPacket};

    struct P;
    impl NetPacket for P {
        fn wire_bytes(&self) -> u32 {
            1500
        }
    }

    /// A driver written against the trait: offer `n` packets at 0, collect arrival times.
    fn run(e: &mut dyn Medium<P>, n: usize) -> Vec<u64> {
        for _ in 0..n {
            let _ = e.enqueue(0, 0, 1, P);
        }
        let mut out = vec![];
        while let Some(t) = e.next_event_ns() {
            while e.pop_delivered(t).is_some() {
                out.push(t);
            }
        }
        out
    }

    #[test]
    fn a_link_is_a_two_port_medium() {
        let cfg = LinkConfig {
            capacity: Some(Capacity::Rate {
                rate_bps: 12_000_000,
            }),
            ..LinkConfig::default()
        };
        let mut l: Link<P> = Link::new(cfg, rng::stream(1, "e"));
        assert_eq!((Medium::ports(&l), Medium::lanes(&l)), (2, 1));
        assert_eq!(run(&mut l, 3), [1_000_000, 2_000_000, 3_000_000]);
        assert_eq!(Medium::stats(&l, 0).delivered_pkts, 3);
        assert_eq!(Medium::mac_stats(&l, 0), None);
    }

    #[test]
    fn mac_stats_serialize_with_their_kind_and_derived_figures() {
        let dcf = MacStats::Dcf {
            stats: DcfStationStats {
                attempts: 10,
                collisions: 2,
                successes: 7,
                retry_drops: 1,
                ..DcfStationStats::default()
            },
            mean_rate_bps: Some(54e6),
        };
        let v = serde_json::to_value(dcf).unwrap();
        assert_eq!(v["kind"], "dcf");
        assert_eq!(v["attempts"], 10);
        assert_eq!(v["attempts_by_rate"].as_array().unwrap().len(), 8);
        assert_eq!(v["collision_prob"], 0.2);
        assert_eq!(v["residual_loss"], 0.125);
        assert_eq!(v["mean_rate_bps"], 54e6);
        assert!(v.get("hidden_share").is_none());
        let mesh = MacStats::Mesh {
            stats: MeshStationStats {
                attempts: 4,
                collisions: 2,
                hidden_collisions: 1,
                mpdus_acked: 3,
                retry_drops: 1,
                ..MeshStationStats::default()
            },
        };
        let v = serde_json::to_value(mesh).unwrap();
        assert_eq!(v["kind"], "mesh");
        assert_eq!(v["hidden_collisions"], 1);
        assert_eq!(
            (
                &v["collision_prob"],
                &v["residual_loss"],
                &v["hidden_share"]
            ),
            (&0.5.into(), &0.25.into(), &0.5.into())
        );
        let idle = serde_json::to_value(MacStats::Mesh {
            stats: MeshStationStats::default(),
        })
        .unwrap();
        assert!(idle["collision_prob"].is_null() && idle["hidden_share"].is_null());
    }
}
