//! Multipath TCP as upstream Linux 6.18 runs it (`mptcp_stack = "linux"`): the same guarantees
//! as v0.9x's (every byte once and in order, and determinism, in `tests.rs`; reinjection here),
//! and what differs: each subflow holds data it has not sent yet in its own send buffer, the
//! application fills the connection's buffer to 2/3, and a subflow's receiver sends its
//! every-second-segment ACK when the application reads. Scenarios from `tests.rs`.

use serde_json::json;

use super::tests::{go, mptcp, path, scenario};
use crate::RunOutput;

fn linux(extra: serde_json::Value) -> serde_json::Value {
    let mut f = json!({"mptcp_stack": "linux"});
    if let (Some(o), serde_json::Value::Object(e)) = (f.as_object_mut(), extra) {
        o.extend(e);
    }
    f
}

#[test]
fn a_dead_path_s_data_is_reinjected_and_the_transfer_completes_on_the_other() {
    let size = 4_000_000u64;
    let mut p = [path(20_000_000, 40.0), path(20_000_000, 40.0)];
    p[1].outage = Some((0.5, 1000.0));
    let out = go(&scenario(
        &p,
        vec![mptcp(2, linux(json!({"size_bytes": size})))],
        30.0,
        1,
    ));
    let st = &out.flow_stats[0];
    assert_eq!(st.delivered_bytes, size);
    assert!(st.completion_s.is_some(), "completed on the live path");
    let subs = st.subflows.as_ref().unwrap();
    assert!(
        subs[0].reinjected_pkts > 0,
        "the dead path's data went again on the live one"
    );
}

/// Per subflow of flow 0 after `from_s`: (mean wmem_queued over mean bytes in flight, mean
/// segments acknowledged per ACK) from a per-ACK trace.
fn held_and_per_ack(out: &RunOutput, k: u8, from_s: f64, mss: f64) -> (f64, f64) {
    let f = &out.flows;
    let rows: Vec<usize> = (0..f.len())
        .filter(|&i| f.flow[i] == 0 && f.subflow[i] == k && f.t_s[i] >= from_s)
        .collect();
    let wmem: f64 = rows.iter().map(|&i| f.wmem_queued_bytes[i]).sum::<f64>();
    let flight: f64 = rows
        .iter()
        .map(|&i| f.inflight_pkts[i] as f64 * mss)
        .sum::<f64>();
    let acked = f.delivered_bytes[*rows.last().unwrap()] - f.delivered_bytes[rows[0]];
    (
        wmem / flight.max(1.0),
        acked as f64 / mss / (rows.len() - 1) as f64,
    )
}

#[test]
fn subflows_hold_unsent_data_and_acks_wait_for_the_application_s_read() {
    // Two paths, 20 and 100 ms: data given to both at once reaches the receiver out of order at
    // the data level. Per-ACK trace rows (one per ACK the sender takes).
    let p = [path(20_000_000, 20.0), path(20_000_000, 100.0)];
    let run = |stack: &str| {
        let mut sc = scenario(&p, vec![mptcp(2, json!({"mptcp_stack": stack}))], 10.0, 1);
        sc.sim.trace = crate::config::TraceMode::Ack;
        go(&sc)
    };
    let (v09x, up) = (run("v0.9x"), run("linux"));
    // v0.9x: a subflow has no send buffer (NaN); upstream's holds what it was given, well
    // beyond what is in flight.
    assert!(v09x.flows.wmem_queued_bytes.iter().all(|w| w.is_nan()));
    let (held, per_ack) = held_and_per_ack(&up, 0, 3.0, 1448.0);
    assert!(
        held > 1.5,
        "upstream's fast subflow holds {held:.2} x its flight"
    );
    // Its ACKs: v0.9x's receiver acks every second segment; upstream's when the application
    // reads, which is whenever data reaches the connection in order (here often: the slow
    // path delivers steadily), so hardly less often, never more.
    let (_, per_ack_v09x) = held_and_per_ack(&v09x, 0, 3.0, 1448.0);
    assert!(
        per_ack_v09x < 2.2,
        "v0.9x: {per_ack_v09x:.2} segments per ACK"
    );
    assert!(
        per_ack >= 0.98 * per_ack_v09x,
        "upstream: {per_ack:.2} segments per ACK"
    );
}

#[test]
fn the_application_keeps_the_connection_s_buffer_two_thirds_full() {
    // The connection's sk_sndbuf is tcp_wmem[0] plus its subflows'; the poll()-driven writer
    // keeps about 2/3 of it queued, so the subflows together hold about 2/3 of their buffers
    // (each alone could take all of its own).
    let p = [path(20_000_000, 40.0), path(20_000_000, 40.0)];
    let mut sc = scenario(&p, vec![mptcp(2, linux(json!({})))], 10.0, 1);
    sc.sim.trace = crate::config::TraceMode::Interval;
    let out = go(&sc);
    let f = &out.flows;
    let (mut held, mut buf) = (0.0, 0.0);
    for i in (0..f.len()).filter(|&i| f.t_s[i] >= 3.0) {
        held += f.wmem_queued_bytes[i];
        buf += f.sndbuf_bytes[i];
    }
    let share = held / buf;
    assert!(
        (0.55..0.8).contains(&share),
        "the subflows hold {share:.2} of their buffers"
    );
}
