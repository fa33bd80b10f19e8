//! TCP Low Priority (Kuzmanovic and Knightly, 2003), as Linux 6.18 implements it in
//! `net/ipv4/tcp_lp.c`.
//!
//! TCP-LP uses only the bandwidth other flows leave: it infers congestion early from the
//! one-way delay (OWD), measured from TCP timestamps (the peer's TSval against the TSecr echo of
//! our clock), before any loss. It keeps the minimum and maximum OWD and a smoothed OWD
//! (`sowd`, 7/8 old + 1/8 new); when the smoothed OWD exceeds `owd_min + 15 %` of the range, it
//! halves cwnd, or drops it to 1 if this happens again within the "inference" time (3 times the
//! last RTT, from timestamps) after the previous cut. During the inference time cwnd does not
//! grow; otherwise it is Reno. The peer's TS clock rate ("remote HZ") is estimated continuously
//! from how TSval advances against TSecr.
//!
//! We follow Linux 6.18. Every function names the kernel function it follows; the arithmetic is
//! the kernel's, including its integer types: `u32` OWDs, `s64` intermediates and `u32`
//! products that wrap (so an OWD computed from a TSval behind the TSecr becomes a large number,
//! not a negative one, as in C). TCP-LP has no module parameters.
//!
//! Where we diverge from the kernel, and why:
//! - No code diverges. The simulator's receiver clocks its TSval at 1 kHz (as Linux does since
//!   4.13, `TCP_TS_HZ`), so the remote-HZ estimate settles at 1000 and the OWD is
//!   `tsval * (1000 / remote_hz) - tsecr`, i.e. `tsval - tsecr` in ms. We keep the kernel's
//!   integer quirk: while the estimate is above 1000 (TSval advanced faster than TSecr, e.g. the
//!   delay grew quickly), `1000 / remote_hz` is 0 and the OWD sample is `-tsecr` as a `u32`.
//! - Like the kernel, the hooks read the ACK's timestamp fields (`rx_rcv_tsval`,
//!   `rx_rcv_tsecr`) without checking `rx_saw_tstamp`: TCP-LP needs timestamps on.

use super::params::ParamReader;
use super::reno::{tcp_reno_cong_avoid, tcp_reno_ssthresh, tcp_reno_undo_cwnd};
use super::{AckSample, AlgorithmInfo, CcError, CongestionControl, Params};
use crate::tcp::sock::TcpSock;

/// Resolution of the OWD: the local TS clock rate, 1 kHz (`LP_RESOL` = `TCP_TS_HZ`).
pub const LP_RESOL: u32 = 1000;
/// Our timestamp clock rate (`TCP_TS_HZ`).
pub const TCP_TS_HZ: u32 = 1000;
/// Flag: the remote HZ estimate is valid (`LP_VALID_RHZ`).
pub const LP_VALID_RHZ: u32 = 1 << 0;
/// Flag: the OWD sample is valid (`LP_VALID_OWD`).
pub const LP_VALID_OWD: u32 = 1 << 1;
/// Flag: the smoothed OWD is within the threshold (`LP_WITHIN_THR`).
pub const LP_WITHIN_THR: u32 = 1 << 3;
/// Flag: within the inference time after a cut (`LP_WITHIN_INF`).
pub const LP_WITHIN_INF: u32 = 1 << 4;

/// What `cclab presets` lists for TCP-LP.
pub fn info() -> AlgorithmInfo {
    AlgorithmInfo {
        name: "lp",
        base: "lp",
        description: "TCP-LP: low-priority Reno that halves cwnd (or drops it to 1) when the \
                      one-way delay rises above 15% of its range",
        source: "Linux 6.18 net/ipv4/tcp_lp.c",
        params: Vec::new(),
        preset_params: Params::new(),
    }
}

/// Build TCP-LP; it has no tunables (the registry rejects any name given).
pub fn build(algorithm: &str, params: &Params) -> Result<Box<dyn CongestionControl>, CcError> {
    let _reader = ParamReader::new(algorithm, params);
    Ok(Box::new(Lp::new()))
}

