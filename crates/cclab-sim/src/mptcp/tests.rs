//! Multipath TCP connections run through the simulator: the data level delivers every byte once
//! and in order, the scheduler, reinjection, the connection's window, a one-path connection
//! against TCP, determinism. The scenarios: `snd` and `rcv` joined through routers `ne<i>`, one
//! per path, each path two links with its own rate, one-way delay (split over the two links),
//! loss and outage on its first link.

use serde_json::{json, Value};

use crate::{run, RunOutput, Scenario};

/// One path: rate, round-trip time, random loss on the data direction, an outage (start, length).
#[derive(Clone, Copy)]
pub(super) struct PathSpec {
    pub(super) rate_bps: u64,
    pub(super) rtt_ms: f64,
    pub(super) loss: f64,
    pub(super) outage: Option<(f64, f64)>,
}

pub(super) fn path(rate_bps: u64, rtt_ms: f64) -> PathSpec {
    PathSpec {
        rate_bps,
        rtt_ms,
        loss: 0.0,
        outage: None,
    }
}

fn dir(rate_bps: Option<u64>, delay_ms: f64, loss: f64, outage: Option<(f64, f64)>) -> Value {
    json!({
        "rate_bps": rate_bps,
        "delay_ms": delay_ms,
        "queue_pkts": 200,
        "loss_model": if loss > 0.0 { json!({"kind": "bernoulli", "p": loss}) } else { json!({"kind": "none"}) },
        "outages": outage.map_or(vec![], |(s, d)| vec![json!({"start_s": s, "duration_s": d})]),
    })
}

/// A scenario of `paths` and `flows` (each a JSON flow object; `paths` filled for mptcp ones).
pub(super) fn scenario(
    paths: &[PathSpec],
    flows: Vec<Value>,
    duration_s: f64,
    seed: u64,
) -> Scenario {
    let mut nodes = vec![json!({"name": "snd"}), json!({"name": "rcv"})];
    let mut links = Vec::new();
    for (i, p) in paths.iter().enumerate() {
        let ne = format!("ne{}", i + 1);
        nodes.push(json!({"name": ne, "kind": "router"}));
        let d = p.rtt_ms / 4.0;
        links.push(json!({
            "name": format!("a{}", i + 1), "endpoints": ["snd", ne],
            "fwd": dir(Some(p.rate_bps), d, p.loss, p.outage), "rev": dir(Some(p.rate_bps), d, 0.0, None),
        }));
        links.push(json!({
            "name": format!("b{}", i + 1), "endpoints": [ne, "rcv"],
            "fwd": dir(None, d, 0.0, None), "rev": dir(None, d, 0.0, None),
        }));
    }
    let sc = json!({
        "name": "mptcp-test", "duration_s": duration_s, "seed": seed,
        "nodes": nodes, "links": links, "flows": flows,
    });
    Scenario::from_json(&sc.to_string()).expect("a valid scenario")
}

/// An MPTCP flow over the first `n` paths.
pub(super) fn mptcp(n: usize, extra: Value) -> Value {
    let paths: Vec<Value> = (1..=n)
        .map(|i| json!(["snd", format!("ne{i}"), "rcv"]))
        .collect();
    let mut f = json!({"name": "mp", "sender": "snd", "receiver": "rcv", "transport": "mptcp",
                       "cc": "cubic", "paths": paths});
    merge(&mut f, extra);
    f
}

fn merge(f: &mut Value, extra: Value) {
    if let (Some(o), Value::Object(e)) = (f.as_object_mut(), extra) {
        o.extend(e);
    }
}

pub(super) fn go(sc: &Scenario) -> RunOutput {
    run(sc, None).expect("the run")
}

#[test]
fn a_sized_transfer_under_loss_arrives_whole_once_and_in_order() {
    // Either stack (v0.9x's, the default, and upstream's: `tests_linux.rs`).
    for stack in ["v0.9x", "linux"] {
        sized_transfer_under_loss(stack);
    }
}

