//! The three-way handshake through whole scenarios (`crate::tcp::handshake`): a lost SYN is
//! resent at the initial RTO (linear then doubling, as Linux 6.18), a lost SYN-ACK by the
//! listener, the handshake's RTT sample is the path's, Karn and the fallback RTO, a connection
//! never answered, and a flow without a handshake starts as before.
//!
//! Timers run on Linux's timer wheel (`cclab_sim::tcp::clock`): at HZ = 250 a 1 s timer armed
//! at jiffy j runs at the next multiple of 8 jiffies after j + 250 (`calc_index` at level 1), so
//! the SYN sent at 0 is resent at jiffy 256, 1.024 s.

mod common;
use cclab_net::loss::LossModel;
use common::*;

fn events<'a>(out: &'a cclab_sim::RunOutput, kind: &str) -> Vec<(f64, &'a str)> {
    out.events
        .kind
        .iter()
        .zip(&out.events.t_s)
        .zip(&out.events.detail)
        .filter(|((k, _), _)| **k == kind)
        .map(|((_, t), d)| (*t, d.as_str()))
        .collect()
}

fn times(out: &cclab_sim::RunOutput, kind: &str) -> Vec<f64> {
    events(out, kind).into_iter().map(|(t, _)| t).collect()
}

fn nth(pkts: &[u64]) -> LossModel {
    LossModel::Nth {
        pkts: pkts.to_vec(),
    }
}

/// 10 Mbit/s, RTT 50 ms: a 60-byte SYN or SYN-ACK takes 48 us on each hop.
fn path() -> Dumbbell {
    Dumbbell::new(10_000_000, 50.0).duration_s(20.0)
}

/// The sender's `established` detail.
fn sender_established(out: &cclab_sim::RunOutput) -> (f64, String) {
    let e = events(out, "established");
    let (t, d) = e
        .iter()
        .find(|(_, d)| d.starts_with("side=sender"))
        .expect("the sender is established");
    (*t, d.to_string())
}

/// The handshake's RTT on the idle path: 60-byte SYN and SYN-ACK with timestamps.
const SYN_RTT_S: f64 = 0.050 + 2.0 * 60.0 * 8.0 / 10e6;
/// Without timestamps they are 52 bytes (SACK-permitted on its own).
const SYN_RTT_NO_TS_S: f64 = 0.050 + 2.0 * 52.0 * 8.0 / 10e6;

#[test]
fn the_handshake_takes_one_rtt_and_its_sample_is_the_paths() {
    let out = path()
        .trace(TraceMode::Ack)
        .flow(Flow::new("cubic").size_bytes(200_000))
        .run();
    let (t, d) = sender_established(&out);
    assert!((t - SYN_RTT_S).abs() < 1e-9, "{t}");
    // The SYN's RTT sample: srtt = the path's, RTO = srtt + max(2 srtt, rto_min) = 250.096 ms,
    // in whole jiffies (HZ = 250): 252 ms.
    assert!(
        d.contains("srtt_ms=50.096 rto_ms=252.0 cwnd=10 syn_retrans=0"),
        "{d}"
    );
    let st = &out.flow_stats[0];
    assert_eq!(st.established_s, Some(t));
    // The first data follows the ACK at once: the first trace row is at establishment.
    assert_eq!(out.flows.t_s[0], t);
    assert!((out.flows.srtt_ms[0] - SYN_RTT_S * 1e3).abs() < 1e-3);
    // The receiver is established by the ACK, half an RTT later (plus a 52-byte ACK's time).
    let r = events(&out, "established");
    assert!(
        r.iter().any(|(_, d)| *d == "side=receiver via=ack"),
        "{r:?}"
    );
    // completion_s counts in run time: it includes the handshake.
    assert!(st.completion_s.unwrap() > t + 0.05, "{st:?}");
    // The same flow without a handshake starts at 0 with the same first sample.
    let old = path()
        .trace(TraceMode::Ack)
        .flow(Flow::new("cubic").size_bytes(200_000).handshake(false))
        .run();
    assert_eq!(old.flows.t_s[0], 0.0);
    assert_eq!(old.flows.srtt_ms[0], out.flows.srtt_ms[0]);
    assert_eq!(old.flow_stats[0].established_s, Some(0.0));
    assert!(times(&old, "syn").is_empty() && times(&old, "established").is_empty());
    // One handshake RTT apart, to within the data's own timing.
    let gap = st.completion_s.unwrap() - old.flow_stats[0].completion_s.unwrap();
    assert!((gap - SYN_RTT_S).abs() < 2e-3, "{gap}");
}

