//! The world's side of Multipath TCP (`crate::mptcp`): the events of a connection's subflows
//! (start or join, ACK, timer, TSQ completion) and, after each, the connection's write path.
//! A subflow is a flow slot like a TCP flow's; only these functions know it has a connection.

use super::World;
use crate::cc::{CaState, SubflowView};
use crate::config::MAX_SUBFLOWS;
use crate::mptcp::sched::{
    avg_pacing_after, get_available_subflow, linux_pick, temp_unavailable, Candidate,
    LingerCandidate,
};
use crate::mptcp::{Connection, MptcpStack, MAX_CHUNK_BYTES, SEND_BURST_BYTES};
use crate::tcp::segment::AckSeg;
use crate::tcp::sndbuf::{stream_is_writeable, APP_WRITE_BYTES};
use crate::{FlowStats, SubflowStats};

/// A placeholder view (overwritten before use).
const NO_VIEW: SubflowView = SubflowView {
    cwnd_pkts: 0,
    ssthresh_pkts: 0,
    srtt_us: 0,
    mss_bytes: 0,
    ca_state: CaState::Open,
    can_send: false,
    cc_state: [0; 4],
};

impl World {
    /// Slot `f`'s connection and subflow index.
    fn conn_of(&self, f: u32) -> (usize, usize) {
        let (c, k) = self.flows[f as usize]
            .conn
            .expect("a Multipath TCP subflow");
        (c as usize, k as usize)
    }

    /// Give subflow `k` of connection `c` its view of every subflow (`set_subflows`), before
    /// an event it handles. No allocation: at most `MAX_SUBFLOWS` views on the stack.
    fn mptcp_views(&mut self, c: usize, k: usize) {
        let conn = &self.conns[c];
        let n = conn.subflows.len();
        let mut views = [NO_VIEW; MAX_SUBFLOWS];
        for (v, sub) in views.iter_mut().zip(&conn.subflows) {
            let s = &self.flows[sub.slot as usize].sender;
            *v = SubflowView {
                cwnd_pkts: s.tp.snd_cwnd,
                ssthresh_pkts: s.tp.snd_ssthresh,
                srtt_us: s.tp.srtt_us,
                mss_bytes: s.tp.mss_cache,
                ca_state: s.tp.ca_state,
                can_send: sub.joined && !sub.pf,
                cc_state: s.cc.coupled_state(),
            };
        }
        let slot = conn.subflows[k].slot as usize;
        self.flows[slot].sender.cc.set_subflows(&views[..n], k);
    }

    /// Subflow slot `f` starts (subflow 0, with the flow) or joins (k >= 1).
    pub(super) fn mptcp_start(&mut self, t: u64, f: u32) {
        let (c, k) = self.conn_of(f);
        self.conns[c].subflows[k].joined = true;
        self.mptcp_views(c, k);
        self.start_sender(t, f);
        self.mptcp_push(t, c);
        self.mptcp_after(t, c, None);
    }

    /// An ACK reaches subflow slot `f`'s sender: its DATA_ACK first (`mptcp_data_ack`), then
    /// the subflow's `tcp_ack`, then the connection's write path.
    pub(super) fn mptcp_on_ack(&mut self, t: u64, f: u32, a: &AckSeg) {
        let (c, k) = self.conn_of(f);
        self.conns[c].on_data_ack(a.data_ack);
        self.mptcp_views(c, k);
        self.drive_sender(t, f, |s, buf| s.on_ack(t, a, buf));
        let una = self.flows[f as usize].sender.tp.snd_una;
        let conn = &mut self.conns[c];
        conn.maps[k].prune(una);
        let sub = &mut conn.subflows[k];
        if una > sub.last_una {
            // Its ACKs move again: no longer potentially failed (we clear `tp->pf` when the
            // subflow's snd_una advances after the RTO that set it).
            sub.pf = false;
            sub.last_una = una;
        }
        self.mptcp_push(t, c);
        self.mptcp_after(t, c, Some(f));
    }

