//! Shared fixtures for scenario tests: build dumbbell scenarios with [`Dumbbell`] and [`Flow`],
//! read cycles from traces.
//!
//! The builder writes the scenario's JSON (the normalised form `cclab` produces, with the
//! scenario file's field names) and reads it with serde, as every other front end does: any
//! field it does not set takes the scenario's own default, so it keeps building the same
//! scenario when the core adds optional fields.
//!
//! ```ignore
//! let out = Dumbbell::new(20_000_000, 60.0) // 20 Mbit/s each way, RTT 60 ms (30 ms each way)
//!     .queue_pkts(100)                      // drop-tail, both directions
//!     .loss(1e-2)                           // Bernoulli, data direction
//!     .duration_s(20.0)
//!     .trace(TraceMode::Ack)
//!     .flow(Flow::new("cubic").mss_bytes(1448))
//!     .run();
//! ```
#![allow(dead_code)]

use cclab_net::loss::LossModel;
pub use cclab_sim::config::TraceMode;
pub use cclab_sim::tcp::ecn::EcnMode;
use cclab_sim::{run, RunOutput, Scenario};
use serde_json::{json, Map, Value};

/// A dumbbell: the default hosts "sender" and "receiver" on ideal access links, joined by one
/// bottleneck whose two directions have the same rate, half the RTT of propagation delay each
/// and the same drop-tail limit. Random loss, outages, delay spikes and ECN marking are on the
/// data direction (sender to receiver) unless the method says `rev`.
///
/// Defaults: name "test", seed 1, duration 10 s, no queue limit, no loss, the core's trace
/// settings (cwnd changes, 10 ms links sampling), no flows.
#[derive(Debug, Clone)]
pub struct Dumbbell {
    name: String,
    duration_s: f64,
    seed: u64,
    trace: Option<TraceMode>,
    trace_interval_ms: Option<f64>,
    timer_wheel: Option<bool>,
    rate_bps: Option<u64>,
    rtt_ms: f64,
    queue_pkts: Option<u32>,
    loss_model: LossModel,
    rev_loss_model: Option<LossModel>,
    outages: Vec<(f64, f64)>,
    delay_spikes: Vec<(f64, f64, f64)>,
    ecn_threshold_pkts: Option<u32>,
    host: Option<Value>,
    flows: Vec<Flow>,
}

impl Dumbbell {
    /// A bottleneck of `rate_bps` each way with a round-trip propagation delay of `rtt_ms`
    /// (`rtt_ms / 2` each way).
    pub fn new(rate_bps: u64, rtt_ms: f64) -> Self {
        Self::with_rate(Some(rate_bps), rtt_ms)
    }

    /// A bottleneck with no rate limit (infinitely fast), only delay.
    pub fn unlimited(rtt_ms: f64) -> Self {
        Self::with_rate(None, rtt_ms)
    }

    fn with_rate(rate_bps: Option<u64>, rtt_ms: f64) -> Self {
        Dumbbell {
            name: "test".into(),
            duration_s: 10.0,
            seed: 1,
            trace: None,
            trace_interval_ms: None,
            timer_wheel: None,
            rate_bps,
            rtt_ms,
            queue_pkts: None,
            loss_model: LossModel::None,
            rev_loss_model: None,
            outages: Vec::new(),
            delay_spikes: Vec::new(),
            ecn_threshold_pkts: None,
            host: None,
            flows: Vec::new(),
        }
    }

    /// The scenario's name.
    pub fn name(mut self, name: &str) -> Self {
        self.name = name.into();
        self
    }

    /// Simulated time, s.
    pub fn duration_s(mut self, duration_s: f64) -> Self {
        self.duration_s = duration_s;
        self
    }

    /// Root of every random stream.
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// How flow state is traced (`sim.trace`).
    pub fn trace(mut self, mode: TraceMode) -> Self {
        self.trace = Some(mode);
        self
    }

    /// Sampling period of the links series and of `TraceMode::Interval` flows, ms
    /// (`sim.trace_interval_ms`).
    pub fn trace_interval_ms(mut self, ms: f64) -> Self {
        self.trace_interval_ms = Some(ms);
        self
    }

    /// TCP's timers on Linux's timer wheel (`sim.timer_wheel`, on by default) or at their
    /// expiry jiffy.
    pub fn timer_wheel(mut self, on: bool) -> Self {
        self.timer_wheel = Some(on);
        self
    }

    /// Drop-tail limit of both directions, packets.
    pub fn queue_pkts(mut self, pkts: u32) -> Self {
        self.queue_pkts = Some(pkts);
        self
    }

