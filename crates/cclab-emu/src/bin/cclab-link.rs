//! `cclab-link --spec SPEC.json`: the real-time link emulator (docs/emulator.md).

use cclab_emu::emu::{run, Options};
use cclab_emu::spec::Spec;
use clap::Parser;
use std::process::ExitCode;

const EXAMPLE: &str = r#"Example SPEC.json (namespaces made first, e.g. `ip netns add cclab-1-s0`):
  { "seed": 1,
    "ports": [ {"name": "s0", "netns": "cclab-1-s0", "dev": "cl0", "addrs": ["10.77.0.1"]},
               {"name": "r0", "netns": "cclab-1-r0", "dev": "cl0", "addrs": ["10.77.1.1"]} ],
    "links": [ {"name": "bottleneck.fwd", "rate_bps": 20000000, "delay_ms": 50,
                "queue_pkts": 1000, "loss": 0.01},
               {"name": "bottleneck.rev", "delay_ms": 50} ],
    "routes": [ {"from": "s0", "to": "r0", "links": ["bottleneck.fwd"]},
                {"from": "r0", "to": "s0", "links": ["bottleneck.rev"]} ],
    "stats_path": "/tmp/cclab-1/link-stats.json",
    "timestamps_path": null }

  cclab-link --spec SPEC.json   # prints `ready`, runs until SIGTERM/SIGINT/stdin EOF

Link fields are the scenario's LinkSpec fields (rate_bps, capacity_trace_text, delay_ms,
queue_pkts, queue_bytes, loss_model, outages, delay_spikes) plus `loss` (Bernoulli p).
Exit codes: 0 after a clean stop (stats written), 2 on a bad spec or setup error."#;

/// Real-time link emulator: cclab-net link models between TUN devices in network namespaces.
#[derive(Parser, Debug)]
#[command(name = "cclab-link", version, after_help = EXAMPLE)]
struct Args {
    /// The spec (JSON): ports, links, routes, stats_path.
    #[arg(long, value_name = "SPEC.json")]
    spec: std::path::PathBuf,
    /// Keep running at stdin EOF (stop only on SIGTERM/SIGINT).
    #[arg(long)]
    ignore_stdin: bool,
    /// SCHED_FIFO priority of the emulator loop (1-99); 0 keeps the normal scheduler. Off by
    /// default: a real-time thread using over 95 % of a CPU is throttled for the rest of the
    /// second (kernel.sched_rt_runtime_us), which stalls every packet for ~50 ms.
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(i32).range(0..=99))]
    rt_priority: i32,
    /// Nice value of the emulator (-20 = the largest CPU share under the normal scheduler).
    #[arg(long, default_value_t = -20, allow_negative_numbers = true,
          value_parser = clap::value_parser!(i32).range(-20..=19))]
    nice: i32,
    /// Run the emulator on this CPU only (sched_setaffinity). With the receive stacks of the
    /// TUN devices steered to the other CPUs (RPS; the Python side does both), a write no
    /// longer runs the receiving TCP stack in the emulator's thread.
    #[arg(long, value_name = "N")]
    cpu: Option<usize>,
}

fn main() -> ExitCode {
    let args = Args::parse();
    if !nix::unistd::geteuid().is_root() {
        eprintln!("cclab-link: must run as root (it opens TUN devices inside network namespaces)");
        return ExitCode::from(2);
    }
    let text = match std::fs::read_to_string(&args.spec) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("cclab-link: --spec {}: {e}", args.spec.display());
            return ExitCode::from(2);
        }
    };
    let spec = match Spec::parse(&text) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("cclab-link: {}: {e}", args.spec.display());
            return ExitCode::from(2);
        }
    };
    let opts = Options {
        ignore_stdin: args.ignore_stdin,
        rt_priority: args.rt_priority,
        nice: args.nice,
        cpu: args.cpu,
    };
    match run(&spec, &opts) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("cclab-link: {e}");
            ExitCode::from(2)
        }
    }
}
