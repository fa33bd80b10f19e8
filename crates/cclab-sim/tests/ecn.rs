//! ECN end to end (RFC 3168 as Linux 6.18 with `tcp_ecn = 1`; google/bbr's `ecn_low`): a
//! bottleneck that CE-marks ECT packets once its queue holds K packets, and flows that react.
//!
//! Reno and CUBIC: no loss at all, one reduction by the algorithm's beta per window (the CWR
//! state), a queue that stays near K and goodput near the link rate. BBRv2/v3 with `ecn =
//! "low"` on a short path (min_rtt under `ecn_max_rtt_us`): a queue far shorter than without
//! ECN. BBRv1, and BBRv3 with classic `ecn = "on"`, ignore the marks in their model.

mod common;
use common::*;

const MSS: f64 = 1448.0;

/// A dumbbell (500-packet buffer) with ECN marking at `k_pkts` on its data direction, no flows.
fn marking_path(rate_bps: u64, rtt_ms: f64, k_pkts: u32, duration_s: f64) -> Dumbbell {
    Dumbbell::new(rate_bps, rtt_ms)
        .queue_pkts(500)
        .duration_s(duration_s)
        .ecn_threshold_pkts(k_pkts)
}

/// A `cc` flow with ECN setting `ecn`.
fn ecn_flow(cc: &str, ecn: EcnMode) -> Flow {
    Flow::new(cc).ecn(ecn).mss_bytes(MSS as u32)
}

/// A one-flow dumbbell with ECN marking at `k_pkts` on the bottleneck's data direction.
fn marking(
    cc: &str,
    ecn: EcnMode,
    rate_bps: u64,
    rtt_ms: f64,
    k_pkts: u32,
    duration_s: f64,
) -> Dumbbell {
    marking_path(rate_bps, rtt_ms, k_pkts, duration_s).flow(ecn_flow(cc, ecn))
}

/// Payload rate of a link at MSS + 52 bytes on the wire, bit/s.
fn ceiling_bps(rate_bps: u64) -> f64 {
    rate_bps as f64 * MSS / (MSS + 52.0)
}

/// Queue samples of the bottleneck's data direction (link 0) after `from_s`, packets.
fn queue_after(out: &cclab_sim::RunOutput, from_s: f64) -> Vec<u32> {
    let l = &out.links;
    (0..l.t_s.len())
        .filter(|&i| l.link[i] == 0 && l.t_s[i] >= from_s)
        .map(|i| l.queue_pkts[i])
        .collect()
}

fn mean(xs: &[u32]) -> f64 {
    xs.iter().map(|&x| x as f64).sum::<f64>() / xs.len().max(1) as f64
}

#[test]
fn reno_and_cubic_reduce_by_beta_once_per_window_without_loss() {
    // 20 Mbit/s, 20 ms: BDP 33 packets; mark at K = 20.
    let (rate, rtt_ms, k) = (20_000_000, 20.0, 20);
    for (cc, beta) in [("reno", 0.5), ("cubic", 717.0 / 1024.0)] {
        let out = marking(cc, EcnMode::On, rate, rtt_ms, k, 20.0).run();
        let st = &out.flow_stats[0];
        let cwrs = cwr_events(&out);
        let q = queue_after(&out, 2.0);
        let goodput = st.goodput_bps / ceiling_bps(rate);
        println!(
            "{cc}: retrans {} rto {} cwr {} ({}) goodput {:.3} of the link, queue mean {:.1} max {}, ce_marks {}",
            st.retrans_pkts,
            st.rto_count,
            cwrs.len(),
            st.cwr_count,
            goodput,
            mean(&q),
            q.iter().max().unwrap(),
            out.link_stats[0].counters.ce_marks
        );
        assert_eq!(
            st.retrans_pkts, 0,
            "{cc}: marks instead of drops: nothing to repair"
        );
        assert_eq!(out.link_stats[0].counters.dropped_queue_full_pkts, 0);
        assert!(cwrs.len() > 20, "{cc}: a reduction every few RTTs");
        assert_eq!(cwrs.len() as u64, st.cwr_count);
        for &(_, cwnd, ssthresh) in &cwrs {
            let want = ((cwnd as f64 * beta) as u32).max(2);
            assert!(
                ssthresh.abs_diff(want) <= 1,
                "{cc}: ssthresh {ssthresh} after cwnd {cwnd}, beta {beta}"
            );
        }
        // At most one reduction per window: reductions at least a round trip apart.
        for w in cwrs.windows(2) {
            assert!(
                w[1].0 - w[0].0 >= rtt_ms / 1e3,
                "{cc}: reductions {:.4} s and {:.4} s less than an RTT apart",
                w[0].0,
                w[1].0
            );
        }
        assert!(out.flows.ca_state.contains(&2), "{cc}: CWR in the trace");
        assert!(!out.flows.ca_state.contains(&3), "{cc}: never in Recovery");
        assert!(
            *q.iter().max().unwrap() <= 2 * k,
            "{cc}: the queue stays near K"
        );
        assert!(goodput > 0.9, "{cc}: goodput {goodput:.3} of the link");

        // The same path without ECN: the queue fills to its 500-packet limit and drops.
        let out_off = marking(cc, EcnMode::Off, rate, rtt_ms, k, 20.0).run();
        assert!(out_off.flow_stats[0].retrans_pkts > 0);
        assert_eq!(
            out_off.link_stats[0].counters.ce_marks, 0,
            "Not-ECT packets are never marked"
        );
        assert!(mean(&queue_after(&out_off, 2.0)) > 3.0 * mean(&q));
    }
}

