//! The scenario as the simulator reads it: the normalised JSON that `cclab` (Python) produces
//! from a scenario file (docs/scenario.md). Field names are the scenario file's; every quantity
//! is a number in the unit its name says. `validate()` re-checks what the core relies on, so a
//! config built by hand (Rust tests, other front ends) gets the same clear errors.

use crate::cc::{self, Params};
pub use crate::middleware::MiddlewareSpec;
pub use cclab_net::host::{HostSpec, HostStack, TsqMode};
pub use cclab_net::spec::{ms_to_ns, s_to_ns, DelaySpikeSpec, LinkSpec, OutageSpec};
pub use cclab_net::topology::{LinkPairSpec, MediumSpec, NodeKind, NodeSpec};
use cclab_net::NetError;
use serde::{Deserialize, Serialize};

/// A field that is wrong, with what is accepted. Displayed as `field: message`.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct ConfigError {
    /// Dotted path of the field, e.g. `flows[0].mss_bytes`.
    pub field: String,
    /// What is wrong and what is accepted.
    pub message: String,
}

impl ConfigError {
    /// A field and what is wrong with it.
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        err(field, message)
    }
}

/// The longest run, s (python/cclab/scenario.py MAX_DURATION_S): 10^6 s is beyond any study's
/// runs, and every time within it fits the 64-bit nanosecond clock.
pub const MAX_DURATION_S: f64 = 1e6;

pub(crate) fn err(field: impl Into<String>, message: impl Into<String>) -> ConfigError {
    ConfigError {
        field: field.into(),
        message: message.into(),
    }
}

/// A whole scenario.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// Simulated time, seconds.
    pub duration_s: f64,
    /// Root of every random stream.
    #[serde(default = "one")]
    pub seed: u64,
    #[serde(default)]
    pub sim: SimSettings,
    /// Every host's stack below TCP (interface queue, TSQ), unless a host overrides it.
    #[serde(default)]
    pub host: HostSpec,
    /// The dumbbell shorthand: the shared link (with `senders` and `receivers`). None in the
    /// general form (`nodes` and `links`). `lower.rs` expands it into the general form.
    #[serde(default)]
    pub bottleneck: Option<Duplex>,
    /// Dumbbell only: the senders with their access links (default: one, "sender").
    #[serde(default)]
    pub senders: Option<Vec<Host>>,
    /// Dumbbell only: the receivers with their access links (default: one, "receiver").
    #[serde(default)]
    pub receivers: Option<Vec<Host>>,
    /// General form: hosts and routers.
    #[serde(default)]
    pub nodes: Vec<NodeSpec>,
    /// General form: point-to-point links between nodes.
    #[serde(default)]
    pub links: Vec<LinkPairSpec>,
    /// General form: multi-port media (shared channels) joining several nodes.
    #[serde(default)]
    pub media: Vec<MediumSpec>,
    pub flows: Vec<FlowSpec>,
    /// The S1 middleware (cooperative cwnd clamping on the terminals); None: off.
    #[serde(default)]
    pub middleware: Option<MiddlewareSpec>,
}

fn one() -> u64 {
    1
}

/// The dumbbell's default sender list: one host named "sender" on an ideal access link.
pub fn default_senders() -> Vec<Host> {
    vec![Host {
        name: "sender".into(),
        access: None,
        host: None,
    }]
}

/// The dumbbell's default receiver list: one host named "receiver".
pub fn default_receivers() -> Vec<Host> {
    vec![Host {
        name: "receiver".into(),
        access: None,
        host: None,
    }]
}

/// How flow state is traced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum TraceMode {
    /// A row whenever cwnd, ssthresh or the CA state changes.
    #[default]
    Change,
    /// A row after every ACK; after a timer only when cwnd, ssthresh or the CA state changed.
    Ack,
    /// A row every `trace_interval_ms`.
    Interval,
}

