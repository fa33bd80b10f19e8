//! BBRv2, as google/bbr implements it on branch v2alpha in `net/ipv4/tcp_bbr2.c` (the alpha
//! release, module "bbr2"; read at google/bbr commit 0487ade55081731c2b2dc31c780f0883ce76212c),
//! and draft-ietf-ccwg-bbr for intent.
//!
//! The algorithm lives in `bbr_v2v3/` (shared with BBRv3, which grew out of this code); this
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
//! ECN: v2alpha gates it with the global module parameter `ecn_enable` (off by default); here
//! the flow's `ecn = "low"` turns it on (we diverge, so one setting serves v2 and v3).
//!
//! Not modelled: PLB, the receiver's `fast_ack_mode`, TSO sizes (one segment per wire packet).

use super::bbr::BBR_UNIT;
use super::bbr_v2v3::{BbrNext, NextParams, Version};
use super::{AlgorithmInfo, CcError, CongestionControl, Params};

/// v2alpha's `bbr_*` parameters (tcp_bbr2.c, branch v2alpha): the same values as v3's
/// (`bbr3::default_params`) except for these.
pub fn default_params() -> NextParams {
    let high_gain = BBR_UNIT * 2885 / 1000 + 1;
    NextParams {
        startup_pacing_gain: high_gain,
        startup_cwnd_gain: high_gain,
        pacing_gain: [BBR_UNIT * 5 / 4, BBR_UNIT * 3 / 4, BBR_UNIT, BBR_UNIT],
        full_loss_cnt: 8,
        // v3 parameters that v2alpha does not have (unused by the v2 code paths).
        bw_probe_cwnd_gain: 0,
        loss_probe_recovery: false,
        // Experimental and off by default in v2alpha.
        ecn_reprobe_gain: 0,
        ..super::bbr3::default_params()
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
    Ok(Box::new(BbrNext::new(Version::V2, p)))
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