fn sized_transfer_under_loss(stack: &str) {
    let size = 3_000_000u64;
    let mut lossy = [path(20_000_000, 40.0), path(10_000_000, 80.0)];
    lossy[0].loss = 0.01;
    lossy[1].loss = 0.02;
    let out = go(&scenario(
        &lossy,
        vec![mptcp(
            2,
            json!({"size_bytes": size, "cc": "reno", "mptcp_stack": stack}),
        )],
        30.0,
        3,
    ));
    let st = &out.flow_stats[0];
    assert_eq!(
        st.delivered_bytes, size,
        "every byte, in order, at the data level"
    );
    assert!(st.completion_s.is_some());
    assert!(st.retrans_pkts > 0, "the loss was repaired");
    let subs = st.subflows.as_ref().expect("subflows listed");
    assert_eq!(subs.len(), 2);
    assert!(
        subs.iter().all(|s| s.delivered_bytes > 0),
        "both paths carried data"
    );
    // Subflow bytes add up to the data: nothing mapped twice without a reinjection.
    let carried: u64 = subs.iter().map(|s| s.delivered_bytes).sum();
    assert!(carried >= size && subs.iter().all(|s| s.reinjected_pkts == 0) == (carried == size));
}

#[test]
fn the_connection_window_limits_data_in_flight_and_the_data_ack_opens_it() {
    // 2 x 50 Mbit/s, 100 ms: unlimited, the transfer would run at ~100 Mbit/s. A 64 KB
    // connection window allows ~5.2 Mbit/s whatever the subflows' windows; it completes only if
    // the DATA_ACKs (carried on both subflows' ACKs, with 1 % loss) keep moving it.
    let rwnd = 65_536u64;
    let mut p = [path(50_000_000, 100.0), path(50_000_000, 100.0)];
    p[0].loss = 0.01;
    let out = go(&scenario(
        &p,
        vec![mptcp(
            2,
            json!({"size_bytes": 2_000_000, "rwnd_bytes": rwnd}),
        )],
        30.0,
        1,
    ));
    let st = &out.flow_stats[0];
    assert_eq!(st.delivered_bytes, 2_000_000);
    let cap_bps = rwnd as f64 * 8.0 / 0.1;
    assert!(
        st.goodput_bps < 1.05 * cap_bps,
        "goodput {} above the window's {cap_bps}",
        st.goodput_bps
    );
    assert!(st.goodput_bps > 0.3 * cap_bps, "goodput {}", st.goodput_bps);
}

#[test]
fn the_scheduler_prefers_the_lower_rtt_subflow_when_both_have_room() {
    // A 32 KB connection window keeps both subflows below their cwnd: every decision finds
    // both available and takes the 20 ms one.
    let out = go(&scenario(
        &[path(50_000_000, 20.0), path(50_000_000, 120.0)],
        vec![mptcp(2, json!({"rwnd_bytes": 32_768}))],
        10.0,
        1,
    ));
    let subs = out.flow_stats[0].subflows.clone().unwrap();
    assert!(
        subs[0].delivered_bytes > 20 * subs[1].delivered_bytes.max(1),
        "fast {} slow {}",
        subs[0].delivered_bytes,
        subs[1].delivered_bytes
    );
}

#[test]
fn a_dead_path_s_data_is_reinjected_and_the_transfer_completes_on_the_other() {
    // Path 2 goes dark at 2 s for good (an outage past the run's end holds its packets).
    let mut p = [path(10_000_000, 60.0), path(10_000_000, 60.0)];
    p[1].outage = Some((2.0, 100.0));
    let size = 8_000_000u64;
    let out = go(&scenario(
        &p,
        vec![mptcp(2, json!({"size_bytes": size}))],
        30.0,
        1,
    ));
    let st = &out.flow_stats[0];
    assert_eq!(st.delivered_bytes, size);
    assert!(st.completion_s.is_some_and(|c| c < 30.0));
    let subs = st.subflows.as_ref().unwrap();
    assert!(subs[1].rto_count > 0);
    assert!(
        subs[0].reinjected_pkts > 0,
        "subflow 0 carried subflow 1's data"
    );
    let reinjects = out.events.kind.iter().filter(|k| **k == "reinject").count();
    assert!(reinjects > 0);
    // The sender events of a subflow name it.
    let rto_detail = out
        .events
        .kind
        .iter()
        .zip(&out.events.detail)
        .find(|(k, _)| **k == "rto")
        .map(|(_, d)| d.clone())
        .unwrap();
    assert!(rto_detail.ends_with("subflow=1"), "{rto_detail}");
}

