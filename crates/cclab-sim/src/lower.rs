//! The one lowering of a scenario into the network both backends build: the dumbbell
//! shorthand expands into the general form (nodes, links), routes and paths are resolved, and
//! the link directions to simulate are numbered. The simulator (`world.rs`) and the kernel
//! backend (Python, through `cclab._core.lower`) read the same [`Lowered`], so they build the
//! same network.
//!
//! The dumbbell expands into: its senders and receivers as hosts; two routers,
//! `bottleneck.left` and `bottleneck.right`, joined by the link `bottleneck`; each sender joined
//! to `bottleneck.left` by `<sender>.access`, and `bottleneck.right` to each receiver by
//! `<receiver>.access` (`fwd` is always the data direction). An access direction that does
//! nothing (none given, or no rate, delay, loss or marking) is a wire with no model: it is left
//! out of the simulation and has no row in the links table. Links of the general form are
//! always simulated.
//!
//! Each host's stack below TCP ([`HostStack`]: the scenario's `[host]` with the host's own
//! `host` over it) is resolved here. A host with a device rate gets a device (interface queue
//! and NIC, [`SimDevice`]) on every interface: `<host>.device`, or `<host>.device.<link>` when
//! it has several interfaces. Devices are not hops of [`FlowRoute::fwd`]: a flow names its
//! sender's and its receiver's devices, and the simulator puts them in front of the hops.

use crate::config::{ConfigError, Duplex, Host, HostSpec, HostStack, Scenario};
use cclab_net::spec::LinkSpec;
use cclab_net::topology::{Dir, Graph, Hop, LinkPairSpec, NodeKind, NodeSpec};
use cclab_net::MediumModel;
use serde::Serialize;
use std::collections::BTreeMap;

/// Name of the dumbbell's router at the senders' side.
pub const LEFT: &str = "bottleneck.left";
/// Name of the dumbbell's router at the receivers' side.
pub const RIGHT: &str = "bottleneck.right";

/// One simulated link direction.
#[derive(Debug, Clone, Serialize)]
pub struct SimLink {
    /// `<link>.fwd` or `<link>.rev`: the name in traces, and the root of its random stream.
    pub name: String,
    /// The scenario link it belongs to.
    pub link: String,
    /// Node it leaves from.
    pub from: String,
    /// Node it reaches.
    pub to: String,
    /// Where it is in the scenario file, for error messages (`bottleneck.reverse`,
    /// `senders[1].access`, `links[3]`).
    pub field: String,
    /// Its model.
    pub spec: LinkSpec,
}

/// A multi-port medium to simulate.
#[derive(Debug, Clone, Serialize)]
pub struct SimMedium {
    /// Its name (the root of its random stream).
    pub name: String,
    /// Its nodes: port k is `nodes[k]`.
    pub nodes: Vec<String>,
    /// Its queues' names in traces, one per port: `<medium>.<node>`.
    pub lanes: Vec<String>,
    /// Where it is in the scenario file (`media[2]`).
    pub field: String,
    /// Its model and settings (`kind` and `spec` in the lowering's JSON).
    #[serde(flatten)]
    pub model: MediumModel,
}

/// A host interface's queue and NIC (see the module doc): a link direction with the device's
/// rate, a drop-tail queue of `queue_pkts` waiting packets, no delay and no loss.
#[derive(Debug, Clone, Serialize)]
pub struct SimDevice {
    /// `<host>.device` or `<host>.device.<link>`: its name in traces.
    pub name: String,
    /// The host.
    pub host: String,
    /// The scenario link or medium it sends onto.
    pub interface: String,
    /// Its model as a link direction.
    pub spec: LinkSpec,
}

/// One element crossed: `element` numbers the simulated link directions first
/// ([`Lowered::links`]), then the media ([`Lowered::media`], from `links.len()`); a link
/// direction is crossed from port 0 to port 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct SimHop {
    /// The element.
    pub element: u32,
    /// Port it enters by.
    pub from: u32,
    /// Port it leaves by.
    pub to: u32,
}

