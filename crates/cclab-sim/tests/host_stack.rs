//! The stack below TCP (`tcp/tsq.rs`, `cclab_net::host`): the interface queue and NIC, TCP
//! Small Queues and local congestion.

mod common;

use cclab_sim::config::TraceMode;
use cclab_sim::tcp::tsq::truesize;
use common::{cwr_events, Dumbbell, Flow};
use serde_json::json;

/// Three CUBIC flows started 0.5 s apart from one host whose 50 Mbit/s NIC is the bottleneck
/// (the path beyond is 200 Mbit/s, RTT 50 ms).
fn three_apps(host: serde_json::Value) -> Dumbbell {
    let mut d = Dumbbell::new(200_000_000, 50.0)
        .duration_s(20.0)
        .trace(TraceMode::Ack)
        .host(host);
    for k in 0..3 {
        d = d.flow(Flow::new("cubic").start_s(0.5 * k as f64));
    }
    d
}

fn goodputs_mbps(out: &cclab_sim::RunOutput) -> Vec<f64> {
    out.flow_stats.iter().map(|s| s.goodput_bps / 1e6).collect()
}

/// Each flow's delivery rate from `t0_s` to the end (all flows running), Mbit/s.
fn shares_mbps(out: &cclab_sim::RunOutput, t0_s: f64) -> Vec<f64> {
    let tr = &out.flows;
    (0..out.flow_names.len() as i32)
        .map(|f| {
            let rows: Vec<usize> = (0..tr.t_s.len()).filter(|&i| tr.flow[i] == f).collect();
            let at = |t: f64| {
                rows.iter()
                    .rev()
                    .find(|&&i| tr.t_s[i] <= t)
                    .map_or(0, |&i| tr.delivered_bytes[i])
            };
            let end = out.sim_duration_s;
            (at(end) - at(t0_s)) as f64 * 8.0 / (end - t0_s) / 1e6
        })
        .collect()
}

#[test]
fn the_nic_is_the_bottleneck_and_tsq_keeps_its_queue_short() {
    let out = three_apps(json!({"device_rate_bps": 50_000_000})).run();
    let total: f64 = goodputs_mbps(&out).iter().sum();
    // Goodput is payload (1448 of 1500 wire bytes); the later flows are shorter.
    assert!(total > 44.0 && total < 50.0, "total {total:.1} Mbit/s");
    let dev = out
        .link_stats
        .iter()
        .find(|l| l.link == "sender.device")
        .expect("a device lane");
    assert_eq!(dev.counters.dropped_queue_full_pkts, 0);
    assert_eq!(out.paths[0].fwd[0], "sender.device");
    // Linux's limit is about 1 ms at the pacing rate: the device never holds more than a few
    // ms of packets although it may hold 1000.
    let lane = out
        .link_names
        .iter()
        .position(|n| n == "sender.device")
        .unwrap() as i32;
    let max_q = (0..out.links.t_s.len())
        .filter(|&i| out.links.link[i] == lane)
        .map(|i| out.links.queue_pkts[i])
        .max()
        .unwrap();
    assert!(max_q < 60, "device queue reached {max_q} packets");
}

#[test]
fn bytes_below_tcp_never_exceed_the_fixed_limit() {
    let limit = 131_072u64;
    let out = three_apps(json!({"device_rate_bps": 50_000_000, "tsq": "fixed",
                                "tsq_limit_bytes": limit}))
    .run();
    let below = &out.flows.below_tcp_bytes;
    let max = *below.iter().max().unwrap();
    // The check is made before each skb: at most one skb (at most sk_gso_max_size, 64 KiB)
    // beyond the limit.
    assert!(max <= limit + truesize(65_536), "{max} bytes below TCP");
    assert!(max > limit / 2, "the limit is reached ({max})");
}

#[test]
fn a_fixed_limit_shares_the_nic_equally_and_linux_s_does_not() {
    let fixed = shares_mbps(
        &three_apps(json!({"device_rate_bps": 50_000_000, "tsq": "fixed"})).run(),
        2.0,
    );
    // Once all three run: within 10 % of their mean. What is left is the skb beyond the limit:
    // tcp_tso_autosize sizes skbs by each flow's own pacing rate.
    let mean = fixed.iter().sum::<f64>() / 3.0;
    for g in &fixed {
        assert!((g / mean - 1.0).abs() < 0.10, "fixed limit: {fixed:?}");
    }
    let linux = shares_mbps(
        &three_apps(json!({"device_rate_bps": 50_000_000})).run(),
        2.0,
    );
    assert!(
        linux[0] > 1.3 * linux[2],
        "Linux's limit grows with the flow's rate: the first keeps more ({linux:?}, fixed {fixed:?})"
    );
}

/// Jain's fairness index of `x`.
fn jain(x: &[f64]) -> f64 {
    let s: f64 = x.iter().sum();
    s * s / (x.len() as f64 * x.iter().map(|v| v * v).sum::<f64>())
}

#[test]
fn the_adaptive_limit_shares_the_nic_equally_and_keeps_its_rate() {
    let host = |tsq: &str| json!({"device_rate_bps": 50_000_000, "tsq": tsq});
    let adaptive = shares_mbps(&three_apps(host("adaptive")).run(), 2.0);
    let linux = shares_mbps(&three_apps(host("linux")).run(), 2.0);
    assert!(jain(&adaptive) >= 0.99, "adaptive {adaptive:?}");
    assert!(
        jain(&linux) < 0.99,
        "Linux's limit is the unfair one here: {linux:?}"
    );
    let (a, l): (f64, f64) = (adaptive.iter().sum(), linux.iter().sum());
    assert!(
        a >= 0.99 * l,
        "total: adaptive {a:.2} vs Linux {l:.2} Mbit/s"
    );
}

