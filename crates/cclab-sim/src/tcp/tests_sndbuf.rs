//! The send buffer and its writer (`sndbuf.rs`) against Linux 6.18: `sk_sndbuf` after connect
//! as measured on this machine (46080 bytes for Reno and CUBIC, 69120 for BBR, at TCP_MAXSEG
//! 1012-1532), its growth by `tcp_sndbuf_expand` while the writer waits, the `tcp_wmem[2]` cap,
//! and the 2/3 rule of `sk_stream_is_writeable`. Fixtures in `tests_support.rs` (MSS 1000
//! bytes, 10 ms RTT).

use super::tests_support::*;
use crate::tcp::sender::Sender;
use cclab_net::host::{SndbufMode, LINUX_TCP_WMEM_BYTES};

/// per_mss of `tcp_sndbuf_expand` at MSS 1000 with timestamps (mss_clamp 1012):
/// roundup_pow_of_two(1012 + 192 + 320) + 256.
const PER_MSS: u64 = 2304;

fn started(cc: &'static str, tcp_wmem_bytes: [u64; 3]) -> (Sender, usize) {
    let mut s = Setup {
        cc,
        sndbuf: SndbufMode::Linux,
        tcp_wmem_bytes,
        ..Setup::default()
    }
    .sender();
    let mut out = Vec::new();
    s.on_start(0, &mut out);
    (s, out.len())
}

#[test]
fn connect_sizes_the_buffer_as_the_kernel_does() {
    let (s, sent) = started("reno", LINUX_TCP_WMEM_BYTES);
    assert_eq!(sent, 10, "the initial window goes out");
    let (sndbuf, queued) = s.sndbuf_peek().unwrap();
    assert_eq!(sndbuf, 2 * 10 * PER_MSS, "46080: tcp_init_buffer_space");
    // The first write of 64 KiB fills one skb of size_goal (65 segments: 64 KB less
    // MAX_TCP_HEADER + 1, in whole segments) and finds no room for another.
    assert_eq!(s.write_seq, 65_000);
    assert!(s.sndbuf.as_ref().unwrap().nospace);
    // The 10 segments sent are skbs of tcp_tso_autosize's minimum (2 segments): 5 skbs and the
    // rest of the written one, each with its 832 bytes.
    assert_eq!(queued, 65_000 + 6 * 832);
    let (b, _) = started("bbr", LINUX_TCP_WMEM_BYTES);
    assert_eq!(
        b.sndbuf_peek().unwrap().0,
        3 * 10 * PER_MSS,
        "69120: bbr_sndbuf_expand"
    );
}

#[test]
fn the_buffer_grows_with_cwnd_while_the_writer_waits_and_stops_at_tcp_wmem_max() {
    let (mut s, _) = started("reno", LINUX_TCP_WMEM_BYTES);
    // The initial window acked: cwnd 20, room in it when the first of the 20 new segments
    // leaves, so tcp_new_space expands to 2 x 20 x per_mss.
    let out = on_ack(&mut s, 10 * MS, ack(10, &[], 1));
    assert_eq!((s.tp.snd_cwnd, out.len()), (20, 20));
    assert_eq!(s.sndbuf_peek().unwrap().0, 2 * 20 * PER_MSS);
    let (mut c, _) = started("reno", [4096, 16384, 60_000]);
    assert_eq!(c.sndbuf_peek().unwrap().0, 46_080);
    on_ack(&mut c, 10 * MS, ack(10, &[], 1));
    assert_eq!(c.sndbuf_peek().unwrap().0, 60_000, "capped at tcp_wmem[2]");
}

#[test]
fn a_waiting_writer_has_found_more_than_two_thirds_queued() {
    // A buffer capped at 60000 bytes, every segment acked 10 ms after it left.
    let (mut s, _) = started("reno", [4096, 16384, 60_000]);
    let mut t = 0;
    let mut writes = 0;
    for _ in 0..20 {
        let before = s.write_seq;
        t += 10 * MS;
        let a = ack(s.tp.snd_nxt / 1000, &[], 1);
        on_ack(&mut s, t, a);
        writes += (s.write_seq > before) as u32;
        let (sndbuf, queued) = s.sndbuf_peek().unwrap();
        // The writer loops while poll() says writable, so after every event it waits on a
        // socket more than 2/3 full (sk_stream_is_writeable false, SOCK_NOSPACE set).
        assert!(s.sndbuf.as_ref().unwrap().nospace);
        assert!(
            3 * queued > 2 * sndbuf,
            "{queued} of {sndbuf} queued and the writer waits"
        );
        // It allocates skbs only below sk_sndbuf; the last may then fill up to size_goal.
        assert!(queued < sndbuf + 65_000 + 832);
    }
    assert!(writes >= 10, "the writer kept up: {writes} writes");
    // The flight is the buffer's, not cwnd's: at most sndbuf plus the one skb allocated last.
    let out = u64::from(s.tp.packets_out);
    assert!(out * 1000 < 60_000 + 65_000, "{out} packets out");
    assert!(
        u64::from(s.tp.snd_cwnd) > out,
        "cwnd {} grew past the flight",
        s.tp.snd_cwnd
    );
}

