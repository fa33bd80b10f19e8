//! BBR v1 behaviours from `tcp_bbr.c` and the BBR paper (Cardwell et al., ACM Queue 2016),
//! checked on a 20 Mbit/s, 200 ms, 500-packet dumbbell (the shape of the recorded kernel trace
//! `shared/data/kernel-traces/bbr_20M_200ms_q500.csv`): STARTUP then DRAIN (pacing gain
//! 1/2.885), the 8-phase PROBE_BW gain cycle (5/4, 3/4, then 1 x 6, each ~min_rtt), a PROBE_RTT
//! (cwnd 4 for >= 200 ms) each time min_rtt has not been refreshed for 10 s, and no cut of the
//! model on random loss.

mod common;
use common::*;

const RATE_BPS: f64 = 20e6;
const MSS: f64 = 1448.0;

fn bbr_run(loss: f64, duration_s: f64) -> cclab_sim::RunOutput {
    Dumbbell::new(RATE_BPS as u64, 200.0)
        .queue_pkts(500)
        .loss(loss)
        .duration_s(duration_s)
        .trace(TraceMode::Interval)
        .trace_interval_ms(10.0)
        .flow(Flow::new("bbr").mss_bytes(MSS as u32))
        .run()
}

/// Payload rate of the link at 1500-byte packets carrying MSS bytes, bit/s.
fn goodput_ceiling_bps() -> f64 {
    RATE_BPS * MSS / 1500.0
}

#[test]
fn startup_overshoots_then_drain_paces_at_one_over_high_gain() {
    let out = bbr_run(0.0, 8.0);
    let f = &out.flows;
    // STARTUP doubles the rate per round: pacing rises far above the link rate (2.885 x bw).
    let (i_peak, peak) = (0..f.len())
        .map(|i| (i, f.pacing_rate_bps[i]))
        .fold((0, 0.0), |a, b| if b.1 > a.1 { b } else { a });
    assert!(peak > 2.0 * RATE_BPS, "startup pacing peak {peak}");
    // Then DRAIN: pacing at bw / 2.885 (less 1 %) ~ 0.34 x the payload rate, for under a round.
    let drain: Vec<usize> = (i_peak..f.len())
        .filter(|&i| {
            let r = f.pacing_rate_bps[i] / goodput_ceiling_bps();
            (0.30..0.38).contains(&r)
        })
        .collect();
    assert!(
        !drain.is_empty(),
        "no DRAIN-rate pacing after the startup peak"
    );
    let drain_len_s = f.t_s[*drain.last().unwrap()] - f.t_s[drain[0]];
    assert!(drain_len_s < 1.5, "drain lasted {drain_len_s} s");
    // After draining, inflight is back near 2 BDP (cwnd_gain 2): BDP = 345 packets here.
    let bdp = goodput_ceiling_bps() / 8.0 / MSS * 0.2;
    let last = f.len() - 1;
    let cwnd = f.cwnd_pkts[last] as f64;
    assert!(
        (cwnd / (2.0 * bdp) - 1.0).abs() < 0.1,
        "cwnd {cwnd} vs 2 BDP {}",
        2.0 * bdp
    );
    // The queue STARTUP built is gone: RTT back within 10 % of the propagation RTT.
    assert!(f.srtt_ms[last] < 220.0, "srtt {}", f.srtt_ms[last]);
}

