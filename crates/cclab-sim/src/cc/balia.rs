//! BALIA, the Balanced Linked Adaptation algorithm (Peng, Walid, Hwang, Low, "Multipath TCP:
//! analysis, design and implementation", IEEE/ACM ToN 2016; draft-walid-mptcp-congestion-control),
//! as the multipath-tcp.org v0.9x kernel implements it in `net/mptcp/mptcp_balia.c`.
//!
//! The paper, with x_k = w_k / rtt_k and alpha_r = max_k x_k / x_r:
//! - for each ACK on path r: w_r += (x_r / (rtt_r (sum_k x_k)^2)) (1 + alpha_r)/2 (4 + alpha_r)/5;
//! - for each loss on path r: w_r -= (w_r / 2) min(alpha_r, 1.5).
//!
//! So the best path (alpha_r = 1) halves like TCP, a path with half the rate or less of the best
//! one gives up 3/4 of its window, and the increase is balanced between LIA's and OLIA's.
//!
//! What v0.9x does, which we follow (`exact = false`, the default), in `mptcp_balia_recalc_ai`:
//! - Rates in bytes/s, `x_k = mss_r * w_k * (10^6 << 3) / srtt_us_k` (the MSS of the subflow
//!   computing, for every k), scaled down by 2^5 until the largest is at most 2^25.
//! - The increase as an ACK count per +1 packet, per ACK (not per packet acked;
//!   `per_segment = true`: per segment acked, as lia.rs explains):
//!   `ai = (sum_k x_k)^2 * 10 / (x_r + x_max) * w_r / (4 x_r + x_max)` (integer divisions in
//!   that order; 0 becomes w_r), counted in `snd_cwnd_cnt` as Reno counts w_r.
//! - The decrease through ssthresh: `md = ((w_r >> 1) * min(alpha << 10, 1.5 << 10)) >> 10`
//!   with **integer** `alpha = x_max / x_r` (rounded down: any alpha in [1, 2) counts as 1, so
//!   only paths at half the best rate or less get the 1.5), `ssthresh = max(w_r - md, 1)`; PRR
//!   then takes cwnd there. With alpha 1 that is `w - w/2` (rounded up, at least 1) where Reno
//!   gives `w/2` (rounded down, at least 2).
//! - `ai` and `md` are per subflow, recomputed: on each ACK in slow start, when cwnd grows by
//!   one, and on `CA_EVENT_COMPLETE_CWR` and `CA_EVENT_LOSS`. Before the first recomputation both
//!   are 0 (`mptcp_balia_init`): an ACK count of 0 grows cwnd on the first congestion-avoidance
//!   ACK (which then recomputes), an md of 0 leaves ssthresh at cwnd. When this subflow has no rate (no RTT sample, cannot send), `ai = w_r`,
//!   `md = w_r >> 1`.
//! - `forced_update`: `mptcp_balia_set_state` sets the flag in the subflow's private area, but
//!   `mptcp_balia_cong_avoid` reads it from the meta socket's, where nothing sets it, so the
//!   forced recomputation never happens. `forced_update = true` makes it happen (the evident
//!   intent: recompute on the first congestion-avoidance ACK after a CA state change).
//! - Slow start as Linux (`tcp_slow_start`, the leftover of an ACK crossing ssthresh dropped);
//!   undo = `tcp_reno_undo_cwnd`.
//!
//! `exact = true`: the paper in floating point from the current windows: the increase per packet
//! acked into a fractional credit, the decrease `(w_r / 2) min(alpha_r, 1.5)` with real alpha_r
//! at the time of the loss.
//!
//! Divergence: `(u32)(snd_cwnd - md)` wraps in the kernel when cwnd has fallen below an md
//! computed earlier (an RTO during recovery), giving an ssthresh near 2^32; we saturate (ssthresh
//! 1).

use super::coupled::{self, sendable, Peers};
use super::params::ParamReader;
use super::reno::{tcp_reno_cong_avoid, tcp_reno_ssthresh, tcp_reno_undo_cwnd, tcp_slow_start};
use super::{AlgorithmInfo, CaEvent, CaState, CcError, CongestionControl, ParamInfo, ParamValue};
use super::{Params, SubflowView};
use crate::tcp::sock::TcpSock;

/// `rate_scale_limit`: rates above 2^25 are scaled down (`mptcp_balia.c`).
pub const RATE_SCALE_LIMIT: u32 = 25;
/// `alpha_scale`: the decrease's fixed point, 2^10.
pub const ALPHA_SCALE: u32 = 10;
/// `scale_num`: each scale-down step divides rates by 2^5.
pub const SCALE_NUM: u32 = 5;
/// `USEC_PER_SEC << 3`: srtt_us carries a factor 8.
const USEC_PER_SEC_X8: u64 = 1_000_000 << 3;