/// The skbs a run of segments leaving at once makes, in segments (a segment with `skb_follows`
/// belongs to the skb before it).
fn skb_sizes(out: &[crate::tcp::segment::DataSeg]) -> Vec<u32> {
    let mut sizes: Vec<u32> = Vec::new();
    for d in out {
        match sizes.last_mut() {
            Some(n) if d.skb_follows => *n += 1,
            _ => sizes.push(1),
        }
    }
    sizes
}

#[test]
fn a_tcp_socket_grows_its_head_skb_from_the_next_write() {
    // A plain TCP socket: each write of 64 KiB fills skbs of size_goal (65 segments), which
    // tcp_write_xmit sends as GSO skbs of cwnd_quota. When the head skb holds less than that,
    // tcp_grow_skb (6.10+) moves payload from the next skb into it, so a GSO skb may span two
    // writes: here the one from seq 61000 takes 9 segments across the first write's end (65000).
    let (mut s, _) = started("reno", LINUX_TCP_WMEM_BYTES);
    let mut t = 0;
    let mut segs = Vec::new();
    while s.tp.snd_nxt < 100_000 {
        t += 10 * MS;
        // Three segments left unacknowledged each time.
        let a = ack(s.tp.snd_nxt / 1000 - 3, &[], 1);
        segs.extend(on_ack(&mut s, t, a));
    }
    let at = |seq: u64| segs.iter().find(|d| d.seq == seq).expect("sent");
    assert!(!at(61_000).skb_follows, "seq 61000 starts an skb");
    assert!(
        (62..=69).all(|k| at(k * 1000).skb_follows),
        "that skb runs to seq 70000, across the first write's end"
    );
    assert!(!at(70_000).skb_follows);
}

#[test]
fn a_gso_skb_is_at_most_half_of_cwnd() {
    // tcp_cwnd_test: cwnd_quota = min(max(cwnd / 2, 1), cwnd - in_flight), "at least 2 GSO
    // packets in flight", whatever tcp_tso_autosize would give.
    let (mut s, _) = started("reno", LINUX_TCP_WMEM_BYTES);
    s.tp.pacing_rate_bytes_per_s = 1 << 30; // tcp_tso_autosize: 64 KB, 65 segments
    assert_eq!(s.tso_segs(), 65);
    s.tp.snd_cwnd = 30;
    assert_eq!(s.tp.packets_in_flight(), 10);
    assert_eq!(s.gso_quota_segs(), 15, "half of cwnd 30");
    s.tp.snd_cwnd = 16;
    assert_eq!(s.gso_quota_segs(), 6, "what cwnd leaves");
    s.tp.snd_cwnd = 3;
    assert_eq!(
        s.gso_quota_segs(),
        1,
        "a loss probe beyond cwnd: one segment"
    );
}

#[test]
fn a_gso_skb_never_spans_two_multipath_tcp_mappings() {
    // An upstream Multipath TCP subflow (mptcp_stack = "linux"): its own application writes
    // nothing; the connection hands it bursts, each a mapping and so an skb of its own.
    let mut s = Setup {
        sndbuf: SndbufMode::Linux,
        size_segs: 0,
        ..Setup::default()
    }
    .sender();
    let mut out = Vec::new();
    s.on_start(0, &mut out);
    assert!(out.is_empty(), "nothing mapped yet");
    assert_eq!(s.mptcp_take(3 * MSS as u64), 3_000);
    assert_eq!(s.mptcp_take(5 * MSS as u64), 5_000);
    // tcp_tso_autosize gives 2 segments here (2 x 10 x 1000 B / 10 ms >> 10, at least 2):
    // tcp_write_xmit splits each write-queue skb (tso_fragment), and tcp_grow_skb does not join
    // two of different mappings (mptcp_skb_can_collapse), so the 3-segment burst leaves as
    // 2 + 1 and the 5-segment one as 2 + 2 + 1.
    s.push_pending(MS, &mut out);
    assert_eq!(skb_sizes(&out), vec![2, 1, 2, 2, 1]);
    // The connection asked whether there is room and what the subflow holds.
    let queued = s.mptcp_wmem_queued();
    assert_eq!(queued, 8_000 + 5 * 832, "five skbs, each with its overhead");
    assert!(s.mptcp_memory_free(queued));
}
