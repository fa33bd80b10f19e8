//! The SACK scoreboard against Linux 6.18 (`tcp_sacktag_write_queue` and what it calls,
//! `tcp_check_sack_reordering`, `tcp_ack`'s old-ACK and nothing-outstanding paths): the
//! reordering metric and where it is measured, D-SACK accounting. Fixtures in
//! `tests_support.rs`.

use super::tests_support::*;
use crate::cc::CaState;

/// Linux `tcp_check_sack_reordering`: the distance is `DIV_ROUND_UP(fack - low_seq, mss)` with
/// fack the highest SACKed sequence after this ACK's SACKs, and `tp->reordering` grows only when
/// the distance exceeds it.
#[test]
fn sack_reordering_metric_is_the_sequence_distance() {
    let mut s = sender_with(true, u32::MAX);
    warm_up(&mut s);
    on_ack(&mut s, 12 * MS, ack(10, &[(13, 14)], 11));
    assert_eq!(s.reord_seen, 0);
    // Segment 11 arrives after 13: displaced by 3 segments (fack 14 - 11), not more than 3.
    on_ack(&mut s, 12 * MS, ack(10, &[(11, 14)], 11));
    assert_eq!(s.reord_seen, 1);
    assert_eq!(
        s.reordering, 3,
        "a distance of 3 does not exceed reordering 3"
    );

    let mut s = sender_with(true, u32::MAX);
    warm_up(&mut s);
    on_ack(&mut s, 12 * MS, ack(10, &[(15, 16)], 11));
    // Segment 11 after 15: fack 16, distance 5.
    on_ack(&mut s, 12 * MS, ack(10, &[(11, 12), (15, 16)], 11));
    assert_eq!(s.reord_seen, 1);
    assert_eq!(s.reordering, 5);
}

/// Linux `tcp_sacktag_write_queue` walks the SACK blocks in sequence order. An ACK listing a
/// new block [15, 16) before the older block [12, 14), now grown by 13, is not reordering: 13
/// was sent and delivered before 15.
#[test]
fn sack_blocks_are_walked_in_sequence_order() {
    let mut s = sender_with(true, u32::MAX);
    warm_up(&mut s);
    on_ack(&mut s, 12 * MS, ack(10, &[(12, 13)], 11));
    on_ack(&mut s, 12 * MS, ack(10, &[(15, 16), (12, 14)], 11));
    assert_eq!(s.tp.sacked_out, 3);
    assert_eq!((s.reord_seen, s.reordering), (0, 3));
}

/// Linux `tcp_clean_rtx_queue`: a cumulative ACK that fills a hole below prior_fack with
/// never-retransmitted data is reordering (`tcp_check_sack_reordering(sk, reord, 0)`); with
/// nothing SACKed any more fack is snd_una (16), so the distance from segment 10 is 6.
#[test]
fn cumulative_ack_filling_an_original_hole_is_reordering() {
    let mut s = sender_with(true, u32::MAX);
    warm_up(&mut s);
    on_ack(&mut s, 12 * MS, ack(10, &[(15, 16)], 11));
    assert_eq!(s.reord_seen, 0);
    on_ack(&mut s, 12 * MS, ack(16, &[], 11));
    assert_eq!(s.reord_seen, 1);
    assert_eq!(s.reordering, 6);
}

/// Linux `tcp_sacktag_one`: a D-SACK for a retransmitted segment that is already SACKed means
/// the original got there after all, which is reordering too ("D-SACK arrives for retransmitted
/// and already SACKed segment -> reordering"): here segment 15 (fack 30).
#[test]
fn dsack_of_a_sacked_retransmission_is_reordering() {
    let mut s = sender_with(true, u32::MAX);
    spurious_recovery(&mut s, true);
    // The original of 15 arrives (SACKed), then its retransmission (an out-of-order D-SACK).
    on_ack(&mut s, 21 * MS, ack(13, &[(15, 30)], 11));
    assert_eq!(
        s.reord_seen, 0,
        "a retransmitted segment's SACK proves nothing"
    );
    on_ack(&mut s, 30 * MS, ack(13, &[(15, 16), (15, 30)], 11));
    assert_eq!(s.reord_seen, 1);
    assert_eq!(s.reordering, 15);
}

