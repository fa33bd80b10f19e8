//! Loss recovery and undo against Linux 6.18 (`net/ipv4/tcp_input.c`): the undo detectors and
//! their counters, F-RTO, the state machine's details, the initial window. Fixtures in
//! `tests_support.rs`.

use super::tests_support::*;
use crate::cc::CaState;
use crate::tcp::ecn::EcnMode;

/// Linux `tcp_process_loss` counts `LINUX_MIB_TCPSPURIOUSRTOS` only for an F-RTO undo
/// (`tcp_try_undo_loss(sk, true)`); F-RTO (RFC 5682 sec 3.1, SACK-enhanced) proves the timeout
/// spurious when data never retransmitted is acked after new data went out.
#[test]
fn frto_undo_is_a_spurious_rto() {
    let mut s = sender_with(false, u32::MAX);
    warm_up(&mut s);
    let mut out = Vec::new();
    let rto_at = s.timer_deadline_ns().unwrap();
    s.on_timer(rto_at, &mut out);
    assert_eq!(s.tp.ca_state, CaState::Loss);
    assert!(out[0].retrans && out[0].seq == 10 * MSS as u64);
    // The head's original arrives (step 2b: new data goes out), then more originals.
    let out = on_ack(&mut s, rto_at + 10 * MS, ack(11, &[], 0));
    assert!(out.iter().any(|d| !d.retrans), "F-RTO sends new data");
    on_ack(&mut s, rto_at + 10 * MS, ack(13, &[], 0));
    // RACK, re-run after the undo, does not mark 13-29 lost although they were sent before
    // the acked retransmission of 10: 6.18's tcp_rack_advance took RACK.rtt from originals 11
    // and 12, sent with them. (The 4.x form kept the retransmission's 10 ms and marked them.)
    assert_eq!((s.tp.ca_state, s.tp.lost_out), (CaState::Open, 0));
    assert_eq!((s.stats.spurious_rto_count, s.stats.undo_count), (1, 1));
    assert_eq!(undo_details(&s), ["detector=frto via=loss state=Loss"]);
}

/// A timeout undone by the timestamp check (`tcp_try_undo_loss(sk, false)` through
/// `tcp_packet_delayed`) is `LINUX_MIB_TCPLOSSUNDO` only: not a TCPSpuriousRTOs.
#[test]
fn eifel_undo_of_a_timeout_is_not_counted_as_frto() {
    let mut s = sender_with(true, u32::MAX);
    warm_up(&mut s);
    let mut out = Vec::new();
    let rto_at = s.timer_deadline_ns().unwrap();
    s.on_timer(rto_at, &mut out);
    assert_eq!(s.tp.ca_state, CaState::Loss);
    // The ACK echoes the original's TSval 11, older than the retransmission's.
    on_ack(&mut s, rto_at + MS, ack(11, &[], 11));
    assert_eq!(s.tp.ca_state, CaState::Open);
    assert_eq!((s.stats.spurious_rto_count, s.stats.undo_count), (0, 1));
    assert_eq!(undo_details(&s), ["detector=eifel via=loss state=Loss"]);
}

/// `tcp_try_undo_partial` and `tcp_try_undo_recovery` by timestamps name the Eifel check; an
/// undo at the end of recovery because every retransmission was D-SACKed (`undo_retrans` 0 in
/// `tcp_may_undo`) names D-SACK, as `tcp_try_undo_dsack` does.
#[test]
fn recovery_undos_name_their_detector() {
    let mut s = sender_with(true, u32::MAX);
    spurious_recovery(&mut s, true);
    on_ack(&mut s, 21 * MS, ack(14, &[(16, 30)], 11));
    on_ack(&mut s, 21 * MS, ack(30, &[], 11));
    assert_eq!(s.tp.ca_state, CaState::Open);
    assert_eq!(
        undo_details(&s),
        ["detector=eifel via=recovery state=Recovery"]
    );
    assert_eq!((s.stats.spurious_rto_count, s.stats.undo_count), (0, 1));

    // Without timestamps: the last ACK of the recovery also D-SACKs the last retransmission.
    let mut s = sender_with(false, u32::MAX);
    spurious_recovery(&mut s, false);
    on_ack(&mut s, 21 * MS, ack(30, &[], 0));
    assert_eq!(s.tp.ca_state, CaState::Open, "no undo yet");
    assert!(undo_details(&s).is_empty());
    on_ack(&mut s, 30 * MS, ack(30, &[(13, 14)], 0));
    on_ack(&mut s, 30 * MS, ack(30, &[(14, 15)], 0));
    on_ack(&mut s, 30 * MS, ack(30, &[(15, 16)], 0));
    assert_eq!(undo_details(&s), ["detector=dsack via=dsack state=Open"]);
}

/// A timeout whose retransmission is D-SACKed: `tcp_process_loss` tries `tcp_try_undo_loss(sk,
/// false)` before F-RTO, and `tcp_may_undo` passes because `undo_retrans` is 0 (D-SACK), not by
/// the timestamps (there are none): `LINUX_MIB_TCPLOSSUNDO`, not TCPSpuriousRTOs.
#[test]
fn dsack_undo_of_a_timeout_names_dsack() {
    let mut s = sender_with(false, u32::MAX);
    warm_up(&mut s);
    let mut out = Vec::new();
    let rto_at = s.timer_deadline_ns().unwrap();
    s.on_timer(rto_at, &mut out);
    // The original of 10 arrives (F-RTO sends new data), then its retransmission: D-SACK.
    on_ack(&mut s, rto_at + 10 * MS, ack(11, &[], 0));
    assert_eq!(s.tp.ca_state, CaState::Loss);
    on_ack(&mut s, rto_at + 10 * MS, ack(13, &[(10, 11)], 0));
    assert_ne!(s.tp.ca_state, CaState::Loss);
    assert_eq!((s.stats.spurious_rto_count, s.stats.undo_count), (0, 1));
    assert_eq!(undo_details(&s), ["detector=dsack via=loss state=Loss"]);
}

