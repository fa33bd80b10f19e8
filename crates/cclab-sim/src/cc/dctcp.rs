//! DCTCP, Data Center TCP (Alizadeh et al., SIGCOMM 2010), as Linux 6.18 implements it in
//! `net/ipv4/tcp_dctcp.c` (with `net/ipv4/tcp_dctcp.h`).
//!
//! Reno whose ECN response is proportional: once per window of data (`next_seq`), the fraction
//! F of segments delivered by ACKs carrying ECE (`tp->delivered_ce` over `tp->delivered`)
//! updates `alpha = (1 - g) alpha + g F`, an EWMA with `g = 1 / 2^dctcp_shift_g` (1/16), kept in
//! units of 1/1024 (`DCTCP_MAX_ALPHA` = 1.0). An ECE ACK in Open makes the core enter CWR with
//! `ssthresh = cwnd - cwnd * alpha / 2` (`(cwnd * alpha) >> 11`), at most once per window; a
//! loss (entering Recovery, or an RTO's `CA_EVENT_LOSS`) halves as Reno does. Growth is
//! `tcp_reno_cong_avoid`. alpha starts at `dctcp_alpha_on_init` (1024 = 1.0) and decays in
//! every unmarked window, falling to exactly 0 once below 16/1024 (`min_not_zero`).
//!
//! DCTCP needs ECN (`TCP_CONG_NEEDS_ECN`, our `needs_ecn`), and a receiver that echoes CE
//! precisely: `dctcp_ece_ack_update` (tcp_dctcp.h), which runs on the receiving socket from
//! `dctcp_cwnd_event(CA_EVENT_ECN_IS_CE / NO_CE)`. In cclab the receiver runs that state machine
//! itself for a flow whose `ecn` is "low" (`tcp/ecn.rs`, `Receiver::ece_ack_update`), so this
//! file is the sender's half. Without negotiated ECN, `dctcp_init` switches the socket to
//! `dctcp_reno` (plain Reno, no ECN), and so do we.
//!
//! Arithmetic is the kernel's: `u32` counters and alpha, wrapping where C wraps
//! (`cwnd * alpha`, `delivered_ce << (10 - g)`, `alpha + delivered_ce`). The module parameters
//! `dctcp_shift_g` (0..10, as `dctcp_shift_g_set` enforces) and `dctcp_alpha_on_init` (a
//! `uint`) are per instance here (global to all sockets in the kernel), same names and defaults.
//!
//! Where we diverge from the kernel, and why:
//! - Sequence numbers are `u64` bytes that never wrap, so `!before(snd_una, next_seq)` is `>=`.
//! - The receiver half (`ce_state`, `prior_rcv_nxt`, `CA_EVENT_ECN_IS_CE` / `NO_CE`) is not
//!   here: our receivers run no congestion control, the receiver applies
//!   `dctcp_ece_ack_update` itself when `ecn = "low"` (see above).
//! - PLB (Protective Load Balancing, `tcp_plb_update_state`, `tcp_plb_check_rehash`,
//!   `tcp_plb_update_state_upon_rto`, called from `dctcp_update_alpha` and `dctcp_cwnd_event`)
//!   is not modelled: it is off by default (`net.ipv4.tcp_plb_enabled = 0`), and what it would
//!   do, rehash the flow onto another path, has no meaning on cclab's single-path dumbbell.
//! - `get_info` (inet_diag `INET_DIAG_DCTCPINFO`) is not modelled; alpha, `loss_cwnd` and the
//!   window's counts are readable through accessors.
//! - The `sk_state == TCP_LISTEN || TCP_CLOSE` branch of `dctcp_init` does not arise (our
//!   senders are established when `init` runs, as after `tcp_init_transfer`).
//! - Not ours, the core's, stated here because DCTCP is the reader it matters to: Linux
//!   6.14+ counts an ECE ACK's deliveries into `tp->delivered_ce` inside `tcp_clean_rtx_queue`
//!   and `tcp_sacktag_write_queue` (`tcp_count_delivered(.., ece_ack)`), before
//!   `tcp_in_ack_event`, so `dctcp_update_alpha` sees the current ACK's CE deliveries. If the
//!   core counts them after `in_ack_event` (as `tcp/sender.rs` did when DCTCP was added), an
//!   ECE ACK that closes an observation window has its CE segments counted in the next window
//!   instead (totals are unchanged; F moves by at most one ACK's segments between windows).

