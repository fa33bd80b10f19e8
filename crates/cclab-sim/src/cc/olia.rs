//! OLIA, Opportunistic Linked Increases (Khalili, Gast, Popovic, Le Boudec, "MPTCP is not
//! Pareto-optimal: performance issues and a possible solution", CoNEXT 2012 / IEEE/ACM ToN 2013;
//! draft-khalili-mptcp-congestion-control), as the multipath-tcp.org v0.9x kernel implements it in
//! `net/mptcp/mptcp_olia.c`.
//!
//! The paper: for each ACK on path r in congestion avoidance,
//!   w_r += (w_r / rtt_r^2) / (sum_p w_p / rtt_p)^2 + alpha_r / w_r,
//! and w_r is halved on a loss. With l_r the larger of the bytes acked between the last two
//! losses on r and the bytes acked since the last loss (l_r = max(l1_r, l2_r)):
//! - B, the presumably best paths: those with the largest l_r / rtt_r^2;
//! - M, the paths with the largest window;
//! - alpha_r = 1 / (|P| |B \ M|) for r in B \ M, -1 / (|P| |M|) for r in M, if B \ M is not
//!   empty; else 0 for every path (|P| the number of paths).
//!
//! The sum of the alphas is 0: OLIA moves window from the largest paths to the best ones that
//! are not the largest, and otherwise grows like the first term (which is LIA's "fully coupled"
//! increase, responsive, not RFC 6356's min).
//!
//! What v0.9x does, which we follow (`exact = false`, the default):
//! - Loss intervals (`mptcp_olia_set_state`, `mptcp_olia_cong_avoid`): `loss3` = snd_una on
//!   every congestion-avoidance call; on entering Loss, Recovery or CWR, if `loss3 != loss2`,
//!   the intervals shift (`loss1 = loss2; loss2 = loss3`), and
//!   l_r = `max(loss3 - loss2, loss2 - loss1)`, in bytes acked. So a CWR (ECN, local congestion)
//!   is a loss too. The kernel also requires `icsk_retransmits == 0`; that is implied here:
//!   `loss3` only moves when snd_una advances, which resets `icsk_retransmits`, and a first RTO
//!   calls `set_state` before counting itself. These three counters are what the other
//!   subflows read (`coupled_state` = `[loss1, loss2, loss3, 0]`).
//! - Sets and alphas (`mptcp_get_epsilon`): exact integer comparisons of `l * srtt^2` products
//!   (u64, wrapping as the kernel's), the window of a subflow in Recovery taken as its ssthresh
//!   (`mptcp_get_crt_cwnd`), |P| = `cnt_established`; the best path search keeps the last of
//!   equal ones. alpha_r = `epsilon_num / epsilon_den`.
//! - The increase (`mptcp_olia_cong_avoid`): both terms in units of 2^-10 packets, per ACK
//!   (not per packet acked; `per_segment = true`: per segment acked, as lia.rs explains), summed into a private counter; at +1023 cwnd grows by one, at
//!   -1023 it shrinks by one (at least 1), and the counter restarts from 0 (the excess is
//!   dropped). `rate` = `(1 + sum_p (crt_w_p << 10) * rtt_r / rtt_p)^2`.
//! - Slow start as Linux (`tcp_slow_start`; the leftover of an ACK crossing ssthresh is dropped);
//!   ssthresh = `tcp_reno_ssthresh`; undo = `tcp_reno_undo_cwnd` (6.18 requires one; the v0.9x
//!   ops table has none and gets the core's default, the same rule).
//!
//! `exact = true`: the same sets and inputs, the paper's increase in floating point, per packet
//! acked, with a fractional credit that keeps its excess (positive or negative).

use super::coupled::{self, crt_cwnd, sendable, Peers};
use super::params::ParamReader;
use super::reno::{tcp_reno_cong_avoid, tcp_reno_ssthresh, tcp_reno_undo_cwnd, tcp_slow_start};
use super::SubflowView;
use super::{AlgorithmInfo, CaState, CcError, CongestionControl, ParamInfo, ParamValue, Params};
use crate::tcp::sock::TcpSock;

