//! TCP over an 802.11 DCF cell (`kind = "dcf"` media): N terminals upload through an access
//! point to a server behind a wired link. The cell's port queue is each terminal's interface
//! queue (TSQ completions when the MAC is done with a frame, local drops when it is full), and
//! the access point's queue holds the ACKs of every terminal.

use cclab_sim::config::Scenario;
use cclab_sim::{run, RunOutput};
use serde_json::{json, Value};

/// N terminals `t1..tN` on cell `cell` with router `ap`; `ap` -- `srv` over `wan` (one-way
/// `wan_delay_ms`, 1 Gbit/s); one CUBIC upload per terminal. `cell` holds the DcfSpec fields.
fn wlan(n: usize, cell: Value, wan_delay_ms: f64, duration_s: f64) -> Scenario {
    wlan_with(n, cell, wan_delay_ms, duration_s, Value::Null, "change")
}

/// [`wlan`] with the S1 middleware (`Null`: none) and a trace mode.
fn wlan_with(
    n: usize,
    cell: Value,
    wan_delay_ms: f64,
    duration_s: f64,
    middleware: Value,
    trace: &str,
) -> Scenario {
    let terminals: Vec<String> = (1..=n).map(|i| format!("t{i}")).collect();
    let mut nodes: Vec<Value> = terminals
        .iter()
        .map(|t| json!({"name": t, "kind": "host"}))
        .collect();
    nodes.push(json!({"name": "ap", "kind": "router"}));
    nodes.push(json!({"name": "srv", "kind": "host"}));
    let mut on_cell = terminals.clone();
    on_cell.push("ap".into());
    let dir = json!({"rate_bps": 1_000_000_000u64, "delay_ms": wan_delay_ms, "queue_pkts": 100000});
    let flows: Vec<Value> = terminals
        .iter()
        .enumerate()
        .map(|(i, t)| json!({"name": format!("flow{i}"), "sender": t, "receiver": "srv", "cc": "cubic"}))
        .collect();
    let mut v = json!({
        "name": "wlan", "duration_s": duration_s, "seed": 1, "sim": {"trace": trace},
        "nodes": nodes,
        "links": [{"name": "wan", "endpoints": ["ap", "srv"], "fwd": dir, "rev": dir}],
        "media": [{"name": "cell", "kind": "dcf", "nodes": on_cell, "spec": cell}],
        "flows": flows,
    });
    if !middleware.is_null() {
        v["middleware"] = middleware;
    }
    let sc: Scenario = serde_json::from_value(v).expect("scenario parses");
    sc.validate().expect("valid scenario");
    sc
}

fn total_goodput_bps(out: &RunOutput) -> f64 {
    out.flow_stats.iter().map(|f| f.goodput_bps).sum()
}

fn lane<'a>(out: &'a RunOutput, name: &str) -> &'a cclab_net::LinkStats {
    &out.link_stats
        .iter()
        .find(|l| l.link == name)
        .unwrap_or_else(|| panic!("no lane {name}"))
        .counters
}

#[test]
fn one_terminal_fills_the_cell_and_its_queue_is_the_interface_queue() {
    let out = run(&wlan(1, json!({"queue_pkts": 100}), 5.0, 20.0), None).unwrap();
    // 802.11g, 1500-byte packets, one sender: DIFS 28 + mean backoff 7.5 x 9 + DATA 254 +
    // SIFS 10 + Ack 28 (at 24 Mbit/s) = 387.5 us per data frame, and a 52-66 byte TCP ACK
    // from the AP per one or two data frames takes ~ 28 + 67.5 + 30 + 10 + 28 = 164 us. So
    // TCP goodput (1448 of 1500 bytes) sits between 1 frame per 387.5 + 164 us (21.0 Mbit/s)
    // and per 387.5 + 82 us (24.7 Mbit/s).
    let g = total_goodput_bps(&out);
    assert!((20.5e6..25.0e6).contains(&g), "goodput {g}");
    // The terminal's port queue is its interface queue: TSQ keeps it short (Linux's floor of
    // two 64 KB skbs' truesize is ~ 90 packets: never a full 100-packet queue), so nothing is
    // refused and TCP never sees a loss.
    let t1 = lane(&out, "cell.t1");
    assert_eq!(t1.dropped_queue_full_pkts, 0);
    assert_eq!(out.flow_stats[0].retrans_pkts, 0);
    assert!(out.flows.below_tcp_bytes.iter().any(|&b| b > 0));
}

