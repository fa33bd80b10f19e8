//! A per-flow congestion-window cap on the real kernel: the papers' "max window", and the S1
//! middleware's lever on terminals sharing an access point.
//!
//! [`CwndClamp`] loads `bpf/cwnd_clamp.bpf.c` (a sock_ops program, compiled by clang in
//! build.rs), attaches it to a cgroup v2 directory and keeps a map from TCP port to cap in
//! packets. Every TCP socket of a process in that cgroup whose remote port (else local port) is
//! in the map gets `bpf_setsockopt(SOL_TCP, TCP_BPF_SNDCWND_CLAMP, cap)` at establishment and,
//! when the cap changes, on its next RTT sample (within one ACK). Kernel semantics (Linux 6.18,
//! net/core/filter.c bpf_sol_tcp_setsockopt): the call sets `snd_cwnd_clamp = cap` and also
//! `snd_ssthresh = cap`, so a connection that gets a cap leaves slow start at it.
//!
//! The same program sets per-flow RTO bounds ([`CwndClamp::set_rto`]): the initial RTO (its
//! reply to BPF_SOCK_OPS_TIMEOUT_INIT, jiffies: include/net/tcp.h tcp_timeout_init) and the
//! minimum RTO (bpf_setsockopt TCP_BPF_RTO_MIN, us, before the SYN; 6.18 takes 2 jiffies to
//! 200 ms only: net/core/filter.c bpf_sol_tcp_setsockopt).
//!
//! It also logs each socket's timeouts ([`CwndClamp::sto_events`]): its ISN at establishment,
//! the RTOs (BPF_SOCK_OPS_RTO_CB, before `tcp_enter_loss`), each change of snd_ssthresh seen on
//! an RTT sample or retransmission (an undo restores it), and when snd_una reaches an RTO's
//! snd_nxt, through a ring buffer (`sto_log`; the program's header says what each holds).
//!
//! The program is attached through a BPF link: it is detached when the [`CwndClamp`] is dropped
//! or its process dies, even by SIGKILL.

use std::fs::File;
use std::path::{Path, PathBuf};

use aya::maps::{Array, HashMap, MapData, MapError, RingBuf};
use aya::programs::{CgroupAttachMode, ProgramError, SockOps};
use aya::Pod;
use aya::{include_bytes_aligned, Ebpf, EbpfError};

/// The compiled sock_ops program.
static OBJECT: &[u8] = include_bytes_aligned!(concat!(env!("OUT_DIR"), "/cwnd_clamp.bpf.o"));

