//! TCP Veno, as Linux 6.18 implements it in `net/ipv4/tcp_veno.c`.
//!
//! Fu and Liew's Reno/Vegas hybrid for lossy (wireless) paths: a Vegas-like backlog estimate
//! `N = cwnd * (rtt - baseRTT) / rtt`, kept doubled (`diff = 2 cwnd - 2 cwnd * baseRTT / rtt`,
//! `V_PARAM_SHIFT = 1`), tells a random loss (backlog below `beta` = 3 packets: cut cwnd by 1/5)
//! from a congestive one (cut by 1/2), and in the congestive state congestion avoidance grows cwnd
//! every other RTT only.
//!
//! Every function names the kernel function it follows; the arithmetic is the kernel's (`u32`
//! windows, a `u64` target window, wrapping where C wraps). Veno has no module parameters: `beta`
//! is a `static const` in the kernel, so it is a constant here too.
//!
//! Where we diverge from the kernel, and why:
//! - None in the window arithmetic. Note two kernel behaviours we keep: `minrtt` is reset after
//!   every `cong_avoid` call (not once per RTT), so the estimate uses the RTT samples of the ACK
//!   being processed; and `cntrtt` is never reset (the kernel's reset is commented out), so after
//!   the first 3 RTT samples Veno never falls back to Reno again (until the `u16` wraps).
//! - `diff` starts at 0 (the kernel zeroes `icsk_ca_priv`), so a loss before the first estimate
//!   takes the 1/5 reduction, as in the kernel.

use super::reno::{tcp_cong_avoid_ai, tcp_reno_cong_avoid, tcp_reno_undo_cwnd, tcp_slow_start};
use super::{AckSample, AlgorithmInfo, CaEvent, CaState, CcError, CongestionControl, Params};
use crate::tcp::sock::TcpSock;

/// Fixed-point shift of `diff` and `beta` (`V_PARAM_SHIFT`): values are in half packets.
pub const V_PARAM_SHIFT: u32 = 1;
/// Backlog threshold between the non-congestive and congestive states: 3 packets, in half
/// packets (`beta = 3 << V_PARAM_SHIFT`).
pub const BETA: u32 = 3 << V_PARAM_SHIFT;
/// "No sample yet" value of `minrtt` and `basertt` (`0x7fffffff`).
const RTT_NONE: u32 = 0x7fff_ffff;

/// TCP Veno: `struct veno` (net/ipv4/tcp_veno.c).
#[derive(Debug, Clone, Default)]
pub struct Veno {
    /// If true, do veno for this RTT (`doing_veno_now`).
    doing_veno_now: bool,
    /// Number of RTT samples taken (`cntrtt`, a `u16` as in the kernel).
    cntrtt: u16,
    /// Min of RTTs measured since the last `cong_avoid`, usecs (`minrtt`).
    minrtt: u32,
    /// The min of all Veno RTT measurements seen, usecs (`basertt`).
    basertt: u32,
    /// Whether the next every-other-RTT increase happens (`inc`).
    inc: bool,
    /// Backlog estimate in half packets (`diff`).
    diff: u32,
}

impl Veno {
    /// A Veno instance, zeroed as the kernel's `icsk_ca_priv` is before `init`.
    pub fn new() -> Self {
        Veno::default()
    }

    /// The last backlog estimate, in half packets (`diff`).
    pub fn diff(&self) -> u32 {
        self.diff
    }

    /// baseRTT: lowest RTT seen (+1), usecs; `0x7fffffff` before the first sample.
    pub fn basertt(&self) -> u32 {
        self.basertt
    }

    /// Whether Veno adjusts cwnd now (false outside the Open state).
    pub fn doing_veno_now(&self) -> bool {
        self.doing_veno_now
    }

    /// Turn on Veno and clear the current RTT minimum.
    ///
    /// net/ipv4/tcp_veno.c: veno_enable().
    fn veno_enable(&mut self) {
        self.doing_veno_now = true;
        self.minrtt = RTT_NONE;
    }

    /// Turn off Veno.
    ///
    /// net/ipv4/tcp_veno.c: veno_disable().
    fn veno_disable(&mut self) {
        self.doing_veno_now = false;
    }
}

