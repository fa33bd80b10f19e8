//! H-TCP (Shorten, Leith: "H-TCP: TCP for high-speed and long-distance networks", PFLDnet
//! 2004), as Linux 6.18 implements it in `net/ipv4/tcp_htcp.c`.
//!
//! The additive increase alpha grows with the time since the last congestion event:
//! for delta <= 1 s it is Reno's (alpha = 2 (1 - beta) ... = 1 with beta 0.5); beyond,
//! factor = 1 + 10 (delta - 1) + ((delta - 1) / 2)^2, in jiffies and integer math, optionally
//! scaled by minRTT / 100 ms (`use_rtt_scaling`, clamped to [0.5, 10]), and
//! alpha = 2 factor (1 - beta) (fixed point << 7). On a loss, beta = minRTT / maxRTT clamped
//! to [0.5, 0.8] (fixed point << 7), unless the achieved throughput changed by more than 20 %
//! since the previous loss (`use_bandwidth_switch`), in which case beta = 0.5.
//!
//! The kernel's module parameters are global; here they are per instance ([`HtcpParams`], same
//! names and defaults). Linux 6.18's ops table sets `init`, `ssthresh`, `cong_avoid`,
//! `set_state`, `undo_cwnd` and `pkts_acked`; so do we.
//!
//! Divergences from the kernel, and why:
//! - `jiffies` and `tcp_jiffies32` are both `tp.jiffies()`, and `HZ` is `tp.clock.hz` (a setting, 250
//!   by default); all RTTs are kept in jiffies as in the kernel.
//! - The kernel marks "no undo information" with `undo_last_cong == 0`; its jiffies start at
//!   `INITIAL_JIFFIES` (5 minutes before wrapping), so a real congestion time of 0 practically
//!   never occurs. The simulation's jiffies start at 0, where every flow's first `last_cong` is
//!   set, so we keep the "saved" state as an `Option` instead: otherwise the first loss of every
//!   flow could never be undone nor restart the congestion clock when recovery ends.
//! - The `ack` argument of `cong_avoid` is a `u64` byte sequence number; H-TCP does not use it.
//! - As in Linux 6.18, slow start drops its leftover (`tcp_slow_start()`'s result is unused).

use super::params::ParamReader;
use super::reno::{tcp_reno_undo_cwnd, tcp_slow_start};
use super::{AckSample, AlgorithmInfo, CaState, CcError, CongestionControl, ParamInfo};
use super::{ParamValue, Params};
use crate::tcp::sock::TcpSock;

/// alpha = 1.0, fixed point << 7 (`ALPHA_BASE`).
pub const ALPHA_BASE: u32 = 1 << 7;
/// beta = 0.5, fixed point << 7 (`BETA_MIN`).
pub const BETA_MIN: u8 = 1 << 6;
/// beta = 0.8, fixed point << 7 (`BETA_MAX`).
pub const BETA_MAX: u8 = 102;

/// H-TCP's tunables: the module parameters of `net/ipv4/tcp_htcp.c`, Linux 6.18 names and
/// defaults (the kernel's `int`s used as booleans).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HtcpParams {
    /// `use_rtt_scaling` (default on): scale alpha by minRTT / 100 ms, so flows with different
    /// RTTs grow alike in time.
    pub use_rtt_scaling: bool,
    /// `use_bandwidth_switch` (default on): fall back to beta = 0.5 when the achieved
    /// throughput changed by more than 20 % between congestion events.
    pub use_bandwidth_switch: bool,
}

impl Default for HtcpParams {
    /// Linux 6.18's defaults.
    fn default() -> Self {
        HtcpParams {
            use_rtt_scaling: true,
            use_bandwidth_switch: true,
        }
    }
}

/// What `cclab presets` lists for H-TCP.
pub fn info() -> AlgorithmInfo {
    let d = HtcpParams::default();
    AlgorithmInfo {
        name: "htcp",
        base: "htcp",
        description: "H-TCP: alpha grows with time since the last loss, beta = minRTT/maxRTT",
        source: "Linux 6.18 net/ipv4/tcp_htcp.c",
        params: vec![
            ParamInfo {
                name: "use_rtt_scaling",
                default: ParamValue::Bool(d.use_rtt_scaling),
                doc: "turn on/off RTT scaling of alpha (by minRTT / 100 ms); true/false or 0/1",
            },
            ParamInfo {
                name: "use_bandwidth_switch",
                default: ParamValue::Bool(d.use_bandwidth_switch),
                doc: "turn on/off bandwidth switcher (beta = 0.5 when throughput changed by \
                      more than 20%); true/false or 0/1",
            },
        ],
        preset_params: Params::new(),
    }
}

