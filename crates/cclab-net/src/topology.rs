//! Networks beyond the dumbbell: nodes joined by links, static routes, and paths.
//!
//! A [`Graph`] is a set of nodes ([`NodeSpec`]: hosts, which end flows and never forward, and
//! routers, which forward) joined by point-to-point links ([`LinkPairSpec`], both directions:
//! `fwd` from `endpoints[0]` to `endpoints[1]`, `rev` back). Each link end is an interface of
//! its node, so a host with two links has two interfaces (the multipath case).
//!
//! A path is a list of [`Hop`]s, each a link crossed in one direction. A flow either gives its
//! path as a list of node names ([`Graph::path_through`]) or follows the routing table
//! ([`Graph::route`]): at each node, the node's static route for the destination if it has one,
//! else the next hop on a shortest path (fewest hops, through routers only; ties go to the link
//! declared first), as a router with static routes installed by a routing daemon would.
//!
//! Everything here is checked once, before a run, and every error names the scenario field:
//! unknown or repeated names, a link end that names no node, a node no link reaches (a
//! dangling interface), a path whose nodes are not linked, a path through a host, a loop, a
//! receiver no route reaches.

use crate::error::NetError;
use crate::model::{MediumKind, MediumModel};
use crate::spec::LinkSpec;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap, VecDeque};

/// What a node does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NodeKind {
    /// Ends flows (a namespace on the kernel backend); never forwards.
    #[default]
    Host,
    /// Forwards packets between its links (inside cclab-link on the kernel backend).
    Router,
}

/// A node of the network.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeSpec {
    /// Unique name.
    pub name: String,
    /// Host or router.
    #[serde(default)]
    pub kind: NodeKind,
    /// Static routes: destination node -> next-hop node (a neighbour). Destinations not listed
    /// follow shortest paths.
    #[serde(default)]
    pub routes: BTreeMap<String, String>,
    /// A host's stack below TCP, over the scenario's `[host]` defaults (hosts only).
    #[serde(default)]
    pub host: Option<crate::host::HostSpec>,
}

/// A point-to-point link between two nodes, both directions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkPairSpec {
    /// Unique name; its directions are `<name>.fwd` and `<name>.rev`.
    pub name: String,
    /// The two nodes it joins: `fwd` carries packets from the first to the second.
    pub endpoints: [String; 2],
    /// From `endpoints[0]` to `endpoints[1]`.
    pub fwd: LinkSpec,
    /// From `endpoints[1]` to `endpoints[0]`.
    pub rev: LinkSpec,
    /// Leave a direction that does nothing ([`LinkSpec::is_ideal`]) out of the simulation (the
    /// dumbbell shorthand's default access links). Links of the general form are always kept.
    #[serde(skip, default)]
    pub elide_ideal: bool,
}

/// A multi-port medium joining several nodes (each node's port is its interface on it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MediumSpec {
    /// Unique among links and media.
    pub name: String,
    /// The nodes on it; port k is `nodes[k]`.
    pub nodes: Vec<String>,
    /// Its model.
    #[serde(default)]
    pub kind: MediumKind,
    /// The model's settings, read by [`MediumSpec::model`] (so an error names its field).
    pub spec: serde_json::Value,
}

impl MediumSpec {
    /// Its model with settings, checked for its port count; errors name the field under
    /// `media[m].spec`.
    pub fn model(&self, m: usize) -> Result<MediumModel, NetError> {
        let path = format!("media[{m}].spec");
        let model = MediumModel::from_value(self.kind, self.spec.clone(), &path)?;
        model.validate(&path, self.nodes.len())?;
        Ok(model)
    }
}

/// Which way a link is crossed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Dir {
    /// `endpoints[0]` -> `endpoints[1]`.
    Fwd,
    /// `endpoints[1]` -> `endpoints[0]`.
    Rev,
}

/// One element crossed from one port to another: a link (element `k < links.len()`, port 0 is
/// `endpoints[0]`, so `Fwd` is 0 -> 1) or a medium (element `links.len() + m`, port k is
/// `nodes[k]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Hop {
    /// Index of the element: links first, then media.
    pub elem: usize,
    /// Port it enters by.
    pub from: usize,
    /// Port it leaves by.
    pub to: usize,
}