#[test]
fn a_local_drop_enters_cwr_once_per_window_and_is_sent_again() {
    // No TSQ and a 20-packet interface queue: the queue overflows.
    let out = Dumbbell::new(200_000_000, 50.0)
        .duration_s(10.0)
        .host(json!({"device_rate_bps": 20_000_000, "device_queue_pkts": 20, "tsq": "off"}))
        .flow(Flow::new("cubic"))
        .run();
    let st = &out.flow_stats[0];
    assert!(st.local_drop_count >= 2, "{st:?}");
    // Nothing is lost: a locally dropped segment was never sent, and is sent later.
    assert_eq!((st.retrans_pkts, st.rto_count), (0, 0), "{st:?}");
    let cwr = cwr_events(&out);
    assert!(!cwr.is_empty() && cwr.len() as u64 <= st.local_drop_count);
    // At most one reduction per round trip (CWR lasts until what was sent is acked).
    for w in cwr.windows(2) {
        assert!(w[1].0 - w[0].0 >= 0.05, "CWR at {} then {}", w[0].0, w[1].0);
    }
    // The device counts them with its queue-full drops, and goodput fills the NIC.
    let dev = out
        .link_stats
        .iter()
        .find(|l| l.link == "sender.device")
        .unwrap();
    assert_eq!(dev.counters.dropped_queue_full_pkts, st.local_drop_count);
    assert!(st.goodput_bps > 15e6, "{:.1} Mbit/s", st.goodput_bps / 1e6);
}

#[test]
fn without_a_device_nothing_is_below_tcp() {
    let out = Dumbbell::new(20_000_000, 40.0)
        .duration_s(3.0)
        .host(json!({"tsq": "fixed", "tsq_limit_bytes": 3000}))
        .flow(Flow::new("cubic"))
        .run();
    assert!(out.flows.below_tcp_bytes.iter().all(|&b| b == 0));
    assert!(!out.link_names.iter().any(|n| n.contains("device")));
}

fn alone_on_the_nic_run(release: &str) -> cclab_sim::RunOutput {
    Dumbbell::new(200_000_000, 50.0)
        .duration_s(6.0)
        .trace(TraceMode::Ack)
        .host(json!({"device_rate_bps": 50_000_000, "device_release": release}))
        .flow(Flow::new("cubic"))
        .run()
}

/// The queue (packets) of trace lane `name` in the rows after 2 s.
fn queue_after_2s(out: &cclab_sim::RunOutput, name: &str) -> Vec<f64> {
    let lane = out.link_names.iter().position(|n| n == name).unwrap() as i32;
    let lk = &out.links;
    (0..lk.t_s.len())
        .filter(|&i| lk.link[i] == lane && lk.t_s[i] > 2.0)
        .map(|i| f64::from(lk.queue_pkts[i]))
        .collect()
}

/// One CUBIC flow alone on a 50 Mbit/s NIC with `device_release` `release`: the mean of the
/// device's queue (packets, trace rows after 2 s) and of the flow's bytes below TCP.
fn alone_on_the_nic(release: &str) -> (f64, f64) {
    let out = alone_on_the_nic_run(release);
    let q = queue_after_2s(&out, "sender.device");
    let fl = &out.flows;
    let b: Vec<f64> = (0..fl.t_s.len())
        .filter(|&i| fl.t_s[i] > 2.0)
        .map(|i| fl.below_tcp_bytes[i] as f64)
        .collect();
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
    (mean(&q), mean(&b))
}

#[test]
fn releasing_at_start_leaves_the_skb_in_service_uncounted() {
    // With "start" the device takes a whole skb and frees it at once: what the socket counts
    // below TCP is what waits in the device queue, no more and no less (payload, plus 832
    // bytes per skb of at most a few segments). With "end" the skb in service stays counted
    // and queued until each segment is sent.
    for release in ["end", "start"] {
        let (q, b) = alone_on_the_nic(release);
        let got = format!("{release}: queue {q:.1} pkts, {b:.0} B below TCP");
        assert!(b >= q * 1448.0, "{got}");
        assert!(b <= q * (1448.0 + 832.0 / 2.0), "{got}");
    }
}

#[test]
fn a_device_that_releases_at_start_hands_over_whole_skbs() {
    // The link after the NIC runs at four times its rate: segments sent one by one at 50 Mbit/s
    // never queue there; the kernel backend's htb + TUN hands it each skb's segments at once
    // (skbs of 2-3 segments here), so they do.
    let after = |release: &str| {
        let out = alone_on_the_nic_run(release);
        let name = out
            .link_names
            .iter()
            .find(|n| n.ends_with(".fwd"))
            .unwrap()
            .clone();
        queue_after_2s(&out, &name).into_iter().fold(0.0, f64::max)
    };
    let (end, start) = (after("end"), after("start"));
    assert!(
        end <= 1.0,
        "one at a time: at most the one in transmission, got {end}"
    );
    assert!(
        start >= 2.0,
        "whole skbs: got at most {start} packets queued"
    );
}