    /// Bernoulli loss with probability `p` on the data direction; 0 = no random loss.
    pub fn loss(self, p: f64) -> Self {
        let model = if p > 0.0 {
            LossModel::Bernoulli { p }
        } else {
            LossModel::None
        };
        self.loss_model(model)
    }

    /// Any random loss model on the data direction.
    pub fn loss_model(mut self, model: LossModel) -> Self {
        self.loss_model = model;
        self
    }

    /// A random loss model on the ACK direction (default: none).
    pub fn rev_loss_model(mut self, model: LossModel) -> Self {
        self.rev_loss_model = Some(model);
        self
    }

    /// The data direction serves nothing in [start_s, start_s + duration_s); repeatable.
    pub fn outage(mut self, start_s: f64, duration_s: f64) -> Self {
        self.outages.push((start_s, duration_s));
        self
    }

    /// Packets leaving the data direction in [start_s, start_s + duration_s) take
    /// `extra_delay_ms` longer; repeatable.
    pub fn delay_spike(mut self, start_s: f64, duration_s: f64, extra_delay_ms: f64) -> Self {
        self.delay_spikes
            .push((start_s, duration_s, extra_delay_ms));
        self
    }

    /// CE-mark ECT packets admitted to the data direction while its queue holds at least
    /// `k_pkts` packets.
    pub fn ecn_threshold_pkts(mut self, k_pkts: u32) -> Self {
        self.ecn_threshold_pkts = Some(k_pkts);
        self
    }

    /// Add a flow from "sender" to "receiver"; unnamed flows are named "f0", "f1", ... by
    /// their position.
    /// Every host's stack below TCP (the scenario's `[host]`, as JSON).
    pub fn host(mut self, host: Value) -> Self {
        self.host = Some(host);
        self
    }

    pub fn flow(mut self, flow: Flow) -> Self {
        self.flows.push(flow);
        self
    }

    /// The scenario as the core's JSON (fields left unset are absent and take their defaults).
    pub fn to_json(&self) -> Value {
        let loss = |m: &LossModel| serde_json::to_value(m).expect("loss model serialises");
        let mut fwd = json!({
            "rate_bps": self.rate_bps,
            "delay_ms": self.rtt_ms / 2.0,
            "loss_model": loss(&self.loss_model),
        });
        let mut rev = json!({"rate_bps": self.rate_bps, "delay_ms": self.rtt_ms / 2.0});
        if let Some(q) = self.queue_pkts {
            fwd["queue_pkts"] = json!(q);
            rev["queue_pkts"] = json!(q);
        }
        if let Some(m) = &self.rev_loss_model {
            rev["loss_model"] = loss(m);
        }
        if !self.outages.is_empty() {
            fwd["outages"] = self
                .outages
                .iter()
                .map(|&(start_s, duration_s)| json!({"start_s": start_s, "duration_s": duration_s}))
                .collect();
        }
        if !self.delay_spikes.is_empty() {
            fwd["delay_spikes"] = self
                .delay_spikes
                .iter()
                .map(|&(start_s, duration_s, extra_delay_ms)| {
                    json!({"start_s": start_s, "duration_s": duration_s,
                           "extra_delay_ms": extra_delay_ms})
                })
                .collect();
        }
        if let Some(k) = self.ecn_threshold_pkts {
            fwd["ecn_threshold_pkts"] = json!(k);
        }
        let mut v = json!({
            "name": self.name, "duration_s": self.duration_s, "seed": self.seed,
            "bottleneck": {"fwd": fwd, "rev": rev},
            "flows": self
                .flows
                .iter()
                .enumerate()
                .map(|(i, f)| f.to_json(i))
                .collect::<Vec<_>>(),
        });
        if let Some(mode) = self.trace {
            v["sim"]["trace"] = serde_json::to_value(mode).expect("trace mode serialises");
        }
        if let Some(on) = self.timer_wheel {
            v["sim"]["timer_wheel"] = json!(on);
        }
        if let Some(ms) = self.trace_interval_ms {
            v["sim"]["trace_interval_ms"] = json!(ms);
        }
        if let Some(h) = &self.host {
            v["host"] = h.clone();
        }
        v
    }

    /// The scenario, parsed and validated; panics with the field at fault.
    pub fn build(&self) -> Scenario {
        let sc: Scenario = serde_json::from_value(self.to_json()).expect("scenario parses");
        if let Err(e) = sc.validate() {
            panic!("invalid test scenario: {e}");
        }
        sc
    }

    /// Build and run the scenario; panics if the run fails.
    pub fn run(&self) -> RunOutput {
        run(&self.build(), None).expect("run succeeds")
    }
}

