//! RED as net/sched/sch_red.c and include/net/red.h (Linux 6.18) code it, over a bfifo child
//! of `limit` bytes, with its parameters derived from tc's as iproute2 does (tc/q_red.c
//! red_parse_opt and tc/tc_red.c): thresholds by Floyd's defaults, Wlog from the burst
//! (tc_red_eval_ewma), Plog (tc_red_eval_P), the idle-decay table Stab and Scell_log
//! (tc_red_eval_idle_damping), max_P = probability * 2^32.
//!
//! The average is the kernel's fixed point (scaled by 2^Wlog), updated per enqueue from the
//! child's byte backlog; after an idle period it decays through Stab, indexed by the idle time
//! in microseconds (`ktime_us_delta`), although tc builds Stab in psched ticks of 64 ns; we
//! keep that mismatch, as both sides do. Not modelled: `adaptive`, `nodrop`, qevents.

use super::{Item, Out, QdiscConfig};
use crate::error::NetError;
use crate::packet::NetPacket;
use rand::RngCore;
use rand_chacha::ChaCha8Rng;
use std::collections::VecDeque;

/// `RED_STAB_SIZE`.
const STAB_SIZE: usize = 256;
/// tc's `tick_in_usec` on a kernel whose /proc/net/psched reads 1000 64 1000000 ...
/// (tc/tc_core.c tc_core_init): 1000 / 64 psched ticks per microsecond.
const TICKS_PER_US: f64 = 1000.0 / 64.0;
/// tc's bandwidth when none is given (q_red.c: "RED: set bandwidth to 10Mbit"), bytes/s.
const TC_DEFAULT_RATE: u32 = 10_000_000 / 8;

/// tc/tc_red.c tc_red_eval_P: Plog = log2(prob / (qmax - qmin)), rounded up.
fn eval_p(qmin: u32, qmax: u32, prob: f64) -> Option<u8> {
    let i = i64::from(qmax) - i64::from(qmin);
    if i <= 0 {
        return None;
    }
    let mut prob = prob / i as f64;
    for i in 0..32 {
        if prob > 1.0 {
            return Some(i);
        }
        prob *= 2.0;
    }
    None
}

/// tc/tc_red.c tc_red_eval_ewma: the smallest Wlog with
/// `burst + 1 - qmin/avpkt <= (1 - (1 - W)^burst) / W`, W = 2^-Wlog. `Err` holds a saturated
/// Wlog (1 when the burst is too small, 31 when none fits).
fn eval_ewma(qmin: u32, burst: u32, avpkt: u32) -> Result<u8, u8> {
    let a = f64::from(burst) + 1.0 - f64::from(qmin) / f64::from(avpkt);
    if a < 1.0 {
        return Err(1);
    }
    let mut w: f64 = 0.5;
    for wlog in 1..32 {
        if a <= (1.0 - (1.0 - w).powf(f64::from(burst))) / w {
            return Ok(wlog);
        }
        w /= 2.0;
    }
    Err(31)
}

/// tc/tc_red.c tc_red_eval_idle_damping: Stab[t >> Scell_log] = -log(1 - W) * t / xmit_time,
/// capped at 31, and Scell_log so that the table spans the decay to nothing.
fn eval_idle_damping(wlog: u8, avpkt: u32, rate: u32) -> Option<(u8, [u8; STAB_SIZE])> {
    // tc/tc_core.c tc_calc_xmittime (iproute2 6.x): psched ticks to send avpkt bytes at rate
    // bytes/s, rounded up, at most u32.
    let xmit_time = (1e6 * (f64::from(avpkt) / f64::from(rate)) * TICKS_PER_US).ceil();
    let xmit_time = xmit_time.min(f64::from(u32::MAX));
    let lw = -(1.0 - 1.0 / (1u64 << wlog) as f64).ln() / xmit_time;
    let maxtime = 31.0 / lw;
    let clog = (0u8..32).find(|&c| maxtime / ((1u64 << c) as f64) < 512.0)?;
    let mut sbuf = [0u8; STAB_SIZE];
    for (i, s) in sbuf.iter_mut().enumerate().take(255).skip(1) {
        *s = (((i as u64) << clog) as f64 * lw).min(31.0) as u8;
    }
    sbuf[255] = 31;
    Some((clog, sbuf))
}

