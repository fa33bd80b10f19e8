//! BIC TCP (Xu, Harfoush, Rhee: "Binary Increase Congestion Control for Fast, Long Distance
//! Networks", INFOCOM 2004), as Linux 6.18 implements it in `net/ipv4/tcp_bic.c`.
//!
//! After a loss the window searches for the last maximum `last_max_cwnd` by binary search
//! (grow by a quarter of the distance per `cnt` computation, at most `max_increment` per RTT,
//! slowly near the target: `smooth_part`), then probes beyond it (max probing: slowly, then
//! faster, then linearly). Below `low_window` it is Reno, including Reno's halving on loss;
//! above it ssthresh is `cwnd * beta / 1024`. `cnt` is scaled by the measured packets-per-ACK
//! ratio (`delayed_ack`, << 4), tracked in `pkts_acked`.
//!
//! The kernel's module parameters are global; here they are per instance ([`BicParams`], same
//! names and defaults). Linux 6.18's ops table sets `init`, `ssthresh`, `cong_avoid`,
//! `set_state`, `undo_cwnd = tcp_reno_undo_cwnd` and `pkts_acked`; so do we.
//!
//! Divergences from the kernel, and why:
//! - `tcp_jiffies32` is `tp.jiffies()` and `HZ` is `tp.clock.hz` (a setting, 250 by default); the
//!   simulation's jiffies start at 0, so an epoch started in the first jiffy reads as "no epoch"
//!   (`epoch_start == 0`), exactly as the kernel would when jiffies pass through 0. BIC only
//!   records `epoch_start`, so this has no effect on the window.
//! - The `ack` argument of `cong_avoid` is a `u64` byte sequence number; BIC does not use it.
//! - Module parameters are checked when built (the kernel takes any int): ranges are given in
//!   [`info`]; they exclude values for which the kernel would divide by zero
//!   (`max_increment = 0`) or overflow its `int` arithmetic.
//! - `delayed_ack` cannot reach 0 (it stays >= 15); we still divide by `max(delayed_ack, 1)`
//!   rather than risk a panic.

use super::params::ParamReader;
use super::reno::{tcp_cong_avoid_ai, tcp_reno_undo_cwnd, tcp_slow_start};
use super::{AckSample, AlgorithmInfo, CaState, CcError, CongestionControl, ParamInfo};
use super::{ParamValue, Params};
use crate::tcp::sock::TcpSock;

/// Scale of `beta` (`BICTCP_BETA_SCALE`): max_cwnd = snd_cwnd * beta / 1024.
pub const BICTCP_BETA_SCALE: u32 = 1024;
/// In binary search, go to point (max + min) / N (`BICTCP_B`).
pub const BICTCP_B: u32 = 4;
/// `delayed_ack` is the ratio packets/ACK scaled << 4 (`ACK_RATIO_SHIFT`).
pub const ACK_RATIO_SHIFT: u32 = 4;

/// BIC's tunables: the module parameters of `net/ipv4/tcp_bic.c` with Linux 6.18's names and
/// defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BicParams {
    /// `fast_convergence` (default on): after a loss below the previous maximum, remember
    /// `cwnd * (1024 + beta) / 2048` as the maximum, releasing bandwidth to newer flows.
    pub fast_convergence: bool,
    /// `max_increment` (default 16): limit on the increment per RTT during binary search.
    pub max_increment: u32,
    /// `low_window` (default 14): at or below this cwnd BIC behaves as Reno.
    pub low_window: u32,
    /// `beta` (default 819 = 0.8 * 1024): multiplicative decrease, in units of 1/1024.
    pub beta: u32,
    /// `initial_ssthresh` (default 0 = keep the socket's, i.e. infinite), packets.
    pub initial_ssthresh: u32,
    /// `smooth_part` (default 20): log(B/(B*Smin))/log(B/(B-1))+B, # of RTT from Wmax-B to
    /// Wmax: near the maximum cwnd grows by B / smooth_part packets per RTT.
    pub smooth_part: u32,
}

impl Default for BicParams {
    /// Linux 6.18's defaults.
    fn default() -> Self {
        BicParams {
            fast_convergence: true,
            max_increment: 16,
            low_window: 14,
            beta: 819,
            initial_ssthresh: 0,
            smooth_part: 20,
        }
    }
}

