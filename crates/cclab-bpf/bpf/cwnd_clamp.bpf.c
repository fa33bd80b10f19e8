// SPDX-License-Identifier: GPL-2.0
//
// cclab's per-flow settings on the real kernel: one sock_ops program attached to a cgroup v2
// directory. For every TCP socket of the processes in that cgroup it looks up the socket's
// remote port, then its local port, in two maps: `cwnd_clamp_by_port` (a congestion-window cap)
// and `rto_by_port` (the initial RTO and the minimum RTO).
//
// cwnd cap. Linux 6.18, net/core/filter.c, bpf_sol_tcp_setsockopt(): TCP_BPF_SNDCWND_CLAMP sets
// tp->snd_cwnd_clamp = val AND tp->snd_ssthresh = val (val > 0). Because of the second part
// the clamp is applied only when it changes for a socket (`cwnd_clamp_applied`, keyed by the
// socket cookie), not on every ACK: re-applying would reset ssthresh after each loss. When: at
// connection establishment (active and passive), and then on every RTT sample
// (BPF_SOCK_OPS_RTT_CB, enabled per socket here; net/ipv4/tcp_input.c tcp_ack_update_rtt()
// -> tcp_bpf_rtt()), so a value changed by userspace during the connection is picked up on the
// next ACK.
//
// Initial RTO. include/net/tcp.h tcp_timeout_init(): the reply to BPF_SOCK_OPS_TIMEOUT_INIT,
// in jiffies, when > 0, else TCP_TIMEOUT_INIT (1 s), at most the RTO maximum. The kernel asks in
// tcp_connect_init() (the SYN's RTO, icsk_rto, which the first data segments keep until an RTT
// sample) and for a request socket in tcp_conn_request() (the SYN-ACK's). The map holds jiffies:
// userspace converts with the kernel's HZ.
//
// Minimum RTO. bpf_setsockopt(SOL_TCP, TCP_BPF_RTO_MIN, us) sets icsk_rto_min
// (= usecs_to_jiffies(us)), which net/ipv4/tcp_input.c tcp_set_rto() -> __tcp_set_rto() adds as
// srtt + max(4 mdev, rto_min) (include/net/tcp.h tcp_rto_min()). 6.18 accepts it only between
// TCP_TIMEOUT_MIN (2 jiffies) and TCP_RTO_MIN (200 ms): it can lower a socket's minimum, not
// raise it (larger minima are the namespace's sysctl tcp_rto_min_us, which tcp_init_sock() copies
// into every new socket). Applied at BPF_SOCK_OPS_TCP_CONNECT_CB (net/ipv4/tcp_output.c
// tcp_connect(), before the SYN: so the handshake's RTT sample already uses it) and again at
// establishment (passive sockets). `rto_counts` counts what was done, for the loader's status.
//
// Timeout log (cclab issue 14, per-RTO `sto` rows on the kernel). Every socket gets
// BPF_SOCK_OPS_RTO_CB_FLAG at establishment, and BPF_SOCK_OPS_RETRANS_CB_FLAG after its first
// RTO. The program writes to the ring buffer
// `sto_log`, one `struct sto_event` each (userspace reads them after the run, kernel/sto.py
// makes the rows):
// - STO_EV_ESTABLISHED: snd_una then is the ISN + 1, the base of the relative sequences;
// - STO_EV_RTO: net/ipv4/tcp_timer.c tcp_write_timeout() runs the program with
//   BPF_SOCK_OPS_RTO_CB (arg 0: icsk_retransmits, 0 for the first timeout of a run of backed-off
//   ones; arg 1: icsk_rto, jiffies) from tcp_retransmit_timer() BEFORE tcp_enter_loss(): cwnd,
//   ssthresh, snd_una (the segment it retransmits) and snd_nxt (tcp_enter_loss's high_seq) are
//   the values before the timeout. The SYN's timeouts (state SYN_SENT) are left out;
// - STO_EV_SSTHRESH: snd_ssthresh differs from the socket's last seen value, checked on every
//   RTT sample (BPF_SOCK_OPS_RTT_CB) and retransmission (BPF_SOCK_OPS_RETRANS_CB); and always on the first callback after an RTO (arg 0 = 1), which shows
//   tcp_enter_loss's ssthresh (that callback is the RTO's retransmission, or an ACK's RTT
//   sample, which tcp_ack() takes before tcp_fastretrans_alert() could undo): an undo
//   (net/ipv4/tcp_input.c tcp_undo_cwnd_reduction) restores ssthresh to prior_ssthresh, which
//   is what userspace looks for;
// - STO_EV_RECOVERED: the callback after the first one (after an RTO) where snd_una has
//   reached that RTO's snd_nxt (the Loss state's high_seq: its retransmissions are over). One
//   callback later, because RTT_CB runs in tcp_ack() before tcp_fastretrans_alert(): an undo by
//   the ACK that ends the Loss state (tcp_process_loss -> tcp_try_undo_recovery) shows as an
//   STO_EV_SSTHRESH before this event, a later one (a D-SACK's, tcp_try_undo_dsack) after it.
// An event the ring buffer has no room for is counted in rto_counts[STO_EVENTS_LOST].

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#ifndef SOL_TCP
#define SOL_TCP 6
#endif

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);   /* TCP port, host byte order */
	__type(value, __u32); /* cwnd cap, packets (> 0) */
} cwnd_clamp_by_port SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64);   /* socket cookie */
	__type(value, __u32); /* cap last applied to it, packets */
} cwnd_clamp_applied SEC(".maps");

