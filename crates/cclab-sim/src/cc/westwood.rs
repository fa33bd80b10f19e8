//! TCP Westwood+, as Linux 6.18 implements it in `net/ipv4/tcp_westwood.c`.
//!
//! Mascolo et al.'s end-to-end bandwidth estimation: the bytes acknowledged over each RTT-long
//! window (at least `TCP_WESTWOOD_RTT_MIN`, 50 ms) give a rate sample, smoothed twice by a 7/8
//! low-pass filter into `bw_est`. After a loss the window becomes the estimated BDP,
//! `bw_est * rtt_min / mss`: on `CA_EVENT_LOSS` (RTO) as ssthresh, and on `CA_EVENT_COMPLETE_CWR`
//! (end of fast recovery / CWR) as both ssthresh and cwnd. Probing is Reno's
//! (`.ssthresh = tcp_reno_ssthresh`, `.cong_avoid = tcp_reno_cong_avoid`).
//!
//! Units are the kernel's: RTTs and window lengths in jiffies (`usecs_to_jiffies` of the RTT
//! sample, `tcp_jiffies32` timestamps, `TCP_WESTWOOD_RTT_MIN = HZ / 20`,
//! `TCP_WESTWOOD_INIT_RTT = 20 * HZ`, with `HZ = tp.clock.hz`), bandwidth in bytes per jiffy, all
//! `u32` with C's wrapping (`bw_est * rtt_min` is a `u32` product, as in the kernel).
//!
//! Where we diverge from the kernel, and why:
//! - Sequence numbers are `u64` bytes here; `w->snd_una` is kept as a `u64` and the kernel's
//!   `u32` differences `tp->snd_una - w->snd_una` are taken in `u64` and truncated to `u32`,
//!   which gives the same values.
//! - `get_info` (inet_diag reporting) is not modelled; the estimates are readable through the
//!   accessors.

use super::reno::{tcp_reno_cong_avoid, tcp_reno_ssthresh, tcp_reno_undo_cwnd};
use super::{ack_flags, AckSample, AlgorithmInfo, CaEvent, CcError, CongestionControl, Params};
use crate::tcp::sock::TcpSock;

/// `TCP_WESTWOOD_RTT_MIN`: shortest bandwidth-sampling window, jiffies (50 ms).
pub fn tcp_westwood_rtt_min(hz: u32) -> u32 {
    hz / 20
}

/// `TCP_WESTWOOD_INIT_RTT`: RTT assumed before the first sample, jiffies (20 s).
pub fn tcp_westwood_init_rtt(hz: u32) -> u32 {
    20 * hz
}

/// TCP Westwood+: `struct westwood` (net/ipv4/tcp_westwood.c).
#[derive(Debug, Clone, Default)]
pub struct Westwood {
    /// First bandwidth estimation, not too smoothed, bytes/jiffy (`bw_ns_est`).
    bw_ns_est: u32,
    /// Bandwidth estimate, bytes/jiffy (`bw_est`).
    bw_est: u32,
    /// Start of the current sampling window, jiffies (`rtt_win_sx`).
    rtt_win_sx: u32,
    /// Bytes acked in the current sampling window (`bk`).
    bk: u32,
    /// snd_una at the last ACK, for the bytes each ACK acknowledges (`snd_una`).
    snd_una: u64,
    /// Bytes the current ACK is credited with (`cumul_ack`).
    cumul_ack: u32,
    /// Bytes already credited to duplicate ACKs (`accounted`).
    accounted: u32,
    /// Last RTT sample, jiffies (`rtt`).
    rtt: u32,
    /// Minimum observed RTT, jiffies (`rtt_min`).
    rtt_min: u32,
    /// Set until the first ACK aligns `snd_una` (`first_ack`).
    first_ack: bool,
    /// Reset `rtt_min` to the next RTT sample (`reset_rtt_min`).
    reset_rtt_min: bool,
}

impl Westwood {
    /// A Westwood+ instance, zeroed as the kernel's `icsk_ca_priv` is before `init`.
    pub fn new() -> Self {
        Westwood::default()
    }

    /// The bandwidth estimate, bytes per jiffy (`bw_est`).
    pub fn bw_est(&self) -> u32 {
        self.bw_est
    }

    /// The minimum RTT, jiffies (`rtt_min`).
    pub fn rtt_min(&self) -> u32 {
        self.rtt_min
    }

    /// The last RTT sample, jiffies (`rtt`).
    pub fn rtt(&self) -> u32 {
        self.rtt
    }

