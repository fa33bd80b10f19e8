//! The spec `cclab-link --spec SPEC.json` reads: ports (a TUN device in a namespace), links
//! (one direction each, in the scenario's own field names and units), media (multi-port
//! elements such as a shared channel, one lane per port) and routes (which links and medium
//! crossings a packet from one port to another goes through). `Spec::parse` checks everything
//! and names the field that is wrong.

use cclab_net::link::LinkConfig;
use cclab_net::loss::LossModel;
use cclab_net::spec::LinkSpec;
use cclab_net::{MediumKind, MediumModel, NetError};
use serde::Deserialize;
use serde_json::Value;
use std::collections::HashMap;
use std::net::Ipv4Addr;

/// A spec field that is wrong, with what is accepted.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct SpecError {
    /// Dotted path of the field, e.g. `links[0].delay_ms`.
    pub field: String,
    /// What is wrong and what is accepted.
    pub message: String,
}

fn err(field: impl Into<String>, message: impl Into<String>) -> SpecError {
    SpecError {
        field: field.into(),
        message: message.into(),
    }
}

/// One TUN device: created as `dev` inside namespace `netns`; packets to `addrs` leave here.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PortSpec {
    pub name: String,
    /// Namespace name (a file in /var/run/netns); None = the emulator's own namespace.
    pub netns: Option<String>,
    pub dev: String,
    pub addrs: Vec<Ipv4Addr>,
}

/// Packets from port `from` to port `to` cross `links` in order: each entry a link name, or a
/// medium crossing `{"medium": NAME, "from": PORT, "to": PORT}` (checked by `Spec::parse`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RouteSpec {
    pub from: String,
    pub to: String,
    pub links: Vec<Value>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSpec {
    #[serde(default = "one")]
    seed: u64,
    ports: Vec<PortSpec>,
    links: Vec<Value>,
    /// Multi-port media (`{"name", "kind": "shared" | "dcf", "lanes": [...], "spec": {...}}`).
    #[serde(default)]
    media: Vec<Value>,
    routes: Vec<RouteSpec>,
    #[serde(default)]
    stats_path: Option<String>,
    #[serde(default)]
    timestamps_path: Option<String>,
    /// Where to write each link's queue every `links_interval_ms` (CSV, the simulator's links
    /// table: t_s, link, queue_pkts, queue_bytes, drops, tx_bytes); none by default.
    #[serde(default)]
    links_path: Option<String>,
    #[serde(default = "ten")]
    links_interval_ms: f64,
    /// Whether cclab-link sets each device up with txqueuelen 10000 itself (default true).
    #[serde(default = "yes")]
    configure_devices: bool,
}

fn one() -> u64 {
    1
}
fn ten() -> f64 {
    10.0
}
fn yes() -> bool {
    true
}

/// One link direction, checked and ready to build.
#[derive(Debug, Clone, PartialEq)]
pub struct LinkDef {
    pub name: String,
    pub config: LinkConfig,
}

/// A multi-port medium, checked and ready to build.
#[derive(Debug, Clone, PartialEq)]
pub struct MediumDef {
    /// Unique among links and media; also names its random stream.
    pub name: String,
    /// Its model and settings (the simulator builds the same).
    pub model: MediumModel,
    /// One per port: lane k is the transmit queue of port k, named so in the stats and the
    /// links series. Its length is the number of ports (at least 2).
    pub lanes: Vec<String>,
    /// Per medium port: the emulator port (a host's TUN) that sits on it, if any. A DCF cell
    /// carries limited broadcasts (to 255.255.255.255) from these ports to the others.
    pub ports: Vec<Option<usize>>,
}

/// One hop of a route: across element `element` (the links in spec order, then the media)
/// from its port `from` to its port `to` (a link: 0 to 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hop {
    pub element: usize,
    pub from: usize,
    pub to: usize,
}

/// A route with names resolved to indices.
#[derive(Debug, Clone, PartialEq)]
pub struct Route {
    pub from: usize,
    pub to: usize,
    /// At least one.
    pub hops: Vec<Hop>,
}

/// The whole, checked spec.
#[derive(Debug, Clone, PartialEq)]
pub struct Spec {
    pub seed: u64,
    pub ports: Vec<PortSpec>,
    pub links: Vec<LinkDef>,
    pub media: Vec<MediumDef>,
    pub routes: Vec<Route>,
    pub stats_path: Option<String>,
    pub timestamps_path: Option<String>,
    pub links_path: Option<String>,
    /// Sampling period of `links_path`, ns.
    pub links_interval_ns: u64,
    pub configure_devices: bool,
}

