//! PIE as net/sched/sch_pie.c and include/net/pie.h (Linux 6.18) code it, with the queue delay
//! taken from enqueue timestamps (`dq_rate_estimator` off, the kernel's default; the departure
//! rate estimator is not modelled). Drops happen at enqueue only, with a probability updated
//! every `tupdate` by a PI controller whose gains shrink while the probability is small
//! (RFC 8033's auto-tuning), after a 150 ms burst allowance.
//!
//! Time is in psched ticks (64 ns), probabilities in units of `MAX_PROB` (2^56 - 1), as in the
//! kernel. The update timer first fires HZ/2 (500 ms) after the qdisc is created, then every
//! `tupdate`; we diverge in that `tupdate` is exact, where the kernel rounds it up to whole
//! jiffies (`usecs_to_jiffies`: 15 ms is 16 ms at HZ=250).

use super::{check_ms, check_range, ms_to_us, Item, Out, QdiscConfig, PSCHED_MTU_BYTES};
use crate::error::NetError;
use crate::packet::NetPacket;
use rand::RngCore;
use rand_chacha::ChaCha8Rng;
use std::collections::VecDeque;

/// `PSCHED_SHIFT`: a psched tick is 64 ns.
const PSCHED_SHIFT: u32 = 6;
/// `PSCHED_TICKS_PER_SEC`.
const PSCHED_TICKS_PER_SEC: u64 = 1_000_000_000 >> PSCHED_SHIFT;
/// pie.h `MAX_PROB`: probability 1.
pub(crate) const MAX_PROB: u64 = u64::MAX >> 8;
/// pie.h `DTIME_INVALID`.
const DTIME_INVALID: u64 = u64::MAX;
/// pie_init's first timer: `jiffies + HZ / 2`.
const FIRST_UPDATE_NS: u64 = 500_000_000;

/// `PSCHED_NS2TICKS`.
fn ticks(ns: u64) -> u64 {
    ns >> PSCHED_SHIFT
}

/// The settings we accept: positive times, alpha and beta up to 32 (iproute2's tc/q_pie.c
/// refuses more), a limit of at least 1.
pub(crate) fn check(cfg: &QdiscConfig) -> Result<(), NetError> {
    if let QdiscConfig::Pie {
        target_ms,
        tupdate_ms,
        alpha,
        beta,
        limit_pkts,
        ..
    } = *cfg
    {
        check_ms("target_ms", target_ms, false)?;
        check_ms("tupdate_ms", tupdate_ms, false)?;
        check_range("alpha", alpha.into(), 0, 32)?;
        check_range("beta", beta.into(), 0, 32)?;
        check_range("limit_pkts", limit_pkts.into(), 1, u32::MAX.into())?;
    }
    Ok(())
}

/// struct pie_params (timestamp mode).
#[derive(Debug, Clone, Copy)]
struct PieParams {
    /// Target delay, psched ticks.
    target: u64,
    /// Update period, ns (0: no further updates, as the kernel's timer is not re-armed).
    tupdate_ns: u64,
    limit: u32,
    alpha: u32,
    beta: u32,
    ecn: bool,
    bytemode: bool,
}

/// struct pie_vars (the fields timestamp mode uses).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct PieVars {
    pub qdelay: u64,
    pub qdelay_old: u64,
    pub burst_time: u64,
    pub dq_tstamp: u64,
    pub prob: u64,
    pub accu_prob: u64,
    pub backlog_old: u32,
}

impl PieVars {
    /// pie.h pie_vars_init: a new burst allowance, no drain measurement, no accumulated
    /// probability (prob and the delays are kept).
    fn init(&mut self) {
        self.burst_time = ticks(150_000_000);
        self.dq_tstamp = DTIME_INVALID;
        self.accu_prob = 0;
    }
}

