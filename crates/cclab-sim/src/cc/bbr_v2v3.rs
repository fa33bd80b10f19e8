//! The engine shared by BBRv2 (`bbr2`) and BBRv3 (`bbr3`): Google's model-based congestion
//! control with loss (and ECN) bounds on the model, as google/bbr implements it in
//! `net/ipv4/tcp_bbr2.c` (branch v2alpha) and `net/ipv4/tcp_bbr.c` (branch v3).
//!
//! v3 grew out of v2alpha: the state machine, the bounds and the loss response are the same
//! code, so they are written once here. Where the two branches differ, `Version` selects the
//! branch's code (each such place says so); the branch's constants are its defaults in
//! `bbr2.rs` / `bbr3.rs`, which own the user-facing name, tunables and tests.
//!
//! The model:
//!
//! ```text
//!   max_bw       = max(bw_hi[0], bw_hi[1])  max delivery rate over the last 1-2 PROBE_BW cycles
//!   bw           = min(max_bw, bw_lo)       bw_lo: short-term lower bound after loss/ECN
//!   inflight_hi  = long-term upper bound on inflight, cut to tx_in_flight (>= (1-beta)*target)
//!                  when the loss rate of a probing flight exceeds loss_thresh (2 %)
//!   inflight_lo  = short-term lower bound, cut by beta per lossy round outside probing
//!   cwnd         = min(cwnd_gain * bw * min_rtt + allowances, inflight_hi (- headroom), inflight_lo)
//! ```
//!
//! PROBE_BW is a cycle of four phases, `cycle_idx` UP (pacing gain 1.25), DOWN (0.75 in v2,
//! 0.91 in v3), CRUISE (1.0, cwnd under inflight_hi less 15 % headroom) and REFILL (1.0, bounds
//! reset): a probe for more bandwidth every 2-3 s (or every min(63, BDP) rounds, to coexist
//! with Reno), PROBE_RTT every 5 s (`probe_rtt_win_ms`) at cwnd BDP/2 (`probe_rtt_cwnd_gain`).
//!
//! ECN: with the flow's `ecn = "low"` (RFC 3168 negotiated plus google/bbr's `ecn_low` route
//! feature, whose receiver echoes CE precisely) `bbr_can_use_ecn` is true and, while min_rtt
//! <= `ecn_max_rtt_us`, the flow is `ecn_eligible`: `ecn_alpha` tracks the CE ratio per round,
//! `inflight_lo` is cut by `ecn_factor * ecn_alpha` after a round with ECE outside probing,
//! `full_ecn_cnt` high-CE rounds end STARTUP, a high CE ratio while probing cuts `inflight_hi`,
//! and `ecn_reprobe_gain` applies after an ECN cycle. With `ecn = "on"` (classic ECN, no
//! `ecn_low`) marks reach the core (CWR state) but BBR's model ignores them, as in the source.
//!
//! What the core does not model, and so never happens here: PLB (Protective Load Balancing,
//! needs flow labels; left out), the receiver's `fast_ack_mode` (left out), TSO sizes (the core sends
//! one segment per packet on the wire; `tso_segs` only sizes the pacing bursts, as in bbr.rs).
//!
//! Units as in the kernel: bandwidth in packets/us << 24 (`BW_SCALE`), gains in 1/256
//! (`BBR_SCALE`), times in jiffies or us as the source has them.

use super::bbr::{BBR_SCALE, BBR_UNIT, BW_SCALE, BW_UNIT};
use super::params::ParamReader;
use super::{
    CaEvent, CaState, CcError, CongestionControl, ParamInfo, ParamValue, Params, RateSample,
};
use crate::tcp::ecn::{TCP_ECN_ECT_PERMANENT, TCP_ECN_LOW, TCP_ECN_OK};
use crate::tcp::skb::Skb;
use crate::tcp::sock::TcpSock;

/// Which branch's code to run where v2alpha and v3 differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Version {
    /// google/bbr v2alpha, `tcp_bbr2.c`.
    V2,
    /// google/bbr v3, `tcp_bbr.c`.
    V3,
}

/// Pace this many percent below the estimate (`bbr_pacing_margin_percent`).
const PACING_MARGIN_PERCENT: u64 = 1;
/// Max `ack_epoch_acked` before the epoch resets (`bbr_ack_epoch_acked_reset_thresh`).
const ACK_EPOCH_ACKED_RESET_THRESH: u32 = 1 << 20;
/// Cap on the aggregation allowance, us (`bbr_extra_acked_max_us`).
const EXTRA_ACKED_MAX_US: u64 = 100 * 1000;
/// `GSO_LEGACY_MAX_SIZE`, the device and goal GSO size (64 KiB).
const GSO_LEGACY_MAX_SIZE: u64 = 65536;
/// `MAX_TCP_HEADER` on x86-64 (as in bbr.rs).
const MAX_TCP_HEADER: u64 = 320;
/// `sysctl_tcp_min_tso_segs` default (v3's lower bound on TSO segments).
const TCP_MIN_TSO_SEGS: u64 = 2;
/// Below this pacing rate (bit/s) v2alpha uses 1-segment bursts (`bbr_min_tso_rate`).
const MIN_TSO_RATE_BPS: u64 = 1_200_000;
/// `TCP_INIT_CWND`.
const TCP_INIT_CWND: u32 = 10;
/// `~0U`: "no bound yet" for bw_lo, inflight_lo, inflight_hi.
const NONE: u32 = u32::MAX;

/// The PROBE_BW phases (`enum bbr_pacing_gain_phase`), index into the pacing-gain array.
pub const BW_PROBE_UP: u32 = 0;
/// Drain the excess from the queue.
pub const BW_PROBE_DOWN: u32 = 1;
/// Use the pipe with headroom.
pub const BW_PROBE_CRUISE: u32 = 2;
/// Refill the pipe to 100 % before probing.
pub const BW_PROBE_REFILL: u32 = 3;

/// Tunables, named as the sources' `bbr_<name>` module parameters / `bbr_param(sk, name)`.
/// Gains and fractions are in 1/256 (`BBR_UNIT`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NextParams {
    /// Window of the min_rtt filter, s.
    pub min_rtt_win_sec: u32,
    /// Time held at the PROBE_RTT cwnd, ms (0 = never PROBE_RTT).
    pub probe_rtt_mode_ms: u32,
    /// Window of the probe_rtt_min_us filter, ms: the interval between PROBE_RTTs.
    pub probe_rtt_win_ms: u32,
    /// PROBE_RTT cwnd as a fraction of the BDP.
    pub probe_rtt_cwnd_gain: u32,
    /// STARTUP pacing gain (v3 `startup_pacing_gain`, v2 `high_gain`).
    pub startup_pacing_gain: u32,
    /// STARTUP and DRAIN cwnd gain (v3 `startup_cwnd_gain`; v2 uses `high_gain`).
    pub startup_cwnd_gain: u32,
    /// DRAIN pacing gain.
    pub drain_gain: u32,
    /// PROBE_BW cwnd gain.
    pub cwnd_gain: u32,
    /// PROBE_BW pacing gains of UP, DOWN, CRUISE, REFILL (`bbr_pacing_gain[]`).
    pub pacing_gain: [u32; 4],
    /// Minimum cwnd, packets.
    pub cwnd_min_target: u32,
    /// Bandwidth growth that counts as growing (1.25).
    pub full_bw_thresh: u32,
    /// Rounds without such growth before the pipe is full.
    pub full_bw_cnt: u32,
    /// Gain on the ACK-aggregation allowance (0 = off).
    pub extra_acked_gain: u32,
    /// Window of the ACK-aggregation filter, rounds.
    pub extra_acked_win_rtts: u32,
    /// Multiplicative cut of inflight_hi / bw_lo / inflight_lo on loss (0.3).
    pub beta: u32,
    /// Loss rate of a flight above which inflight is too high (2 %).
    pub loss_thresh: u32,
    /// Lossy events in a STARTUP recovery round that end STARTUP (0 = off).
    pub full_loss_cnt: u32,
    /// Headroom left under inflight_hi in CRUISE and PROBE_RTT (15 %).
    pub inflight_headroom: u32,
    /// v3: extra cwnd gain in PROBE_UP, in units of 1/4 (0..3).
    pub bw_probe_cwnd_gain: u32,
    /// v2: PROBE_UP ends once inflight reaches this multiple of the BDP (1.25).
    pub bw_probe_pif_gain: u32,
    /// Max rounds between bandwidth probes (Reno coexistence).
    pub bw_probe_max_rounds: u32,
    /// Random extra rounds before a probe.
    pub bw_probe_rand_rounds: u32,
    /// Base wall-clock time between probes, us.
    pub bw_probe_base_us: u32,
    /// Random extra wall-clock time between probes, us.
    pub bw_probe_rand_us: u32,
    /// EWMA gain of the CE ratio (ECN; never used in cclab).
    pub ecn_alpha_gain: u32,
    /// Initial ecn_alpha.
    pub ecn_alpha_init: u32,
    /// Cut of inflight_lo per unit ecn_alpha (0 = no ECN bounding).
    pub ecn_factor: u32,
    /// CE ratio above which inflight is too high (0 = off).
    pub ecn_thresh: u32,
    /// Max min_rtt at which ECN logic is used, us (0 = any).
    pub ecn_max_rtt_us: u32,
    /// Re-probe gain after ECN clears (0 = off).
    pub ecn_reprobe_gain: u32,
    /// STARTUP rounds with CE ratio above ecn_thresh that end STARTUP.
    pub full_ecn_cnt: u32,
    /// Skip model updates on app-limited ACKs that change nothing.
    pub fast_path: bool,
    /// v3: slow down for a loss repaired by a TLP.
    pub loss_probe_recovery: bool,
    /// Halve the min_rtt-based TSO allowance every 2^shift us of min_rtt (0 = off).
    pub tso_rtt_shift: u32,
}

/// One tunable: name, default, accepted range, doc.
pub struct Knob {
    /// Name (the source's `bbr_<name>` without the prefix).
    pub name: &'static str,
    /// Lowest accepted value.
    pub lo: i64,
    /// Highest accepted value.
    pub hi: i64,
    /// One line for `cclab presets`.
    pub doc: &'static str,
}

