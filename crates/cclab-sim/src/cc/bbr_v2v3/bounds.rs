//! BBRv2/v3 loss and ECN response: ecn_alpha, the upper bound inflight_hi (raised while
//! probing, cut when loss or CE is too high), the lower bounds bw_lo / inflight_lo, and the
//! per-round congestion signals (google/bbr v3 `tcp_bbr.c`, v2alpha `tcp_bbr2.c`).

use super::*;

impl BbrNext {
    /// `bbr_handle_queue_too_high_in_startup`.
    pub(super) fn handle_queue_too_high_in_startup(&mut self, tp: &TcpSock) {
        self.full_bw_reached = true;
        self.startup_loss_exits += 1;
        let bdp = self.inflight(tp, self.max_bw(), BBR_UNIT);
        // v3 keeps at least this round's delivered volume; v2alpha takes the BDP.
        self.inflight_hi = match self.v {
            Version::V3 => bdp.max(self.inflight_latest),
            Version::V2 => bdp,
        };
    }

    /// `bbr_check_ecn_too_high_in_startup`: `full_ecn_cnt` rounds in a row with a CE ratio of at
    /// least `ecn_thresh` end STARTUP.
    pub(super) fn check_ecn_too_high_in_startup(&mut self, tp: &TcpSock, ce_ratio: u32) {
        if self.full_bw_reached
            || !self.ecn_eligible
            || self.p.full_ecn_cnt == 0
            || self.p.ecn_thresh == 0
        {
            return;
        }
        if ce_ratio >= self.p.ecn_thresh {
            self.startup_ecn_rounds += 1;
        } else {
            self.startup_ecn_rounds = 0;
        }
        if self.startup_ecn_rounds >= self.p.full_ecn_cnt {
            self.handle_queue_too_high_in_startup(tp);
        }
    }

    /// `bbr_update_ecn_alpha` (v3) / `bbr2_update_ecn_alpha` (v2alpha): the EWMA of the
    /// fraction of CE-echoed deliveries, once per round; -1 when not available.
    pub(super) fn update_ecn_alpha(&mut self, tp: &TcpSock) -> i32 {
        let eligible_now = |s: &Self| {
            !s.ecn_eligible
                && can_use_ecn(tp)
                && (s.min_rtt_us <= s.p.ecn_max_rtt_us || s.p.ecn_max_rtt_us == 0)
        };
        match self.v {
            // v3 decides eligibility first and updates alpha only when eligible (PLB, which
            // would also want alpha, is not modelled).
            Version::V3 => {
                if eligible_now(self) && self.p.ecn_factor != 0 {
                    self.ecn_eligible = true;
                }
                if !self.ecn_eligible {
                    return -1;
                }
            }
            // v2alpha returns early without ecn_factor and updates alpha whether or not the
            // flow is eligible yet (eligibility is set after the delivered check below).
            Version::V2 => {
                if self.p.ecn_factor == 0 {
                    return -1;
                }
            }
        }
        let delivered = tp.delivered.wrapping_sub(self.alpha_last_delivered);
        let delivered_ce = tp.delivered_ce.wrapping_sub(self.alpha_last_delivered_ce);
        if delivered == 0 || (delivered as i32) < 0 || (delivered_ce as i32) < 0 {
            return -1;
        }
        if self.v == Version::V2 && eligible_now(self) {
            self.ecn_eligible = true;
        }
        let ce_ratio = ((delivered_ce as u64) << BBR_SCALE) / delivered as u64;
        let gain = self.p.ecn_alpha_gain as u64;
        let alpha = (((BBR_UNIT as u64 - gain) * self.ecn_alpha as u64) >> BBR_SCALE)
            + ((gain * ce_ratio) >> BBR_SCALE);
        self.ecn_alpha = alpha.min(BBR_UNIT as u64) as u32;
        self.alpha_last_delivered = tp.delivered;
        self.alpha_last_delivered_ce = tp.delivered_ce;
        self.check_ecn_too_high_in_startup(tp, ce_ratio as u32);
        ce_ratio as i32
    }

    /// `bbr_raise_inflight_hi_slope`: double the PROBE_UP growth each round.
    pub(super) fn raise_inflight_hi_slope(&mut self, tp: &TcpSock) {
        let growth_this_round = 1u32 << self.bw_probe_up_rounds;
        self.bw_probe_up_rounds = (self.bw_probe_up_rounds + 1).min(30);
        self.bw_probe_up_cnt = (tp.snd_cwnd / growth_this_round).max(1);
    }

