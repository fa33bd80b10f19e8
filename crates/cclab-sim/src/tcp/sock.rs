//! `TcpSock`: the part of a TCP sender's state that congestion control reads and writes.
//!
//! Mirrors the fields of Linux's `struct tcp_sock` / `inet_connection_sock` that the
//! `tcp_congestion_ops` hooks touch (include/linux/tcp.h, Linux 6.18). Field names follow the
//! kernel's so that a port of `net/ipv4/tcp_<name>.c` reads like the original. Windows are in
//! packets (segments), sequence numbers in bytes (u64, they never wrap in a simulation), times in
//! microseconds unless the name says otherwise.

use crate::cc::CaState;

/// Linux `TCP_INFINITE_SSTHRESH` (include/net/tcp.h).
pub const TCP_INFINITE_SSTHRESH: u32 = 0x7fff_ffff;

/// Congestion-control-visible TCP sender state (a subset of Linux's `struct tcp_sock`).
#[derive(Debug, Clone)]
pub struct TcpSock {
    /// `tcp_mstamp`: time of the event being processed, microseconds since the run started.
    pub tcp_mstamp_us: u64,
    /// The kernel's tick clock (`clock.hz` is CONFIG_HZ, 250 on this machine's kernel): jiffies
    /// for `tcp_jiffies32`, and the timer wheel (`clock.rs`).
    pub clock: super::clock::KernelClock,
    /// Congestion window, packets (`snd_cwnd`).
    pub snd_cwnd: u32,
    /// Slow-start threshold, packets (`snd_ssthresh`).
    pub snd_ssthresh: u32,
    /// Linear-increase counter, packets acked since the last increase (`snd_cwnd_cnt`).
    pub snd_cwnd_cnt: u32,
    /// Upper bound on cwnd, packets (`snd_cwnd_clamp`; the papers' "max window").
    pub snd_cwnd_clamp: u32,
    /// Jiffies of the last cwnd change or validation (`snd_cwnd_stamp`).
    pub snd_cwnd_stamp: u32,
    /// cwnd before the current reduction, packets (`prior_cwnd`).
    pub prior_cwnd: u32,
    /// ssthresh before loss recovery, for undo (`prior_ssthresh`).
    pub prior_ssthresh: u32,
    /// Sender MSS, bytes (`mss_cache`).
    pub mss_cache: u32,
    /// First unacknowledged byte (`snd_una`).
    pub snd_una: u64,
    /// Next byte to send (`snd_nxt`).
    pub snd_nxt: u64,
    /// Recovery point: snd_nxt when recovery or loss started (`high_seq`).
    pub high_seq: u64,
    /// Segments sent and not yet cumulatively acked (`packets_out`).
    pub packets_out: u32,
    /// Segments SACKed (`sacked_out`).
    pub sacked_out: u32,
    /// Segments marked lost (`lost_out`).
    pub lost_out: u32,
    /// Retransmitted segments still in flight (`retrans_out`).
    pub retrans_out: u32,
    /// Whether the last window was limited by cwnd (`is_cwnd_limited`).
    pub is_cwnd_limited: bool,
    /// Most packets in flight in the last window (`max_packets_out`).
    pub max_packets_out: u32,
    /// Smoothed RTT << 3, microseconds (`srtt_us`, scaled as in Linux).
    pub srtt_us: u32,
    /// RTT mean deviation << 2, microseconds (`mdev_us`).
    pub mdev_us: u32,
    /// Maximal mdev over the last RTT, microseconds (`mdev_max_us`).
    pub mdev_max_us: u32,
    /// RTT variance used for RTO, microseconds (`rttvar_us`).
    pub rttvar_us: u32,
    /// Windowed minimum RTT, microseconds (`tcp_min_rtt(tp)`; u32::MAX before the first sample).
    pub min_rtt_us: u32,
    /// Segments delivered (acked or SACKed) so far (`delivered`).
    pub delivered: u32,
    /// Segments marked lost so far (`lost`).
    pub lost: u32,
    /// Segments delivered by ACKs with ECE so far (`delivered_ce`, `tcp_count_delivered`).
    pub delivered_ce: u32,
    /// ECN state bits (`ecn_flags`: `TCP_ECN_*` of `tcp/ecn.rs`); 0 without ECN.
    pub ecn_flags: u8,
    /// Congestion-avoidance state (`icsk_ca_state`).
    pub ca_state: CaState,
    /// Current retransmission timeout, microseconds (`icsk_rto`).
    pub icsk_rto_us: u32,
    /// Pacing rate, bytes per second (`sk_pacing_rate`). Set for every algorithm (by
    /// `tcp_update_pacing_rate` or the algorithm's own `cong_control`), but it only paces when
    /// `pacing_needed` (there is no fq qdisc in our model, as on this machine).
    pub pacing_rate_bytes_per_s: u64,
    /// Upper bound on the pacing rate, bytes per second (`sk_max_pacing_rate`, SO_MAX_PACING_RATE).
    pub max_pacing_rate_bytes_per_s: u64,
    /// `sk_pacing_status == SK_PACING_NEEDED`: TCP paces internally (an hrtimer per socket, as
    /// `tcp_pacing_check` does without fq). BBR sets it in `init`.
    pub pacing_needed: bool,
    /// `sk_pacing_shift`: TSO autosizing budget is `pacing_rate >> shift` bytes (10 = ~1 ms).
    pub pacing_shift: u32,
    /// Earliest departure time of the next segment, ns (`tcp_wstamp_ns`, the EDT model).
    pub tcp_wstamp_ns: u64,
    /// The current time in ns (`tcp_clock_cache`); equals `tcp_mstamp_us * 1000` here.
    pub tcp_clock_cache_ns: u64,
    /// Data segments sent, including retransmissions (`data_segs_out`).
    pub data_segs_out: u32,
    /// Time of the latest delivery (ACK or SACK of new data), us (`delivered_mstamp`).
    pub delivered_mstamp_us: u64,
    /// Send time of the most recently (S)ACKed segment, or of the first segment sent when
    /// nothing was in flight, us (`first_tx_mstamp`).
    pub first_tx_mstamp_us: u64,
    /// Non-zero while the flow is application-limited: the `delivered` count at which the
    /// app-limited bubble ends (`app_limited`). Starts at `!0` as in `tcp_init_sock`, so the
    /// samples of the first flight are marked app-limited.
    pub app_limited: u32,
    /// Delivered segments of the last non-app-limited (or highest app-limited) sample
    /// (`rate_delivered`, TCP_INFO's delivery rate numerator).
    pub rate_delivered: u32,
    /// Interval of that sample, us (`rate_interval_us`).
    pub rate_interval_us: u32,
    /// Whether that sample was app-limited (`rate_app_limited`).
    pub rate_app_limited: bool,
    /// Jiffies of the last data transmission (`lsndtime`).
    pub lsndtime: u32,
    /// Whether the ACK being processed carried timestamps (`rx_opt.saw_tstamp`).
    pub rx_saw_tstamp: bool,
    /// TSval of the ACK being processed, the peer's clock in ms (`rx_opt.rcv_tsval`).
    pub rx_rcv_tsval: u32,
    /// TSecr of the ACK being processed, our clock in ms (`rx_opt.rcv_tsecr`).
    pub rx_rcv_tsecr: u32,
    /// Our timestamp clock now, ms (`tcp_time_stamp_ts`, never 0).
    pub tcp_time_stamp_ms: u32,
    /// State of this flow's random source for congestion control (`get_random_u32_below`),
    /// seeded by the world from (seed, flow name) so runs are repeatable.
    pub prandom_state: u64,
}

