//! A lone `cubic-xnu` flow filling a drop-tail buffer (the loss comes from the queue): each cycle
//! reduces cwnd to 0.7 of the window at the loss (XNU's `tcp_cubic_backoff` = 0.3), and the
//! window then follows C (t - K)^3 + W(last_max) with XNU's C = 0.4 (`tcp_cubic_coeff`), where
//! W(last_max) is the window at the loss or, by XNU's always-on fast convergence (minor fixes),
//! 0.85 of it when that window was below the previous W(last_max).
//!
//! Each cycle's samples are fitted by least squares (common::fit_cubic) as in cubic_cycles.rs.

mod common;
use common::*;

/// A lone `cubic-xnu` flow on the 100 Mbit/s, 100 ms dumbbell with a 100-packet buffer and
/// random loss `loss`, traced on every ACK.
fn xnu_path(loss: f64, duration_s: f64) -> Dumbbell {
    Dumbbell::new(100_000_000, 100.0)
        .queue_pkts(100)
        .loss(loss)
        .duration_s(duration_s)
        .trace(TraceMode::Ack)
}

#[test]
fn xnu_cubic_cycles_follow_xnus_beta_and_c() {
    // 100 Mbps, RTT 100 ms: BDP 833 packets of 1500 B; a 100-packet buffer.
    let out = xnu_path(0.0, 150.0).flow(Flow::new("cubic-xnu")).run();
    let cyc = cycles(&out);
    assert!(
        cyc.len() >= 6,
        "expected several loss cycles, got {}",
        cyc.len()
    );
    let steady = &cyc[2..cyc.len() - 1];
    let (beta, c) = (0.7, 0.4);
    let mut lowered = 0;
    for cy in steady {
        let ratio = cy.w_min / cy.wmax;
        let (c_fit, t_inflect, w0) = fit_cubic(&out, cy).expect("a fit");
        let fc = 0.85 * cy.wmax;
        // The plateau is the window at the loss or 0.85 of it (fast convergence).
        let plateau = if (w0 - fc).abs() < (w0 - cy.wmax).abs() {
            lowered += 1;
            fc
        } else {
            cy.wmax
        };
        let k_model = ((plateau - cy.w_min) / c).cbrt();
        let k_meas = t_inflect - cy.t_reduce_s;
        eprintln!(
            "cubic-xnu: Wmax {:.0} W' {:.0} ratio {ratio:.4} | fit C {c_fit:.4} W0 {w0:.1} \
             (plateau {plateau:.1}) | K model {k_model:.3} s measured {k_meas:.3} s",
            cy.wmax, cy.w_min
        );
        assert!(
            (ratio - beta).abs() < 0.01,
            "reduction ratio {ratio:.4} vs {beta} ({cy:?})"
        );
        assert!((c_fit - c).abs() / c < 0.05, "fitted C {c_fit:.4} vs {c}");
        assert!(
            (w0 - plateau).abs() / plateau < 0.02,
            "plateau {w0:.1} vs {plateau:.1}"
        );
        let err = (k_meas - k_model).abs() / k_model;
        assert!(
            err < 0.05,
            "K measured {k_meas:.3} s vs {k_model:.3} s ({:.1} % off)",
            err * 100.0
        );
    }
    eprintln!("{lowered} of {} cycles used fast convergence", steady.len());
}

/// With `cubic_rfc_compliant = 0` (XNU's behaviour before the RFC-compliance switch) the
/// backoff is 0.2, i.e. W <- 0.8 W, the beta of the `cubic-ios` preset; C stays 0.4.
#[test]
fn xnu_cubic_non_rfc_mode_backs_off_to_0_8() {
    let out = xnu_path(0.0, 80.0)
        .flow(Flow::new("cubic-xnu").param("cubic_rfc_compliant", false))
        .run();
    let cyc = cycles(&out);
    assert!(
        cyc.len() >= 4,
        "expected several loss cycles, got {}",
        cyc.len()
    );
    for cy in &cyc[1..cyc.len() - 1] {
        let ratio = cy.w_min / cy.wmax;
        eprintln!("non-rfc: Wmax {:.0} ratio {ratio:.4}", cy.wmax);
        assert!(
            (ratio - 0.8).abs() < 0.01,
            "ratio {ratio:.4} vs 0.8 ({cy:?})"
        );
        let (c_fit, _, _) = fit_cubic(&out, cy).expect("a fit");
        assert!(
            (c_fit - 0.4).abs() / 0.4 < 0.05,
            "fitted C {c_fit:.4} vs 0.4"
        );
    }
}

