//! BBRv2 (`bbr2`, google/bbr v2alpha `tcp_bbr2.c`) and BBRv3 (`bbr3`, google/bbr v3
//! `tcp_bbr.c`) behaviours on a 20 Mbit/s, 100 ms dumbbell (BDP 166 packets of 1448 B):
//! the 2 % loss threshold bounding inflight (random loss well above it cuts inflight_hi and
//! stops probing, well below it does not), far fewer drops than v1 in a shallow buffer, the
//! PROBE_BW phases UP / DOWN / CRUISE (/ REFILL) in the pacing rate, PROBE_RTT every ~5 s at
//! cwnd BDP/2, the STARTUP gains (2.885 v2, 2.77 v3) and the loss-based STARTUP exit.

mod common;
use common::*;

const RATE_BPS: f64 = 20e6;
const MSS: f64 = 1448.0;
const RTT_S: f64 = 0.1;

/// Payload rate of the link at 1500-byte packets carrying MSS bytes, bit/s.
fn ceiling_bps() -> f64 {
    RATE_BPS * MSS / 1500.0
}

/// BDP in packets.
fn bdp_pkts() -> f64 {
    ceiling_bps() / 8.0 / MSS * RTT_S
}

/// One `cc` flow with integer tunables `params` on the dumbbell, traced every 10 ms.
fn run_with(
    cc: &str,
    queue_pkts: u32,
    loss: f64,
    duration_s: f64,
    params: &[(&str, i64)],
) -> cclab_sim::RunOutput {
    let mut flow = Flow::new(cc).mss_bytes(MSS as u32);
    for &(name, value) in params {
        flow = flow.param(name, value);
    }
    Dumbbell::new(RATE_BPS as u64, RTT_S * 1e3)
        .queue_pkts(queue_pkts)
        .loss(loss)
        .duration_s(duration_s)
        .trace(TraceMode::Interval)
        .trace_interval_ms(10.0)
        .flow(flow)
        .run()
}

fn run(cc: &str, queue_pkts: u32, loss: f64, duration_s: f64) -> cclab_sim::RunOutput {
    run_with(cc, queue_pkts, loss, duration_s, &[])
}

/// Mean cwnd over the second half of the run, packets.
fn mean_cwnd_late(out: &cclab_sim::RunOutput) -> f64 {
    let f = &out.flows;
    let n = f.len();
    (n / 2..n).map(|i| f.cwnd_pkts[i] as f64).sum::<f64>() / (n - n / 2) as f64
}

/// Retransmitted / sent segments.
fn retrans_ratio(out: &cclab_sim::RunOutput) -> f64 {
    let s = &out.flow_stats[0];
    s.retrans_pkts as f64 / s.sent_pkts as f64
}

#[test]
fn loss_above_two_percent_bounds_inflight_below_it_does_not() {
    for cc in ["bbr2", "bbr3"] {
        let low = run(cc, 500, 0.005, 20.0);
        let high = run(cc, 500, 0.05, 20.0);
        let (g_low, g_high) = (
            low.flow_stats[0].goodput_bps,
            high.flow_stats[0].goodput_bps,
        );
        let (w_low, w_high) = (mean_cwnd_late(&low), mean_cwnd_late(&high));
        eprintln!(
            "{cc}: 0.5 % loss {:.2} Mbit/s cwnd {w_low:.0}; 5 % loss {:.2} Mbit/s cwnd {w_high:.0}; \
             BDP {:.0}",
            g_low / 1e6,
            g_high / 1e6,
            bdp_pkts()
        );
        // 0.5 % per round stays under loss_thresh: it keeps probing and fills the pipe.
        assert!(g_low > 0.8 * ceiling_bps(), "{cc} at 0.5 %: {g_low}");
        assert!(w_low > 0.8 * bdp_pkts(), "{cc} at 0.5 %: cwnd {w_low}");
        // 5 % exceeds it every probe: inflight_hi is cut by beta each time and stays low.
        assert!(w_high < 0.5 * bdp_pkts(), "{cc} at 5 %: cwnd {w_high}");
        assert!(g_high < 0.6 * g_low, "{cc}: {g_high} vs {g_low}");
    }
    // v1 has no loss threshold: at 5 % random loss it keeps its model and the pipe full.
    let v1 = run("bbr", 500, 0.05, 20.0);
    assert!(v1.flow_stats[0].goodput_bps > 0.8 * ceiling_bps());
}