#[test]
fn the_access_point_queue_fills_with_acks_as_terminals_are_added() {
    let out = run(
        &wlan(6, json!({"queue_pkts": 100, "queue_pkts_by_port": [null, null, null, null, null, null, 50]}), 256.0, 60.0),
        None,
    )
    .unwrap();
    let ap = lane(&out, "cell.ap");
    // The AP holds only ACKs (the uploads' data goes the other way) and drops many of them:
    // it gets one turn in N+1 at best while six terminals each send.
    let offered = ap.enqueued_pkts + ap.dropped_queue_full_pkts;
    let dropped = ap.dropped_queue_full_pkts as f64 / offered as f64;
    assert!(dropped > 0.2, "AP ACK drop ratio {dropped}");
    // Yet the cell stays busy: ACK loss is cumulative ACKs' business, and the total stays
    // near one terminal's.
    let g = total_goodput_bps(&out);
    assert!(g > 18e6, "total goodput {g}");
    for f in &out.flow_stats {
        assert!(f.goodput_bps > 1.5e6, "{}: {}", f.flow, f.goodput_bps);
    }
}

#[test]
fn a_frame_dropped_at_the_retry_limit_frees_its_skb() {
    // 3 % of attempts lost and one attempt per frame: 3 % of the data frames are
    // dropped by the MAC. Each drop must complete its skb for TSQ (else sk_wmem_alloc would
    // only grow and TSQ would stop the flow for good).
    let cell = json!({"queue_pkts": 100, "retry_limit": 1, "frame_error_rates": [0.03, 0.0]});
    let out = run(&wlan(1, cell, 5.0, 20.0), None).unwrap();
    let t1 = lane(&out, "cell.t1");
    assert!(t1.dropped_retry_pkts > 200, "{}", t1.dropped_retry_pkts);
    // Still sending in the last seconds.
    let last = out
        .flows
        .t_s
        .iter()
        .zip(&out.flows.delivered_bytes)
        .filter(|(t, _)| **t > 15.0)
        .map(|(_, &d)| d);
    let (lo, hi) = (last.clone().min().unwrap(), last.max().unwrap());
    assert!(hi > lo, "no progress after 15 s");
    // And the bytes below TCP come back to nothing in the idle gaps of recovery, never
    // pile up: at most the TSQ limit plus one skb.
    let max_below = out.flows.below_tcp_bytes.iter().max().copied().unwrap_or(0);
    assert!(max_below < 300_000, "below TCP peaked at {max_below}");
}

#[test]
fn the_summary_carries_each_stations_mac_counters() {
    let out = run(&wlan(3, json!({"queue_pkts": 50}), 20.0, 5.0), None).unwrap();
    let mut successes = 0;
    let mut delivered = 0;
    for l in &out.link_stats {
        // Medium ports have a station's counters; the wired link's directions have none.
        let Some(cclab_net::MacStats::Dcf {
            stats: m,
            mean_rate_bps,
        }) = l.mac
        else {
            assert!(l.mac.is_none() && l.link.starts_with("wan."), "{}", l.link);
            continue;
        };
        assert!(l.link.starts_with("cell."), "{}", l.link);
        // The lane's retry drops are the station's; each attempt collides, errs or succeeds
        // (one may be on the air at the end).
        assert_eq!(m.retry_drops, l.counters.dropped_retry_pkts);
        let settled = m.collisions + m.frame_errors + m.successes;
        assert!(settled <= m.attempts && m.attempts <= settled + 1, "{m:?}");
        successes += m.successes;
        delivered += l.counters.delivered_pkts;
        let v = serde_json::to_value(l).unwrap();
        assert_eq!(v["mac"]["kind"], "dcf");
        assert_eq!(v["mac"]["attempts"], m.attempts);
        assert_eq!(
            v["mac"]["collision_prob"].as_f64().unwrap(),
            m.collisions as f64 / m.attempts as f64
        );
        assert!(v.get("link").is_some() && v.get("enqueued_pkts").is_some());
        // No rate adaptation: every unicast attempt at 802.11g's 54 Mbit/s.
        assert_eq!(mean_rate_bps, Some(54e6));
        assert_eq!(v["mac"]["mean_rate_bps"], 54e6);
    }
    // Every acknowledged frame was delivered at its destination's lane (the last ones of
    // each station may be delivered and not yet acknowledged at the end).
    assert!(
        successes <= delivered && delivered <= successes + 4,
        "{successes} {delivered}"
    );
    // Four saturated contenders (three uploads, the AP's ACKs) collide.
    let collisions: u64 = out
        .link_stats
        .iter()
        .filter_map(|l| l.mac.map(|m| m.collisions()))
        .sum();
    assert!(collisions > 0);
    let wan = out.link_stats.iter().find(|l| l.link == "wan.fwd").unwrap();
    assert!(serde_json::to_value(wan).unwrap().get("mac").is_none());
}