/// The integer tunables both versions expose (booleans are `fast_path`, `loss_probe_recovery`).
pub const KNOBS: &[Knob] = &[
    Knob {
        name: "min_rtt_win_sec",
        lo: 1,
        hi: 3600,
        doc: "min_rtt filter window, s",
    },
    Knob {
        name: "probe_rtt_mode_ms",
        lo: 0,
        hi: 10_000,
        doc: "time at the PROBE_RTT cwnd, ms; 0 disables PROBE_RTT",
    },
    Knob {
        name: "probe_rtt_win_ms",
        lo: 1,
        hi: 3_600_000,
        doc: "interval between PROBE_RTTs (probe_rtt_min_us window), ms",
    },
    Knob {
        name: "probe_rtt_cwnd_gain",
        lo: 0,
        hi: 1023,
        doc: "PROBE_RTT cwnd as a fraction of BDP, 1/256 (128 = 0.5)",
    },
    Knob {
        name: "startup_pacing_gain",
        lo: 257,
        hi: 1023,
        doc: "STARTUP pacing gain, 1/256",
    },
    Knob {
        name: "startup_cwnd_gain",
        lo: 256,
        hi: 1023,
        doc: "STARTUP/DRAIN cwnd gain, 1/256",
    },
    Knob {
        name: "drain_gain",
        lo: 1,
        hi: 256,
        doc: "DRAIN pacing gain, 1/256",
    },
    Knob {
        name: "cwnd_gain",
        lo: 256,
        hi: 1023,
        doc: "PROBE_BW cwnd gain, 1/256 (512 = 2.0)",
    },
    Knob {
        name: "bw_probe_up_gain",
        lo: 257,
        hi: 1023,
        doc: "PROBE_BW UP pacing gain (bbr_pacing_gain[0]), 1/256 (320 = 1.25)",
    },
    Knob {
        name: "bw_probe_down_gain",
        lo: 1,
        hi: 256,
        doc: "PROBE_BW DOWN pacing gain (bbr_pacing_gain[1]), 1/256",
    },
    Knob {
        name: "cwnd_min_target",
        lo: 1,
        hi: 1000,
        doc: "minimum cwnd, packets",
    },
    Knob {
        name: "full_bw_thresh",
        lo: 257,
        hi: 1023,
        doc: "bw growth that counts as growing, 1/256 (320 = 1.25)",
    },
    Knob {
        name: "full_bw_cnt",
        lo: 1,
        hi: 3,
        doc: "rounds without growth before the pipe is full",
    },
    Knob {
        name: "extra_acked_gain",
        lo: 0,
        hi: 1023,
        doc: "ACK-aggregation cwnd allowance gain, 1/256; 0 = off",
    },
    Knob {
        name: "extra_acked_win_rtts",
        lo: 1,
        hi: 31,
        doc: "ACK-aggregation filter window, rounds",
    },
    Knob {
        name: "beta",
        lo: 0,
        hi: 255,
        doc: "multiplicative cut on loss, 1/256 (76 = 0.3); 0 = no loss response",
    },
    Knob {
        name: "loss_thresh",
        lo: 1,
        hi: 255,
        doc: "loss rate of a flight that means too much inflight, 1/256 (5 = 2 %)",
    },
    Knob {
        name: "full_loss_cnt",
        lo: 0,
        hi: 15,
        doc: "loss events in a STARTUP recovery round ending STARTUP; 0 = off",
    },
    Knob {
        name: "inflight_headroom",
        lo: 0,
        hi: 255,
        doc: "headroom under inflight_hi when cruising, 1/256 (38 = 15 %)",
    },
    Knob {
        name: "bw_probe_cwnd_gain",
        lo: 0,
        hi: 3,
        doc: "extra PROBE_UP cwnd gain in 1/4 (v3 only; v2 ignores it)",
    },
    Knob {
        name: "bw_probe_pif_gain",
        lo: 256,
        hi: 511,
        doc: "PROBE_UP ends at this inflight/BDP, 1/256 (v2 only; v3 ignores it)",
    },
    Knob {
        name: "bw_probe_max_rounds",
        lo: 1,
        hi: 255,
        doc: "max rounds between bandwidth probes (Reno coexistence)",
    },
    Knob {
        name: "bw_probe_rand_rounds",
        lo: 1,
        hi: 255,
        doc: "random rounds added before a probe",
    },
    Knob {
        name: "bw_probe_base_us",
        lo: 0,
        hi: 60_000_000,
        doc: "base time between bandwidth probes, us",
    },
    Knob {
        name: "bw_probe_rand_us",
        lo: 1,
        hi: 60_000_000,
        doc: "random time added between probes, us",
    },
    Knob {
        name: "ecn_alpha_gain",
        lo: 0,
        hi: 256,
        doc: "ECN: EWMA gain of the CE ratio, 1/256",
    },
    Knob {
        name: "ecn_alpha_init",
        lo: 0,
        hi: 256,
        doc: "ECN: initial alpha, 1/256",
    },
    Knob {
        name: "ecn_factor",
        lo: 0,
        hi: 256,
        doc: "ECN: inflight_lo cut per alpha, 1/256",
    },
    Knob {
        name: "ecn_thresh",
        lo: 0,
        hi: 256,
        doc: "ECN: CE ratio meaning too much inflight, 1/256",
    },
    Knob {
        name: "ecn_max_rtt_us",
        lo: 0,
        hi: 524_287,
        doc: "ECN: max min_rtt for ECN logic, us",
    },
    Knob {
        name: "ecn_reprobe_gain",
        lo: 0,
        hi: 256,
        doc: "ECN: reprobe gain after marks clear, 1/256",
    },
    Knob {
        name: "full_ecn_cnt",
        lo: 0,
        hi: 3,
        doc: "ECN: high-CE STARTUP rounds ending STARTUP",
    },
    Knob {
        name: "tso_rtt_shift",
        lo: 0,
        hi: 31,
        doc: "halve the min_rtt TSO allowance per 2^shift us of min_rtt",
    },
];

impl NextParams {
    /// Value of the integer tunable `name`.
    pub fn get(&self, name: &str) -> u32 {
        let mut c = *self;
        *c.field_mut(name)
    }

    fn field_mut(&mut self, name: &str) -> &mut u32 {
        match name {
            "min_rtt_win_sec" => &mut self.min_rtt_win_sec,
            "probe_rtt_mode_ms" => &mut self.probe_rtt_mode_ms,
            "probe_rtt_win_ms" => &mut self.probe_rtt_win_ms,
            "probe_rtt_cwnd_gain" => &mut self.probe_rtt_cwnd_gain,
            "startup_pacing_gain" => &mut self.startup_pacing_gain,
            "startup_cwnd_gain" => &mut self.startup_cwnd_gain,
            "drain_gain" => &mut self.drain_gain,
            "cwnd_gain" => &mut self.cwnd_gain,
            "bw_probe_up_gain" => &mut self.pacing_gain[0],
            "bw_probe_down_gain" => &mut self.pacing_gain[1],
            "cwnd_min_target" => &mut self.cwnd_min_target,
            "full_bw_thresh" => &mut self.full_bw_thresh,
            "full_bw_cnt" => &mut self.full_bw_cnt,
            "extra_acked_gain" => &mut self.extra_acked_gain,
            "extra_acked_win_rtts" => &mut self.extra_acked_win_rtts,
            "beta" => &mut self.beta,
            "loss_thresh" => &mut self.loss_thresh,
            "full_loss_cnt" => &mut self.full_loss_cnt,
            "inflight_headroom" => &mut self.inflight_headroom,
            "bw_probe_cwnd_gain" => &mut self.bw_probe_cwnd_gain,
            "bw_probe_pif_gain" => &mut self.bw_probe_pif_gain,
            "bw_probe_max_rounds" => &mut self.bw_probe_max_rounds,
            "bw_probe_rand_rounds" => &mut self.bw_probe_rand_rounds,
            "bw_probe_base_us" => &mut self.bw_probe_base_us,
            "bw_probe_rand_us" => &mut self.bw_probe_rand_us,
            "ecn_alpha_gain" => &mut self.ecn_alpha_gain,
            "ecn_alpha_init" => &mut self.ecn_alpha_init,
            "ecn_factor" => &mut self.ecn_factor,
            "ecn_thresh" => &mut self.ecn_thresh,
            "ecn_max_rtt_us" => &mut self.ecn_max_rtt_us,
            "ecn_reprobe_gain" => &mut self.ecn_reprobe_gain,
            "full_ecn_cnt" => &mut self.full_ecn_cnt,
            "tso_rtt_shift" => &mut self.tso_rtt_shift,
            _ => unreachable!("unknown BBR tunable {name}"),
        }
    }

    /// The `ParamInfo` list for `cclab presets`.
    pub fn infos(&self) -> Vec<ParamInfo> {
        let mut v: Vec<ParamInfo> = KNOBS
            .iter()
            .map(|k| ParamInfo {
                name: k.name,
                default: ParamValue::Int(self.get(k.name) as i64),
                doc: k.doc,
            })
            .collect();
        v.push(ParamInfo {
            name: "fast_path",
            default: ParamValue::Bool(self.fast_path),
            doc: "skip model updates on app-limited ACKs that change nothing",
        });
        v.push(ParamInfo {
            name: "loss_probe_recovery",
            default: ParamValue::Bool(self.loss_probe_recovery),
            doc: "slow down for a loss repaired by a tail loss probe (v3 only)",
        });
        v
    }

    /// These defaults overridden by `params`, each checked against its range.
    pub fn read(mut self, algorithm: &str, params: &Params) -> Result<Self, CcError> {
        let r = ParamReader::new(algorithm, params);
        for k in KNOBS {
            let def = self.get(k.name) as i64;
            *self.field_mut(k.name) = r.int(k.name, def, k.lo, k.hi)? as u32;
        }
        self.fast_path = r.bool("fast_path", self.fast_path)?;
        self.loss_probe_recovery = r.bool("loss_probe_recovery", self.loss_probe_recovery)?;
        Ok(self)
    }
}

/// BBR's modes (`enum bbr_mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Ramp up rapidly to fill the pipe.
    Startup,
    /// Drain the STARTUP queue.
    Drain,
    /// Cycle UP / DOWN / CRUISE / REFILL around the estimate.
    ProbeBw,
    /// Cut inflight to re-measure min_rtt.
    ProbeRtt,
}

/// How the incoming ACKs relate to bandwidth probing (`enum bbr_ack_phase`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AckPhase {
    Init,
    Refilling,
    ProbeStarting,
    ProbeFeedback,
    ProbeStopping,
}

fn after(a: u32, b: u32) -> bool {
    (b.wrapping_sub(a) as i32) < 0
}
fn before(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) < 0
}

