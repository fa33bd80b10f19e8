//! Loss-recovery details against Linux 6.18 (`net/ipv4/tcp_input.c`, `tcp_recovery.c`): the
//! reordering metric, RACK's reordering window under D-SACKs, the undo detectors, the initial
//! window. Each test drives a sender with hand-built ACKs; sequence numbers are in segments of
//! `MSS` bytes and every segment of a flight leaves at the same instant.

use crate::cc::{self, CaState, Params};
use crate::tcp::ecn::EcnMode;
use crate::tcp::segment::{AckSeg, DataSeg, SeqRange};
use crate::tcp::sender::{Sender, SenderConfig, SenderEvent};

const MSS: u32 = 1000;
const MS: u64 = 1_000_000;

fn sender_with(timestamps: bool, max_cwnd_pkts: u32) -> Sender {
    let cc = cc::build("reno", &Params::new()).unwrap();
    let mut s = Sender::new(
        SenderConfig {
            mss_bytes: MSS,
            initial_cwnd_pkts: 10,
            max_cwnd_pkts,
            sack: true,
            timestamps,
            frto: true,
            tlp: false,
            rto_min_us: 200_000,
            rto_initial_us: 1_000_000,
            rto_max_us: 120_000_000,
            size_bytes: u64::MAX,
            hz: 1000,
            ecn: EcnMode::Off,
        },
        cc,
    );
    s.syn_rtt_sample(0, 10_000);
    s
}

/// An ACK of everything below segment `ack`, SACKing `[start, end)` segment ranges (the first
/// one may be a D-SACK), echoing `tsecr` (0: no timestamp echo).
fn ack(ack: u64, sacks: &[(u64, u64)], tsecr: u32) -> AckSeg {
    let mut a = AckSeg {
        ack: ack * MSS as u64,
        rwnd_bytes: 1 << 30,
        sack: [SeqRange::default(); 4],
        n_sack: sacks.len() as u8,
        tsval: 1,
        tsecr,
        ece: false,
    };
    for (i, &(s, e)) in sacks.iter().enumerate() {
        a.sack[i] = SeqRange {
            start: s * MSS as u64,
            end: e * MSS as u64,
        };
    }
    a
}

/// Segments 0-9 at t = 0 (TSval 1), all acked at 10 ms: cwnd 20 and segments 10-29 in flight,
/// sent at 10 ms with TSval 11 when 10 segments had been delivered.
fn warm_up(s: &mut Sender) {
    let mut out = Vec::new();
    s.on_start(0, &mut out);
    assert_eq!(out.len(), 10);
    out.clear();
    let tsecr = if s.cfg.timestamps { 1 } else { 0 };
    s.on_ack(10 * MS, &ack(10, &[], tsecr), &mut out);
    assert_eq!(s.tp.snd_cwnd, 20);
    assert_eq!((out.first().unwrap().seq, out.len()), (10 * MSS as u64, 20));
    assert!(out.iter().all(|d| !d.retrans && d.tsval == tsecr * 11));
}

fn on_ack(s: &mut Sender, t_ns: u64, a: AckSeg) -> Vec<DataSeg> {
    let mut out = Vec::new();
    s.on_ack(t_ns, &a, &mut out);
    out
}

/// The details of the `undo` events so far.
fn undo_details(s: &Sender) -> Vec<String> {
    s.events
        .iter()
        .filter(|e| e.1 == SenderEvent::Undo)
        .map(|e| e.2.clone())
        .collect()
}

/// Segments 13-15 are held back by the network while 16-29 arrive: at 20 ms RACK (no
/// reordering seen yet, so no reordering window with 14 segments SACKed) marks them lost and
/// fast recovery retransmits them (TSval 21). At 21 ms the originals arrive, one ACK for 13
/// (a partial ACK echoing the original's TSval 11), one for 14-15.
fn spurious_recovery(s: &mut Sender, timestamps: bool) {
    warm_up(s);
    let out = on_ack(s, 20 * MS, ack(13, &[(16, 30)], timestamps as u32 * 11));
    assert_eq!(s.tp.ca_state, CaState::Recovery);
    let retrans: Vec<u64> = out
        .iter()
        .filter(|d| d.retrans)
        .map(|d| d.seq / MSS as u64)
        .collect();
    assert_eq!(retrans, [13, 14, 15]);
    assert_eq!(s.stats.retrans_pkts, 3);
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
    // (Then RACK, re-run after the undo, marks 13-29 lost: sent before the acked
    // retransmission of 10 and not delivered; without timestamps nothing says otherwise.)
    assert_ne!(s.tp.ca_state, CaState::Loss);
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
