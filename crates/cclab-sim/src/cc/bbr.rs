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
use super::{AlgorithmInfo, CaEvent, CaState, CcError, CongestionControl, ParamInfo, ParamValue};
use super::{Params, RateSample};
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

/// `after(a, b)` on 32-bit wrapping counters (include/net/tcp.h).
fn after(a: u32, b: u32) -> bool {
    (b.wrapping_sub(a) as i32) < 0
}

/// `before(a, b)`.
fn before(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) < 0
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

    /// `bbr_max_bw`: windowed max recent bandwidth, packets/us << 24.
    pub fn max_bw(&self) -> u32 {
        self.bw.get()
    }

    /// `bbr_bw`: the estimate in use (the policed rate when one was detected).
    pub fn bw(&self) -> u32 {
        if self.lt_use_bw {
            self.lt_bw
        } else {
            self.max_bw()
        }
    }

    /// `bbr_extra_acked`: max extra acked in the past k..2k rounds.
    fn extra_acked(&self) -> u32 {
        self.extra_acked[0].max(self.extra_acked[1]) as u32
    }

    /// `bbr_rate_bytes_per_sec`: a rate in packets/us << 24 times a gain, in bytes per second
    /// less the pacing margin (ordered to avoid u64 overflow, as in Linux).
    fn rate_bytes_per_sec(tp: &TcpSock, rate: u64, gain: u32) -> u64 {
        let mut rate = rate * tp.mss_cache as u64;
        rate *= gain as u64;
        rate >>= BBR_SCALE;
        rate *= 1_000_000 / 100 * (100 - PACING_MARGIN_PERCENT);
        rate >> BW_SCALE
    }

    /// `bbr_bw_to_pacing_rate`.
    fn bw_to_pacing_rate(tp: &TcpSock, bw: u32, gain: u32) -> u64 {
        Self::rate_bytes_per_sec(tp, bw as u64, gain).min(tp.max_pacing_rate_bytes_per_s)
    }

    /// `bbr_init_pacing_rate_from_rtt`: high_gain * cwnd / RTT (1 ms before any RTT sample).
    fn init_pacing_rate_from_rtt(&mut self, tp: &mut TcpSock) {
        let rtt_us = if tp.srtt_us != 0 {
            self.has_seen_rtt = true;
            (tp.srtt_us >> 3).max(1)
        } else {
            1000
        };
        let bw = tp.snd_cwnd as u64 * BW_UNIT / rtt_us as u64;
        tp.pacing_rate_bytes_per_s = Self::bw_to_pacing_rate(tp, bw as u32, self.p.high_gain);
    }

    /// `bbr_set_pacing_rate`: never lower the rate before the pipe is full.
    fn set_pacing_rate(&mut self, tp: &mut TcpSock, bw: u32, gain: u32) {
        let rate = Self::bw_to_pacing_rate(tp, bw, gain);
        if !self.has_seen_rtt && tp.srtt_us != 0 {
            self.init_pacing_rate_from_rtt(tp);
        }
        if self.full_bw_reached || rate > tp.pacing_rate_bytes_per_s {
            tp.pacing_rate_bytes_per_s = rate;
        }
    }

    /// `bbr_min_tso_segs`.
    fn min_tso_segs(tp: &TcpSock) -> u64 {
        if tp.pacing_rate_bytes_per_s < (MIN_TSO_RATE_BPS >> 3) {
            1
        } else {
            2
        }
    }

    /// `bbr_tso_segs_generic`: a burst of about 1 ms at the pacing rate, within `gso_max_size`.
    fn tso_segs_generic(tp: &TcpSock, mss_now: u32, gso_max_size: u64) -> u32 {
        let bytes =
            (tp.pacing_rate_bytes_per_s >> tp.pacing_shift).min(gso_max_size - 1 - MAX_TCP_HEADER);
        (bytes / mss_now as u64).max(Self::min_tso_segs(tp)) as u32
    }

    /// `bbr_tso_segs_goal`: segments per TSO burst at this pacing rate (GSO_MAX_SIZE bound).
    fn tso_segs_goal(tp: &TcpSock) -> u32 {
        Self::tso_segs_generic(tp, tp.mss_cache, GSO_MAX_SIZE)
    }

    /// `bbr_save_cwnd`: remember the last good cwnd before recovery or PROBE_RTT.
    fn save_cwnd(&mut self, tp: &TcpSock) {
        if self.prev_ca_state < CaState::Recovery && self.mode != Mode::ProbeRtt {
            self.prior_cwnd = tp.snd_cwnd;
        } else {
            self.prior_cwnd = self.prior_cwnd.max(tp.snd_cwnd);
        }
    }

    /// `bbr_bdp`: ceil(bw * min_rtt * gain), or the initial window before any RTT sample.
    fn bdp(&self, bw: u32, gain: u32) -> u32 {
        if self.min_rtt_us == u32::MAX {
            return TCP_INIT_CWND;
        }
        let w = bw as u64 * self.min_rtt_us as u64;
        (((w * gain as u64) >> BBR_SCALE).div_ceil(BW_UNIT)) as u32
    }

    /// `bbr_quantization_budget`: room for TSO bursts in flight at both ends, an even cwnd,
    /// and +2 in the probing phase so small BDPs still probe.
    fn quantization_budget(&self, tp: &TcpSock, cwnd: u32) -> u32 {
        let mut cwnd = cwnd + 3 * Self::tso_segs_goal(tp);
        cwnd = (cwnd + 1) & !1;
        if self.mode == Mode::ProbeBw && self.cycle_idx == 0 {
            cwnd += 2;
        }
        cwnd
    }

    /// `bbr_inflight`: the inflight target for `bw` and `gain`.
    fn inflight(&self, tp: &TcpSock, bw: u32, gain: u32) -> u32 {
        let bdp = self.bdp(bw, gain);
        self.quantization_budget(tp, bdp)
    }

    /// `bbr_packets_in_net_at_edt`: inflight expected when the next skb departs (EDT).
    fn packets_in_net_at_edt(&self, tp: &TcpSock, inflight_now: u32) -> u32 {
        let now_ns = tp.tcp_clock_cache_ns;
        let edt_ns = tp.tcp_wstamp_ns.max(now_ns);
        let interval_us = (edt_ns - now_ns) / 1000;
        let interval_delivered = ((self.bw() as u64 * interval_us) >> BW_SCALE) as u32;
        let mut inflight_at_edt = inflight_now;
        if self.pacing_gain > BBR_UNIT {
            inflight_at_edt += Self::tso_segs_goal(tp); // include EDT skb
        }
        inflight_at_edt.saturating_sub(interval_delivered)
    }

    /// `bbr_ack_aggregation_cwnd`: extra cwnd for ACK aggregation, once the pipe is full.
    fn ack_aggregation_cwnd(&self) -> u32 {
        if self.p.extra_acked_gain == 0 || !self.full_bw_reached {
            return 0;
        }
        let max_aggr_cwnd = (self.bw() as u64 * EXTRA_ACKED_MAX_US / BW_UNIT) as u32;
        let aggr_cwnd = (self.p.extra_acked_gain * self.extra_acked()) >> BBR_SCALE;
        aggr_cwnd.min(max_aggr_cwnd)
    }

    /// `bbr_set_cwnd_to_recover_or_restore`: packet conservation in the first round of
    /// recovery, restore the saved cwnd when recovery ends. Returns (cwnd, conserving).
    fn set_cwnd_to_recover_or_restore(
        &mut self,
        tp: &TcpSock,
        rs: &RateSample,
        acked: u32,
    ) -> (u32, bool) {
        let prev_state = self.prev_ca_state;
        let state = tp.ca_state;
        let mut cwnd = tp.snd_cwnd;
        // An ACK for P packets should release at most 2*P: first deduct the lost ones.
        if rs.losses > 0 {
            cwnd = (cwnd as i64 - rs.losses as i64).max(1) as u32;
        }
        if state == CaState::Recovery && prev_state != CaState::Recovery {
            // Starting the first round of Recovery: packet conservation.
            self.packet_conservation = true;
            self.next_rtt_delivered = tp.delivered; // start round now
            cwnd = tp.packets_in_flight() + acked;
        } else if prev_state >= CaState::Recovery && state < CaState::Recovery {
            // Exiting loss recovery: restore the cwnd saved before it.
            cwnd = cwnd.max(self.prior_cwnd);
            self.packet_conservation = false;
        }
        self.prev_ca_state = state;
        if self.packet_conservation {
            return (cwnd.max(tp.packets_in_flight() + acked), true);
        }
        (cwnd, false)
    }

    /// `bbr_set_cwnd`: slow-start up toward the target, or snap down to it once the pipe is
    /// full; PROBE_RTT caps at cwnd_min_target.
    fn set_cwnd(&mut self, tp: &mut TcpSock, rs: &RateSample, acked: u32, bw: u32, gain: u32) {
        let mut cwnd = tp.snd_cwnd;
        'done: {
            if acked == 0 {
                break 'done; // no packet fully ACKed; just apply caps
            }
            let (c, conserving) = self.set_cwnd_to_recover_or_restore(tp, rs, acked);
            cwnd = c;
            if conserving {
                break 'done;
            }
            let mut target_cwnd = self.bdp(bw, gain);
            // Allow for excess data ACKed, seemingly due to aggregation.
            target_cwnd += self.ack_aggregation_cwnd();
            target_cwnd = self.quantization_budget(tp, target_cwnd);
            if self.full_bw_reached {
                cwnd = (cwnd + acked).min(target_cwnd);
            } else if cwnd < target_cwnd || tp.delivered < TCP_INIT_CWND {
                cwnd += acked;
            }
            cwnd = cwnd.max(self.p.cwnd_min_target);
        }
        tp.set_cwnd(cwnd.min(tp.snd_cwnd_clamp));
        if self.mode == Mode::ProbeRtt {
            tp.set_cwnd(tp.snd_cwnd.min(self.p.cwnd_min_target));
        }
    }

    /// `bbr_is_next_cycle_phase`: end the phase after a min_rtt, or when the phase reached
    /// (gain > 1) or fell to (gain < 1) its inflight target.
    fn is_next_cycle_phase(&self, tp: &TcpSock, rs: &RateSample) -> bool {
        let is_full_length = TcpSock::stamp_us_delta(tp.delivered_mstamp_us, self.cycle_mstamp)
            > self.min_rtt_us as u64;
        if self.pacing_gain == BBR_UNIT {
            return is_full_length;
        }
        let inflight = self.packets_in_net_at_edt(tp, rs.prior_in_flight);
        let bw = self.max_bw();
        if self.pacing_gain > BBR_UNIT {
            return is_full_length
                && (rs.losses != 0 || inflight >= self.inflight(tp, bw, self.pacing_gain));
        }
        is_full_length || inflight <= self.inflight(tp, bw, BBR_UNIT)
    }

    /// `bbr_advance_cycle_phase`.
    fn advance_cycle_phase(&mut self, tp: &TcpSock) {
        self.cycle_idx = (self.cycle_idx + 1) & (CYCLE_LEN - 1);
        self.cycle_mstamp = tp.delivered_mstamp_us;
    }

    /// `bbr_update_cycle_phase`.
    fn update_cycle_phase(&mut self, tp: &TcpSock, rs: &RateSample) {
        if self.mode == Mode::ProbeBw && self.is_next_cycle_phase(tp, rs) {
            self.advance_cycle_phase(tp);
        }
    }

    /// `bbr_reset_probe_bw_mode`: enter PROBE_BW at a random phase other than the drain one.
    fn reset_probe_bw_mode(&mut self, tp: &mut TcpSock) {
        self.mode = Mode::ProbeBw;
        self.cycle_idx = CYCLE_LEN - 1 - tp.random_u32_below(self.p.cycle_rand);
        self.advance_cycle_phase(tp); // flip to next phase of gain cycle
    }

    /// `bbr_reset_mode`.
    fn reset_mode(&mut self, tp: &mut TcpSock) {
        if !self.full_bw_reached {
            self.mode = Mode::Startup;
        } else {
            self.reset_probe_bw_mode(tp);
        }
    }

    /// `bbr_reset_lt_bw_sampling_interval`.
    fn reset_lt_bw_sampling_interval(&mut self, tp: &TcpSock) {
        self.lt_last_stamp = (tp.delivered_mstamp_us / 1000) as u32;
        self.lt_last_delivered = tp.delivered;
        self.lt_last_lost = tp.lost;
        self.lt_rtt_cnt = 0;
    }

    /// `bbr_reset_lt_bw_sampling`.
    fn reset_lt_bw_sampling(&mut self, tp: &TcpSock) {
        self.lt_bw = 0;
        self.lt_use_bw = false;
        self.lt_is_sampling = false;
        self.reset_lt_bw_sampling_interval(tp);
    }

    /// `bbr_lt_bw_interval_done`: two consistent lossy intervals mean a policer.
    fn lt_bw_interval_done(&mut self, tp: &TcpSock, bw: u32) {
        if self.lt_bw != 0 {
            // The kernel's abs() of a u32 difference: as a signed int.
            let diff = (bw.wrapping_sub(self.lt_bw) as i32).unsigned_abs();
            if diff as u64 * BBR_UNIT as u64 <= LT_BW_RATIO as u64 * self.lt_bw as u64
                || Self::rate_bytes_per_sec(tp, diff as u64, BBR_UNIT) <= LT_BW_DIFF
            {
                // All criteria are met; estimate we're policed.
                self.lt_bw = ((bw as u64 + self.lt_bw as u64) >> 1) as u32;
                self.lt_use_bw = true;
                self.pacing_gain = BBR_UNIT; // try to avoid drops
                self.lt_rtt_cnt = 0;
                return;
            }
        }
        self.lt_bw = bw;
        self.reset_lt_bw_sampling_interval(tp);
    }

    /// `bbr_lt_bw_sampling`: token-bucket policer detection.
    fn lt_bw_sampling(&mut self, tp: &mut TcpSock, rs: &RateSample) {
        if self.lt_use_bw {
            if self.mode == Mode::ProbeBw && self.round_start {
                self.lt_rtt_cnt = (self.lt_rtt_cnt + 1) & 0x7f;
                if self.lt_rtt_cnt >= LT_BW_MAX_RTTS {
                    self.reset_lt_bw_sampling(tp); // stop using lt_bw
                    self.reset_probe_bw_mode(tp); // restart gain cycling
                }
            }
            return;
        }
        // Wait for the first loss before sampling, to let the policer exhaust its tokens.
        if !self.lt_is_sampling {
            if rs.losses == 0 {
                return;
            }
            self.reset_lt_bw_sampling_interval(tp);
            self.lt_is_sampling = true;
        }
        // To avoid underestimates, reset sampling if we run out of data.
        if rs.is_app_limited {
            self.reset_lt_bw_sampling(tp);
            return;
        }
        if self.round_start {
            self.lt_rtt_cnt = (self.lt_rtt_cnt + 1) & 0x7f;
        }
        if self.lt_rtt_cnt < LT_INTVL_MIN_RTTS {
            return; // sampling interval needs to be longer
        }
        if self.lt_rtt_cnt > 4 * LT_INTVL_MIN_RTTS {
            self.reset_lt_bw_sampling(tp); // interval is too long
            return;
        }
        // End the interval when a packet is lost: the tokens are probably exhausted.
        if rs.losses == 0 {
            return;
        }
        let lost = tp.lost.wrapping_sub(self.lt_last_lost);
        let delivered = tp.delivered.wrapping_sub(self.lt_last_delivered);
        // Is loss rate (lost/delivered) >= lt_loss_thresh? If not, wait.
        if delivered == 0 || (lost << BBR_SCALE) < LT_LOSS_THRESH * delivered {
            return;
        }
        // Average delivery rate in this sampling interval.
        let t = ((tp.delivered_mstamp_us / 1000) as u32).wrapping_sub(self.lt_last_stamp);
        if (t as i32) < 1 {
            return; // interval is less than one ms, so wait
        }
        if t >= u32::MAX / 1000 {
            self.reset_lt_bw_sampling(tp); // interval too long; reset
            return;
        }
        let t_us = t as u64 * 1000;
        let bw = delivered as u64 * BW_UNIT / t_us;
        self.lt_bw_interval_done(tp, bw as u32);
    }

    /// `bbr_update_bw`: count rounds and feed the max filter with this ACK's delivery rate.
    fn update_bw(&mut self, tp: &mut TcpSock, rs: &RateSample) {
        self.round_start = false;
        if rs.delivered < 0 || rs.interval_us <= 0 {
            return; // not a valid observation
        }
        // See if we've reached the next RTT.
        if !before(rs.prior_delivered, self.next_rtt_delivered) {
            self.next_rtt_delivered = tp.delivered;
            self.rtt_cnt = self.rtt_cnt.wrapping_add(1);
            self.round_start = true;
            self.packet_conservation = false;
        }
        self.lt_bw_sampling(tp, rs);
        // A lower bound of the bottleneck bandwidth: delivered / interval.
        let bw = rs.delivered as u64 * BW_UNIT / rs.interval_us as u64;
        // App-limited samples only count when they beat the model.
        if !rs.is_app_limited || bw >= self.max_bw() as u64 {
            self.bw.running_max(BW_RTTS, self.rtt_cnt, bw as u32);
        }
    }

    /// `bbr_update_ack_aggregation`: windowed max of data ACKed beyond bw * interval.
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
            if self.extra_acked_win_rtts >= self.p.extra_acked_win_rtts {
                self.extra_acked_win_rtts = 0;
                self.extra_acked_win_idx ^= 1;
                self.extra_acked[self.extra_acked_win_idx] = 0;
            }
        }
        // Packets we expected to be delivered over the epoch.
        let epoch_us = TcpSock::stamp_us_delta(tp.delivered_mstamp_us, self.ack_epoch_mstamp);
        let mut expected_acked = (self.bw() as u64 * epoch_us / BW_UNIT) as u32;
        // Reset the epoch if the ACK rate is below the expected rate or the epoch is old.
        if self.ack_epoch_acked <= expected_acked
            || self.ack_epoch_acked + rs.acked_sacked >= ACK_EPOCH_ACKED_RESET_THRESH
        {
            self.ack_epoch_acked = 0;
            self.ack_epoch_mstamp = tp.delivered_mstamp_us;
            expected_acked = 0;
        }
        // Excess data delivered, beyond what was expected.
        self.ack_epoch_acked = (self.ack_epoch_acked + rs.acked_sacked).min(0xFFFFF);
        let extra_acked = (self.ack_epoch_acked - expected_acked).min(tp.snd_cwnd);
        if extra_acked > self.extra_acked[self.extra_acked_win_idx] as u32 {
            self.extra_acked[self.extra_acked_win_idx] = extra_acked as u16;
        }
    }

    /// `bbr_check_full_bw_reached`: 3 rounds without 25 % growth mean the pipe is full.
    fn check_full_bw_reached(&mut self, rs: &RateSample) {
        if self.full_bw_reached || !self.round_start || rs.is_app_limited {
            return;
        }
        let bw_thresh = ((self.full_bw as u64 * FULL_BW_THRESH as u64) >> BBR_SCALE) as u32;
        if self.max_bw() >= bw_thresh {
            self.full_bw = self.max_bw();
            self.full_bw_cnt = 0;
            return;
        }
        self.full_bw_cnt += 1;
        self.full_bw_reached = self.full_bw_cnt >= FULL_BW_CNT;
    }

    /// `bbr_check_drain`: enter DRAIN when the pipe is full, PROBE_BW when inflight <= BDP.
    fn check_drain(&mut self, tp: &mut TcpSock) {
        if self.mode == Mode::Startup && self.full_bw_reached {
            self.mode = Mode::Drain; // drain queue we created
            tp.snd_ssthresh = self.inflight(tp, self.max_bw(), BBR_UNIT);
        }
        if self.mode == Mode::Drain
            && self.packets_in_net_at_edt(tp, tp.packets_in_flight())
                <= self.inflight(tp, self.max_bw(), BBR_UNIT)
        {
            self.reset_probe_bw_mode(tp); // we estimate queue is drained
        }
    }

    /// `bbr_check_probe_rtt_done`.
    fn check_probe_rtt_done(&mut self, tp: &mut TcpSock) {
        if !(self.probe_rtt_done_stamp != 0 && after(tp.jiffies(), self.probe_rtt_done_stamp)) {
            return;
        }
        self.min_rtt_stamp = tp.jiffies(); // wait a while until PROBE_RTT
        tp.set_cwnd(tp.snd_cwnd.max(self.prior_cwnd));
        self.reset_mode(tp);
    }

    /// `bbr_update_min_rtt`: the 10 s min filter, and PROBE_RTT when it expires.
    fn update_min_rtt(&mut self, tp: &mut TcpSock, rs: &RateSample) {
        let now = tp.jiffies();
        let filter_expired = after(
            now,
            self.min_rtt_stamp
                .wrapping_add(self.p.min_rtt_win_sec.wrapping_mul(tp.hz)),
        );
        if rs.rtt_us >= 0
            && ((rs.rtt_us as u64) < self.min_rtt_us as u64
                || (filter_expired && !rs.is_ack_delayed))
        {
            self.min_rtt_us = rs.rtt_us.min(u32::MAX as i64) as u32;
            self.min_rtt_stamp = now;
        }
        if self.p.probe_rtt_mode_ms > 0
            && filter_expired
            && !self.idle_restart
            && self.mode != Mode::ProbeRtt
        {
            self.mode = Mode::ProbeRtt; // dip, drain queue
            self.save_cwnd(tp); // note cwnd so we can restore it
            self.probe_rtt_done_stamp = 0;
        }
        if self.mode == Mode::ProbeRtt {
            // Ignore low rate samples during this mode.
            let v = tp.delivered.wrapping_add(tp.packets_in_flight());
            tp.app_limited = if v == 0 { 1 } else { v };
            // Maintain min packets in flight for max(200 ms, 1 round).
            if self.probe_rtt_done_stamp == 0 && tp.packets_in_flight() <= self.p.cwnd_min_target {
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
        // Restart after idle ends only once we process a new S/ACK for data.
        if rs.delivered > 0 {
            self.idle_restart = false;
        }
    }

    /// `bbr_update_gains`.
    fn update_gains(&mut self) {
        let (pacing, cwnd) = match self.mode {
            Mode::Startup => (self.p.high_gain, self.p.high_gain),
            Mode::Drain => (self.p.drain_gain, self.p.high_gain),
            Mode::ProbeBw => (
                if self.lt_use_bw {
                    BBR_UNIT
                } else {
                    PACING_GAIN[self.cycle_idx as usize]
                },
                self.p.cwnd_gain,
            ),
            Mode::ProbeRtt => (BBR_UNIT, BBR_UNIT),
        };
        self.pacing_gain = pacing;
        self.cwnd_gain = cwnd;
    }

    /// `bbr_update_model`.
    fn update_model(&mut self, tp: &mut TcpSock, rs: &RateSample) {
        self.update_bw(tp, rs);
        self.update_ack_aggregation(tp, rs);
        self.update_cycle_phase(tp, rs);
        self.check_full_bw_reached(rs);
        self.check_drain(tp);
        self.update_min_rtt(tp, rs);
        self.update_gains();
    }
}

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

    /// `bbr_main`: update the model, then pacing rate and cwnd.
    fn cong_control(&mut self, tp: &mut TcpSock, _ack: u64, _flag: u32, rs: &RateSample) {
        self.update_model(tp, rs);
        let bw = self.bw();
        self.set_pacing_rate(tp, bw, self.pacing_gain);
        self.set_cwnd(tp, rs, rs.acked_sacked, bw, self.cwnd_gain);
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
    fn gains_are_the_kernels_constants() {
        let d = BbrParams::default();
        assert_eq!(d.high_gain, 739); // 2.885 * 256 + 1
        assert_eq!(d.drain_gain, 88); // 256 / 2.885
        assert_eq!(PACING_GAIN.iter().sum::<u32>(), 8 * BBR_UNIT);
    }

    #[test]
    fn pacing_rate_is_gain_times_bw_less_one_percent() {
        let tp = sock();
        // 1000 packets per second = 1e-3 packets/us.
        let bw = (BW_UNIT / 1000) as u32;
        let rate = Bbr::bw_to_pacing_rate(&tp, bw, BBR_UNIT);
        let want = 1000.0 * 1448.0 * 0.99;
        assert!((rate as f64 - want).abs() / want < 1e-3, "{rate} vs {want}");
        let rate2 = Bbr::bw_to_pacing_rate(&tp, bw, 2 * BBR_UNIT);
        assert!((rate2 as f64 / rate as f64 - 2.0).abs() < 1e-3);
    }

    #[test]
    fn bdp_rounds_up_and_uses_the_initial_window_before_any_rtt() {
        let mut b = Bbr::new(BbrParams::default());
        assert_eq!(b.bdp(1 << 20, BBR_UNIT), TCP_INIT_CWND);
        b.min_rtt_us = 100_000; // 100 ms
        let bw = (BW_UNIT / 1000) as u32; // 1000 pkt/s -> BDP 100 packets
        assert_eq!(b.bdp(bw, BBR_UNIT), 100);
        assert_eq!(b.bdp(bw, 2 * BBR_UNIT), 200);
        assert_eq!(b.bdp(bw + 1, BBR_UNIT), 101); // rounds up
    }

    #[test]
    fn init_paces_high_gain_times_the_initial_window_per_srtt() {
        let mut tp = sock();
        tp.srtt_us = 100_000 << 3;
        tp.min_rtt_us = 100_000;
        let mut b = Bbr::new(BbrParams::default());
        b.init(&mut tp);
        assert!(tp.pacing_needed);
        // 10 packets per 100 ms, times 2.885, less 1 %.
        let want = 100.0 * 1448.0 * 739.0 / 256.0 * 0.99;
        let got = tp.pacing_rate_bytes_per_s as f64;
        assert!((got - want).abs() / want < 1e-2, "{got} vs {want}");
        assert_eq!(b.min_rtt_us, 100_000);
    }

    #[test]
    fn probe_bw_starts_at_a_phase_other_than_drain() {
        let mut tp = sock();
        for _ in 0..200 {
            let mut b = Bbr::new(BbrParams::default());
            b.reset_probe_bw_mode(&mut tp);
            assert_ne!(b.cycle_idx, 1, "never starts in the 3/4 phase");
            assert_eq!(b.mode, Mode::ProbeBw);
        }
    }

    #[test]
    fn policer_detected_after_two_consistent_lossy_intervals() {
        let tp = sock();
        let mut b = Bbr::new(BbrParams::default());
        b.lt_bw_interval_done(&tp, 1000);
        assert!(!b.lt_use_bw);
        b.lt_bw_interval_done(&tp, 1100); // within 1/8
        assert!(b.lt_use_bw);
        assert_eq!(b.lt_bw, 1050);
        let mut b = Bbr::new(BbrParams::default());
        b.lt_bw_interval_done(&tp, 1 << 20);
        b.lt_bw_interval_done(&tp, 2 << 20); // far apart
        assert!(!b.lt_use_bw);
    }

    #[test]
    fn bad_tunable_is_refused_with_its_name() {
        let mut p = Params::new();
        p.insert("cwnd_gain".into(), ParamValue::Int(5000));
        let err = build("bbr", &p).err().expect("refused").to_string();
        assert!(err.contains("cwnd_gain"), "{err}");
    }
}
