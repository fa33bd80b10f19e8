//! The scenario as the simulator reads it: the normalised JSON that `cclab` (Python) produces
//! from a scenario file (docs/scenario.md). Field names are the scenario file's; every quantity
//! is a number in the unit its name says. `validate()` re-checks what the core relies on, so a
//! config built by hand (Rust tests, other front ends) gets the same clear errors.

use crate::cc::{self, Params};
use cclab_net::capacity::{Capacity, MahimahiTrace};
use cclab_net::link::{DelaySpike, LinkConfig, Outage, QueueLimit};
use cclab_net::{loss::LossModel, NS_PER_MS, NS_PER_S};
use serde::{Deserialize, Serialize};

/// A field that is wrong, with what is accepted. Displayed as `field: message`, or as
/// `field.message` when the message itself starts with the rest of the path (`cc_params.beta
/// = 1.5 is out of range ...`).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{field}{}{message}", if message.starts_with("cc_params.") { "." } else { ": " })]
pub struct ConfigError {
    /// Dotted path of the field, e.g. `flows[0].mss_bytes`.
    pub field: String,
    /// What is wrong and what is accepted.
    pub message: String,
}

fn err(field: impl Into<String>, message: impl Into<String>) -> ConfigError {
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
    pub bottleneck: Duplex,
    #[serde(default = "default_senders")]
    pub senders: Vec<Host>,
    #[serde(default = "default_receivers")]
    pub receivers: Vec<Host>,
    pub flows: Vec<FlowSpec>,
}

fn one() -> u64 {
    1
}

fn default_senders() -> Vec<Host> {
    vec![Host {
        name: "sender".into(),
        access: None,
    }]
}

fn default_receivers() -> Vec<Host> {
    vec![Host {
        name: "receiver".into(),
        access: None,
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
    #[serde(default)]
    pub trace: TraceMode,
    /// Sampling period of the links series (and of flows with `trace = "interval"`), ms.
    #[serde(default = "default_interval")]
    pub trace_interval_ms: f64,
}

fn default_hz() -> u32 {
    250
}

fn default_interval() -> f64 {
    10.0
}

impl Default for SimSettings {
    fn default() -> Self {
        SimSettings {
            kernel_hz: 250,
            trace: TraceMode::Change,
            trace_interval_ms: 10.0,
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

/// One direction of a link.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkSpec {
    /// Serialisation rate; None with no trace = infinitely fast.
    #[serde(default)]
    pub rate_bps: Option<u64>,
    /// Mahimahi trace text (replaces `rate_bps`).
    #[serde(default)]
    pub capacity_trace_text: Option<String>,
    /// One-way propagation delay, ms.
    #[serde(default)]
    pub delay_ms: f64,
    #[serde(default)]
    pub queue_pkts: Option<u32>,
    #[serde(default)]
    pub queue_bytes: Option<u64>,
    #[serde(default = "no_loss")]
    pub loss_model: LossModel,
    #[serde(default)]
    pub outages: Vec<OutageSpec>,
    #[serde(default)]
    pub delay_spikes: Vec<DelaySpikeSpec>,
    /// ECN step marking: ECT packets admitted while the queue holds at least this many packets
    /// are marked CE; None = no marking.
    #[serde(default)]
    pub ecn_threshold_pkts: Option<u32>,
}

impl LinkSpec {
    /// The cclab-net configuration of this link direction, as both the simulator (`world.rs`)
    /// and the real-time emulator (`cclab-link`) build it. The only error is an unreadable
    /// capacity trace (the message says which line); callers prefix their field path.
    pub fn link_config(&self) -> Result<LinkConfig, String> {
        let capacity = match (&self.capacity_trace_text, self.rate_bps) {
            (Some(text), _) => Some(Capacity::Trace(
                MahimahiTrace::parse(text).map_err(|e| e.to_string())?,
            )),
            (None, Some(r)) => Some(Capacity::Rate { rate_bps: r }),
            (None, None) => None,
        };
        let queue = match (self.queue_pkts, self.queue_bytes) {
            (Some(p), _) => QueueLimit::Packets(p),
            (None, Some(b)) => QueueLimit::Bytes(b),
            (None, None) => QueueLimit::Unlimited,
        };
        Ok(LinkConfig {
            capacity,
            delay_ns: ms_to_ns(self.delay_ms),
            queue,
            loss: self.loss_model.clone(),
            outages: self
                .outages
                .iter()
                .map(|o| Outage {
                    start_ns: s_to_ns(o.start_s),
                    duration_ns: s_to_ns(o.duration_s),
                })
                .collect(),
            delay_spikes: self
                .delay_spikes
                .iter()
                .map(|d| DelaySpike {
                    start_ns: s_to_ns(d.start_s),
                    duration_ns: s_to_ns(d.duration_s),
                    extra_delay_ns: ms_to_ns(d.extra_delay_ms),
                })
                .collect(),
            ecn_threshold_pkts: self.ecn_threshold_pkts,
        })
    }
}

fn no_loss() -> LossModel {
    LossModel::None
}

/// The link serves nothing in [start_s, start_s + duration_s).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OutageSpec {
    pub start_s: f64,
    pub duration_s: f64,
}

/// Packets leaving in [start_s, start_s + duration_s) get `extra_delay_ms` more delay.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DelaySpikeSpec {
    pub start_s: f64,
    pub duration_s: f64,
    pub extra_delay_ms: f64,
}

/// A sender or receiver host.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Host {
    pub name: String,
    /// Its access link; None = ideal (no delay, no rate limit).
    #[serde(default)]
    pub access: Option<Duplex>,
}

/// One TCP flow.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlowSpec {
    pub name: String,
    pub sender: String,
    pub receiver: String,
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
    #[serde(default = "yes")]
    pub frto: bool,
    /// Tail loss probes (Linux `tcp_early_retrans` = 3); need SACK.
    #[serde(default = "yes")]
    pub tlp: bool,
    #[serde(default = "d_rto_min")]
    pub rto_min_ms: f64,
    #[serde(default = "d_rto_init")]
    pub rto_initial_ms: f64,
    #[serde(default = "d_rto_max")]
    pub rto_max_ms: f64,
    /// ECN at both ends: off, on (RFC 3168, Linux `tcp_ecn = 1`), low (google/bbr `ecn_low`).
    #[serde(default)]
    pub ecn: crate::tcp::ecn::EcnMode,
}