impl Spec {
    /// Parse and check a spec's JSON text.
    pub fn parse(text: &str) -> Result<Spec, SpecError> {
        let raw: RawSpec = serde_json::from_str(text).map_err(|e| err("spec", e.to_string()))?;
        if raw.ports.len() < 2 {
            return Err(err("ports", "at least two ports are needed"));
        }
        let mut port_ix = HashMap::new();
        let mut addr_owner: HashMap<Ipv4Addr, usize> = HashMap::new();
        for (i, p) in raw.ports.iter().enumerate() {
            let f = format!("ports[{i}]");
            if p.name.is_empty() || port_ix.insert(p.name.clone(), i).is_some() {
                return Err(err(
                    format!("{f}.name"),
                    format!("{:?} is empty or repeated: a unique port name", p.name),
                ));
            }
            if p.dev.is_empty() || p.dev.len() >= libc::IFNAMSIZ {
                return Err(err(
                    format!("{f}.dev"),
                    format!("{:?}: a device name of 1 to 15 characters", p.dev),
                ));
            }
            if let Some(ns) = &p.netns {
                if ns.is_empty() || ns.contains('/') {
                    return Err(err(
                        format!("{f}.netns"),
                        format!("{ns:?}: a namespace name (a file in /var/run/netns) or null"),
                    ));
                }
            }
            if p.addrs.is_empty() {
                return Err(err(format!("{f}.addrs"), "at least one IPv4 address"));
            }
            for a in &p.addrs {
                if let Some(j) = addr_owner.insert(*a, i) {
                    return Err(err(
                        format!("{f}.addrs"),
                        format!(
                            "{a} is already an address of ports[{j}]: each address on one port"
                        ),
                    ));
                }
            }
        }
        let mut links = Vec::new();
        let mut link_ix = HashMap::new();
        for (i, v) in raw.links.into_iter().enumerate() {
            let def = link_def(v, &format!("links[{i}]"))?;
            if link_ix.insert(def.name.clone(), i).is_some() {
                return Err(err(
                    format!("links[{i}].name"),
                    format!("{:?} is repeated: a unique link name", def.name),
                ));
            }
            links.push(def);
        }
        // Element names (routes, random streams) and row names (stats, links series) are
        // unique; a link's name is both.
        let mut medium_ix: HashMap<String, usize> = HashMap::new();
        let mut lane_owner: HashMap<String, usize> = HashMap::new();
        let mut media = Vec::new();
        for (i, v) in raw.media.into_iter().enumerate() {
            let f = format!("media[{i}]");
            let (mut def, port_names) = medium_def(v, &f)?;
            def.ports = port_names
                .iter()
                .map(|p| {
                    p.as_ref()
                        .map(|name| {
                            port_ix.get(name).copied().ok_or_else(|| {
                                err(format!("{f}.ports"), format!("{name:?} is not a port"))
                            })
                        })
                        .transpose()
                })
                .collect::<Result<_, _>>()?;
            let clash = if let Some(j) = link_ix.get(&def.name) {
                Some(format!("links[{j}]"))
            } else {
                medium_ix.get(&def.name).map(|j| format!("media[{j}]"))
            };
            if let Some(other) = clash {
                return Err(err(
                    format!("{f}.name"),
                    format!(
                        "{:?} is already the name of {other}: a name no link or medium has",
                        def.name
                    ),
                ));
            }
            for (k, lane) in def.lanes.iter().enumerate() {
                let clash = if let Some(j) = link_ix.get(lane) {
                    Some(format!("links[{j}]"))
                } else {
                    lane_owner
                        .get(lane)
                        .map(|j| format!("a lane of media[{j}]"))
                };
                if let Some(other) = clash {
                    return Err(err(
                        format!("{f}.lanes[{k}]"),
                        format!("{lane:?} is already {other}: lane names are unique among links and lanes"),
                    ));
                }
                lane_owner.insert(lane.clone(), i);
            }
            medium_ix.insert(def.name.clone(), i);
            media.push(def);
        }
        let mut routes: Vec<Route> = Vec::new();
        for (i, r) in raw.routes.iter().enumerate() {
            let f = format!("routes[{i}]");
            let port = |name: &str, field: &str| {
                port_ix.get(name).copied().ok_or_else(|| {
                    err(
                        format!("{f}.{field}"),
                        format!("{name:?} is not a port: one of the names in ports"),
                    )
                })
            };
            let from = port(&r.from, "from")?;
            let to = port(&r.to, "to")?;
            if from == to {
                return Err(err(f, "from and to are the same port"));
            }
            if routes.iter().any(|o| o.from == from && o.to == to) {
                return Err(err(
                    f,
                    format!("a second route from {:?} to {:?}", r.from, r.to),
                ));
            }
            if r.links.is_empty() {
                return Err(err(
                    format!("{f}.links"),
                    "empty: at least one link or medium crossing",
                ));
            }
            let mut hops = Vec::new();
            for (k, h) in r.links.iter().enumerate() {
                hops.push(hop(
                    h,
                    &format!("{f}.links[{k}]"),
                    &link_ix,
                    &medium_ix,
                    &media,
                )?);
            }
            routes.push(Route { from, to, hops });
        }
        if !(raw.links_interval_ms.is_finite() && raw.links_interval_ms >= 0.1) {
            return Err(err(
                "links_interval_ms",
                format!("{}: a period of at least 0.1 ms", raw.links_interval_ms),
            ));
        }
        Ok(Spec {
            seed: raw.seed,
            ports: raw.ports,
            links,
            media,
            routes,
            stats_path: raw.stats_path,
            timestamps_path: raw.timestamps_path,
            links_path: raw.links_path,
            links_interval_ns: (raw.links_interval_ms * 1e6).round() as u64,
            configure_devices: raw.configure_devices,
        })
    }

