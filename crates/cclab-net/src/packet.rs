//! What a link needs to know about a packet.

/// A packet as a network element sees it: only its size on the wire. Elements never look
/// inside (they know packets, not TCP).
pub trait NetPacket {
    /// Bytes the link serialises (all headers included).
    fn wire_bytes(&self) -> u32;
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
    fn a_packet_is_its_size() {
        assert_eq!(Raw(vec![0; 1500]).wire_bytes(), 1500);
    }
}
