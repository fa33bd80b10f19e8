//! # Multipath TCP connections
//!
//! A connection (`transport = "mptcp"`) is N subflows, one per entry of the flow's `paths`, and
//! a data level above them, after the multipath-tcp.org v0.9x kernel (the one of the S2
//! paper; `net/mptcp/`), where our design leaves room:
//! - **Subflows.** Each is the full TCP machinery of a single-path flow (a `Sender` and a
//!   `Receiver` in a world flow slot, on its own route, behind its own interface queue), with
//!   its own subflow sequence space from 0. It sends only what the connection gives it: its
//!   `cfg.size_bytes` is the end of the data mapped to it so far, raised by the scheduler just
//!   before its write path runs and lowered back to `snd_nxt` after it, so it never holds
//!   unsent data (v0.9x entails an skb on a subflow only to send it at once,
//!   `mptcp_output.c`, `mptcp_write_xmit`). Its own retransmissions stay on it.
//! - **Data level.** A 64-bit data sequence space from 0. `data_nxt` is the next byte of the
//!   application's stream to map, `data_una` the highest DATA_ACK received. Per subflow, a
//!   table maps its sequence ranges to data ranges ([`mapping`]: the DSS option); the
//!   receiver reads it for the bytes each subflow receiver delivers in subflow order and
//!   reassembles the data ([`recv`]); its cumulative data-level ACK rides on every subflow
//!   ACK (`AckSeg::data_ack`). The connection-level receive window (the flow's
//!   `rwnd_bytes`) limits new data: `data_nxt - data_una <= rwnd` (`tcp_snd_wnd_test` on the
//!   meta socket in `mptcp_write_xmit`).
//! - **Scheduler** ([`sched`]): v0.9x's default, lowest smoothed RTT among available
//!   subflows. The connection's write path (`World::mptcp_push`, like `mptcp_write_xmit`)
//!   takes the next segment (the reinject queue first, `__mptcp_next_segment`), asks the
//!   scheduler for a subflow, gives it at most its cwnd quota, up to 64 KB (the GSO limit:
//!   `mptcp_next_segment`'s `limit`), lets it write and records the mapping of what it sent;
//!   until no data or no subflow is left. It runs after every event of any subflow of the
//!   connection (an ACK, a timer, a TSQ completion, a subflow joining).
//! - **Reinjection.** On a subflow RTO (v0.9x `mptcp_sub_retransmit_timer` ->
//!   `mptcp_reinject_data`), the data mapped to its unacknowledged bytes and not yet
//!   DATA_ACKed goes to the connection's reinject queue (sorted, without overlap:
//!   `__mptcp_reinject_data`), to be sent first, preferably on subflows that have not carried
//!   it (`path_mask`). The subflow is marked potentially failed (`tp->pf`: the scheduler
//!   skips it) until its ACKs advance again. The receiver drops data-level duplicates.
//! - **Start.** Subflow 0 starts at the flow's `start_s`, as a TCP flow does; subflow k >= 1
//!   sends its MP_JOIN SYN k round trips of subflow 0 after subflow 0 is established (Linux
//!   6.18's path manager, the receiver announcing one address at a time:
//!   `world::mptcp_glue::pm_join_delay_ns`) and carries data from the fourth ACK, one round
//!   trip after its handshake (`world::handshake_glue`; without the handshake as packets the
//!   same times from the idle paths' round trips).
//!
//! - **Whose stack** (`flows[].mptcp_stack`, [`MptcpStack`]): all of the above is v0.9x's
//!   (`"v0.9x"`, the default). `"linux"` follows upstream Linux 6.18 (`net/mptcp/`, the kernel
//!   backend's MPTCP) where the two differ in what decides who gets the NIC and when ACKs
//!   come: the scheduler ([`sched::linux_pick`], `mptcp_subflow_get_send`) hands the subflow
//!   with the shortest linger time a burst of up to 64 KB into its send buffer, whether or not
//!   it can send it now (`__subflow_push_pending`), so each subflow holds data unsent and the
//!   data reaches the receiver out of order across subflows; and the receiver's subflows share
//!   the connection's window (`mptcp_set_rwin`), so their every-second-segment ACK waits for
//!   the application's read (`mptcp_cleanup_rbuf`, `world::mptcp_glue`). The application
//!   writes into the connection's own send buffer, `tcp_wmem[0]` plus its subflows' (`[host]
//!   sndbuf`; `__mptcp_sync_sndbuf`), as the poll()-driven writer of `tcp::sndbuf` does: it
//!   stays about 2/3 full of data not yet DATA_ACKed.
//!
//! Not modelled: the handshakes themselves, DATA_FIN, checksums, fallback to TCP, backup
//! subflows, v0.9x's receive-buffer optimisation (`mptcp_rcv_buf_optimization`: penalising
//! and opportunistic retransmission, which needs a finite send buffer we do not model), the
//! meta-level retransmission timer, address signalling as packets (ADD_ADDR and its echo give
//! only the join times above, from subflow 0's handshake round trip: queues they would meet
//! on the way are not counted).

