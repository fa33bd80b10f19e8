// SPDX-License-Identifier: GPL-2.0
//
// cclab's per-flow congestion-window cap on the real kernel: a sock_ops program attached to a
// cgroup v2 directory. For every TCP socket of the processes in that cgroup, it looks up the
// socket's remote port, then its local port, in `cwnd_clamp_by_port` and applies the value with
// bpf_setsockopt(SOL_TCP, TCP_BPF_SNDCWND_CLAMP).
//
// Linux 6.18, net/core/filter.c, bpf_sol_tcp_setsockopt(): TCP_BPF_SNDCWND_CLAMP sets
// tp->snd_cwnd_clamp = val AND tp->snd_ssthresh = val (val > 0). Because of the second part
// the clamp is applied only when it changes for a socket (`cwnd_clamp_applied`, keyed by the
// socket cookie), not on every ACK: re-applying would reset ssthresh after each loss.
//
// When: at connection establishment (active and passive), and then on every RTT sample
// (BPF_SOCK_OPS_RTT_CB, enabled per socket here; net/ipv4/tcp_input.c tcp_ack_update_rtt()
// -> tcp_bpf_rtt()), so a value changed by userspace during the connection is picked up on the
// next ACK. Nothing else about the socket is touched.

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

SEC("sockops")
int cclab_cwnd_clamp(struct bpf_sock_ops *skops)
{
	__u32 op = skops->op;
	__u32 port, *want, *have;
	__u64 cookie;
	int val;

	if (op != BPF_SOCK_OPS_ACTIVE_ESTABLISHED_CB && op != BPF_SOCK_OPS_PASSIVE_ESTABLISHED_CB &&
	    op != BPF_SOCK_OPS_RTT_CB)
		return 1;
	if (op != BPF_SOCK_OPS_RTT_CB)
		bpf_sock_ops_cb_flags_set(skops, skops->bpf_sock_ops_cb_flags | BPF_SOCK_OPS_RTT_CB_FLAG);

	port = bpf_ntohl(skops->remote_port);
	want = bpf_map_lookup_elem(&cwnd_clamp_by_port, &port);
	if (!want) {
		port = skops->local_port;
		want = bpf_map_lookup_elem(&cwnd_clamp_by_port, &port);
	}
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