#[test]
fn a_one_path_connection_goes_as_fast_as_tcp_on_that_path() {
    let p = [path(20_000_000, 50.0)];
    let mp = go(&scenario(&p, vec![mptcp(1, json!({}))], 20.0, 1));
    let tcp = go(&scenario(
        &p,
        vec![
            json!({"name": "tcp", "sender": "snd", "receiver": "rcv", "cc": "cubic",
                     "path": ["snd", "ne1", "rcv"]}),
        ],
        20.0,
        1,
    ));
    let (a, b) = (mp.flow_stats[0].goodput_bps, tcp.flow_stats[0].goodput_bps);
    assert!((a / b - 1.0).abs() < 0.03, "mptcp {a} tcp {b}");
}

#[test]
fn subflows_join_after_the_first_is_established_and_are_traced_apart() {
    let out = go(&scenario(
        &[path(20_000_000, 40.0), path(20_000_000, 80.0)],
        vec![mptcp(2, json!({"start_s": 1.0}))],
        3.0,
        1,
    ));
    let tr = &out.flows;
    let first = |k: u8| {
        (0..tr.len())
            .find(|&i| tr.subflow[i] == k)
            .map(|i| tr.t_s[i])
            .unwrap()
    };
    // Subflow 0's MP_CAPABLE handshake takes 40 ms of propagation plus the SYN's and SYN-ACK's
    // serialisation; the receiver's path manager announces subflow 1's address, which reaches
    // the sender one round trip of subflow 0 after its establishment (`pm_join_delay_ns`);
    // subflow 1's MP_JOIN handshake then takes its 80 ms path's round trip, and it carries data
    // (is traced) from the fourth ACK, one more round trip on. Subflow 0 is traced from its
    // establishment.
    let established = |k: u8| {
        let want = format!("subflow={k}");
        (0..out.events.kind.len())
            .find(|&i| {
                out.events.kind[i] == "established"
                    && out.events.detail[i].starts_with("side=sender")
                    && out.events.detail[i].ends_with(&want)
            })
            .map(|i| out.events.t_s[i])
            .unwrap()
    };
    let (e0, e1) = (established(0), established(1));
    assert!((0.040..0.041).contains(&(e0 - 1.0)), "{e0}");
    assert!((0.120..0.1215).contains(&(e1 - e0)), "{e0} {e1}");
    assert_eq!(first(0), e0);
    assert!(
        (0.080..0.081).contains(&(first(1) - e1)),
        "{e1} {}",
        first(1)
    );
    assert!(tr.flow.iter().all(|&f| f == 0));
    // Without the handshake: subflow 0 at the start, subflow 1 where the handshake would have
    // it join (one round trip of subflow 0, then two of its own).
    let out = go(&scenario(
        &[path(20_000_000, 40.0), path(20_000_000, 80.0)],
        vec![mptcp(2, json!({"start_s": 1.0, "handshake": false}))],
        3.0,
        1,
    ));
    let tr = &out.flows;
    let first = |k: u8| {
        (0..tr.len())
            .find(|&i| tr.subflow[i] == k)
            .map(|i| tr.t_s[i])
            .unwrap()
    };
    assert!((first(0) - 1.0).abs() < 1e-9);
    let join = first(1) - 1.0;
    assert!((0.200..0.2015).contains(&join), "{join}");
}

#[test]
fn the_same_seed_gives_the_same_run() {
    for stack in ["v0.9x", "linux"] {
        same_seed_same_run(stack);
    }
}

fn same_seed_same_run(stack: &str) {
    let mut p = [path(20_000_000, 40.0), path(10_000_000, 70.0)];
    p[0].loss = 0.005;
    let sc = scenario(
        &p,
        vec![
            mptcp(2, json!({"mptcp_stack": stack})),
            mptcp(
                2,
                json!({"name": "mp2", "start_s": 0.5, "cc": "reno", "mptcp_stack": stack}),
            ),
        ],
        8.0,
        7,
    );
    let (a, b) = (go(&sc), go(&sc));
    assert_eq!(a.flows.t_s, b.flows.t_s);
    assert_eq!(a.flows.cwnd_pkts, b.flows.cwnd_pkts);
    assert_eq!(a.flows.subflow, b.flows.subflow);
    assert_eq!(a.events.detail, b.events.detail);
    assert_eq!(a.events_processed, b.events_processed);
    let g = |o: &RunOutput| {
        o.flow_stats
            .iter()
            .map(|s| s.goodput_bps)
            .collect::<Vec<_>>()
    };
    assert_eq!(g(&a), g(&b));
}
