//! An 802.11 cell under the Distributed Coordination Function: N ports (stations, one of them
//! the access point by convention; the cell does not care) contending for one channel.
//!
//! # The model (IEEE 802.11-2016 clause 10.3, numbered as ns-3 quotes the 2016 edition)
//! Each port is one contender with its own drop-tail queue (`queue_pkts`, `queue_bytes`, the
//! frame in transmission included); an access point's queue holds everything it sends, TCP
//! ACKs included. Every station hears every other (one collision domain, no hidden terminals).
//!
//! - **Backoff** (10.3.3, 10.3.4.3). A station draws its backoff uniformly in `[0, CW]` slots.
//!   After the medium has been idle for DIFS, the counter is decremented at the end of each
//!   idle slot; it freezes while the medium is busy and resumes after the next DIFS. The
//!   station transmits at the slot boundary where its counter is 0. CW starts at CWmin, becomes
//!   `min(2 CW + 1, CWmax)` after each failed attempt, and returns to CWmin after a success or a
//!   drop.
//!   With `backoff_rule = "bianchi"` a waiting station also counts each busy period as one
//!   slot, as the time step of Bianchi's (2000) Markov chain does: the cell then reproduces that
//!   chain (tests/dcf.rs checks it against an exact simulation of the chain).
//! - **Post-backoff.** After every exchange the sender draws a new backoff, whether or not it
//!   has another frame; the counter runs down in idle slots with an empty queue too. A frame
//!   offered to a station with no backoff pending goes at the first slot boundary after it is
//!   offered if the medium is idle (DIFS included), else the station draws a backoff.
//! - **Collisions.** Transmissions starting at the same slot boundary collide: every frame
//!   fails (no capture). The medium is busy for the longest of them, then for the response
//!   timeout, which every colliding sender waits out.
//! - **Exchange.** DATA, SIFS, Ack; with `rts_threshold_bytes` and a longer PSDU: RTS, SIFS,
//!   CTS, SIFS, DATA, SIFS, Ack (a collision then costs an RTS). Ack, RTS and CTS go at the
//!   control rate. A failed attempt (collision, or frame error) costs the frame (or RTS) and the
//!   AckTimeout / CTSTimeout: aSIFSTime + aSlotTime + aRxPHYStartDelay (10.3.2.9).
//! - **Retries** (dot11ShortRetryLimit / dot11LongRetryLimit as one `retry_limit`, default 7
//!   attempts, as ns-3's FrameRetryLimit): after the last failed attempt the frame is dropped
//!   ([`DropReason::Retry`], at the end of its timeout, from [`Medium::pop_dropped`]).
//! - **Frame errors.** Each port has a frame error rate; an attempt that does not collide is
//!   lost with the larger of its sender's and receiver's rates (so with the access point at 0,
//!   a station's rate applies to its uplink and downlink alike), drawn once per attempt on the
//!   data frame (RTS, CTS and Ack are not lost). A lost attempt is retried like a collision.
//! - **Airtimes** ([`phy`]): PHY preamble and header, MAC header + LLC/SNAP + FCS around the
//!   packet's wire bytes, OFDM symbol rounding and the 2.4 GHz signal extension; presets for
//!   802.11b, 802.11g and 802.11n ([`Standard`]), every value overridable in [`DcfSpec`].
//! - **Rate adaptation** ([`rate`], `rate_adaptation`, default off). With `"arf"` or `"aarf"`
//!   each port keeps, per destination port (as ns-3 keeps a state per remote station), a rate
//!   on the ladder of the standard's rates (up to `data_rate_bps`, where it starts), moved by
//!   the outcome of each of its data frames: a collision and a frame error are both failures
//!   (an RTS that fails is not reported, as in ns-3). A data frame's airtime is at its
//!   sender's current rate, in a collision too; its Ack goes at the highest basic rate not above
//!   that rate (or at `control_rate_bps` when it is set). RTS and CTS stay at the control rate.
//!   [`DcfCell::rate_bps`] is a port's current rate toward a destination; the MAC counters
//!   count the steps and the attempts at each rate.
//! - A delivered packet comes out at its destination port when its data frame ends, plus
//!   `delay_ms`.
//! - **Lanes**: one per port. `enqueued_pkts`, `dropped_queue_full_pkts`,
//!   `dropped_retry_pkts` and `tx_bytes` (data frames put on the air, retransmissions
//!   included) count at the sending port, `delivered_*` at the destination port; a port's queue
//!   holds the frame in its exchange until the exchange ends. [`DcfCell::station_stats`] has
//!   the MAC counters (attempts, collisions, frame errors).
//!
//! # We diverge
//! - No EIFS: after a failed exchange every station, not only the senders, defers until the
//!   response timeout has run out, then DIFS (the standard's bystanders would wait EIFS from the
//!   end of the frame they could not decode; ns-3 does). So all stations keep one slot grid.
//! - Access without backoff is taken at a slot boundary (at most one slot late), not at any
//!   instant, so every transmission starts on the common grid.
//! - No capture, no hidden or exposed terminals, no NAV beyond the exchange itself (everyone
//!   hears everyone), no aggregation (A-MPDU, A-MSDU, block Ack), no EDCA
//!   (one DCF queue per port, AIFS = DIFS), no fragmentation, no beacons or management frames.
//!
//! # Time, determinism, ties
//! Decisions are taken lazily in time order, as [`SharedChannel`](crate::SharedChannel) does:
//! every call first takes every decision due by `now`. Idle time is jumped over: while the
//! medium is idle, each station's backoff is held as a slot count from the idle period's first
//! boundary (`idle_from + DIFS`), so the next transmission starts at `idle_from + DIFS +
//! k_min x slot`, one event; [`Medium::next_event_ns`] names exactly the next start, the end of
//! the exchange on the air, or the next delivery. Ties:
//! - a decision at time t sees only packets offered strictly before t (a packet offered at a
//!   slot boundary waits for the next one), so results do not depend on how often the driver
//!   calls;
//! - every station whose counter ends at the same boundary transmits (they collide);
//! - at the end of an exchange, senders draw their next backoffs in port order; frame error
//!   draws are taken at the start of an attempt, in port order; all draws come from the one
//!   stream given to [`DcfCell::new`], so the same seed gives the same run bit for bit.

