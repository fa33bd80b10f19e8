//! The receive buffer and the window a receiver offers, as Linux 6.18 (6.18.44, this machine's
//! kernel) tunes them (`net/ipv4/tcp_input.c`: `tcp_init_buffer_space`, `tcp_measure_rcv_mss`,
//! `tcp_grow_window`, `__tcp_grow_window`, `tcp_rcv_space_adjust`, `tcp_rcvbuf_grow`,
//! `tcp_rcv_rtt_update`; `net/ipv4/tcp_output.c`: `tcp_select_initial_window`,
//! `__tcp_select_window`, `tcp_select_window`; `include/net/tcp.h`: `tcp_win_from_space`,
//! `tcp_space_from_win`, `tcp_space`, `tcp_full_space`; `net/ipv4/tcp.c`:
//! `tcp_set_window_clamp`, `tcp_cleanup_rbuf`).
//!
//! - The buffer (`sk_rcvbuf`) starts at `tcp_rmem[1]`; the share of it offered as window is
//!   `scaling_ratio / 256`, measured from the first full segment as payload over the skb's
//!   truesize (`tcp_measure_rcv_mss`). We model the kernel backend's skbs: the receiver's TUN
//!   allocates each packet linear, so a 1500-byte frame takes a 2048-byte slab and a truesize
//!   of 2304 ([`tun_truesize_bytes`]), ratio 160 at MSS 1448 (measured with the
//!   `tcp:tcp_rcvbuf_grow` tracepoint, `bench/rcvbuf_probe.py`).
//! - `window_clamp` (the most ever offered) and `rcv_ssthresh` (what is offered now):
//!   `tcp_grow_window` raises rcv_ssthresh by 2 MSS per in-order segment while it is below
//!   min(window_clamp, free space), and each raise asks for an immediate ACK
//!   (`icsk_ack.quick |= 1`): while autotuning opens the window, every segment is ACKed.
//! - Once per receiver RTT (the timestamp-echo estimate, `rcv_rtt_est`) the application's
//!   reads are measured (`tcp_rcv_space_adjust`); when it read more than the last measure,
//!   `tcp_rcvbuf_grow` sets rcvwin = 2 * copied, plus 4 * copied * growth / last (the 6.18
//!   stable fix "tcp: fix too slow tcp_rcvbuf_grow() action", present in 6.18.44: the kernel's
//!   trace matches it to the byte), the buffer to the space for rcvwin (at most
//!   `tcp_rmem[2]`) and window_clamp to follow.
//! - The window offered (`__tcp_select_window`): min(free space, rcv_ssthresh), rounded up to
//!   the window scale's unit; never below what was offered before (`tcp_select_window`); the
//!   free space shrinks by the truesize of out-of-order data held.
//!
//! We diverge: the application reads each in-order byte when it arrives (nothing waits in the
//! receive queue), ofo skbs are charged a truesize each (the kernel's coalescing of adjacent
//! ones, `tcp_try_coalesce`, saves the sk_buff head of all but the first), and there is no
//! memory pressure (`tcp_under_memory_pressure`, `tcp_clamp_window`, pruning).

/// `net.ipv4.tcp_rmem`, [min, default, max] bytes: Linux 6.18's defaults (the max is 32 MiB
/// since 6.16, `tcp_init`); a new network namespace inherits them.
pub const TCP_RMEM_BYTES: [u64; 3] = [4096, 131_072, 33_554_432];
/// `TCP_RMEM_TO_WIN_SCALE`.
const RMEM_TO_WIN_SCALE: u32 = 8;
/// `TCP_DEFAULT_SCALING_RATIO`: half the buffer is window before any skb has been measured.
const DEFAULT_SCALING_RATIO: u64 = 1 << (RMEM_TO_WIN_SCALE - 1);
/// `TCP_INIT_CWND`.
const INIT_CWND: u64 = 10;
/// `TCP_MSS_DEFAULT`: `tcp_initialize_rcv_mss`'s first guess of the peer's segment size.
const MSS_DEFAULT: u64 = 536;
/// `sysctl_rmem_max` (net.core.rmem_max, 212992): with `tcp_rmem[2]` it sets the window scale.
const RMEM_MAX: u64 = 212_992;
/// `TCP_MAX_WSCALE`.
const MAX_WSCALE: u32 = 14;
/// `SOCK_MIN_RCVBUF / 2`: the least window clamp `tcp_set_window_clamp` sets.
const MIN_WINDOW_CLAMP: u64 = 2304;