/// Where one flow's packets go.
#[derive(Debug, Clone, Serialize)]
pub struct FlowRoute {
    /// The flow's name.
    pub flow: String,
    /// Sender host.
    pub sender: String,
    /// Receiver host.
    pub receiver: String,
    /// The simulated elements the data crosses, in order.
    pub fwd: Vec<SimHop>,
    /// The simulated elements the ACKs cross, in order.
    pub rev: Vec<SimHop>,
    /// Nodes the data crosses, sender first.
    pub fwd_nodes: Vec<String>,
    /// Nodes the ACKs cross, receiver first.
    pub rev_nodes: Vec<String>,
    /// The scenario link or medium the sender sends on (its interface), simulated or not.
    pub sender_link: String,
    /// The scenario link or medium the data reaches the receiver by.
    pub receiver_link: String,
    /// The scenario link or medium the receiver sends its ACKs on (`receiver_link` unless a
    /// `reverse_path` or the routing table sends them another way).
    pub ack_link: String,
    /// The sender's device on `sender_link` (index into [`Lowered::devices`]), if it has one.
    pub sender_device: Option<u32>,
    /// The receiver's device on `ack_link`, if it has one.
    pub ack_device: Option<u32>,
    /// Multipath TCP: every subflow's route, in the order of the flow's `paths` (the fields
    /// above are subflow 0's); empty for a TCP or UDP flow.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub subflows: Vec<FlowRoute>,
}

/// The network of a scenario, ready to build.
#[derive(Debug, Clone, Serialize)]
pub struct Lowered {
    /// Every node (the dumbbell's included), in declaration order.
    pub nodes: Vec<NodeSpec>,
    /// Every scenario link (both directions), in declaration order.
    pub pairs: Vec<LinkPairSpec>,
    /// The simulated link directions, in trace order: links in declaration order, `fwd` then
    /// `rev`.
    pub links: Vec<SimLink>,
    /// The multi-port media, in declaration order (their lanes follow the links in traces).
    pub media: Vec<SimMedium>,
    /// One per flow, in the scenario's order.
    pub flows: Vec<FlowRoute>,
    /// Every host's stack below TCP, by host name.
    pub stacks: BTreeMap<String, HostStack>,
    /// The devices, host by host in node order, each host's interfaces in declaration order
    /// (their lanes follow the media's in traces).
    pub devices: Vec<SimDevice>,
}

fn host(name: &str) -> NodeSpec {
    NodeSpec {
        name: name.to_string(),
        kind: NodeKind::Host,
        routes: BTreeMap::new(),
        host: None,
    }
}

fn pair(name: String, a: &str, b: &str, d: Option<&Duplex>, elide_ideal: bool) -> LinkPairSpec {
    LinkPairSpec {
        name,
        endpoints: [a.to_string(), b.to_string()],
        fwd: d.map(|d| d.fwd.clone()).unwrap_or_default(),
        rev: d.map(|d| d.rev.clone()).unwrap_or_default(),
        elide_ideal,
    }
}

/// The dumbbell as nodes and links (see the module doc).
fn expand_dumbbell(
    b: &Duplex,
    senders: &[Host],
    receivers: &[Host],
) -> (Vec<NodeSpec>, Vec<LinkPairSpec>) {
    let mut nodes: Vec<NodeSpec> = senders
        .iter()
        .chain(receivers)
        .map(|h| host(&h.name))
        .collect();
    for r in [LEFT, RIGHT] {
        nodes.push(NodeSpec {
            kind: NodeKind::Router,
            ..host(r)
        });
    }
    let mut links = vec![pair("bottleneck".into(), LEFT, RIGHT, Some(b), false)];
    for h in senders {
        links.push(pair(
            format!("{}.access", h.name),
            &h.name,
            LEFT,
            h.access.as_ref(),
            true,
        ));
    }
    for h in receivers {
        links.push(pair(
            format!("{}.access", h.name),
            RIGHT,
            &h.name,
            h.access.as_ref(),
            true,
        ));
    }
    (nodes, links)
}

