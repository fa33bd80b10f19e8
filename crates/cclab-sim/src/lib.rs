//! # cclab-sim: a deterministic, Linux-faithful TCP simulator
//!
//! A discrete-event simulator of TCP flows over the network models of `cclab-net`. Time is
//! integer nanoseconds; events at equal times run in insertion order; every random element has
//! its own stream derived from (seed, element name). So the same scenario and seed give the same
//! trace, bit for bit, and adding a flow does not change another link's losses.
//!
//! The TCP sender and receiver follow Linux 6.18 (`net/ipv4/tcp_input.c`, `tcp_output.c`,
//! `tcp_timer.c`, `tcp_recovery.c`): SACK with RACK loss detection, PRR, undo (D-SACK and
//! timestamps, i.e. Eifel detection), F-RTO, RFC 6298 RTO with Linux's floors and jiffies,
//! delayed and quick ACKs, SACK compression. Congestion control sits behind one trait that
//! mirrors `tcp_congestion_ops` (`cc`), one algorithm per file.
//!
//! Layers: `engine` (event queue), `budget` (a run's event and wall-time budget), `world` (the network and the event loop), `tcp` (protocol),
//! `cc` (algorithms), `trace` (columnar output), `config` (the scenario as the core reads it),
//! `middleware` (the S1 cwnd-clamping policy: equations, tables, terminal counting), `udp` (a
//! constant-bit-rate UDP application), `mptcp` (Multipath TCP connections over several TCP
//! subflows).

mod agents;
pub mod budget;
pub mod cc;
pub mod config;
pub mod engine;
pub mod lower;
pub mod middleware;
pub mod mptcp;
pub mod tcp;
pub mod trace;
pub mod udp;
pub mod workload;
pub mod world;

use serde::Serialize;

pub use budget::BudgetExceeded;
pub use config::{ConfigError, Scenario};
pub use trace::{EventTrace, FlowTrace, LinkTrace};

/// Version of the core, reported in summaries.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// Why a run could not happen.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SimError {
    /// The scenario is invalid: the field's dotted path and what is accepted, kept apart so
    /// front ends need not parse the message.
    #[error("{0}")]
    Config(ConfigError),
    /// The progress callback asked to stop.
    #[error("run cancelled")]
    Cancelled,
    /// The run reached its budget (`sim.max_events` or `sim.max_wall_s`) before its end.
    #[error("{0}")]
    Budget(BudgetExceeded),
    /// Something failed inside the simulator (a bug: please report it).
    #[error("internal simulator error: {0}")]
    Internal(String),
}

impl From<ConfigError> for SimError {
    fn from(e: ConfigError) -> Self {
        SimError::Config(e)
    }
}

/// Per-flow results.
#[derive(Debug, Clone, Serialize)]
pub struct FlowStats {
    pub flow: String,
    /// In-order bytes delivered to the receiving application * 8 / time from start to
    /// completion (or to the end of the run).
    pub goodput_bps: f64,
    pub delivered_bytes: u64,
    pub retrans_pkts: u64,
    pub rto_count: u64,
    pub fast_retransmit_count: u64,
    /// Timeouts F-RTO proved spurious (Linux's `TCPSpuriousRTOs`).
    pub spurious_rto_count: u64,
    /// Window reductions undone by any detector (each an `undo` event).
    pub undo_count: u64,
    /// Spurious RTOs by ground truth: the segment an RTO retransmitted had not been lost (it
    /// had reached the receiver, or was still queued or in flight). One `sto` event each RTO.
    pub sto_count: u64,
    /// Of those, the ones a detector proved spurious (F-RTO, timestamps or D-SACKs: an undo
    /// ended their episode).
    pub sto_detected: u64,
    /// Retransmissions of the spurious RTOs' episodes that the receiver got twice.
    pub spurious_retrans_pkts: u64,
    /// Tail loss probes sent.
    pub tlp_count: u64,
    /// Window reductions by entering CWR (an ECE ACK or a local drop).
    pub cwr_count: u64,
    /// Segments the sending host's interface queue refused (each a local drop: CWR, resent).
    pub local_drop_count: u64,
    pub sent_pkts: u64,
    pub acks_sent: u64,
    /// When the flow's application started (`connect()`, or the first write without a
    /// handshake), s.
    pub start_s: f64,
    /// When the receiving application had every byte of a sized flow (None: bulk, or not by
    /// the end), s of run time: `completion_s - start_s` includes the handshake.
    pub completion_s: Option<f64>,
    /// When the sender was established (its SYN-ACK arrived; `start_s` for a flow without a
    /// handshake; None for UDP, and for a connection never established), s of run time.
    pub established_s: Option<f64>,
    /// A UDP flow's own results (None for TCP: the key is left out).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub udp: Option<udp::UdpStats>,
    /// A Multipath TCP connection's subflows (None otherwise: the key is left out). The
    /// connection's own goodput and delivered bytes are at the data level, its counters the
    /// sums over its subflows.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subflows: Option<Vec<SubflowStats>>,
    /// A workload's connections that started, in order (None for a lone connection: the key
    /// is left out). The flow's own counters are then the sums over them, its goodput the bytes
    /// delivered over the time from its start to its last completion (think times included).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub connections: Option<Vec<ConnStats>>,
}