/// `struct bbr` of v2alpha / v3 (the fields both use).
#[derive(Debug, Clone)]
pub struct BbrNext {
    v: Version,
    p: NextParams,
    /// Min RTT in the min_rtt_win_sec window, us.
    pub min_rtt_us: u32,
    min_rtt_stamp: u32,
    probe_rtt_done_stamp: u32,
    probe_rtt_min_us: u32,
    probe_rtt_min_stamp: u32,
    next_rtt_delivered: u32,
    cycle_mstamp: u64,
    /// Current mode.
    pub mode: Mode,
    prev_ca_state: CaState,
    round_start: bool,
    bw_probe_up_rounds: u32,
    try_fast_path: bool,
    idle_restart: bool,
    probe_rtt_round_done: bool,
    init_cwnd: u32,
    /// Current pacing gain, 1/256.
    pub pacing_gain: u32,
    /// Current cwnd gain, 1/256.
    pub cwnd_gain: u32,
    /// STARTUP has filled the pipe.
    pub full_bw_reached: bool,
    full_bw_cnt: u32,
    /// PROBE_BW phase (`BW_PROBE_*`).
    pub cycle_idx: u32,
    has_seen_rtt: bool,
    prior_cwnd: u32,
    full_bw: u32,
    ack_epoch_mstamp: u64,
    extra_acked: [u32; 2],
    ack_epoch_acked: u32,
    extra_acked_win_rtts: u32,
    extra_acked_win_idx: usize,
    full_bw_now: bool,
    startup_ecn_rounds: u32,
    loss_in_cycle: bool,
    ecn_in_cycle: bool,
    loss_round_delivered: u32,
    undo_bw_lo: u32,
    undo_inflight_lo: u32,
    undo_inflight_hi: u32,
    bw_latest: u32,
    /// Short-term lower bound on bandwidth (`~0` = none).
    pub bw_lo: u32,
    bw_hi: [u32; 2],
    inflight_latest: u32,
    /// Short-term lower bound on inflight (`~0` = none).
    pub inflight_lo: u32,
    /// Long-term upper bound on inflight (`~0` = none).
    pub inflight_hi: u32,
    bw_probe_up_cnt: u32,
    bw_probe_up_acks: u32,
    probe_wait_us: u32,
    ecn_eligible: bool,
    ecn_alpha: u32,
    bw_probe_samples: bool,
    prev_probe_too_high: bool,
    stopped_risky_probe: bool,
    rounds_since_probe: u32,
    loss_round_start: bool,
    loss_in_round: bool,
    ecn_in_round: bool,
    ack_phase: AckPhase,
    loss_events_in_round: u32,
    initialized: bool,
    alpha_last_delivered: u32,
    alpha_last_delivered_ce: u32,
    /// Times STARTUP ended because of loss (`bbr_handle_queue_too_high_in_startup`), for tests.
    pub startup_loss_exits: u32,
    /// Times a probe found inflight too high (`bbr_handle_inflight_too_high`), for tests.
    pub inflight_too_high_events: u32,
}

/// `struct bbr_context`: this ACK's bandwidth sample.
#[derive(Default)]
struct Ctx {
    sample_bw: u32,
}

impl BbrNext {
    /// A fresh instance; `init` sets it up on the socket.
    pub fn new(v: Version, p: NextParams) -> Self {
        BbrNext {
            v,
            p,
            min_rtt_us: u32::MAX,
            min_rtt_stamp: 0,
            probe_rtt_done_stamp: 0,
            probe_rtt_min_us: u32::MAX,
            probe_rtt_min_stamp: 0,
            next_rtt_delivered: 0,
            cycle_mstamp: 0,
            mode: Mode::Startup,
            prev_ca_state: CaState::Open,
            round_start: false,
            bw_probe_up_rounds: 0,
            try_fast_path: false,
            idle_restart: false,
            probe_rtt_round_done: false,
            init_cwnd: TCP_INIT_CWND,
            pacing_gain: p.startup_pacing_gain,
            cwnd_gain: p.startup_cwnd_gain,
            full_bw_reached: false,
            full_bw_cnt: 0,
            cycle_idx: 0,
            has_seen_rtt: false,
            prior_cwnd: 0,
            full_bw: 0,
            ack_epoch_mstamp: 0,
            extra_acked: [0; 2],
            ack_epoch_acked: 0,
            extra_acked_win_rtts: 0,
            extra_acked_win_idx: 0,
            full_bw_now: false,
            startup_ecn_rounds: 0,
            loss_in_cycle: false,
            ecn_in_cycle: false,
            loss_round_delivered: 0,
            undo_bw_lo: 0,
            undo_inflight_lo: 0,
            undo_inflight_hi: 0,
            bw_latest: 0,
            bw_lo: NONE,
            bw_hi: [0; 2],
            inflight_latest: 0,
            inflight_lo: NONE,
            inflight_hi: NONE,
            bw_probe_up_cnt: NONE,
            bw_probe_up_acks: 0,
            probe_wait_us: 0,
            ecn_eligible: false,
            ecn_alpha: p.ecn_alpha_init,
            bw_probe_samples: false,
            prev_probe_too_high: false,
            stopped_risky_probe: false,
            rounds_since_probe: 0,
            loss_round_start: false,
            loss_in_round: false,
            ecn_in_round: false,
            ack_phase: AckPhase::Init,
            loss_events_in_round: 0,
            initialized: false,
            alpha_last_delivered: 0,
            alpha_last_delivered_ce: 0,
            startup_loss_exits: 0,
            inflight_too_high_events: 0,
        }
    }

    /// `bbr_max_bw`: max of the two bw_hi windows.
    pub fn max_bw(&self) -> u32 {
        self.bw_hi[0].max(self.bw_hi[1])
    }

    /// `bbr_bw`: the estimate in use, min(max_bw, bw_lo).
    pub fn bw(&self) -> u32 {
        self.max_bw().min(self.bw_lo)
    }

    /// `bbr_extra_acked`.
    fn extra_acked(&self) -> u32 {
        self.extra_acked[0].max(self.extra_acked[1])
    }

    /// `bbr_rate_bytes_per_sec` (v3 form, with a margin and a floor of 1).
    fn rate_bytes_per_sec(tp: &TcpSock, rate: u64, gain: u32, margin: u64) -> u64 {
        let mut rate = rate * tp.mss_cache as u64;
        rate *= gain as u64;
        rate >>= BBR_SCALE;
        rate *= 1_000_000 / 100 * (100 - margin);
        rate >>= BW_SCALE;
        rate.max(1)
    }

    /// `bbr_bw_to_pacing_rate`.
    fn bw_to_pacing_rate(tp: &TcpSock, bw: u32, gain: u32) -> u64 {
        Self::rate_bytes_per_sec(tp, bw as u64, gain, PACING_MARGIN_PERCENT)
            .min(tp.max_pacing_rate_bytes_per_s)
    }

    /// `bbr_init_pacing_rate_from_rtt`.
    fn init_pacing_rate_from_rtt(&mut self, tp: &mut TcpSock) {
        let rtt_us = if tp.srtt_us != 0 {
            self.has_seen_rtt = true;
            (tp.srtt_us >> 3).max(1)
        } else {
            1000
        };
        let bw = tp.snd_cwnd as u64 * BW_UNIT / rtt_us as u64;
        tp.pacing_rate_bytes_per_s =
            Self::bw_to_pacing_rate(tp, bw as u32, self.p.startup_pacing_gain);
    }

    /// `bbr_set_pacing_rate`.
    fn set_pacing_rate(&mut self, tp: &mut TcpSock, bw: u32, gain: u32) {
        let rate = Self::bw_to_pacing_rate(tp, bw, gain);
        if !self.has_seen_rtt && tp.srtt_us != 0 {
            self.init_pacing_rate_from_rtt(tp);
        }
        if self.full_bw_reached || rate > tp.pacing_rate_bytes_per_s {
            tp.pacing_rate_bytes_per_s = rate;
        }
    }

    /// `bbr_tso_segs_generic`: a burst of ~1 ms at the pacing rate plus a min_rtt-based
    /// allowance (64 KiB halved per 2^tso_rtt_shift us of min_rtt).
    fn tso_segs_generic(&self, tp: &TcpSock, mss_now: u32, gso_max_size: u64) -> u32 {
        let mut bytes = tp.pacing_rate_bytes_per_s >> tp.pacing_shift;
        if self.p.tso_rtt_shift != 0 {
            let r = self.min_rtt_us >> self.p.tso_rtt_shift;
            if r < 32 {
                bytes += GSO_LEGACY_MAX_SIZE >> r;
            }
        }
        bytes = bytes.min(gso_max_size - 1 - MAX_TCP_HEADER);
        // v3: sysctl_tcp_min_tso_segs; v2alpha: bbr_min_tso_segs (1 below 1.2 Mbit/s).
        let min_segs = match self.v {
            Version::V3 => TCP_MIN_TSO_SEGS,
            Version::V2 if tp.pacing_rate_bytes_per_s < (MIN_TSO_RATE_BPS >> 3) => 1,
            Version::V2 => 2,
        };
        (bytes / mss_now as u64).max(min_segs) as u32
    }

    /// `bbr_tso_segs_goal`.
    fn tso_segs_goal(&self, tp: &TcpSock) -> u32 {
        self.tso_segs_generic(tp, tp.mss_cache, GSO_LEGACY_MAX_SIZE)
    }

    /// `bbr_save_cwnd`.
    fn save_cwnd(&mut self, tp: &TcpSock) {
        if self.prev_ca_state < CaState::Recovery && self.mode != Mode::ProbeRtt {
            self.prior_cwnd = tp.snd_cwnd;
        } else {
            self.prior_cwnd = self.prior_cwnd.max(tp.snd_cwnd);
        }
    }

    /// `bbr_bdp`: ceil(bw * min_rtt * gain), or init_cwnd before any RTT sample.
    fn bdp(&self, bw: u32, gain: u32) -> u32 {
        if self.min_rtt_us == u32::MAX {
            return self.init_cwnd;
        }
        let w = bw as u64 * self.min_rtt_us as u64;
        (((w * gain as u64) >> BBR_SCALE).div_ceil(BW_UNIT)) as u32
    }

    /// `bbr_quantization_budget`: max(cwnd, 3 TSO bursts, cwnd_min_target) (v3; v2alpha's
    /// default `cwnd_tso_budget` = 1, "flooring", is the same), +2 in PROBE_UP.
    fn quantization_budget(&self, tp: &TcpSock, cwnd: u32) -> u32 {
        let tso = 3 * self.tso_segs_goal(tp);
        let mut cwnd = cwnd.max(tso).max(self.p.cwnd_min_target);
        if self.mode == Mode::ProbeBw && self.cycle_idx == BW_PROBE_UP {
            cwnd += 2;
        }
        cwnd
    }

