//! LIA, the Linked Increases Algorithm of Multipath TCP (RFC 6356, Raiciu, Handley, Wischik),
//! as the multipath-tcp.org v0.9x kernel implements it in `net/mptcp/mptcp_coupled.c`
//! (ops name "lia", earlier "coupled").
//!
//! RFC 6356 section 3: for each ACK on subflow r in congestion avoidance,
//!   w_r += min(alpha / w_total, 1 / w_r)   per packet acked, with
//!   alpha = w_total * max_i(w_i / rtt_i^2) / (sum_i w_i / rtt_i)^2,
//! and on a loss w_r is halved as in TCP. The three goals: improve throughput (at least what a
//! single TCP gets on the best path), do no harm (never take more than one TCP on any path),
//! balance congestion (move traffic off the more congested paths). With n subflows of equal
//! windows and RTTs, alpha = 1/n and every subflow grows by 1/(n w) per ACK: the connection's
//! total grows by one packet per RTT, like one Reno flow.
//!
//! What v0.9x does, which we follow (`exact = false`, the default):
//! - Fixed point (`mptcp_ccc_recalc_alpha`): alpha is kept as
//!   `(best_cwnd << 32) / (sum_i (w_i << 10) * rtt_best / rtt_i)^2`, which is
//!   `2^12 * alpha_rfc / w_total`, and the ACK count per +1 packet is
//!   `max(2^12 / alpha, w_r)` (`mptcp_ccc_cong_avoid`): the RFC's `min` in the reciprocal form,
//!   with both divisions rounding down.
//! - The best path (the subflow with the largest w_i / rtt_i^2, whose window and RTT alpha's
//!   numerator and denominator use) is the one with the largest `(cwnd << 32) / srtt_us^2`,
//!   where `srtt_us` is the RTT in microseconds << 3. That quotient is 0 below
//!   `srtt_us^2 / 2^32` packets (24 at 40 ms, 121 at 90 ms) and a small integer a little above,
//!   so paths often tie, and a tie goes to the last subflow walked (`>=`). `mptcp_for_each_sk`
//!   walks newest first (`mptcp_add_sock` puts a joining subflow at the head of
//!   `connection_list`), so the initial subflow wins a tie: with small windows, alpha is the
//!   initial subflow's path's whichever path is better. On the worse path, alpha is a fraction of
//!   RFC 6356's and the connection misses goal 1 (docs/mptcp-cc.md). We walk in the same order.
//! - Per ACK, not per packet: `snd_cwnd_cnt++` on every ACK whatever it acknowledges (Linux's
//!   own `tcp_cong_avoid_ai` counts acked packets since 3.18, whatever v0.9x's coupled code
//!   does). The RFC increases per packet acked. `per_segment = true` takes one of v0.9x's
//!   steps per segment the ACK covers, as if each were ACKed on its own (as 6.18's Reno
//!   counts); the flow's `ack_counting = "acks"` makes every ACK count one (Linux before 3.18,
//!   slow start included).
//! - Alpha is kept once per connection (in the meta socket) and recomputed only: on each ACK in
//!   slow start, when this subflow's cwnd grows by one, on `CA_EVENT_LOSS`, and on the first
//!   congestion-avoidance ACK after any subflow changed CA state (`forced_update`, set by
//!   `mptcp_ccc_set_state`). In between, every subflow uses the last value computed by any of
//!   them. The RFC leaves the timing open ("computed whenever a congestion window changes" is
//!   its intent). The shared value travels in `coupled_state` (`coupled::Shared`).
//! - Slow start as Linux (`tcp_slow_start`), with the leftover of an ACK that crosses ssthresh
//!   dropped (the kernel returns after slow start), and alpha recomputed on every such ACK. The
//!   test is `tcp_in_slow_start` (cwnd < ssthresh, as in `mptcp_olia.c`, `mptcp_balia.c`); some
//!   v0.9x copies of this file test `snd_cwnd <= snd_ssthresh`, which with 6.18's
//!   `tcp_slow_start` would hold cwnd at ssthresh for ever.
//! - ssthresh = `tcp_reno_ssthresh` per subflow (halve, at least 2); undo = `tcp_reno_undo_cwnd`.
//! - One established subflow (`cnt_established <= 1`): alpha = 1 and the subflow grows like
//!   Reno (w_r ACKs per packet).
//!
//! `exact = true` is RFC 6356 in floating point: alpha recomputed from the current windows on
//! every ACK in congestion avoidance, each acked packet adding `min(alpha / w_total, 1 / w_r)` to
//! a fractional credit, whole packets moved into cwnd; the slow-start leftover goes on to
//! congestion avoidance. Slow start, ssthresh and undo are as above.
//!
//! The v0.9x code is the reference: read, not copied. Where it is cited, "kernel" means it.
//! Divergences beyond the model's: a zero denominator (the kernel divides by it and only logs)
//! gives alpha = 1 here; `mptcp_ccc_init` on a subflow joining later resets the connection's
//! alpha to 1 in the kernel, here the joining subflow adopts the connection's value.

