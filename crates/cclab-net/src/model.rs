//! Which multi-port medium a scenario asks for, and building it: one place for every kind, so
//! the simulator (`cclab-sim`) and the real-time emulator (`cclab-emu`) build the same model
//! from the same settings.
//!
//! In a scenario a medium is `{"kind": K, "spec": {...}}`: `"shared"` is a
//! [`SharedChannel`] ([`SharedSpec`]), `"dcf"` an 802.11 [`DcfCell`] ([`DcfSpec`]), `"mesh"` an
//! 802.11s [`MeshChain`] ([`MeshSpec`]).

use crate::dcf::{DcfCell, DcfSpec};
use crate::error::NetError;
use crate::medium::Medium;
use crate::mesh::{MeshChain, MeshSpec};
use crate::packet::NetPacket;
use crate::shared::{SharedChannel, SharedSpec};
use crate::spec::ms_to_ns;
use rand_chacha::ChaCha8Rng;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

/// What kind of multi-port medium: the names a scenario's `kind` takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MediumKind {
    /// [`SharedChannel`]: one transmitter shared round-robin by its ports.
    #[default]
    Shared,
    /// [`DcfCell`]: an 802.11 cell whose ports contend under DCF.
    Dcf,
    /// [`MeshChain`]: an 802.11s mesh chain, nodes on a line sensing each other by distance.
    Mesh,
}

impl MediumKind {
    /// Every kind, as a scenario names it.
    pub const ALL: [MediumKind; 3] = [MediumKind::Shared, MediumKind::Dcf, MediumKind::Mesh];

    /// The scenario's name for it.
    pub fn name(self) -> &'static str {
        match self {
            MediumKind::Shared => "shared",
            MediumKind::Dcf => "dcf",
            MediumKind::Mesh => "mesh",
        }
    }
}

/// A medium's model with its settings (the scenario's units); serializes as
/// `{"kind": ..., "spec": {...}}`.
#[derive(Debug, Clone, PartialEq)]
pub enum MediumModel {
    /// A shared channel.
    Shared(SharedSpec),
    /// An 802.11 DCF cell.
    Dcf(DcfSpec),
    /// An 802.11s mesh chain.
    Mesh(MeshSpec),
}

impl MediumModel {
    /// The model of `kind` from its `spec` object; an error names the field under `path`
    /// (`media[0].spec.rate_bps`).
    pub fn from_value(
        kind: MediumKind,
        spec: serde_json::Value,
        path: &str,
    ) -> Result<Self, NetError> {
        Ok(match kind {
            MediumKind::Shared => MediumModel::Shared(from_fields(
                spec,
                path,
                Some(("rate_bps", serde_json::Value::from(1))),
            )?),
            MediumKind::Dcf => MediumModel::Dcf(from_fields(spec, path, None)?),
            MediumKind::Mesh => MediumModel::Mesh(from_fields(spec, path, None)?),
        })
    }

    /// Its kind.
    pub fn kind(&self) -> MediumKind {
        match self {
            MediumModel::Shared(_) => MediumKind::Shared,
            MediumModel::Dcf(_) => MediumKind::Dcf,
            MediumModel::Mesh(_) => MediumKind::Mesh,
        }
    }

    /// Its settings as a scenario writes them.
    pub fn spec_value(&self) -> serde_json::Value {
        match self {
            MediumModel::Shared(s) => serde_json::to_value(s),
            MediumModel::Dcf(s) => serde_json::to_value(s),
            MediumModel::Mesh(s) => serde_json::to_value(s),
        }
        .expect("a medium's spec always serializes")
    }

    /// Check every value for a medium of `ports` ports; errors name the field under `path`
    /// (the spec's path, `media[0].spec`).
    pub fn validate(&self, path: &str, ports: usize) -> Result<(), NetError> {
        match self {
            MediumModel::Shared(s) => s.validate(path),
            MediumModel::Dcf(s) => {
                s.validate(path)?;
                s.validate_ports(path, ports)
            }
            MediumModel::Mesh(s) => s.validate(path, ports),
        }
    }

    /// The medium, with `ports` ports, drawing from `rng`.
    pub fn build<P: NetPacket + 'static>(
        &self,
        ports: usize,
        rng: ChaCha8Rng,
    ) -> Box<dyn Medium<P>> {
        match self {
            MediumModel::Shared(s) => Box::new(SharedChannel::new(s.clone(), ports, rng)),
            MediumModel::Dcf(s) => Box::new(DcfCell::new(s.clone(), ports, rng)),
            MediumModel::Mesh(s) => Box::new(MeshChain::new(s.clone(), ports, rng)),
        }
    }

    /// Port `port`'s transmit queue limit, packets (None: no limit).
    pub fn port_queue_pkts(&self, port: usize) -> Option<u32> {
        match self {
            MediumModel::Shared(s) => s.queue_pkts,
            MediumModel::Dcf(s) => s.port_queue_pkts(port),
            MediumModel::Mesh(s) => s.queue_pkts,
        }
    }

    /// Time a packet of `wire_bytes` takes across the idle medium, from offer to arrival, ns:
    /// for a shared channel its overhead, bits and delay; for a DCF cell DIFS, the data frame
    /// and the delay (what a handshake's first RTT sees; the first slot boundary is DIFS after
    /// the medium went idle).
    pub fn idle_crossing_ns(&self, wire_bytes: u32) -> u64 {
        match self {
            MediumModel::Shared(s) => {
                ms_to_ns(s.delay_ms)
                    + (s.overhead_us * 1000.0).round() as u64
                    + u64::from(wire_bytes) * 8 * 1_000_000_000 / s.rate_bps.max(1)
            }
            MediumModel::Dcf(s) => {
                let p = s.params();
                p.difs_ns + p.data_ns(wire_bytes) + p.delay_ns
            }
            MediumModel::Mesh(s) => {
                let p = s.params(2);
                p.difs_ns + p.data_ns(wire_bytes) + p.delay_ns
            }
        }
    }
}

