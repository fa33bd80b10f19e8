//! TCP Illinois (Liu, Başar and Srikant, 2008), as Linux 6.18 implements it in
//! `net/ipv4/tcp_illinois.c`.
//!
//! A loss-based AIMD whose additive increase `alpha` and multiplicative decrease `beta` follow
//! the queueing delay: once per RTT the average delay `da` (mean RTT of the round minus the base
//! RTT) is compared with the largest delay seen, `dm` (max RTT minus base RTT). With no queueing
//! (`da <= dm / 100`) alpha is `ALPHA_MAX` (10 packets per RTT), falling along
//! `k1 / (k2 + da)` to `ALPHA_MIN` (~0.3) as `da` reaches `dm`; beta is `BETA_MIN` (1/8) below
//! `dm / 10`, `BETA_MAX` (1/2) above `8 dm / 10` and linear in between. Below `win_thresh`
//! packets Illinois is Reno (alpha 1, beta 1/2). After the delay has been high, alpha returns to
//! `ALPHA_MAX` only after `theta` consecutive low-delay RTTs.
//!
//! We follow Linux 6.18. Every function names the kernel function it follows; the arithmetic is
//! the kernel's (`u32` fixed point: alpha in 1/128, beta in 1/64; `u16` counters, wrapping where
//! C wraps). The module parameters `win_thresh` and `theta` are per instance here, same names and
//! defaults; the kernel's `int` parameters are accepted as 0..2147483647.
//!
//! Where we diverge from the kernel, and why:
//! - Sequence numbers are `u64` bytes that never wrap, so `after(ack, ca->end_seq)` is `>`.
//! - None in the window arithmetic. Kernel behaviours we keep: the slow-start leftover of
//!   `tcp_slow_start` is dropped; the increase counts `ca->acked` (the packets of the ACK's
//!   `pkts_acked`, a `u16`) once and then 1 per further call; `max_rtt` is never aged.

use super::params::ParamReader;
use super::reno::{tcp_reno_undo_cwnd, tcp_slow_start};
use super::{
    AckSample, AlgorithmInfo, CaState, CcError, CongestionControl, ParamInfo, ParamValue, Params,
};
use crate::tcp::sock::TcpSock;

/// Fixed-point shift of alpha (`ALPHA_SHIFT`).
pub const ALPHA_SHIFT: u32 = 7;
/// 1.0 in alpha's fixed point (`ALPHA_SCALE`).
pub const ALPHA_SCALE: u32 = 1 << ALPHA_SHIFT;
/// Smallest alpha, ~0.3 (`ALPHA_MIN` = 38/128).
pub const ALPHA_MIN: u32 = (3 * ALPHA_SCALE) / 10;
/// Largest alpha, 10.0 (`ALPHA_MAX`).
pub const ALPHA_MAX: u32 = 10 * ALPHA_SCALE;
/// Reno's alpha, 1.0 (`ALPHA_BASE`).
pub const ALPHA_BASE: u32 = ALPHA_SCALE;
/// RTT samples are capped here (~3.3 s) so alpha's math cannot wrap (`RTT_MAX`).
pub const RTT_MAX: u32 = u32::MAX / ALPHA_MAX;
/// Fixed-point shift of beta (`BETA_SHIFT`).
pub const BETA_SHIFT: u32 = 6;
/// 1.0 in beta's fixed point (`BETA_SCALE`).
pub const BETA_SCALE: u32 = 1 << BETA_SHIFT;
/// Smallest beta, 1/8 (`BETA_MIN`).
pub const BETA_MIN: u32 = BETA_SCALE / 8;
/// Largest beta, 1/2 (`BETA_MAX`).
pub const BETA_MAX: u32 = BETA_SCALE / 2;
/// Reno's beta (`BETA_BASE` = `BETA_MAX`).
pub const BETA_BASE: u32 = BETA_MAX;
/// Default `win_thresh`: window threshold for starting adaptive sizing, packets.
pub const DEFAULT_WIN_THRESH: u32 = 15;
/// Default `theta`: number of fast RTTs before full growth.
pub const DEFAULT_THETA: u32 = 5;

