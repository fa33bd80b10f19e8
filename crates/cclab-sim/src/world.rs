//! A simulated network: the scenario lowered (`lower.rs`: the dumbbell or the general form,
//! routes resolved) and built from `cclab-net` links, TCP senders and receivers (and UDP
//! applications, `crate::udp`), and the event loop that moves packets link by link along the route each packet carries.

use crate::cc;
use crate::config::{ms_to_ns, s_to_ns, ConfigError, Scenario, TraceMode};
use crate::engine::{Event, EventQueue};
use crate::lower::{lower, Lowered, SimHop};
use crate::mptcp::Connection;
use crate::tcp::ecn::EcnMode;
use crate::tcp::receiver::{Receiver, ReceiverConfig};
use crate::tcp::segment::{
    AckSeg, DataSeg, Segment, HEADER_BYTES, SACK_BASE_BYTES, SACK_BLOCK_BYTES, TS_OPTION_BYTES,
};
use crate::tcp::sender::{Sender, SenderConfig};
use crate::trace::{EventTrace, FlowTrace, LinkTrace};
use crate::udp::{CbrSender, Transport, UdpReceiver, UdpStats, UDP_IP_HEADER_BYTES};
use crate::{RunOutput, SimError};
use cclab_net::host::DeviceRelease;
use cclab_net::medium::Medium;

mod handshake_glue;
mod mptcp_glue;
mod sto;

/// Bytes of a SYN or SYN-ACK on the wire (20 B IPv4 + 40 B TCP with MSS, SACK, TS, WS options),
/// for the idle-path RTT sample of a flow without a handshake.
const SYN_BYTES: u64 = 60;
use crate::agents::{Agents, Terminal};
use crate::middleware::TerminalCounter;
use cclab_net::link::{Dropped, Link};
use cclab_net::packet::NetPacket;
use cclab_net::Ecn;
use cclab_net::{radio, rng};

/// Receive window used when the scenario sets none: large enough never to limit.
const UNLIMITED_RWND_BYTES: u64 = 1 << 40;

/// A packet in the simulated network.
#[derive(Debug, Clone, Copy)]
pub struct Packet {
    /// Index of the flow it belongs to.
    pub flow: u32,
    /// Where it is going: an index into the world's routes (a list of links).
    pub route: u32,
    /// Index into its route of the link it is on.
    pub hop: u8,
    /// Bytes on the wire (headers included).
    pub wire: u32,
    pub seg: Segment,
    /// A data segment's copy number and RTO episode (`world/sto.rs`); default otherwise.
    tag: sto::CopyTag,
}

impl NetPacket for Packet {
    fn wire_bytes(&self) -> u32 {
        self.wire
    }
    /// Data segments carry the codepoint the sender set; pure ACKs are Not-ECT.
    fn ecn(&self) -> Ecn {
        match &self.seg {
            Segment::Data(d) => d.ecn,
            Segment::Ack(_) | Segment::Handshake(_) | Segment::Udp(_) => Ecn::NotEct,
        }
    }
    fn set_ce(&mut self) {
        if let Segment::Data(d) = &mut self.seg {
            d.ecn = Ecn::Ce;
        }
    }
    /// The connection: what FQ-CoDel classifies by (a flow's 5-tuple on a real link; its data
    /// and its ACKs travel on different link directions, so they never share a queue).
    fn flow_hash(&self) -> u64 {
        u64::from(self.flow)
    }
    /// A data segment that continues the skb its flow's previous segment began.
    fn gso_follows(&self) -> bool {
        matches!(&self.seg, Segment::Data(d) if d.skb_follows)
    }
}

/// One simulated element: a link direction (a 2-port medium) or a multi-port medium.
struct LinkSlot {
    /// Its name in events (`bottleneck.fwd`, `cell`).
    name: String,
    link: Box<dyn Medium<Packet>>,
    /// It may drop packets after taking them (an AQM, a shared channel's air loss), and any call
    /// may move its next wake-up.
    late_drops: bool,
    /// Index of its first lane in the links table (its lanes are consecutive).
    first_lane: u32,
    /// Per lane, for an interface queue (a host device, a host's port on a medium): packets
    /// its senders did not offer because it was full (local drops, counted with its queue-full
    /// drops); empty until the first.
    local_drops: Vec<u64>,
    /// A host device with `device_release = "start"`: it frees a data segment's bytes below TCP
    /// when the segment starts transmission (the kernel backend's htb + TUN), not when sent.
    release_at_start: bool,
}

/// A TCP flow.
struct FlowSlot {
    /// Its index in the scenario's flows (the traces' `flow`).
    id: u32,
    name: String,
    sender: Sender,
    receiver: Receiver,
    /// Index in `World::routes` of the data direction's links; the ACKs' is the next one.
    fwd_route: u32,
    start_ns: u64,
    /// Round-trip time of the handshake on the idle path, ns (see `Sender::syn_rtt_sample`):
    /// the first RTT sample of a flow without a handshake.
    syn_rtt_ns: u64,
    /// Its handshake (`flows[].handshake`, TCP only); None: it starts established.
    hs: Option<Box<handshake_glue::Handshake>>,
    timestamps: bool,
    last_traced: Option<(u32, u32, u8)>,
    /// The sender's interface queue: its device, or its port's queue on the medium its data
    /// enters first.
    device: Option<InterfaceQueue>,
    /// The sender's local drops already counted on its device.
    local_drops_seen: u64,
    /// A Multipath TCP subflow: (its connection in `World::conns`, its index k there).
    conn: Option<(u32, u8)>,
    /// One connection of a flow's workload (`crate::workload`); None for a lone connection.
    seq: Option<ConnSeq>,
    /// Ground truth of its RTOs (`world/sto.rs`).
    sto: sto::StoBook,
}

/// Where a slot stands in its flow's sequence of connections.
#[derive(Debug, Clone, Copy)]
struct ConnSeq {
    /// Its index in the sequence (the events' `conn=`).
    k: u32,
    /// The next connection's slot, and the think time before it starts; None for the last.
    next: Option<(u32, u64)>,
    /// The next connection was scheduled (this one completed).
    chained: bool,
    /// The next connection started: the flows trace follows that one now.
    superseded: bool,
}

/// A UDP flow: its application at each end.
struct UdpSlot {
    /// Its index in the scenario's flows.
    id: u32,
    name: String,
    /// Index in `World::routes` of its datagrams' links.
    route: u32,
    start_ns: u64,
    tx: CbrSender,
    rx: UdpReceiver,
    /// Its datagrams the network dropped.
    dropped_pkts: u64,
}

/// Where a sender's packets wait below TCP (see [`crate::tcp::tsq`]).
#[derive(Debug, Clone, Copy)]
struct InterfaceQueue {
    /// Its element.
    elem: u32,
    /// Its lane in that element (a device: 0; a medium: the sender's port).
    lane: u32,
    /// How many packets it holds at most.
    limit_pkts: u32,
}

/// The simulation of one scenario with one seed.
pub struct World {
    links: Vec<LinkSlot>,
    /// Routes: the elements a packet crosses, in order, with their ports (two per flow: data,
    /// then ACKs).
    routes: Vec<Vec<SimHop>>,
    /// Names of the links table's lanes (a link direction's one, each medium port's).
    lane_names: Vec<String>,
    /// Per flow, the names of the links its data and its ACKs cross (for the summary).
    paths: Vec<crate::FlowPath>,
    flows: Vec<FlowSlot>,
    /// Multipath TCP connections (their subflows are flow slots in `flows`).
    conns: Vec<Connection>,
    udp: Vec<UdpSlot>,
    q: EventQueue,
    flow_trace: FlowTrace,
    link_trace: LinkTrace,
    events: EventTrace,
    mode: TraceMode,
    interval_ns: u64,
    duration_ns: u64,
    /// The run's budget (`sim.max_events`, `sim.max_wall_s`).
    max_events: u64,
    max_wall_s: Option<f64>,
    data_buf: Vec<DataSeg>,
    /// `device_release = "start"`: (flow slot, device, bytes) of segments that started
    /// transmission during the current event, released after it.
    started_freed: Vec<(u32, u32, u32)>,
    ack_buf: Vec<AckSeg>,
    /// ACKs an upstream Multipath TCP connection's read sends on its other subflows.
    ack_buf_read: Vec<AckSeg>,
    /// The S1 middleware's terminals, if it runs.
    agents: Option<Agents>,
}