/// Simulator-only settings.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SimSettings {
    /// CONFIG_HZ of the kernel we mimic.
    #[serde(default = "default_hz")]
    pub kernel_hz: u32,
    /// TCP's timers fire at the timer wheel's bucket, as Linux's `timer_list`s do
    /// (`tcp/clock.rs`); false: at their expiry jiffy.
    #[serde(default = "yes")]
    pub timer_wheel: bool,
    /// jiffies at simulated time zero (where zero falls on the kernel's tick grid; pairs a run
    /// with a kernel run's `kernel_clock`).
    #[serde(default)]
    pub jiffies_at_zero: u64,
    /// How far into a tick simulated time zero falls, us (below one tick).
    #[serde(default)]
    pub tick_phase_us: f64,
    #[serde(default)]
    pub trace: TraceMode,
    /// Sampling period of the links series (and of flows with `trace = "interval"`), ms.
    #[serde(default = "default_interval")]
    pub trace_interval_ms: f64,
    /// The most events the run may process (`budget.rs`): one that needs more stops with
    /// `SimError::Budget` naming this field.
    #[serde(default = "default_max_events")]
    pub max_events: u64,
    /// The most wall-clock seconds the run may take (None: no limit); one that takes longer
    /// stops with `SimError::Budget` naming this field.
    #[serde(default)]
    pub max_wall_s: Option<f64>,
}

fn default_max_events() -> u64 {
    crate::budget::DEFAULT_MAX_EVENTS
}

fn default_hz() -> u32 {
    250
}

fn default_interval() -> f64 {
    10.0
}

impl SimSettings {
    /// The kernel's tick clock these settings describe (`tcp/clock.rs`).
    pub fn kernel_clock(&self) -> crate::tcp::clock::KernelClock {
        crate::tcp::clock::KernelClock {
            hz: self.kernel_hz,
            jiffies_at_zero: self.jiffies_at_zero,
            tick_phase_ns: (self.tick_phase_us * 1000.0).round() as u64,
            wheel: self.timer_wheel,
        }
    }
}

impl Default for SimSettings {
    fn default() -> Self {
        SimSettings {
            kernel_hz: 250,
            timer_wheel: true,
            jiffies_at_zero: 0,
            tick_phase_us: 0.0,
            trace: TraceMode::Change,
            trace_interval_ms: 10.0,
            max_events: default_max_events(),
            max_wall_s: None,
        }
    }
}

/// A link in both directions.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Duplex {
    /// Data direction (sender -> receiver).
    pub fwd: LinkSpec,
    /// ACK direction.
    pub rev: LinkSpec,
}

/// A sender or receiver host.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Host {
    pub name: String,
    /// Its access link; None = ideal (no delay, no rate limit).
    #[serde(default)]
    pub access: Option<Duplex>,
    /// Its stack below TCP, over the scenario's `[host]` defaults.
    #[serde(default)]
    pub host: Option<HostSpec>,
}