impl CongestionControl for Veno {
    fn name(&self) -> &'static str {
        "veno"
    }

    /// Forget baseRTT, allow the next increase, enable Veno.
    ///
    /// net/ipv4/tcp_veno.c: tcp_veno_init().
    fn init(&mut self, _tp: &mut TcpSock) {
        self.basertt = RTT_NONE;
        self.inc = true;
        self.veno_enable();
    }

    /// Veno's multiplicative decrease: `max(cwnd * 4 / 5, 2)` when the backlog is below beta
    /// (the loss was random, not congestive), else `max(cwnd / 2, 2)`.
    ///
    /// net/ipv4/tcp_veno.c: tcp_veno_ssthresh().
    fn ssthresh(&mut self, tp: &mut TcpSock) -> u32 {
        if self.diff < BETA {
            // In "non-congestive state", cut cwnd by 1/5.
            (tp.snd_cwnd.wrapping_mul(4) / 5).max(2)
        } else {
            // In "congestive state", cut cwnd by 1/2.
            (tp.snd_cwnd >> 1).max(2)
        }
    }

    /// With Veno on and more than 2 RTT samples: `diff = 2 cwnd - 2 cwnd * baseRTT / minRTT`,
    /// then slow start, then (with what is left of `acked`) Reno's additive increase when
    /// `diff < beta`, or one packet every other window of ACKs when congested. cwnd is kept in
    /// [2, clamp]. Without Veno (not Open) or with too few samples, Reno.
    ///
    /// net/ipv4/tcp_veno.c: tcp_veno_cong_avoid(). `ack` is the cumulative ACK in bytes.
    fn cong_avoid(&mut self, tp: &mut TcpSock, ack: u64, acked: u32) {
        if !self.doing_veno_now {
            tcp_reno_cong_avoid(tp, ack, acked);
            return;
        }

        // Limited by applications.
        if !tp.is_cwnd_limited() {
            return;
        }

        // We do the Veno calculations only if we got enough RTT samples.
        if self.cntrtt <= 2 {
            tcp_reno_cong_avoid(tp, ack, acked);
        } else {
            let rtt = self.minrtt;
            let mut target_cwnd = (tp.snd_cwnd as u64).wrapping_mul(self.basertt as u64);
            target_cwnd <<= V_PARAM_SHIFT;
            target_cwnd /= rtt as u64;
            // (u32 << 1) - u64 is computed in u64 in C, then stored in the u32 `diff`.
            self.diff = ((tp.snd_cwnd << V_PARAM_SHIFT) as u64).wrapping_sub(target_cwnd) as u32;

            let mut acked = acked;
            let mut done = false;
            if tp.in_slow_start() {
                // Slow start.
                acked = tcp_slow_start(tp, acked);
                done = acked == 0;
            }

            if !done {
                if self.diff < BETA {
                    // In the "non-congestive state", increase cwnd every RTT.
                    let w = tp.snd_cwnd;
                    tcp_cong_avoid_ai(tp, w, acked);
                } else if tp.snd_cwnd_cnt >= tp.snd_cwnd {
                    // In the "congestive state", increase cwnd every other RTT.
                    if self.inc && tp.snd_cwnd < tp.snd_cwnd_clamp {
                        tp.set_cwnd(tp.snd_cwnd + 1);
                        self.inc = false;
                    } else {
                        self.inc = true;
                    }
                    tp.snd_cwnd_cnt = 0;
                } else {
                    tp.snd_cwnd_cnt = tp.snd_cwnd_cnt.wrapping_add(acked);
                }
            }

            // done:
            if tp.snd_cwnd < 2 {
                tp.set_cwnd(2);
            } else if tp.snd_cwnd > tp.snd_cwnd_clamp {
                tp.set_cwnd(tp.snd_cwnd_clamp);
            }
        }
        // Wipe the slate clean for the next RTT (cntrtt is not reset, as in the kernel).
        self.minrtt = RTT_NONE;
    }

    /// Veno works only in the Open state.
    ///
    /// net/ipv4/tcp_veno.c: tcp_veno_state().
    fn set_state(&mut self, _tp: &mut TcpSock, new_state: CaState) {
        if new_state == CaState::Open {
            self.veno_enable();
        } else {
            self.veno_disable();
        }
    }

    /// Restarting after idle: stale samples, start again from a clean state.
    ///
    /// net/ipv4/tcp_veno.c: tcp_veno_cwnd_event().
    fn cwnd_event(&mut self, tp: &mut TcpSock, event: CaEvent) {
        if matches!(event, CaEvent::CwndRestart | CaEvent::TxStart) {
            self.init(tp);
        }
    }

    /// RTT sampling: `basertt` is the min of all samples, `minrtt` the min since the last
    /// `cong_avoid`; samples are `rtt_us + 1` so that neither is ever 0.
    ///
    /// net/ipv4/tcp_veno.c: tcp_veno_pkts_acked().
    fn pkts_acked(&mut self, _tp: &mut TcpSock, sample: &AckSample) {
        if sample.rtt_us < 0 {
            return;
        }
        // Never allow zero rtt or baseRTT.
        let vrtt = (sample.rtt_us as u32).wrapping_add(1);
        // Filter to find propagation delay.
        if vrtt < self.basertt {
            self.basertt = vrtt;
        }
        // Find the min rtt during the last rtt: current prop. delay + queuing delay.
        self.minrtt = self.minrtt.min(vrtt);
        self.cntrtt = self.cntrtt.wrapping_add(1);
    }

    /// `.undo_cwnd = tcp_reno_undo_cwnd` (net/ipv4/tcp_veno.c: tcp_veno).
    fn undo_cwnd(&mut self, tp: &mut TcpSock) -> u32 {
        tcp_reno_undo_cwnd(tp)
    }
}

