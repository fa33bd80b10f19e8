// SPDX-License-Identifier: GPL-2.0
//
// cclab_cubic_mw: the kernel's CUBIC with a per-socket window range [lower, upper], for the S1
// middleware on the real kernel (python/cclab/kernel/middleware.py; docs/design.md,
// "Middleware"). A struct_ops tcp_congestion_ops; CUBIC itself is the kernel's (tcp_cubic.c),
// called as kfuncs on its own private state, with Linux's constants.
//
// Why cong_control. A lower bound must hold where cwnd falls: in CWR and Recovery, cwnd is set
// by PRR (tcp_cwnd_reduction), which runs in tcp_cong_control() instead of cong_avoid, and no
// hook runs after it. An algorithm with its own cong_control replaces that whole step, so this
// one does, and runs what Linux 6.18 tcp_cong_control() would have run (PRR while reducing,
// else CUBIC's cong_avoid when tcp_may_raise_cwnd(), then tcp_update_pacing_rate()) before
// putting cwnd into the range. PRR is rewritten here because tcp_cwnd_reduction is no kfunc; its
// tp->prr_delivered (not writable from BPF) is kept in our private state, reset where
// tcp_init_cwnd_reduction() resets it (it calls ssthresh right after).
//
// Having a cong_control also changes what Linux does elsewhere (6.18):
//  - tcp_end_cwnd_reduction() returns at once: cwnd is not set to ssthresh when CWR or Recovery
//    ends. We do it in set_state, which the kernel calls on that very transition (CWR -> Open or
//    Disorder right after tcp_end_cwnd_reduction; Recovery -> Open in tcp_try_undo_recovery,
//    right before it; the condition `undo_marker` is the kernel's). CA_EVENT_COMPLETE_CWR is
//    not sent (CUBIC ignores it).
//  - tcp_cwnd_validate() skips tcp_cwnd_application_limited() and tcp_slow_start_after_idle_check()
//    skips tcp_cwnd_restart(): no cwnd decay while application-limited, no restart after idle
//    (a bulk upload is never either; the simulator models neither).
//  - snd_cwnd_stamp (not writable from BPF) is not refreshed; only the two skipped functions
//    read it.
//
// The range. `cclab_mw_bounds`, keyed by the socket cookie (what sock_diag reports as
// idiag_cookie; sock_diag assigns it), holds {lower_pkts, upper_pkts} written by the daemon.
// Without an entry the socket is plain CUBIC. With one, cwnd is put into [lo, hi], where
// hi = min(entry's upper (0: none), tp->snd_cwnd_clamp (the sock_ops clamp, cclab-cwnd-clamp,
// sets it)) and lo = min(entry's lower, hi): the upper bound wins if the two cross. It is applied
// wherever this program stores cwnd, and it stores cwnd
//  - at the end of every cong_control: every ACK that tcp_ack() processes past its early exits
//    (not an old ACK, something was in flight), after loss detection, undo and state changes:
//    PRR's result put in range (one store), or CUBIC's growth (the kfunc's own stores) then the
//    range;
//  - in set_state when CWR or Recovery ends (cwnd = ssthresh, in range; see above);
//  - in set_state(TCP_CA_Loss): tcp_enter_loss() has just set cwnd = packets_in_flight + 1 on an
//    RTO, and calls set_state after that, before the retransmission.
// Nowhere else: cwnd set by an undo (tcp_undo_cwnd_reduction) on an old or a DSACK-only ACK
// (those skip cong_control), and tcp_mtup_probe_success, stay as the kernel sets them until the
// next ACK. A reader that does not lock the socket (TCP_INFO from another thread, measured on
// 6.18) can see CUBIC's growth above a cap that is not snd_cwnd_clamp (cap "cc") for the few
// hundred ns before the range is stored; nothing is sent in between.

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

char _license[] SEC("license") = "GPL";

/* include/net/tcp.h */
#define TCP_INFINITE_SSTHRESH 0x7fffffff
#define TCP_CONG_NON_RESTRICTED 0x1
/* net/ipv4/tcp_input.c */
#define FLAG_DATA_ACKED 0x04
#define FLAG_SYN_ACKED 0x10
#define FLAG_DATA_SACKED 0x20
#define FLAG_SND_UNA_ADVANCED 0x400
#define FLAG_ACKED (FLAG_DATA_ACKED | FLAG_SYN_ACKED)
#define FLAG_FORWARD_PROGRESS (FLAG_ACKED | FLAG_DATA_SACKED)
#define USEC_PER_SEC 1000000ULL

extern void cubictcp_init(struct sock *sk) __ksym;
extern __u32 cubictcp_recalc_ssthresh(struct sock *sk) __ksym;
extern void cubictcp_cong_avoid(struct sock *sk, __u32 ack, __u32 acked) __ksym;
extern void cubictcp_state(struct sock *sk, __u8 new_state) __ksym;
extern void cubictcp_cwnd_event(struct sock *sk, enum tcp_ca_event event) __ksym;
extern void cubictcp_acked(struct sock *sk, const struct ack_sample *sample) __ksym;
extern __u32 tcp_reno_undo_cwnd(struct sock *sk) __ksym;

