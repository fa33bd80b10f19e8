//! BBR v1 (Bottleneck Bandwidth and RTT), as Linux 6.18 implements it in `net/ipv4/tcp_bbr.c`
//! (checked against the 6.19.4 file, whose only change is that `CA_EVENT_TX_START` became its
//! own hook, `cwnd_event_tx_start`).
//!
//! BBR builds a model of the path on every ACK and sets the pacing rate and cwnd from it:
//!
//! ```text
//!   bottleneck_bw = windowed_max(delivered / elapsed, 10 packet-timed round trips)
//!   min_rtt       = windowed_min(rtt, 10 s)
//!   pacing_rate   = pacing_gain * bottleneck_bw            (minus a 1 % margin)
//!   cwnd          = max(cwnd_gain * bottleneck_bw * min_rtt + allowances, 4)
//! ```
//!
//! A flow starts in STARTUP (gain 2/ln 2 = 2.885, doubling the rate per round), leaves it when
//! the bandwidth estimate has grown less than 25 % in three rounds, DRAINs the queue it built
//! (pacing gain 1/2.885) until inflight falls to one BDP, then cycles in PROBE_BW through eight
//! phases of pacing gain 5/4, 3/4, 1, 1, 1, 1, 1, 1 (each about one min_rtt; it starts at a
//! random phase other than 3/4). When min_rtt has not been refreshed for 10 s it enters
//! PROBE_RTT: cwnd 4 for at least 200 ms and one round, then back. Loss does not cut the model;
//! in recovery BBR conserves packets for one round, and it detects token-bucket policers (the
//! long-term "lt" bandwidth).
//!
//! The delivery-rate samples (`RateSample`) come from the core's port of `net/ipv4/tcp_rate.c`
//! and the pacing from its EDT pacing with the per-socket pacing timer (`tcp_pacing_check`),
//! which is what Linux uses for BBR when there is no fq qdisc, as on this machine.
//!
//! Each function names its kernel counterpart; fields keep the kernel's names and units
//! (bandwidth in packets per microsecond << 24, gains in 1/256).
//!
//! Divergences: segments leave in GSO bursts of `bbr_tso_segs` (the core paces per skb, as
//! Linux does), but each segment is its own packet on the links, as after software GSO. `MAX_TCP_HEADER` is taken as 320 bytes
//! (x86-64), which matters only above ~4 Gbit/s. `rs.is_ack_delayed` is never set by our core.
//! The gains and windows that Linux hard-codes are tunables here (defaults = Linux's constants).

use super::params::ParamReader;
use super::{after, before, Params, RateSample};
use super::{AlgorithmInfo, CaEvent, CaState, CcError, CongestionControl, ParamInfo, ParamValue};
use crate::tcp::minmax::MinMax;
use crate::tcp::sock::TcpSock;

/// Scale of bandwidth in packets per microsecond (`BW_SCALE`): 1 unit ~ 715 bit/s at 1500 B.
pub const BW_SCALE: u32 = 24;
/// `BW_UNIT`.
pub const BW_UNIT: u64 = 1 << BW_SCALE;
/// Scale of gains and fractions (`BBR_SCALE`).
pub const BBR_SCALE: u32 = 8;
/// `BBR_UNIT`: a gain of 1.0.
pub const BBR_UNIT: u32 = 1 << BBR_SCALE;

