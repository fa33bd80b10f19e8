//! Loss recovery behaviour through whole scenarios: fast retransmit with PRR, RTO backoff,
//! spurious timeouts detected by F-RTO and undone.

mod common;
use common::*;

/// Details of the `undo` events.
fn undo_details(out: &cclab_sim::RunOutput) -> Vec<&str> {
    out.events
        .kind
        .iter()
        .zip(&out.events.detail)
        .filter(|(k, _)| **k == "undo")
        .map(|(_, d)| d.as_str())
        .collect()
}

fn event_times(out: &cclab_sim::RunOutput, kind: &str) -> Vec<f64> {
    out.events
        .kind
        .iter()
        .zip(&out.events.t_s)
        .filter(|(k, _)| **k == kind)
        .map(|(_, t)| *t)
        .collect()
}

/// Random losses on a path whose queue never overflows (the window cap is below the BDP, as in
/// the S0 setups) are all repaired by fast retransmit, never by RTO, and each recovery ends with
/// cwnd = ssthresh = half the window (Reno, PRR).
#[test]
fn sparse_losses_recover_without_timeouts() {
    let out = Dumbbell::new(100_000_000, 50.0)
        .queue_pkts(1000)
        .loss(2e-4)
        .duration_s(60.0)
        .trace(TraceMode::Ack)
        .flow(Flow::new("reno").max_cwnd_pkts(300))
        .run();
    let st = &out.flow_stats[0];
    assert!(st.fast_retransmit_count >= 3, "{st:?}");
    assert_eq!(st.rto_count, 0, "{st:?}");
    for c in cycles(&out) {
        let ratio = c.w_min / c.wmax;
        assert!((ratio - 0.5).abs() < 0.05, "Reno halves: {c:?}");
    }
}

/// During a long outage the RTO fires repeatedly with exponential backoff (each timeout twice
/// the previous; each interval that timeout, made late by at most the timer wheel's
/// granularity at its level, 1/8 of it), then the flow resumes.
#[test]
fn rto_backs_off_exponentially_during_an_outage() {
    let out = Dumbbell::new(10_000_000, 100.0)
        .queue_pkts(1000)
        .duration_s(70.0)
        .outage(5.0, 40.0)
        .flow(Flow::new("cubic"))
        .run();
    let rtos = event_times(&out, "rto");
    assert!(rtos.len() >= 4, "expected repeated RTOs, got {rtos:?}");
    let rto_s: Vec<f64> = (0..out.events.kind.len())
        .filter(|&i| out.events.kind[i] == "rto")
        .map(|i| {
            let d = &out.events.detail[i];
            let v = d
                .split_whitespace()
                .find_map(|kv| kv.strip_prefix("rto_ms="));
            v.expect("rto_ms").parse::<f64>().unwrap() / 1e3
        })
        .collect();
    for k in 0..rtos.len() - 1 {
        let (gap, next) = (rtos[k + 1] - rtos[k], 2.0 * rto_s[k]);
        assert!((rto_s[k + 1] - next).abs() < 1e-9, "backoff {rto_s:?}");
        assert!(
            gap >= next - 1e-6 && gap <= next * 1.15 + 0.004,
            "interval {gap:.3} s after a timeout of {next:.3} s ({rtos:?})"
        );
    }
    let st = &out.flow_stats[0];
    assert!(
        st.delivered_bytes > 10_000_000,
        "flow resumes after the outage: {st:?}"
    );
}