    /// Subflow slot `f`'s timer fires; after an RTO its data is queued for reinjection.
    pub(super) fn mptcp_on_timer(&mut self, t: u64, f: u32) {
        let (c, k) = self.conn_of(f);
        self.mptcp_views(c, k);
        self.drive_sender(t, f, |s, buf| s.on_timer(t, buf));
        let s = &self.flows[f as usize].sender;
        // Upstream's subflow also holds data it never sent: all of it goes again on the others
        // (a simplification of `__mptcp_retrans`, which resends the connection's oldest
        // unacknowledged data whatever subflow holds it, an RTO of the connection at a time).
        let end = match self.conns[c].stack {
            MptcpStack::Linux => s.write_seq,
            MptcpStack::V09x => s.tp.snd_nxt,
        };
        let (rtos, una, nxt) = (s.stats.rto_count, s.tp.snd_una, end);
        let mut queued = 0;
        if rtos > self.conns[c].subflows[k].rtos_seen {
            // mptcp_sub_retransmit_timer: tcp_retransmit_timer, then mptcp_reinject_data.
            self.conns[c].subflows[k].rtos_seen = rtos;
            queued = self.conns[c].reinject_from(k, una, nxt);
        }
        self.mptcp_push(t, c);
        self.mptcp_after(t, c, None);
        if queued > 0 {
            // After the subflow's own `rto` event (drained above).
            let id = self.conns[c].id as i32;
            let detail = format!("subflow={k} bytes={queued}");
            self.events.push(t, id, "reinject", detail);
        }
    }

    /// Subflow slot `f`'s NIC sent a segment (TSQ may let it, and so the connection, write).
    pub(super) fn mptcp_on_tx_complete(&mut self, t: u64, f: u32, len: u32) {
        let (c, k) = self.conn_of(f);
        self.mptcp_views(c, k);
        self.drive_sender(t, f, |s, buf| s.on_tx_complete(t, len, buf));
        self.mptcp_push(t, c);
        self.mptcp_after(t, c, None);
    }

    /// Subflow slot `f`'s receiver took data or its timer fired, and `acks` are the ACKs it
    /// sends: read its newly in-order bytes into the data level, stamp the DATA_ACK on them.
    /// Upstream (`mptcp_stack = "linux"`): when that brings data to the application in order, it
    /// reads it, and the read sends each subflow's waiting ACK (`mptcp_cleanup_rbuf`): this
    /// subflow's joins `acks`, the others' leave here.
    pub(super) fn mptcp_delivered(&mut self, t: u64, f: u32, acks: &mut Vec<AckSeg>) {
        let (c, k) = self.conn_of(f);
        let rcv_nxt = self.flows[f as usize].receiver.rcv_nxt;
        let conn = &mut self.conns[c];
        let before = conn.rcv.rcv_nxt;
        conn.on_subflow_delivered(k, rcv_nxt, t);
        let data_ack = conn.rcv.rcv_nxt;
        if data_ack > before {
            self.mptcp_rcv_space_adjust(t, c, data_ack - before);
        }
        if self.conns[c].stack == MptcpStack::Linux {
            self.mptcp_space(c);
        }
        let conn = &mut self.conns[c];
        if conn.stack == MptcpStack::Linux && data_ack > before {
            let mut others = std::mem::take(&mut self.ack_buf_read);
            for j in 0..self.conns[c].subflows.len() {
                let slot = self.conns[c].subflows[j].slot;
                if j == k {
                    self.flows[slot as usize].receiver.cleanup_rbuf(t, acks);
                    continue;
                }
                self.flows[slot as usize]
                    .receiver
                    .cleanup_rbuf(t, &mut others);
                if !others.is_empty() {
                    for a in others.iter_mut() {
                        a.data_ack = data_ack;
                    }
                    self.send_acks(t, slot, &mut others);
                    self.after_receiver(slot);
                }
            }
            self.ack_buf_read = others;
        }
        for a in acks.iter_mut() {
            a.data_ack = data_ack;
        }
    }

    /// Hand connection `c`'s buffer space (`mptcp_space`) to its subflows' receivers, which
    /// offer windows from it (upstream's stack; v0.9x's subflows offer their own, we diverge).
    fn mptcp_space(&mut self, c: usize) {
        let conn = &self.conns[c];
        let space = conn.rspace.space(conn.rcv.ooo_bytes());
        for s in &conn.subflows {
            self.flows[s.slot as usize].receiver.conn_space = Some(space);
        }
    }

