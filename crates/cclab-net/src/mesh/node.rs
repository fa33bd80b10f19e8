//! A mesh node's state ([`Node`]: its queue, backoff, window, its view of the channel, its
//! exchange), its MAC counters ([`MeshStationStats`]) and what is on the air ([`Emission`]).

use serde::Serialize;
use std::collections::VecDeque;

/// A node's MAC counters, besides its lane's [`LinkStats`](crate::LinkStats).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct MeshStationStats {
    /// Data PPDUs sent (an A-MPDU is one), first tries and retries.
    pub attempts: u64,
    /// Attempts lost whole (no MPDU decoded) while another transmission overlapped them at the
    /// receiver (or the receiver was itself transmitting).
    pub collisions: u64,
    /// Of `collisions`, those where an overlapping transmitter was one the sender does not
    /// sense: hidden-terminal collisions.
    pub hidden_collisions: u64,
    /// Attempts lost whole with nothing overlapping (noise, the frame error floor).
    pub frame_errors: u64,
    /// Attempts answered (an Ack, or a BlockAck for at least one MPDU).
    pub successes: u64,
    /// MPDUs sent, retransmissions included (= `attempts` without aggregation).
    pub mpdus: u64,
    /// MPDUs lost on the air.
    pub mpdu_errors: u64,
    /// MPDUs acknowledged (each once).
    pub mpdus_acked: u64,
    /// MPDUs dropped at the retry limit undelivered.
    pub retry_drops: u64,
    /// Responses (Ack, BlockAck) lost on their way back: the sender retries MPDUs the receiver
    /// already has (it discards the duplicates; one dropped at the retry limit is not a loss).
    pub response_losses: u64,
}

impl MeshStationStats {
    /// The residual loss of this node's hops: the fraction of its MPDUs that MAC retries did
    /// not deliver, `retry_drops / (mpdus_acked + retry_drops)` (None: nothing finished).
    pub fn residual_loss(&self) -> Option<f64> {
        let n = self.mpdus_acked + self.retry_drops;
        (n > 0).then(|| self.retry_drops as f64 / n as f64)
    }
}

/// A packet in a node's queue.
#[derive(Debug)]
pub(super) struct Frame<P> {
    pub(super) to: usize,
    pub(super) bytes: u32,
    /// None once delivered (the frame stays until its exchange ends).
    pub(super) pkt: Option<P>,
    /// Failed attempts of this MPDU.
    pub(super) failures: u32,
}

/// A node's exchange as a sender: which queued frames it carries, how it went.
#[derive(Debug, Default)]
pub(super) struct Exchange {
    /// Indices in the queue of the MPDUs sent (the front first).
    pub(super) mpdus: Vec<usize>,
    /// Per MPDU: decoded by the receiver.
    pub(super) ok: Vec<bool>,
    /// The response (Ack, BlockAck) came back.
    pub(super) answered: bool,
    /// When it ends (known when the data frame ends).
    pub(super) end_ns: Option<u64>,
}

/// One contender.
#[derive(Debug)]
pub(super) struct Node<P> {
    pub(super) queue: VecDeque<Frame<P>>,
    /// Frames held (what the queue limit counts).
    pub(super) pkts: u32,
    /// Bytes held.
    pub(super) bytes: u64,
    /// Backoff pending: while this node's channel is idle, slots from its idle period's first
    /// boundary (`idle_from + DIFS + k slots`); while busy, the frozen count.
    pub(super) backoff: Option<u64>,
    /// Contention window, slots.
    pub(super) cw: u32,
    /// Transmissions on the air this node senses, its own included.
    pub(super) sensed: u32,
    /// NAVs it holds: exchanges whose data frame it sensed, until their response ends.
    pub(super) nav: u32,
    /// Its exchange as a sender (busy for it until it ends).
    pub(super) exchange: Option<Exchange>,
    /// When its channel last became idle (after a garbled reception: AckTimeout later).
    pub(super) idle_from_ns: u64,
    /// It sensed two transmissions at once since its channel was last idle (a collision it
    /// could not decode), so it defers AckTimeout + DIFS, not DIFS, once idle (see `mod.rs`).
    pub(super) garbled: bool,
    pub(super) mac: MeshStationStats,
}

impl<P> Node<P> {
    /// Its channel is busy: it senses a transmission, holds a NAV, or is in an exchange.
    pub(super) fn busy(&self) -> bool {
        self.sensed > 0 || self.nav > 0 || self.exchange.is_some()
    }
}

/// A frame's reception at its receiver, as the transmissions around it change it.
#[derive(Debug, Clone, Copy)]
pub(super) struct DataRx {
    pub(super) to: usize,
    /// A response (Ack, BlockAck) to `to`'s data, not a data frame.
    pub(super) response: bool,
    /// Sum of the powers of the transmissions that overlapped it at the receiver, mW.
    pub(super) interference_mw: f64,
    /// The receiver transmitted during it.
    pub(super) half_duplex: bool,
    /// An overlapping transmitter was one its sender does not sense.
    pub(super) hidden: bool,
}

/// A transmission on the air.
#[derive(Debug, Clone, Copy)]
pub(super) struct Emission {
    /// Its transmitter (the node count for the background).
    pub(super) src: usize,
    pub(super) end_ns: u64,
    /// A data frame or a response and its reception (None: the background).
    pub(super) data: Option<DataRx>,
}
