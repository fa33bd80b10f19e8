//! The socket send buffer and the application that writes into it, as Linux 6.18 runs them
//! (`[host] sndbuf = "linux"`, the default; docs/design.md, "The send buffer").
//!
//! - `sk_sndbuf` starts at `tcp_wmem[1]`; when the connection is established
//!   `tcp_init_buffer_space` grows it by `tcp_sndbuf_expand` (net/ipv4/tcp_input.c) to
//!   `sndbuf_expand` x max(10, cwnd) x per_mss, where per_mss is one segment's worst-case
//!   truesize (`roundup_pow_of_two(mss_clamp + MAX_TCP_HEADER + shinfo) + sk_buff`) and
//!   `sndbuf_expand` is 2 (3 for BBR), at most `tcp_wmem[2]`. It grows again the same way in
//!   `tcp_new_space` when an ACK or a send finds the writer blocked (`SOCK_NOSPACE`,
//!   `tcp_check_space`) and cwnd is not full (`tcp_should_expand_sndbuf`).
//! - `sk_wmem_queued` is what the socket holds until it is cumulatively acknowledged: the bytes
//!   from snd_una to write_seq, plus each skb's overhead (`SKB_TRUESIZE` of its head). The
//!   application's writes fill skbs of `size_goal` (`tcp_xmit_size_goal`: 64 KB bounded to half
//!   the peer's largest window); sending splits them (`tso_fragment`) into skbs of
//!   `tcp_tso_autosize` segments, each with its own overhead.
//! - The application is cclab's kernel traffic sender (python/cclab/kernel/traffic.py), which is
//!   iperf3's loop too: poll() for POLLOUT, then a non-blocking send() of 64 KiB, again and
//!   again. poll() reports the socket writable only while `sk_stream_is_writeable` (at most 2/3
//!   of `sk_sndbuf` queued, `sk_stream_min_wspace`), else sets `SOCK_NOSPACE`;
//!   `tcp_sendmsg_locked` copies into the tail skb while it has room and allocates another only
//!   while `sk_wmem_queued < sk_sndbuf` (`sk_stream_memory_free`), so a send can end short. A
//!   blocked writer wakes when `sk_stream_write_space` finds the socket writable again. The
//!   wake-up takes no time here (on a host it takes the scheduler's few microseconds).
//!
//! We diverge: the sim keeps segments of one MSS, so a write that ends inside a segment waits
//! for the next write before that segment goes out (Linux's Nagle/Minshall test,
//! `tcp_mss_split_point`, would send the part-segment when no other small segment is
//! outstanding: one runt per write burst when the flow is buffer-limited); skbs split or merged
//! by retransmission and SACK processing (`tcp_fragment`, `tcp_shift_skb_data`) keep the
//! overhead count they had; `tcp_notsent_lowat` is Linux's default (no limit); the writer never
//! runs late.

use std::collections::VecDeque;

use super::sender::Sender;
use super::tsq::SKB_TRUESIZE_OVERHEAD_BYTES;
use cclab_net::host::HostStack;
use serde::{Deserialize, Serialize};

/// How the application writes (`flows[].writer`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Writer {
    /// poll() for POLLOUT, then a non-blocking send of 64 KiB (cclab's kernel traffic sender,
    /// iperf3): it writes only while at most 2/3 of `sk_sndbuf` is queued.
    #[default]
    Poll,
    /// Blocking sends of 64 KiB (a plain `send` loop): `tcp_sendmsg_locked` copies while
    /// `sk_wmem_queued < sk_sndbuf` and sleeps in `sk_stream_wait_memory` until
    /// `sk_stream_write_space` finds 1/3 free, so the buffer stays between 2/3 and full.
    Blocking,
}