/* The range of one socket, written by the middleware daemon. */
struct cclab_mw_range {
	__u32 lower_pkts; /* cwnd floor, packets; 0: none */
	__u32 upper_pkts; /* cwnd cap, packets; 0: none (tp->snd_cwnd_clamp still applies) */
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u64); /* socket cookie */
	__type(value, struct cclab_mw_range);
} cclab_mw_bounds SEC(".maps");

/* icsk_ca_priv: the kernel's struct bictcp first (the kfuncs work on it), then ours. */
struct cclab_mw {
	struct bictcp k;
	__u32 prr_delivered; /* tcp_cwnd_reduction()'s tp->prr_delivered, packets */
};

static __always_inline struct cclab_mw *ca_of(struct sock *sk)
{
	return (struct cclab_mw *)((struct inet_connection_sock *)sk)->icsk_ca_priv;
}

static __always_inline __u8 ca_state(struct sock *sk)
{
	return BPF_CORE_READ_BITFIELD((struct inet_connection_sock *)sk, icsk_ca_state);
}

/* include/net/tcp.h tcp_packets_in_flight(). */
static __always_inline __u32 packets_in_flight(const struct tcp_sock *tp)
{
	return tp->packets_out - (tp->sacked_out + tp->lost_out) + tp->retrans_out;
}

/* `cwnd` put into the socket's range, if it has one. */
static __always_inline __u32 in_range(struct sock *sk, __u32 cwnd)
{
	struct tcp_sock *tp = (struct tcp_sock *)sk;
	struct cclab_mw_range *r;
	__u64 cookie;
	__u32 hi, lo;

	cookie = BPF_CORE_READ(sk, __sk_common.skc_cookie.counter);
	if (!cookie)
		return cwnd; /* never asked for by sock_diag: no range for it */
	r = bpf_map_lookup_elem(&cclab_mw_bounds, &cookie);
	if (!r)
		return cwnd;
	hi = tp->snd_cwnd_clamp;
	if (r->upper_pkts && r->upper_pkts < hi)
		hi = r->upper_pkts;
	lo = r->lower_pkts < hi ? r->lower_pkts : hi;
	if (cwnd < lo)
		return lo;
	return cwnd > hi ? hi : cwnd;
}

/* Store cwnd once, in range: a reader that does not lock the socket (TCP_INFO) never sees a
 * value outside it that this program wrote. */
static __always_inline void set_cwnd(struct sock *sk, __u32 cwnd)
{
	__u32 v = in_range(sk, cwnd);
	struct tcp_sock *tp = (struct tcp_sock *)sk;

	if (tp->snd_cwnd != v)
		tp->snd_cwnd = v;
}

/* net/ipv4/tcp_input.c tcp_cwnd_reduction() (PRR, RFC 6937), prr_delivered kept here; returns
 * the new cwnd (the current one when PRR does nothing). */
static __always_inline __u32 cwnd_reduction(struct sock *sk, int newly_acked_sacked, int newly_lost,
					    int flag)
{
	struct tcp_sock *tp = (struct tcp_sock *)sk;
	struct cclab_mw *ca = ca_of(sk);
	__u32 in_flight = packets_in_flight(tp);
	int delta = (int)tp->snd_ssthresh - (int)in_flight;
	int sndcnt = 0;

	if (newly_acked_sacked <= 0 || !tp->prior_cwnd)
		return tp->snd_cwnd;
	ca->prr_delivered += newly_acked_sacked;
	if (delta < 0) {
		__u64 dividend = (__u64)tp->snd_ssthresh * ca->prr_delivered + tp->prior_cwnd - 1;

		sndcnt = (int)(dividend / tp->prior_cwnd) - (int)tp->prr_out;
	} else {
		sndcnt = (int)ca->prr_delivered - (int)tp->prr_out;
		if (sndcnt < newly_acked_sacked)
			sndcnt = newly_acked_sacked;
		if ((flag & FLAG_SND_UNA_ADVANCED) && !newly_lost)
			sndcnt++;
		if (sndcnt > delta)
			sndcnt = delta;
	}
	/* Force a fast retransmit upon entering fast recovery. */
	if (sndcnt < (tp->prr_out ? 0 : 1))
		sndcnt = tp->prr_out ? 0 : 1;
	return in_flight + sndcnt;
}

/* net/ipv4/tcp_input.c tcp_may_raise_cwnd(). */
static __always_inline bool may_raise_cwnd(struct sock *sk, int flag)
{
	const struct tcp_sock *tp = (struct tcp_sock *)sk;
	int reordering = BPF_CORE_READ(sk, __sk_common.skc_net.net, ipv4.sysctl_tcp_reordering);

	if (tp->reordering > (__u32)reordering)
		return flag & FLAG_FORWARD_PROGRESS;
	return flag & FLAG_DATA_ACKED;
}