/// What `cclab presets` lists for TCP Illinois.
pub fn info() -> AlgorithmInfo {
    AlgorithmInfo {
        name: "illinois",
        base: "illinois",
        description: "TCP Illinois: loss-based AIMD with alpha 0.3..10 and beta 1/8..1/2 set \
                      by the queueing delay",
        source: "Linux 6.18 net/ipv4/tcp_illinois.c",
        params: vec![
            ParamInfo {
                name: "win_thresh",
                default: ParamValue::Int(DEFAULT_WIN_THRESH as i64),
                doc: "window threshold for starting adaptive sizing, packets: below it Illinois \
                      is Reno; an integer 0..2147483647",
            },
            ParamInfo {
                name: "theta",
                default: ParamValue::Int(DEFAULT_THETA as i64),
                doc: "number of fast (low-delay) RTTs before alpha returns to full growth; an \
                      integer 0..2147483647",
            },
        ],
        preset_params: Params::new(),
    }
}

/// Build TCP Illinois from `params` (names already checked by the registry; values here).
pub fn build(algorithm: &str, params: &Params) -> Result<Box<dyn CongestionControl>, CcError> {
    let r = ParamReader::new(algorithm, params);
    let max = i32::MAX as i64;
    let win_thresh = r.int("win_thresh", DEFAULT_WIN_THRESH as i64, 0, max)? as u32;
    let theta = r.int("theta", DEFAULT_THETA as i64, 0, max)? as u32;
    Ok(Box::new(Illinois::new(win_thresh, theta)))
}

/// TCP Illinois: `struct illinois` (net/ipv4/tcp_illinois.c) plus the module parameters.
#[derive(Debug, Clone)]
pub struct Illinois {
    /// `win_thresh` module parameter.
    win_thresh: u32,
    /// `theta` module parameter.
    theta: u32,
    /// Sum of RTTs measured within the last RTT, usecs (`sum_rtt`).
    sum_rtt: u64,
    /// Number of RTTs measured within the last RTT (`cnt_rtt`, a `u16`).
    cnt_rtt: u16,
    /// Min of all RTTs, usecs (`base_rtt`).
    base_rtt: u32,
    /// Max of all RTTs, usecs (`max_rtt`).
    max_rtt: u32,
    /// Right edge of the current RTT, bytes (`end_seq`).
    end_seq: u64,
    /// Additive increase, 1/128 packets (`alpha`).
    alpha: u32,
    /// Multiplicative decrease, 1/64 (`beta`).
    beta: u32,
    /// Packets acked by the current ACK (`acked`, a `u16`).
    acked: u16,
    /// Whether the average RTT has gone above the low threshold (`rtt_above`).
    rtt_above: bool,
    /// Number of RTTs below the threshold (`rtt_low`, a `u8`).
    rtt_low: u8,
}

impl Default for Illinois {
    /// Illinois with Linux's default tunables.
    fn default() -> Self {
        Illinois::new(DEFAULT_WIN_THRESH, DEFAULT_THETA)
    }
}

impl Illinois {
    /// An Illinois instance with these module parameters, in its `init` state.
    pub fn new(win_thresh: u32, theta: u32) -> Self {
        Illinois {
            win_thresh,
            theta,
            sum_rtt: 0,
            cnt_rtt: 0,
            base_rtt: 0x7fff_ffff,
            max_rtt: 0,
            end_seq: 0,
            alpha: ALPHA_MAX,
            beta: BETA_BASE,
            acked: 0,
            rtt_above: false,
            rtt_low: 0,
        }
    }

    /// Current additive increase, in 1/128 packets per RTT.
    pub fn alpha(&self) -> u32 {
        self.alpha
    }

    /// Current multiplicative decrease, in 1/64.
    pub fn beta(&self) -> u32 {
        self.beta
    }