/// The same dumbbell with random loss (Bernoulli, p = 3e-5) on top of the drop-tail losses:
/// every reduction is still to 0.7 W, and the cycles that get back to their plateau before the
/// next loss fit C = 0.4 (cycles cut short by a random loss only show their concave part).
#[test]
fn xnu_cubic_on_a_lossy_dumbbell() {
    let out = xnu_path(3e-5, 150.0).flow(Flow::new("cubic-xnu")).run();
    let cyc = cycles(&out);
    assert!(
        cyc.len() >= 10,
        "expected many loss cycles, got {}",
        cyc.len()
    );
    let mut all = Vec::new();
    let mut full = Vec::new();
    for cy in &cyc[1..] {
        let ratio = cy.w_min / cy.wmax;
        assert!(
            (ratio - 0.7).abs() < 0.01,
            "ratio {ratio:.4} vs 0.7 ({cy:?})"
        );
        if let Some((c_fit, _, _)) = fit_cubic(&out, cy) {
            all.push(c_fit);
            if cy.t_plateau_s.is_some() {
                full.push(c_fit);
            }
        }
    }
    eprintln!("fitted C, all cycles {all:.3?}; cycles past their plateau {full:.3?}");
    assert!(
        full.len() >= 3,
        "only {} cycles reached their plateau",
        full.len()
    );
    for c in &full {
        assert!((c - 0.4).abs() / 0.4 < 0.05, "fitted C {c:.4} vs 0.4");
    }
    all.sort_by(f64::total_cmp);
    let median = all[all.len() / 2];
    assert!(
        (median - 0.4).abs() / 0.4 < 0.05,
        "median fitted C {median:.4} vs 0.4"
    );
}

/// The `hystart` ablation switch: XNU has no HyStart, so on a lossless path with a deep buffer
/// its slow start ends only at the first loss (the buffer overflowing); with Linux's HyStart
/// switched in, ssthresh is set before any retransmission, below the window that overflows, and
/// W(last_max) starts there (the next epoch is convex from it, no jump to XNU's 1 GiB).
#[test]
fn xnu_hystart_switch_ends_slow_start_before_the_first_loss() {
    // 20 Mbps, RTT 200 ms: BDP 333 packets; a 500-packet buffer.
    let path = || {
        Dumbbell::new(20_000_000, 200.0)
            .queue_pkts(500)
            .duration_s(8.0)
            .trace(TraceMode::Ack)
    };
    let first_ssthresh = |out: &cclab_sim::RunOutput| {
        let f = &out.flows;
        let i = (0..f.len())
            .find(|&i| f.ssthresh_pkts[i] < 1_000_000)
            .expect("slow start ended");
        (f.t_s[i], f.ssthresh_pkts[i], f.retrans_pkts[i])
    };
    let xnu = path().flow(Flow::new("cubic-xnu")).run();
    let hs = path()
        .flow(Flow::new("cubic-xnu").param("hystart", true))
        .run();
    let (t0, s0, r0) = first_ssthresh(&xnu);
    let (t1, s1, r1) = first_ssthresh(&hs);
    eprintln!(
        "no HyStart: ssthresh {s0} at {t0:.2} s ({r0} retrans); HyStart: {s1} at {t1:.2} s ({r1})"
    );
    assert!(
        r1 == 0 && s1 < 833,
        "HyStart exit {s1} with {r1} retransmissions"
    );
    assert!(
        t1 < t0 && s1 < s0,
        "HyStart ends slow start earlier and lower"
    );
    assert!(
        r0 > 0 || s0 >= 560,
        "without HyStart slow start ends at a loss"
    );
}