#[test]
fn probe_bw_cycles_through_eight_gain_phases() {
    let out = bbr_run(0.0, 20.0);
    let f = &out.flows;
    // In PROBE_BW the pacing rate is gain x bw x 0.99 with bw ~ the payload rate.
    let unit = goodput_ceiling_bps() * 0.99;
    let near = |x: f64, g: f64| (x - g).abs() < 0.04;
    // Two whole cycles (8 min_rtt each, 1.6 s) from just before the first 5/4 phase after DRAIN,
    // before the first PROBE_RTT (10 s).
    let first_up = (0..f.len())
        .find(|&i| f.t_s[i] > 3.0 && near(f.pacing_rate_bps[i] / unit, 1.25))
        .map(|i| f.t_s[i])
        .expect("a 5/4 phase");
    assert!(first_up < 6.5, "PROBE_BW began at {first_up} s");
    let phases: Vec<(f64, f64)> = (0..f.len())
        .filter(|&i| f.t_s[i] >= first_up - 0.05 && f.t_s[i] < first_up + 3.2)
        .map(|i| (f.t_s[i], f.pacing_rate_bps[i] / unit))
        .collect();
    let frac = |g: f64| phases.iter().filter(|p| near(p.1, g)).count() as f64 / phases.len() as f64;
    let (up, down, cruise) = (frac(1.25), frac(0.75), frac(1.0));
    eprintln!("gain shares: 5/4 {up:.3}, 3/4 {down:.3}, 1 {cruise:.3}");
    assert!(
        up + down + cruise > 0.97,
        "other gains seen: {up} {down} {cruise}"
    );
    // Each phase lasts about one min_rtt, so 1/8 of the time probing up and 1/8 down.
    assert!((up - 0.125).abs() < 0.05, "5/4 phase share {up}");
    assert!((down - 0.125).abs() < 0.05, "3/4 phase share {down}");
    // 5/4 is always followed by 3/4, and the cycle repeats every 8 min_rtt (1.6 s).
    let starts: Vec<f64> = phases
        .windows(2)
        .filter(|w| !near(w[0].1, 1.25) && near(w[1].1, 1.25))
        .map(|w| w[1].0)
        .collect();
    assert!(starts.len() >= 2, "probe phases at {starts:?}");
    for w in starts.windows(2) {
        assert!(
            (w[1] - w[0] - 1.6).abs() < 0.15,
            "cycle period {}",
            w[1] - w[0]
        );
    }
    for w in phases.windows(2) {
        if near(w[0].1, 1.25) && !near(w[1].1, 1.25) {
            assert!(
                near(w[1].1, 0.75),
                "after 5/4 came {} at {}",
                w[1].1,
                w[1].0
            );
        }
    }
}

#[test]
fn probe_rtt_every_ten_seconds_at_four_packets() {
    let out = bbr_run(0.0, 45.0);
    let f = &out.flows;
    // Episodes of cwnd <= 4 (bbr_cwnd_min_target).
    let mut episodes: Vec<(f64, f64)> = Vec::new();
    for i in 0..f.len() {
        if f.cwnd_pkts[i] <= 4 {
            match episodes.last_mut() {
                Some(e) if f.t_s[i] - e.1 < 0.05 => e.1 = f.t_s[i],
                _ => episodes.push((f.t_s[i], f.t_s[i])),
            }
        }
    }
    eprintln!("PROBE_RTT episodes {episodes:?}");
    assert!(episodes.len() >= 4, "PROBE_RTT episodes {episodes:?}");
    // min_rtt is refreshed by PROBE_RTT itself, so the next comes 10 s (+ its own length) later.
    for w in episodes.windows(2) {
        let gap = w[1].0 - w[0].0;
        assert!(
            (10.0..11.0).contains(&gap),
            "PROBE_RTT spacing {gap} s: {episodes:?}"
        );
    }
    for e in &episodes {
        // >= 200 ms at 4 packets plus at least one round (~200 ms here) in total.
        let len = e.1 - e.0;
        assert!((0.18..0.7).contains(&len), "PROBE_RTT length {len} s");
    }
}

#[test]
fn random_loss_does_not_cut_the_rate() {
    // 1 % random loss: Reno-like algorithms collapse (Mathis: ~1.2 MSS/RTT/sqrt(p) = 0.8 Mbps);
    // BBR's model ignores loss below its policer threshold and keeps most of the link.
    let out = bbr_run(0.01, 30.0);
    let g = out.flow_stats[0].goodput_bps;
    assert!(
        g > 0.8 * goodput_ceiling_bps(),
        "BBR goodput {g} at 1 % loss"
    );
    let cubic = Dumbbell::new(RATE_BPS as u64, 200.0)
        .queue_pkts(500)
        .loss(0.01)
        .duration_s(30.0)
        .flow(Flow::new("cubic").mss_bytes(MSS as u32))
        .run()
        .flow_stats[0]
        .goodput_bps;
    assert!(g > 5.0 * cubic, "BBR {g} vs CUBIC {cubic}");
}
