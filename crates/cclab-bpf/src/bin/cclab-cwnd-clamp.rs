//! `cclab-cwnd-clamp`: attach cclab's per-flow sock_ops program (cwnd cap, initial and minimum
//! RTO) to a cgroup and take commands on stdin.
//!
//! Prints `{"ready": true}` once attached; then reads one command per line:
//!   `set PORT CAP_PKTS`   cap sockets on PORT (remote, else local) at CAP_PKTS packets
//!   `remove PORT`         stop capping new sockets on PORT
//!   `rto PORT INITIAL_MS MIN_MS`  new sockets on PORT: initial RTO (needs --hz) and minimum
//!                         RTO (at most 200 ms); 0 leaves either to the kernel
//!   `status`              print {"caps": {"PORT": CAP, ...}, "applied": [CAP, ...],
//!                         "rtos": {"PORT": [INITIAL_JIFFIES, MIN_US]}, "rto_counts": {...}}
//! and answers each with one JSON line ({"ok": true} or {"error": "..."}). On end of input it
//! prints a last status line and detaches. Killing it also detaches (BPF link).

use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use cclab_bpf::{ms_to_jiffies, CwndClamp, RtoSetting};
use clap::Parser;
use serde_json::json;

#[derive(Parser)]
#[command(
    version,
    about = "Cap the congestion window and set the initial and minimum RTO of chosen TCP flows on the real kernel (BPF sock_ops)",
    after_help = "Example (root):\n  mkdir /sys/fs/cgroup/unified/cclab-demo\n  \
        cclab-cwnd-clamp --cgroup /sys/fs/cgroup/unified/cclab-demo --set 5201=20\n  \
        # then, in another shell: echo $$ > /sys/fs/cgroup/unified/cclab-demo/cgroup.procs; iperf3 -c HOST -p 5201\n\n\
        Commands on stdin: 'set PORT CAP_PKTS', 'remove PORT', 'rto PORT INITIAL_MS MIN_MS', 'status'."
)]
struct Args {
    /// cgroup v2 directory whose processes' sockets are capped.
    #[arg(long)]
    cgroup: PathBuf,
    /// Initial caps, PORT=CAP_PKTS (repeatable).
    #[arg(long = "set", value_name = "PORT=CAP_PKTS")]
    set: Vec<String>,
    /// RTO settings, PORT=INITIAL_MS,MIN_MS (repeatable; 0 leaves one to the kernel).
    #[arg(long = "rto", value_name = "PORT=INITIAL_MS,MIN_MS")]
    rto: Vec<String>,
    /// The kernel's HZ (CONFIG_HZ): initial RTOs are jiffies. Needed with an initial RTO.
    #[arg(long)]
    hz: Option<u32>,
}

fn parse_ms(s: &str, what: &str) -> Result<f64, String> {
    s.parse::<f64>()
        .ok()
        .filter(|v| v.is_finite() && *v >= 0.0)
        .ok_or_else(|| format!("{what} must be a number of ms >= 0, got {s:?}"))
}

fn rto_setting(initial: &str, min: &str, hz: Option<u32>) -> Result<RtoSetting, String> {
    let (initial_ms, min_ms) = (parse_ms(initial, "INITIAL_MS")?, parse_ms(min, "MIN_MS")?);
    let initial_jiffies = if initial_ms > 0.0 {
        ms_to_jiffies(
            initial_ms,
            hz.ok_or("an initial RTO needs --hz (the kernel's CONFIG_HZ)")?,
        )
    } else {
        0
    };
    Ok(RtoSetting {
        initial_jiffies,
        min_us: (min_ms * 1000.0).round() as u32,
    })
}

fn parse_port(s: &str) -> Result<u16, String> {
    s.parse()
        .map_err(|_| format!("port must be 0..=65535, got {s:?}"))
}

fn parse_cap(s: &str) -> Result<u64, String> {
    s.parse()
        .map_err(|_| format!("cap_pkts must be a positive integer, got {s:?}"))
}

fn status(c: &CwndClamp) -> serde_json::Value {
    let caps: serde_json::Map<String, serde_json::Value> = c
        .caps()
        .into_iter()
        .map(|(p, v)| (p.to_string(), json!(v)))
        .collect();
    let rtos: serde_json::Map<String, serde_json::Value> = c
        .rtos()
        .into_iter()
        .map(|(p, r)| (p.to_string(), json!([r.initial_jiffies, r.min_us])))
        .collect();
    let n = c.rto_counts();
    json!({"caps": caps, "applied": c.applied(), "rtos": rtos,
           "rto_counts": {"initial_replied": n.initial_replied, "min_set": n.min_set, "min_refused": n.min_refused}})
}

fn command(c: &mut CwndClamp, line: &str, hz: Option<u32>) -> Result<serde_json::Value, String> {
    let words: Vec<&str> = line.split_whitespace().collect();
    match words.as_slice() {
        ["set", port, cap] => {
            c.set(parse_port(port)?, parse_cap(cap)?).map_err(|e| e.to_string())?;
            Ok(json!({"ok": true}))
        }
        ["remove", port] => {
            c.remove(parse_port(port)?).map_err(|e| e.to_string())?;
            Ok(json!({"ok": true}))
        }
        ["rto", port, initial, min] => {
            c.set_rto(parse_port(port)?, rto_setting(initial, min, hz)?).map_err(|e| e.to_string())?;
            Ok(json!({"ok": true}))
        }
        ["status"] => Ok(status(c)),
        _ => Err(format!(
            "unknown command {line:?}: use 'set PORT CAP_PKTS', 'remove PORT', 'rto PORT INITIAL_MS MIN_MS' or 'status'"
        )),
    }
}

fn main() -> ExitCode {
    let args = Args::parse();
    let mut clamp = match CwndClamp::attach(&args.cgroup) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("cclab-cwnd-clamp: {e}");
            return ExitCode::from(2);
        }
    };
    for s in &args.set {
        let r = s
            .split_once('=')
            .ok_or_else(|| format!("--set takes PORT=CAP_PKTS, got {s:?}"))
            .and_then(|(p, v)| Ok((parse_port(p)?, parse_cap(v)?)))
            .and_then(|(p, v)| clamp.set(p, v).map_err(|e| e.to_string()));
        if let Err(e) = r {
            eprintln!("cclab-cwnd-clamp: {e}");
            return ExitCode::from(2);
        }
    }
    for s in &args.rto {
        let r = s
            .split_once('=')
            .and_then(|(p, v)| v.split_once(',').map(|(i, m)| (p, i, m)))
            .ok_or_else(|| format!("--rto takes PORT=INITIAL_MS,MIN_MS, got {s:?}"))
            .and_then(|(p, i, m)| Ok((parse_port(p)?, rto_setting(i, m, args.hz)?)))
            .and_then(|(p, r)| clamp.set_rto(p, r).map_err(|e| e.to_string()));
        if let Err(e) = r {
            eprintln!("cclab-cwnd-clamp: {e}");
            return ExitCode::from(2);
        }
    }
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{}", json!({"ready": true}));
    let _ = out.flush();
    for line in std::io::stdin().lock().lines() {
        let Ok(line) = line else { break };
        if line.trim().is_empty() {
            continue;
        }
        let reply = command(&mut clamp, &line, args.hz).unwrap_or_else(|e| json!({"error": e}));
        let _ = writeln!(out, "{reply}");
        let _ = out.flush();
    }
    let _ = writeln!(out, "{}", status(&clamp));
    ExitCode::SUCCESS
}
