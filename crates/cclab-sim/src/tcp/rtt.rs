//! RTT estimation and the retransmission timeout, as Linux 6.18 `net/ipv4/tcp_input.c`
//! (`tcp_rtt_estimator`, `tcp_set_rto`, `tcp_update_rtt_min`, `tcp_ack_update_rtt`).
//! This is RFC 6298 with Linux's refinements: rttvar is floored at rto_min and only decays once
//! per RTT, so RTO = srtt + max(4 * mdev, rto_min) in steady state.

use super::sender::Sender;

/// `tcp_min_rtt_wlen`: window of the min-RTT filter, seconds (Linux default 300).
pub const MIN_RTT_WLEN_S: u32 = 300;

impl Sender {
    /// `tcp_rtt_estimator`: fold one RTT measurement (us) into srtt/mdev/rttvar.
    pub(crate) fn rtt_estimator(&mut self, mrtt_us: i64) {
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

    /// `tcp_set_rto` + `tcp_bound_rto`: RTO = srtt + rttvar, in whole jiffies, at most rto_max.
    pub(crate) fn set_rto(&mut self) {
        let us = (self.tp.srtt_us >> 3) as u64 + self.tp.rttvar_us as u64;
        let rto = self
            .jiffies_to_us(self.us_to_jiffies(us))
            .min(self.cfg.rto_max_us);
        self.tp.icsk_rto_us = rto as u32;
    }

    /// `tcp_update_rtt_min`: windowed min of RTT samples (0 counts as one jiffy).
    pub(crate) fn update_rtt_min(&mut self, rtt_us: i64) {
        let wlen = MIN_RTT_WLEN_S * self.tp.hz;
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
        self.rtt_estimator(seq_rtt_us);
        self.set_rto();
        // RFC 6298: only reset backoff on valid RTT measurement.
        self.icsk_backoff = 0;
        ca_rtt_us
    }

    /// `usecs_to_jiffies` (rounds up).
    pub(crate) fn us_to_jiffies(&self, us: u64) -> u64 {
        (us * self.tp.hz as u64).div_ceil(1_000_000)
    }

    /// `jiffies_to_usecs`.
    pub(crate) fn jiffies_to_us(&self, j: u64) -> u64 {
        j * 1_000_000 / self.tp.hz as u64
    }
}