/// struct pie_sched_data.
#[derive(Debug)]
pub(crate) struct Pie<P> {
    q: VecDeque<Item<P>>,
    backlog: u64,
    params: PieParams,
    pub vars: PieVars,
    /// When pie_timer next runs; None once it is not re-armed (tupdate 0, or past u64 time).
    next_update_ns: Option<u64>,
    rng: ChaCha8Rng,
    /// pie_stats: early drops, overlimit drops, ECN marks.
    pub dropped: u64,
    pub overlimit: u64,
    pub ecn_mark: u64,
}

impl<P: NetPacket> Pie<P> {
    /// pie_init: pie_params_init, pie_vars_init, then the config (pie_change).
    pub fn new(cfg: &QdiscConfig, rng: ChaCha8Rng) -> Self {
        let (target_ms, tupdate_ms, alpha, beta, limit, ecn, bytemode) = match *cfg {
            QdiscConfig::Pie {
                target_ms,
                tupdate_ms,
                alpha,
                beta,
                limit_pkts,
                ecn,
                bytemode,
            } => (
                target_ms, tupdate_ms, alpha, beta, limit_pkts, ecn, bytemode,
            ),
            _ => return Self::new(&QdiscConfig::pie_defaults(), rng),
        };
        let mut vars = PieVars::default();
        vars.init();
        Pie {
            q: VecDeque::new(),
            backlog: 0,
            params: PieParams {
                // pie_change: target from us to psched ticks.
                target: ticks(u64::from(ms_to_us(target_ms)) * 1000),
                tupdate_ns: u64::from(ms_to_us(tupdate_ms)) * 1000,
                limit,
                alpha,
                beta,
                ecn,
                bytemode,
            },
            vars,
            next_update_ns: Some(FIRST_UPDATE_NS),
            rng,
            dropped: 0,
            overlimit: 0,
            ecn_mark: 0,
        }
    }

    /// sch_pie.c pie_drop_early: whether to drop (or mark) a packet of `packet_size` bytes
    /// arriving while `backlog` bytes wait.
    fn drop_early(&mut self, backlog: u64, packet_size: u32) -> bool {
        let v = &mut self.vars;
        let mtu = PSCHED_MTU_BYTES;
        // Burst allowance left: no early drop.
        if v.burst_time > 0 {
            return false;
        }
        // Delay below half the target and a low probability: no early drop.
        if v.qdelay < self.params.target / 2 && v.prob < MAX_PROB / 5 {
            return false;
        }
        // Fewer than 2 MTU-sized packets waiting (like RED's min_th).
        if backlog < 2 * u64::from(mtu) {
            return false;
        }
        // Bytemode: smaller packets get a lower probability.
        let local_prob = if self.params.bytemode && packet_size <= mtu {
            u64::from(packet_size).wrapping_mul(v.prob / u64::from(mtu))
        } else {
            v.prob
        };
        if local_prob == 0 {
            v.accu_prob = 0;
        } else {
            v.accu_prob = v.accu_prob.wrapping_add(local_prob);
        }
        // De-randomisation (RFC 8033 section 5.1): never below 0.85, always from 8.5.
        if v.accu_prob < (MAX_PROB / 100) * 85 {
            return false;
        }
        if v.accu_prob >= (MAX_PROB / 2) * 17 {
            return true;
        }
        if (self.rng.next_u64() >> 8) < local_prob {
            v.accu_prob = 0;
            return true;
        }
        false
    }

    /// sch_pie.c pie_qdisc_enqueue. `Err` gives back a dropped packet (early or overlimit).
    pub fn enqueue(
        &mut self,
        now_ns: u64,
        mut pkt: P,
        bytes: u32,
        out: &mut Out<P>,
    ) -> Result<(), P> {
        let enqueue = if self.q.len() >= self.params.limit as usize {
            self.overlimit += 1;
            false
        } else if !self.drop_early(self.backlog, bytes) {
            true
        } else if self.params.ecn && self.vars.prob <= MAX_PROB / 10 && out.set_ce(&mut pkt) {
            // ECN-capable: mark rather than drop while the probability is at most 10 %.
            self.ecn_mark += 1;
            true
        } else {
            false
        };
        if !enqueue {
            self.dropped += 1;
            self.vars.accu_prob = 0;
            return Err(pkt);
        }
        self.backlog += u64::from(bytes);
        self.q.push_back(Item {
            pkt,
            bytes,
            t: ticks(now_ns),
        });
        Ok(())
    }