/// An skb's truesize for `payload` bytes in a frame with `header_bytes` of IP and TCP headers,
/// as the kernel backend's receiver gets it from its TUN (`tun_alloc_skb`: linear, with
/// `NET_SKB_PAD + NET_IP_ALIGN` = 66 bytes of headroom; `__alloc_skb` adds the 64-aligned
/// `skb_shared_info`, 320 bytes, rounds up to a kmalloc size and `SKB_TRUESIZE` adds the
/// 256-byte sk_buff). 2304 for a 1500-byte frame.
pub fn tun_truesize_bytes(payload: u64, header_bytes: u64) -> u64 {
    let data = (payload + header_bytes + 66).div_ceil(64) * 64 + 320;
    let slab = if data <= 96 {
        96
    } else if data <= 192 {
        192
    } else {
        data.next_power_of_two()
    };
    slab + 256
}

/// Bytes of IP and TCP headers on a data segment (with the timestamp option or without).
fn data_header_bytes(timestamps: bool) -> u64 {
    40 + if timestamps { 12 } else { 0 }
}

/// The window a Linux 6.18 receiver offers first, bytes: `tcp_select_initial_window` with
/// `tcp_full_space` = `tcp_win_from_space(tcp_rmem[1])` (half the 128 KiB default buffer),
/// rounded down to a multiple of the MSS (`net/ipv4/tcp_output.c`; no `init_rcv_wnd` route
/// metric). 65160 bytes at MSS 1448.
pub fn initial_rcv_wnd_bytes(mss_bytes: u32) -> u64 {
    let full = win_from_space(DEFAULT_SCALING_RATIO, TCP_RMEM_BYTES[1]);
    let mss = u64::from(mss_bytes.max(1));
    if full > mss {
        full / mss * mss
    } else {
        full
    }
}

/// `tcp_win_from_space`.
fn win_from_space(ratio: u64, space: u64) -> u64 {
    (space * ratio) >> RMEM_TO_WIN_SCALE
}

/// `tcp_space_from_win`.
fn space_from_win(ratio: u64, win: u64) -> u64 {
    (win << RMEM_TO_WIN_SCALE) / ratio.max(1)
}

/// One grow event of the buffer, as the `tcp:tcp_rcvbuf_grow` tracepoint reports it (the state
/// before the change): what `bench/rcvbuf_probe.py` compares with the kernel's.
#[derive(Debug, Clone, Copy, Default)]
pub struct GrowEvent {
    pub rtt_us: u64,
    pub copied: u64,
    pub space: u64,
    pub rcvbuf: u64,
    pub rcv_ssthresh: u64,
    pub window_clamp: u64,
    pub rcv_wnd: u64,
    pub scaling_ratio: u64,
}

/// A receiver's buffer, window clamp and offered window.
#[derive(Debug, Clone)]
pub struct RcvBuf {
    /// `tp->advmss`: our segment size (the flow's MSS).
    advmss: u64,
    /// `tcp_rmem[2]`.
    rmem_max: u64,
    /// `rx_opt.rcv_wscale`.
    pub wscale: u32,
    /// `sk_rcvbuf`, bytes.
    pub rcvbuf: u64,
    /// `tp->window_clamp`.
    pub window_clamp: u64,
    /// `tp->rcv_ssthresh`.
    pub rcv_ssthresh: u64,
    /// `tp->rcv_wnd`: the window last offered (from `rcv_wup`).
    pub rcv_wnd: u64,
    /// `tp->scaling_ratio` (over 256).
    pub scaling_ratio: u64,
    /// `icsk_ack.rcv_mss`: the peer's segment size as measured.
    pub rcv_mss: u64,
    /// Frame headers of a data segment (IP + TCP + options), for the truesize.
    header_bytes: u64,
    /// The truesize of a full segment (`advmss` bytes).
    truesize_mss: u64,
    /// `rcvq_space.space`, `.seq` (copied_seq then), `.time` (ns; None before the first data).
    space: u64,
    space_seq: u64,
    space_time_ns: Option<u64>,
    /// `rcv_rtt_est.rtt_us` (8 times the estimate, us; 0 = none) and its window-based sample's
    /// `seq` and `time` (`tcp_rcv_rtt_measure`, used without timestamps).
    pub rtt_us8: u64,
    rtt_seq: u64,
    rtt_time_ns: Option<u64>,
    /// `rcv_rtt_last_tsecr`.
    last_tsecr: u32,
    /// Grow events not yet taken by the world (its `rcvbuf_grow` events).
    pub events: Vec<GrowEvent>,
}