fn d_mss() -> u32 {
    1448
}
fn d_iw() -> u32 {
    10
}
fn yes() -> bool {
    true
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

/// Seconds (finite, >= 0) to nanoseconds.
pub fn s_to_ns(s: f64) -> u64 {
    (s * NS_PER_S as f64).round() as u64
}

/// Milliseconds to nanoseconds.
pub fn ms_to_ns(ms: f64) -> u64 {
    (ms * NS_PER_MS as f64).round() as u64
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

impl LinkSpec {
    fn validate(&self, path: &str) -> Result<(), ConfigError> {
        if self.rate_bps == Some(0) {
            return Err(err(
                format!("{path}.rate_bps"),
                "0 is not accepted: a rate > 0 bps",
            ));
        }
        if self.rate_bps.is_some() && self.capacity_trace_text.is_some() {
            return Err(err(
                format!("{path}.capacity_trace"),
                "give either rate_bps or capacity_trace, not both",
            ));
        }
        check_nonneg(&format!("{path}.delay_ms"), self.delay_ms)?;
        if self.queue_pkts.is_some() && self.queue_bytes.is_some() {
            return Err(err(
                format!("{path}.queue_bytes"),
                "give either queue_pkts or queue_bytes",
            ));
        }
        if self.queue_pkts == Some(0) || self.queue_bytes == Some(0) {
            return Err(err(
                format!("{path}.queue_pkts"),
                "0 is not accepted: at least 1",
            ));
        }
        self.loss_model
            .validate()
            .map_err(|e| err(format!("{path}.loss_model"), e.to_string()))?;
        if let Some(k) = self.ecn_threshold_pkts {
            if k == 0 {
                return Err(err(
                    format!("{path}.ecn_threshold_pkts"),
                    "0 is not accepted: at least 1 packet (or none: no marking)",
                ));
            }
            if self.queue_pkts.is_some_and(|q| k >= q) {
                return Err(err(
                    format!("{path}.ecn_threshold_pkts"),
                    format!(
                        "{k} is not accepted: below queue_pkts ({}), which the queue never exceeds",
                        self.queue_pkts.unwrap_or(0)
                    ),
                ));
            }
        }
        for (i, o) in self.outages.iter().enumerate() {
            check_nonneg(&format!("{path}.outages[{i}].start_s"), o.start_s)?;
            check_nonneg(&format!("{path}.outages[{i}].duration_s"), o.duration_s)?;
        }
        for (i, o) in self.delay_spikes.iter().enumerate() {
            check_nonneg(&format!("{path}.delay_spikes[{i}].start_s"), o.start_s)?;
            check_nonneg(
                &format!("{path}.delay_spikes[{i}].duration_s"),
                o.duration_s,
            )?;
            check_nonneg(
                &format!("{path}.delay_spikes[{i}].extra_delay_ms"),
                o.extra_delay_ms,
            )?;
        }
        Ok(())
    }
}

impl Duplex {
    fn validate(&self, path: &str) -> Result<(), ConfigError> {
        self.fwd.validate(&format!("{path}.fwd"))?;
        self.rev.validate(&format!("{path}.rev"))
    }
}

impl Scenario {
    /// Parse the normalised JSON; errors name the field serde stopped at.
    pub fn from_json(text: &str) -> Result<Scenario, ConfigError> {
        let s: Scenario = serde_json::from_str(text).map_err(|e| err("scenario", e.to_string()))?;
        s.validate()?;
        Ok(s)
    }

    /// Check every value the simulator relies on.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if !(self.duration_s.is_finite() && self.duration_s > 0.0) {
            return Err(err(
                "duration_s",
                format!("{} is not accepted: a time > 0", self.duration_s),
            ));
        }
        let hz = self.sim.kernel_hz;
        if !(hz == 100 || hz == 250 || hz == 300 || hz == 1000) {
            return Err(err(
                "sim.kernel_hz",
                format!("{hz} is not accepted: 100, 250, 300 or 1000"),
            ));
        }
        if !(self.sim.trace_interval_ms.is_finite() && self.sim.trace_interval_ms >= 0.1) {
            return Err(err("sim.trace_interval_ms", "a period of at least 0.1 ms"));
        }
        self.bottleneck.validate("bottleneck")?;
        for (kind, hosts) in [("senders", &self.senders), ("receivers", &self.receivers)] {
            if hosts.is_empty() {
                return Err(err(kind, "at least one host"));
            }
            for (i, h) in hosts.iter().enumerate() {
                if let Some(a) = &h.access {
                    a.validate(&format!("{kind}[{i}].access"))?;
                }
            }
        }
        if self.flows.is_empty() {
            return Err(err("flows", "at least one flow"));
        }
        for (i, f) in self.flows.iter().enumerate() {
            let p = format!("flows[{i}]");
            if !self.senders.iter().any(|h| h.name == f.sender) {
                return Err(err(
                    format!("{p}.sender"),
                    format!("no sender named {:?}", f.sender),
                ));
            }
            if !self.receivers.iter().any(|h| h.name == f.receiver) {
                return Err(err(
                    format!("{p}.receiver"),
                    format!("no receiver named {:?}", f.receiver),
                ));
            }
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
            check_nonneg(&format!("{p}.start_s"), f.start_s)?;
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
            if f.rto_min_ms > f.rto_max_ms {
                return Err(err(format!("{p}.rto_min_ms"), "must not exceed rto_max_ms"));
            }
            cc::build(&f.cc, &f.cc_params).map_err(|e| match &e {
                cc::CcError::UnknownAlgorithm { .. } => err(format!("{p}.cc"), e.to_string()),
                // The algorithm's message starts with "cc_params.<name>": prefix the flow.
                _ => ConfigError {
                    field: p.clone(),
                    message: e.to_string(),
                },
            })?;
        }
        Ok(())
    }
}
