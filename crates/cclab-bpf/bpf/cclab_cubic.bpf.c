// SPDX-License-Identifier: GPL-2.0
//
// cclab_cubic: Linux CUBIC with its constants (C, beta, fast convergence, TCP friendliness)
// chosen per run, as a BPF congestion control (struct_ops tcp_congestion_ops) for the real
// kernel. Linux builds tcp_cubic in with C fixed (bic_scale is read-only), so the S0 paper's
// iOS-like CUBIC (C 0.25, beta 0.8) cannot run on it otherwise.
//
// Follows Linux 6.18 net/ipv4/tcp_cubic.c. The parts that do not depend on C or beta are the
// kernel's own, called as kfuncs on the same private state (struct bictcp, the first 60 bytes
// of icsk_ca_priv): cubictcp_init (bictcp_reset, HyStart reset, initial_ssthresh),
// cubictcp_state (reset on Loss), cubictcp_cwnd_event (epoch shift after idle) and
// cubictcp_acked (delay_min and HyStart, with the module's hystart* parameters). The parts that
// do, bictcp_update() (through cubictcp_cong_avoid) and cubictcp_recalc_ssthresh(), are
// written here with per-socket constants computed at init from the map `cclab_cubic_par`, as
// cubictcp_register() computes the kernel's globals:
//   beta_scale     = 8 * (1024 + beta) / 3 / (1024 - beta)
//   cube_rtt_scale = bic_scale * 10
//   cube_factor    = 2^(10 + 3 * BICTCP_HZ) / cube_rtt_scale

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

char _license[] SEC("license") = "GPL";

#define BICTCP_BETA_SCALE 1024
#define BICTCP_HZ 10
#define USEC_PER_SEC 1000000ULL

extern const unsigned int CONFIG_HZ __kconfig;

extern void cubictcp_init(struct sock *sk) __ksym;
extern void cubictcp_state(struct sock *sk, __u8 new_state) __ksym;
extern void cubictcp_cwnd_event(struct sock *sk, enum tcp_ca_event event) __ksym;
extern void cubictcp_acked(struct sock *sk, const struct ack_sample *sample) __ksym;
extern __u32 tcp_slow_start(struct tcp_sock *tp, __u32 acked) __ksym;
extern void tcp_cong_avoid_ai(struct tcp_sock *tp, __u32 w, __u32 acked) __ksym;
extern __u32 tcp_reno_undo_cwnd(struct sock *sk) __ksym;

/* What a run asks for; key 0. Zeros mean Linux's defaults. */
struct cclab_cubic_params {
	__u32 bic_scale;        /* C = bic_scale * 10 / 1024; Linux 41 */
	__u32 beta;             /* in 1/1024; Linux 717 */
	__u32 fast_convergence; /* 1 on, 2 off */
	__u32 tcp_friendliness; /* 1 on, 2 off */
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct cclab_cubic_params);
} cclab_cubic_par SEC(".maps");

/* icsk_ca_priv: the kernel's struct bictcp first (the kfuncs work on it), then ours. */
struct cclab_cubic {
	struct bictcp k;
	__u32 beta;
	__u32 beta_scale;
	__u32 cube_rtt_scale;
	__u32 fast_convergence;
	__u64 cube_factor;
	__u32 tcp_friendliness;
};

static inline struct cclab_cubic *ca_of(struct sock *sk)
{
	return (struct cclab_cubic *)((struct inet_connection_sock *)sk)->icsk_ca_priv;
}

/* cbrt(x) MSB values for x MSB values in [0..63] (tcp_cubic.c cubic_root's table). */
static const __u8 v[64] = {
	0,   54,  54,  54,  118, 118, 118, 118, 123, 129, 134, 138, 143, 147, 151, 156,
	157, 161, 164, 168, 170, 173, 176, 179, 181, 185, 187, 190, 192, 194, 197, 199,
	200, 202, 204, 206, 209, 211, 213, 215, 217, 219, 221, 222, 224, 225, 227, 229,
	231, 232, 234, 236, 237, 239, 240, 242, 244, 245, 246, 248, 250, 251, 252, 254,
};