use super::coupled::{self, sendable, Clock, Peers, Shared};
use super::params::ParamReader;
use super::reno::{tcp_reno_cong_avoid, tcp_reno_ssthresh, tcp_reno_undo_cwnd, tcp_slow_start};
use super::{AlgorithmInfo, CaEvent, CaState, CcError, CongestionControl, ParamInfo, ParamValue};
use super::{Params, SubflowView};
use crate::tcp::sock::TcpSock;

/// `alpha_scale_num`: the numerator of alpha is scaled by 2^32 (`mptcp_coupled.c`).
pub const ALPHA_SCALE_NUM: u32 = 32;
/// `alpha_scale_den`: each term of the denominator's sum is scaled by 2^10.
pub const ALPHA_SCALE_DEN: u32 = 10;
/// `alpha_scale` = 32 - 2 * 10: alpha carries a factor 2^12.
pub const ALPHA_SCALE: u32 = 12;

/// What `cclab presets` lists for LIA.
pub fn info() -> AlgorithmInfo {
    AlgorithmInfo {
        name: "lia",
        base: "lia",
        description: "MPTCP LIA (RFC 6356): coupled increase across subflows, halve on loss; \
                      Reno on a single path; simulator only",
        source: "multipath-tcp.org v0.9x net/mptcp/mptcp_coupled.c",
        params: vec![
            ParamInfo {
                name: "exact",
                default: ParamValue::Bool(false),
                doc:
                    "false: the v0.9x kernel (fixed point, one count per ACK, alpha recomputed at \
                      its events); true: RFC 6356 in floating point per packet acked, alpha \
                      recomputed every ACK; true/false or 0/1",
            },
            coupled::per_segment_param(),
        ],
        preset_params: Params::new(),
    }
}

/// Build LIA with its tunables.
pub fn build(algorithm: &str, params: &Params) -> Result<Box<dyn CongestionControl>, CcError> {
    let r = ParamReader::new(algorithm, params);
    let mut lia = Lia::new(r.bool("exact", false)?);
    lia.per_segment = r.bool("per_segment", false)?;
    Ok(Box::new(lia))
}

