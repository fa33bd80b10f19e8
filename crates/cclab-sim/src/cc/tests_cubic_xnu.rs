//! Unit tests of `cubic_xnu.rs` against the closed forms of XNU's `tcp_cubic.c`.

use super::*;
use crate::cc::build as build_any;

const MSS: u32 = 1448;

fn sock(cwnd: u32) -> TcpSock {
    let mut tp = TcpSock::new(
        MSS,
        cwnd,
        u32::MAX,
        crate::tcp::clock::KernelClock::new(250),
    );
    tp.is_cwnd_limited = true;
    tp
}

fn xnu() -> XnuCubic {
    XnuCubic::new(XnuCubicParams::default())
}

#[test]
fn defaults_are_xnus_sysctls_and_rfc_constants() {
    let cc = xnu();
    let p = cc.params();
    assert!(p.cubic_minor_fixes && p.cubic_rfc_compliant && p.flow_control_response);
    assert_eq!(p.cubic_use_minrtt_ms, 0);
    assert_eq!(
        (cc.backoff(), cc.fast_convergence_factor(), cc.beta()),
        (0.3, 0.85, 0.7)
    );
    let old = XnuCubic::new(XnuCubicParams {
        cubic_rfc_compliant: false,
        ..Default::default()
    });
    assert_eq!(
        (old.backoff(), old.fast_convergence_factor(), old.beta()),
        (0.2, 0.875, 0.8)
    );
    assert_eq!(tcp_round_to(16, 10), 20);
    assert_eq!(tcp_round_to(14, 10), 10);
}

/// W(t) = C (t - K)^3 + W(last_max), K = cbrt((W(last_max) - W) / MSS / C), C = 0.4, t in
/// seconds from the epoch start plus the base RTT.
#[test]
fn cubic_curve_follows_the_closed_form() {
    let mut cc = xnu();
    let (wmax, w) = (1000.0f64, 700.0f64);
    cc.st.last_max = 1000 * MSS;
    let k = ((wmax - w) / 0.4).cbrt(); // 9.0856 s
    let epoch = 5_000u32; // tcp_now, ms
    for rtt_ms in [0u32, 100] {
        cc.st.epoch_start = 0;
        for t_ms in [0u32, 1000, 4000, 9000, 9086, 12_000, 20_000] {
            let target = cc.tcp_cubic_update(epoch + t_ms, rtt_ms, 700 * MSS, 0, MSS);
            let t = (t_ms + rtt_ms) as f64 / 1000.0;
            let model = 0.4 * (t - k).powi(3) + wmax;
            let got = target as f64 / MSS as f64;
            assert!(
                (got - model).abs() < 0.01,
                "t {t} s: {got:.4} packets vs {model:.4}"
            );
        }
        assert_eq!(cc.st.epoch_start, epoch);
        assert!((cc.st.epoch_period as f64 - k * 1000.0).abs() < 0.01);
        assert_eq!(cc.st.origin_point, 1000 * MSS);
    }
    // At or above last_max the epoch has no concave part: K = 0, origin = the current window.
    cc.st.epoch_start = 0;
    let target = cc.tcp_cubic_update(epoch, 0, 1200 * MSS, 0, MSS);
    assert_eq!((target, cc.st.epoch_period), (1200 * MSS, 0.0));
    let target = cc.tcp_cubic_update(epoch + 2000, 0, 1200 * MSS, 0, MSS);
    assert_eq!(target, 1200 * MSS + (0.4f32 * 8.0 * MSS as f32) as u32);
    // Without the minor fixes K uses integer segments: (300 MSS - 1 byte) / MSS = 299.
    let mut old = XnuCubic::new(XnuCubicParams {
        cubic_minor_fixes: false,
        ..Default::default()
    });
    old.st.last_max = 1000 * MSS;
    old.tcp_cubic_update(epoch, 0, 700 * MSS + 1, 0, MSS);
    assert!((old.st.epoch_period as f64 - (299.0f64 / 0.4).cbrt() * 1000.0).abs() < 0.01);
}