    /// Low-pass filter with constant coefficients: `(7a + b) / 8`.
    ///
    /// net/ipv4/tcp_westwood.c: westwood_do_filter().
    fn westwood_do_filter(a: u32, b: u32) -> u32 {
        a.wrapping_mul(7).wrapping_add(b) >> 3
    }

    /// Feed the rate of the window just closed (`bk / delta`) to the two filters; an empty
    /// filter takes the first sample as is.
    ///
    /// net/ipv4/tcp_westwood.c: westwood_filter().
    fn westwood_filter(&mut self, delta: u32) {
        if self.bw_ns_est == 0 && self.bw_est == 0 {
            // If the filter is empty fill it with the first sample of bandwidth.
            self.bw_ns_est = self.bk / delta;
            self.bw_est = self.bw_ns_est;
        } else {
            self.bw_ns_est = Self::westwood_do_filter(self.bw_ns_est, self.bk / delta);
            self.bw_est = Self::westwood_do_filter(self.bw_est, self.bw_ns_est);
        }
    }

    /// Close the sampling window when it is longer than `max(rtt, TCP_WESTWOOD_RTT_MIN)`
    /// jiffies: filter its rate and start a new one. On the first ACK, align `snd_una` first.
    ///
    /// net/ipv4/tcp_westwood.c: westwood_update_window().
    fn westwood_update_window(&mut self, tp: &TcpSock) {
        let now = tp.jiffies();
        // s32 delta compared with a u32 max_t(): the comparison is unsigned in C.
        let delta = now.wrapping_sub(self.rtt_win_sx);

        // Initialize snd_una with the first acked sequence number, so that the first
        // bandwidth sample does not count what was acked before.
        if self.first_ack {
            self.snd_una = tp.snd_una;
            self.first_ack = false;
        }

        // If the RTT is below 50 ms, keep building the sample: estimates over small time
        // intervals are better avoided.
        if self.rtt != 0 && delta > self.rtt.max(tcp_westwood_rtt_min(tp.clock.hz)) {
            self.westwood_filter(delta);
            self.bk = 0;
            self.rtt_win_sx = now;
        }
    }

    /// net/ipv4/tcp_westwood.c: update_rtt_min(): take the last RTT sample as the minimum after
    /// a reset, else keep the minimum.
    fn update_rtt_min(&mut self) {
        if self.reset_rtt_min {
            self.rtt_min = self.rtt;
            self.reset_rtt_min = false;
        } else {
            self.rtt_min = self.rtt.min(self.rtt_min);
        }
    }

    /// Fast path (pure in-order ACK): credit the bytes `snd_una` moved by.
    ///
    /// net/ipv4/tcp_westwood.c: westwood_fast_bw().
    fn westwood_fast_bw(&mut self, tp: &TcpSock) {
        self.westwood_update_window(tp);
        self.bk = self
            .bk
            .wrapping_add(tp.snd_una.wrapping_sub(self.snd_una) as u32);
        self.snd_una = tp.snd_una;
        self.update_rtt_min();
    }

    /// Slow path: the bytes to credit this ACK with. A duplicate ACK counts one MSS (and is
    /// remembered in `accounted`); a cumulative ACK over more than one MSS (delayed or partial
    /// ACK) counts what duplicate ACKs have not already been credited for.
    ///
    /// net/ipv4/tcp_westwood.c: westwood_acked_count().
    fn westwood_acked_count(&mut self, tp: &TcpSock) -> u32 {
        let mss = tp.mss_cache;
        self.cumul_ack = tp.snd_una.wrapping_sub(self.snd_una) as u32;

        // If cumul_ack is 0 this is a dupack since it's not moving snd_una.
        if self.cumul_ack == 0 {
            self.accounted = self.accounted.wrapping_add(mss);
            self.cumul_ack = mss;
        }

        if self.cumul_ack > mss {
            // Partial or delayed ack.
            if self.accounted >= self.cumul_ack {
                self.accounted -= self.cumul_ack;
                self.cumul_ack = mss;
            } else {
                self.cumul_ack -= self.accounted;
                self.accounted = 0;
            }
        }

        self.snd_una = tp.snd_una;
        self.cumul_ack
    }

    /// The estimated BDP in packets: `max(bw_est * rtt_min / mss, 2)` (`u32` product).
    ///
    /// net/ipv4/tcp_westwood.c: tcp_westwood_bw_rttmin().
    pub fn tcp_westwood_bw_rttmin(&self, tp: &TcpSock) -> u32 {
        (self.bw_est.wrapping_mul(self.rtt_min) / tp.mss_cache).max(2)
    }
}

