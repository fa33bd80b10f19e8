//! # cclab-emu: the `cclab-link` real-time link emulator
//!
//! Moves IP packets between TUN devices in network namespaces through the very same
//! `cclab-net` models the simulator uses (links: loss, drop-tail queue or qdisc, rate or
//! capacity trace, outages, propagation delay, delay spikes; multi-port media: a shared
//! channel), driven by the monotonic clock. See docs/emulator.md.
//!
//! - [`spec`]: the JSON spec (ports, links, media, routes) and its checks.
//! - [`router`]: routing and the models (every element a `cclab_net::Medium`), without I/O
//!   (unit-tested).
//! - [`tun`]: opening a TUN inside a namespace.
//! - [`emu`]: the epoll/timerfd loop.
//! - [`ledger`]: each TCP connection's segments taken in, dropped and handed on.
//! - [`stats`], [`series`] (the links table), [`clock`].

pub mod clock;
pub mod ecn;
pub mod emu;
pub mod ledger;
pub mod router;
pub mod series;
pub mod spec;
pub mod stats;
pub mod tun;
