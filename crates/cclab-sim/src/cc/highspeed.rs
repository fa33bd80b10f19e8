//! HighSpeed TCP (Sally Floyd, RFC 3649), as Linux 6.18 implements it in
//! `net/ipv4/tcp_highspeed.c`.
//!
//! Above 38 packets the AIMD parameters depend on the window: in congestion avoidance cwnd grows
//! by a(w) packets per RTT and a loss takes b(w) * cwnd off it, with a(w) and b(w) from the
//! table of RFC 3649 appendix B (`hstcp_aimd_vals`: the window at the top of each row and
//! b(w) << 8; a(w) is the row index + 1). At w <= 38 this is Reno (a = 1, b = 0.5).
//!
//! The module has no parameters. Its ops table sets `init`, `ssthresh`, `cong_avoid` and
//! `undo_cwnd = tcp_reno_undo_cwnd`.
//!
//! Divergences from the kernel:
//! - The `ack` argument of `cong_avoid` is a `u64` byte sequence number here; HighSpeed does
//!   not use it.
//! - As in Linux 6.18, the additive increase adds `a(w)` credits per call whatever `acked` is
//!   (stretch ACKs are not credited fully), and slow start drops its leftover; we keep both.

use super::params::ParamReader;
use super::reno::{tcp_reno_undo_cwnd, tcp_slow_start};
use super::{AlgorithmInfo, CcError, CongestionControl, Params};
use crate::tcp::sock::TcpSock;

/// One row of the AIMD table: the row applies to windows up to `cwnd` (and above the previous
/// row's), with b(w) = `md` / 256 (`struct hstcp_aimd_val`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HstcpAimdVal {
    /// Largest window of this row, packets.
    pub cwnd: u32,
    /// Multiplicative decrease b(w), scaled << 8.
    pub md: u32,
}

const fn row(cwnd: u32, md: u32) -> HstcpAimdVal {
    HstcpAimdVal { cwnd, md }
}

/// `hstcp_aimd_vals`: RFC 3649 appendix B with b(w) scaled << 8; a(w) = index + 1.
#[rustfmt::skip]
pub const HSTCP_AIMD_VALS: [HstcpAimdVal; 72] = [
    row(38, 128), row(118, 112), row(221, 104), row(347, 98), row(495, 93), // 0.50 .. 0.37
    row(663, 89), row(851, 86), row(1058, 83), row(1284, 81), row(1529, 78), // 0.35 .. 0.31
    row(1793, 76), row(2076, 74), row(2378, 72), row(2699, 71), row(3039, 69), // 0.30 .. 0.27
    row(3399, 68), row(3778, 66), row(4177, 65), row(4596, 64), row(5036, 62), // 0.27 .. 0.25
    row(5497, 61), row(5979, 60), row(6483, 59), row(7009, 58), row(7558, 57), // 0.24 .. 0.22
    row(8130, 56), row(8726, 55), row(9346, 54), row(9991, 53), row(10661, 52), // 0.22 .. 0.21
    row(11358, 52), row(12082, 51), row(12834, 50), row(13614, 49), row(14424, 48), // .20 .. .19
    row(15265, 48), row(16137, 47), row(17042, 46), row(17981, 45), row(18955, 45), // .19 .. .18
    row(19965, 44), row(21013, 43), row(22101, 43), row(23230, 42), row(24402, 41), // .17 .. .16
    row(25618, 41), row(26881, 40), row(28193, 39), row(29557, 39), row(30975, 38), // .16 .. .15
    row(32450, 38), row(33986, 37), row(35586, 36), row(37253, 36), row(38992, 35), // .15 .. .14
    row(40808, 35), row(42707, 34), row(44694, 33), row(46776, 33), row(48961, 32), // .14 .. .13
    row(51258, 32), row(53677, 31), row(56230, 30), row(58932, 30), row(61799, 29), // .13 .. .12
    row(64851, 28), row(68113, 28), row(71617, 27), row(75401, 26), row(79517, 26), // .11 .. .10
    row(84035, 25), row(89053, 24), // 0.10, 0.10
];

/// `HSTCP_AIMD_MAX`: number of rows.
pub const HSTCP_AIMD_MAX: usize = HSTCP_AIMD_VALS.len();

/// What `cclab presets` lists for HighSpeed TCP.
pub fn info() -> AlgorithmInfo {
    AlgorithmInfo {
        name: "highspeed",
        base: "highspeed",
        description: "HighSpeed TCP (RFC 3649): window-dependent a(w)/b(w) from the RFC's table",
        source: "Linux 6.18 net/ipv4/tcp_highspeed.c",
        params: Vec::new(),
        preset_params: Params::new(),
    }
}

/// Build HighSpeed TCP; it has no tunables (the registry rejects any name given).
pub fn build(algorithm: &str, params: &Params) -> Result<Box<dyn CongestionControl>, CcError> {
    let _reader = ParamReader::new(algorithm, params);
    Ok(Box::new(HighSpeed::new()))
}