/// One flow: a TCP connection, or a UDP constant-bit-rate stream (`transport = "udp"`, see
/// `crate::udp`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlowSpec {
    pub name: String,
    pub sender: String,
    pub receiver: String,
    /// TCP (the default) or UDP.
    #[serde(default)]
    pub transport: crate::udp::Transport,
    /// UDP only: the application's (payload) sending rate, bit/s.
    #[serde(default)]
    pub rate_bps: u64,
    /// UDP only: each datagram's payload (the IP packet is 28 bytes more).
    #[serde(default = "d_payload")]
    pub payload_bytes: u32,
    pub cc: String,
    #[serde(default)]
    pub cc_params: Params,
    #[serde(default)]
    pub start_s: f64,
    /// 0 = bulk.
    #[serde(default)]
    pub size_bytes: u64,
    #[serde(default = "d_mss")]
    pub mss_bytes: u32,
    #[serde(default = "d_iw")]
    pub initial_cwnd_pkts: u32,
    /// 0 = no cap.
    #[serde(default)]
    pub max_cwnd_pkts: u32,
    /// 0 = never limiting.
    #[serde(default)]
    pub rwnd_bytes: u64,
    #[serde(default = "yes")]
    pub sack: bool,
    #[serde(default = "yes")]
    pub timestamps: bool,
    #[serde(default = "yes")]
    pub delayed_ack: bool,
    /// With delayed ACKs, the receiver ACKs at once when more than `ack_every_pkts - 1` full
    /// segments are unacknowledged: 2 is Linux's "more than one full frame"; more gives stretch
    /// ACKs (an XNU receiver's `maxseg_unacked` = 8, or GRO aggregation); 2..=64.
    #[serde(default = "d_ack_every")]
    pub ack_every_pkts: u32,
    #[serde(default = "yes")]
    pub frto: bool,
    /// Tail loss probes (Linux `tcp_early_retrans` = 3); need SACK.
    #[serde(default = "yes")]
    pub tlp: bool,
    /// The three-way handshake as packets (`crate::tcp::handshake`); false: the flow starts
    /// established at `start_s` with the idle path's RTT as its first sample.
    #[serde(default = "yes")]
    pub handshake: bool,
    /// With the handshake, how long after `connect()` returns (the sender is established) the
    /// application's first write comes, us: a process woken by its connect() cannot write in
    /// the instant its kernel sent the handshake's last ACK (`world::handshake_glue`).
    #[serde(default = "d_first_write_delay")]
    pub first_write_delay_us: f64,
    /// What one step of cwnd growth counts: acked segments (Linux 3.18 on) or ACKs (before).
    #[serde(default)]
    pub ack_counting: crate::tcp::sender::AckCounting,
    /// How the application writes into the socket send buffer (`tcp::sndbuf`).
    #[serde(default)]
    pub writer: crate::tcp::sndbuf::Writer,
    /// Multipath TCP only: whose stack the connection follows, v0.9x's (the S2 paper's) or
    /// upstream Linux 6.18's (the kernel backend's): `crate::mptcp::MptcpStack`.
    #[serde(default)]
    pub mptcp_stack: crate::mptcp::MptcpStack,
    #[serde(default = "d_rto_min")]
    pub rto_min_ms: f64,
    #[serde(default = "d_rto_init")]
    pub rto_initial_ms: f64,
    #[serde(default = "d_rto_max")]
    pub rto_max_ms: f64,
    /// How `rto_min_ms` acts: Linux's floor of rttvar (`tcp_rtt_estimator`) or RFC 6298's
    /// floor of the RTO (`crate::tcp::rtt`).
    #[serde(default)]
    pub rto_min_mode: crate::tcp::rtt::RtoMinMode,
    /// The gains of RFC 6298's estimator: per sample, or per window (RFC 7323 Appendix G);
    /// only with `rto_min_mode = "rfc6298"` (`crate::tcp::rtt`).
    #[serde(default)]
    pub rtt_gains: crate::tcp::rtt::RttGains,
    /// Timestamp-based detection of spurious retransmissions (RFC 3522; Linux's
    /// `tcp_packet_delayed`); needs `timestamps`.
    #[serde(default = "yes")]
    pub eifel_detection: bool,
    /// D-SACK-based detection (RFC 3708; Linux's `undo_retrans` and `tcp_try_undo_dsack`);
    /// needs `sack`.
    #[serde(default = "yes")]
    pub dsack_undo: bool,
    /// What a detected spurious timeout does (`crate::tcp::sto`).
    #[serde(default)]
    pub sto_response: crate::tcp::sto::StoResponse,
    /// ECN at both ends: off, on (RFC 3168, Linux `tcp_ecn = 1`), low (google/bbr `ecn_low`).
    #[serde(default)]
    pub ecn: crate::tcp::ecn::EcnMode,
    /// General form: the nodes the data crosses, sender first, receiver last; None: follow the
    /// routing table (static routes, then shortest paths).
    #[serde(default)]
    pub path: Option<Vec<String>>,
    /// General form: the nodes the ACKs cross, receiver first; None: `path` reversed when a
    /// path is given, else the routing table.
    #[serde(default)]
    pub reverse_path: Option<Vec<String>>,
    /// Multipath TCP only (required): one subflow per entry, each the nodes its data crosses,
    /// sender first, receiver last; its ACKs come back the same way, reversed.
    #[serde(default)]
    pub paths: Option<Vec<Vec<String>>>,
    /// TCP only: connections opened one after another, each with its own size
    /// (`crate::workload`); None: one connection.
    #[serde(default)]
    pub workload: Option<crate::workload::Workload>,
}

/// The most subflows one Multipath TCP connection may have (Linux's `MPTCP_PM_MAX_ADDR`-sized
/// limits are 8 per connection: `net.mptcp` `subflows` at most 8).
pub const MAX_SUBFLOWS: usize = 8;

