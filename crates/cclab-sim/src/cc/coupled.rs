//! What the coupled Multipath TCP algorithms (`lia`, `olia`, `balia`) share: the connection's
//! subflows as the last `set_subflows` gave them, read the way the multipath-tcp.org v0.9x kernel
//! reads them while walking `mptcp_for_each_sk`.
//!
//! Three rules, one per kernel idiom:
//! - `mptcp(tp)`: a socket is a Multipath TCP subflow. Here: `set_subflows` was called at least
//!   once. A single-path flow never gets it, and each algorithm then falls back to
//!   `tcp_reno_cong_avoid` exactly as v0.9x does for a plain TCP socket.
//! - `mptcp_*_sk_can_send(sk)` (`mptcp_coupled.c`, `mptcp_olia.c`, `mptcp_balia.c`):
//!   `mptcp_sk_can_send(sk) && srtt_us`: a subflow counts in the sums only once it may send and
//!   has an RTT sample ([`sendable`]).
//! - `mpcb->cnt_established`: established subflows. Here: the subflows with `can_send`
//!   ([`Peers::cnt_established`]). We diverge only for a subflow in "potential failure", which
//!   the kernel still counts as established and `can_send` does not.
//!
//! The view of `me` is rebuilt from `tp` every time it is read ([`Peers::view`]): an algorithm
//! that raises cwnd and then recomputes (LIA's and BALIA's `recalc` after `snd_cwnd++`) sees the
//! new cwnd, as the kernel does.

use super::{CaState, ParamInfo, ParamValue, SubflowView};
use crate::tcp::sock::TcpSock;

/// The `per_segment` tunable of lia, olia and balia.
pub(crate) fn per_segment_param() -> ParamInfo {
    ParamInfo {
        name: "per_segment",
        default: ParamValue::Bool(false),
        doc: "false: the kernel form counts one step per ACK, as v0.9x does; true: one \
              step per segment the ACK covers, as 6.18's Reno counts (no effect with \
              exact = true, which is per segment already); true/false or 0/1",
    }
}

/// How many of v0.9x's per-ACK steps an ACK of `acked` segments takes: one, or one per segment
/// with `per_segment` (lia.rs explains).
pub(crate) fn steps(per_segment: bool, acked: u32) -> u32 {
    if per_segment {
        acked.max(1)
    } else {
        1
    }
}

/// One v0.9x congestion-avoidance step (`mptcp_ccc_cong_avoid`, `mptcp_balia_cong_avoid`): with
/// the counter at `acks_per_packet`, cwnd grows by one within the clamp and the counter restarts;
/// else the counter counts this step. True when cwnd grew (the caller then recomputes).
pub(crate) fn step(tp: &mut TcpSock, acks_per_packet: u64) -> bool {
    if tp.snd_cwnd_cnt as u64 >= acks_per_packet {
        let grew = tp.snd_cwnd < tp.snd_cwnd_clamp;
        if grew {
            tp.set_cwnd(tp.snd_cwnd + 1);
        }
        tp.snd_cwnd_cnt = 0;
        grew
    } else {
        tp.snd_cwnd_cnt += 1;
        false
    }
}

/// `mptcp_*_sk_can_send`: the subflow may send and has an RTT sample.
pub(crate) fn sendable(v: &SubflowView) -> bool {
    v.can_send && v.srtt_us != 0
}

/// The connection's subflows as the last `set_subflows` gave them. The vector is reused across
/// calls (no allocation per ACK once it has grown to the connection's size).
#[derive(Debug, Clone, Default)]
pub(crate) struct Peers {
    /// Every subflow of the connection, `me` included (its entry is stale: see `view`).
    views: Vec<SubflowView>,
    /// Index of this subflow in `views`.
    me: usize,
    /// `mptcp(tp)`: `set_subflows` has been called.
    multipath: bool,
}

impl Peers {
    /// Remember the connection's subflows (`CongestionControl::set_subflows`).
    pub(crate) fn update(&mut self, subflows: &[SubflowView], me: usize) {
        debug_assert!(me < subflows.len(), "me = {me} of {}", subflows.len());
        self.views.clear();
        self.views.extend_from_slice(subflows);
        self.me = me;
        self.multipath = true;
    }

    /// `mptcp(tp)`: this socket is a subflow of a Multipath TCP connection.
    pub(crate) fn multipath(&self) -> bool {
        self.multipath
    }

    /// Number of subflows.
    pub(crate) fn len(&self) -> usize {
        self.views.len()
    }

    /// Index of this subflow.
    pub(crate) fn me(&self) -> usize {
        self.me
    }

    /// `mpcb->cnt_established`.
    pub(crate) fn cnt_established(&self) -> u32 {
        self.views.iter().filter(|v| v.can_send).count() as u32
    }

    /// Subflow `i` now: a peer as last given, `me` with cwnd, ssthresh, srtt, mss and CA state
    /// read from `tp` (and `me_state` as its shared state).
    pub(crate) fn view(&self, i: usize, tp: &TcpSock, me_state: [u64; 4]) -> SubflowView {
        let v = self.views[i];
        if i != self.me {
            return v;
        }
        SubflowView {
            cwnd_pkts: tp.snd_cwnd,
            ssthresh_pkts: tp.snd_ssthresh,
            srtt_us: tp.srtt_us,
            mss_bytes: tp.mss_cache,
            ca_state: tp.ca_state,
            can_send: v.can_send,
            cc_state: me_state,
        }
    }