#[test]
fn loss_reduces_to_0_7_or_0_8_rounded_to_mss() {
    let mut cc = xnu();
    assert_eq!(cc.tcp_cubic_pre_fr(1000 * MSS, 0, MSS), 700 * MSS);
    // 0.7 * 7 MSS = 4.9 MSS rounds to 5 MSS (tcp_round_to), never below 2 MSS.
    assert_eq!(cc.tcp_cubic_pre_fr(7 * MSS, 0, MSS), 5 * MSS);
    assert_eq!(cc.tcp_cubic_pre_fr(2 * MSS, 0, MSS), 2 * MSS);
    let mut old = XnuCubic::new(XnuCubicParams {
        cubic_rfc_compliant: false,
        ..Default::default()
    });
    assert_eq!(old.tcp_cubic_pre_fr(1000 * MSS, 0, MSS), 800 * MSS);
    // Through the trait, in packets.
    let mut cc = build_any("cubic-xnu", &Params::new()).unwrap();
    let mut tp = sock(1000);
    cc.init(&mut tp);
    assert_eq!(cc.ssthresh(&mut tp), 700);
}

/// XNU's fast convergence: a loss below the previous W(last_max) remembers 0.85 of the window
/// (0.875 when not RFC compliant); only with the minor fixes. `tcp_cubic_cwnd_init_or_reset`
/// starts last_max at the "infinite" ssthresh, so the first loss already counts as one.
#[test]
fn fast_convergence_as_xnu_codes_it() {
    let mut cc = xnu();
    let mut tp = sock(10);
    cc.init(&mut tp);
    assert_eq!(cc.st.last_max, TCP_MAX_SSTHRESH_BYTES);
    cc.tcp_cubic_pre_fr(1000 * MSS, 0, MSS);
    assert_eq!(cc.st.last_max, (1000.0f32 * MSS as f32 * 0.85) as u32);
    cc.tcp_cubic_pre_fr(1100 * MSS, 0, MSS);
    assert_eq!(cc.st.last_max, 1100 * MSS);
    let ssthresh = cc.tcp_cubic_pre_fr(900 * MSS, 0, MSS);
    assert_eq!(cc.st.last_max, 765 * MSS);
    assert_eq!(
        ssthresh,
        630 * MSS,
        "the backoff applies to the window, not last_max"
    );
    let mut old = XnuCubic::new(XnuCubicParams {
        cubic_rfc_compliant: false,
        ..Default::default()
    });
    old.st.last_max = 1100 * MSS;
    old.tcp_cubic_pre_fr(800 * MSS, 0, MSS);
    assert_eq!(old.st.last_max, 700 * MSS); // 0.875
    let mut nofix = XnuCubic::new(XnuCubicParams {
        cubic_minor_fixes: false,
        ..Default::default()
    });
    nofix.st.last_max = 1100 * MSS;
    nofix.tcp_cubic_pre_fr(900 * MSS, 0, MSS);
    assert_eq!(nofix.st.last_max, 900 * MSS);
}

/// Grow for `rounds` windows, one ACK per segment, with the clock frozen (so the cubic curve
/// stays flat) and return the new cwnd in packets.
fn grow(cc: &mut XnuCubic, cwnd_pkts: u32, rounds: u32) -> u32 {
    let mut cwnd = cwnd_pkts * MSS;
    for _ in 0..rounds {
        for _ in 0..cwnd / MSS {
            cwnd = cc.tcp_cubic_congestion_avd(7000, 0, cwnd, 0, MSS, MSS, u32::MAX);
        }
    }
    cwnd / MSS
}