    /// The route from port `from` to port `to`.
    pub fn route(&self, from: usize, to: usize) -> Option<&Route> {
        self.routes.iter().find(|r| r.from == from && r.to == to)
    }
}

const HOP_FORMS: &str =
    r#"a link name (one of the names in links) or {"medium": NAME, "from": PORT, "to": PORT}"#;

/// One entry of `routes[i].links` at field `f`: a link's name, or a crossing of a medium.
fn hop(
    v: &Value,
    f: &str,
    link_ix: &HashMap<String, usize>,
    medium_ix: &HashMap<String, usize>,
    media: &[MediumDef],
) -> Result<Hop, SpecError> {
    match v {
        Value::String(l) => match link_ix.get(l) {
            Some(&element) => Ok(Hop {
                element,
                from: 0,
                to: 1,
            }),
            None if medium_ix.contains_key(l) => Err(err(
                f,
                format!(
                    r#"{l:?} is a medium: cross it as {{"medium": {l:?}, "from": PORT, "to": PORT}}"#
                ),
            )),
            None => Err(err(f, format!("{l:?} is not a link: {HOP_FORMS}"))),
        },
        Value::Object(m) => {
            if let Some(k) = m
                .keys()
                .find(|k| !["medium", "from", "to"].contains(&k.as_str()))
            {
                return Err(err(
                    f,
                    format!("unknown field {k:?}: a medium crossing has medium, from and to"),
                ));
            }
            let name = match m.get("medium") {
                Some(Value::String(s)) => s,
                other => return Err(err(f, format!("medium = {other:?}: the name of a medium"))),
            };
            let Some(&mi) = medium_ix.get(name) else {
                return Err(err(
                    f,
                    format!("{name:?} is not a medium: one of the names in media"),
                ));
            };
            let ports = media[mi].lanes.len();
            let port = |key: &str| {
                let p = m.get(key);
                p.and_then(Value::as_u64)
                    .and_then(|p| usize::try_from(p).ok())
                    .filter(|&p| p < ports)
                    .ok_or_else(|| {
                        err(
                            f,
                            format!(
                                "{key} = {}: a port of {name:?}, 0 to {} (one per lane)",
                                p.map_or("missing".to_string(), Value::to_string),
                                ports - 1
                            ),
                        )
                    })
            };
            let (from, to) = (port("from")?, port("to")?);
            if from == to {
                return Err(err(
                    f,
                    format!("from and to are the same port ({from}) of {name:?}"),
                ));
            }
            Ok(Hop {
                element: link_ix.len() + mi,
                from,
                to,
            })
        }
        other => Err(err(f, format!("{other}: {HOP_FORMS}"))),
    }
}