/// Retransmitted / sent of each of two flows of `cc` sharing a 20-packet buffer (the second
/// starting at 2 s), 20 s.
fn two_flow_retrans(cc: &str) -> Vec<f64> {
    let out = Dumbbell::new(RATE_BPS as u64, RTT_S * 1e3)
        .queue_pkts(20)
        .duration_s(20.0)
        .flow(Flow::new(cc).name("a").mss_bytes(1448))
        .flow(Flow::new(cc).name("b").mss_bytes(1448).start_s(2.0))
        .run();
    out.flow_stats
        .iter()
        .map(|s| s.retrans_pkts as f64 / s.sent_pkts as f64)
        .collect()
}

#[test]
fn shallow_buffer_loses_far_less_than_v1() {
    // Two v1 flows in a buffer of 0.12 BDP keep probing into it: 7-9 % of packets lost (the
    // second flow's share depends on how its STARTUP meets the first: 16 quick ACKs at the
    // start, as Linux 6.18, moved it from above 8 % to 6.9 %).
    let v1 = two_flow_retrans("bbr");
    eprintln!("20-packet buffer, two flows: bbr retransmits {v1:.3?} of sent");
    assert!(v1.iter().all(|&r| r > 0.06), "{v1:?}");
    for cc in ["bbr2", "bbr3"] {
        let r = two_flow_retrans(cc);
        eprintln!("20-packet buffer, two flows: {cc} retransmits {r:.3?} of sent");
        // inflight_hi (cut at the loss threshold) and the headroom keep loss near 2 %.
        assert!(r.iter().all(|&x| x < 0.04), "{cc}: {r:?}");
        // Compared over both flows: which of the two v1 flows loses less depends on how
        // their STARTUPs meet.
        let mean = |x: &[f64]| x.iter().sum::<f64>() / x.len() as f64;
        assert!(mean(&v1) > 3.0 * mean(&r), "bbr {v1:?} vs {cc} {r:?}");
    }
    // One flow alone: fewer drops than v1 too.
    let one_v1 = retrans_ratio(&run("bbr", 20, 0.0, 20.0));
    for cc in ["bbr2", "bbr3"] {
        let out = run(cc, 20, 0.0, 20.0);
        assert!(retrans_ratio(&out) < one_v1, "{cc}");
        assert!(out.flow_stats[0].goodput_bps > 0.8 * ceiling_bps(), "{cc}");
    }
}

/// Shares of trace samples in [from, to) s whose pacing gain (pacing rate / (bw less 1 %))
/// is within 0.03 of each of `gains`, and the sequence of distinct gains seen.
fn gain_shares(
    out: &cclab_sim::RunOutput,
    from: f64,
    to: f64,
    gains: &[f64],
) -> (Vec<f64>, Vec<usize>) {
    let f = &out.flows;
    let unit = ceiling_bps() * 0.99;
    let xs: Vec<f64> = (0..f.len())
        .filter(|&i| f.t_s[i] >= from && f.t_s[i] < to)
        .map(|i| f.pacing_rate_bps[i] / unit)
        .collect();
    let shares = gains
        .iter()
        .map(|g| xs.iter().filter(|x| (*x - g).abs() < 0.03).count() as f64 / xs.len() as f64)
        .collect();
    let mut seq: Vec<usize> = Vec::new();
    for x in &xs {
        if let Some(k) = gains.iter().position(|g| (x - g).abs() < 0.03) {
            if seq.last() != Some(&k) {
                seq.push(k);
            }
        }
    }
    (shares, seq)
}

#[test]
fn probe_bw_phases_up_down_cruise_in_the_pacing_rate() {
    for (cc, down) in [("bbr2", 0.75), ("bbr3", 0.91)] {
        let out = run(cc, 500, 0.0, 12.0);
        let (s, seq) = gain_shares(&out, 2.0, 12.0, &[1.25, down, 1.0]);
        eprintln!(
            "{cc}: shares UP {:.3} DOWN {:.3} CRUISE/REFILL {:.3}; sequence {seq:?}",
            s[0], s[1], s[2]
        );
        assert!(s[0] > 0.0 && s[1] > 0.0, "{cc}: UP and DOWN both seen");
        assert!(s[2] > 0.6, "{cc}: mostly cruising");
        assert!(s.iter().sum::<f64>() > 0.97, "{cc}: no other gains");
        // Each probe: UP (1.25) is followed by DOWN, then back to 1.0.
        let i = seq.iter().position(|&k| k == 0).expect("a probe");
        assert_eq!(&seq[i..i + 3], &[0, 1, 2], "{cc}: {seq:?}");
        // A probe for bandwidth every 2-3 s (bw_probe_base_us + rand; Reno bound 63 rounds).
        let probes = seq.iter().filter(|&&k| k == 0).count();
        assert!((2..=5).contains(&probes), "{cc}: {probes} probes in 10 s");
    }
}