#[test]
fn a_lost_syn_is_resent_at_the_initial_rto_and_gives_no_sample_without_timestamps() {
    let out = path()
        .loss_model(nth(&[1]))
        .flow(Flow::new("cubic").size_bytes(100_000).timestamps(false))
        .run();
    assert_eq!(times(&out, "syn"), [0.0]);
    let drops = events(&out, "handshake_drop");
    assert_eq!(drops.len(), 1);
    assert!(drops[0].1.ends_with("reason=random seg=syn"), "{drops:?}");
    // rto_initial_ms = 1000: 250 jiffies from jiffy 0, run at the wheel's bucket, jiffy 256.
    assert_eq!(times(&out, "syn_retrans"), [1.024]);
    let (t, d) = sender_established(&out);
    assert!((t - 1.024 - SYN_RTT_NO_TS_S).abs() < 1e-9, "{t}");
    // Without the wheel the timer runs at its expiry jiffy, exactly 1 s.
    let exact = path()
        .timer_wheel(false)
        .loss_model(nth(&[1]))
        .flow(Flow::new("cubic").size_bytes(100_000).timestamps(false))
        .run();
    assert_eq!(times(&exact, "syn_retrans"), [1.0]);
    // Karn: no sample from a retransmitted SYN, and no timestamps: tcp_init_metrics' 3 s
    // TCP_TIMEOUT_FALLBACK; one SYN retransmission keeps the initial window.
    assert!(
        d.contains("srtt_ms=none rto_ms=3000.0 cwnd=10 syn_retrans=1"),
        "{d}"
    );
    let st = &out.flow_stats[0];
    assert_eq!(st.delivered_bytes, 100_000);
    assert!(st.completion_s.unwrap() > t);
}

#[test]
fn with_timestamps_the_retransmitted_syns_echo_gives_the_sample() {
    let out = path()
        .loss_model(nth(&[1]))
        .flow(Flow::new("cubic").size_bytes(100_000))
        .run();
    let (_, d) = sender_established(&out);
    // tcp_ack_update_rtt's RTTM rule: TSecr in ms, 50 ms here; RTO 50 + 200 ms, in jiffies.
    assert!(
        d.contains("srtt_ms=50.000 rto_ms=252.0 cwnd=10 syn_retrans=1"),
        "{d}"
    );
}

#[test]
fn syns_are_resent_four_times_a_second_then_backed_off_and_cwnd_drops_to_1() {
    let out = path()
        .duration_s(30.0)
        .loss_model(nth(&[1, 2, 3, 4, 5, 6]))
        .flow(Flow::new("cubic").size_bytes(100_000).timestamps(false))
        .run();
    // tcp_syn_linear_timeouts = 4: 1 s five times, then doubling: 2 s. On the wheel each 250
    // jiffies from jiffy 256k ends at 256k + 250 and runs at 256(k + 1); 500 jiffies from 1280
    // (level 1 still: under 504) end at 1780 and run at 1784.
    assert_eq!(
        times(&out, "syn_retrans"),
        [1.024, 2.048, 3.072, 4.096, 5.12, 7.136]
    );
    let (t, d) = sender_established(&out);
    assert!((t - 7.136 - SYN_RTT_NO_TS_S).abs() < 1e-9, "{t}");
    // tcp_init_transfer: more than one SYN retransmission (undo_marker set): cwnd 1.
    assert!(d.contains("rto_ms=3000.0 cwnd=1 syn_retrans=6"), "{d}");
    assert_eq!(out.flow_stats[0].delivered_bytes, 100_000);
}

#[test]
fn a_lost_synack_is_resent_by_the_listener() {
    // The SYN-ACK and the retransmitted SYN are lost: the listener's timer resends it.
    let out = path()
        .loss_model(nth(&[2]))
        .rev_loss_model(nth(&[1]))
        .flow(Flow::new("cubic").size_bytes(100_000))
        .run();
    let s = events(&out, "synack_retrans");
    assert_eq!(s.len(), 1, "{s:?}");
    // The SYN reached the listener at 25.048 ms (jiffy 6 at HZ = 250); its timer expires 250
    // jiffies later, at 256, and runs at the wheel's next bucket, 264 (1.056 s).
    assert!(
        (s[0].0 - 1.056).abs() < 1e-9 && s[0].1 == "n=1 via=timer",
        "{s:?}"
    );
    assert_eq!(times(&out, "syn_retrans"), [1.024]);
    let (t, d) = sender_established(&out);
    assert!((t - 1.056 - 0.025 - 48e-6).abs() < 1e-9, "{t}");
    // The SYN-ACK echoes the first SYN (req->ts_recent): the timeout was spurious, and the
    // RTT sample is from that echo (about a second: Linux takes it too).
    assert!(
        d.contains("srtt_ms=1081.000") && d.contains("cwnd=10"),
        "{d}"
    );
}