    /// The application read `copied` bytes of connection `c` (`mptcp_rcv_space_adjust`): when
    /// the connection's buffer grows, its established subflows' follow.
    fn mptcp_rcv_space_adjust(&mut self, t: u64, c: usize, copied: u64) {
        if !self.conns[c].rspace.read(t, copied) {
            return;
        }
        let conn = &self.conns[c];
        let subs: Vec<(u64, u64)> = conn
            .subflows
            .iter()
            .filter(|s| s.joined)
            .map(|s| {
                let rb = &self.flows[s.slot as usize].receiver.rb;
                (rb.rtt_us8, rb.scaling_ratio)
            })
            .collect();
        if let Some(newval) = self.conns[c].rspace.adjust(t, &subs) {
            for j in 0..self.conns[c].subflows.len() {
                let s = &self.conns[c].subflows[j];
                if s.joined {
                    let slot = s.slot as usize;
                    self.flows[slot].receiver.rb.rcvbuf_grow(newval, 0);
                }
            }
        }
    }

    /// The MSS the connection `c` cuts its bursts and segments in: its first subflow's.
    fn conn_mss(&self, c: usize) -> u64 {
        let slot = self.conns[c].subflows[0].slot as usize;
        u64::from(self.flows[slot].sender.cfg.mss_bytes)
    }

    /// The connection's write path (v0.9x `mptcp_write_xmit`): while there is data (the
    /// reinject queue first) and the scheduler finds a subflow, give that subflow up to its
    /// cwnd quota (at most 64 KB), let it write, and map what it sent. A subflow that sends
    /// nothing (pacing, its interface queue, TSQ on its first skb) is passed over until the
    /// next event. O(subflows) per decision.
    pub(super) fn mptcp_push(&mut self, t: u64, c: usize) {
        if self.conns[c].stack == MptcpStack::Linux {
            return self.mptcp_push_linux(t, c);
        }
        let n = self.conns[c].subflows.len();
        let mss = self.conn_mss(c);
        let mut skip = 0u32;
        let mut buf = std::mem::take(&mut self.data_buf);
        while let Some((data_seq, avail, path_mask, reinject)) = self.conns[c].next_segment() {
            let window_limited = !reinject
                && avail < mss
                && self.conns[c].size_bytes - self.conns[c].data_nxt > avail;
            if window_limited {
                // tcp_snd_wnd_test on the meta socket: a segment must fit the window whole.
                break;
            }
            let (conn, flows) = (&self.conns[c], &self.flows);
            let cand = |j: usize| {
                let sub = &conn.subflows[j];
                let s = &flows[sub.slot as usize].sender;
                Candidate {
                    usable: sub.joined && !sub.pf,
                    temp_unavailable: temp_unavailable(s),
                    srtt_us: s.tp.srtt_us,
                }
            };
            let Some(k) = get_available_subflow(n, cand, skip, path_mask) else {
                break;
            };
            let slot = self.conns[c].subflows[k].slot;
            let s = &self.flows[slot as usize].sender;
            let quota_pkts = u64::from(s.tp.snd_cwnd.saturating_sub(s.tp.packets_in_flight()));
            let chunk = avail
                .min(quota_pkts * u64::from(s.tp.mss_cache))
                .min(MAX_CHUNK_BYTES);
            let sub_seq = s.tp.snd_nxt;
            self.set_device_room(t, slot);
            let s = &mut self.flows[slot as usize].sender;
            s.set_write_limit(sub_seq + chunk);
            let segs = s.push_pending(t, &mut buf);
            let sent = s.tp.snd_nxt - sub_seq;
            s.set_write_limit(s.tp.snd_nxt);
            self.send_data(t, slot, &mut buf);
            if sent == 0 {
                skip |= 1 << k;
                continue;
            }
            let conn = &mut self.conns[c];
            conn.sent(k, sub_seq, data_seq, sent, reinject);
            if reinject {
                conn.subflows[k].reinjected_pkts += u64::from(segs);
            }
        }
        self.data_buf = buf;
    }

