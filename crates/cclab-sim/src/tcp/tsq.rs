//! The sender's view of its host's stack below TCP (`cclab_net::host`): TCP Small Queues and
//! local congestion, as Linux 6.18 runs them (net/ipv4/tcp_output.c).
//!
//! - Every skb handed to the device counts its truesize in `sk_wmem_alloc` until the NIC has
//!   sent it (`tcp_wfree`); [`Sender::on_tx_complete`] is that moment.
//! - `tcp_small_queue_check` stops `tcp_write_xmit` (and, with a doubled limit,
//!   `tcp_xmit_retransmit_queue`) while `sk_wmem_alloc` is above the limit, and marks the socket
//!   `TSQ_THROTTLED`; the next completion then runs `tcp_tsq_write` (`tcp_tsq_handler`).
//! - A packet the interface queue refuses is a local drop: `__tcp_transmit_skb` gets
//!   `NET_XMIT_DROP` and calls `tcp_enter_cwr`, and the caller stops with the skb still unsent
//!   (new data stays at the head of the write queue; a retransmission stays marked lost). The
//!   driver tells the sender before each call how many packets the queue still takes
//!   ([`BelowTcp::device_room_pkts`]); no time passes within a call and only this sender sends
//!   during it, so that number is exact.
//!
//! Without a device nothing is below TCP: completions are immediate and TSQ never binds.

use super::sender::{Sender, SenderEvent};
use cclab_net::host::{DeviceRelease, HostStack, TsqMode, PAPER_TSQ_FLOOR_BYTES};

/// What an skb costs in `sk_wmem_alloc` besides its payload (charged byte for byte: page
/// frags): its head, `struct sk_buff` and `struct skb_shared_info` (`SKB_TRUESIZE`). Measured on
/// this machine's 6.18 with the kernel backend: a flow held to TSQ's floor of two skbs of two
/// 1436-byte segments (tcp_tso_autosize's minimum) keeps `SO_MEMINFO` wmem_alloc at 7408 bytes,
/// so 2 x (2 x 1436 + 832); at a 50 Mbit/s NIC, two skbs of six segments: 18896 (18767 mean
/// measured).
pub const SKB_TRUESIZE_OVERHEAD_BYTES: u64 = 832;
/// `SKB_TRUESIZE(1)`: one byte, `struct sk_buff` and `struct skb_shared_info` (x86-64), the
/// bound below which `tcp_rate_check_app_limited` sees nothing in the host's queues.
pub const SKB_TRUESIZE_1_BYTES: u64 = 1 + 256 + 320;

/// `skb->truesize` of an skb carrying `len` payload bytes (`len` may span several segments).
pub fn truesize(len: u64) -> u64 {
    len + SKB_TRUESIZE_OVERHEAD_BYTES
}

/// The stack below this sender's socket.
#[derive(Debug, Clone)]
pub struct BelowTcp {
    /// The host's settings (TSQ rule, limit, pacing shift, device).
    pub stack: HostStack,
    /// `sk_wmem_alloc`: truesize of this socket's skbs in the interface queue or the NIC.
    pub wmem_bytes: u64,
    /// `TSQ_THROTTLED`: a TSQ check stopped a transmission; the next completion resumes it.
    pub throttled: bool,
    /// Packets the interface queue still takes now; the driver sets it before each call.
    /// `u32::MAX` without a device.
    pub device_room_pkts: u32,
    /// Packets the interface queue refused (local drops).
    pub local_drops: u64,
    /// `tsq = "adaptive"`: the fastest pacing rate among the other sockets with bytes below
    /// TCP on this interface now (0: none); the driver sets it.
    pub peer_pacing_rate_bytes_per_s: u64,
    /// The host sends into a queue it can see: its device, or its port's transmit queue on a
    /// multi-port medium (a WLAN station's driver queue).
    interface_queue: bool,
    /// `device_release = "start"`: the index in the caller's output of the first segment of
    /// the skb being sent, which carries the whole skb's bytes below TCP.
    skb_head_out: Option<usize>,
}