/// Phases in the PROBE_BW gain cycle (`CYCLE_LEN`).
const CYCLE_LEN: u32 = 8;
/// Pacing gains of the PROBE_BW cycle (`bbr_pacing_gain`): probe, drain, then cruise.
const PACING_GAIN: [u32; CYCLE_LEN as usize] = [
    BBR_UNIT * 5 / 4,
    BBR_UNIT * 3 / 4,
    BBR_UNIT,
    BBR_UNIT,
    BBR_UNIT,
    BBR_UNIT,
    BBR_UNIT,
    BBR_UNIT,
];
/// Window of the max-bandwidth filter, in rounds (`bbr_bw_rtts` = CYCLE_LEN + 2).
const BW_RTTS: u32 = CYCLE_LEN + 2;
/// Below this pacing rate (bit/s) use 1-segment TSO bursts (`bbr_min_tso_rate`).
const MIN_TSO_RATE_BPS: u64 = 1_200_000;
/// Pace this many percent below the estimated bandwidth (`bbr_pacing_margin_percent`).
const PACING_MARGIN_PERCENT: u64 = 1;
/// `TCP_INIT_CWND`.
const TCP_INIT_CWND: u32 = 10;
/// Bandwidth growth that counts as "still growing" in STARTUP: 1.25x (`bbr_full_bw_thresh`).
const FULL_BW_THRESH: u32 = BBR_UNIT * 5 / 4;
/// Rounds without such growth before the pipe is full (`bbr_full_bw_cnt`).
const FULL_BW_CNT: u32 = 3;
/// Minimum rounds in a long-term sampling interval (`bbr_lt_intvl_min_rtts`).
const LT_INTVL_MIN_RTTS: u32 = 4;
/// Loss rate (lost/delivered, in 1/256) above which an interval is lossy: 50/256 ~ 20 %
/// (`bbr_lt_loss_thresh`).
const LT_LOSS_THRESH: u32 = 50;
/// Two intervals' bandwidths are consistent within 1/8 (`bbr_lt_bw_ratio`) ...
const LT_BW_RATIO: u32 = BBR_UNIT / 8;
/// ... or within 4 kbit/s, in bytes per second (`bbr_lt_bw_diff`).
const LT_BW_DIFF: u64 = 4000 / 8;
/// Rounds to keep using the policed rate (`bbr_lt_bw_max_rtts`).
const LT_BW_MAX_RTTS: u32 = 48;
/// Max allowed `ack_epoch_acked` before the sampling epoch resets
/// (`bbr_ack_epoch_acked_reset_thresh`).
const ACK_EPOCH_ACKED_RESET_THRESH: u32 = 1 << 20;
/// Cap on the aggregation allowance, us of bandwidth (`bbr_extra_acked_max_us`).
const EXTRA_ACKED_MAX_US: u64 = 100 * 1000;
/// `GSO_MAX_SIZE` (BIG TCP: 8 * 64 KiB) used by `bbr_tso_segs_goal`.
const GSO_MAX_SIZE: u64 = 8 * 65536;
/// `sk_gso_max_size` of a TUN or veth device (`GSO_LEGACY_MAX_SIZE`).
const DEVICE_GSO_MAX_SIZE: u64 = 65536;
/// `MAX_TCP_HEADER` on x86-64 (see the divergence note above).
const MAX_TCP_HEADER: u64 = 320;

/// Tunables: Linux's constants, with their names minus the `bbr_` prefix.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BbrParams {
    /// STARTUP pacing and cwnd gain, 1/256 units (`bbr_high_gain` = 256 * 2885 / 1000 + 1).
    pub high_gain: u32,
    /// DRAIN pacing gain, 1/256 (`bbr_drain_gain` = 256 * 1000 / 2885).
    pub drain_gain: u32,
    /// PROBE_BW cwnd gain, 1/256 (`bbr_cwnd_gain` = 2.0).
    pub cwnd_gain: u32,
    /// Window of the min_rtt filter, s (`bbr_min_rtt_win_sec`).
    pub min_rtt_win_sec: u32,
    /// Minimum time at 4 packets in PROBE_RTT, ms (`bbr_probe_rtt_mode_ms`; 0 = never probe).
    pub probe_rtt_mode_ms: u32,
    /// Minimum cwnd target, packets (`bbr_cwnd_min_target`).
    pub cwnd_min_target: u32,
    /// Gain on the ACK-aggregation allowance, 1/256 (`bbr_extra_acked_gain`; 0 = off).
    pub extra_acked_gain: u32,
    /// Window of the aggregation filter, rounds (`bbr_extra_acked_win_rtts`).
    pub extra_acked_win_rtts: u32,
    /// Randomise the first PROBE_BW phase over this many phases (`bbr_cycle_rand`).
    pub cycle_rand: u32,
}

impl Default for BbrParams {
    fn default() -> Self {
        BbrParams {
            high_gain: BBR_UNIT * 2885 / 1000 + 1,
            drain_gain: BBR_UNIT * 1000 / 2885,
            cwnd_gain: BBR_UNIT * 2,
            min_rtt_win_sec: 10,
            probe_rtt_mode_ms: 200,
            cwnd_min_target: 4,
            extra_acked_gain: BBR_UNIT,
            extra_acked_win_rtts: 5,
            cycle_rand: 7,
        }
    }
}