pub mod phy;
pub mod rate;
pub mod spec;
mod station;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_rate;
#[cfg(test)]
mod tests_spec;

pub use phy::Standard;
pub use rate::{RateAdaptation, Step};
pub use spec::{BackoffRule, DcfParams, DcfSpec};
pub use station::{DcfStationStats, MAX_RATES};

use rate::Arf;
use station::{Attempt, Station, Waiting};

use crate::link::{DropReason, Dropped, LinkStats};
use crate::medium::{earliest, Flight, MacStats, Medium};
use crate::packet::NetPacket;
use rand::{Rng, RngCore};
use rand_chacha::ChaCha8Rng;
use std::collections::VecDeque;

/// The destination port of a broadcast frame ([`Medium::enqueue`]'s `to`): sent once at the
/// control (basic) rate with no Ack, so it is never retried: a collision or a frame error loses
/// it for everyone (a [`DropReason::Retry`] drop after its one attempt). Delivered once, at the
/// sender's lane's far end (the driver hands it to every other port). It counts in the sender's
/// lane like any frame (`enqueued_pkts`, `tx_bytes`) and in `delivered_*` of the sender's lane.
pub const BROADCAST: usize = usize::MAX;

/// An 802.11 DCF cell of N ports carrying packets of type `P` (see the module doc).
#[derive(Debug)]
pub struct DcfCell<P> {
    params: DcfParams,
    rng: ChaCha8Rng,
    stations: Vec<Station<P>>,
    /// The end of the exchange on the air; None: the medium is idle.
    busy_until_ns: Option<u64>,
    /// The senders of the exchange on the air, in port order.
    attempts: Vec<Attempt>,
    /// When the medium last became idle; slot boundaries are `idle_from + DIFS + j slot`.
    idle_from_ns: u64,
    /// While idle: when the next transmission starts (None: no station has a frame).
    next_start_ns: Option<u64>,
    /// Delivered frames not yet handed out, in arrival order.
    flight: Flight<P>,
    /// Latest time seen.
    now_ns: u64,
    /// Per port (at least one, so `stats` never indexes an empty table).
    stats: Vec<LinkStats>,
    mac_stats_empty: DcfStationStats,
    dropped: VecDeque<(u64, Dropped<P>)>,
}