/// TCP-LP: `struct lp` (net/ipv4/tcp_lp.c).
#[derive(Debug, Clone)]
pub struct Lp {
    /// `LP_*` state flags (`flag`).
    flag: u32,
    /// Smoothed OWD << 3, ms (`sowd`).
    sowd: u32,
    /// Min OWD (`owd_min`).
    owd_min: u32,
    /// Max OWD (`owd_max`).
    owd_max: u32,
    /// Reserved max OWD (`owd_max_rsv`).
    owd_max_rsv: u32,
    /// Estimated remote HZ (`remote_hz`).
    remote_hz: u32,
    /// Remote reference time, the last TSval (`remote_ref_time`).
    remote_ref_time: u32,
    /// Local reference time, the last TSecr (`local_ref_time`).
    local_ref_time: u32,
    /// Our TS clock at the last cut, ms (`last_drop`).
    last_drop: u32,
    /// Current inference time, ms (`inference`).
    inference: u32,
}

impl Default for Lp {
    fn default() -> Self {
        Lp::new()
    }
}

impl Lp {
    /// A TCP-LP instance in its `init` state.
    pub fn new() -> Self {
        Lp {
            flag: 0,
            sowd: 0,
            owd_min: 0xffff_ffff,
            owd_max: 0,
            owd_max_rsv: 0,
            remote_hz: 0,
            remote_ref_time: 0,
            local_ref_time: 0,
            last_drop: 0,
            inference: 0,
        }
    }

    /// `LP_*` state flags.
    pub fn flag(&self) -> u32 {
        self.flag
    }

    /// (owd_min, owd_max, smoothed OWD), in the OWD's unit (ms here).
    pub fn owd(&self) -> (u32, u32, u32) {
        (self.owd_min, self.owd_max, self.sowd >> 3)
    }

    /// Estimated TS clock rate of the peer, Hz.
    pub fn remote_hz(&self) -> u32 {
        self.remote_hz
    }

    /// Current inference time, ms.
    pub fn inference(&self) -> u32 {
        self.inference
    }

    /// net/ipv4/tcp_lp.c: tcp_lp_remote_hz_estimator(): EWMA (1/64) of
    /// `TCP_TS_HZ * dTSval / dTSecr` between consecutive ACKs; returns the estimate.
    fn remote_hz_estimator(&mut self, tp: &TcpSock) -> u32 {
        let mut rhz: i64 = (self.remote_hz << 6) as i64; // remote HZ << 6, u32 shift as in C
        let (tsval, tsecr) = (tp.rx_rcv_tsval, tp.rx_rcv_tsecr);
        // Not yet recorded reference times, or no difference to compute with: skip.
        if self.remote_ref_time != 0
            && self.local_ref_time != 0
            && tsval != self.remote_ref_time
            && tsecr != self.local_ref_time
        {
            // u32 arithmetic, as in C; the result is never negative.
            let mut m = (TCP_TS_HZ.wrapping_mul(tsval.wrapping_sub(self.remote_ref_time))
                / tsecr.wrapping_sub(self.local_ref_time)) as i64;
            if rhz > 0 {
                m -= rhz >> 6; // m is now error in remote HZ est
                rhz += m; // 63/64 old + 1/64 new
            } else {
                rhz = m << 6;
            }
        }
        // Record time for successful remote HZ calc.
        if (rhz >> 6) > 0 {
            self.flag |= LP_VALID_RHZ;
        } else {
            self.flag &= !LP_VALID_RHZ;
        }
        // Record reference time stamp.
        self.remote_ref_time = tsval;
        self.local_ref_time = tsecr;
        (rhz >> 6) as u32
    }

    /// net/ipv4/tcp_lp.c: tcp_lp_owd_calculator(): one-way delay in relative format,
    /// `tsval * (LP_RESOL / remote_hz) - tsecr * (LP_RESOL / TCP_TS_HZ)` in `u32`.
    fn owd_calculator(&mut self, tp: &TcpSock) -> u32 {
        self.remote_hz = self.remote_hz_estimator(tp);
        let mut owd: i64 = 0;
        if self.flag & LP_VALID_RHZ != 0 {
            // The kernel computes this in u32 (it wraps), then widens it: never negative.
            owd = tp
                .rx_rcv_tsval
                .wrapping_mul(LP_RESOL / self.remote_hz)
                .wrapping_sub(tp.rx_rcv_tsecr.wrapping_mul(LP_RESOL / TCP_TS_HZ))
                as i64;
        }
        if owd > 0 {
            self.flag |= LP_VALID_OWD;
        } else {
            self.flag &= !LP_VALID_OWD;
        }
        owd as u32
    }