/// Alpha from the subflows, RFC 6356 in the kernel's fixed point (`mptcp_ccc_recalc_alpha`):
/// `2^12 * alpha_rfc / w_total`, at least 1. `views` are the subflows now (`me` from its tp), in
/// the order they joined (subflow 0 first).
///
/// The best path is found as v0.9x finds it, including two properties that decide it whenever
/// the windows are small for the RTTs (module doc, "The best path"):
/// - `(cwnd << 32) / srtt_us^2` truncates (srtt_us is the RTT in microseconds << 3): it is 0 for
///   every subflow with cwnd below `srtt_us^2 / 2^32` packets (24 at 40 ms, 121 at 90 ms), and a
///   small integer a little above, so paths tie;
/// - ties go to the last subflow walked (`tmp >= max_numerator`), and `mptcp_for_each_sk` walks
///   newest first (`mptcp_add_sock` puts a joining subflow at the head of `connection_list`):
///   the oldest subflow, the initial one, wins a tie. We walk the same way (`rev`).
pub fn recalc_alpha_fixed(
    views: impl DoubleEndedIterator<Item = SubflowView> + Clone,
    n_est: u32,
) -> u64 {
    // Only one subflow left: fall back to Reno (alpha = 1).
    if n_est <= 1 {
        return 1;
    }
    let (mut max_numerator, mut best_cwnd, mut best_rtt, mut can_send) = (0u64, 0u32, 0u32, 0);
    for v in views.clone().rev().filter(sendable) {
        can_send += 1;
        let tmp = ((v.cwnd_pkts as u64) << ALPHA_SCALE_NUM) / (v.srtt_us as u64 * v.srtt_us as u64);
        // `>=`: of equal values the last walked, the oldest subflow, wins, as in the kernel.
        if tmp >= max_numerator {
            max_numerator = tmp;
            best_cwnd = v.cwnd_pkts;
            best_rtt = v.srtt_us;
        }
    }
    if can_send == 0 {
        return 1;
    }
    let mut sum_denominator = 0u64;
    for v in views.filter(sendable) {
        sum_denominator = sum_denominator.wrapping_add(
            ((v.cwnd_pkts as u64) << ALPHA_SCALE_DEN).wrapping_mul(best_rtt as u64)
                / v.srtt_us as u64,
        );
    }
    let sum_denominator = sum_denominator.wrapping_mul(sum_denominator);
    if sum_denominator == 0 {
        // Divergence: the kernel divides by zero here; it cannot happen with cwnd >= 1.
        return 1;
    }
    (((best_cwnd as u64) << ALPHA_SCALE_NUM) / sum_denominator).max(1)
}

/// RFC 6356's alpha and w_total in floating point, over the sendable subflows.
pub fn alpha_rfc(views: impl Iterator<Item = SubflowView>) -> (f64, f64) {
    let (mut max_term, mut sum, mut total) = (0.0f64, 0.0f64, 0.0f64);
    for v in views.filter(sendable) {
        let (w, rtt) = (v.cwnd_pkts as f64, v.srtt_us as f64);
        max_term = max_term.max(w / (rtt * rtt));
        sum += w / rtt;
        total += w;
    }
    if sum == 0.0 {
        return (1.0, total);
    }
    (total * max_term / (sum * sum), total)
}

/// LIA's private state (`struct mptcp_ccc`, which v0.9x keeps in the meta socket).
#[derive(Debug, Clone)]
pub struct Lia {
    /// The connection's subflows as last given.
    peers: Peers,
    /// The connection's alpha, `2^12 * alpha_rfc / w_total` (`mptcp_ccc.alpha`); 1 initially.
    alpha: Shared,
    /// `mptcp_ccc.forced_update`: recompute alpha on the next congestion-avoidance ACK (0/1).
    forced: Shared,
    /// Stamps for `alpha` and `forced`.
    clock: Clock,
    /// RFC 6356 in floating point instead of the kernel's arithmetic.
    exact: bool,
    /// One v0.9x step per segment acked rather than per ACK (`per_segment`).
    pub per_segment: bool,
    /// Exact mode: the fractional part of the window grown so far, packets.
    credit: f64,
}

impl Lia {
    /// LIA; `exact` selects the floating-point RFC form.
    pub fn new(exact: bool) -> Self {
        Lia {
            peers: Peers::default(),
            alpha: Shared { value: 1, stamp: 0 },
            forced: Shared::default(),
            clock: Clock::default(),
            exact,
            per_segment: false,
            credit: 0.0,
        }
    }

    /// The connection's alpha as this subflow last saw or computed it (kernel fixed point).
    pub fn alpha(&self) -> u64 {
        self.alpha.value
    }

    /// `mptcp_ccc_recalc_alpha`: recompute the connection's alpha from the subflows now.
    fn recalc_alpha(&mut self, tp: &TcpSock) {
        let me_state = self.coupled_state();
        let p = &self.peers;
        let views = (0..p.len()).map(|i| p.view(i, tp, me_state));
        let alpha = recalc_alpha_fixed(views, p.cnt_established());
        self.clock.write(&mut self.alpha, alpha);
    }

