//! TCP Vegas, as Linux 6.18 implements it in `net/ipv4/tcp_vegas.c` (+ `tcp_vegas.h`).
//!
//! Brakmo and Peterson's delay-based congestion avoidance: once per RTT, compare the window with
//! the window the lowest RTT ever seen (baseRTT) would need at the rate actually achieved, and
//! keep the difference (packets queued in the network) between `alpha` and `beta` by moving cwnd
//! by one packet per RTT; leave slow start as soon as the difference exceeds `gamma`. Loss
//! handling is Reno's (`.ssthresh = tcp_reno_ssthresh`, `.undo_cwnd = tcp_reno_undo_cwnd`).
//!
//! Every function names the kernel function it follows; the arithmetic is the kernel's `u32`
//! (wrapping where C wraps, with `wrapping_*`). The kernel's module parameters (`alpha`, `beta`,
//! `gamma`, global in the kernel) are per instance here, with the same names and defaults.
//!
//! Where we diverge from the kernel, and why:
//! - Sequence numbers are `u64` bytes that never wrap, so `beg_snd_nxt` is a `u64` and the
//!   kernel's `after(ack, vegas->beg_snd_nxt)` is a plain `>`.
//! - `struct vegas` also has `beg_snd_una` and `beg_snd_cwnd`, which no Linux 6.18 code reads
//!   or writes; we leave them out.
//! - Vegas' "diff" is the kernel's `cwnd * (rtt - baseRTT) / baseRTT` (divided by baseRTT, not by
//!   rtt as in the paper's `cwnd * (rtt - baseRTT) / rtt`); we keep the kernel's formula.
//! - The tunables are non-negative here (0..i32::MAX): the kernel's are `int`s compared with the
//!   `u32` diff, so a negative value would act as a huge unsigned one; we reject it instead.
//! - `get_info` (inet_diag reporting) is not modelled.

use super::params::ParamReader;
use super::reno::{tcp_reno_cong_avoid, tcp_reno_ssthresh, tcp_reno_undo_cwnd, tcp_slow_start};
use super::{AckSample, AlgorithmInfo, CaEvent, CaState, CcError, CongestionControl};
use super::{ParamInfo, ParamValue, Params};
use crate::tcp::sock::TcpSock;

/// Linux's default `alpha`: lower bound of packets in the network.
pub const DEFAULT_ALPHA: u32 = 2;
/// Linux's default `beta`: upper bound of packets in the network.
pub const DEFAULT_BETA: u32 = 4;
/// Linux's default `gamma`: limit on increase (slow-start exit threshold).
pub const DEFAULT_GAMMA: u32 = 1;
/// "No sample yet" value of `minRTT` and `baseRTT` (`0x7fffffff`).
pub(crate) const RTT_NONE: u32 = 0x7fff_ffff;

/// Vegas' tunables: the kernel's module parameters, same names and defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VegasParams {
    /// `alpha`: grow cwnd while fewer than this many packets are queued.
    pub alpha: u32,
    /// `beta`: shrink cwnd while more than this many packets are queued.
    pub beta: u32,
    /// `gamma`: leave slow start when more than this many packets are queued.
    pub gamma: u32,
}

impl Default for VegasParams {
    fn default() -> Self {
        VegasParams {
            alpha: DEFAULT_ALPHA,
            beta: DEFAULT_BETA,
            gamma: DEFAULT_GAMMA,
        }
    }
}

/// Vegas' per-flow state (`struct vegas`, net/ipv4/tcp_vegas.h); YeAH reuses it, as the kernel's
/// tcp_yeah.c calls the exported `tcp_vegas_*` functions.
#[derive(Debug, Clone, Default)]
pub struct VegasState {
    /// Right edge during the last RTT, bytes (`beg_snd_nxt`).
    pub beg_snd_nxt: u64,
    /// Whether Vegas is on for this RTT (`doing_vegas_now`).
    pub doing_vegas_now: bool,
    /// Number of RTT samples within the last RTT (`cntRTT`, a `u16`).
    pub cnt_rtt: u16,
    /// Min of the RTTs measured within the last RTT, usecs + 1 (`minRTT`).
    pub min_rtt: u32,
    /// Min of all RTT measurements seen, usecs + 1 (`baseRTT`).
    pub base_rtt: u32,
}

