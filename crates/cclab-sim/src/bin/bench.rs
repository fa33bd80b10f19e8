//! `cclab-bench`: the core's benchmark. Runs a scenario JSON (default: the S0 25 ms path with
//! per-ACK tracing) and prints wall time, events per second and peak memory (VmHWM).
//!
//! Usage: cclab-bench [SCENARIO.json] [--cc NAME] [--all-cc] [--window-scaling]
//!
//! `--all-cc` runs the scenario once per registered algorithm (presets excluded) and prints
//! each one's wall time relative to Reno's, over the whole run and per delivered MB (on the
//! default path Reno is loss-limited to about 34 Mbit/s while BBR fills the 64 Mbit/s link,
//! so BBR simulates 1.7 times the packets in the same 100 s).

use cclab_sim::{simulate_json, Scenario};
use std::time::Instant;

const DEFAULT: &str = r#"{
  "name": "bench-s0-25ms", "duration_s": 100.0, "seed": 1,
  "sim": {"trace": "ack"},
  "bottleneck": {
    "fwd": {"rate_bps": 64000000, "delay_ms": 12.5, "queue_pkts": 1000,
            "loss_model": {"kind": "bernoulli", "p": 0.0001}},
    "rev": {"rate_bps": 64000000, "delay_ms": 12.5, "queue_pkts": 1000}
  },
  "flows": [{"name": "cubic", "sender": "sender", "receiver": "receiver", "cc": "cubic",
             "mss_bytes": 948, "max_cwnd_pkts": 200}]
}"#;

/// `--window-scaling`: the work per packet as the window grows (issue 18: it must not grow
/// with it). Two families: a huge initial window into a 50-packet queue at 1 Gbit/s for 1 s
/// (most of it dropped and resent), and a bulk CUBIC flow over a 100 ms path whose queue is
/// nine bandwidth-delay products, at 100 Mbit/s to 4 Gbit/s (windows of 10^3 to 10^5). No send
/// buffer (`host.sndbuf = "unlimited"`): Linux's 4 MiB `tcp_wmem[2]` would cap every flight
/// at about 2800 segments.
fn window_scaling() {
    println!(
        "{:<30} {:>8} {:>10} {:>11} {:>9} {:>9}",
        "case", "wall_s", "events", "sent_pkts", "ns_event", "ns_pkt"
    );
    let initial = |w: u32| {
        format!(
            r#"{{"name": "iw", "duration_s": 1.0, "host": {{"sndbuf": "unlimited"}},
  "bottleneck": {{"fwd": {{"rate_bps": 1000000000, "delay_ms": 5, "queue_pkts": 50}},
                  "rev": {{"rate_bps": 1000000000, "delay_ms": 5, "queue_pkts": 50}}}},
  "flows": [{{"name": "f", "sender": "sender", "receiver": "receiver", "cc": "cubic",
             "initial_cwnd_pkts": {w}}}]}}"#
        )
    };
    let bdp = |mbps: u64| {
        format!(
            r#"{{"name": "bdp", "duration_s": 10.0, "host": {{"sndbuf": "unlimited"}},
  "bottleneck": {{"fwd": {{"rate_bps": {}, "delay_ms": 50, "queue_pkts": {}}},
                  "rev": {{"rate_bps": {}, "delay_ms": 50, "queue_pkts": {}}}}},
  "flows": [{{"name": "f", "sender": "sender", "receiver": "receiver", "cc": "cubic"}}]}}"#,
            mbps * 1_000_000,
            mbps * 9,
            mbps * 1_000_000,
            mbps * 9
        )
    };
    let cases = [10_000u32, 100_000, 1_000_000]
        .map(|w| (format!("initial_cwnd_pkts={w}"), initial(w)))
        .into_iter()
        .chain([100u64, 1000, 4000].map(|m| (format!("bulk {m} Mbit/s, 100 ms"), bdp(m))));
    for (name, json) in cases {
        let t0 = Instant::now();
        match simulate_json(&json, None) {
            Ok(out) => {
                let wall = t0.elapsed().as_secs_f64();
                let sent: u64 = out.flow_stats.iter().map(|f| f.sent_pkts).sum();
                println!(
                    "{name:<30} {wall:>8.3} {:>10} {sent:>11} {:>9.0} {:>9.0}",
                    out.events_processed,
                    wall * 1e9 / out.events_processed as f64,
                    wall * 1e9 / sent.max(1) as f64
                );
            }
            Err(e) => println!("{name:<30} failed: {e}"),
        }
    }
}

fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// The scenario with every flow's algorithm replaced by `cc`.
fn with_cc(json: &str, cc: &str) -> String {
    let mut sc: Scenario = serde_json::from_str(json).expect("scenario JSON");
    for f in &mut sc.flows {
        f.cc = cc.to_string();
    }
    serde_json::to_string(&sc).expect("serialise")
}

/// One algorithm's best run: wall time, events, delivered bytes.
struct Best {
    wall_s: f64,
    events: u64,
    delivered_bytes: u64,
}

/// Best of three wall times of `json`.
fn best_wall(json: &str) -> Result<Best, cclab_sim::SimError> {
    let mut best = Best {
        wall_s: f64::INFINITY,
        events: 0,
        delivered_bytes: 0,
    };
    for _ in 0..3 {
        let t0 = Instant::now();
        let out = simulate_json(json, None)?;
        let w = t0.elapsed().as_secs_f64();
        if w < best.wall_s {
            best = Best {
                wall_s: w,
                events: out.events_processed,
                delivered_bytes: out.flow_stats.iter().map(|f| f.delivered_bytes).sum(),
            };
        }
    }
    Ok(best)
}

/// Wall time per delivered MB, seconds (algorithms that deliver more do more work).
fn per_mb(b: &Best) -> f64 {
    b.wall_s / (b.delivered_bytes.max(1) as f64 / 1e6)
}

fn all_cc(json: &str) {
    let names: Vec<&str> = cclab_sim::cc::algorithms()
        .iter()
        .filter(|a| a.base == a.name)
        .map(|a| a.name)
        .collect();
    let reno = best_wall(&with_cc(json, "reno")).ok();
    let (reno_wall, reno_mb) = reno
        .as_ref()
        .map_or((f64::NAN, f64::NAN), |r| (r.wall_s, per_mb(r)));
    println!(
        "{:<12} {:>8} {:>10} {:>9} {:>12} {:>9}",
        "cc", "wall_s", "events", "vs_reno", "wall_us_MB", "vs_reno"
    );
    for name in names {
        match best_wall(&with_cc(json, name)) {
            Ok(b) => println!(
                "{name:<12} {:>8.3} {:>10} {:>8.2}x {:>12.1} {:>8.2}x",
                b.wall_s,
                b.events,
                b.wall_s / reno_wall,
                per_mb(&b) * 1e6,
                per_mb(&b) / reno_mb
            ),
            Err(e) => println!("{name:<12} failed: {e}"),
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut json = DEFAULT.to_string();
    let mut cc: Option<String> = None;
    let mut i = 0;
    while i < args.len() {
        if args[i] == "--window-scaling" {
            window_scaling();
            return;
        }
        if args[i] == "--all-cc" {
            all_cc(&json);
            return;
        }
        if args[i] == "--cc" {
            cc = args.get(i + 1).cloned();
            i += 2;
            continue;
        }
        json = std::fs::read_to_string(&args[i]).unwrap_or_else(|e| {
            eprintln!("cclab-bench: cannot read {}: {e}", args[i]);
            std::process::exit(2)
        });
        i += 1;
    }
    if let Some(cc) = cc {
        json = with_cc(&json, &cc);
    }
    let t0 = Instant::now();
    let out = match simulate_json(&json, None) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("cclab-bench: {e}");
            std::process::exit(2)
        }
    };
    let wall = t0.elapsed().as_secs_f64();
    let delivered: u64 = out.flow_stats.iter().map(|f| f.delivered_bytes).sum();
    println!("wall_s={wall:.3}");
    println!("events={}", out.events_processed);
    println!("events_per_s={:.0}", out.events_processed as f64 / wall);
    println!("flow_rows={}", out.flows.len());
    println!("delivered_bytes={delivered}");
    for f in &out.flow_stats {
        println!(
            "flow={} goodput_mbps={:.3} retrans={} rto={}",
            f.flow,
            f.goodput_bps / 1e6,
            f.retrans_pkts,
            f.rto_count
        );
    }
    if let Some(kib) = peak_rss_kib() {
        println!("peak_rss_mib={:.1}", kib as f64 / 1024.0);
    }
}
