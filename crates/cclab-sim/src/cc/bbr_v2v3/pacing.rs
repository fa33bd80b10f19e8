//! BBRv2/v3 outputs: pacing rate, TSO budget, BDP and inflight targets, cwnd
//! (google/bbr v3 `tcp_bbr.c` / v2alpha `tcp_bbr2.c`: bbr_rate_bytes_per_sec .. bbr_set_cwnd).

use super::*;

impl BbrNext {
    /// `bbr_rate_bytes_per_sec` (v3 form, with a margin and a floor of 1).
    #[inline]
    pub(super) fn rate_bytes_per_sec(tp: &TcpSock, rate: u64, gain: u32, margin: u64) -> u64 {
        let mut rate = rate * tp.mss_cache as u64;
        rate *= gain as u64;
        rate >>= BBR_SCALE;
        rate *= 1_000_000 / 100 * (100 - margin);
        rate >>= BW_SCALE;
        rate.max(1)
    }

    /// `bbr_bw_to_pacing_rate`.
    #[inline]
    pub(super) fn bw_to_pacing_rate(tp: &TcpSock, bw: u32, gain: u32) -> u64 {
        Self::rate_bytes_per_sec(tp, bw as u64, gain, PACING_MARGIN_PERCENT)
            .min(tp.max_pacing_rate_bytes_per_s)
    }

    /// `bbr_init_pacing_rate_from_rtt`.
    pub(super) fn init_pacing_rate_from_rtt(&mut self, tp: &mut TcpSock) {
        let rtt_us = if tp.srtt_us != 0 {
            self.has_seen_rtt = true;
            (tp.srtt_us >> 3).max(1)
        } else {
            1000
        };
        let bw = tp.snd_cwnd as u64 * BW_UNIT / rtt_us as u64;
        tp.pacing_rate_bytes_per_s =
            Self::bw_to_pacing_rate(tp, bw as u32, self.p.startup_pacing_gain);
    }

    /// `bbr_set_pacing_rate`.
    #[inline]
    pub(super) fn set_pacing_rate(&mut self, tp: &mut TcpSock, bw: u32, gain: u32) {
        let rate = Self::bw_to_pacing_rate(tp, bw, gain);
        if !self.has_seen_rtt && tp.srtt_us != 0 {
            self.init_pacing_rate_from_rtt(tp);
        }
        if self.full_bw_reached || rate > tp.pacing_rate_bytes_per_s {
            tp.pacing_rate_bytes_per_s = rate;
        }
    }

    /// `bbr_tso_segs_generic`: a burst of ~1 ms at the pacing rate plus a min_rtt-based
    /// allowance (64 KiB halved per 2^tso_rtt_shift us of min_rtt).
    pub(super) fn tso_segs_generic(&self, tp: &TcpSock, mss_now: u32, gso_max_size: u64) -> u32 {
        let mut bytes = tp.pacing_rate_bytes_per_s >> tp.pacing_shift;
        if self.p.tso_rtt_shift != 0 {
            let r = self.min_rtt_us >> self.p.tso_rtt_shift;
            if r < 32 {
                bytes += GSO_LEGACY_MAX_SIZE >> r;
            }
        }
        bytes = bytes.min(gso_max_size - 1 - MAX_TCP_HEADER);
        // v3: sysctl_tcp_min_tso_segs; v2alpha: bbr_min_tso_segs (1 below 1.2 Mbit/s).
        let min_segs = match self.v {
            Version::V3 => TCP_MIN_TSO_SEGS,
            Version::V2 if tp.pacing_rate_bytes_per_s < (MIN_TSO_RATE_BPS >> 3) => 1,
            Version::V2 => 2,
        };
        (bytes / mss_now as u64).max(min_segs) as u32
    }

    /// `bbr_tso_segs_goal`.
    #[inline]
    pub(super) fn tso_segs_goal(&self, tp: &TcpSock) -> u32 {
        self.tso_segs_generic(tp, tp.mss_cache, GSO_LEGACY_MAX_SIZE)
    }

    /// `bbr_save_cwnd`.
    pub(super) fn save_cwnd(&mut self, tp: &TcpSock) {
        if self.prev_ca_state < CaState::Recovery && self.mode != Mode::ProbeRtt {
            self.prior_cwnd = tp.snd_cwnd;
        } else {
            self.prior_cwnd = self.prior_cwnd.max(tp.snd_cwnd);
        }
    }

