//! Congestion control: one trait mirroring Linux's `struct tcp_congestion_ops`
//! (include/net/tcp.h, Linux 6.18), one file per algorithm, and a registry that builds an
//! algorithm from its name and tunables.
//!
//! The TCP machinery (loss detection, recovery, PRR, RTO, undo) lives in `crate::tcp` and is
//! written once; an algorithm supplies only its window math through these hooks, exactly where
//! the kernel calls them. Hooks get the shared sender state as `&mut TcpSock` (Linux's `tp`) and
//! keep their private state in `self` (Linux's `inet_csk_ca(sk)`).

pub mod cubic;
pub mod params;
mod registry;
pub mod reno;
// Issue 3 algorithms (one file each; each exposes `info()` and `build()`).
pub mod bbr;
pub mod bbr2;
pub mod bbr3;
pub mod bbr_v2v3;
pub mod bic;
pub mod cubic_xnu;
pub mod dctcp;
pub mod highspeed;
pub mod htcp;
pub mod hybla;
pub mod illinois;
pub mod lp;
pub mod scalable;
pub mod vegas;
pub mod veno;
pub mod westwood;
pub mod yeah;
// Issue 16: coupled congestion control for Multipath TCP (simulator only).
pub mod balia;
mod coupled;
pub mod lia;
pub mod olia;
#[cfg(test)]
mod tests_coupled;

pub use registry::{algorithms, build, AlgorithmInfo, CcError, ParamInfo, ParamValue, Params};

use crate::tcp::sock::TcpSock;

/// `after(seq2, seq1)` on 32-bit wrapping counters (include/net/tcp.h; `time_after` in
/// include/linux/jiffies.h is the same test): `a` is later than `b`.
pub(crate) fn after(a: u32, b: u32) -> bool {
    (b.wrapping_sub(a) as i32) < 0
}

/// `before(seq1, seq2)`: `a` is earlier than `b`.
pub(crate) fn before(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) < 0
}

/// TCP congestion-avoidance state machine (`enum tcp_ca_state`, include/net/tcp.h).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(u8)]
pub enum CaState {
    /// Nothing bad has been observed.
    Open = 0,
    /// Dupacks or SACKs seen, no loss marked yet.
    Disorder = 1,
    /// cwnd reduced because of ECN or local congestion.
    Cwr = 2,
    /// Fast recovery after loss detected by dupacks/SACK/RACK.
    Recovery = 3,
    /// Loss recovery after a retransmission timeout.
    Loss = 4,
}

/// Events passed to `cwnd_event` (`enum tcp_ca_event`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CaEvent {
    /// First transmit when no packets in flight.
    TxStart,
    /// Congestion window restart after idle.
    CwndRestart,
    /// End of congestion recovery.
    CompleteCwr,
    /// Loss timeout.
    Loss,
    /// ECT set, but not CE marked.
    EcnNoCe,
    /// Received CE marked IP packet.
    EcnIsCe,
    /// A tail loss probe repaired a lost segment (`CA_EVENT_TLP_RECOVERY`, added by google/bbr's
    /// v3 branch; stock Linux has no such event, so only bbr3 reacts to it).
    TlpRecovery,
}

/// `in_ack_event` flags (`enum tcp_ca_ack_event_flags`).
pub mod ack_flags {
    /// In slow path processing.
    pub const CA_ACK_SLOWPATH: u32 = 1 << 0;
    /// ACK updated window.
    pub const CA_ACK_WIN_UPDATE: u32 = 1 << 1;
    /// ECE bit is set on ack.
    pub const CA_ACK_ECE: u32 = 1 << 2;
}

/// Per-ACK sample given to `pkts_acked` (`struct ack_sample`).
#[derive(Debug, Clone, Copy, Default)]
pub struct AckSample {
    /// Segments newly cumulatively acked by this ACK.
    pub pkts_acked: u32,
    /// RTT sample in microseconds, or negative when this ACK gave none (Karn's rule).
    pub rtt_us: i64,
    /// Packets in flight before this ACK (`in_flight`).
    pub in_flight: u32,
}