    /// sch_pie.c pie_qdisc_dequeue and pie_process_dequeue (timestamp mode).
    pub fn dequeue(&mut self, now_ns: u64) -> Option<Item<P>> {
        let it = self.q.pop_front()?;
        self.backlog -= u64::from(it.bytes);
        let now = ticks(now_ns);
        let v = &mut self.vars;
        v.qdelay = now.wrapping_sub(it.t);
        let mut dtime: u32 = 0;
        if v.dq_tstamp != DTIME_INVALID {
            dtime = now.wrapping_sub(v.dq_tstamp) as u32;
        }
        v.dq_tstamp = now;
        if self.backlog == 0 {
            v.qdelay = 0;
        }
        if dtime != 0 {
            // Burst allowance reduction.
            v.burst_time = v.burst_time.saturating_sub(u64::from(dtime));
        }
        Some(it)
    }

    /// sch_pie.c pie_calculate_probability (timestamp mode), with `backlog` bytes waiting.
    fn calculate_probability(&mut self, backlog: u32) {
        let p = self.params;
        let v = &mut self.vars;
        let (qdelay, qdelay_old) = (v.qdelay, v.qdelay_old);
        // A zero delay with a backlog means a very small queue: no update this round.
        let mut update_prob = !(qdelay == 0 && backlog != 0);
        // alpha and beta are in 1/16 and per second: scale them to probability per tick.
        let mut alpha = u64::from(p.alpha).wrapping_mul(MAX_PROB / PSCHED_TICKS_PER_SEC) >> 4;
        let mut beta = u64::from(p.beta).wrapping_mul(MAX_PROB / PSCHED_TICKS_PER_SEC) >> 4;
        // Auto-tuning (RFC 8033): smaller steps while the probability is small.
        if v.prob < MAX_PROB / 10 {
            alpha >>= 1;
            beta >>= 1;
            let mut power = 100u64;
            while v.prob < MAX_PROB / power && power <= 1_000_000 {
                alpha >>= 2;
                beta >>= 2;
                power *= 10;
            }
        }
        // s64 arithmetic on u64 operands, wrapping as in C.
        let mut delta: i64 = 0;
        delta = delta.wrapping_add(alpha.wrapping_mul(qdelay.wrapping_sub(p.target)) as i64);
        delta = delta.wrapping_add(beta.wrapping_mul(qdelay.wrapping_sub(qdelay_old)) as i64);
        let oldprob = v.prob;
        // Increase in steps of at most 2 % once the probability is 10 % or more.
        if delta > (MAX_PROB / 50) as i64 && v.prob >= MAX_PROB / 10 {
            delta = ((MAX_PROB / 100) * 2) as i64;
        }
        // Non-linear drop: +2 % per update above 250 ms of delay.
        if qdelay > ticks(250_000_000) {
            delta = delta.wrapping_add((MAX_PROB / 50) as i64);
        }
        v.prob = v.prob.wrapping_add(delta as u64);
        if delta > 0 {
            if v.prob < oldprob {
                // Overflow: saturate, and skip the decay below.
                v.prob = MAX_PROB;
                update_prob = false;
            }
        } else if v.prob > oldprob {
            v.prob = 0; // underflow
        }
        // No delay for two updates: decay to 98.4 %.
        if qdelay == 0 && qdelay_old == 0 && update_prob {
            v.prob -= v.prob / 64;
        }
        v.qdelay = qdelay;
        v.backlog_old = backlog;
        // Low delay for two updates and no probability: restart the measurement cycle.
        if v.qdelay < p.target / 2 && v.qdelay_old < p.target / 2 && v.prob == 0 {
            v.init();
        }
        v.qdelay_old = qdelay;
    }

    /// When the probability update next runs, ns.
    pub fn next_timer_ns(&self) -> Option<u64> {
        self.next_update_ns
    }