const SOURCE: &str = "Linux 6.18 net/ipv4/tcp_bbr.c (BBR v1)";

/// What `cclab presets` lists for BBR.
pub fn info() -> AlgorithmInfo {
    let d = BbrParams::default();
    let int = |v: u32| ParamValue::Int(v as i64);
    AlgorithmInfo {
        name: "bbr",
        base: "bbr",
        description: "BBR v1: paces at the max recent delivery rate, cwnd 2 BDP, gain cycling, \
                      ProbeRTT every 10 s",
        source: SOURCE,
        params: vec![
            ParamInfo {
                name: "high_gain",
                default: int(d.high_gain),
                doc: "STARTUP pacing/cwnd gain in 1/256 (739 = 2.89 = 2/ln 2); 257..1023",
            },
            ParamInfo {
                name: "drain_gain",
                default: int(d.drain_gain),
                doc: "DRAIN pacing gain in 1/256 (88 = 1/2.885); 1..256",
            },
            ParamInfo {
                name: "cwnd_gain",
                default: int(d.cwnd_gain),
                doc: "PROBE_BW cwnd gain in 1/256 (512 = 2.0); 256..1023",
            },
            ParamInfo {
                name: "min_rtt_win_sec",
                default: int(d.min_rtt_win_sec),
                doc: "min_rtt filter window, seconds: ProbeRTT when it expires; 1..3600",
            },
            ParamInfo {
                name: "probe_rtt_mode_ms",
                default: int(d.probe_rtt_mode_ms),
                doc: "time held at cwnd_min_target in PROBE_RTT, ms; 0 disables PROBE_RTT; \
                      0..10000",
            },
            ParamInfo {
                name: "cwnd_min_target",
                default: int(d.cwnd_min_target),
                doc: "minimum cwnd and the PROBE_RTT cwnd, packets; 1..1000",
            },
            ParamInfo {
                name: "extra_acked_gain",
                default: int(d.extra_acked_gain),
                doc: "gain on the ACK-aggregation cwnd allowance in 1/256; 0 = off; 0..1023",
            },
            ParamInfo {
                name: "extra_acked_win_rtts",
                default: int(d.extra_acked_win_rtts),
                doc: "window of the ACK-aggregation filter, rounds; 1..31",
            },
            ParamInfo {
                name: "cycle_rand",
                default: int(d.cycle_rand),
                doc: "randomise the first PROBE_BW phase over this many phases; 1..7",
            },
        ],
        preset_params: Params::new(),
    }
}

/// Build BBR with `params` checked against the ranges `info()` documents.
pub fn build(algorithm: &str, params: &Params) -> Result<Box<dyn CongestionControl>, CcError> {
    let r = ParamReader::new(algorithm, params);
    let d = BbrParams::default();
    let get = |name: &str, def: u32, lo: i64, hi: i64| -> Result<u32, CcError> {
        Ok(r.int(name, def as i64, lo, hi)? as u32)
    };
    let p = BbrParams {
        high_gain: get("high_gain", d.high_gain, 257, 1023)?,
        drain_gain: get("drain_gain", d.drain_gain, 1, 256)?,
        cwnd_gain: get("cwnd_gain", d.cwnd_gain, 256, 1023)?,
        min_rtt_win_sec: get("min_rtt_win_sec", d.min_rtt_win_sec, 1, 3600)?,
        probe_rtt_mode_ms: get("probe_rtt_mode_ms", d.probe_rtt_mode_ms, 0, 10_000)?,
        cwnd_min_target: get("cwnd_min_target", d.cwnd_min_target, 1, 1000)?,
        extra_acked_gain: get("extra_acked_gain", d.extra_acked_gain, 0, 1023)?,
        extra_acked_win_rtts: get("extra_acked_win_rtts", d.extra_acked_win_rtts, 1, 31)?,
        cycle_rand: get("cycle_rand", d.cycle_rand, 1, 7)?,
    };
    Ok(Box::new(Bbr::new(p)))
}

/// BBR's modes (`enum bbr_mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Ramp up the sending rate rapidly to fill the pipe.
    Startup,
    /// Drain the queue created in STARTUP.
    Drain,
    /// Discover and share bandwidth: pace around the estimate, cycling the gain.
    ProbeBw,
    /// Cut inflight to the minimum to probe min_rtt.
    ProbeRtt,
}