    /// `bbr_probe_inflight_hi_upward`.
    pub(super) fn probe_inflight_hi_upward(&mut self, tp: &TcpSock, rs: &RateSample) {
        if !tp.is_cwnd_limited || tp.snd_cwnd < self.inflight_hi {
            if self.v == Version::V2 {
                self.bw_probe_up_acks = 0; // v2alpha: don't accumulate unused credits
            }
            return;
        }
        self.bw_probe_up_acks += rs.acked_sacked;
        if self.bw_probe_up_acks >= self.bw_probe_up_cnt {
            let delta = self.bw_probe_up_acks / self.bw_probe_up_cnt;
            self.bw_probe_up_acks -= delta * self.bw_probe_up_cnt;
            self.inflight_hi = self.inflight_hi.saturating_add(delta);
            self.try_fast_path = false;
        }
        if self.round_start {
            self.raise_inflight_hi_slope(tp);
        }
    }

    /// `bbr_is_inflight_too_high`: lost / tx_in_flight > loss_thresh (or the ECN ratio).
    #[inline]
    pub(super) fn is_inflight_too_high(&self, rs: &RateSample) -> bool {
        if rs.lost > 0 && rs.tx_in_flight > 0 {
            let loss_thresh = (rs.tx_in_flight as u64 * self.p.loss_thresh as u64) >> BBR_SCALE;
            if rs.lost as u64 > loss_thresh {
                return true;
            }
        }
        if rs.delivered_ce > 0 && rs.delivered > 0 && self.ecn_eligible && self.p.ecn_thresh != 0 {
            let ecn_thresh = (rs.delivered as u64 * self.p.ecn_thresh as u64) >> BBR_SCALE;
            if rs.delivered_ce as u64 > ecn_thresh {
                return true;
            }
        }
        false
    }

    /// `bbr_inflight_hi_from_lost_skb`: the inflight at which the loss rate crossed
    /// loss_thresh within this lost skb.
    pub(super) fn inflight_hi_from_lost_skb(&self, rs: &RateSample, pcount: u32) -> u32 {
        let loss_thresh = self.p.loss_thresh as u64;
        let inflight_prev = rs.tx_in_flight as i64 - pcount as i64;
        if inflight_prev < 0 {
            return NONE;
        }
        let lost_prev = rs.lost as i64 - pcount as i64;
        if lost_prev < 0 {
            return NONE;
        }
        let loss_budget = (inflight_prev as u64 * loss_thresh + BBR_UNIT as u64 - 1) >> BBR_SCALE;
        let lost_prefix = if lost_prev as u64 >= loss_budget {
            0
        } else {
            ((loss_budget - lost_prev as u64) << BBR_SCALE) / (BBR_UNIT as u64 - loss_thresh)
        };
        (inflight_prev as u64 + lost_prefix).min(NONE as u64) as u32
    }

    /// `bbr_inflight_with_headroom`.
    #[inline]
    pub(super) fn inflight_with_headroom(&self) -> u32 {
        if self.inflight_hi == NONE {
            return NONE;
        }
        let headroom = (((self.inflight_hi as u64 * self.p.inflight_headroom as u64) >> BBR_SCALE)
            as u32)
            .max(1);
        (self.inflight_hi.saturating_sub(headroom)).max(self.p.cwnd_min_target)
    }

    /// `bbr_bound_cwnd_for_inflight_model`.
    #[inline]
    pub(super) fn bound_cwnd_for_inflight_model(&self, tp: &mut TcpSock) {
        if !self.initialized {
            return;
        }
        let mut cap = NONE;
        if self.mode == Mode::ProbeBw && self.cycle_idx != BW_PROBE_CRUISE {
            cap = self.inflight_hi;
        } else if self.mode == Mode::ProbeRtt
            || (self.mode == Mode::ProbeBw && self.cycle_idx == BW_PROBE_CRUISE)
        {
            cap = self.inflight_with_headroom();
        }
        cap = cap.min(self.inflight_lo);
        cap = cap.max(self.p.cwnd_min_target);
        tp.set_cwnd(cap.min(tp.snd_cwnd));
    }

    /// `bbr_ecn_cut`.
    pub(super) fn ecn_cut(&self) -> u32 {
        BBR_UNIT - ((self.ecn_alpha * self.p.ecn_factor) >> BBR_SCALE)
    }

    /// `bbr_init_lower_bounds`.
    pub(super) fn init_lower_bounds(&mut self, tp: &TcpSock, init_bw: bool) {
        if init_bw && self.bw_lo == NONE {
            self.bw_lo = self.max_bw();
        }
        if self.inflight_lo == NONE {
            self.inflight_lo = tp.snd_cwnd;
        }
    }

