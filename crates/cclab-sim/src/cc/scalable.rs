//! Scalable TCP (Tom Kelly, 2003), as Linux 6.18 implements it in `net/ipv4/tcp_scalable.c`.
//!
//! Multiplicative increase in congestion avoidance, about 1 % per RTT: cwnd grows by one packet
//! for every `min(cwnd, TCP_SCALABLE_AI_CNT)` = 100 packets acked (Reno below 100 packets), and
//! a loss takes 1/8 off the window (`ssthresh = cwnd - cwnd >> 3`, at least 2). Linux 6.18 uses
//! `TCP_SCALABLE_AI_CNT = 100U` and `TCP_SCALABLE_MD_SCALE = 3` and credits stretch ACKs fully
//! (the 5.7 fix: the slow-start leftover and `acked` go to `tcp_cong_avoid_ai`).
//!
//! The module has no parameters and no private state; its ops table sets `ssthresh`,
//! `cong_avoid` and `undo_cwnd = tcp_reno_undo_cwnd`.
//!
//! Divergence from the kernel: only the `ack` argument of `cong_avoid`, a `u64` byte sequence
//! number here (never wrapping), which Scalable does not use.

use super::params::ParamReader;
use super::reno::{tcp_cong_avoid_ai, tcp_reno_undo_cwnd, tcp_slow_start};
use super::{AlgorithmInfo, CcError, CongestionControl, Params};
use crate::tcp::sock::TcpSock;

/// Additive-increase count: cwnd += 1 per this many packets acked, once cwnd >= it
/// (`TCP_SCALABLE_AI_CNT`, 100 in Linux 6.18: "the recommended values in the paper: .01").
pub const TCP_SCALABLE_AI_CNT: u32 = 100;
/// Multiplicative decrease: cwnd -= cwnd >> 3, i.e. beta = 7/8 (`TCP_SCALABLE_MD_SCALE`).
pub const TCP_SCALABLE_MD_SCALE: u32 = 3;

/// What `cclab presets` lists for Scalable TCP.
pub fn info() -> AlgorithmInfo {
    AlgorithmInfo {
        name: "scalable",
        base: "scalable",
        description: "Scalable TCP: cwnd +1 per 100 packets acked (~1% per RTT), -1/8 on loss",
        source: "Linux 6.18 net/ipv4/tcp_scalable.c",
        params: Vec::new(),
        preset_params: Params::new(),
    }
}

/// Build Scalable TCP; it has no tunables (the registry rejects any name given).
pub fn build(algorithm: &str, params: &Params) -> Result<Box<dyn CongestionControl>, CcError> {
    let _reader = ParamReader::new(algorithm, params);
    Ok(Box::new(Scalable::new()))
}

/// Scalable TCP (`struct tcp_congestion_ops tcp_scalable`, Linux 6.18). No private state.
#[derive(Debug, Clone, Copy, Default)]
pub struct Scalable;

impl Scalable {
    /// A Scalable TCP instance.
    pub fn new() -> Self {
        Scalable
    }
}

