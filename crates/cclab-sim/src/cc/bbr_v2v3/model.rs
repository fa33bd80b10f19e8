//! BBRv2/v3 model: round trips, the bandwidth sample and max-bw filter, ACK aggregation,
//! min_rtt and PROBE_RTT, gains, and the STARTUP / DRAIN exits (google/bbr v3 `tcp_bbr.c`,
//! v2alpha `tcp_bbr2.c`).

use super::*;

impl BbrNext {
    /// `bbr_update_round_start`.
    #[inline]
    pub(super) fn update_round_start(&mut self, tp: &TcpSock, rs: &RateSample) {
        self.round_start = false;
        if rs.interval_us > 0 && !before(rs.prior_delivered, self.next_rtt_delivered) {
            self.next_rtt_delivered = tp.delivered;
            self.round_start = true;
        }
    }

    /// `bbr_calculate_bw_sample`: delivered / interval, rounded up.
    #[inline]
    pub(super) fn calculate_bw_sample(&self, rs: &RateSample, ctx: &mut Ctx) {
        if rs.interval_us > 0 && rs.delivered >= 0 {
            let bw = (rs.delivered as u64 * BW_UNIT).div_ceil(rs.interval_us as u64);
            ctx.sample_bw = bw.min(u32::MAX as u64) as u32;
        }
    }

    /// `bbr_update_ack_aggregation` (1-round window before the pipe is full).
    #[inline]
    pub(super) fn update_ack_aggregation(&mut self, tp: &TcpSock, rs: &RateSample) {
        if self.p.extra_acked_gain == 0
            || rs.acked_sacked == 0
            || rs.delivered < 0
            || rs.interval_us <= 0
        {
            return;
        }
        if self.round_start {
            self.extra_acked_win_rtts = (self.extra_acked_win_rtts + 1).min(0x1f);
            let thresh = if self.full_bw_reached {
                self.p.extra_acked_win_rtts
            } else {
                1
            };
            if self.extra_acked_win_rtts >= thresh {
                self.extra_acked_win_rtts = 0;
                self.extra_acked_win_idx ^= 1;
                self.extra_acked[self.extra_acked_win_idx] = 0;
            }
        }
        let epoch_us = TcpSock::stamp_us_delta(tp.delivered_mstamp_us, self.ack_epoch_mstamp);
        let mut expected_acked = (self.bw() as u64 * epoch_us / BW_UNIT) as u32;
        if self.ack_epoch_acked <= expected_acked
            || self.ack_epoch_acked + rs.acked_sacked >= ACK_EPOCH_ACKED_RESET_THRESH
        {
            self.ack_epoch_acked = 0;
            self.ack_epoch_mstamp = tp.delivered_mstamp_us;
            expected_acked = 0;
        }
        self.ack_epoch_acked = (self.ack_epoch_acked + rs.acked_sacked).min(0xFFFFF);
        let extra = (self.ack_epoch_acked - expected_acked)
            .min(tp.snd_cwnd)
            .min(0xFFFF);
        if extra > self.extra_acked[self.extra_acked_win_idx] {
            self.extra_acked[self.extra_acked_win_idx] = extra;
        }
    }

    /// `bbr_check_probe_rtt_done`.
    pub(super) fn check_probe_rtt_done(&mut self, tp: &mut TcpSock) {
        if !(self.probe_rtt_done_stamp != 0 && after(tp.jiffies(), self.probe_rtt_done_stamp)) {
            return;
        }
        self.probe_rtt_min_stamp = tp.jiffies(); // schedule next PROBE_RTT
        tp.set_cwnd(tp.snd_cwnd.max(self.prior_cwnd));
        self.exit_probe_rtt(tp);
    }