/// Deserialize the object `v` at field `path`; an error names the field that is wrong
/// (`path.rate_bps`): found by trying the fields one at a time (with the `required` field, if
/// any, filled in), or the missing field serde names.
pub fn from_fields<T: DeserializeOwned>(
    v: serde_json::Value,
    path: &str,
    required: Option<(&str, serde_json::Value)>,
) -> Result<T, NetError> {
    let e = match serde_json::from_value::<T>(v.clone()) {
        Ok(t) => return Ok(t),
        Err(e) => crate::error::plain_json_error(&e),
    };
    if let serde_json::Value::Object(m) = &v {
        for (k, x) in m {
            let mut one = serde_json::Map::new();
            if let Some((name, value)) = &required {
                one.insert(name.to_string(), value.clone());
            }
            one.insert(k.clone(), x.clone());
            if let Err(e1) = serde_json::from_value::<T>(serde_json::Value::Object(one)) {
                return Err(NetError::field(
                    format!("{path}.{k}"),
                    crate::error::plain_json_error(&e1),
                ));
            }
        }
    }
    match e.strip_prefix("required: ") {
        Some(name) => Err(NetError::field(format!("{path}.{name}"), "required")),
        None => Err(NetError::field(path, e)),
    }
}

impl Serialize for MediumModel {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(Some(2))?;
        m.serialize_entry("kind", &self.kind())?;
        m.serialize_entry("spec", &self.spec_value())?;
        m.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng;

    struct P;
    impl NetPacket for P {
        fn wire_bytes(&self) -> u32 {
            1500
        }
    }

    #[test]
    fn each_kind_builds_from_its_spec_object() {
        let shared = MediumModel::from_value(
            MediumKind::Shared,
            serde_json::json!({"rate_bps": 12_000_000}),
            "m.spec",
        )
        .unwrap();
        let dcf =
            MediumModel::from_value(MediumKind::Dcf, serde_json::json!({}), "m.spec").unwrap();
        let mesh = MediumModel::from_value(
            MediumKind::Mesh,
            serde_json::json!({"spacing_m": 2.0}),
            "m.spec",
        )
        .unwrap();
        for (m, kind) in [
            (&shared, MediumKind::Shared),
            (&dcf, MediumKind::Dcf),
            (&mesh, MediumKind::Mesh),
        ] {
            assert_eq!(m.kind(), kind);
            m.validate("m.spec", 3).unwrap();
            let b: Box<dyn Medium<P>> = m.build(3, rng::stream(1, "m"));
            assert_eq!((b.ports(), b.lanes()), (3, 3));
            let back = MediumModel::from_value(kind, m.spec_value(), "m.spec").unwrap();
            assert_eq!(&back, m);
        }
        assert_eq!(
            serde_json::to_value(&dcf).unwrap()["kind"],
            serde_json::json!("dcf")
        );
        // 1500 bytes at 12 Mbit/s: 1 ms.
        assert_eq!(shared.idle_crossing_ns(1500), 1_000_000);
        // 802.11g: DIFS 28 us + a 1536-byte PSDU at 54 Mbit/s (20 us + 57 symbols of 4 us +
        // 6 us signal extension = 254 us).
        assert_eq!(dcf.idle_crossing_ns(1500), 28_000 + 254_000);
        // Mesh, 2.4 GHz: DIFS 28 us + MCS 11 HT40, 1550 B PSDU 156 us + 6 us extension.
        assert_eq!(mesh.idle_crossing_ns(1500), 28_000 + 162_000);
        assert_eq!(
            serde_json::to_value(&mesh).unwrap()["kind"],
            serde_json::json!("mesh")
        );
    }

    #[test]
    fn a_bad_spec_names_its_field() {
        let e = MediumModel::from_value(
            MediumKind::Dcf,
            serde_json::json!({"slot": 9}),
            "media[0].spec",
        )
        .unwrap_err();
        let s = e.to_string();
        assert!(s.contains("media[0].spec.slot"), "{s}");
        let e = MediumModel::from_value(
            MediumKind::Shared,
            serde_json::json!({"rate_bps": 5, "delay_ms": "x"}),
            "media[0].spec",
        )
        .unwrap_err();
        assert!(e.to_string().contains("media[0].spec.delay_ms"), "{e}");
        let e = MediumModel::from_value(
            MediumKind::Dcf,
            serde_json::json!({"retry_limit": 0}),
            "media[0].spec",
        )
        .unwrap()
        .validate("media[0].spec", 2)
        .unwrap_err();
        assert!(e.to_string().contains("media[0].spec.retry_limit"), "{e}");
        for (spec, field) in [
            (serde_json::json!({"mcs": 16}), "media[0].spec.mcs"),
            (
                serde_json::json!({"spacing_m": -1.0}),
                "media[0].spec.spacing_m",
            ),
            (
                serde_json::json!({"positions_m": [0.0, 1.0]}),
                "media[0].spec.positions_m",
            ),
        ] {
            let e = MediumModel::from_value(MediumKind::Mesh, spec, "media[0].spec")
                .unwrap()
                .validate("media[0].spec", 3)
                .unwrap_err();
            assert!(e.to_string().contains(field), "{e}");
        }
        let e = MediumModel::from_value(
            MediumKind::Mesh,
            serde_json::json!({"environment": "forest"}),
            "media[0].spec",
        )
        .unwrap_err();
        let s = e.to_string();
        assert!(
            s.contains("media[0].spec.environment") && s.contains("campus"),
            "{s}"
        );
    }
}