use super::params::ParamReader;
use super::reno::{tcp_reno_cong_avoid, tcp_reno_ssthresh, tcp_reno_undo_cwnd};
use super::{
    AlgorithmInfo, CaEvent, CaState, CcError, CongestionControl, ParamInfo, ParamValue, Params,
};
use crate::tcp::ecn::TCP_ECN_OK;
use crate::tcp::sock::TcpSock;

/// alpha's 1.0, in units of 1/1024 (`DCTCP_MAX_ALPHA`, 1024U).
pub const DCTCP_MAX_ALPHA: u32 = 1024;
/// Default `dctcp_shift_g`: g = 1 / 2^4 = 1/16.
pub const DEFAULT_SHIFT_G: u32 = 4;
/// Largest `dctcp_shift_g` (`dctcp_shift_g_set`: `param_set_uint_minmax(val, kp, 0, 10)`).
pub const MAX_SHIFT_G: u32 = 10;
/// Default `dctcp_alpha_on_init`: `DCTCP_MAX_ALPHA`, alpha = 1.0.
pub const DEFAULT_ALPHA_ON_INIT: u32 = DCTCP_MAX_ALPHA;

/// What `cclab presets` lists for DCTCP.
pub fn info() -> AlgorithmInfo {
    AlgorithmInfo {
        name: "dctcp",
        base: "dctcp",
        description: "DCTCP: Reno that cuts cwnd by alpha/2 once per window of ECN marks, alpha \
                      the EWMA (g = 1/16) of the marked fraction; needs ECN (ecn = \"low\")",
        source: "Linux 6.18 net/ipv4/tcp_dctcp.c",
        params: vec![
            ParamInfo {
                name: "dctcp_shift_g",
                default: ParamValue::Int(DEFAULT_SHIFT_G as i64),
                doc: "parameter g for updating dctcp_alpha: g = 1 / 2^dctcp_shift_g; an integer \
                      0..10",
            },
            ParamInfo {
                name: "dctcp_alpha_on_init",
                default: ParamValue::Int(DEFAULT_ALPHA_ON_INIT as i64),
                doc: "parameter for initial alpha value, in 1/1024 (1024 = 1.0: the first \
                      marked window halves cwnd; larger values count as 1024); an integer \
                      0..4294967295",
            },
        ],
        preset_params: Params::new(),
    }
}

/// Build DCTCP from `params` (names already checked by the registry; values here).
pub fn build(algorithm: &str, params: &Params) -> Result<Box<dyn CongestionControl>, CcError> {
    let r = ParamReader::new(algorithm, params);
    let shift_g = r.int(
        "dctcp_shift_g",
        DEFAULT_SHIFT_G as i64,
        0,
        MAX_SHIFT_G as i64,
    )? as u32;
    let alpha_on_init = r.int(
        "dctcp_alpha_on_init",
        DEFAULT_ALPHA_ON_INIT as i64,
        0,
        u32::MAX as i64,
    )? as u32;
    Ok(Box::new(Dctcp::new(shift_g, alpha_on_init)))
}

/// `min_not_zero(x, y)` (include/linux/minmax.h): the smaller of the two, ignoring a zero.
fn min_not_zero(x: u32, y: u32) -> u32 {
    match (x, y) {
        (0, y) => y,
        (x, 0) => x,
        (x, y) => x.min(y),
    }
}

/// DCTCP: the sender's half of `struct dctcp` (net/ipv4/tcp_dctcp.c) plus the module
/// parameters.
#[derive(Debug, Clone)]
pub struct Dctcp {
    /// `dctcp_shift_g` module parameter.
    shift_g: u32,
    /// `dctcp_alpha_on_init` module parameter.
    alpha_on_init: u32,
    /// `tp->delivered` at the start of the observation window (`old_delivered`).
    old_delivered: u32,
    /// `tp->delivered_ce` at the start of the observation window (`old_delivered_ce`).
    old_delivered_ce: u32,
    /// EWMA of the marked fraction, 1/1024 (`dctcp_alpha`).
    dctcp_alpha: u32,
    /// End of the observation window: `snd_nxt` when it started, bytes (`next_seq`).
    next_seq: u64,
    /// cwnd when the last reduction started, for undo (`loss_cwnd`).
    loss_cwnd: u32,
    /// `dctcp_init` found no ECN and switched to `dctcp_reno` (`icsk_ca_ops == &dctcp_reno`).
    reno_fallback: bool,
}

impl Default for Dctcp {
    /// DCTCP with Linux's default module parameters.
    fn default() -> Self {
        Dctcp::new(DEFAULT_SHIFT_G, DEFAULT_ALPHA_ON_INIT)
    }
}