const I32_MAX: i64 = i32::MAX as i64;
/// Largest `max_increment`: keeps the kernel's `int` product `max_increment * 3` in range.
const MAX_INCREMENT_MAX: i64 = I32_MAX / (BICTCP_B as i64 - 1);

/// What `cclab presets` lists for BIC.
pub fn info() -> AlgorithmInfo {
    let d = BicParams::default();
    AlgorithmInfo {
        name: "bic",
        base: "bic",
        description: "BIC TCP: binary search toward the last maximum window, then max probing",
        source: "Linux 6.18 net/ipv4/tcp_bic.c",
        params: vec![
            ParamInfo {
                name: "fast_convergence",
                default: ParamValue::Bool(d.fast_convergence),
                doc: "turn on/off fast convergence; true/false or 0/1",
            },
            ParamInfo {
                name: "max_increment",
                default: ParamValue::Int(d.max_increment as i64),
                doc: "limit on increment allowed during binary search, packets per RTT; \
                      an integer 1..715827882",
            },
            ParamInfo {
                name: "low_window",
                default: ParamValue::Int(d.low_window as i64),
                doc: "lower bound on congestion window (for TCP friendliness): Reno at or \
                      below it, packets; an integer 0..2147483647",
            },
            ParamInfo {
                name: "beta",
                default: ParamValue::Int(d.beta as i64),
                doc: "beta for multiplicative decrease, in units of 1/1024 (819 = 0.8); \
                      an integer 1..1023",
            },
            ParamInfo {
                name: "initial_ssthresh",
                default: ParamValue::Int(d.initial_ssthresh as i64),
                doc: "initial value of slow start threshold, packets; 0 = infinite; \
                      an integer 0..2147483647",
            },
            ParamInfo {
                name: "smooth_part",
                default: ParamValue::Int(d.smooth_part as i64),
                doc: "log(B/(B*Smin))/log(B/(B-1))+B, # of RTT from Wmax-B to Wmax; \
                      an integer 0..2147483647",
            },
        ],
        preset_params: Params::new(),
    }
}

/// Build BIC with `params` (names already checked by the registry), every value checked.
pub fn build(algorithm: &str, params: &Params) -> Result<Box<dyn CongestionControl>, CcError> {
    let r = ParamReader::new(algorithm, params);
    let d = BicParams::default();
    let p = BicParams {
        fast_convergence: r.bool("fast_convergence", d.fast_convergence)?,
        max_increment: r.int(
            "max_increment",
            d.max_increment as i64,
            1,
            MAX_INCREMENT_MAX,
        )? as u32,
        low_window: r.int("low_window", d.low_window as i64, 0, I32_MAX)? as u32,
        beta: r.int("beta", d.beta as i64, 1, BICTCP_BETA_SCALE as i64 - 1)? as u32,
        initial_ssthresh: r.int("initial_ssthresh", d.initial_ssthresh as i64, 0, I32_MAX)? as u32,
        smooth_part: r.int("smooth_part", d.smooth_part as i64, 0, I32_MAX)? as u32,
    };
    Ok(Box::new(Bic::new(p)))
}

/// BIC's per-connection state: `struct bictcp` (net/ipv4/tcp_bic.c).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Bictcp {
    /// Increase cwnd by 1 after this many ACKed packets.
    cnt: u32,
    /// Last maximum snd_cwnd.
    last_max_cwnd: u32,
    /// The last snd_cwnd.
    last_cwnd: u32,
    /// Jiffies when last_cwnd was updated.
    last_time: u32,
    /// Jiffies at the beginning of an epoch (0 = none).
    epoch_start: u32,
    /// Estimated packets per ACK, << ACK_RATIO_SHIFT.
    delayed_ack: u32,
}

impl Bictcp {
    /// net/ipv4/tcp_bic.c: bictcp_reset(): everything 0, `delayed_ack` = 2 packets per ACK.
    fn reset(&mut self) {
        *self = Bictcp {
            delayed_ack: 2 << ACK_RATIO_SHIFT,
            ..Bictcp::default()
        };
    }
}

/// BIC TCP (`struct tcp_congestion_ops bictcp`, Linux 6.18).
#[derive(Debug, Clone)]
pub struct Bic {
    params: BicParams,
    ca: Bictcp,
}