/// BBR's private state (`struct bbr`).
#[derive(Debug, Clone)]
pub struct Bbr {
    p: BbrParams,
    /// Min RTT in the min_rtt_win_sec window, us.
    pub min_rtt_us: u32,
    /// Jiffies when min_rtt_us was taken.
    min_rtt_stamp: u32,
    /// End time of PROBE_RTT, jiffies (0 = not yet set).
    probe_rtt_done_stamp: u32,
    /// Max recent delivery rate, packets/us << 24.
    bw: MinMax,
    /// Packet-timed rounds elapsed.
    pub rtt_cnt: u32,
    /// `tp->delivered` at the end of the current round.
    next_rtt_delivered: u32,
    /// Start of the current gain-cycle phase, us.
    cycle_mstamp: u64,
    /// Current mode.
    pub mode: Mode,
    /// CA state on the previous ACK.
    prev_ca_state: CaState,
    /// Use packet conservation (first round of recovery)?
    packet_conservation: bool,
    /// Start of a packet-timed round on this ACK?
    round_start: bool,
    /// Restarting after idle?
    idle_restart: bool,
    /// A PROBE_RTT round at cwnd_min_target is done?
    probe_rtt_round_done: bool,
    /// Taking long-term samples now?
    lt_is_sampling: bool,
    /// Rounds in the long-term interval (7 bits in Linux).
    lt_rtt_cnt: u32,
    /// Use lt_bw as the bandwidth estimate (policer detected)?
    pub lt_use_bw: bool,
    /// Long-term delivery rate, packets/us << 24.
    lt_bw: u32,
    /// `tp->delivered` at the start of the lt interval.
    lt_last_delivered: u32,
    /// `tp->delivered_mstamp` at the start of the lt interval, ms.
    lt_last_stamp: u32,
    /// `tp->lost` at the start of the lt interval.
    lt_last_lost: u32,
    /// Current pacing gain, 1/256.
    pub pacing_gain: u32,
    /// Current cwnd gain, 1/256.
    pub cwnd_gain: u32,
    /// STARTUP has filled the pipe?
    full_bw_reached: bool,
    /// Rounds without large bandwidth growth (2 bits).
    full_bw_cnt: u32,
    /// Index in the pacing gain cycle (3 bits).
    pub cycle_idx: u32,
    /// Have we seen an RTT sample yet?
    has_seen_rtt: bool,
    /// cwnd before loss recovery or PROBE_RTT, packets.
    prior_cwnd: u32,
    /// Recent bandwidth, to estimate whether the pipe is full.
    full_bw: u32,
    /// Start of the ACK-aggregation sampling epoch, us.
    ack_epoch_mstamp: u64,
    /// Max excess data ACKed in each of the two epochs, packets (u16 in Linux).
    extra_acked: [u16; 2],
    /// Packets (S)ACKed in the sampling epoch (20 bits).
    ack_epoch_acked: u32,
    /// Age of extra_acked, rounds (5 bits).
    extra_acked_win_rtts: u32,
    /// Current index in extra_acked.
    extra_acked_win_idx: usize,
}

impl Bbr {
    /// A BBR instance; `init` sets it up on the socket.
    pub fn new(p: BbrParams) -> Self {
        Bbr {
            p,
            min_rtt_us: u32::MAX,
            min_rtt_stamp: 0,
            probe_rtt_done_stamp: 0,
            bw: MinMax::default(),
            rtt_cnt: 0,
            next_rtt_delivered: 0,
            cycle_mstamp: 0,
            mode: Mode::Startup,
            prev_ca_state: CaState::Open,
            packet_conservation: false,
            round_start: false,
            idle_restart: false,
            probe_rtt_round_done: false,
            lt_is_sampling: false,
            lt_rtt_cnt: 0,
            lt_use_bw: false,
            lt_bw: 0,
            lt_last_delivered: 0,
            lt_last_stamp: 0,
            lt_last_lost: 0,
            pacing_gain: p.high_gain,
            cwnd_gain: p.high_gain,
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
        }
    }
}

mod model;
mod pacing;
#[cfg(test)]
mod tests;

