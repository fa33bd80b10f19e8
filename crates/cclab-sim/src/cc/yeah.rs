//! YeAH-TCP (Baiocchi, Castellani and Vacirca, PFLDnet 2007), as Linux 6.18 implements it in
//! `net/ipv4/tcp_yeah.c`.
//!
//! YeAH runs in one of two modes, chosen once per RTT from Vegas' measurements: "fast" mode,
//! where cwnd grows as Scalable TCP's (+1 per `min(cwnd, 100)` packets acked), and "slow" mode,
//! where it grows as Reno's. The queue backlog `Q = cwnd * (rtt - baseRTT) / rtt` (with `rtt`
//! the minimum RTT of the last round) and the load `L = (rtt - baseRTT) / baseRTT` pick the
//! mode: slow when `Q > TCP_YEAH_ALPHA` (80 packets) or `L > 1 / TCP_YEAH_PHY` (1/8). When the
//! queue is too long (and cwnd above `reno_count`), YeAH drains it at once ("precautionary
//! decongestion"): cwnd loses `min(Q / GAMMA, cwnd >> EPSILON)`, not below `reno_count`, and
//! ssthresh follows. On a loss, ssthresh takes off only the queue `Q`, between cwnd/8
//! (`TCP_YEAH_DELTA`) and cwnd/2, unless YeAH has been slow for `TCP_YEAH_RHO` (16) RTTs, when
//! it takes off half (competing with Reno flows). `TCP_YEAH_ZETA` (50) fast RTTs reset
//! `reno_count`. YeAH has no module parameters: all these are `#define`s.
//!
//! YeAH embeds Vegas' state (`struct vegas`, net/ipv4/tcp_vegas.h) and uses Vegas' `init`,
//! `pkts_acked`, `set_state` and `cwnd_event` (net/ipv4/tcp_vegas.c); it reuses our Vegas state
//! ([`VegasState`]) the same way.
//!
//! We follow Linux 6.18. Every function names the kernel function it follows; the arithmetic is
//! the kernel's (`u32`, a `u64` backlog, wrapping where C wraps).
//!
//! Where we diverge from the kernel, and why:
//! - Sequence numbers are `u64` bytes that never wrap, so `after(ack, beg_snd_nxt)` is `>`.
//! - Vegas' `beg_snd_una` and `beg_snd_cwnd`, which YeAH writes but never reads (only
//!   `get_info` would), are not kept.

use super::params::ParamReader;
use super::reno::{tcp_cong_avoid_ai, tcp_reno_undo_cwnd, tcp_slow_start};
use super::vegas::{VegasState, RTT_NONE};
use super::{AckSample, AlgorithmInfo, CaEvent, CaState, CcError, CongestionControl, Params};
use crate::tcp::sock::TcpSock;

/// Packets queued at the bottleneck above which YeAH goes slow and decongests (`TCP_YEAH_ALPHA`).
pub const TCP_YEAH_ALPHA: u32 = 80;
/// Fraction of the queue removed per RTT when decongesting (`TCP_YEAH_GAMMA`).
pub const TCP_YEAH_GAMMA: u32 = 1;
/// log2 of the minimum fraction of cwnd removed on loss (`TCP_YEAH_DELTA`: 1/8).
pub const TCP_YEAH_DELTA: u32 = 3;
/// log2 of the maximum fraction removed on decongestion (`TCP_YEAH_EPSILON`: 1/2).
pub const TCP_YEAH_EPSILON: u32 = 1;
/// Largest queueing delay, as a fraction 1/PHY of baseRTT, for fast mode (`TCP_YEAH_PHY`).
pub const TCP_YEAH_PHY: u32 = 8;
/// Consecutive slow RTTs after which a loss halves cwnd (`TCP_YEAH_RHO`).
pub const TCP_YEAH_RHO: u32 = 16;
/// Fast RTTs after which `reno_count` is reset (`TCP_YEAH_ZETA`).
pub const TCP_YEAH_ZETA: u32 = 50;
/// Scalable TCP's additive-increase count (`TCP_SCALABLE_AI_CNT`).
pub const TCP_SCALABLE_AI_CNT: u32 = 100;

