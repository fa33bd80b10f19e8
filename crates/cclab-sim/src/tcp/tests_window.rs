//! What sets cwnd besides the algorithm: per-ACK counting (`flows[].ack_counting`, Linux before
//! 3.18) and a window range set from outside (the S1 middleware), applied where the kernel
//! wrapper `cclab_cubic_mw` stores cwnd. Fixtures in `tests_support.rs`.

use super::tests_support::*;
use crate::cc::CaState;
use crate::tcp::sender::AckCounting;

/// A stretch ACK for two segments grows a slow-starting cwnd by two in 6.18 (`tcp_slow_start`
/// takes `acked`) and by one per ACK in Linux 3.4.
#[test]
fn per_ack_counting_grows_one_step_per_ack() {
    for (counting, want) in [(AckCounting::Segments, 20), (AckCounting::Acks, 15)] {
        let mut s = Setup {
            ack_counting: counting,
            ..Setup::default()
        }
        .sender();
        let mut out = Vec::new();
        s.on_start(0, &mut out);
        // Ten segments, acked two at a time (delayed ACKs): five ACKs.
        for k in 1..=5 {
            on_ack(&mut s, 10 * MS, ack(2 * k, &[], 1));
        }
        assert_eq!(s.tp.snd_cwnd, want, "{counting:?}");
    }
}

#[test]
fn a_window_range_holds_on_ack_at_the_end_of_recovery_and_after_a_timeout() {
    // No timestamps, so that the recovery below is not undone (Eifel) and ends at ssthresh.
    let mut s = sender_with(false, u32::MAX);
    warm_up(&mut s);
    // Upper bound 15 below cwnd 20: taken on the next ACK; the flow's clamp is untouched.
    s.set_cwnd_range(Some((12, 15)));
    assert_eq!(s.tp.snd_cwnd_clamp, u32::MAX);
    assert_eq!(s.tp.snd_cwnd, 20, "not before the next ACK");
    on_ack(&mut s, 20 * MS, ack(11, &[], 0));
    assert_eq!(s.tp.snd_cwnd, 15);
    // A loss: recovery ends with cwnd = ssthresh (Reno: half of 15), put into the range.
    on_ack(&mut s, 21 * MS, ack(11, &[(12, 16)], 0));
    assert_eq!(s.tp.ca_state, CaState::Recovery);
    assert!(
        s.tp.snd_cwnd >= 12,
        "PRR stays above the floor: {}",
        s.tp.snd_cwnd
    );
    on_ack(&mut s, 30 * MS, ack(30, &[], 0));
    assert_eq!(s.tp.ca_state, CaState::Open);
    // tcp_fastretrans_alert ends recovery (cwnd = ssthresh 7, put to 12) before this ACK's
    // tcp_cong_control, whose Reno step (19 segments acked >= cwnd) adds one.
    assert_eq!(s.tp.snd_cwnd, 13);
    // A timeout sets cwnd to in flight + 1; the floor holds.
    let mut out = Vec::new();
    let rto_at = s.timer_deadline_ns().unwrap();
    s.on_timer(rto_at, &mut out);
    assert_eq!(s.tp.ca_state, CaState::Loss);
    assert_eq!(s.tp.snd_cwnd, 12, "in flight + 1 is below the floor");
    s.set_cwnd_range(None);
    assert_eq!(s.tp.snd_cwnd_clamp, u32::MAX);
}

#[test]
fn the_upper_bound_wins_when_the_two_cross_and_the_flow_cap_caps_both() {
    let mut s = sender_with(true, u32::MAX);
    warm_up(&mut s);
    s.set_cwnd_range(Some((30, 25)));
    on_ack(&mut s, 20 * MS, ack(11, &[], 11));
    assert_eq!(s.tp.snd_cwnd, 25);
    // The flow's own cap still caps the range.
    let mut s = sender_with(true, 18);
    s.set_cwnd_range(Some((30, 40)));
    let mut out = Vec::new();
    s.on_start(0, &mut out);
    on_ack(&mut s, 10 * MS, ack(10, &[], 1));
    assert_eq!(s.tp.snd_cwnd, 18);
}