/// What can go wrong loading, attaching or updating the clamp.
#[derive(Debug, thiserror::Error)]
pub enum ClampError {
    #[error("loading the BPF object: {0} (needs root or CAP_BPF+CAP_NET_ADMIN)")]
    Load(#[from] EbpfError),
    #[error("BPF program: {0}")]
    Program(#[from] ProgramError),
    #[error("BPF map: {0}")]
    Map(#[from] MapError),
    #[error("cgroup {path}: {source} (a cgroup v2 directory is needed, e.g. under /sys/fs/cgroup/unified)")]
    Cgroup {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("the BPF object has no {0}")]
    Missing(&'static str),
    #[error("cap_pkts must be 1..=2147483647, got {0}")]
    BadCap(u64),
    #[error("{0}")]
    BadRto(String),
}

/// A port's RTO settings as the program reads them (`struct rto_setting`).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RtoSetting {
    /// The initial RTO, jiffies (0: the kernel's 1 s).
    pub initial_jiffies: u32,
    /// The minimum RTO, us (0: the namespace's tcp_rto_min_us).
    pub min_us: u32,
}

// SAFETY: two u32s, no padding; any bit pattern is a valid value.
unsafe impl Pod for RtoSetting {}

/// The largest minimum RTO TCP_BPF_RTO_MIN takes: TCP_RTO_MIN = HZ/5, 200 ms (include/net/tcp.h).
pub const BPF_RTO_MIN_MAX_US: u32 = 200_000;

/// `ms` in jiffies at `hz`, rounded up as the kernel's msecs_to_jiffies() does.
pub fn ms_to_jiffies(ms: f64, hz: u32) -> u32 {
    (ms * f64::from(hz) / 1000.0 - 1e-9).ceil().max(0.0) as u32
}

/// What the program did with RTO settings so far (its `rto_counts`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RtoCounts {
    /// Sockets given an initial RTO (BPF_SOCK_OPS_TIMEOUT_INIT replies).
    pub initial_replied: u64,
    /// Sockets whose minimum RTO was set.
    pub min_set: u64,
    /// bpf_setsockopt(TCP_BPF_RTO_MIN) calls the kernel refused.
    pub min_refused: u64,
    /// Timeout-log events the ring buffer had no room for.
    pub sto_events_lost: u64,
}

/// One timeout-log event (`struct sto_event` of the program).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct StoEvent {
    /// bpf_ktime_get_ns(): CLOCK_MONOTONIC, ns.
    pub t_ns: u64,
    /// The socket's cookie (one per connection).
    pub cookie: u64,
    /// What happened: [`StoEvent::KINDS`] names them.
    pub kind: u32,
    pub local_port: u16,
    pub remote_port: u16,
    pub snd_una: u32,
    pub snd_nxt: u32,
    pub snd_cwnd: u32,
    pub snd_ssthresh: u32,
    /// RTO: icsk_retransmits (0: the first of a run of backed-off timeouts); ssthresh: 1 on
    /// the first callback after an RTO (tcp_enter_loss's value), else 0.
    pub arg0: u32,
    /// RTO: icsk_rto, jiffies.
    pub arg1: u32,
    /// The TCP state (BPF_TCP_*).
    pub state: u32,
    pub packets_out: u32,
}

impl StoEvent {
    /// The names of the kinds, by number.
    pub const KINDS: [&'static str; 4] = ["established", "rto", "ssthresh", "recovered"];

    /// An event from the ring buffer's bytes, None when they are too short.
    pub fn from_bytes(b: &[u8]) -> Option<StoEvent> {
        if b.len() < std::mem::size_of::<StoEvent>() {
            return None;
        }
        let u64_at = |o: usize| u64::from_ne_bytes(b[o..o + 8].try_into().unwrap());
        let u32_at = |o: usize| u32::from_ne_bytes(b[o..o + 4].try_into().unwrap());
        let u16_at = |o: usize| u16::from_ne_bytes(b[o..o + 2].try_into().unwrap());
        Some(StoEvent {
            t_ns: u64_at(0),
            cookie: u64_at(8),
            kind: u32_at(16),
            local_port: u16_at(20),
            remote_port: u16_at(22),
            snd_una: u32_at(24),
            snd_nxt: u32_at(28),
            snd_cwnd: u32_at(32),
            snd_ssthresh: u32_at(36),
            arg0: u32_at(40),
            arg1: u32_at(44),
            state: u32_at(48),
            packets_out: u32_at(52),
        })
    }

    /// The kind's name (`unknown` for a number the program does not write).
    pub fn kind_name(&self) -> &'static str {
        Self::KINDS
            .get(self.kind as usize)
            .copied()
            .unwrap_or("unknown")
    }
}

/// The sock_ops cwnd clamp attached to one cgroup.
pub struct CwndClamp {
    by_port: HashMap<MapData, u32, u32>,
    applied: HashMap<MapData, u64, u32>, // an LRU hash in the kernel
    rto_by_port: HashMap<MapData, u32, RtoSetting>,
    rto_counts: Array<MapData, u64>,
    sto_log: RingBuf<MapData>,
    // Keeps the program and its link alive; dropping it detaches.
    _ebpf: Ebpf,
}

impl CwndClamp {
    /// Loads the program and attaches it to the cgroup v2 directory `cgroup`.
    pub fn attach(cgroup: &Path) -> Result<Self, ClampError> {
        let dir = File::open(cgroup).map_err(|source| ClampError::Cgroup {
            path: cgroup.to_path_buf(),
            source,
        })?;
        let mut ebpf = Ebpf::load(OBJECT)?;
        let prog: &mut SockOps = ebpf
            .program_mut("cclab_cwnd_clamp")
            .ok_or(ClampError::Missing("program cclab_cwnd_clamp"))?
            .try_into()?;
        prog.load()?;
        prog.attach(dir, CgroupAttachMode::Single)?;
        let by_port = HashMap::try_from(
            ebpf.take_map("cwnd_clamp_by_port")
                .ok_or(ClampError::Missing("map cwnd_clamp_by_port"))?,
        )?;
        let applied = HashMap::try_from(
            ebpf.take_map("cwnd_clamp_applied")
                .ok_or(ClampError::Missing("map cwnd_clamp_applied"))?,
        )?;
        let rto_by_port = HashMap::try_from(
            ebpf.take_map("rto_by_port")
                .ok_or(ClampError::Missing("map rto_by_port"))?,
        )?;
        let rto_counts = Array::try_from(
            ebpf.take_map("rto_counts")
                .ok_or(ClampError::Missing("map rto_counts"))?,
        )?;
        let sto_log = RingBuf::try_from(
            ebpf.take_map("sto_log")
                .ok_or(ClampError::Missing("map sto_log"))?,
        )?;
        Ok(Self {
            by_port,
            applied,
            rto_by_port,
            rto_counts,
            sto_log,
            _ebpf: ebpf,
        })
    }