struct rto_setting {
	__u32 initial_jiffies; /* reply to BPF_SOCK_OPS_TIMEOUT_INIT; 0: the kernel's (1 s) */
	__u32 min_us;          /* TCP_BPF_RTO_MIN; 0: the namespace's tcp_rto_min_us */
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32); /* TCP port, host byte order */
	__type(value, struct rto_setting);
} rto_by_port SEC(".maps");

/* rto_counts[]: initial RTOs replied, minima set, minima refused by the kernel. */
#define RTO_INITIAL_REPLIED 0
#define RTO_MIN_SET 1
#define RTO_MIN_REFUSED 2
#define STO_EVENTS_LOST 3
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 4);
	__type(key, __u32);
	__type(value, __u64);
} rto_counts SEC(".maps");

#define STO_EV_ESTABLISHED 0
#define STO_EV_RTO 1
#define STO_EV_SSTHRESH 2
#define STO_EV_RECOVERED 3

struct sto_event {
	__u64 t_ns; /* bpf_ktime_get_ns(): CLOCK_MONOTONIC */
	__u64 cookie;
	__u32 kind;
	__u16 local_port;  /* host byte order */
	__u16 remote_port; /* host byte order */
	__u32 snd_una;
	__u32 snd_nxt;
	__u32 snd_cwnd;
	__u32 snd_ssthresh;
	__u32 arg0;
	__u32 arg1;
	__u32 state;
	__u32 packets_out;
};

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4 << 20);
} sto_log SEC(".maps");

/* Per socket: the last snd_ssthresh seen, and the last RTO's snd_nxt until snd_una reaches it. */
struct sto_sock {
	__u32 last_ssthresh;
	__u32 high_seq;
	__u32 watching; /* 1 from an RTO until snd_una reaches high_seq, 2 until STO_EV_RECOVERED */
	__u32 retrans_cb;
	__u32 after_rto; /* 1 from an RTO to the next callback */
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64); /* socket cookie */
	__type(value, struct sto_sock);
} sto_socks SEC(".maps");

/* The map's entry for the socket's remote port, else its local port. */
static __always_inline void *by_port(void *map, struct bpf_sock_ops *skops)
{
	__u32 port = bpf_ntohl(skops->remote_port);
	void *v = bpf_map_lookup_elem(map, &port);

	if (!v) {
		port = skops->local_port;
		v = bpf_map_lookup_elem(map, &port);
	}
	return v;
}

static __always_inline void count(__u32 which)
{
	__u64 *n = bpf_map_lookup_elem(&rto_counts, &which);

	if (n)
		__sync_fetch_and_add(n, 1);
}

static __always_inline void set_rto_min(struct bpf_sock_ops *skops)
{
	struct rto_setting *r = by_port(&rto_by_port, skops);
	int us;

	if (!r || r->min_us == 0)
		return;
	us = (int)r->min_us;
	count(bpf_setsockopt(skops, SOL_TCP, TCP_BPF_RTO_MIN, &us, sizeof(us)) == 0 ? RTO_MIN_SET
										    : RTO_MIN_REFUSED);
}

static __always_inline void sto_emit(struct bpf_sock_ops *skops, __u64 cookie, __u32 kind, __u32 arg0,
				     __u32 arg1)
{
	struct sto_event e = {};

	e.t_ns = bpf_ktime_get_ns();
	e.cookie = cookie;
	e.kind = kind;
	e.local_port = (__u16)skops->local_port;
	e.remote_port = (__u16)bpf_ntohl(skops->remote_port);
	e.snd_una = skops->snd_una;
	e.snd_nxt = skops->snd_nxt;
	e.snd_cwnd = skops->snd_cwnd;
	e.snd_ssthresh = skops->snd_ssthresh;
	e.arg0 = arg0;
	e.arg1 = arg1;
	e.state = skops->state;
	e.packets_out = skops->packets_out;
	if (bpf_ringbuf_output(&sto_log, &e, sizeof(e), 0) != 0)
		count(STO_EVENTS_LOST);
}