/// `Packet::route` of a middleware broadcast (`Packet::flow` is then its terminal's index).
const BEACON_ROUTE: u32 = u32::MAX;

impl World {
    /// Build the network and flows of `sc`.
    pub fn new(sc: &Scenario) -> Result<World, SimError> {
        // Scenario::validate, with the network lowered once: the lowering is its last check.
        sc.check_fields()?;
        let net = lower(sc)?;
        let mut links: Vec<LinkSlot> = Vec::with_capacity(net.links.len() + net.media.len());
        let mut lane_names = Vec::new();
        for l in &net.links {
            let cfg = l.spec.link_config().map_err(|e| {
                SimError::Config(ConfigError::new(format!("{}.capacity_trace", l.field), e))
            })?;
            // A radio link's two directions draw their fades from one stream (both stall).
            let link: Box<dyn Medium<Packet>> = Box::new(
                Link::new(cfg, rng::stream(sc.seed, &l.name))
                    .with_spike_rng(radio::spike_rng(sc.seed, &l.name)),
            );
            links.push(LinkSlot {
                name: l.name.clone(),
                link,
                // An AQM drops from its queue, the RLC discards late: both come out later.
                late_drops: !l.spec.qdisc.is_drop_tail() || l.spec.radio.is_some(),
                first_lane: lane_names.len() as u32,
                local_drops: Vec::new(),
                release_at_start: false,
            });
            lane_names.push(l.name.clone());
        }
        for m in &net.media {
            links.push(LinkSlot {
                name: m.name.clone(),
                link: m.model.build(m.nodes.len(), rng::stream(sc.seed, &m.name)),
                late_drops: true,
                first_lane: lane_names.len() as u32,
                local_drops: Vec::new(),
                release_at_start: false,
            });
            lane_names.extend(m.lanes.iter().cloned());
        }
        let first_device = links.len() as u32;
        for d in &net.devices {
            let cfg = d
                .spec
                .link_config()
                .map_err(|e| SimError::Config(ConfigError::new(format!("host.{}", d.name), e)))?;
            let mut link = Link::new(cfg, rng::stream(sc.seed, &d.name));
            // With `device_release = "start"` the device is the kernel backend's htb + TUN: it
            // frees an skb's bytes below TCP when the skb starts and hands over whole skbs
            // (`Link::set_skb_handover`).
            let stack = net.stacks.get(&d.host).copied().unwrap_or_default();
            let at_start = stack.device_release == DeviceRelease::Start;
            link.set_skb_handover(at_start);
            links.push(LinkSlot {
                name: d.name.clone(),
                link: Box::new(link),
                late_drops: false,
                first_lane: lane_names.len() as u32,
                local_drops: Vec::new(),
                release_at_start: at_start,
            });
            lane_names.push(d.name.clone());
        }
        // A flow's routes: its hosts' devices in front of the links.
        let device_hop = |d: Option<u32>| {
            d.map(|d| SimHop {
                element: first_device + d,
                from: 0,
                to: 1,
            })
        };
        let full_routes: Vec<(Vec<SimHop>, Vec<SimHop>)> = net
            .flows
            .iter()
            .map(|r| {
                let fwd = device_hop(r.sender_device)
                    .into_iter()
                    .chain(r.fwd.iter().copied());
                let rev = device_hop(r.ack_device)
                    .into_iter()
                    .chain(r.rev.iter().copied());
                (fwd.collect(), rev.collect())
            })
            .collect();
        let n_links = net.links.len();
        let n_media = net.media.len();
        // Idle-path time of one element for a 60-byte SYN: propagation plus serialisation.
        let syn_ns = |h: &SimHop| -> u64 {
            let e = h.element as usize;
            let link = |s: &cclab_net::spec::LinkSpec| {
                ms_to_ns(s.delay_ms)
                    + s.rate_bps
                        .filter(|&r| r > 0)
                        .map_or(0, |r| SYN_BYTES * 8 * 1_000_000_000 / r)
            };
            if e < n_links {
                link(&net.links[e].spec)
            } else if e < n_links + n_media {
                net.media[e - n_links]
                    .model
                    .idle_crossing_ns(SYN_BYTES as u32)
            } else {
                link(&net.devices[e - n_links - n_media].spec)
            }
        };
        let clock = sc.sim.kernel_clock();
        let mut flows: Vec<FlowSlot> = Vec::new();
        let mut udp = Vec::new();
        let mut routes = Vec::with_capacity(2 * sc.flows.len());
        let agent_hosts = sc.middleware_hosts();
        let n_udp = sc
            .flows
            .iter()
            .filter(|f| f.transport == Transport::Udp)
            .count();
        // One TCP flow slot per TCP flow and per Multipath TCP subflow.
        let n_tcp_slots: usize = net
            .flows
            .iter()
            .zip(&sc.flows)
            .map(|(r, f)| match f.transport {
                Transport::Udp => 0,
                Transport::Tcp => f.workload.as_ref().map_or(1, |w| w.connections as usize),
                Transport::Mptcp => r.subflows.len(),
            })
            .sum();
        let mut q = EventQueue::with_sources(links.len(), n_tcp_slots, agent_hosts.len(), n_udp);
        let mut conns: Vec<Connection> = Vec::new();
        // Per scenario flow, its TCP slot (None: a UDP flow).
        let mut tcp_slot: Vec<Option<u32>> = Vec::with_capacity(sc.flows.len());
        for (i, ((f, r0), (fwd0, rev0))) in sc
            .flows
            .iter()
            .zip(&net.flows)
            .zip(&full_routes)
            .enumerate()
        {
            if f.transport == Transport::Udp {
                let fwd_route = routes.len() as u32;
                routes.push(fwd0.clone());
                routes.push(rev0.clone());
                let start_ns = s_to_ns(f.start_s);
                q.push(start_ns, Event::UdpSend(udp.len() as u32));
                udp.push(UdpSlot {
                    id: i as u32,
                    name: f.name.clone(),
                    route: fwd_route,
                    start_ns,
                    tx: CbrSender::new(f.rate_bps, f.payload_bytes, start_ns, f.size_bytes),
                    rx: UdpReceiver::default(),
                    dropped_pkts: 0,
                });
                tcp_slot.push(None);
                continue;
            }
            tcp_slot.push(Some(flows.len() as u32));
            // A TCP flow is one leg on its route; a Multipath TCP connection one per subflow.
            let mptcp = f.transport == Transport::Mptcp;
            // A workload's connections are legs one after another on the same route, each with
            // its size and the think time before it.
            let draws: Vec<(u64, u64)> = match &f.workload {
                Some(w) => w.draw(
                    f.size_bytes,
                    &mut rng::stream(sc.seed, &format!("{}.workload", f.name)),
                ),
                None => vec![(f.size_bytes, 0)],
            };
            let legs: Vec<&crate::lower::FlowRoute> = if mptcp {
                r0.subflows.iter().collect()
            } else {
                vec![r0; draws.len()]
            };
            let sequence = f.workload.is_some();
            let conn_start_ns = s_to_ns(f.start_s);
            let mut rtt0_ns = 0;
            let first_slot = flows.len() as u32;
            let sized = |b: u64| if b == 0 { u64::MAX } else { b };
            let size_bytes = sized(f.size_bytes);
            for (k, r) in legs.iter().enumerate() {
                let size_bytes = if sequence {
                    sized(draws[k].0)
                } else {
                    size_bytes
                };
                let (fwd, rev): (Vec<SimHop>, Vec<SimHop>) = if mptcp {
                    (
                        device_hop(r.sender_device)
                            .into_iter()
                            .chain(r.fwd.iter().copied())
                            .collect(),
                        device_hop(r.ack_device)
                            .into_iter()
                            .chain(r.rev.iter().copied())
                            .collect(),
                    )
                } else {
                    (fwd0.clone(), rev0.clone())
                };
                let (fwd, rev): (&Vec<SimHop>, &Vec<SimHop>) = (&fwd, &rev);
                // The handshake's RTT on the idle path: propagation both ways plus the serialisation
                // of a 60-byte SYN and SYN-ACK (20 B IP + 40 B TCP with options) on every hop.
                let syn_rtt_ns: u64 = fwd.iter().chain(rev).map(syn_ns).sum();
                // The connections of a workload share their flow's two routes.
                let fwd_route = if sequence && k > 0 {
                    flows[first_slot as usize].fwd_route
                } else {
                    routes.push(fwd.clone());
                    routes.push(rev.clone());
                    routes.len() as u32 - 2
                };
                let stack = net.stacks.get(&f.sender).copied().unwrap_or_default();
                let algo = cc::build(&f.cc, &f.cc_params).map_err(|e| {
                    SimError::Config(crate::config::cc_error(&format!("flows[{i}]"), &e))
                })?;
                // An algorithm with Linux's TCP_CONG_NEEDS_ECN (DCTCP) uses ECN whatever the setting
                // (`tcp_ca_needs_ecn`); with ECN otherwise off, its peer is taken to run it too and
                // echo CE precisely (`dctcp_ece_ack_update`: what `ecn = "low"` does).
                let ecn = if algo.needs_ecn() && f.ecn == EcnMode::Off {
                    EcnMode::Low
                } else {
                    f.ecn
                };
                let sender = Sender::new(
                    SenderConfig {
                        mss_bytes: f.mss_bytes,
                        initial_cwnd_pkts: f.initial_cwnd_pkts,
                        max_cwnd_pkts: if f.max_cwnd_pkts == 0 {
                            u32::MAX
                        } else {
                            f.max_cwnd_pkts
                        },
                        sack: f.sack,
                        timestamps: f.timestamps,
                        frto: f.frto,
                        tlp: f.tlp,
                        rto_min_us: (f.rto_min_ms * 1000.0).round() as u64,
                        rto_initial_us: (f.rto_initial_ms * 1000.0).round() as u64,
                        rto_max_us: (f.rto_max_ms * 1000.0).round() as u64,
                        rto_min_mode: f.rto_min_mode,
                        rtt_gains: f.rtt_gains,
                        eifel_detection: f.eifel_detection,
                        dsack_undo: f.dsack_undo,
                        sto_response: f.sto_response,
                        // A subflow sends only what its connection maps to it (crate::mptcp).
                        size_bytes: if mptcp { 0 } else { size_bytes },
                        clock,
                        ecn,
                        stack,
                        ack_counting: f.ack_counting,
                        writer: f.writer,
                    },
                    algo,
                );
                // A v0.9x subflow writes what its connection maps to it, not from a send buffer;
                // an upstream one holds what it is given in its own (`mptcp::MptcpStack`).
                let upstream = mptcp && f.mptcp_stack == crate::mptcp::MptcpStack::Linux;
                let mut sender = if mptcp && !upstream {
                    sender.without_send_buffer()
                } else {
                    sender
                };
                // Without a device, the port queue on a medium it sends onto is its interface queue.
                let device = match r.sender_device {
                    Some(d) => Some(InterfaceQueue {
                        elem: first_device + d,
                        lane: 0,
                        limit_pkts: net.devices[d as usize].spec.queue_pkts.unwrap_or(u32::MAX),
                    }),
                    None => fwd
                        .first()
                        .filter(|h| (n_links..n_links + n_media).contains(&(h.element as usize)))
                        .map(|h| {
                            sender.below.set_medium_port_queue();
                            InterfaceQueue {
                                elem: h.element,
                                lane: h.from,
                                limit_pkts: net.media[h.element as usize - n_links]
                                    .model
                                    .port_queue_pkts(h.from as usize)
                                    .unwrap_or(u32::MAX),
                            }
                        }),
                };
                sender.tp.prandom_state = if k == 0 {
                    cclab_net::rng::stream_seed(sc.seed, &format!("{}.cc", f.name))
                } else if sequence {
                    cclab_net::rng::stream_seed(sc.seed, &format!("{}.c{k}.cc", f.name))
                } else {
                    cclab_net::rng::stream_seed(sc.seed, &format!("{}.{k}.cc", f.name))
                };
                let mut receiver = Receiver::new(ReceiverConfig {
                    mss_bytes: f.mss_bytes,
                    sack: f.sack,
                    timestamps: f.timestamps,
                    delayed_ack: f.delayed_ack,
                    ack_every_pkts: f.ack_every_pkts,
                    // A subflow's window is the connection's, applied at the data level.
                    rwnd_bytes: if f.rwnd_bytes == 0 || mptcp {
                        UNLIMITED_RWND_BYTES
                    } else {
                        f.rwnd_bytes
                    },
                    autotune: f.rwnd_bytes == 0 || mptcp,
                    size_bytes: if mptcp { u64::MAX } else { size_bytes },
                    clock,
                    ecn,
                });
                receiver.read_driven_acks = upstream;
                receiver.conn_driven = mptcp;
                // Subflow 0 starts with the flow, established. Without the handshake as
                // packets, subflow k >= 1 joins as the handshake would have it (`hs_arrive`):
                // its MP_JOIN SYN k round trips of subflow 0 after the start
                // (`mptcp_glue::pm_join_delay_ns`), its SYN-ACK and the fourth ACK one round
                // trip of its own path each.
                let start_ns = if k == 0 {
                    conn_start_ns
                } else {
                    conn_start_ns + mptcp_glue::pm_join_delay_ns(k, rtt0_ns) + 2 * syn_rtt_ns
                };
                if k == 0 {
                    rtt0_ns = syn_rtt_ns;
                }
                // With the handshake a later subflow starts when subflow 0 is established; a
                // workload's later connections start when the one before completes.
                let start_ns = if sequence && k > 0 {
                    u64::MAX
                } else {
                    if k == 0 || !f.handshake {
                        q.push(start_ns, Event::AppStart(flows.len() as u32));
                    }
                    start_ns
                };
                let seq = sequence.then(|| ConnSeq {
                    k: k as u32,
                    next: draws
                        .get(k + 1)
                        .map(|&(_, think_ns)| (flows.len() as u32 + 1, think_ns)),
                    chained: false,
                    superseded: false,
                });
                let hs = f.handshake.then(|| {
                    Box::new(handshake_glue::Handshake::new(
                        f.sack,
                        f.timestamps,
                        clock,
                        (f.rto_initial_ms * 1000.0).round() as u64,
                        (f.rto_max_ms * 1000.0).round() as u64,
                        mptcp.then_some(if k == 0 {
                            handshake_glue::MptcpOption::Capable
                        } else {
                            handshake_glue::MptcpOption::Join
                        }),
                        (f.first_write_delay_us * 1000.0).round() as u64,
                    ))
                });
                flows.push(FlowSlot {
                    id: i as u32,
                    name: f.name.clone(),
                    sender,
                    receiver,
                    fwd_route,
                    start_ns,
                    syn_rtt_ns,
                    hs,
                    timestamps: f.timestamps,
                    last_traced: None,
                    local_drops_seen: 0,
                    device,
                    conn: mptcp.then_some((conns.len() as u32, k as u8)),
                    seq,
                    sto: Default::default(),
                });
            }
            if mptcp {
                let slots: Vec<u32> = (first_slot..flows.len() as u32).collect();
                conns.push(Connection::new(
                    i as u32,
                    f.name.clone(),
                    conn_start_ns,
                    size_bytes,
                    if f.rwnd_bytes == 0 {
                        UNLIMITED_RWND_BYTES
                    } else {
                        f.rwnd_bytes
                    },
                    &slots,
                    legs.iter().map(|r| r.fwd_nodes.clone()).collect(),
                    crate::mptcp::recv::ConnRcvSpace::new(f.mss_bytes, f.timestamps),
                ));
                conns.last_mut().expect("pushed").set_stack(f.mptcp_stack);
            }
        }
        let interval_ns = ms_to_ns(sc.sim.trace_interval_ms).max(1);
        q.push(0, Event::Sample);
        let agents = sc
            .middleware
            .as_ref()
            .filter(|_| !agent_hosts.is_empty())
            .map(|spec| {
                let media = n_links as u32..(n_links + n_media) as u32;
                let terminals = agent_hosts
                    .iter()
                    .enumerate()
                    .map(|(i, host)| {
                        // Its TCP connections (scenario indices).
                        let own: Vec<usize> = (0..sc.flows.len())
                            .filter(|&f| &sc.flows[f].sender == host && tcp_slot[f].is_some())
                            .collect();
                        // The medium its first flow's data enters (after its device, if any).
                        let medium = own.first().and_then(|&f| {
                            full_routes[f]
                                .0
                                .iter()
                                .find(|h| media.contains(&h.element))
                                .map(|h| (h.element, h.from, h.to))
                        });
                        let on_air = medium.is_some_and(|(e, _, _)| {
                            net.media[e as usize - n_links].model.kind()
                                == cclab_net::MediumKind::Dcf
                        });
                        let phase = Agents::phase_ns(spec, sc.seed, host);
                        q.push(phase, Event::Agent(i as u32));
                        Terminal {
                            host: host.clone(),
                            flows: own.iter().filter_map(|&f| tcp_slot[f]).collect(),
                            counter: TerminalCounter::new(i as u64, spec.count_window_ns()),
                            medium,
                            on_air,
                            next_count_ns: phase,
                            next_step_ns: phase,
                        }
                    })
                    .collect();
                Agents {
                    spec: spec.clone(),
                    terminals,
                }
            });
        let paths = net
            .flows
            .iter()
            .zip(&full_routes)
            .map(|(r, (fwd, rev))| crate::FlowPath {
                flow: r.flow.clone(),
                fwd: fwd.iter().map(|h| hop_name(&net, h)).collect(),
                rev: rev.iter().map(|h| hop_name(&net, h)).collect(),
                fwd_nodes: r.fwd_nodes.clone(),
                rev_nodes: r.rev_nodes.clone(),
            })
            .collect();
        Ok(World {
            links,
            lane_names,
            routes,
            paths,
            flows,
            conns,
            udp,
            q,
            flow_trace: FlowTrace::default(),
            link_trace: LinkTrace::default(),
            events: EventTrace::default(),
            mode: sc.sim.trace,
            interval_ns,
            duration_ns: s_to_ns(sc.duration_s),
            max_events: sc.sim.max_events,
            max_wall_s: sc.sim.max_wall_s,
            data_buf: Vec::new(),
            started_freed: Vec::new(),
            ack_buf: Vec::new(),
            ack_buf_read: Vec::new(),
            agents,
        })
    }