/// struct red_parms as red_change sets it from tc's netlink message, plus the flags.
#[derive(Debug, Clone)]
pub(crate) struct RedParams {
    limit: u64,
    /// qth_min and qth_max scaled by 2^Wlog (u32 in the kernel; red_check_params keeps them so).
    qth_min: u64,
    qth_max: u64,
    wlog: u8,
    scell_log: u8,
    scell_max: u64,
    stab: [u8; STAB_SIZE],
    /// max_P / (qth_max - qth_min): red_random divides a random u32 by it.
    max_p_delta: u32,
    ecn: bool,
    harddrop: bool,
}

impl RedParams {
    /// The parameters as tc and red_change derive them, or the first setting that tc or the
    /// kernel refuses (field names without the `qdisc.` prefix).
    pub fn from_config(cfg: &QdiscConfig, link_rate_bps: Option<u64>) -> Result<Self, NetError> {
        match Self::derive(cfg, link_rate_bps) {
            (p, None) => Ok(p),
            (_, Some(e)) => Err(e),
        }
    }

    /// Derive the parameters, saturating anything tc or the kernel would refuse (recorded as
    /// the error), so that a link never panics on an unvalidated config.
    fn derive(cfg: &QdiscConfig, link_rate_bps: Option<u64>) -> (Self, Option<NetError>) {
        let QdiscConfig::Red {
            limit_bytes,
            min_bytes,
            max_bytes,
            avpkt_bytes,
            burst_pkts,
            probability,
            ecn,
            harddrop,
            bandwidth_bps,
        } = *cfg
        else {
            return Self::derive(&QdiscConfig::red_defaults(), link_rate_bps);
        };
        let mut err: Option<NetError> = None;
        // The first setting refused wins.
        macro_rules! fail {
            ($name:expr, $v:expr, $ok:expr) => {{
                err.get_or_insert(NetError::invalid($name, $v, $ok));
            }};
        }
        let u32max = u64::from(u32::MAX);
        if !(1..=u32max).contains(&limit_bytes) {
            fail!("limit_bytes", limit_bytes, "from 1 to 4294967295");
        }
        if avpkt_bytes == 0 {
            fail!("avpkt_bytes", 0, "at least 1");
        }
        let avpkt = avpkt_bytes.max(1);
        if !(probability > 0.0 && probability <= 1.0) {
            fail!("probability", probability, "in (0, 1]");
        }
        let prob = if probability > 0.0 {
            probability.min(1.0)
        } else {
            0.02
        };
        // q_red.c: Floyd's defaults (a 0 counts as not given, as for tc).
        for (name, v) in [("min_bytes", min_bytes), ("max_bytes", max_bytes)] {
            if let Some(v) = v.filter(|&v| v > u32max) {
                fail!(name, v, "at most 4294967295");
            }
        }
        let given = |v: Option<u64>| v.filter(|&x| x > 0).map(|x| x.min(u32max));
        let limit = limit_bytes.clamp(1, u32max);
        let qmax = given(max_bytes)
            .unwrap_or_else(|| given(min_bytes).map_or(limit / 4, |m| m.saturating_mul(3)))
            .min(u32max) as u32;
        let qmin = given(min_bytes).unwrap_or(u64::from(qmax) / 3) as u32;
        if qmax <= qmin {
            fail!("max_bytes", qmax, &format!("above min_bytes ({qmin})"));
        }
        let burst = burst_pkts.filter(|&b| b > 0).unwrap_or(
            ((2 * u64::from(qmin) + u64::from(qmax)) / (3 * u64::from(avpkt))).min(u32max) as u32,
        );
        let wlog = eval_ewma(qmin, burst, avpkt).unwrap_or_else(|w| {
            let least = 1 + u64::from(qmin / avpkt);
            fail!(
                "burst_pkts",
                burst,
                &format!("at least {least} (1 + min / avpkt)")
            );
            w
        });
        if eval_p(qmin, qmax, prob).is_none() && qmax > qmin {
            fail!("probability", prob, "large enough for tc's Plog (< 32)");
        }
        // red_check_params: the thresholds scaled by 2^Wlog must fit 32 bits (fls + Wlog < 32).
        for (name, v) in [("min_bytes", qmin), ("max_bytes", qmax)] {
            if 32 - v.leading_zeros() + u32::from(wlog) >= 32 {
                fail!(name, v, &format!("below 2^{} (Wlog {wlog})", 32 - wlog));
            }
        }
        if let Some(b) = bandwidth_bps.filter(|b| b / 8 == 0 || b / 8 > u32max) {
            fail!("bandwidth_bps", b, "from 8 to 2^35");
        }
        let rate = match bandwidth_bps.or(link_rate_bps) {
            Some(b) => (b / 8).clamp(1, u32max) as u32,
            None => TC_DEFAULT_RATE,
        };
        let (scell_log, stab) = eval_idle_damping(wlog, avpkt, rate).unwrap_or_else(|| {
            fail!(
                "bandwidth_bps",
                u64::from(rate) * 8,
                "high enough for tc's idle table"
            );
            (31, [31; STAB_SIZE])
        });
        // q_red.c: max_P = probability * 2^32; red_set_parms: max_P / delta, at least 1.
        let max_p = (prob * 4_294_967_296.0) as u32;
        let delta = if qmax > qmin { qmax - qmin } else { 1 };
        let p = RedParams {
            limit,
            qth_min: u64::from(qmin) << wlog,
            qth_max: u64::from(qmax) << wlog,
            wlog,
            scell_log,
            scell_max: 255u64 << scell_log,
            stab,
            max_p_delta: (max_p / delta).max(1),
            ecn,
            harddrop,
        };
        (p, err)
    }
}

