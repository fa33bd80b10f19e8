//! BBR v1's model and state machine: the gain cycle, long-term (policer) bandwidth, the
//! max-bw and min-RTT filters, STARTUP/DRAIN/PROBE_RTT transitions (`net/ipv4/tcp_bbr.c`,
//! Linux 6.18: bbr_is_next_cycle_phase .. bbr_update_model).

use super::*;

impl Bbr {
    /// `bbr_is_next_cycle_phase`: end the phase after a min_rtt, or when the phase reached
    /// (gain > 1) or fell to (gain < 1) its inflight target.
    pub(super) fn is_next_cycle_phase(&self, tp: &TcpSock, rs: &RateSample) -> bool {
        let is_full_length = TcpSock::stamp_us_delta(tp.delivered_mstamp_us, self.cycle_mstamp)
            > self.min_rtt_us as u64;
        if self.pacing_gain == BBR_UNIT {
            return is_full_length;
        }
        let inflight = self.packets_in_net_at_edt(tp, rs.prior_in_flight);
        let bw = self.max_bw();
        if self.pacing_gain > BBR_UNIT {
            return is_full_length
                && (rs.losses != 0 || inflight >= self.inflight(tp, bw, self.pacing_gain));
        }
        is_full_length || inflight <= self.inflight(tp, bw, BBR_UNIT)
    }

    /// `bbr_advance_cycle_phase`.
    pub(super) fn advance_cycle_phase(&mut self, tp: &TcpSock) {
        self.cycle_idx = (self.cycle_idx + 1) & (CYCLE_LEN - 1);
        self.cycle_mstamp = tp.delivered_mstamp_us;
    }

    /// `bbr_update_cycle_phase`.
    pub(super) fn update_cycle_phase(&mut self, tp: &TcpSock, rs: &RateSample) {
        if self.mode == Mode::ProbeBw && self.is_next_cycle_phase(tp, rs) {
            self.advance_cycle_phase(tp);
        }
    }

    /// `bbr_reset_probe_bw_mode`: enter PROBE_BW at a random phase other than the drain one.
    pub(super) fn reset_probe_bw_mode(&mut self, tp: &mut TcpSock) {
        self.mode = Mode::ProbeBw;
        self.cycle_idx = CYCLE_LEN - 1 - tp.random_u32_below(self.p.cycle_rand);
        self.advance_cycle_phase(tp); // flip to next phase of gain cycle
    }

    /// `bbr_reset_mode`.
    pub(super) fn reset_mode(&mut self, tp: &mut TcpSock) {
        if !self.full_bw_reached {
            self.mode = Mode::Startup;
        } else {
            self.reset_probe_bw_mode(tp);
        }
    }

    /// `bbr_reset_lt_bw_sampling_interval`.
    pub(super) fn reset_lt_bw_sampling_interval(&mut self, tp: &TcpSock) {
        self.lt_last_stamp = (tp.delivered_mstamp_us / 1000) as u32;
        self.lt_last_delivered = tp.delivered;
        self.lt_last_lost = tp.lost;
        self.lt_rtt_cnt = 0;
    }

    /// `bbr_reset_lt_bw_sampling`.
    pub(super) fn reset_lt_bw_sampling(&mut self, tp: &TcpSock) {
        self.lt_bw = 0;
        self.lt_use_bw = false;
        self.lt_is_sampling = false;
        self.reset_lt_bw_sampling_interval(tp);
    }

    /// `bbr_lt_bw_interval_done`: two consistent lossy intervals mean a policer.
    pub(super) fn lt_bw_interval_done(&mut self, tp: &TcpSock, bw: u32) {
        if self.lt_bw != 0 {
            // The kernel's abs() of a u32 difference: as a signed int.
            let diff = (bw.wrapping_sub(self.lt_bw) as i32).unsigned_abs();
            if diff as u64 * BBR_UNIT as u64 <= LT_BW_RATIO as u64 * self.lt_bw as u64
                || Self::rate_bytes_per_sec(tp, diff as u64, BBR_UNIT) <= LT_BW_DIFF
            {
                // All criteria are met; estimate we're policed.
                self.lt_bw = ((bw as u64 + self.lt_bw as u64) >> 1) as u32;
                self.lt_use_bw = true;
                self.pacing_gain = BBR_UNIT; // try to avoid drops
                self.lt_rtt_cnt = 0;
                return;
            }
        }
        self.lt_bw = bw;
        self.reset_lt_bw_sampling_interval(tp);
    }

