//! What a link needs to know about a packet.

/// The ECN field of the IP header (RFC 3168 section 5; `INET_ECN_*` in include/net/inet_ecn.h),
/// with the header's bit values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
#[repr(u8)]
pub enum Ecn {
    /// Not ECN-capable transport (`INET_ECN_NOT_ECT`, 0b00).
    #[default]
    NotEct = 0,
    /// ECN-capable transport, ECT(1) (`INET_ECN_ECT_1`, 0b01; L4S).
    Ect1 = 1,
    /// ECN-capable transport, ECT(0) (`INET_ECN_ECT_0`, 0b10; what RFC 3168 senders set).
    Ect0 = 2,
    /// Congestion experienced (`INET_ECN_CE`, 0b11).
    Ce = 3,
}

impl Ecn {
    /// The codepoint of the two low bits of an IPv4 TOS / IPv6 traffic-class byte.
    pub fn from_bits(bits: u8) -> Ecn {
        match bits & 0b11 {
            0 => Ecn::NotEct,
            1 => Ecn::Ect1,
            2 => Ecn::Ect0,
            _ => Ecn::Ce,
        }
    }

    /// Whether a router may mark this packet CE instead of dropping it: ECT(0) or ECT(1).
    pub fn is_ect(self) -> bool {
        matches!(self, Ecn::Ect0 | Ecn::Ect1)
    }
}

/// A packet as a network element sees it: its size on the wire and the IP header's ECN field.
/// Elements never look further inside (they know packets, not TCP).
pub trait NetPacket {
    /// Bytes the link serialises (all headers included).
    fn wire_bytes(&self) -> u32;

    /// The ECN codepoint of the IP header. Default: Not-ECT, for packets that carry none.
    fn ecn(&self) -> Ecn {
        Ecn::NotEct
    }

    /// Mark the packet Congestion Experienced (a router's `INET_ECN_set_ce`). Called only on
    /// ECT packets. Default: nothing (packets that carry no ECN field).
    fn set_ce(&mut self) {}

    /// The packet's flow key, for flow-queueing disciplines (FQ-CoDel puts a packet in queue
    /// `flow_hash % flows`, where the kernel's `fq_codel_classify` scales `skb_get_hash`, a
    /// seeded jhash of the 5-tuple). Packets of one flow must return the same value; it must be
    /// deterministic (no random seed). Default: 0 (every packet in one flow).
    fn flow_hash(&self) -> u64 {
        0
    }

    /// Whether the packet is a further segment of the GSO skb whose previous segment was
    /// offered just before it, in the same call time (a TCP sender hands its device an skb's
    /// segments together). Only a link that hands over whole skbs reads it
    /// ([`crate::link::Link::set_skb_handover`]). Default: false (every packet on its own).
    fn gso_follows(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Raw(Vec<u8>);
    impl NetPacket for Raw {
        fn wire_bytes(&self) -> u32 {
            u32::try_from(self.0.len()).unwrap_or(u32::MAX)
        }
    }

    #[test]
    fn a_packet_is_its_size_and_not_ect_by_default() {
        let mut p = Raw(vec![0; 1500]);
        assert_eq!(p.wire_bytes(), 1500);
        assert_eq!(p.ecn(), Ecn::NotEct);
        p.set_ce();
        assert_eq!(p.ecn(), Ecn::NotEct, "the default set_ce changes nothing");
        assert_eq!(p.flow_hash(), 0, "one flow by default");
    }

    #[test]
    fn codepoints_follow_the_ip_header_bits() {
        for (bits, e) in [
            (0, Ecn::NotEct),
            (1, Ecn::Ect1),
            (2, Ecn::Ect0),
            (3, Ecn::Ce),
        ] {
            assert_eq!(Ecn::from_bits(bits), e);
            assert_eq!(Ecn::from_bits(bits | 0xb8), e, "DSCP bits are ignored");
            assert_eq!(e as u8, bits);
        }
        assert!(Ecn::Ect0.is_ect() && Ecn::Ect1.is_ect());
        assert!(!Ecn::NotEct.is_ect() && !Ecn::Ce.is_ect());
    }
}