impl RcvBuf {
    /// A passive socket just established (`tcp_select_initial_window` on the listener's
    /// buffer, then `tcp_init_buffer_space`), receiving `mss_bytes` segments with or without
    /// the timestamp option.
    pub fn new(mss_bytes: u32, timestamps: bool) -> Self {
        let advmss = u64::from(mss_bytes.max(1));
        let header_bytes = data_header_bytes(timestamps);
        let [_, rmem_default, rmem_max] = TCP_RMEM_BYTES;
        let full = win_from_space(DEFAULT_SCALING_RATIO, rmem_default);
        // tcp_select_initial_window: the window scale covers max(tcp_rmem[2], rmem_max).
        let mut wscale = 0;
        let mut span = rmem_max.max(RMEM_MAX);
        while span > 65_535 && wscale < MAX_WSCALE {
            span >>= 1;
            wscale += 1;
        }
        let rcv_wnd = initial_rcv_wnd_bytes(mss_bytes);
        // tcp_init_buffer_space (tcp_app_win = 31): the clamp is the full space, less one
        // segment reserved.
        let mut clamp = full;
        if clamp > 2 * advmss && clamp + advmss > full {
            clamp = (2 * advmss).max(full - advmss);
        }
        let rcv_ssthresh = rcv_wnd.min(clamp);
        RcvBuf {
            advmss,
            rmem_max,
            wscale,
            rcvbuf: rmem_default,
            window_clamp: clamp,
            rcv_ssthresh,
            rcv_wnd,
            scaling_ratio: DEFAULT_SCALING_RATIO,
            rcv_mss: MSS_DEFAULT.min(advmss).min(rcv_wnd / 2).max(88),
            header_bytes,
            truesize_mss: tun_truesize_bytes(advmss, header_bytes),
            space: rcv_ssthresh.min(rcv_wnd).min(INIT_CWND * advmss),
            space_seq: 0,
            space_time_ns: None,
            rtt_us8: 0,
            rtt_seq: 0,
            rtt_time_ns: None,
            last_tsecr: 0,
            events: Vec::new(),
        }
    }

    /// The truesize of a `len`-byte data skb.
    pub fn truesize(&self, len: u64) -> u64 {
        if len == self.advmss {
            return self.truesize_mss;
        }
        tun_truesize_bytes(len, self.header_bytes)
    }

    /// What `bytes` of out-of-order data hold in the buffer: a full segment's truesize per
    /// segment (the kernel's coalescing of adjacent skbs is not modelled).
    pub fn ofo_charge(&self, bytes: u64) -> u64 {
        bytes.div_ceil(self.advmss) * self.truesize_mss
    }

    /// `tcp_win_from_space` at this socket's ratio.
    pub fn win_from_space(&self, space: u64) -> u64 {
        win_from_space(self.scaling_ratio, space)
    }

    /// `tcp_space`: the window the free buffer allows, `rmem_alloc` bytes being held.
    pub fn space(&self, rmem_alloc: u64) -> u64 {
        self.win_from_space(self.rcvbuf.saturating_sub(rmem_alloc))
    }

    /// `tcp_full_space`.
    pub fn full_space(&self) -> u64 {
        self.win_from_space(self.rcvbuf)
    }

    /// The first data arrives: the measuring starts (`rcvq_space.time`, which Linux sets when
    /// the handshake completes, a moment before).
    pub fn start(&mut self, now_ns: u64, copied_seq: u64) {
        if self.space_time_ns.is_none() {
            self.space_time_ns = Some(now_ns);
            self.space_seq = copied_seq;
        }
    }