/// HighSpeed TCP (`struct tcp_congestion_ops tcp_highspeed`, Linux 6.18).
#[derive(Debug, Clone, Copy, Default)]
pub struct HighSpeed {
    /// `struct hstcp`'s `ai`: the table row of the current window (a(w) = ai + 1).
    ai: u32,
}

impl HighSpeed {
    /// A HighSpeed instance.
    pub fn new() -> Self {
        HighSpeed::default()
    }

    /// a(w) of the current row: packets added per RTT in congestion avoidance.
    pub fn a(&self) -> u32 {
        self.ai + 1
    }

    /// b(w) of the current row, scaled << 8.
    pub fn md(&self) -> u32 {
        HSTCP_AIMD_VALS[self.ai as usize].md
    }

    /// The `ai` update of net/ipv4/tcp_highspeed.c: hstcp_cong_avoid(): move the row so that
    /// `vals[ai - 1].cwnd < cwnd <= vals[ai].cwnd` (the last row for larger windows).
    fn update_ai(&mut self, cwnd: u32) {
        let vals = &HSTCP_AIMD_VALS;
        if cwnd > vals[self.ai as usize].cwnd {
            while cwnd > vals[self.ai as usize].cwnd && (self.ai as usize) < HSTCP_AIMD_MAX - 1 {
                self.ai += 1;
            }
        } else if self.ai != 0 && cwnd <= vals[self.ai as usize - 1].cwnd {
            while self.ai != 0 && cwnd <= vals[self.ai as usize - 1].cwnd {
                self.ai -= 1;
            }
        }
    }
}

