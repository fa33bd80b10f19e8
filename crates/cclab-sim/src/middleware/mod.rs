//! # The S1 middleware: cooperative cwnd clamping on WLAN terminals
//!
//! Shimada, Yamaguchi, Oguchi, "Android OSにおける協調的輻輳制御手法による異種クライアント端末
//! 通信性能の向上" (`shared/seeds/001_afc11d3fbdbb7f7c.txt`, distilled in `shared/docs/STUDIES.md`
//! S1), after Hirai et al. (WiMob 2013) and Hayakawa et al. (IMCOM 2015). N terminals upload
//! through one 802.11g access point. Under DCF the AP gets no more channel access than any one
//! terminal, yet it must send every terminal's TCP ACKs; they pile up in its queue. The
//! middleware, on each terminal, keeps its own TCP connections' congestion window inside a range
//! so that the terminals together do not overfill the cell. Every 0.5 s (section 3.2, steps
//! 1-6):
//!
//! 1. count the terminals on the AP: each broadcasts a small UDP packet, each counts the
//!    senders it hears ([`TerminalCounter`]);
//! 2. candidate 1 from the count, eq. 2-4 ([`bounds::ideal_cwnd_pkts`]):
//!    `Ideal_cwnd = Bandwidth * RTT / (SegmentSize * N)`, `Bandwidth = BWmax * f(N)`,
//!    `f(N) = N^-0.15`;
//! 3. read the connection's current RTT and its minimum RTT;
//! 4. `ratio_rtt = current_rtt - min_rtt` (eq. 5, ms);
//! 5. candidate 2: the (max, min) row of a table indexed by ratio_rtt ([`tables`]: the S3.2
//!    table, and table 3's "before" and "improved");
//! 6. upper = min(upper1, upper2), lower = min(lower1, lower2): cwnd is kept in
//!    [lower, upper] and the stock algorithm (CUBIC) runs inside that range.
//!
//! The paper says that eq. 2 gives an upper *and* a lower candidate but not how; the rule is
//! [`CandidateRule`], and its default, [`CandidateRule::RttSpan`], is argued in `spec.rs`. Its
//! future work, turning the middleware on only above a number of terminals, is
//! [`MiddlewareSpec::min_terminals`].
//!
//! This module is the policy only: pure functions of (spec, N, RTT, min RTT) and a counter fed
//! explicit times, so the simulator's world loop and the kernel daemon
//! (`python/cclab/kernel/middleware.py`, through `cclab._core.middleware_bounds`) run the very
//! same equations. Where the bounds act on cwnd (the floor and the cap at the kernel's hook
//! points) is specified in docs/design.md ("Middleware").

pub mod bounds;
pub mod counter;
pub mod spec;
pub mod tables;

pub use bounds::{bounds, candidates, ideal_cwnd_pkts, Bounds, Candidates};
pub use counter::TerminalCounter;
pub use spec::{CandidateRule, MiddlewareSpec, TableSpec};
pub use tables::{lookup, TablePreset, TableRow};

#[cfg(test)]
mod tests_scenario;