    /// `tcp_measure_rcv_mss` for a `len`-byte segment: a full segment of a new size sets the
    /// ratio from its truesize and the clamp to the buffer's window (`tcp_set_window_clamp`).
    pub fn measure_rcv_mss(&mut self, len: u64) {
        if len < self.rcv_mss {
            return;
        }
        if len != self.rcv_mss {
            let old = self.scaling_ratio;
            self.scaling_ratio = ((len << RMEM_TO_WIN_SCALE) / self.truesize(len)).max(1);
            if old != self.scaling_ratio {
                let val = self.full_space();
                self.set_window_clamp(val);
                if self.window_clamp < self.space {
                    self.space = self.window_clamp;
                }
            }
        }
        self.rcv_mss = len.min(self.advmss);
    }

    /// `tcp_set_window_clamp`.
    fn set_window_clamp(&mut self, val: u64) {
        let new = val.max(MIN_WINDOW_CLAMP);
        let old = self.window_clamp;
        if new == old {
            return;
        }
        self.window_clamp = new;
        if new < old {
            // __tcp_adjust_rcv_ssthresh, without memory pressure.
            self.rcv_ssthresh = self.rcv_ssthresh.min(new);
        } else {
            self.rcv_ssthresh = self.rcv_ssthresh.max(self.rcv_wnd.min(new));
        }
    }

    /// `tcp_grow_window` for a `len`-byte skb just charged (`rmem_alloc` includes it); true
    /// when rcv_ssthresh rose (the caller sets `icsk_ack.quick |= 1`).
    pub fn grow_window(&mut self, len: u64, rmem_alloc: u64) -> bool {
        let room = self.window_clamp.min(self.space(rmem_alloc)) as i64 - self.rcv_ssthresh as i64;
        if room <= 0 {
            return false;
        }
        let truesize = self.truesize(len);
        let incr = if self.win_from_space(truesize) <= len {
            2 * self.advmss
        } else {
            self.grow_window_slow(len, truesize)
        };
        if incr == 0 {
            return false;
        }
        let incr = incr.max(2 * len);
        self.rcv_ssthresh += incr.min(room as u64);
        true
    }

    /// `__tcp_grow_window`: an skb of poor payload over truesize raises the window only while
    /// it is small.
    fn grow_window_slow(&self, len: u64, truesize: u64) -> u64 {
        let mut truesize = self.win_from_space(truesize) >> 1;
        let mut window = self.win_from_space(self.rmem_max) >> 1;
        while self.rcv_ssthresh <= window {
            if truesize <= len {
                return 2 * self.rcv_mss;
            }
            truesize >>= 1;
            window >>= 1;
        }
        0
    }

    /// `tcp_rcv_rtt_measure_ts`: a timestamp echo `tsecr` (ms ticks, `now_ts` ours) on a
    /// segment of `len` bytes.
    pub fn rtt_measure_ts(&mut self, now_ts: u32, tsecr: u32, len: u64) {
        if tsecr == self.last_tsecr {
            return;
        }
        self.last_tsecr = tsecr;
        if len >= self.rcv_mss {
            let delta = now_ts.wrapping_sub(tsecr) as i32;
            if delta > 0 {
                self.rtt_update(u64::from(delta as u32) * 1000, false);
            }
        }
    }

    /// `tcp_rcv_rtt_measure`: without timestamps, the time to receive a window's worth of data
    /// (only a smaller sample counts).
    pub fn rtt_measure(&mut self, now_ns: u64, rcv_nxt: u64) {
        if let Some(t) = self.rtt_time_ns {
            if rcv_nxt < self.rtt_seq {
                return;
            }
            let delta_us = ((now_ns - t) / 1000).max(1);
            self.rtt_update(delta_us, true);
        }
        self.rtt_seq = rcv_nxt + self.rcv_wnd;
        self.rtt_time_ns = Some(now_ns);
    }

    /// `tcp_rcv_rtt_update`: a smaller sample is taken at once, a larger one (timestamps only)
    /// moves the estimate by 1/8.
    fn rtt_update(&mut self, sample_us: u64, win_dep: bool) {
        let m = sample_us << 3;
        let old = self.rtt_us8;
        self.rtt_us8 = if old == 0 || m < old {
            m
        } else if win_dep {
            return;
        } else {
            old - (old >> 3) + sample_us
        };
    }