/// One medium at field `f`: `name`, `kind` ("shared", "dcf" or "mesh"), `lanes` (one name per
/// port, at least 2) and `spec` (the kind's settings in the scenario's units: a `SharedSpec`, a
/// `DcfSpec` or a `MeshSpec`).
fn medium_def(v: Value, f: &str) -> Result<(MediumDef, Vec<Option<String>>), SpecError> {
    let Value::Object(mut m) = v else {
        return Err(err(f, "an object with name, kind, lanes and spec"));
    };
    let name = match m.remove("name") {
        Some(Value::String(s)) if !s.is_empty() => s,
        other => {
            return Err(err(
                format!("{f}.name"),
                format!("{other:?}: a non-empty string is required"),
            ))
        }
    };
    let kinds = MediumKind::ALL
        .map(|k| format!("{:?}", k.name()))
        .join(", ");
    let kind = match m.remove("kind") {
        Some(v) => serde_json::from_value::<MediumKind>(v.clone()).map_err(|_| {
            err(
                format!("{f}.kind"),
                format!("{v} is not a kind of medium: one of {kinds}"),
            )
        })?,
        None => {
            return Err(err(
                format!("{f}.kind"),
                format!("missing: a kind of medium, one of {kinds}"),
            ))
        }
    };
    let lanes = match m.remove("lanes") {
        Some(Value::Array(a)) => a,
        other => {
            return Err(err(
                format!("{f}.lanes"),
                format!(
                    "{}: an array of lane names, one per port",
                    other.map_or("missing".to_string(), |v| v.to_string())
                ),
            ))
        }
    };
    let mut names: Vec<String> = Vec::with_capacity(lanes.len());
    for (k, l) in lanes.into_iter().enumerate() {
        match l {
            Value::String(s) if !s.is_empty() && !names.contains(&s) => names.push(s),
            other => {
                return Err(err(
                    format!("{f}.lanes[{k}]"),
                    format!("{other} is empty, repeated or not a string: a unique lane name"),
                ))
            }
        }
    }
    if names.len() < 2 {
        return Err(err(
            format!("{f}.lanes"),
            format!(
                "{} lane(s): a medium joins at least 2 ports, one lane each",
                names.len()
            ),
        ));
    }
    let Some(spec) = m.remove("spec") else {
        return Err(err(
            format!("{f}.spec"),
            "missing: the medium's settings (a shared channel: rate_bps, delay_ms, queue_pkts, \
             overhead_us, loss_model; a DCF cell: standard and the DcfSpec fields; a mesh chain: \
             the MeshSpec fields)",
        ));
    };
    let port_names = match m.remove("ports") {
        None => vec![None; names.len()],
        Some(Value::Array(a)) if a.len() == names.len() => a
            .into_iter()
            .map(|v| match v {
                Value::String(s) => Ok(Some(s)),
                Value::Null => Ok(None),
                other => Err(err(
                    format!("{f}.ports"),
                    format!("{other}: a port name or null per lane"),
                )),
            })
            .collect::<Result<Vec<_>, _>>()?,
        Some(other) => {
            return Err(err(
                format!("{f}.ports"),
                format!(
                    "{other}: an array of one port name (or null) per lane ({})",
                    names.len()
                ),
            ))
        }
    };
    if let Some(k) = m.keys().next() {
        return Err(err(
            format!("{f}.{k}"),
            "unknown field: a medium has name, kind, lanes, ports and spec",
        ));
    }
    let sf = format!("{f}.spec");
    let model = MediumModel::from_value(kind, spec, &sf).map_err(|e| net_err(e, &sf))?;
    model
        .validate(&sf, names.len())
        .map_err(|e| net_err(e, &sf))?;
    Ok((
        MediumDef {
            name,
            model,
            lanes: names,
            ports: Vec::new(),
        },
        port_names,
    ))
}

/// A cclab-net check's error as a spec error (its field is a full path already).
fn net_err(e: NetError, f: &str) -> SpecError {
    match e {
        NetError::Field { field, message } => err(field, message),
        NetError::InvalidField {
            field,
            value,
            accepted,
        } => err(
            format!("{f}.{field}"),
            format!("{value} is not accepted: {accepted}"),
        ),
        other => err(f, other.to_string()),
    }
}

/// One link: `name`, an optional shorthand `loss` (Bernoulli probability), and the scenario's
/// LinkSpec fields (rate_bps, capacity_trace_text, delay_ms, queue_pkts, queue_bytes,
/// loss_model, outages, delay_spikes, ecn_threshold_pkts, qdisc, radio).
fn link_def(v: Value, f: &str) -> Result<LinkDef, SpecError> {
    let serde_json::Value::Object(mut m) = v else {
        return Err(err(f, "an object with a name and LinkSpec fields"));
    };
    let name = match m.remove("name") {
        Some(serde_json::Value::String(s)) if !s.is_empty() => s,
        other => {
            return Err(err(
                format!("{f}.name"),
                format!("{other:?}: a non-empty string is required"),
            ))
        }
    };
    let loss = match m.remove("loss") {
        None | Some(serde_json::Value::Null) => None,
        Some(x) => Some(
            x.as_f64()
                .filter(|p| (0.0..=1.0).contains(p))
                .ok_or_else(|| err(format!("{f}.loss"), format!("{x}: a probability in [0, 1]")))?,
        ),
    };
    let spec: LinkSpec =
        serde_json::from_value(serde_json::Value::Object(m)).map_err(|e| err(f, e.to_string()))?;
    if loss.is_some() && spec.loss_model != LossModel::None {
        return Err(err(
            format!("{f}.loss"),
            "give either loss or loss_model, not both",
        ));
    }
    let config = link_config(&spec, loss, f)?;
    Ok(LinkDef { name, config })
}

fn check_time(field: String, v: f64) -> Result<(), SpecError> {
    if v.is_finite() && v >= 0.0 {
        Ok(())
    } else {
        Err(err(
            field,
            format!("{v} is not accepted: a finite number >= 0"),
        ))
    }
}