/// Build H-TCP with `params` (names already checked by the registry), every value checked.
pub fn build(algorithm: &str, params: &Params) -> Result<Box<dyn CongestionControl>, CcError> {
    let r = ParamReader::new(algorithm, params);
    let d = HtcpParams::default();
    let p = HtcpParams {
        use_rtt_scaling: r.bool("use_rtt_scaling", d.use_rtt_scaling)?,
        use_bandwidth_switch: r.bool("use_bandwidth_switch", d.use_bandwidth_switch)?,
    };
    Ok(Box::new(Htcp::new(p)))
}

/// H-TCP's per-connection state: `struct htcp` (net/ipv4/tcp_htcp.c), same names and types.
#[allow(non_snake_case)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct HtcpState {
    /// Additive increase, fixed point << 7.
    alpha: u32,
    /// Multiplicative decrease, fixed point << 7.
    beta: u8,
    /// Delay mode switch until we had at least one congestion event.
    modeswitch: u8,
    /// Packets acked by the last ACK in Open state.
    pkts_acked: u16,
    /// Packets acked since `lasttime` (throughput measurement).
    packetcount: u32,
    /// Minimum RTT, jiffies (0 = none yet).
    minRTT: u32,
    /// Maximum RTT, jiffies.
    maxRTT: u32,
    /// Jiffies at the last congestion event (its end once recovery completes).
    last_cong: u32,
    /// Saved `last_cong`, `maxRTT`, `old_maxB` for undo; `None` where the kernel has
    /// `undo_last_cong == 0` (see the module docs).
    undo: Option<(u32, u32, u32)>,
    /// Bandwidth estimation: minimum, maximum, previous maximum, current, packets per second.
    minB: u32,
    maxB: u32,
    old_maxB: u32,
    Bi: u32,
    /// Start of the throughput measurement interval, jiffies.
    lasttime: u32,
}

impl HtcpState {
    /// net/ipv4/tcp_htcp.c: htcp_init(): zeroed, alpha = 1, beta = 0.5, last congestion now.
    fn initial(now: u32) -> Self {
        let (alpha, beta, pkts_acked, last_cong) = (ALPHA_BASE, BETA_MIN, 1, now);
        HtcpState {
            alpha,
            beta,
            pkts_acked,
            last_cong,
            ..HtcpState::default()
        }
    }
}

/// H-TCP (`struct tcp_congestion_ops htcp`, Linux 6.18).
#[derive(Debug, Clone)]
pub struct Htcp {
    params: HtcpParams,
    ca: HtcpState,
}

impl Default for Htcp {
    /// H-TCP with Linux's default tunables.
    fn default() -> Self {
        Htcp::new(HtcpParams::default())
    }
}

impl Htcp {
    /// An H-TCP instance with these tunables.
    pub fn new(params: HtcpParams) -> Self {
        let ca = HtcpState::initial(0);
        Htcp { params, ca }
    }

    /// Current alpha, fixed point << 7 (packets per RTT * 128).
    pub fn alpha(&self) -> u32 {
        self.ca.alpha
    }

    /// Current beta, fixed point << 7.
    pub fn beta(&self) -> u32 {
        self.ca.beta as u32
    }

    /// net/ipv4/tcp_htcp.c: htcp_cong_time(): jiffies since the last congestion event.
    fn cong_time(&self, now: u32) -> u32 {
        now.wrapping_sub(self.ca.last_cong)
    }

    /// net/ipv4/tcp_htcp.c: htcp_ccount(): minimum RTTs since the last congestion event
    /// (callers ensure `minRTT > 0`).
    fn ccount(&self, now: u32) -> u32 {
        self.cong_time(now) / self.ca.minRTT
    }

