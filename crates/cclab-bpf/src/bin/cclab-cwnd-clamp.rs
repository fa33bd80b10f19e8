//! `cclab-cwnd-clamp`: attach cclab's per-flow cwnd cap to a cgroup and take commands on stdin.
//!
//! Prints `{"ready": true}` once attached; then reads one command per line:
//!   `set PORT CAP_PKTS`   cap sockets on PORT (remote, else local) at CAP_PKTS packets
//!   `remove PORT`         stop capping new sockets on PORT
//!   `status`              print {"caps": {"PORT": CAP, ...}, "applied": [CAP, ...]}
//! and answers each with one JSON line ({"ok": true} or {"error": "..."}). On end of input it
//! prints a last status line and detaches. Killing it also detaches (BPF link).

use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use cclab_bpf::CwndClamp;
use clap::Parser;
use serde_json::json;

#[derive(Parser)]
#[command(
    version,
    about = "Cap the congestion window of chosen TCP flows on the real kernel (BPF sock_ops)",
    after_help = "Example (root):\n  mkdir /sys/fs/cgroup/unified/cclab-demo\n  \
        cclab-cwnd-clamp --cgroup /sys/fs/cgroup/unified/cclab-demo --set 5201=20\n  \
        # then, in another shell: echo $$ > /sys/fs/cgroup/unified/cclab-demo/cgroup.procs; iperf3 -c HOST -p 5201\n\n\
        Commands on stdin: 'set PORT CAP_PKTS', 'remove PORT', 'status'."
)]
struct Args {
    /// cgroup v2 directory whose processes' sockets are capped.
    #[arg(long)]
    cgroup: PathBuf,
    /// Initial caps, PORT=CAP_PKTS (repeatable).
    #[arg(long = "set", value_name = "PORT=CAP_PKTS")]
    set: Vec<String>,
}

fn parse_port(s: &str) -> Result<u16, String> {
    s.parse().map_err(|_| format!("port must be 0..=65535, got {s:?}"))
}

fn parse_cap(s: &str) -> Result<u64, String> {
    s.parse().map_err(|_| format!("cap_pkts must be a positive integer, got {s:?}"))
}

fn status(c: &CwndClamp) -> serde_json::Value {
    let caps: serde_json::Map<String, serde_json::Value> =
        c.caps().into_iter().map(|(p, v)| (p.to_string(), json!(v))).collect();
    json!({"caps": caps, "applied": c.applied()})
}

fn command(c: &mut CwndClamp, line: &str) -> Result<serde_json::Value, String> {
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
        ["status"] => Ok(status(c)),
        _ => Err(format!("unknown command {line:?}: use 'set PORT CAP_PKTS', 'remove PORT' or 'status'")),
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
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{}", json!({"ready": true}));
    let _ = out.flush();
    for line in std::io::stdin().lock().lines() {
        let Ok(line) = line else { break };
        if line.trim().is_empty() {
            continue;
        }
        let reply = command(&mut clamp, &line).unwrap_or_else(|e| json!({"error": e}));
        let _ = writeln!(out, "{reply}");
        let _ = out.flush();
    }
    let _ = writeln!(out, "{}", status(&clamp));
    ExitCode::SUCCESS
}