/// What one write asks for: the kernel traffic sender's and iperf3's 64 KiB (traffic.py
/// `_CHUNK`).
pub const APP_WRITE_BYTES: u64 = 1 << 16;
/// `MAX_TCP_HEADER` of this machine's 6.18 build: the mss at which `tcp_sndbuf_expand`'s
/// per_mss doubles, measured (46080 bytes after connect up to TCP_MAXSEG 1532, 87040 from 1540,
/// CUBIC), puts it at 192.
const MAX_TCP_HEADER_BYTES: u64 = 192;
/// `SKB_DATA_ALIGN(sizeof(struct skb_shared_info))` on x86-64.
const SHINFO_BYTES: u64 = 320;
/// `SKB_DATA_ALIGN(sizeof(struct sk_buff))` on x86-64.
const SK_BUFF_BYTES: u64 = 256;
/// `TCP_INIT_CWND`.
const TCP_INIT_CWND: u64 = 10;
/// `sk_gso_max_size` of a TUN or veth device: `GSO_LEGACY_MAX_SIZE` less `MAX_TCP_HEADER + 1`;
/// also the cap of `tcp_tso_autosize` (tso.rs)
/// (net/core/sock.c `sk_dst_gso_max_size`).
pub(crate) const GSO_MAX_SIZE_BYTES: u64 = 65536 - (MAX_TCP_HEADER_BYTES + 1);

/// `sk_stream_is_writeable` (`sk_stream_wspace >= sk_stream_min_wspace`): the free space of a
/// `sndbuf_bytes` buffer holding `queued_bytes` is at least half what it holds (at most 2/3
/// full). A TCP socket's and a Multipath TCP connection's alike.
pub(crate) fn stream_is_writeable(sndbuf_bytes: u64, queued_bytes: u64) -> bool {
    sndbuf_bytes as i64 - queued_bytes as i64 >= (queued_bytes >> 1) as i64
}

/// One socket's send buffer.
#[derive(Debug, Clone)]
pub struct SendBuffer {
    /// `sk_sndbuf`, bytes.
    pub sndbuf_bytes: u64,
    /// `tcp_wmem[2]`.
    wmem_max_bytes: u64,
    /// `tcp_sndbuf_expand`'s per_mss.
    per_mss_bytes: u64,
    /// `ca_ops->sndbuf_expand` (2, BBR 3).
    expand_factor: u64,
    /// `SOCK_NOSPACE`: the writer found the socket full and waits.
    pub nospace: bool,
    /// `sk_stream_write_space` woke the writer; it writes when the current event is done.
    wake: bool,
    /// The skbs of the retransmission and write queues, [seq, end_seq), in order.
    skbs: VecDeque<(u64, u64)>,
    /// The next write starts a new skb: the tail carries another Multipath TCP mapping.
    tail_closed: bool,
    /// Each skb carries a Multipath TCP mapping of its own (upstream's stack): two skbs of
    /// different mappings never collapse (`tcp_skb_can_collapse`, `mptcp_skb_can_collapse`),
    /// so `tcp_grow_skb` never joins them.
    mapped: bool,
}

impl SendBuffer {
    /// A new socket's buffer (`tcp_init_sock`: `tcp_wmem[1]`) for segments of up to
    /// `mss_clamp` bytes (the MSS before options, which TCP_MAXSEG sets).
    pub fn new(stack: &HostStack, mss_clamp: u32, expand_factor: u32) -> Self {
        let [_, initial, max] = stack.tcp_wmem_bytes;
        let per_mss = (u64::from(mss_clamp) + MAX_TCP_HEADER_BYTES + SHINFO_BYTES)
            .next_power_of_two()
            + SK_BUFF_BYTES;
        SendBuffer {
            sndbuf_bytes: initial,
            wmem_max_bytes: max,
            per_mss_bytes: per_mss,
            expand_factor: u64::from(expand_factor.max(1)),
            nospace: false,
            wake: false,
            skbs: VecDeque::new(),
            tail_closed: false,
            mapped: false,
        }
    }

    /// `sk_wmem_queued` with snd_una and write_seq as given: frees the skbs wholly acked
    /// (`tcp_clean_rtx_queue`); a partly acked one keeps its overhead (`tcp_trim_head`).
    pub fn wmem_queued(&mut self, snd_una: u64, write_seq: u64) -> u64 {
        while self.skbs.front().is_some_and(|&(_, end)| end <= snd_una) {
            self.skbs.pop_front();
        }
        self.queued_bytes(snd_una, write_seq)
    }

