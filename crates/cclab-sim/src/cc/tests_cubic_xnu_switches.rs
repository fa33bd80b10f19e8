//! Unit tests of `cubic_xnu.rs`'s ablation switches (`tcp_friendliness`,
//! `friendly_ai_above_wmax`, `fast_convergence`, `last_max_from_ssthresh`, `bytes_acked_carry`,
//! `ssthresh_round_to_mss`, `hystart`): each turns off what it names and
//! nothing else. (HyStart ending slow start on a real path: tests/xnu_cubic.rs.)

use super::*;
use crate::cc::build as build_any;

const MSS: u32 = 1448;

fn with(f: impl FnOnce(&mut XnuCubicParams)) -> XnuCubic {
    let mut p = XnuCubicParams::default();
    f(&mut p);
    XnuCubic::new(p)
}

/// An epoch that starts at W(last_max) (K = 0), one ACK per segment, `rtt_ms` between rounds;
/// returns, per ACK, (cwnd, the cubic target) in packets.
fn epoch(cc: &mut XnuCubic, rounds: u32, rtt_ms: u32) -> Vec<(u32, u32)> {
    let mut cwnd = 100 * MSS;
    cc.st.last_max = 100 * MSS;
    let mut now = 10_000u32;
    let mut out = Vec::new();
    for _ in 0..rounds {
        for _ in 0..cwnd / MSS {
            cwnd = cc.tcp_cubic_congestion_avd(now, rtt_ms, cwnd, 0, MSS, MSS, u32::MAX);
            // The target the next ACK will see (tcp_cubic_update does not move the epoch).
            let target = cc.tcp_cubic_update(now, rtt_ms, cwnd, 0, MSS);
            out.push((cwnd / MSS, target / MSS));
        }
        now += rtt_ms;
    }
    out
}

/// Without the Reno-friendly window cwnd never grows past the cubic curve (by more than the
/// one segment an ACK may add); with it (XNU) the Reno window, 1 MSS per RTT at W(last_max),
/// runs well ahead of the curve's first seconds (C t^3: 3.2 packets after 2 s).
/// cclab's switches, each turning one of XNU's differences from Linux off, in `info()`'s order
/// after XNU's own sysctls.
pub(super) const SWITCHES: [&str; 7] = [
    "tcp_friendliness",
    "friendly_ai_above_wmax",
    "fast_convergence",
    "last_max_from_ssthresh",
    "bytes_acked_carry",
    "ssthresh_round_to_mss",
    "hystart",
];

#[test]
fn no_tcp_friendliness_never_above_the_cubic_curve() {
    let mut off = with(|p| p.tcp_friendliness = false);
    let trace = epoch(&mut off, 20, 100);
    for &(w, target) in &trace {
        assert!(
            w <= target.max(100) + 1,
            "cwnd {w} above the curve {target}"
        );
    }
    let mut xnu = with(|_| ());
    let trace = epoch(&mut xnu, 20, 100);
    let &(w, target) = trace.last().unwrap();
    assert!(
        w >= 115 && w > target + 5,
        "XNU's Reno window: cwnd {w}, curve {target}"
    );
    // Without minor fixes the "TCP mode" is gone too, even with a large deviation.
    let mut old = with(|p| {
        p.cubic_minor_fixes = false;
        p.tcp_friendliness = false;
    });
    old.st.mean_dev = 10 * MSS;
    for &(w, target) in &epoch(&mut old, 20, 100) {
        assert!(
            w <= target.max(100) + 1,
            "TCP mode: cwnd {w} above {target}"
        );
    }
}

/// With the clock frozen (a flat curve) only the Reno window grows: XNU adds 1 MSS per window
/// at or above W(last_max); with `friendly_ai_above_wmax` off, 0.53 MSS as below it (Linux's
/// rate everywhere), also in non-RFC mode (beta 0.8: 3 x 0.2 / 1.8 = 0.33 MSS).
#[test]
fn friendly_ai_above_wmax_off_grows_at_the_linux_rate() {
    let grow = |cc: &mut XnuCubic| epoch(cc, 20, 0).last().unwrap().0;
    assert_eq!(grow(&mut with(|_| ())), 120);
    let w = grow(&mut with(|p| p.friendly_ai_above_wmax = false));
    assert!((110..=111).contains(&w), "0.53 MSS per window: cwnd {w}");
    assert_eq!(grow(&mut with(|p| p.cubic_rfc_compliant = false)), 120);
    let w = grow(&mut with(|p| {
        p.cubic_rfc_compliant = false;
        p.friendly_ai_above_wmax = false;
    }));
    assert!((106..=107).contains(&w), "0.33 MSS per window: cwnd {w}");
}