    /// Caps the window of sockets whose remote (else local) port is `port` at `cap_pkts`.
    /// Sockets already capped by another value take the new one on their next RTT sample.
    pub fn set(&mut self, port: u16, cap_pkts: u64) -> Result<(), ClampError> {
        if cap_pkts == 0 || cap_pkts > i32::MAX as u64 {
            return Err(ClampError::BadCap(cap_pkts));
        }
        self.by_port.insert(u32::from(port), cap_pkts as u32, 0)?;
        Ok(())
    }

    /// Stops capping new sockets on `port`. Sockets already capped keep their cap (to lift it,
    /// `set` a large value: the kernel then also sets ssthresh to it, i.e. slow start again).
    pub fn remove(&mut self, port: u16) -> Result<(), ClampError> {
        match self.by_port.remove(&u32::from(port)) {
            Ok(()) | Err(MapError::KeyNotFound) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    /// The ports and caps in the map.
    pub fn caps(&self) -> Vec<(u16, u32)> {
        let mut v: Vec<(u16, u32)> = self
            .by_port
            .iter()
            .filter_map(Result::ok)
            .map(|(p, c)| (p as u16, c))
            .collect();
        v.sort_unstable();
        v
    }

    /// Gives new sockets on `port` (remote, else local) an initial RTO of `initial_jiffies`
    /// (0: the kernel's) and a minimum RTO of `min_us` (0: the namespace's; else 1..=200000,
    /// what TCP_BPF_RTO_MIN takes; the kernel also refuses less than 2 jiffies).
    pub fn set_rto(&mut self, port: u16, rto: RtoSetting) -> Result<(), ClampError> {
        if rto.min_us > BPF_RTO_MIN_MAX_US {
            return Err(ClampError::BadRto(format!(
                "min_us = {}: Linux 6.18 sets a minimum RTO by BPF only up to {BPF_RTO_MIN_MAX_US} us \
                 (TCP_RTO_MIN); a larger one is the namespace's sysctl net.ipv4.tcp_rto_min_us",
                rto.min_us
            )));
        }
        if rto.initial_jiffies > i32::MAX as u32 {
            return Err(ClampError::BadRto(format!(
                "initial_jiffies = {} is too large",
                rto.initial_jiffies
            )));
        }
        self.rto_by_port.insert(u32::from(port), rto, 0)?;
        Ok(())
    }

    /// The ports and RTO settings in the map.
    pub fn rtos(&self) -> Vec<(u16, RtoSetting)> {
        let mut v: Vec<(u16, RtoSetting)> = self
            .rto_by_port
            .iter()
            .filter_map(Result::ok)
            .map(|(p, r)| (p as u16, r))
            .collect();
        v.sort_unstable_by_key(|x| x.0);
        v
    }

    /// What the program did with the RTO settings so far.
    pub fn rto_counts(&self) -> RtoCounts {
        let n = |i: u32| self.rto_counts.get(&i, 0).unwrap_or(0);
        RtoCounts {
            initial_replied: n(0),
            min_set: n(1),
            min_refused: n(2),
            sto_events_lost: n(3),
        }
    }

    /// The timeout-log events written since the last call, oldest first.
    pub fn sto_events(&mut self) -> Vec<StoEvent> {
        let mut v = Vec::new();
        while let Some(item) = self.sto_log.next() {
            v.extend(StoEvent::from_bytes(&item));
        }
        v
    }

    /// The caps applied so far, one per socket (by socket cookie), in no particular order.
    pub fn applied(&self) -> Vec<u32> {
        self.applied
            .iter()
            .filter_map(Result::ok)
            .map(|(_, c)| c)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_object_has_the_program_and_both_maps() {
        let obj = aya_obj::Object::parse(OBJECT).expect("the compiled BPF object parses");
        assert!(obj.programs.contains_key("cclab_cwnd_clamp"));
        assert!(obj.maps.contains_key("cwnd_clamp_by_port"));
        assert!(obj.maps.contains_key("cwnd_clamp_applied"));
        assert!(obj.maps.contains_key("rto_by_port"));
        assert!(obj.maps.contains_key("rto_counts"));
        assert!(obj.maps.contains_key("sto_log"));
        assert!(obj.maps.contains_key("sto_socks"));
        assert_eq!(obj.license.to_str().unwrap(), "GPL");
    }

    #[test]
    fn a_log_event_reads_back_field_by_field() {
        assert_eq!(std::mem::size_of::<StoEvent>(), 56);
        let e = StoEvent {
            t_ns: 5_000_000_123,
            cookie: 77,
            kind: 1,
            local_port: 40000,
            remote_port: 5201,
            snd_una: u32::MAX - 3,
            snd_nxt: 12,
            snd_cwnd: 40,
            snd_ssthresh: 0x7fff_ffff,
            arg0: 0,
            arg1: 98,
            state: 1,
            packets_out: 40,
        };
        // SAFETY: a repr(C) struct of integers without padding, viewed as its bytes.
        let bytes = unsafe {
            std::slice::from_raw_parts(
                (&e as *const StoEvent).cast::<u8>(),
                std::mem::size_of::<StoEvent>(),
            )
        };
        assert_eq!(StoEvent::from_bytes(bytes), Some(e));
        assert_eq!(e.kind_name(), "rto");
        assert_eq!(StoEvent::from_bytes(&bytes[..55]), None);
    }

    #[test]
    fn milliseconds_become_jiffies_rounded_up() {
        assert_eq!(ms_to_jiffies(3000.0, 250), 750);
        assert_eq!(ms_to_jiffies(1000.0, 1000), 1000);
        assert_eq!(ms_to_jiffies(10.0, 250), 3); // 2.5 -> 3, as msecs_to_jiffies
        assert_eq!(ms_to_jiffies(0.0, 250), 0);
    }

    #[test]
    fn a_missing_cgroup_is_named() {
        let Err(e) = CwndClamp::attach(Path::new("/nonexistent/cclab-x")) else {
            panic!("attached")
        };
        let msg = e.to_string();
        assert!(
            msg.contains("/nonexistent/cclab-x") && msg.contains("cgroup v2"),
            "{msg}"
        );
    }
}
