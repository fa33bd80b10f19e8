//! What cclab-link knows about each TCP connection it carries: every data segment it took in,
//! dropped and handed on, by sequence range. That is the ground truth the kernel backend needs
//! for spurious timeouts (cclab issue 14, part 4): a retransmission is *unneeded* when an
//! earlier copy of its data had been delivered to the receiver or was still inside the link
//! (queued, on the air, propagating) when the retransmission came in; and the receiver *got
//! twice* the data segments handed on whose range had been handed on before.
//!
//! Per connection (IPv4 4-tuple of the data direction): the segments not yet acknowledged, keyed
//! by their first byte (relative to the first sequence number seen), each with the copies inside
//! the link and whether one was delivered; the highest cumulative ACK the receiver sent through
//! the link (segments below it are forgotten: acknowledged data was delivered). Constant memory
//! per connection apart from its window. A retransmitted segment that starts where no kept
//! segment starts (the sender cut or merged segments) is judged by the kept segment that holds
//! its first byte.
//!
//! Each retransmission is also recorded (time, relative sequence number, length, whether an
//! earlier copy was alive), up to [`MAX_RECORDS`] per connection, with the times of the SYNs;
//! and so is each data segment handed to the receiver a second time (time, relative sequence
//! number), so that the kernel backend can tell which RTO's episode a duplicate came from.

use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap};

/// Retransmission records kept per connection (the counters go on past it).
pub const MAX_RECORDS: usize = 10_000;
/// SYN times kept per connection.
const MAX_SYNS: usize = 16;

/// IPv4 TCP header facts the ledger reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TcpSeg {
    /// (source address, source port, destination address, destination port).
    pub key: ([u8; 4], u16, [u8; 4], u16),
    pub seq: u32,
    pub ack: u32,
    pub payload_bytes: u32,
    pub syn: bool,
    pub ack_flag: bool,
}

/// The TCP segment in an IPv4 packet (not a fragment), None otherwise.
pub fn parse(d: &[u8]) -> Option<TcpSeg> {
    if d.len() < 20 || d[0] >> 4 != 4 || d[9] != 6 {
        return None;
    }
    if u16::from_be_bytes([d[6], d[7]]) & 0x3fff != 0 {
        return None; // a fragment
    }
    let ihl = usize::from(d[0] & 0x0f) * 4;
    let total = usize::from(u16::from_be_bytes([d[2], d[3]])).min(d.len());
    let t = d.get(ihl..total)?;
    if t.len() < 20 {
        return None;
    }
    let doff = usize::from(t[12] >> 4) * 4;
    if doff < 20 || doff > t.len() {
        return None;
    }
    let addr = |o: usize| [d[o], d[o + 1], d[o + 2], d[o + 3]];
    Some(TcpSeg {
        key: (
            addr(12),
            u16::from_be_bytes([t[0], t[1]]),
            addr(16),
            u16::from_be_bytes([t[2], t[3]]),
        ),
        seq: u32::from_be_bytes([t[4], t[5], t[6], t[7]]),
        ack: u32::from_be_bytes([t[8], t[9], t[10], t[11]]),
        payload_bytes: (t.len() - doff) as u32,
        syn: t[13] & 0x02 != 0,
        ack_flag: t[13] & 0x10 != 0,
    })
}

/// A data segment not yet acknowledged.
#[derive(Debug, Clone, Copy)]
struct Seg {
    /// One past its last byte, relative.
    end: u64,
    /// Copies inside the link now.
    in_link: u32,
    /// A copy was handed to the receiver.
    delivered: bool,
}

/// One retransmission: when it came in (ns since start), its first byte (relative), length,
/// and whether an earlier copy was delivered or still inside the link then.
#[derive(Debug, Clone, Copy)]
pub struct Retrans {
    pub t_ns: u64,
    pub seq: u64,
    pub len: u32,
    pub earlier_alive: bool,
}