/// The cclab-net config of a LinkSpec, built as the simulator builds it
/// (`cclab_net::spec::LinkSpec::link_config`, shared with crates/cclab-sim).
fn link_config(spec: &LinkSpec, loss: Option<f64>, f: &str) -> Result<LinkConfig, SpecError> {
    if spec.rate_bps == Some(0) {
        return Err(err(
            format!("{f}.rate_bps"),
            "0 is not accepted: a rate > 0 bps",
        ));
    }
    check_time(format!("{f}.delay_ms"), spec.delay_ms)?;
    for (i, o) in spec.outages.iter().enumerate() {
        check_time(format!("{f}.outages[{i}].start_s"), o.start_s)?;
        check_time(format!("{f}.outages[{i}].duration_s"), o.duration_s)?;
    }
    for (i, d) in spec.delay_spikes.iter().enumerate() {
        check_time(format!("{f}.delay_spikes[{i}].start_s"), d.start_s)?;
        check_time(format!("{f}.delay_spikes[{i}].duration_s"), d.duration_s)?;
        check_time(
            format!("{f}.delay_spikes[{i}].extra_delay_ms"),
            d.extra_delay_ms,
        )?;
    }
    if spec.capacity_trace_text.is_some() && spec.rate_bps.is_some() {
        return Err(err(
            format!("{f}.capacity_trace_text"),
            "give either rate_bps or capacity_trace_text, not both",
        ));
    }
    if let Some(r) = &spec.radio {
        r.validate(&format!("{f}.radio")).map_err(|e| match e {
            cclab_net::NetError::Field { field, message } => err(field, message),
            other => err(format!("{f}.radio"), other.to_string()),
        })?;
    }
    let mut cfg = spec
        .link_config()
        .map_err(|e| err(format!("{f}.capacity_trace_text"), e))?;
    if let Some(p) = loss {
        cfg.loss = LossModel::Bernoulli { p };
    }
    cfg.validate().map_err(|e| err(f, e.to_string()))?;
    Ok(cfg)
}

#[cfg(test)]
mod tests {
    use super::*;
    use cclab_net::capacity::Capacity;
    use cclab_net::link::QueueLimit;
    use cclab_net::SharedSpec;