/// Veno in the registry: Linux's name `veno`; no tunables (the kernel's `beta` is a constant).
pub fn info() -> AlgorithmInfo {
    AlgorithmInfo {
        name: "veno",
        base: "veno",
        description: "TCP Veno: Reno that cuts cwnd by 1/5 instead of 1/2 when the RTT-estimated \
                      backlog is below 3 packets (random loss)",
        source: "Linux 6.18 net/ipv4/tcp_veno.c",
        params: Vec::new(),
        preset_params: Params::new(),
    }
}

/// Build Veno (no tunables: names are checked by the registry, so `params` is empty).
pub fn build(_algorithm: &str, _params: &Params) -> Result<Box<dyn CongestionControl>, CcError> {
    Ok(Box::new(Veno::new()))
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u32 = 1000;

    fn sock(cwnd: u32) -> TcpSock {
        let mut tp = TcpSock::new(MSS, cwnd, 10_000, crate::tcp::clock::KernelClock::new(250));
        tp.is_cwnd_limited = true;
        tp
    }

    fn sample(rtt_us: i64) -> AckSample {
        AckSample {
            pkts_acked: 1,
            rtt_us,
            in_flight: 0,
        }
    }

    /// Feed `n` ACKs of one packet, each with an RTT sample of `rtt_us`.
    fn acks(cc: &mut Veno, tp: &mut TcpSock, n: u32, rtt_us: i64) {
        for _ in 0..n {
            tp.tcp_mstamp_us += 1000;
            tp.snd_una += MSS as u64;
            cc.pkts_acked(tp, &sample(rtt_us));
            let ack = tp.snd_una;
            cc.cong_avoid(tp, ack, 1);
        }
    }

    /// A Veno in congestion avoidance at `cwnd` that learnt baseRTT = `base_us` (+1).
    fn veno_at(cwnd: u32, base_us: i64) -> (Veno, TcpSock) {
        let mut tp = sock(cwnd);
        tp.snd_ssthresh = cwnd;
        let mut cc = Veno::new();
        cc.init(&mut tp);
        acks(&mut cc, &mut tp, 3, base_us);
        tp.set_cwnd(cwnd);
        tp.snd_cwnd_cnt = 0;
        (cc, tp)
    }

    #[test]
    fn loss_cuts_to_four_fifths_below_beta_and_half_above() {
        // cwnd 100, backlog N = cwnd * (rtt - base) / rtt: base 98 ms, rtt 100 ms gives N = 2
        // (diff = 200 - 200 * 98001 / 100001 = 4 half packets < beta = 6): random loss, 4/5.
        let (mut cc, mut tp) = veno_at(100, 98_000);
        acks(&mut cc, &mut tp, 1, 100_000);
        assert_eq!(cc.diff(), 4);
        tp.set_cwnd(100);
        assert_eq!(cc.ssthresh(&mut tp), 80);
        // base 97 ms: N = 3 (diff = 6 = beta): congestive loss, 1/2.
        let (mut cc, mut tp) = veno_at(100, 97_000);
        acks(&mut cc, &mut tp, 1, 100_000);
        assert_eq!(cc.diff(), 6);
        tp.set_cwnd(100);
        assert_eq!(cc.ssthresh(&mut tp), 50);
        // No queue at all: 4/5; a deep queue: 1/2; never below 2.
        let (mut cc, mut tp) = veno_at(50, 100_000);
        acks(&mut cc, &mut tp, 1, 100_000);
        assert_eq!(cc.diff(), 0);
        tp.set_cwnd(50);
        assert_eq!(cc.ssthresh(&mut tp), 40);
        acks(&mut cc, &mut tp, 1, 300_000);
        tp.set_cwnd(50);
        assert_eq!(cc.ssthresh(&mut tp), 25);
        tp.set_cwnd(3);
        assert_eq!(cc.ssthresh(&mut tp), 2);
    }

    #[test]
    fn a_loss_before_any_estimate_is_taken_as_random() {
        let mut tp = sock(10);
        let mut cc = Veno::new();
        cc.init(&mut tp);
        assert_eq!(cc.diff(), 0);
        assert_eq!(cc.ssthresh(&mut tp), 8);
    }

    #[test]
    fn congested_growth_is_half_of_renos() {
        // Not congested (no queue): +1 per window of ACKs, like Reno.
        let (mut cc, mut tp) = veno_at(40, 100_000);
        for round in 1..=6 {
            let n = tp.snd_cwnd;
            acks(&mut cc, &mut tp, n, 100_000);
            assert_eq!(tp.snd_cwnd, 40 + round);
        }
        // Congested (RTT doubled: backlog = cwnd / 2 >> 3): +1 every other window. The
        // counter test comes before the increment, so a "window" here is cwnd + 1 ACKs.
        let (mut cc, mut tp) = veno_at(40, 100_000);
        let mut grew = Vec::new();
        for _ in 0..8 {
            let before = tp.snd_cwnd;
            acks(&mut cc, &mut tp, before + 1, 200_000);
            assert!(cc.diff() >= BETA);
            grew.push(tp.snd_cwnd - before);
        }
        assert_eq!(grew, [1, 0, 1, 0, 1, 0, 1, 0]);
        assert_eq!(tp.snd_cwnd, 44);
    }

    #[test]
    fn slow_start_reno_fallback_and_states() {
        let mut tp = sock(10);
        let mut cc = Veno::new();
        cc.init(&mut tp);
        // Up to 2 samples: Reno slow start (+1 per ACK); then Veno's, also +1 per ACK.
        acks(&mut cc, &mut tp, 10, 50_000);
        assert_eq!(tp.snd_cwnd, 20);
        assert_eq!(cc.basertt(), 50_001);
        // Not cwnd-limited: no growth with Veno on.
        tp.is_cwnd_limited = false;
        acks(&mut cc, &mut tp, 5, 50_000);
        assert_eq!(tp.snd_cwnd, 20);
        // Outside Open, Reno (which checks cwnd-limited itself).
        tp.is_cwnd_limited = true;
        tp.snd_ssthresh = 20;
        cc.set_state(&mut tp, CaState::Recovery);
        assert!(!cc.doing_veno_now());
        acks(&mut cc, &mut tp, 20, 500_000);
        assert_eq!(tp.snd_cwnd, 21);
        cc.set_state(&mut tp, CaState::Open);
        assert!(cc.doing_veno_now());
        // An idle restart forgets baseRTT.
        cc.cwnd_event(&mut tp, CaEvent::TxStart);
        assert_eq!(cc.basertt(), RTT_NONE);
        // Growth never passes the clamp.
        let (mut cc, mut tp) = veno_at(40, 100_000);
        tp.snd_cwnd_clamp = 41;
        acks(&mut cc, &mut tp, 200, 100_000);
        assert_eq!(tp.snd_cwnd, 41);
        tp.prior_cwnd = 60;
        assert_eq!(cc.undo_cwnd(&mut tp), 60);
    }

    #[test]
    fn info_and_build() {
        let i = info();
        assert_eq!(
            (i.name, i.base, i.source),
            ("veno", "veno", "Linux 6.18 net/ipv4/tcp_veno.c")
        );
        assert!(i.params.is_empty() && i.preset_params.is_empty());
        assert_eq!(build("veno", &Params::new()).unwrap().name(), "veno");
    }
}