    /// Run to the end; `progress` gets the fraction of simulated time done now and then and
    /// returns false to cancel the run (then the result is `SimError::Cancelled`).
    pub fn run(
        mut self,
        mut progress: Option<&mut dyn FnMut(f64) -> bool>,
    ) -> Result<RunOutput, SimError> {
        let end = self.duration_ns;
        let budget = crate::budget::Budget::start(self.max_events, self.max_wall_s, end);
        while let Some((t, ev)) = self.q.pop_until(end) {
            match ev {
                Event::LinkArrival(l) => self.on_link_arrival(t, l),
                Event::SenderTimer(f) => self.on_sender_timer(t, f),
                Event::ReceiverTimer(f) => self.on_receiver_timer(t, f),
                // A subflow whose MP_JOIN handshake is done joins its connection (after the
                // fourth ACK, `hs_arrive`).
                Event::AppStart(f)
                    if self.flows[f as usize]
                        .hs
                        .as_ref()
                        .is_some_and(|h| h.established_ns.is_none()) =>
                {
                    self.begin_connection(t, f);
                    self.hs_connect(t, f)
                }
                Event::AppStart(f)
                    if self.flows[f as usize].conn.is_none()
                        && self.flows[f as usize]
                            .hs
                            .as_ref()
                            .is_some_and(|h| h.established_ns.is_some()) =>
                {
                    // The first write, `first_write_delay_us` after connect() returned.
                    self.drive_sender(t, f, |s, buf| s.on_start(t, buf));
                    self.after_sender(t, f, false);
                }
                Event::AppStart(f) if self.flows[f as usize].conn.is_some() => {
                    self.mptcp_start(t, f)
                }
                Event::AppStart(f) => {
                    self.begin_connection(t, f);
                    self.start_sender(t, f);
                    self.after_sender(t, f, false);
                }
                Event::Agent(a) => self.on_agent(t, a),
                Event::UdpSend(u) => self.on_udp_send(t, u),
                Event::Sample => self.on_sample(t),
            }
            if !self.started_freed.is_empty() {
                self.run_start_releases(t);
            }
            budget
                .check(self.q.processed, t, self.q.due_by(end))
                .map_err(SimError::Budget)?;
            if self.q.processed & 0xffff == 0 {
                if let Some(p) = progress.as_deref_mut() {
                    if !p(t as f64 / end as f64) {
                        return Err(SimError::Cancelled);
                    }
                }
            }
        }
        if let Some(p) = progress {
            p(1.0);
        }
        Ok(self.finish())
    }