impl Hop {
    /// The reverse crossing of the same element.
    pub fn reversed(self) -> Hop {
        Hop {
            elem: self.elem,
            from: self.to,
            to: self.from,
        }
    }

    /// For a link: the direction crossed.
    pub fn dir(self) -> Dir {
        if self.from == 0 {
            Dir::Fwd
        } else {
            Dir::Rev
        }
    }
}

/// A checked network: nodes, links, adjacency, static routes.
#[derive(Debug, Clone)]
pub struct Graph {
    /// The nodes, in declaration order.
    pub nodes: Vec<NodeSpec>,
    /// The links, in declaration order.
    pub links: Vec<LinkPairSpec>,
    /// The multi-port media, in declaration order.
    pub media: Vec<MediumSpec>,
    node_ix: HashMap<String, usize>,
    /// Per node: (neighbour, the hop that reaches it), in link declaration order.
    adj: Vec<Vec<(usize, Hop)>>,
    /// Per node: destination node -> next-hop node, from `routes`.
    static_next: Vec<HashMap<usize, usize>>,
}

impl Graph {
    /// Check and index `nodes` and `links` (errors name `nodes[i]...` and `links[k]...`).
    pub fn new(nodes: Vec<NodeSpec>, links: Vec<LinkPairSpec>) -> Result<Graph, NetError> {
        Graph::with_media(nodes, links, Vec::new())
    }

