//! The real-time loop: one thread, epoll over the TUNs, a timerfd armed (absolute,
//! CLOCK_MONOTONIC, timer slack 1 ns) at the model's next departure, a signalfd for
//! SIGTERM/SIGINT and stdin for EOF. Each round reads every TUN until it is empty (bounded
//! batches, round robin), then hands the router `now` and writes what the model releases.
//! When the next release is closer than `SPIN_NS`, the loop polls instead of sleeping.

use crate::clock::Clock;
use crate::router::{Out, Router};
use crate::series::LinkSeries;
use crate::spec::Spec;
use crate::stats::stats_json;
use crate::tun::{open_tun, TunError};
use nix::sys::epoll::{Epoll, EpollCreateFlags, EpollEvent, EpollFlags, EpollTimeout};
use nix::sys::signal::{SigSet, Signal};
use nix::sys::signalfd::{SfdFlags, SignalFd};
use nix::sys::time::TimeSpec;
use nix::sys::timerfd::{ClockId, Expiration, TimerFd, TimerFlags, TimerSetTimeFlags};
use std::io::{self, BufWriter, Write};
use std::os::fd::{AsFd, OwnedFd};

/// Packets read from one TUN before turning to the next.
const READ_BATCH: usize = 16;
/// The timer is armed this much before a release and the rest is polled, so a release does
/// not pay the timer's wake-up latency (tens of us on a busy machine), ns.
const SPIN_NS: u64 = 20_000;
/// Failed reads in a row after which a TUN is no longer watched (its errors stay counted).
const READ_FAILS_MAX: u32 = 1000;
/// A packet this late counts as the emulator falling behind, ns.
const BEHIND_NS: u64 = 1_000_000;

const TOKEN_TIMER: u64 = u64::MAX;
const TOKEN_SIGNAL: u64 = u64::MAX - 1;
const TOKEN_STDIN: u64 = u64::MAX - 2;

/// Why the emulator could not start or run.
#[derive(Debug, thiserror::Error)]
pub enum EmuError {
    #[error("ports[{0}]: {1}")]
    Port(usize, TunError),
    #[error("{0}: {1}")]
    Sys(&'static str, nix::Error),
    #[error("{0}: {1}")]
    Io(String, io::Error),
}

/// Options besides the spec.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Do not stop at stdin EOF.
    pub ignore_stdin: bool,
    /// Real-time priority (SCHED_FIFO) for the loop; 0 = stay SCHED_OTHER.
    pub rt_priority: i32,
    /// Nice value under SCHED_OTHER (-20..=19).
    pub nice: i32,
    /// Pin the emulator to this CPU.
    pub cpu: Option<usize>,
}

/// SCHED_FIFO at `prio` for this thread, so other processes on a busy machine do not delay
/// releases by a scheduler tick; a warning, not an error, when refused.
fn go_realtime(prio: i32) {
    if prio <= 0 {
        return;
    }
    let p = libc::sched_param {
        sched_priority: prio,
    };
    // SAFETY: sched_setscheduler on the calling thread (0) with a valid sched_param.
    if unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &p) } != 0 {
        eprintln!(
            "cclab-link: warning: SCHED_FIFO priority {prio} refused ({}); timing may suffer",
            io::Error::last_os_error()
        );
    }
}