impl VegasState {
    /// net/ipv4/tcp_vegas.c: vegas_enable(): sample from the next send window on.
    pub(crate) fn enable(&mut self, tp: &TcpSock) {
        self.doing_vegas_now = true;
        self.beg_snd_nxt = tp.snd_nxt;
        self.cnt_rtt = 0;
        self.min_rtt = RTT_NONE;
    }

    /// net/ipv4/tcp_vegas.c: tcp_vegas_init().
    pub(crate) fn init(&mut self, tp: &TcpSock) {
        self.base_rtt = RTT_NONE;
        self.enable(tp);
    }

    /// net/ipv4/tcp_vegas.c: tcp_vegas_pkts_acked(): min-filter RTT samples (+1 so never 0)
    /// within the round and forever.
    pub(crate) fn pkts_acked(&mut self, sample: &AckSample) {
        if sample.rtt_us < 0 {
            return;
        }
        let vrtt = (sample.rtt_us as i32 as u32).wrapping_add(1);
        if vrtt < self.base_rtt {
            self.base_rtt = vrtt;
        }
        self.min_rtt = self.min_rtt.min(vrtt);
        self.cnt_rtt = self.cnt_rtt.wrapping_add(1);
    }

    /// net/ipv4/tcp_vegas.c: tcp_vegas_state(): on in Open, off elsewhere.
    pub(crate) fn state(&mut self, tp: &TcpSock, ca_state: CaState) {
        if ca_state == CaState::Open {
            self.enable(tp);
        } else {
            self.doing_vegas_now = false;
        }
    }

    /// net/ipv4/tcp_vegas.c: tcp_vegas_cwnd_event(): restart from a clean slate after idle.
    pub(crate) fn cwnd_event(&mut self, tp: &TcpSock, event: CaEvent) {
        if matches!(event, CaEvent::CwndRestart | CaEvent::TxStart) {
            self.init(tp);
        }
    }
}

/// TCP Vegas: `struct vegas` (net/ipv4/tcp_vegas.h) plus the tunables.
#[derive(Debug, Clone, Default)]
pub struct Vegas {
    params: VegasParams,
    /// The RTT samples and the current round.
    st: VegasState,
}

impl Vegas {
    /// A Vegas instance with these tunables; the state is zeroed as the kernel's `icsk_ca_priv`
    /// is before `init`.
    pub fn new(params: VegasParams) -> Self {
        Vegas {
            params,
            ..Vegas::default()
        }
    }
}

/// net/ipv4/tcp_vegas.c: tcp_vegas_ssthresh() (the inline helper, not an ops hook):
/// `min(snd_ssthresh, snd_cwnd)`.
fn tcp_vegas_ssthresh(tp: &TcpSock) -> u32 {
    tp.snd_ssthresh.min(tp.snd_cwnd)
}