/// One bulk TCP flow from "sender" to "receiver" starting at 0 s; every setting not given
/// takes the scenario's default (docs/scenario.md: MSS 1448, SACK, timestamps, F-RTO, TLP on,
/// ECN off, ...).
#[derive(Debug, Clone)]
pub struct Flow {
    fields: Map<String, Value>,
}

impl Flow {
    /// A flow run by congestion control `cc` (a registered name, e.g. "cubic").
    pub fn new(cc: &str) -> Self {
        let mut fields = Map::new();
        fields.insert("cc".into(), json!(cc));
        Flow { fields }
    }

    /// A UDP constant-bit-rate flow of `payload_bytes` datagrams at `rate_bps`.
    pub fn udp(rate_bps: u64, payload_bytes: u32) -> Self {
        let mut fields = Map::new();
        fields.insert("cc".into(), json!("cubic"));
        fields.insert("transport".into(), json!("udp"));
        fields.insert("rate_bps".into(), json!(rate_bps));
        fields.insert("payload_bytes".into(), json!(payload_bytes));
        Flow { fields }
    }

    fn set(mut self, key: &str, value: Value) -> Self {
        self.fields.insert(key.into(), value);
        self
    }

    /// The flow's name (default "f<index>").
    pub fn name(self, name: &str) -> Self {
        self.set("name", json!(name))
    }

    /// Start time, s.
    pub fn start_s(self, start_s: f64) -> Self {
        self.set("start_s", json!(start_s))
    }

    /// Bytes to transfer (0 = bulk, the default).
    pub fn size_bytes(self, bytes: u64) -> Self {
        self.set("size_bytes", json!(bytes))
    }

    /// Maximum segment size, bytes.
    pub fn mss_bytes(self, mss: u32) -> Self {
        self.set("mss_bytes", json!(mss))
    }

    /// Cap on cwnd, packets (0 = none).
    pub fn max_cwnd_pkts(self, pkts: u32) -> Self {
        self.set("max_cwnd_pkts", json!(pkts))
    }

    /// SACK on or off.
    pub fn sack(self, on: bool) -> Self {
        self.set("sack", json!(on))
    }

    /// TCP timestamps on or off.
    pub fn timestamps(self, on: bool) -> Self {
        self.set("timestamps", json!(on))
    }

    /// F-RTO on or off.
    pub fn frto(self, on: bool) -> Self {
        self.set("frto", json!(on))
    }

    /// Connections one after another (`workload`, a JSON table as in a scenario file).
    pub fn workload(self, w: Value) -> Self {
        self.set("workload", w)
    }

    /// Any other flow field, as the scenario's JSON has it (e.g. `sto_response`).
    pub fn field(self, key: &str, value: impl Into<Value>) -> Self {
        self.set(key, value.into())
    }

    /// Tail loss probes on or off.
    pub fn tlp(self, on: bool) -> Self {
        self.set("tlp", json!(on))
    }

    /// The three-way handshake as packets (default: on).
    pub fn handshake(self, on: bool) -> Self {
        self.set("handshake", json!(on))
    }

    /// ECN at both ends.
    pub fn ecn(self, mode: EcnMode) -> Self {
        self.set(
            "ecn",
            serde_json::to_value(mode).expect("ECN mode serialises"),
        )
    }

    /// One congestion-control tunable (`cc_params.<name>`): a bool, an integer or a real.
    pub fn param(mut self, name: &str, value: impl Into<Value>) -> Self {
        let params = self.fields.entry("cc_params").or_insert_with(|| json!({}));
        params[name] = value.into();
        self
    }

    fn to_json(&self, index: usize) -> Value {
        let mut v = json!({
            "name": format!("f{index}"),
            "sender": "sender",
            "receiver": "receiver",
        });
        for (k, x) in &self.fields {
            v[k] = x.clone();
        }
        v
    }
}

/// (t, cwnd, ssthresh) at each ECN reduction, from the "cwr" events' details.
pub fn cwr_events(out: &RunOutput) -> Vec<(f64, u32, u32)> {
    let ev = &out.events;
    (0..ev.t_s.len())
        .filter(|&i| ev.kind[i] == "cwr")
        .map(|i| {
            let field = |name: &str| -> u32 {
                let d = &ev.detail[i];
                let at = d.find(&format!("{name}=")).expect("field in detail") + name.len() + 1;
                d[at..].split(' ').next().unwrap().parse().unwrap()
            };
            (ev.t_s[i], field("cwnd"), field("ssthresh"))
        })
        .collect()
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