#[test]
fn same_seed_same_run() {
    let sc = wlan(3, json!({"queue_pkts": 50}), 20.0, 5.0);
    let a = run(&sc, None).unwrap();
    let b = run(&sc, None).unwrap();
    assert_eq!(a.flows.cwnd_pkts, b.flows.cwnd_pkts);
    assert_eq!(a.events_processed, b.events_processed);
}

/// The `middleware` events: (t_s, flow, field -> value).
fn middleware_steps(
    out: &RunOutput,
) -> Vec<(f64, usize, std::collections::HashMap<String, String>)> {
    let e = &out.events;
    (0..e.kind.len())
        .filter(|&i| e.kind[i] == "middleware")
        .map(|i| {
            let kv = e.detail[i]
                .split(' ')
                .filter_map(|p| p.split_once('='))
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            (e.t_s[i], e.flow[i] as usize, kv)
        })
        .collect()
}

#[test]
fn the_middleware_counts_the_terminals_by_broadcast_within_one_interval() {
    // Five terminals, each broadcasting every 0.5 s from its own phase in [0, 0.5 s). On an
    // idle cell (the uploads start at 3 s) every step from 1 s on (one interval after the last
    // terminal's first broadcast) counts all five.
    let mw = json!({"table": "improved"});
    let mut sc = wlan_with(5, json!({"queue_pkts": 100}), 20.0, 10.0, mw, "change");
    for f in &mut sc.flows {
        f.start_s = 3.0;
    }
    let out = run(&sc, None).unwrap();
    let steps = middleware_steps(&out);
    assert!(steps.len() >= 5 * 19, "{} steps", steps.len());
    for (t, f, kv) in steps.iter().filter(|s| (1.0..3.0).contains(&s.0)) {
        assert_eq!(kv["n"], "5", "flow {f} at {t} s counted {}", kv["n"]);
    }
    // Under load a station's datagram waits behind its data, and the AP's relay behind the ACKs
    // in its queue, where many are dropped (the queue is full of ACKs): counts fall short of
    // five, never above. (What the paper's daemon would have met in its collapse.)
    let loaded: Vec<u32> = steps
        .iter()
        .filter(|s| s.0 >= 4.0)
        .map(|s| s.2["n"].parse().unwrap())
        .collect();
    let five = loaded.iter().filter(|&&n| n == 5).count();
    assert!(loaded.iter().all(|&n| (1..=5).contains(&n)));
    assert!(
        five < loaded.len(),
        "the relay never lost a datagram under load"
    );
    // The broadcasts took airtime: frames on the stations' lanes beside the data.
    let frames: u64 = (1..=5)
        .map(|i| lane(&out, &format!("cell.t{i}")).enqueued_pkts)
        .sum();
    let data: u64 = out.flow_stats.iter().map(|f| f.sent_pkts).sum();
    assert!(
        frames >= data + 5 * 19,
        "{frames} frames for {data} data segments"
    );
}

#[test]
fn the_middleware_keeps_cwnd_within_its_range_after_each_step() {
    let mw = json!({"table": "before"});
    let out = run(
        &wlan_with(4, json!({"queue_pkts": 100}), 50.0, 20.0, mw, "ack"),
        None,
    )
    .unwrap();
    let steps = middleware_steps(&out);
    let (mut checked, mut outside) = (0usize, Vec::new());
    for (k, (t0, f, kv)) in steps.iter().enumerate() {
        let (Ok(lo), Ok(hi)) = (kv["lower"].parse::<u32>(), kv["upper"].parse::<u32>()) else {
            continue;
        };
        let t1 = steps[k + 1..]
            .iter()
            .find(|s| s.1 == *f)
            .map_or(f64::INFINITY, |s| s.0);
        let tr = &out.flows;
        // Rows of this flow after the step's first ACK, until its next step.
        let rows: Vec<usize> = (0..tr.t_s.len())
            .filter(|&i| tr.flow[i] as usize == *f && tr.t_s[i] > *t0 && tr.t_s[i] < t1)
            .skip(1)
            .collect();
        for i in rows {
            checked += 1;
            let w = tr.cwnd_pkts[i];
            if w < lo.min(hi) || w > hi {
                outside.push((tr.t_s[i], *f, w, lo, hi));
            }
        }
    }
    assert!(checked > 10_000, "{checked} samples");
    assert!(
        outside.is_empty(),
        "{} of {checked} outside: {:?}",
        outside.len(),
        &outside[..outside.len().min(5)]
    );
}
