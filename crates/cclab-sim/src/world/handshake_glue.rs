//! The world's side of a TCP flow's handshake (`crate::tcp::handshake`): its SYN, SYN-ACK and
//! ACK travel the flow's routes as packets (queued, lost, delayed like any other), the
//! connecting side's SYN timer and the listener's SYN-ACK timer use the flow's sender and
//! receiver timer slots until each side is established, and the data starts at once after the
//! ACK. A Multipath TCP connection's subflow 0 opens with MP_CAPABLE; its other subflows start
//! their MP_JOIN handshakes when subflow 0 is established, and join the connection when their
//! own is. Events: `syn`, `syn_retrans`, `synack_retrans`, `established` (one per side),
//! `connect_failed`, and `handshake_drop` for a handshake segment a link dropped.

use super::{Packet, World};
use crate::engine::Event;
use crate::tcp::handshake::{
    ack_wire_bytes, syn_wire_bytes, ConnState, Connector, HsKind, HsSeg, Listener, ReqState,
    SynAckTimeout, SynTimeout,
};
use crate::tcp::segment::Segment;

/// Both ends of one flow's handshake.
pub(super) struct Handshake {
    /// The data sender's socket until it is established.
    pub conn: Connector,
    /// The data receiver's request socket.
    pub listen: Listener,
    /// Bytes on the wire of its SYN, SYN-ACK and ACK.
    syn_wire: u32,
    synack_wire: u32,
    ack_wire: u32,
    /// When the sender was established (`connect()` returned), ns.
    pub established_ns: Option<u64>,
    /// How long after that the application writes first (`flows[].first_write_delay_us`), ns.
    first_write_delay_ns: u64,
}

/// The Multipath TCP option a subflow's handshake carries (RFC 8684, Linux 6.18
/// net/mptcp/protocol.h `TCPOLEN_MPTCP_*`): bytes on its SYN, SYN-ACK and ACK.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum MptcpOption {
    /// Subflow 0: MP_CAPABLE (4, 12 with the listener's key, 20 with both keys).
    Capable,
    /// A later subflow: MP_JOIN (12, 16, 24).
    Join,
}

impl MptcpOption {
    fn bytes(self) -> [u32; 3] {
        match self {
            MptcpOption::Capable => [4, 12, 20],
            MptcpOption::Join => [12, 16, 24],
        }
    }
}

impl Handshake {
    /// A flow's handshake with its settings (`rto_initial_us` is `tcp_timeout_init` at both
    /// ends); `mptcp`: a Multipath TCP subflow's option.
    pub fn new(
        sack: bool,
        timestamps: bool,
        clock: crate::tcp::clock::KernelClock,
        rto_initial_us: u64,
        rto_max_us: u64,
        mptcp: Option<MptcpOption>,
        first_write_delay_ns: u64,
    ) -> Self {
        let [syn, synack, ack] = mptcp.map_or([0; 3], MptcpOption::bytes);
        Handshake {
            conn: Connector::new(timestamps, clock, rto_initial_us, rto_max_us),
            listen: Listener::new(timestamps, clock, rto_initial_us),
            syn_wire: syn_wire_bytes(sack, timestamps) + syn,
            synack_wire: syn_wire_bytes(sack, timestamps) + synack,
            ack_wire: ack_wire_bytes(timestamps) + ack,
            established_ns: None,
            first_write_delay_ns,
        }
    }

    /// Whether the sender still waits for its SYN-ACK (or gave up): its timer slot is ours.
    pub fn sender_connecting(&self) -> bool {
        self.conn.state != ConnState::Established
    }

    /// Whether the receiver is not established yet: its timer slot is the SYN-ACK timer's.
    pub fn receiver_waiting(&self) -> bool {
        self.listen.state != ReqState::Established
    }
}

impl World {
    fn hs(&mut self, f: u32) -> &mut Handshake {
        self.flows[f as usize]
            .hs
            .as_deref_mut()
            .expect("a flow with a handshake")
    }

