//! A lone CUBIC flow filling a drop-tail buffer: each loss cycle reduces cwnd by beta and
//! returns to the previous maximum after K = cbrt(Wmax (1 - beta) / C) seconds (RFC 9438
//! eq. 2; Linux `bictcp_update`).

mod common;
use common::*;
use serde_json::json;

fn check(cc: &str, beta: f64, c: f64) {
    let mut v = dumbbell(cc, Some(20_000_000), 100.0, 500, 0.0, 150.0);
    v["sim"] = json!({"trace": "ack"});
    let out = run_json(&v);
    let cyc = cycles(&out);
    assert!(cyc.len() >= 6, "expected several loss cycles, got {}", cyc.len());
    // Skip the slow-start overshoot and the first CA cycle (fast convergence settles).
    let steady: Vec<_> = cyc.iter().skip(2).filter(|c| c.t_plateau_s.is_some()).collect();
    assert!(steady.len() >= 3, "too few steady cycles: {cyc:?}");
    for cy in &steady {
        let ratio = cy.w_min / cy.wmax;
        assert!((ratio - beta).abs() < 0.02, "{cc}: reduction ratio {ratio:.3}, beta {beta} ({cy:?})");
        let k_model = (cy.wmax * (1.0 - beta) / c).cbrt();
        let k_meas = cy.t_plateau_s.unwrap() - cy.t_reduce_s;
        let err = (k_meas - k_model).abs() / k_model;
        eprintln!("{cc}: Wmax {:.0} W' {:.0} K model {k_model:.2} s measured {k_meas:.2} s", cy.wmax, cy.w_min);
        assert!(err < 0.05, "{cc}: K measured {k_meas:.3} s vs {k_model:.3} s ({:.1} % off)", err * 100.0);
    }
}

#[test]
fn linux_cubic_cycles_follow_beta_and_k() {
    check("cubic", 717.0 / 1024.0, 0.4);
}

#[test]
fn cubic_ios_preset_cycles_follow_beta_and_k() {
    check("cubic-ios", 0.8, 0.25);
}