    /// `bbr_inflight`.
    fn inflight(&self, tp: &TcpSock, bw: u32, gain: u32) -> u32 {
        let bdp = self.bdp(bw, gain);
        self.quantization_budget(tp, bdp)
    }

    /// `bbr_packets_in_net_at_edt`.
    fn packets_in_net_at_edt(&self, tp: &TcpSock, inflight_now: u32) -> u32 {
        let now_ns = tp.tcp_clock_cache_ns;
        let edt_ns = tp.tcp_wstamp_ns.max(now_ns);
        let interval_us = (edt_ns - now_ns) / 1000;
        let interval_delivered = ((self.bw() as u64 * interval_us) >> BW_SCALE) as u32;
        let mut inflight_at_edt = inflight_now;
        if self.pacing_gain > BBR_UNIT {
            inflight_at_edt += self.tso_segs_goal(tp);
        }
        inflight_at_edt.saturating_sub(interval_delivered)
    }

    /// `bbr_ack_aggregation_cwnd` (v2alpha: also in STARTUP, as its default
    /// `extra_acked_in_startup` = 1 allows; the same as v3).
    fn ack_aggregation_cwnd(&self) -> u32 {
        if self.p.extra_acked_gain == 0 {
            return 0;
        }
        let max_aggr_cwnd = (self.bw() as u64 * EXTRA_ACKED_MAX_US / BW_UNIT) as u32;
        let aggr_cwnd =
            ((self.p.extra_acked_gain as u64 * self.extra_acked() as u64) >> BBR_SCALE) as u32;
        aggr_cwnd.min(max_aggr_cwnd)
    }

    /// `bbr_probe_rtt_cwnd`: max(cwnd_min_target, BDP * probe_rtt_cwnd_gain).
    fn probe_rtt_cwnd(&self) -> u32 {
        self.p
            .cwnd_min_target
            .max(self.bdp(self.bw(), self.p.probe_rtt_cwnd_gain))
    }