/// Lower `sc` (its fields already checked one by one by `Scenario::validate`). Errors name the
/// scenario field: a bad topology, a path that does not exist, an unreachable receiver.
pub fn lower(sc: &Scenario) -> Result<Lowered, ConfigError> {
    let (nodes, pairs, media, dumbbell) = match &sc.bottleneck {
        Some(b) => {
            let (n, l) = expand_dumbbell(b, &sc.senders(), &sc.receivers());
            (n, l, Vec::new(), true)
        }
        None => (sc.nodes.clone(), sc.links.clone(), sc.media.clone(), false),
    };
    let fields: Vec<String> = if dumbbell {
        let s = sc.senders().len();
        (0..pairs.len())
            .map(|k| match k {
                0 => "bottleneck".to_string(),
                k if k <= s => format!("senders[{}].access", k - 1),
                k => format!("receivers[{}].access", k - 1 - s),
            })
            .collect()
    } else {
        (0..pairs.len()).map(|k| format!("links[{k}]")).collect()
    };
    // Each host's own stack settings, before the graph takes the nodes.
    let own: BTreeMap<String, Option<HostSpec>> = match &sc.bottleneck {
        Some(_) => sc
            .senders()
            .into_iter()
            .chain(sc.receivers())
            .map(|h| (h.name, h.host))
            .collect(),
        None => nodes
            .iter()
            .map(|n| (n.name.clone(), n.host.clone()))
            .collect(),
    };
    let g = Graph::with_media(nodes, pairs, media).map_err(|e| {
        let e = ConfigError::from(e);
        if dumbbell {
            // A host named like another host or a router of the expansion.
            ConfigError {
                field: "senders".into(),
                message: format!("{}: {}", e.field, e.message),
            }
        } else {
            e
        }
    })?;
    // Number the simulated directions.
    let mut links = Vec::new();
    let mut index: BTreeMap<(usize, bool), u32> = BTreeMap::new();
    let dirs = [(Dir::Fwd, 0, 1), (Dir::Rev, 1, 0)];
    for (k, p) in g.links.iter().enumerate() {
        for (dir, spec, suffix) in [(Dir::Fwd, &p.fwd, "fwd"), (Dir::Rev, &p.rev, "rev")] {
            if p.elide_ideal && spec.is_ideal() {
                continue;
            }
            let (_, from, to) = dirs[(dir == Dir::Rev) as usize];
            let (a, b) = g.ends(Hop { elem: k, from, to });
            index.insert((k, dir == Dir::Fwd), links.len() as u32);
            links.push(SimLink {
                name: format!("{}.{suffix}", p.name),
                link: p.name.clone(),
                from: g.nodes[a].name.clone(),
                to: g.nodes[b].name.clone(),
                field: match dir {
                    Dir::Fwd => fields[k].clone(),
                    Dir::Rev => format!("{}.reverse", fields[k]),
                },
                spec: spec.clone(),
            });
        }
    }
    let n_links = links.len() as u32;
    let media: Vec<SimMedium> = g
        .media
        .iter()
        .enumerate()
        .map(|(m, md)| -> Result<SimMedium, ConfigError> {
            Ok(SimMedium {
                name: md.name.clone(),
                nodes: md.nodes.clone(),
                lanes: md
                    .nodes
                    .iter()
                    .map(|n| format!("{}.{n}", md.name))
                    .collect(),
                field: format!("media[{m}]"),
                model: md.model(m)?,
            })
        })
        .collect::<Result<_, _>>()?;
    // Stacks and devices.
    let mut stacks = BTreeMap::new();
    let mut devices = Vec::new();
    let mut device_of: BTreeMap<(String, String), u32> = BTreeMap::new();
    for n in g.nodes.iter().filter(|n| n.kind == NodeKind::Host) {
        let stack = own
            .get(&n.name)
            .cloned()
            .flatten()
            .unwrap_or_default()
            .resolve(&sc.host);
        if let Some(dev) = stack.device {
            let ifaces: Vec<&str> = g
                .links
                .iter()
                .filter(|l| l.endpoints.contains(&n.name))
                .map(|l| l.name.as_str())
                .chain(
                    g.media
                        .iter()
                        .filter(|m| m.nodes.contains(&n.name))
                        .map(|m| m.name.as_str()),
                )
                .collect();
            for iface in &ifaces {
                device_of.insert((n.name.clone(), iface.to_string()), devices.len() as u32);
                devices.push(SimDevice {
                    name: if ifaces.len() == 1 {
                        format!("{}.device", n.name)
                    } else {
                        format!("{}.device.{iface}", n.name)
                    },
                    host: n.name.clone(),
                    interface: iface.to_string(),
                    spec: LinkSpec {
                        rate_bps: Some(dev.rate_bps),
                        // The link counts the packet in transmission as queued; pfifo does not.
                        queue_pkts: Some(dev.queue_pkts.saturating_add(1)),
                        ..LinkSpec::default()
                    },
                });
            }
        }
        stacks.insert(n.name.clone(), stack);
    }
    let mut flows = Vec::new();
    for (i, f) in sc.flows.iter().enumerate() {
        let p = format!("flows[{i}]");
        for (field, name) in [("sender", &f.sender), ("receiver", &f.receiver)] {
            let ok = g
                .node(name)
                .is_some_and(|n| g.nodes[n].kind == NodeKind::Host);
            if !ok {
                let hosts: Vec<&str> = g
                    .nodes
                    .iter()
                    .filter(|n| n.kind == NodeKind::Host)
                    .map(|n| n.name.as_str())
                    .collect();
                let what = if dumbbell {
                    format!("{field}s")
                } else {
                    "hosts".into()
                };
                return Err(crate::config::ConfigError {
                    field: format!("{p}.{field}"),
                    message: format!("no {field} named {name:?}; {what} are {hosts:?}"),
                });
            }
        }
        if f.sender == f.receiver {
            return Err(ConfigError {
                field: format!("{p}.receiver"),
                message: format!(
                    "{:?} is also the sender: a flow joins two hosts",
                    f.receiver
                ),
            });
        }
        // One route (a TCP or UDP flow's, or one Multipath TCP subflow's): `path` and
        // `reverse_path` as given, their fields for errors.
        let route = |path: Option<&Vec<String>>,
                     path_field: String,
                     reverse_path: Option<&Vec<String>>|
         -> Result<FlowRoute, ConfigError> {
            let fwd_hops = match path {
                Some(path) => {
                    check_ends(path, &f.sender, &f.receiver, &path_field)?;
                    g.path_through(path, &path_field)?
                }
                None => g.route(&f.sender, &f.receiver, &p)?,
            };
            let rev_hops = match (reverse_path, path) {
                (Some(path), _) => {
                    check_ends(path, &f.receiver, &f.sender, &format!("{p}.reverse_path"))?;
                    g.path_through(path, &format!("{p}.reverse_path"))?
                }
                (None, Some(_)) => fwd_hops.iter().rev().map(|h| h.reversed()).collect(),
                (None, None) => g.route(&f.receiver, &f.sender, &p)?,
            };
            let sim = |hops: &[Hop]| -> Vec<SimHop> {
                hops.iter()
                    .filter_map(|h| {
                        if h.elem < g.links.len() {
                            index.get(&(h.elem, h.dir() == Dir::Fwd)).map(|&l| SimHop {
                                element: l,
                                from: 0,
                                to: 1,
                            })
                        } else {
                            Some(SimHop {
                                element: n_links + (h.elem - g.links.len()) as u32,
                                from: h.from as u32,
                                to: h.to as u32,
                            })
                        }
                    })
                    .collect()
            };
            let node_names = |start: &str, hops: &[Hop]| -> Vec<String> {
                std::iter::once(start.to_string())
                    .chain(hops.iter().map(|&h| g.nodes[g.ends(h).1].name.clone()))
                    .collect()
            };
            let (fwd, rev) = (sim(&fwd_hops), sim(&rev_hops));
            let sender_link = g.elem_name(fwd_hops[0].elem).to_string();
            let ack_link = g.elem_name(rev_hops[0].elem).to_string();
            let sender_device = device_of
                .get(&(f.sender.clone(), sender_link.clone()))
                .copied();
            let ack_device = device_of
                .get(&(f.receiver.clone(), ack_link.clone()))
                .copied();
            if (fwd.is_empty() && sender_device.is_none())
                || (rev.is_empty() && ack_device.is_none())
            {
                return Err(ConfigError {
                field: if path.is_some() { path_field } else { p.clone() },
                message: "every link on its path does nothing (no rate, delay or loss): give one a rate or a \
                          delay"
                    .into(),
            });
            }
            Ok(FlowRoute {
                flow: f.name.clone(),
                sender: f.sender.clone(),
                receiver: f.receiver.clone(),
                fwd,
                rev,
                fwd_nodes: node_names(&f.sender, &fwd_hops),
                rev_nodes: node_names(&f.receiver, &rev_hops),
                sender_link,
                receiver_link: g.elem_name(fwd_hops[fwd_hops.len() - 1].elem).to_string(),
                ack_link,
                sender_device,
                ack_device,
                subflows: Vec::new(),
            })
        };
        let r = match &f.paths {
            Some(paths) if f.transport == crate::udp::Transport::Mptcp => {
                let subflows = paths
                    .iter()
                    .enumerate()
                    .map(|(k, path)| route(Some(path), format!("{p}.paths[{k}]"), None))
                    .collect::<Result<Vec<_>, _>>()?;
                for (k, a) in subflows.iter().enumerate() {
                    if let Some(j) = subflows[..k]
                        .iter()
                        .position(|b| b.fwd_nodes == a.fwd_nodes)
                    {
                        return Err(ConfigError {
                            field: format!("{p}.paths[{k}]"),
                            message: format!(
                                "the same path as paths[{j}]: each subflow takes its own"
                            ),
                        });
                    }
                }
                FlowRoute {
                    subflows: subflows.clone(),
                    ..subflows[0].clone()
                }
            }
            _ => route(
                f.path.as_ref(),
                format!("{p}.path"),
                f.reverse_path.as_ref(),
            )?,
        };
        if f.transport != crate::udp::Transport::Udp {
            let subs = if r.subflows.is_empty() {
                std::slice::from_ref(&r)
            } else {
                &r.subflows[..]
            };
            for (k, sub) in subs.iter().enumerate() {
                if !round_trip_takes_time(sub, &links) {
                    let at = if r.subflows.is_empty() {
                        p.clone()
                    } else {
                        format!("{p}.paths[{k}]")
                    };
                    return Err(ConfigError {
                        field: at,
                        message: "its round trip takes no time: no link it crosses, there or \
                                  back, has a rate_bps, capacity_trace or delay_ms, and no host \
                                  on it a device_rate_bps, so simulated time would never advance; \
                                  give one of them a delay_ms or a rate_bps"
                            .into(),
                    });
                }
            }
        }
        flows.push(r);
    }
    Ok(Lowered {
        nodes: g.nodes,
        pairs: g.links,
        links,
        media,
        flows,
        stacks,
        devices,
    })
}