/// Uniform in `[0, cw]` from one 64-bit draw (widening multiply: bias below 2^-44 for CW <=
/// 2^20, and no dependence on a library's sampling algorithm, so streams stay stable).
fn draw_backoff(rng: &mut ChaCha8Rng, cw: u32) -> u64 {
    ((u128::from(rng.next_u64()) * u128::from(u64::from(cw) + 1)) >> 64) as u64
}

impl<P: NetPacket> DcfCell<P> {
    /// A cell of `ports` ports with `spec` (which should have passed
    /// [`DcfSpec::validate_ports`]; if not, nothing panics: values are clamped), drawing
    /// backoffs and frame errors from `rng`. The medium is idle from time 0.
    pub fn new(spec: DcfSpec, ports: usize, rng: ChaCha8Rng) -> Self {
        let params = spec.params();
        let arf = if params.rate_adaptation.is_none() {
            Vec::new()
        } else {
            vec![Arf::new(&params.arf, params.rates_bps.len()); ports]
        };
        let stations = (0..ports)
            .map(|k| Station {
                queue: VecDeque::new(),
                pkts: 0,
                bytes: 0,
                backoff: None,
                cw: params.cw_min,
                failures: 0,
                sending: false,
                fer: spec
                    .frame_error_rates
                    .get(k)
                    .copied()
                    .unwrap_or(spec.frame_error_rate),
                queue_limit_pkts: spec.port_queue_pkts(k),
                arf: arf.clone(),
                mac: DcfStationStats::default(),
            })
            .collect();
        DcfCell {
            params,
            rng,
            stations,
            busy_until_ns: None,
            attempts: Vec::new(),
            idle_from_ns: 0,
            next_start_ns: None,
            flight: Flight::default(),
            now_ns: 0,
            stats: vec![LinkStats::default(); ports.max(1)],
            mac_stats_empty: DcfStationStats::default(),
            dropped: VecDeque::new(),
        }
    }

    /// The values the cell runs with.
    pub fn params(&self) -> &DcfParams {
        &self.params
    }

    /// MAC counters of `port` (all zero for a port out of range).
    pub fn station_stats(&self, port: usize) -> &DcfStationStats {
        self.stations
            .get(port)
            .map_or(&self.mac_stats_empty, |s| &s.mac)
    }

    /// The data rates a station can be at, slowest first (the ladder; one rate without rate
    /// adaptation). [`DcfStationStats::attempts_by_rate`] is indexed like it.
    pub fn rates_bps(&self) -> &[u64] {
        &self.params.rates_bps
    }

    /// The rate of `port`'s next data frame to port `to`, bit/s: each port keeps a rate per
    /// destination (a station of a WLAN has one, the access point; the access point one per
    /// station). None: no such port.
    pub fn rate_bps(&self, port: usize, to: usize) -> Option<u64> {
        let s = self.stations.get(port)?;
        if to >= self.stations.len() {
            return None;
        }
        Some(self.params.rates_bps[s.rate_index(to, self.top_rate())])
    }

    /// `port`'s mean data rate over its unicast attempts, bit/s (each attempt weighs its
    /// rate; None: no attempt yet, or no such port).
    pub fn mean_rate_bps(&self, port: usize) -> Option<f64> {
        let by_rate = &self.stations.get(port)?.mac.attempts_by_rate;
        let n: u64 = by_rate.iter().sum();
        let bits: f64 = by_rate
            .iter()
            .zip(&self.params.rates_bps)
            .map(|(&k, &r)| k as f64 * r as f64)
            .sum();
        (n > 0).then(|| bits / n as f64)
    }

