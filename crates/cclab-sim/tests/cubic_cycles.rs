//! A lone CUBIC flow filling a drop-tail buffer: each loss cycle reduces cwnd by beta, and the
//! window follows W(t) = C (t - K)^3 + Wmax with K = cbrt(Wmax (1 - beta) / C) measured from
//! the reduction (RFC 9438 eq. 1-2; Linux `bictcp_update`).
//!
//! How K is measured: integer cwnd makes the plateau flat for about ±cbrt(1/C) seconds, so "the
//! first time cwnd reaches Wmax" is ambiguous by a second; instead each cycle's samples are
//! fitted by least squares to C (t - T)^3 + W0 and K = T - (time of the reduction). Linux
//! evaluates the curve one min-RTT ahead (`t += delay_min`) to make up for the recovery round
//! trip, so on a path with a short queue this K equals the closed form. Fast convergence is
//! off here: with it, the plateau is (1 + beta) / 2 * Wmax by design whenever a cycle peaks
//! lower than the one before; `fast_convergence_lowers_the_plateau` checks that case.

mod common;
use common::*;

fn steady_cycles(cc: &str, fast_convergence: bool) -> (cclab_sim::RunOutput, Vec<Cycle>) {
    // 100 Mbps, RTT 100 ms: BDP 833 packets of 1500 B; a 100-packet buffer.
    let out = Dumbbell::new(100_000_000, 100.0)
        .queue_pkts(100)
        .duration_s(150.0)
        .trace(TraceMode::Ack)
        .flow(Flow::new(cc).param("fast_convergence", fast_convergence))
        .run();
    let cyc = cycles(&out);
    assert!(
        cyc.len() >= 8,
        "expected several loss cycles, got {}",
        cyc.len()
    );
    // Skip the slow-start overshoot and the first cycles while the peaks settle.
    let steady = cyc[3..cyc.len() - 1].to_vec();
    (out, steady)
}

fn check(cc: &str, beta: f64, c: f64) {
    let (out, steady) = steady_cycles(cc, false);
    for cy in &steady {
        let ratio = cy.w_min / cy.wmax;
        assert!(
            (ratio - beta).abs() < 0.01,
            "{cc}: reduction ratio {ratio:.4}, beta {beta} ({cy:?})"
        );
        let (c_fit, t_inflect, w0) = fit_cubic(&out, cy).expect("a fit");
        let k_model = (cy.wmax * (1.0 - beta) / c).cbrt();
        let k_meas = t_inflect - cy.t_reduce_s;
        eprintln!(
            "{cc}: Wmax {:.0} W' {:.0} | fit C {c_fit:.4} W0 {w0:.1} | K model {k_model:.3} s measured {k_meas:.3} s",
            cy.wmax, cy.w_min
        );
        assert!(
            (c_fit - c).abs() / c < 0.05,
            "{cc}: fitted C {c_fit:.4} vs {c}"
        );
        assert!(
            (w0 - cy.wmax).abs() / cy.wmax < 0.02,
            "{cc}: plateau {w0:.1} vs Wmax {}",
            cy.wmax
        );
        let err = (k_meas - k_model).abs() / k_model;
        assert!(
            err < 0.05,
            "{cc}: K measured {k_meas:.3} s vs {k_model:.3} s ({:.1} % off)",
            err * 100.0
        );
    }
}

#[test]
fn linux_cubic_cycles_follow_beta_and_k() {
    check("cubic", 717.0 / 1024.0, 410.0 / 1024.0);
}

#[test]
fn cubic_ios_preset_cycles_follow_beta_and_k() {
    check("cubic-ios", 0.8, 0.25);
}

/// With fast convergence (Linux's default) a cycle that peaks below the previous peak aims at
/// (1 + beta) / 2 of its own Wmax.
#[test]
fn fast_convergence_lowers_the_plateau() {
    let beta = 717.0 / 1024.0;
    let (out, steady) = steady_cycles("cubic", true);
    let mut lowered = 0;
    for cy in &steady {
        assert!((cy.w_min / cy.wmax - beta).abs() < 0.01);
        let (_, _, w0) = fit_cubic(&out, cy).expect("a fit");
        let fc = (1.0 + beta) / 2.0 * cy.wmax;
        assert!(
            w0 > fc * 0.97 && w0 < cy.wmax * 1.03,
            "plateau {w0:.1} outside [{fc:.1}, {}]",
            cy.wmax
        );
        if (w0 - fc).abs() < 0.03 * cy.wmax {
            lowered += 1;
        }
    }
    assert!(lowered > 0, "no cycle used fast convergence: {steady:?}");
}