    /// net/ipv4/tcp_htcp.c: htcp_reset(): save the undo state and restart the congestion clock.
    fn reset(&mut self, now: u32) {
        let ca = &mut self.ca;
        ca.undo = Some((ca.last_cong, ca.maxRTT, ca.old_maxB));
        ca.last_cong = now;
    }

    /// net/ipv4/tcp_htcp.c: measure_rtt(): minRTT, and in Open state maxRTT (which may only
    /// grow by 20 ms per sample, to ignore outliers). `srtt` is in jiffies.
    fn measure_rtt(&mut self, tp: &TcpSock, srtt: u32) {
        let step = tp.msecs_to_jiffies(20);
        let ca = &mut self.ca;
        // keep track of minimum RTT seen so far, minRTT is zero at first
        if ca.minRTT > srtt || ca.minRTT == 0 {
            ca.minRTT = srtt;
        }
        // max RTT
        if tp.ca_state == CaState::Open {
            if ca.maxRTT < ca.minRTT {
                ca.maxRTT = ca.minRTT;
            }
            if ca.maxRTT < srtt && srtt <= ca.maxRTT.wrapping_add(step) {
                ca.maxRTT = srtt;
            }
        }
    }

    /// net/ipv4/tcp_htcp.c: htcp_beta_update(): beta = 0.5 after a bandwidth switch or on the
    /// first congestion event, else minRTT / maxRTT clamped to [BETA_MIN, BETA_MAX] (when
    /// minRTT > 10 ms).
    #[allow(non_snake_case)]
    fn beta_update(&mut self, minRTT: u32, maxRTT: u32, hz: u32) {
        let ca = &mut self.ca;
        if self.params.use_bandwidth_switch {
            let maxB = ca.maxB;
            let old_maxB = ca.old_maxB;
            ca.old_maxB = ca.maxB;
            if !between(
                maxB.wrapping_mul(5),
                old_maxB.wrapping_mul(4),
                old_maxB.wrapping_mul(6),
            ) {
                ca.beta = BETA_MIN;
                ca.modeswitch = 0;
                return;
            }
        }

        if ca.modeswitch != 0 && minRTT > msecs_to_jiffies(10, hz) && maxRTT != 0 {
            // The kernel stores the u32 quotient into a u8.
            ca.beta = ((minRTT << 7) / maxRTT) as u8;
            ca.beta = ca.beta.clamp(BETA_MIN, BETA_MAX);
        } else {
            ca.beta = BETA_MIN;
            ca.modeswitch = 1;
        }
    }

    /// net/ipv4/tcp_htcp.c: htcp_alpha_update(): factor = 1 + (10 d + (d/2)^2 / HZ) / HZ with
    /// d = jiffies since the last congestion beyond 1 s, scaled by minRTT / 100 ms (clamped to
    /// [0.5, 10], << 3) with `use_rtt_scaling`; alpha = 2 factor (128 - beta). `u32` wraps as
    /// in C; the divisor `10 * minRTT` is kept >= 1 so that a wrapped product cannot divide by 0.
    fn alpha_update(&mut self, now: u32, hz: u32) {
        let min_rtt = self.ca.minRTT;
        let mut factor: u32 = 1;
        let mut diff = self.cong_time(now);

        if diff > hz {
            diff -= hz;
            let sq = (diff / 2).wrapping_mul(diff / 2) / hz;
            factor = 1 + diff.wrapping_mul(10).wrapping_add(sq) / hz;
        }

        if self.params.use_rtt_scaling && min_rtt != 0 {
            let scale = (hz << 3) / min_rtt.wrapping_mul(10).max(1);
            // clamping ratio to interval [0.5,10]<<3
            let scale = scale.clamp(1 << 2, 10 << 3);
            factor = (factor << 3) / scale;
            if factor == 0 {
                factor = 1;
            }
        }

        let ca = &mut self.ca;
        ca.alpha = 2u32
            .wrapping_mul(factor)
            .wrapping_mul(ALPHA_BASE - ca.beta as u32);
        if ca.alpha == 0 {
            ca.alpha = ALPHA_BASE;
        }
    }