    /// `bbr_update_min_rtt`: the 5 s probe_rtt_min filter times PROBE_RTT; the 10 s min_rtt
    /// filter is refreshed from it.
    #[inline(always)]
    pub(super) fn update_min_rtt(&mut self, tp: &mut TcpSock, rs: &RateSample) {
        let now = tp.jiffies();
        let expire = self
            .probe_rtt_min_stamp
            .wrapping_add(tp.msecs_to_jiffies(self.p.probe_rtt_win_ms));
        let probe_rtt_expired = after(now, expire);
        if rs.rtt_us >= 0
            && ((rs.rtt_us as u64) < self.probe_rtt_min_us as u64
                // v2alpha also takes an equal sample (`<=`), refreshing the stamp.
                || (self.v == Version::V2 && rs.rtt_us as u64 == self.probe_rtt_min_us as u64)
                || (probe_rtt_expired && !rs.is_ack_delayed))
        {
            self.probe_rtt_min_us = rs.rtt_us.min(u32::MAX as i64) as u32;
            self.probe_rtt_min_stamp = now;
        }
        let expire = self
            .min_rtt_stamp
            .wrapping_add(self.p.min_rtt_win_sec.wrapping_mul(tp.clock.hz));
        let min_rtt_expired = after(now, expire);
        if self.probe_rtt_min_us <= self.min_rtt_us || min_rtt_expired {
            self.min_rtt_us = self.probe_rtt_min_us;
            self.min_rtt_stamp = self.probe_rtt_min_stamp;
        }
        if self.p.probe_rtt_mode_ms > 0
            && probe_rtt_expired
            && !self.idle_restart
            && self.mode != Mode::ProbeRtt
        {
            self.mode = Mode::ProbeRtt;
            self.save_cwnd(tp);
            self.probe_rtt_done_stamp = 0;
            self.ack_phase = AckPhase::ProbeStopping;
            self.next_rtt_delivered = tp.delivered;
        }
        if self.mode == Mode::ProbeRtt {
            let v = tp.delivered.wrapping_add(tp.packets_in_flight());
            tp.app_limited = if v == 0 { 1 } else { v };
            if self.probe_rtt_done_stamp == 0 && tp.packets_in_flight() <= self.probe_rtt_cwnd() {
                self.probe_rtt_done_stamp =
                    now.wrapping_add(tp.msecs_to_jiffies(self.p.probe_rtt_mode_ms));
                self.probe_rtt_round_done = false;
                self.next_rtt_delivered = tp.delivered;
            } else if self.probe_rtt_done_stamp != 0 {
                if self.round_start {
                    self.probe_rtt_round_done = true;
                }
                if self.probe_rtt_round_done {
                    self.check_probe_rtt_done(tp);
                }
            }
        }
        if rs.delivered > 0 {
            self.idle_restart = false;
        }
    }

    /// `bbr_update_gains` (v2alpha has no extra PROBE_UP cwnd gain).
    #[inline]
    pub(super) fn update_gains(&mut self) {
        let (pacing, cwnd) = match self.mode {
            Mode::Startup => (self.p.startup_pacing_gain, self.p.startup_cwnd_gain),
            Mode::Drain => (self.p.drain_gain, self.p.startup_cwnd_gain),
            Mode::ProbeBw => {
                let mut c = self.p.cwnd_gain;
                if self.v == Version::V3
                    && self.p.bw_probe_cwnd_gain != 0
                    && self.cycle_idx == BW_PROBE_UP
                {
                    c += BBR_UNIT * self.p.bw_probe_cwnd_gain / 4;
                }
                (self.p.pacing_gain[self.cycle_idx as usize], c)
            }
            Mode::ProbeRtt => (BBR_UNIT, BBR_UNIT),
        };
        self.pacing_gain = pacing;
        self.cwnd_gain = cwnd;
    }

    /// `bbr_take_max_bw_sample`.
    #[inline]
    pub(super) fn take_max_bw_sample(&mut self, bw: u32) {
        self.bw_hi[1] = self.bw_hi[1].max(bw);
    }

    /// `bbr_advance_max_bw_filter`.
    pub(super) fn advance_max_bw_filter(&mut self) {
        if self.bw_hi[1] == 0 {
            return;
        }
        self.bw_hi[0] = self.bw_hi[1];
        self.bw_hi[1] = 0;
    }

    /// `bbr_reset_full_bw`.
    pub(super) fn reset_full_bw(&mut self) {
        self.full_bw = 0;
        self.full_bw_cnt = 0;
        self.full_bw_now = false;
    }

    /// `bbr_target_inflight`.
    #[inline]
    pub(super) fn target_inflight(&self, tp: &TcpSock) -> u32 {
        self.inflight(tp, self.bw(), BBR_UNIT).min(tp.snd_cwnd)
    }

    /// `bbr_is_probing_bandwidth`.
    pub(super) fn is_probing_bandwidth(&self) -> bool {
        self.mode == Mode::Startup
            || (self.mode == Mode::ProbeBw
                && (self.cycle_idx == BW_PROBE_REFILL || self.cycle_idx == BW_PROBE_UP))
    }

    /// `bbr_has_elapsed_in_phase`.
    #[inline]
    pub(super) fn has_elapsed_in_phase(&self, tp: &TcpSock, interval_us: u32) -> bool {
        tp.tcp_mstamp_us as i64 - (self.cycle_mstamp + interval_us as u64) as i64 > 0
    }

    /// `bbr_exit_probe_rtt`.
    pub(super) fn exit_probe_rtt(&mut self, tp: &mut TcpSock) {
        self.reset_lower_bounds();
        if self.full_bw_reached {
            self.mode = Mode::ProbeBw;
            self.start_bw_probe_down(tp);
            self.start_bw_probe_cruise();
        } else {
            self.mode = Mode::Startup;
        }
    }