    /// The peers' shared states (`me` excluded), for merging what they published.
    pub(crate) fn peer_states(&self) -> impl Iterator<Item = [u64; 4]> + '_ {
        let me = self.me;
        self.views
            .iter()
            .enumerate()
            .filter(move |(i, _)| *i != me)
            .map(|(_, v)| v.cc_state)
    }
}

/// `mptcp_get_crt_cwnd` (`mptcp_olia.c`): in fast recovery the window is "artificially
/// inflated" (RFC 5681), so OLIA uses ssthresh there.
pub(crate) fn crt_cwnd(v: &SubflowView) -> u32 {
    if v.ca_state == CaState::Recovery {
        v.ssthresh_pkts
    } else {
        v.cwnd_pkts
    }
}

/// A value the v0.9x kernel keeps once per connection, in the meta socket's private CA area
/// (LIA's `alpha` and `forced_update` in `mptcp_coupled.c`), while each subflow here has its own
/// algorithm instance. Each instance keeps a copy with a Lamport stamp and publishes both in
/// `coupled_state`; on `set_subflows` it adopts a peer's copy with a later stamp, and a write
/// takes a stamp above every stamp seen. As the world calls `set_subflows` before each event with
/// every subflow's latest state, the last write in event order wins: the meta socket's value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Shared {
    /// The value.
    pub(crate) value: u64,
    /// When it was written (0 = never: the initial value).
    pub(crate) stamp: u64,
}

impl Shared {
    /// Adopt `other` if it was written later.
    pub(crate) fn merge(&mut self, other: Shared) {
        if other.stamp > self.stamp {
            *self = other;
        }
    }
}

/// The Lamport clock behind [`Shared`] writes: the highest stamp this subflow has seen.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Clock(u64);

impl Clock {
    /// Note a stamp seen on a peer.
    pub(crate) fn see(&mut self, stamp: u64) {
        self.0 = self.0.max(stamp);
    }

    /// Write `value` into `reg` with a stamp after everything seen.
    pub(crate) fn write(&mut self, reg: &mut Shared, value: u64) {
        self.0 += 1;
        *reg = Shared {
            value,
            stamp: self.0,
        };
    }
}

#[cfg(test)]
pub(crate) mod test_support {
    //! Synthetic connections for the coupled algorithms' tests.
    use super::*;

    /// A subflow that can send, with cwnd, srtt in ms and an MSS of 1448 bytes.
    pub(crate) fn view(cwnd: u32, srtt_ms: u32) -> SubflowView {
        SubflowView {
            cwnd_pkts: cwnd,
            ssthresh_pkts: cwnd / 2,
            srtt_us: (srtt_ms * 1000) << 3,
            mss_bytes: 1448,
            ca_state: CaState::Open,
            can_send: true,
            cc_state: [0; 4],
        }
    }

    /// A socket in congestion avoidance matching `v`, cwnd-limited.
    pub(crate) fn sock(v: &SubflowView) -> TcpSock {
        let mut tp = TcpSock::new(
            v.mss_bytes,
            v.cwnd_pkts,
            u32::MAX,
            crate::tcp::clock::KernelClock::new(250),
        );
        tp.snd_ssthresh = v.ssthresh_pkts;
        tp.srtt_us = v.srtt_us;
        tp.ca_state = v.ca_state;
        tp.is_cwnd_limited = true;
        tp
    }
}

#[cfg(test)]
mod tests {
    use super::test_support::view;
    use super::*;

    #[test]
    fn peers_read_me_from_tp_and_count() {
        let mut p = Peers::default();
        assert!(!p.multipath());
        let mut vs = [view(10, 20), view(30, 40), view(5, 10)];
        vs[2].can_send = false;
        vs[1].srtt_us = 0;
        p.update(&vs, 0);
        assert!(p.multipath());
        assert_eq!((p.len(), p.me(), p.cnt_established()), (3, 0, 2));
        assert!(sendable(&vs[0]) && !sendable(&vs[1]) && !sendable(&vs[2]));
        let mut tp = test_support::sock(&vs[0]);
        tp.snd_cwnd = 11;
        assert_eq!(p.view(0, &tp, [7; 4]).cwnd_pkts, 11);
        assert_eq!(p.view(0, &tp, [7; 4]).cc_state, [7; 4]);
        assert_eq!(p.view(1, &tp, [7; 4]), vs[1]);
        assert_eq!(p.peer_states().count(), 2);
        let mut r = view(100, 10);
        r.ca_state = CaState::Recovery;
        assert_eq!(crt_cwnd(&r), 50);
    }

    #[test]
    fn shared_registers_keep_the_last_write() {
        let (mut a, mut b) = (Clock::default(), Clock::default());
        let (mut ra, mut rb) = (Shared::default(), Shared::default());
        a.write(&mut ra, 5);
        // b sees a's write, then writes: b's is later.
        b.see(ra.stamp);
        rb.merge(ra);
        assert_eq!(rb.value, 5);
        b.write(&mut rb, 9);
        a.see(rb.stamp);
        ra.merge(rb);
        assert_eq!(ra, rb);
        // An older copy never replaces a newer one.
        let old = Shared { value: 1, stamp: 1 };
        ra.merge(old);
        assert_eq!(ra.value, 9);
    }
}