fn d_mss() -> u32 {
    1448
}
fn d_payload() -> u32 {
    1472
}
fn d_iw() -> u32 {
    10
}
fn d_ack_every() -> u32 {
    2
}
fn yes() -> bool {
    true
}
/// The kernel backend's sender on a quiet machine (docs/design.md, "The handshake").
pub const DEFAULT_FIRST_WRITE_DELAY_US: f64 = 50.0;
fn d_first_write_delay() -> f64 {
    DEFAULT_FIRST_WRITE_DELAY_US
}
fn d_rto_min() -> f64 {
    200.0
}
fn d_rto_init() -> f64 {
    1000.0
}
fn d_rto_max() -> f64 {
    120_000.0
}

/// A bad text value as an error message shows it: quoted, cut to 60 characters (a 100 kB value
/// must not make a 100 kB message).
pub(crate) fn shown(value: &str) -> String {
    const LIMIT: usize = 60;
    let n = value.chars().count();
    if n <= LIMIT {
        return format!("{value:?}");
    }
    let head: String = value.chars().take(LIMIT).collect();
    format!("{head:?}... ({n} characters)")
}

fn check_nonneg(field: &str, v: f64) -> Result<(), ConfigError> {
    if !v.is_finite() || v < 0.0 {
        return Err(err(
            field,
            format!("{v} is not accepted: a finite number >= 0"),
        ));
    }
    Ok(())
}

/// An algorithm's refusal as the field it names: `flows[0].cc` or `flows[0].cc_params.beta`.
pub(crate) fn cc_error(flow: &str, e: &cc::CcError) -> ConfigError {
    let text = e.to_string();
    match e {
        cc::CcError::UnknownAlgorithm { .. } => err(format!("{flow}.cc"), text),
        cc::CcError::UnknownParam { param, .. } | cc::CcError::BadValue { param, .. } => {
            // The message starts with "cc_params.<param> ": the rest says what is wrong.
            let head = format!("cc_params.{param} ");
            let rest = text.strip_prefix(&head).unwrap_or(&text);
            let rest = rest.strip_prefix("= ").unwrap_or(rest);
            err(format!("{flow}.cc_params.{param}"), rest)
        }
        #[allow(unreachable_patterns)]
        _ => err(flow, text),
    }
}

impl From<NetError> for ConfigError {
    fn from(e: NetError) -> Self {
        match e {
            NetError::Field { field, message } => ConfigError { field, message },
            NetError::InvalidField { ref field, .. } => ConfigError {
                field: field.clone(),
                message: e.to_string(),
            },
            other => err("scenario", other.to_string()),
        }
    }
}

impl FlowSpec {
    /// The UDP fields: a rate and a payload size for a UDP flow, neither for a TCP one.
    fn check_transport(&self, p: &str) -> Result<(), ConfigError> {
        use crate::udp::{Transport, MAX_PAYLOAD_BYTES};
        match self.transport {
            Transport::Udp => {
                if self.rate_bps == 0 {
                    return Err(err(
                        format!("{p}.rate_bps"),
                        "a UDP flow needs a sending rate of at least 1 bit/s",
                    ));
                }
                if !(1..=MAX_PAYLOAD_BYTES).contains(&self.payload_bytes) {
                    return Err(err(
                        format!("{p}.payload_bytes"),
                        format!(
                            "{} is not accepted: 1..{MAX_PAYLOAD_BYTES} (a UDP payload over IPv4)",
                            self.payload_bytes
                        ),
                    ));
                }
            }
            Transport::Tcp | Transport::Mptcp if self.rate_bps != 0 => {
                return Err(err(
                    format!("{p}.rate_bps"),
                    "only for transport = \"udp\" (a TCP flow's rate is its congestion control's)",
                ));
            }
            Transport::Tcp | Transport::Mptcp => {}
        }
        match (self.transport, &self.paths) {
            (Transport::Mptcp, None) => {
                return Err(err(
                    format!("{p}.paths"),
                    "a Multipath TCP flow needs paths: one list of nodes per subflow, sender first",
                ))
            }
            (Transport::Mptcp, Some(paths)) => {
                if paths.is_empty() || paths.len() > MAX_SUBFLOWS {
                    return Err(err(
                        format!("{p}.paths"),
                        format!("{} paths: 1..{MAX_SUBFLOWS} (one per subflow)", paths.len()),
                    ));
                }
                for (field, given) in [
                    ("path", self.path.is_some()),
                    ("reverse_path", self.reverse_path.is_some()),
                ] {
                    if given {
                        return Err(err(
                            format!("{p}.{field}"),
                            "not for a Multipath TCP flow: give its subflows' routes in paths (each subflow's ACKs \
                             return on its path reversed)",
                        ));
                    }
                }
            }
            (_, Some(_)) => {
                return Err(err(
                    format!("{p}.paths"),
                    "only for transport = \"mptcp\" (a TCP or UDP flow takes one path)",
                ))
            }
            (_, None) => {}
        }
        if self.transport != Transport::Mptcp
            && self.mptcp_stack != crate::mptcp::MptcpStack::default()
        {
            return Err(err(
                format!("{p}.mptcp_stack"),
                "only for transport = \"mptcp\" (a TCP or UDP flow has no Multipath TCP stack)",
            ));
        }
        Ok(())
    }
}