    /// net/ipv4/tcp_htcp.c: htcp_param_update(): on a congestion event update beta then alpha,
    /// and let maxRTT fade 5 % toward minRTT (to follow routing changes).
    #[allow(non_snake_case)]
    fn param_update(&mut self, now: u32, hz: u32) {
        let minRTT = self.ca.minRTT;
        let maxRTT = self.ca.maxRTT;
        self.beta_update(minRTT, maxRTT, hz);
        self.alpha_update(now, hz);
        // add slowly fading memory for maxRTT to accommodate routing changes
        if minRTT > 0 && maxRTT > minRTT {
            self.ca.maxRTT = minRTT + (maxRTT - minRTT).wrapping_mul(95) / 100;
        }
    }
}

impl CongestionControl for Htcp {
    fn name(&self) -> &'static str {
        "htcp"
    }

    /// net/ipv4/tcp_htcp.c: htcp_init().
    fn init(&mut self, tp: &mut TcpSock) {
        self.ca = HtcpState::initial(tp.jiffies());
    }

    /// net/ipv4/tcp_htcp.c: htcp_recalc_ssthresh(): update beta and alpha, then
    /// `max(cwnd * beta >> 7, 2)`.
    fn ssthresh(&mut self, tp: &mut TcpSock) -> u32 {
        self.param_update(tp.jiffies(), tp.clock.hz);
        (tp.snd_cwnd.wrapping_mul(self.ca.beta as u32) >> 7).max(2)
    }

    /// net/ipv4/tcp_htcp.c: htcp_cong_avoid(): slow start, else cwnd += alpha / cwnd per
    /// packet: +1 once `snd_cwnd_cnt * alpha >> 7 >= cwnd` (then alpha is recomputed), the
    /// counter advancing by the packets the last Open-state ACK acked.
    fn cong_avoid(&mut self, tp: &mut TcpSock, _ack: u64, acked: u32) {
        if !tp.is_cwnd_limited() {
            return;
        }
        if tp.in_slow_start() {
            tcp_slow_start(tp, acked);
            return;
        }
        // In dangerous area, increase slowly.
        if (tp.snd_cwnd_cnt.wrapping_mul(self.ca.alpha) >> 7) >= tp.snd_cwnd {
            if tp.snd_cwnd < tp.snd_cwnd_clamp {
                tp.set_cwnd(tp.snd_cwnd + 1);
            }
            tp.snd_cwnd_cnt = 0;
            let (now, hz) = (tp.jiffies(), tp.clock.hz);
            self.alpha_update(now, hz);
        } else {
            tp.snd_cwnd_cnt = tp.snd_cwnd_cnt.wrapping_add(self.ca.pkts_acked as u32);
        }
        self.ca.pkts_acked = 1;
    }

    /// net/ipv4/tcp_htcp.c: htcp_state(): back in Open after a reduction, the congestion clock
    /// restarts (at the end of the event); entering CWR/Recovery/Loss saves the undo state.
    fn set_state(&mut self, tp: &mut TcpSock, new_state: CaState) {
        match new_state {
            CaState::Open => {
                if self.ca.undo.is_some() {
                    self.ca.last_cong = tp.jiffies();
                    self.ca.undo = None;
                }
            }
            CaState::Cwr | CaState::Recovery | CaState::Loss => self.reset(tp.jiffies()),
            CaState::Disorder => {}
        }
    }

    /// net/ipv4/tcp_htcp.c: measure_achieved_throughput(): RTT samples (in jiffies, rounded
    /// up) and, with the bandwidth switch, the achieved throughput once per window and minRTT.
    fn pkts_acked(&mut self, tp: &mut TcpSock, sample: &AckSample) {
        let now = tp.jiffies();
        let hz = tp.clock.hz;

        if tp.ca_state == CaState::Open {
            self.ca.pkts_acked = sample.pkts_acked as u16;
        }
        if sample.rtt_us > 0 {
            // usecs_to_jiffies() takes an unsigned int.
            self.measure_rtt(tp, usecs_to_jiffies(sample.rtt_us as u32, hz));
        }
        if !self.params.use_bandwidth_switch {
            return;
        }

        // achieved throughput calculations
        if !matches!(tp.ca_state, CaState::Open | CaState::Disorder) {
            self.ca.packetcount = 0;
            self.ca.lasttime = now;
            return;
        }

        self.ca.packetcount = self.ca.packetcount.wrapping_add(sample.pkts_acked);

        let alpha_pkts = (self.ca.alpha >> 7).max(1); // ca->alpha >> 7 ? : 1
        let elapsed = now.wrapping_sub(self.ca.lasttime);
        if self.ca.packetcount >= tp.snd_cwnd.wrapping_sub(alpha_pkts)
            && elapsed >= self.ca.minRTT
            && self.ca.minRTT > 0
        {
            let cur_bi = self.ca.packetcount.wrapping_mul(hz) / elapsed;
            if self.ccount(now) <= 3 {
                // just after backoff
                self.ca.minB = cur_bi;
                self.ca.maxB = cur_bi;
                self.ca.Bi = cur_bi;
            } else {
                let ca = &mut self.ca;
                ca.Bi = (3u32.wrapping_mul(ca.Bi).wrapping_add(cur_bi)) / 4;
                if ca.Bi > ca.maxB {
                    ca.maxB = ca.Bi;
                }
                if ca.minB > ca.maxB {
                    ca.minB = ca.maxB;
                }
            }
            self.ca.packetcount = 0;
            self.ca.lasttime = now;
        }
    }

    /// net/ipv4/tcp_htcp.c: htcp_cwnd_undo(): restore the saved congestion time, maxRTT and
    /// old_maxB, then `tcp_reno_undo_cwnd()`.
    fn undo_cwnd(&mut self, tp: &mut TcpSock) -> u32 {
        if let Some((last_cong, max_rtt, old_max_b)) = self.ca.undo.take() {
            self.ca.last_cong = last_cong;
            self.ca.maxRTT = max_rtt;
            self.ca.old_maxB = old_max_b;
        }
        tcp_reno_undo_cwnd(tp)
    }
}

