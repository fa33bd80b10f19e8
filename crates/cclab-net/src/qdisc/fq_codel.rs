//! FQ-CoDel as net/sched/sch_fq_codel.c (Linux 6.18) codes it: packets hashed into `flows`
//! queues, each under its own CoDel state (codel.rs); deficit round robin with a quantum over two
//! lists, new flows before old ones; beyond `limit` packets or `memory_limit` bytes of skb
//! truesize, a batch drop from the head of the fattest flow.
//!
//! We diverge in the classification: the kernel takes `reciprocal_scale(skb_get_hash(skb),
//! flows)` of a jhash of the flow keys (random seed); we take [`NetPacket::flow_hash`] modulo
//! `flows`, the packet's own deterministic flow key. And in memory: a packet's truesize is
//! `SKB_TRUESIZE` of its wire size (what a linear skb of that size costs), not whatever its
//! driver allocated.

use super::codel::{codel_dequeue, codel_time, CodelParams, CodelSource, CodelVars};
use super::{check_ms, check_range, Item, Out, QdiscConfig};
use crate::error::NetError;
use crate::packet::NetPacket;
use std::collections::VecDeque;

/// `SKB_TRUESIZE(X)`: the data rounded up to a cache line (SKB_DATA_ALIGN, 64 bytes) plus the
/// aligned `struct sk_buff` (256 on x86-64) and `struct skb_shared_info` (320).
pub(crate) fn truesize(bytes: u32) -> u64 {
    u64::from(bytes).div_ceil(64) * 64 + 256 + 320
}

/// The settings fq_codel_change accepts: flows in 1..=65536, a quantum up to
/// FQ_CODEL_QUANTUM_MAX (1 << 20), a memory limit up to 1 << 31 (we also refuse zeros).
pub(crate) fn check(cfg: &QdiscConfig) -> Result<(), NetError> {
    if let QdiscConfig::FqCodel {
        target_ms,
        interval_ms,
        limit_pkts,
        flows,
        quantum_bytes,
        memory_limit_bytes,
        drop_batch_pkts,
        ce_threshold_ms,
        ..
    } = *cfg
    {
        check_ms("target_ms", target_ms, false)?;
        check_ms("interval_ms", interval_ms, false)?;
        check_range("limit_pkts", limit_pkts.into(), 1, u32::MAX.into())?;
        check_range("flows", flows.into(), 1, 65_536)?;
        check_range("quantum_bytes", quantum_bytes.into(), 1, 1 << 20)?;
        check_range("memory_limit_bytes", memory_limit_bytes, 1, 1 << 31)?;
        check_range(
            "drop_batch_pkts",
            drop_batch_pkts.into(),
            1,
            u32::MAX.into(),
        )?;
        ce_threshold_ms.map_or(Ok(()), |v| check_ms("ce_threshold_ms", v, true))?;
    }
    Ok(())
}

/// struct fq_codel_flow (the flowchain link is `in_list` plus the index in a list).
#[derive(Debug)]
struct Flow<P> {
    q: VecDeque<Item<P>>,
    deficit: i64,
    cvars: CodelVars,
    /// On new_flows or old_flows (`!list_empty(&flow->flowchain)`).
    in_list: bool,
}

/// One flow as CoDel sees it: sch_fq_codel.c dequeue_func keeps the per-flow backlog, the
/// qdisc's qlen, backlog and memory usage.
struct FlowSrc<'a, P> {
    q: &'a mut VecDeque<Item<P>>,
    flow_backlog: &'a mut u32,
    qlen: &'a mut usize,
    backlog: &'a mut u64,
    memory_usage: &'a mut u64,
}

impl<P> CodelSource<P> for FlowSrc<'_, P> {
    fn dequeue(&mut self) -> Option<Item<P>> {
        let it = self.q.pop_front()?;
        *self.flow_backlog = self.flow_backlog.wrapping_sub(it.bytes);
        *self.memory_usage = self.memory_usage.saturating_sub(truesize(it.bytes));
        *self.qlen -= 1;
        *self.backlog = self.backlog.saturating_sub(u64::from(it.bytes));
        Some(it)
    }
    fn backlog(&self) -> u64 {
        *self.backlog
    }
}