impl CongestionControl for Westwood {
    fn name(&self) -> &'static str {
        "westwood"
    }

    /// Empty estimates, RTTs at `TCP_WESTWOOD_INIT_RTT` (too conservative on purpose, so that
    /// the first sample replaces them), a sampling window starting now.
    ///
    /// net/ipv4/tcp_westwood.c: tcp_westwood_init().
    fn init(&mut self, tp: &mut TcpSock) {
        self.bk = 0;
        self.bw_ns_est = 0;
        self.bw_est = 0;
        self.accounted = 0;
        self.cumul_ack = 0;
        self.reset_rtt_min = true;
        self.rtt = tcp_westwood_init_rtt(tp.clock.hz);
        self.rtt_min = self.rtt;
        self.rtt_win_sx = tp.jiffies();
        self.snd_una = tp.snd_una;
        self.first_ack = true;
    }

    /// `.ssthresh = tcp_reno_ssthresh` (net/ipv4/tcp_westwood.c: tcp_westwood); the bandwidth
    /// estimate replaces it in `cwnd_event`.
    fn ssthresh(&mut self, tp: &mut TcpSock) -> u32 {
        tcp_reno_ssthresh(tp)
    }

    /// `.cong_avoid = tcp_reno_cong_avoid` (net/ipv4/tcp_westwood.c: tcp_westwood).
    fn cong_avoid(&mut self, tp: &mut TcpSock, ack: u64, acked: u32) {
        tcp_reno_cong_avoid(tp, ack, acked);
    }

    /// End of a cwnd reduction: cwnd = ssthresh = estimated BDP. RTO: ssthresh = estimated BDP
    /// and take the next RTT sample as the new minimum.
    ///
    /// net/ipv4/tcp_westwood.c: tcp_westwood_event().
    fn cwnd_event(&mut self, tp: &mut TcpSock, event: CaEvent) {
        match event {
            CaEvent::CompleteCwr => {
                let w = self.tcp_westwood_bw_rttmin(tp);
                tp.snd_ssthresh = w;
                tp.set_cwnd(w);
            }
            CaEvent::Loss => {
                tp.snd_ssthresh = self.tcp_westwood_bw_rttmin(tp);
                // Update RTT_min when next ack arrives.
                self.reset_rtt_min = true;
            }
            _ => {}
        }
    }

    /// Every ACK feeds the bandwidth sample: on the slow path through `westwood_acked_count`
    /// (duplicate and delayed ACKs), on the fast path with the bytes `snd_una` moved.
    ///
    /// net/ipv4/tcp_westwood.c: tcp_westwood_ack().
    fn in_ack_event(&mut self, tp: &mut TcpSock, flags: u32) {
        if flags & ack_flags::CA_ACK_SLOWPATH != 0 {
            self.westwood_update_window(tp);
            let acked = self.westwood_acked_count(tp);
            self.bk = self.bk.wrapping_add(acked);
            self.update_rtt_min();
            return;
        }
        self.westwood_fast_bw(tp);
    }

    /// Keep the last RTT sample, in jiffies (`usecs_to_jiffies`, rounding up).
    ///
    /// net/ipv4/tcp_westwood.c: tcp_westwood_pkts_acked().
    fn pkts_acked(&mut self, tp: &mut TcpSock, sample: &AckSample) {
        if sample.rtt_us > 0 {
            self.rtt = usecs_to_jiffies(sample.rtt_us as u64, tp.clock.hz);
        }
    }

    /// `.undo_cwnd = tcp_reno_undo_cwnd` (net/ipv4/tcp_westwood.c: tcp_westwood).
    fn undo_cwnd(&mut self, tp: &mut TcpSock) -> u32 {
        tcp_reno_undo_cwnd(tp)
    }
}

/// include/linux/jiffies.h: usecs_to_jiffies() (rounds up), with `HZ = hz`, as `u32`.
fn usecs_to_jiffies(us: u64, hz: u32) -> u32 {
    (us * hz as u64).div_ceil(1_000_000) as u32
}

/// Westwood+ in the registry: Linux's name `westwood`; no module parameters.
pub fn info() -> AlgorithmInfo {
    AlgorithmInfo {
        name: "westwood",
        base: "westwood",
        description: "TCP Westwood+: Reno probing, after loss cwnd/ssthresh = estimated bandwidth \
                      * min RTT",
        source: "Linux 6.18 net/ipv4/tcp_westwood.c",
        params: Vec::new(),
        preset_params: Params::new(),
    }
}