impl Default for Bic {
    /// BIC with Linux's default tunables.
    fn default() -> Self {
        Bic::new(BicParams::default())
    }
}

impl Bic {
    /// A BIC instance with these tunables (see [`build`] for the checked ranges).
    pub fn new(params: BicParams) -> Self {
        let mut ca = Bictcp::default();
        ca.reset();
        Bic { params, ca }
    }

    /// The tunables.
    pub fn params(&self) -> &BicParams {
        &self.params
    }

    /// The window BIC searches toward (`last_max_cwnd`), packets.
    pub fn last_max_cwnd(&self) -> u32 {
        self.ca.last_max_cwnd
    }

    /// Packets to ACK for cwnd to grow by one (`cnt`), as last computed.
    pub fn cnt(&self) -> u32 {
        self.ca.cnt
    }

    /// Compute the congestion window to use: sets `cnt`.
    ///
    /// net/ipv4/tcp_bic.c: bictcp_update(). `now` is `tcp_jiffies32`, `hz` is `HZ`. `u32`
    /// arithmetic wraps as in C (the kernel's `int` parameters convert to `u32`).
    fn bictcp_update(&mut self, cwnd: u32, now: u32, hz: u32) {
        let p = &self.params;
        let ca = &mut self.ca;
        if ca.last_cwnd == cwnd && (now.wrapping_sub(ca.last_time) as i32) <= (hz / 32) as i32 {
            return;
        }

        ca.last_cwnd = cwnd;
        ca.last_time = now;

        if ca.epoch_start == 0 {
            ca.epoch_start = now; // record the beginning of an epoch
        }

        // start off normal
        if cwnd <= p.low_window {
            ca.cnt = cwnd;
            return;
        }

        if cwnd < ca.last_max_cwnd {
            // binary increase
            let dist = (ca.last_max_cwnd - cwnd) / BICTCP_B;
            ca.cnt = if dist > p.max_increment {
                cwnd / p.max_increment // linear increase
            } else if dist <= 1 {
                cwnd.wrapping_mul(p.smooth_part) / BICTCP_B // binary search increase
            } else {
                cwnd / dist // binary search increase
            };
        } else {
            // slow start AMD linear increase
            ca.cnt = if cwnd < ca.last_max_cwnd.wrapping_add(BICTCP_B) {
                cwnd.wrapping_mul(p.smooth_part) / BICTCP_B // slow start
            } else if cwnd
                < ca.last_max_cwnd
                    .wrapping_add(p.max_increment * (BICTCP_B - 1))
            {
                cwnd.wrapping_mul(BICTCP_B - 1) / (cwnd - ca.last_max_cwnd) // slow start
            } else {
                cwnd / p.max_increment // linear increase
            };
        }

        // if in slow start or link utilization is very low
        if ca.last_max_cwnd == 0 && ca.cnt > 20 {
            ca.cnt = 20; // increase cwnd 5% per RTT
        }

        ca.cnt = (ca.cnt << ACK_RATIO_SHIFT) / ca.delayed_ack.max(1);
        if ca.cnt == 0 {
            ca.cnt = 1; // cannot be zero
        }
    }
}