    /// net/ipv4/tcp_lp.c: tcp_lp_rtt_sample(): take an OWD sample into min, max (forgetting
    /// the max of the max) and the smoothed OWD.
    fn rtt_sample(&mut self, tp: &TcpSock) {
        let mut mowd = self.owd_calculator(tp) as i64;
        // Sorry that we don't have valid data.
        if self.flag & LP_VALID_RHZ == 0 || self.flag & LP_VALID_OWD == 0 {
            return;
        }
        if mowd < self.owd_min as i64 {
            self.owd_min = mowd as u32;
        }
        // Always forget the max of the max: we just set owd_max as one below it.
        if mowd > self.owd_max as i64 {
            if mowd > self.owd_max_rsv as i64 {
                self.owd_max = if self.owd_max_rsv == 0 {
                    mowd as u32
                } else {
                    self.owd_max_rsv
                };
                self.owd_max_rsv = mowd as u32;
            } else {
                self.owd_max = mowd as u32;
            }
        }
        // Smoothed OWD: 7/8 old + 1/8 new (the first sample is taken as is).
        if self.sowd != 0 {
            mowd -= (self.sowd >> 3) as i64; // m is now error in owd est
            self.sowd = (self.sowd as i64 + mowd) as u32;
        } else {
            self.sowd = (mowd << 3) as u32;
        }
    }
}