    /// Upstream's write path (`__mptcp_push_pending`, 6.18): while there is data (the reinject
    /// queue first: we let upstream's scheduler place it too), the subflow with the shortest
    /// linger time ([`linux_pick`]) takes a burst of up to `SEND_BURST_BYTES` (whole segments)
    /// into its send buffer and pushes what it can send now; the rest waits there for its
    /// ACKs, pacing or TSQ. It stops when that subflow's buffer is full (`mptcp_nospace`) or
    /// the application has written nothing more ([`World::mptcp_app_write`] first).
    fn mptcp_push_linux(&mut self, t: u64, c: usize) {
        let n = self.conns[c].subflows.len();
        let mss = self.conn_mss(c);
        self.mptcp_app_write(c);
        let mut buf = std::mem::take(&mut self.data_buf);
        while let Some((data_seq, avail, _path_mask, reinject)) = self.conns[c].next_segment() {
            let last = reinject || self.conns[c].data_nxt + avail >= self.conns[c].size_bytes;
            // Whole segments, unless the data ends here; a part-segment the application wrote
            // waits for its next write, as on a TCP socket (`tcp::sndbuf`).
            let burst = SEND_BURST_BYTES.min(avail);
            let burst = if last && burst == avail {
                burst
            } else {
                burst / mss * mss
            };
            if burst == 0 {
                break; // the connection's window: a segment must fit whole
            }
            for j in 0..n {
                let sub = &mut self.conns[c].subflows[j];
                if sub.avg_pacing_rate == 0 {
                    let s = &self.flows[sub.slot as usize].sender;
                    sub.avg_pacing_rate = sk_pacing_rate(s);
                }
            }
            let mut wmem = [0u64; MAX_SUBFLOWS];
            for (j, w) in wmem.iter_mut().enumerate().take(n) {
                let slot = self.conns[c].subflows[j].slot as usize;
                *w = self.flows[slot].sender.mptcp_wmem_queued();
            }
            let conn = &self.conns[c];
            let cand = |j: usize| {
                let sub = &conn.subflows[j];
                LingerCandidate {
                    usable: sub.joined && !sub.pf,
                    wmem_queued_bytes: wmem[j],
                    avg_pacing_rate: sub.avg_pacing_rate,
                }
            };
            let Some(k) = linux_pick(n, cand) else {
                break;
            };
            let slot = self.conns[c].subflows[k].slot;
            if !self.flows[slot as usize].sender.mptcp_memory_free(wmem[k]) {
                for j in 0..n {
                    let s = self.conns[c].subflows[j].slot as usize;
                    self.flows[s].sender.mptcp_set_nospace();
                }
                break;
            }
            let s = &mut self.flows[slot as usize].sender;
            let (pace, sub_seq) = (sk_pacing_rate(s), s.write_seq);
            let taken = s.mptcp_take(burst);
            if taken == 0 {
                break;
            }
            let sub = &mut self.conns[c].subflows[k];
            sub.avg_pacing_rate = avg_pacing_after(sub.avg_pacing_rate, wmem[k], pace, taken);
            self.conns[c].sent(k, sub_seq, data_seq, taken, reinject);
            self.set_device_room(t, slot);
            let s = &mut self.flows[slot as usize].sender;
            s.push_pending(t, &mut buf);
            self.send_data(t, slot, &mut buf);
            if reinject {
                // Counted when taken: it may leave later, behind what the subflow held.
                self.conns[c].subflows[k].reinjected_pkts += taken.div_ceil(mss);
            }
        }
        self.data_buf = buf;
    }

    /// The application writes into upstream's connection `c` (`mptcp_sendmsg` behind the
    /// poll()-driven writer of `tcp::sndbuf`, which is cclab's kernel traffic sender): the
    /// connection's `sk_sndbuf` is `tcp_wmem[0]` plus its joined subflows' (`__mptcp_sync_sndbuf`,
    /// 6.18; measured on the kernel backend: 3465 KB for subflows of 1193 + 1124 + 1143 KB),
    /// its `sk_wmem_queued` the data written and not DATA_ACKed. While poll() finds it writable
    /// (`sk_stream_is_writeable`: at most 2/3 queued) a write of 64 KiB copies what fits below
    /// `sk_sndbuf` (the poll() rule whatever the flow's `writer` says). A subflow without a send
    /// buffer (`[host] sndbuf = "unlimited"`) makes the application write everything at once.
    /// The subflows' own buffers grow with their cwnd as a blocked writer's would (measured:
    /// `sk_sndbuf` = 2 x cwnd x per_mss at every sample), so each is marked as waiting for room
    /// (`SOCK_NOSPACE`).
    fn mptcp_app_write(&mut self, c: usize) {
        let conn = &self.conns[c];
        if conn.written >= conn.size_bytes {
            return;
        }
        let slot0 = conn.subflows[0].slot as usize;
        let mut sndbuf = self.flows[slot0].sender.cfg.stack.tcp_wmem_bytes[0];
        let mut unlimited = false;
        for sub in conn.subflows.iter().filter(|s| s.joined) {
            let s = &mut self.flows[sub.slot as usize].sender;
            s.mptcp_set_nospace();
            match s.sndbuf_peek() {
                Some((b, _)) => sndbuf += b,
                None => unlimited = true,
            }
        }
        let conn = &mut self.conns[c];
        if unlimited {
            conn.written = conn.size_bytes;
            return;
        }
        while conn.written < conn.size_bytes {
            let queued = conn.written - conn.data_una;
            let writeable = stream_is_writeable(sndbuf, queued);
            let copy = APP_WRITE_BYTES
                .min(conn.size_bytes - conn.written)
                .min(sndbuf.saturating_sub(queued));
            if !writeable || copy == 0 {
                break;
            }
            conn.written += copy;
        }
    }

