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
}