pub mod mapping;
pub mod recv;
pub mod sched;

use std::collections::VecDeque;

use mapping::SubflowMap;
use recv::{ConnRcvSpace, DataReceiver};

/// Bytes of MPTCP options on a data segment: a DSS option with a 4-byte DATA_ACK and a mapping
/// (`MPTCP_SUB_LEN_DSS_ALIGN` + `MPTCP_SUB_LEN_ACK_ALIGN` + `MPTCP_SUB_LEN_SEQ_ALIGN`, v0.9x
/// `mptcp_established_options`). We add them to the wire size (the MSS stays the flow's).
pub const DSS_DATA_BYTES: u32 = 4 + 4 + 12;
/// Bytes of MPTCP options on a pure ACK: a DSS option with the DATA_ACK only.
pub const DSS_ACK_BYTES: u32 = 4 + 4;
/// The most data given to a subflow at once: the GSO limit (`sk_gso_max_size`, 64 KB), as
/// `mptcp_next_segment` caps its `limit` at `gso_max_segs` segments.
pub const MAX_CHUNK_BYTES: u64 = 65_536;

/// `MPTCP_SEND_BURST_SIZE` (net/mptcp/protocol.h, 6.18): the most one scheduling decision of
/// upstream's hands a subflow, 64 KB less a TCP header, the option space, an IPv6 header and a
/// fragment header.
pub const SEND_BURST_BYTES: u64 = 65_536 - 20 - 40 - 40 - 8;

/// Whose Multipath TCP a connection follows (`flows[].mptcp_stack`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub enum MptcpStack {
    /// The multipath-tcp.org v0.9x kernel (the S2 paper's): the lowest-RTT scheduler gives a
    /// subflow only what it sends at once; each subflow ACKs as a TCP receiver does.
    #[default]
    #[serde(rename = "v0.9x")]
    V09x,
    /// Upstream Linux 6.18 (the kernel backend's): linger-time scheduling of 64 KB bursts into
    /// the subflows' send buffers, and ACKs that wait for the application's read.
    #[serde(rename = "linux")]
    Linux,
}

/// Data waiting to be sent again on another subflow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reinject {
    /// Data range `[start, end)`.
    pub start: u64,
    pub end: u64,
    /// Bit k: subflow k has carried it (`TCP_SKB_CB(skb)->path_mask`).
    pub path_mask: u32,
}

/// The connection's view of one subflow.
#[derive(Debug, Clone, Default)]
pub struct SubflowState {
    /// Its slot in the world's flows.
    pub slot: u32,
    /// It has started (subflow 0) or joined: it may carry data.
    pub joined: bool,
    /// Potentially failed (`tp->pf`): set by an RTO, cleared when its snd_una advances.
    pub pf: bool,
    /// Its snd_una when `pf` was last looked at.
    pub last_una: u64,
    /// Its receiver's in-order point already read into the data level.
    pub rx_nxt: u64,
    /// Segments it sent carrying reinjected data.
    pub reinjected_pkts: u64,
    /// Its RTOs already acted on.
    pub rtos_seen: u64,
    /// The nodes its data crosses, sender first.
    pub path: Vec<String>,
    /// `subflow->avg_pacing_rate`, bytes/s (upstream's scheduler; 0 until first read).
    pub avg_pacing_rate: u64,
}