/// The Reno-friendly window (minor fixes): 1 MSS per window of ACKs at or above W(last_max),
/// 3 (1 - beta) / (1 + beta) = 0.53 MSS below it (RFC 8312 sec. 4.2), and cwnd grows at that
/// rate when the cubic curve is slower.
#[test]
fn tcp_friendly_region_as_xnu_codes_it() {
    let mut cc = xnu();
    cc.st.last_max = 100 * MSS;
    assert_eq!(grow(&mut cc, 100, 20), 120);

    let mut cc = xnu();
    cc.st.last_max = 200 * MSS;
    let w = grow(&mut cc, 100, 20);
    // Each window adds (uint32_t)(1448 * 0.5294) = 766 bytes to the Reno window.
    let ai = (MSS as f32 * (3.0f32 * 0.3 / 1.7)) as u32;
    assert_eq!(ai, 766);
    assert!((110..=111).contains(&w), "cwnd {w} after 20 windows");
    // Not RFC compliant: 1 MSS per window everywhere.
    let mut old = XnuCubic::new(XnuCubicParams {
        cubic_rfc_compliant: false,
        ..Default::default()
    });
    old.st.last_max = 200 * MSS;
    assert_eq!(grow(&mut old, 100, 20), 120);

    // Without the minor fixes the TCP mode needs a mean deviation of last_max above 2 MSS, and
    // then jumps cwnd to the Reno window once per window of ACKs.
    let nofix = XnuCubicParams {
        cubic_minor_fixes: false,
        ..Default::default()
    };
    let mut cc = XnuCubic::new(nofix);
    cc.st.last_max = 100 * MSS;
    assert_eq!(grow(&mut cc, 100, 20), 100, "TCP mode off, cubic flat");
    let mut cc = XnuCubic::new(nofix);
    cc.st.last_max = 100 * MSS;
    cc.st.mean_dev = 3 * MSS;
    let w = grow(&mut cc, 100, 20);
    assert!((105..=120).contains(&w), "TCP mode on: cwnd {w}");
}

#[test]
fn cubic_growth_beats_reno_when_faster() {
    // 5 s into an epoch from 700 to 1000 packets, the curve asks for many packets per RTT.
    let mut cc = xnu();
    cc.st.last_max = 1000 * MSS;
    let mut cwnd = 700 * MSS;
    let t0 = 10_000;
    cwnd = cc.tcp_cubic_congestion_avd(t0, 0, cwnd, 0, MSS, MSS, u32::MAX);
    let mut now = t0 + 5000;
    let target = cc.tcp_cubic_update(now, 0, cwnd, 0, MSS) / MSS;
    let start = cwnd / MSS;
    for _ in 0..start {
        cwnd = cc.tcp_cubic_congestion_avd(now, 0, cwnd, 0, MSS, MSS, u32::MAX);
        now += 0; // one RTT of ACKs at one instant
    }
    let got = cwnd / MSS;
    assert!(got > start + 1, "cubic grew {start} -> {got}");
    assert!(got <= target + 1, "{got} overshoots the target {target}");
}

#[test]
fn slow_start_counts_bytes_up_to_the_initial_window() {
    let mut cc = build_any("cubic-xnu", &Params::new()).unwrap();
    let mut tp = sock(10);
    cc.init(&mut tp);
    cc.cong_avoid(&mut tp, 0, 4);
    assert_eq!(tp.snd_cwnd, 14);
    cc.cong_avoid(&mut tp, 0, 25);
    assert_eq!(
        tp.snd_cwnd, 24,
        "ABC limit: tcp_initial_cwnd() = 10 segments"
    );
    // XNU lets slow start overshoot ssthresh by the last increment.
    tp.snd_ssthresh = 26;
    cc.cong_avoid(&mut tp, 0, 8);
    assert_eq!(tp.snd_cwnd, 32);
    // Without the minor fixes: 2 segments per ACK.
    let mut cc = build_any(
        "cubic-xnu",
        &[("cubic_minor_fixes".to_string(), ParamValue::Bool(false))]
            .into_iter()
            .collect(),
    )
    .unwrap();
    let mut tp = sock(10);
    cc.init(&mut tp);
    cc.cong_avoid(&mut tp, 0, 5);
    assert_eq!(tp.snd_cwnd, 12);
    // Not cwnd-limited (XNU: non-validated): no growth.
    tp.is_cwnd_limited = false;
    tp.max_packets_out = 1;
    cc.cong_avoid(&mut tp, 0, 5);
    assert_eq!(tp.snd_cwnd, 12);
}

#[test]
fn recovery_exit_deflates_to_the_flight_size() {
    let mut cc = xnu();
    assert_eq!(cc.tcp_cubic_post_fr(700 * MSS, 650 * MSS, MSS), 651 * MSS);
    assert_eq!(cc.tcp_cubic_post_fr(700 * MSS, 800 * MSS, MSS), 700 * MSS);
    assert_eq!(cc.tcp_cubic_post_fr(700 * MSS, 0, MSS), 2 * MSS);
    let mut nofcr = XnuCubic::new(XnuCubicParams {
        flow_control_response: false,
        ..Default::default()
    });
    assert_eq!(
        nofcr.tcp_cubic_post_fr(700 * MSS, 650 * MSS, MSS),
        700 * MSS
    );
    // Through the trait: CA_EVENT_COMPLETE_CWR is tcp_cubic_post_fr.
    let mut cc = build_any("cubic-xnu", &Params::new()).unwrap();
    let mut tp = sock(1000);
    cc.init(&mut tp);
    tp.snd_ssthresh = cc.ssthresh(&mut tp);
    tp.packets_out = 600;
    cc.cwnd_event(&mut tp, CaEvent::CompleteCwr);
    assert_eq!(tp.snd_cwnd, 601);
}