/// `scale`: OLIA's fixed point, 2^10 (`mptcp_olia.c`).
pub const OLIA_SCALE: u32 = 10;

/// What `cclab presets` lists for OLIA.
pub fn info() -> AlgorithmInfo {
    AlgorithmInfo {
        name: "olia",
        base: "olia",
        description: "MPTCP OLIA (Khalili et al.): coupled increase that moves window to the best \
                      paths, halve on loss; Reno on a single path; simulator only",
        source: "multipath-tcp.org v0.9x net/mptcp/mptcp_olia.c",
        params: vec![
            ParamInfo {
                name: "exact",
                default: ParamValue::Bool(false),
                doc: "false: the v0.9x kernel (2^-10 fixed point, one count per ACK, counter \
                      reset at +-1 packet); true: the paper's increase in floating point per \
                      packet acked; true/false or 0/1",
            },
            coupled::per_segment_param(),
        ],
        preset_params: Params::new(),
    }
}

/// Build OLIA with its tunables.
pub fn build(algorithm: &str, params: &Params) -> Result<Box<dyn CongestionControl>, CcError> {
    let r = ParamReader::new(algorithm, params);
    let mut olia = Olia::new(r.bool("exact", false)?);
    olia.per_segment = r.bool("per_segment", false)?;
    Ok(Box::new(olia))
}

/// `max(loss3 - loss2, loss2 - loss1)` from a subflow's shared state: l_r, bytes.
pub fn loss_interval(state: &[u64; 4]) -> u64 {
    let [l1, l2, l3, _] = *state;
    l3.wrapping_sub(l2).max(l2.wrapping_sub(l1))
}

/// OLIA's alpha_r for subflow `me` as a fraction (`epsilon_num`, `epsilon_den`), from the sets of
/// `mptcp_get_epsilon`; also returns (|M|, |B \ M|). `views` are the subflows now.
pub fn epsilon(views: &[SubflowView], me: usize, cnt_established: u32) -> (i32, u32, u32, u32) {
    let send = || views.iter().filter(|v| sendable(v));
    let max_cwnd = send().map(crt_cwnd).max().unwrap_or(0);
    let key = |v: &SubflowView| {
        (
            loss_interval(&v.cc_state),
            v.srtt_us as u64 * v.srtt_us as u64,
        )
    };
    // The best path: the largest l / srtt^2, compared as l * best_rtt >= best_l * rtt.
    let (mut best_int, mut best_rtt) = (0u64, 1u64);
    for v in send() {
        let (l, rtt2) = key(v);
        if l.wrapping_mul(best_rtt) >= best_int.wrapping_mul(rtt2) {
            (best_int, best_rtt) = (l, rtt2);
        }
    }
    let in_b = |v: &SubflowView| {
        let (l, rtt2) = key(v);
        l.wrapping_mul(best_rtt) == best_int.wrapping_mul(rtt2)
    };
    let m = send().filter(|v| crt_cwnd(v) == max_cwnd).count() as u32;
    let b_not_m = send()
        .filter(|v| crt_cwnd(v) != max_cwnd && in_b(v))
        .count() as u32;
    let v = &views[me];
    let (num, den) = if b_not_m == 0 {
        (0, 1)
    } else if crt_cwnd(v) < max_cwnd && in_b(v) {
        (1, cnt_established.wrapping_mul(b_not_m))
    } else if crt_cwnd(v) == max_cwnd {
        (-1, cnt_established.wrapping_mul(m))
    } else {
        (0, 1)
    };
    (num, den, m, b_not_m)
}

