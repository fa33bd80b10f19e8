//! BBR v1's outputs: the pacing rate, the TSO budget and cwnd from the model
//! (`net/ipv4/tcp_bbr.c`, Linux 6.18: bbr_set_pacing_rate .. bbr_set_cwnd).

use super::*;

impl Bbr {
    /// `bbr_max_bw`: windowed max recent bandwidth, packets/us << 24.
    pub fn max_bw(&self) -> u32 {
        self.bw.get()
    }

    /// `bbr_bw`: the estimate in use (the policed rate when one was detected).
    pub fn bw(&self) -> u32 {
        if self.lt_use_bw {
            self.lt_bw
        } else {
            self.max_bw()
        }
    }

    /// `bbr_extra_acked`: max extra acked in the past k..2k rounds.
    pub(super) fn extra_acked(&self) -> u32 {
        self.extra_acked[0].max(self.extra_acked[1]) as u32
    }

    /// `bbr_rate_bytes_per_sec`: a rate in packets/us << 24 times a gain, in bytes per second
    /// less the pacing margin (ordered to avoid u64 overflow, as in Linux).
    pub(super) fn rate_bytes_per_sec(tp: &TcpSock, rate: u64, gain: u32) -> u64 {
        let mut rate = rate * tp.mss_cache as u64;
        rate *= gain as u64;
        rate >>= BBR_SCALE;
        rate *= 1_000_000 / 100 * (100 - PACING_MARGIN_PERCENT);
        rate >> BW_SCALE
    }

    /// `bbr_bw_to_pacing_rate`.
    pub(super) fn bw_to_pacing_rate(tp: &TcpSock, bw: u32, gain: u32) -> u64 {
        Self::rate_bytes_per_sec(tp, bw as u64, gain).min(tp.max_pacing_rate_bytes_per_s)
    }

    /// `bbr_init_pacing_rate_from_rtt`: high_gain * cwnd / RTT (1 ms before any RTT sample).
    pub(super) fn init_pacing_rate_from_rtt(&mut self, tp: &mut TcpSock) {
        let rtt_us = if tp.srtt_us != 0 {
            self.has_seen_rtt = true;
            (tp.srtt_us >> 3).max(1)
        } else {
            1000
        };
        let bw = tp.snd_cwnd as u64 * BW_UNIT / rtt_us as u64;
        tp.pacing_rate_bytes_per_s = Self::bw_to_pacing_rate(tp, bw as u32, self.p.high_gain);
    }

    /// `bbr_set_pacing_rate`: never lower the rate before the pipe is full.
    pub(super) fn set_pacing_rate(&mut self, tp: &mut TcpSock, bw: u32, gain: u32) {
        let rate = Self::bw_to_pacing_rate(tp, bw, gain);
        if !self.has_seen_rtt && tp.srtt_us != 0 {
            self.init_pacing_rate_from_rtt(tp);
        }
        if self.full_bw_reached || rate > tp.pacing_rate_bytes_per_s {
            tp.pacing_rate_bytes_per_s = rate;
        }
    }

    /// `bbr_min_tso_segs`.
    pub(super) fn min_tso_segs(tp: &TcpSock) -> u64 {
        if tp.pacing_rate_bytes_per_s < (MIN_TSO_RATE_BPS >> 3) {
            1
        } else {
            2
        }
    }

    /// `bbr_tso_segs_generic`: a burst of about 1 ms at the pacing rate, within `gso_max_size`.
    pub(super) fn tso_segs_generic(tp: &TcpSock, mss_now: u32, gso_max_size: u64) -> u32 {
        let bytes =
            (tp.pacing_rate_bytes_per_s >> tp.pacing_shift).min(gso_max_size - 1 - MAX_TCP_HEADER);
        (bytes / mss_now as u64).max(Self::min_tso_segs(tp)) as u32
    }

    /// `bbr_tso_segs_goal`: segments per TSO burst at this pacing rate (GSO_MAX_SIZE bound).
    #[inline]
    pub(super) fn tso_segs_goal(&self, tp: &TcpSock) -> u32 {
        Self::tso_segs_generic(tp, tp.mss_cache, GSO_MAX_SIZE)
    }

    /// `bbr_save_cwnd`: remember the last good cwnd before recovery or PROBE_RTT.
    pub(super) fn save_cwnd(&mut self, tp: &TcpSock) {
        if self.prev_ca_state < CaState::Recovery && self.mode != Mode::ProbeRtt {
            self.prior_cwnd = tp.snd_cwnd;
        } else {
            self.prior_cwnd = self.prior_cwnd.max(tp.snd_cwnd);
        }
    }

    /// `bbr_bdp`: ceil(bw * min_rtt * gain), or the initial window before any RTT sample.
    pub(super) fn bdp(&self, bw: u32, gain: u32) -> u32 {
        if self.min_rtt_us == u32::MAX {
            return TCP_INIT_CWND;
        }
        let w = bw as u64 * self.min_rtt_us as u64;
        (((w * gain as u64) >> BBR_SCALE).div_ceil(BW_UNIT)) as u32
    }