/// red.h red_action's verdicts: RED_DONT_MARK, RED_PROB_MARK, RED_HARD_MARK.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Action {
    Pass,
    Prob,
    Hard,
}

/// sch_red.c's red_sched_data: the parameters, red_vars, the bfifo child and red_stats.
#[derive(Debug)]
pub(crate) struct Red<P> {
    q: VecDeque<Item<P>>,
    backlog: u64,
    p: RedParams,
    /// red_vars: qavg (scaled by 2^Wlog), qcount, qR, qidlestart (None: not idling).
    qavg: u64,
    qcount: i32,
    qr: u32,
    qidlestart: Option<u64>,
    rng: ChaCha8Rng,
}

impl<P: NetPacket> Red<P> {
    /// red_init / red_change: red_set_parms, red_set_vars, and an idle period from creation
    /// (time 0) since the child is empty.
    pub fn new(cfg: &QdiscConfig, link_rate_bps: Option<u64>, rng: ChaCha8Rng) -> Self {
        Red {
            q: VecDeque::new(),
            backlog: 0,
            p: RedParams::derive(cfg, link_rate_bps).0,
            qavg: 0,
            qcount: -1,
            qr: 0,
            qidlestart: Some(0),
            rng,
        }
    }

    /// red.h red_calc_qavg_from_idle_time: the average decayed over the idle time, as if
    /// idle_time / (avpkt / bandwidth) empty packets had arrived, through the Stab table.
    fn qavg_from_idle_time(&self, now_ns: u64, start_ns: u64) -> u64 {
        let us_idle = (now_ns.saturating_sub(start_ns) / 1000).min(self.p.scell_max);
        let shift = self.p.stab[((us_idle >> self.p.scell_log) as usize) & (STAB_SIZE - 1)];
        if shift != 0 {
            self.qavg >> shift
        } else {
            // Approximate the start of the exponential linearly: (1-W)^m ~= 1 - mW.
            let x = self.qavg.wrapping_mul(us_idle) >> self.p.scell_log;
            if x < self.qavg >> 1 {
                self.qavg - x
            } else {
                self.qavg >> 1
            }
        }
    }