impl Dctcp {
    /// A DCTCP instance with these module parameters (`shift_g` at most 10), before `init`.
    pub fn new(shift_g: u32, alpha_on_init: u32) -> Self {
        debug_assert!(shift_g <= MAX_SHIFT_G);
        Dctcp {
            shift_g: shift_g.min(MAX_SHIFT_G),
            alpha_on_init,
            old_delivered: 0,
            old_delivered_ce: 0,
            dctcp_alpha: alpha_on_init.min(DCTCP_MAX_ALPHA),
            next_seq: 0,
            loss_cwnd: 0,
            reno_fallback: false,
        }
    }

    /// alpha, in 1/1024 (`dctcp_alpha`, as `dctcp_get_info` reports it).
    pub fn alpha(&self) -> u32 {
        self.dctcp_alpha
    }

    /// cwnd saved by the last reduction (`loss_cwnd`).
    pub fn loss_cwnd(&self) -> u32 {
        self.loss_cwnd
    }

    /// Whether `init` found no ECN and runs as `dctcp-reno`.
    pub fn is_reno_fallback(&self) -> bool {
        self.reno_fallback
    }

    /// Segments (delivered, CE-delivered) so far in the current observation window
    /// (`dctcp_get_info`'s `dctcp_ab_tot` and `dctcp_ab_ecn`, in segments rather than bytes).
    pub fn window_counts(&self, tp: &TcpSock) -> (u32, u32) {
        (
            tp.delivered.wrapping_sub(self.old_delivered),
            tp.delivered_ce.wrapping_sub(self.old_delivered_ce),
        )
    }

    /// Start a new observation window at `snd_nxt`.
    ///
    /// net/ipv4/tcp_dctcp.c: dctcp_reset().
    fn dctcp_reset(&mut self, tp: &TcpSock) {
        self.next_seq = tp.snd_nxt;
        self.old_delivered = tp.delivered;
        self.old_delivered_ce = tp.delivered_ce;
    }

    /// Once the window is acked, fold its marked fraction into alpha:
    /// `alpha = alpha - alpha >> g + (delivered_ce << (10 - g)) / delivered`, at most 1024.
    /// `alpha >> g` is replaced by alpha itself when it is 0 (`min_not_zero`), so a small
    /// alpha falls to 0 in one unmarked window.
    ///
    /// net/ipv4/tcp_dctcp.c: dctcp_update_alpha() (the `in_ack_event` hook; PLB omitted).
    fn dctcp_update_alpha(&mut self, tp: &TcpSock) {
        // Expired RTT.
        if tp.snd_una >= self.next_seq {
            let delivered = tp.delivered.wrapping_sub(self.old_delivered);
            let mut delivered_ce = tp.delivered_ce.wrapping_sub(self.old_delivered_ce);
            let mut alpha = self.dctcp_alpha;
            // alpha = (1 - g) * alpha + g * F
            alpha -= min_not_zero(alpha, alpha >> self.shift_g);
            if delivered_ce != 0 {
                // As in the kernel, a u32: with g = 1/2 it would overflow after 8 M packets.
                delivered_ce <<= MAX_SHIFT_G - self.shift_g;
                delivered_ce /= delivered.max(1);
                alpha = alpha.wrapping_add(delivered_ce).min(DCTCP_MAX_ALPHA);
            }
            self.dctcp_alpha = alpha;
            self.dctcp_reset(tp);
        }
    }

    /// A loss: remember cwnd for undo and halve, as Reno (`max(cwnd >> 1, 2)`).
    ///
    /// net/ipv4/tcp_dctcp.c: dctcp_react_to_loss().
    fn dctcp_react_to_loss(&mut self, tp: &mut TcpSock) {
        self.loss_cwnd = tp.snd_cwnd;
        tp.snd_ssthresh = (tp.snd_cwnd >> 1).max(2);
    }
}