impl Duplex {
    fn validate(&self, path: &str) -> Result<(), ConfigError> {
        // Error paths in the scenario file's names: `bottleneck.delay_ms`,
        // `bottleneck.reverse.loss_model`.
        self.fwd.validate(path)?;
        Ok(self.rev.validate(&format!("{path}.reverse"))?)
    }
}

impl Scenario {
    /// Parse the normalised JSON; errors name the field serde stopped at (its path in the JSON,
    /// `bottleneck.fwd.queue_pkts`, which front ends map to their own names) and say what is
    /// accepted without JSON positions or Rust type names.
    pub fn from_json(text: &str) -> Result<Scenario, ConfigError> {
        let s = Self::from_json_unchecked(text)?;
        s.validate()?;
        Ok(s)
    }

    /// Parse the normalised JSON without checking the values (`problems` lists them); errors as
    /// [`Scenario::from_json`]'s.
    pub fn from_json_unchecked(text: &str) -> Result<Scenario, ConfigError> {
        let de = &mut serde_json::Deserializer::from_str(text);
        serde_path_to_error::deserialize(de).map_err(|e| {
            let path = e.path().to_string();
            let field = if path.is_empty() || path == "." {
                "scenario".to_string()
            } else {
                path
            };
            err(field, cclab_net::error::plain_json_error(e.inner()))
        })
    }