    /// The fastest rate's index in the ladder.
    fn top_rate(&self) -> usize {
        self.params.rates_bps.len() - 1
    }

    /// Backoff slots `port` still has to count at `now_ns` (frozen while the medium is busy);
    /// None: none pending (or the port is on the air).
    pub fn backoff_slots(&mut self, now_ns: u64, port: usize) -> Option<u64> {
        let now = self.catch_up(now_ns);
        let k = self.stations.get(port)?.backoff?;
        if self.busy_until_ns.is_some() {
            return Some(k);
        }
        let counted = now
            .checked_sub(self.first_boundary_ns())
            .map_or(0, |d| d / self.params.slot_ns);
        (k > counted).then(|| k - counted)
    }

    /// The end of the exchange on the air at `now_ns`; None: the medium is idle.
    pub fn busy_until_ns(&mut self, now_ns: u64) -> Option<u64> {
        self.catch_up(now_ns);
        self.busy_until_ns
    }

    /// The idle period's first slot boundary (DIFS after the medium became idle).
    fn first_boundary_ns(&self) -> u64 {
        self.idle_from_ns.saturating_add(self.params.difs_ns)
    }

    /// Boundary `k` of the idle period.
    fn boundary_ns(&self, k: u64) -> u64 {
        self.first_boundary_ns()
            .saturating_add(k.saturating_mul(self.params.slot_ns))
    }

    /// While idle: the smallest backoff end among stations with a frame.
    fn next_start(&self) -> Option<u64> {
        let k = self
            .stations
            .iter()
            .filter(|s| !s.queue.is_empty())
            .map(|s| {
                debug_assert!(s.backoff.is_some(), "a station with a frame has a backoff");
                s.backoff.unwrap_or(0)
            })
            .min()?;
        Some(self.boundary_ns(k))
    }

    /// Take every decision due by `now_ns` (never going back in time).
    fn catch_up(&mut self, now_ns: u64) -> u64 {
        let now = now_ns.max(self.now_ns);
        self.now_ns = now;
        loop {
            if let Some(end) = self.busy_until_ns {
                if end > now {
                    break;
                }
                self.finish(end);
                continue;
            }
            match self.next_start_ns {
                Some(t) if t <= now => self.start(t),
                _ => break,
            }
        }
        now
    }