    fn on_sample(&mut self, t: u64) {
        for l in self.links.iter_mut() {
            if l.late_drops {
                // Catch up first: dequeues and drops due by `t` change the counters.
                l.link.queue_pkts(t, 0);
            }
            for lane in 0..l.link.lanes() {
                let st = l.link.stats(lane);
                let drops = st.dropped_pkts() + l.local_drops.get(lane).copied().unwrap_or(0);
                let tx = st.tx_bytes;
                let ce = st.ce_marks;
                let lt = &mut self.link_trace;
                lt.link.push((l.first_lane + lane as u32) as i32);
                lt.t_s.push(t as f64 * 1e-9);
                lt.queue_pkts.push(l.link.queue_pkts(t, lane));
                lt.queue_bytes.push(l.link.queue_bytes(t, lane));
                lt.drops.push(drops);
                lt.tx_bytes.push(tx);
                lt.ce_marks.push(ce);
            }
        }
        for l in 0..self.links.len() as u32 {
            if self.links[l as usize].late_drops {
                self.drain_late_drops(t, l);
                self.schedule_link(l);
            }
        }
        if self.mode == TraceMode::Interval {
            for f in 0..self.flows.len() {
                let fl = &self.flows[f];
                // A flow with a handshake is traced once it is established (as the kernel
                // backend samples a socket once connect() returned).
                if t >= fl.start_ns && fl.hs.as_ref().is_none_or(|h| !h.sender_connecting()) {
                    self.record_flow(t, f as u32);
                }
            }
        }
        let next = t + self.interval_ns;
        if next <= self.duration_ns {
            self.q.push(next, Event::Sample);
        }
    }

    fn schedule_link(&mut self, l: u32) {
        let na = self.links[l as usize].link.next_event_ns();
        self.q.set(Event::LinkArrival(l), na);
    }

    fn on_link_arrival(&mut self, t: u64, l: u32) {
        while let Some(p) = self.links[l as usize].link.pop_delivered(t) {
            if p.route == BEACON_ROUTE {
                if p.hop == 0 {
                    // At the access point: on to every station.
                    let relay = self
                        .agents
                        .as_ref()
                        .and_then(|ag| ag.terminals[p.flow as usize].medium);
                    if let Some((_, _, ap)) = relay {
                        let b = Packet { hop: 1, ..p };
                        self.enqueue_beacon(t, l, ap, cclab_net::dcf::BROADCAST, b);
                    }
                } else {
                    self.on_beacon(t, l, p.flow);
                }
                continue;
            }
            // Leaving its sender's device: the NIC has sent it (`tcp_wfree`).
            // (With `device_release = "start"` its bytes went when it started: none are left.)
            let sent = match p.seg {
                Segment::Data(d) if p.hop == 0 && d.below_bytes > 0 => {
                    let fl = &self.flows[p.flow as usize];
                    (p.route == fl.fwd_route && fl.device.is_some_and(|q| q.elem == l))
                        .then_some(d.below_bytes)
                }
                _ => None,
            };
            self.forward(t, p);
            if let Some(len) = sent {
                self.on_tx_complete(t, p.flow, len);
            }
        }
        self.drain_late_drops(t, l);
        self.release_started(t, l);
        self.schedule_link(l);
    }

    /// `device_release = "start"` on device `l`: the data segments that have started
    /// transmission by `t` give their skb's bytes back to their sockets (`tun_net_xmit`
    /// orphans the skb the qdisc hands it: `tcp_wfree`), once each.
    fn release_started(&mut self, t: u64, l: u32) {
        if !self.links[l as usize].release_at_start {
            return;
        }
        let freed = &mut self.started_freed;
        self.links[l as usize]
            .link
            .for_each_started(t, &mut |p: &mut Packet| {
                if let Segment::Data(d) = &mut p.seg {
                    if p.hop == 0 && d.below_bytes > 0 {
                        freed.push((p.flow, l, d.below_bytes));
                        d.below_bytes = 0;
                    }
                }
            });
    }