impl CongestionControl for HighSpeed {
    fn name(&self) -> &'static str {
        "highspeed"
    }

    /// net/ipv4/tcp_highspeed.c: hstcp_init(): row 0, and cwnd clamped to 0xffffffff / 128 so
    /// that `cwnd * md` cannot overflow.
    fn init(&mut self, tp: &mut TcpSock) {
        self.ai = 0;
        tp.snd_cwnd_clamp = tp.snd_cwnd_clamp.min(0xffff_ffff / 128);
    }

    /// net/ipv4/tcp_highspeed.c: hstcp_ssthresh(): `max(cwnd - (cwnd * md) >> 8, 2)` with the
    /// row of the last `cong_avoid`.
    fn ssthresh(&mut self, tp: &mut TcpSock) -> u32 {
        let cwnd = tp.snd_cwnd;
        cwnd.wrapping_sub(cwnd.wrapping_mul(self.md()) >> 8).max(2)
    }

    /// net/ipv4/tcp_highspeed.c: hstcp_cong_avoid(): slow start below ssthresh (leftover
    /// dropped, as in the kernel); otherwise update the row and add a(w) / cwnd per ACK.
    fn cong_avoid(&mut self, tp: &mut TcpSock, _ack: u64, acked: u32) {
        if !tp.is_cwnd_limited() {
            return;
        }
        if tp.in_slow_start() {
            tcp_slow_start(tp, acked);
            return;
        }
        // Update AIMD parameters.
        self.update_ai(tp.snd_cwnd);
        // Do additive increase: cwnd = cwnd + a(w) / cwnd.
        if tp.snd_cwnd < tp.snd_cwnd_clamp {
            tp.snd_cwnd_cnt = tp.snd_cwnd_cnt.wrapping_add(self.ai + 1);
            if tp.snd_cwnd_cnt >= tp.snd_cwnd {
                tp.snd_cwnd_cnt -= tp.snd_cwnd;
                tp.set_cwnd(tp.snd_cwnd + 1);
            }
        }
    }

    /// `.undo_cwnd = tcp_reno_undo_cwnd` (net/ipv4/tcp_highspeed.c: tcp_highspeed).
    fn undo_cwnd(&mut self, tp: &mut TcpSock) -> u32 {
        tcp_reno_undo_cwnd(tp)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sock(cwnd: u32) -> TcpSock {
        let mut tp = TcpSock::new(
            1448,
            cwnd,
            u32::MAX,
            crate::tcp::clock::KernelClock::new(250),
        );
        tp.snd_ssthresh = 2;
        tp.is_cwnd_limited = true;
        tp
    }

    /// (a(w), b(w) * 256, ssthresh) after an ACK in congestion avoidance at window `w`.
    fn at(w: u32) -> (u32, u32, u32) {
        let mut tp = sock(w);
        let mut cc = HighSpeed::new();
        cc.init(&mut tp);
        tp.snd_cwnd_cnt = 0;
        cc.cong_avoid(&mut tp, 0, 1);
        tp.snd_cwnd = w;
        (cc.a(), cc.md(), cc.ssthresh(&mut tp))
    }

    #[test]
    fn table_lookup_at_several_windows() {
        // Reno region: a = 1, b = 0.5.
        assert_eq!(at(38), (1, 128, 19));
        assert_eq!(at(10), (1, 128, 5));
        // Just above the first row.
        assert_eq!(at(39), (2, 112, 39 - ((39 * 112) >> 8)));
        assert_eq!(at(1000), (8, 83, 1000 - ((1000 * 83) >> 8)));
        // The table's last rows.
        assert_eq!(at(84035), (71, 25, 84035 - ((84035 * 25) >> 8)));
        assert_eq!(at(84036), (72, 24, 84036 - ((84036 * 24) >> 8)));
        assert_eq!(at(89053), (72, 24, 89053 - ((89053 * 24) >> 8)));
        // Beyond the table: the last row applies.
        assert_eq!(at(200_000).0, 72);
        // ~83000 packets: a ~ 70, b ~ 0.1 (RFC 3649's High_Window = 83000, High_P = 1e-7).
        let (a, md, ssthresh) = at(83_000);
        assert_eq!(a, 71);
        assert!((md as f64 / 256.0 - 0.1).abs() < 0.005);
        assert_eq!(ssthresh, 74895); // 83000 - 2075000 / 256
    }

    #[test]
    fn table_follows_rfc3649_closed_form() {
        // RFC 3649: p(w) = 0.078 / w^1.2, b(w) = (0.1 - 0.5) (ln w - ln 38) / (ln 83000 - ln 38)
        // + 0.5, a(w) = w^2 p(w) 2 b(w) / (2 - b(w)). The table gives a(w) = row + 1 and
        // b(w) * 256 at each row's window.
        for (i, r) in HSTCP_AIMD_VALS.iter().enumerate() {
            let w = r.cwnd as f64;
            let b = -0.4 * (w.ln() - 38f64.ln()) / (83000f64.ln() - 38f64.ln()) + 0.5;
            let p = 0.078 / w.powf(1.2);
            let a = w * w * p * 2.0 * b / (2.0 - b);
            assert!((a - (i + 1) as f64).abs() < 1.0, "row {i}: w {w} a {a}");
            assert!(
                (b * 256.0 - r.md as f64).abs() <= 1.5,
                "row {i}: w {w} b {b} md {}",
                r.md
            );
        }
    }

    #[test]
    fn row_moves_down_after_a_loss() {
        let mut tp = sock(5000);
        let mut cc = HighSpeed::new();
        cc.init(&mut tp);
        cc.cong_avoid(&mut tp, 0, 1);
        assert_eq!(cc.a(), 20); // 4596 < 5000 <= 5036: row 19
        tp.snd_cwnd = 1000;
        cc.cong_avoid(&mut tp, 0, 1);
        assert_eq!(cc.a(), 8);
        tp.snd_cwnd = 38;
        cc.cong_avoid(&mut tp, 0, 1);
        assert_eq!(cc.a(), 1);
    }

    #[test]
    fn adds_a_of_w_per_rtt() {
        // At w = 1000, a(w) = 8: one window of ACKs adds 8 packets (the window grows by a few
        // packets meanwhile, so the last increment may spill over).
        let mut tp = sock(1000);
        let mut cc = HighSpeed::new();
        cc.init(&mut tp);
        for _ in 0..1000 {
            cc.cong_avoid(&mut tp, 0, 1);
        }
        assert!(
            tp.snd_cwnd == 1007 || tp.snd_cwnd == 1008,
            "{}",
            tp.snd_cwnd
        );
        for _ in 0..100 {
            cc.cong_avoid(&mut tp, 0, 1);
        }
        assert_eq!(tp.snd_cwnd, 1008);
        // Reno region: +1 per window.
        let mut tp = sock(20);
        for _ in 0..20 {
            cc.cong_avoid(&mut tp, 0, 1);
        }
        assert_eq!((tp.snd_cwnd, tp.snd_cwnd_cnt), (21, 0));
    }

    #[test]
    fn slow_start_clamp_and_undo() {
        let mut tp = sock(10);
        tp.snd_ssthresh = 12;
        let mut cc = HighSpeed::new();
        cc.init(&mut tp);
        assert_eq!(tp.snd_cwnd_clamp, 0xffff_ffff / 128);
        // The slow-start leftover is dropped, as in Linux 6.18.
        cc.cong_avoid(&mut tp, 0, 5);
        assert_eq!((tp.snd_cwnd, tp.snd_cwnd_cnt), (12, 0));
        // No growth at the clamp.
        tp.snd_cwnd_clamp = 12;
        cc.cong_avoid(&mut tp, 0, 1);
        assert_eq!((tp.snd_cwnd, tp.snd_cwnd_cnt), (12, 0));
        tp.prior_cwnd = 40;
        assert_eq!(cc.undo_cwnd(&mut tp), 40);
        assert_eq!(cc.ssthresh(&mut sock(3)), 2);
    }

    #[test]
    fn info_and_build() {
        let i = info();
        assert_eq!((i.name, i.base), ("highspeed", "highspeed"));
        assert!(i.params.is_empty() && i.preset_params.is_empty());
        assert_eq!(i.source, "Linux 6.18 net/ipv4/tcp_highspeed.c");
        assert_eq!(
            build("highspeed", &Params::new()).unwrap().name(),
            "highspeed"
        );
    }
}