    /// The exchange starting at boundary time `t`: who sends, what happens, until when.
    fn start(&mut self, t: u64) {
        let p = &self.params;
        let m = (t - self.first_boundary_ns()) / p.slot_ns;
        debug_assert_eq!(self.boundary_ns(m), t);
        self.attempts.clear();
        // Slots a waiting station counts for this exchange beyond the m idle ones: the busy
        // period is one more under Bianchi's rule.
        let busy_slot = u64::from(p.backoff_rule == BackoffRule::Bianchi);
        for (port, s) in self.stations.iter_mut().enumerate() {
            match s.backoff {
                Some(k) if k == m && !s.queue.is_empty() => {
                    s.backoff = None;
                    s.sending = true;
                    let (bytes, to) = s.queue.front().map_or((0, port), |w| (w.bytes, w.to));
                    self.attempts.push(Attempt {
                        port,
                        broadcast: to == BROADCAST,
                        to,
                        bytes,
                        rts: false,
                        delivered: false,
                    });
                }
                // Frozen after counting m idle slots (Bianchi: and the busy period).
                Some(k) if k > m => s.backoff = Some(k - m - busy_slot),
                // Ran out with an empty queue: nothing pending.
                Some(_) => {
                    debug_assert!(s.queue.is_empty(), "a frame waited past its backoff");
                    s.backoff = None;
                }
                None => {}
            }
        }
        debug_assert!(!self.attempts.is_empty());
        let collided = self.attempts.len() > 1;
        let timeout = p.response_timeout_ns();
        let top = p.rates_bps.len() - 1;
        let mut end = t;
        for a in &mut self.attempts {
            let s = &mut self.stations[a.port];
            s.mac.attempts += 1;
            let to = s.queue.front().map_or(a.port, |w| w.to);
            let broadcast = to == BROADCAST;
            let rts = !broadcast && p.uses_rts(a.bytes);
            a.rts = rts;
            // The sender's current rate to `to` (the ladder's top without rate adaptation).
            let k = s.rate_index(to, top);
            let rate_bps = p.rates_bps[k];
            let data_ns = if broadcast {
                p.broadcast_ns(a.bytes)
            } else {
                s.mac.attempts_by_rate[k.min(MAX_RATES - 1)] += 1;
                p.data_ns_at(a.bytes, rate_bps)
            };
            // A broadcast's sender waits for no response.
            let timeout = if broadcast { 0 } else { timeout };
            let st = &mut self.stats[a.port];
            if collided {
                s.mac.collisions += 1;
                if !rts {
                    st.tx_bytes = st.tx_bytes.saturating_add(u64::from(a.bytes));
                }
                let first_ns = if rts { p.rts_ns() } else { data_ns };
                end = end.max(t.saturating_add(first_ns).saturating_add(timeout));
                continue;
            }
            st.tx_bytes = st.tx_bytes.saturating_add(u64::from(a.bytes));
            let lead_ns = if rts {
                p.rts_ns() + p.cts_ns() + 2 * p.sifs_ns
            } else {
                0
            };
            let data_end = t.saturating_add(lead_ns).saturating_add(data_ns);
            let own_fer = s.fer;
            let fer = if broadcast {
                own_fer
            } else {
                own_fer.max(self.stations[to].fer)
            };
            let s = &mut self.stations[a.port];
            if fer > 0.0 && self.rng.random::<f64>() < fer {
                s.mac.frame_errors += 1;
                end = data_end.saturating_add(timeout);
            } else {
                let w = s.queue.pop_front().expect("a sender has a frame");
                let to = if broadcast { a.port } else { w.to };
                self.flight
                    .push(data_end.saturating_add(p.delay_ns), to, w.bytes, w.pkt);
                a.delivered = true;
                end = if broadcast {
                    data_end
                } else {
                    data_end.saturating_add(p.sifs_ns + p.ack_ns_at(rate_bps))
                };
            }
        }
        self.busy_until_ns = Some(end);
        self.next_start_ns = None;
    }

    /// The end of the exchange on the air, at `end`: outcomes, CW, drops, new backoffs.
    fn finish(&mut self, end: u64) {
        let p = &self.params;
        let collided = self.attempts.len() > 1;
        for a in self.attempts.drain(..) {
            let s = &mut self.stations[a.port];
            s.sending = false;
            // Rate adaptation hears of every unicast data frame's outcome; an RTS that failed
            // is not reported (ns-3 `DoReportRtsFailed` does nothing in ARF and AARF).
            if let Some(arf) = s.arf.get_mut(a.to) {
                let step = if a.delivered {
                    arf.on_success(&p.arf)
                } else if collided && a.rts {
                    None
                } else {
                    arf.on_failure(&p.arf)
                };
                match step {
                    Some(Step::Up) => s.mac.rate_increases += 1,
                    Some(Step::Down) => s.mac.rate_decreases += 1,
                    None => {}
                }
            }
            let gone = if a.delivered {
                s.mac.successes += 1;
                true
            } else {
                s.failures += 1;
                if s.failures >= p.retry_limit || a.broadcast {
                    let w = s
                        .queue
                        .pop_front()
                        .expect("a failed sender keeps its frame");
                    s.mac.retry_drops += 1;
                    let st = &mut self.stats[a.port];
                    st.dropped_retry_pkts = st.dropped_retry_pkts.saturating_add(1);
                    self.dropped.push_back((
                        end,
                        Dropped {
                            pkt: w.pkt,
                            reason: DropReason::Retry,
                        },
                    ));
                    true
                } else {
                    s.cw = s.cw.saturating_mul(2).saturating_add(1).min(p.cw_max);
                    false
                }
            };
            if gone {
                s.pkts -= 1;
                s.bytes -= u64::from(a.bytes);
                s.failures = 0;
                s.cw = p.cw_min;
            }
            s.backoff = Some(draw_backoff(&mut self.rng, s.cw));
        }
        self.busy_until_ns = None;
        self.idle_from_ns = end;
        self.next_start_ns = self.next_start();
    }
}