    /// The completions [`World::release_started`] found, after the event that started the
    /// segments (as `tcp_wfree` defers the socket's write to the TSQ tasklet); a sender they
    /// let write may start more.
    fn run_start_releases(&mut self, t: u64) {
        while !self.started_freed.is_empty() {
            let freed = std::mem::take(&mut self.started_freed);
            for (f, l, len) in freed {
                if self.flows[f as usize].device.is_some_and(|q| q.elem == l) {
                    self.on_tx_complete(t, f, len);
                }
            }
        }
    }

    /// Put `p` on the link at its current hop, or deliver it at the end of its path.
    #[inline(always)]
    fn forward(&mut self, t: u64, mut p: Packet) {
        p.hop += 1;
        let fi = p.flow as usize;
        if let Some(&h) = self.routes[p.route as usize].get(p.hop as usize) {
            self.enqueue(t, h, p);
            return;
        }
        // The end of its route: the flow's receiver (data) or sender (ACKs) takes it.
        match p.seg {
            Segment::Data(d) => {
                if self.flows[fi]
                    .hs
                    .as_ref()
                    .is_some_and(|h| h.receiver_waiting())
                {
                    // The ACK was lost: the first data segment (ACK flag set) establishes.
                    self.hs_receiver_established(t, p.flow, "data");
                }
                let mut buf = std::mem::take(&mut self.ack_buf);
                let fl = &mut self.flows[fi];
                let dup = fl.receiver.holds(d.seq);
                fl.sto.on_arrival(d.seq, p.tag, dup);
                fl.receiver.on_data(t, &d, &mut buf);
                if self.flows[fi].conn.is_some() {
                    self.mptcp_delivered(t, p.flow, &mut buf);
                }
                if self.flows[fi].seq.is_some() {
                    self.chain_connection(fi);
                }
                self.send_acks(t, p.flow, &mut buf);
                self.ack_buf = buf;
                self.after_receiver(p.flow);
                self.trace_rcvbuf_grow(t, fi);
            }
            Segment::Ack(a) if self.flows[fi].conn.is_some() => self.mptcp_on_ack(t, p.flow, &a),
            Segment::Handshake(h) => self.hs_arrive(t, p.flow, h),
            Segment::Ack(a) => {
                self.drive_sender(t, p.flow, |s, buf| s.on_ack(t, &a, buf));
                self.after_sender(t, p.flow, true);
            }
            Segment::Udp(d) => self.udp[fi].rx.on_datagram(t, &d),
        }
    }

    fn enqueue(&mut self, t: u64, h: SimHop, p: Packet) {
        let l = h.element;
        match self.links[l as usize]
            .link
            .enqueue(t, h.from as usize, h.to as usize, p)
        {
            Ok(()) => self.schedule_link(l),
            Err(d) if d.pkt.route == BEACON_ROUTE => {
                // The terminal's port queue was full: the daemon's send fails, nobody hears it.
                if self.links[l as usize].late_drops {
                    self.schedule_link(l);
                }
            }
            Err(d) => {
                self.log_drop(t, l, d);
                if self.links[l as usize].late_drops {
                    // Its catch-up may have moved the next dequeue.
                    self.schedule_link(l);
                }
            }
        }
        self.drain_late_drops(t, l);
    }

    /// An events row for a packet link `l` dropped at `t`: kind `drop` (data, or a UDP
    /// datagram) or `ack_drop`, detail `link=<name> reason=<random|queue_full|aqm|...>
    /// seq=<seq, ack, or the datagram's number>`.
    fn log_drop(&mut self, t: u64, l: u32, d: Dropped<Packet>) {
        let (kind, seq, id) = match d.pkt.seg {
            Segment::Handshake(h) => {
                let detail = format!(
                    "link={} reason={} seg={}",
                    self.links[l as usize].name,
                    d.reason.name(),
                    h.kind.name()
                );
                let fl = &self.flows[d.pkt.flow as usize];
                let detail = match fl.conn {
                    Some((_, k)) => format!("{detail} subflow={k}"),
                    None => detail,
                };
                self.events.push(t, fl.id as i32, "handshake_drop", detail);
                return;
            }
            Segment::Data(s) => {
                let fl = &mut self.flows[d.pkt.flow as usize];
                fl.sto.on_drop(s.seq, d.pkt.tag);
                ("drop", s.seq, fl.id)
            }
            Segment::Ack(a) => ("ack_drop", a.ack, self.flows[d.pkt.flow as usize].id),
            Segment::Udp(u) => {
                let slot = &mut self.udp[d.pkt.flow as usize];
                slot.dropped_pkts += 1;
                ("drop", u.seq, slot.id)
            }
        };
        let mut detail = format!(
            "link={} reason={} seq={}",
            self.links[l as usize].name,
            d.reason.name(),
            seq
        );
        if let Segment::Data(_) | Segment::Ack(_) = d.pkt.seg {
            let fl = &self.flows[d.pkt.flow as usize];
            if let Some((_, k)) = fl.conn {
                detail.push_str(&format!(" subflow={k}"));
            }
            if let Some(c) = fl.seq {
                detail.push_str(&format!(" conn={}", c.k));
            }
        }
        self.events.push(t, id as i32, kind, detail);
    }

    /// Log the packets element `l` dropped after taking them (an AQM from its queue, a shared
    /// channel on the air, a MAC at its retry limit), at their own times. A data segment dropped
    /// from its sender's interface queue frees its skb (`tcp_wfree` from `kfree_skb`): a TSQ
    /// completion, taken now (`t`).
    fn drain_late_drops(&mut self, t: u64, l: u32) {
        if !self.links[l as usize].late_drops {
            return;
        }
        let mut freed = Vec::new();
        while let Some((td, d)) = self.links[l as usize].link.pop_dropped() {
            if d.pkt.route == BEACON_ROUTE {
                continue; // a broadcast lost in a collision: nobody hears it
            }
            if let Segment::Data(s) = d.pkt.seg {
                let fl = &self.flows[d.pkt.flow as usize];
                if d.pkt.hop == 0
                    && d.pkt.route == fl.fwd_route
                    && fl.device.is_some_and(|q| q.elem == l)
                {
                    freed.push((d.pkt.flow, s.below_bytes));
                }
            }
            self.log_drop(td, l, d);
        }
        for (f, len) in freed {
            self.on_tx_complete(t, f, len);
        }
    }

    fn send_data(&mut self, t: u64, f: u32, buf: &mut Vec<DataSeg>) {
        let ts = if self.flows[f as usize].timestamps {
            TS_OPTION_BYTES
        } else {
            0
        };
        let ts = ts
            + self.flows[f as usize]
                .conn
                .map_or(0, |_| crate::mptcp::DSS_DATA_BYTES);
        let route = self.flows[f as usize].fwd_route;
        let first = self.routes[route as usize][0];
        let mut retx = 0usize;
        for d in buf.drain(..) {
            let wire = d.len + HEADER_BYTES + ts;
            let tag = if d.retrans {
                self.retx_tag(f, d.seq, retx)
            } else {
                sto::CopyTag::default()
            };
            retx += d.retrans as usize;
            self.enqueue(
                t,
                first,
                Packet {
                    flow: f,
                    route,
                    hop: 0,
                    wire,
                    seg: Segment::Data(d),
                    tag,
                },
            );
        }
        self.release_started(t, first.element);
        if retx > 0 {
            let log = &mut self.flows[f as usize].sender.sto.retx_episodes;
            debug_assert_eq!(log.len(), retx, "a retransmission without its episode");
            log.clear();
        }
    }

    /// The tag of the `k`-th retransmission of this batch of flow slot `f` (`world/sto.rs`).
    #[cold]
    fn retx_tag(&mut self, f: u32, seq: u64, k: usize) -> sto::CopyTag {
        let fl = &mut self.flows[f as usize];
        let episode = fl.sender.sto.retx_episodes.get(k).copied().unwrap_or(0);
        fl.sto.tag(seq, true, episode)
    }