/// One Multipath TCP connection.
#[derive(Debug, Clone)]
pub struct Connection {
    /// Its index in the scenario's flows.
    pub id: u32,
    pub name: String,
    /// When its application starts (subflow 0's start), ns.
    pub start_ns: u64,
    /// Bytes the application sends (`u64::MAX`: bulk).
    pub size_bytes: u64,
    /// The connection-level receive window, bytes.
    pub rwnd_bytes: u64,
    /// Next data byte to map (`meta_tp->snd_nxt`).
    pub data_nxt: u64,
    /// Highest DATA_ACK received (`meta_tp->snd_una`).
    pub data_una: u64,
    /// Per subflow, its mappings (the sender's, read by the receiver as the DSS options).
    pub maps: Vec<SubflowMap>,
    /// Per subflow, the connection's state of it.
    pub subflows: Vec<SubflowState>,
    /// Data to send again, sorted by start, disjoint (`mpcb->reinject_queue`).
    pub reinject: VecDeque<Reinject>,
    /// The data-level receive side.
    pub rcv: DataReceiver,
    /// The connection's receive buffer (its autotuning drives its subflows').
    pub rspace: ConnRcvSpace,
    /// When every byte of a sized transfer was delivered in order, ns.
    pub completion_ns: Option<u64>,
    /// Whose stack it follows.
    pub stack: MptcpStack,
    /// Upstream: the bytes the application has written into the connection (its `sk_sndbuf`
    /// bounds them, `World::mptcp_app_write`); v0.9x: all of them from the start.
    pub written: u64,
}

impl Connection {
    /// A connection of `paths.len()` subflows in world slots `slots`.
    pub fn new(
        id: u32,
        name: String,
        start_ns: u64,
        size_bytes: u64,
        rwnd_bytes: u64,
        slots: &[u32],
        paths: Vec<Vec<String>>,
        rspace: ConnRcvSpace,
    ) -> Self {
        Connection {
            id,
            name,
            start_ns,
            size_bytes,
            rwnd_bytes,
            data_nxt: 0,
            data_una: 0,
            maps: vec![SubflowMap::default(); slots.len()],
            subflows: slots
                .iter()
                .zip(paths)
                .map(|(&slot, path)| SubflowState {
                    slot,
                    path,
                    ..SubflowState::default()
                })
                .collect(),
            reinject: VecDeque::new(),
            rcv: DataReceiver::default(),
            rspace,
            completion_ns: None,
            stack: MptcpStack::default(),
            written: size_bytes,
        }
    }

    /// A DATA_ACK arrives (`mptcp_data_ack`): the data level's snd_una moves.
    pub fn on_data_ack(&mut self, data_ack: u64) {
        self.data_una = self.data_una.max(data_ack);
    }

    /// The next data to give a subflow (`__mptcp_next_segment`): the reinject queue's head
    /// (less what was DATA_ACKed meanwhile: `mptcp_write_xmit` drops what "already reached the
    /// peer"), else new data within the application's size and the connection's receive
    /// window. Returns (data start, bytes available, path mask, from the reinject queue).
    pub fn next_segment(&mut self) -> Option<(u64, u64, u32, bool)> {
        while let Some(r) = self.reinject.front_mut() {
            if r.end <= self.data_una {
                self.reinject.pop_front();
                continue;
            }
            r.start = r.start.max(self.data_una);
            return Some((r.start, r.end - r.start, r.path_mask, true));
        }
        let wnd_end = self.data_una.saturating_add(self.rwnd_bytes);
        let avail = self.written.min(wnd_end).saturating_sub(self.data_nxt);
        (avail > 0).then_some((self.data_nxt, avail, 0, false))
    }

