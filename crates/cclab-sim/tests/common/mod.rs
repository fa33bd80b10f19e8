//! Shared fixtures for scenario tests: build scenarios from JSON, read cycles from traces.
#![allow(dead_code)]

use cclab_sim::{run, RunOutput, Scenario};
use serde_json::{json, Value};

/// A one-flow dumbbell: `rate_bps` (None = unlimited), RTT split evenly, drop-tail queue.
pub fn dumbbell(cc: &str, rate_bps: Option<u64>, rtt_ms: f64, queue_pkts: u32, loss: f64, duration_s: f64) -> Value {
    let loss_model = if loss > 0.0 { json!({"kind": "bernoulli", "p": loss}) } else { json!({"kind": "none"}) };
    json!({
        "name": "test", "duration_s": duration_s, "seed": 1,
        "bottleneck": {
            "fwd": {"rate_bps": rate_bps, "delay_ms": rtt_ms / 2.0, "queue_pkts": queue_pkts, "loss_model": loss_model},
            "rev": {"rate_bps": rate_bps, "delay_ms": rtt_ms / 2.0, "queue_pkts": queue_pkts}
        },
        "flows": [{"name": "f0", "sender": "sender", "receiver": "receiver", "cc": cc}]
    })
}

/// Run a JSON scenario.
pub fn run_json(v: &Value) -> RunOutput {
    let sc: Scenario = serde_json::from_value(v.clone()).expect("scenario parses");
    run(&sc, None).expect("run succeeds")
}

/// One loss-driven CUBIC cycle read from a trace.
#[derive(Debug, Clone, Copy)]
pub struct Cycle {
    /// When recovery started (the reduction), s.
    pub t_reduce_s: f64,
    /// cwnd just before the reduction, packets.
    pub wmax: f64,
    /// cwnd when recovery ended (the cycle's minimum), packets.
    pub w_min: f64,
    /// First time cwnd reached `wmax` again, s.
    pub t_plateau_s: Option<f64>,
}

/// Find reductions (entries into Recovery from Open/Disorder) in flow 0's trace.
pub fn cycles(out: &RunOutput) -> Vec<Cycle> {
    let f = &out.flows;
    let mut res = Vec::new();
    let mut i = 1;
    while i < f.len() {
        if f.ca_state[i] == 3 && f.ca_state[i - 1] < 2 {
            let wmax = f.cwnd_pkts[i - 1] as f64;
            let t_reduce = f.t_s[i];
            // end of recovery
            let mut j = i;
            while j < f.len() && f.ca_state[j] >= 2 {
                j += 1;
            }
            if j >= f.len() {
                break;
            }
            if f.ca_state[i..j].iter().any(|&s| s == 4) {
                i = j;
                continue; // an RTO in between: not a clean cycle
            }
            let w_min = f.cwnd_pkts[j] as f64;
            let mut t_plateau = None;
            let mut k = j;
            while k < f.len() && f.ca_state[k] < 2 {
                if f.cwnd_pkts[k] as f64 >= wmax {
                    t_plateau = Some(f.t_s[k]);
                    break;
                }
                k += 1;
            }
            res.push(Cycle { t_reduce_s: t_reduce, wmax, w_min, t_plateau_s: t_plateau });
            i = j;
        } else {
            i += 1;
        }
    }
    res
}
