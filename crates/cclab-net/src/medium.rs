//! The interface every packet-moving element offers its driver (the simulator's event loop or
//! the real-time emulator): a medium with ports. A packet is offered at `now` entering at one
//! port and addressed to another; the driver asks when the medium next needs it, and takes
//! what has come out (with the port it left by). A [`Link`](crate::link::Link) direction is a
//! medium of two ports (in at 0, out at 1); a [`SharedChannel`](crate::shared::SharedChannel)
//! joins N ports on one transmitter (a WLAN cell, a mesh channel), so the simulator holds media,
//! not links.
//!
//! A medium reports its queues as lanes: one per port that transmits (a link direction: one;
//! a shared channel: one per port), each with the links table's columns.

use crate::link::{Dropped, LinkStats};
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
    /// Number of queues it reports (see the module doc).
    fn lanes(&self) -> usize;
    /// Packets queued in `lane` at `now_ns` (the one in transmission included).
    fn queue_pkts(&mut self, now_ns: u64, lane: usize) -> u32;
    /// Bytes queued in `lane` at `now_ns`.
    fn queue_bytes(&mut self, now_ns: u64, lane: usize) -> u64;
    /// Counters of `lane` so far.
    fn stats(&self, lane: usize) -> &LinkStats;
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
    }
}