impl CongestionControl for Scalable {
    fn name(&self) -> &'static str {
        "scalable"
    }

    /// net/ipv4/tcp_scalable.c: tcp_scalable_ssthresh(): `max(cwnd - (cwnd >> 3), 2)`.
    fn ssthresh(&mut self, tp: &mut TcpSock) -> u32 {
        (tp.snd_cwnd - (tp.snd_cwnd >> TCP_SCALABLE_MD_SCALE)).max(2)
    }

    /// net/ipv4/tcp_scalable.c: tcp_scalable_cong_avoid(): slow start (the leftover goes on),
    /// then `tcp_cong_avoid_ai(tp, min(cwnd, TCP_SCALABLE_AI_CNT), acked)`.
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
        let w = tp.snd_cwnd.min(TCP_SCALABLE_AI_CNT);
        tcp_cong_avoid_ai(tp, w, acked);
    }

    /// `.undo_cwnd = tcp_reno_undo_cwnd` (net/ipv4/tcp_scalable.c: tcp_scalable).
    fn undo_cwnd(&mut self, tp: &mut TcpSock) -> u32 {
        tcp_reno_undo_cwnd(tp)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u32 = 1448;

    fn sock(cwnd: u32, ssthresh: u32) -> TcpSock {
        let mut tp = TcpSock::new(
            MSS,
            cwnd,
            u32::MAX,
            crate::tcp::clock::KernelClock::new(250),
        );
        tp.snd_ssthresh = ssthresh;
        tp.is_cwnd_limited = true;
        tp
    }

    /// One RTT: every packet of the window present at its start is acked by its own ACK.
    fn round(cc: &mut Scalable, tp: &mut TcpSock) {
        let w = tp.snd_cwnd;
        for _ in 0..w {
            tp.tcp_mstamp_us += 100;
            tp.snd_una += MSS as u64;
            let ack = tp.snd_una;
            cc.cong_avoid(tp, ack, 1);
        }
    }

    #[test]
    fn plus_one_per_100_acked_above_100_packets() {
        let mut tp = sock(1000, 500);
        let mut cc = Scalable::new();
        for i in 1..=99 {
            cc.cong_avoid(&mut tp, 0, 1);
            assert_eq!((tp.snd_cwnd, tp.snd_cwnd_cnt), (1000, i));
        }
        cc.cong_avoid(&mut tp, 0, 1);
        assert_eq!((tp.snd_cwnd, tp.snd_cwnd_cnt), (1001, 0));
        // A stretch ACK of 250 packets: +2, 50 credits kept.
        cc.cong_avoid(&mut tp, 0, 250);
        assert_eq!((tp.snd_cwnd, tp.snd_cwnd_cnt), (1003, 50));
    }

    #[test]
    fn grows_one_percent_per_rtt() {
        let mut tp = sock(1000, 500);
        let mut cc = Scalable::new();
        round(&mut cc, &mut tp);
        assert_eq!(tp.snd_cwnd, 1010); // 1000 acks / 100
        let mut tp = sock(2000, 500);
        for _ in 0..10 {
            round(&mut cc, &mut tp);
        }
        // Closed form: 2000 * 1.01^10 = 2209.2; integer credits lose < 1 packet per RTT.
        let closed = 2000.0 * 1.01f64.powi(10);
        assert!(
            (tp.snd_cwnd as f64 - closed).abs() <= 10.0,
            "{}",
            tp.snd_cwnd
        );
        assert!(tp.snd_cwnd >= 2200, "{}", tp.snd_cwnd);
    }

    #[test]
    fn reno_like_below_100_packets() {
        let mut tp = sock(40, 20);
        let mut cc = Scalable::new();
        for expect in 41..=45 {
            round(&mut cc, &mut tp);
            assert_eq!(tp.snd_cwnd, expect);
        }
    }

    #[test]
    fn slow_start_leftover_goes_to_additive_increase() {
        let mut tp = sock(98, 100);
        let mut cc = Scalable::new();
        cc.cong_avoid(&mut tp, 0, 5);
        assert_eq!((tp.snd_cwnd, tp.snd_cwnd_cnt), (100, 3));
        // Exactly reaching ssthresh leaves nothing for congestion avoidance.
        let mut tp = sock(98, 100);
        cc.cong_avoid(&mut tp, 0, 2);
        assert_eq!((tp.snd_cwnd, tp.snd_cwnd_cnt), (100, 0));
        // Not cwnd-limited: no growth.
        tp.is_cwnd_limited = false;
        cc.cong_avoid(&mut tp, 0, 500);
        assert_eq!(tp.snd_cwnd, 100);
    }

    #[test]
    fn ssthresh_takes_one_eighth_off() {
        let mut cc = Scalable::new();
        for (cwnd, expect) in [(1000, 875), (17, 15), (8, 7), (7, 7), (2, 2), (1, 2)] {
            let mut tp = sock(cwnd, 10);
            assert_eq!(cc.ssthresh(&mut tp), expect, "cwnd {cwnd}");
            assert_eq!(expect, (cwnd - cwnd / 8).max(2));
        }
        let mut tp = sock(500, 10);
        tp.prior_cwnd = 800;
        assert_eq!(cc.undo_cwnd(&mut tp), 800);
    }

    #[test]
    fn info_and_build() {
        let i = info();
        assert_eq!((i.name, i.base), ("scalable", "scalable"));
        assert!(i.params.is_empty() && i.preset_params.is_empty());
        assert_eq!(i.source, "Linux 6.18 net/ipv4/tcp_scalable.c");
        let cc = build("scalable", &Params::new()).unwrap();
        assert_eq!(cc.name(), "scalable");
    }
}