impl CongestionControl for Bic {
    fn name(&self) -> &'static str {
        "bic"
    }

    /// net/ipv4/tcp_bic.c: bictcp_init(): reset, and apply `initial_ssthresh` when non-zero.
    fn init(&mut self, tp: &mut TcpSock) {
        self.ca.reset();
        if self.params.initial_ssthresh != 0 {
            tp.snd_ssthresh = self.params.initial_ssthresh;
        }
    }

    /// net/ipv4/tcp_bic.c: bictcp_recalc_ssthresh(): end the epoch, remember the maximum
    /// (lowered by fast convergence below the previous one); Reno's halving at or below
    /// `low_window`, `cwnd * beta / 1024` above; at least 2.
    fn ssthresh(&mut self, tp: &mut TcpSock) -> u32 {
        let cwnd = tp.snd_cwnd;
        let (beta, ca) = (self.params.beta, &mut self.ca);
        ca.epoch_start = 0; // end of epoch

        // Wmax and fast convergence
        if cwnd < ca.last_max_cwnd && self.params.fast_convergence {
            ca.last_max_cwnd =
                cwnd.wrapping_mul(BICTCP_BETA_SCALE + beta) / (2 * BICTCP_BETA_SCALE);
        } else {
            ca.last_max_cwnd = cwnd;
        }

        if cwnd <= self.params.low_window {
            (cwnd >> 1).max(2)
        } else {
            (cwnd.wrapping_mul(beta) / BICTCP_BETA_SCALE).max(2)
        }
    }

    /// net/ipv4/tcp_bic.c: bictcp_cong_avoid(): slow start (the leftover goes on, as since the
    /// 5.7 stretch-ACK fix), then `bictcp_update()` and `tcp_cong_avoid_ai(tp, cnt, acked)`.
    fn cong_avoid(&mut self, tp: &mut TcpSock, _ack: u64, acked: u32) {
        if !tp.is_cwnd_limited() {
            return;
        }
        let mut acked = acked;
        if tp.in_slow_start() {
            acked = tcp_slow_start(tp, acked);
            if acked == 0 {
                return;
            }
        }
        let (now, hz) = (tp.jiffies(), tp.clock.hz);
        self.bictcp_update(tp.snd_cwnd, now, hz);
        tcp_cong_avoid_ai(tp, self.ca.cnt, acked);
    }

    /// net/ipv4/tcp_bic.c: bictcp_state(): a retransmission timeout forgets everything.
    fn set_state(&mut self, _tp: &mut TcpSock, new_state: CaState) {
        if new_state == CaState::Loss {
            self.ca.reset();
        }
    }

    /// net/ipv4/tcp_bic.c: bictcp_acked(): in Open state, track the packets-per-ACK ratio with
    /// a sliding window, ratio = (15 * ratio + sample) / 16, in `u32` as the kernel does.
    fn pkts_acked(&mut self, tp: &mut TcpSock, sample: &AckSample) {
        if tp.ca_state == CaState::Open {
            let ca = &mut self.ca;
            ca.delayed_ack = ca.delayed_ack.wrapping_add(
                sample
                    .pkts_acked
                    .wrapping_sub(ca.delayed_ack >> ACK_RATIO_SHIFT),
            );
        }
    }

    /// `.undo_cwnd = tcp_reno_undo_cwnd` (net/ipv4/tcp_bic.c: bictcp).
    fn undo_cwnd(&mut self, tp: &mut TcpSock) -> u32 {
        tcp_reno_undo_cwnd(tp)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u64 = 1448;

    fn sock(cwnd: u32, ssthresh: u32) -> TcpSock {
        let mut tp = TcpSock::new(
            MSS as u32,
            cwnd,
            u32::MAX,
            crate::tcp::clock::KernelClock::new(250),
        );
        tp.snd_ssthresh = ssthresh;
        tp.is_cwnd_limited = true;
        tp
    }

    /// `cnt` computed at window `cwnd` with `last_max_cwnd` = `max` and the initial 2 packets
    /// per ACK (`delayed_ack` = 32, so cnt is halved).
    fn cnt_at(cwnd: u32, max: u32) -> u32 {
        let mut cc = Bic::default();
        cc.ca.last_max_cwnd = max;
        cc.bictcp_update(cwnd, 1000, 250);
        cc.cnt()
    }

    /// One RTT of 100 ms: one ACK per packet of the window, with pkts_acked then cong_avoid.
    fn round(cc: &mut Bic, tp: &mut TcpSock) {
        let w = tp.snd_cwnd as u64;
        let t0 = tp.tcp_mstamp_us;
        for i in 1..=w {
            tp.tcp_mstamp_us = t0 + 100_000 * i / w;
            tp.snd_una += MSS;
            let s = AckSample {
                pkts_acked: 1,
                rtt_us: 100_000,
                in_flight: 0,
            };
            cc.pkts_acked(tp, &s);
            let ack = tp.snd_una;
            cc.cong_avoid(tp, ack, 1);
        }
    }

    #[test]
    fn binary_search_and_max_probing_cnt() {
        // Reno at or below low_window (no packets-per-ACK scaling).
        assert_eq!(cnt_at(14, 100), 14);
        // Far below the maximum: linear, max_increment per RTT: cnt = cwnd / 16, then / 2.
        assert_eq!(cnt_at(100, 200), (100 / 16) * 16 / 32);
        // Binary search: a quarter of the distance, dist = (200 - 180) / 4 = 5.
        assert_eq!(cnt_at(180, 200), (180 / 5) * 16 / 32);
        // Within B of the maximum: smooth part, cwnd * 20 / 4.
        assert_eq!(cnt_at(197, 200), 197 * 20 / 4 * 16 / 32);
        // Just above the maximum: still smooth.
        assert_eq!(cnt_at(202, 200), 202 * 20 / 4 * 16 / 32);
        // Max probing: cwnd * 3 / (cwnd - max), growing faster away from the maximum.
        assert_eq!(cnt_at(220, 200), (220 * 3 / 20) * 16 / 32);
        assert_eq!(cnt_at(240, 200), (240 * 3 / 40) * 16 / 32);
        // Beyond max + 3 * max_increment: linear again.
        assert_eq!(cnt_at(260, 200), (260 / 16) * 16 / 32);
        // No maximum yet: at most 20 (5% per RTT).
        assert_eq!(cnt_at(1000, 0), 20 * 16 / 32);
    }

    #[test]
    fn update_waits_for_cwnd_change_or_hz_over_32() {
        let mut cc = Bic::default();
        cc.ca.last_max_cwnd = 200;
        cc.bictcp_update(180, 1000, 250);
        let first = cc.cnt();
        cc.ca.last_max_cwnd = 1000; // would change cnt if recomputed
        cc.bictcp_update(180, 1007, 250); // 7 jiffies <= 250 / 32
        assert_eq!(cc.cnt(), first);
        cc.bictcp_update(180, 1008, 250);
        assert_ne!(cc.cnt(), first);
    }

    #[test]
    fn delayed_ack_ratio_tracks_packets_per_ack() {
        let mut cc = Bic::default();
        let mut tp = sock(100, 50);
        let one = AckSample {
            pkts_acked: 1,
            rtt_us: 1000,
            in_flight: 0,
        };
        for _ in 0..100 {
            cc.pkts_acked(&mut tp, &one);
        }
        // ratio = (15 ratio + 16) / 16 in integers settles at 31 (1.94 packets per ACK).
        assert_eq!(cc.ca.delayed_ack, 31);
        let four = AckSample {
            pkts_acked: 4,
            ..one
        };
        for _ in 0..200 {
            cc.pkts_acked(&mut tp, &four);
        }
        assert_eq!(cc.ca.delayed_ack >> ACK_RATIO_SHIFT, 4);
        // Not in Open: unchanged.
        tp.ca_state = CaState::Recovery;
        cc.pkts_acked(&mut tp, &one);
        assert_eq!(cc.ca.delayed_ack >> ACK_RATIO_SHIFT, 4);
    }

    #[test]
    fn ssthresh_beta_above_low_window_reno_below() {
        let mut cc = Bic::default();
        let mut tp = sock(100, 50);
        assert_eq!(cc.ssthresh(&mut tp), 100 * 819 / 1024); // 79
        assert_eq!(cc.last_max_cwnd(), 100);
        // Below the previous maximum: fast convergence remembers (1 + beta) / 2 of cwnd.
        tp.snd_cwnd = 90;
        assert_eq!(cc.ssthresh(&mut tp), 90 * 819 / 1024);
        assert_eq!(cc.last_max_cwnd(), 90 * (1024 + 819) / 2048); // 80
        tp.snd_cwnd = 14;
        assert_eq!(cc.ssthresh(&mut tp), 7);
        tp.snd_cwnd = 15;
        assert_eq!(cc.ssthresh(&mut tp), 15 * 819 / 1024);
        tp.snd_cwnd = 3;
        assert_eq!(cc.ssthresh(&mut tp), 2);
        tp.snd_cwnd = 1000; // 1000 * 819 / 1024 = 799.8
        assert_eq!(cc.ssthresh(&mut tp), 799);
        // Without fast convergence the maximum is the cwnd at the loss.
        let mut cc = Bic::new(BicParams {
            fast_convergence: false,
            ..BicParams::default()
        });
        cc.ca.last_max_cwnd = 200;
        tp.snd_cwnd = 100;
        cc.ssthresh(&mut tp);
        assert_eq!(cc.last_max_cwnd(), 100);
    }

    #[test]
    fn searches_toward_last_max_then_probes_beyond() {
        let mut cc = Bic::default();
        let mut tp = sock(1000, u32::MAX);
        cc.init(&mut tp);
        // Loss at 1000: ssthresh = 799, W_max = 1000.
        tp.snd_ssthresh = cc.ssthresh(&mut tp);
        tp.snd_cwnd = tp.snd_ssthresh;
        assert_eq!(tp.snd_cwnd, 799);
        let mut hist = vec![tp.snd_cwnd];
        for _ in 0..60 {
            round(&mut cc, &mut tp);
            hist.push(tp.snd_cwnd);
        }
        let steps: Vec<i64> = hist.windows(2).map(|w| w[1] as i64 - w[0] as i64).collect();
        // Far from W_max: about max_increment per RTT, scaled by the ratio 16/31 measured here
        // (cnt = (cwnd / 16) * 16 / 31): ~31 packets per RTT.
        assert!((25..=36).contains(&steps[0]), "{steps:?}");
        // Binary search: steps shrink as the window closes in on W_max, never overshooting by
        // more than the smooth part allows.
        let reach = hist.iter().position(|&w| w >= 996).expect("reaches W_max");
        for i in 1..reach.saturating_sub(1) {
            if hist[i] > 1000 - 64 {
                assert!(steps[i] <= steps[i - 1] + 1, "{hist:?}");
            }
        }
        let plateau_end = hist
            .iter()
            .position(|&w| w > 1004)
            .expect("probes beyond W_max");
        assert!(plateau_end > reach, "{hist:?}");
        // Max probing accelerates away from W_max.
        let last = steps.len() - 1;
        assert!(steps[last] > steps[plateau_end], "{hist:?}");
        assert!(hist[60] > 1100, "{hist:?}");
    }

    #[test]
    fn init_state_and_loss_reset() {
        let mut cc = Bic::new(BicParams {
            initial_ssthresh: 60,
            ..BicParams::default()
        });
        let mut tp = sock(10, u32::MAX);
        cc.init(&mut tp);
        assert_eq!(tp.snd_ssthresh, 60);
        cc.ca.last_max_cwnd = 500;
        cc.set_state(&mut tp, CaState::Recovery);
        assert_eq!(cc.last_max_cwnd(), 500);
        cc.set_state(&mut tp, CaState::Loss);
        assert_eq!((cc.last_max_cwnd(), cc.ca.delayed_ack), (0, 32));
        let mut tp = sock(10, u32::MAX);
        Bic::default().init(&mut tp);
        assert_eq!(tp.snd_ssthresh, u32::MAX); // initial_ssthresh 0 leaves it alone
        tp.snd_cwnd = 30;
        tp.prior_cwnd = 70;
        assert_eq!(cc.undo_cwnd(&mut tp), 70);
    }

    #[test]
    fn info_and_build_check_values() {
        let i = info();
        assert_eq!(
            (i.name, i.base, i.source),
            ("bic", "bic", "Linux 6.18 net/ipv4/tcp_bic.c")
        );
        let names: Vec<_> = i.params.iter().map(|p| p.name).collect();
        assert_eq!(
            names,
            [
                "fast_convergence",
                "max_increment",
                "low_window",
                "beta",
                "initial_ssthresh",
                "smooth_part"
            ]
        );
        assert_eq!(i.params[3].default, ParamValue::Int(819));
        let defaults: Params = i
            .params
            .iter()
            .map(|p| (p.name.to_string(), p.default))
            .collect();
        assert_eq!(build("bic", &defaults).unwrap().name(), "bic");
        for (param, v) in [
            ("beta", ParamValue::Int(1024)),
            ("beta", ParamValue::Float(0.8)),
            ("max_increment", ParamValue::Int(0)),
            ("low_window", ParamValue::Int(-1)),
            ("fast_convergence", ParamValue::Int(2)),
            ("smooth_part", ParamValue::Bool(true)),
        ] {
            let p: Params = [(param.to_string(), v)].into_iter().collect();
            match build("bic", &p) {
                Err(CcError::BadValue {
                    algorithm,
                    param: got,
                    ..
                }) => {
                    assert_eq!((algorithm.as_str(), got.as_str()), ("bic", param))
                }
                Err(e) => panic!("{param} = {v}: {e}"),
                Ok(_) => panic!("{param} = {v} accepted"),
            }
        }
    }
}