    /// `bbr_loss_lower_bounds`: cut bw_lo and inflight_lo by beta, not below this round's.
    pub(super) fn loss_lower_bounds(&mut self) {
        let loss_cut = (BBR_UNIT - self.p.beta) as u64;
        self.bw_lo = self
            .bw_latest
            .max(((self.bw_lo as u64 * loss_cut) >> BBR_SCALE) as u32);
        self.inflight_lo = self
            .inflight_latest
            .max(((self.inflight_lo as u64 * loss_cut) >> BBR_SCALE) as u32);
    }

    /// `bbr_adapt_lower_bounds`: once per round outside probing, on loss (or ECN).
    pub(super) fn adapt_lower_bounds(&mut self, tp: &TcpSock) {
        if self.is_probing_bandwidth() {
            return;
        }
        let mut ecn_inflight_lo = NONE;
        if self.ecn_in_round && self.p.ecn_factor != 0 {
            self.init_lower_bounds(tp, false);
            ecn_inflight_lo =
                ((self.inflight_lo as u64 * self.ecn_cut() as u64) >> BBR_SCALE) as u32;
        }
        if self.loss_in_round {
            self.init_lower_bounds(tp, true);
            self.loss_lower_bounds();
        }
        self.inflight_lo = self.inflight_lo.min(ecn_inflight_lo);
        if self.v == Version::V3 {
            self.bw_lo = self.bw_lo.max(1);
        }
    }

    /// `bbr_reset_lower_bounds`.
    pub(super) fn reset_lower_bounds(&mut self) {
        self.bw_lo = NONE;
        self.inflight_lo = NONE;
    }

    /// `bbr_reset_congestion_signals`.
    pub(super) fn reset_congestion_signals(&mut self) {
        self.loss_in_round = false;
        self.ecn_in_round = false;
        self.loss_in_cycle = false;
        self.ecn_in_cycle = false;
        self.bw_latest = 0;
        self.inflight_latest = 0;
    }

    /// `bbr_exit_loss_recovery` (inline in v2alpha's `bbr2_set_state`).
    pub(super) fn exit_loss_recovery(&mut self, tp: &mut TcpSock) {
        tp.set_cwnd(tp.snd_cwnd.max(self.prior_cwnd));
        self.try_fast_path = false;
    }

    /// `bbr_update_latest_delivery_signals`.
    #[inline]
    pub(super) fn update_latest_delivery_signals(
        &mut self,
        tp: &TcpSock,
        rs: &RateSample,
        ctx: &Ctx,
    ) {
        self.loss_round_start = false;
        if rs.interval_us <= 0 || rs.acked_sacked == 0 {
            return;
        }
        self.bw_latest = self.bw_latest.max(ctx.sample_bw);
        self.inflight_latest = self.inflight_latest.max(rs.delivered.max(0) as u32);
        if !before(rs.prior_delivered, self.loss_round_delivered) {
            self.loss_round_delivered = tp.delivered;
            self.loss_round_start = true;
        }
    }

    /// `bbr_advance_latest_delivery_signals` (v3).
    #[inline]
    pub(super) fn advance_latest_delivery_signals(&mut self, rs: &RateSample, ctx: &Ctx) {
        if self.loss_round_start && !rs.is_acking_tlp_retrans_seq {
            self.bw_latest = ctx.sample_bw;
            self.inflight_latest = rs.delivered.max(0) as u32;
        }
    }

    /// `bbr_update_congestion_signals`.
    #[inline]
    pub(super) fn update_congestion_signals(&mut self, tp: &TcpSock, rs: &RateSample, ctx: &Ctx) {
        if self.v == Version::V2 {
            self.loss_round_start = false;
        }
        if rs.interval_us <= 0 || rs.acked_sacked == 0 {
            return;
        }
        let bw = ctx.sample_bw;
        if !rs.is_app_limited || bw >= self.max_bw() {
            self.take_max_bw_sample(bw);
        }
        self.loss_in_round |= rs.losses > 0;
        if self.v == Version::V2 {
            // bbr2_update_congestion_signals: the "latest" filters and the loss round live
            // here in v2alpha (v3 split them into update/advance_latest_delivery_signals).
            self.bw_latest = self.bw_latest.max(ctx.sample_bw);
            self.inflight_latest = self.inflight_latest.max(rs.delivered.max(0) as u32);
            if before(rs.prior_delivered, self.loss_round_delivered) {
                return;
            }
            self.loss_round_delivered = tp.delivered;
            self.loss_round_start = true;
            self.adapt_lower_bounds(tp);
            self.loss_in_round = false;
            self.ecn_in_round = false;
            self.bw_latest = ctx.sample_bw;
            self.inflight_latest = rs.delivered.max(0) as u32;
            return;
        }
        if !self.loss_round_start {
            return;
        }
        self.adapt_lower_bounds(tp);
        self.loss_in_round = false;
        self.ecn_in_round = false;
    }
}