    fn send_acks(&mut self, t: u64, f: u32, buf: &mut Vec<AckSeg>) {
        let ts = if self.flows[f as usize].timestamps {
            TS_OPTION_BYTES
        } else {
            0
        };
        let ts = ts
            + self.flows[f as usize]
                .conn
                .map_or(0, |_| crate::mptcp::DSS_ACK_BYTES);
        let route = self.flows[f as usize].fwd_route + 1;
        let first = self.routes[route as usize][0];
        for a in buf.drain(..) {
            let sack = if a.n_sack > 0 {
                SACK_BASE_BYTES + SACK_BLOCK_BYTES * a.n_sack as u32
            } else {
                0
            };
            let wire = HEADER_BYTES + ts + sack;
            self.enqueue(
                t,
                first,
                Packet {
                    flow: f,
                    route,
                    hop: 0,
                    wire,
                    seg: Segment::Ack(a),
                    tag: Default::default(),
                },
            );
        }
    }

    fn on_sender_timer(&mut self, t: u64, f: u32) {
        if self.flows[f as usize]
            .hs
            .as_ref()
            .is_some_and(|h| h.sender_connecting())
        {
            return self.hs_on_sender_timer(t, f);
        }
        if self.flows[f as usize].conn.is_some() {
            return self.mptcp_on_timer(t, f);
        }
        self.drive_sender(t, f, |s, buf| s.on_timer(t, buf));
        self.after_sender(t, f, false);
    }

    /// The NIC sent a data segment of flow `f` that held `len` bytes below TCP; TSQ may let
    /// it write.
    fn on_tx_complete(&mut self, t: u64, f: u32, len: u32) {
        if self.flows[f as usize].conn.is_some() {
            return self.mptcp_on_tx_complete(t, f, len);
        }
        if self.drive_sender(t, f, |s, buf| s.on_tx_complete(t, len, buf)) {
            self.after_sender(t, f, false);
        }
    }

    /// One call into flow slot `f`'s sender: tell it the room in its interface queue, let `op`
    /// run it, and send what it wrote. Returns whether it wrote anything.
    fn drive_sender(
        &mut self,
        t: u64,
        f: u32,
        op: impl FnOnce(&mut Sender, &mut Vec<DataSeg>),
    ) -> bool {
        let mut buf = std::mem::take(&mut self.data_buf);
        self.set_device_room(t, f);
        op(&mut self.flows[f as usize].sender, &mut buf);
        let fl = &self.flows[f as usize];
        if fl.sto.facts.len() != fl.sender.sto.rtos.len() {
            self.sto_new_rtos(f);
        }
        let wrote = !buf.is_empty();
        self.send_data(t, f, &mut buf);
        self.data_buf = buf;
        wrote
    }

    /// A workload's connection `f` starts: the one before it leaves the flows trace, and it
    /// says so in the events (`conn_start`, detail `conn=<k> size_bytes=<n>`).
    fn begin_connection(&mut self, t: u64, f: u32) {
        let Some(c) = self.flows[f as usize].seq else {
            return;
        };
        self.flows[f as usize].start_ns = t;
        if c.k > 0 {
            if let Some(prev) = self.flows[f as usize - 1].seq.as_mut() {
                prev.superseded = true;
            }
        }
        let fl = &self.flows[f as usize];
        let detail = format!("conn={} size_bytes={}", c.k, fl.sender.cfg.size_bytes);
        self.events.push(t, fl.id as i32, "conn_start", detail);
    }

    /// After data reached connection `fi`'s receiver: once it has every byte, the next
    /// connection of the workload starts a think time later.
    fn chain_connection(&mut self, fi: usize) {
        let fl = &mut self.flows[fi];
        let (Some(c), Some(done)) = (fl.seq.as_mut(), fl.receiver.completion_ns) else {
            return;
        };
        if c.chained {
            return;
        }
        c.chained = true;
        if let Some((next, think_ns)) = c.next {
            self.q
                .push(done.saturating_add(think_ns), Event::AppStart(next));
        }
    }

    /// Record the RTOs flow slot `f`'s sender took in its last call (before their
    /// retransmissions are tagged).
    #[cold]
    fn sto_new_rtos(&mut self, f: u32) {
        let fl = &mut self.flows[f as usize];
        while fl.sto.facts.len() < fl.sender.sto.rtos.len() {
            let seq = fl.sender.sto.rtos[fl.sto.facts.len()].seq;
            let holds = fl.receiver.holds(seq);
            fl.sto.on_rto(seq, holds);
        }
    }

    /// Flow slot `f`'s sender starts: without a handshake its idle-path RTT sample first (with
    /// one, `Sender::init_transfer` took the handshake's), then its first window.
    fn start_sender(&mut self, t: u64, f: u32) {
        let syn_rtt_us = self.flows[f as usize].syn_rtt_ns / 1000;
        let sample = self.flows[f as usize].hs.is_none();
        self.drive_sender(t, f, |s, buf| {
            if sample {
                s.syn_rtt_sample(t, syn_rtt_us);
            }
            s.on_start(t, buf);
        });
    }

    /// Tell flow `f`'s sender how many packets its device takes now, and count the local
    /// drops of its last call on the device.
    fn set_device_room(&mut self, t: u64, f: u32) {
        let fl = &mut self.flows[f as usize];
        let Some(q) = fl.device else {
            return;
        };
        let dev = &mut self.links[q.elem as usize];
        let queued = dev.link.queue_pkts(t, q.lane as usize);
        let room = q.limit_pkts.saturating_sub(queued);
        // tsq = "adaptive" levels the socket up to the others with bytes on this interface.
        let peer_rate = if fl.sender.below.stack.tsq == cclab_net::host::TsqMode::Adaptive {
            self.flows
                .iter()
                .enumerate()
                .filter(|&(k, g)| {
                    k != f as usize
                        && g.sender.below.wmem_bytes > 0
                        && g.device
                            .is_some_and(|d| d.elem == q.elem && d.lane == q.lane)
                })
                .map(|(_, g)| g.sender.tp.pacing_rate_bytes_per_s)
                .max()
                .unwrap_or(0)
        } else {
            0
        };
        self.flows[f as usize]
            .sender
            .set_device_room(room, peer_rate);
    }

    /// UDP application `u` sends the datagrams due by `t` into its route's first element (a
    /// full interface queue drops them there: UDP has no backpressure).
    fn on_udp_send(&mut self, t: u64, u: u32) {
        let route = self.udp[u as usize].route;
        let first = self.routes[route as usize][0];
        while let Some(at) = self.udp[u as usize].tx.next_send_ns().filter(|&at| at <= t) {
            let d = self.udp[u as usize].tx.send(at);
            let p = Packet {
                flow: u,
                route,
                hop: 0,
                wire: d.len + UDP_IP_HEADER_BYTES,
                seg: Segment::Udp(d),
                tag: Default::default(),
            };
            self.enqueue(t, first, p);
        }
        if let Some(next) = self.udp[u as usize].tx.next_send_ns() {
            self.q.push(next, Event::UdpSend(u));
        }
    }

    /// Terminal `a` acts: broadcast its presence and/or take a clamp step, whichever is due.
    fn on_agent(&mut self, t: u64, a: u32) {
        let Some(ag) = self.agents.as_mut() else {
            return;
        };
        let spec_count = ag.spec.count_interval_ns().max(1);
        let spec_step = ag.spec.interval_ns().max(1);
        let count_bytes = ag.spec.count_bytes;
        let ti = a as usize;
        if ag.terminals[ti].next_count_ns <= t {
            ag.terminals[ti].next_count_ns += spec_count;
            let (medium, on_air) = (ag.terminals[ti].medium, ag.terminals[ti].on_air);
            match medium {
                Some((e, port, relay)) if on_air => {
                    // To the access point first (hop 0), which broadcasts it (hop 1).
                    let beacon = Packet {
                        flow: a,
                        route: BEACON_ROUTE,
                        hop: 0,
                        wire: count_bytes,
                        seg: Segment::Ack(AckSeg::default()),
                        tag: Default::default(),
                    };
                    self.enqueue_beacon(t, e, port, relay as usize, beacon);
                }
                // Not on a DCF cell: heard at once by the terminals on the same element.
                _ => self.on_beacon(t, medium.map_or(u32::MAX, |m| m.0), a),
            }
        }
        let Some(ag) = self.agents.as_mut() else {
            return;
        };
        if ag.terminals[ti].next_step_ns <= t {
            ag.terminals[ti].next_step_ns += spec_step;
            for k in 0..ag.terminals[ti].flows.len() {
                let f = ag.terminals[ti].flows[k] as usize;
                let tp = &self.flows[f].sender.tp;
                let step = ag.step(ti, t, u64::from(tp.srtt_us >> 3), tp.min_rtt_us);
                let detail = step.detail(&ag.terminals[ti].host, tp.snd_cwnd, tp.snd_ssthresh);
                self.flows[f].sender.set_cwnd_range(step.range());
                let id = self.flows[f].id as i32;
                self.events.push(t, id, "middleware", detail);
            }
        }
        let next = ag.terminals[ti].next_ns();
        self.q.push(next, Event::Agent(a));
    }