    /// Flow slot `f`'s application calls `connect()`: the SYN goes out.
    pub(super) fn hs_connect(&mut self, t: u64, f: u32) {
        let seg = self.hs(f).conn.connect(t);
        let rto_ms = self.hs(f).conn.icsk_rto_us as f64 / 1000.0;
        self.hs_event(t, f, "syn", format!("rto_ms={rto_ms:.1}"));
        self.hs_send(t, f, seg);
        self.hs_sender_timer_set(f);
    }

    /// Send `seg` of flow slot `f` into its route: the SYN and ACK on the data's, the SYN-ACK on
    /// the ACKs'.
    fn hs_send(&mut self, t: u64, f: u32, seg: HsSeg) {
        let hs = self.hs(f);
        let wire = match seg.kind {
            HsKind::Syn => hs.syn_wire,
            HsKind::SynAck => hs.synack_wire,
            HsKind::Ack => hs.ack_wire,
        };
        let route = self.flows[f as usize].fwd_route + u32::from(seg.kind == HsKind::SynAck);
        let first = self.routes[route as usize][0];
        let p = Packet {
            flow: f,
            route,
            hop: 0,
            wire,
            seg: Segment::Handshake(seg),
            tag: Default::default(),
        };
        self.enqueue(t, first, p);
    }

    fn hs_event(&mut self, t: u64, f: u32, kind: &'static str, detail: String) {
        let fl = &self.flows[f as usize];
        let id = fl.id as i32;
        let detail = match fl.conn {
            // A subflow's events name it (docs/design.md, "Trace schema").
            Some((_, k)) => format!("{detail} subflow={k}"),
            None => detail,
        };
        self.events.push(t, id, kind, detail);
    }

    fn hs_sender_timer_set(&mut self, f: u32) {
        let at = self.hs(f).conn.timer_ns;
        self.q.set(Event::SenderTimer(f), at);
    }

    fn hs_receiver_timer_set(&mut self, f: u32) {
        let at = self.hs(f).listen.timer_ns;
        self.q.set(Event::ReceiverTimer(f), at);
    }

