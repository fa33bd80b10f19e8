//! RTT estimation and the retransmission timeout, as Linux 6.18 `net/ipv4/tcp_input.c`
//! (`tcp_rtt_estimator`, `tcp_set_rto`, `tcp_update_rtt_min`, `tcp_ack_update_rtt`).
//! This is RFC 6298 with Linux's refinements: rttvar is floored at rto_min and only decays once
//! per RTT, so RTO = srtt + max(4 * mdev, rto_min) in steady state.
//!
//! `rto_min_mode = "rfc6298"` runs RFC 6298's own estimator instead (section 2), with the
//! minimum as its 2.4 has it, a floor of the RTO: RTO = max(rto_min, SRTT + max(G, 4 RTTVAR)).
//! What we implement, exactly (`rfc6298_estimator`, `set_rto`):
//! - first sample R: SRTT = R, RTTVAR = R/2 (2.2); later samples R': RTTVAR = 3/4 RTTVAR +
//!   1/4 |SRTT - R'|, then SRTT = 7/8 SRTT + 1/8 R' (2.3), in the same fixed point as Linux
//!   (`srtt_us` holds 8 SRTT, `mdev_us` 4 RTTVAR, so TCP_INFO's rttvar is RTTVAR);
//! - G is one jiffy (the timer's granularity); the RTO is rounded up to whole jiffies, then
//!   floored at rto_min (2.4) and capped at rto_max (2.5), as Linux's form is;
//! - the rest is shared with Linux's form: the same samples (Karn's rule, `tcp_ack_update_rtt`'s
//!   choice, the handshake's), backoff doubling (5.5) and its reset on a valid sample.
//!
//! - `rtt_gains = "per_window"`: the gains scaled by the samples a window gives, as RFC 7323
//!   Appendix G suggests for a sender that samples every ACK (timestamps): alpha' = alpha /
//!   ExpectedSamples, beta' = beta / ExpectedSamples, ExpectedSamples = ceil(FlightSize /
//!   (2 SMSS)), FlightSize here the packets still out after the ACK (at least 1 sample). With
//!   RFC 6298's per-sample gains and a sample per ACK, RTTVAR falls by 3/4 per ACK, so behind a
//!   steady queue it is gone within a round trip and RTO = SRTT + one jiffy: any later delay of
//!   one packet fires the timer (S3's W-TCP on a 3G link; docs/studies.md). Scaled, it decays
//!   by about 3/4 per round trip, as a sender timing one segment per window (RFC 6298 section 3)
//!   would have it.
//!
//! Where it differs from Linux's form: no floor of the variance at rto_min (a 4 s minimum gives
//! RTO = max(4 s, srtt + 4 rttvar), not about srtt + 4 s), no once-per-RTT decay of rttvar
//! (`mdev_max`), and no Eifel-style damping of the variance when the RTT falls (Linux's
//! `m >>= 3` for a falling RTT).

use super::sender::Sender;

/// How the minimum RTO acts (`flows[].rto_min_mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RtoMinMode {
    /// Linux's `tcp_rtt_estimator`: rttvar is never below rto_min, RTO = srtt + max(4 mdev,
    /// rto_min).
    #[default]
    Linux,
    /// RFC 6298 section 2: RTO = max(rto_min, srtt + 4 rttvar), with the RFC's estimator.
    Rfc6298,
}

/// The gains of RFC 6298's estimator (`flows[].rtt_gains`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RttGains {
    /// alpha = 1/8, beta = 1/4 per sample (RFC 6298 2.3).
    #[default]
    PerSample,
    /// Divided by the samples expected per window (RFC 7323 Appendix G).
    PerWindow,
}

/// `tcp_min_rtt_wlen`: window of the min-RTT filter, seconds (Linux default 300).
pub const MIN_RTT_WLEN_S: u32 = 300;