    /// A middleware datagram goes onto DCF cell `l` from `port` to `to` (the AP, or
    /// [`cclab_net::dcf::BROADCAST`]).
    fn enqueue_beacon(&mut self, t: u64, l: u32, port: u32, to: usize, p: Packet) {
        let res = self.links[l as usize].link.enqueue(t, port as usize, to, p);
        if res.is_ok() || self.links[l as usize].late_drops {
            self.schedule_link(l);
        }
        self.drain_late_drops(t, l);
    }

    /// Terminal `from`'s broadcast is heard on element `l` by every other terminal there.
    fn on_beacon(&mut self, t: u64, l: u32, from: u32) {
        let Some(ag) = self.agents.as_mut() else {
            return;
        };
        if l == u32::MAX {
            return;
        }
        for (i, term) in ag.terminals.iter_mut().enumerate() {
            if i as u32 != from && term.medium.is_some_and(|(e, _, _)| e == l) {
                term.counter.heard(t, u64::from(from));
            }
        }
    }

    fn on_receiver_timer(&mut self, t: u64, f: u32) {
        if self.flows[f as usize]
            .hs
            .as_ref()
            .is_some_and(|h| h.receiver_waiting())
        {
            return self.hs_on_receiver_timer(t, f);
        }
        let mut buf = std::mem::take(&mut self.ack_buf);
        self.flows[f as usize].receiver.on_timer(t, &mut buf);
        if self.flows[f as usize].conn.is_some() {
            self.mptcp_delivered(t, f, &mut buf);
        }
        self.send_acks(t, f, &mut buf);
        self.ack_buf = buf;
        self.after_receiver(f);
    }

    /// Reschedule the sender's timer, drain its events, trace it. `on_ack`: this follows an
    /// ACK's arrival (`trace = "ack"` writes a row for every ACK; after a timer or the start,
    /// only when cwnd, ssthresh or the state changed, so pacing-timer sends add no rows).
    fn after_sender(&mut self, t: u64, f: u32, on_ack: bool) {
        let fl = &mut self.flows[f as usize];
        if let Some(q) = fl.device {
            let n = fl.sender.below.local_drops;
            let seen = std::mem::replace(&mut fl.local_drops_seen, n);
            let drops = &mut self.links[q.elem as usize].local_drops;
            if drops.len() <= q.lane as usize {
                drops.resize(q.lane as usize + 1, 0);
            }
            drops[q.lane as usize] += n - seen;
        }
        self.q
            .set(Event::SenderTimer(f), fl.sender.timer_deadline_ns());
        for (et, kind, detail) in fl.sender.events.drain(..) {
            let detail = match (fl.conn, fl.seq) {
                // A subflow's events name it (docs/design.md, "Trace schema"), and so do a
                // workload's connections.
                (Some((_, k)), _) => format!("{detail} subflow={k}"),
                (None, Some(c)) => format!("{detail} conn={}", c.k),
                (None, None) => detail,
            };
            self.events.push(et, fl.id as i32, kind.name(), detail);
        }
        match self.mode {
            TraceMode::Ack if on_ack => self.record_flow(t, f),
            TraceMode::Ack | TraceMode::Change => {
                let tp = &self.flows[f as usize].sender.tp;
                let key = (tp.snd_cwnd, tp.snd_ssthresh, tp.ca_state as u8);
                if self.flows[f as usize].last_traced != Some(key) {
                    self.record_flow(t, f);
                }
            }
            TraceMode::Interval => {}
        }
    }

    /// The receive buffer's grow events since the last call, as `rcvbuf_grow` events (the
    /// fields of the kernel's `tcp:tcp_rcvbuf_grow` tracepoint: the state before the change).
    fn trace_rcvbuf_grow(&mut self, t: u64, fi: usize) {
        if self.flows[fi].receiver.rb.events.is_empty() {
            return;
        }
        let fl = &mut self.flows[fi];
        let (id, k) = (fl.id as i32, fl.conn.map_or(0, |(_, k)| k));
        for e in std::mem::take(&mut fl.receiver.rb.events) {
            let detail = format!(
                "subflow={k} rtt_us={} copied={} space={} rcvbuf={} rcv_ssthresh={} window_clamp={} rcv_wnd={} scaling_ratio={}",
                e.rtt_us, e.copied, e.space, e.rcvbuf, e.rcv_ssthresh, e.window_clamp, e.rcv_wnd, e.scaling_ratio
            );
            self.events.push(t, id, "rcvbuf_grow", detail);
        }
    }

    fn after_receiver(&mut self, f: u32) {
        let d = self.flows[f as usize].receiver.timer_deadline_ns();
        self.q.set(Event::ReceiverTimer(f), d);
    }

    fn record_flow(&mut self, t: u64, f: u32) {
        let fl = &mut self.flows[f as usize];
        if fl.seq.is_some_and(|c| c.superseded) {
            return; // the flows trace follows a workload's newest connection
        }
        let s = &fl.sender;
        let tp = &s.tp;
        fl.last_traced = Some((tp.snd_cwnd, tp.snd_ssthresh, tp.ca_state as u8));
        let tr = &mut self.flow_trace;
        let nan_if_none = |has: bool, v: f64| if has { v } else { f64::NAN };
        let has_rtt = tp.srtt_us != 0;
        tr.flow.push(fl.id as i32);
        tr.subflow.push(fl.conn.map_or(0, |(_, k)| k));
        tr.t_s.push(t as f64 * 1e-9);
        tr.cwnd_pkts.push(tp.snd_cwnd);
        tr.ssthresh_pkts.push(tp.snd_ssthresh);
        tr.inflight_pkts.push(tp.packets_in_flight());
        tr.srtt_ms
            .push(nan_if_none(has_rtt, (tp.srtt_us >> 3) as f64 / 1000.0));
        // TCP_INFO's tcpi_rttvar is mdev_us >> 2.
        tr.rttvar_ms
            .push(nan_if_none(has_rtt, (tp.mdev_us >> 2) as f64 / 1000.0));
        tr.min_rtt_ms.push(nan_if_none(
            tp.min_rtt_us != u32::MAX,
            tp.min_rtt_us as f64 / 1000.0,
        ));
        tr.rto_ms.push(tp.icsk_rto_us as f64 / 1000.0);
        tr.delivered_bytes.push(tp.snd_una.min(s.cfg.size_bytes));
        tr.retrans_pkts.push(s.stats.retrans_pkts);
        tr.ca_state.push(tp.ca_state as u8);
        tr.pacing_rate_bps.push(if tp.pacing_rate_bytes_per_s > 0 {
            tp.pacing_rate_bytes_per_s as f64 * 8.0
        } else {
            f64::NAN
        });
        tr.below_tcp_bytes.push(s.below.wmem_bytes);
        let (sndbuf, queued) = s
            .sndbuf_peek()
            .map_or((f64::NAN, f64::NAN), |(b, q)| (b as f64, q as f64));
        tr.sndbuf_bytes.push(sndbuf);
        tr.wmem_queued_bytes.push(queued);
    }

