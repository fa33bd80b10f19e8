//! Shared fixtures for scenario tests: build scenarios from JSON, read cycles from traces.
#![allow(dead_code)]

use cclab_sim::{run, RunOutput, Scenario};
use serde_json::{json, Value};

/// A one-flow dumbbell: `rate_bps` (None = unlimited), RTT split evenly, drop-tail queue.
pub fn dumbbell(
    cc: &str,
    rate_bps: Option<u64>,
    rtt_ms: f64,
    queue_pkts: u32,
    loss: f64,
    duration_s: f64,
) -> Value {
    let loss_model = if loss > 0.0 {
        json!({"kind": "bernoulli", "p": loss})
    } else {
        json!({"kind": "none"})
    };
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
            if f.ca_state[i..j].contains(&4) {
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
            res.push(Cycle {
                t_reduce_s: t_reduce,
                wmax,
                w_min,
                t_plateau_s: t_plateau,
            });
            i = j;
        } else {
            i += 1;
        }
    }
    res
}

/// Least-squares fit of W(t) = c (t - T)^3 + w0 to flow 0's congestion-avoidance samples after
/// `cy` (from the end of its recovery to the next reduction). Returns (c, T, w0): for each
/// candidate inflection time T on a 5 ms grid the model is linear in (c, w0).
pub fn fit_cubic(out: &RunOutput, cy: &Cycle) -> Option<(f64, f64, f64)> {
    let f = &out.flows;
    let start = f.t_s.iter().position(|&t| t > cy.t_reduce_s)?;
    let mut i = start;
    while i < f.len() && f.ca_state[i] >= 2 {
        i += 1;
    }
    let mut ts = Vec::new();
    let mut ws = Vec::new();
    while i < f.len() && f.ca_state[i] < 2 {
        ts.push(f.t_s[i]);
        ws.push(f.cwnd_pkts[i] as f64);
        i += 1;
    }
    if ts.len() < 50 {
        return None;
    }
    let (t_first, t_last) = (ts[0], *ts.last()?);
    // Sum of squared errors and (c, w0) for one candidate inflection time.
    let fit_at = |t_cand: f64| -> Option<(f64, f64, f64)> {
        let xs: Vec<f64> = ts.iter().map(|t| (t - t_cand).powi(3)).collect();
        let n = xs.len() as f64;
        let (mx, my) = (xs.iter().sum::<f64>() / n, ws.iter().sum::<f64>() / n);
        let sxx: f64 = xs.iter().map(|x| (x - mx) * (x - mx)).sum();
        let sxy: f64 = xs.iter().zip(&ws).map(|(x, y)| (x - mx) * (y - my)).sum();
        if sxx <= 0.0 {
            return None;
        }
        let c = sxy / sxx;
        let w0 = my - c * mx;
        let sse = xs
            .iter()
            .zip(&ws)
            .map(|(x, y)| (y - (c * x + w0)).powi(2))
            .sum();
        Some((c, w0, sse))
    };
    // Coarse grid (50 ms), then a 1 ms grid around the best point.
    let mut best: Option<(f64, f64, f64, f64)> = None;
    let scan = |lo: f64, hi: f64, step: f64, best: &mut Option<(f64, f64, f64, f64)>| {
        let mut t = lo;
        while t <= hi {
            if let Some((c, w0, sse)) = fit_at(t) {
                if best.is_none_or(|b| sse < b.3) {
                    *best = Some((c, t, w0, sse));
                }
            }
            t += step;
        }
    };
    scan(t_first, t_last + 5.0, 0.05, &mut best);
    let t0 = best?.1;
    scan(t0 - 0.05, t0 + 0.05, 0.001, &mut best);
    best.map(|(c, t, w0, _)| (c, t, w0))
}
