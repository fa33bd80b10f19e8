//! CoDel, as Linux 6.18 codes it: the algorithm of include/net/codel.h and
//! include/net/codel_impl.h (shared with FQ-CoDel, which runs one [`CodelVars`] per flow) and the
//! single-queue qdisc of net/sched/sch_codel.c.
//!
//! Arithmetic is the kernel's: time in `codel_time_t` (ns >> 10, u32, compared modulo 2^32), the
//! reciprocal square root of `count` kept in Q0.16 and refined by one Newton step per change, the
//! control law `t + interval / sqrt(count)` by `reciprocal_scale`.
//!
//! We follow codel_dequeue as 6.18 has it: an empty queue clears `dropping` but not
//! `first_above_time` (the reset of the latter is a 2026 fix), and the drop loop is bounded only
//! by the backlog (newer trees define a cap, `CODEL_MAX_DROPS_PER_DEQUEUE`, which we do not
//! apply).

use super::{check_ms, check_range, ms_to_us, Item, Out, QdiscConfig, PSCHED_MTU_BYTES};
use crate::error::NetError;
use crate::packet::NetPacket;
use std::collections::VecDeque;

/// `CODEL_SHIFT`: a codel_time_t unit is 1024 ns.
const CODEL_SHIFT: u32 = 10;
/// `REC_INV_SQRT_SHIFT`: rec_inv_sqrt is u16; << 16 makes it Q0.32.
const REC_INV_SQRT_SHIFT: u32 = 16;
/// `CODEL_DISABLED_THRESHOLD` (INT_MAX): ce_threshold off.
const DISABLED_THRESHOLD: u32 = i32::MAX as u32;

/// `codel_get_time`: ns to codel_time_t (truncated to u32, wrapping as the kernel's does).
pub(crate) fn codel_time(ns: u64) -> u32 {
    (ns >> CODEL_SHIFT) as u32
}

/// `codel_time_after(a, b)`: a after b, modulo 2^32.
fn after(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) > 0
}

/// `codel_time_after_eq(a, b)`.
fn after_eq(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) >= 0
}

/// A tc time in microseconds to codel_time_t, as codel_change / fq_codel_change convert
/// `TCA_CODEL_TARGET` and friends: `((u64)us * NSEC_PER_USEC) >> CODEL_SHIFT`.
pub(crate) fn us_to_codel(us: u32) -> u32 {
    ((u64::from(us) * 1000) >> CODEL_SHIFT) as u32
}

/// struct codel_params.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CodelParams {
    pub target: u32,
    pub ce_threshold: u32,
    pub interval: u32,
    /// Backlog (bytes) at or below which CoDel never drops.
    pub mtu: u32,
    pub ecn: bool,
}

impl CodelParams {
    /// codel_params_init, then the tc settings (ms converted as tc and codel_change do).
    pub fn new(target_ms: f64, interval_ms: f64, ecn: bool, ce_threshold_ms: Option<f64>) -> Self {
        CodelParams {
            target: us_to_codel(ms_to_us(target_ms)),
            ce_threshold: ce_threshold_ms.map_or(DISABLED_THRESHOLD, |v| us_to_codel(ms_to_us(v))),
            interval: us_to_codel(ms_to_us(interval_ms)),
            // codel_init: clamp(psched_mtu(dev), 256, 1 << 20); fq_codel_init: the same MTU.
            mtu: PSCHED_MTU_BYTES,
            ecn,
        }
    }
}

/// struct codel_vars (codel_vars_init: all zero).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct CodelVars {
    pub count: u32,
    pub lastcount: u32,
    pub dropping: bool,
    pub rec_inv_sqrt: u16,
    pub first_above_time: u32,
    pub drop_next: u32,
    pub ldelay: u32,
}