    /// red.h red_calc_qavg: qavg = qavg * (1 - W) + backlog * W in fixed point, or the idle decay.
    fn calc_qavg(&self, now_ns: u64, backlog: u32) -> u64 {
        match self.qidlestart {
            None => self
                .qavg
                .wrapping_add(u64::from(backlog).wrapping_sub(self.qavg >> self.p.wlog)),
            Some(start) => self.qavg_from_idle_time(now_ns, start),
        }
    }

    /// red.h red_random: a random number in [0, 2^32 / (max_P / delta)) (reciprocal_divide is
    /// an exact division).
    fn random(&mut self) -> u32 {
        self.rng.next_u32() / self.p.max_p_delta
    }

    /// red.h red_action, with red_cmp_thresh and red_mark_probability: between the thresholds
    /// a mark comes once `(qavg - qth_min) * qcount` reaches the random qR, which spaces marks
    /// uniformly with the mean probability max_P * (avg - min) / (max - min).
    fn action(&mut self, qavg: u64) -> Action {
        if qavg < self.p.qth_min {
            self.qcount = -1;
            return Action::Pass;
        }
        if qavg >= self.p.qth_max {
            self.qcount = -1;
            return Action::Hard;
        }
        self.qcount = self.qcount.saturating_add(1);
        if self.qcount != 0 {
            let x = (qavg - self.p.qth_min) >> self.p.wlog;
            if x.wrapping_mul(self.qcount as u64) >= u64::from(self.qr) {
                self.qcount = 0;
                self.qr = self.random();
                return Action::Prob;
            }
        } else {
            self.qr = self.random();
        }
        Action::Pass
    }

    /// sch_red.c red_enqueue. `Err` gives back a dropped packet (early, forced or over the
    /// child's byte limit).
    pub fn enqueue(
        &mut self,
        now_ns: u64,
        mut pkt: P,
        bytes: u32,
        out: &mut Out<P>,
    ) -> Result<(), P> {
        self.qavg = self.calc_qavg(now_ns, u32::try_from(self.backlog).unwrap_or(u32::MAX));
        self.qidlestart = None; // red_end_of_idle_period
        match self.action(self.qavg) {
            Action::Pass => {}
            // prob_drop or prob_mark (a Not-ECT packet is dropped: no `nodrop`).
            Action::Prob if !self.p.ecn || !out.set_ce(&mut pkt) => return Err(pkt),
            // forced_drop or forced_mark.
            Action::Hard if self.p.harddrop || !self.p.ecn || !out.set_ce(&mut pkt) => {
                return Err(pkt)
            }
            Action::Prob | Action::Hard => {}
        }
        // bfifo_enqueue: admit while the bytes stay within the limit (else pdrop).
        if self.backlog + u64::from(bytes) > self.p.limit {
            return Err(pkt);
        }
        self.backlog += u64::from(bytes);
        self.q.push_back(Item {
            pkt,
            bytes,
            t: now_ns,
        });
        Ok(())
    }

    /// sch_red.c red_dequeue: the head packet; an empty child starts an idle period.
    pub fn dequeue(&mut self, now_ns: u64) -> Option<Item<P>> {
        match self.q.pop_front() {
            Some(it) => {
                self.backlog -= u64::from(it.bytes);
                Some(it)
            }
            None => {
                self.qidlestart.get_or_insert(now_ns);
                None
            }
        }
    }

    pub fn len(&self) -> usize {
        self.q.len()
    }

