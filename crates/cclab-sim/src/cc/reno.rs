//! TCP Reno and the window helpers every algorithm shares.
//!
//! We follow Linux 6.18, `net/ipv4/tcp_cong.c` (`tcp_slow_start`, `tcp_cong_avoid_ai`,
//! `tcp_reno_cong_avoid`, `tcp_reno_ssthresh`, `tcp_reno_undo_cwnd`) with the inline helpers of
//! `include/net/tcp.h` (`tcp_in_slow_start`, `tcp_is_cwnd_limited`, which `TcpSock` provides).
//! Arithmetic is the kernel's: `u32` packets, wrapping where the kernel's C would wrap.

use super::CongestionControl;
use crate::tcp::sock::TcpSock;

/// Slow start: grow cwnd by one packet per packet acked, up to ssthresh, and return the acked
/// packets left over for congestion avoidance.
///
/// net/ipv4/tcp_cong.c: tcp_slow_start(). Like the kernel, the new cwnd is capped at
/// `snd_cwnd_clamp`. Callers only use it in slow start (cwnd < ssthresh); outside it the
/// subtraction wraps exactly as the kernel's `u32` does.
pub fn tcp_slow_start(tp: &mut TcpSock, acked: u32) -> u32 {
    let cwnd = tp.snd_cwnd.wrapping_add(acked).min(tp.snd_ssthresh);
    let acked = acked.wrapping_sub(cwnd.wrapping_sub(tp.snd_cwnd));
    tp.set_cwnd(cwnd.min(tp.snd_cwnd_clamp));
    acked
}

/// Additive increase: in theory `cwnd += 1 / w` for every packet acked, i.e. one packet per `w`
/// packets acked, with the credit kept in `snd_cwnd_cnt`.
///
/// net/ipv4/tcp_cong.c: tcp_cong_avoid_ai(), including its final cap at `snd_cwnd_clamp`.
/// Divergence: the kernel would divide by zero for `w == 0`; no caller passes 0 (Reno passes
/// cwnd >= 1, CUBIC cnt >= 2), and we treat 0 as 1 rather than panic.
pub fn tcp_cong_avoid_ai(tp: &mut TcpSock, w: u32, acked: u32) {
    let w = w.max(1);
    // If credits accumulated at a higher w, apply them gently now.
    if tp.snd_cwnd_cnt >= w {
        tp.snd_cwnd_cnt = 0;
        tp.set_cwnd(tp.snd_cwnd.wrapping_add(1));
    }
    tp.snd_cwnd_cnt = tp.snd_cwnd_cnt.wrapping_add(acked);
    if tp.snd_cwnd_cnt >= w {
        let delta = tp.snd_cwnd_cnt / w;
        tp.snd_cwnd_cnt -= delta * w;
        tp.set_cwnd(tp.snd_cwnd.wrapping_add(delta));
    }
    tp.set_cwnd(tp.snd_cwnd.min(tp.snd_cwnd_clamp));
}

/// Jacobson's slow start and congestion avoidance (SIGCOMM '88): exponential growth below
/// ssthresh, one packet per window above it, only while the flow is cwnd-limited.
///
/// net/ipv4/tcp_cong.c: tcp_reno_cong_avoid(). `_ack` is the cumulative ACK in bytes here (u64,
/// never wrapping); Reno does not use it.
pub fn tcp_reno_cong_avoid(tp: &mut TcpSock, _ack: u64, acked: u32) {
    if !tp.is_cwnd_limited() {
        return;
    }
    let mut acked = acked;
    // In "safe" area, increase.
    if tp.in_slow_start() {
        acked = tcp_slow_start(tp, acked);
        if acked == 0 {
            return;
        }
    }
    // In dangerous area, increase slowly.
    let w = tp.snd_cwnd;
    tcp_cong_avoid_ai(tp, w, acked);
}

/// Slow-start threshold after a loss: half the congestion window, at least 2.
///
/// net/ipv4/tcp_cong.c: tcp_reno_ssthresh().
pub fn tcp_reno_ssthresh(tp: &mut TcpSock) -> u32 {
    (tp.snd_cwnd >> 1).max(2)
}

/// cwnd to restore when a reduction turns out spurious: the larger of the current cwnd and the
/// cwnd before the reduction (`prior_cwnd`).
///
/// net/ipv4/tcp_cong.c: tcp_reno_undo_cwnd().
pub fn tcp_reno_undo_cwnd(tp: &mut TcpSock) -> u32 {
    tp.snd_cwnd.max(tp.prior_cwnd)
}

/// TCP Reno (NewReno window management; recovery itself lives in `crate::tcp`).
///
/// net/ipv4/tcp_cong.c: `struct tcp_congestion_ops tcp_reno` (ssthresh, cong_avoid, undo_cwnd),
/// Linux 6.18. Reno has no tunables and no private state.
#[derive(Debug, Clone, Copy, Default)]
pub struct Reno;

impl Reno {
    /// A Reno instance.
    pub fn new() -> Self {
        Reno
    }
}

