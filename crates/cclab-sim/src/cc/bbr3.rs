//! BBRv3, as google/bbr implements it on branch v3 in `net/ipv4/tcp_bbr.c` (read at google/bbr
//! commit 001a430b3ddbbc6d9173061a74d8b580c757b91b), checked against the v3 port in
//! Nevuly/WSL2-Linux-Kernel-Rolling `net/ipv4/tcp_bbr3.c` (commit 39c80792), whose algorithm is
//! the same code with newer kernel APIs (`cwnd_event_tx_start`, `tcp_ecn_mode_any`); and
//! draft-ietf-ccwg-bbr for intent.
//!
//! The algorithm lives in `bbr_v2v3/` (shared with BBRv2); this file holds v3's constants as
//! defaults, its name and its tunables. What makes v3 v3 here:
//! STARTUP pacing gain 2.77 (4 ln 2) with cwnd gain 2.0; PROBE_BW pacing gains UP 1.25,
//! DOWN 0.91, CRUISE 1, REFILL 1 with cwnd gain 2.25 in UP (`bw_probe_cwnd_gain` 1/4);
//! PROBE_UP ends on a bandwidth plateau (`full_bw_now`); STARTUP ends on a plateau or on loss
//! (`full_loss_cnt` 6 loss events in a recovery round with loss rate > 2 %); a loss repaired by
//! a tail loss probe counts (`CA_EVENT_TLP_RECOVERY`); no packet conservation in recovery.
//!
//! ECN: used when the flow's `ecn` is "low" (`bbr_can_use_ecn`: negotiated ECN on an
//! `ecn_low` route) and min_rtt <= `ecn_max_rtt_us`; ignored with classic `ecn = "on"`.
//!
//! Not modelled: PLB, the receiver's `fast_ack_mode`, TSO sizes (one segment per wire packet).

use super::bbr::BBR_UNIT;
use super::bbr_v2v3::{BbrNext, NextParams, Version};
use super::{AlgorithmInfo, CcError, CongestionControl, Params};

/// v3's `bbr_*` constants (tcp_bbr.c, branch v3).
pub fn default_params() -> NextParams {
    NextParams {
        min_rtt_win_sec: 10,
        probe_rtt_mode_ms: 200,
        probe_rtt_win_ms: 5000,
        probe_rtt_cwnd_gain: BBR_UNIT / 2,
        startup_pacing_gain: BBR_UNIT * 277 / 100 + 1,
        startup_cwnd_gain: BBR_UNIT * 2,
        drain_gain: BBR_UNIT * 1000 / 2885,
        cwnd_gain: BBR_UNIT * 2,
        pacing_gain: [BBR_UNIT * 5 / 4, BBR_UNIT * 91 / 100, BBR_UNIT, BBR_UNIT],
        cwnd_min_target: 4,
        full_bw_thresh: BBR_UNIT * 5 / 4,
        full_bw_cnt: 3,
        extra_acked_gain: BBR_UNIT,
        extra_acked_win_rtts: 5,
        beta: BBR_UNIT * 30 / 100,
        loss_thresh: BBR_UNIT * 2 / 100,
        full_loss_cnt: 6,
        inflight_headroom: BBR_UNIT * 15 / 100,
        bw_probe_cwnd_gain: 1,
        // Not a v3 parameter (v3 ends PROBE_UP on a plateau); kept at v2's value, unused.
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
        ecn_reprobe_gain: BBR_UNIT / 2,
        full_ecn_cnt: 2,
        fast_path: true,
        loss_probe_recovery: true,
        tso_rtt_shift: 9,
    }
}

const SOURCE: &str = "google/bbr branch v3 net/ipv4/tcp_bbr.c @001a430b (BBRv3)";

/// What `cclab presets` lists for BBRv3.
pub fn info() -> AlgorithmInfo {
    AlgorithmInfo {
        name: "bbr3",
        base: "bbr3",
        description: "BBRv3: BBR with loss bounds (inflight_hi cut by 0.7 above 2 % loss), \
                      PROBE_BW down/cruise/refill/up, PROBE_RTT every 5 s at BDP/2",
        source: SOURCE,
        params: default_params().infos(),
        preset_params: Params::new(),
    }
}

/// Build BBRv3 with `params` checked against the documented ranges.
pub fn build(algorithm: &str, params: &Params) -> Result<Box<dyn CongestionControl>, CcError> {
    let p = default_params().read(algorithm, params)?;
    Ok(Box::new(BbrNext::new(Version::V3, p)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::ParamValue;

    #[test]
    fn defaults_are_the_v3_constants() {
        let p = default_params();
        assert_eq!(p.startup_pacing_gain, 710); // 2.77 * 256 + 1
        assert_eq!(p.pacing_gain, [320, 232, 256, 256]); // 1.25, 0.91, 1, 1
        assert_eq!(p.beta, 76); // 0.3 (integer 256 * 30 / 100)
        assert_eq!(p.loss_thresh, 5); // 2 %
        assert_eq!(p.inflight_headroom, 38); // 15 %
        assert_eq!(p.full_loss_cnt, 6);
        assert_eq!(p.probe_rtt_cwnd_gain, 128);
    }

    #[test]
    fn tunables_are_listed_and_checked() {
        let names: Vec<_> = info().params.iter().map(|p| p.name).collect();
        for n in [
            "beta",
            "loss_thresh",
            "inflight_headroom",
            "bw_probe_max_rounds",
            "ecn_thresh",
        ] {
            assert!(names.contains(&n), "{n} missing");
        }
        let mut p = Params::new();
        p.insert("loss_thresh".into(), ParamValue::Int(300));
        let err = build("bbr3", &p).err().expect("refused").to_string();
        assert!(err.contains("loss_thresh"), "{err}");
        p.insert("loss_thresh".into(), ParamValue::Int(13));
        assert!(build("bbr3", &p).is_ok());
    }
}