#[test]
fn a_lost_synack_and_the_resent_syn_both_draw_one() {
    // Only the SYN-ACK lost. Without the wheel the listener's timer resends it at 1.024 s and
    // the SYN the sender resent at 1 s reaches it at 1.025 s: a second SYN-ACK at once
    // (tcp_check_req).
    let out = path()
        .timer_wheel(false)
        .rev_loss_model(nth(&[1]))
        .flow(Flow::new("cubic").size_bytes(100_000))
        .run();
    let s = events(&out, "synack_retrans");
    assert_eq!(s.len(), 2, "{s:?}");
    assert_eq!((s[0].1, s[1].1), ("n=1 via=timer", "n=2 via=syn"));
    assert_eq!(times(&out, "syn_retrans"), [1.0]);
    assert_eq!(out.flow_stats[0].delivered_bytes, 100_000);
    // On the wheel the order turns: the resent SYN (1.024 s) reaches the listener at 1.049 s,
    // before its timer's bucket (1.056 s), and draws the SYN-ACK that completes the handshake.
    let out = path()
        .rev_loss_model(nth(&[1]))
        .flow(Flow::new("cubic").size_bytes(100_000))
        .run();
    let s = events(&out, "synack_retrans");
    assert_eq!(s.len(), 1, "{s:?}");
    assert_eq!(s[0].1, "n=1 via=syn");
    assert!((s[0].0 - 1.049048).abs() < 1e-6, "{s:?}");
    assert_eq!(out.flow_stats[0].delivered_bytes, 100_000);
}

#[test]
fn a_lost_ack_is_replaced_by_the_first_data_segment() {
    // Data-direction packets: 1 SYN, 2 ACK, 3 the first data segment.
    let out = path()
        .loss_model(nth(&[2]))
        .flow(Flow::new("cubic").size_bytes(100_000))
        .run();
    let r = events(&out, "established");
    assert!(
        r.iter().any(|(_, d)| *d == "side=receiver via=data"),
        "{r:?}"
    );
    assert!(times(&out, "synack_retrans").is_empty());
    assert_eq!(out.flow_stats[0].delivered_bytes, 100_000);
}

#[test]
fn a_syn_never_answered_fails_the_connection_at_131_s() {
    // At the expiry jiffies (no wheel): 1, 2, 3, 4, 5, 7, 11, 19, 35, 67 s, failed at 131 s.
    let out = path()
        .timer_wheel(false)
        .duration_s(140.0)
        .loss(1.0)
        .flow(Flow::new("cubic").size_bytes(100_000))
        .run();
    assert_eq!(times(&out, "syn_retrans").len(), 10);
    let f = events(&out, "connect_failed");
    assert_eq!(f, [(131.0, "side=sender syn_retrans=10")]);
    // On the wheel each timer runs at its bucket: 4 s and more land in level 2 (64 jiffies,
    // 256 ms) and 32 s in level 3 (512 jiffies, 2.048 s), so the failure comes at 135.168 s.
    let out = path()
        .duration_s(140.0)
        .loss(1.0)
        .flow(Flow::new("cubic").size_bytes(100_000))
        .run();
    let want = [
        1.024, 2.048, 3.072, 4.096, 5.12, 7.136, 11.264, 19.456, 35.584, 69.632,
    ];
    let got = times(&out, "syn_retrans");
    assert_eq!(got.len(), want.len(), "{got:?}");
    assert!(
        got.iter().zip(want).all(|(g, w)| (g - w).abs() < 1e-9),
        "{got:?}"
    );
    let f = events(&out, "connect_failed");
    assert_eq!(f, [(135.168, "side=sender syn_retrans=10")]);
    let st = &out.flow_stats[0];
    assert_eq!(
        (st.delivered_bytes, st.established_s, st.completion_s),
        (0, None, None)
    );
    assert_eq!(st.goodput_bps, 0.0);
    // Unanswered within the run: the same, without the failure.
    let out = path()
        .duration_s(3.0)
        .loss(1.0)
        .flow(Flow::new("cubic"))
        .run();
    assert_eq!(out.flow_stats[0].established_s, None);
    assert!(out.flows.t_s.is_empty());
}