/* net/ipv4/tcp_input.c tcp_update_pacing_rate(). */
static __always_inline void update_pacing_rate(struct sock *sk)
{
	const struct tcp_sock *tp = (struct tcp_sock *)sk;
	__u64 rate = (__u64)tp->mss_cache * ((USEC_PER_SEC / 100) << 3);
	__u32 cwnd = tp->snd_cwnd;
	__u64 max_rate;
	int ratio;

	if (cwnd < tp->snd_ssthresh / 2)
		ratio = BPF_CORE_READ(sk, __sk_common.skc_net.net, ipv4.sysctl_tcp_pacing_ss_ratio);
	else
		ratio = BPF_CORE_READ(sk, __sk_common.skc_net.net, ipv4.sysctl_tcp_pacing_ca_ratio);
	rate *= ratio;
	rate *= cwnd > tp->packets_out ? cwnd : tp->packets_out;
	if (tp->srtt_us)
		rate /= tp->srtt_us;
	max_rate = sk->sk_max_pacing_rate;
	sk->sk_pacing_rate = rate < max_rate ? rate : max_rate;
}

SEC("struct_ops")
void BPF_PROG(cclab_mw_init, struct sock *sk)
{
	cubictcp_init(sk);
	ca_of(sk)->prr_delivered = 0;
}

/* Called by tcp_init_cwnd_reduction() right after it zeroes tp->prr_delivered (and by
 * tcp_enter_loss(), where PRR does not run). */
SEC("struct_ops")
__u32 BPF_PROG(cclab_mw_ssthresh, struct sock *sk)
{
	ca_of(sk)->prr_delivered = 0;
	return cubictcp_recalc_ssthresh(sk);
}

/* net/ipv4/tcp_input.c tcp_cong_control(), then the range. */
SEC("struct_ops")
void BPF_PROG(cclab_mw_cong_control, struct sock *sk, __u32 ack, int flag,
	      const struct rate_sample *rs)
{
	__u8 state = ca_state(sk);

	if ((1 << state) & ((1 << TCP_CA_CWR) | (1 << TCP_CA_Recovery))) {
		set_cwnd(sk, cwnd_reduction(sk, rs->acked_sacked, rs->losses, flag));
	} else {
		/* CUBIC grows cwnd itself (its own stores; with the clamp's cap they never exceed
		 * snd_cwnd_clamp), then the range. */
		if (may_raise_cwnd(sk, flag))
			cubictcp_cong_avoid(sk, ack, rs->acked_sacked);
		set_cwnd(sk, ((struct tcp_sock *)sk)->snd_cwnd);
	}
	update_pacing_rate(sk);
}

SEC("struct_ops")
void BPF_PROG(cclab_mw_set_state, struct sock *sk, __u8 new_state)
{
	struct tcp_sock *tp = (struct tcp_sock *)sk;
	__u8 old = ca_state(sk); /* tcp_set_ca_state() calls us before it stores new_state */

	/* tcp_end_cwnd_reduction(), which Linux skips for an algorithm with cong_control. */
	if ((new_state == TCP_CA_Open || new_state == TCP_CA_Disorder) &&
	    (old == TCP_CA_CWR || (old == TCP_CA_Recovery && tp->undo_marker)) &&
	    tp->snd_ssthresh < TCP_INFINITE_SSTHRESH)
		set_cwnd(sk, tp->snd_ssthresh);
	cubictcp_state(sk, new_state);
	if (new_state == TCP_CA_Loss)
		set_cwnd(sk, tp->snd_cwnd); /* after tcp_enter_loss() set cwnd = in_flight + 1 */
}

SEC("struct_ops")
void BPF_PROG(cclab_mw_cwnd_event, struct sock *sk, enum tcp_ca_event event)
{
	cubictcp_cwnd_event(sk, event);
}

SEC("struct_ops")
void BPF_PROG(cclab_mw_acked, struct sock *sk, const struct ack_sample *sample)
{
	cubictcp_acked(sk, sample);
}

SEC("struct_ops")
__u32 BPF_PROG(cclab_mw_undo_cwnd, struct sock *sk)
{
	return tcp_reno_undo_cwnd(sk);
}

/* The socket goes: forget its range. */
SEC("struct_ops")
void BPF_PROG(cclab_mw_release, struct sock *sk)
{
	__u64 cookie = BPF_CORE_READ(sk, __sk_common.skc_cookie.counter);

	if (cookie)
		bpf_map_delete_elem(&cclab_mw_bounds, &cookie);
}

/* NON_RESTRICTED: a namespace may make it its default (net.ipv4.tcp_congestion_control), so a
 * terminal's applications need not ask for it. */
SEC(".struct_ops")
struct tcp_congestion_ops cclab_cubic_mw = {
	.init = (void *)cclab_mw_init,
	.release = (void *)cclab_mw_release,
	.ssthresh = (void *)cclab_mw_ssthresh,
	.cong_control = (void *)cclab_mw_cong_control,
	.set_state = (void *)cclab_mw_set_state,
	.undo_cwnd = (void *)cclab_mw_undo_cwnd,
	.cwnd_event = (void *)cclab_mw_cwnd_event,
	.pkts_acked = (void *)cclab_mw_acked,
	.flags = TCP_CONG_NON_RESTRICTED,
	.name = "cclab_cubic_mw",
};