/// Delivery-rate sample (`struct rate_sample`, net/ipv4/tcp_rate.c), for `cong_control`.
#[derive(Debug, Clone, Copy, Default)]
pub struct RateSample {
    /// Starting timestamp of the sampled interval, microseconds.
    pub prior_mstamp_us: u64,
    /// `tp->delivered` at `prior_mstamp_us`.
    pub prior_delivered: u32,
    /// Segments delivered over the interval (negative when no valid sample).
    pub delivered: i32,
    /// Length of the interval, microseconds (negative when no valid sample).
    pub interval_us: i64,
    /// Send-side interval, microseconds.
    pub snd_interval_us: u32,
    /// Receive-side interval, microseconds.
    pub rcv_interval_us: u32,
    /// RTT of the last (S)ACKed packet, microseconds (-1 when none).
    pub rtt_us: i64,
    /// Segments newly marked lost by this ACK.
    pub losses: i32,
    /// Segments newly (S)ACKed by this ACK.
    pub acked_sacked: u32,
    /// Packets in flight before this ACK.
    pub prior_in_flight: u32,
    /// Whether the sample is from an application-limited interval.
    pub is_app_limited: bool,
    /// Whether the sample is from a retransmitted packet.
    pub is_retrans: bool,
    /// Whether this ACK is (likely) a delayed ACK.
    pub is_ack_delayed: bool,
    /// end_seq of the segment the sample was taken from (`last_end_seq`), to order segments
    /// sent in the same microsecond.
    pub last_end_seq: u64,
    /// Packets in flight when the sampled skb was sent (`rs->tx_in_flight`, google/bbr
    /// v2alpha/v3).
    pub tx_in_flight: u32,
    /// `tp->lost` when the sampled skb was sent (`rs->prior_lost`, google/bbr v2alpha/v3).
    pub prior_lost: u32,
    /// Packets lost over the sampled flight, `tp->lost - prior_lost` (`rs->lost`, google/bbr
    /// v2alpha/v3).
    pub lost: i32,
    /// Whether this ACK covers a TLP retransmission (`rs->is_acking_tlp_retrans_seq`, google/bbr
    /// v3).
    pub is_acking_tlp_retrans_seq: bool,
    /// `tp->delivered_ce` when the sampled skb was sent (`rs->prior_delivered_ce`).
    pub prior_delivered_ce: u32,
    /// Segments delivered by ECE ACKs over the sampled flight, `tp->delivered_ce -
    /// prior_delivered_ce` (`rs->delivered_ce`, google/bbr v2alpha/v3; 0 without ECN).
    pub delivered_ce: i32,
    /// Whether this ACK carried ECE (`rs->is_ece` = `FLAG_ECE`, google/bbr v2alpha/v3).
    pub is_ece: bool,
}

/// One subflow of a Multipath TCP connection as a coupled algorithm sees it: what the
/// multipath-tcp.org v0.9x kernel reads from each subflow's `tcp_sock` while walking the
/// connection with `mptcp_for_each_sk` (`mptcp_coupled.c`, `mptcp_olia.c`, `mptcp_balia.c`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SubflowView {
    /// `snd_cwnd`, packets.
    pub cwnd_pkts: u32,
    /// `snd_ssthresh`, packets.
    pub ssthresh_pkts: u32,
    /// `srtt_us`, in Linux's units (microseconds << 3; 0 before the first sample).
    pub srtt_us: u32,
    /// `mss_cache`, bytes.
    pub mss_bytes: u32,
    /// The CA state.
    pub ca_state: CaState,
    /// Whether it may carry data (`mptcp_sk_can_send`: established, not closed or in
    /// potential failure).
    pub can_send: bool,
    /// What this subflow's algorithm shares with its peers (`CongestionControl::coupled_state`:
    /// OLIA's loss intervals, for example); zeros for an algorithm that shares nothing.
    pub cc_state: [u64; 4],
}