    /// Check every value the simulator relies on.
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.check_fields()?;
        // Hosts, links, routes and paths: the lowering checks them all.
        crate::lower::lower(self).map(|_| ())
    }

    /// Every check but the network's: the fields one by one (what `lower` relies on).
    pub(crate) fn check_fields(&self) -> Result<(), ConfigError> {
        match self.field_problems().into_iter().next() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// Every problem `validate` would find, not only the first: the scalar fields, the host
    /// stack, the network and each flow are checked apart (within one of them, its first
    /// problem); the routes and paths only once all of those are right (the lowering needs them).
    pub fn problems(&self) -> Vec<ConfigError> {
        let mut out = self.field_problems();
        if out.is_empty() {
            if let Err(e) = crate::lower::lower(self) {
                out.push(e);
            }
        }
        out
    }

    fn field_problems(&self) -> Vec<ConfigError> {
        let mut out = Vec::new();
        if !(self.duration_s.is_finite()
            && self.duration_s > 0.0
            && self.duration_s <= MAX_DURATION_S)
        {
            out.push(err(
                "duration_s",
                format!(
                    "{} is not accepted: a time > 0 and at most {MAX_DURATION_S:e} s",
                    self.duration_s
                ),
            ));
        }
        let hz = self.sim.kernel_hz;
        if !(hz == 100 || hz == 250 || hz == 300 || hz == 1000) {
            out.push(err(
                "sim.kernel_hz",
                format!("{hz} is not accepted: 100, 250, 300 or 1000"),
            ));
        }
        let tick_us = 1e6 / f64::from(hz);
        let phase = self.sim.tick_phase_us;
        if !(phase.is_finite() && (0.0..tick_us).contains(&phase)) {
            out.push(err(
                "sim.tick_phase_us",
                format!("{phase} is not accepted: 0 <= x < one tick ({tick_us} us at HZ {hz})"),
            ));
        }
        if !(self.sim.trace_interval_ms.is_finite() && self.sim.trace_interval_ms >= 0.1) {
            out.push(err("sim.trace_interval_ms", "a period of at least 0.1 ms"));
        }
        if self.sim.max_events == 0 {
            out.push(err(
                "sim.max_events",
                "0 is not accepted: a count of events >= 1",
            ));
        }
        if let Some(w) = self.sim.max_wall_s {
            if !(w.is_finite() && w > 0.0) {
                out.push(err(
                    "sim.max_wall_s",
                    format!("{w} is not accepted: a time > 0 s (or none: no limit)"),
                ));
            }
        }
        out.extend(self.host.validate("host").err().map(ConfigError::from));
        out.extend(self.validate_network().err());
        if self.flows.is_empty() {
            out.push(err("flows", "at least one flow"));
        }
        for (i, f) in self.flows.iter().enumerate() {
            out.extend(Self::check_flow(&format!("flows[{i}]"), f).err());
        }
        if let Some(m) = &self.middleware {
            out.extend(
                m.validate("middleware")
                    .and_then(|_| self.check_middleware_hosts(m))
                    .err(),
            );
        }
        out
    }

    /// One flow's fields; the first problem.
    fn check_flow(p: &str, f: &FlowSpec) -> Result<(), ConfigError> {
        if !(64..=65495).contains(&f.mss_bytes) {
            return Err(err(
                format!("{p}.mss_bytes"),
                format!("{} is not accepted: 64..65495", f.mss_bytes),
            ));
        }
        if f.initial_cwnd_pkts == 0 {
            return Err(err(
                format!("{p}.initial_cwnd_pkts"),
                "0 is not accepted: at least 1",
            ));
        }
        if !(2..=64).contains(&f.ack_every_pkts) {
            return Err(err(
                format!("{p}.ack_every_pkts"),
                format!("{} is not accepted: 2..64", f.ack_every_pkts),
            ));
        }
        check_nonneg(&format!("{p}.start_s"), f.start_s)?;
        if !(f.first_write_delay_us.is_finite() && (0.0..=1e6).contains(&f.first_write_delay_us)) {
            return Err(err(
                format!("{p}.first_write_delay_us"),
                format!("{} is not accepted: 0..1000000 us", f.first_write_delay_us),
            ));
        }
        f.check_transport(p)?;
        if let Some(w) = &f.workload {
            if f.transport != crate::udp::Transport::Tcp {
                return Err(err(
                    format!("{p}.workload"),
                    "only for a TCP flow (transport = \"tcp\")",
                ));
            }
            w.validate(p, f.size_bytes)?;
        }
        for (n, v) in [
            ("rto_min_ms", f.rto_min_ms),
            ("rto_initial_ms", f.rto_initial_ms),
            ("rto_max_ms", f.rto_max_ms),
        ] {
            if !(v.is_finite() && v >= 1.0) {
                return Err(err(
                    format!("{p}.{n}"),
                    format!("{v} is not accepted: at least 1 ms"),
                ));
            }
        }
        if f.rtt_gains == crate::tcp::rtt::RttGains::PerWindow
            && f.rto_min_mode != crate::tcp::rtt::RtoMinMode::Rfc6298
        {
            return Err(err(
                format!("{p}.rtt_gains"),
                "\"per_window\" is not accepted with rto_min_mode = \"linux\": it scales RFC \
                 6298's estimator (rto_min_mode = \"rfc6298\"); Linux's decays rttvar once per \
                 RTT by itself",
            ));
        }
        if f.rto_min_ms > f.rto_max_ms {
            return Err(err(format!("{p}.rto_min_ms"), "must not exceed rto_max_ms"));
        }
        if f.sto_response == crate::tcp::sto::StoResponse::Reno && f.frto {
            return Err(err(
                format!("{p}.frto"),
                "true is not accepted with sto_response = \"reno\" (no detection, plain \
                 go-back-N): set frto = false or choose another sto_response",
            ));
        }
        cc::build(&f.cc, &f.cc_params).map_err(|e| cc_error(p, &e))?;
        Ok(())
    }

    /// The hosts of the network, by name (dumbbell senders and receivers, or general-form
    /// nodes of kind host).
    pub fn host_names(&self) -> Vec<String> {
        if self.is_general() {
            self.nodes
                .iter()
                .filter(|n| n.kind == NodeKind::Host)
                .map(|n| n.name.clone())
                .collect()
        } else {
            self.senders()
                .into_iter()
                .chain(self.receivers())
                .map(|h| h.name)
                .collect()
        }
    }

    /// The hosts that run the middleware: its `hosts`, or every host that sends a TCP flow; none
    /// when it is absent or off.
    pub fn middleware_hosts(&self) -> Vec<String> {
        let Some(m) = &self.middleware else {
            return Vec::new();
        };
        self.host_names()
            .into_iter()
            .filter(|h| {
                let sends_tcp = self
                    .flows
                    .iter()
                    .any(|f| &f.sender == h && f.transport.is_tcp());
                m.runs_on(h, sends_tcp)
            })
            .collect()
    }

    fn check_middleware_hosts(&self, m: &MiddlewareSpec) -> Result<(), ConfigError> {
        let hosts = self.host_names();
        for (i, h) in m.hosts.iter().enumerate() {
            if !hosts.contains(h) {
                let what = if self.nodes.iter().any(|n| &n.name == h) {
                    "is a router; the middleware runs on hosts"
                } else {
                    "is no host of the network"
                };
                return Err(err(
                    format!("middleware.hosts[{i}]"),
                    format!("{h:?} {what}; hosts are {hosts:?}"),
                ));
            }
        }
        Ok(())
    }

    /// The dumbbell's senders (the default one when none are given).
    pub fn senders(&self) -> Vec<Host> {
        self.senders.clone().unwrap_or_else(default_senders)
    }

    /// The dumbbell's receivers (the default one when none are given).
    pub fn receivers(&self) -> Vec<Host> {
        self.receivers.clone().unwrap_or_else(default_receivers)
    }

    /// Whether the scenario uses the general form (`nodes` and `links`).
    pub fn is_general(&self) -> bool {
        self.bottleneck.is_none()
    }

    fn validate_network(&self) -> Result<(), ConfigError> {
        let general = !self.nodes.is_empty() || !self.links.is_empty() || !self.media.is_empty();
        match (&self.bottleneck, general) {
            (Some(_), true) => return Err(err(
                "nodes",
                "give either the dumbbell (bottleneck, senders, receivers) or the general form \
                     (nodes, links), not both",
            )),
            (None, false) => {
                return Err(err(
                    "bottleneck",
                    "required: a dumbbell's bottleneck, or the general form's nodes and links",
                ))
            }
            (Some(b), false) => {
                b.validate("bottleneck")?;
                for (kind, hosts) in [("senders", self.senders()), ("receivers", self.receivers())]
                {
                    if hosts.is_empty() {
                        return Err(err(kind, "at least one host"));
                    }
                    for (i, h) in hosts.iter().enumerate() {
                        if let Some(a) = &h.access {
                            a.validate(&format!("{kind}[{i}].access"))?;
                        }
                        if let Some(hs) = &h.host {
                            hs.validate(&format!("{kind}[{i}].host"))?;
                        }
                    }
                }
                for (i, f) in self.flows.iter().enumerate() {
                    if f.path.is_some() || f.reverse_path.is_some() {
                        return Err(err(
                            format!("flows[{i}].path"),
                            "paths are for the general form (nodes, links); a dumbbell flow crosses \
                             its sender's access link, the bottleneck and its receiver's access link",
                        ));
                    }
                }
            }
            (None, true) => {
                for (kind, given) in [("senders", &self.senders), ("receivers", &self.receivers)] {
                    if given.is_some() {
                        return Err(err(
                            kind,
                            "the general form declares hosts as nodes (kind = \"host\"); senders and \
                             receivers belong to the dumbbell",
                        ));
                    }
                }
                for (n, node) in self.nodes.iter().enumerate() {
                    if let Some(hs) = &node.host {
                        if node.kind != NodeKind::Host {
                            return Err(err(
                                format!("nodes[{n}].host"),
                                "only hosts have a stack below TCP; a router forwards",
                            ));
                        }
                        hs.validate(&format!("nodes[{n}].host"))?;
                    }
                }
                for (k, l) in self.links.iter().enumerate() {
                    l.fwd.validate(&format!("links[{k}]"))?;
                    l.rev.validate(&format!("links[{k}].reverse"))?;
                }
                for (m, md) in self.media.iter().enumerate() {
                    md.model(m)?;
                }
            }
        }
        Ok(())
    }
}