impl Sender {
    /// `tcp_rtt_estimator`: fold one RTT measurement (us) into srtt/mdev/rttvar (or RFC
    /// 6298's estimator, by `rto_min_mode`).
    pub(crate) fn rtt_estimator(&mut self, mrtt_us: i64) {
        if self.cfg.rto_min_mode == RtoMinMode::Rfc6298 {
            return self.rfc6298_estimator(mrtt_us);
        }
        let tp = &mut self.tp;
        let mut m = mrtt_us;
        let mut srtt = tp.srtt_us as i64;
        let rto_min_us = self.cfg.rto_min_us as i64;
        if srtt != 0 {
            m -= srtt >> 3; // m is now error in rtt est
            srtt += m; // rtt = 7/8 rtt + 1/8 new
            if m < 0 {
                m = -m; // m is now abs(error)
                m -= (tp.mdev_us >> 2) as i64; // similar update on mdev
                                               // Linux: "This is similar to one of Eifel findings. Eifel blocks mdev
                                               // updates when rtt decreases."
                if m > 0 {
                    m >>= 3;
                }
            } else {
                m -= (tp.mdev_us >> 2) as i64;
            }
            tp.mdev_us = (tp.mdev_us as i64 + m).max(0) as u32; // mdev = 3/4 mdev + 1/4 new
            if tp.mdev_us > tp.mdev_max_us {
                tp.mdev_max_us = tp.mdev_us;
                if tp.mdev_max_us > tp.rttvar_us {
                    tp.rttvar_us = tp.mdev_max_us;
                }
            }
            if tp.snd_una > self.rtt_seq {
                if tp.mdev_max_us < tp.rttvar_us {
                    tp.rttvar_us -= (tp.rttvar_us - tp.mdev_max_us) >> 2;
                }
                self.rtt_seq = tp.snd_nxt;
                tp.mdev_max_us = rto_min_us as u32;
            }
        } else {
            // No previous measure.
            srtt = m << 3; // take the measured time to be rtt
            tp.mdev_us = (m << 1) as u32; // make sure rto = 3*rtt
            tp.rttvar_us = (tp.mdev_us as i64).max(rto_min_us) as u32;
            tp.mdev_max_us = tp.rttvar_us;
            self.rtt_seq = tp.snd_nxt;
        }
        tp.srtt_us = srtt.max(1) as u32;
    }

    /// RFC 6298 section 2.2-2.3 in Linux's fixed point: `srtt_us` = 8 SRTT, `mdev_us` =
    /// `rttvar_us` = 4 RTTVAR (so `mdev_us >> 2`, TCP_INFO's rttvar, is RTTVAR).
    fn rfc6298_estimator(&mut self, mrtt_us: i64) {
        let tp = &mut self.tp;
        let r = mrtt_us.max(1);
        if tp.srtt_us == 0 {
            // 2.2: SRTT <- R, RTTVAR <- R/2 (4 RTTVAR = 2 R).
            tp.srtt_us = (r << 3).min(u32::MAX as i64) as u32;
            tp.mdev_us = (r << 1).min(u32::MAX as i64) as u32;
        } else {
            // 2.3: RTTVAR <- 3/4 RTTVAR + 1/4 |SRTT - R'| (first), SRTT <- 7/8 SRTT + 1/8 R';
            // per window (RFC 7323 Appendix G) each step divided by the expected samples n:
            // 4 RTTVAR += (|err| - RTTVAR) / n, 8 SRTT += (R' - SRTT) / n.
            let n = match self.cfg.rtt_gains {
                RttGains::PerSample => 1,
                RttGains::PerWindow => ((i64::from(tp.packets_out) + 1) / 2).max(1),
            };
            let srtt = tp.srtt_us as i64;
            let err = (r - (srtt >> 3)).abs();
            let mdev = tp.mdev_us as i64;
            tp.mdev_us = (mdev + (err - (mdev >> 2)) / n).max(0) as u32;
            tp.srtt_us = (srtt + (r - (srtt >> 3)) / n).max(1) as u32;
        }
        tp.rttvar_us = tp.mdev_us;
        tp.mdev_max_us = tp.mdev_us;
    }