impl CongestionControl for Vegas {
    fn name(&self) -> &'static str {
        "vegas"
    }

    /// Forget baseRTT and restart sampling.
    ///
    /// net/ipv4/tcp_vegas.c: tcp_vegas_init().
    fn init(&mut self, tp: &mut TcpSock) {
        self.st.init(tp);
    }

    /// `.ssthresh = tcp_reno_ssthresh` (net/ipv4/tcp_vegas.c: tcp_vegas): half the window.
    fn ssthresh(&mut self, tp: &mut TcpSock) -> u32 {
        tcp_reno_ssthresh(tp)
    }

    /// Once per RTT (when the ACK passes the `snd_nxt` saved at the previous adjustment), with
    /// more than 2 RTT samples: `diff = cwnd * (minRTT - baseRTT) / baseRTT`; in slow start leave
    /// it when `diff > gamma` (cwnd = min(cwnd, cwnd * baseRTT / minRTT + 1), ssthresh <= cwnd),
    /// in congestion avoidance cwnd -= 1 when `diff > beta` (ssthresh <= cwnd), += 1 when
    /// `diff < alpha`. cwnd is kept in [2, clamp] and ssthresh set to `tcp_current_ssthresh()`.
    /// Between adjustments only slow start grows cwnd; without Vegas (not Open) or with too few
    /// samples, Reno.
    ///
    /// net/ipv4/tcp_vegas.c: tcp_vegas_cong_avoid(). `ack` is the cumulative ACK in bytes.
    fn cong_avoid(&mut self, tp: &mut TcpSock, ack: u64, acked: u32) {
        if !self.st.doing_vegas_now {
            tcp_reno_cong_avoid(tp, ack, acked);
            return;
        }

        if ack > self.st.beg_snd_nxt {
            // Do the Vegas once-per-RTT cwnd adjustment. Save the extent of the current window
            // so we can use this at the end of the next RTT.
            self.st.beg_snd_nxt = tp.snd_nxt;

            // With 2 samples or fewer they are almost certainly delayed ACKs: behave like Reno.
            if self.st.cnt_rtt <= 2 {
                tcp_reno_cong_avoid(tp, ack, acked);
            } else {
                let (alpha, beta, gamma) = (self.params.alpha, self.params.beta, self.params.gamma);
                // The min RTT seen during the last RTT: filters out delayed ACKs.
                let rtt = self.st.min_rtt;
                let base = self.st.base_rtt;

                // The cwnd we should have at the actual rate: cwnd * baseRTT / rtt.
                let target_cwnd = tp.snd_cwnd as u64 * base as u64 / rtt as u64;

                // "Diff" from the Arizona Vegas papers, in the kernel's form.
                let diff = tp.snd_cwnd.wrapping_mul(rtt.wrapping_sub(base)) / base;

                if diff > gamma && tp.in_slow_start() {
                    // Going too fast: match the actual rate (+1 for the integer truncation) and
                    // switch to congestion avoidance.
                    tp.snd_cwnd = tp.snd_cwnd.min((target_cwnd as u32).wrapping_add(1));
                    tp.snd_ssthresh = tcp_vegas_ssthresh(tp);
                } else if tp.in_slow_start() {
                    tcp_slow_start(tp, acked);
                } else if diff > beta {
                    // The old window was too fast, so we slow down. (A transient 0 is
                    // possible, as in the kernel; the clamp below makes it 2.)
                    tp.snd_cwnd = tp.snd_cwnd.wrapping_sub(1);
                    tp.snd_ssthresh = tcp_vegas_ssthresh(tp);
                } else if diff < alpha {
                    // Not enough extra packets in the network: speed up.
                    tp.snd_cwnd = tp.snd_cwnd.wrapping_add(1);
                } // else: sending just as fast as we should be.

                if tp.snd_cwnd < 2 {
                    tp.set_cwnd(2);
                } else if tp.snd_cwnd > tp.snd_cwnd_clamp {
                    tp.set_cwnd(tp.snd_cwnd_clamp);
                }
                tp.snd_ssthresh = tp.current_ssthresh();
            }

            // Wipe the slate clean for the next RTT.
            self.st.cnt_rtt = 0;
            self.st.min_rtt = RTT_NONE;
        } else if tp.in_slow_start() {
            // Use normal slow start.
            tcp_slow_start(tp, acked);
        }
    }

    /// Vegas samples only in the Open state: entering it restarts sampling, leaving it stops.
    ///
    /// net/ipv4/tcp_vegas.c: tcp_vegas_state().
    fn set_state(&mut self, tp: &mut TcpSock, new_state: CaState) {
        self.st.state(tp, new_state);
    }

    /// Restarting after idle (or the first transmit with nothing in flight): stale samples,
    /// start again from a clean slate.
    ///
    /// net/ipv4/tcp_vegas.c: tcp_vegas_cwnd_event().
    fn cwnd_event(&mut self, tp: &mut TcpSock, event: CaEvent) {
        self.st.cwnd_event(tp, event);
    }

    /// RTT sampling: baseRTT is the min of all samples (the propagation delay), minRTT the min
    /// within the current RTT (propagation + queueing, filtering delayed ACKs); samples are
    /// `rtt_us + 1` so that neither is ever 0.
    ///
    /// net/ipv4/tcp_vegas.c: tcp_vegas_pkts_acked().
    fn pkts_acked(&mut self, _tp: &mut TcpSock, sample: &AckSample) {
        self.st.pkts_acked(sample);
    }

    /// `.undo_cwnd = tcp_reno_undo_cwnd` (net/ipv4/tcp_vegas.c: tcp_vegas).
    fn undo_cwnd(&mut self, tp: &mut TcpSock) -> u32 {
        tcp_reno_undo_cwnd(tp)
    }
}