/// Linux `tcp_try_undo_partial`: the hole was filled by the delayed original, not by the
/// retransmission (timestamps prove it), so it is reordering: `tcp_check_sack_reordering(sk,
/// prior_snd_una, 1)` with fack the highest SACKed sequence (30) gives a distance of 17.
#[test]
fn partial_undo_counts_the_reordering() {
    let mut s = sender_with(true, u32::MAX);
    spurious_recovery(&mut s, true);
    assert_eq!((s.reordering, s.reord_seen), (3, 0));
    on_ack(&mut s, 21 * MS, ack(14, &[(16, 30)], 11));
    assert_eq!(s.reord_seen, 1);
    assert_eq!(s.reordering, 17);
}

/// Linux `tcp_sacktag_write_queue` walks a D-SACK block that lies between prior_snd_una and the
/// new cumulative ACK (`tcp_is_sackblock_valid` accepts a D-SACK below snd_una down to
/// undo_marker; those segments are freed only later, by `tcp_clean_rtx_queue`), so
/// `tcp_sacktag_one` takes it off undo_retrans. Here the ACK of the delayed originals of 13-15
/// was lost; the next one acks 30 and D-SACKs the retransmission of 13. With the D-SACKs of 14
/// and 15 every retransmission is accounted for: D-SACK undo.
#[test]
fn dsack_covered_by_the_cumulative_ack_counts_for_undo() {
    let mut s = sender_with(false, u32::MAX);
    spurious_recovery(&mut s, false);
    on_ack(&mut s, 21 * MS, ack(30, &[(13, 14)], 0));
    assert_eq!(s.undo_retrans, 2);
    assert_eq!(
        s.tp.ca_state,
        CaState::Open,
        "recovery over, nothing undone yet"
    );
    on_ack(&mut s, 30 * MS, ack(30, &[(14, 15)], 0));
    on_ack(&mut s, 30 * MS, ack(30, &[(15, 16)], 0));
    assert_eq!(undo_details(&s), ["detector=dsack via=dsack state=Open"]);
}

/// Linux 6.18 `tcp_dsack_seen`: "A spurious retransmission is delivered": the segments a D-SACK
/// reports duplicated count in `sack_delivered`, so in tp->delivered (`tcp_count_delivered`).
#[test]
fn dsacked_segments_count_as_delivered() {
    let mut s = sender_with(false, u32::MAX);
    spurious_recovery(&mut s, false);
    on_ack(&mut s, 21 * MS, ack(30, &[], 0));
    let delivered = s.tp.delivered;
    on_ack(&mut s, 30 * MS, ack(30, &[(13, 14)], 0));
    assert_eq!(s.tp.delivered, delivered + 1);
}

/// Linux `tcp_ack`'s old_ack path: an ACK below snd_una (overtaken on the way back) that carries
/// a D-SACK is tagged and goes through `tcp_fastretrans_alert`, which can undo at once.
#[test]
fn an_old_ack_with_a_dsack_can_undo() {
    let mut s = sender_with(false, u32::MAX);
    spurious_recovery(&mut s, false);
    on_ack(&mut s, 21 * MS, ack(30, &[], 0));
    on_ack(&mut s, 30 * MS, ack(30, &[(14, 15)], 0));
    on_ack(&mut s, 30 * MS, ack(30, &[(15, 16)], 0));
    assert!(undo_details(&s).is_empty());
    // The D-SACK of 13, on an ACK the two above overtook.
    on_ack(&mut s, 30 * MS, ack(14, &[(13, 14)], 0));
    assert_eq!(undo_details(&s), ["detector=dsack via=dsack state=Open"]);
}

/// Linux `tcp_ack`'s no_queue path: with nothing outstanding, an ACK that D-SACKs still goes
/// through `tcp_fastretrans_alert` ("If data was DSACKed, see if we can undo a cwnd
/// reduction"). Here the transfer ends at segment 30.
#[test]
fn a_dsack_with_nothing_outstanding_can_undo() {
    let mut s = Setup {
        timestamps: false,
        size_segs: 30,
        ..Setup::default()
    }
    .sender();
    spurious_recovery(&mut s, false);
    on_ack(&mut s, 21 * MS, ack(30, &[], 0));
    assert_eq!(s.tp.packets_out, 0);
    for k in 13..16 {
        on_ack(&mut s, 30 * MS, ack(30, &[(k, k + 1)], 0));
    }
    assert_eq!(undo_details(&s), ["detector=dsack via=dsack state=Open"]);
}