    /// `bbr_lt_bw_sampling`: token-bucket policer detection.
    pub(super) fn lt_bw_sampling(&mut self, tp: &mut TcpSock, rs: &RateSample) {
        if self.lt_use_bw {
            if self.mode == Mode::ProbeBw && self.round_start {
                self.lt_rtt_cnt = (self.lt_rtt_cnt + 1) & 0x7f;
                if self.lt_rtt_cnt >= LT_BW_MAX_RTTS {
                    self.reset_lt_bw_sampling(tp); // stop using lt_bw
                    self.reset_probe_bw_mode(tp); // restart gain cycling
                }
            }
            return;
        }
        // Wait for the first loss before sampling, to let the policer exhaust its tokens.
        if !self.lt_is_sampling {
            if rs.losses == 0 {
                return;
            }
            self.reset_lt_bw_sampling_interval(tp);
            self.lt_is_sampling = true;
        }
        // To avoid underestimates, reset sampling if we run out of data.
        if rs.is_app_limited {
            self.reset_lt_bw_sampling(tp);
            return;
        }
        if self.round_start {
            self.lt_rtt_cnt = (self.lt_rtt_cnt + 1) & 0x7f;
        }
        if self.lt_rtt_cnt < LT_INTVL_MIN_RTTS {
            return; // sampling interval needs to be longer
        }
        if self.lt_rtt_cnt > 4 * LT_INTVL_MIN_RTTS {
            self.reset_lt_bw_sampling(tp); // interval is too long
            return;
        }
        // End the interval when a packet is lost: the tokens are probably exhausted.
        if rs.losses == 0 {
            return;
        }
        let lost = tp.lost.wrapping_sub(self.lt_last_lost);
        let delivered = tp.delivered.wrapping_sub(self.lt_last_delivered);
        // Is loss rate (lost/delivered) >= lt_loss_thresh? If not, wait.
        if delivered == 0 || (lost << BBR_SCALE) < LT_LOSS_THRESH * delivered {
            return;
        }
        // Average delivery rate in this sampling interval.
        let t = ((tp.delivered_mstamp_us / 1000) as u32).wrapping_sub(self.lt_last_stamp);
        if (t as i32) < 1 {
            return; // interval is less than one ms, so wait
        }
        if t >= u32::MAX / 1000 {
            self.reset_lt_bw_sampling(tp); // interval too long; reset
            return;
        }
        let t_us = t as u64 * 1000;
        let bw = delivered as u64 * BW_UNIT / t_us;
        self.lt_bw_interval_done(tp, bw as u32);
    }

    /// `bbr_update_bw`: count rounds and feed the max filter with this ACK's delivery rate.
    pub(super) fn update_bw(&mut self, tp: &mut TcpSock, rs: &RateSample) {
        self.round_start = false;
        if rs.delivered < 0 || rs.interval_us <= 0 {
            return; // not a valid observation
        }
        // See if we've reached the next RTT.
        if !before(rs.prior_delivered, self.next_rtt_delivered) {
            self.next_rtt_delivered = tp.delivered;
            self.rtt_cnt = self.rtt_cnt.wrapping_add(1);
            self.round_start = true;
            self.packet_conservation = false;
        }
        self.lt_bw_sampling(tp, rs);
        // A lower bound of the bottleneck bandwidth: delivered / interval.
        let bw = rs.delivered as u64 * BW_UNIT / rs.interval_us as u64;
        // App-limited samples only count when they beat the model.
        if !rs.is_app_limited || bw >= self.max_bw() as u64 {
            self.bw.running_max(BW_RTTS, self.rtt_cnt, bw as u32);
        }
    }