impl CongestionControl for Reno {
    fn name(&self) -> &'static str {
        "reno"
    }

    fn ssthresh(&mut self, tp: &mut TcpSock) -> u32 {
        tcp_reno_ssthresh(tp)
    }

    fn cong_avoid(&mut self, tp: &mut TcpSock, ack: u64, acked: u32) {
        tcp_reno_cong_avoid(tp, ack, acked);
    }

    fn undo_cwnd(&mut self, tp: &mut TcpSock) -> u32 {
        tcp_reno_undo_cwnd(tp)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tcp::sock::TCP_INFINITE_SSTHRESH;

    const MSS: u32 = 1448;

    fn sock(cwnd: u32) -> TcpSock {
        let mut tp = TcpSock::new(
            MSS,
            cwnd,
            u32::MAX,
            crate::tcp::clock::KernelClock::new(250),
        );
        tp.is_cwnd_limited = true;
        tp
    }

    /// One round trip: every packet of the current window is acked by its own ACK.
    fn ack_one_window(cc: &mut dyn CongestionControl, tp: &mut TcpSock) {
        let w = tp.snd_cwnd;
        for _ in 0..w {
            tp.snd_una += MSS as u64;
            let ack = tp.snd_una;
            cc.cong_avoid(tp, ack, 1);
        }
    }

    #[test]
    fn slow_start_doubles_per_rtt() {
        let mut tp = sock(10);
        let mut cc = Reno::new();
        assert_eq!(tp.snd_ssthresh, TCP_INFINITE_SSTHRESH);
        for expect in [20, 40, 80, 160, 320] {
            ack_one_window(&mut cc, &mut tp);
            assert_eq!(tp.snd_cwnd, expect);
        }
    }

    #[test]
    fn slow_start_returns_leftover_and_stops_at_ssthresh() {
        let mut tp = sock(48);
        tp.snd_ssthresh = 50;
        // A stretch ACK of 5 packets: 2 take cwnd to ssthresh, 3 are left over.
        assert_eq!(tcp_slow_start(&mut tp, 5), 3);
        assert_eq!(tp.snd_cwnd, 50);
        // Through Reno: the 3 leftover packets are credited to congestion avoidance.
        let mut tp = sock(48);
        tp.snd_ssthresh = 50;
        Reno.cong_avoid(&mut tp, 0, 5);
        assert_eq!((tp.snd_cwnd, tp.snd_cwnd_cnt), (50, 3));
    }

    #[test]
    fn additive_increase_adds_one_per_window() {
        let mut tp = sock(50);
        tp.snd_ssthresh = 50;
        let mut cc = Reno::new();
        for expect in 51..=60 {
            ack_one_window(&mut cc, &mut tp);
            assert_eq!(tp.snd_cwnd, expect);
            assert_eq!(tp.snd_cwnd_cnt, 0);
        }
        // Half a window of ACKs is not enough.
        for _ in 0..30 {
            cc.cong_avoid(&mut tp, 0, 1);
        }
        assert_eq!((tp.snd_cwnd, tp.snd_cwnd_cnt), (60, 30));
    }

    #[test]
    fn cong_avoid_ai_stretch_acks_and_stale_credit() {
        let mut tp = sock(10);
        // A stretch ACK worth 25 packets at w = 10: +2, 5 credits left.
        tcp_cong_avoid_ai(&mut tp, 10, 25);
        assert_eq!((tp.snd_cwnd, tp.snd_cwnd_cnt), (12, 5));
        // Credits accumulated at a higher w are applied gently: +1 and the counter restarts.
        tp.snd_cwnd_cnt = 40;
        tcp_cong_avoid_ai(&mut tp, 12, 1);
        assert_eq!((tp.snd_cwnd, tp.snd_cwnd_cnt), (13, 1));
    }

    #[test]
    fn growth_is_capped_at_snd_cwnd_clamp() {
        let mut tp = sock(10);
        tp.snd_cwnd_clamp = 30;
        let mut cc = Reno::new();
        ack_one_window(&mut cc, &mut tp);
        ack_one_window(&mut cc, &mut tp);
        assert_eq!(tp.snd_cwnd, 30);
        tp.snd_ssthresh = 20;
        for _ in 0..5 {
            ack_one_window(&mut cc, &mut tp);
        }
        assert_eq!(tp.snd_cwnd, 30);
    }

    #[test]
    fn no_growth_unless_cwnd_limited() {
        let mut tp = sock(10);
        tp.is_cwnd_limited = false;
        tp.max_packets_out = 4; // 10 >= 2 * 4: not limited even in slow start
        Reno.cong_avoid(&mut tp, 0, 4);
        assert_eq!(tp.snd_cwnd, 10);
        tp.max_packets_out = 6; // in slow start, cwnd < 2 * max_packets_out counts as limited
        Reno.cong_avoid(&mut tp, 0, 4);
        assert_eq!(tp.snd_cwnd, 14);
    }

    #[test]
    fn ssthresh_halves_and_undo_restores() {
        let mut tp = sock(101);
        assert_eq!(Reno.ssthresh(&mut tp), 50);
        tp.snd_cwnd = 3;
        assert_eq!(Reno.ssthresh(&mut tp), 2);
        tp.snd_cwnd = 50;
        tp.prior_cwnd = 100;
        assert_eq!(Reno.undo_cwnd(&mut tp), 100);
        tp.prior_cwnd = 20;
        assert_eq!(Reno.undo_cwnd(&mut tp), 50);
        assert_eq!(Reno.name(), "reno");
    }
}
