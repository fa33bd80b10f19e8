//! The ECN field of a real IPv4 header: read it, and mark CE the way a router does
//! (`IP_ECN_set_ce`, include/net/inet_ecn.h), patching the header checksum incrementally
//! (RFC 1624 equation 3) so the receiving kernel accepts the packet.

use cclab_net::Ecn;

/// The ECN codepoint of an IPv4 packet (the low two bits of the TOS byte); Not-ECT for anything
/// that is not a whole IPv4 header.
pub fn ipv4_ecn(data: &[u8]) -> Ecn {
    if data.len() < 20 || data[0] >> 4 != 4 {
        return Ecn::NotEct;
    }
    Ecn::from_bits(data[1])
}

/// Mark an ECT IPv4 packet CE and fix its header checksum; anything else is left alone.
pub fn ipv4_set_ce(data: &mut [u8]) {
    if !ipv4_ecn(data).is_ect() {
        return;
    }
    let old = u16::from_be_bytes([data[0], data[1]]);
    data[1] |= Ecn::Ce as u8;
    let new = u16::from_be_bytes([data[0], data[1]]);
    // HC' = ~(~HC + ~m + m'), in one's complement arithmetic.
    let hc = u16::from_be_bytes([data[10], data[11]]);
    let mut sum = u32::from(!hc) + u32::from(!old) + u32::from(new);
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    let hc_new = !(sum as u16);
    data[10..12].copy_from_slice(&hc_new.to_be_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The one's complement sum of the header's 16-bit words (0xffff when the checksum is right).
    fn header_sum(h: &[u8]) -> u16 {
        let mut s: u32 = h
            .chunks(2)
            .map(|w| u32::from(u16::from_be_bytes([w[0], w[1]])))
            .sum();
        while s > 0xffff {
            s = (s & 0xffff) + (s >> 16);
        }
        s as u16
    }

    fn header(tos: u8) -> Vec<u8> {
        let mut h = vec![
            0x45, tos, 0x05, 0xdc, 0x12, 0x34, 0x40, 0x00, 0x40, 0x06, 0, 0, 10, 0, 0, 1, 10, 0, 1,
            2,
        ];
        let c = !header_sum(&h);
        h[10..12].copy_from_slice(&c.to_be_bytes());
        assert_eq!(header_sum(&h), 0xffff);
        h
    }

    #[test]
    fn ce_marking_keeps_the_checksum_valid() {
        for tos in [0x02, 0x01, 0xb8 | 0x02, 0xfe, 0xfd] {
            let mut h = header(tos);
            assert!(ipv4_ecn(&h).is_ect());
            ipv4_set_ce(&mut h);
            assert_eq!(ipv4_ecn(&h), Ecn::Ce);
            assert_eq!(h[1] & !3, tos & !3, "DSCP unchanged");
            assert_eq!(header_sum(&h), 0xffff, "tos {tos:#x}: checksum still valid");
        }
    }

    #[test]
    fn not_ect_and_non_ipv4_packets_are_left_alone() {
        let h = header(0x00);
        let mut m = h.clone();
        ipv4_set_ce(&mut m);
        assert_eq!(m, h);
        let mut v6 = vec![0x60; 40];
        ipv4_set_ce(&mut v6);
        assert_eq!(v6, vec![0x60; 40]);
        assert_eq!(ipv4_ecn(&[0x45, 0x03]), Ecn::NotEct, "too short");
    }
}