    /// `sk_wmem_queued` without freeing anything: skbs wholly acked are skipped.
    fn queued_bytes(&self, snd_una: u64, write_seq: u64) -> u64 {
        let acked = self
            .skbs
            .iter()
            .take_while(|&&(_, end)| end <= snd_una)
            .count();
        let skbs = (self.skbs.len() - acked) as u64;
        write_seq.saturating_sub(snd_una) + SKB_TRUESIZE_OVERHEAD_BYTES * skbs
    }

    /// `sk_stream_is_writeable` for this buffer.
    fn writeable(&self, queued: u64) -> bool {
        stream_is_writeable(self.sndbuf_bytes, queued)
    }

    /// `tcp_sndbuf_expand` at this cwnd and reordering.
    fn expand(&mut self, cwnd: u32, reordering: u32) {
        let segs = u64::from(cwnd)
            .max(TCP_INIT_CWND)
            .max(u64::from(reordering) + 1);
        let sndmem = self.expand_factor * segs * self.per_mss_bytes;
        if self.sndbuf_bytes < sndmem {
            self.sndbuf_bytes = sndmem.min(self.wmem_max_bytes);
        }
    }

    /// `tcp_grow_skb` (net/ipv4/tcp_output.c, 6.10+): the write queue's head skb, starting at
    /// `seq`, shorter than `want` bytes takes payload from the skb after it (one skb, as
    /// `skb_shift` moves it), up to `want`; an emptied skb is freed (`tcp_eat_one_skb`).
    fn grow_head(&mut self, seq: u64, want: u64) {
        if self.mapped {
            return;
        }
        let Some(i) = self.skbs.iter().rposition(|&(start, _)| start == seq) else {
            return;
        };
        let (start, end) = self.skbs[i];
        let Some(&(_, next_end)) = self.skbs.get(i + 1) else {
            return; // tcp_skb_is_last
        };
        let nlen = want.saturating_sub(end - start).min(next_end - end);
        if nlen == 0 {
            return;
        }
        self.skbs[i].1 = end + nlen;
        if end + nlen == next_end {
            self.skbs.remove(i + 1);
        } else {
            self.skbs[i + 1].0 = end + nlen;
        }
    }

    /// Bytes of the write queue's head skb (from `nxt`) once `tcp_grow_skb` has filled it up to
    /// `want` bytes from the skb after it (unless their mappings differ).
    fn head_after_grow(&self, nxt: u64, want: u64) -> Option<u64> {
        // The unsent skbs are at the back: walk back to the one holding nxt.
        let i = self.skbs.iter().rposition(|&(start, _)| start <= nxt)?;
        let (start, end) = self.skbs[i];
        if end <= nxt {
            return None;
        }
        let head = end - start.max(nxt);
        let next = match self.skbs.get(i + 1) {
            Some(&(s, e)) if !self.mapped => e - s,
            _ => 0,
        };
        Some(head + want.saturating_sub(head).min(next))
    }

    /// Make `seq` an skb boundary (`tso_fragment`: the part sent and the rest of the write
    /// queue's head become two skbs). Only the write queue's head can contain `seq`.
    fn split_at(&mut self, seq: u64) {
        for i in (0..self.skbs.len()).rev() {
            let (start, end) = self.skbs[i];
            if end <= seq {
                return;
            }
            if start < seq {
                self.skbs[i] = (start, seq);
                self.skbs.insert(i + 1, (seq, end));
                return;
            }
        }
    }
}

impl Sender {
    /// `tcp_init_buffer_space` on the sender (`tcp_init_transfer`), then the application's
    /// first writes.
    pub(crate) fn init_send_buffer(&mut self) {
        let (cwnd, reordering) = (self.tp.snd_cwnd, self.reordering);
        if let Some(b) = self.sndbuf.as_mut() {
            b.expand(cwnd, reordering);
            b.wake = true;
        }
    }