    /// sch_pie.c pie_timer at `t_ns`. Nothing else happens before `horizon_ns`: when the update
    /// changed nothing, the ticks up to the horizon would change nothing either, so they are
    /// passed over at once (an idle link costs no work per tick).
    pub fn on_timer(&mut self, t_ns: u64, horizon_ns: u64) {
        let before = self.vars;
        self.calculate_probability(u32::try_from(self.backlog).unwrap_or(u32::MAX));
        let period = self.params.tupdate_ns;
        let mut next = t_ns.checked_add(period).filter(|_| period > 0);
        if let Some(n) = next.filter(|&n| self.vars == before && n <= horizon_ns) {
            next = n.checked_add((horizon_ns - n) / period * period + period);
        }
        self.next_update_ns = next;
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
            1500
        }
    }

    fn pie() -> Pie<P> {
        let cfg = serde_json::from_str(r#"{"kind": "pie"}"#).unwrap();
        Pie::new(&cfg, ChaCha8Rng::seed_from_u64(1))
    }

    #[test]
    fn probability_rises_above_target_and_decays_below() {
        let mut q = pie();
        assert_eq!(q.params.target, 15_000_000 >> 6);
        // A standing 30 ms delay with 20 packets queued.
        q.vars.qdelay = ticks(30_000_000);
        q.vars.qdelay_old = q.vars.qdelay;
        let mut last = 0;
        for _ in 0..50 {
            q.calculate_probability(30_000);
            assert!(q.vars.prob > last, "rises while above target");
            last = q.vars.prob;
        }
        // The first step from 0: alpha 2/16 per s, auto-tuned down by 2 * 4^5 below 1e-6.
        // Below target: falls, and with no delay at all it decays by 1/64 per update too.
        q.vars.qdelay = ticks(2_000_000);
        q.vars.qdelay_old = q.vars.qdelay;
        for _ in 0..5 {
            q.calculate_probability(3000);
            assert!(q.vars.prob < last, "falls below target");
            last = q.vars.prob;
        }
        q.vars.qdelay = 0;
        q.calculate_probability(0);
        q.vars.qdelay = 0;
        let p = q.vars.prob;
        q.calculate_probability(0);
        assert!(
            q.vars.prob < p - p / 64 + 1,
            "decays at least by 1/64 with no delay"
        );
    }

    #[test]
    fn the_first_step_matches_the_kernel_fixed_point() {
        let mut q = pie();
        q.vars.qdelay = q.params.target + 1000; // 64 us above target, nothing before
        q.vars.qdelay_old = q.vars.qdelay;
        q.calculate_probability(10_000);
        // alpha = 2 * (MAX_PROB / 15625000) >> 4, halved, then /4 five times (prob < 1e-6).
        let alpha = ((2 * (MAX_PROB / PSCHED_TICKS_PER_SEC)) >> 4) >> 1 >> 10;
        assert_eq!(q.vars.prob, alpha * 1000);
    }

    #[test]
    fn idle_ticks_are_skipped_without_changing_the_result() {
        let mut a = pie();
        let mut b = pie();
        a.vars.prob = MAX_PROB / 1000;
        b.vars.prob = MAX_PROB / 1000;
        // a: every tick one by one; b: with a far horizon.
        let mut t = FIRST_UPDATE_NS;
        while t <= 60_000_000_000 {
            a.on_timer(t, t);
            t = a.next_timer_ns().unwrap();
        }
        let mut t = FIRST_UPDATE_NS;
        let mut calls = 0;
        while t <= 60_000_000_000 {
            b.on_timer(t, 60_000_000_000);
            t = b.next_timer_ns().unwrap();
            calls += 1;
        }
        assert_eq!(a.vars, b.vars);
        assert_eq!(a.next_timer_ns(), b.next_timer_ns());
        assert!(calls < 1000, "{calls} updates run for 3967 ticks");
        // Near the end of time the timer stops rather than firing forever.
        b.on_timer(u64::MAX - 5, u64::MAX);
        assert_eq!(b.next_timer_ns(), None);
    }
}
