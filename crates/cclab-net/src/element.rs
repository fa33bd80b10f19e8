//! The interface every packet-moving element offers its driver (the simulator's event loop or
//! the real-time emulator): offer a packet at `now`, ask when the next one comes out, take it.
//! A [`Link`](crate::link::Link) is one; shared media (a WLAN cell where stations contend, a
//! multi-hop mesh chain on one channel) will be others, so the simulator holds elements, not
//! links.

use crate::link::{Dropped, LinkStats};

/// A deterministic packet-moving state machine driven by `now`.
pub trait Element<P> {
    /// Offer a packet at `now_ns`; a lost or refused packet comes back in `Err`.
    fn enqueue(&mut self, now_ns: u64, pkt: P) -> Result<(), Dropped<P>>;
    /// When the next packet comes out at the far end, ns.
    fn next_arrival_ns(&self) -> Option<u64>;
    /// The next packet out by `now_ns`, in order.
    fn pop_arrived(&mut self, now_ns: u64) -> Option<P>;
    /// Packets queued at `now_ns`.
    fn queue_pkts(&mut self, now_ns: u64) -> u32;
    /// Bytes queued at `now_ns`.
    fn queue_bytes(&mut self, now_ns: u64) -> u64;
    /// Counters so far.
    fn stats(&self) -> &LinkStats;
    /// A packet the element dropped on its own since the last call (an AQM's drop from its
    /// queue), with the time it was dropped; drivers collect these after each call that takes
    /// a time. Packets refused at enqueue come back from `enqueue` instead.
    fn pop_dropped(&mut self) -> Option<(u64, Dropped<P>)> {
        None
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
    fn run(e: &mut dyn Element<P>, n: usize) -> Vec<u64> {
        for _ in 0..n {
            let _ = e.enqueue(0, P);
        }
        let mut out = vec![];
        while let Some(t) = e.next_arrival_ns() {
            while e.pop_arrived(t).is_some() {
                out.push(t);
            }
        }
        out
    }

    #[test]
    fn a_link_is_an_element() {
        let cfg = LinkConfig {
            capacity: Some(Capacity::Rate {
                rate_bps: 12_000_000,
            }),
            ..LinkConfig::default()
        };
        let mut l: Link<P> = Link::new(cfg, rng::stream(1, "e"));
        assert_eq!(run(&mut l, 3), [1_000_000, 2_000_000, 3_000_000]);
        assert_eq!(Element::stats(&l).delivered_pkts, 3);
    }
}
