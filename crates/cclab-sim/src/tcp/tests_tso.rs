//! `tcp_tso_should_defer` (Linux 6.18 net/ipv4/tcp_output.c), the host's `tso_defer`: a sender
//! whose cwnd leaves room for less than a full skb waits for the next ACK when the last write
//! was within 1 ms and the ACK of the retransmission queue's head is due within 1 ms. Fixtures
//! in `tests_support.rs` (MSS 1000 bytes, 10 ms RTT: `tcp_tso_autosize` gives 4 segments in
//! slow start at cwnd 21-24, 200 % of cwnd x mss / srtt >> 10).

use super::tests_support::*;
use crate::cc::CaState;

fn sender(tso_defer: bool) -> crate::tcp::sender::Sender {
    let mut s = Setup {
        tso_defer,
        ..Setup::default()
    }
    .sender();
    warm_up(&mut s);
    // Segment 10 acked at 20 ms, 10 ms after it left (the last write, 10 ms ago: no deferral).
    let out = on_ack(&mut s, 20 * MS, ack(11, &[], 11));
    assert_eq!(out.len(), 2, "cwnd 21, 19 in flight");
    s
}

#[test]
fn room_for_less_than_a_full_skb_waits_for_the_next_ack() {
    // 0.3 ms after the last write, segment 11's ACK (due now: it left at 10 ms, srtt 10 ms)
    // leaves room for 2 segments: Linux holds them; without deferral they go at once.
    let mut s = sender(false);
    assert_eq!(on_ack(&mut s, 20 * MS + 300_000, ack(12, &[], 11)).len(), 2);
    let mut s = sender(true);
    assert_eq!(on_ack(&mut s, 20 * MS + 300_000, ack(12, &[], 11)).len(), 0);
    assert!(
        s.tp.is_cwnd_limited,
        "deferring for cwnd counts as cwnd-limited"
    );
    // The next ACK makes room for 6: a full skb of 4 leaves, the 2 left over wait again.
    let out = on_ack(&mut s, 20 * MS + 600_000, ack(14, &[], 11));
    assert_eq!(out.len(), 4);
    assert_eq!(s.tp.snd_cwnd - s.tp.packets_in_flight(), 2);
}

#[test]
fn no_deferral_after_a_quiet_millisecond_or_in_recovery() {
    // The last write 1.5 ms ago: send what fits.
    let mut s = sender(true);
    assert_eq!(on_ack(&mut s, 21 * MS + 500_000, ack(12, &[], 11)).len(), 2);
    // In recovery (segment 12 lost, 13-15 SACKed): never deferred.
    let mut s = sender(true);
    let out = on_ack(&mut s, 20 * MS + 300_000, ack(12, &[(13, 16)], 11));
    assert_eq!(s.tp.ca_state, CaState::Recovery);
    assert!(!out.is_empty(), "recovery sends at once");
}