/// What `cclab presets` lists for YeAH-TCP.
pub fn info() -> AlgorithmInfo {
    AlgorithmInfo {
        name: "yeah",
        base: "yeah",
        description: "YeAH-TCP: Scalable growth while the Vegas-estimated queue is short, Reno \
                      and queue draining when it is long",
        source: "Linux 6.18 net/ipv4/tcp_yeah.c",
        params: Vec::new(),
        preset_params: Params::new(),
    }
}

/// Build YeAH-TCP; it has no tunables (the registry rejects any name given).
pub fn build(algorithm: &str, params: &Params) -> Result<Box<dyn CongestionControl>, CcError> {
    let _reader = ParamReader::new(algorithm, params);
    Ok(Box::new(Yeah::new()))
}

/// YeAH-TCP: `struct yeah` (net/ipv4/tcp_yeah.c).
#[derive(Debug, Clone)]
pub struct Yeah {
    /// Vegas' state (`vegas`).
    vegas: VegasState,
    /// Queue estimate of the last RTT, packets (`lastQ`).
    last_q: u32,
    /// Consecutive slow (Reno) RTTs, 0 in fast mode (`doing_reno_now`).
    doing_reno_now: u32,
    /// Lower bound of cwnd on decongestion (`reno_count`).
    reno_count: u32,
    /// Consecutive fast RTTs (`fast_count`).
    fast_count: u32,
}

impl Default for Yeah {
    fn default() -> Self {
        Yeah::new()
    }
}

impl Yeah {
    /// A YeAH instance in its `init` state (before `init` sees the socket).
    pub fn new() -> Self {
        Yeah {
            vegas: VegasState {
                base_rtt: RTT_NONE,
                min_rtt: RTT_NONE,
                ..VegasState::default()
            },
            last_q: 0,
            doing_reno_now: 0,
            reno_count: 2,
            fast_count: 0,
        }
    }

    /// Whether YeAH is in slow (Reno) mode.
    pub fn is_slow(&self) -> bool {
        self.doing_reno_now != 0
    }

    /// Consecutive slow RTTs (`doing_reno_now`).
    pub fn doing_reno_now(&self) -> u32 {
        self.doing_reno_now
    }

    /// Queue estimate of the last RTT, packets (`lastQ`).
    pub fn last_q(&self) -> u32 {
        self.last_q
    }

    /// `reno_count`.
    pub fn reno_count(&self) -> u32 {
        self.reno_count
    }

    /// Vegas' state.
    pub fn vegas(&self) -> &VegasState {
        &self.vegas
    }

    /// The once-per-RTT YeAH decision: queue, mode, decongestion (the `do_vegas` part of
    /// net/ipv4/tcp_yeah.c: tcp_yeah_cong_avoid()).
    fn per_rtt_update(&mut self, tp: &mut TcpSock) {
        // Only with enough RTT samples to have one not from a delayed ACK.
        if self.vegas.cnt_rtt > 2 {
            let rtt = self.vegas.min_rtt;
            let base = self.vegas.base_rtt;
            // Excess packets above the bandwidth-delay product.
            let bw = tp.snd_cwnd as u64 * rtt.wrapping_sub(base) as u64 / rtt as u64;
            let queue = bw as u32;
            if queue > TCP_YEAH_ALPHA || rtt.wrapping_sub(base) > base / TCP_YEAH_PHY {
                if queue > TCP_YEAH_ALPHA && tp.snd_cwnd > self.reno_count {
                    let reduction = (queue / TCP_YEAH_GAMMA).min(tp.snd_cwnd >> TCP_YEAH_EPSILON);
                    tp.set_cwnd(tp.snd_cwnd - reduction);
                    tp.set_cwnd(tp.snd_cwnd.max(self.reno_count));
                    tp.snd_ssthresh = tp.snd_cwnd;
                }
                if self.reno_count <= 2 {
                    self.reno_count = (tp.snd_cwnd >> 1).max(2);
                } else {
                    self.reno_count = self.reno_count.wrapping_add(1);
                }
                self.doing_reno_now = (self.doing_reno_now + 1).min(0xff_ffff);
            } else {
                self.fast_count = self.fast_count.wrapping_add(1);
                if self.fast_count > TCP_YEAH_ZETA {
                    self.reno_count = 2;
                    self.fast_count = 0;
                }
                self.doing_reno_now = 0;
            }
            self.last_q = queue;
        }
        // Save the extent of the current window for the end of the next RTT.
        self.vegas.beg_snd_nxt = tp.snd_nxt;
        // Wipe the slate clean for the next RTT.
        self.vegas.cnt_rtt = 0;
        self.vegas.min_rtt = RTT_NONE;
    }
}

