//! BBRv2, as google/bbr implements it on branch v2alpha in `net/ipv4/tcp_bbr2.c` (the alpha
//! release, module "bbr2"; read at google/bbr commit 0487ade55081731c2b2dc31c780f0883ce76212c),
//! and draft-ietf-ccwg-bbr for intent.
//!
//! The algorithm lives in `bbr_v2v3.rs` (shared with BBRv3, which grew out of this code); this
//! file holds v2alpha's constants as defaults, its name and its tunables. What makes v2 v2 here:
//! STARTUP pacing and cwnd gain 2.885 (`high_gain`, as v1); PROBE_BW pacing gains UP 1.25,
//! DOWN 0.75, CRUISE 1, REFILL 1, cwnd gain 2 (no extra PROBE_UP cwnd gain); PROBE_UP ends
//! after one min_rtt once inflight reaches 1.25 BDP (`bw_probe_pif_gain`); STARTUP ends v1's
//! way (3 rounds without 25 % growth of max_bw) or on loss (`full_loss_cnt` 8 loss events in a
//! recovery round with loss rate > 2 %); no TLP-recovery event (v3 added it). Parameters of
//! v2alpha not exposed, at their defaults: `bw_probe_reno_gain` 1.0, `refill_add_inc` 0,
//! `drain_to_target` on, `cwnd_tso_budget` 1, `extra_acked_in_startup` 1, `usage_based_cwnd`
//! off, `undo` on, `ecn_bw_lo`/`ecn_bw_hi` (ECN only).
//!
//! Not modelled (the code paths exist but never trigger in cclab): ECN (the core has no CE
//! marks; v2alpha also has it off by default, `ecn_enable`), PLB, the receiver's
//! `fast_ack_mode`, TSO sizes (one segment per wire packet).

use super::bbr::BBR_UNIT;
use super::bbr_v2v3::{BbrNext, NextParams, Version};
use super::{AlgorithmInfo, CaEvent, CaState, CcError, CongestionControl, Params, RateSample};
use crate::tcp::skb::Skb;
use crate::tcp::sock::TcpSock;

/// v2alpha's `bbr_*` parameters (tcp_bbr2.c, branch v2alpha).
pub fn default_params() -> NextParams {
    let high_gain = BBR_UNIT * 2885 / 1000 + 1;
    NextParams {
        min_rtt_win_sec: 10,
        probe_rtt_mode_ms: 200,
        probe_rtt_win_ms: 5000,
        probe_rtt_cwnd_gain: BBR_UNIT / 2,
        startup_pacing_gain: high_gain,
        startup_cwnd_gain: high_gain,
        drain_gain: BBR_UNIT * 1000 / 2885,
        cwnd_gain: BBR_UNIT * 2,
        pacing_gain: [BBR_UNIT * 5 / 4, BBR_UNIT * 3 / 4, BBR_UNIT, BBR_UNIT],
        cwnd_min_target: 4,
        full_bw_thresh: BBR_UNIT * 5 / 4,
        full_bw_cnt: 3,
        extra_acked_gain: BBR_UNIT,
        extra_acked_win_rtts: 5,
        beta: BBR_UNIT * 30 / 100,
        loss_thresh: BBR_UNIT * 2 / 100,
        full_loss_cnt: 8,
        inflight_headroom: BBR_UNIT * 15 / 100,
        // A v3 parameter; v2alpha has no extra PROBE_UP cwnd gain (unused here).
        bw_probe_cwnd_gain: 0,
        bw_probe_pif_gain: BBR_UNIT * 5 / 4,
        bw_probe_max_rounds: 63,
        bw_probe_rand_rounds: 2,
        bw_probe_base_us: 2_000_000,
        bw_probe_rand_us: 1_000_000,
        ecn_alpha_gain: BBR_UNIT / 16,
        ecn_alpha_init: BBR_UNIT,
        ecn_factor: BBR_UNIT / 3,
        ecn_thresh: BBR_UNIT / 2,
        ecn_max_rtt_us: 5000,
        ecn_reprobe_gain: 0,
        full_ecn_cnt: 2,
        fast_path: true,
        loss_probe_recovery: false,
        tso_rtt_shift: 9,
    }
}

const SOURCE: &str = "google/bbr branch v2alpha net/ipv4/tcp_bbr2.c @0487ade5 (BBRv2 alpha)";

/// What `cclab presets` lists for BBRv2.
pub fn info() -> AlgorithmInfo {
    AlgorithmInfo {
        name: "bbr2",
        base: "bbr2",
        description: "BBRv2 (alpha): BBR with loss bounds (inflight_hi cut by 0.7 above 2 % \
                      loss), PROBE_BW down/cruise/refill/up, PROBE_RTT every 5 s at BDP/2",
        source: SOURCE,
        params: default_params().infos(),
        preset_params: Params::new(),
    }
}

/// Build BBRv2 with `params` checked against the documented ranges.
pub fn build(algorithm: &str, params: &Params) -> Result<Box<dyn CongestionControl>, CcError> {
    let p = default_params().read(algorithm, params)?;
    Ok(Box::new(Bbr2(BbrNext::new(Version::V2, p))))
}

/// BBRv2 (`tcp_bbr2_cong_ops`, name "bbr2").
pub struct Bbr2(pub BbrNext);

impl CongestionControl for Bbr2 {
    fn name(&self) -> &'static str {
        "bbr2"
    }
    /// `bbr2_init`.
    fn init(&mut self, tp: &mut TcpSock) {
        self.0.init(tp);
    }
    /// `bbr2_ssthresh`.
    fn ssthresh(&mut self, tp: &mut TcpSock) -> u32 {
        self.0.ssthresh(tp)
    }
    /// `bbr2_undo_cwnd`.
    fn undo_cwnd(&mut self, _tp: &mut TcpSock) -> u32 {
        self.0.undo_cwnd()
    }
    /// `bbr2_set_state`.
    fn set_state(&mut self, tp: &mut TcpSock, new_state: CaState) {
        self.0.set_state(tp, new_state);
    }
    /// `bbr2_cwnd_event`.
    fn cwnd_event(&mut self, tp: &mut TcpSock, event: CaEvent) {
        self.0.cwnd_event(tp, event);
    }
    /// `bbr2_skb_marked_lost`.
    fn skb_marked_lost(&mut self, tp: &mut TcpSock, skb: &Skb) {
        self.0.skb_marked_lost(tp, skb);
    }
    /// `bbr_tso_segs`.
    fn tso_segs(&self, tp: &TcpSock, mss_now: u32) -> Option<u32> {
        Some(self.0.tso_segs(tp, mss_now))
    }
    fn has_cong_control(&self) -> bool {
        true
    }
    /// `bbr2_main`.
    fn cong_control(&mut self, tp: &mut TcpSock, _ack: u64, _flag: u32, rs: &RateSample) {
        self.0.main(tp, rs);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_the_v2alpha_constants() {
        let p = default_params();
        assert_eq!(p.startup_pacing_gain, 739); // 2.885 * 256 + 1
        assert_eq!(p.startup_cwnd_gain, 739);
        assert_eq!(p.pacing_gain, [320, 192, 256, 256]); // 1.25, 0.75, 1, 1
        assert_eq!(p.full_loss_cnt, 8);
        assert_eq!(p.loss_thresh, 5);
    }
}