/// Build Westwood+ (no tunables: names are checked by the registry, so `params` is empty).
pub fn build(_algorithm: &str, _params: &Params) -> Result<Box<dyn CongestionControl>, CcError> {
    Ok(Box::new(Westwood::new()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::ack_flags::{CA_ACK_SLOWPATH, CA_ACK_WIN_UPDATE};

    const MSS: u32 = 1000;
    const RTT_US: i64 = 100_000;

    fn sample(rtt_us: i64) -> AckSample {
        AckSample {
            pkts_acked: 1,
            rtt_us,
            in_flight: 0,
        }
    }

    fn started() -> (Westwood, TcpSock) {
        let mut tp = TcpSock::new(MSS, 10, 10_000, crate::tcp::clock::KernelClock::new(250));
        tp.tcp_mstamp_us = 1_000_000;
        let mut cc = Westwood::new();
        cc.init(&mut tp);
        (cc, tp)
    }

    /// `secs` seconds of fast-path ACKs, one per packet, at `pps` packets per second, each with
    /// an RTT sample of `RTT_US`.
    fn deliver(cc: &mut Westwood, tp: &mut TcpSock, pps: u64, secs: u64) {
        for _ in 0..pps * secs {
            tp.tcp_mstamp_us += 1_000_000 / pps;
            tp.snd_una += MSS as u64;
            cc.in_ack_event(tp, CA_ACK_WIN_UPDATE);
            let s = sample(RTT_US);
            cc.pkts_acked(tp, &s);
        }
    }

    #[test]
    fn bandwidth_estimate_converges_to_the_delivery_rate() {
        let (mut cc, mut tp) = started();
        // 2000 packets/s first, then 1000 packets/s = 10^6 B/s = 4000 B per 4 ms jiffy.
        deliver(&mut cc, &mut tp, 2000, 3);
        let first = cc.bw_est();
        assert!(
            (first as f64 - 8000.0).abs() < 0.05 * 8000.0,
            "bw_est {first}"
        );
        deliver(&mut cc, &mut tp, 1000, 1);
        assert!(
            cc.bw_est() > 4400,
            "the filters should still lag: {}",
            cc.bw_est()
        );
        deliver(&mut cc, &mut tp, 1000, 5);
        let bw = cc.bw_est();
        assert!((bw as f64 - 4000.0).abs() < 0.05 * 4000.0, "bw_est {bw}");
        // RTT in jiffies: 100 ms at HZ 250.
        assert_eq!((cc.rtt(), cc.rtt_min()), (25, 25));
        // A later, longer RTT sample is the last RTT, not the minimum.
        cc.pkts_acked(&mut tp, &sample(2 * RTT_US));
        tp.snd_una += MSS as u64;
        cc.in_ack_event(&mut tp, CA_ACK_WIN_UPDATE);
        assert_eq!((cc.rtt(), cc.rtt_min()), (50, 25));

        // RTO: Reno's ssthresh, then Westwood's BDP = bw_est * rtt_min / mss ~ 100 packets.
        tp.set_cwnd(300);
        tp.snd_ssthresh = cc.ssthresh(&mut tp);
        assert_eq!(tp.snd_ssthresh, 150);
        cc.cwnd_event(&mut tp, CaEvent::Loss);
        let bdp = bw * 25 / MSS;
        assert_eq!(tp.snd_ssthresh, bdp);
        assert!((95..=105).contains(&bdp), "bdp {bdp}");
        assert_eq!(tp.snd_cwnd, 300); // the RTO path sets cwnd itself

        // End of fast recovery: cwnd and ssthresh both to the BDP.
        tp.snd_ssthresh = 150;
        cc.cwnd_event(&mut tp, CaEvent::CompleteCwr);
        assert_eq!((tp.snd_cwnd, tp.snd_ssthresh), (bdp, bdp));
    }

    #[test]
    fn windows_last_an_rtt_but_at_least_50ms() {
        let (mut cc, mut tp) = started();
        // RTT 20 ms (5 jiffies) < 50 ms: the window closes after more than 12 jiffies.
        tp.tcp_mstamp_us += 1000;
        tp.snd_una += MSS as u64;
        cc.in_ack_event(&mut tp, CA_ACK_WIN_UPDATE); // first ACK aligns snd_una, no bytes
        cc.pkts_acked(&mut tp, &sample(20_000));
        assert_eq!(cc.rtt(), 5);
        let start = tp.jiffies();
        let mut closed_at = None;
        for _ in 0..110 {
            tp.tcp_mstamp_us += 1000;
            tp.snd_una += MSS as u64;
            cc.in_ack_event(&mut tp, CA_ACK_WIN_UPDATE);
            if cc.bw_est() != 0 && closed_at.is_none() {
                closed_at = Some((tp.jiffies() - start, cc.bw_est()));
            }
        }
        // The first window held the 50 ACKs (1 per ms) after the aligning one, over 13 jiffies;
        // the filter starts from that sample as is.
        assert_eq!(closed_at, Some((13, 50 * MSS / 13)));
        // The second window: 52 ACKs in 13 jiffies = 4000 B/jiffy, through both 7/8 filters:
        // bw_ns_est = (7 * 3846 + 4000) / 8 = 3865, bw_est = (7 * 3846 + 3865) / 8 = 3848.
        assert_eq!((cc.bw_ns_est, cc.bw_est()), (3865, 3848));
        // A zero RTT sample is ignored; before any sample, rtt is 20 s.
        let (mut cc, mut tp) = started();
        assert_eq!((cc.rtt(), cc.rtt_min()), (5000, 5000));
        cc.pkts_acked(&mut tp, &sample(0));
        assert_eq!(cc.rtt(), 5000);
    }

    #[test]
    fn slow_path_credits_dupacks_once() {
        let (mut cc, mut tp) = started();
        // The first ACK aligns snd_una (on the slow path it would also count as a dupack).
        cc.in_ack_event(&mut tp, CA_ACK_WIN_UPDATE);
        let bk0 = cc.bk;
        assert_eq!(cc.accounted, 0);
        // Three duplicate ACKs: one MSS each.
        for _ in 0..3 {
            cc.in_ack_event(&mut tp, CA_ACK_SLOWPATH);
        }
        assert_eq!((cc.bk - bk0, cc.accounted), (3 * MSS, 3 * MSS));
        // A cumulative ACK of 5 MSS: only the 2 not credited yet.
        tp.snd_una += 5 * MSS as u64;
        cc.in_ack_event(&mut tp, CA_ACK_SLOWPATH | CA_ACK_WIN_UPDATE);
        assert_eq!((cc.bk - bk0, cc.accounted), (5 * MSS, 0));
        // A cumulative ACK of 2 MSS after 3 dupacks: 1 MSS, and 1 MSS stays accounted.
        for _ in 0..3 {
            cc.in_ack_event(&mut tp, CA_ACK_SLOWPATH);
        }
        tp.snd_una += 2 * MSS as u64;
        cc.in_ack_event(&mut tp, CA_ACK_SLOWPATH);
        assert_eq!((cc.bk - bk0, cc.accounted), (9 * MSS, MSS));
    }

    #[test]
    fn rto_resets_rtt_min_to_the_next_sample() {
        let (mut cc, mut tp) = started();
        deliver(&mut cc, &mut tp, 1000, 1);
        assert_eq!(cc.rtt_min(), 25);
        cc.cwnd_event(&mut tp, CaEvent::Loss);
        cc.pkts_acked(&mut tp, &sample(300_000));
        tp.snd_una += MSS as u64;
        cc.in_ack_event(&mut tp, CA_ACK_WIN_UPDATE);
        assert_eq!(cc.rtt_min(), 75);
        // Never below 2 packets; Reno probing and undo.
        let (cc, tp) = started();
        assert_eq!(cc.tcp_westwood_bw_rttmin(&tp), 2);
        let (mut cc, mut tp) = started();
        tp.is_cwnd_limited = true;
        cc.cong_avoid(&mut tp, 0, 5);
        assert_eq!(tp.snd_cwnd, 15);
        tp.prior_cwnd = 40;
        assert_eq!(cc.undo_cwnd(&mut tp), 40);
    }

    #[test]
    fn info_and_build() {
        let i = info();
        assert_eq!((i.name, i.base), ("westwood", "westwood"));
        assert_eq!(i.source, "Linux 6.18 net/ipv4/tcp_westwood.c");
        assert!(i.params.is_empty() && i.preset_params.is_empty());
        assert_eq!(
            build("westwood", &Params::new()).unwrap().name(),
            "westwood"
        );
        assert_eq!(
            (tcp_westwood_rtt_min(250), tcp_westwood_init_rtt(250)),
            (12, 5000)
        );
    }
}