impl CongestionControl for Bbr {
    fn name(&self) -> &'static str {
        "bbr"
    }

    /// `bbr_init`; asks the core for internal pacing (`SK_PACING_NEEDED`).
    fn init(&mut self, tp: &mut TcpSock) {
        self.prior_cwnd = 0;
        tp.snd_ssthresh = crate::tcp::sock::TCP_INFINITE_SSTHRESH;
        self.rtt_cnt = 0;
        self.next_rtt_delivered = tp.delivered;
        self.prev_ca_state = CaState::Open;
        self.packet_conservation = false;
        self.probe_rtt_done_stamp = 0;
        self.probe_rtt_round_done = false;
        self.min_rtt_us = tp.min_rtt_us;
        self.min_rtt_stamp = tp.jiffies();
        self.bw.reset(self.rtt_cnt, 0); // init max bw to 0
        self.has_seen_rtt = false;
        self.init_pacing_rate_from_rtt(tp);
        self.round_start = false;
        self.idle_restart = false;
        self.full_bw_reached = false;
        self.full_bw = 0;
        self.full_bw_cnt = 0;
        self.cycle_mstamp = 0;
        self.cycle_idx = 0;
        self.reset_lt_bw_sampling(tp);
        self.mode = Mode::Startup;
        self.pacing_gain = self.p.high_gain;
        self.cwnd_gain = self.p.high_gain;
        self.ack_epoch_mstamp = tp.tcp_mstamp_us;
        self.ack_epoch_acked = 0;
        self.extra_acked_win_rtts = 0;
        self.extra_acked_win_idx = 0;
        self.extra_acked = [0; 2];
        tp.pacing_needed = true;
    }

    /// `bbr_ssthresh`: entering loss recovery, save cwnd; ssthresh is left as it is.
    fn ssthresh(&mut self, tp: &mut TcpSock) -> u32 {
        self.save_cwnd(tp);
        tp.snd_ssthresh
    }

    /// `bbr_undo_cwnd`: a spurious slow-down; reset full-pipe and policer detection.
    fn undo_cwnd(&mut self, tp: &mut TcpSock) -> u32 {
        self.full_bw = 0;
        self.full_bw_cnt = 0;
        self.reset_lt_bw_sampling(tp);
        tp.snd_cwnd
    }

    /// `bbr_set_state`: an RTO ends the round and counts as a loss for policer detection.
    fn set_state(&mut self, tp: &mut TcpSock, new_state: CaState) {
        if new_state == CaState::Loss {
            let rs = RateSample {
                losses: 1,
                ..RateSample::default()
            };
            self.prev_ca_state = CaState::Loss;
            self.full_bw = 0;
            self.round_start = true; // treat RTO like end of a round
            self.lt_bw_sampling(tp, &rs);
        }
    }

    /// `bbr_cwnd_event_tx_start` (`CA_EVENT_TX_START` in 6.18): restarting from idle.
    fn cwnd_event(&mut self, tp: &mut TcpSock, event: CaEvent) {
        if event != CaEvent::TxStart || tp.app_limited == 0 {
            return;
        }
        self.idle_restart = true;
        self.ack_epoch_mstamp = tp.tcp_mstamp_us;
        self.ack_epoch_acked = 0;
        // Pace at the estimate if we don't need more speed (restarting from idle).
        if self.mode == Mode::ProbeBw {
            let bw = self.bw();
            self.set_pacing_rate(tp, bw, BBR_UNIT);
        } else if self.mode == Mode::ProbeRtt {
            self.check_probe_rtt_done(tp);
        }
    }

    /// `bbr_tso_segs`: the skb size at transmit, within the device's 64 KiB `sk_gso_max_size`.
    fn tso_segs(&self, tp: &TcpSock, mss_now: u32) -> Option<u32> {
        Some(Self::tso_segs_generic(tp, mss_now, DEVICE_GSO_MAX_SIZE))
    }

    fn has_cong_control(&self) -> bool {
        true
    }

    /// `bbr_sndbuf_expand`: room for 3 windows (pacing may send more than one window).
    fn sndbuf_expand(&self) -> u32 {
        3
    }

    /// `bbr_main`: update the model, then pacing rate and cwnd.
    fn cong_control(&mut self, tp: &mut TcpSock, _ack: u64, _flag: u32, rs: &RateSample) {
        self.update_model(tp, rs);
        let bw = self.bw();
        self.set_pacing_rate(tp, bw, self.pacing_gain);
        self.set_cwnd(tp, rs, rs.acked_sacked, bw, self.cwnd_gain);
    }
}
