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
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 3);
	__type(key, __u32);
	__type(value, __u64);
} rto_counts SEC(".maps");

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
	if (op != BPF_SOCK_OPS_ACTIVE_ESTABLISHED_CB && op != BPF_SOCK_OPS_PASSIVE_ESTABLISHED_CB &&
	    op != BPF_SOCK_OPS_RTT_CB)
		return 1;
	if (op != BPF_SOCK_OPS_RTT_CB) {
		set_rto_min(skops);
		bpf_sock_ops_cb_flags_set(skops, skops->bpf_sock_ops_cb_flags | BPF_SOCK_OPS_RTT_CB_FLAG);
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