    /// net/ipv4/tcp_illinois.c: rtt_reset(): start a new RTT round at `snd_nxt`.
    fn rtt_reset(&mut self, tp: &TcpSock) {
        self.end_seq = tp.snd_nxt;
        self.cnt_rtt = 0;
        self.sum_rtt = 0;
    }

    /// Maximum queueing delay, usecs.
    ///
    /// net/ipv4/tcp_illinois.c: max_delay().
    fn max_delay(&self) -> u32 {
        self.max_rtt.wrapping_sub(self.base_rtt)
    }

    /// Average queueing delay of this round, usecs (only called with `cnt_rtt > 0`).
    ///
    /// net/ipv4/tcp_illinois.c: avg_delay().
    fn avg_delay(&self) -> u32 {
        let t = self.sum_rtt / self.cnt_rtt as u64;
        (t as u32).wrapping_sub(self.base_rtt)
    }

    /// Alpha for average delay `da` and maximum delay `dm`: `ALPHA_MAX` while the delay stays
    /// below `d1 = dm / 100` (after `theta` low RTTs once it has been above), else
    /// `k1 / (k2 + da)`, a convex curve from `ALPHA_MAX` at `d1` to `ALPHA_MIN` at `dm`.
    ///
    /// net/ipv4/tcp_illinois.c: alpha().
    fn calc_alpha(&mut self, da: u32, dm: u32) -> u32 {
        let d1 = dm / 100; // low threshold
        if da <= d1 {
            // If never got out of low delay zone, then use max.
            if !self.rtt_above {
                return ALPHA_MAX;
            }
            // Wait for theta good RTTs before allowing alpha to go to alpha max.
            self.rtt_low = self.rtt_low.wrapping_add(1);
            if (self.rtt_low as u32) < self.theta {
                return self.alpha;
            }
            self.rtt_low = 0;
            self.rtt_above = false;
            return ALPHA_MAX;
        }
        self.rtt_above = true;
        let dm = dm - d1;
        let da = da - d1;
        dm.wrapping_mul(ALPHA_MAX)
            / dm.wrapping_add(da.wrapping_mul(ALPHA_MAX - ALPHA_MIN) / ALPHA_MIN)
    }

    /// net/ipv4/tcp_illinois.c: update_params(): once per RTT, Reno's alpha and beta below
    /// `win_thresh`, else alpha and beta from the round's delays; then start a new round.
    fn update_params(&mut self, tp: &TcpSock) {
        if tp.snd_cwnd < self.win_thresh {
            self.alpha = ALPHA_BASE;
            self.beta = BETA_BASE;
        } else if self.cnt_rtt > 0 {
            let dm = self.max_delay();
            let da = self.avg_delay();
            self.alpha = self.calc_alpha(da, dm);
            self.beta = beta(da, dm);
        }
        self.rtt_reset(tp);
    }
}

/// Beta for average delay `da` and maximum delay `dm`: `BETA_MIN` up to `d2 = dm / 10`,
/// `BETA_MAX` from `d3 = 8 dm / 10`, linear in between.
///
/// net/ipv4/tcp_illinois.c: beta().
pub fn beta(da: u32, dm: u32) -> u32 {
    let d2 = dm / 10;
    if da <= d2 {
        return BETA_MIN;
    }
    let d3 = dm.wrapping_mul(8) / 10;
    if da >= d3 || d3 <= d2 {
        return BETA_MAX;
    }
    BETA_MIN
        .wrapping_mul(d3)
        .wrapping_sub(BETA_MAX.wrapping_mul(d2))
        .wrapping_add((BETA_MAX - BETA_MIN).wrapping_mul(da))
        / (d3 - d2)
}