impl CongestionControl for Lp {
    fn name(&self) -> &'static str {
        "lp"
    }

    /// net/ipv4/tcp_lp.c: tcp_lp_init().
    fn init(&mut self, _tp: &mut TcpSock) {
        *self = Lp::new();
    }

    /// `.ssthresh = tcp_reno_ssthresh`.
    fn ssthresh(&mut self, tp: &mut TcpSock) -> u32 {
        tcp_reno_ssthresh(tp)
    }

    /// net/ipv4/tcp_lp.c: tcp_lp_cong_avoid(): Reno, except within the inference time.
    fn cong_avoid(&mut self, tp: &mut TcpSock, ack: u64, acked: u32) {
        if self.flag & LP_WITHIN_INF == 0 {
            tcp_reno_cong_avoid(tp, ack, acked);
        }
    }

    /// net/ipv4/tcp_lp.c: tcp_lp_pkts_acked(): OWD sample, inference time (3 RTTs from
    /// timestamps), and on early congestion (smoothed OWD not below `owd_min + 15 %` of the
    /// range) cwnd to half, or to 1 within the inference time of the previous cut.
    fn pkts_acked(&mut self, tp: &mut TcpSock, sample: &AckSample) {
        let now = tp.tcp_time_stamp_ms;
        if sample.rtt_us > 0 {
            self.rtt_sample(tp);
        }
        // Calc inference.
        let delta = now.wrapping_sub(tp.rx_rcv_tsecr);
        if (delta as i32) > 0 {
            self.inference = delta.wrapping_mul(3);
        }
        // Test if within inference.
        if self.last_drop != 0 && now.wrapping_sub(self.last_drop) < self.inference {
            self.flag |= LP_WITHIN_INF;
        } else {
            self.flag &= !LP_WITHIN_INF;
        }
        // Test if within threshold (u32 arithmetic as in C).
        let range = self.owd_max.wrapping_sub(self.owd_min);
        if (self.sowd >> 3) < self.owd_min.wrapping_add(range.wrapping_mul(15) / 100) {
            self.flag |= LP_WITHIN_THR;
        } else {
            self.flag &= !LP_WITHIN_THR;
        }
        if self.flag & LP_WITHIN_THR != 0 {
            return;
        }
        // Reset owd_min and owd_max here, so that they are usually within threshold when
        // within inference.
        self.owd_min = self.sowd >> 3;
        self.owd_max = self.sowd >> 2;
        self.owd_max_rsv = self.sowd >> 2;
        if self.flag & LP_WITHIN_INF != 0 {
            // Happened within inference: drop snd_cwnd to 1.
            tp.set_cwnd(1);
        } else {
            // Happened after inference: cut snd_cwnd in half.
            tp.set_cwnd((tp.snd_cwnd >> 1).max(1));
        }
        // Record this drop time.
        self.last_drop = now;
    }

    /// `.undo_cwnd = tcp_reno_undo_cwnd`.
    fn undo_cwnd(&mut self, tp: &mut TcpSock) -> u32 {
        tcp_reno_undo_cwnd(tp)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u32 = 1000;
    /// ACK spacing on our TS clock, ms.
    const GAP_MS: u32 = 100;
    /// RTT seen from timestamps (now - TSecr), ms: inference time 3 * 200 = 600 ms.
    const RTT_MS: u32 = 200;

    struct Link {
        cc: Lp,
        tp: TcpSock,
        /// Our TS clock when the acked segment was sent.
        sent_ms: u32,
    }

    impl Link {
        fn new(cwnd: u32) -> Self {
            let mut tp = TcpSock::new(MSS, cwnd, 100_000, crate::tcp::clock::KernelClock::new(250));
            tp.is_cwnd_limited = true;
            tp.snd_ssthresh = 2; // congestion avoidance
            let mut cc = Lp::new();
            cc.init(&mut tp);
            Link {
                cc,
                tp,
                sent_ms: 1000,
            }
        }

        /// One ACK for a segment sent GAP_MS after the previous one, whose forward one-way
        /// delay was `owd_ms` (the receiver's TS clock runs at 1 kHz in step with ours).
        fn ack(&mut self, owd_ms: u32) {
            self.sent_ms += GAP_MS;
            let tp = &mut self.tp;
            tp.rx_saw_tstamp = true;
            tp.rx_rcv_tsecr = self.sent_ms;
            tp.rx_rcv_tsval = self.sent_ms + owd_ms;
            tp.tcp_time_stamp_ms = self.sent_ms + RTT_MS;
            tp.tcp_mstamp_us = tp.tcp_time_stamp_ms as u64 * 1000;
            tp.snd_una += MSS as u64;
            let sample = AckSample {
                pkts_acked: 1,
                rtt_us: RTT_MS as i64 * 1000,
                in_flight: 1,
            };
            self.cc.pkts_acked(tp, &sample);
            let ack = tp.snd_una;
            self.cc.cong_avoid(tp, ack, 1);
        }
    }

    #[test]
    fn remote_hz_and_owd_from_timestamps() {
        let mut l = Link::new(100);
        l.ack(10);
        // First ACK: only the reference times are recorded.
        assert_eq!((l.cc.remote_hz(), l.cc.flag() & LP_VALID_RHZ), (0, 0));
        l.ack(10);
        assert_eq!(l.cc.remote_hz(), 1000);
        assert_ne!(l.cc.flag() & (LP_VALID_RHZ | LP_VALID_OWD), 0);
        assert_eq!(l.cc.inference(), 3 * RTT_MS);
        // The first valid sample is both min and max: the range is 0 and TCP-LP infers
        // congestion at once, halving cwnd (as the kernel does).
        assert_eq!(l.tp.snd_cwnd, 50);
        assert_eq!(l.cc.owd(), (10, 20, 10));
        // A 2 ms increase over a 100 ms gap: m = 1020, the estimate stays 1000 (1/64 gain).
        l.ack(12);
        assert_eq!(l.cc.remote_hz(), 1000);
        assert_eq!(l.cc.owd(), (10, 20, 10)); // sowd 82 >> 3
                                              // A 10 ms jump over 100 ms: m = 1100, the estimate goes above 1000 and, as in the
                                              // kernel, 1000 / remote_hz = 0 makes the OWD sample -tsecr (as u32).
        l.ack(22);
        assert_eq!(l.cc.remote_hz(), 1001);
        // The bogus sample (not the max, it is forgotten) drives sowd out of range: a cut to
        // 1, as we are within the inference time of the first cut.
        let sowd = 82u32
            .wrapping_add(0u32.wrapping_sub(l.tp.rx_rcv_tsecr))
            .wrapping_sub(10);
        assert_eq!(l.cc.owd(), (sowd >> 3, sowd >> 2, sowd >> 3));
        assert_eq!(l.tp.snd_cwnd, 1);
    }

    #[test]
    fn early_congestion_halves_then_drops_to_one_within_inference() {
        let mut l = Link::new(100);
        let mut cuts = Vec::new();
        fn step(l: &mut Link, owd: u32, i: u32, cuts: &mut Vec<(u32, u32)>) {
            let before = l.tp.snd_cwnd;
            l.ack(owd);
            if l.tp.snd_cwnd < before {
                cuts.push((i, l.tp.snd_cwnd));
            }
        }
        // 1. The first valid OWD sample (ACK 1) has a zero range: halve. owd_min = 10 and
        //    owd_max = 20 then (sowd >> 3 and sowd >> 2): threshold 10 + 15 % of 10 = 11.
        for i in 0..8 {
            step(&mut l, 10, i, &mut cuts);
        }
        assert_eq!(cuts, [(1, 50)]);
        assert_eq!(l.cc.owd(), (10, 20, 10));
        // Within the inference time (600 ms) the window does not grow; after it, Reno does.
        assert_eq!(l.tp.snd_cwnd, 50);
        assert_ne!(l.cc.flag() & LP_WITHIN_THR, 0);
        assert_eq!(l.cc.flag() & LP_WITHIN_INF, 0);
        // 2. The OWD rises 3 ms (30 % of the range): sowd >> 3 reaches 11 on the 3rd ACK; the
        //    last cut was 900 ms ago, beyond the inference time: halve again.
        for i in 8..11 {
            step(&mut l, 13, i, &mut cuts);
        }
        assert_eq!(cuts, [(1, 50), (10, 25)]);
        assert_eq!(l.cc.owd(), (11, 22, 11));
        // 3. The OWD stays high: sowd >> 3 reaches the new threshold (11 + 1) 400 ms after the
        //    cut, within the inference time: cwnd drops to 1.
        for i in 11..16 {
            step(&mut l, 13, i, &mut cuts);
        }
        assert_eq!(cuts, [(1, 50), (10, 25), (14, 1)]);
        assert_eq!(l.cc.remote_hz(), 1000);
        // No growth while within the inference time.
        assert_ne!(l.cc.flag() & LP_WITHIN_INF, 0);
        assert_eq!(l.tp.snd_cwnd, 1);
    }

    #[test]
    fn reno_growth_outside_inference_and_reno_loss_response() {
        let mut l = Link::new(20);
        l.ack(10);
        l.ack(10); // cut to 10
        assert_eq!(l.tp.snd_cwnd, 10);
        for _ in 0..5 {
            l.ack(10); // within 600 ms of the cut: frozen
        }
        assert_eq!(l.tp.snd_cwnd, 10);
        for _ in 0..15 {
            l.ack(10); // Reno: +1 per cwnd ACKs (2 credits were taken before the freeze)
        }
        assert_eq!(l.tp.snd_cwnd, 11);
        // ACKs with no RTT sample take no OWD sample.
        let (min, max, s) = l.cc.owd();
        l.tp.rx_rcv_tsval += 500;
        l.cc.pkts_acked(
            &mut l.tp,
            &AckSample {
                pkts_acked: 1,
                rtt_us: -1,
                in_flight: 1,
            },
        );
        assert_eq!(l.cc.owd(), (min, max, s));
        l.tp.snd_cwnd = 31;
        assert_eq!(l.cc.ssthresh(&mut l.tp), 15);
        l.tp.prior_cwnd = 40;
        assert_eq!(l.cc.undo_cwnd(&mut l.tp), 40);
    }

    #[test]
    fn info_and_build() {
        let i = info();
        assert_eq!(
            (i.name, i.base, i.source),
            ("lp", "lp", "Linux 6.18 net/ipv4/tcp_lp.c")
        );
        assert!(i.params.is_empty() && i.preset_params.is_empty());
        assert_eq!(build("lp", &Params::new()).unwrap().name(), "lp");
    }
}
