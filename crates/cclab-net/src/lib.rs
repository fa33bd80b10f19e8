//! # cclab-net: network element models
//!
//! Links, queues, loss and delay models that know packets, not TCP. Each is a deterministic
//! state machine: it is given `now` (integer nanoseconds) and packets, and says what leaves
//! when. It never reads a clock and never sleeps, so the same code runs under the simulator's
//! virtual time and, later, under the real-time TUN emulator (`cclab-link`).
//!
//! A [`link::Link`] is one direction of a link: random loss at ingress, a drop-tail queue,
//! FIFO service at a rate or by a Mahimahi capacity trace, outages, propagation delay and delay
//! spikes. Randomness comes from [`rng::stream`], one independent stream per named element.

pub mod capacity;
pub mod element;
pub mod error;
pub mod link;
pub mod loss;
pub mod packet;
pub mod rng;

pub use capacity::{Capacity, MahimahiTrace};
pub use element::Element;
pub use error::NetError;
pub use link::{DelaySpike, DropReason, Dropped, Link, LinkConfig, LinkStats, Outage, QueueLimit};
pub use loss::{Loss, LossModel};
pub use packet::NetPacket;

/// Nanoseconds per microsecond.
pub const NS_PER_US: u64 = 1_000;
/// Nanoseconds per millisecond.
pub const NS_PER_MS: u64 = 1_000_000;
/// Nanoseconds per second.
pub const NS_PER_S: u64 = 1_000_000_000;