/// A congestion-control algorithm: Linux's `tcp_congestion_ops` as a trait.
///
/// Every hook has the kernel's default behaviour; an algorithm overrides what its
/// `tcp_<name>.c` sets in its ops table. `ssthresh` and `undo_cwnd` are required in Linux too.
pub trait CongestionControl: Send {
    /// Linux name of the algorithm (`ops->name`), e.g. "cubic".
    fn name(&self) -> &'static str;

    /// Called once when the connection starts (`init`).
    fn init(&mut self, _tp: &mut TcpSock) {}

    /// New slow-start threshold on loss or ECN (`ssthresh`), packets.
    fn ssthresh(&mut self, tp: &mut TcpSock) -> u32;

    /// Grow cwnd on an ACK in Open/Disorder/Loss state (`cong_avoid`); `acked` is the number of
    /// newly acked or SACKed segments.
    fn cong_avoid(&mut self, _tp: &mut TcpSock, _ack: u64, _acked: u32) {}

    /// The CA state is about to change to `new_state` (`set_state`).
    fn set_state(&mut self, _tp: &mut TcpSock, _new_state: CaState) {}

    /// A congestion event happened (`cwnd_event`).
    fn cwnd_event(&mut self, _tp: &mut TcpSock, _event: CaEvent) {}

    /// An ACK arrived; `flags` are `ack_flags::*` (`in_ack_event`).
    fn in_ack_event(&mut self, _tp: &mut TcpSock, _flags: u32) {}

    /// Segments were cumulatively acked, with an RTT sample if any (`pkts_acked`).
    fn pkts_acked(&mut self, _tp: &mut TcpSock, _sample: &AckSample) {}

    /// cwnd to restore when a reduction is undone (`undo_cwnd`).
    fn undo_cwnd(&mut self, tp: &mut TcpSock) -> u32;

    /// Segments per skb when pacing (`tso_segs`); `None` uses the kernel's `tcp_tso_autosize`.
    fn tso_segs(&self, _tp: &TcpSock, _mss_now: u32) -> Option<u32> {
        None
    }

    /// The core just marked `skb` lost (`skb_marked_lost`, added to tcp_congestion_ops by
    /// google/bbr's v2alpha and v3 branches; called from `tcp_mark_skb_lost` after `tp->lost`
    /// counted it).
    fn skb_marked_lost(&mut self, _tp: &mut TcpSock, _skb: &crate::tcp::skb::Skb) {}

    /// Whether the connection must use ECN whatever the `tcp_ecn` sysctl: Linux's
    /// `TCP_CONG_NEEDS_ECN` flag in `ops->flags`, read through `tcp_ca_needs_ecn`
    /// (include/net/tcp.h). Set by DCTCP (net/ipv4/tcp_dctcp.c), which also needs the receiver's
    /// precise CE echo (`dctcp_ece_ack_update`, what `ecn = "low"` gives a flow here).
    fn needs_ecn(&self) -> bool {
        false
    }

    /// `sndbuf_expand`: how many windows `tcp_sndbuf_expand` sizes the send buffer for (2;
    /// BBR 3).
    fn sndbuf_expand(&self) -> u32 {
        2
    }

    /// Whether this algorithm replaces the stock cwnd logic with `cong_control` (as BBR does).
    fn has_cong_control(&self) -> bool {
        false
    }

    /// Full control of cwnd and pacing on every ACK (`cong_control`); only called when
    /// `has_cong_control()` is true.
    fn cong_control(&mut self, _tp: &mut TcpSock, _ack: u64, _flag: u32, _rs: &RateSample) {}

    /// Multipath TCP: every subflow of this connection, this one at index `me`, given before
    /// each event this subflow handles (an ACK, a timer, a transmit completion). A single-path
    /// flow never gets it; single-path algorithms ignore it (the uncoupled case).
    fn set_subflows(&mut self, _subflows: &[SubflowView], _me: usize) {}

    /// What this algorithm shares with the other subflows of its connection
    /// (`SubflowView::cc_state`).
    fn coupled_state(&self) -> [u64; 4] {
        [0; 4]
    }
}