/* include/asm-generic/bitops/fls64.h: fls64(), the 1-based index of the highest set bit. */
static __always_inline __u32 fls64(__u64 x)
{
	__u32 n = 0;

	if (!x)
		return 0;
	if (x >> 32) { n += 32; x >>= 32; }
	if (x >> 16) { n += 16; x >>= 16; }
	if (x >> 8)  { n += 8;  x >>= 8; }
	if (x >> 4)  { n += 4;  x >>= 4; }
	if (x >> 2)  { n += 2;  x >>= 2; }
	if (x >> 1)  { n += 1; }
	return n + 1;
}

/* tcp_cubic.c cubic_root(): table lookup, then one Newton-Raphson step. */
static __always_inline __u32 cubic_root(__u64 a)
{
	__u32 x, b, shift;

	b = fls64(a);
	if (b < 7)
		return ((__u32)v[(__u32)a & 63] + 35) >> 6;
	b = ((b * 84) >> 8) - 1;
	shift = (a >> (b * 3));
	x = ((__u32)(((__u32)v[shift & 63] + 10) << b)) >> 6;
	x = (2 * x + (__u32)(a / ((__u64)x * (__u64)(x - 1))));
	x = ((x * 341) >> 10);
	return x;
}

/* include/linux/jiffies.h usecs_to_jiffies(), rounding up. */
static __always_inline __u64 usecs_to_jiffies(__u32 us)
{
	return ((__u64)us * CONFIG_HZ + USEC_PER_SEC - 1) / USEC_PER_SEC;
}

/* include/net/tcp.h tcp_is_cwnd_limited(). */
static __always_inline bool is_cwnd_limited(const struct tcp_sock *tp)
{
	if (tp->snd_cwnd < tp->snd_ssthresh) /* tcp_in_slow_start */
		return tp->snd_cwnd < 2 * tp->max_packets_out;
	return BPF_CORE_READ_BITFIELD(tp, is_cwnd_limited);
}

SEC("struct_ops")
void BPF_PROG(cclab_cubic_init, struct sock *sk)
{
	struct cclab_cubic *ca = ca_of(sk);
	struct cclab_cubic_params *p;
	__u32 key = 0, bic_scale = 41, beta = 717;

	cubictcp_init(sk);
	ca->fast_convergence = 1;
	ca->tcp_friendliness = 1;
	p = bpf_map_lookup_elem(&cclab_cubic_par, &key);
	if (p) {
		if (p->bic_scale)
			bic_scale = p->bic_scale;
		if (p->beta && p->beta < BICTCP_BETA_SCALE)
			beta = p->beta;
		if (p->fast_convergence == 2)
			ca->fast_convergence = 0;
		if (p->tcp_friendliness == 2)
			ca->tcp_friendliness = 0;
	}
	ca->beta = beta;
	ca->beta_scale = 8 * (BICTCP_BETA_SCALE + beta) / 3 / (BICTCP_BETA_SCALE - beta);
	ca->cube_rtt_scale = bic_scale * 10;
	ca->cube_factor = (1ULL << (10 + 3 * BICTCP_HZ)) / ca->cube_rtt_scale;
}