impl TcpSock {
    /// A fresh sender: ssthresh infinite (Linux `tcp_init_sock`), cwnd = the initial window
    /// capped by the clamp (`tcp_init_transfer` sets `tcp_init_cwnd()`: min(TCP_INIT_CWND or the
    /// route's initcwnd, snd_cwnd_clamp), net/ipv4/tcp_input.c).
    pub fn new(
        mss_bytes: u32,
        initial_cwnd_pkts: u32,
        cwnd_clamp_pkts: u32,
        clock: super::clock::KernelClock,
    ) -> Self {
        TcpSock {
            tcp_mstamp_us: 0,
            clock,
            snd_cwnd: initial_cwnd_pkts.min(cwnd_clamp_pkts),
            snd_ssthresh: TCP_INFINITE_SSTHRESH,
            snd_cwnd_cnt: 0,
            snd_cwnd_clamp: cwnd_clamp_pkts,
            snd_cwnd_stamp: 0,
            prior_cwnd: 0,
            prior_ssthresh: 0,
            mss_cache: mss_bytes,
            snd_una: 0,
            snd_nxt: 0,
            high_seq: 0,
            packets_out: 0,
            sacked_out: 0,
            lost_out: 0,
            retrans_out: 0,
            is_cwnd_limited: false,
            max_packets_out: 0,
            srtt_us: 0,
            mdev_us: 0,
            mdev_max_us: 0,
            rttvar_us: 0,
            min_rtt_us: u32::MAX,
            delivered: 0,
            lost: 0,
            delivered_ce: 0,
            ecn_flags: 0,
            ca_state: CaState::Open,
            icsk_rto_us: 1_000_000,
            pacing_rate_bytes_per_s: 0,
            max_pacing_rate_bytes_per_s: u64::MAX,
            pacing_needed: false,
            pacing_shift: 10,
            tcp_wstamp_ns: 0,
            tcp_clock_cache_ns: 0,
            data_segs_out: 0,
            delivered_mstamp_us: 0,
            first_tx_mstamp_us: 0,
            app_limited: !0,
            rate_delivered: 0,
            rate_interval_us: 0,
            rate_app_limited: true,
            lsndtime: 0,
            rx_saw_tstamp: false,
            rx_rcv_tsval: 0,
            rx_rcv_tsecr: 0,
            tcp_time_stamp_ms: 1,
            prandom_state: 0x853c_49e6_748f_ea9b,
        }
    }