    fn finish(mut self) -> RunOutput {
        let end_ns = self.duration_ns;
        for fl in &mut self.flows {
            fl.sto_finish();
            fl.sto_rows(&mut self.events);
        }
        let mut flow_stats: Vec<(u32, crate::FlowStats)> = Vec::new();
        let mut i = 0;
        while i < self.flows.len() {
            let fl = &self.flows[i];
            if fl.conn.is_some() {
                i += 1;
                continue;
            }
            // A workload's connections are consecutive slots; a lone connection is one slot.
            let n = if fl.seq.is_some() {
                self.flows[i..].iter().take_while(|g| g.id == fl.id).count()
            } else {
                1
            };
            flow_stats.push((fl.id, tcp_flow_stats(&self.flows[i..i + n], end_ns)));
            i += n;
        }
        flow_stats.extend(
            self.conns
                .iter()
                .map(|c| (c.id, self.mptcp_stats(c, end_ns))),
        );
        flow_stats.extend(self.udp.iter().map(|u| (u.id, udp_flow_stats(u))));
        flow_stats.sort_by_key(|(id, _)| *id);
        let flow_names = flow_stats.iter().map(|(_, s)| s.flow.clone()).collect();
        let flow_stats = flow_stats.into_iter().map(|(_, s)| s).collect();
        let mut link_stats = Vec::with_capacity(self.lane_names.len());
        for l in &self.links {
            for lane in 0..l.link.lanes() {
                let mut counters = *l.link.stats(lane);
                counters.dropped_queue_full_pkts += l.local_drops.get(lane).copied().unwrap_or(0);
                link_stats.push(crate::LinkStats {
                    link: self.lane_names[(l.first_lane as usize) + lane].clone(),
                    counters,
                    mac: l.link.mac_stats(lane),
                });
            }
        }
        RunOutput {
            paths: self.paths,
            flow_names,
            link_names: self.lane_names,
            flows: self.flow_trace,
            links: self.link_trace,
            events: self.events,
            flow_stats,
            link_stats,
            events_processed: self.q.processed,
            sim_duration_s: end_ns as f64 * 1e-9,
        }
    }
}

/// `bytes` * 8 over the time from `from_ns` to `to_ns`; 0 over no time.
fn rate_bps(bytes: u64, from_ns: u64, to_ns: u64) -> f64 {
    let secs = to_ns.saturating_sub(from_ns) as f64 * 1e-9;
    if secs > 0.0 {
        bytes as f64 * 8.0 / secs
    } else {
        0.0
    }
}

impl FlowSlot {
    /// When its sender was established: its handshake's end (None: never), or its start for a
    /// flow without a handshake.
    fn established_s(&self) -> Option<f64> {
        match &self.hs {
            Some(h) => h.established_ns.map(|e| e as f64 * 1e-9),
            None => Some(self.start_ns as f64 * 1e-9),
        }
    }
}

/// A summary row whose counters are summed over `slots` (a workload's connections, a Multipath
/// TCP connection's subflows); the caller sets the rest (goodput, delivered bytes, times,
/// `subflows`, `connections`), which are 0 or None here.
fn summed_flow_stats(name: &str, slots: &[&FlowSlot]) -> crate::FlowStats {
    let sum = |get: &dyn Fn(&FlowSlot) -> u64| slots.iter().map(|s| get(s)).sum::<u64>();
    let mut sto = sto::StoCounts::default();
    for s in slots {
        sto += s.sto_counts();
    }
    crate::FlowStats {
        flow: name.to_string(),
        goodput_bps: 0.0,
        delivered_bytes: 0,
        retrans_pkts: sum(&|s| s.sender.stats.retrans_pkts),
        rto_count: sum(&|s| s.sender.stats.rto_count),
        fast_retransmit_count: sum(&|s| s.sender.stats.fast_retransmit_count),
        spurious_rto_count: sum(&|s| s.sender.stats.spurious_rto_count),
        undo_count: sum(&|s| s.sender.stats.undo_count),
        sto_count: sto.sto_count,
        sto_detected: sto.sto_detected,
        spurious_retrans_pkts: sto.spurious_retrans_pkts,
        tlp_count: sum(&|s| s.sender.stats.tlp_count),
        cwr_count: sum(&|s| s.sender.stats.cwr_count),
        local_drop_count: sum(&|s| s.sender.below.local_drops),
        sent_pkts: sum(&|s| s.sender.stats.sent_pkts),
        acks_sent: sum(&|s| s.receiver.acks_sent),
        start_s: 0.0,
        completion_s: None,
        established_s: None,
        udp: None,
        subflows: None,
        connections: None,
    }
}

/// A TCP flow's summary row from its slots: one, or a workload's connections (those that
/// started are listed, and the counters summed over them).
fn tcp_flow_stats(slots: &[FlowSlot], end_ns: u64) -> crate::FlowStats {
    let first = &slots[0];
    let started: Vec<&FlowSlot> = slots.iter().filter(|s| s.start_ns <= end_ns).collect();
    let all_done =
        started.len() == slots.len() && started.iter().all(|s| s.receiver.completion_ns.is_some());
    let completion_ns = all_done
        .then(|| slots[slots.len() - 1].receiver.completion_ns)
        .flatten();
    let delivered = started.iter().map(|s| s.receiver.delivered_bytes).sum();
    let connections = first.seq.map(|_| {
        started
            .iter()
            .map(|s| {
                let done = s.receiver.completion_ns;
                let st = s.sto_counts();
                crate::ConnStats {
                    conn: s.seq.map_or(0, |c| c.k),
                    size_bytes: s.sender.cfg.size_bytes,
                    start_s: s.start_ns as f64 * 1e-9,
                    established_s: s.established_s(),
                    completion_s: done.map(|c| c as f64 * 1e-9),
                    transfer_time_s: done.map(|c| c.saturating_sub(s.start_ns) as f64 * 1e-9),
                    delivered_bytes: s.receiver.delivered_bytes,
                    goodput_bps: rate_bps(
                        s.receiver.delivered_bytes,
                        s.start_ns,
                        done.unwrap_or(end_ns),
                    ),
                    sent_pkts: s.sender.stats.sent_pkts,
                    retrans_pkts: s.sender.stats.retrans_pkts,
                    rto_count: s.sender.stats.rto_count,
                    spurious_rto_count: s.sender.stats.spurious_rto_count,
                    undo_count: s.sender.stats.undo_count,
                    sto_count: st.sto_count,
                    sto_detected: st.sto_detected,
                    spurious_retrans_pkts: st.spurious_retrans_pkts,
                    sto_undetected: s.sto_undetected(),
                }
            })
            .collect()
    });
    crate::FlowStats {
        goodput_bps: rate_bps(delivered, first.start_ns, completion_ns.unwrap_or(end_ns)),
        delivered_bytes: delivered,
        start_s: first.start_ns as f64 * 1e-9,
        completion_s: completion_ns.map(|c| c as f64 * 1e-9),
        established_s: first.established_s(),
        connections,
        ..summed_flow_stats(&first.name, &started)
    }
}

/// A UDP flow's summary row: its goodput is the rate received over its sending time; it has no
/// retransmissions, timeouts or ACKs. A sized stream completes when its last datagram arrives
/// and every one has.
fn udp_flow_stats(u: &UdpSlot) -> crate::FlowStats {
    let st = UdpStats::of(&u.tx, &u.rx, u.dropped_pkts);
    let done = u.tx.next_send_ns().is_none() && u.rx.received_pkts == u.tx.sent_pkts;
    crate::FlowStats {
        flow: u.name.clone(),
        goodput_bps: st.receive_rate_bps,
        delivered_bytes: u.rx.received_bytes,
        retrans_pkts: 0,
        rto_count: 0,
        fast_retransmit_count: 0,
        spurious_rto_count: 0,
        undo_count: 0,
        sto_count: 0,
        sto_detected: 0,
        spurious_retrans_pkts: 0,
        tlp_count: 0,
        cwr_count: 0,
        local_drop_count: 0,
        sent_pkts: u.tx.sent_pkts,
        acks_sent: 0,
        start_s: u.start_ns as f64 * 1e-9,
        completion_s: u
            .rx
            .last_arrival_ns
            .filter(|_| done)
            .map(|t| t as f64 * 1e-9),
        established_s: None,
        udp: Some(st),
        subflows: None,
        connections: None,
    }
}

/// The name of what a hop crosses: a link direction's name, or `<medium>:<from node>><to node>`.
fn hop_name(net: &Lowered, h: &SimHop) -> String {
    let e = h.element as usize;
    if e >= net.links.len() + net.media.len() {
        return net.devices[e - net.links.len() - net.media.len()]
            .name
            .clone();
    }
    match net.links.get(e) {
        Some(l) => l.name.clone(),
        None => {
            let m = &net.media[e - net.links.len()];
            format!(
                "{}:{}>{}",
                m.name, m.nodes[h.from as usize], m.nodes[h.to as usize]
            )
        }
    }
}