/// Vegas in the registry: Linux's name `vegas` and its module parameters.
pub fn info() -> AlgorithmInfo {
    AlgorithmInfo {
        name: "vegas",
        base: "vegas",
        description: "TCP Vegas: keep alpha..beta packets queued, estimated from RTT over baseRTT",
        source: "Linux 6.18 net/ipv4/tcp_vegas.c",
        params: vec![
            ParamInfo {
                name: "alpha",
                default: ParamValue::Int(DEFAULT_ALPHA as i64),
                doc: "lower bound of packets in network: grow cwnd by 1 per RTT while fewer are \
                      queued; an integer 0..2147483647",
            },
            ParamInfo {
                name: "beta",
                default: ParamValue::Int(DEFAULT_BETA as i64),
                doc: "upper bound of packets in network: shrink cwnd by 1 per RTT while more are \
                      queued; an integer 0..2147483647",
            },
            ParamInfo {
                name: "gamma",
                default: ParamValue::Int(DEFAULT_GAMMA as i64),
                doc: "limit on increase: leave slow start when more packets than this are \
                      queued; an integer 0..2147483647",
            },
        ],
        preset_params: Params::new(),
    }
}

/// Build Vegas from `params` (names already checked by the registry; values checked here).
pub fn build(algorithm: &str, params: &Params) -> Result<Box<dyn CongestionControl>, CcError> {
    let r = ParamReader::new(algorithm, params);
    let max = i32::MAX as i64;
    let p = VegasParams {
        alpha: r.int("alpha", DEFAULT_ALPHA as i64, 0, max)? as u32,
        beta: r.int("beta", DEFAULT_BETA as i64, 0, max)? as u32,
        gamma: r.int("gamma", DEFAULT_GAMMA as i64, 0, max)? as u32,
    };
    Ok(Box::new(Vegas::new(p)))
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u32 = 1000;
    /// Propagation RTT of the link model, usecs.
    const BASE_US: i64 = 100_000;
    /// Bottleneck rate of the link model, packets per second: BDP = 50 packets.
    const RATE_PPS: i64 = 500;

    fn sock(cwnd: u32) -> TcpSock {
        let mut tp = TcpSock::new(MSS, cwnd, 10_000, crate::tcp::clock::KernelClock::new(250));
        tp.is_cwnd_limited = true;
        tp
    }

    fn sample(rtt_us: i64) -> AckSample {
        AckSample {
            pkts_acked: 1,
            rtt_us,
            in_flight: 0,
        }
    }

    /// The kernel's diff for a round whose RTT samples were all `rtt_us`.
    fn kernel_diff(cwnd: u32, rtt_us: i64) -> u32 {
        let (rtt, base) = (rtt_us as u32 + 1, BASE_US as u32 + 1);
        cwnd * (rtt - base) / base
    }

    /// One round trip: every packet of the window is acked by its own ACK carrying an RTT
    /// sample of `rtt_us`; after each ACK the sender refills the window (snd_nxt moves).
    fn round(cc: &mut Vegas, tp: &mut TcpSock, rtt_us: i64) {
        let w = tp.snd_cwnd;
        for _ in 0..w {
            tp.tcp_mstamp_us += rtt_us as u64 / w as u64;
            tp.snd_una += MSS as u64;
            cc.pkts_acked(tp, &sample(rtt_us));
            let ack = tp.snd_una;
            cc.cong_avoid(tp, ack, 1);
            tp.snd_nxt = tp.snd_una + tp.snd_cwnd as u64 * MSS as u64;
        }
    }

    /// The RTT of the uncontended link model for a window of `cwnd` packets: propagation plus
    /// the packets beyond the BDP queued at the bottleneck, rtt = base + queued / rate.
    fn link_rtt(cwnd: u32) -> i64 {
        let queued = (cwnd as i64 - RATE_PPS * BASE_US / 1_000_000).max(0);
        BASE_US + queued * 1_000_000 / RATE_PPS
    }

    #[test]
    fn settles_where_queued_estimate_is_within_alpha_beta() {
        let mut tp = sock(10);
        let mut cc = Vegas::default();
        cc.init(&mut tp);
        tp.snd_nxt = 10 * MSS as u64;
        let mut history = Vec::new();
        for _ in 0..150 {
            let rtt = link_rtt(tp.snd_cwnd);
            round(&mut cc, &mut tp, rtt);
            history.push(tp.snd_cwnd);
        }
        // Slow start was left by the gamma test, not by a loss.
        assert!(!tp.in_slow_start(), "still in slow start: {history:?}");
        // It overshot (slow start doubled cwnd to 160), came down by one per RTT, and for the
        // last 50 rounds cwnd does not move, with the estimate within alpha..beta.
        assert!(history.iter().any(|&w| w > 100), "{history:?}");
        let last = *history.last().unwrap();
        assert!(history[100..].iter().all(|&w| w == last), "{history:?}");
        let diff = kernel_diff(last, link_rtt(last));
        assert!(
            (2..=4).contains(&diff),
            "diff {diff} at cwnd {last}: {history:?}"
        );
        // Just above the BDP (50): 2..4 packets queued (the paper's estimate too).
        let queued = last as i64 - 50;
        assert!((2..=4).contains(&queued), "cwnd {last}");
        assert_eq!(cc.st.base_rtt, BASE_US as u32 + 1);
    }

    #[test]
    fn slow_start_exits_on_gamma_at_the_actual_rate() {
        let mut tp = sock(80);
        let mut cc = Vegas::default();
        cc.init(&mut tp);
        tp.snd_nxt = 80 * MSS as u64;
        // First round at the propagation RTT: diff 0, slow start doubles cwnd.
        round(&mut cc, &mut tp, BASE_US);
        assert!(tp.in_slow_start());
        assert_eq!((tp.snd_cwnd, cc.st.base_rtt), (160, BASE_US as u32 + 1));
        // A fresh round (re-entering Open restarts sampling) in which the RTT doubled:
        // diff = 160 > gamma; cwnd = 160 * baseRTT / minRTT + 1 = 81 and ssthresh follows.
        cc.set_state(&mut tp, CaState::Open);
        assert_eq!((cc.st.cnt_rtt, cc.st.min_rtt), (0, RTT_NONE));
        let rtt = 2 * BASE_US;
        for _ in 0..3 {
            cc.pkts_acked(&mut tp, &sample(rtt));
        }
        let ack = tp.snd_nxt + 1;
        cc.cong_avoid(&mut tp, ack, 1);
        let target = (160u64 * (BASE_US as u64 + 1) / (rtt as u64 + 1)) as u32 + 1;
        assert_eq!(target, 81);
        assert_eq!((tp.snd_cwnd, tp.snd_ssthresh), (81, 81));
        assert!(!tp.in_slow_start());
        assert_eq!((cc.st.cnt_rtt, cc.st.min_rtt), (0, RTT_NONE));
    }

    #[test]
    fn grows_by_one_per_rtt_when_diff_below_alpha() {
        let mut tp = sock(30);
        tp.snd_ssthresh = 20;
        let mut cc = Vegas::default();
        cc.init(&mut tp);
        tp.snd_nxt = 30 * MSS as u64;
        // The first ACK has one sample only (Reno: no increase yet at cwnd 30).
        round(&mut cc, &mut tp, BASE_US);
        assert_eq!(tp.snd_cwnd, 30);
        // No queue (cwnd < BDP): diff 0 < alpha, +1 per round exactly.
        for expect in 31..=45 {
            let rtt = link_rtt(tp.snd_cwnd);
            round(&mut cc, &mut tp, rtt);
            assert_eq!(tp.snd_cwnd, expect);
        }
        // RTT up by 4.4 %: the first adjustment still sees last round's samples (+1), then
        // diff = 46 * 4445 / 100001 = 2 = alpha: hold.
        let rtt = BASE_US + 2 * BASE_US / 45 + 1;
        assert_eq!(kernel_diff(46, rtt), 2);
        round(&mut cc, &mut tp, rtt);
        assert_eq!(tp.snd_cwnd, 46);
        for _ in 0..3 {
            round(&mut cc, &mut tp, rtt);
            assert_eq!(tp.snd_cwnd, 46);
        }
    }

    #[test]
    fn shrinks_by_one_per_rtt_when_diff_above_beta() {
        let mut tp = sock(100);
        tp.snd_ssthresh = 100;
        let mut cc = Vegas::default();
        cc.init(&mut tp);
        tp.snd_nxt = 100 * MSS as u64;
        round(&mut cc, &mut tp, BASE_US); // one sample at the first ACK: Reno
        round(&mut cc, &mut tp, BASE_US); // diff 0 < alpha: +1
        assert_eq!(tp.snd_cwnd, 101);
        // A large standing queue: 20 % extra RTT, diff = cwnd / 5 > beta. The first round's
        // adjustment still sees the previous round's samples (+1), then -1 per round.
        let rtt = BASE_US * 6 / 5;
        round(&mut cc, &mut tp, rtt);
        assert_eq!(tp.snd_cwnd, 102);
        let mut prev = tp.snd_cwnd;
        for _ in 0..10 {
            round(&mut cc, &mut tp, rtt);
            assert_eq!(tp.snd_cwnd, prev - 1);
            // ssthresh <= cwnd (tcp_vegas_ssthresh), then tcp_current_ssthresh(): it follows
            // cwnd down once cwnd is below the old ssthresh (100).
            assert_eq!(tp.snd_ssthresh, tp.snd_cwnd.min(100));
            prev = tp.snd_cwnd;
        }
        // Never below 2: at cwnd 2 the decrease gives 1, clamped back to 2.
        let mut tp = sock(2);
        tp.snd_ssthresh = 2;
        cc.init(&mut tp);
        cc.pkts_acked(&mut tp, &sample(BASE_US));
        tp.snd_nxt = 10_000;
        cc.cong_avoid(&mut tp, 1, 1); // one sample: Reno
        for _ in 0..3 {
            cc.pkts_acked(&mut tp, &sample(100 * BASE_US));
        }
        cc.cong_avoid(&mut tp, 10_001, 1);
        assert_eq!((tp.snd_cwnd, tp.snd_ssthresh), (2, 1));
    }

    #[test]
    fn few_samples_or_not_open_behave_like_reno() {
        let mut tp = sock(10);
        tp.snd_ssthresh = 10;
        let mut cc = Vegas::default();
        cc.init(&mut tp);
        assert_eq!(cc.st.base_rtt, RTT_NONE);
        // Two samples only (delayed ACKs): Reno's additive increase, 10 acked -> +1.
        cc.pkts_acked(&mut tp, &sample(50_000));
        cc.pkts_acked(&mut tp, &sample(90_000));
        cc.pkts_acked(&mut tp, &sample(-1));
        assert_eq!(
            (cc.st.cnt_rtt, cc.st.min_rtt, cc.st.base_rtt),
            (2, 50_001, 50_001)
        );
        cc.cong_avoid(&mut tp, 1, 10);
        assert_eq!(tp.snd_cwnd, 11);
        // Outside Open Vegas is off: Reno on every ACK; back to Open restarts sampling.
        cc.set_state(&mut tp, CaState::Recovery);
        assert!(!cc.st.doing_vegas_now);
        cc.cong_avoid(&mut tp, 2, 11);
        assert_eq!(tp.snd_cwnd, 12);
        tp.snd_nxt = 5000;
        cc.set_state(&mut tp, CaState::Open);
        assert!(cc.st.doing_vegas_now);
        assert_eq!(
            (cc.st.beg_snd_nxt, cc.st.cnt_rtt, cc.st.min_rtt),
            (5000, 0, RTT_NONE)
        );
        // baseRTT survives a state change, but not a restart.
        assert_eq!(cc.st.base_rtt, 50_001);
        cc.cwnd_event(&mut tp, CaEvent::TxStart);
        assert_eq!(cc.st.base_rtt, RTT_NONE);
        // ssthresh and undo are Reno's.
        tp.snd_cwnd = 40;
        assert_eq!(cc.ssthresh(&mut tp), 20);
        tp.prior_cwnd = 50;
        assert_eq!(cc.undo_cwnd(&mut tp), 50);
    }

    #[test]
    fn info_and_build() {
        let i = info();
        assert_eq!(
            (i.name, i.base, i.source),
            ("vegas", "vegas", "Linux 6.18 net/ipv4/tcp_vegas.c")
        );
        let names: Vec<_> = i.params.iter().map(|p| (p.name, p.default)).collect();
        assert_eq!(
            names,
            [
                ("alpha", ParamValue::Int(2)),
                ("beta", ParamValue::Int(4)),
                ("gamma", ParamValue::Int(1))
            ]
        );
        assert!(i.preset_params.is_empty());
        let cc = build("vegas", &Params::new()).unwrap();
        assert_eq!(cc.name(), "vegas");
        let p: Params = [("beta".to_string(), ParamValue::Int(6))]
            .into_iter()
            .collect();
        build("vegas", &p).unwrap();
        for (name, v) in [
            ("alpha", ParamValue::Int(-1)),
            ("beta", ParamValue::Float(2.5)),
            ("gamma", ParamValue::Bool(true)),
        ] {
            let p: Params = [(name.to_string(), v)].into_iter().collect();
            match build("vegas", &p) {
                Err(CcError::BadValue {
                    algorithm, param, ..
                }) => {
                    assert_eq!((algorithm.as_str(), param.as_str()), ("vegas", name))
                }
                Err(e) => panic!("{name}: {e}"),
                Ok(_) => panic!("{name} = {v} accepted"),
            }
        }
    }
}