/// One connection's ledger.
#[derive(Debug, Default)]
pub struct Conn {
    /// Sequence number of relative byte 0 (the first data byte seen, or SYN + 1).
    base: Option<u32>,
    segs: BTreeMap<u64, Seg>,
    /// Highest cumulative ACK seen from the receiver, relative.
    acked: u64,
    /// One past the highest byte taken in, relative.
    high: u64,
    pub data_pkts: u64,
    pub retrans_pkts: u64,
    /// Retransmissions an earlier copy of which was delivered or inside the link.
    pub unneeded_retrans_pkts: u64,
    /// Data segments handed to the receiver whose range it had been handed before.
    pub dup_delivered_pkts: u64,
    pub dup_delivered_bytes: u64,
    pub dropped_data_pkts: u64,
    pub syn_ns: Vec<u64>,
    pub records: Vec<Retrans>,
    /// Data segments handed on a second time: (time, relative first byte).
    pub dups: Vec<(u64, u64)>,
}

impl Conn {
    fn rel(&self, seq: u32) -> Option<u64> {
        self.base.map(|b| u64::from(seq.wrapping_sub(b)))
    }

    /// The kept segment holding relative byte `s`.
    fn holding(&mut self, s: u64) -> Option<&mut Seg> {
        self.segs
            .range_mut(..=s)
            .next_back()
            .filter(|(_, g)| g.end > s)
            .map(|(_, g)| g)
    }
}

/// Every connection seen, by data-direction 4-tuple.
#[derive(Debug, Default)]
pub struct Ledger {
    conns: HashMap<([u8; 4], u16, [u8; 4], u16), Conn>,
}

fn rev(k: ([u8; 4], u16, [u8; 4], u16)) -> ([u8; 4], u16, [u8; 4], u16) {
    (k.2, k.3, k.0, k.1)
}

impl Ledger {
    /// A packet taken in from a port at `now_ns`.
    pub fn entered(&mut self, now_ns: u64, data: &[u8]) {
        let Some(s) = parse(data) else { return };
        if s.ack_flag {
            // The peer's cumulative ACK: what lies below it was delivered and is forgotten.
            if let Some(c) = self.conns.get_mut(&rev(s.key)) {
                if let Some(a) = c.rel(s.ack) {
                    if a > c.acked && a <= c.high {
                        c.acked = a;
                        // Oldest first, each removed once: O(log n) per segment acknowledged. A
                        // segment straddling the ACK stays.
                        while let Some(e) = c.segs.first_entry() {
                            if e.get().end > a {
                                break;
                            }
                            e.remove();
                        }
                    }
                }
            }
        }
        if s.syn && !s.ack_flag {
            let c = self.conns.entry(s.key).or_default();
            c.base = Some(s.seq.wrapping_add(1));
            if c.syn_ns.len() < MAX_SYNS {
                c.syn_ns.push(now_ns);
            }
            return;
        }
        if s.payload_bytes == 0 || s.syn {
            return;
        }
        let c = self.conns.entry(s.key).or_default();
        if c.base.is_none() {
            c.base = Some(s.seq);
        }
        let Some(start) = c.rel(s.seq) else { return };
        let end = start + u64::from(s.payload_bytes);
        c.data_pkts += 1;
        if start < c.high {
            c.retrans_pkts += 1;
            let alive = start < c.acked
                || c.holding(start)
                    .is_some_and(|g| g.in_link > 0 || g.delivered);
            if alive {
                c.unneeded_retrans_pkts += 1;
            }
            if c.records.len() < MAX_RECORDS {
                c.records.push(Retrans {
                    t_ns: now_ns,
                    seq: start,
                    len: s.payload_bytes,
                    earlier_alive: alive,
                });
            }
            if start < c.acked {
                return; // below the ACK: delivered long ago, not kept
            }
            match c.segs.get_mut(&start) {
                Some(g) => g.in_link += 1,
                None => {
                    c.segs.insert(
                        start,
                        Seg {
                            end,
                            in_link: 1,
                            delivered: false,
                        },
                    );
                }
            }
        } else {
            c.segs.insert(
                start,
                Seg {
                    end,
                    in_link: 1,
                    delivered: false,
                },
            );
        }
        c.high = c.high.max(end);
    }