/// tcp_cubic_after_timeout(): outside fast recovery the state is cleared first, so an RTO
/// remembers the window itself (no fast convergence) and backs off by 0.3.
#[test]
fn timeout_clears_state_then_backs_off() {
    let mut cc = XnuCubic::new(XnuCubicParams::default());
    let mut tp = sock(1000);
    cc.init(&mut tp);
    tp.snd_ssthresh = cc.ssthresh(&mut tp); // fast recovery at 1000: last_max 850
    assert_eq!(cc.st.last_max, 850 * MSS);
    tp.snd_cwnd = 800;
    tp.ca_state = CaState::Open;
    // tcp_enter_loss: ssthresh, then CA_EVENT_LOSS.
    tp.snd_ssthresh = cc.ssthresh(&mut tp);
    assert_eq!(cc.st.last_max, 680 * MSS, "as fast recovery would");
    cc.cwnd_event(&mut tp, CaEvent::Loss);
    assert_eq!(cc.st.last_max, 800 * MSS);
    assert_eq!(tp.snd_ssthresh, 560);
    // An RTO during fast recovery keeps ssthresh and the state (XNU: IN_FASTRECOVERY).
    tp.snd_cwnd = 700;
    tp.ca_state = CaState::Recovery;
    let before = (cc.st, tp.snd_ssthresh);
    tp.prior_ssthresh = tp.snd_ssthresh;
    tp.snd_ssthresh = cc.ssthresh(&mut tp);
    cc.cwnd_event(&mut tp, CaEvent::Loss);
    assert_eq!((cc.st, tp.snd_ssthresh), before);
}

#[test]
fn info_build_and_errors() {
    let i = info();
    assert_eq!((i.name, i.base), ("cubic-xnu", "cubic-xnu"));
    assert!(i
        .source
        .contains("xnu-11417.101.15 bsd/netinet/tcp_cubic.c"));
    let names: Vec<_> = i.params.iter().map(|p| p.name).collect();
    let sysctls = [
        "cubic_minor_fixes",
        "cubic_rfc_compliant",
        "cubic_use_minrtt",
        "flow_control_response",
    ];
    assert_eq!(
        names,
        [&sysctls[..], &super::tests_switches::SWITCHES[..]].concat()
    );
    assert_eq!(
        build_any("cubic-xnu", &Params::new()).unwrap().name(),
        "cubic-xnu"
    );
    let bad: Params = [("cubic_use_minrtt".to_string(), ParamValue::Int(-1))]
        .into_iter()
        .collect();
    let e = build_any("cubic-xnu", &bad).err().unwrap();
    assert_eq!(
        e.to_string(),
        "cc_params.cubic_use_minrtt = -1 is out of range for cubic-xnu: accepted an integer 0..60000"
    );
    let bad: Params = [("cubic_rfc_compliant".to_string(), ParamValue::Int(2))]
        .into_iter()
        .collect();
    assert!(build_any("cubic-xnu", &bad).is_err());
    let bad: Params = [("beta".to_string(), ParamValue::Float(0.7))]
        .into_iter()
        .collect();
    assert!(matches!(
        build_any("cubic-xnu", &bad),
        Err(CcError::UnknownParam { .. })
    ));
}

#[test]
fn use_minrtt_bounds_the_rtt_below() {
    let mut cc = XnuCubic::new(XnuCubicParams {
        cubic_use_minrtt_ms: 5000,
        ..Default::default()
    });
    cc.st.last_max = 1000 * MSS;
    let a = cc.tcp_cubic_update(1000, 10, 700 * MSS, 0, MSS);
    let mut plain = xnu();
    plain.st.last_max = 1000 * MSS;
    let b = plain.tcp_cubic_update(1000, 5000, 700 * MSS, 0, MSS);
    assert_eq!(a, b);
}
