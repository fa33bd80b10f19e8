//! How the sender sizes its skbs and when it holds a send back to build a larger one, as Linux
//! 6.18 does (net/ipv4/tcp_output.c `tcp_tso_segs`, `tcp_tso_autosize`, `tcp_tso_should_defer`;
//! net/ipv4/tcp.c `tcp_xmit_size_goal`).
//!
//! Linux builds GSO skbs for every TCP socket (`sk_setup_caps`); a TUN or veth segments them in
//! software, so an skb's segments reach the link back to back. For an unpaced socket the size
//! only matters through `tcp_tso_should_defer`: when cwnd leaves room for less than one full
//! skb, the sender may wait for the next ACK rather than send a small one. The switch is the
//! host's `tso_defer` (`[host]`, docs/scenario.md); off, an unpaced socket on a host without a
//! device sends one segment per skb and never defers (the simulator's earlier model).

use super::sender::Sender;
use super::sndbuf::GSO_MAX_SIZE_BYTES;
use crate::cc::CaState;

/// `sysctl_tcp_tso_win_divisor` (default 3).
const TSO_WIN_DIVISOR: u64 = 3;
/// `NSEC_PER_MSEC`: the "last write was recent" and "next ACK soon" bounds of the deferral.
const DEFER_BOUND_NS: u64 = 1_000_000;

impl Sender {
    /// `tcp_tso_segs`: segments per skb (the algorithm's `tso_segs`, else `tcp_tso_autosize`
    /// with `tcp_min_tso_segs` 2, `tcp_tso_rtt_log` 9 and a 64 KiB `sk_gso_max_size`, as on a
    /// TUN or veth device). An unpaced socket on a host without a device, with `tso_defer`
    /// off, uses one segment per skb.
    pub(crate) fn tso_segs(&self) -> u32 {
        // With a device, skbs matter below TCP (TSQ counts their truesize): Linux builds GSO
        // skbs for every socket (sk_setup_caps always sets NETIF_F_GSO for TCP), so size them
        // as tcp_tso_autosize does. Without one, and without deferral, their size changes
        // nothing we model.
        if !self.tp.pacing_needed
            && !self.below.has_device()
            && !self.below.stack.tso_defer
            && self.sndbuf.is_none()
        {
            return 1;
        }
        let mss = self.tp.mss_cache;
        if let Some(segs) = self.cc.tso_segs(&self.tp, mss) {
            return segs.max(1);
        }
        let mut bytes = self.below_pacing_rate_bytes_per_s() >> self.tp.pacing_shift;
        let r = (self.tp.min_rtt_us >> 9) as u64;
        if r < 32 {
            bytes += GSO_MAX_SIZE_BYTES >> r;
        }
        bytes = bytes.min(GSO_MAX_SIZE_BYTES);
        ((bytes / mss as u64) as u32).max(2)
    }

    /// Segments of the next GSO skb (`tcp_write_xmit`): `cwnd_quota`, which is `tcp_cwnd_test`
    /// (at most half of cwnd, "at least 2 GSO packets in flight", and what cwnd leaves) bounded
    /// by [`Sender::tso_segs`], and at most what the write queue's head skb holds once
    /// `tcp_grow_skb` has filled it from the next skb (`tcp_mss_split_point` caps the split at
    /// the skb's length). Skbs of different Multipath TCP mappings are never joined.
    /// `quota_segs`: [`Sender::gso_quota_segs`], which the caller also hands `tcp_grow_skb`.
    pub(crate) fn gso_segs_now(&self, quota_segs: u32) -> u32 {
        // Without a send buffer there are no write-queue skbs to stop at.
        match self.send_head_len(quota_segs) {
            Some(head) => {
                let mss = u64::from(self.tp.mss_cache).max(1);
                quota_segs.min(head.div_ceil(mss).max(1) as u32)
            }
            None => quota_segs,
        }
    }