/// What `cclab presets` lists for BALIA.
pub fn info() -> AlgorithmInfo {
    AlgorithmInfo {
        name: "balia",
        base: "balia",
        description: "MPTCP BALIA (Peng et al.): balanced coupled increase, decrease by \
                      w/2 min(alpha, 1.5); Reno on a single path; simulator only",
        source: "multipath-tcp.org v0.9x net/mptcp/mptcp_balia.c",
        params: vec![
            ParamInfo {
                name: "exact",
                default: ParamValue::Bool(false),
                doc: "false: the v0.9x kernel (integer rates and alpha, one count per ACK); true: \
                      the paper in floating point, per packet acked, real alpha in the decrease; \
                      true/false or 0/1",
            },
            ParamInfo {
                name: "forced_update",
                default: ParamValue::Bool(false),
                doc: "recompute ai and md on the first congestion-avoidance ACK after a CA state \
                      change, as mptcp_balia.c intends; false: as it does (never, it reads the \
                      flag from the meta socket); true/false or 0/1",
            },
            coupled::per_segment_param(),
        ],
        preset_params: Params::new(),
    }
}

/// Build BALIA with its tunables.
pub fn build(algorithm: &str, params: &Params) -> Result<Box<dyn CongestionControl>, CcError> {
    let r = ParamReader::new(algorithm, params);
    let mut balia = Balia::new(r.bool("exact", false)?, r.bool("forced_update", false)?);
    balia.per_segment = r.bool("per_segment", false)?;
    Ok(Box::new(balia))
}

/// `mptcp_balia_recalc_ai` for subflow `me` of `views` (the subflows now): `(ai, md)`, the ACK
/// count per +1 packet and the window given up on a loss, packets.
pub fn recalc_ai_md(views: &[SubflowView], me: usize) -> (u64, u64) {
    let w = views[me].cwnd_pkts as u64;
    let mss = views[me].mss_bytes as u64;
    let rate_of = |v: &SubflowView| {
        (mss * v.cwnd_pkts as u64).wrapping_mul(USEC_PER_SEC_X8) / v.srtt_us as u64
    };
    let (mut max_rate, mut rate, mut sum_rate) = (0u64, 0u64, 0u64);
    for (i, v) in views.iter().enumerate().filter(|(_, v)| sendable(v)) {
        let tmp = rate_of(v);
        sum_rate = sum_rate.wrapping_add(tmp);
        if i == me {
            rate = tmp;
        }
        max_rate = max_rate.max(tmp);
    }
    // At least the current subflow should be able to send.
    if rate == 0 {
        return (w, w >> 1);
    }
    let alpha = max_rate / rate;
    let mut shift = 0;
    while max_rate > 1u64 << RATE_SCALE_LIMIT {
        max_rate >>= SCALE_NUM;
        shift += SCALE_NUM;
    }
    if shift > 0 {
        sum_rate = views
            .iter()
            .filter(|v| sendable(v))
            .map(|v| rate_of(v) >> shift)
            .fold(0u64, u64::wrapping_add);
        rate >>= shift;
    }
    let sum_sq = sum_rate.wrapping_mul(sum_rate);
    let mut ai = sum_sq.wrapping_mul(10) / (rate + max_rate);
    ai = ai.wrapping_mul(w) / ((rate << 2) + max_rate);
    if ai == 0 {
        ai = w;
    }
    let md = ((w >> 1) * (alpha << ALPHA_SCALE).min((3u64 << ALPHA_SCALE) >> 1)) >> ALPHA_SCALE;
    (ai, md)
}

/// The paper in floating point for subflow `me`: (increase per packet acked, alpha_r).
pub fn balia_exact(views: &[SubflowView], me: usize) -> Option<(f64, f64)> {
    let x = |v: &SubflowView| v.cwnd_pkts as f64 / v.srtt_us as f64;
    let v = &views[me];
    if !sendable(v) {
        return None;
    }
    let (mut sum, mut max) = (0.0f64, 0.0f64);
    for p in views.iter().filter(|p| sendable(p)) {
        sum += x(p);
        max = max.max(x(p));
    }
    let (x_r, rtt_r) = (x(v), v.srtt_us as f64);
    let alpha = max / x_r;
    let inc = x_r / (rtt_r * sum * sum) * (1.0 + alpha) / 2.0 * (4.0 + alpha) / 5.0;
    Some((inc, alpha))
}

/// BALIA's private state (`struct mptcp_balia`).
#[derive(Debug, Clone)]
pub struct Balia {
    /// The connection's subflows as last given.
    peers: Peers,
    /// Reused copy of the subflows now (me from tp).
    now: Vec<SubflowView>,
    /// ACKs per +1 packet in congestion avoidance (`ai`).
    ai: u64,
    /// Packets given up on a loss (`md`).
    md: u64,
    /// `forced_update` as set by `mptcp_balia_set_state`.
    forced: bool,
    /// The paper in floating point instead of the kernel's arithmetic.
    exact: bool,
    /// One v0.9x step per segment acked rather than per ACK (`per_segment`).
    pub per_segment: bool,
    /// Honour `forced` (the kernel never does).
    forced_update: bool,
    /// Exact mode: the fractional window grown so far, packets.
    credit: f64,
}