impl<P: NetPacket> Medium<P> for DcfCell<P> {
    fn ports(&self) -> usize {
        self.stations.len()
    }

    fn enqueue(&mut self, now_ns: u64, from: usize, to: usize, pkt: P) -> Result<(), Dropped<P>> {
        let now = self.catch_up(now_ns);
        let n = self.stations.len();
        if from >= n || (to >= n && to != BROADCAST) || from == to {
            // A driver bug; refuse rather than panic.
            return Err(Dropped {
                pkt,
                reason: DropReason::QueueFull,
            });
        }
        let bytes = pkt.wire_bytes();
        let s = &self.stations[from];
        let full = s.queue_limit_pkts.is_some_and(|l| s.pkts >= l)
            || self
                .params
                .queue_bytes
                .is_some_and(|l| s.bytes.saturating_add(u64::from(bytes)) > l);
        if full {
            let st = &mut self.stats[from];
            st.dropped_queue_full_pkts = st.dropped_queue_full_pkts.saturating_add(1);
            return Err(Dropped {
                pkt,
                reason: DropReason::QueueFull,
            });
        }
        let idle = self.busy_until_ns.is_none();
        let first = self.first_boundary_ns();
        let slot = self.params.slot_ns;
        let s = &mut self.stations[from];
        let contends = !s.sending && s.queue.is_empty();
        s.queue.push_back(Waiting { to, bytes, pkt });
        s.pkts += 1;
        s.bytes = s.bytes.saturating_add(u64::from(bytes));
        let st = &mut self.stats[from];
        st.enqueued_pkts = st.enqueued_pkts.saturating_add(1);
        if !contends {
            // A sender draws at the end of its exchange; a backlogged station already waits.
            return Ok(());
        }
        if idle {
            // The first boundary strictly after now, unless a pending backoff ends later.
            let j = if now < first {
                0
            } else {
                (now - first) / slot + 1
            };
            let k = s.backoff.map_or(j, |k| k.max(j));
            s.backoff = Some(k);
            let t = self.boundary_ns(k);
            self.next_start_ns = Some(self.next_start_ns.map_or(t, |n| n.min(t)));
        } else if s.backoff.is_none() {
            s.backoff = Some(draw_backoff(&mut self.rng, s.cw));
        }
        Ok(())
    }

    fn next_event_ns(&self) -> Option<u64> {
        earliest(
            self.flight.next_arrival_ns(),
            self.busy_until_ns.or(self.next_start_ns),
        )
    }

    fn pop_delivered(&mut self, now_ns: u64) -> Option<P> {
        let now = self.catch_up(now_ns);
        self.flight.pop_due(now, &mut self.stats)
    }

    fn pop_dropped(&mut self) -> Option<(u64, Dropped<P>)> {
        self.dropped.pop_front()
    }

    fn lanes(&self) -> usize {
        self.stations.len()
    }

    fn queue_pkts(&mut self, now_ns: u64, lane: usize) -> u32 {
        self.catch_up(now_ns);
        self.stations.get(lane).map_or(0, |s| s.pkts)
    }

    fn queue_bytes(&mut self, now_ns: u64, lane: usize) -> u64 {
        self.catch_up(now_ns);
        self.stations.get(lane).map_or(0, |s| s.bytes)
    }

    fn stats(&self, lane: usize) -> &LinkStats {
        &self.stats[lane.min(self.stats.len() - 1)]
    }

    fn mac_stats(&self, lane: usize) -> Option<MacStats> {
        (lane < self.stations.len()).then(|| MacStats::Dcf {
            stats: *self.station_stats(lane),
            mean_rate_bps: self.mean_rate_bps(lane),
        })
    }
}