    /// `tcp_jiffies32`: the kernel tick counter at `tcp_mstamp_us` (wraps like the kernel's).
    pub fn jiffies(&self) -> u32 {
        self.clock.jiffies_at(self.tcp_mstamp_us * 1000) as u32
    }

    /// Convert milliseconds to jiffies as `msecs_to_jiffies` does (rounding up).
    pub fn msecs_to_jiffies(&self, ms: u32) -> u32 {
        ((ms as u64 * self.clock.hz as u64).div_ceil(1000)) as u32
    }

    /// `tcp_stamp_us_delta(t1, t0)`: microseconds from `t0` to `t1`, 0 if negative.
    pub fn stamp_us_delta(t1: u64, t0: u64) -> u64 {
        t1.saturating_sub(t0)
    }

    /// `get_random_u32_below(ceil)`: a uniform integer in [0, ceil), from this flow's own
    /// deterministic stream (splitmix64), standing in for the kernel's random pool.
    pub fn random_u32_below(&mut self, ceil: u32) -> u32 {
        self.prandom_state = self.prandom_state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.prandom_state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        (((z >> 32) * ceil as u64) >> 32) as u32
    }

    /// `tcp_in_slow_start`.
    pub fn in_slow_start(&self) -> bool {
        self.snd_cwnd < self.snd_ssthresh
    }

    /// `tcp_packets_in_flight`: packets_out - (sacked_out + lost_out) + retrans_out.
    pub fn packets_in_flight(&self) -> u32 {
        (self
            .packets_out
            .saturating_sub(self.sacked_out + self.lost_out))
            + self.retrans_out
    }

    /// `tcp_is_cwnd_limited` (include/net/tcp.h).
    pub fn is_cwnd_limited(&self) -> bool {
        if self.is_cwnd_limited {
            return true;
        }
        // If in slow start, ensure cwnd grows to twice what was ACKed.
        if self.in_slow_start() {
            return self.snd_cwnd < 2 * self.max_packets_out;
        }
        false
    }

    /// `tcp_current_ssthresh`.
    pub fn current_ssthresh(&self) -> u32 {
        if matches!(self.ca_state, CaState::Cwr | CaState::Recovery) {
            self.snd_ssthresh
        } else {
            self.snd_ssthresh
                .max((self.snd_cwnd >> 1) + (self.snd_cwnd >> 2))
        }
    }

    /// `tcp_snd_cwnd_set`: set cwnd (never 0), respecting nothing else: callers clamp.
    pub fn set_cwnd(&mut self, cwnd: u32) {
        debug_assert!(cwnd > 0, "cwnd must stay positive");
        self.snd_cwnd = cwnd.max(1);
    }
}