/// A delay spike longer than the RTO, with no loss, makes a spurious timeout. With timestamps,
/// Linux's Eifel-style check (`tcp_packet_delayed`: the ACK echoes a TSval older than the
/// retransmission) undoes it (TCPLossUndo, not TCPSpuriousRTOs); without timestamps F-RTO
/// (RFC 5682) does, with or without SACK, and only that counts in `spurious_rto_count`; with
/// neither it stays a go-back-N retransmission of the window. (With SACK, RACK re-run after the
/// undo leaves the delayed originals alone: 6.18's `tcp_rack_advance` takes RACK.rtt from the
/// originals acked after the retransmitted head, so the ones sent with them are not overdue.)
#[test]
fn spurious_timeouts_are_detected_by_eifel_or_frto() {
    let make = |frto: bool, ts: bool, sack: bool| {
        Dumbbell::new(2_000_000, 300.0)
            .queue_pkts(1000)
            .duration_s(30.0)
            .delay_spike(10.0, 0.01, 3000.0)
            .flow(
                Flow::new("reno")
                    .frto(frto)
                    .timestamps(ts)
                    .sack(sack)
                    // Below the 50-packet BDP: no queueing, so the RTO stays near srtt + rto_min.
                    .max_cwnd_pkts(40),
            )
            .run()
    };
    let eifel = make(true, true, true);
    let st = &eifel.flow_stats[0];
    assert!(st.rto_count >= 1, "the spike must cause a timeout: {st:?}");
    assert!(st.undo_count >= 1, "timestamps must undo it: {st:?}");
    assert_eq!(st.spurious_rto_count, 0, "not F-RTO's doing: {st:?}");
    let undos = undo_details(&eifel);
    assert!(
        undos.contains(&"detector=eifel via=loss state=Loss"),
        "{undos:?}"
    );

    let frto = make(true, false, false);
    let frto_sack = make(true, false, true);
    for run in [&frto, &frto_sack] {
        let st = &run.flow_stats[0];
        assert!(
            st.rto_count >= 1 && st.spurious_rto_count >= 1,
            "F-RTO must flag it: {st:?}"
        );
        let undos = undo_details(run);
        assert!(
            undos.contains(&"detector=frto via=loss state=Loss"),
            "{undos:?}"
        );
    }
    assert_eq!(
        frto_sack.flow_stats[0].retrans_pkts, frto.flow_stats[0].retrans_pkts,
        "with SACK too, no originals re-marked lost"
    );

    let plain = make(false, false, false);
    let st = &plain.flow_stats[0];
    assert!(st.rto_count >= 1, "{st:?}");
    assert_eq!(
        (st.spurious_rto_count, st.undo_count),
        (0, 0),
        "nothing can detect it: {st:?}"
    );
    assert!(
        frto.flow_stats[0].retrans_pkts < st.retrans_pkts,
        "F-RTO avoids the go-back-N retransmissions: {} vs {}",
        frto.flow_stats[0].retrans_pkts,
        st.retrans_pkts
    );
}

/// Short transfers (S3's 18 KB content) over a lossy path: tail losses are repaired by tail loss
/// probes instead of timeouts, so with TLP (Linux's default) there are far fewer RTOs.
#[test]
fn tail_loss_probes_replace_most_timeouts() {
    let run = |tlp: bool| {
        let (mut rtos, mut probes, mut done) = (0, 0, 0);
        for seed in 0..500u64 {
            let out = Dumbbell::new(10_000_000, 100.0)
                .queue_pkts(100)
                .loss(0.05)
                .duration_s(20.0)
                .seed(seed)
                .flow(Flow::new("cubic").size_bytes(18_000).tlp(tlp))
                .run();
            let st = &out.flow_stats[0];
            rtos += st.rto_count;
            probes += st.tlp_count;
            done += st.completion_s.is_some() as u32;
        }
        (rtos, probes, done)
    };
    let (rto_on, probes_on, done_on) = run(true);
    let (rto_off, probes_off, done_off) = run(false);
    eprintln!("TLP on: {rto_on} RTOs, {probes_on} probes; off: {rto_off} RTOs");
    assert_eq!((done_on, done_off), (500, 500));
    assert_eq!(probes_off, 0);
    assert!(probes_on > 0);
    assert!(
        rto_on * 2 < rto_off,
        "TLP should at least halve the timeouts: {rto_on} vs {rto_off}"
    );
}