/// Open every port, print `ready`, run until SIGTERM/SIGINT/stdin EOF, write the stats.
pub fn run(spec: &Spec, opts: &Options) -> Result<(), EmuError> {
    let mut tuns: Vec<OwnedFd> = Vec::new();
    for (i, p) in spec.ports.iter().enumerate() {
        tuns.push(
            open_tun(p.netns.as_deref(), &p.dev, spec.configure_devices)
                .map_err(|e| EmuError::Port(i, e))?,
        );
    }
    let sys = |what| move |e| EmuError::Sys(what, e);
    let mut mask = SigSet::empty();
    mask.add(Signal::SIGTERM);
    mask.add(Signal::SIGINT);
    mask.thread_block().map_err(sys("sigprocmask"))?;
    let sfd = SignalFd::with_flags(&mask, SfdFlags::SFD_NONBLOCK | SfdFlags::SFD_CLOEXEC)
        .map_err(sys("signalfd"))?;
    let timer = TimerFd::new(
        ClockId::CLOCK_MONOTONIC,
        TimerFlags::TFD_NONBLOCK | TimerFlags::TFD_CLOEXEC,
    )
    .map_err(sys("timerfd"))?;
    // SAFETY: prctl(PR_SET_TIMERSLACK) takes an integer; 1 ns = wake as exactly as possible.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0) };
    let ep = Epoll::new(EpollCreateFlags::EPOLL_CLOEXEC).map_err(sys("epoll"))?;
    for (i, t) in tuns.iter().enumerate() {
        ep.add(t, EpollEvent::new(EpollFlags::EPOLLIN, i as u64))
            .map_err(sys("epoll add tun"))?;
    }
    ep.add(&timer, EpollEvent::new(EpollFlags::EPOLLIN, TOKEN_TIMER))
        .map_err(sys("epoll add timer"))?;
    ep.add(&sfd, EpollEvent::new(EpollFlags::EPOLLIN, TOKEN_SIGNAL))
        .map_err(sys("epoll add signalfd"))?;
    let stdin = io::stdin();
    if !opts.ignore_stdin {
        // A file or /dev/null cannot be polled (EPERM): then stdin is simply not watched.
        let _ = ep.add(
            stdin.as_fd(),
            EpollEvent::new(EpollFlags::EPOLLIN, TOKEN_STDIN),
        );
    }

    let mut ts_out = match &spec.timestamps_path {
        Some(p) => {
            let f = std::fs::File::create(p).map_err(|e| EmuError::Io(p.clone(), e))?;
            let mut w = BufWriter::with_capacity(1 << 20, f);
            writeln!(w, "from_port,to_port,bytes,in_ns,model_ns,out_ns")
                .map_err(|e| EmuError::Io(p.clone(), e))?;
            Some(w)
        }
        None => None,
    };

    let mut series = match &spec.links_path {
        Some(p) => Some(LinkSeries::create(p, spec.links_interval_ns)?),
        None => None,
    };

    if let Some(cpu) = opts.cpu {
        let mut set = nix::sched::CpuSet::new();
        set.set(cpu).map_err(sys("--cpu"))?;
        nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(0), &set)
            .map_err(sys("sched_setaffinity (--cpu)"))?;
    }
    go_realtime(opts.rt_priority);
    // SAFETY: setpriority on this process; failure only leaves the nice value as it was.
    if unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, opts.nice) } != 0 {
        eprintln!("cclab-link: warning: nice {} refused", opts.nice);
    }
    let mut router = Router::new(spec);
    let mut clock = Clock::start();
    let mut cmd: Vec<u8> = Vec::new();
    {
        let mut out = io::stdout().lock();
        let _ = writeln!(out, "ready");
        let _ = out.flush();
    }

    let mut buf = vec![0u8; 65_536];
    let mut outq: Vec<Out> = Vec::with_capacity(1024);
    let mut events = vec![EpollEvent::empty(); 16];
    let mut readable = vec![false; tuns.len()];
    let mut read_fails = vec![0u32; tuns.len()];
    let mut armed: Option<u64> = None;
    let mut behind_events = 0u64;
    let mut last_warn_ns = 0u64;
    let mut stop = false;
    while !stop {
        // Sleep until a TUN is readable, the timer fires, a signal or stdin EOF.
        let now = clock.now_ns();
        if let Some(s) = series.as_mut() {
            s.sample(now, &mut router)?;
        }
        let next = match (
            router.next_event_ns(),
            series.as_ref().map(LinkSeries::next_ns),
        ) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let timeout = match next {
            Some(t) if t <= now + SPIN_NS => EpollTimeout::ZERO,
            Some(t) => {
                if armed != Some(t) {
                    let at = clock.deadline(t - SPIN_NS);
                    timer
                        .set(
                            Expiration::OneShot(TimeSpec::from_duration(at)),
                            TimerSetTimeFlags::TFD_TIMER_ABSTIME,
                        )
                        .map_err(sys("timerfd_settime"))?;
                    armed = Some(t);
                }
                EpollTimeout::NONE
            }
            None => EpollTimeout::NONE,
        };
        let n = ep.wait(&mut events, timeout).or_else(|e| {
            if e == nix::Error::EINTR {
                Ok(0)
            } else {
                Err(EmuError::Sys("epoll_wait", e))
            }
        })?;
        for ev in &events[..n] {
            match ev.data() {
                TOKEN_TIMER => {
                    let _ = nix::unistd::read(&timer, &mut [0u8; 8]);
                    armed = None;
                }
                TOKEN_SIGNAL => stop = true,
                TOKEN_STDIN => {
                    let mut b = [0u8; 256];
                    match nix::unistd::read(&stdin, &mut b) {
                        Ok(0) => stop = true,
                        Ok(n) => {
                            cmd.extend_from_slice(&b[..n]);
                            while let Some(end) = cmd.iter().position(|&c| c == b'\n') {
                                let line: Vec<u8> = cmd.drain(..=end).collect();
                                if line.trim_ascii() == b"start" {
                                    let reply = restart_clock(
                                        &mut clock,
                                        &mut router,
                                        spec,
                                        series.as_mut(),
                                    );
                                    armed = None;
                                    let mut out = io::stdout().lock();
                                    let _ = writeln!(out, "{reply}");
                                    let _ = out.flush();
                                }
                            }
                        }
                        Err(nix::Error::EAGAIN) | Err(nix::Error::EINTR) => {}
                        Err(_) => stop = true,
                    }
                }
                i => readable[i as usize] = true,
            }
        }
        // Read every readable TUN dry, round robin in batches, serving the links between
        // batches so releases are not held back by a flood.
        while readable.iter().any(|&r| r) {
            for (i, t) in tuns.iter().enumerate() {
                if !readable[i] {
                    continue;
                }
                for _ in 0..READ_BATCH {
                    match nix::unistd::read(t, &mut buf) {
                        Ok(len) => {
                            read_fails[i] = 0;
                            let now = clock.now_ns();
                            router.ingress(now, i, &buf[..len]);
                        }
                        Err(nix::Error::EAGAIN) => {
                            readable[i] = false;
                            break;
                        }
                        Err(nix::Error::EINTR) => {}
                        Err(e) => {
                            // Counted, not fatal; a TUN that only fails is no longer watched,
                            // so that it cannot keep the loop busy.
                            router.port_counters[i].rx_errors += 1;
                            read_fails[i] += 1;
                            readable[i] = false;
                            if read_fails[i] == READ_FAILS_MAX {
                                let _ = ep.delete(t);
                                eprintln!(
                                    "cclab-link: ports[{i}]: {READ_FAILS_MAX} failed reads in a row ({e}); no longer read"
                                );
                            }
                            break;
                        }
                    }
                }
            }
            release(&mut router, &clock, &tuns, &mut outq, &mut ts_out);
        }
        let late = release(&mut router, &clock, &tuns, &mut outq, &mut ts_out);
        if late > BEHIND_NS {
            behind_events += 1;
            let now = clock.now_ns();
            if now.saturating_sub(last_warn_ns) > 1_000_000_000 {
                last_warn_ns = now;
                eprintln!(
                    "cclab-link: falling behind: a packet left {:.3} ms after its model time",
                    late as f64 / 1e6
                );
            }
        }
    }
    let duration_s = clock.now_ns() as f64 / 1e9;
    if let Some(w) = ts_out.as_mut() {
        let p = spec.timestamps_path.clone().unwrap_or_default();
        w.flush().map_err(|e| EmuError::Io(p, e))?;
    }
    if let Some(s) = series {
        s.finish()?;
    }
    let doc = stats_json(&router, duration_s, behind_events);
    let text = serde_json::to_string_pretty(&doc).unwrap_or_default();
    match &spec.stats_path {
        Some(p) => std::fs::write(p, text + "\n").map_err(|e| EmuError::Io(p.clone(), e))?,
        None => eprintln!("{text}"),
    }
    Ok(())
}

