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
    after, before, CaEvent, CaState, CcError, CongestionControl, ParamInfo, ParamValue, Params,
    RateSample,
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

mod bounds;
mod hooks;
mod model;
mod pacing;
mod params;
mod probe_bw;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_ecn;

pub use params::{Knob, NextParams};

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
    #[inline]
    pub fn max_bw(&self) -> u32 {
        self.bw_hi[0].max(self.bw_hi[1])
    }

    /// `bbr_bw`: the estimate in use, min(max_bw, bw_lo).
    #[inline]
    pub fn bw(&self) -> u32 {
        self.max_bw().min(self.bw_lo)
    }

    /// `bbr_extra_acked`.
    #[inline]
    fn extra_acked(&self) -> u32 {
        self.extra_acked[0].max(self.extra_acked[1])
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
    /// `bbr_sndbuf_expand` (google/bbr v2alpha and v3): 3 windows.
    fn sndbuf_expand(&self) -> u32 {
        3
    }
    /// `bbr_main` / `bbr2_main`.
    fn cong_control(&mut self, tp: &mut TcpSock, _ack: u64, _flag: u32, rs: &RateSample) {
        self.main(tp, rs);
    }
}

/// `bbr_can_use_ecn` (v3): ECN negotiated (`TCP_ECN_OK`) on a route with the `ecn_low` feature
/// (`TCP_ECN_LOW`), i.e. the flow's `ecn = "low"`. v2alpha gates the same code with its global
/// module parameter `ecn_enable` (default off, "for DCTCP/L4S-style marks"); we diverge and tie
/// it to the flow's `ecn = "low"` too, so one setting means one thing for both versions.
fn can_use_ecn(tp: &TcpSock) -> bool {
    tp.ecn_flags & (TCP_ECN_OK | TCP_ECN_LOW) == TCP_ECN_OK | TCP_ECN_LOW
}