    /// [`Graph::new`] with multi-port media too (errors name `media[m]...`).
    pub fn with_media(
        nodes: Vec<NodeSpec>,
        links: Vec<LinkPairSpec>,
        media: Vec<MediumSpec>,
    ) -> Result<Graph, NetError> {
        let mut node_ix = HashMap::new();
        for (i, n) in nodes.iter().enumerate() {
            if n.name.is_empty() {
                return Err(NetError::field(
                    format!("nodes[{i}].name"),
                    "a non-empty name",
                ));
            }
            if let Some(j) = node_ix.insert(n.name.clone(), i) {
                return Err(NetError::field(
                    format!("nodes[{i}].name"),
                    format!(
                        "{:?} is already the name of nodes[{j}]: names are unique",
                        n.name
                    ),
                ));
            }
        }
        let mut adj = vec![Vec::new(); nodes.len()];
        let mut seen_link: HashMap<&str, usize> = HashMap::new();
        let mut pair_link: HashMap<(usize, usize), usize> = HashMap::new();
        for (k, l) in links.iter().enumerate() {
            if l.name.is_empty() {
                return Err(NetError::field(
                    format!("links[{k}].name"),
                    "a non-empty name",
                ));
            }
            if let Some(j) = seen_link.insert(&l.name, k) {
                return Err(NetError::field(
                    format!("links[{k}].name"),
                    format!(
                        "{:?} is already the name of links[{j}]: names are unique",
                        l.name
                    ),
                ));
            }
            let mut ends = [0usize; 2];
            for (e, name) in l.endpoints.iter().enumerate() {
                ends[e] = *node_ix.get(name).ok_or_else(|| {
                    NetError::field(
                        format!("links[{k}].endpoints[{e}]"),
                        format!("{name:?} is not a node; nodes are {}", names(&nodes)),
                    )
                })?;
            }
            let [a, b] = ends;
            if a == b {
                return Err(NetError::field(
                    format!("links[{k}].endpoints"),
                    format!(
                        "both ends are {:?}: a link joins two different nodes",
                        l.endpoints[0]
                    ),
                ));
            }
            if let Some(j) = pair_link.insert((a.min(b), a.max(b)), k) {
                return Err(NetError::field(
                    format!("links[{k}].endpoints"),
                    format!(
                        "links[{j}] already joins {:?} and {:?}: parallel links between two nodes are \
                         not supported (put a router on one of them)",
                        l.endpoints[0], l.endpoints[1]
                    ),
                ));
            }
            adj[a].push((
                b,
                Hop {
                    elem: k,
                    from: 0,
                    to: 1,
                },
            ));
            adj[b].push((
                a,
                Hop {
                    elem: k,
                    from: 1,
                    to: 0,
                },
            ));
        }
        for (m, md) in media.iter().enumerate() {
            let elem = links.len() + m;
            if md.name.is_empty() {
                return Err(NetError::field(
                    format!("media[{m}].name"),
                    "a non-empty name",
                ));
            }
            if let Some(j) = seen_link.insert(&md.name, elem) {
                let other = if j < links.len() {
                    format!("links[{j}]")
                } else {
                    format!("media[{}]", j - links.len())
                };
                return Err(NetError::field(
                    format!("media[{m}].name"),
                    format!(
                        "{:?} is already the name of {other}: names are unique",
                        md.name
                    ),
                ));
            }
            if md.nodes.len() < 2 {
                return Err(NetError::field(
                    format!("media[{m}].nodes"),
                    "at least two nodes",
                ));
            }
            let mut ix = Vec::with_capacity(md.nodes.len());
            for (e, name) in md.nodes.iter().enumerate() {
                let i = *node_ix.get(name).ok_or_else(|| {
                    NetError::field(
                        format!("media[{m}].nodes[{e}]"),
                        format!("{name:?} is not a node; nodes are {}", names(&nodes)),
                    )
                })?;
                if ix.contains(&i) {
                    return Err(NetError::field(
                        format!("media[{m}].nodes[{e}]"),
                        format!("{name:?} is on it twice"),
                    ));
                }
                ix.push(i);
            }
            for (p, &a) in ix.iter().enumerate() {
                for (q, &b) in ix.iter().enumerate() {
                    if p == q {
                        continue;
                    }
                    if p < q {
                        if let Some(j) = pair_link.insert((a.min(b), a.max(b)), elem) {
                            return Err(NetError::field(
                                format!("media[{m}].nodes"),
                                format!(
                                    "{:?} and {:?} are already joined (element {j}): two elements between \
                                     two nodes are not supported",
                                    md.nodes[p], md.nodes[q]
                                ),
                            ));
                        }
                    }
                    adj[a].push((
                        b,
                        Hop {
                            elem,
                            from: p,
                            to: q,
                        },
                    ));
                }
            }
        }
        for (i, n) in nodes.iter().enumerate() {
            if adj[i].is_empty() {
                return Err(NetError::field(
                    format!("nodes[{i}]"),
                    format!("{:?} is dangling: no link has it as an endpoint", n.name),
                ));
            }
        }
        let mut static_next = vec![HashMap::new(); nodes.len()];
        for (i, n) in nodes.iter().enumerate() {
            for (dst, via) in &n.routes {
                let field = format!("nodes[{i}].routes.{dst}");
                let d = *node_ix.get(dst).ok_or_else(|| {
                    NetError::field(
                        field.clone(),
                        format!("{dst:?} is not a node; nodes are {}", names(&nodes)),
                    )
                })?;
                let v = *node_ix.get(via).ok_or_else(|| {
                    NetError::field(field.clone(), format!("next hop {via:?} is not a node"))
                })?;
                if !adj[i].iter().any(|&(nb, _)| nb == v) {
                    return Err(NetError::field(
                        field,
                        format!(
                            "next hop {via:?} is not a neighbour of {:?} (no link joins them)",
                            n.name
                        ),
                    ));
                }
                static_next[i].insert(d, v);
            }
        }
        Ok(Graph {
            nodes,
            links,
            media,
            node_ix,
            adj,
            static_next,
        })
    }

    /// Index of the node named `name`.
    pub fn node(&self, name: &str) -> Option<usize> {
        self.node_ix.get(name).copied()
    }

    /// The node at `port` of element `elem`.
    fn node_at(&self, elem: usize, port: usize) -> usize {
        let name = match self.links.get(elem) {
            Some(l) => &l.endpoints[port],
            None => &self.media[elem - self.links.len()].nodes[port],
        };
        self.node_ix[name]
    }

    /// The node a hop leaves from and the node it reaches.
    pub fn ends(&self, h: Hop) -> (usize, usize) {
        (self.node_at(h.elem, h.from), self.node_at(h.elem, h.to))
    }

    /// The name of element `elem` (a link's or a medium's).
    pub fn elem_name(&self, elem: usize) -> &str {
        match self.links.get(elem) {
            Some(l) => &l.name,
            None => &self.media[elem - self.links.len()].name,
        }
    }

    /// The link direction a hop crosses, if the hop is on a link.
    pub fn spec(&self, h: Hop) -> Option<&LinkSpec> {
        let l = self.links.get(h.elem)?;
        Some(match h.dir() {
            Dir::Fwd => &l.fwd,
            Dir::Rev => &l.rev,
        })
    }