/// OLIA's private state (`struct mptcp_olia`).
#[derive(Debug, Clone)]
pub struct Olia {
    /// The connection's subflows as last given.
    peers: Peers,
    /// Reused copy of the subflows now (me from tp), for the sets.
    now: Vec<SubflowView>,
    /// snd_una at the loss before last, bytes (`mptcp_loss1`).
    loss1: u64,
    /// snd_una at the last loss, bytes (`mptcp_loss2`).
    loss2: u64,
    /// snd_una at the last congestion-avoidance ACK, bytes (`mptcp_loss3`).
    loss3: u64,
    /// alpha_r's numerator, -1, 0 or 1 (`epsilon_num`).
    epsilon_num: i32,
    /// alpha_r's denominator (`epsilon_den`).
    epsilon_den: u32,
    /// Window growth so far, 2^-10 packets (`mptcp_snd_cwnd_cnt`).
    cnt: i32,
    /// The paper's increase in floating point instead of the kernel's arithmetic.
    exact: bool,
    /// One v0.9x step per segment acked rather than per ACK (`per_segment`).
    pub per_segment: bool,
    /// Exact mode: the fractional window grown so far, packets (may be negative).
    credit: f64,
}

impl Olia {
    /// OLIA; `exact` selects the floating-point form of the increase.
    pub fn new(exact: bool) -> Self {
        Olia {
            peers: Peers::default(),
            now: Vec::new(),
            loss1: 0,
            loss2: 0,
            loss3: 0,
            epsilon_num: 0,
            epsilon_den: 1,
            cnt: 0,
            exact,
            per_segment: false,
            credit: 0.0,
        }
    }

    /// alpha_r as last computed: (`epsilon_num`, `epsilon_den`).
    pub fn epsilon(&self) -> (i32, u32) {
        (self.epsilon_num, self.epsilon_den)
    }

    /// The increase counter, 2^-10 packets.
    pub fn cnt(&self) -> i32 {
        self.cnt
    }

    /// Fill `now` with the subflows as they are (me from `tp`).
    fn refresh(&mut self, tp: &TcpSock) {
        let me_state = self.coupled_state();
        self.now.clear();
        let p = &self.peers;
        self.now
            .extend((0..p.len()).map(|i| p.view(i, tp, me_state)));
    }

    /// `mptcp_get_rate`: `(1 + sum_p (crt_w_p << 10) * path_rtt / rtt_p)^2`.
    fn rate(&self, path_rtt: u32) -> u64 {
        let mut rate = 1u64;
        for v in self.now.iter().filter(|v| sendable(v)) {
            let scaled = ((crt_cwnd(v) as u64) << OLIA_SCALE).wrapping_mul(path_rtt as u64);
            rate = rate.wrapping_add(scaled / v.srtt_us as u64);
        }
        rate.wrapping_mul(rate)
    }

    /// The kernel's increase (`mptcp_olia_cong_avoid`, after slow start).
    fn increase_fixed(&mut self, tp: &mut TcpSock) {
        let rate = self.rate(tp.srtt_us);
        let cwnd_scaled = (tp.snd_cwnd as u64) << OLIA_SCALE;
        let den32 = self.epsilon_den as u64;
        let inc_den = match (self.epsilon_den.wrapping_mul(tp.snd_cwnd) as u64).wrapping_mul(rate) {
            0 => 1,
            d => d,
        };
        let sq = den32.wrapping_mul(cwnd_scaled).wrapping_mul(cwnd_scaled);
        // `mptcp_snd_cwnd_cnt` is an int: the u64 steps truncate as in C.
        let step = |inc_num: u64| ((inc_num << OLIA_SCALE) / inc_den) as i32;
        if self.epsilon_num == -1 {
            if sq < rate {
                self.cnt = self.cnt.wrapping_sub(step(rate - sq));
            } else {
                self.cnt = self.cnt.wrapping_add(step(sq - rate));
            }
        } else {
            let inc_num = (self.epsilon_num as u64)
                .wrapping_mul(rate)
                .wrapping_add(sq);
            self.cnt = self.cnt.wrapping_add(step(inc_num));
        }
        let one = (1 << OLIA_SCALE) - 1;
        if self.cnt >= one {
            if tp.snd_cwnd < tp.snd_cwnd_clamp {
                tp.set_cwnd(tp.snd_cwnd + 1);
            }
            self.cnt = 0;
        } else if self.cnt <= -one {
            tp.set_cwnd(tp.snd_cwnd.saturating_sub(1).max(1));
            self.cnt = 0;
        }
    }

