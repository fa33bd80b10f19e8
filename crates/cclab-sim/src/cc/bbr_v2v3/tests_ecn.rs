//! BBRv2/v3's ECN paths driven by synthetic rounds (google/bbr v3 `bbr_update_ecn_alpha`,
//! `bbr_check_ecn_too_high_in_startup`, `bbr_adapt_lower_bounds`, `bbr_can_use_ecn`): the
//! scenario tests (tests/ecn.rs) show the effect on a real path, these the mechanism.

use super::*;
use crate::tcp::ecn::EcnMode;

/// A flow delivering `n` packets per 1 ms round, one per ACK, `ce` of them CE-echoed.
struct Flow {
    tp: TcpSock,
    b: BbrNext,
}

impl Flow {
    fn new(v: Version, ecn: EcnMode) -> Flow {
        let mut tp = TcpSock::new(1448, 10, u32::MAX, crate::tcp::clock::KernelClock::new(250));
        tp.tcp_mstamp_us = 1;
        tp.ecn_flags = ecn.initial_flags();
        tp.min_rtt_us = 1000; // under ecn_max_rtt_us (5 ms)
        tp.srtt_us = 1000 << 3;
        let p = match v {
            Version::V2 => super::super::bbr2::default_params(),
            Version::V3 => super::super::bbr3::default_params(),
        };
        let mut b = BbrNext::new(v, p);
        b.init(&mut tp);
        Flow { tp, b }
    }

    /// One round trip: `n` ACKs of one packet each over 1 ms, `ce` of them with ECE.
    fn round(&mut self, n: u32, ce: u32) {
        let start = self.tp.delivered;
        let start_ce = self.tp.delivered_ce;
        for i in 0..n {
            let is_ece = i < ce;
            self.tp.delivered += 1;
            if is_ece {
                self.tp.delivered_ce += 1;
            }
            self.tp.tcp_mstamp_us += 1000 / n as u64;
            let rs = RateSample {
                prior_delivered: start,
                prior_delivered_ce: start_ce,
                delivered: (self.tp.delivered - start) as i32,
                delivered_ce: (self.tp.delivered_ce - start_ce) as i32,
                interval_us: 1000,
                rtt_us: 1000,
                acked_sacked: 1,
                prior_in_flight: n,
                tx_in_flight: n,
                is_ece,
                ..RateSample::default()
            };
            self.b.main(&mut self.tp, &rs);
        }
    }
}

#[test]
fn startup_ends_after_full_ecn_cnt_high_ce_rounds_with_ecn_low() {
    for v in [Version::V2, Version::V3] {
        let mut f = Flow::new(v, EcnMode::Low);
        // STARTUP with 50 % more bandwidth each round: the plateau test never fires.
        let mut n = 20;
        for _ in 0..3 {
            f.round(n, 0);
            n = n * 3 / 2;
        }
        assert!(f.b.ecn_eligible, "{v:?}: min_rtt 1 ms <= ecn_max_rtt_us");
        assert!(!f.b.full_bw_reached);
        // Every delivery CE-echoed: the CE ratio of a round is 1 >= ecn_thresh (0.5).
        f.round(n, n);
        n = n * 3 / 2;
        assert!(
            !f.b.full_bw_reached,
            "{v:?}: one high-CE round is not enough"
        );
        f.round(n, n);
        n = n * 3 / 2;
        f.round(n, n);
        assert!(
            f.b.full_bw_reached && f.b.startup_ecn_rounds >= f.b.p.full_ecn_cnt,
            "{v:?}: STARTUP ends after full_ecn_cnt = {} rounds (rounds {})",
            f.b.p.full_ecn_cnt,
            f.b.startup_ecn_rounds
        );
        assert_ne!(f.b.mode, Mode::Startup);
    }
}

#[test]
fn classic_ecn_is_not_used_by_bbr3() {
    // `bbr_can_use_ecn` needs TCP_ECN_LOW: with ecn = "on" the marks change nothing.
    let (mut on, mut off) = (
        Flow::new(Version::V3, EcnMode::On),
        Flow::new(Version::V3, EcnMode::Off),
    );
    let mut n = 20;
    for r in 0..8 {
        let ce = if r >= 3 { n } else { 0 };
        on.round(n, ce);
        off.round(n, 0);
        n = n * 3 / 2;
    }
    assert!(!on.b.ecn_eligible && on.b.ecn_alpha == on.b.p.ecn_alpha_init);
    assert_eq!(on.b.full_bw_reached, off.b.full_bw_reached);
    assert_eq!(
        (on.tp.snd_cwnd, on.tp.pacing_rate_bytes_per_s),
        (off.tp.snd_cwnd, off.tp.pacing_rate_bytes_per_s)
    );
    assert_eq!(on.tp.ecn_flags & TCP_ECN_ECT_PERMANENT, 0);
    assert_ne!(
        Flow::new(Version::V3, EcnMode::Low).tp.ecn_flags & TCP_ECN_ECT_PERMANENT,
        0,
        "v3 keeps ECT on retransmissions when it uses ECN"
    );
}

#[test]
fn ecn_alpha_follows_the_ce_ratio() {
    let mut f = Flow::new(Version::V3, EcnMode::Low);
    assert_eq!(f.b.ecn_alpha, BBR_UNIT, "ecn_alpha_init = 1.0");
    // Without marks alpha decays by 1/16 per round: (15/16)^40 ~ 0.076.
    for _ in 0..41 {
        f.round(20, 0);
    }
    let low = f.b.ecn_alpha;
    assert!(low < BBR_UNIT / 8, "alpha {low}");
    // Half the deliveries CE-echoed: alpha rises toward 0.5.
    for _ in 0..40 {
        f.round(20, 10);
    }
    let half = f.b.ecn_alpha;
    assert!(
        half > low && (100..=128).contains(&half),
        "alpha {low} -> {half}"
    );
}

#[test]
fn a_round_with_ece_cuts_inflight_lo_by_ecn_factor_times_alpha() {
    let mut f = Flow::new(Version::V3, EcnMode::Low);
    f.b.ecn_eligible = true;
    f.b.mode = Mode::ProbeBw;
    f.b.cycle_idx = BW_PROBE_CRUISE;
    f.b.ecn_in_round = true;
    f.b.ecn_alpha = BBR_UNIT / 2;
    f.tp.snd_cwnd = 100;
    f.b.adapt_lower_bounds(&f.tp);
    // inflight_lo = cwnd * (1 - alpha * ecn_factor) = 100 * (1 - 0.5 / 3): 100 * 214 / 256.
    let cut = BBR_UNIT - (((BBR_UNIT / 2) * f.b.p.ecn_factor) >> BBR_SCALE);
    assert_eq!(f.b.inflight_lo, 100 * cut / BBR_UNIT);
    assert_eq!(f.b.inflight_lo, 83);
    // Probing (PROBE_UP) leaves the lower bounds alone.
    f.b.cycle_idx = BW_PROBE_UP;
    f.b.adapt_lower_bounds(&f.tp);
    assert_eq!(f.b.inflight_lo, 83);
}