/// struct fq_codel_sched_data.
#[derive(Debug)]
pub(crate) struct FqCodel<P> {
    flows: Vec<Flow<P>>,
    /// Bytes queued per flow (u32, as `q->backlogs`).
    backlogs: Vec<u32>,
    quantum: u32,
    drop_batch_size: u32,
    memory_limit: u64,
    memory_usage: u64,
    limit: u32,
    params: CodelParams,
    new_flows: VecDeque<u32>,
    old_flows: VecDeque<u32>,
    /// `sch->q.qlen` and `sch->qstats.backlog`.
    qlen: usize,
    backlog: u64,
    /// Counters the kernel dumps (tc -s): flows that became new, overlimit and overmemory drops.
    pub new_flow_count: u64,
    pub drop_overlimit: u64,
    pub drop_overmemory: u64,
}

impl<P: NetPacket> FqCodel<P> {
    /// fq_codel_init then fq_codel_change with the config's settings.
    pub fn new(cfg: &QdiscConfig) -> Self {
        let (target, interval, limit, flows, quantum, mem, ecn, batch, ce) = match *cfg {
            QdiscConfig::FqCodel {
                target_ms,
                interval_ms,
                limit_pkts,
                flows,
                quantum_bytes,
                memory_limit_bytes,
                ecn,
                drop_batch_pkts,
                ce_threshold_ms,
            } => (
                target_ms,
                interval_ms,
                limit_pkts,
                flows,
                quantum_bytes,
                memory_limit_bytes,
                ecn,
                drop_batch_pkts,
                ce_threshold_ms,
            ),
            _ => return Self::new(&QdiscConfig::fq_codel_defaults()),
        };
        // Unvalidated settings saturate into the kernel's accepted ranges.
        let flows = flows.clamp(1, 65_536) as usize;
        FqCodel {
            flows: (0..flows)
                .map(|_| Flow {
                    q: VecDeque::new(),
                    deficit: 0,
                    cvars: CodelVars::default(),
                    in_list: false,
                })
                .collect(),
            backlogs: vec![0; flows],
            // fq_codel_change: max(256, quantum), at most FQ_CODEL_QUANTUM_MAX.
            quantum: quantum.clamp(256, 1 << 20),
            // max(1, drop_batch_size); min(1 << 31, memory_limit).
            drop_batch_size: batch.max(1),
            memory_limit: mem.min(1 << 31),
            memory_usage: 0,
            limit,
            params: CodelParams::new(target, interval, ecn, ce),
            new_flows: VecDeque::new(),
            old_flows: VecDeque::new(),
            qlen: 0,
            backlog: 0,
            new_flow_count: 0,
            drop_overlimit: 0,
            drop_overmemory: 0,
        }
    }

    /// fq_codel_classify without filters: our flow key modulo the number of flows (we diverge
    /// from `reciprocal_scale(skb_get_hash(skb), flows_cnt)`, see the file's header).
    fn classify(&self, pkt: &P) -> usize {
        (pkt.flow_hash() % self.flows.len() as u64) as usize
    }

    /// sch_fq_codel.c fq_codel_enqueue. Overlimit packets are dropped from the fattest flow;
    /// `Err` gives back the offered packet when it is among them.
    pub fn enqueue(&mut self, now_ns: u64, pkt: P, bytes: u32, out: &mut Out<P>) -> Result<(), P> {
        let idx = self.classify(&pkt);
        let flow = &mut self.flows[idx];
        flow.q.push_back(Item {
            pkt,
            bytes,
            t: u64::from(codel_time(now_ns)),
        });
        self.backlogs[idx] = self.backlogs[idx].wrapping_add(bytes);
        self.backlog += u64::from(bytes);
        if !flow.in_list {
            self.new_flows.push_back(idx as u32);
            flow.in_list = true;
            self.new_flow_count += 1;
            flow.deficit = i64::from(self.quantum);
        }
        self.memory_usage += truesize(bytes);
        let memory_limited = self.memory_usage > self.memory_limit;
        self.qlen += 1;
        if self.qlen <= self.limit as usize && !memory_limited {
            return Ok(());
        }
        let prev_qlen = self.qlen;
        // fq_codel_drop is expensive (a scan of every flow), so it drops up to
        // drop_batch_size packets (half the fat flow's backlog) at once.
        let offered = self.drop(now_ns, idx, out);
        let dropped = (prev_qlen - self.qlen) as u64;
        self.drop_overlimit += dropped;
        if memory_limited {
            self.drop_overmemory += dropped;
        }
        offered.map_or(Ok(()), Err)
    }

