//! Reno under random loss on a path where the link is not the limit matches Mathis et al.'s
//! formula BW = (MSS / RTT) * C / sqrt(p).
//!
//! The constant: Linux grows cwnd per *segment acknowledged* (`tcp_cong_avoid_ai` counts acked
//! segments, not ACKs), so delayed ACKs do not slow congestion avoidance and the window grows one
//! segment per RTT: the b = 1 case. For random (Bernoulli) losses Mathis et al. (CCR 1997,
//! section 3) report C = 1.31 without delayed ACKs (sqrt(3/2) = 1.22 is the periodic-loss value).

mod common;
use common::*;

fn mathis_bps(mss: f64, rtt_s: f64, p: f64, c: f64) -> f64 {
    mss * 8.0 / rtt_s * c / p.sqrt()
}

fn check(p: f64, duration_s: f64) {
    let out = Dumbbell::new(10_000_000_000, 100.0)
        .queue_pkts(100_000)
        .loss(p)
        .duration_s(duration_s)
        .flow(Flow::new("reno"))
        .run();
    let got = out.flow_stats[0].goodput_bps;
    let want = mathis_bps(1448.0, 0.1, p, 1.31);
    let err = (got - want).abs() / want;
    eprintln!(
        "p={p}: goodput {:.3} Mbps, Mathis {:.3} Mbps, error {:.1} %",
        got / 1e6,
        want / 1e6,
        err * 100.0
    );
    assert!(
        err < 0.15,
        "p={p}: goodput {got:.0} bps vs Mathis {want:.0} bps ({:.1} % off)",
        err * 100.0
    );
}

#[test]
fn reno_matches_mathis_at_1e_3() {
    check(1e-3, 600.0);
}

#[test]
fn reno_matches_mathis_at_1e_2() {
    check(1e-2, 1200.0);
}