    pub fn backlog_bytes(&self) -> u64 {
        self.backlog
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    struct P;
    impl NetPacket for P {
        fn wire_bytes(&self) -> u32 {
            1000
        }
    }

    fn red(min: u64, max: u64, p: f64) -> Red<P> {
        let text = format!(
            r#"{{"kind": "red", "min_bytes": {min}, "max_bytes": {max}, "probability": {p},
                "bandwidth_bps": 10000000}}"#
        );
        let cfg: QdiscConfig = serde_json::from_str(&text).unwrap();
        cfg.validate().unwrap();
        Red::new(&cfg, None, ChaCha8Rng::seed_from_u64(7))
    }

    #[test]
    fn tc_derives_the_man_page_example() {
        // tc-red(8): limit 400000 min 30000 max 90000 avpkt 1000 burst 55 bandwidth 10Mbit.
        assert_eq!(eval_ewma(30_000, 55, 1000), Ok(5));
        assert_eq!(eval_p(30_000, 90_000, 0.02), Some(22));
        // xmit 800 us = 12500 ticks, lW = -ln(1 - 1/32) / 12500 = 2.54e-6 per tick, maxtime
        // 31 / lW = 1.22e7 ticks: Scell_log 15 (2^15 > 1.22e7 / 512); Stab[i] = i 2^15 lW.
        let (clog, stab) = eval_idle_damping(5, 1000, 1_250_000).unwrap();
        assert_eq!(clog, 15);
        assert_eq!(
            (stab[0], stab[12], stab[13], stab[254], stab[255]),
            (0, 0, 1, 21, 31)
        );
        // Defaults: limit 400000 -> max 100000, min 33333, burst 55.
        let p = RedParams::from_config(&QdiscConfig::red_defaults(), None).unwrap();
        assert_eq!(
            (p.qth_min >> p.wlog, p.qth_max >> p.wlog, p.wlog),
            (33_333, 100_000, 5)
        );
    }

    /// Marks between the thresholds follow red.h's formula: the probability
    /// pb = max_P (avg - min) / (max - min), with marks spaced uniformly in [1, 1/pb], so a
    /// fraction 2 pb / (1 + pb) of packets is marked.
    #[test]
    fn marking_probability_between_the_thresholds_matches_the_formula() {
        let n = 400_000u32;
        for frac in [0.25, 0.5, 0.9] {
            let mut q = red(30_000, 90_000, 0.04);
            let avg = 30_000.0 + frac * 60_000.0;
            let qavg = (avg as u64) << q.p.wlog;
            let marks = (0..n).filter(|_| q.action(qavg) == Action::Prob).count();
            let pb = 0.04 * frac;
            let want = 2.0 * pb / (1.0 + pb) * f64::from(n);
            let rel = (marks as f64 - want).abs() / want;
            assert!(rel < 0.03, "avg {avg}: {marks} marks, formula {want:.0}");
        }
        let mut q = red(30_000, 90_000, 0.04);
        assert!((0..1000).all(|_| q.action(29_999 << q.p.wlog) == Action::Pass));
        assert!((0..1000).all(|_| q.action(90_000 << q.p.wlog) == Action::Hard));
    }

    #[test]
    fn the_average_follows_the_ewma_and_decays_when_idle() {
        let mut q = red(30_000, 90_000, 0.02);
        q.qidlestart = None;
        // A constant backlog B: qavg / 2^Wlog converges to B.
        for _ in 0..10_000 {
            q.qavg = q.calc_qavg(0, 50_000);
        }
        assert_eq!(q.qavg >> q.p.wlog, 50_000);
        // One step moves it by (B - avg) / 2^Wlog.
        let before = q.qavg;
        let after = q.calc_qavg(0, 0);
        assert_eq!(after, before - (before >> q.p.wlog));
        // Idle for long: decays to nothing through Stab; for a short while, linearly.
        q.qidlestart = Some(0);
        assert_eq!(q.calc_qavg(10_000_000_000, 0), before >> 31, "Stab[255]");
        let short = q.calc_qavg(800_000, 0); // one avpkt time at 10 Mbit/s
        assert!(short < before && short > before / 2, "{short} vs {before}");
    }
}
