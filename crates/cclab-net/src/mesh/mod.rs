//! A multi-hop 802.11s mesh chain on one channel: N nodes on a line, each a DCF contender that
//! senses only the transmissions it receives strongly enough, so close nodes contend and far
//! ones are hidden terminals whose frames collide at the receiver (docs/mesh.md).
//!
//! # The model
//! The DCF of [`DcfCell`](crate::DcfCell) (IEEE 802.11-2016 10.3: backoff in `[0, CW]` slots
//! counted down in idle slots after DIFS and frozen while busy, post-backoff, CW doubling to
//! CWmax on a failure and back to CWmin on a success or a drop, `retry_limit` attempts),
//! generalised from one collision domain to a channel each node sees for itself:
//! - **Carrier sense per pair.** Node i's channel is busy while it senses a transmission (one
//!   it receives at or above `cs_threshold_dbm`, [`radio`]) or is in its own exchange; its
//!   backoff freezes only then, and its slot grid starts DIFS after its own channel went idle.
//!   Every node sensing every other gives the cell's behaviour (one grid, transmissions that
//!   start on the same boundary collide).
//! - **Reception per receiver.** A data frame is decoded with the SINR at its receiver over
//!   every transmission that overlapped it there (summed, however short the overlap), through
//!   the per-modulation error curve of [`radio`], plus the environment's frame error floor; a
//!   receiver that transmits meanwhile, or does not sense the sender, decodes nothing. So a
//!   weak far interferer costs little (capture), a near one everything, and hidden terminals
//!   collide at the receiver while their backoffs never saw each other.
//! - **Exchanges.** DATA (HT, [`ht`]), SIFS, Ack; with `ampdu`, an A-MPDU of up to
//!   `ampdu_max_frames` MPDUs / `ampdu_max_bytes` bytes to the front frame's receiver (the
//!   queue's frames for it, in order), SIFS, BlockAck. Each MPDU is lost on its own; the
//!   BlockAck acknowledges the decoded ones and the others stay queued for the next attempt
//!   (selective retransmission), each with its own retry count. A response (Ack, BlockAck, at
//!   the highest of 6, 12, 24 Mbit/s not above the data rate) is a transmission from the
//!   receiver: nodes that sense it defer, it interferes with others' receptions, and it is lost
//!   with the SINR at the data's sender (no floor); then the sender retries every MPDU of the
//!   exchange, and the receiver discards those it already has. With nothing decoded there is no
//!   response: the sender waits AckTimeout (SIFS + slot + aRxPHYStartDelay) and doubles CW.
//! - **NAV** (10.3.2.4, virtual carrier sense). The nodes that sensed an answered data frame
//!   stay busy through SIFS and the response, as its Duration field tells them, whether or not
//!   they sense the responder.
//! - **After a collision** a node that sensed two transmissions at once (and so decoded
//!   neither) counts its idle period from AckTimeout after the channel went idle, then DIFS, as
//!   the colliding senders do after their AckTimeout: the DCF cell's rule (docs/dcf.md, "EIFS";
//!   the standard's EIFS, 10.3.2.3.7, is SIFS + Ack + DIFS = 78 µs here against our
//!   45 + 34 = 79 µs), which keeps bystanders and senders on one slot grid.
//! - **Background** (the `campus` environment): other transmitters on the channel, on for
//!   `background_burst_us` at exponentially spaced times (busy `background_busy_fraction` of
//!   the time), received at `background_rx_dbm` everywhere: sensed (deferred to) and
//!   interfering; they do not defer to the mesh.
//! - **Forwarding** is the driver's: a packet crossing from node i to node i+1 is a unicast
//!   frame; routes are static (no HWMP path selection).
//!
//! # Time, determinism, ties
//! Decisions are taken lazily in time order, events found by scanning the nodes and the air
//! (a chain has a few nodes). At one instant, in this order: transmissions that end (data
//! receptions decided, in the order they started), NAVs that end, exchanges that end (node
//! order), then
//! every node whose backoff ends then transmits (they see nothing of what starts at the same
//! instant), with responses and the background starting then too. Backoff and error draws
//! come from the stream given to [`MeshChain::new`], the background (if any) from a stream
//! seeded from its first output.