    /// sch_fq_codel.c fq_codel_drop: drop from the head of the flow with the largest backlog
    /// (the first such index), until half its backlog or `drop_batch_size` packets are gone, and
    /// raise its CoDel count by as many. Returns the offered packet (flow `offered_idx`'s tail)
    /// if it was dropped too, the others go to `out`.
    fn drop(&mut self, now_ns: u64, offered_idx: usize, out: &mut Out<P>) -> Option<P> {
        let (mut maxbacklog, mut idx) = (0u32, 0usize);
        for (i, &b) in self.backlogs.iter().enumerate() {
            if b > maxbacklog {
                maxbacklog = b;
                idx = i;
            }
        }
        if maxbacklog == 0 {
            // Only zero-byte packets queued (the kernel would pick flow 0, maybe empty): we
            // diverge and pick the first flow holding a packet.
            idx = self
                .flows
                .iter()
                .position(|f| !f.q.is_empty())
                .unwrap_or(offered_idx);
        }
        let threshold = u64::from(maxbacklog >> 1);
        let flow = &mut self.flows[idx];
        let (mut len, mut mem, mut i, mut offered) = (0u64, 0u64, 0u32, None);
        while let Some(it) = flow.q.pop_front() {
            len += u64::from(it.bytes);
            mem += truesize(it.bytes);
            i += 1;
            if idx == offered_idx && flow.q.is_empty() {
                offered = Some(it.pkt); // the tail: the packet being enqueued
            } else {
                out.drop(now_ns, it.pkt);
            }
            if !(i < self.drop_batch_size && len < threshold) {
                break;
            }
        }
        // Tell CoDel to increase its signal strength too.
        flow.cvars.count = flow.cvars.count.wrapping_add(i);
        self.backlogs[idx] = self.backlogs[idx].wrapping_sub(len as u32);
        self.memory_usage = self.memory_usage.saturating_sub(mem);
        self.backlog = self.backlog.saturating_sub(len);
        self.qlen -= i as usize;
        offered
    }

    /// sch_fq_codel.c fq_codel_dequeue (__fq_codel_dequeue): DRR over new then old flows, each
    /// flow's head through codel_dequeue.
    pub fn dequeue(&mut self, now_ns: u64, out: &mut Out<P>) -> Option<Item<P>> {
        loop {
            let (from_new, idx) = match (self.new_flows.front(), self.old_flows.front()) {
                (Some(&i), _) => (true, i as usize),
                (None, Some(&i)) => (false, i as usize),
                (None, None) => return None,
            };
            let flow = &mut self.flows[idx];
            if flow.deficit <= 0 {
                flow.deficit += i64::from(self.quantum);
                pop_head(from_new, &mut self.new_flows, &mut self.old_flows);
                self.old_flows.push_back(idx as u32);
                continue;
            }
            let mut src = FlowSrc {
                q: &mut flow.q,
                flow_backlog: &mut self.backlogs[idx],
                qlen: &mut self.qlen,
                backlog: &mut self.backlog,
                memory_usage: &mut self.memory_usage,
            };
            match codel_dequeue(&mut src, &self.params, &mut flow.cvars, now_ns, out) {
                Some(it) => {
                    flow.deficit -= i64::from(it.bytes);
                    return Some(it);
                }
                None => {
                    // Force a pass through old_flows to prevent starvation.
                    pop_head(from_new, &mut self.new_flows, &mut self.old_flows);
                    if from_new && !self.old_flows.is_empty() {
                        self.old_flows.push_back(idx as u32);
                    } else {
                        flow.in_list = false;
                    }
                }
            }
        }
    }