    /// `bbr_update_ack_aggregation`: windowed max of data ACKed beyond bw * interval.
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
            if self.extra_acked_win_rtts >= self.p.extra_acked_win_rtts {
                self.extra_acked_win_rtts = 0;
                self.extra_acked_win_idx ^= 1;
                self.extra_acked[self.extra_acked_win_idx] = 0;
            }
        }
        // Packets we expected to be delivered over the epoch.
        let epoch_us = TcpSock::stamp_us_delta(tp.delivered_mstamp_us, self.ack_epoch_mstamp);
        let mut expected_acked = (self.bw() as u64 * epoch_us / BW_UNIT) as u32;
        // Reset the epoch if the ACK rate is below the expected rate or the epoch is old.
        if self.ack_epoch_acked <= expected_acked
            || self.ack_epoch_acked + rs.acked_sacked >= ACK_EPOCH_ACKED_RESET_THRESH
        {
            self.ack_epoch_acked = 0;
            self.ack_epoch_mstamp = tp.delivered_mstamp_us;
            expected_acked = 0;
        }
        // Excess data delivered, beyond what was expected.
        self.ack_epoch_acked = (self.ack_epoch_acked + rs.acked_sacked).min(0xFFFFF);
        let extra_acked = (self.ack_epoch_acked - expected_acked).min(tp.snd_cwnd);
        if extra_acked > self.extra_acked[self.extra_acked_win_idx] as u32 {
            self.extra_acked[self.extra_acked_win_idx] = extra_acked as u16;
        }
    }

    /// `bbr_check_full_bw_reached`: 3 rounds without 25 % growth mean the pipe is full.
    pub(super) fn check_full_bw_reached(&mut self, rs: &RateSample) {
        if self.full_bw_reached || !self.round_start || rs.is_app_limited {
            return;
        }
        let bw_thresh = ((self.full_bw as u64 * FULL_BW_THRESH as u64) >> BBR_SCALE) as u32;
        if self.max_bw() >= bw_thresh {
            self.full_bw = self.max_bw();
            self.full_bw_cnt = 0;
            return;
        }
        self.full_bw_cnt += 1;
        self.full_bw_reached = self.full_bw_cnt >= FULL_BW_CNT;
    }

    /// `bbr_check_drain`: enter DRAIN when the pipe is full, PROBE_BW when inflight <= BDP.
    pub(super) fn check_drain(&mut self, tp: &mut TcpSock) {
        if self.mode == Mode::Startup && self.full_bw_reached {
            self.mode = Mode::Drain; // drain queue we created
            tp.snd_ssthresh = self.inflight(tp, self.max_bw(), BBR_UNIT);
        }
        if self.mode == Mode::Drain
            && self.packets_in_net_at_edt(tp, tp.packets_in_flight())
                <= self.inflight(tp, self.max_bw(), BBR_UNIT)
        {
            self.reset_probe_bw_mode(tp); // we estimate queue is drained
        }
    }

    /// `bbr_check_probe_rtt_done`.
    pub(super) fn check_probe_rtt_done(&mut self, tp: &mut TcpSock) {
        if !(self.probe_rtt_done_stamp != 0 && after(tp.jiffies(), self.probe_rtt_done_stamp)) {
            return;
        }
        self.min_rtt_stamp = tp.jiffies(); // wait a while until PROBE_RTT
        tp.set_cwnd(tp.snd_cwnd.max(self.prior_cwnd));
        self.reset_mode(tp);
    }

    /// `bbr_update_min_rtt`: the 10 s min filter, and PROBE_RTT when it expires.
    pub(super) fn update_min_rtt(&mut self, tp: &mut TcpSock, rs: &RateSample) {
        let now = tp.jiffies();
        let filter_expired = after(
            now,
            self.min_rtt_stamp
                .wrapping_add(self.p.min_rtt_win_sec.wrapping_mul(tp.clock.hz)),
        );
        if rs.rtt_us >= 0
            && ((rs.rtt_us as u64) < self.min_rtt_us as u64
                || (filter_expired && !rs.is_ack_delayed))
        {
            self.min_rtt_us = rs.rtt_us.min(u32::MAX as i64) as u32;
            self.min_rtt_stamp = now;
        }
        if self.p.probe_rtt_mode_ms > 0
            && filter_expired
            && !self.idle_restart
            && self.mode != Mode::ProbeRtt
        {
            self.mode = Mode::ProbeRtt; // dip, drain queue
            self.save_cwnd(tp); // note cwnd so we can restore it
            self.probe_rtt_done_stamp = 0;
        }
        if self.mode == Mode::ProbeRtt {
            // Ignore low rate samples during this mode.
            let v = tp.delivered.wrapping_add(tp.packets_in_flight());
            tp.app_limited = if v == 0 { 1 } else { v };
            // Maintain min packets in flight for max(200 ms, 1 round).
            if self.probe_rtt_done_stamp == 0 && tp.packets_in_flight() <= self.p.cwnd_min_target {
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
        // Restart after idle ends only once we process a new S/ACK for data.
        if rs.delivered > 0 {
            self.idle_restart = false;
        }
    }

    /// `bbr_update_gains`.
    pub(super) fn update_gains(&mut self) {
        let (pacing, cwnd) = match self.mode {
            Mode::Startup => (self.p.high_gain, self.p.high_gain),
            Mode::Drain => (self.p.drain_gain, self.p.high_gain),
            Mode::ProbeBw => (
                if self.lt_use_bw {
                    BBR_UNIT
                } else {
                    PACING_GAIN[self.cycle_idx as usize]
                },
                self.p.cwnd_gain,
            ),
            Mode::ProbeRtt => (BBR_UNIT, BBR_UNIT),
        };
        self.pacing_gain = pacing;
        self.cwnd_gain = cwnd;
    }

    /// `bbr_update_model`.
    pub(super) fn update_model(&mut self, tp: &mut TcpSock, rs: &RateSample) {
        self.update_bw(tp, rs);
        self.update_ack_aggregation(tp, rs);
        self.update_cycle_phase(tp, rs);
        self.check_full_bw_reached(rs);
        self.check_drain(tp);
        self.update_min_rtt(tp, rs);
        self.update_gains();
    }
}