    /// A data segment (not a SYN) of a connection the ledger already knows: its connection and
    /// its start relative to the connection's first sequence, and its payload bytes.
    fn known_data(&mut self, data: &[u8]) -> Option<(&mut Conn, u64, u32)> {
        let s = parse(data)?;
        if s.payload_bytes == 0 || s.syn {
            return None;
        }
        let c = self.conns.get_mut(&s.key)?;
        let start = c.rel(s.seq)?;
        Some((c, start, s.payload_bytes))
    }

    /// A packet dropped inside the link.
    pub fn dropped(&mut self, data: &[u8]) {
        let Some((c, start, _)) = self.known_data(data) else {
            return;
        };
        c.dropped_data_pkts += 1;
        if let Some(g) = c.segs.get_mut(&start) {
            g.in_link = g.in_link.saturating_sub(1);
        }
    }

    /// A packet handed to the receiving port at `now_ns`.
    pub fn delivered(&mut self, now_ns: u64, data: &[u8]) {
        let Some((c, start, payload_bytes)) = self.known_data(data) else {
            return;
        };
        let dup = if start < c.acked {
            true
        } else {
            match c.segs.get_mut(&start) {
                Some(g) => {
                    g.in_link = g.in_link.saturating_sub(1);
                    std::mem::replace(&mut g.delivered, true)
                }
                None => false,
            }
        };
        if dup {
            c.dup_delivered_pkts += 1;
            c.dup_delivered_bytes += u64::from(payload_bytes);
            if c.dups.len() < MAX_RECORDS {
                c.dups.push((now_ns, start));
            }
        }
    }

