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
//!
//! With `--sto-log PATH` it keeps the program's timeout log (every socket's ISN, RTOs,
//! snd_ssthresh changes and recoveries; see the BPF program's header) and writes it at the
//! end, before the last status line, as JSON lines: {"t_ns", "cookie", "kind", "local_port",
//! "remote_port", "snd_una", "snd_nxt", "snd_cwnd", "snd_ssthresh", "arg0", "arg1", "state",
//! "packets_out"}, oldest first.

use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use cclab_bpf::{ms_to_jiffies, CwndClamp, RtoSetting, StoEvent};
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
    /// Write the timeout log here at the end (JSON lines).
    #[arg(long, value_name = "PATH")]
    sto_log: Option<PathBuf>,
}

fn event_json(e: &StoEvent) -> serde_json::Value {
    json!({"t_ns": e.t_ns, "cookie": e.cookie, "kind": e.kind_name(), "local_port": e.local_port,
           "remote_port": e.remote_port, "snd_una": e.snd_una, "snd_nxt": e.snd_nxt,
           "snd_cwnd": e.snd_cwnd, "snd_ssthresh": e.snd_ssthresh, "arg0": e.arg0, "arg1": e.arg1,
           "state": e.state, "packets_out": e.packets_out})
}

fn write_log(path: &std::path::Path, events: &[StoEvent]) -> std::io::Result<()> {
    let mut f = std::io::BufWriter::new(std::fs::File::create(path)?);
    for e in events {
        writeln!(f, "{}", event_json(e))?;
    }
    f.flush()
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
           "rto_counts": {"initial_replied": n.initial_replied, "min_set": n.min_set, "min_refused": n.min_refused,
                          "sto_events_lost": n.sto_events_lost}})
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
    // The log is drained on every command too, so a long run does not fill the ring buffer.
    let mut log: Vec<StoEvent> = Vec::new();
    for line in std::io::stdin().lock().lines() {
        let Ok(line) = line else { break };
        if args.sto_log.is_some() {
            log.extend(clamp.sto_events());
        }
        if line.trim().is_empty() {
            continue;
        }
        let reply = command(&mut clamp, &line, args.hz).unwrap_or_else(|e| json!({"error": e}));
        let _ = writeln!(out, "{reply}");
        let _ = out.flush();
    }
    if let Some(path) = &args.sto_log {
        log.extend(clamp.sto_events());
        if let Err(e) = write_log(path, &log) {
            eprintln!(
                "cclab-cwnd-clamp: writing the timeout log {}: {e}",
                path.display()
            );
        }
    }
    let _ = writeln!(out, "{}", status(&clamp));
    ExitCode::SUCCESS
}