    /// The paper's increase in floating point, `acked` packets.
    fn increase_exact(&mut self, tp: &mut TcpSock, acked: u32) {
        let rtt_r = tp.srtt_us as f64;
        let w_r = tp.snd_cwnd as f64;
        let sum: f64 = self
            .now
            .iter()
            .filter(|v| sendable(v))
            .map(|v| crt_cwnd(v) as f64 / v.srtt_us as f64)
            .sum();
        let first = if sum > 0.0 && rtt_r > 0.0 {
            (w_r / (rtt_r * rtt_r)) / (sum * sum)
        } else {
            1.0 / w_r
        };
        let alpha = self.epsilon_num as f64 / self.epsilon_den.max(1) as f64;
        self.credit += acked as f64 * (first + alpha / w_r);
        if self.credit >= 1.0 {
            let whole = self.credit.floor();
            self.credit -= whole;
            let cwnd = (tp.snd_cwnd as u64 + whole as u64).min(tp.snd_cwnd_clamp as u64);
            tp.set_cwnd(cwnd as u32);
        } else if self.credit <= -1.0 {
            let whole = (-self.credit).floor();
            self.credit += whole;
            tp.set_cwnd((tp.snd_cwnd as u64).saturating_sub(whole as u64).max(1) as u32);
        }
    }
}

impl CongestionControl for Olia {
    fn name(&self) -> &'static str {
        "olia"
    }

    /// `mptcp_olia_init`: the loss intervals start at snd_una.
    fn init(&mut self, tp: &mut TcpSock) {
        (self.loss1, self.loss2, self.loss3) = (tp.snd_una, tp.snd_una, tp.snd_una);
        (self.cnt, self.epsilon_num, self.epsilon_den) = (0, 0, 1);
    }

    /// `.ssthresh = tcp_reno_ssthresh`.
    fn ssthresh(&mut self, tp: &mut TcpSock) -> u32 {
        tcp_reno_ssthresh(tp)
    }

    /// `mptcp_olia_cong_avoid`.
    fn cong_avoid(&mut self, tp: &mut TcpSock, ack: u64, acked: u32) {
        if !self.peers.multipath() {
            tcp_reno_cong_avoid(tp, ack, acked);
            return;
        }
        self.loss3 = tp.snd_una;
        if !tp.is_cwnd_limited() {
            return;
        }
        let mut acked = acked;
        if tp.in_slow_start() {
            acked = tcp_slow_start(tp, acked);
            if !self.exact || acked == 0 {
                return;
            }
        }
        self.refresh(tp);
        let (num, den, _, _) = epsilon(&self.now, self.peers.me(), self.peers.cnt_established());
        // The kernel updates only subflows that can send; `me` keeps its last alpha otherwise.
        if sendable(&self.now[self.peers.me()]) {
            (self.epsilon_num, self.epsilon_den) = (num, den);
        }
        if self.exact {
            self.increase_exact(tp, acked);
        } else {
            // v0.9x steps once per ACK; `per_segment`: once per segment acked (lia.rs).
            let steps = coupled::steps(self.per_segment, acked);
            for _ in 0..steps {
                self.increase_fixed(tp);
            }
        }
    }

    /// `mptcp_olia_set_state`: a loss (Loss, Recovery or CWR) closes a loss interval.
    fn set_state(&mut self, _tp: &mut TcpSock, new_state: CaState) {
        if !self.peers.multipath() {
            return;
        }
        let loss = matches!(new_state, CaState::Loss | CaState::Recovery | CaState::Cwr);
        if loss && self.loss3 != self.loss2 {
            self.loss1 = self.loss2;
            self.loss2 = self.loss3;
        }
    }

    /// `tcp_reno_undo_cwnd`.
    fn undo_cwnd(&mut self, tp: &mut TcpSock) -> u32 {
        tcp_reno_undo_cwnd(tp)
    }

    fn set_subflows(&mut self, subflows: &[SubflowView], me: usize) {
        self.peers.update(subflows, me);
    }

    /// `[loss1, loss2, loss3, 0]`: what `mptcp_get_epsilon` reads from the other subflows.
    fn coupled_state(&self) -> [u64; 4] {
        [self.loss1, self.loss2, self.loss3, 0]
    }
}