impl CongestionControl for Yeah {
    fn name(&self) -> &'static str {
        "yeah"
    }

    /// net/ipv4/tcp_yeah.c: tcp_yeah_init(): Vegas' init, fast mode, `reno_count` 2, and
    /// cwnd_clamp at most `0xffffffff / 128`.
    fn init(&mut self, tp: &mut TcpSock) {
        self.vegas.init(tp);
        self.doing_reno_now = 0;
        self.last_q = 0;
        self.reno_count = 2;
        // Ensure the MD arithmetic works.
        tp.snd_cwnd_clamp = tp.snd_cwnd_clamp.min(0xffff_ffff / 128);
    }

    /// net/ipv4/tcp_yeah.c: tcp_yeah_ssthresh(): take off the queue (clamped to cwnd/8..cwnd/2)
    /// or, after `TCP_YEAH_RHO` slow RTTs, half the window; at least 2.
    fn ssthresh(&mut self, tp: &mut TcpSock) -> u32 {
        let cwnd = tp.snd_cwnd;
        let reduction = if self.doing_reno_now < TCP_YEAH_RHO {
            self.last_q
                .min((cwnd >> 1).max(2))
                .max(cwnd >> TCP_YEAH_DELTA)
        } else {
            (cwnd >> 1).max(2)
        };
        self.fast_count = 0;
        self.reno_count = (self.reno_count >> 1).max(2);
        (cwnd.wrapping_sub(reduction) as i32).max(2) as u32
    }

    /// net/ipv4/tcp_yeah.c: tcp_yeah_cong_avoid(): slow start, then Scalable (fast) or Reno
    /// (slow) increase; once per RTT the mode decision.
    fn cong_avoid(&mut self, tp: &mut TcpSock, ack: u64, acked: u32) {
        if !tp.is_cwnd_limited() {
            return;
        }
        let mut acked = acked;
        let mut increase = true;
        if tp.in_slow_start() {
            acked = tcp_slow_start(tp, acked);
            increase = acked != 0; // else `goto do_vegas`
        }
        if increase {
            if self.doing_reno_now == 0 {
                // Scalable
                let w = tp.snd_cwnd.min(TCP_SCALABLE_AI_CNT);
                tcp_cong_avoid_ai(tp, w, acked);
            } else {
                // Reno
                let w = tp.snd_cwnd;
                tcp_cong_avoid_ai(tp, w, acked);
            }
        }
        // do_vegas:
        if ack > self.vegas.beg_snd_nxt {
            self.per_rtt_update(tp);
        }
    }

    /// `.set_state = tcp_vegas_state`.
    fn set_state(&mut self, tp: &mut TcpSock, new_state: CaState) {
        self.vegas.state(tp, new_state);
    }

    /// `.cwnd_event = tcp_vegas_cwnd_event`.
    fn cwnd_event(&mut self, tp: &mut TcpSock, event: CaEvent) {
        self.vegas.cwnd_event(tp, event);
    }

    /// `.pkts_acked = tcp_vegas_pkts_acked`.
    fn pkts_acked(&mut self, _tp: &mut TcpSock, sample: &AckSample) {
        self.vegas.pkts_acked(sample);
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
    const BASE: i64 = 100_000;

    fn setup(cwnd: u32, ssthresh: u32) -> (Yeah, TcpSock) {
        let mut tp = TcpSock::new(MSS, cwnd, 100_000, crate::tcp::clock::KernelClock::new(250));
        tp.is_cwnd_limited = true;
        let mut cc = Yeah::new();
        cc.init(&mut tp);
        tp.snd_ssthresh = ssthresh;
        (cc, tp)
    }

    /// One RTT: the window present at its start is acked one packet per ACK, each ACK with RTT
    /// `rtt_us`.
    fn round(cc: &mut Yeah, tp: &mut TcpSock, rtt_us: i64) {
        let w = tp.snd_cwnd;
        tp.snd_nxt = tp.snd_una + (w * MSS) as u64;
        for _ in 0..w {
            tp.tcp_mstamp_us += 1000;
            tp.snd_una += MSS as u64;
            cc.pkts_acked(
                tp,
                &AckSample {
                    pkts_acked: 1,
                    rtt_us,
                    in_flight: w,
                },
            );
            let ack = tp.snd_una;
            cc.cong_avoid(tp, ack, 1);
        }
    }

    #[test]
    fn fast_mode_grows_like_scalable_without_queue() {
        let (mut cc, mut tp) = setup(400, 100);
        round(&mut cc, &mut tp, BASE);
        for _ in 0..3 {
            let before = tp.snd_cwnd;
            round(&mut cc, &mut tp, BASE);
            assert!(!cc.is_slow());
            assert_eq!(cc.last_q(), 0);
            // +1 per 100 packets acked: +4 per RTT at 400 packets (Reno would add 1).
            assert_eq!(tp.snd_cwnd - before, 4);
        }
        // A loss without queue takes off cwnd/8 (TCP_YEAH_DELTA), not half.
        tp.snd_cwnd = 400;
        assert_eq!(cc.ssthresh(&mut tp), 350);
    }

    #[test]
    fn long_queue_switches_to_slow_mode_and_drains_it() {
        let (mut cc, mut tp) = setup(400, 100);
        round(&mut cc, &mut tp, BASE); // baseRTT 100 ms
        round(&mut cc, &mut tp, BASE);
        assert!(!cc.is_slow());
        round(&mut cc, &mut tp, 150_000); // the queue builds: RTT 150 ms
                                          // Still fast until the end of this round is acked.
        assert!(!cc.is_slow());
        let grown = tp.snd_cwnd;
        tp.snd_nxt = tp.snd_una + (grown * MSS) as u64;
        tp.snd_una += MSS as u64;
        cc.pkts_acked(
            &mut tp,
            &AckSample {
                pkts_acked: 1,
                rtt_us: 150_000,
                in_flight: grown,
            },
        );
        let ack = tp.snd_una;
        cc.cong_avoid(&mut tp, ack, 0); // acked 0: no growth before the decision
                                        // Q = cwnd * (rtt - base) / rtt with Vegas' +1 on RTTs.
        let q = (grown as u64 * 50_000 / 150_001) as u32;
        assert!(q > TCP_YEAH_ALPHA && q < grown / 2, "q {q}");
        assert!(cc.is_slow());
        assert_eq!(cc.last_q(), q);
        // Precautionary decongestion: cwnd loses Q (less than half), ssthresh follows.
        assert_eq!(tp.snd_cwnd, grown - q);
        assert_eq!(tp.snd_ssthresh, tp.snd_cwnd);
        assert_eq!(cc.reno_count(), tp.snd_cwnd / 2);
        // In slow mode the window grows as Reno's: +1 per RTT.
        let before = tp.snd_cwnd;
        round(&mut cc, &mut tp, 150_000);
        assert!(cc.is_slow());
        assert_eq!(tp.snd_cwnd, before + 1);
        // A loss now takes off the last queue estimate.
        let cwnd = tp.snd_cwnd;
        let lq = cc.last_q();
        assert_eq!(cc.ssthresh(&mut tp), cwnd - lq.min(cwnd / 2).max(cwnd / 8));
    }

    #[test]
    fn load_above_one_eighth_of_base_rtt_is_slow_without_decongestion() {
        // Small window: Q = 40 * 20/120 < 80, but the delay 20 ms > 100 ms / 8.
        let (mut cc, mut tp) = setup(40, 10);
        round(&mut cc, &mut tp, BASE);
        round(&mut cc, &mut tp, 120_000);
        round(&mut cc, &mut tp, 120_000);
        assert!(cc.is_slow());
        assert!(cc.last_q() <= TCP_YEAH_ALPHA);
        assert_eq!(tp.snd_ssthresh, 10); // no decongestion
                                         // Delay back under baseRTT/8: fast again.
        round(&mut cc, &mut tp, 110_000);
        round(&mut cc, &mut tp, 110_000);
        assert!(!cc.is_slow());
    }

    #[test]
    fn queue_above_alpha_alone_switches_to_slow_mode() {
        // Delay 10 ms < baseRTT / 8: the queue decides. 500 packets: Q = 45, fast.
        let (mut cc, mut tp) = setup(500, 100);
        round(&mut cc, &mut tp, BASE);
        for _ in 0..3 {
            round(&mut cc, &mut tp, 110_000);
        }
        assert!(!cc.is_slow());
        assert!(cc.last_q() < TCP_YEAH_ALPHA);
        // 1000 packets: Q = 90 > 80, slow, and 90 packets drained.
        let (mut cc, mut tp) = setup(1000, 100);
        round(&mut cc, &mut tp, BASE);
        round(&mut cc, &mut tp, 110_000);
        let cwnd = tp.snd_cwnd;
        round(&mut cc, &mut tp, 110_000);
        assert!(cc.is_slow());
        let q = (cwnd as u64 * 10_000 / 110_001) as u32;
        assert_eq!(cc.last_q(), q);
        assert!(q > TCP_YEAH_ALPHA);
        assert_eq!(tp.snd_ssthresh, cwnd - q);
    }

    #[test]
    fn ssthresh_reductions() {
        let (mut cc, mut tp) = setup(400, 100);
        // Fast mode: reduction = lastQ clamped to [cwnd/8, max(cwnd/2, 2)].
        for (last_q, cwnd, expect) in [(0, 400, 350), (100, 400, 300), (300, 400, 200), (5, 3, 2)] {
            cc.last_q = last_q;
            tp.snd_cwnd = cwnd;
            assert_eq!(cc.ssthresh(&mut tp), expect, "lastQ {last_q} cwnd {cwnd}");
        }
        // After TCP_YEAH_RHO slow RTTs: half.
        cc.doing_reno_now = TCP_YEAH_RHO;
        cc.last_q = 0;
        tp.snd_cwnd = 400;
        assert_eq!(cc.ssthresh(&mut tp), 200);
        // reno_count halves (at least 2) and fast_count resets on every loss.
        cc.reno_count = 50;
        cc.fast_count = 7;
        cc.ssthresh(&mut tp);
        assert_eq!((cc.reno_count(), cc.fast_count), (25, 0));
        tp.prior_cwnd = 900;
        assert_eq!(cc.undo_cwnd(&mut tp), 900);
    }

    #[test]
    fn vegas_hooks_and_init() {
        let mut tp = TcpSock::new(MSS, 10, u32::MAX, crate::tcp::clock::KernelClock::new(250));
        tp.snd_nxt = 5000;
        let mut cc = Yeah::new();
        cc.init(&mut tp);
        assert_eq!(tp.snd_cwnd_clamp, 0xffff_ffff / 128);
        assert_eq!(cc.vegas().beg_snd_nxt, 5000);
        cc.pkts_acked(
            &mut tp,
            &AckSample {
                pkts_acked: 1,
                rtt_us: 999,
                in_flight: 1,
            },
        );
        cc.pkts_acked(
            &mut tp,
            &AckSample {
                pkts_acked: 1,
                rtt_us: -1,
                in_flight: 1,
            },
        );
        assert_eq!(
            (cc.vegas().base_rtt, cc.vegas().min_rtt, cc.vegas().cnt_rtt),
            (1000, 1000, 1)
        );
        cc.set_state(&mut tp, CaState::Recovery);
        assert!(!cc.vegas().doing_vegas_now);
        tp.snd_nxt = 9000;
        cc.set_state(&mut tp, CaState::Open);
        assert!(cc.vegas().doing_vegas_now);
        assert_eq!((cc.vegas().beg_snd_nxt, cc.vegas().cnt_rtt), (9000, 0));
        cc.cwnd_event(&mut tp, CaEvent::TxStart);
        assert_eq!(cc.vegas().base_rtt, RTT_NONE);
        // Slow start is Reno's.
        let (mut cc, mut tp) = setup(10, 1000);
        round(&mut cc, &mut tp, BASE);
        assert_eq!(tp.snd_cwnd, 20);
    }

    #[test]
    fn info_and_build() {
        let i = info();
        assert_eq!(
            (i.name, i.base, i.source),
            ("yeah", "yeah", "Linux 6.18 net/ipv4/tcp_yeah.c")
        );
        assert!(i.params.is_empty() && i.preset_params.is_empty());
        assert_eq!(build("yeah", &Params::new()).unwrap().name(), "yeah");
    }
}