/// Linux `tcp_init_transfer`: cwnd = `tcp_init_cwnd()` = min(initial window, snd_cwnd_clamp).
#[test]
fn initial_window_respects_the_cwnd_clamp() {
    let mut s = sender_with(true, 4);
    let mut out = Vec::new();
    s.on_start(0, &mut out);
    assert_eq!(s.tp.snd_cwnd, 4);
    assert_eq!(out.len(), 4);
}

/// Linux `tcp_try_undo_loss` holds a flow without SACK in Loss when the undo comes with snd_una
/// exactly at high_seq (`tcp_is_non_sack_preventing_reopen`, RFC 6582: wait for an ACK above
/// high_seq), as `tcp_try_undo_recovery` does.
#[test]
fn undo_of_a_timeout_without_sack_waits_for_an_ack_above_high_seq() {
    let mut s = Setup {
        timestamps: false,
        sack: false,
        ..Setup::default()
    }
    .sender();
    warm_up(&mut s);
    let (rto_at, out) = fire_rto(&mut s);
    assert!(out[0].retrans && out[0].seq == 10 * MSS as u64);
    // The original of 10 arrives: F-RTO moves high_seq to snd_nxt (30) and sends new data.
    let out = on_ack(&mut s, rto_at + 10 * MS, ack(11, &[], 0));
    let new: Vec<u64> = out.iter().map(|d| d.seq / MSS as u64).collect();
    assert_eq!(new, [30, 31]);
    // Originals 11-29 acked, up to high_seq exactly: F-RTO proves the timeout spurious.
    on_ack(&mut s, rto_at + 20 * MS, ack(30, &[], 0));
    assert_eq!(undo_details(&s), ["detector=frto via=loss state=Loss"]);
    assert_eq!(
        s.tp.ca_state,
        CaState::Loss,
        "held until an ACK above high_seq"
    );
    // Above it (new data, beyond high_seq, so no second F-RTO proof): tcp_process_loss ends
    // the episode through tcp_try_undo_recovery, which opens.
    on_ack(&mut s, rto_at + 30 * MS, ack(31, &[], 0));
    assert_eq!(s.tp.ca_state, CaState::Open);
    assert_eq!((s.stats.spurious_rto_count, s.stats.undo_count), (1, 1));
}

/// Linux `tcp_clean_rtx_queue`: without SACK, an ACK that also covers a retransmitted segment
/// cannot show that the originals got through, so it does not set FLAG_ORIG_SACK_ACKED and
/// F-RTO (step 3b) does not undo on it; it sends new data (step 2b) and undoes on the next ACK.
#[test]
fn without_sack_an_ack_covering_the_retransmission_proves_nothing() {
    let mut s = Setup {
        timestamps: false,
        sack: false,
        ..Setup::default()
    }
    .sender();
    warm_up(&mut s);
    let (rto_at, _) = fire_rto(&mut s);
    let out = on_ack(&mut s, rto_at + 10 * MS, ack(13, &[], 0));
    assert!(undo_details(&s).is_empty());
    assert_eq!(s.tp.ca_state, CaState::Loss);
    assert!(
        !out.is_empty() && out.iter().all(|d| !d.retrans),
        "F-RTO step 2b: new data"
    );
    on_ack(&mut s, rto_at + 20 * MS, ack(20, &[], 0));
    assert_eq!(undo_details(&s), ["detector=frto via=loss state=Loss"]);
}

/// Linux 6.12+ `tcp_enter_recovery` starts with `tcp_retrans_stamp_cleanup`: a retrans_stamp
/// left by an earlier episode whose retransmissions are all acked is cleared, so the fast
/// retransmit starts the clock that `tcp_packet_delayed` compares the echoed TSval with.
#[test]
fn recovery_starts_a_fresh_retrans_stamp() {
    let mut s = sender_with(true, u32::MAX);
    warm_up(&mut s);
    // As an earlier episode that ended in Disorder can leave them: a stamp from 5 ms and
    // nothing retransmitted left in the queue.
    s.retrans_stamp = 6;
    s.set_ca_state(CaState::Disorder);
    on_ack(&mut s, 20 * MS, ack(10, &[(11, 15)], 11));
    assert_eq!(s.tp.ca_state, CaState::Recovery);
    assert_eq!(s.retrans_stamp, 21, "TSval of the fast retransmit at 20 ms");
}

/// Linux `tcp_fastretrans_alert`, step A: an ECE ACK proves congestion, so the reduction may no
/// longer be undone (`tp->prior_ssthresh = 0`); a later Eifel undo leaves ssthresh reduced.
#[test]
fn an_ece_ack_in_recovery_forbids_restoring_the_window() {
    let mut s = Setup {
        ecn: EcnMode::On,
        ..Setup::default()
    }
    .sender();
    spurious_recovery(&mut s, true);
    assert_ne!(s.tp.prior_ssthresh, 0);
    let ssthresh = s.tp.snd_ssthresh;
    let mut a = ack(14, &[(16, 30)], 11);
    a.ece = true;
    on_ack(&mut s, 21 * MS, a);
    assert_eq!(s.tp.prior_ssthresh, 0);
    on_ack(&mut s, 21 * MS, ack(30, &[], 11));
    assert_eq!(
        undo_details(&s),
        ["detector=eifel via=recovery state=Recovery"]
    );
    assert_eq!(s.tp.snd_ssthresh, ssthresh);
}