    /// `bbr_check_loss_too_high_in_startup`: >= full_loss_cnt loss events in a recovery round
    /// with a loss rate above loss_thresh end STARTUP.
    #[inline]
    pub(super) fn check_loss_too_high_in_startup(&mut self, tp: &TcpSock, rs: &RateSample) {
        if self.full_bw_reached {
            return;
        }
        if rs.losses > 0 && self.loss_events_in_round < 0xf {
            self.loss_events_in_round += 1;
        }
        if self.p.full_loss_cnt != 0
            && self.loss_round_start
            && tp.ca_state == CaState::Recovery
            && self.loss_events_in_round >= self.p.full_loss_cnt
            && self.is_inflight_too_high(rs)
        {
            self.handle_queue_too_high_in_startup(tp);
            return;
        }
        if self.loss_round_start {
            self.loss_events_in_round = 0;
        }
    }

    /// `bbr_check_full_bw_reached`: v3 compares each sample and sets `full_bw_now`; v2alpha
    /// keeps v1's once-per-round test on max_bw.
    #[inline]
    pub(super) fn check_full_bw_reached(&mut self, rs: &RateSample, ctx: &Ctx) {
        match self.v {
            Version::V3 => {
                if self.full_bw_now || rs.is_app_limited {
                    return;
                }
                let bw_thresh =
                    ((self.full_bw as u64 * self.p.full_bw_thresh as u64) >> BBR_SCALE) as u32;
                if ctx.sample_bw >= bw_thresh {
                    self.reset_full_bw();
                    self.full_bw = ctx.sample_bw;
                    return;
                }
                if !self.round_start {
                    return;
                }
                self.full_bw_cnt += 1;
                self.full_bw_now = self.full_bw_cnt >= self.p.full_bw_cnt;
                self.full_bw_reached |= self.full_bw_now;
            }
            Version::V2 => {
                if self.full_bw_reached || !self.round_start || rs.is_app_limited {
                    return;
                }
                let bw_thresh =
                    ((self.full_bw as u64 * self.p.full_bw_thresh as u64) >> BBR_SCALE) as u32;
                if self.max_bw() >= bw_thresh {
                    self.full_bw = self.max_bw();
                    self.full_bw_cnt = 0;
                    return;
                }
                self.full_bw_cnt += 1;
                self.full_bw_reached = self.full_bw_cnt >= self.p.full_bw_cnt;
            }
        }
    }

    /// `bbr_check_drain`.
    #[inline(always)]
    pub(super) fn check_drain(&mut self, tp: &mut TcpSock) {
        if self.mode == Mode::Startup && self.full_bw_reached {
            self.mode = Mode::Drain;
            tp.snd_ssthresh = self.inflight(tp, self.max_bw(), BBR_UNIT);
            self.reset_congestion_signals();
        }
        if self.mode == Mode::Drain
            && self.packets_in_net_at_edt(tp, tp.packets_in_flight())
                <= self.inflight(tp, self.max_bw(), BBR_UNIT)
        {
            self.mode = Mode::ProbeBw;
            self.start_bw_probe_down(tp);
        }
    }

    /// `bbr_update_model`.
    #[inline]
    pub(super) fn update_model(&mut self, tp: &mut TcpSock, rs: &RateSample, ctx: &Ctx) {
        self.update_congestion_signals(tp, rs, ctx);
        self.update_ack_aggregation(tp, rs);
        self.check_loss_too_high_in_startup(tp, rs);
        self.check_full_bw_reached(rs, ctx);
        self.check_drain(tp);
        self.update_cycle_phase(tp, rs, ctx);
        self.update_min_rtt(tp, rs);
    }

    /// `bbr_run_fast_path`.
    #[inline]
    pub(super) fn run_fast_path(
        &mut self,
        tp: &mut TcpSock,
        update_model: &mut bool,
        rs: &RateSample,
        ctx: &Ctx,
    ) -> bool {
        if self.p.fast_path
            && self.try_fast_path
            && rs.is_app_limited
            && ctx.sample_bw < self.max_bw()
            && !self.loss_in_round
            && !self.ecn_in_round
        {
            let (prev_mode, prev_min_rtt) = (self.mode, self.min_rtt_us);
            self.check_drain(tp);
            self.update_cycle_phase(tp, rs, ctx);
            self.update_min_rtt(tp, rs);
            if self.mode == prev_mode && self.min_rtt_us == prev_min_rtt && self.try_fast_path {
                return true;
            }
            *update_model = false;
        }
        false
    }
}
