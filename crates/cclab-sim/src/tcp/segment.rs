//! What travels between sender and receiver: data segments and ACKs.
//!
//! Only the header fields TCP logic reads are modelled. Sequence numbers are u64 bytes from 0:
//! the data's first byte, after the handshake (`handshake.rs`: its SYN, SYN-ACK and ACK travel
//! as [`Segment::Handshake`], which carry no sequence numbers). Timestamps (RFC 7323) are u32
//! milliseconds, Linux's default TS clock.

/// Bytes of IPv4 + TCP headers without options.
pub const HEADER_BYTES: u32 = 40;
/// Bytes of the timestamp option as Linux sends it (NOP, NOP, TS: 12).
pub const TS_OPTION_BYTES: u32 = 12;
/// Bytes of SACK option overhead (NOP, NOP, kind, len) and per block.
pub const SACK_BASE_BYTES: u32 = 4;
/// Bytes per SACK block.
pub const SACK_BLOCK_BYTES: u32 = 8;

/// A contiguous byte range [start, end).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SeqRange {
    pub start: u64,
    pub end: u64,
}

/// A data segment.
#[derive(Debug, Clone, Copy)]
pub struct DataSeg {
    /// First byte.
    pub seq: u64,
    /// Payload bytes.
    pub len: u32,
    /// TSval (sender clock, ms); 0 when timestamps are off.
    pub tsval: u32,
    /// TSecr (echo of the receiver's latest TSval).
    pub tsecr: u32,
    /// Whether this is a retransmission (for traces only; TCP logic never reads it).
    pub retrans: bool,
    /// ECN field of the IP header (set by the sender, CE by a marking link).
    pub ecn: cclab_net::Ecn,
    /// TCP CWR flag: the sender reduced its window after an ECE.
    pub cwr: bool,
    /// Bytes it holds in the sender's `sk_wmem_alloc` until its host's NIC has sent it (its
    /// payload, plus its skb's overhead if it is the skb's first segment; 0 without a device).
    pub below_bytes: u32,
    /// A further segment of the skb (GSO) the segment sent just before it began: the device
    /// gets them together (`cclab_net::packet::NetPacket::gso_follows`).
    pub skb_follows: bool,
}

/// An acknowledgement, with up to 4 SACK blocks (the first may be a D-SACK).
#[derive(Debug, Clone, Copy, Default)]
pub struct AckSeg {
    /// Cumulative ACK: next byte expected.
    pub ack: u64,
    /// Advertised receive window, bytes.
    pub rwnd_bytes: u64,
    /// SACK blocks, most recent first (RFC 2018); `sack[..n_sack]` are valid.
    pub sack: [SeqRange; 4],
    /// Number of valid SACK blocks.
    pub n_sack: u8,
    /// TSval (receiver clock, ms).
    pub tsval: u32,
    /// TSecr: echo of the TSval of the segment that triggered this ACK (RFC 7323 rules).
    pub tsecr: u32,
    /// TCP ECE flag: the receiver echoes congestion experienced.
    pub ece: bool,
    /// Multipath TCP: the connection's DATA_ACK (next data byte expected), stamped by the
    /// world from the data-level receive side; 0 on a TCP flow.
    pub data_ack: u64,
}

impl AckSeg {
    /// The valid SACK blocks.
    pub fn sacks(&self) -> &[SeqRange] {
        &self.sack[..self.n_sack as usize]
    }
}

/// A TCP segment on the wire (or, sharing the packet type, a UDP flow's datagram).
#[derive(Debug, Clone, Copy)]
pub enum Segment {
    Data(DataSeg),
    Ack(AckSeg),
    /// A SYN, SYN-ACK or the ACK completing the handshake (`crate::tcp::handshake`).
    Handshake(crate::tcp::handshake::HsSeg),
    /// Not TCP: a datagram of a UDP flow (`crate::udp`).
    Udp(crate::udp::Datagram),
}