/// Without fast convergence W(last_max) is the window at every loss, the first one included
/// (XNU: 0.85 W below the previous W(last_max), which starts at 1 GiB); the backoff is the same.
#[test]
fn fast_convergence_off_remembers_the_window() {
    let mut off = with(|p| p.fast_convergence = false);
    let mut tp = TcpSock::new(MSS, 10, u32::MAX, crate::tcp::clock::KernelClock::new(250));
    off.init(&mut tp);
    assert_eq!(off.tcp_cubic_pre_fr(1000 * MSS, 0, MSS), 700 * MSS);
    assert_eq!(off.st.last_max, 1000 * MSS);
    assert_eq!(off.tcp_cubic_pre_fr(900 * MSS, 0, MSS), 630 * MSS);
    assert_eq!(off.st.last_max, 900 * MSS);
    let mut xnu = with(|_| ());
    xnu.init(&mut tp);
    xnu.tcp_cubic_pre_fr(1000 * MSS, 0, MSS);
    assert_eq!(xnu.st.last_max, 850 * MSS);
}

/// XNU starts W(last_max) at the initial ssthresh (1 GiB), so the first loss out of slow start
/// applies fast convergence (0.85 W); with `last_max_from_ssthresh` off it starts at 0, as
/// Linux's `last_max_cwnd`, and the first loss remembers the window; later losses are alike.
#[test]
fn last_max_from_ssthresh_off_spares_the_first_loss() {
    let mut tp = TcpSock::new(MSS, 10, u32::MAX, crate::tcp::clock::KernelClock::new(250));
    let mut off = with(|p| p.last_max_from_ssthresh = false);
    off.init(&mut tp);
    assert_eq!(off.st.last_max, 0);
    assert_eq!(off.tcp_cubic_pre_fr(1000 * MSS, 0, MSS), 700 * MSS);
    assert_eq!(off.st.last_max, 1000 * MSS);
    off.tcp_cubic_pre_fr(900 * MSS, 0, MSS);
    assert_eq!(
        off.st.last_max,
        765 * MSS,
        "fast convergence still acts later"
    );
    let mut xnu = with(|_| ());
    xnu.init(&mut tp);
    assert_eq!(xnu.st.last_max, TCP_MAX_SSTHRESH_BYTES);
    xnu.tcp_cubic_pre_fr(1000 * MSS, 0, MSS);
    assert_eq!(xnu.st.last_max, 850 * MSS);
}

/// XNU keeps `t_bytes_acked` across a loss, so bytes acked before it count towards the first
/// increase after it; with `bytes_acked_carry` off the count restarts at the loss, as Linux's.
#[test]
fn bytes_acked_carry_off_restarts_the_count_at_a_loss() {
    for carry in [true, false] {
        let mut cc = with(|p| p.bytes_acked_carry = carry);
        cc.t_bytes_acked = 5 * MSS;
        cc.tcp_cubic_pre_fr(100 * MSS, 0, MSS);
        assert_eq!(cc.t_bytes_acked, if carry { 5 * MSS } else { 0 });
    }
}

/// XNU rounds the reduced window to the nearest MSS (`tcp_round_to`): 0.7 x 15 = 10.5 -> 11
/// segments; with `ssthresh_round_to_mss` off it is rounded down (10), as Linux's integer
/// `cwnd * beta / 1024`; never below 2 MSS either way.
#[test]
fn ssthresh_round_to_mss_off_rounds_down() {
    let mut xnu = with(|_| ());
    assert_eq!(xnu.tcp_cubic_pre_fr(15 * MSS, 0, MSS), 11 * MSS);
    let mut off = with(|p| p.ssthresh_round_to_mss = false);
    assert_eq!(off.tcp_cubic_pre_fr(15 * MSS, 0, MSS), 10 * MSS);
    assert_eq!(off.tcp_cubic_pre_fr(1000 * MSS, 0, MSS), 700 * MSS);
    assert_eq!(off.tcp_cubic_pre_fr(2 * MSS, 0, MSS), 2 * MSS);
}

#[test]
fn switches_are_listed_parsed_and_default_to_xnu() {
    let d = XnuCubicParams::default();
    assert!(d.tcp_friendliness && d.friendly_ai_above_wmax && d.fast_convergence);
    assert!(
        d.last_max_from_ssthresh && d.bytes_acked_carry && d.ssthresh_round_to_mss && !d.hystart
    );
    let names: Vec<_> = info().params.iter().map(|p| p.name).collect();
    for n in SWITCHES {
        assert!(names.contains(&n), "{n} listed");
        let p: Params = [(n.to_string(), ParamValue::Int(1))].into_iter().collect();
        assert!(build_any("cubic-xnu", &p).is_ok(), "{n} = 1 accepted");
        let bad: Params = [(n.to_string(), ParamValue::Int(3))].into_iter().collect();
        let e = build_any("cubic-xnu", &bad)
            .err()
            .expect("3 refused")
            .to_string();
        assert!(e.contains(n), "{e}");
    }
    assert!(xnu_hystart(false).hystart.is_none() && xnu_hystart(true).hystart.is_some());
}

fn xnu_hystart(on: bool) -> XnuCubic {
    with(|p| p.hystart = on)
}