    /// `tcp_set_rto` + `tcp_bound_rto`: RTO = srtt + rttvar, in whole jiffies, at most rto_max.
    /// With `rto_min_mode = "rfc6298"`: RTO = max(rto_min, SRTT + max(G, 4 RTTVAR)), G one
    /// jiffy (RFC 6298 2.3, 2.4), in whole jiffies, at most rto_max. (RFC 4015's adapted timer,
    /// `sto_adapt_rto`, is set through the same fields, so the same rule.)
    pub(crate) fn set_rto(&mut self) {
        let srtt_us = (self.tp.srtt_us >> 3) as u64;
        let us = match self.cfg.rto_min_mode {
            RtoMinMode::Linux => srtt_us + self.tp.rttvar_us as u64,
            RtoMinMode::Rfc6298 => {
                let g_us = self.jiffies_to_us(1);
                srtt_us + (self.tp.rttvar_us as u64).max(g_us)
            }
        };
        let mut rto = self.jiffies_to_us(self.us_to_jiffies(us));
        if self.cfg.rto_min_mode == RtoMinMode::Rfc6298 {
            rto = rto.max(self.cfg.rto_min_us);
        }
        self.tp.icsk_rto_us = rto.min(self.cfg.rto_max_us) as u32;
    }

    /// `tcp_update_rtt_min`: windowed min of RTT samples (0 counts as one jiffy).
    pub(crate) fn update_rtt_min(&mut self, rtt_us: i64) {
        let wlen = MIN_RTT_WLEN_S * self.tp.clock.hz;
        let v = if rtt_us > 0 {
            rtt_us as u32
        } else {
            self.jiffies_to_us(1) as u32
        };
        let now = self.tp.jiffies();
        self.tp.min_rtt_us = self.rtt_min.running_min(wlen, now, v);
    }

    /// `tcp_ack_update_rtt`: choose the RTT sample of this ACK (ACK timing first, then SACK
    /// timing, then TSecr per RFC 7323's RTTM rule) and update the estimators.
    /// Returns the `ca_rtt_us` handed to congestion control (-1 when none).
    pub(crate) fn ack_update_rtt(
        &mut self,
        acked_new_data: bool,
        mut seq_rtt_us: i64,
        sack_rtt_us: i64,
        mut ca_rtt_us: i64,
        tsecr: Option<u32>,
    ) -> i64 {
        if seq_rtt_us < 0 {
            seq_rtt_us = sack_rtt_us;
        }
        if seq_rtt_us < 0 && acked_new_data {
            if let Some(ecr) = tsecr {
                let delta_ms = self.ts_now().wrapping_sub(ecr) as i64;
                if (0..(i32::MAX as i64 / 1000)).contains(&delta_ms) {
                    let d = delta_ms.max(1) * 1000;
                    seq_rtt_us = d;
                    ca_rtt_us = d;
                }
            }
        }
        if seq_rtt_us < 0 {
            return ca_rtt_us;
        }
        self.update_rtt_min(ca_rtt_us);
        let sent_us = self.tp.tcp_mstamp_us.saturating_sub(seq_rtt_us as u64);
        if !self.sto_adapt_rto(seq_rtt_us, sent_us) {
            self.rtt_estimator(seq_rtt_us);
        }
        self.set_rto();
        // RFC 6298: only reset backoff on valid RTT measurement.
        self.icsk_backoff = 0;
        ca_rtt_us
    }

    /// `usecs_to_jiffies` (rounds up).
    pub(crate) fn us_to_jiffies(&self, us: u64) -> u64 {
        (us * self.tp.clock.hz as u64).div_ceil(1_000_000)
    }

    /// `jiffies_to_usecs`.
    pub(crate) fn jiffies_to_us(&self, j: u64) -> u64 {
        j * 1_000_000 / self.tp.clock.hz as u64
    }
}

#[cfg(test)]
mod tests {
    use super::{RtoMinMode, RttGains};
    use crate::tcp::tests_support::Setup;

    /// RTO (ms) after each sample (ms), from a fresh estimator, at HZ 1000 (G = 1 ms).
    fn rtos(mode: RtoMinMode, rto_min_ms: u64, samples_ms: &[i64]) -> Vec<u32> {
        rtos_with(mode, rto_min_ms, RttGains::PerSample, 0, samples_ms)
    }