/// codel_impl.h codel_Newton_step: one Newton iteration of 1/sqrt(count),
/// new = (old / 2) * (3 - count * old^2), in Q0.32 with the kernel's shifts.
pub(crate) fn newton_step(v: &mut CodelVars) {
    let invsqrt = u32::from(v.rec_inv_sqrt) << REC_INV_SQRT_SHIFT;
    let invsqrt2 = ((u64::from(invsqrt) * u64::from(invsqrt)) >> 32) as u32;
    let mut val = (3u64 << 32).wrapping_sub(u64::from(v.count) * u64::from(invsqrt2));
    val >>= 2; // avoid overflow in the multiply below
    val = val.wrapping_mul(u64::from(invsqrt)) >> (32 - 2 + 1);
    v.rec_inv_sqrt = (val >> REC_INV_SQRT_SHIFT) as u16;
}

/// codel_impl.h codel_control_law: `t + interval / sqrt(count)`, as
/// `t + reciprocal_scale(interval, rec_inv_sqrt << REC_INV_SQRT_SHIFT)`.
pub(crate) fn control_law(t: u32, interval: u32, rec_inv_sqrt: u16) -> u32 {
    let scale = u64::from(u32::from(rec_inv_sqrt) << REC_INV_SQRT_SHIFT);
    t.wrapping_add(((u64::from(interval) * scale) >> 32) as u32)
}

/// The queue CoDel runs on: the qdisc's FIFO, or one FQ-CoDel flow (the `dequeue_func` and
/// the `backlog` pointer handed to codel_dequeue).
pub(crate) trait CodelSource<P> {
    /// dequeue_func: take the head packet; its bytes leave the backlog.
    fn dequeue(&mut self) -> Option<Item<P>>;
    /// The qdisc's backlog in bytes (all flows for FQ-CoDel), after that dequeue.
    fn backlog(&self) -> u64;
}

/// codel_impl.h codel_should_drop. `it.t` is the enqueue time in codel_time_t.
fn should_drop<P>(
    it: Option<&Item<P>>,
    p: &CodelParams,
    v: &mut CodelVars,
    backlog: u64,
    now: u32,
) -> bool {
    let Some(it) = it else {
        v.first_above_time = 0;
        return false;
    };
    v.ldelay = now.wrapping_sub(it.t as u32);
    if after(p.target, v.ldelay) || backlog <= u64::from(p.mtu) {
        // Went below: stay below for at least an interval.
        v.first_above_time = 0;
        return false;
    }
    if v.first_above_time == 0 {
        // Just went above from below: drop if we stay above for an interval.
        v.first_above_time = now.wrapping_add(p.interval);
        false
    } else {
        after(now, v.first_above_time)
    }
}