    /// `tcp_check_space` after new data was sent or an ACK was processed: a blocked writer gets
    /// more buffer when cwnd is not full (`tcp_new_space`, `tcp_should_expand_sndbuf`), and is
    /// woken if the socket is writable again (`sk_stream_write_space`). `cwnd_room`: whether
    /// packets in flight were below cwnd at one of the checks the kernel makes (after each
    /// segment sent, and after the push).
    pub(crate) fn check_space(&mut self, cwnd_room: bool) {
        let (cwnd, reordering, snd_una, write_seq) = (
            self.tp.snd_cwnd,
            self.reordering,
            self.tp.snd_una,
            self.write_seq,
        );
        let Some(b) = self.sndbuf.as_mut() else {
            return;
        };
        if !b.nospace {
            return;
        }
        if cwnd_room {
            b.expand(cwnd, reordering);
            self.tp.snd_cwnd_stamp = self.tp.jiffies();
        }
        let queued = b.wmem_queued(snd_una, write_seq);
        if b.writeable(queued) {
            b.nospace = false;
            b.wake = true;
        }
    }

    /// Segments from snd_nxt are about to leave as one skb: its start is an skb boundary.
    pub(crate) fn sndbuf_skb_sent(&mut self, seq: u64) {
        if let Some(b) = self.sndbuf.as_mut() {
            b.split_at(seq);
        }
    }

    /// `tcp_write_xmit` before it sends the head skb (at `seq`): `tcp_grow_skb` fills it up to
    /// `quota_segs` segments (`tcp_cwnd_test` bounded by `tcp_tso_segs`) from the next skb.
    pub(crate) fn sndbuf_grow_head(&mut self, seq: u64, quota_segs: u32) {
        let want = u64::from(quota_segs) * u64::from(self.tp.mss_cache);
        if let Some(b) = self.sndbuf.as_mut() {
            b.grow_head(seq, want);
        }
    }

    /// The woken application writes (each write pushes what it wrote, `tcp_push`), until the
    /// socket is no longer writable or it has written everything.
    pub(crate) fn run_writer(&mut self, out: &mut Vec<super::segment::DataSeg>) {
        while self
            .sndbuf
            .as_mut()
            .is_some_and(|b| std::mem::take(&mut b.wake))
        {
            while self.write_seq < self.cfg.size_bytes {
                let (snd_una, write_seq) = (self.tp.snd_una, self.write_seq);
                let b = self.sndbuf.as_mut().expect("checked above");
                let queued = b.wmem_queued(snd_una, write_seq);
                if self.cfg.writer == Writer::Poll && !b.writeable(queued) {
                    b.nospace = true; // tcp_poll
                    break;
                }
                if self.cfg.writer == Writer::Blocking && b.nospace {
                    break; // it sleeps until sk_stream_write_space wakes it
                }
                let want = APP_WRITE_BYTES.min(self.cfg.size_bytes - self.write_seq);
                if self.sendmsg(want) == 0 {
                    break;
                }
                self.write_xmit(out);
            }
        }
    }

    /// `tcp_xmit_size_goal`: `sk_gso_max_size` bounded to half the peer's largest window, in
    /// whole segments.
    pub(crate) fn size_goal(&self) -> u64 {
        let mss = u64::from(self.tp.mss_cache).max(1);
        let goal = GSO_MAX_SIZE_BYTES.min((self.max_window / 2).max(mss));
        (goal / mss).max(1) * mss
    }

    /// `tcp_sendmsg_locked` with a non-blocking socket: copy up to `len` bytes, filling the tail
    /// skb and allocating new ones while the buffer has room. Returns the bytes copied.
    fn sendmsg(&mut self, len: u64) -> u64 {
        self.rate_check_app_limited(self.write_seq - self.tp.snd_nxt);
        let goal = self.size_goal();
        let (snd_una, snd_nxt) = (self.tp.snd_una, self.tp.snd_nxt);
        let b = self.sndbuf.as_mut().expect("only with a send buffer");
        let mut copied = 0;
        while copied < len {
            let write_seq = self.write_seq + copied;
            let tail_room = match b.skbs.back() {
                _ if b.tail_closed => 0,
                // The write queue's tail, not yet sent (tcp_skb_can_collapse_to).
                Some(&(start, end)) if start >= snd_nxt && end - start < goal => {
                    goal - (end - start)
                }
                _ => 0,
            };
            let copy = if tail_room > 0 {
                tail_room.min(len - copied)
            } else {
                if b.wmem_queued(snd_una, write_seq) >= b.sndbuf_bytes {
                    b.nospace = true; // wait_for_space
                    break;
                }
                b.skbs.push_back((write_seq, write_seq));
                b.tail_closed = false;
                goal.min(len - copied)
            };
            b.skbs.back_mut().expect("pushed").1 += copy;
            copied += copy;
        }
        self.write_seq += copied;
        copied
    }