    /// `rtos` with RFC 6298's gains and `packets_out` packets out while sampling.
    fn rtos_with(
        mode: RtoMinMode,
        rto_min_ms: u64,
        gains: RttGains,
        packets_out: u32,
        samples_ms: &[i64],
    ) -> Vec<u32> {
        let mut s = Setup::default().sender();
        s.cfg.rto_min_mode = mode;
        s.cfg.rto_min_us = rto_min_ms * 1000;
        s.cfg.rtt_gains = gains;
        s.tp.packets_out = packets_out;
        s.tp.srtt_us = 0;
        samples_ms
            .iter()
            .map(|&m| {
                s.rtt_estimator(m * 1000);
                s.set_rto();
                s.tp.icsk_rto_us / 1000
            })
            .collect()
    }

    /// Linux: first sample R = 100: srtt 100, mdev 2R = 200, rttvar max(200, rto_min 200) =
    /// 200, RTO 300. Then R' = 120: srtt 100 + 20/8 = 102.5; mdev 200 + (20 - 200/4) = 170,
    /// below mdev_max, and no RTT has passed (snd_una not beyond rtt_seq), so rttvar stays 200:
    /// RTO 302.5, rounded up to the jiffy: 303.
    #[test]
    fn linux_mode_floors_the_variance() {
        assert_eq!(rtos(RtoMinMode::Linux, 200, &[100, 120]), [300, 303]);
        // A 4 s minimum: rttvar = 4000, RTO = srtt + 4 s.
        assert_eq!(rtos(RtoMinMode::Linux, 4000, &[100]), [4100]);
    }

    /// RFC 6298: R = 100: SRTT 100, RTTVAR 50, RTO max(200, 100 + 4 x 50) = 300. R' = 120:
    /// RTTVAR 3/4 x 50 + 1/4 x 20 = 42.5, SRTT 7/8 x 100 + 1/8 x 120 = 102.5, RTO 102.5 + 170
    /// = 272.5 -> 273. With a 4 s minimum the RTO is 4 s, not srtt + 4 s.
    #[test]
    fn rfc6298_mode_floors_the_rto() {
        assert_eq!(rtos(RtoMinMode::Rfc6298, 200, &[100, 120]), [300, 273]);
        assert_eq!(rtos(RtoMinMode::Rfc6298, 4000, &[100, 120]), [4000, 4000]);
        // A falling RTT moves RTTVAR by the full error (no Linux damping): R'' = 20 after 100:
        // RTTVAR 37.5 + 20 = 57.5, SRTT 90, RTO 90 + 230 = 320.
        assert_eq!(rtos(RtoMinMode::Rfc6298, 200, &[100, 20]), [300, 320]);
    }

    /// RFC 7323 Appendix G: with 20 packets out a window gives n = 10 samples, so each moves
    /// RTTVAR and SRTT a tenth as far. R = 100 then R' = 120: 4 RTTVAR = 200 + (20 - 50) / 10
    /// = 197 (RTTVAR 49.25), SRTT = 100 + 20 / 80 = 100.25, RTO 100.25 + 197 = 297.25 -> 298
    /// (per sample: 273). Behind a steady queue the variance lasts: 40 equal samples of 100 ms
    /// leave RTTVAR at 50 x 0.975^40 = 18.2 ms per window, against nothing per sample.
    #[test]
    fn per_window_gains_divide_each_step_by_the_samples_a_window_gives() {
        let run = |gains: RttGains, samples: &[i64]| {
            rtos_with(RtoMinMode::Rfc6298, 1, gains, 20, samples)
        };
        assert_eq!(run(RttGains::PerWindow, &[100, 120]), [300, 298]);
        assert_eq!(run(RttGains::PerSample, &[100, 120]), [300, 273]);
        let steady = [100i64; 41];
        let w = *run(RttGains::PerWindow, &steady).last().unwrap();
        let p = *run(RttGains::PerSample, &steady).last().unwrap();
        // 100 + 4 x 18.2 = 172.8 -> 173 per window; per sample RTTVAR is gone: 100 + 1 ms.
        assert!((172..=174).contains(&w), "{w}");
        assert!(p <= 102, "{p}");
    }
}