/// The `start` command: time zero becomes now, so outages, delay spikes, capacity traces and
/// the links series count from the moment the caller starts its traffic. The links and media
/// are built afresh (the model keeps times, such as when its transmitter is next free, that
/// must not outlive the old clock) and the counters restart: the stats describe the run from
/// `start`. Refused while a packet is inside a link or medium.
fn restart_clock(
    clock: &mut Clock,
    router: &mut Router,
    spec: &Spec,
    series: Option<&mut LinkSeries>,
) -> &'static str {
    if !router.is_empty() {
        return "error: packets are inside the links or media; send start before any traffic";
    }
    *router = Router::new(spec);
    *clock = Clock::start();
    match series.map(LinkSeries::restart) {
        Some(Err(_)) => "error: cannot truncate links_path",
        _ => "started",
    }
}

/// Hand the router `now`, write what it releases; returns the largest lateness, ns.
fn release(
    router: &mut Router,
    clock: &Clock,
    tuns: &[OwnedFd],
    outq: &mut Vec<Out>,
    ts_out: &mut Option<BufWriter<std::fs::File>>,
) -> u64 {
    let now = clock.now_ns();
    router.service(now, outq);
    let mut worst = 0;
    for o in outq.drain(..) {
        worst = worst.max(now - o.model_ns);
        let pc = &mut router.port_counters[o.port];
        // A TUN write hands the packet to the namespace's stack at once (netif_rx).
        match nix::unistd::write(&tuns[o.port], &o.pkt.data) {
            Ok(_) => {
                pc.tx_pkts += 1;
                pc.tx_bytes += o.pkt.data.len() as u64;
            }
            Err(_) => {
                pc.tx_errors += 1;
                router.lane_counters[o.lane].tun_write_errors_pkts += 1;
            }
        }
        if let Some(w) = ts_out.as_mut() {
            let _ = writeln!(
                w,
                "{},{},{},{},{},{}",
                o.from_port,
                o.port,
                o.pkt.data.len(),
                o.pkt.in_ns,
                o.model_ns,
                clock.now_ns()
            );
        }
        router.recycle(o.pkt.data);
    }
    worst
}
