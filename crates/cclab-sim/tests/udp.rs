//! UDP constant-bit-rate flows (`transport = "udp"`): exact sending, the bottleneck's share,
//! one-way delay, and their place among TCP flows (the traces' flow index is the scenario's).

mod common;

use cclab_sim::udp::{UdpStats, UDP_IP_HEADER_BYTES};
use common::{Dumbbell, Flow};

fn udp_stats(out: &cclab_sim::RunOutput, i: usize) -> &UdpStats {
    out.flow_stats[i]
        .udp
        .as_ref()
        .expect("a UDP flow has udp stats")
}

#[test]
fn below_capacity_everything_arrives_after_the_path_delay() {
    // 5 Mbit/s of 1000-byte payloads over 10 Mbit/s, 40 ms RTT (20 ms one way), 10 s.
    let out = Dumbbell::new(10_000_000, 40.0)
        .duration_s(10.0)
        .flow(Flow::udp(5_000_000, 1000))
        .run();
    let u = udp_stats(&out, 0);
    // One datagram every 1.6 ms from t = 0 to 10 s inclusive (the run's last instant runs).
    assert_eq!(u.sent_pkts, 6251);
    assert_eq!(u.sent_bytes, 6_251_000);
    // Each arrives 20.82 ms after it leaves: those sent after 9.97918 s (k > 6236) arrive
    // after the run's end.
    assert_eq!(u.received_pkts, 6237);
    assert_eq!((u.lost_pkts, u.in_flight_pkts, u.loss), (0, 14, 0.0));
    assert_eq!(u.reordered_pkts, 0);
    // No queue: every datagram takes propagation + serialisation of 1028 bytes at 10 Mbit/s.
    let owd_ms = 20.0 + f64::from(1000 + UDP_IP_HEADER_BYTES) * 8.0 / 10e6 * 1e3;
    for v in [u.owd_min_ms, u.owd_p50_ms, u.owd_p99_ms, u.owd_max_ms] {
        let v = v.unwrap();
        assert!((v - owd_ms).abs() < 0.01 * owd_ms, "{v} vs {owd_ms}");
    }
    assert!((u.send_rate_bps - 5e6).abs() < 1.0);
    assert!((out.flow_stats[0].goodput_bps - u.receive_rate_bps).abs() < 1e-9);
    assert_eq!(out.flow_stats[0].retrans_pkts, 0);
}

#[test]
fn above_capacity_the_link_carries_its_rate_and_drops_the_rest() {
    // 20 Mbit/s offered into 10 Mbit/s with a 50-packet queue: the link sends 10 Mbit/s of
    // 1500-byte IP packets (1472 of payload each).
    let out = Dumbbell::new(10_000_000, 40.0)
        .queue_pkts(50)
        .duration_s(20.0)
        .flow(Flow::udp(20_000_000, 1472))
        .run();
    let u = udp_stats(&out, 0);
    let carried_bps = 10e6 * 1472.0 / 1500.0;
    assert!(
        (u.receive_rate_bps - carried_bps).abs() / carried_bps < 0.01,
        "{} vs {carried_bps}",
        u.receive_rate_bps
    );
    let expected_loss = 1.0 - carried_bps / 20e6;
    assert!((u.loss - expected_loss).abs() < 0.01, "loss {}", u.loss);
    // The drops are the bottleneck's, each an events row of this flow.
    let drops = out
        .link_stats
        .iter()
        .map(|l| l.counters.dropped_queue_full_pkts)
        .sum::<u64>();
    assert_eq!(drops, u.lost_pkts);
    assert_eq!(
        u.sent_pkts,
        u.received_pkts + u.lost_pkts + u.in_flight_pkts
    );
    let drop_rows = out.events.kind.iter().filter(|k| **k == "drop").count() as u64;
    assert_eq!(drop_rows, drops);
    // A full 50-packet queue ahead: about 50 x 1.2 ms of queueing on top of 21.2 ms.
    let p50 = u.owd_p50_ms.unwrap();
    assert!((p50 - (21.2 + 49.0 * 1.2)).abs() < 2.0, "p50 {p50}");
}