    /// Congestion avoidance as RFC 6356 in floating point (`exact`).
    fn cong_avoid_exact(&mut self, tp: &mut TcpSock, acked: u32) {
        let me_state = self.coupled_state();
        let p = &self.peers;
        let (alpha, total) = alpha_rfc((0..p.len()).map(|i| p.view(i, tp, me_state)));
        let w_r = tp.snd_cwnd as f64;
        let per_packet = if total > 0.0 {
            (alpha / total).min(1.0 / w_r)
        } else {
            1.0 / w_r
        };
        self.credit += acked as f64 * per_packet;
        if self.credit >= 1.0 {
            let whole = self.credit.floor();
            self.credit -= whole;
            let cwnd = (tp.snd_cwnd as u64 + whole as u64).min(tp.snd_cwnd_clamp as u64);
            tp.set_cwnd(cwnd as u32);
        }
    }
}

impl CongestionControl for Lia {
    fn name(&self) -> &'static str {
        "lia"
    }

    /// `mptcp_ccc_init` sets alpha = 1 and clears `forced_update`: `new` did.
    fn init(&mut self, _tp: &mut TcpSock) {}

    /// `.ssthresh = tcp_reno_ssthresh`: each subflow halves its own window.
    fn ssthresh(&mut self, tp: &mut TcpSock) -> u32 {
        tcp_reno_ssthresh(tp)
    }

    /// `mptcp_ccc_cong_avoid`.
    fn cong_avoid(&mut self, tp: &mut TcpSock, ack: u64, acked: u32) {
        if !self.peers.multipath() {
            tcp_reno_cong_avoid(tp, ack, acked);
            return;
        }
        if !tp.is_cwnd_limited() {
            return;
        }
        if tp.in_slow_start() {
            // "In safe area, increase": the leftover past ssthresh is dropped (kernel mode).
            let left = tcp_slow_start(tp, acked);
            if !self.exact {
                self.recalc_alpha(tp);
                return;
            }
            if left == 0 {
                return;
            }
            return self.cong_avoid_exact(tp, left);
        }
        if self.exact {
            return self.cong_avoid_exact(tp, acked);
        }
        if self.forced.value != 0 {
            self.recalc_alpha(tp);
            self.clock.write(&mut self.forced, 0);
        }
        // v0.9x steps once per ACK; `per_segment`: once per segment acked (module doc).
        for _ in 0..coupled::steps(self.per_segment, acked) {
            let acks_per_packet = if self.peers.cnt_established() > 1 {
                // "This may happen if ... initializing alpha failed": alpha 0 counts as 1.
                let alpha = self.alpha.value.max(1);
                ((1u64 << ALPHA_SCALE) / alpha).max(tp.snd_cwnd as u64)
            } else {
                tp.snd_cwnd as u64
            };
            if coupled::step(tp, acks_per_packet) {
                self.recalc_alpha(tp);
            }
        }
    }

    /// `mptcp_ccc_set_state`: any CA state change of any subflow forces a recomputation of
    /// alpha on the connection's next congestion-avoidance ACK.
    fn set_state(&mut self, _tp: &mut TcpSock, _new_state: CaState) {
        if self.peers.multipath() {
            self.clock.write(&mut self.forced, 1);
        }
    }

    /// `mptcp_ccc_cwnd_event`: recompute alpha on `CA_EVENT_LOSS` (an RTO).
    fn cwnd_event(&mut self, tp: &mut TcpSock, event: CaEvent) {
        if event == CaEvent::Loss && self.peers.multipath() {
            self.recalc_alpha(tp);
        }
    }

    /// `tcp_reno_undo_cwnd` (the cwnd before the reduction, if larger).
    fn undo_cwnd(&mut self, tp: &mut TcpSock) -> u32 {
        tcp_reno_undo_cwnd(tp)
    }

    fn set_subflows(&mut self, subflows: &[SubflowView], me: usize) {
        self.peers.update(subflows, me);
        for s in self.peers.peer_states() {
            let (alpha, forced) = (
                Shared {
                    value: s[0],
                    stamp: s[1],
                },
                Shared {
                    value: s[2],
                    stamp: s[3],
                },
            );
            self.clock.see(alpha.stamp.max(forced.stamp));
            self.alpha.merge(alpha);
            self.forced.merge(forced);
        }
    }

    /// `[alpha, its stamp, forced_update (0/1), its stamp]`: the meta socket's `mptcp_ccc`.
    fn coupled_state(&self) -> [u64; 4] {
        [
            self.alpha.value,
            self.alpha.stamp,
            self.forced.value,
            self.forced.stamp,
        ]
    }
}