    /// Follow upstream's stack: the application writes as `World::mptcp_app_write` lets it.
    pub fn set_stack(&mut self, stack: MptcpStack) {
        self.stack = stack;
        if stack == MptcpStack::Linux {
            self.written = 0;
        }
    }

    /// Subflow `k` sent `bytes` of the segment `next_segment` gave, from its subflow byte
    /// `sub_seq`: map them, and consume them from where they came.
    pub fn sent(&mut self, k: usize, sub_seq: u64, data_seq: u64, bytes: u64, reinject: bool) {
        self.maps[k].push(sub_seq, data_seq, bytes);
        if reinject {
            let r = self.reinject.front_mut().expect("a reinjection was sent");
            debug_assert_eq!(r.start, data_seq);
            r.start += bytes;
            if r.start >= r.end {
                self.reinject.pop_front();
            }
        } else {
            debug_assert_eq!(self.data_nxt, data_seq);
            self.data_nxt += bytes;
        }
    }

    /// Subflow `k` timed out with subflow bytes `[sub_una, sub_nxt)` unacknowledged: queue
    /// their data, less what is DATA_ACKed or queued already, for reinjection
    /// (`mptcp_reinject_data` / `__mptcp_reinject_data`), if another subflow has joined that
    /// could carry it. Marks the subflow potentially failed. Returns the bytes queued.
    pub fn reinject_from(&mut self, k: usize, sub_una: u64, sub_nxt: u64) -> u64 {
        self.subflows[k].pf = true;
        self.subflows[k].last_una = sub_una;
        if !self
            .subflows
            .iter()
            .enumerate()
            .any(|(j, s)| j != k && s.joined)
        {
            return 0;
        }
        let mut queued = 0;
        let data_una = self.data_una;
        let Connection { maps, reinject, .. } = self;
        maps[k].data_ranges(sub_una, sub_nxt, |a, b| {
            let a = a.max(data_una);
            if a < b {
                queued += insert_uncovered(reinject, a, b, 1 << k);
            }
        });
        queued
    }

    /// Subflow `k`'s receiver has delivered its bytes up to `rcv_nxt` in order: read their
    /// data into the data level. `now_ns` stamps completion.
    pub fn on_subflow_delivered(&mut self, k: usize, rcv_nxt: u64, now_ns: u64) {
        let from = self.subflows[k].rx_nxt;
        if rcv_nxt <= from {
            return;
        }
        self.subflows[k].rx_nxt = rcv_nxt;
        let Connection { maps, rcv, .. } = self;
        maps[k].data_ranges(from, rcv_nxt, |a, b| rcv.on_range(a, b));
        if self.size_bytes != u64::MAX && self.rcv.rcv_nxt >= self.size_bytes {
            self.completion_ns.get_or_insert(now_ns);
        }
    }

    /// Data bytes delivered in order to the receiving application.
    pub fn delivered_bytes(&self) -> u64 {
        self.rcv.rcv_nxt.min(self.size_bytes)
    }
}

/// Add the parts of `[a, b)` no entry of the sorted, disjoint `q` covers, with `path_mask`;
/// returns the bytes added (`__mptcp_reinject_data`: "all the bits are present, don't
/// reinject"; partial overlaps are trimmed here rather than kept as overlapping skbs).
fn insert_uncovered(q: &mut VecDeque<Reinject>, a: u64, b: u64, path_mask: u32) -> u64 {
    let mut added = 0;
    let mut start = a;
    let mut i = q.partition_point(|r| r.end <= start);
    while start < b {
        let next = q.get(i).copied();
        let gap_end = next.map_or(b, |r| r.start.min(b));
        if gap_end > start {
            q.insert(
                i,
                Reinject {
                    start,
                    end: gap_end,
                    path_mask,
                },
            );
            added += gap_end - start;
            i += 1;
        }
        match next {
            Some(r) if r.start < b => {
                start = start.max(r.end);
                i += 1;
            }
            _ => break,
        }
    }
    added
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_linux;