#[test]
fn the_same_seed_gives_the_same_trace_with_ecn() {
    let d = marking("cubic", EcnMode::On, 20_000_000, 20.0, 20, 5.0);
    let (a, b) = (d.run(), d.run());
    assert_eq!(a.flows.cwnd_pkts, b.flows.cwnd_pkts);
    assert_eq!(a.flows.t_s, b.flows.t_s);
    assert_eq!(a.events.detail, b.events.detail);
    assert_eq!(a.links.ce_marks, b.links.ce_marks);
}

/// Two BBR flows (the second starts at 0.5 s) on a short path: 100 Mbit/s, 4 ms (min_rtt under
/// the 5 ms `ecn_max_rtt_us`), BDP 34 packets, marking at K = 10. Without ECN two flows keep a
/// standing queue of more than a BDP.
fn bbr_run(cc: &str, ecn: EcnMode) -> cclab_sim::RunOutput {
    let flow = ecn_flow(cc, ecn);
    marking_path(100_000_000, 4.0, 10, 10.0)
        .trace(TraceMode::Interval)
        .trace_interval_ms(1.0)
        .flow(flow.clone()) // "f0"
        .flow(flow.start_s(0.5)) // "f1"
        .run()
}

fn total_goodput_bps(out: &cclab_sim::RunOutput) -> f64 {
    out.flow_stats.iter().map(|f| f.goodput_bps).sum()
}

#[test]
fn bbr2_and_bbr3_with_ecn_low_keep_the_queue_short() {
    for cc in ["bbr2", "bbr3"] {
        let low = bbr_run(cc, EcnMode::Low);
        let off = bbr_run(cc, EcnMode::Off);
        let (ql, qo) = (mean(&queue_after(&low, 1.0)), mean(&queue_after(&off, 1.0)));
        let (gl, go) = (total_goodput_bps(&low), total_goodput_bps(&off));
        println!(
            "{cc}: low: queue mean {ql:.1} goodput {gl:.3e} ce {}; off: queue mean {qo:.1} goodput {go:.3e}",
            low.link_stats[0].counters.ce_marks
        );
        assert!(low.link_stats[0].counters.ce_marks > 0);
        assert!(ql * 4.0 < qo, "{cc}: ECN keeps the queue far shorter");
        assert!(ql < 15.0, "{cc}: the queue stays near K = 10");
        assert!(
            gl > 0.9 * ceiling_bps(100_000_000),
            "{cc}: goodput {gl:.3e}"
        );
        assert!(low.flow_stats.iter().all(|f| f.retrans_pkts == 0));
    }
}

#[test]
fn bbr1_and_bbr3_with_classic_ecn_ignore_the_marks() {
    // BBRv1 has no ECN response; v3's needs `ecn_low` (bbr_can_use_ecn). The core still
    // enters CWR on ECE (ca_state 2), but cwnd and pacing stay BBR's own.
    for cc in ["bbr", "bbr3"] {
        let on = bbr_run(cc, EcnMode::On);
        let off = bbr_run(cc, EcnMode::Off);
        let (qn, qo) = (mean(&queue_after(&on, 1.0)), mean(&queue_after(&off, 1.0)));
        let (gn, go) = (total_goodput_bps(&on), total_goodput_bps(&off));
        println!(
            "{cc}: on: queue mean {qn:.1} goodput {gn:.4e} cwr {} ce {}; off: queue mean {qo:.1} goodput {go:.4e}",
            on.flow_stats[0].cwr_count,
            on.link_stats[0].counters.ce_marks,
        );
        assert!(on.link_stats[0].counters.ce_marks > 0 && on.flow_stats[0].cwr_count > 0);
        assert!(on.flows.ca_state.contains(&2));
        assert!((qn - qo).abs() < 0.1 * qo, "{cc}: queue {qn:.1} vs {qo:.1}");
        assert!(
            (gn - go).abs() < 0.01 * go,
            "{cc}: goodput {gn:.4e} vs {go:.4e}"
        );
        assert!(qn > 20.0, "{cc}: the marks do not shorten the queue");
    }
}