mod exchange;
pub mod ht;
mod node;
pub mod radio;
pub mod spec;
#[cfg(test)]
mod tests;

pub use node::MeshStationStats;
pub use radio::Environment;
pub use spec::{MeshParams, MeshSpec};

use node::{DataRx, Emission, Frame, Node};

use crate::link::{DropReason, Dropped, LinkStats};
use crate::medium::{earliest, Flight, MacStats, Medium};
use crate::packet::NetPacket;
use rand::{Rng, RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::VecDeque;

/// A mesh chain of N nodes carrying packets of type `P` (see the module doc).
#[derive(Debug)]
pub struct MeshChain<P> {
    params: MeshParams,
    rng: ChaCha8Rng,
    background_rng: ChaCha8Rng,
    nodes: Vec<Node<P>>,
    /// Transmissions on the air, in the order they started.
    on_air: Vec<Emission>,
    /// Responses due: (start, responder, the data's sender, end).
    responses: Vec<(u64, usize, usize, u64)>,
    /// NAVs set by answered data frames: (end, the data's sender), held by its sensers.
    navs: Vec<(u64, usize)>,
    /// The next background transmission.
    background_next_ns: Option<u64>,
    flight: Flight<P>,
    now_ns: u64,
    stats: Vec<LinkStats>,
    mac_stats_empty: MeshStationStats,
    dropped: VecDeque<(u64, Dropped<P>)>,
}

/// Uniform in `[0, cw]` from one 64-bit draw (as the DCF cell draws).
fn draw_backoff(rng: &mut ChaCha8Rng, cw: u32) -> u64 {
    ((u128::from(rng.next_u64()) * u128::from(u64::from(cw) + 1)) >> 64) as u64
}

impl<P: NetPacket> MeshChain<P> {
    /// A chain of `ports` nodes with `spec` (which should have passed
    /// [`MeshSpec::validate`]; if not, nothing panics), drawing from `rng`.
    pub fn new(spec: MeshSpec, ports: usize, mut rng: ChaCha8Rng) -> Self {
        let params = spec.params(ports);
        // The background's own stream, seeded from the first output only when there is a
        // background (so without one the MAC's draws are the DCF cell's from the same stream).
        let mut background_rng = ChaCha8Rng::seed_from_u64(if params.background.is_some() {
            rng.next_u64()
        } else {
            0
        });
        let nodes = (0..ports)
            .map(|_| Node {
                queue: VecDeque::new(),
                pkts: 0,
                bytes: 0,
                backoff: None,
                cw: params.cw_min,
                sensed: 0,
                nav: 0,
                exchange: None,
                idle_from_ns: 0,
                garbled: false,
                mac: MeshStationStats::default(),
            })
            .collect();
        let background_next_ns = params
            .background
            .map(|(busy, burst_ns, _)| background_gap_ns(&mut background_rng, busy, burst_ns));
        MeshChain {
            params,
            rng,
            background_rng,
            nodes,
            on_air: Vec::new(),
            responses: Vec::new(),
            navs: Vec::new(),
            background_next_ns,
            flight: Flight::default(),
            now_ns: 0,
            stats: vec![LinkStats::default(); ports.max(1)],
            mac_stats_empty: MeshStationStats::default(),
            dropped: VecDeque::new(),
        }
    }

    /// The values the chain runs with.
    pub fn params(&self) -> &MeshParams {
        &self.params
    }

    /// MAC counters of node `port` (all zero out of range).
    pub fn station_stats(&self, port: usize) -> &MeshStationStats {
        self.nodes
            .get(port)
            .map_or(&self.mac_stats_empty, |n| &n.mac)
    }

    /// SNR of `from`'s frames at `to`, dB (None: no such node).
    pub fn snr_db(&self, from: usize, to: usize) -> Option<f64> {
        (from < self.nodes.len() && to < self.nodes.len()).then(|| self.params.snr_db(from, to))
    }

    /// Probability that one attempt of a data frame of `wire_bytes` from `from` to `to` is
    /// lost with nothing overlapping it (the SNR's error rate and the floor).
    pub fn frame_error_rate(&self, from: usize, to: usize, wire_bytes: u32) -> Option<f64> {
        let snr = self.snr_db(from, to)?;
        if !self.params.senses(to, from) {
            return Some(1.0);
        }
        let mpdu = self.params.mpdu_bytes(wire_bytes);
        let e = radio::frame_error_rate(snr, self.params.ht.modulation(), mpdu);
        Some(1.0 - (1.0 - e) * (1.0 - self.params.frame_error_rate))
    }

    /// Whether node `at` senses node `from`.
    pub fn senses(&self, at: usize, from: usize) -> bool {
        at < self.nodes.len() && from < self.nodes.len() && self.params.senses(at, from)
    }

    /// Power of transmitter `src` (a node, or the background) at node `at`, mW.
    fn power_mw(&self, src: usize, at: usize) -> f64 {
        match self.params.rx_mw.get(src) {
            Some(row) => row[at],
            None => self.params.background.map_or(0.0, |b| b.2),
        }
    }

    /// Whether node `at` senses transmitter `src` (a node, or the background); a node senses
    /// itself.
    fn senses_src(&self, at: usize, src: usize) -> bool {
        at == src || self.power_mw(src, at) >= self.params.cs_mw
    }

    /// When idle node `k` transmits (None: busy, or nothing to send).
    fn start_ns(&self, k: usize) -> Option<u64> {
        let n = &self.nodes[k];
        if n.busy() || n.queue.is_empty() {
            return None;
        }
        let b = n.backoff?;
        Some(
            n.idle_from_ns
                .saturating_add(self.params.difs_ns)
                .saturating_add(b.saturating_mul(self.params.slot_ns)),
        )
    }

    /// The next decision, ns.
    fn next_decision_ns(&self) -> Option<u64> {
        let mut t = self.on_air.iter().map(|e| e.end_ns).min();
        t = earliest(t, self.responses.iter().map(|r| r.0).min());
        t = earliest(t, self.navs.iter().map(|r| r.0).min());
        t = earliest(t, self.background_next_ns);
        for (k, n) in self.nodes.iter().enumerate() {
            t = earliest(t, n.exchange.as_ref().and_then(|x| x.end_ns));
            t = earliest(t, self.start_ns(k));
        }
        t
    }

    /// Take every decision due by `now_ns`.
    fn catch_up(&mut self, now_ns: u64) -> u64 {
        let now = now_ns.max(self.now_ns);
        self.now_ns = now;
        while let Some(t) = self.next_decision_ns().filter(|&t| t <= now) {
            self.step(t);
        }
        now
    }

    /// Everything that happens at `t`, in the order of the module doc.
    fn step(&mut self, t: u64) {
        while let Some(i) = self.on_air.iter().position(|e| e.end_ns == t) {
            let e = self.on_air.remove(i);
            self.end_emission(t, e);
        }
        while let Some(i) = self.navs.iter().position(|v| v.0 == t) {
            let (_, src) = self.navs.remove(i);
            for k in 0..self.nodes.len() {
                if k != src && self.senses_src(k, src) {
                    let n = &mut self.nodes[k];
                    n.nav = n.nav.saturating_sub(1);
                    self.release(t, k);
                }
            }
        }
        for k in 0..self.nodes.len() {
            if self.nodes[k]
                .exchange
                .as_ref()
                .is_some_and(|x| x.end_ns == Some(t))
            {
                self.finish(t, k);
            }
        }
        let starters: Vec<usize> = (0..self.nodes.len())
            .filter(|&k| self.start_ns(k) == Some(t))
            .collect();
        while let Some(i) = self.responses.iter().position(|r| r.0 == t) {
            let (_, from, to, end) = self.responses.remove(i);
            let rx = DataRx {
                to,
                response: true,
                interference_mw: 0.0,
                half_duplex: false,
                hidden: false,
            };
            self.begin_emission(t, from, end, Some(rx));
        }
        if self.background_next_ns == Some(t) {
            if let Some((busy, burst_ns, _)) = self.params.background {
                let end = t.saturating_add(burst_ns);
                let src = self.nodes.len();
                self.begin_emission(t, src, end, None);
                let gap = background_gap_ns(&mut self.background_rng, busy, burst_ns);
                self.background_next_ns = Some(end.saturating_add(gap));
            }
        }
        for k in starters {
            self.transmit(t, k);
        }
    }

    /// A transmission from `src` starts at `t`: who it interferes with, who senses it.
    fn begin_emission(&mut self, t: u64, src: usize, end_ns: u64, data: Option<DataRx>) {
        let mut new = Emission { src, end_ns, data };
        for i in 0..self.on_air.len() {
            let old = self.on_air[i];
            if old.src == src {
                continue;
            }
            if let Some(mut d) = old.data {
                self.overlap(&mut d, old.src, src);
                self.on_air[i].data = Some(d);
            }
            if let Some(mut d) = new.data {
                self.overlap(&mut d, src, old.src);
                new.data = Some(d);
            }
        }
        self.on_air.push(new);
        for k in 0..self.nodes.len() {
            if self.senses_src(k, src) {
                let n = &mut self.nodes[k];
                let was_busy = n.busy();
                n.sensed += 1;
                if n.sensed >= 2 && n.exchange.is_none() {
                    n.garbled = true;
                }
                if !was_busy {
                    self.freeze(t, k);
                }
            }
        }
    }

    /// Data frame `d` from `sender` is overlapped at its receiver by a transmission of `other`.
    fn overlap(&self, d: &mut DataRx, sender: usize, other: usize) {
        if other == d.to {
            d.half_duplex = true;
        } else {
            d.interference_mw += self.power_mw(other, d.to);
        }
        if !self.senses_src(sender, other) {
            d.hidden = true;
        }
    }

    /// Node `k`'s channel turns busy at `t`: its backoff counts the idle slots it saw.
    fn freeze(&mut self, t: u64, k: usize) {
        let first = self.nodes[k]
            .idle_from_ns
            .saturating_add(self.params.difs_ns);
        let counted = t.saturating_sub(first) / self.params.slot_ns;
        let n = &mut self.nodes[k];
        n.backoff = match n.backoff {
            Some(b) if b > counted => Some(b - counted),
            // Ran out with an empty queue: post-backoff done.
            Some(_) if n.queue.is_empty() => None,
            // Its backoff ends at `t` itself: it transmits when its channel is next idle.
            Some(b) => {
                debug_assert_eq!(b, counted, "a frame waited past its backoff");
                Some(0)
            }
            None => None,
        };
    }

    /// A transmission ends at `t`: a data frame's reception is decided; its sensers may go idle.
    fn end_emission(&mut self, t: u64, e: Emission) {
        match e.data {
            Some(d) if d.response => self.receive_response(e.src, d),
            Some(d) => {
                self.receive(t, e.src, d);
                // Answered: its sensers keep the NAV its Duration field set (10.3.2.4, virtual
                // carrier sense) through SIFS and the response.
                let answered = self.nodes[e.src]
                    .exchange
                    .as_ref()
                    .filter(|x| x.answered)
                    .and_then(|x| x.end_ns);
                if let Some(end) = answered {
                    self.navs.push((end, e.src));
                    for k in 0..self.nodes.len() {
                        if k != e.src && self.senses_src(k, e.src) {
                            self.nodes[k].nav += 1;
                        }
                    }
                }
            }
            None => {}
        }
        for k in 0..self.nodes.len() {
            if self.senses_src(k, e.src) {
                let n = &mut self.nodes[k];
                n.sensed = n.sensed.saturating_sub(1);
                self.release(t, k);
            }
        }
    }

    /// Node `k`'s channel may have gone idle at `t`: its idle period starts (AckTimeout later
    /// after a garbled reception).
    fn release(&mut self, t: u64, k: usize) {
        let n = &mut self.nodes[k];
        if !n.busy() {
            n.idle_from_ns = if n.garbled {
                t.saturating_add(self.params.ack_timeout_ns)
            } else {
                t
            };
            n.garbled = false;
        }
    }
}

/// The idle time before the next background burst: exponential with mean `burst (1 - f) / f`.
fn background_gap_ns(rng: &mut ChaCha8Rng, busy: f64, burst_ns: u64) -> u64 {
    let mean = burst_ns as f64 * (1.0 - busy) / busy;
    let u: f64 = rng.random();
    (-mean * (1.0 - u).ln()).round() as u64
}

impl<P: NetPacket> Medium<P> for MeshChain<P> {
    fn ports(&self) -> usize {
        self.nodes.len()
    }

    fn enqueue(&mut self, now_ns: u64, from: usize, to: usize, pkt: P) -> Result<(), Dropped<P>> {
        let now = self.catch_up(now_ns);
        let n_nodes = self.nodes.len();
        if from >= n_nodes || to >= n_nodes || from == to {
            // A driver bug (or a broadcast, which the chain does not carry); refuse.
            return Err(Dropped {
                pkt,
                reason: DropReason::QueueFull,
            });
        }
        let bytes = pkt.wire_bytes();
        let p = &self.params;
        let n = &self.nodes[from];
        let full = p.queue_pkts.is_some_and(|l| n.pkts >= l)
            || p.queue_bytes
                .is_some_and(|l| n.bytes.saturating_add(u64::from(bytes)) > l);
        if full {
            let st = &mut self.stats[from];
            st.dropped_queue_full_pkts = st.dropped_queue_full_pkts.saturating_add(1);
            return Err(Dropped {
                pkt,
                reason: DropReason::QueueFull,
            });
        }
        let first = n.idle_from_ns.saturating_add(p.difs_ns);
        let slot = p.slot_ns;
        let n = &mut self.nodes[from];
        let contends = n.queue.is_empty();
        let busy = n.busy();
        n.queue.push_back(Frame {
            to,
            bytes,
            pkt: Some(pkt),
            failures: 0,
        });
        n.pkts += 1;
        n.bytes = n.bytes.saturating_add(u64::from(bytes));
        let st = &mut self.stats[from];
        st.enqueued_pkts = st.enqueued_pkts.saturating_add(1);
        if !contends {
            return Ok(());
        }
        if !busy {
            // The first boundary strictly after now, unless a pending backoff ends later.
            let j = if now < first {
                0
            } else {
                (now - first) / slot + 1
            };
            n.backoff = Some(n.backoff.map_or(j, |k| k.max(j)));
        } else if n.backoff.is_none() {
            n.backoff = Some(draw_backoff(&mut self.rng, n.cw));
        }
        Ok(())
    }

    fn next_event_ns(&self) -> Option<u64> {
        earliest(self.flight.next_arrival_ns(), self.next_decision_ns())
    }

    fn pop_delivered(&mut self, now_ns: u64) -> Option<P> {
        let now = self.catch_up(now_ns);
        self.flight.pop_due(now, &mut self.stats)
    }

    fn pop_dropped(&mut self) -> Option<(u64, Dropped<P>)> {
        self.dropped.pop_front()
    }

    fn lanes(&self) -> usize {
        self.nodes.len()
    }

    fn queue_pkts(&mut self, now_ns: u64, lane: usize) -> u32 {
        self.catch_up(now_ns);
        self.nodes.get(lane).map_or(0, |n| n.pkts)
    }

    fn queue_bytes(&mut self, now_ns: u64, lane: usize) -> u64 {
        self.catch_up(now_ns);
        self.nodes.get(lane).map_or(0, |n| n.bytes)
    }

    fn stats(&self, lane: usize) -> &LinkStats {
        &self.stats[lane.min(self.stats.len() - 1)]
    }

    fn mac_stats(&self, lane: usize) -> Option<MacStats> {
        (lane < self.nodes.len()).then(|| MacStats::Mesh {
            stats: *self.station_stats(lane),
        })
    }
}