    /// `[{flow: "A:p>B:q", data_pkts, retrans_pkts, unneeded_retrans_pkts, dup_delivered_pkts,
    /// dup_delivered_bytes, dropped_data_pkts, syn_ns, retrans: [[t_ns, seq, len, alive]],
    /// dups: [[t_ns, seq]]}]`,
    /// for connections that carried data or SYNs, in a stable order.
    pub fn to_json(&self) -> Value {
        let mut keys: Vec<_> = self.conns.keys().copied().collect();
        keys.sort_unstable();
        let ip = |a: [u8; 4]| format!("{}.{}.{}.{}", a[0], a[1], a[2], a[3]);
        Value::Array(
            keys.into_iter()
                .filter_map(|k| {
                    let c = &self.conns[&k];
                    (c.data_pkts > 0 || !c.syn_ns.is_empty()).then(|| {
                        json!({
                            "flow": format!("{}:{}>{}:{}", ip(k.0), k.1, ip(k.2), k.3),
                            "data_pkts": c.data_pkts,
                            "retrans_pkts": c.retrans_pkts,
                            "unneeded_retrans_pkts": c.unneeded_retrans_pkts,
                            "dup_delivered_pkts": c.dup_delivered_pkts,
                            "dup_delivered_bytes": c.dup_delivered_bytes,
                            "dropped_data_pkts": c.dropped_data_pkts,
                            "syn_ns": c.syn_ns,
                            "retrans": c.records.iter()
                                .map(|r| json!([r.t_ns, r.seq, r.len, r.earlier_alive]))
                                .collect::<Vec<_>>(),
                            "dups": c.dups.iter().map(|&(t, q)| json!([t, q])).collect::<Vec<_>>(),
                        })
                    })
                })
                .collect(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An IPv4/TCP packet: 10.0.0.1:1000 -> 10.0.0.2:5201 (or back with `back`).
    fn tcp(back: bool, seq: u32, ack: u32, flags: u8, payload: usize) -> Vec<u8> {
        let total = 40 + payload;
        let mut d = vec![0u8; total];
        d[0] = 0x45;
        d[2..4].copy_from_slice(&(total as u16).to_be_bytes());
        d[9] = 6;
        let (a, b) = ([10, 0, 0, 1], [10, 0, 0, 2]);
        let (src, dst, sp, dp) = if back {
            (b, a, 5201u16, 1000u16)
        } else {
            (a, b, 1000, 5201)
        };
        d[12..16].copy_from_slice(&src);
        d[16..20].copy_from_slice(&dst);
        d[20..22].copy_from_slice(&sp.to_be_bytes());
        d[22..24].copy_from_slice(&dp.to_be_bytes());
        d[24..28].copy_from_slice(&seq.to_be_bytes());
        d[28..32].copy_from_slice(&ack.to_be_bytes());
        d[32] = 5 << 4;
        d[33] = flags;
        d
    }
    const SYN: u8 = 0x02;
    const ACK: u8 = 0x10;
    const ISN: u32 = u32::MAX - 2000; // wraps during the test

    fn data(k: u32) -> Vec<u8> {
        tcp(false, ISN.wrapping_add(1 + k * 1000), 1, ACK, 1000)
    }

    fn conn(l: &Ledger) -> &Conn {
        l.conns.values().next().unwrap()
    }

    #[test]
    fn a_retransmission_of_a_dropped_segment_is_needed_and_of_a_delayed_one_is_not() {
        let mut l = Ledger::default();
        l.entered(0, &tcp(false, ISN, 0, SYN, 0));
        l.entered(5, &tcp(false, ISN, 0, SYN, 0));
        for k in 0..3 {
            l.entered(10 + u64::from(k), &data(k));
        }
        l.dropped(&data(0)); // segment 0 lost
        l.delivered(200, &data(1)); // segment 1 arrived; segment 2 still inside
        l.entered(100, &data(0)); // needed
        l.entered(101, &data(1)); // unneeded: delivered
        l.entered(102, &data(2)); // unneeded: inside the link
        l.delivered(200, &data(0));
        l.delivered(200, &data(1)); // the receiver gets it twice
        l.delivered(200, &data(2));
        l.delivered(200, &data(2));
        let c = conn(&l);
        assert_eq!(
            (c.data_pkts, c.retrans_pkts, c.unneeded_retrans_pkts),
            (6, 3, 2)
        );
        assert_eq!(
            (
                c.dup_delivered_pkts,
                c.dup_delivered_bytes,
                c.dropped_data_pkts
            ),
            (2, 2000, 1)
        );
        assert_eq!(c.syn_ns, vec![0, 5]);
        assert_eq!(c.dups, vec![(200, 1000), (200, 2000)]);
        let alive: Vec<bool> = c.records.iter().map(|r| r.earlier_alive).collect();
        assert_eq!(alive, vec![false, true, true]);
        assert_eq!(c.records[1].seq, 1000);
    }

    #[test]
    fn acknowledged_data_is_forgotten_and_its_copies_count_as_duplicates() {
        let mut l = Ledger::default();
        l.entered(0, &tcp(false, ISN, 0, SYN, 0));
        for k in 0..4 {
            l.entered(1, &data(k));
            l.delivered(200, &data(k));
        }
        l.entered(2, &tcp(true, 7, ISN.wrapping_add(1 + 3000), ACK, 0));
        assert_eq!(
            conn(&l).segs.len(),
            1,
            "segments 0-2 acknowledged and forgotten"
        );
        l.entered(3, &data(1)); // a go-back-N resend of acknowledged data
        l.delivered(200, &data(1));
        let c = conn(&l);
        assert_eq!(
            (
                c.retrans_pkts,
                c.unneeded_retrans_pkts,
                c.dup_delivered_pkts
            ),
            (1, 1, 1)
        );
        let doc = l.to_json();
        assert_eq!(doc[0]["flow"], "10.0.0.1:1000>10.0.0.2:5201");
        assert_eq!(doc[0]["retrans"][0], json!([3, 1000, 1000, true]));
        assert_eq!(doc[0]["dups"], json!([[200, 1000]]));
    }

    #[test]
    fn non_tcp_and_fragments_are_ignored() {
        let mut d = data(0);
        d[9] = 17;
        assert!(parse(&d).is_none());
        let mut d = data(0);
        d[6] = 0x20; // more fragments
        assert!(parse(&d).is_none());
        assert_eq!(parse(&data(0)).unwrap().payload_bytes, 1000);
    }
}