    /// `bbr_quantization_budget`: room for TSO bursts in flight at both ends, an even cwnd,
    /// and +2 in the probing phase so small BDPs still probe.
    pub(super) fn quantization_budget(&self, tp: &TcpSock, cwnd: u32) -> u32 {
        let mut cwnd = cwnd + 3 * self.tso_segs_goal(tp);
        cwnd = (cwnd + 1) & !1;
        if self.mode == Mode::ProbeBw && self.cycle_idx == 0 {
            cwnd += 2;
        }
        cwnd
    }

    /// `bbr_inflight`: the inflight target for `bw` and `gain`.
    pub(super) fn inflight(&self, tp: &TcpSock, bw: u32, gain: u32) -> u32 {
        let bdp = self.bdp(bw, gain);
        self.quantization_budget(tp, bdp)
    }

    /// `bbr_packets_in_net_at_edt`: inflight expected when the next skb departs (EDT).
    pub(super) fn packets_in_net_at_edt(&self, tp: &TcpSock, inflight_now: u32) -> u32 {
        let now_ns = tp.tcp_clock_cache_ns;
        let edt_ns = tp.tcp_wstamp_ns.max(now_ns);
        let interval_us = (edt_ns - now_ns) / 1000;
        let interval_delivered = ((self.bw() as u64 * interval_us) >> BW_SCALE) as u32;
        let mut inflight_at_edt = inflight_now;
        if self.pacing_gain > BBR_UNIT {
            inflight_at_edt += self.tso_segs_goal(tp); // include EDT skb
        }
        inflight_at_edt.saturating_sub(interval_delivered)
    }

    /// `bbr_ack_aggregation_cwnd`: extra cwnd for ACK aggregation, once the pipe is full.
    pub(super) fn ack_aggregation_cwnd(&self) -> u32 {
        if self.p.extra_acked_gain == 0 || !self.full_bw_reached {
            return 0;
        }
        let max_aggr_cwnd = (self.bw() as u64 * EXTRA_ACKED_MAX_US / BW_UNIT) as u32;
        let aggr_cwnd = (self.p.extra_acked_gain * self.extra_acked()) >> BBR_SCALE;
        aggr_cwnd.min(max_aggr_cwnd)
    }

    /// `bbr_set_cwnd_to_recover_or_restore`: packet conservation in the first round of
    /// recovery, restore the saved cwnd when recovery ends. Returns (cwnd, conserving).
    pub(super) fn set_cwnd_to_recover_or_restore(
        &mut self,
        tp: &TcpSock,
        rs: &RateSample,
        acked: u32,
    ) -> (u32, bool) {
        let prev_state = self.prev_ca_state;
        let state = tp.ca_state;
        let mut cwnd = tp.snd_cwnd;
        // An ACK for P packets should release at most 2*P: first deduct the lost ones.
        if rs.losses > 0 {
            cwnd = (cwnd as i64 - rs.losses as i64).max(1) as u32;
        }
        if state == CaState::Recovery && prev_state != CaState::Recovery {
            // Starting the first round of Recovery: packet conservation.
            self.packet_conservation = true;
            self.next_rtt_delivered = tp.delivered; // start round now
            cwnd = tp.packets_in_flight() + acked;
        } else if prev_state >= CaState::Recovery && state < CaState::Recovery {
            // Exiting loss recovery: restore the cwnd saved before it.
            cwnd = cwnd.max(self.prior_cwnd);
            self.packet_conservation = false;
        }
        self.prev_ca_state = state;
        if self.packet_conservation {
            return (cwnd.max(tp.packets_in_flight() + acked), true);
        }
        (cwnd, false)
    }

    /// `bbr_set_cwnd`: slow-start up toward the target, or snap down to it once the pipe is
    /// full; PROBE_RTT caps at cwnd_min_target.
    pub(super) fn set_cwnd(
        &mut self,
        tp: &mut TcpSock,
        rs: &RateSample,
        acked: u32,
        bw: u32,
        gain: u32,
    ) {
        let mut cwnd = tp.snd_cwnd;
        'done: {
            if acked == 0 {
                break 'done; // no packet fully ACKed; just apply caps
            }
            let (c, conserving) = self.set_cwnd_to_recover_or_restore(tp, rs, acked);
            cwnd = c;
            if conserving {
                break 'done;
            }
            let mut target_cwnd = self.bdp(bw, gain);
            // Allow for excess data ACKed, seemingly due to aggregation.
            target_cwnd += self.ack_aggregation_cwnd();
            target_cwnd = self.quantization_budget(tp, target_cwnd);
            if self.full_bw_reached {
                cwnd = (cwnd + acked).min(target_cwnd);
            } else if cwnd < target_cwnd || tp.delivered < TCP_INIT_CWND {
                cwnd += acked;
            }
            cwnd = cwnd.max(self.p.cwnd_min_target);
        }
        tp.set_cwnd(cwnd.min(tp.snd_cwnd_clamp));
        if self.mode == Mode::ProbeRtt {
            tp.set_cwnd(tp.snd_cwnd.min(self.p.cwnd_min_target));
        }
    }
}
