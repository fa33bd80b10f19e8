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
//! The program is attached through a BPF link: it is detached when the [`CwndClamp`] is dropped
//! or its process dies, even by SIGKILL.

use std::fs::File;
use std::path::{Path, PathBuf};

use aya::maps::{HashMap, MapData, MapError};
use aya::programs::{CgroupAttachMode, ProgramError, SockOps};
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
    Cgroup { path: PathBuf, source: std::io::Error },
    #[error("the BPF object has no {0}")]
    Missing(&'static str),
    #[error("cap_pkts must be 1..=2147483647, got {0}")]
    BadCap(u64),
}

/// The sock_ops cwnd clamp attached to one cgroup.
pub struct CwndClamp {
    by_port: HashMap<MapData, u32, u32>,
    applied: HashMap<MapData, u64, u32>, // an LRU hash in the kernel
    // Keeps the program and its link alive; dropping it detaches.
    _ebpf: Ebpf,
}

impl CwndClamp {
    /// Loads the program and attaches it to the cgroup v2 directory `cgroup`.
    pub fn attach(cgroup: &Path) -> Result<Self, ClampError> {
        let dir = File::open(cgroup).map_err(|source| ClampError::Cgroup { path: cgroup.to_path_buf(), source })?;
        let mut ebpf = Ebpf::load(OBJECT)?;
        let prog: &mut SockOps = ebpf
            .program_mut("cclab_cwnd_clamp")
            .ok_or(ClampError::Missing("program cclab_cwnd_clamp"))?
            .try_into()?;
        prog.load()?;
        prog.attach(dir, CgroupAttachMode::Single)?;
        let by_port = HashMap::try_from(
            ebpf.take_map("cwnd_clamp_by_port").ok_or(ClampError::Missing("map cwnd_clamp_by_port"))?,
        )?;
        let applied = HashMap::try_from(
            ebpf.take_map("cwnd_clamp_applied").ok_or(ClampError::Missing("map cwnd_clamp_applied"))?,
        )?;
        Ok(Self { by_port, applied, _ebpf: ebpf })
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
        let mut v: Vec<(u16, u32)> =
            self.by_port.iter().filter_map(Result::ok).map(|(p, c)| (p as u16, c)).collect();
        v.sort_unstable();
        v
    }

    /// The caps applied so far, one per socket (by socket cookie), in no particular order.
    pub fn applied(&self) -> Vec<u32> {
        self.applied.iter().filter_map(Result::ok).map(|(_, c)| c).collect()
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
        assert_eq!(obj.license.to_str().unwrap(), "GPL");
    }

    #[test]
    fn a_missing_cgroup_is_named() {
        let Err(e) = CwndClamp::attach(Path::new("/nonexistent/cclab-x")) else { panic!("attached") };
        let msg = e.to_string();
        assert!(msg.contains("/nonexistent/cclab-x") && msg.contains("cgroup v2"), "{msg}");
    }
}