/// codel_impl.h codel_dequeue: the next packet to send from `src` at `now_ns`, dropping (or
/// marking) per the control law; drops go to `out` at `now_ns`.
pub(crate) fn codel_dequeue<P: NetPacket, S: CodelSource<P>>(
    src: &mut S,
    p: &CodelParams,
    v: &mut CodelVars,
    now_ns: u64,
    out: &mut Out<P>,
) -> Option<Item<P>> {
    let Some(mut skb) = src.dequeue() else {
        v.dropping = false;
        return None;
    };
    let now = codel_time(now_ns);
    let drop = should_drop(Some(&skb), p, v, src.backlog(), now);
    let mut cur = Some(skb);
    if v.dropping {
        if !drop {
            // Sojourn time below target: leave the dropping state.
            v.dropping = false;
        } else if after_eq(now, v.drop_next) {
            // Time for the next drop(s): a large backlog may make several due at once.
            while v.dropping && after_eq(now, v.drop_next) {
                let Some(mut s) = cur.take() else { break };
                v.count = v.count.wrapping_add(1);
                newton_step(v);
                if p.ecn && out.set_ce(&mut s.pkt) {
                    v.drop_next = control_law(v.drop_next, p.interval, v.rec_inv_sqrt);
                    return ce_threshold(Some(s), p, v, out);
                }
                out.drop(now_ns, s.pkt);
                cur = src.dequeue();
                if !should_drop(cur.as_ref(), p, v, src.backlog(), now) {
                    v.dropping = false;
                } else {
                    v.drop_next = control_law(v.drop_next, p.interval, v.rec_inv_sqrt);
                }
            }
        }
    } else if drop {
        skb = cur.take()?;
        if p.ecn && out.set_ce(&mut skb.pkt) {
            cur = Some(skb);
        } else {
            out.drop(now_ns, skb.pkt);
            cur = src.dequeue();
            should_drop(cur.as_ref(), p, v, src.backlog(), now);
        }
        v.dropping = true;
        // If min went above target close to when we last went below it, assume the drop rate
        // that controlled the queue on the last cycle is a good starting point now.
        let delta = v.count.wrapping_sub(v.lastcount);
        if delta > 1 && after(p.interval.wrapping_mul(16), now.wrapping_sub(v.drop_next)) {
            v.count = delta;
            newton_step(v);
        } else {
            v.count = 1;
            v.rec_inv_sqrt = (!0u32 >> REC_INV_SQRT_SHIFT) as u16;
        }
        v.lastcount = v.count;
        v.drop_next = control_law(now, p.interval, v.rec_inv_sqrt);
    }
    ce_threshold(cur, p, v, out)
}

/// The `end:` label of codel_dequeue: CE-mark above ce_threshold (no selector mask: tc's default).
fn ce_threshold<P: NetPacket>(
    skb: Option<Item<P>>,
    p: &CodelParams,
    v: &CodelVars,
    out: &mut Out<P>,
) -> Option<Item<P>> {
    let mut skb = skb?;
    if after(v.ldelay, p.ce_threshold) {
        out.set_ce(&mut skb.pkt);
    }
    Some(skb)
}

/// The settings codel_change accepts (and we require: positive times, a limit of at least 1).
pub(crate) fn check(cfg: &QdiscConfig) -> Result<(), NetError> {
    if let QdiscConfig::Codel {
        target_ms,
        interval_ms,
        limit_pkts,
        ce_threshold_ms,
        ..
    } = *cfg
    {
        check_ms("target_ms", target_ms, false)?;
        check_ms("interval_ms", interval_ms, false)?;
        check_range("limit_pkts", limit_pkts.into(), 1, u32::MAX.into())?;
        ce_threshold_ms.map_or(Ok(()), |v| check_ms("ce_threshold_ms", v, true))?;
    }
    Ok(())
}

/// The single FIFO of sch_codel.c.
#[derive(Debug)]
struct Fifo<P> {
    q: VecDeque<Item<P>>,
    backlog: u64,
}

impl<P> CodelSource<P> for Fifo<P> {
    /// sch_codel.c dequeue_func.
    fn dequeue(&mut self) -> Option<Item<P>> {
        let it = self.q.pop_front()?;
        self.backlog -= u64::from(it.bytes);
        Some(it)
    }
    fn backlog(&self) -> u64 {
        self.backlog
    }
}

/// sch_codel.c: one FIFO under CoDel, tail drop at `limit` packets.
#[derive(Debug)]
pub(crate) struct Codel<P> {
    fifo: Fifo<P>,
    limit: u32,
    params: CodelParams,
    vars: CodelVars,
}

impl<P: NetPacket> Codel<P> {
    /// codel_init with the config's settings (DEFAULT_CODEL_LIMIT 1000 unless set).
    pub fn new(cfg: &QdiscConfig) -> Self {
        let (params, limit) = match *cfg {
            QdiscConfig::Codel {
                target_ms,
                interval_ms,
                limit_pkts,
                ecn,
                ce_threshold_ms,
            } => (
                CodelParams::new(target_ms, interval_ms, ecn, ce_threshold_ms),
                limit_pkts,
            ),
            _ => return Self::new(&QdiscConfig::codel_defaults()),
        };
        Codel {
            fifo: Fifo {
                q: VecDeque::new(),
                backlog: 0,
            },
            limit,
            params,
            vars: CodelVars::default(),
        }
    }