/* The timeout log's part of a callback (see the header). */
static __always_inline void sto_log_op(struct bpf_sock_ops *skops, __u32 op)
{
	__u64 cookie = bpf_get_socket_cookie(skops);
	struct sto_sock *st, fresh = {};
	__u32 ssthresh = skops->snd_ssthresh;

	if (op == BPF_SOCK_OPS_ACTIVE_ESTABLISHED_CB || op == BPF_SOCK_OPS_PASSIVE_ESTABLISHED_CB) {
		fresh.last_ssthresh = ssthresh;
		bpf_map_update_elem(&sto_socks, &cookie, &fresh, BPF_ANY);
		sto_emit(skops, cookie, STO_EV_ESTABLISHED, 0, 0);
		return;
	}
	st = bpf_map_lookup_elem(&sto_socks, &cookie);
	if (!st)
		return;
	if (op == BPF_SOCK_OPS_RTO_CB) {
		if (skops->state == BPF_TCP_SYN_SENT)
			return;
		sto_emit(skops, cookie, STO_EV_RTO, skops->args[0], skops->args[1]);
		st->high_seq = skops->snd_nxt;
		st->watching = 1;
		st->after_rto = 1;
		if (!st->retrans_cb) {
			st->retrans_cb = 1;
			bpf_sock_ops_cb_flags_set(skops,
						  skops->bpf_sock_ops_cb_flags | BPF_SOCK_OPS_RETRANS_CB_FLAG);
		}
		return;
	}
	if (ssthresh != st->last_ssthresh || st->after_rto) {
		sto_emit(skops, cookie, STO_EV_SSTHRESH, st->after_rto, 0);
		st->last_ssthresh = ssthresh;
		st->after_rto = 0;
	}
	if (st->watching == 2) {
		st->watching = 0;
		sto_emit(skops, cookie, STO_EV_RECOVERED, 0, 0);
	} else if (st->watching == 1 && (__s32)(skops->snd_una - st->high_seq) >= 0) {
		st->watching = 2;
	}
}

SEC("sockops")
int cclab_cwnd_clamp(struct bpf_sock_ops *skops)
{
	__u32 op = skops->op;
	__u32 *want, *have;
	struct rto_setting *r;
	__u64 cookie;
	int val;

	if (op == BPF_SOCK_OPS_TIMEOUT_INIT) {
		r = by_port(&rto_by_port, skops);
		if (r && r->initial_jiffies) {
			skops->reply = r->initial_jiffies;
			count(RTO_INITIAL_REPLIED);
		}
		return 1;
	}
	if (op == BPF_SOCK_OPS_TCP_CONNECT_CB) {
		set_rto_min(skops);
		return 1;
	}
	if (op == BPF_SOCK_OPS_ACTIVE_ESTABLISHED_CB || op == BPF_SOCK_OPS_PASSIVE_ESTABLISHED_CB ||
	    op == BPF_SOCK_OPS_RTT_CB || op == BPF_SOCK_OPS_RTO_CB || op == BPF_SOCK_OPS_RETRANS_CB)
		sto_log_op(skops, op);
	if (op != BPF_SOCK_OPS_ACTIVE_ESTABLISHED_CB && op != BPF_SOCK_OPS_PASSIVE_ESTABLISHED_CB &&
	    op != BPF_SOCK_OPS_RTT_CB)
		return 1;
	if (op != BPF_SOCK_OPS_RTT_CB) {
		set_rto_min(skops);
		bpf_sock_ops_cb_flags_set(skops, skops->bpf_sock_ops_cb_flags | BPF_SOCK_OPS_RTT_CB_FLAG |
							 BPF_SOCK_OPS_RTO_CB_FLAG);
	}

	want = by_port(&cwnd_clamp_by_port, skops);
	if (!want || *want == 0)
		return 1;
	cookie = bpf_get_socket_cookie(skops);
	have = bpf_map_lookup_elem(&cwnd_clamp_applied, &cookie);
	if (have && *have == *want)
		return 1;
	val = (int)*want;
	if (bpf_setsockopt(skops, SOL_TCP, TCP_BPF_SNDCWND_CLAMP, &val, sizeof(val)) == 0)
		bpf_map_update_elem(&cwnd_clamp_applied, &cookie, want, BPF_ANY);
	return 1;
}

char _license[] SEC("license") = "GPL";
