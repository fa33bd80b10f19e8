//! Host agents: software that runs on a host beside its TCP connections. One kind so far, the
//! S1 middleware's daemon on each terminal (`crate::middleware`; docs/design.md,
//! "Middleware"): every `count_interval_ms` it broadcasts a small UDP packet on the terminal's
//! medium, it counts the terminals it hears, and every `interval_ms` it computes the window range
//! of each of its connections from the count, the connection's smoothed RTT and its minimum RTT
//! (what TCP_INFO gives the kernel daemon), and sets it (`Sender::set_cwnd_range`).
//!
//! The broadcast takes airtime as in an infrastructure BSS: on an 802.11 DCF cell the station
//! sends it to the access point (To-DS: a unicast frame, acknowledged and retried like data,
//! queued behind the station's data), and the AP sends it on as a group-addressed frame
//! ([`cclab_net::dcf::BROADCAST`]: once, at the basic rate, no Ack, lost in a collision) from
//! its own queue, behind the TCP ACKs it holds. The cell's other terminals hear it when that
//! frame is delivered. On another medium, or none, a
//! terminal hears the terminals that send onto the same element at once, with no airtime (the
//! ideal count), and is said so in docs/design.md.
//!
//! Times: each agent starts at a phase derived from (seed, `middleware.<host>`) in [0, count
//! interval), as daemons started by hand are not in step; both periods run from that phase.

use crate::middleware::{bounds, MiddlewareSpec, TerminalCounter};

/// One terminal running the middleware.
#[derive(Debug)]
pub(crate) struct Terminal {
    /// Its host.
    pub host: String,
    /// The flows it sends.
    pub flows: Vec<u32>,
    /// The senders it has heard.
    pub counter: TerminalCounter,
    /// The element its broadcasts go onto, its port there, and the port its data goes to next
    /// (the access point, which relays a station's broadcast): the first medium hop of its
    /// first flow.
    pub medium: Option<(u32, u32, u32)>,
    /// Whether that element is a DCF cell (broadcasts take airtime) or not (ideal count).
    pub on_air: bool,
    /// Next broadcast, next clamp step, ns.
    pub next_count_ns: u64,
    pub next_step_ns: u64,
}

impl Terminal {
    /// When it next acts.
    pub fn next_ns(&self) -> u64 {
        self.next_count_ns.min(self.next_step_ns)
    }
}

/// The middleware of a run: its settings and its terminals.
#[derive(Debug)]
pub(crate) struct Agents {
    pub spec: MiddlewareSpec,
    pub terminals: Vec<Terminal>,
}

/// One clamp step's outcome for one flow, as logged (`middleware` events).
pub(crate) struct Step {
    pub n: u32,
    pub rtt_ms: f64,
    pub min_rtt_ms: f64,
    pub bounds: Option<crate::middleware::Bounds>,
}

impl Step {
    /// The range to set.
    pub fn range(&self) -> Option<(u32, u32)> {
        self.bounds.as_ref().map(|b| (b.lower_pkts, b.upper_pkts))
    }

    /// The event's detail: `host=.. n=.. rtt_ms=.. min_rtt_ms=.. ratio_rtt_ms=.. row=..
    /// lower=.. upper=.. cwnd=.. ssthresh=..` (the kernel daemon's log columns; `lower`,
    /// `upper`, `ratio_rtt_ms` and `row` empty while inactive).
    pub fn detail(&self, host: &str, cwnd: u32, ssthresh: u32) -> String {
        let (ratio, row, lo, hi) = match &self.bounds {
            Some(b) => (
                format!("{:.3}", b.ratio_rtt_ms),
                b.row.to_string(),
                b.lower_pkts.to_string(),
                b.upper_pkts.to_string(),
            ),
            None => Default::default(),
        };
        format!(
            "host={host} n={} rtt_ms={:.3} min_rtt_ms={:.3} ratio_rtt_ms={ratio} row={row} lower={lo} \
             upper={hi} cwnd={cwnd} ssthresh={ssthresh}",
            self.n, self.rtt_ms, self.min_rtt_ms
        )
    }
}

impl Agents {
    /// The first action of terminal `host`: a phase in [0, count interval) from its stream.
    pub fn phase_ns(spec: &MiddlewareSpec, seed: u64, host: &str) -> u64 {
        let period = spec.count_interval_ns().max(1);
        // A 64-bit value derived from (seed, name), as every stream's seed is.
        cclab_net::rng::stream_seed(seed, &format!("middleware.{host}")) % period
    }

    /// The range for a connection of terminal `i` with smoothed RTT `srtt_us` and minimum RTT
    /// `min_rtt_us` (u32::MAX: none yet), at `now_ns`.
    pub fn step(&self, i: usize, now_ns: u64, srtt_us: u64, min_rtt_us: u32) -> Step {
        let t = &self.terminals[i];
        let n = t.counter.count(now_ns);
        let min_rtt_ms = if min_rtt_us == u32::MAX {
            f64::NAN
        } else {
            f64::from(min_rtt_us) / 1000.0
        };
        let rtt_ms = srtt_us as f64 / 1000.0;
        Step {
            n,
            rtt_ms,
            min_rtt_ms,
            bounds: bounds(&self.spec, n, rtt_ms, min_rtt_ms),
        }
    }
}