/// Whether a TCP connection's round trip on `route` takes time: a medium, a host device, or
/// a link direction with a rate, a trace, a delay of at least 1 ns or a radio bearer. One that
/// takes none would send and acknowledge forever at one instant.
fn round_trip_takes_time(route: &FlowRoute, links: &[SimLink]) -> bool {
    if route.sender_device.is_some() || route.ack_device.is_some() {
        return true;
    }
    route
        .fwd
        .iter()
        .chain(&route.rev)
        .any(|h| match links.get(h.element as usize) {
            None => true, // a medium: every kind spends airtime
            Some(l) => {
                let s = &l.spec;
                s.rate_bps.is_some()
                    || s.capacity_trace_text.is_some()
                    || cclab_net::spec::ms_to_ns(s.delay_ms) > 0
                    || s.radio.is_some()
            }
        })
}

fn check_ends(path: &[String], first: &str, last: &str, field: &str) -> Result<(), ConfigError> {
    if path.len() < 2 {
        return Err(ConfigError {
            field: field.to_string(),
            message: format!("at least two nodes: {first:?} first, {last:?} last"),
        });
    }
    if path.first().map(String::as_str) != Some(first) {
        return Err(ConfigError {
            field: format!("{field}[0]"),
            message: format!("the path starts at {first:?}"),
        });
    }
    if path.last().map(String::as_str) != Some(last) {
        return Err(ConfigError {
            field: format!("{field}[{}]", path.len() - 1),
            message: format!("the path ends at {last:?}"),
        });
    }
    Ok(())
}
