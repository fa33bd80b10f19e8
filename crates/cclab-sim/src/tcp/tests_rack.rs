//! RACK against Linux 6.18 `net/ipv4/tcp_recovery.c`: the reordering window under D-SACKs
//! (`tcp_rack_update_reo_wnd`, `tcp_dsack_seen`), `tcp_rack_advance`, the reordering timer.
//! Fixtures in `tests_support.rs`.

use super::tests_support::*;
use crate::tcp::sender::XmitTimer;

/// Linux `tcp_dsack_seen` (6.18): a D-SACK counts for RACK's reordering window only when the
/// sender has retransmitted at least as many segments as were D-SACKed (`tp->dsack_dups <=
/// tp->total_retrans`, else the D-SACK is dubious and ignored) and reordering was seen
/// (`tp->reord_seen`). Here the network duplicated five segments: nothing was retransmitted and
/// nothing reordered, so reo_wnd stays 1 step (the review saw it reach 6 within 5 ms).
#[test]
fn dsacks_without_retransmission_or_reordering_leave_reo_wnd_alone() {
    let mut s = sender_with(true, u32::MAX);
    warm_up(&mut s);
    for k in 0..5u64 {
        // Each ACK acks one more segment and D-SACKs a duplicate of an acked one.
        on_ack(&mut s, (11 + k) * MS, ack(11 + k, &[(5 + k, 6 + k)], 11));
    }
    assert_eq!(s.rack.reo_wnd_steps, 1);
    assert!(!s.rack.dsack_seen);
    assert_eq!(s.stats.undo_count, 0);
}

/// Linux `tcp_rack_update_reo_wnd(sk, rs)` takes `rs->prior_delivered`, the delivered count when
/// the newest segment this ACK delivered was sent, so D-SACKs for segments of the round in which
/// reo_wnd last grew are disregarded: reo_wnd grows by at most one step per round trip. Here
/// three spurious retransmissions are D-SACKed one after another (each D-SACK followed by the
/// ACK of one new segment sent before the first step): one step, not three.
#[test]
fn reo_wnd_grows_at_most_once_per_round_trip() {
    let mut s = sender_with(true, u32::MAX);
    spurious_recovery(&mut s, true);
    on_ack(&mut s, 21 * MS, ack(14, &[(16, 30)], 11));
    on_ack(&mut s, 21 * MS, ack(30, &[], 11));
    assert_eq!(s.rack.reo_wnd_steps, 1);
    for k in 0..3u64 {
        // The retransmission of 13 + k arrives as a duplicate (TSval 21), then new segment 30 + k.
        on_ack(&mut s, 30 * MS, ack(30 + k, &[(13 + k, 14 + k)], 21));
        on_ack(&mut s, 30 * MS, ack(31 + k, &[], 21));
    }
    assert_eq!(s.rack.reo_wnd_steps, 2);
}

/// Linux 6.18 `tcp_rack_advance` updates RACK.rtt for every delivered segment that was not
/// retransmitted ambiguously recently, and RACK's newest send time only for one sent later.
#[test]
fn rack_rtt_follows_every_delivered_segment() {
    let mut s = sender_with(true, u32::MAX);
    warm_up(&mut s);
    on_ack(&mut s, 20 * MS, ack(10, &[(15, 16)], 11));
    assert_eq!(s.rack.rtt_us, 10_000);
    let newest = (s.rack.mstamp_us, s.rack.end_seq);
    // Segment 10 left with 15 but has a lower sequence: it was not sent after it.
    on_ack(&mut s, 25 * MS, ack(11, &[(15, 16)], 11));
    assert_eq!(s.rack.rtt_us, 15_000);
    assert_eq!((s.rack.mstamp_us, s.rack.end_seq), newest);
}

/// Linux 6.18 `tcp_rack_mark_lost` arms the reordering timer for the longest wait plus
/// `TCP_TIMEOUT_MIN_US` (2 ms), in jiffies rounded up: `usecs_to_jiffies(timeout + 2000)`, not
/// `usecs_to_jiffies(timeout) + TCP_TIMEOUT_MIN` (2 jiffies, 8 ms at HZ 250).
#[test]
fn reordering_timer_waits_two_milliseconds_more() {
    let mut s = Setup {
        hz: 250,
        ..Setup::default()
    }
    .sender();
    warm_up(&mut s);
    // Segment 11 SACKed at 20 ms: segment 10, sent just before it, has rack.rtt (10 ms) +
    // reo_wnd (min_rtt / 4 = 2.5 ms) from its send time, so 2.5 ms more.
    on_ack(&mut s, 20 * MS, ack(10, &[(11, 12)], 11));
    // 2.5 ms + 2 ms is 2 jiffies of 4 ms after jiffy 5 (20 ms).
    assert_eq!(s.xmit_timer, Some((XmitTimer::ReoTimeout, 28 * MS)));
}
