//! # cclab-emu: the `cclab-link` real-time link emulator
//!
//! Moves IP packets between TUN devices in network namespaces through the very same
//! `cclab-net` link models the simulator uses (loss, drop-tail queue, rate or capacity trace,
//! outages, propagation delay, delay spikes), driven by the monotonic clock. See
//! docs/emulator.md.
//!
//! - [`spec`]: the JSON spec (ports, links, routes) and its checks.
//! - [`router`]: routing and the models, without I/O (unit-tested).
//! - [`tun`]: opening a TUN inside a namespace.
//! - [`emu`]: the epoll/timerfd loop.
//! - [`stats`], [`series`] (the links table), [`clock`].

pub mod clock;
pub mod ecn;
pub mod emu;
pub mod router;
pub mod series;
pub mod spec;
pub mod stats;
pub mod tun;