    /// The receiver's RTT estimate, us (0 = none).
    pub fn rtt_us(&self) -> u64 {
        self.rtt_us8 >> 3
    }

    /// `tcp_rcv_space_adjust` after a read that took the application to `copied_seq`; `ofo_span`
    /// is how far out-of-order data reaches beyond it. True when the buffer grew.
    pub fn space_adjust(&mut self, now_ns: u64, copied_seq: u64, ofo_span: u64) -> bool {
        let Some(t0) = self.space_time_ns else {
            return false;
        };
        if self.rtt_us8 == 0 {
            return false;
        }
        let time_us = now_ns.saturating_sub(t0) / 1000;
        if time_us < self.rtt_us() {
            return false;
        }
        let copied = copied_seq - self.space_seq;
        let mut grew = false;
        if copied > self.space {
            self.events.push(GrowEvent {
                rtt_us: self.rtt_us8 >> 3,
                copied,
                space: self.space,
                rcvbuf: self.rcvbuf,
                rcv_ssthresh: self.rcv_ssthresh,
                window_clamp: self.window_clamp,
                rcv_wnd: self.rcv_wnd,
                scaling_ratio: self.scaling_ratio,
            });
            grew = self.rcvbuf_grow(copied, ofo_span);
        }
        self.space_seq = copied_seq;
        self.space_time_ns = Some(now_ns);
        grew
    }

    /// `rcvq_space.space`: the last measure of bytes read per RTT.
    pub fn space_measured(&self) -> u64 {
        self.space
    }

    /// `tcp_rcvbuf_grow` to `newval` bytes per RTT, in the kernel's u32 arithmetic. True when
    /// the buffer grew.
    pub fn rcvbuf_grow(&mut self, newval: u64, ofo_span: u64) -> bool {
        let old = self.space as u32;
        let newval32 = newval as u32;
        self.space = newval;
        // DRS is always one RTT late; slow start: allow the sender to double its rate.
        let mut rcvwin = newval32 << 1;
        if old != 0 {
            let grow = u64::from(rcvwin) * u64::from(newval32.wrapping_sub(old)) / u64::from(old);
            rcvwin = rcvwin.wrapping_add((grow << 1) as u32);
        }
        let rcvwin = u64::from(rcvwin) + ofo_span;
        let rcvbuf = space_from_win(self.scaling_ratio, rcvwin).min(self.rmem_max);
        if rcvbuf > self.rcvbuf {
            self.rcvbuf = rcvbuf;
            self.window_clamp = self.win_from_space(rcvbuf);
            return true;
        }
        false
    }

    /// `__tcp_select_window` with `free` window of free space and `allowed` of the whole
    /// buffer (`tcp_space`, `tcp_full_space`; an MPTCP subflow's are its connection's,
    /// `mptcp_space`). Returns the window and whether it ends quick-ACK mode (free space below
    /// half: `icsk_ack.quick = 0`).
    pub fn select_window_raw(&self, free: u64, allowed: u64) -> (u64, bool) {
        let mut mss = self.rcv_mss;
        let full = self.window_clamp.min(allowed);
        if mss > full {
            mss = full;
            if mss == 0 {
                return (0, false);
            }
        }
        let unit = 1u64 << self.wscale;
        let mut free = free;
        let mut end_quick = false;
        if free < full / 2 {
            end_quick = true;
            free = free / unit * unit;
            if free < allowed / 16 || free < mss {
                return (0, true);
            }
        }
        let free = free.min(self.rcv_ssthresh);
        (free.div_ceil(unit) * unit, end_quick)
    }