impl Balia {
    /// BALIA; `exact` selects the floating-point paper form, `forced_update` the intended
    /// recomputation after a state change.
    pub fn new(exact: bool, forced_update: bool) -> Self {
        Balia {
            peers: Peers::default(),
            now: Vec::new(),
            ai: 0,
            md: 0,
            forced: false,
            exact,
            per_segment: false,
            forced_update,
            credit: 0.0,
        }
    }

    /// (`ai`, `md`) as last computed.
    pub fn ai_md(&self) -> (u64, u64) {
        (self.ai, self.md)
    }

    /// Fill `now` with the subflows as they are (me from `tp`).
    fn refresh(&mut self, tp: &TcpSock) {
        self.now.clear();
        let p = &self.peers;
        self.now.extend((0..p.len()).map(|i| p.view(i, tp, [0; 4])));
    }

    /// `mptcp_balia_recalc_ai`.
    fn recalc(&mut self, tp: &TcpSock) {
        self.refresh(tp);
        (self.ai, self.md) = recalc_ai_md(&self.now, self.peers.me());
    }
}

impl CongestionControl for Balia {
    fn name(&self) -> &'static str {
        "balia"
    }

    /// `mptcp_balia_init`: ai = md = 0, no forced update; `new` did.
    fn init(&mut self, _tp: &mut TcpSock) {}

    /// `mptcp_balia_ssthresh`: `max(w - md, 1)`; Reno on a single path.
    fn ssthresh(&mut self, tp: &mut TcpSock) -> u32 {
        if !self.peers.multipath() {
            return tcp_reno_ssthresh(tp);
        }
        let md = if self.exact {
            self.refresh(tp);
            match balia_exact(&self.now, self.peers.me()) {
                Some((_, alpha)) => (tp.snd_cwnd as f64 / 2.0 * alpha.min(1.5)) as u64,
                None => (tp.snd_cwnd >> 1) as u64,
            }
        } else {
            self.md
        };
        (tp.snd_cwnd as u64).saturating_sub(md).max(1) as u32
    }

    /// `mptcp_balia_cong_avoid`.
    fn cong_avoid(&mut self, tp: &mut TcpSock, ack: u64, acked: u32) {
        if !self.peers.multipath() {
            tcp_reno_cong_avoid(tp, ack, acked);
            return;
        }
        if !tp.is_cwnd_limited() {
            return;
        }
        let mut acked = acked;
        if tp.in_slow_start() {
            acked = tcp_slow_start(tp, acked);
            if !self.exact {
                self.recalc(tp);
                return;
            }
            if acked == 0 {
                return;
            }
        }
        if self.exact {
            self.refresh(tp);
            let inc =
                balia_exact(&self.now, self.peers.me()).map_or(1.0 / tp.snd_cwnd as f64, |e| e.0);
            self.credit += acked as f64 * inc;
            if self.credit >= 1.0 {
                let whole = self.credit.floor();
                self.credit -= whole;
                let cwnd = (tp.snd_cwnd as u64 + whole as u64).min(tp.snd_cwnd_clamp as u64);
                tp.set_cwnd(cwnd as u32);
            }
            return;
        }
        if self.forced_update && self.forced {
            self.recalc(tp);
            self.forced = false;
        }
        // v0.9x steps once per ACK; `per_segment`: once per segment acked (lia.rs).
        for _ in 0..coupled::steps(self.per_segment, acked) {
            // `(int) ai` compared with the u32 counter: as unsigned.
            if coupled::step(tp, u64::from(self.ai as i32 as u32)) {
                self.recalc(tp);
            }
        }
    }

    /// `mptcp_balia_set_state`: sets `forced_update` (see the module doc).
    fn set_state(&mut self, _tp: &mut TcpSock, _new_state: CaState) {
        if self.peers.multipath() {
            self.forced = true;
        }
    }

    /// `mptcp_balia_cwnd_event`: recompute on `CA_EVENT_COMPLETE_CWR` and `CA_EVENT_LOSS`.
    fn cwnd_event(&mut self, tp: &mut TcpSock, event: CaEvent) {
        if matches!(event, CaEvent::CompleteCwr | CaEvent::Loss) && self.peers.multipath() {
            self.recalc(tp);
        }
    }

    /// `.undo_cwnd = tcp_reno_undo_cwnd`.
    fn undo_cwnd(&mut self, tp: &mut TcpSock) -> u32 {
        tcp_reno_undo_cwnd(tp)
    }

    fn set_subflows(&mut self, subflows: &[SubflowView], me: usize) {
        self.peers.update(subflows, me);
    }
}