    /// `cwnd_quota` of `tcp_write_xmit`: `tcp_cwnd_test` (min(max(cwnd / 2, 1), cwnd -
    /// in_flight); 1 for a loss probe sent beyond cwnd) bounded by `tcp_tso_segs`.
    pub(crate) fn gso_quota_segs(&self) -> u32 {
        let cwnd = self.tp.snd_cwnd;
        let quota = (cwnd >> 1)
            .max(1)
            .min(cwnd.saturating_sub(self.tp.packets_in_flight()))
            .max(1);
        self.tso_segs().min(quota)
    }

    /// The length of the skb at the head of the write queue, bytes: `tcp_sendmsg` fills skbs
    /// up to `size_goal` (`tcp_xmit_size_goal`: `sk_gso_max_size` bounded to half the largest
    /// window the peer offered, `tcp_bound_to_half_wnd`, in whole segments); the application
    /// has written everything it will send, so only the last skb is shorter.
    fn write_queue_head_len(&self) -> u64 {
        if self.sndbuf.is_some() {
            return self.send_head_len(self.gso_quota_segs()).unwrap_or(0);
        }
        self.size_goal()
            .min(self.cfg.size_bytes.saturating_sub(self.tp.snd_nxt))
    }

    /// `tcp_tso_should_defer`: hold the next skb back, hoping the next ACK makes room for a
    /// larger one. Only with `tso_defer`, for an skb of more than one segment (`tcp_write_xmit`
    /// asks only then; a one-segment skb goes to the Nagle test, which a bulk sender passes).
    /// Returns (defer, cwnd-limited): Linux sets `is_cwnd_limited` when it defers for cwnd.
    pub(crate) fn tso_should_defer(&self, max_segs: u32) -> (bool, bool) {
        let tp = &self.tp;
        let mss = u64::from(tp.mss_cache);
        let skb_len = self.write_queue_head_len();
        if !self.below.stack.tso_defer || skb_len <= mss {
            return (false, false);
        }
        if matches!(tp.ca_state, CaState::Recovery | CaState::Loss) {
            return (false, false);
        }
        // Avoid bursty behaviour: defer only if the last write was recent (1 ms).
        if tp.tcp_clock_cache_ns > tp.tcp_wstamp_ns + DEFER_BOUND_NS {
            return (false, false);
        }
        let in_flight = u64::from(tp.packets_in_flight());
        let send_win = tp
            .snd_una
            .saturating_add(self.snd_wnd)
            .saturating_sub(tp.snd_nxt);
        let cong_win = u64::from(tp.snd_cwnd).saturating_sub(in_flight) * mss;
        let limit = send_win.min(cong_win);
        // A full-sized TSO skb can be sent.
        if limit >= u64::from(max_segs) * mss {
            return (false, false);
        }
        // Not the write queue's tail (which a bulk sender's never is): the whole skb fits.
        let tail = self.write_seq.saturating_sub(tp.snd_nxt) <= skb_len;
        if !tail && limit >= skb_len {
            return (false, false);
        }
        // At least a fraction (1/tcp_tso_win_divisor) of the window is available: use it.
        let chunk = self.snd_wnd.min(u64::from(tp.snd_cwnd) * mss) / TSO_WIN_DIVISOR;
        if limit >= chunk {
            return (false, false);
        }
        let Some(head) = self.rtx.head() else {
            return (false, false);
        };
        // When is the ACK of the retransmission queue's head expected? If in more than
        // min(1 ms, srtt / 2), do not defer.
        let srtt_ns = 125 * u64::from(tp.srtt_us);
        let expected_ack_ns = head.xmit_us * 1000 + srtt_ns;
        let threshold_ns = (srtt_ns >> 1).min(DEFER_BOUND_NS);
        if expected_ack_ns > tp.tcp_clock_cache_ns + threshold_ns {
            return (false, false);
        }
        if cong_win < send_win {
            if cong_win <= skb_len {
                return (true, true);
            }
        } else if send_win <= skb_len {
            return (true, false);
        }
        // This skb won't get more data (it carries the FIN): do not wait.
        (!tail, false)
    }
}
