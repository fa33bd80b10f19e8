//! What a link needs to know about a packet.

/// A packet as a link sees it: only its size on the wire.
pub trait NetPacket {
    /// Bytes the link serialises (headers included).
    fn wire_bytes(&self) -> u32;
}