/// include/net/tcp.h: between(seq1, seq2, seq3): `seq3 - seq2 >= seq1 - seq2` in `u32`.
fn between(seq1: u32, seq2: u32, seq3: u32) -> bool {
    seq3.wrapping_sub(seq2) >= seq1.wrapping_sub(seq2)
}

/// include/linux/jiffies.h: usecs_to_jiffies() (rounds up), with `HZ = hz`.
fn usecs_to_jiffies(us: u32, hz: u32) -> u32 {
    (us as u64 * hz as u64).div_ceil(1_000_000) as u32
}

/// include/linux/jiffies.h: msecs_to_jiffies() (rounds up), with `HZ = hz`.
fn msecs_to_jiffies(ms: u32, hz: u32) -> u32 {
    (ms as u64 * hz as u64).div_ceil(1000) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    const HZ: u32 = 250;

    fn sock(cwnd: u32, ssthresh: u32) -> TcpSock {
        let mut tp = TcpSock::new(
            1448,
            cwnd,
            u32::MAX,
            crate::tcp::clock::KernelClock::new(HZ),
        );
        tp.snd_ssthresh = ssthresh;
        tp.is_cwnd_limited = true;
        tp
    }

    fn htcp(use_rtt_scaling: bool, use_bandwidth_switch: bool) -> Htcp {
        Htcp::new(HtcpParams {
            use_rtt_scaling,
            use_bandwidth_switch,
        })
    }

    /// alpha after `secs` since the last congestion, with minRTT `min_rtt` jiffies.
    fn alpha_after(cc: &mut Htcp, secs: f64, min_rtt: u32) -> u32 {
        cc.ca.last_cong = 1000;
        cc.ca.minRTT = min_rtt;
        cc.alpha_update(1000 + (secs * HZ as f64) as u32, HZ);
        cc.alpha()
    }

    fn ack(cc: &mut Htcp, tp: &mut TcpSock, pkts_acked: u32, rtt_us: i64) {
        cc.pkts_acked(
            tp,
            &AckSample {
                pkts_acked,
                rtt_us,
                in_flight: 0,
            },
        );
    }

    #[test]
    fn alpha_grows_with_time_since_congestion() {
        let mut cc = htcp(false, false);
        // Within 1 s: Reno's alpha, 2 (1 - 0.5) = 1.
        assert_eq!(alpha_after(&mut cc, 0.5, 25), ALPHA_BASE);
        assert_eq!(alpha_after(&mut cc, 1.0, 25), ALPHA_BASE);
        // Beyond: 1 + 10 d + (d / 2)^2 with d = delta - 1 s, times 2 (1 - beta) = 1.
        for (secs, factor) in [(3.0, 22), (5.0, 45), (10.0, 111), (2.5, 16)] {
            let d: f64 = secs - 1.0;
            assert_eq!(
                (1.0 + 10.0 * d + (d / 2.0) * (d / 2.0)).floor() as u32,
                factor
            );
            assert_eq!(
                alpha_after(&mut cc, secs, 25),
                2 * factor * (128 - 64),
                "{secs} s"
            );
        }
        // With beta = 0.8 the increase is 2 (1 - 0.8) = 0.4 of the factor.
        cc.ca.beta = BETA_MAX;
        assert_eq!(alpha_after(&mut cc, 3.0, 25), 2 * 22 * (128 - 102));
    }

    #[test]
    fn alpha_rtt_scaling_by_min_rtt_over_100ms_clamped() {
        let mut cc = htcp(true, false);
        // factor 22 at 3 s, scaled by minRTT / 100 ms clamped to [0.5, 10] (in 1/8):
        // 100 ms unchanged, 200 ms x2, 40 ms 22 * 8 / 20, 4 ms clamped to 1/10, 2 s clamped
        // to x2, no minRTT yet: no scaling.
        for (min_rtt, factor) in [(25, 22), (50, 44), (10, 8), (1, 2), (500, 44), (0, 22)] {
            assert_eq!(
                alpha_after(&mut cc, 3.0, min_rtt) >> 7,
                factor,
                "minRTT {min_rtt}"
            );
        }
        // Scaled below 1: at least 1.
        assert_eq!(alpha_after(&mut cc, 0.2, 1), 2 * (128 - 64));
    }

    #[test]
    fn beta_adapts_to_min_over_max_rtt() {
        let mut cc = htcp(false, false);
        let mut tp = sock(1000, 10);
        cc.init(&mut tp);
        // RTT samples in Open: minRTT 100 ms = 25 jiffies; maxRTT grows by <= 20 ms per sample.
        ack(&mut cc, &mut tp, 1, 100_000);
        ack(&mut cc, &mut tp, 1, 300_000); // a jump of 200 ms is ignored
        assert_eq!((cc.ca.minRTT, cc.ca.maxRTT), (25, 25));
        for us in [120_000, 140_000, 160_000] {
            ack(&mut cc, &mut tp, 1, us);
        }
        assert_eq!(cc.ca.maxRTT, 40);
        // First congestion event: beta 0.5 (mode switch delayed); maxRTT fades 5% toward
        // minRTT: 25 + 15 * 95 / 100.
        assert_eq!((cc.ssthresh(&mut tp), cc.ca.maxRTT), (500, 39));
        // Then beta = minRTT / maxRTT = 25 / 39 -> 82 / 128.
        assert_eq!((cc.ssthresh(&mut tp), cc.beta()), ((1000 * 82) >> 7, 82));
        // Clamped to [0.5, 0.8]; minRTT <= 10 ms gives 0.5.
        for (min, max, beta) in [(25, 26, 102), (25, 100, 64), (2, 3, 64)] {
            (cc.ca.minRTT, cc.ca.maxRTT) = (min, max);
            assert_eq!(cc.ssthresh(&mut tp), (1000 * beta) >> 7, "{min} {max}");
        }
        assert_eq!(cc.ssthresh(&mut sock(3, 2)), 2);
    }

    #[test]
    fn bandwidth_switch_resets_beta() {
        let mut cc = htcp(false, true);
        cc.ca.modeswitch = 1;
        // maxB within 20% of the previous maximum: beta from the RTTs.
        (cc.ca.maxB, cc.ca.old_maxB) = (1100, 1000);
        cc.beta_update(25, 30, HZ);
        assert_eq!((cc.beta(), cc.ca.old_maxB), (BETA_MAX as u32, 1100));
        // A 30% change: back to 0.5 and the mode switch waits again.
        cc.ca.maxB = 1430;
        cc.beta_update(25, 30, HZ);
        assert_eq!((cc.beta(), cc.ca.modeswitch), (BETA_MIN as u32, 0));
    }

    #[test]
    fn throughput_sample_once_per_window() {
        let mut cc = htcp(true, true);
        let mut tp = sock(100, 10);
        cc.init(&mut tp);
        tp.tcp_mstamp_us = 100_000; // 25 jiffies
        ack(&mut cc, &mut tp, 100, 100_000);
        // 100 packets in 25 jiffies = 1000 packets/s, just after backoff: min = max = Bi.
        let ca = cc.ca;
        assert_eq!(
            (ca.minB, ca.maxB, ca.Bi, ca.packetcount),
            (1000, 1000, 1000, 0)
        );
        // Not Open/Disorder: the measurement restarts.
        tp.ca_state = CaState::Recovery;
        ack(&mut cc, &mut tp, 5, 100_000);
        assert_eq!((cc.ca.packetcount, cc.ca.lasttime), (0, 25));
    }

    #[test]
    fn cong_avoid_adds_alpha_per_rtt() {
        let mut cc = htcp(false, false);
        let mut tp = sock(1000, 10);
        cc.init(&mut tp);
        // alpha = 1: +1 after cwnd + 1 ACKs.
        (0..1001).for_each(|_| cc.cong_avoid(&mut tp, 0, 1));
        assert_eq!((tp.snd_cwnd, tp.snd_cwnd_cnt), (1001, 0));
        // 3 s after the last congestion alpha is 22 (recomputed at the next increase): about
        // 22 packets per window of ACKs.
        tp.tcp_mstamp_us = 3_000_000;
        (0..1002).for_each(|_| cc.cong_avoid(&mut tp, 0, 1));
        assert_eq!(cc.alpha() >> 7, 22);
        let w = tp.snd_cwnd;
        (0..w).for_each(|_| cc.cong_avoid(&mut tp, 0, 1));
        assert!(
            (20..=22).contains(&(tp.snd_cwnd - w)),
            "{}",
            tp.snd_cwnd - w
        );
        // Slow start drops its leftover, as in the kernel.
        let mut tp = sock(10, 12);
        cc.cong_avoid(&mut tp, 0, 5);
        assert_eq!((tp.snd_cwnd, tp.snd_cwnd_cnt), (12, 0));
    }

    #[test]
    fn state_changes_and_undo() {
        let mut cc = htcp(true, true);
        let mut tp = sock(100, 10);
        cc.init(&mut tp); // last_cong = 0
        tp.tcp_mstamp_us = 2_000_000;
        cc.ca.maxRTT = 40;
        cc.set_state(&mut tp, CaState::Recovery);
        assert_eq!(cc.ca.last_cong, 500);
        cc.ca.maxRTT = 30;
        tp.prior_cwnd = 200;
        assert_eq!(cc.undo_cwnd(&mut tp), 200);
        assert_eq!((cc.ca.last_cong, cc.ca.maxRTT, cc.ca.undo), (0, 40, None));
        // End of recovery: the congestion clock restarts then (not in Disorder).
        cc.set_state(&mut tp, CaState::Recovery);
        tp.tcp_mstamp_us = 2_500_000;
        cc.set_state(&mut tp, CaState::Disorder);
        assert_eq!(cc.ca.last_cong, 500);
        cc.set_state(&mut tp, CaState::Open);
        assert_eq!((cc.ca.last_cong, cc.ca.undo), (625, None));
    }

    #[test]
    fn info_and_build_check_values() {
        let i = info();
        assert_eq!(
            (i.name, i.base, i.source),
            ("htcp", "htcp", "Linux 6.18 net/ipv4/tcp_htcp.c")
        );
        let names: Vec<_> = i.params.iter().map(|p| p.name).collect();
        assert_eq!(names, ["use_rtt_scaling", "use_bandwidth_switch"]);
        assert_eq!(build("htcp", &Params::new()).unwrap().name(), "htcp");
        let p: Params = [("use_bandwidth_switch".to_string(), ParamValue::Int(0))].into();
        assert!(build("htcp", &p).is_ok());
        let p: Params = [("use_rtt_scaling".to_string(), ParamValue::Int(2))].into();
        match build("htcp", &p) {
            Err(CcError::BadValue {
                algorithm, param, ..
            }) => {
                assert_eq!(
                    (algorithm.as_str(), param.as_str()),
                    ("htcp", "use_rtt_scaling")
                )
            }
            other => panic!("{:?}", other.map(|c| c.name())),
        }
    }
}