impl CongestionControl for Dctcp {
    /// `"dctcp"`, or `"dctcp-reno"` once `init` fell back (the ops table `dctcp_init` installs).
    fn name(&self) -> &'static str {
        if self.reno_fallback {
            "dctcp-reno"
        } else {
            "dctcp"
        }
    }

    /// `TCP_CONG_NEEDS_ECN` is set in `dctcp`'s flags (not in `dctcp_reno`'s).
    fn needs_ecn(&self) -> bool {
        !self.reno_fallback
    }

    /// With ECN negotiated: alpha from `dctcp_alpha_on_init` (at most 1024), `loss_cwnd` 0, and
    /// a first observation window ending at `snd_nxt`. Without: fall back to Reno
    /// (`dctcp_reno`; `INET_ECN_dontxmit` has nothing to undo here, as a flow without ECN sends
    /// Not-ECT already).
    ///
    /// net/ipv4/tcp_dctcp.c: dctcp_init().
    fn init(&mut self, tp: &mut TcpSock) {
        // tcp_ecn_mode_any(tp): RFC 3168 ECN was negotiated (cclab has no AccECN).
        if tp.ecn_flags & TCP_ECN_OK != 0 {
            self.reno_fallback = false;
            self.dctcp_alpha = self.alpha_on_init.min(DCTCP_MAX_ALPHA);
            self.loss_cwnd = 0;
            self.dctcp_reset(tp);
            return;
        }
        // No ECN support? Fall back to Reno.
        self.reno_fallback = true;
    }

    /// `cwnd - (cwnd * alpha) >> 11`, at least 2, remembering cwnd for undo. The core calls it
    /// when an ECE ACK enters CWR (`tcp_enter_cwr` -> `tcp_init_cwnd_reduction`), and on loss
    /// before `dctcp_state` / `CA_EVENT_LOSS` overwrite it with Reno's half.
    ///
    /// net/ipv4/tcp_dctcp.c: dctcp_ssthresh(); `dctcp_reno`: tcp_reno_ssthresh().
    fn ssthresh(&mut self, tp: &mut TcpSock) -> u32 {
        if self.reno_fallback {
            return tcp_reno_ssthresh(tp);
        }
        self.loss_cwnd = tp.snd_cwnd;
        let cut = tp.snd_cwnd.wrapping_mul(self.dctcp_alpha) >> 11;
        tp.snd_cwnd.wrapping_sub(cut).max(2)
    }

    /// `.cong_avoid = tcp_reno_cong_avoid` (both ops tables).
    fn cong_avoid(&mut self, tp: &mut TcpSock, ack: u64, acked: u32) {
        tcp_reno_cong_avoid(tp, ack, acked);
    }

    /// Entering Recovery (from another state) is a loss: halve.
    /// RTOs are handled in `cwnd_event` "to ensure that we perform only one loss-adjustment
    /// per RTT".
    ///
    /// net/ipv4/tcp_dctcp.c: dctcp_state(). `new_state` is compared with `tp.ca_state`, which
    /// the core updates after this hook, as `tcp_set_ca_state` does with `icsk_ca_state`.
    fn set_state(&mut self, tp: &mut TcpSock, new_state: CaState) {
        if self.reno_fallback {
            return;
        }
        if new_state == CaState::Recovery && new_state != tp.ca_state {
            self.dctcp_react_to_loss(tp);
        }
    }

    /// `CA_EVENT_LOSS` (an RTO, from `tcp_enter_loss` right after `ssthresh`): halve. The
    /// receiver's `CA_EVENT_ECN_IS_CE` / `NO_CE` never reach a sender here (see the module
    /// doc); `CA_EVENT_TX_START` only feeds PLB, not modelled.
    ///
    /// net/ipv4/tcp_dctcp.c: dctcp_cwnd_event().
    fn cwnd_event(&mut self, tp: &mut TcpSock, event: CaEvent) {
        if self.reno_fallback {
            return;
        }
        // CA_EVENT_ECN_IS_CE / CA_EVENT_ECN_NO_CE: dctcp_ece_ack_update on the receiving
        // socket (tcp/ecn.rs). CA_EVENT_TX_START: tcp_plb_check_rehash. Don't care for the rest.
        if event == CaEvent::Loss {
            self.dctcp_react_to_loss(tp);
        }
    }

    /// net/ipv4/tcp_dctcp.c: `.in_ack_event = dctcp_update_alpha` (none in `dctcp_reno`).
    fn in_ack_event(&mut self, tp: &mut TcpSock, _flags: u32) {
        if self.reno_fallback {
            return;
        }
        self.dctcp_update_alpha(tp);
    }

    /// `max(cwnd, loss_cwnd)`.
    ///
    /// net/ipv4/tcp_dctcp.c: dctcp_cwnd_undo(); `dctcp_reno`: tcp_reno_undo_cwnd().
    fn undo_cwnd(&mut self, tp: &mut TcpSock) -> u32 {
        if self.reno_fallback {
            return tcp_reno_undo_cwnd(tp);
        }
        tp.snd_cwnd.max(self.loss_cwnd)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::ack_flags;
    use crate::tcp::ecn::EcnMode;

    const MSS: u32 = 1448;

    /// An established sender with ECN negotiated (or not), DCTCP initialised.
    fn setup(shift_g: u32, alpha_on_init: u32, ecn: bool) -> (Dctcp, TcpSock) {
        let mut tp = TcpSock::new(MSS, 10, u32::MAX, crate::tcp::clock::KernelClock::new(250));
        tp.ecn_flags = if ecn {
            EcnMode::Low.initial_flags()
        } else {
            EcnMode::Off.initial_flags()
        };
        tp.is_cwnd_limited = true;
        let mut cc = Dctcp::new(shift_g, alpha_on_init);
        cc.init(&mut tp);
        (cc, tp)
    }

    /// One observation window of `n` segments, acked one ACK per segment, the first `ce` of
    /// them by ECE ACKs; the next window's `n` segments go out as the first ACK arrives, so the
    /// window closes on its last ACK and the next one ends `n` segments later. Counters move as
    /// the core moves them (delivered, then delivered_ce on an ECE ACK, then `in_ack_event`, as
    /// in Linux 6.14+). Returns alpha after the window.
    fn window(cc: &mut Dctcp, tp: &mut TcpSock, n: u32, ce: u32) -> u32 {
        assert_eq!(cc.next_seq, tp.snd_una + n as u64 * MSS as u64);
        for i in 0..n {
            if i == 0 {
                tp.snd_nxt += n as u64 * MSS as u64;
            }
            tp.snd_una += MSS as u64;
            tp.delivered += 1;
            let mut flags = ack_flags::CA_ACK_WIN_UPDATE;
            if i < ce {
                tp.delivered_ce += 1;
                flags |= ack_flags::CA_ACK_SLOWPATH | ack_flags::CA_ACK_ECE;
            }
            let before = cc.alpha();
            cc.in_ack_event(tp, flags);
            if i + 1 < n {
                assert_eq!(
                    cc.alpha(),
                    before,
                    "alpha moves only when the window is acked"
                );
            }
        }
        cc.alpha()
    }

    /// The first window: `n` segments sent when `init` runs.
    fn start(cc: &mut Dctcp, tp: &mut TcpSock, n: u32) {
        tp.snd_nxt = n as u64 * MSS as u64;
        cc.init(tp);
    }

    #[test]
    fn ssthresh_cuts_alpha_over_two_of_cwnd() {
        let (mut cc, mut tp) = setup(4, 1024, true);
        // Closed form: cwnd - floor(cwnd * alpha / 2048), at least 2.
        for alpha in [0u32, 1, 64, 256, 512, 777, 1023, 1024] {
            cc.dctcp_alpha = alpha;
            for cwnd in [1u32, 2, 3, 10, 17, 100, 1000, 12345] {
                tp.snd_cwnd = cwnd;
                let want = (cwnd as f64 - (cwnd as f64 * alpha as f64 / 2048.0).floor()) as u32;
                assert_eq!(
                    cc.ssthresh(&mut tp),
                    want.max(2),
                    "alpha {alpha} cwnd {cwnd}"
                );
                assert_eq!(cc.loss_cwnd(), cwnd);
            }
        }
        // alpha = 1.0 is Reno's half (rounded up); alpha = 0 keeps cwnd; 0.5 takes a quarter.
        cc.dctcp_alpha = 1024;
        tp.snd_cwnd = 101;
        assert_eq!(cc.ssthresh(&mut tp), 51);
        cc.dctcp_alpha = 512;
        tp.snd_cwnd = 100;
        assert_eq!(cc.ssthresh(&mut tp), 75);
        cc.dctcp_alpha = 0;
        assert_eq!(cc.ssthresh(&mut tp), 100);
    }

    #[test]
    fn init_takes_alpha_on_init_capped_at_one() {
        assert_eq!(setup(4, 1024, true).0.alpha(), 1024);
        assert_eq!(setup(4, 300, true).0.alpha(), 300);
        assert_eq!(setup(4, 5000, true).0.alpha(), 1024);
        let (mut cc, mut tp) = setup(4, 0, true);
        tp.snd_cwnd = 40;
        assert_eq!(
            cc.ssthresh(&mut tp),
            40,
            "alpha 0: the first mark cuts nothing"
        );
        // init opens the first window at snd_nxt.
        let (mut cc, mut tp) = setup(4, 1024, true);
        tp.snd_nxt = 50 * MSS as u64;
        cc.init(&mut tp);
        assert_eq!(cc.next_seq, 50 * MSS as u64);
    }

    #[test]
    fn alpha_converges_to_the_marked_fraction() {
        // 100 segments per window, 25 marked: F = 0.25. Kernel integer arithmetic:
        // alpha' = alpha - alpha >> 4 + (25 << 6) / 100 = alpha - alpha >> 4 + 16, whose fixed
        // points are the alphas with alpha >> 4 == 16: 256..=271, i.e. F * 1024 + [0, 16).
        let (mut cc, mut tp) = setup(4, 1024, true);
        start(&mut cc, &mut tp, 100);
        let f = 0.25;
        let mut a = Vec::new();
        for _ in 0..200 {
            a.push(window(&mut cc, &mut tp, 100, 25));
        }
        // The float EWMA: F + (1 - F) (15/16)^k, in 1/1024. The integer one stays within one
        // fixed-point band (16) of it: the error obeys e' = 15/16 e + d with |d| < 1.
        for (k, &alpha) in a.iter().enumerate() {
            let closed = 1024.0 * (f + (1.0 - f) * (15.0f64 / 16.0).powi(k as i32 + 1));
            assert!(
                (alpha as f64 - closed).abs() < 16.0,
                "window {k}: alpha {alpha}, closed form {closed:.1}"
            );
        }
        let last = *a.last().unwrap();
        assert!((256..=271).contains(&last), "alpha {last}");
        assert_eq!(last, a[a.len() - 2], "a fixed point");
        // And one reduction at that alpha takes cwnd * F / 2 (plus rounding) off.
        tp.snd_cwnd = 200;
        assert_eq!(cc.ssthresh(&mut tp), 200 - ((200 * last) >> 11));
        assert!((174..=175).contains(&cc.ssthresh(&mut tp)));

        // From alpha 0, other fractions of at least 1/4: within the fixed-point band of
        // F * 1024.
        for (n, ce) in [(40u32, 30u32), (64, 64), (7, 3), (100, 25)] {
            let (mut cc, mut tp) = setup(4, 0, true);
            start(&mut cc, &mut tp, n);
            let mut alpha = 0;
            for _ in 0..300 {
                alpha = window(&mut cc, &mut tp, n, ce);
            }
            let target = ce as f64 / n as f64 * 1024.0;
            let c = (ce << 6) / n; // the increment the kernel adds per window
            assert!(
                16 * c <= alpha && alpha < 16 * c + 16,
                "F {ce}/{n}: alpha {alpha}"
            );
            assert!(
                (alpha as f64 - target).abs() <= 16.0,
                "F {ce}/{n}: {alpha} vs {target}"
            );
        }
    }

    #[test]
    fn below_one_sixteenth_alpha_restarts_every_window() {
        // The kernel's min_not_zero: an alpha under 16 loses all of itself in the next update,
        // so it is only that window's g * F. With F under 1/4 (g * F under 16/1024) an alpha
        // that starts at 0 stays at g * F = (ce << 6) / n instead of growing to F; from 1.0 it
        // settles in the band of F. F = 0.1: 6 from below, 96..=111 from above.
        let (mut cc, mut tp) = setup(4, 0, true);
        start(&mut cc, &mut tp, 10);
        for _ in 0..300 {
            assert_eq!(window(&mut cc, &mut tp, 10, 1), 6);
        }
        let (mut cc, mut tp) = setup(4, 1024, true);
        start(&mut cc, &mut tp, 10);
        let mut alpha = 0;
        for _ in 0..300 {
            alpha = window(&mut cc, &mut tp, 10, 1);
        }
        assert!((96..=111).contains(&alpha), "alpha {alpha}");
        // One window with F >= 1/4 lifts it out (an increment of at least 16 survives).
        let (mut cc, mut tp) = setup(4, 0, true);
        start(&mut cc, &mut tp, 100);
        assert_eq!(window(&mut cc, &mut tp, 100, 25), 16);
        assert_eq!(window(&mut cc, &mut tp, 100, 10), 15 + 6);
    }

    #[test]
    fn shift_g_sets_the_gain() {
        // g = 1 (shift 0): alpha is the last window's fraction, exactly (kernel: alpha minus
        // itself, plus (ce << 10) / n).
        let (mut cc, mut tp) = setup(0, 1024, true);
        start(&mut cc, &mut tp, 100);
        assert_eq!(window(&mut cc, &mut tp, 100, 30), (30 << 10) / 100);
        assert_eq!(window(&mut cc, &mut tp, 100, 100), 1024);
        assert_eq!(window(&mut cc, &mut tp, 100, 0), 0);
        // g = 1/2 (shift 1): one window from 1024 with half the segments marked:
        // 1024 - 512 + (25 << 9) / 50 = 768.
        let (mut cc, mut tp) = setup(1, 1024, true);
        start(&mut cc, &mut tp, 50);
        assert_eq!(window(&mut cc, &mut tp, 50, 25), 768);
        // g = 1/1024 (shift 10): 1024 - 1 + 1 = 1024 with every segment marked.
        let (mut cc, mut tp) = setup(10, 1024, true);
        start(&mut cc, &mut tp, 50);
        assert_eq!(window(&mut cc, &mut tp, 50, 50), 1024);
        assert_eq!(window(&mut cc, &mut tp, 50, 0), 1023);
    }

    #[test]
    fn alpha_decays_without_marks_and_reaches_zero() {
        let (mut cc, mut tp) = setup(4, 1024, true);
        start(&mut cc, &mut tp, 20);
        let mut a = vec![1024u32];
        while *a.last().unwrap() > 0 {
            a.push(window(&mut cc, &mut tp, 20, 0));
            assert!(a.len() < 100, "alpha never reaches 0: {a:?}");
        }
        // alpha' = alpha - floor(alpha / 16): between 1024 (15/16)^k and that plus 15, until
        // it is below 16, when min_not_zero takes all of it in one window.
        for (k, w) in a.windows(2).enumerate() {
            let (prev, next) = (w[0], w[1]);
            if prev >= 16 {
                assert_eq!(next, prev - prev / 16);
                let lo = 1024.0 * (15.0f64 / 16.0).powi(k as i32 + 1);
                assert!(
                    next as f64 >= lo - 1e-9 && (next as f64) < lo + 16.0,
                    "{k}: {next}"
                );
            } else {
                assert_eq!(next, 0, "alpha {prev} < 16 falls to 0 at once");
            }
        }
        assert_eq!(a[1..5], [960, 900, 844, 792]);
        assert_eq!(a.len() - 1, 75, "windows from 1.0 to 0");
        // At 0 it stays 0, and a reduction then cuts nothing.
        assert_eq!(window(&mut cc, &mut tp, 20, 0), 0);
        tp.snd_cwnd = 30;
        assert_eq!(cc.ssthresh(&mut tp), 30);
    }

    #[test]
    fn the_window_closes_at_next_seq_only() {
        let (mut cc, mut tp) = setup(4, 1024, true);
        // 10 segments in flight: the window ends when snd_una reaches them all.
        tp.snd_nxt = 10 * MSS as u64;
        cc.in_ack_event(&mut tp, 0); // snd_una 0 >= next_seq 0: closes the empty window
        assert_eq!(cc.next_seq, 10 * MSS as u64);
        assert_eq!(cc.alpha(), 960, "an empty window still decays alpha");
        for i in 1..10u64 {
            tp.snd_una = i * MSS as u64;
            tp.delivered += 1;
            tp.delivered_ce += 1;
            cc.in_ack_event(&mut tp, ack_flags::CA_ACK_ECE);
            assert_eq!(cc.alpha(), 960);
            assert_eq!(cc.window_counts(&tp), (i as u32, i as u32));
        }
        tp.snd_nxt = 30 * MSS as u64;
        tp.snd_una = 10 * MSS as u64;
        tp.delivered += 1;
        cc.in_ack_event(&mut tp, 0);
        // 9 of 10 marked: 960 - 60 + (9 << 6) / 10 = 957.
        assert_eq!(cc.alpha(), 957);
        assert_eq!(cc.next_seq, 30 * MSS as u64);
        assert_eq!(cc.window_counts(&tp), (0, 0));
    }

    #[test]
    fn loss_halves_and_undo_restores() {
        let (mut cc, mut tp) = setup(4, 1024, true);
        cc.dctcp_alpha = 100;
        tp.snd_cwnd = 80;
        // tcp_enter_recovery: ssthresh (dctcp_ssthresh) first, then the state change halves.
        tp.snd_ssthresh = cc.ssthresh(&mut tp);
        assert_eq!(tp.snd_ssthresh, 77);
        cc.set_state(&mut tp, CaState::Recovery);
        assert_eq!((tp.snd_ssthresh, cc.loss_cwnd()), (40, 80));
        tp.ca_state = CaState::Recovery;
        // Already in Recovery: no second halving.
        tp.snd_cwnd = 60;
        cc.set_state(&mut tp, CaState::Recovery);
        assert_eq!((tp.snd_ssthresh, cc.loss_cwnd()), (40, 80));
        // From CWR (an ECN reduction under way) a loss still halves the current cwnd.
        tp.ca_state = CaState::Cwr;
        cc.set_state(&mut tp, CaState::Recovery);
        assert_eq!((tp.snd_ssthresh, cc.loss_cwnd()), (30, 60));
        // Other states do nothing.
        tp.ca_state = CaState::Open;
        tp.snd_ssthresh = 1000;
        for s in [
            CaState::Open,
            CaState::Disorder,
            CaState::Cwr,
            CaState::Loss,
        ] {
            cc.set_state(&mut tp, s);
        }
        assert_eq!(tp.snd_ssthresh, 1000);
        // An RTO: CA_EVENT_LOSS halves; other events do nothing.
        tp.snd_cwnd = 90;
        for e in [
            CaEvent::TxStart,
            CaEvent::CompleteCwr,
            CaEvent::EcnIsCe,
            CaEvent::EcnNoCe,
        ] {
            cc.cwnd_event(&mut tp, e);
        }
        assert_eq!(tp.snd_ssthresh, 1000);
        cc.cwnd_event(&mut tp, CaEvent::Loss);
        assert_eq!((tp.snd_ssthresh, cc.loss_cwnd()), (45, 90));
        tp.snd_cwnd = 3;
        cc.cwnd_event(&mut tp, CaEvent::Loss);
        assert_eq!(tp.snd_ssthresh, 2);
        // Undo: the larger of cwnd and loss_cwnd (not prior_cwnd).
        tp.snd_cwnd = 50;
        tp.prior_cwnd = 500;
        cc.loss_cwnd = 70;
        assert_eq!(cc.undo_cwnd(&mut tp), 70);
        cc.loss_cwnd = 20;
        assert_eq!(cc.undo_cwnd(&mut tp), 50);
    }

    #[test]
    fn grows_as_reno() {
        let (mut cc, mut tp) = setup(4, 1024, true);
        cc.cong_avoid(&mut tp, 0, 10);
        assert_eq!(tp.snd_cwnd, 20, "slow start");
        tp.snd_ssthresh = 20;
        for _ in 0..20 {
            cc.cong_avoid(&mut tp, 0, 1);
        }
        assert_eq!(tp.snd_cwnd, 21, "+1 per window");
    }

    #[test]
    fn without_ecn_it_is_dctcp_reno() {
        let (mut cc, mut tp) = setup(4, 0, false);
        assert!(cc.is_reno_fallback());
        assert_eq!(cc.name(), "dctcp-reno");
        assert!(!cc.needs_ecn());
        tp.snd_cwnd = 100;
        assert_eq!(cc.ssthresh(&mut tp), 50, "Reno's half, not alpha's (0) cut");
        tp.snd_ssthresh = 7;
        cc.set_state(&mut tp, CaState::Recovery);
        cc.cwnd_event(&mut tp, CaEvent::Loss);
        assert_eq!(
            tp.snd_ssthresh, 7,
            "dctcp_reno has no set_state / cwnd_event"
        );
        tp.delivered = 10;
        tp.delivered_ce = 10;
        tp.snd_una = 1 << 20;
        cc.in_ack_event(&mut tp, ack_flags::CA_ACK_ECE);
        assert_eq!(cc.alpha(), 0, "nor in_ack_event");
        tp.prior_cwnd = 80;
        assert_eq!(cc.undo_cwnd(&mut tp), 100);
        // With ECN: dctcp, which needs ECN.
        let (cc, _) = setup(4, 1024, true);
        assert_eq!((cc.name(), cc.needs_ecn()), ("dctcp", true));
        assert!(
            Dctcp::default().needs_ecn(),
            "before init: the registered algorithm"
        );
    }

    #[test]
    fn info_and_build() {
        let i = info();
        assert_eq!(
            (i.name, i.base, i.source),
            ("dctcp", "dctcp", "Linux 6.18 net/ipv4/tcp_dctcp.c")
        );
        let names: Vec<_> = i.params.iter().map(|p| (p.name, p.default)).collect();
        assert_eq!(
            names,
            [
                ("dctcp_shift_g", ParamValue::Int(4)),
                ("dctcp_alpha_on_init", ParamValue::Int(1024))
            ]
        );
        let cc = build("dctcp", &Params::new()).unwrap();
        assert_eq!((cc.name(), cc.needs_ecn()), ("dctcp", true));
        let p = |k: &str, v: i64| -> Params { [(k.to_string(), ParamValue::Int(v))].into() };
        build("dctcp", &p("dctcp_shift_g", 0)).unwrap();
        build("dctcp", &p("dctcp_shift_g", 10)).unwrap();
        build("dctcp", &p("dctcp_alpha_on_init", u32::MAX as i64)).unwrap();
        for (k, v) in [
            ("dctcp_shift_g", 11),
            ("dctcp_shift_g", -1),
            ("dctcp_alpha_on_init", -1),
            ("dctcp_alpha_on_init", 1 << 32),
        ] {
            let e = build("dctcp", &p(k, v)).err().unwrap();
            assert!(
                e.to_string()
                    .starts_with(&format!("cc_params.{k} = {v} is out of range")),
                "{e}"
            );
        }
    }
}