impl BelowTcp {
    /// The stack of a host, nothing sent yet.
    pub fn new(stack: HostStack) -> Self {
        BelowTcp {
            stack,
            wmem_bytes: 0,
            throttled: false,
            device_room_pkts: u32::MAX,
            local_drops: 0,
            peer_pacing_rate_bytes_per_s: 0,
            interface_queue: stack.device.is_some(),
            skb_head_out: None,
        }
    }

    /// The host has no device of its own but sends into its port's queue on a medium: that
    /// queue is its interface queue (TSQ completions when a frame leaves it).
    pub fn set_medium_port_queue(&mut self) {
        self.interface_queue = true;
    }

    /// Whether the host has an interface queue (else nothing is ever below TCP).
    pub fn has_device(&self) -> bool {
        self.interface_queue
    }
}

impl Sender {
    /// The TSQ limit now for an skb of `len` bytes, before the retransmit doubling.
    pub(crate) fn tsq_limit_bytes(&self, len: u64) -> u64 {
        let st = &self.below.stack;
        let tp = &self.tp;
        match st.tsq {
            // tcp_small_queue_check: max(2 * skb->truesize, sk_pacing_rate >> sk_pacing_shift),
            // capped by tcp_limit_output_bytes unless the socket paces (SK_PACING_NONE).
            TsqMode::Linux => {
                let l = self.linux_tsq_limit_bytes(len);
                if tp.pacing_needed {
                    l
                } else {
                    l.min(st.tsq_limit_bytes)
                }
            }
            // The S2 paper's eq. 2: min(cap, max(8704, 2 * MSS * w / RTT / 1024)), RTT in s.
            TsqMode::Paper => {
                let srtt_us = u64::from(tp.srtt_us >> 3).max(1);
                let rate =
                    2 * u64::from(tp.mss_cache) * u64::from(tp.snd_cwnd) * 1_000_000 / srtt_us;
                (rate / 1024)
                    .max(PAPER_TSQ_FLOOR_BYTES)
                    .min(st.tsq_limit_bytes)
            }
            TsqMode::Fixed => st.tsq_limit_bytes,
            TsqMode::Off => u64::MAX,
            // Linux's rule at the fastest pacing rate on the interface (`TsqMode::Adaptive`).
            TsqMode::Adaptive => self.linux_tsq_limit_bytes(len).min(st.tsq_limit_bytes),
        }
    }

    /// The pacing rate TSQ and TSO sizing read (`sk_pacing_rate`): the socket's own, or with
    /// `tsq = "adaptive"` the fastest among the sockets with bytes on its interface, so that
    /// they all get the same limit and build skbs of the same size.
    pub(crate) fn below_pacing_rate_bytes_per_s(&self) -> u64 {
        let own = self.tp.pacing_rate_bytes_per_s;
        if self.below.stack.tsq == TsqMode::Adaptive {
            own.max(self.below.peer_pacing_rate_bytes_per_s)
        } else {
            own
        }
    }

    /// Linux's TSQ limit for an skb of `len` bytes, uncapped: max(2 truesize, pacing_rate >>
    /// sk_pacing_shift).
    fn linux_tsq_limit_bytes(&self, len: u64) -> u64 {
        (2 * truesize(len))
            .max(self.below_pacing_rate_bytes_per_s() >> self.below.stack.pacing_shift)
    }

    /// `tcp_small_queue_check(sk, skb, factor)`: whether to hold the skb of `len` bytes until a
    /// completion (factor 0 for new data, 1 for retransmissions).
    pub(crate) fn small_queue_check(&mut self, len: u64, factor: u32) -> bool {
        if !self.below.has_device() || self.below.stack.tsq == TsqMode::Off {
            return false;
        }
        let limit = self.tsq_limit_bytes(len).saturating_mul(1 << factor);
        // sk_wmem_alloc is a refcount that starts at 1 (its value is the bytes plus one).
        if self.below.wmem_bytes + 1 > limit {
            // Always send if the rtx queue is empty or has one skb: no completion may come
            // back in time otherwise (tcp_rtx_queue_empty_or_single_skb).
            if self.rtx.len() <= 1 {
                return false;
            }
            self.below.throttled = true;
            return true;
        }
        false
    }