    /// `bbr_set_cwnd`.
    fn set_cwnd(&mut self, tp: &mut TcpSock, acked: u32, bw: u32, gain: u32) {
        let mut cwnd = tp.snd_cwnd;
        'done: {
            if acked == 0 {
                break 'done;
            }
            let mut target_cwnd = self.bdp(bw, gain);
            target_cwnd += self.ack_aggregation_cwnd();
            target_cwnd = self.quantization_budget(tp, target_cwnd);
            self.try_fast_path = false;
            if self.full_bw_reached {
                cwnd += acked;
                if cwnd >= target_cwnd {
                    cwnd = target_cwnd;
                    self.try_fast_path = true;
                }
            } else if cwnd < target_cwnd || cwnd < 2 * self.init_cwnd {
                cwnd += acked;
            } else {
                self.try_fast_path = true;
            }
            cwnd = cwnd.max(self.p.cwnd_min_target);
        }
        tp.set_cwnd(cwnd.min(tp.snd_cwnd_clamp));
        if self.mode == Mode::ProbeRtt {
            let c = tp.snd_cwnd.min(self.probe_rtt_cwnd());
            tp.set_cwnd(c);
        }
    }

    /// `bbr_update_round_start`.
    fn update_round_start(&mut self, tp: &TcpSock, rs: &RateSample) {
        self.round_start = false;
        if rs.interval_us > 0 && !before(rs.prior_delivered, self.next_rtt_delivered) {
            self.next_rtt_delivered = tp.delivered;
            self.round_start = true;
        }
    }

    /// `bbr_calculate_bw_sample`: delivered / interval, rounded up.
    fn calculate_bw_sample(&self, rs: &RateSample, ctx: &mut Ctx) {
        if rs.interval_us > 0 && rs.delivered >= 0 {
            let bw = (rs.delivered as u64 * BW_UNIT).div_ceil(rs.interval_us as u64);
            ctx.sample_bw = bw.min(u32::MAX as u64) as u32;
        }
    }

    /// `bbr_update_ack_aggregation` (1-round window before the pipe is full).
    fn update_ack_aggregation(&mut self, tp: &TcpSock, rs: &RateSample) {
        if self.p.extra_acked_gain == 0
            || rs.acked_sacked == 0
            || rs.delivered < 0
            || rs.interval_us <= 0
        {
            return;
        }
        if self.round_start {
            self.extra_acked_win_rtts = (self.extra_acked_win_rtts + 1).min(0x1f);
            let thresh = if self.full_bw_reached {
                self.p.extra_acked_win_rtts
            } else {
                1
            };
            if self.extra_acked_win_rtts >= thresh {
                self.extra_acked_win_rtts = 0;
                self.extra_acked_win_idx ^= 1;
                self.extra_acked[self.extra_acked_win_idx] = 0;
            }
        }
        let epoch_us = TcpSock::stamp_us_delta(tp.delivered_mstamp_us, self.ack_epoch_mstamp);
        let mut expected_acked = (self.bw() as u64 * epoch_us / BW_UNIT) as u32;
        if self.ack_epoch_acked <= expected_acked
            || self.ack_epoch_acked + rs.acked_sacked >= ACK_EPOCH_ACKED_RESET_THRESH
        {
            self.ack_epoch_acked = 0;
            self.ack_epoch_mstamp = tp.delivered_mstamp_us;
            expected_acked = 0;
        }
        self.ack_epoch_acked = (self.ack_epoch_acked + rs.acked_sacked).min(0xFFFFF);
        let extra = (self.ack_epoch_acked - expected_acked)
            .min(tp.snd_cwnd)
            .min(0xFFFF);
        if extra > self.extra_acked[self.extra_acked_win_idx] {
            self.extra_acked[self.extra_acked_win_idx] = extra;
        }
    }

    /// `bbr_check_probe_rtt_done`.
    fn check_probe_rtt_done(&mut self, tp: &mut TcpSock) {
        if !(self.probe_rtt_done_stamp != 0 && after(tp.jiffies(), self.probe_rtt_done_stamp)) {
            return;
        }
        self.probe_rtt_min_stamp = tp.jiffies(); // schedule next PROBE_RTT
        tp.set_cwnd(tp.snd_cwnd.max(self.prior_cwnd));
        self.exit_probe_rtt(tp);
    }

    /// `bbr_update_min_rtt`: the 5 s probe_rtt_min filter times PROBE_RTT; the 10 s min_rtt
    /// filter is refreshed from it.
    fn update_min_rtt(&mut self, tp: &mut TcpSock, rs: &RateSample) {
        let now = tp.jiffies();
        let expire = self
            .probe_rtt_min_stamp
            .wrapping_add(tp.msecs_to_jiffies(self.p.probe_rtt_win_ms));
        let probe_rtt_expired = after(now, expire);
        if rs.rtt_us >= 0
            && ((rs.rtt_us as u64) < self.probe_rtt_min_us as u64
                // v2alpha also takes an equal sample (`<=`), refreshing the stamp.
                || (self.v == Version::V2 && rs.rtt_us as u64 == self.probe_rtt_min_us as u64)
                || (probe_rtt_expired && !rs.is_ack_delayed))
        {
            self.probe_rtt_min_us = rs.rtt_us.min(u32::MAX as i64) as u32;
            self.probe_rtt_min_stamp = now;
        }
        let expire = self
            .min_rtt_stamp
            .wrapping_add(self.p.min_rtt_win_sec.wrapping_mul(tp.hz));
        let min_rtt_expired = after(now, expire);
        if self.probe_rtt_min_us <= self.min_rtt_us || min_rtt_expired {
            self.min_rtt_us = self.probe_rtt_min_us;
            self.min_rtt_stamp = self.probe_rtt_min_stamp;
        }
        if self.p.probe_rtt_mode_ms > 0
            && probe_rtt_expired
            && !self.idle_restart
            && self.mode != Mode::ProbeRtt
        {
            self.mode = Mode::ProbeRtt;
            self.save_cwnd(tp);
            self.probe_rtt_done_stamp = 0;
            self.ack_phase = AckPhase::ProbeStopping;
            self.next_rtt_delivered = tp.delivered;
        }
        if self.mode == Mode::ProbeRtt {
            let v = tp.delivered.wrapping_add(tp.packets_in_flight());
            tp.app_limited = if v == 0 { 1 } else { v };
            if self.probe_rtt_done_stamp == 0 && tp.packets_in_flight() <= self.probe_rtt_cwnd() {
                self.probe_rtt_done_stamp =
                    now.wrapping_add(tp.msecs_to_jiffies(self.p.probe_rtt_mode_ms));
                self.probe_rtt_round_done = false;
                self.next_rtt_delivered = tp.delivered;
            } else if self.probe_rtt_done_stamp != 0 {
                if self.round_start {
                    self.probe_rtt_round_done = true;
                }
                if self.probe_rtt_round_done {
                    self.check_probe_rtt_done(tp);
                }
            }
        }
        if rs.delivered > 0 {
            self.idle_restart = false;
        }
    }

    /// `bbr_update_gains` (v2alpha has no extra PROBE_UP cwnd gain).
    fn update_gains(&mut self) {
        let (pacing, cwnd) = match self.mode {
            Mode::Startup => (self.p.startup_pacing_gain, self.p.startup_cwnd_gain),
            Mode::Drain => (self.p.drain_gain, self.p.startup_cwnd_gain),
            Mode::ProbeBw => {
                let mut c = self.p.cwnd_gain;
                if self.v == Version::V3
                    && self.p.bw_probe_cwnd_gain != 0
                    && self.cycle_idx == BW_PROBE_UP
                {
                    c += BBR_UNIT * self.p.bw_probe_cwnd_gain / 4;
                }
                (self.p.pacing_gain[self.cycle_idx as usize], c)
            }
            Mode::ProbeRtt => (BBR_UNIT, BBR_UNIT),
        };
        self.pacing_gain = pacing;
        self.cwnd_gain = cwnd;
    }

    /// `bbr_take_max_bw_sample`.
    fn take_max_bw_sample(&mut self, bw: u32) {
        self.bw_hi[1] = self.bw_hi[1].max(bw);
    }

    /// `bbr_advance_max_bw_filter`.
    fn advance_max_bw_filter(&mut self) {
        if self.bw_hi[1] == 0 {
            return;
        }
        self.bw_hi[0] = self.bw_hi[1];
        self.bw_hi[1] = 0;
    }

    /// `bbr_reset_full_bw`.
    fn reset_full_bw(&mut self) {
        self.full_bw = 0;
        self.full_bw_cnt = 0;
        self.full_bw_now = false;
    }

    /// `bbr_target_inflight`.
    fn target_inflight(&self, tp: &TcpSock) -> u32 {
        self.inflight(tp, self.bw(), BBR_UNIT).min(tp.snd_cwnd)
    }

    /// `bbr_is_probing_bandwidth`.
    fn is_probing_bandwidth(&self) -> bool {
        self.mode == Mode::Startup
            || (self.mode == Mode::ProbeBw
                && (self.cycle_idx == BW_PROBE_REFILL || self.cycle_idx == BW_PROBE_UP))
    }

    /// `bbr_has_elapsed_in_phase`.
    fn has_elapsed_in_phase(&self, tp: &TcpSock, interval_us: u32) -> bool {
        tp.tcp_mstamp_us as i64 - (self.cycle_mstamp + interval_us as u64) as i64 > 0
    }

    /// `bbr_handle_queue_too_high_in_startup`.
    fn handle_queue_too_high_in_startup(&mut self, tp: &TcpSock) {
        self.full_bw_reached = true;
        self.startup_loss_exits += 1;
        let bdp = self.inflight(tp, self.max_bw(), BBR_UNIT);
        // v3 keeps at least this round's delivered volume; v2alpha takes the BDP.
        self.inflight_hi = match self.v {
            Version::V3 => bdp.max(self.inflight_latest),
            Version::V2 => bdp,
        };
    }

    /// `bbr_check_ecn_too_high_in_startup`: `full_ecn_cnt` rounds in a row with a CE ratio of at
    /// least `ecn_thresh` end STARTUP.
    fn check_ecn_too_high_in_startup(&mut self, tp: &TcpSock, ce_ratio: u32) {
        if self.full_bw_reached
            || !self.ecn_eligible
            || self.p.full_ecn_cnt == 0
            || self.p.ecn_thresh == 0
        {
            return;
        }
        if ce_ratio >= self.p.ecn_thresh {
            self.startup_ecn_rounds += 1;
        } else {
            self.startup_ecn_rounds = 0;
        }
        if self.startup_ecn_rounds >= self.p.full_ecn_cnt {
            self.handle_queue_too_high_in_startup(tp);
        }
    }

    /// `bbr_update_ecn_alpha` (v3) / `bbr2_update_ecn_alpha` (v2alpha): the EWMA of the
    /// fraction of CE-echoed deliveries, once per round; -1 when not available.
    fn update_ecn_alpha(&mut self, tp: &TcpSock) -> i32 {
        let eligible_now = |s: &Self| {
            !s.ecn_eligible
                && can_use_ecn(tp)
                && (s.min_rtt_us <= s.p.ecn_max_rtt_us || s.p.ecn_max_rtt_us == 0)
        };
        match self.v {
            // v3 decides eligibility first and updates alpha only when eligible (PLB, which
            // would also want alpha, is not modelled).
            Version::V3 => {
                if eligible_now(self) && self.p.ecn_factor != 0 {
                    self.ecn_eligible = true;
                }
                if !self.ecn_eligible {
                    return -1;
                }
            }
            // v2alpha returns early without ecn_factor and updates alpha whether or not the
            // flow is eligible yet (eligibility is set after the delivered check below).
            Version::V2 => {
                if self.p.ecn_factor == 0 {
                    return -1;
                }
            }
        }
        let delivered = tp.delivered.wrapping_sub(self.alpha_last_delivered);
        let delivered_ce = tp.delivered_ce.wrapping_sub(self.alpha_last_delivered_ce);
        if delivered == 0 || (delivered as i32) < 0 || (delivered_ce as i32) < 0 {
            return -1;
        }
        if self.v == Version::V2 && eligible_now(self) {
            self.ecn_eligible = true;
        }
        let ce_ratio = ((delivered_ce as u64) << BBR_SCALE) / delivered as u64;
        let gain = self.p.ecn_alpha_gain as u64;
        let alpha = (((BBR_UNIT as u64 - gain) * self.ecn_alpha as u64) >> BBR_SCALE)
            + ((gain * ce_ratio) >> BBR_SCALE);
        self.ecn_alpha = alpha.min(BBR_UNIT as u64) as u32;
        self.alpha_last_delivered = tp.delivered;
        self.alpha_last_delivered_ce = tp.delivered_ce;
        self.check_ecn_too_high_in_startup(tp, ce_ratio as u32);
        ce_ratio as i32
    }

    /// `bbr_raise_inflight_hi_slope`: double the PROBE_UP growth each round.
    fn raise_inflight_hi_slope(&mut self, tp: &TcpSock) {
        let growth_this_round = 1u32 << self.bw_probe_up_rounds;
        self.bw_probe_up_rounds = (self.bw_probe_up_rounds + 1).min(30);
        self.bw_probe_up_cnt = (tp.snd_cwnd / growth_this_round).max(1);
    }

    /// `bbr_probe_inflight_hi_upward`.
    fn probe_inflight_hi_upward(&mut self, tp: &TcpSock, rs: &RateSample) {
        if !tp.is_cwnd_limited || tp.snd_cwnd < self.inflight_hi {
            if self.v == Version::V2 {
                self.bw_probe_up_acks = 0; // v2alpha: don't accumulate unused credits
            }
            return;
        }
        self.bw_probe_up_acks += rs.acked_sacked;
        if self.bw_probe_up_acks >= self.bw_probe_up_cnt {
            let delta = self.bw_probe_up_acks / self.bw_probe_up_cnt;
            self.bw_probe_up_acks -= delta * self.bw_probe_up_cnt;
            self.inflight_hi = self.inflight_hi.saturating_add(delta);
            self.try_fast_path = false;
        }
        if self.round_start {
            self.raise_inflight_hi_slope(tp);
        }
    }

    /// `bbr_is_inflight_too_high`: lost / tx_in_flight > loss_thresh (or the ECN ratio).
    fn is_inflight_too_high(&self, rs: &RateSample) -> bool {
        if rs.lost > 0 && rs.tx_in_flight > 0 {
            let loss_thresh = (rs.tx_in_flight as u64 * self.p.loss_thresh as u64) >> BBR_SCALE;
            if rs.lost as u64 > loss_thresh {
                return true;
            }
        }
        if rs.delivered_ce > 0 && rs.delivered > 0 && self.ecn_eligible && self.p.ecn_thresh != 0 {
            let ecn_thresh = (rs.delivered as u64 * self.p.ecn_thresh as u64) >> BBR_SCALE;
            if rs.delivered_ce as u64 > ecn_thresh {
                return true;
            }
        }
        false
    }

    /// `bbr_inflight_hi_from_lost_skb`: the inflight at which the loss rate crossed
    /// loss_thresh within this lost skb.
    fn inflight_hi_from_lost_skb(&self, rs: &RateSample, pcount: u32) -> u32 {
        let loss_thresh = self.p.loss_thresh as u64;
        let inflight_prev = rs.tx_in_flight as i64 - pcount as i64;
        if inflight_prev < 0 {
            return NONE;
        }
        let lost_prev = rs.lost as i64 - pcount as i64;
        if lost_prev < 0 {
            return NONE;
        }
        let loss_budget = (inflight_prev as u64 * loss_thresh + BBR_UNIT as u64 - 1) >> BBR_SCALE;
        let lost_prefix = if lost_prev as u64 >= loss_budget {
            0
        } else {
            ((loss_budget - lost_prev as u64) << BBR_SCALE) / (BBR_UNIT as u64 - loss_thresh)
        };
        (inflight_prev as u64 + lost_prefix).min(NONE as u64) as u32
    }

    /// `bbr_inflight_with_headroom`.
    fn inflight_with_headroom(&self) -> u32 {
        if self.inflight_hi == NONE {
            return NONE;
        }
        let headroom = (((self.inflight_hi as u64 * self.p.inflight_headroom as u64) >> BBR_SCALE)
            as u32)
            .max(1);
        (self.inflight_hi.saturating_sub(headroom)).max(self.p.cwnd_min_target)
    }

    /// `bbr_bound_cwnd_for_inflight_model`.
    fn bound_cwnd_for_inflight_model(&self, tp: &mut TcpSock) {
        if !self.initialized {
            return;
        }
        let mut cap = NONE;
        if self.mode == Mode::ProbeBw && self.cycle_idx != BW_PROBE_CRUISE {
            cap = self.inflight_hi;
        } else if self.mode == Mode::ProbeRtt
            || (self.mode == Mode::ProbeBw && self.cycle_idx == BW_PROBE_CRUISE)
        {
            cap = self.inflight_with_headroom();
        }
        cap = cap.min(self.inflight_lo);
        cap = cap.max(self.p.cwnd_min_target);
        tp.set_cwnd(cap.min(tp.snd_cwnd));
    }

    /// `bbr_ecn_cut`.
    fn ecn_cut(&self) -> u32 {
        BBR_UNIT - ((self.ecn_alpha * self.p.ecn_factor) >> BBR_SCALE)
    }

    /// `bbr_init_lower_bounds`.
    fn init_lower_bounds(&mut self, tp: &TcpSock, init_bw: bool) {
        if init_bw && self.bw_lo == NONE {
            self.bw_lo = self.max_bw();
        }
        if self.inflight_lo == NONE {
            self.inflight_lo = tp.snd_cwnd;
        }
    }

    /// `bbr_loss_lower_bounds`: cut bw_lo and inflight_lo by beta, not below this round's.
    fn loss_lower_bounds(&mut self) {
        let loss_cut = (BBR_UNIT - self.p.beta) as u64;
        self.bw_lo = self
            .bw_latest
            .max(((self.bw_lo as u64 * loss_cut) >> BBR_SCALE) as u32);
        self.inflight_lo = self
            .inflight_latest
            .max(((self.inflight_lo as u64 * loss_cut) >> BBR_SCALE) as u32);
    }

    /// `bbr_adapt_lower_bounds`: once per round outside probing, on loss (or ECN).
    fn adapt_lower_bounds(&mut self, tp: &TcpSock) {
        if self.is_probing_bandwidth() {
            return;
        }
        let mut ecn_inflight_lo = NONE;
        if self.ecn_in_round && self.p.ecn_factor != 0 {
            self.init_lower_bounds(tp, false);
            ecn_inflight_lo =
                ((self.inflight_lo as u64 * self.ecn_cut() as u64) >> BBR_SCALE) as u32;
        }
        if self.loss_in_round {
            self.init_lower_bounds(tp, true);
            self.loss_lower_bounds();
        }
        self.inflight_lo = self.inflight_lo.min(ecn_inflight_lo);
        if self.v == Version::V3 {
            self.bw_lo = self.bw_lo.max(1);
        }
    }

    /// `bbr_reset_lower_bounds`.
    fn reset_lower_bounds(&mut self) {
        self.bw_lo = NONE;
        self.inflight_lo = NONE;
    }

    /// `bbr_reset_congestion_signals`.
    fn reset_congestion_signals(&mut self) {
        self.loss_in_round = false;
        self.ecn_in_round = false;
        self.loss_in_cycle = false;
        self.ecn_in_cycle = false;
        self.bw_latest = 0;
        self.inflight_latest = 0;
    }

    /// `bbr_exit_loss_recovery` (inline in v2alpha's `bbr2_set_state`).
    fn exit_loss_recovery(&mut self, tp: &mut TcpSock) {
        tp.set_cwnd(tp.snd_cwnd.max(self.prior_cwnd));
        self.try_fast_path = false;
    }

    /// `bbr_update_latest_delivery_signals`.
    fn update_latest_delivery_signals(&mut self, tp: &TcpSock, rs: &RateSample, ctx: &Ctx) {
        self.loss_round_start = false;
        if rs.interval_us <= 0 || rs.acked_sacked == 0 {
            return;
        }
        self.bw_latest = self.bw_latest.max(ctx.sample_bw);
        self.inflight_latest = self.inflight_latest.max(rs.delivered.max(0) as u32);
        if !before(rs.prior_delivered, self.loss_round_delivered) {
            self.loss_round_delivered = tp.delivered;
            self.loss_round_start = true;
        }
    }

    /// `bbr_advance_latest_delivery_signals` (v3).
    fn advance_latest_delivery_signals(&mut self, rs: &RateSample, ctx: &Ctx) {
        if self.loss_round_start && !rs.is_acking_tlp_retrans_seq {
            self.bw_latest = ctx.sample_bw;
            self.inflight_latest = rs.delivered.max(0) as u32;
        }
    }

    /// `bbr_update_congestion_signals`.
    fn update_congestion_signals(&mut self, tp: &TcpSock, rs: &RateSample, ctx: &Ctx) {
        if self.v == Version::V2 {
            self.loss_round_start = false;
        }
        if rs.interval_us <= 0 || rs.acked_sacked == 0 {
            return;
        }
        let bw = ctx.sample_bw;
        if !rs.is_app_limited || bw >= self.max_bw() {
            self.take_max_bw_sample(bw);
        }
        self.loss_in_round |= rs.losses > 0;
        if self.v == Version::V2 {
            // bbr2_update_congestion_signals: the "latest" filters and the loss round live
            // here in v2alpha (v3 split them into update/advance_latest_delivery_signals).
            self.bw_latest = self.bw_latest.max(ctx.sample_bw);
            self.inflight_latest = self.inflight_latest.max(rs.delivered.max(0) as u32);
            if before(rs.prior_delivered, self.loss_round_delivered) {
                return;
            }
            self.loss_round_delivered = tp.delivered;
            self.loss_round_start = true;
            self.adapt_lower_bounds(tp);
            self.loss_in_round = false;
            self.ecn_in_round = false;
            self.bw_latest = ctx.sample_bw;
            self.inflight_latest = rs.delivered.max(0) as u32;
            return;
        }
        if !self.loss_round_start {
            return;
        }
        self.adapt_lower_bounds(tp);
        self.loss_in_round = false;
        self.ecn_in_round = false;
    }

    /// `bbr_is_reno_coexistence_probe_time`.
    fn is_reno_coexistence_probe_time(&self, tp: &TcpSock) -> bool {
        let rounds = self.p.bw_probe_max_rounds.min(self.target_inflight(tp));
        self.rounds_since_probe >= rounds
    }

    /// `bbr_pick_probe_wait`.
    fn pick_probe_wait(&mut self, tp: &mut TcpSock) {
        self.rounds_since_probe = tp.random_u32_below(self.p.bw_probe_rand_rounds);
        self.probe_wait_us = self.p.bw_probe_base_us + tp.random_u32_below(self.p.bw_probe_rand_us);
    }

    /// `bbr_set_cycle_idx`.
    fn set_cycle_idx(&mut self, idx: u32) {
        self.cycle_idx = idx;
        self.try_fast_path = false;
    }

    /// `bbr_start_bw_probe_refill`.
    fn start_bw_probe_refill(&mut self, tp: &TcpSock, bw_probe_up_rounds: u32) {
        self.reset_lower_bounds();
        self.bw_probe_up_rounds = bw_probe_up_rounds;
        self.bw_probe_up_acks = 0;
        self.stopped_risky_probe = false;
        self.ack_phase = AckPhase::Refilling;
        self.next_rtt_delivered = tp.delivered;
        self.set_cycle_idx(BW_PROBE_REFILL);
    }

    /// `bbr_start_bw_probe_up` (v3 also restarts the full-bw plateau detector).
    fn start_bw_probe_up(&mut self, tp: &TcpSock, ctx: &Ctx) {
        self.ack_phase = AckPhase::ProbeStarting;
        self.next_rtt_delivered = tp.delivered;
        self.cycle_mstamp = tp.tcp_mstamp_us;
        if self.v == Version::V3 {
            self.reset_full_bw();
            self.full_bw = ctx.sample_bw;
        }
        self.set_cycle_idx(BW_PROBE_UP);
        self.raise_inflight_hi_slope(tp);
    }

    /// `bbr_start_bw_probe_down`.
    fn start_bw_probe_down(&mut self, tp: &mut TcpSock) {
        self.reset_congestion_signals();
        self.bw_probe_up_cnt = NONE;
        self.pick_probe_wait(tp);
        self.cycle_mstamp = tp.tcp_mstamp_us;
        self.ack_phase = AckPhase::ProbeStopping;
        self.next_rtt_delivered = tp.delivered;
        self.set_cycle_idx(BW_PROBE_DOWN);
    }

    /// `bbr_start_bw_probe_cruise`.
    fn start_bw_probe_cruise(&mut self) {
        if self.inflight_lo != NONE {
            self.inflight_lo = self.inflight_lo.min(self.inflight_hi);
        }
        self.set_cycle_idx(BW_PROBE_CRUISE);
    }

    /// `bbr_handle_inflight_too_high`: cut inflight_hi to what the flight carried (at least
    /// (1 - beta) of the target) and stop probing.
    fn handle_inflight_too_high(&mut self, tp: &mut TcpSock, rs: &RateSample) {
        self.prev_probe_too_high = true;
        self.bw_probe_samples = false;
        self.inflight_too_high_events += 1;
        if !rs.is_app_limited {
            let cut =
                (self.target_inflight(tp) as u64 * (BBR_UNIT - self.p.beta) as u64) >> BBR_SCALE;
            self.inflight_hi = rs.tx_in_flight.max(cut as u32);
        }
        if self.mode == Mode::ProbeBw && self.cycle_idx == BW_PROBE_UP {
            self.start_bw_probe_down(tp);
        }
    }

    /// `bbr_adapt_upper_bounds`; true when it decided a state transition.
    fn adapt_upper_bounds(&mut self, tp: &mut TcpSock, rs: &RateSample) -> bool {
        if self.ack_phase == AckPhase::ProbeStarting && self.round_start {
            self.ack_phase = AckPhase::ProbeFeedback;
        }
        if self.ack_phase == AckPhase::ProbeStopping && self.round_start {
            self.bw_probe_samples = false;
            self.ack_phase = AckPhase::Init;
            if self.mode == Mode::ProbeBw && !rs.is_app_limited {
                self.advance_max_bw_filter();
            }
            if self.mode == Mode::ProbeBw && self.stopped_risky_probe && !self.prev_probe_too_high {
                self.start_bw_probe_refill(tp, 0);
                return true;
            }
        }
        if self.is_inflight_too_high(rs) {
            if self.bw_probe_samples {
                self.handle_inflight_too_high(tp, rs);
            }
        } else {
            if self.inflight_hi == NONE {
                return false;
            }
            if rs.tx_in_flight > self.inflight_hi {
                self.inflight_hi = rs.tx_in_flight;
            }
            if self.mode == Mode::ProbeBw && self.cycle_idx == BW_PROBE_UP {
                self.probe_inflight_hi_upward(tp, rs);
            }
        }
        false
    }

    /// `bbr_check_time_to_probe_bw`.
    fn check_time_to_probe_bw(&mut self, tp: &TcpSock) -> bool {
        if self.p.ecn_reprobe_gain != 0
            && self.ecn_eligible
            && self.ecn_in_cycle
            && !self.loss_in_cycle
            && tp.ca_state == CaState::Open
        {
            let x = (self.inflight_hi as u64 * self.p.ecn_reprobe_gain as u64) >> BBR_SCALE;
            let n = if x == 0 { 0 } else { 63 - x.leading_zeros() };
            self.start_bw_probe_refill(tp, n);
            return true;
        }
        if self.has_elapsed_in_phase(tp, self.probe_wait_us)
            || self.is_reno_coexistence_probe_time(tp)
        {
            self.start_bw_probe_refill(tp, 0);
            return true;
        }
        false
    }

    /// `bbr_check_time_to_cruise` (v2alpha's `drain_to_target` = true: the same test).
    fn check_time_to_cruise(&self, tp: &TcpSock, inflight: u32, bw: u32) -> bool {
        if inflight > self.inflight_with_headroom() {
            return false;
        }
        inflight <= self.inflight(tp, bw, BBR_UNIT)
    }

    /// `bbr_update_cycle_phase`: the PROBE_BW state machine.
    fn update_cycle_phase(&mut self, tp: &mut TcpSock, rs: &RateSample, ctx: &Ctx) {
        if !self.full_bw_reached {
            return;
        }
        if self.adapt_upper_bounds(tp, rs) {
            return;
        }
        if self.mode != Mode::ProbeBw {
            return;
        }
        let inflight = self.packets_in_net_at_edt(tp, rs.prior_in_flight);
        let bw = self.max_bw();
        match self.cycle_idx {
            BW_PROBE_CRUISE => {
                self.check_time_to_probe_bw(tp);
            }
            BW_PROBE_REFILL => {
                if self.round_start {
                    self.bw_probe_samples = true;
                    self.start_bw_probe_up(tp, ctx);
                }
            }
            BW_PROBE_UP => {
                let mut done = false;
                if self.prev_probe_too_high && inflight >= self.inflight_hi {
                    self.stopped_risky_probe = true;
                    done = true;
                } else {
                    match self.v {
                        // v3: inflight_hi limiting growth restarts the plateau detector;
                        // a bw plateau (full_bw_now) ends the probe.
                        Version::V3 => {
                            if tp.is_cwnd_limited && tp.snd_cwnd >= self.inflight_hi {
                                self.reset_full_bw();
                                self.full_bw = ctx.sample_bw;
                            } else if self.full_bw_now {
                                done = true;
                            }
                        }
                        // v2alpha: probed >= min_rtt and inflight >= bw_probe_pif_gain * BDP.
                        Version::V2 => {
                            if self.has_elapsed_in_phase(tp, self.min_rtt_us)
                                && inflight >= self.inflight(tp, bw, self.p.bw_probe_pif_gain)
                            {
                                done = true;
                            }
                        }
                    }
                }
                if done {
                    self.prev_probe_too_high = false;
                    self.start_bw_probe_down(tp);
                }
            }
            BW_PROBE_DOWN => {
                if self.check_time_to_probe_bw(tp) {
                    return;
                }
                if self.check_time_to_cruise(tp, inflight, bw) {
                    self.start_bw_probe_cruise();
                }
            }
            _ => unreachable!("cycle_idx is 2 bits"),
        }
    }

    /// `bbr_exit_probe_rtt`.
    fn exit_probe_rtt(&mut self, tp: &mut TcpSock) {
        self.reset_lower_bounds();
        if self.full_bw_reached {
            self.mode = Mode::ProbeBw;
            self.start_bw_probe_down(tp);
            self.start_bw_probe_cruise();
        } else {
            self.mode = Mode::Startup;
        }
    }

    /// `bbr_check_loss_too_high_in_startup`: >= full_loss_cnt loss events in a recovery round
    /// with a loss rate above loss_thresh end STARTUP.
    fn check_loss_too_high_in_startup(&mut self, tp: &TcpSock, rs: &RateSample) {
        if self.full_bw_reached {
            return;
        }
        if rs.losses > 0 && self.loss_events_in_round < 0xf {
            self.loss_events_in_round += 1;
        }
        if self.p.full_loss_cnt != 0
            && self.loss_round_start
            && tp.ca_state == CaState::Recovery
            && self.loss_events_in_round >= self.p.full_loss_cnt
            && self.is_inflight_too_high(rs)
        {
            self.handle_queue_too_high_in_startup(tp);
            return;
        }
        if self.loss_round_start {
            self.loss_events_in_round = 0;
        }
    }

    /// `bbr_check_full_bw_reached`: v3 compares each sample and sets `full_bw_now`; v2alpha
    /// keeps v1's once-per-round test on max_bw.
    fn check_full_bw_reached(&mut self, rs: &RateSample, ctx: &Ctx) {
        match self.v {
            Version::V3 => {
                if self.full_bw_now || rs.is_app_limited {
                    return;
                }
                let bw_thresh =
                    ((self.full_bw as u64 * self.p.full_bw_thresh as u64) >> BBR_SCALE) as u32;
                if ctx.sample_bw >= bw_thresh {
                    self.reset_full_bw();
                    self.full_bw = ctx.sample_bw;
                    return;
                }
                if !self.round_start {
                    return;
                }
                self.full_bw_cnt += 1;
                self.full_bw_now = self.full_bw_cnt >= self.p.full_bw_cnt;
                self.full_bw_reached |= self.full_bw_now;
            }
            Version::V2 => {
                if self.full_bw_reached || !self.round_start || rs.is_app_limited {
                    return;
                }
                let bw_thresh =
                    ((self.full_bw as u64 * self.p.full_bw_thresh as u64) >> BBR_SCALE) as u32;
                if self.max_bw() >= bw_thresh {
                    self.full_bw = self.max_bw();
                    self.full_bw_cnt = 0;
                    return;
                }
                self.full_bw_cnt += 1;
                self.full_bw_reached = self.full_bw_cnt >= self.p.full_bw_cnt;
            }
        }
    }

    /// `bbr_check_drain`.
    fn check_drain(&mut self, tp: &mut TcpSock) {
        if self.mode == Mode::Startup && self.full_bw_reached {
            self.mode = Mode::Drain;
            tp.snd_ssthresh = self.inflight(tp, self.max_bw(), BBR_UNIT);
            self.reset_congestion_signals();
        }
        if self.mode == Mode::Drain
            && self.packets_in_net_at_edt(tp, tp.packets_in_flight())
                <= self.inflight(tp, self.max_bw(), BBR_UNIT)
        {
            self.mode = Mode::ProbeBw;
            self.start_bw_probe_down(tp);
        }
    }

    /// `bbr_update_model`.
    fn update_model(&mut self, tp: &mut TcpSock, rs: &RateSample, ctx: &Ctx) {
        self.update_congestion_signals(tp, rs, ctx);
        self.update_ack_aggregation(tp, rs);
        self.check_loss_too_high_in_startup(tp, rs);
        self.check_full_bw_reached(rs, ctx);
        self.check_drain(tp);
        self.update_cycle_phase(tp, rs, ctx);
        self.update_min_rtt(tp, rs);
    }

    /// `bbr_run_fast_path`.
    fn run_fast_path(
        &mut self,
        tp: &mut TcpSock,
        update_model: &mut bool,
        rs: &RateSample,
        ctx: &Ctx,
    ) -> bool {
        if self.p.fast_path
            && self.try_fast_path
            && rs.is_app_limited
            && ctx.sample_bw < self.max_bw()
            && !self.loss_in_round
            && !self.ecn_in_round
        {
            let (prev_mode, prev_min_rtt) = (self.mode, self.min_rtt_us);
            self.check_drain(tp);
            self.update_cycle_phase(tp, rs, ctx);
            self.update_min_rtt(tp, rs);
            if self.mode == prev_mode && self.min_rtt_us == prev_min_rtt && self.try_fast_path {
                return true;
            }
            *update_model = false;
        }
        false
    }

    /// `bbr_main` (v3) / `bbr2_main` (v2alpha).
    pub fn main(&mut self, tp: &mut TcpSock, rs: &RateSample) {
        let mut ctx = Ctx::default();
        let mut update_model = true;
        self.update_round_start(tp, rs);
        if self.round_start {
            self.rounds_since_probe = (self.rounds_since_probe + 1).min(0xFF);
            self.update_ecn_alpha(tp);
        }
        self.ecn_in_round |= self.ecn_eligible && rs.is_ece;
        self.calculate_bw_sample(rs, &mut ctx);
        if self.v == Version::V3 {
            self.update_latest_delivery_signals(tp, rs, &ctx);
        }
        if !self.run_fast_path(tp, &mut update_model, rs, &ctx) {
            if update_model {
                self.update_model(tp, rs, &ctx);
            }
            self.update_gains();
            let bw = self.bw();
            self.set_pacing_rate(tp, bw, self.pacing_gain);
            self.set_cwnd(tp, rs.acked_sacked, bw, self.cwnd_gain);
            self.bound_cwnd_for_inflight_model(tp);
        }
        if self.v == Version::V3 {
            self.advance_latest_delivery_signals(rs, &ctx);
        }
        self.prev_ca_state = tp.ca_state;
        self.loss_in_cycle |= rs.lost > 0;
        self.ecn_in_cycle |= rs.delivered_ce > 0;
    }

    /// `bbr_init`.
    pub fn init(&mut self, tp: &mut TcpSock) {
        let (v, p) = (self.v, self.p);
        *self = BbrNext::new(v, p);
        self.initialized = true;
        self.init_cwnd = tp.snd_cwnd.min(0x7F);
        self.prior_cwnd = tp.prior_cwnd;
        tp.snd_ssthresh = crate::tcp::sock::TCP_INFINITE_SSTHRESH;
        self.next_rtt_delivered = tp.delivered;
        self.probe_rtt_min_us = tp.min_rtt_us;
        self.probe_rtt_min_stamp = tp.jiffies();
        self.min_rtt_us = tp.min_rtt_us;
        self.min_rtt_stamp = tp.jiffies();
        self.init_pacing_rate_from_rtt(tp);
        self.ack_epoch_mstamp = tp.tcp_mstamp_us;
        self.loss_round_delivered = tp.delivered + 1;
        tp.pacing_needed = true;
        // v3: `if (bbr_can_use_ecn(sk))`; v2alpha: `if (TCP_ECN_OK && bbr_ecn_enable)`, the same
        // test under our mapping of ecn_enable (see `can_use_ecn`).
        if can_use_ecn(tp) {
            tp.ecn_flags |= TCP_ECN_ECT_PERMANENT;
        }
    }

    /// `bbr_note_loss`.
    fn note_loss(&mut self, tp: &TcpSock) {
        if !self.loss_in_round {
            self.loss_round_delivered = tp.delivered;
        }
        self.loss_in_round = true;
        self.loss_in_cycle = true;
    }

    /// `bbr_skb_marked_lost`: while probing, did the flight up to this lost skb lose more
    /// than loss_thresh? Then cut inflight_hi at the packet where it crossed.
    pub fn skb_marked_lost(&mut self, tp: &mut TcpSock, skb: &Skb) {
        self.note_loss(tp);
        if !self.bw_probe_samples {
            return;
        }
        if skb.tx_delivered_mstamp_us == 0 {
            return; // SACKed or already used
        }
        let mut rs = RateSample {
            tx_in_flight: skb.tx_in_flight,
            lost: tp.lost.wrapping_sub(skb.tx_lost) as i32,
            is_app_limited: skb.tx_is_app_limited,
            ..RateSample::default()
        };
        if self.is_inflight_too_high(&rs) {
            rs.tx_in_flight = self.inflight_hi_from_lost_skb(&rs, 1);
            self.handle_inflight_too_high(tp, &rs);
        }
    }

    /// `bbr_run_loss_probe_recovery` (v3).
    fn run_loss_probe_recovery(&mut self, tp: &mut TcpSock) {
        self.note_loss(tp);
        if !self.bw_probe_samples {
            return;
        }
        let rs = RateSample {
            lost: 1,
            tx_in_flight: self.inflight_latest + 1,
            // tp->tlp_orig_data_app_limited: not tracked by the core; the flow's state now.
            is_app_limited: tp.app_limited != 0,
            ..RateSample::default()
        };
        if self.is_inflight_too_high(&rs) {
            self.handle_inflight_too_high(tp, &rs);
        }
    }

    /// `bbr_undo_cwnd`: revert the short-term model saved at `ssthresh`.
    pub fn undo_cwnd(&mut self) -> u32 {
        self.reset_full_bw();
        self.loss_in_round = false;
        self.bw_lo = self.bw_lo.max(self.undo_bw_lo);
        self.inflight_lo = self.inflight_lo.max(self.undo_inflight_lo);
        self.inflight_hi = self.inflight_hi.max(self.undo_inflight_hi);
        self.try_fast_path = false;
        self.prior_cwnd
    }

    /// `bbr_ssthresh`: save cwnd and the bounds for undo; ssthresh unchanged.
    pub fn ssthresh(&mut self, tp: &TcpSock) -> u32 {
        self.save_cwnd(tp);
        self.undo_bw_lo = self.bw_lo;
        self.undo_inflight_lo = self.inflight_lo;
        self.undo_inflight_hi = self.inflight_hi;
        tp.snd_ssthresh
    }

    /// `bbr_set_state` / `bbr2_set_state`: an RTO resets the full-bw detector and seeds
    /// inflight_lo; leaving Loss restores the saved cwnd (`bbr_exit_loss_recovery`).
    pub fn set_state(&mut self, tp: &mut TcpSock, new_state: CaState) {
        if new_state == CaState::Loss {
            self.prev_ca_state = CaState::Loss;
            match self.v {
                Version::V3 => self.reset_full_bw(),
                Version::V2 => self.full_bw = 0,
            }
            if !self.is_probing_bandwidth() && self.inflight_lo == NONE {
                self.inflight_lo = match self.v {
                    Version::V3 => tp.snd_cwnd.max(self.prior_cwnd),
                    Version::V2 => self.prior_cwnd,
                };
            }
        } else if self.prev_ca_state == CaState::Loss && new_state != CaState::Loss {
            self.exit_loss_recovery(tp);
        }
    }

    /// `bbr_cwnd_event` + `bbr_cwnd_event_tx_start`.
    pub fn cwnd_event(&mut self, tp: &mut TcpSock, event: CaEvent) {
        match event {
            CaEvent::TxStart if tp.app_limited != 0 => {
                self.idle_restart = true;
                self.ack_epoch_mstamp = tp.tcp_mstamp_us;
                self.ack_epoch_acked = 0;
                if self.mode == Mode::ProbeBw {
                    let bw = self.bw();
                    self.set_pacing_rate(tp, bw, BBR_UNIT);
                } else if self.mode == Mode::ProbeRtt {
                    self.check_probe_rtt_done(tp);
                }
            }
            CaEvent::TlpRecovery if self.v == Version::V3 && self.p.loss_probe_recovery => {
                self.run_loss_probe_recovery(tp);
            }
            // CA_EVENT_ECN_IS_CE / NO_CE: the receiving socket's dctcp_ece_ack_update (precise
            // ECE); our receivers apply it themselves when the flow's ecn is "low" (tcp/ecn.rs),
            // and senders never get these events.
            _ => {}
        }
    }

    /// `bbr_tso_segs`: skb size at transmit within the device's 64 KiB.
    pub fn tso_segs(&self, tp: &TcpSock, mss_now: u32) -> u32 {
        self.tso_segs_generic(tp, mss_now, GSO_LEGACY_MAX_SIZE)
    }
}