    /// A handshake segment of flow slot `f` reached the end of its route.
    pub(super) fn hs_arrive(&mut self, t: u64, f: u32, seg: HsSeg) {
        match seg.kind {
            HsKind::Syn => {
                let was_waiting = self.hs(f).receiver_waiting();
                if let Some((synack, retrans)) = self.hs(f).listen.on_syn(t, &seg) {
                    if retrans {
                        let n = self.hs(f).listen.num_retrans;
                        self.hs_event(t, f, "synack_retrans", format!("n={n} via=syn"));
                    }
                    self.hs_send(t, f, synack);
                }
                if was_waiting {
                    self.hs_receiver_timer_set(f);
                }
            }
            HsKind::SynAck => {
                let (opened, ack) = self.hs(f).conn.on_synack(t, &seg);
                if let Some(ack) = ack {
                    self.hs_send(t, f, ack);
                }
                if let Some(o) = opened {
                    self.hs(f).established_ns = Some(t);
                    let conn = self.flows[f as usize].conn;
                    if conn.is_some() {
                        // The subflow joins its connection below (`mptcp_start`).
                        self.flows[f as usize].sender.init_transfer(t, &o);
                    } else {
                        // The handshake's last ACK has gone (above); the application, woken by
                        // connect() returning, writes a little later (`AppStart` on an
                        // established flow: `World::run`).
                        self.flows[f as usize].sender.init_transfer(t, &o);
                        let delay = self.hs(f).first_write_delay_ns;
                        if delay == 0 {
                            self.drive_sender(t, f, |s, buf| s.on_start(t, buf));
                        } else {
                            self.q.push(t + delay, Event::AppStart(f));
                        }
                    }
                    let tp = &self.flows[f as usize].sender.tp;
                    let srtt = if tp.srtt_us == 0 {
                        "none".to_string()
                    } else {
                        format!("{:.3}", (tp.srtt_us >> 3) as f64 / 1000.0)
                    };
                    let detail = format!(
                        "side=sender srtt_ms={srtt} rto_ms={:.1} cwnd={} syn_retrans={}",
                        tp.icsk_rto_us as f64 / 1000.0,
                        tp.snd_cwnd,
                        o.total_retrans
                    );
                    self.hs_event(t, f, "established", detail);
                    match conn {
                        Some((c, k)) => {
                            if k == 0 {
                                // MP_CAPABLE: data may go with the third ACK.
                                self.mptcp_start(t, f);
                            } else {
                                // MP_JOIN: no data before the receiver's ACK of the third ACK
                                // (the fourth ACK, one round trip on: RFC 8684 section 3.2;
                                // 6.18 net/mptcp/protocol.h `__mptcp_subflow_active`, "can't
                                // send if JOIN hasn't completed yet"). `AppStart` on an
                                // established subflow joins it (`World::run`).
                                let rtt_ns =
                                    u64::from(self.flows[f as usize].sender.tp.srtt_us >> 3) * 1000;
                                self.q.push(t + rtt_ns, Event::AppStart(f));
                            }
                            if k == 0 {
                                // The path manager opens the other subflows (MP_JOIN), one
                                // per address the receiver announces, one round trip apart
                                // (`pm_join_delay_ns`).
                                let slots: Vec<u32> = self.conns[c as usize].subflows[1..]
                                    .iter()
                                    .map(|s| s.slot)
                                    .collect();
                                let rtt_ns =
                                    u64::from(self.flows[f as usize].sender.tp.srtt_us >> 3) * 1000;
                                for (j, s) in slots.into_iter().enumerate() {
                                    let at = t + super::mptcp_glue::pm_join_delay_ns(j + 1, rtt_ns);
                                    self.q.push(at, Event::AppStart(s));
                                }
                            }
                        }
                        None => self.after_sender(t, f, false),
                    }
                }
            }
            HsKind::Ack => self.hs_receiver_established(t, f, "ack"),
        }
    }

    /// The receiver's request becomes a connection (on the ACK, or `via` the first data).
    pub(super) fn hs_receiver_established(&mut self, t: u64, f: u32, via: &str) {
        if self.hs(f).listen.on_ack_or_data() {
            self.hs_event(t, f, "established", format!("side=receiver via={via}"));
            self.after_receiver(f);
        }
    }

    /// Flow slot `f`'s SYN timer.
    pub(super) fn hs_on_sender_timer(&mut self, t: u64, f: u32) {
        match self.hs(f).conn.on_timer(t) {
            Some(SynTimeout::Resent(seg)) => {
                let c = &self.hs(f).conn;
                let detail = format!(
                    "n={} rto_ms={:.1}",
                    c.total_rto,
                    c.icsk_rto_us as f64 / 1000.0
                );
                self.hs_event(t, f, "syn_retrans", detail);
                self.hs_send(t, f, seg);
            }
            Some(SynTimeout::GaveUp) => {
                let n = self.hs(f).conn.total_rto;
                self.hs_event(
                    t,
                    f,
                    "connect_failed",
                    format!("side=sender syn_retrans={n}"),
                );
            }
            None => {}
        }
        self.hs_sender_timer_set(f);
    }

    /// Flow slot `f`'s SYN-ACK timer.
    pub(super) fn hs_on_receiver_timer(&mut self, t: u64, f: u32) {
        match self.hs(f).listen.on_timer(t) {
            Some(SynAckTimeout::Resent(seg, n)) => {
                self.hs_event(t, f, "synack_retrans", format!("n={n} via=timer"));
                self.hs_send(t, f, seg);
            }
            Some(SynAckTimeout::Expired) => {
                let n = self.hs(f).listen.num_retrans;
                self.hs_event(
                    t,
                    f,
                    "connect_failed",
                    format!("side=receiver synack_retrans={n}"),
                );
            }
            None => {}
        }
        self.hs_receiver_timer_set(f);
    }
}