    /// sch_codel.c codel_qdisc_enqueue: timestamp and queue, or drop beyond the limit.
    pub fn enqueue(&mut self, now_ns: u64, pkt: P, bytes: u32) -> Result<(), P> {
        if self.fifo.q.len() >= self.limit as usize {
            return Err(pkt); // drop_overlimit
        }
        self.fifo.backlog += u64::from(bytes);
        self.fifo.q.push_back(Item {
            pkt,
            bytes,
            t: u64::from(codel_time(now_ns)),
        });
        Ok(())
    }

    /// sch_codel.c codel_qdisc_dequeue.
    pub fn dequeue(&mut self, now_ns: u64, out: &mut Out<P>) -> Option<Item<P>> {
        codel_dequeue(&mut self.fifo, &self.params, &mut self.vars, now_ns, out)
    }

    pub fn len(&self) -> usize {
        self.fifo.q.len()
    }

    pub fn backlog_bytes(&self) -> u64 {
        self.fifo.backlog
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn newton_steps_track_one_over_sqrt_count() {
        // As codel_dequeue runs them: count 1 starts at ~1.0, then one step per increment.
        let mut v = CodelVars {
            count: 1,
            rec_inv_sqrt: (!0u32 >> 16) as u16,
            ..Default::default()
        };
        for count in 2..=5000u32 {
            v.count = count;
            newton_step(&mut v);
            let got = f64::from(v.rec_inv_sqrt) / 65536.0;
            let want = 1.0 / f64::from(count).sqrt();
            // From 1.0 the first step overshoots (count 2 gives 0.5, not 0.707: "we dont care if
            // rec_inv_sqrt approximation is not very precise"), then one step per increment
            // keeps the Q0.16 estimate within 3 %, and within 1 % from count 10.
            let tol = match count {
                2 => 0.3,
                3..=9 => 0.03,
                _ => 0.01,
            };
            assert!(
                (got - want).abs() / want < tol,
                "count {count}: {got} vs {want}"
            );
        }
        // Known values of the kernel's fixed point (count 2 from rec_inv_sqrt 0xffff).
        let mut v = CodelVars {
            count: 2,
            rec_inv_sqrt: 0xffff,
            ..Default::default()
        };
        newton_step(&mut v);
        assert_eq!(
            v.rec_inv_sqrt, 0x8001,
            "0.5 in Q0.16, as the kernel's shifts round it"
        );
    }

    #[test]
    fn control_law_divides_the_interval_by_sqrt_count() {
        let interval = us_to_codel(100_000); // 97656 units
        assert_eq!(interval, 97_656);
        assert_eq!(control_law(1000, interval, 0xffff), 1000 + 97_654);
        assert_eq!(control_law(1000, interval, 0x8000), 1000 + 48_828);
        // Wraps modulo 2^32 like codel_time_t.
        assert_eq!(control_law(u32::MAX, interval, 0x8000), 48_827);
    }

    #[test]
    fn times_convert_as_tc_does() {
        assert_eq!(ms_to_us(5.0), 5000);
        assert_eq!(ms_to_us(0.0015), 2);
        assert_eq!(ms_to_us(-1.0), 0);
        assert_eq!(ms_to_us(f64::NAN), 0);
        assert_eq!(ms_to_us(1e12), u32::MAX);
    }

    #[test]
    fn time_compares_modulo_two_to_the_32() {
        assert!(after(1, 0) && !after(0, 0) && after_eq(0, 0));
        assert!(after(0, u32::MAX), "0 is just after the wrap");
        assert_eq!(codel_time(5_000_000), 4882);
        assert_eq!(us_to_codel(5000), 4882);
    }
}