/// The ops table: `tcp_bbr2_cong_ops` ("bbr2", v2alpha) or `tcp_bbr_cong_ops` ("bbr3", v3).
impl CongestionControl for BbrNext {
    fn name(&self) -> &'static str {
        match self.v {
            Version::V2 => "bbr2",
            Version::V3 => "bbr3",
        }
    }
    /// `bbr_init` / `bbr2_init`.
    fn init(&mut self, tp: &mut TcpSock) {
        BbrNext::init(self, tp);
    }
    /// `bbr_ssthresh` / `bbr2_ssthresh`.
    fn ssthresh(&mut self, tp: &mut TcpSock) -> u32 {
        BbrNext::ssthresh(self, tp)
    }
    /// `bbr_undo_cwnd` / `bbr2_undo_cwnd`.
    fn undo_cwnd(&mut self, _tp: &mut TcpSock) -> u32 {
        BbrNext::undo_cwnd(self)
    }
    /// `bbr_set_state` / `bbr2_set_state`.
    fn set_state(&mut self, tp: &mut TcpSock, new_state: CaState) {
        BbrNext::set_state(self, tp, new_state);
    }
    /// `bbr_cwnd_event` (+ `bbr_cwnd_event_tx_start`).
    fn cwnd_event(&mut self, tp: &mut TcpSock, event: CaEvent) {
        BbrNext::cwnd_event(self, tp, event);
    }
    /// `bbr_skb_marked_lost` / `bbr2_skb_marked_lost`.
    fn skb_marked_lost(&mut self, tp: &mut TcpSock, skb: &Skb) {
        BbrNext::skb_marked_lost(self, tp, skb);
    }
    /// `bbr_tso_segs`.
    fn tso_segs(&self, tp: &TcpSock, mss_now: u32) -> Option<u32> {
        Some(BbrNext::tso_segs(self, tp, mss_now))
    }
    fn has_cong_control(&self) -> bool {
        true
    }
    /// `bbr_main` / `bbr2_main`.
    fn cong_control(&mut self, tp: &mut TcpSock, _ack: u64, _flag: u32, rs: &RateSample) {
        self.main(tp, rs);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sock() -> TcpSock {
        let mut tp = TcpSock::new(1448, 10, u32::MAX, 250);
        tp.tcp_mstamp_us = 1;
        tp
    }

    #[test]
    fn inflight_hi_from_lost_skb_finds_the_crossing_packet() {
        let p = super::super::bbr3::default_params();
        let b = BbrNext::new(Version::V3, p);
        // 100 in flight before this skb, 1 lost before it: budget ceil(100 * 5/256) = 2, so
        // the prefix is (2 - 1) / (1 - 5/256) = 1.02 -> 1 packet: inflight_hi 101.
        let rs = RateSample {
            tx_in_flight: 101,
            lost: 2,
            ..RateSample::default()
        };
        assert_eq!(b.inflight_hi_from_lost_skb(&rs, 1), 101);
        // Losses already over budget before the skb: inflight_hi is the inflight before it.
        let rs = RateSample {
            tx_in_flight: 101,
            lost: 10,
            ..RateSample::default()
        };
        assert_eq!(b.inflight_hi_from_lost_skb(&rs, 1), 100);
    }

    #[test]
    fn loss_rate_above_two_percent_is_too_high() {
        let b = BbrNext::new(Version::V3, super::super::bbr3::default_params());
        let rs = |lost, inflight| RateSample {
            lost,
            tx_in_flight: inflight,
            ..RateSample::default()
        };
        assert!(!b.is_inflight_too_high(&rs(1, 100))); // 1 % <= 100 * 5/256 = 1.95
        assert!(!b.is_inflight_too_high(&rs(1, 52)));
        assert!(b.is_inflight_too_high(&rs(2, 100))); // 2 % > 1.95
        assert!(b.is_inflight_too_high(&rs(5, 100)));
    }

    #[test]
    fn loss_cuts_lower_bounds_by_beta_not_below_latest() {
        let mut tp = sock();
        tp.snd_cwnd = 100;
        let mut b = BbrNext::new(Version::V3, super::super::bbr3::default_params());
        b.bw_hi = [1000, 0];
        b.mode = Mode::ProbeBw;
        b.cycle_idx = BW_PROBE_CRUISE;
        b.loss_in_round = true;
        b.inflight_latest = 10;
        b.bw_latest = 10;
        b.adapt_lower_bounds(&tp);
        assert_eq!(b.inflight_lo, 100 * (256 - 76) / 256); // 0.7 x cwnd
        assert_eq!(b.bw_lo, 1000 * (256 - 76) / 256);
        b.inflight_latest = 90; // this round delivered 90: no cut below it
        b.adapt_lower_bounds(&tp);
        assert_eq!(b.inflight_lo, 90);
    }

    #[test]
    fn probe_rtt_cwnd_is_half_the_bdp() {
        let mut b = BbrNext::new(Version::V3, super::super::bbr3::default_params());
        b.min_rtt_us = 100_000;
        b.bw_hi = [(BW_UNIT / 1000) as u32, 0]; // 1000 pkt/s: BDP 100
        assert_eq!(b.probe_rtt_cwnd(), 50);
    }

    #[test]
    fn too_much_loss_in_probe_up_cuts_inflight_hi_by_beta_and_stops_probing() {
        let mut tp = sock();
        tp.snd_cwnd = 200;
        let mut b = BbrNext::new(Version::V3, super::super::bbr3::default_params());
        b.min_rtt_us = 100_000;
        b.bw_hi = [(BW_UNIT / 1000) as u32, 0]; // 1000 pkt/s: BDP 100
        b.full_bw_reached = true;
        b.mode = Mode::ProbeBw;
        b.cycle_idx = BW_PROBE_UP;
        b.bw_probe_samples = true;
        b.inflight_hi = 150;
        // 5 of 60 in flight lost: 8 % > 2 %. The flight carried 60 < 0.7 x target, the target
        // being BDP 100 + 2 (the PROBE_UP quantization allowance): inflight_hi = 0.7 x 102
        // (beta 76/256), and PROBE_UP ends (DOWN, no more probe samples).
        let rs = RateSample {
            lost: 5,
            tx_in_flight: 60,
            ..RateSample::default()
        };
        assert!(!b.adapt_upper_bounds(&mut tp, &rs));
        assert_eq!(b.inflight_hi, 102 * (256 - 76) / 256);
        assert_eq!(b.cycle_idx, BW_PROBE_DOWN);
        assert!(b.prev_probe_too_high && !b.bw_probe_samples);
        assert_eq!(b.inflight_too_high_events, 1);
        // The next lossy sample no longer counts: one reaction per probe.
        b.adapt_upper_bounds(&mut tp, &rs);
        assert_eq!(b.inflight_too_high_events, 1);
        // Below the threshold (1 of 100) a sample carrying more than inflight_hi raises it.
        let ok = RateSample {
            lost: 1,
            tx_in_flight: 120,
            ..RateSample::default()
        };
        b.adapt_upper_bounds(&mut tp, &ok);
        assert_eq!(b.inflight_hi, 120);
    }
}

/// `bbr_can_use_ecn` (v3): ECN negotiated (`TCP_ECN_OK`) on a route with the `ecn_low` feature
/// (`TCP_ECN_LOW`), i.e. the flow's `ecn = "low"`. v2alpha gates the same code with its global
/// module parameter `ecn_enable` (default off, "for DCTCP/L4S-style marks"); we diverge and tie
/// it to the flow's `ecn = "low"` too, so one setting means one thing for both versions.
fn can_use_ecn(tp: &TcpSock) -> bool {
    tp.ecn_flags & (TCP_ECN_OK | TCP_ECN_LOW) == TCP_ECN_OK | TCP_ECN_LOW
}

#[cfg(test)]
#[path = "tests_bbr_ecn.rs"]
mod tests_ecn;