    /// `tcp_select_window`: the window sent on an ACK from `rcv_nxt`, never shrinking what was
    /// offered from `rcv_wup` before; it becomes rcv_wnd.
    pub fn select_window(
        &mut self,
        free: u64,
        allowed: u64,
        rcv_wup: u64,
        rcv_nxt: u64,
    ) -> (u64, bool) {
        let cur = (rcv_wup + self.rcv_wnd).saturating_sub(rcv_nxt);
        let (mut new, end_quick) = self.select_window_raw(free, allowed);
        let unit = 1u64 << self.wscale;
        if new < cur {
            new = cur.div_ceil(unit) * unit;
        }
        self.rcv_wnd = new;
        (new.min(65_535 << self.wscale), end_quick)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The kernel's skbs from its TUN (bench/rcvbuf_probe.py on 6.18.44: scaling_ratio 160 at
    /// MSS 1448 with timestamps).
    #[test]
    fn a_full_tun_frame_has_truesize_2304_and_ratio_160() {
        assert_eq!(tun_truesize_bytes(1448, 52), 2304);
        let mut b = RcvBuf::new(1448, true);
        assert_eq!(
            (b.rcv_wnd, b.window_clamp, b.space),
            (65_160, 64_088, 14_480)
        );
        assert_eq!(b.wscale, 10);
        b.measure_rcv_mss(1448);
        assert_eq!(b.scaling_ratio, 160);
        assert_eq!(
            b.window_clamp, 81_920,
            "the clamp follows the measured ratio"
        );
    }

    /// The kernel's trace of the fidelity case bbr-100ms-deep: copied 30408 over a space of
    /// 15928 gives rcvbuf 274224 and window_clamp 171390 (the 6.18.44 formula with the growth
    /// term; without it the buffer would not have grown).
    #[test]
    fn a_grow_event_matches_the_kernels_trace() {
        let mut b = RcvBuf::new(1448, true);
        b.measure_rcv_mss(1448);
        b.space = 15_928;
        assert!(b.rcvbuf_grow(30_408, 0));
        assert_eq!((b.rcvbuf, b.window_clamp), (274_224, 171_390));
        assert!(
            !b.rcvbuf_grow(30_408, 0),
            "no growth: 2 * 30408 fits the buffer"
        );
    }

    /// rcv_ssthresh climbs 2 MSS per segment up to the free space, then stops (and with it the
    /// quick ACKs).
    #[test]
    fn rcv_ssthresh_climbs_two_segments_a_segment_to_the_free_space() {
        let mut b = RcvBuf::new(1448, true);
        b.measure_rcv_mss(1448);
        let start = b.rcv_ssthresh;
        let mut raised = 0;
        for _ in 0..20 {
            if b.grow_window(1448, 2304) {
                raised += 1;
            }
        }
        assert_eq!(
            b.rcv_ssthresh, 80_480,
            "min(clamp, tcp_space less the skb) as the kernel's"
        );
        assert_eq!(raised, (80_480 - start).div_ceil(2896) as usize);
    }

    /// The offered window is rcv_ssthresh rounded up to the scale's unit (1024), and never
    /// shrinks.
    #[test]
    fn the_window_offered_is_rounded_up_and_never_shrinks() {
        let mut b = RcvBuf::new(1448, true);
        b.measure_rcv_mss(1448);
        b.rcv_ssthresh = 80_480;
        let (w, _) = b.select_window(b.space(0), b.full_space(), 0, 0);
        assert_eq!(w, 80_896);
        b.rcv_ssthresh = 10_000;
        let (w, _) = b.select_window(b.space(0), b.full_space(), 0, 1000);
        assert_eq!(
            w, 80_896,
            "the old right edge stays offered, rounded up to the unit"
        );
    }

    /// Timestamps: a smaller sample replaces the estimate, a larger one moves it by 1/8; a
    /// zero-tick sample is not taken.
    #[test]
    fn receiver_rtt_takes_the_minimum_at_once() {
        let mut b = RcvBuf::new(1448, true);
        b.measure_rcv_mss(1448);
        b.rtt_measure_ts(200, 100, 1448);
        assert_eq!(b.rtt_us(), 100_000);
        b.rtt_measure_ts(300, 100, 1448);
        assert_eq!(b.rtt_us(), 100_000, "the same echo is measured once");
        b.rtt_measure_ts(300, 120, 1448);
        assert_eq!(b.rtt_us8, 800_000 - 100_000 + 180_000);
        b.rtt_measure_ts(300, 250, 1448);
        assert_eq!(b.rtt_us(), 50_000);
        b.rtt_measure_ts(300, 300, 1448);
        assert_eq!(b.rtt_us(), 50_000);
    }
}