    pub const EXAMPLE: &str = r#"{ "seed": 1,
      "ports": [ {"name": "s0", "netns": "cclab-1234-s0", "dev": "cl0", "addrs": ["10.77.0.1"]},
                 {"name": "r0", "netns": "cclab-1234-r0", "dev": "cl0", "addrs": ["10.77.1.1"]} ],
      "links": [ {"name": "bottleneck", "rate_bps": 20000000, "delay_ms": 50, "queue_pkts": 1000,
                  "loss": 0.01},
                 {"name": "bottleneck.reverse", "delay_ms": 50} ],
      "routes": [ {"from": "s0", "to": "r0", "links": ["bottleneck"]},
                  {"from": "r0", "to": "s0", "links": ["bottleneck.reverse"]} ],
      "stats_path": "/tmp/cclab-1234/link-stats.json",
      "timestamps_path": null }"#;

    #[test]
    fn the_example_parses() {
        let s = Spec::parse(EXAMPLE).unwrap();
        assert_eq!(s.ports.len(), 2);
        assert_eq!(s.links[0].config.delay_ns, 50_000_000);
        assert_eq!(s.links[0].config.loss, LossModel::Bernoulli { p: 0.01 });
        assert_eq!(s.links[0].config.queue, QueueLimit::Packets(1000));
        assert_eq!(
            s.links[0].config.capacity,
            Some(Capacity::Rate {
                rate_bps: 20_000_000
            })
        );
        assert_eq!(s.links[1].config.capacity, None);
        let hop = |element| Hop {
            element,
            from: 0,
            to: 1,
        };
        assert_eq!(s.route(0, 1).unwrap().hops, vec![hop(0)]);
        assert_eq!(s.route(1, 0).unwrap().hops, vec![hop(1)]);
        assert!(s.media.is_empty());
        assert!(s.configure_devices);
    }

    fn field_of(text: &str) -> String {
        Spec::parse(text).unwrap_err().field
    }

    #[test]
    fn errors_name_the_field() {
        let bad = EXAMPLE.replace("\"delay_ms\": 50, \"queue", "\"delay_ms\": -1, \"queue");
        assert_eq!(field_of(&bad), "links[0].delay_ms");
        let bad = EXAMPLE.replace("\"loss\": 0.01", "\"loss\": 2");
        assert_eq!(field_of(&bad), "links[0].loss");
        let bad = EXAMPLE.replace("[\"bottleneck\"]", "[\"nope\"]");
        assert_eq!(field_of(&bad), "routes[0].links[0]");
        let bad = EXAMPLE.replace("\"to\": \"r0\"", "\"to\": \"x\"");
        assert_eq!(field_of(&bad), "routes[0].to");
        let bad = EXAMPLE.replace("10.77.1.1", "10.77.0.1");
        assert_eq!(field_of(&bad), "ports[1].addrs");
        let bad = EXAMPLE.replace("\"rate_bps\": 20000000", "\"rate_bps\": 0");
        assert_eq!(field_of(&bad), "links[0].rate_bps");
        let bad = EXAMPLE.replace("\"queue_pkts\": 1000", "\"queue_pkts\": 0");
        let e = Spec::parse(&bad).unwrap_err();
        assert!(e.to_string().contains("queue.packets"), "{e}");
        let bad = EXAMPLE.replace("\"queue_pkts\": 1000", "\"queue_pktz\": 1");
        let e = Spec::parse(&bad).unwrap_err();
        assert_eq!(e.field, "links[0]");
        assert!(e.message.contains("queue_pktz"), "{e}");
        let bad = EXAMPLE.replace(
            "\"dev\": \"cl0\", \"addrs\": [\"10.77.0.1\"]",
            "\"dev\": \"a-very-long-device-name\", \"addrs\": [\"10.77.0.1\"]",
        );
        assert_eq!(field_of(&bad), "ports[0].dev");
        let bad = EXAMPLE.replace("\"loss\": 0.01", "\"radio\": {\"max_dat\": 99}");
        let e = Spec::parse(&bad).unwrap_err();
        assert_eq!(e.field, "links[0].radio.max_dat", "{e:?}");
        let good = EXAMPLE.replace("\"loss\": 0.01", "\"radio\": {\"mobility\": \"car\"}");
        let s = Spec::parse(&good).unwrap();
        assert!(s.links[0].config.radio.is_some());
    }

    #[test]
    fn scenario_link_fields_are_accepted() {
        let text = EXAMPLE.replace(
            "\"loss\": 0.01",
            r#""loss_model": {"kind": "gilbert_elliott", "p_good_bad": 0.01, "p_bad_good": 0.3,
               "loss_good": 0, "loss_bad": 0.5},
               "outages": [{"start_s": 1, "duration_s": 0.5}],
               "delay_spikes": [{"start_s": 2, "duration_s": 1, "extra_delay_ms": 30}]"#,
        );
        let s = Spec::parse(&text).unwrap();
        let c = &s.links[0].config;
        assert!(matches!(c.loss, LossModel::GilbertElliott { .. }));
        assert_eq!(c.outages[0].start_ns, 1_000_000_000);
        assert_eq!(c.delay_spikes[0].extra_delay_ns, 30_000_000);
    }

    #[test]
    fn the_links_series_period_is_checked() {
        let s = Spec::parse(EXAMPLE).unwrap();
        assert_eq!(
            (s.links_path.as_deref(), s.links_interval_ns),
            (None, 10_000_000)
        );
        let text = EXAMPLE.replace(
            "\"timestamps_path\": null",
            "\"timestamps_path\": null, \"links_path\": \"/tmp/l.csv\", \"links_interval_ms\": 2.5",
        );
        let s = Spec::parse(&text).unwrap();
        assert_eq!(
            (s.links_path.as_deref(), s.links_interval_ns),
            (Some("/tmp/l.csv"), 2_500_000)
        );
        let bad = text.replace("2.5", "0");
        assert_eq!(Spec::parse(&bad).unwrap_err().field, "links_interval_ms");
    }

    /// Two stations (a, c) and an access point in a cell, the AP wired to b.
    pub const MEDIA: &str = r#"{ "seed": 1,
      "ports": [ {"name": "a", "netns": null, "dev": "ta", "addrs": ["10.0.0.1"]},
                 {"name": "b", "netns": null, "dev": "tb", "addrs": ["10.0.0.2"]},
                 {"name": "c", "netns": null, "dev": "tc", "addrs": ["10.0.0.3"]} ],
      "links": [ {"name": "wan", "rate_bps": 12000000, "delay_ms": 10},
                 {"name": "wan.rev", "delay_ms": 10} ],
      "media": [ {"name": "cell", "kind": "shared", "lanes": ["cell.sta1", "cell.sta2", "cell.ap"],
                  "spec": {"rate_bps": 12000000, "delay_ms": 0.5, "queue_pkts": 50,
                           "overhead_us": 100}} ],
      "routes": [ {"from": "a", "to": "b", "links": [{"medium": "cell", "from": 0, "to": 2}, "wan"]},
                  {"from": "c", "to": "b", "links": [{"medium": "cell", "from": 1, "to": 2}, "wan"]},
                  {"from": "b", "to": "a", "links": ["wan.rev", {"medium": "cell", "from": 2, "to": 0}]},
                  {"from": "a", "to": "c", "links": [{"medium": "cell", "from": 0, "to": 2},
                                                     {"medium": "cell", "from": 2, "to": 1}]} ] }"#;

    #[test]
    fn media_parse_and_routes_cross_them_port_to_port() {
        let s = Spec::parse(MEDIA).unwrap();
        assert_eq!(s.media.len(), 1);
        let m = &s.media[0];
        assert_eq!(m.name, "cell");
        assert_eq!(m.lanes, ["cell.sta1", "cell.sta2", "cell.ap"]);
        let MediumModel::Shared(sp) = &m.model else {
            panic!("a shared channel")
        };
        assert_eq!(
            *sp,
            SharedSpec {
                rate_bps: 12_000_000,
                delay_ms: 0.5,
                queue_pkts: Some(50),
                overhead_us: 100.0,
                loss_model: LossModel::None,
            }
        );
        // Elements: the links (0, 1), then the media (2).
        let h = |element, from, to| Hop { element, from, to };
        assert_eq!(s.route(0, 1).unwrap().hops, [h(2, 0, 2), h(0, 0, 1)]);
        assert_eq!(s.route(2, 1).unwrap().hops, [h(2, 1, 2), h(0, 0, 1)]);
        assert_eq!(s.route(1, 0).unwrap().hops, [h(1, 0, 1), h(2, 2, 0)]);
        assert_eq!(s.route(0, 2).unwrap().hops, [h(2, 0, 2), h(2, 2, 1)]);
        // A loss model and no queue limit are accepted too.
        let text = MEDIA.replace(
            "\"queue_pkts\": 50,",
            r#""queue_pkts": null, "loss_model": {"kind": "bernoulli", "p": 0.1},"#,
        );
        let s = Spec::parse(&text).unwrap();
        let MediumModel::Shared(sp) = &s.media[0].model else {
            panic!("a shared channel")
        };
        assert_eq!(
            (sp.queue_pkts, &sp.loss_model),
            (None, &LossModel::Bernoulli { p: 0.1 })
        );
    }

    #[test]
    fn a_dcf_cell_parses_as_the_simulator_reads_it() {
        let text = MEDIA
            .replace(r#""kind": "shared""#, r#""kind": "dcf""#)
            .replace(
                r#""spec": {"rate_bps": 12000000, "delay_ms": 0.5, "queue_pkts": 50,
                           "overhead_us": 100}"#,
                r#""spec": {"standard": "802.11g", "queue_pkts": 50,
                           "queue_pkts_by_port": [null, null, 200]}"#,
            );
        let s = Spec::parse(&text).unwrap();
        let MediumModel::Dcf(d) = &s.media[0].model else {
            panic!("a DCF cell")
        };
        assert_eq!(
            (d.port_queue_pkts(0), d.port_queue_pkts(2)),
            (Some(50), Some(200))
        );
        let bad = text.replace(r#""queue_pkts": 50"#, r#""queue_pkts": 50, "cw_min": "x""#);
        let e = Spec::parse(&bad).unwrap_err();
        assert_eq!(e.field, "media[0].spec.cw_min", "{e:?}");
        let bad = text.replace("[null, null, 200]", "[null, null, 200, 1]");
        let e = Spec::parse(&bad).unwrap_err();
        assert_eq!(e.field, "media[0].spec.queue_pkts_by_port", "{e:?}");
    }

    #[test]
    fn a_mesh_chain_parses_as_the_simulator_reads_it() {
        let text = MEDIA
            .replace(r#""kind": "shared""#, r#""kind": "mesh""#)
            .replace(
                r#""spec": {"rate_bps": 12000000, "delay_ms": 0.5, "queue_pkts": 50,
                           "overhead_us": 100}"#,
                r#""spec": {"spacing_m": 2.0, "mcs": 11, "ampdu": true, "queue_pkts": 50}"#,
            );
        let s = Spec::parse(&text).unwrap();
        let MediumModel::Mesh(m) = &s.media[0].model else {
            panic!("a mesh chain")
        };
        assert_eq!((m.spacing_m, m.ampdu, m.queue_pkts), (2.0, true, Some(50)));
        let bad = text.replace(r#""mcs": 11"#, r#""mcs": 16"#);
        let e = Spec::parse(&bad).unwrap_err();
        assert_eq!(e.field, "media[0].spec.mcs", "{e:?}");
    }

    #[test]
    fn bad_media_and_crossings_name_the_field() {
        let cases: &[(&str, &str, &str)] = &[
            (
                "\"rate_bps\": 12000000, \"delay_ms\": 0.5",
                "\"rate_bps\": 0, \"delay_ms\": 0.5",
                "media[0].spec.rate_bps",
            ),
            (
                "\"rate_bps\": 12000000, \"delay_ms\": 0.5",
                "\"delay_ms\": 0.5",
                "media[0].spec.rate_bps",
            ),
            (
                "\"rate_bps\": 12000000, \"delay_ms\": 0.5",
                "\"rate_bps\": \"fast\", \"delay_ms\": 0.5",
                "media[0].spec.rate_bps",
            ),
            (
                "\"delay_ms\": 0.5,",
                "\"delay_ms\": -1,",
                "media[0].spec.delay_ms",
            ),
            (
                "\"overhead_us\": 100",
                "\"overhead_us\": 100, \"cw_min\": 15",
                "media[0].spec.cw_min",
            ),
            (
                "\"queue_pkts\": 50",
                "\"queue_pkts\": 0",
                "media[0].spec.queue_pkts",
            ),
            (
                "\"queue_pkts\": 50",
                "\"queue_pkts\": -3",
                "media[0].spec.queue_pkts",
            ),
            (
                "\"overhead_us\": 100",
                r#""overhead_us": 100, "loss_model": {"kind": "bernoulli", "p": 2}"#,
                "media[0].spec.loss_model",
            ),
            (
                "\"overhead_us\": 100",
                r#""overhead_us": 100, "loss_model": {"kind": "bernoulli"}"#,
                "media[0].spec.loss_model",
            ),
            (
                "\"kind\": \"shared\"",
                "\"kind\": \"wifi\"",
                "media[0].kind",
            ),
            ("\"kind\": \"shared\",", "", "media[0].kind"),
            (
                "\"kind\": \"shared\"",
                "\"kind\": \"shared\", \"colour\": 1",
                "media[0].colour",
            ),
            (
                "[\"cell.sta1\", \"cell.sta2\", \"cell.ap\"]",
                "[\"cell.sta1\"]",
                "media[0].lanes",
            ),
            (
                "[\"cell.sta1\", \"cell.sta2\", \"cell.ap\"]",
                "\"cell.sta1\"",
                "media[0].lanes",
            ),
            (
                "[\"cell.sta1\", \"cell.sta2\", \"cell.ap\"]",
                "[\"cell.sta1\", \"cell.sta1\"]",
                "media[0].lanes[1]",
            ),
            (
                "[\"cell.sta1\", \"cell.sta2\", \"cell.ap\"]",
                "[\"cell.sta1\", \"\"]",
                "media[0].lanes[1]",
            ),
            (
                "[\"cell.sta1\", \"cell.sta2\", \"cell.ap\"]",
                "[\"cell.sta1\", \"wan.rev\"]",
                "media[0].lanes[1]",
            ),
            ("{\"name\": \"cell\"", "{\"name\": \"wan\"", "media[0].name"),
            ("{\"name\": \"cell\"", "{\"name\": \"\"", "media[0].name"),
            (
                "{\"medium\": \"cell\", \"from\": 0, \"to\": 2}, \"wan\"",
                "{\"medium\": \"cel\", \"from\": 0, \"to\": 2}, \"wan\"",
                "routes[0].links[0]",
            ),
            (
                "{\"medium\": \"cell\", \"from\": 0, \"to\": 2}, \"wan\"",
                "{\"medium\": \"cell\", \"from\": 0, \"to\": 3}, \"wan\"",
                "routes[0].links[0]",
            ),
            (
                "{\"medium\": \"cell\", \"from\": 0, \"to\": 2}, \"wan\"",
                "{\"medium\": \"cell\", \"from\": -1, \"to\": 2}, \"wan\"",
                "routes[0].links[0]",
            ),
            (
                "{\"medium\": \"cell\", \"from\": 0, \"to\": 2}, \"wan\"",
                "{\"medium\": \"cell\", \"to\": 2}, \"wan\"",
                "routes[0].links[0]",
            ),
            (
                "{\"medium\": \"cell\", \"from\": 0, \"to\": 2}, \"wan\"",
                "{\"medium\": \"cell\", \"from\": 2, \"to\": 2}, \"wan\"",
                "routes[0].links[0]",
            ),
            (
                "{\"medium\": \"cell\", \"from\": 0, \"to\": 2}, \"wan\"",
                "{\"medium\": \"cell\", \"from\": 0, \"to\": 2, \"via\": 1}, \"wan\"",
                "routes[0].links[0]",
            ),
            (
                "{\"medium\": \"cell\", \"from\": 0, \"to\": 2}, \"wan\"",
                "\"cell\", \"wan\"",
                "routes[0].links[0]",
            ),
            (
                "[\"wan.rev\", {\"medium\": \"cell\", \"from\": 2, \"to\": 0}]",
                "[\"wan.rev\", 7]",
                "routes[2].links[1]",
            ),
            (
                "[\"wan.rev\", {\"medium\": \"cell\", \"from\": 2, \"to\": 0}]",
                "[]",
                "routes[2].links",
            ),
        ];
        for (from, to, field) in cases {
            assert!(MEDIA.contains(from), "{from}");
            let e = Spec::parse(&MEDIA.replacen(from, to, 1)).unwrap_err();
            assert_eq!(e.field, *field, "{to}: {e}");
        }
        // A second medium named as the first.
        let second =
            r#"{"name": "cell", "kind": "shared", "lanes": ["x", "y"], "spec": {"rate_bps": 1}}"#;
        let text = MEDIA.replace(
            "\"overhead_us\": 100}} ]",
            &format!("\"overhead_us\": 100}}}}, {second} ]"),
        );
        assert_eq!(Spec::parse(&text).unwrap_err().field, "media[1].name");
        let text = text.replace(
            "{\"name\": \"cell\", \"kind\": \"shared\", \"lanes\": [\"x\"",
            "{\"name\": \"cell2\", \"kind\": \"shared\", \"lanes\": [\"cell.ap\"",
        );
        assert_eq!(Spec::parse(&text).unwrap_err().field, "media[1].lanes[0]");
        // Messages say what is accepted.
        let e = Spec::parse(&MEDIA.replacen(
            "\"from\": 0, \"to\": 2}, \"wan\"",
            "\"from\": 0, \"to\": 5}, \"wan\"",
            1,
        ))
        .unwrap_err();
        assert!(e.message.contains("0 to 2"), "{e}");
    }
}