    /// Whether the interface queue refuses the next packet: then the local drop is done
    /// (`__tcp_transmit_skb` on `NET_XMIT_DROP`: `tcp_enter_cwr`) and the caller stops.
    pub(crate) fn device_refuses(&mut self, seq: u64) -> bool {
        if self.below.device_room_pkts > 0 {
            return false;
        }
        self.below.local_drops += 1;
        let detail = format!("seq={seq} cwnd={}", self.tp.snd_cwnd);
        self.event(SenderEvent::LocalDrop, detail);
        self.enter_cwr();
        true
    }

    /// A segment of `len` payload bytes goes to the device (`skb_set_owner_w`); the first one
    /// of an skb carries the skb's overhead. Returns what it holds below TCP.
    pub(crate) fn charge_below(&mut self, len: u64, skb_start: bool) -> u32 {
        if !self.below.has_device() {
            return 0;
        }
        let bytes = if skb_start { truesize(len) } else { len };
        self.below.wmem_bytes += bytes;
        self.below.device_room_pkts = self.below.device_room_pkts.saturating_sub(1);
        bytes as u32
    }

    /// Stamp the segment just pushed on `out` with the `below` bytes it holds below TCP. With
    /// `device_release = "start"` the device frees a whole skb when its first segment starts
    /// transmission (the kernel backend's TUN, `tun_net_xmit`), so that segment carries the
    /// bytes of every segment of its skb and the others carry none.
    pub(crate) fn hold_below(
        &mut self,
        below: u32,
        skb_start: bool,
        out: &mut [super::segment::DataSeg],
    ) {
        let at_start = self.below.stack.device_release == DeviceRelease::Start;
        let last = out.len().checked_sub(1);
        if skb_start || !at_start {
            self.below.skb_head_out = last;
            if let Some(d) = last.and_then(|i| out.get_mut(i)) {
                d.below_bytes = below;
            }
            return;
        }
        match self.below.skb_head_out.filter(|&h| Some(h) != last) {
            Some(h) if h < out.len() => {
                out[h].below_bytes += below;
                if let Some(d) = out.last_mut() {
                    d.below_bytes = 0;
                }
            }
            // The skb's first segment is not in this output: the segment holds its own bytes.
            _ => {
                if let Some(d) = out.last_mut() {
                    d.below_bytes = below;
                }
            }
        }
    }

    /// The driver sets how many packets the interface queue takes now and, for `tsq =
    /// "adaptive"`, the fastest pacing rate of another socket on it (before each call).
    pub fn set_device_room(&mut self, pkts: u32, peer_pacing_rate_bytes_per_s: u64) {
        self.below.device_room_pkts = pkts;
        self.below.peer_pacing_rate_bytes_per_s = peer_pacing_rate_bytes_per_s;
    }

    /// The NIC has sent a data segment that held `below_bytes` (`tcp_wfree`); a throttled
    /// socket writes again (`tcp_tsq_handler` -> `tcp_tsq_write`).
    pub fn on_tx_complete(
        &mut self,
        now_ns: u64,
        below_bytes: u32,
        out: &mut Vec<super::segment::DataSeg>,
    ) {
        self.below.wmem_bytes = self.below.wmem_bytes.saturating_sub(u64::from(below_bytes));
        if !self.below.throttled {
            return;
        }
        self.below.throttled = false;
        self.set_now(now_ns);
        self.tsq_write(out);
        self.run_writer(out);
    }

    /// `tcp_tsq_write`: lost segments first if cwnd allows, then new data.
    pub(crate) fn tsq_write(&mut self, out: &mut Vec<super::segment::DataSeg>) {
        if self.tp.lost_out > self.tp.retrans_out && self.tp.snd_cwnd > self.tp.packets_in_flight()
        {
            self.xmit_retransmit_queue(out);
        }
        self.write_xmit(out);
    }
}