    pub fn len(&self) -> usize {
        self.qlen
    }

    pub fn backlog_bytes(&self) -> u64 {
        self.backlog
    }
}

/// Unlink the flow at the head of new_flows (`from_new`) or old_flows.
fn pop_head(from_new: bool, new_flows: &mut VecDeque<u32>, old_flows: &mut VecDeque<u32>) {
    if from_new {
        new_flows.pop_front();
    } else {
        old_flows.pop_front();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::link::LinkStats;

    #[derive(Debug)]
    struct P(u64, u32);
    impl NetPacket for P {
        fn wire_bytes(&self) -> u32 {
            self.1
        }
        fn flow_hash(&self) -> u64 {
            self.0
        }
    }

    fn fq(limit: u32, batch: u32) -> FqCodel<P> {
        let text =
            format!(r#"{{"kind": "fq_codel", "limit_pkts": {limit}, "drop_batch_pkts": {batch}}}"#);
        FqCodel::new(&serde_json::from_str(&text).unwrap())
    }

    #[test]
    fn truesize_is_skb_truesize() {
        assert_eq!(truesize(1500), 1536 + 576);
        assert_eq!(truesize(64), 64 + 576);
    }

    #[test]
    fn round_robin_serves_a_quantum_per_flow_and_new_flows_first() {
        let (mut drops, mut stats) = (VecDeque::new(), LinkStats::default());
        let mut out = Out {
            drops: &mut drops,
            stats: &mut stats,
        };
        let mut q = fq(100, 64);
        for _ in 0..4 {
            q.enqueue(0, P(1, 1000), 1000, &mut out).unwrap();
            q.enqueue(0, P(2, 1000), 1000, &mut out).unwrap();
        }
        // Flow 1 is new with a 1514 quantum: two packets (deficit 1514 -> 514 -> -486), then
        // flow 2 likewise, then they alternate in the old list.
        let order: Vec<u64> = (0..8)
            .map(|_| q.dequeue(0, &mut out).unwrap().pkt.0)
            .collect();
        assert_eq!(order, [1, 1, 2, 2, 1, 1, 2, 2]);
        assert!(
            q.dequeue(0, &mut out).is_none() && q.new_flows.is_empty() && q.old_flows.is_empty()
        );
        assert_eq!((q.len(), q.backlog_bytes(), q.memory_usage), (0, 0, 0));
    }

    #[test]
    fn overlimit_drops_half_the_fattest_flow_from_its_head() {
        let (mut drops, mut stats) = (VecDeque::new(), LinkStats::default());
        let mut out = Out {
            drops: &mut drops,
            stats: &mut stats,
        };
        let mut q = fq(10, 64);
        for _ in 0..8 {
            q.enqueue(0, P(7, 1000), 1000, &mut out).unwrap();
        }
        q.enqueue(0, P(3, 1000), 1000, &mut out).unwrap();
        q.enqueue(0, P(3, 1000), 1000, &mut out).unwrap();
        // The 11th packet is over the limit: flow 7 (8000 bytes) loses 4 packets (half).
        q.enqueue(0, P(3, 1000), 1000, &mut out).unwrap();
        assert_eq!(out.drops.len(), 4);
        assert!(out.drops.iter().all(|(t, p)| *t == 0 && p.0 == 7));
        assert_eq!((q.len(), q.backlogs[7], q.backlogs[3]), (7, 4000, 3000));
        assert_eq!(
            q.flows[7].cvars.count, 4,
            "CoDel's count raised by the batch"
        );
        assert_eq!(q.drop_overlimit, 4);
        // A flow whose only packet is the offered one, when it is the fattest: given back.
        let mut q = fq(1, 64);
        q.enqueue(0, P(1, 100), 100, &mut out).unwrap();
        assert_eq!(q.enqueue(0, P(2, 1500), 1500, &mut out).unwrap_err().0, 2);
        assert_eq!((q.len(), q.backlog_bytes()), (1, 100));
    }
}