    /// `bbr_bdp`: ceil(bw * min_rtt * gain), or init_cwnd before any RTT sample.
    #[inline]
    pub(super) fn bdp(&self, bw: u32, gain: u32) -> u32 {
        if self.min_rtt_us == u32::MAX {
            return self.init_cwnd;
        }
        let w = bw as u64 * self.min_rtt_us as u64;
        (((w * gain as u64) >> BBR_SCALE).div_ceil(BW_UNIT)) as u32
    }

    /// `bbr_quantization_budget`: max(cwnd, 3 TSO bursts, cwnd_min_target) (v3; v2alpha's
    /// default `cwnd_tso_budget` = 1, "flooring", is the same), +2 in PROBE_UP.
    #[inline]
    pub(super) fn quantization_budget(&self, tp: &TcpSock, cwnd: u32) -> u32 {
        let tso = 3 * self.tso_segs_goal(tp);
        let mut cwnd = cwnd.max(tso).max(self.p.cwnd_min_target);
        if self.mode == Mode::ProbeBw && self.cycle_idx == BW_PROBE_UP {
            cwnd += 2;
        }
        cwnd
    }

    /// `bbr_inflight`.
    #[inline]
    pub(super) fn inflight(&self, tp: &TcpSock, bw: u32, gain: u32) -> u32 {
        let bdp = self.bdp(bw, gain);
        self.quantization_budget(tp, bdp)
    }

    /// `bbr_packets_in_net_at_edt`.
    #[inline]
    pub(super) fn packets_in_net_at_edt(&self, tp: &TcpSock, inflight_now: u32) -> u32 {
        let now_ns = tp.tcp_clock_cache_ns;
        let edt_ns = tp.tcp_wstamp_ns.max(now_ns);
        let interval_us = (edt_ns - now_ns) / 1000;
        let interval_delivered = ((self.bw() as u64 * interval_us) >> BW_SCALE) as u32;
        let mut inflight_at_edt = inflight_now;
        if self.pacing_gain > BBR_UNIT {
            inflight_at_edt += self.tso_segs_goal(tp);
        }
        inflight_at_edt.saturating_sub(interval_delivered)
    }

    /// `bbr_ack_aggregation_cwnd` (v2alpha: also in STARTUP, as its default
    /// `extra_acked_in_startup` = 1 allows; the same as v3).
    #[inline]
    pub(super) fn ack_aggregation_cwnd(&self) -> u32 {
        if self.p.extra_acked_gain == 0 {
            return 0;
        }
        let max_aggr_cwnd = (self.bw() as u64 * EXTRA_ACKED_MAX_US / BW_UNIT) as u32;
        let aggr_cwnd =
            ((self.p.extra_acked_gain as u64 * self.extra_acked() as u64) >> BBR_SCALE) as u32;
        aggr_cwnd.min(max_aggr_cwnd)
    }

    /// `bbr_probe_rtt_cwnd`: max(cwnd_min_target, BDP * probe_rtt_cwnd_gain).
    pub(super) fn probe_rtt_cwnd(&self) -> u32 {
        self.p
            .cwnd_min_target
            .max(self.bdp(self.bw(), self.p.probe_rtt_cwnd_gain))
    }

    /// `bbr_set_cwnd`.
    #[inline]
    pub(super) fn set_cwnd(&mut self, tp: &mut TcpSock, acked: u32, bw: u32, gain: u32) {
        let mut cwnd = tp.snd_cwnd;
        'done: {
            if acked == 0 {
                break 'done;
            }
            let mut target_cwnd = self.bdp(bw, gain);
            target_cwnd += self.ack_aggregation_cwnd();
            target_cwnd = self.quantization_budget(tp, target_cwnd);
            self.try_fast_path = false;
            if self.full_bw_reached {
                cwnd += acked;
                if cwnd >= target_cwnd {
                    cwnd = target_cwnd;
                    self.try_fast_path = true;
                }
            } else if cwnd < target_cwnd || cwnd < 2 * self.init_cwnd {
                cwnd += acked;
            } else {
                self.try_fast_path = true;
            }
            cwnd = cwnd.max(self.p.cwnd_min_target);
        }
        tp.set_cwnd(cwnd.min(tp.snd_cwnd_clamp));
        if self.mode == Mode::ProbeRtt {
            let c = tp.snd_cwnd.min(self.probe_rtt_cwnd());
            tp.set_cwnd(c);
        }
    }
}