/* tcp_cubic.c bictcp_update(), with this socket's constants. */
static __always_inline void bictcp_update(struct cclab_cubic *ca, __u32 cwnd, __u32 acked)
{
	struct bictcp *k = &ca->k;
	__u32 delta, bic_target, max_cnt, now;
	__u64 offs, t;

	k->ack_cnt += acked;
	now = (__u32)bpf_jiffies64();

	if (k->last_cwnd == cwnd && (__s32)(now - k->last_time) <= (__s32)(CONFIG_HZ / 32))
		return;

	if (k->epoch_start && now == k->last_time)
		goto tcp_friendliness;

	k->last_cwnd = cwnd;
	k->last_time = now;

	if (k->epoch_start == 0) {
		k->epoch_start = now;
		k->ack_cnt = acked;
		k->tcp_cwnd = cwnd;
		if (k->last_max_cwnd <= cwnd) {
			k->bic_K = 0;
			k->bic_origin_point = cwnd;
		} else {
			k->bic_K = cubic_root(ca->cube_factor * (k->last_max_cwnd - cwnd));
			k->bic_origin_point = k->last_max_cwnd;
		}
	}

	t = (__s32)(now - k->epoch_start);
	t += usecs_to_jiffies(k->delay_min);
	t <<= BICTCP_HZ;
	t /= CONFIG_HZ;

	if (t < k->bic_K)
		offs = k->bic_K - t;
	else
		offs = t - k->bic_K;

	delta = (ca->cube_rtt_scale * offs * offs * offs) >> (10 + 3 * BICTCP_HZ);
	if (t < k->bic_K)
		bic_target = k->bic_origin_point - delta;
	else
		bic_target = k->bic_origin_point + delta;

	if (bic_target > cwnd)
		k->cnt = cwnd / (bic_target - cwnd);
	else
		k->cnt = 100 * cwnd;

	if (k->last_max_cwnd == 0 && k->cnt > 20)
		k->cnt = 20;

tcp_friendliness:
	if (ca->tcp_friendliness) {
		__u32 scale = ca->beta_scale;
		__u32 n;

		delta = (cwnd * scale) >> 3;
		if (delta == 0)
			delta = 1; /* the kernel's while loop would not end; same divergence as cclab-sim */
		if (k->ack_cnt > delta) {
			n = (k->ack_cnt - 1) / delta;
			k->ack_cnt -= n * delta;
			k->tcp_cwnd += n;
		}
		if (k->tcp_cwnd > cwnd) {
			delta = k->tcp_cwnd - cwnd;
			max_cnt = cwnd / delta;
			if (k->cnt > max_cnt)
				k->cnt = max_cnt;
		}
	}
	if (k->cnt < 2)
		k->cnt = 2;
}

SEC("struct_ops")
void BPF_PROG(cclab_cubic_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	struct tcp_sock *tp = (struct tcp_sock *)sk;
	struct cclab_cubic *ca = ca_of(sk);

	if (!is_cwnd_limited(tp))
		return;
	if (tp->snd_cwnd < tp->snd_ssthresh) {
		acked = tcp_slow_start(tp, acked);
		if (!acked)
			return;
	}
	bictcp_update(ca, tp->snd_cwnd, acked);
	tcp_cong_avoid_ai(tp, ca->k.cnt, acked);
}

SEC("struct_ops")
__u32 BPF_PROG(cclab_cubic_recalc_ssthresh, struct sock *sk)
{
	const struct tcp_sock *tp = (struct tcp_sock *)sk;
	struct cclab_cubic *ca = ca_of(sk);
	__u32 cwnd = tp->snd_cwnd, w;

	ca->k.epoch_start = 0;
	if (cwnd < ca->k.last_max_cwnd && ca->fast_convergence)
		ca->k.last_max_cwnd = (cwnd * (BICTCP_BETA_SCALE + ca->beta)) / (2 * BICTCP_BETA_SCALE);
	else
		ca->k.last_max_cwnd = cwnd;
	w = (cwnd * ca->beta) / BICTCP_BETA_SCALE;
	return w > 2 ? w : 2;
}

SEC("struct_ops")
void BPF_PROG(cclab_cubic_state, struct sock *sk, __u8 new_state)
{
	cubictcp_state(sk, new_state);
}

SEC("struct_ops")
void BPF_PROG(cclab_cubic_cwnd_event, struct sock *sk, enum tcp_ca_event event)
{
	cubictcp_cwnd_event(sk, event);
}

SEC("struct_ops")
void BPF_PROG(cclab_cubic_acked, struct sock *sk, const struct ack_sample *sample)
{
	cubictcp_acked(sk, sample);
}

SEC("struct_ops")
__u32 BPF_PROG(cclab_cubic_undo_cwnd, struct sock *sk)
{
	return tcp_reno_undo_cwnd(sk);
}

SEC(".struct_ops")
struct tcp_congestion_ops cclab_cubic = {
	.init = (void *)cclab_cubic_init,
	.ssthresh = (void *)cclab_cubic_recalc_ssthresh,
	.cong_avoid = (void *)cclab_cubic_cong_avoid,
	.set_state = (void *)cclab_cubic_state,
	.undo_cwnd = (void *)cclab_cubic_undo_cwnd,
	.cwnd_event = (void *)cclab_cubic_cwnd_event,
	.pkts_acked = (void *)cclab_cubic_acked,
	.name = "cclab_cubic",
};