/// Entries into PROBE_RTT (cwnd falling from above the BDP to below 0.7 BDP), with the cwnd.
fn probe_rtt_entries(out: &cclab_sim::RunOutput) -> Vec<(f64, f64)> {
    let f = &out.flows;
    (1..f.len())
        .filter(|&i| {
            f.cwnd_pkts[i - 1] as f64 > bdp_pkts() && (f.cwnd_pkts[i] as f64) < 0.7 * bdp_pkts()
        })
        .map(|i| (f.t_s[i], f.cwnd_pkts[i] as f64))
        .collect()
}

#[test]
fn probe_rtt_every_five_seconds_at_half_the_bdp() {
    let half = bdp_pkts() / 2.0;
    // v3: probe_rtt_min_us only refreshes on a strictly lower RTT, so PROBE_RTT comes every
    // probe_rtt_win_ms (5 s) plus the 200 ms and a round it lasts.
    let v3 = probe_rtt_entries(&run("bbr3", 500, 0.0, 22.0));
    eprintln!("bbr3: PROBE_RTT at {v3:?}");
    assert!(v3.len() >= 3, "{v3:?}");
    for (_, cwnd) in &v3 {
        assert!(
            (cwnd - half).abs() < 0.1 * half,
            "PROBE_RTT cwnd {cwnd} vs BDP/2 {half}"
        );
    }
    for w in v3.windows(2) {
        let gap = w[1].0 - w[0].0;
        assert!((4.9..6.5).contains(&gap), "PROBE_RTT gap {gap} s");
    }
    // v2alpha refreshes the 5 s filter on an RTT equal to the minimum too (`<=`): the first
    // PROBE_RTT comes 5 s in, at BDP/2; later ones only when no sample touches min_rtt for 5 s,
    // which on this jitter-free path, drained after each PROBE_RTT, does not happen.
    let v2 = probe_rtt_entries(&run("bbr2", 500, 0.0, 12.0));
    eprintln!("bbr2: PROBE_RTT at {v2:?}");
    assert!(!v2.is_empty());
    assert!((v2[0].0 - 5.0).abs() < 0.5, "{v2:?}");
    assert!((v2[0].1 - half).abs() < 0.1 * half, "{v2:?}");
}

#[test]
fn startup_pacing_gain_is_2_885_in_v2_and_2_77_in_v3() {
    for (cc, gain) in [("bbr2", 2.885), ("bbr3", 2.77)] {
        let out = run(cc, 500, 0.0, 1.2);
        let f = &out.flows;
        // At the end of STARTUP bw has reached the link rate: pacing = gain x bw less 1 %.
        let peak = f.pacing_rate_bps.iter().cloned().fold(0.0, f64::max) / (ceiling_bps() * 0.99);
        eprintln!("{cc}: STARTUP peak pacing gain {peak:.3}");
        assert!((peak / gain - 1.0).abs() < 0.02, "{cc}: {peak} vs {gain}");
    }
}

/// Time of the first finite ssthresh (set when STARTUP ends), s.
fn startup_exit_s(out: &cclab_sim::RunOutput) -> f64 {
    let f = &out.flows;
    let i = (0..f.len())
        .find(|&i| f.ssthresh_pkts[i] < 1_000_000)
        .expect("STARTUP ended");
    f.t_s[i]
}

#[test]
fn startup_ends_on_loss_above_two_percent_before_the_bw_plateau() {
    for cc in ["bbr2", "bbr3"] {
        let with_loss_exit = run(cc, 20, 0.0, 3.0);
        let plateau_only = run_with(cc, 20, 0.0, 3.0, &[("full_loss_cnt", 0)]);
        let (a, b) = (
            startup_exit_s(&with_loss_exit),
            startup_exit_s(&plateau_only),
        );
        let (da, db) = (
            with_loss_exit.link_stats[0]
                .counters
                .dropped_queue_full_pkts,
            plateau_only.link_stats[0].counters.dropped_queue_full_pkts,
        );
        eprintln!(
            "{cc}: STARTUP ends at {a:.2} s ({da} drops); plateau only {b:.2} s ({db} drops)"
        );
        // full_loss_cnt loss events in a recovery round at > 2 % loss end STARTUP rounds
        // before three rounds without 25 % growth would.
        assert!(a + 0.1 < b, "{cc}: {a} vs {b}");
        // (With the receiver's quick ACKs while its window opens, bbr2 drops 488 against 746.)
        assert!((da as f64) < 0.75 * db as f64, "{cc}: {da} vs {db} drops");
    }
}
