//! The spec `cclab-link --spec SPEC.json` reads: ports (a TUN device in a namespace), links
//! (one direction each, in the scenario's own field names and units) and routes (which links a
//! packet from one port to another crosses). `Spec::parse` checks everything and names the
//! field that is wrong.

use cclab_net::link::LinkConfig;
use cclab_net::loss::LossModel;
use cclab_net::spec::LinkSpec;
use serde::Deserialize;
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

/// Packets from port `from` to port `to` cross `links` in order.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RouteSpec {
    pub from: String,
    pub to: String,
    pub links: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSpec {
    #[serde(default = "one")]
    seed: u64,
    ports: Vec<PortSpec>,
    links: Vec<serde_json::Value>,
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

/// A route with names resolved to indices.
#[derive(Debug, Clone, PartialEq)]
pub struct Route {
    pub from: usize,
    pub to: usize,
    pub links: Vec<usize>,
}

/// The whole, checked spec.
#[derive(Debug, Clone, PartialEq)]
pub struct Spec {
    pub seed: u64,
    pub ports: Vec<PortSpec>,
    pub links: Vec<LinkDef>,
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
            let mut ls = Vec::new();
            for (k, l) in r.links.iter().enumerate() {
                let ix = link_ix.get(l).copied().ok_or_else(|| {
                    err(
                        format!("{f}.links[{k}]"),
                        format!("{l:?} is not a link: one of the names in links"),
                    )
                })?;
                ls.push(ix);
            }
            routes.push(Route {
                from,
                to,
                links: ls,
            });
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

/// One link: `name`, an optional shorthand `loss` (Bernoulli probability), and the scenario's
/// LinkSpec fields (rate_bps, capacity_trace_text, delay_ms, queue_pkts, queue_bytes,
/// loss_model, outages, delay_spikes).
fn link_def(v: serde_json::Value, f: &str) -> Result<LinkDef, SpecError> {
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
        assert_eq!(s.route(0, 1).unwrap().links, vec![0]);
        assert_eq!(s.route(1, 0).unwrap().links, vec![1]);
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
}