#[test]
fn tcp_takes_what_udp_leaves_and_trace_indices_follow_the_scenario() {
    // flows: [tcp, udp 4 Mbit/s, tcp] on 20 Mbit/s.
    let out = Dumbbell::new(20_000_000, 40.0)
        .queue_pkts(100)
        .duration_s(30.0)
        .flow(Flow::new("cubic"))
        .flow(Flow::udp(4_000_000, 1200).name("cbr"))
        .flow(Flow::new("cubic").start_s(1.0))
        .run();
    assert_eq!(out.flow_names, vec!["f0", "cbr", "f2"]);
    assert_eq!(out.flow_stats[1].flow, "cbr");
    assert!(out.flow_stats[0].udp.is_none() && out.flow_stats[2].udp.is_none());
    let u = udp_stats(&out, 1);
    assert!(u.loss < 0.02, "loss {}", u.loss);
    let tcp: f64 = out.flow_stats[0].goodput_bps + out.flow_stats[2].goodput_bps;
    assert!(tcp > 0.8 * (20e6 - 4e6) && tcp < 20e6 - 3.5e6, "tcp {tcp}");
    // The flows table has rows of the TCP flows only, under their scenario indices.
    let ids: std::collections::BTreeSet<i32> = out.flows.flow.iter().copied().collect();
    assert_eq!(ids.into_iter().collect::<Vec<_>>(), vec![0, 2]);
    // UDP drops are logged under index 1.
    for (k, f) in out.events.kind.iter().zip(&out.events.flow) {
        if *k == "drop" {
            assert!([0, 1, 2].contains(f));
        }
    }
    assert!(out.events.flow.contains(&2));
}

#[test]
fn a_sized_stream_completes_when_its_last_datagram_arrives() {
    let out = Dumbbell::new(10_000_000, 40.0)
        .duration_s(5.0)
        .flow(Flow::udp(1_000_000, 1000).size_bytes(100_500))
        .run();
    let u = udp_stats(&out, 0);
    assert_eq!(
        (u.sent_pkts, u.sent_bytes, u.received_bytes),
        (101, 100_500, 100_500)
    );
    // The 101st leaves at 0.8 s (8 ms apart) and takes 20 ms + 0.42 ms of serialisation.
    let done = out.flow_stats[0].completion_s.unwrap();
    assert!(
        (done - (0.8 + 0.020 + 528.0 * 8.0 / 10e6)).abs() < 1e-6,
        "{done}"
    );
    // Sent over 101 slots of 8 ms: 1 Mbit/s minus the short last datagram's share.
    assert!((u.send_rate_bps - 100_500.0 * 8.0 / 0.808).abs() < 1.0);
}

#[test]
fn bad_udp_fields_name_the_field() {
    let refuse = |v: serde_json::Value| {
        let sc: cclab_sim::Scenario = serde_json::from_value(v).expect("parses");
        sc.validate().expect_err("refused")
    };
    let bad = |flow: Flow| refuse(Dumbbell::new(10_000_000, 40.0).flow(flow).to_json());
    let e = bad(Flow::udp(0, 1000));
    assert_eq!(e.field, "flows[0].rate_bps");
    let e = bad(Flow::udp(1_000_000, 70_000));
    assert_eq!(e.field, "flows[0].payload_bytes");
    assert!(e.message.contains("65507"), "{}", e.message);
    let mut v = Dumbbell::new(10_000_000, 40.0)
        .flow(Flow::new("cubic"))
        .to_json();
    v["flows"][0]["rate_bps"] = serde_json::json!(1_000_000);
    let e = refuse(v);
    assert_eq!(e.field, "flows[0].rate_bps");
    assert!(e.message.contains("udp"), "{}", e.message);
}