/// One connection of a flow's workload in the summary.
#[derive(Debug, Clone, Serialize)]
pub struct ConnStats {
    /// Its index in the sequence (the events' `conn=`).
    pub conn: u32,
    /// What it had to send.
    pub size_bytes: u64,
    pub start_s: f64,
    /// When its sender was established (its handshake done; None: never).
    pub established_s: Option<f64>,
    /// When its receiver had every byte (None: not by the end of the run).
    pub completion_s: Option<f64>,
    /// `completion_s - start_s`: what a user timing the download sees.
    pub transfer_time_s: Option<f64>,
    pub delivered_bytes: u64,
    /// `delivered_bytes` * 8 / (completion, or the end of the run, less its start).
    pub goodput_bps: f64,
    pub sent_pkts: u64,
    pub retrans_pkts: u64,
    pub rto_count: u64,
    pub spurious_rto_count: u64,
    pub undo_count: u64,
    /// Its spurious RTOs by ground truth, those detected, and their unneeded retransmissions
    /// (as the flow's fields of the same names).
    pub sto_count: u64,
    pub sto_detected: u64,
    pub spurious_retrans_pkts: u64,
    /// Its undetected spurious RTOs by reason (the `sto` rows' `undetected`: `fin`, `no_window`,
    /// `dupack`, `timestamps_off`, `detection_off`, `run_end`, `other`).
    pub sto_undetected: std::collections::BTreeMap<&'static str, u64>,
}

/// One subflow of a Multipath TCP connection in the summary (the kernel backend writes the
/// same keys, less the simulator-only extras at the end).
#[derive(Debug, Clone, Serialize)]
pub struct SubflowStats {
    /// Its index k in the connection (the flows trace's `subflow`).
    pub subflow: u32,
    /// The nodes its data crosses, sender first.
    pub path: Vec<String>,
    /// Subflow-level bytes cumulatively acked.
    pub delivered_bytes: u64,
    /// `delivered_bytes` * 8 / (end of the run, or the connection's completion, less the
    /// connection's start).
    pub goodput_bps: f64,
    pub sent_pkts: u64,
    pub retrans_pkts: u64,
    /// Simulator only from here on.
    pub rto_count: u64,
    pub fast_retransmit_count: u64,
    pub cwr_count: u64,
    pub local_drop_count: u64,
    /// Segments it sent carrying data reinjected from another subflow.
    pub reinjected_pkts: u64,
}

/// One lane's counters (a link direction, or a medium port's queue), named: cclab-net's
/// counters with the lane's name (one counters type for the models, the simulator, cclab-link
/// and summary.json).
#[derive(Debug, Clone, Serialize)]
pub struct LinkStats {
    /// The lane's name in the links table.
    pub link: String,
    /// Its counters.
    #[serde(flatten)]
    pub counters: cclab_net::LinkStats,
    /// For a lane that is a station of a medium with a MAC (a DCF cell's port, a mesh node):
    /// that station's MAC counters (None otherwise: the key is left out).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mac: Option<cclab_net::MacStats>,
}

/// The links one flow's packets cross (the simulated ones, by name) and the nodes they pass.
#[derive(Debug, Clone, Serialize)]
pub struct FlowPath {
    pub flow: String,
    /// Link directions the data crosses, in order.
    pub fwd: Vec<String>,
    /// Link directions the ACKs cross, in order.
    pub rev: Vec<String>,
    /// Nodes the data passes, sender first.
    pub fwd_nodes: Vec<String>,
    /// Nodes the ACKs pass, receiver first.
    pub rev_nodes: Vec<String>,
}

/// Everything a run produces.
#[derive(Debug, Clone)]
pub struct RunOutput {
    /// Per flow, what it crossed.
    pub paths: Vec<FlowPath>,
    pub flow_names: Vec<String>,
    pub link_names: Vec<String>,
    pub flows: FlowTrace,
    pub links: LinkTrace,
    pub events: EventTrace,
    pub flow_stats: Vec<FlowStats>,
    pub link_stats: Vec<LinkStats>,
    pub events_processed: u64,
    pub sim_duration_s: f64,
}

/// Run a validated scenario.
pub fn run(
    sc: &Scenario,
    progress: Option<&mut dyn FnMut(f64) -> bool>,
) -> Result<RunOutput, SimError> {
    let world = world::World::new(sc)?;
    // A panic is a bug; catch it so it never crosses into Python.
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || world.run(progress))).map_err(
        |e| {
            let msg = e
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "panic".into());
            SimError::Internal(msg)
        },
    )?
}

/// Parse the normalised scenario JSON and run it.
pub fn simulate_json(
    json: &str,
    progress: Option<&mut dyn FnMut(f64) -> bool>,
) -> Result<RunOutput, SimError> {
    let sc = Scenario::from_json(json)?;
    run(&sc, progress)
}