    /// After an event of connection `c`: reschedule every joined subflow's timer, drain its
    /// events, trace it (`acked`: the slot whose ACK this was).
    fn mptcp_after(&mut self, t: u64, c: usize, acked: Option<u32>) {
        for k in 0..self.conns[c].subflows.len() {
            let sub = &self.conns[c].subflows[k];
            if sub.joined {
                let slot = sub.slot;
                self.after_sender(t, slot, acked == Some(slot));
            }
        }
    }

    /// Connection `c`'s summary row: data-level goodput and delivered bytes, counters summed
    /// over its subflows, and a row per subflow.
    pub(super) fn mptcp_stats(&self, c: &Connection, end_ns: u64) -> FlowStats {
        let end = c.completion_ns.unwrap_or(end_ns);
        let rate = |bytes: u64| super::rate_bps(bytes, c.start_ns, end);
        let slots: Vec<&super::FlowSlot> = c
            .subflows
            .iter()
            .map(|s| &self.flows[s.slot as usize])
            .collect();
        let subflows = c
            .subflows
            .iter()
            .zip(&slots)
            .enumerate()
            .map(|(k, (sub, fl))| {
                let st = &fl.sender.stats;
                let delivered = fl.sender.tp.snd_una;
                SubflowStats {
                    subflow: k as u32,
                    path: sub.path.clone(),
                    delivered_bytes: delivered,
                    goodput_bps: rate(delivered),
                    sent_pkts: st.sent_pkts,
                    retrans_pkts: st.retrans_pkts,
                    rto_count: st.rto_count,
                    fast_retransmit_count: st.fast_retransmit_count,
                    cwr_count: st.cwr_count,
                    local_drop_count: fl.sender.below.local_drops,
                    reinjected_pkts: sub.reinjected_pkts,
                }
            })
            .collect();
        let delivered = c.delivered_bytes();
        FlowStats {
            goodput_bps: rate(delivered),
            delivered_bytes: delivered,
            start_s: c.start_ns as f64 * 1e-9,
            completion_s: c.completion_ns.map(|t| t as f64 * 1e-9),
            // Subflow 0's establishment (the connection's start without a handshake).
            established_s: slots[0].established_s(),
            subflows: Some(subflows),
            ..super::summed_flow_stats(&c.name, &slots)
        }
    }
}

/// `sk_pacing_rate` as upstream's scheduler reads it, 0 if unknown. On the kernel a subflow has
/// one once established (the SYN-ACK's `tcp_ack` ends in `tcp_update_pacing_rate`); our
/// handshake sets only srtt, so until the first ACK the rate is the one that call would give.
fn sk_pacing_rate(s: &crate::tcp::sender::Sender) -> u64 {
    match s.tp.pacing_rate_bytes_per_s {
        0 if s.tp.srtt_us != 0 => s.pacing_rate_now(),
        r => r,
    }
}

/// How long after subflow 0 is established (its SYN-ACK arrived) subflow `k` >= 1 sends its
/// MP_JOIN SYN, given subflow 0's round trip `rtt_ns`: Linux 6.18's in-kernel path manager with
/// the receiver's addresses as `signal` endpoints (what the kernel backend configures). The
/// receiver announces one address when the connection is fully established (the MP_CAPABLE ACK
/// arrives, half a round trip after it left; net/mptcp/pm_kernel.c
/// `mptcp_pm_create_subflow_or_signal_addr`, "check first for announce"), and the next only
/// once the sender's echo of that ADD_ADDR is back (`mptcp_pm_add_addr_echoed`; while one
/// announcement is pending, `MPTCP_ADD_ADDR_SIGNAL`, it returns); the sender connects as each
/// ADD_ADDR arrives (`mptcp_pm_nl_add_addr_received`). So ADD_ADDR k reaches the sender k
/// round trips after subflow 0's establishment.
pub(super) fn pm_join_delay_ns(k: usize, rtt_ns: u64) -> u64 {
    k as u64 * rtt_ns
}