    /// A Multipath TCP connection following upstream (`mptcp_stack = "linux"`) hands this
    /// subflow up to `len` bytes of its data (`mptcp_sendmsg_frag`: copied into skbs of
    /// `size_goal`, the tail skb first, a new one only while `sk_stream_memory_free`). They go out
    /// as cwnd, TSQ and pacing allow, as a TCP flow's writes do. Without a send buffer (`[host]
    /// sndbuf = "unlimited"`) all is taken. Returns the bytes taken.
    pub fn mptcp_take(&mut self, len: u64) -> u64 {
        let copied = if let Some(b) = self.sndbuf.as_mut() {
            // A burst is a mapping of its own (a DSS option per skb): its data starts a new skb
            // (`mptcp_skb_can_collapse_to` refuses a tail whose mapping it does not extend, and
            // the bursts a subflow gets are not contiguous in the data sequence).
            b.tail_closed = true;
            b.mapped = true;
            self.cfg.size_bytes = self.write_seq + len;
            self.sendmsg(len)
        } else {
            self.write_seq += len;
            len
        };
        self.cfg.size_bytes = self.write_seq;
        copied
    }

    /// `sk_stream_memory_free` for a subflow of an upstream connection holding
    /// `wmem_queued_bytes` ([`Sender::mptcp_wmem_queued`], which the connection's scheduler has
    /// just read): `sk_wmem_queued` below `sk_sndbuf`. Without a send buffer: less than one
    /// burst unsent (a bound of ours).
    pub fn mptcp_memory_free(&self, wmem_queued_bytes: u64) -> bool {
        match self.sndbuf.as_ref() {
            Some(b) => wmem_queued_bytes < b.sndbuf_bytes,
            None => self.write_seq - self.tp.snd_nxt < crate::mptcp::SEND_BURST_BYTES,
        }
    }

    /// `sk_wmem_queued`, bytes (without a send buffer: what is unacknowledged or unsent).
    pub fn mptcp_wmem_queued(&mut self) -> u64 {
        let (snd_una, write_seq) = (self.tp.snd_una, self.write_seq);
        match self.sndbuf.as_mut() {
            Some(b) => b.wmem_queued(snd_una, write_seq),
            None => write_seq - snd_una,
        }
    }

    /// `mptcp_nospace`: the connection found no room, `SOCK_NOSPACE` on every subflow (so
    /// `tcp_new_space` grows its buffer when cwnd has room, and RFC 2861 leaves its cwnd alone).
    pub fn mptcp_set_nospace(&mut self) {
        if let Some(b) = self.sndbuf.as_mut() {
            b.nospace = true;
        }
    }

    /// Bytes of the skb at the head of the write queue (`tcp_send_head`) once `tcp_grow_skb`
    /// has filled it up to `quota_segs` (`cwnd_quota`, [`Sender::gso_quota_segs`]).
    pub(crate) fn send_head_len(&self, quota_segs: u32) -> Option<u64> {
        let want = u64::from(quota_segs) * u64::from(self.tp.mss_cache);
        self.sndbuf.as_ref()?.head_after_grow(self.tp.snd_nxt, want)
    }

    /// `sk_sndbuf` and `sk_wmem_queued`, bytes, without freeing anything (the trace); None
    /// without a send buffer.
    pub fn sndbuf_peek(&self) -> Option<(u64, u64)> {
        let b = self.sndbuf.as_ref()?;
        Some((
            b.sndbuf_bytes,
            b.queued_bytes(self.tp.snd_una, self.write_seq),
        ))
    }
}