    fn hop_between(&self, a: usize, b: usize) -> Option<Hop> {
        self.adj[a]
            .iter()
            .find(|&&(nb, _)| nb == b)
            .map(|&(_, h)| h)
    }

    /// The path through the named nodes, first to last; `field` is the scenario path of the
    /// list (`flows[0].path`). Every name must be a node, consecutive nodes linked, no node
    /// visited twice, and every node between the ends a router.
    pub fn path_through(&self, nodes: &[String], field: &str) -> Result<Vec<Hop>, NetError> {
        if nodes.len() < 2 {
            return Err(NetError::field(
                field,
                "at least two nodes: the sender first, the receiver last",
            ));
        }
        let mut ix = Vec::with_capacity(nodes.len());
        for (k, n) in nodes.iter().enumerate() {
            let i = self.node(n).ok_or_else(|| {
                NetError::field(
                    format!("{field}[{k}]"),
                    format!("{n:?} is not a node; nodes are {}", names(&self.nodes)),
                )
            })?;
            if let Some(j) = ix.iter().position(|&x| x == i) {
                return Err(NetError::field(
                    format!("{field}[{k}]"),
                    format!(
                        "{n:?} is already {field}[{j}]: a path that visits a node twice is a loop"
                    ),
                ));
            }
            if k > 0 && k + 1 < nodes.len() && self.nodes[i].kind == NodeKind::Host {
                return Err(NetError::field(
                    format!("{field}[{k}]"),
                    format!("{n:?} is a host, and hosts do not forward: give it kind = \"router\""),
                ));
            }
            ix.push(i);
        }
        ix.windows(2)
            .enumerate()
            .map(|(k, w)| {
                self.hop_between(w[0], w[1]).ok_or_else(|| {
                    NetError::field(
                        format!("{field}[{}]", k + 1),
                        format!(
                            "no link or medium joins {:?} and {:?}",
                            nodes[k],
                            nodes[k + 1]
                        ),
                    )
                })
            })
            .collect()
    }

    /// Per node, the next hop towards `dst` on a shortest path that forwards only through
    /// routers (breadth-first from `dst`; ties go to the link declared first). `None` where
    /// `dst` is unreachable.
    fn shortest_next(&self, dst: usize) -> Vec<Option<usize>> {
        let mut next = vec![None; self.nodes.len()];
        let mut seen = vec![false; self.nodes.len()];
        seen[dst] = true;
        let mut q = VecDeque::from([dst]);
        while let Some(v) = q.pop_front() {
            // Only the destination itself and routers pass routes on.
            if v != dst && self.nodes[v].kind != NodeKind::Router {
                continue;
            }
            for &(u, _) in &self.adj[v] {
                if !seen[u] {
                    seen[u] = true;
                    next[u] = Some(v);
                    q.push_back(u);
                }
            }
        }
        next
    }

    /// The path from `src` to `dst` by the routing table (static routes first, then shortest
    /// paths); `field` names the flow for errors (`flows[2]`).
    pub fn route(&self, src: &str, dst: &str, field: &str) -> Result<Vec<Hop>, NetError> {
        let s = self
            .node(src)
            .ok_or_else(|| NetError::field(field, format!("{src:?} is not a node")))?;
        let d = self
            .node(dst)
            .ok_or_else(|| NetError::field(field, format!("{dst:?} is not a node")))?;
        if s == d {
            return Err(NetError::field(
                field,
                format!("sender and receiver are both {src:?}"),
            ));
        }
        let shortest = self.shortest_next(d);
        let mut at = s;
        let mut visited = vec![s];
        let mut hops = Vec::new();
        while at != d {
            if at != s && self.nodes[at].kind == NodeKind::Host {
                return Err(NetError::field(
                    field,
                    format!(
                        "the route from {src:?} to {dst:?} passes host {:?}, and hosts do not forward ({})",
                        self.nodes[at].name,
                        trail(&self.nodes, &visited)
                    ),
                ));
            }
            let nxt = self.static_next[at]
                .get(&d)
                .copied()
                .or(shortest[at])
                .ok_or_else(|| {
                    NetError::field(
                        field,
                        format!(
                            "{dst:?} is unreachable from {src:?}: no route from {:?} ({})",
                            self.nodes[at].name,
                            trail(&self.nodes, &visited)
                        ),
                    )
                })?;
            hops.push(self.hop_between(at, nxt).expect("next hops are neighbours"));
            if visited.contains(&nxt) {
                visited.push(nxt);
                return Err(NetError::field(
                    field,
                    format!(
                        "the routes from {src:?} to {dst:?} loop: {}",
                        trail(&self.nodes, &visited)
                    ),
                ));
            }
            visited.push(nxt);
            at = nxt;
        }
        Ok(hops)
    }
}

