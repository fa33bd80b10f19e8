//! # cclab-net: network element models
//!
//! Links, queues, loss and delay models that know packets, not TCP (a packet is anything with a
//! size on the wire, [`NetPacket`]). Each element is a deterministic state machine: it is given
//! `now` and packets, and says what leaves when. It never reads a clock and never sleeps; time is
//! always passed in as integer nanoseconds (`u64`, names ending in `_ns`). So the same code runs
//! under the simulator's virtual time (`cclab-sim`) and under the real-time TUN emulator
//! `cclab-link` (`cclab-emu`), driven by the wall clock.
//!
//! A [`Link`] is one direction of a link: random [loss](loss) at ingress, a drop-tail queue or
//! a [queue discipline](qdisc) (RED, CoDel, FQ-CoDel, PIE), service at a rate or by a Mahimahi
//! [capacity] trace, [outages](Outage), propagation delay and [delay spikes](DelaySpike). A
//! drop-tail link fixes each packet's departure and arrival when the packet is enqueued, so a
//! driver only needs to wake up at [`Link::next_arrival_ns`]. [`spec`] holds a link direction in
//! the scenario's units and [`topology`] the graph of nodes, links and media with its routes.
//! The [`Medium`] trait (ports in, ports out) is what drivers hold: a link direction is a
//! two-port medium, a [`SharedChannel`] joins N ports on one transmitter, a [`DcfCell`] is an
//! 802.11 cell whose N stations contend under the Distributed Coordination Function ([`dcf`]).
//!
//! Randomness comes from [`rng::stream`]: one independent stream per named element, derived
//! from the run seed, so the same seed gives the same run on every platform.

#![warn(missing_docs)]

pub mod capacity;
pub mod dcf;
pub mod error;
pub mod host;
pub mod link;
pub mod loss;
pub mod medium;
pub mod mesh;
pub mod model;
pub mod packet;
pub mod qdisc;
pub mod radio;
pub mod rng;
pub mod schedule;
pub mod shared;
pub mod spec;
pub mod topology;

pub use capacity::{Capacity, MahimahiTrace, MAHIMAHI_MTU_BYTES};
pub use dcf::{DcfCell, DcfSpec};
pub use error::NetError;
pub use link::{DelaySpike, DropReason, Dropped, Link, LinkConfig, LinkStats, Outage, QueueLimit};
pub use loss::{Loss, LossModel};
pub use medium::{MacStats, Medium};
pub use mesh::{MeshChain, MeshSpec};
pub use model::{MediumKind, MediumModel};
pub use packet::{Ecn, NetPacket};
pub use qdisc::QdiscConfig;
pub use radio::{Mobility, RadioConfig};
pub use shared::{SharedChannel, SharedSpec};
pub use spec::{DelaySpikeSpec, LinkSpec, OutageSpec, RadioSpec};
pub use topology::{Dir, Graph, Hop, LinkPairSpec, MediumSpec, NodeKind, NodeSpec};

/// Nanoseconds per microsecond.
pub const NS_PER_US: u64 = 1_000;
/// Nanoseconds per millisecond.
pub const NS_PER_MS: u64 = 1_000_000;
/// Nanoseconds per second.
pub const NS_PER_S: u64 = 1_000_000_000;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_constants_agree() {
        assert_eq!(NS_PER_MS, 1000 * NS_PER_US);
        assert_eq!(NS_PER_S, 1000 * NS_PER_MS);
    }
}
