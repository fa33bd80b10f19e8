//! BBRv2/v3 unit tests against the sources' constants and rules.

use super::*;

fn sock() -> TcpSock {
    let mut tp = TcpSock::new(1448, 10, u32::MAX, crate::tcp::clock::KernelClock::new(250));
    tp.tcp_mstamp_us = 1;
    tp
}

#[test]
fn inflight_hi_from_lost_skb_finds_the_crossing_packet() {
    let p = super::super::bbr3::default_params();
    let b = BbrNext::new(Version::V3, p);
    // 100 in flight before this skb, 1 lost before it: budget ceil(100 * 5/256) = 2, so
    // the prefix is (2 - 1) / (1 - 5/256) = 1.02 -> 1 packet: inflight_hi 101.
    let rs = RateSample {
        tx_in_flight: 101,
        lost: 2,
        ..RateSample::default()
    };
    assert_eq!(b.inflight_hi_from_lost_skb(&rs, 1), 101);
    // Losses already over budget before the skb: inflight_hi is the inflight before it.
    let rs = RateSample {
        tx_in_flight: 101,
        lost: 10,
        ..RateSample::default()
    };
    assert_eq!(b.inflight_hi_from_lost_skb(&rs, 1), 100);
}

#[test]
fn loss_rate_above_two_percent_is_too_high() {
    let b = BbrNext::new(Version::V3, super::super::bbr3::default_params());
    let rs = |lost, inflight| RateSample {
        lost,
        tx_in_flight: inflight,
        ..RateSample::default()
    };
    assert!(!b.is_inflight_too_high(&rs(1, 100))); // 1 % <= 100 * 5/256 = 1.95
    assert!(!b.is_inflight_too_high(&rs(1, 52)));
    assert!(b.is_inflight_too_high(&rs(2, 100))); // 2 % > 1.95
    assert!(b.is_inflight_too_high(&rs(5, 100)));
}

#[test]
fn loss_cuts_lower_bounds_by_beta_not_below_latest() {
    let mut tp = sock();
    tp.snd_cwnd = 100;
    let mut b = BbrNext::new(Version::V3, super::super::bbr3::default_params());
    b.bw_hi = [1000, 0];
    b.mode = Mode::ProbeBw;
    b.cycle_idx = BW_PROBE_CRUISE;
    b.loss_in_round = true;
    b.inflight_latest = 10;
    b.bw_latest = 10;
    b.adapt_lower_bounds(&tp);
    assert_eq!(b.inflight_lo, 100 * (256 - 76) / 256); // 0.7 x cwnd
    assert_eq!(b.bw_lo, 1000 * (256 - 76) / 256);
    b.inflight_latest = 90; // this round delivered 90: no cut below it
    b.adapt_lower_bounds(&tp);
    assert_eq!(b.inflight_lo, 90);
}

#[test]
fn probe_rtt_cwnd_is_half_the_bdp() {
    let mut b = BbrNext::new(Version::V3, super::super::bbr3::default_params());
    b.min_rtt_us = 100_000;
    b.bw_hi = [(BW_UNIT / 1000) as u32, 0]; // 1000 pkt/s: BDP 100
    assert_eq!(b.probe_rtt_cwnd(), 50);
}

#[test]
fn too_much_loss_in_probe_up_cuts_inflight_hi_by_beta_and_stops_probing() {
    let mut tp = sock();
    tp.snd_cwnd = 200;
    let mut b = BbrNext::new(Version::V3, super::super::bbr3::default_params());
    b.min_rtt_us = 100_000;
    b.bw_hi = [(BW_UNIT / 1000) as u32, 0]; // 1000 pkt/s: BDP 100
    b.full_bw_reached = true;
    b.mode = Mode::ProbeBw;
    b.cycle_idx = BW_PROBE_UP;
    b.bw_probe_samples = true;
    b.inflight_hi = 150;
    // 5 of 60 in flight lost: 8 % > 2 %. The flight carried 60 < 0.7 x target, the target
    // being BDP 100 + 2 (the PROBE_UP quantization allowance): inflight_hi = 0.7 x 102
    // (beta 76/256), and PROBE_UP ends (DOWN, no more probe samples).
    let rs = RateSample {
        lost: 5,
        tx_in_flight: 60,
        ..RateSample::default()
    };
    assert!(!b.adapt_upper_bounds(&mut tp, &rs));
    assert_eq!(b.inflight_hi, 102 * (256 - 76) / 256);
    assert_eq!(b.cycle_idx, BW_PROBE_DOWN);
    assert!(b.prev_probe_too_high && !b.bw_probe_samples);
    assert_eq!(b.inflight_too_high_events, 1);
    // The next lossy sample no longer counts: one reaction per probe.
    b.adapt_upper_bounds(&mut tp, &rs);
    assert_eq!(b.inflight_too_high_events, 1);
    // Below the threshold (1 of 100) a sample carrying more than inflight_hi raises it.
    let ok = RateSample {
        lost: 1,
        tx_in_flight: 120,
        ..RateSample::default()
    };
    b.adapt_upper_bounds(&mut tp, &ok);
    assert_eq!(b.inflight_hi, 120);
}