impl CongestionControl for Illinois {
    fn name(&self) -> &'static str {
        "illinois"
    }

    /// net/ipv4/tcp_illinois.c: tcp_illinois_init().
    fn init(&mut self, tp: &mut TcpSock) {
        self.alpha = ALPHA_MAX;
        self.beta = BETA_BASE;
        self.base_rtt = 0x7fff_ffff;
        self.max_rtt = 0;
        self.acked = 0;
        self.rtt_low = 0;
        self.rtt_above = false;
        self.rtt_reset(tp);
    }

    /// net/ipv4/tcp_illinois.c: tcp_illinois_ssthresh(): `max(cwnd - cwnd * beta / 64, 2)`.
    fn ssthresh(&mut self, tp: &mut TcpSock) -> u32 {
        let cwnd = tp.snd_cwnd;
        cwnd.wrapping_sub(cwnd.wrapping_mul(self.beta) >> BETA_SHIFT)
            .max(2)
    }

    /// net/ipv4/tcp_illinois.c: tcp_illinois_cong_avoid(): update alpha/beta once per RTT;
    /// slow start, or `cwnd += alpha / cwnd` per packet acked.
    fn cong_avoid(&mut self, tp: &mut TcpSock, ack: u64, acked: u32) {
        if ack > self.end_seq {
            self.update_params(tp);
        }
        // RFC2861 only increase cwnd if fully utilized.
        if !tp.is_cwnd_limited() {
            return;
        }
        if tp.in_slow_start() {
            tcp_slow_start(tp, acked);
        } else {
            // snd_cwnd_cnt is # of packets since last cwnd increment.
            tp.snd_cwnd_cnt = tp.snd_cwnd_cnt.wrapping_add(self.acked as u32);
            self.acked = 1;
            // Close approximation of snd_cwnd += alpha / snd_cwnd.
            let delta = tp.snd_cwnd_cnt.wrapping_mul(self.alpha) >> ALPHA_SHIFT;
            if delta >= tp.snd_cwnd {
                let cwnd = tp.snd_cwnd.wrapping_add(delta / tp.snd_cwnd);
                tp.set_cwnd(cwnd.min(tp.snd_cwnd_clamp));
                tp.snd_cwnd_cnt = 0;
            }
        }
    }

    /// net/ipv4/tcp_illinois.c: tcp_illinois_state(): on entering Loss (RTO), back to Reno's
    /// alpha and beta and a new round.
    fn set_state(&mut self, tp: &mut TcpSock, new_state: CaState) {
        if new_state == CaState::Loss {
            self.alpha = ALPHA_BASE;
            self.beta = BETA_BASE;
            self.rtt_low = 0;
            self.rtt_above = false;
            self.rtt_reset(tp);
        }
    }

    /// net/ipv4/tcp_illinois.c: tcp_illinois_acked(): record the ACK's packets and RTT.
    fn pkts_acked(&mut self, _tp: &mut TcpSock, sample: &AckSample) {
        self.acked = sample.pkts_acked as u16;
        // dup ack, no rtt sample
        if sample.rtt_us < 0 {
            return;
        }
        // Ignore bogus values: this prevents wraparound in alpha math.
        let rtt = (sample.rtt_us as i32 as u32).min(RTT_MAX);
        self.base_rtt = self.base_rtt.min(rtt);
        self.max_rtt = self.max_rtt.max(rtt);
        self.cnt_rtt = self.cnt_rtt.wrapping_add(1);
        self.sum_rtt += rtt as u64;
    }

    /// `.undo_cwnd = tcp_reno_undo_cwnd`.
    fn undo_cwnd(&mut self, tp: &mut TcpSock) -> u32 {
        tcp_reno_undo_cwnd(tp)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u32 = 1000;
    const BASE: i64 = 100_000;

    fn setup(cwnd: u32) -> (Illinois, TcpSock) {
        let mut tp = TcpSock::new(MSS, cwnd, 100_000, crate::tcp::clock::KernelClock::new(250));
        tp.snd_ssthresh = 10; // congestion avoidance
        tp.is_cwnd_limited = true;
        let mut cc = Illinois::default();
        cc.init(&mut tp);
        (cc, tp)
    }

    /// One RTT: the window present at its start is acked one packet per ACK; packet `i` has RTT
    /// `rtt(i)`. The first ACK (which closes the previous round) carries no RTT sample, so each
    /// round's average is exactly its own samples'.
    fn round(cc: &mut Illinois, tp: &mut TcpSock, rtt: impl Fn(u32) -> i64) {
        let w = tp.snd_cwnd;
        tp.snd_nxt = tp.snd_una + (w * MSS) as u64;
        for i in 0..w {
            tp.tcp_mstamp_us += 1000;
            tp.snd_una += MSS as u64;
            let rtt_us = if i == 0 { -1 } else { rtt(i) };
            cc.pkts_acked(
                tp,
                &AckSample {
                    pkts_acked: 1,
                    rtt_us,
                    in_flight: w,
                },
            );
            let ack = tp.snd_una;
            cc.cong_avoid(tp, ack, 1);
        }
    }

    /// The kernel's alpha() for a connection that has seen delay (rtt_above), from its formula.
    fn expected_alpha(da: u32, dm: u32) -> u32 {
        let d1 = dm / 100;
        (dm - d1) * ALPHA_MAX / ((dm - d1) + (da - d1) * (ALPHA_MAX - ALPHA_MIN) / ALPHA_MIN)
    }

    #[test]
    fn constants_match_the_kernel() {
        assert_eq!((ALPHA_MIN, ALPHA_MAX, ALPHA_BASE), (38, 1280, 128));
        assert_eq!((BETA_MIN, BETA_MAX, BETA_BASE), (8, 32, 32));
        assert_eq!(RTT_MAX, 3_355_443);
    }

    #[test]
    fn no_queueing_delay_gives_alpha_max_and_ten_packets_per_rtt() {
        let (mut cc, mut tp) = setup(100);
        round(&mut cc, &mut tp, |_| BASE);
        for _ in 0..3 {
            let before = tp.snd_cwnd;
            round(&mut cc, &mut tp, |_| BASE);
            assert_eq!((cc.alpha(), cc.beta()), (ALPHA_MAX, BETA_MIN));
            // alpha = 10: +1 every ceil(cwnd / 10) ACKs, so +9..10 per RTT.
            let grew = tp.snd_cwnd - before;
            assert!((9..=10).contains(&grew), "grew {grew}");
        }
        // beta 1/8: ssthresh = cwnd - cwnd / 8.
        tp.snd_cwnd = 160;
        assert_eq!(cc.ssthresh(&mut tp), 140);
    }

    #[test]
    fn alpha_falls_toward_alpha_min_and_beta_rises_with_delay() {
        let (mut cc, mut tp) = setup(100);
        // Round 1 records base RTT 100 ms and max RTT 200 ms (dm = 100 ms).
        round(&mut cc, &mut tp, |i| if i == 1 { 2 * BASE } else { BASE });
        let mut last_alpha = u32::MAX;
        let dm = 100_000u32;
        for da in [2_000u32, 10_000, 25_000, 45_000, 60_000, 80_000, 100_000] {
            round(&mut cc, &mut tp, |_| BASE + da as i64);
            round(&mut cc, &mut tp, |_| BASE + da as i64);
            let a = cc.alpha();
            assert_eq!(a, expected_alpha(da, dm), "da {da}");
            assert!(a < last_alpha, "alpha must fall with delay: {a} at {da}");
            last_alpha = a;
            let b = cc.beta();
            match da {
                ..=10_000 => assert_eq!(b, BETA_MIN, "da {da}"),
                80_000.. => assert_eq!(b, BETA_MAX, "da {da}"),
                _ => assert_eq!(b, (8 * 80_000 - 32 * 10_000 + 24 * da) / 70_000, "da {da}"),
            }
        }
        assert_eq!(last_alpha, ALPHA_MIN);
        assert_eq!(beta(45_000, dm), 20);
        // beta 1/2 at high delay: ssthresh halves.
        tp.snd_cwnd = 300;
        assert_eq!(cc.ssthresh(&mut tp), 150);
        // At alpha ~0.3 a round of 300 ACKs adds less than one packet.
        let before = tp.snd_cwnd;
        round(&mut cc, &mut tp, |_| BASE + 100_000);
        assert!(tp.snd_cwnd - before <= 1);
    }

    #[test]
    fn alpha_max_returns_only_after_theta_low_delay_rtts() {
        let (mut cc, mut tp) = setup(100);
        round(&mut cc, &mut tp, |i| if i == 1 { 2 * BASE } else { BASE });
        round(&mut cc, &mut tp, |_| BASE + 50_000);
        round(&mut cc, &mut tp, |_| BASE + 50_000);
        let high = cc.alpha();
        assert_eq!(high, expected_alpha(50_000, 100_000));
        // The delay is gone: alpha is kept for theta - 1 = 4 low rounds, and jumps to ALPHA_MAX
        // at the end of the 5th.
        round(&mut cc, &mut tp, |_| BASE); // starts by updating from the last 50 ms round
        for _ in 0..4 {
            round(&mut cc, &mut tp, |_| BASE);
            assert_eq!(cc.alpha(), high);
        }
        round(&mut cc, &mut tp, |_| BASE);
        assert_eq!(cc.alpha(), ALPHA_MAX);
    }

    #[test]
    fn reno_below_win_thresh_and_after_rto() {
        let (mut cc, mut tp) = setup(10);
        round(&mut cc, &mut tp, |i| if i == 1 { 2 * BASE } else { BASE });
        round(&mut cc, &mut tp, |_| BASE);
        // cwnd < 15: alpha 1, beta 1/2 whatever the delay.
        assert_eq!((cc.alpha(), cc.beta()), (ALPHA_BASE, BETA_BASE));
        let before = tp.snd_cwnd;
        round(&mut cc, &mut tp, |_| BASE);
        assert_eq!(tp.snd_cwnd, before + 1);
        assert_eq!(tp.snd_cwnd, 13);
        assert_eq!(cc.ssthresh(&mut tp), 7); // 13 - (13 * 32 >> 6)
                                             // With a large window and no delay alpha goes up; an RTO resets it.
        let (mut cc, mut tp) = setup(100);
        round(&mut cc, &mut tp, |_| BASE);
        round(&mut cc, &mut tp, |_| BASE);
        assert_eq!(cc.alpha(), ALPHA_MAX);
        cc.set_state(&mut tp, CaState::Recovery);
        assert_eq!(cc.alpha(), ALPHA_MAX);
        cc.set_state(&mut tp, CaState::Loss);
        assert_eq!((cc.alpha(), cc.beta()), (ALPHA_BASE, BETA_BASE));
        tp.prior_cwnd = 500;
        assert_eq!(cc.undo_cwnd(&mut tp), 500);
    }

    #[test]
    fn slow_start_is_reno() {
        let (mut cc, mut tp) = setup(10);
        tp.snd_ssthresh = 1000;
        round(&mut cc, &mut tp, |_| BASE);
        assert_eq!(tp.snd_cwnd, 20);
    }

    #[test]
    fn info_and_build() {
        let i = info();
        assert_eq!(
            (i.name, i.base, i.source),
            ("illinois", "illinois", "Linux 6.18 net/ipv4/tcp_illinois.c")
        );
        let names: Vec<_> = i.params.iter().map(|p| (p.name, p.default)).collect();
        assert_eq!(
            names,
            [
                ("win_thresh", ParamValue::Int(15)),
                ("theta", ParamValue::Int(5))
            ]
        );
        assert_eq!(
            build("illinois", &Params::new()).unwrap().name(),
            "illinois"
        );
        for (name, v) in [
            ("win_thresh", ParamValue::Int(-1)),
            ("theta", ParamValue::Float(2.5)),
        ] {
            let p: Params = [(name.to_string(), v)].into_iter().collect();
            match build("illinois", &p) {
                Err(CcError::BadValue {
                    algorithm, param, ..
                }) => {
                    assert_eq!((algorithm.as_str(), param.as_str()), ("illinois", name))
                }
                Err(e) => panic!("{name}: {e}"),
                Ok(_) => panic!("{name} = {v} accepted"),
            }
        }
    }
}