fn names(nodes: &[NodeSpec]) -> String {
    let v: Vec<&str> = nodes.iter().map(|n| n.name.as_str()).collect();
    format!("{v:?}")
}

fn trail(nodes: &[NodeSpec], visited: &[usize]) -> String {
    visited
        .iter()
        .map(|&i| nodes[i].name.as_str())
        .collect::<Vec<_>>()
        .join(" -> ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(name: &str, kind: NodeKind) -> NodeSpec {
        NodeSpec {
            name: name.into(),
            kind,
            routes: BTreeMap::new(),
            host: None,
        }
    }

    fn link(name: &str, a: &str, b: &str) -> LinkPairSpec {
        LinkPairSpec {
            name: name.into(),
            endpoints: [a.into(), b.into()],
            fwd: LinkSpec::default(),
            rev: LinkSpec::default(),
            elide_ideal: false,
        }
    }

    /// s - r1 - r2 - d, and a longer way s - r3 - r4 - r2.
    fn graph() -> Graph {
        use NodeKind::*;
        Graph::new(
            vec![
                node("s", Host),
                node("r1", Router),
                node("r2", Router),
                node("d", Host),
                node("r3", Router),
                node("r4", Router),
            ],
            vec![
                link("a", "s", "r1"),
                link("b", "r1", "r2"),
                link("c", "r2", "d"),
                link("e", "s", "r3"),
                link("f", "r3", "r4"),
                link("g", "r4", "r2"),
            ],
        )
        .unwrap()
    }

    fn err_of(r: Result<impl std::fmt::Debug, NetError>) -> (String, String) {
        match r.unwrap_err() {
            NetError::Field { field, message } => (field, message),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn routes_take_the_shortest_way_and_paths_the_given_one() {
        let g = graph();
        let r = g.route("s", "d", "flows[0]").unwrap();
        assert_eq!(r.iter().map(|h| h.elem).collect::<Vec<_>>(), [0, 1, 2]);
        assert!(r.iter().all(|h| h.dir() == Dir::Fwd));
        let back = g.route("d", "s", "flows[0]").unwrap();
        assert_eq!(
            back.iter().map(|h| (h.elem, h.dir())).collect::<Vec<_>>(),
            [(2, Dir::Rev), (1, Dir::Rev), (0, Dir::Rev)]
        );
        let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let p = g
            .path_through(&names(&["s", "r3", "r4", "r2", "d"]), "flows[1].path")
            .unwrap();
        assert_eq!(p.iter().map(|h| h.elem).collect::<Vec<_>>(), [3, 4, 5, 2]);
        assert_eq!(p[2].dir(), Dir::Fwd);
        assert_eq!(g.ends(p[0]), (0, 4));
    }

    #[test]
    fn static_routes_win_and_loops_are_named() {
        let mut nodes = graph().nodes;
        nodes[1].routes.insert("d".into(), "s".into()); // r1 sends d's packets back to s
        let g = Graph::new(nodes.clone(), graph().links).unwrap();
        let (field, msg) = err_of(g.route("s", "d", "flows[3]"));
        assert_eq!(field, "flows[3]");
        assert!(
            msg.contains("passes host \"s\"") || msg.contains("loop"),
            "{msg}"
        );
        nodes[1].routes.insert("d".into(), "r2".into());
        nodes[2].routes.insert("d".into(), "r1".into()); // r1 <-> r2 ping-pong
        let g = Graph::new(nodes, graph().links).unwrap();
        let (_, msg) = err_of(g.route("s", "d", "flows[0]"));
        assert!(msg.contains("loop: s -> r1 -> r2 -> r1"), "{msg}");
    }

    #[test]
    fn bad_topologies_name_their_field() {
        use NodeKind::*;
        let (f, m) = err_of(Graph::new(
            vec![node("s", Host), node("d", Host)],
            vec![link("a", "s", "x")],
        ));
        assert_eq!(f, "links[0].endpoints[1]");
        assert!(m.contains("\"x\" is not a node"), "{m}");
        let (f, m) = err_of(Graph::new(
            vec![node("s", Host), node("d", Host), node("lonely", Router)],
            vec![link("a", "s", "d")],
        ));
        assert_eq!(f, "nodes[2]");
        assert!(m.contains("dangling"), "{m}");
        let (f, _) = err_of(Graph::new(vec![node("s", Host), node("s", Host)], vec![]));
        assert_eq!(f, "nodes[1].name");
        let (f, m) = err_of(Graph::new(
            vec![node("s", Host), node("d", Host)],
            vec![link("a", "s", "d"), link("b", "d", "s")],
        ));
        assert_eq!(f, "links[1].endpoints");
        assert!(m.contains("parallel"), "{m}");
        let mut n = vec![node("s", Host), node("d", Host)];
        n[0].routes.insert("d".into(), "nowhere".into());
        let (f, _) = err_of(Graph::new(n, vec![link("a", "s", "d")]));
        assert_eq!(f, "nodes[0].routes.d");

        let g = graph();
        let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let (f, m) = err_of(g.path_through(&names(&["s", "r2", "d"]), "flows[0].path"));
        assert_eq!(f, "flows[0].path[1]");
        assert!(
            m.contains("no link or medium joins \"s\" and \"r2\""),
            "{m}"
        );
        let (f, m) = err_of(g.path_through(&names(&["s", "r1", "s"]), "flows[0].path"));
        assert_eq!(f, "flows[0].path[2]");
        assert!(m.contains("loop"), "{m}");
        let (f, _) = err_of(g.path_through(&names(&["s", "zz"]), "flows[0].path"));
        assert_eq!(f, "flows[0].path[1]");
    }

    #[test]
    fn a_medium_joins_every_pair_of_its_nodes() {
        use NodeKind::*;
        let spec = serde_json::json!({"rate_bps": 1});
        let cell = MediumSpec {
            name: "cell".into(),
            nodes: vec!["a".into(), "b".into(), "ap".into()],
            kind: MediumKind::Shared,
            spec,
        };
        let g = Graph::with_media(
            vec![
                node("a", Host),
                node("b", Host),
                node("ap", Router),
                node("srv", Host),
            ],
            vec![link("wire", "ap", "srv")],
            vec![cell.clone()],
        )
        .unwrap();
        let r = g.route("a", "srv", "flows[0]").unwrap();
        assert_eq!(
            r,
            [
                Hop {
                    elem: 1,
                    from: 0,
                    to: 2
                },
                Hop {
                    elem: 0,
                    from: 0,
                    to: 1
                }
            ]
        );
        assert_eq!(g.elem_name(1), "cell");
        assert!(g.spec(r[0]).is_none() && g.spec(r[1]).is_some());
        // Host to host across the cell, directly.
        assert_eq!(
            g.route("b", "a", "flows[1]").unwrap(),
            [Hop {
                elem: 1,
                from: 1,
                to: 0
            }]
        );
        let (f, m) = err_of(Graph::with_media(
            vec![node("a", Host), node("b", Host), node("ap", Router)],
            vec![link("wire", "a", "ap")],
            vec![cell],
        ));
        assert_eq!(f, "media[0].nodes");
        assert!(m.contains("already joined"), "{m}");
    }

    #[test]
    fn hosts_do_not_forward_and_islands_are_unreachable() {
        use NodeKind::*;
        // a - h - b: h is a host, so a cannot reach b through it.
        let g = Graph::new(
            vec![node("a", Host), node("h", Host), node("b", Host)],
            vec![link("x", "a", "h"), link("y", "h", "b")],
        )
        .unwrap();
        let (_, m) = err_of(g.route("a", "b", "flows[0]"));
        assert!(m.contains("unreachable"), "{m}");
        let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let (f, m) = err_of(g.path_through(&names(&["a", "h", "b"]), "flows[0].path"));
        assert_eq!(f, "flows[0].path[1]");
        assert!(m.contains("hosts do not forward"), "{m}");
    }
}
