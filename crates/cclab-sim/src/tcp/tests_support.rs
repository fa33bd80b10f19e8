//! Fixtures for the sender tests against Linux 6.18 (`tests_recovery.rs`, `tests_sack.rs`,
//! `tests_rack.rs`, `tests_window.rs`): a Reno sender driven with hand-built ACKs. Sequence numbers are in segments
//! of `MSS` bytes and every segment of a flight leaves at the same instant.

use crate::cc::{self, CaState, Params};
use crate::tcp::ecn::EcnMode;
use crate::tcp::segment::{AckSeg, DataSeg, SeqRange};
use crate::tcp::sender::{AckCounting, Sender, SenderConfig, SenderEvent};

pub(super) const MSS: u32 = 1000;
pub(super) const MS: u64 = 1_000_000;

/// How a test sender differs from the default (SACK, timestamps, HZ 1000, bulk, no ECN).
#[derive(Clone, Copy)]
pub(super) struct Setup {
    pub timestamps: bool,
    pub sack: bool,
    pub max_cwnd_pkts: u32,
    /// Segments the application sends (`u64::MAX`: bulk).
    pub size_segs: u64,
    pub hz: u32,
    pub ecn: EcnMode,
    pub ack_counting: AckCounting,
    /// The host's `tso_defer` (`tcp_tso_should_defer`).
    pub tso_defer: bool,
    /// The congestion control.
    pub cc: &'static str,
    /// The socket send buffer (`sndbuf.rs`; these tests are about loss recovery, so by default
    /// the application has written all).
    pub sndbuf: cclab_net::host::SndbufMode,
    /// `tcp_wmem`.
    pub tcp_wmem_bytes: [u64; 3],
}

impl Default for Setup {
    fn default() -> Self {
        Setup {
            timestamps: true,
            sack: true,
            max_cwnd_pkts: u32::MAX,
            size_segs: u64::MAX,
            hz: 1000,
            ecn: EcnMode::Off,
            ack_counting: AckCounting::Segments,
            tso_defer: false,
            cc: "reno",
            sndbuf: cclab_net::host::SndbufMode::Unlimited,
            tcp_wmem_bytes: cclab_net::host::LINUX_TCP_WMEM_BYTES,
        }
    }
}

impl Setup {
    /// The sender, after the handshake's 10 ms RTT sample.
    pub fn sender(self) -> Sender {
        let cc = cc::build(self.cc, &Params::new()).unwrap();
        let mut s = Sender::new(
            SenderConfig {
                mss_bytes: MSS,
                initial_cwnd_pkts: 10,
                max_cwnd_pkts: self.max_cwnd_pkts,
                sack: self.sack,
                timestamps: self.timestamps,
                frto: true,
                tlp: false,
                rto_min_us: 200_000,
                rto_initial_us: 1_000_000,
                rto_max_us: 120_000_000,
                rto_min_mode: Default::default(),
                rtt_gains: Default::default(),
                eifel_detection: true,
                dsack_undo: true,
                sto_response: Default::default(),
                size_bytes: self.size_segs.saturating_mul(MSS as u64),
                clock: crate::tcp::clock::KernelClock::exact(self.hz),
                ecn: self.ecn,
                stack: cclab_net::host::HostStack {
                    tso_defer: self.tso_defer,
                    sndbuf: self.sndbuf,
                    tcp_wmem_bytes: self.tcp_wmem_bytes,
                    ..Default::default()
                },
                ack_counting: self.ack_counting,
                writer: Default::default(),
            },
            cc,
        );
        s.syn_rtt_sample(0, 10_000);
        s
    }
}

/// The default sender (SACK), with or without timestamps and with a cwnd clamp.
pub(super) fn sender_with(timestamps: bool, max_cwnd_pkts: u32) -> Sender {
    Setup {
        timestamps,
        max_cwnd_pkts,
        ..Setup::default()
    }
    .sender()
}

/// An ACK of everything below segment `ack`, SACKing `[start, end)` segment ranges (the first
/// one may be a D-SACK), echoing `tsecr` (0: no timestamp echo).
pub(super) fn ack(ack: u64, sacks: &[(u64, u64)], tsecr: u32) -> AckSeg {
    let mut a = AckSeg {
        ack: ack * MSS as u64,
        rwnd_bytes: 1 << 30,
        sack: [SeqRange::default(); 4],
        n_sack: sacks.len() as u8,
        tsval: 1,
        tsecr,
        ece: false,
        data_ack: 0,
    };
    for (i, &(s, e)) in sacks.iter().enumerate() {
        a.sack[i] = SeqRange {
            start: s * MSS as u64,
            end: e * MSS as u64,
        };
    }
    a
}

/// Segments 0-9 at t = 0 (TSval 1), all acked at 10 ms: cwnd 20 and segments 10-29 in flight,
/// sent at 10 ms with TSval 11 when 10 segments had been delivered.
pub(super) fn warm_up(s: &mut Sender) {
    let mut out = Vec::new();
    s.on_start(0, &mut out);
    assert_eq!(out.len(), 10);
    out.clear();
    let tsecr = if s.cfg.timestamps { 1 } else { 0 };
    s.on_ack(10 * MS, &ack(10, &[], tsecr), &mut out);
    assert_eq!(s.tp.snd_cwnd, 20);
    assert_eq!((out.first().unwrap().seq, out.len()), (10 * MSS as u64, 20));
    assert!(out.iter().all(|d| !d.retrans && d.tsval == tsecr * 11));
}

pub(super) fn on_ack(s: &mut Sender, t_ns: u64, a: AckSeg) -> Vec<DataSeg> {
    let mut out = Vec::new();
    s.on_ack(t_ns, &a, &mut out);
    out
}

/// The details of the `undo` events so far.
pub(super) fn undo_details(s: &Sender) -> Vec<String> {
    s.events
        .iter()
        .filter(|e| e.1 == SenderEvent::Undo)
        .map(|e| e.2.clone())
        .collect()
}

/// Segments 13-15 are held back by the network while 16-29 arrive: at 20 ms RACK (no
/// reordering seen yet, so no reordering window with 14 segments SACKed) marks them lost and
/// fast recovery retransmits them (TSval 21). At 21 ms the originals arrive, one ACK for 13
/// (a partial ACK echoing the original's TSval 11), one for 14-15.
pub(super) fn spurious_recovery(s: &mut Sender, timestamps: bool) {
    warm_up(s);
    let out = on_ack(s, 20 * MS, ack(13, &[(16, 30)], timestamps as u32 * 11));
    assert_eq!(s.tp.ca_state, CaState::Recovery);
    let retrans: Vec<u64> = out
        .iter()
        .filter(|d| d.retrans)
        .map(|d| d.seq / MSS as u64)
        .collect();
    assert_eq!(retrans, [13, 14, 15]);
    assert_eq!(s.stats.retrans_pkts, 3);
}

/// Fire the retransmission timer at its deadline; returns that time, ns.
pub(super) fn fire_rto(s: &mut Sender) -> (u64, Vec<DataSeg>) {
    let mut out = Vec::new();
    let rto_at = s.timer_deadline_ns().unwrap();
    s.on_timer(rto_at, &mut out);
    assert_eq!(s.tp.ca_state, CaState::Loss);
    (rto_at, out)
}
