//! `cclab._core`: thin PyO3 bindings of the simulator. Type conversion and error mapping only:
//! every error becomes `ConfigError` (a ValueError) or `SimError` (a RuntimeError); no Rust
//! panic crosses into Python (the core catches them).

use cclab_sim::{cc, Scenario, SimError as CoreError};
use numpy::IntoPyArray;
use pyo3::create_exception;
use pyo3::prelude::*;
use pyo3::types::PyDict;

create_exception!(
    _core,
    ConfigError,
    pyo3::exceptions::PyValueError,
    "A scenario field is invalid: `.field` is its dotted path, `.message` what is accepted."
);
create_exception!(
    _core,
    SimError,
    pyo3::exceptions::PyRuntimeError,
    "The simulation failed."
);

/// A `ConfigError` exception carrying the field's dotted path (`.field`) and what is wrong
/// (`.message`) as attributes, so Python never parses the text back.
fn config_error(e: cclab_sim::ConfigError) -> PyErr {
    let err = ConfigError::new_err(e.to_string());
    Python::attach(|py| {
        let v = err.value(py);
        // Setting attributes on a fresh exception instance cannot fail in practice; if it did,
        // the message still names the field.
        let _ = v.setattr("field", e.field.as_str());
        let _ = v.setattr("message", e.message.as_str());
    });
    err
}

fn parse(config_json: &str) -> PyResult<Scenario> {
    Scenario::from_json(config_json).map_err(config_error)
}

/// Run a normalised scenario (JSON); returns a dict of numpy columns and statistics.
/// `progress(fraction)` is called now and then; if it raises, the run stops and the
/// exception propagates (so Ctrl-C works).
#[pyfunction]
#[pyo3(signature = (config_json, progress=None))]
fn simulate<'py>(
    py: Python<'py>,
    config_json: &str,
    progress: Option<Py<PyAny>>,
) -> PyResult<Bound<'py, PyDict>> {
    let sc = parse(config_json)?;
    let mut cb_err: Option<PyErr> = None;
    let result = py.detach(|| {
        let mut cb = |frac: f64| -> bool {
            Python::attach(|py| {
                let r = py.check_signals().and_then(|_| match &progress {
                    Some(p) => p.call1(py, (frac,)).map(|_| ()),
                    None => Ok(()),
                });
                match r {
                    Ok(()) => true,
                    Err(e) => {
                        cb_err = Some(e);
                        false
                    }
                }
            })
        };
        cclab_sim::run(&sc, Some(&mut cb))
    });
    if let Some(e) = cb_err {
        return Err(e);
    }
    let out = result.map_err(|e| match e {
        CoreError::Config(c) => config_error(c),
        // A budget is a scenario field: the run reached it (sim.max_events, sim.max_wall_s).
        CoreError::Budget(b) => config_error(cclab_sim::ConfigError::new(b.field(), b.message())),
        other => SimError::new_err(other.to_string()),
    })?;

    let d = PyDict::new(py);
    d.set_item("flow_names", out.flow_names)?;
    d.set_item("link_names", out.link_names)?;
    let f = PyDict::new(py);
    let t = out.flows;
    f.set_item("flow", t.flow.into_pyarray(py))?;
    f.set_item("subflow", t.subflow.into_pyarray(py))?;
    f.set_item("t_s", t.t_s.into_pyarray(py))?;
    f.set_item("cwnd_pkts", t.cwnd_pkts.into_pyarray(py))?;
    f.set_item("ssthresh_pkts", t.ssthresh_pkts.into_pyarray(py))?;
    f.set_item("inflight_pkts", t.inflight_pkts.into_pyarray(py))?;
    f.set_item("srtt_ms", t.srtt_ms.into_pyarray(py))?;
    f.set_item("rttvar_ms", t.rttvar_ms.into_pyarray(py))?;
    f.set_item("min_rtt_ms", t.min_rtt_ms.into_pyarray(py))?;
    f.set_item("rto_ms", t.rto_ms.into_pyarray(py))?;
    f.set_item("delivered_bytes", t.delivered_bytes.into_pyarray(py))?;
    f.set_item("retrans_pkts", t.retrans_pkts.into_pyarray(py))?;
    f.set_item("ca_state", t.ca_state.into_pyarray(py))?;
    f.set_item("pacing_rate_bps", t.pacing_rate_bps.into_pyarray(py))?;
    f.set_item("below_tcp_bytes", t.below_tcp_bytes.into_pyarray(py))?;
    f.set_item("sndbuf_bytes", t.sndbuf_bytes.into_pyarray(py))?;
    f.set_item("wmem_queued_bytes", t.wmem_queued_bytes.into_pyarray(py))?;
    d.set_item("flows", f)?;
    let l = PyDict::new(py);
    let lt = out.links;
    l.set_item("link", lt.link.into_pyarray(py))?;
    l.set_item("t_s", lt.t_s.into_pyarray(py))?;
    l.set_item("queue_pkts", lt.queue_pkts.into_pyarray(py))?;
    l.set_item("queue_bytes", lt.queue_bytes.into_pyarray(py))?;
    l.set_item("drops", lt.drops.into_pyarray(py))?;
    l.set_item("tx_bytes", lt.tx_bytes.into_pyarray(py))?;
    l.set_item("ce_marks", lt.ce_marks.into_pyarray(py))?;
    d.set_item("links", l)?;
    let e = PyDict::new(py);
    let ev = out.events;
    e.set_item("t_s", ev.t_s.into_pyarray(py))?;
    e.set_item("flow", ev.flow.into_pyarray(py))?;
    e.set_item("kind", ev.kind)?;
    e.set_item("detail", ev.detail)?;
    d.set_item("events", e)?;
    let json = py.import("json")?;
    let fs =
        serde_json::to_string(&out.flow_stats).map_err(|e| SimError::new_err(e.to_string()))?;
    d.set_item("flow_stats", json.call_method1("loads", (fs,))?)?;
    let ls =
        serde_json::to_string(&out.link_stats).map_err(|e| SimError::new_err(e.to_string()))?;
    d.set_item("link_stats", json.call_method1("loads", (ls,))?)?;
    let ps = serde_json::to_string(&out.paths).map_err(|e| SimError::new_err(e.to_string()))?;
    d.set_item("paths", json.call_method1("loads", (ps,))?)?;
    d.set_item("events_processed", out.events_processed)?;
    d.set_item("sim_duration_s", out.sim_duration_s)?;
    Ok(d)
}

/// Check a normalised scenario without running it; raises ConfigError naming the field.
#[pyfunction]
fn validate(config_json: &str) -> PyResult<()> {
    parse(config_json).map(|_| ())
}

/// Every problem of a normalised scenario (JSON), as a list of (field, message): empty when it
/// is valid. Unlike `validate`, it does not stop at the first (`Scenario::problems`); JSON that
/// does not parse gives the one problem where it stopped.
#[pyfunction]
fn problems(config_json: &str) -> Vec<(String, String)> {
    let all = match Scenario::from_json_unchecked(config_json) {
        Ok(sc) => sc.problems(),
        Err(e) => vec![e],
    };
    all.into_iter().map(|e| (e.field, e.message)).collect()
}

/// The network a normalised scenario builds (JSON): nodes, links, the simulated link
/// directions and each flow's route (`cclab_sim::lower::Lowered`), as both backends build it.
#[pyfunction]
fn lower(config_json: &str) -> PyResult<String> {
    let sc = parse(config_json)?;
    let net = cclab_sim::lower::lower(&sc).map_err(config_error)?;
    serde_json::to_string(&net).map_err(|e| SimError::new_err(e.to_string()))
}

/// The S1 middleware's range for one connection (`cclab_sim::middleware::bounds`, eq. 2-5 and
/// step 6): `spec_json` is the scenario's normalised `middleware` table, `n` the terminals
/// counted (itself included), `rtt_ms` the smoothed RTT, `min_rtt_ms` the minimum RTT. Returns a
/// dict (lower_pkts, upper_pkts, n, ratio_rtt_ms, ideal_cwnd_pkts, upper1_pkts, lower1_pkts,
/// upper2_pkts, lower2_pkts, row; candidate 1 is 4294967295 when the rule uses none), or None
/// while the middleware is inactive (off, fewer than `min_terminals`, no RTT yet). Raises
/// ConfigError naming the field of a bad spec.
#[pyfunction]
fn middleware_bounds<'py>(
    py: Python<'py>,
    spec_json: &str,
    n: u32,
    rtt_ms: f64,
    min_rtt_ms: f64,
) -> PyResult<Option<Bound<'py, PyDict>>> {
    let spec: cclab_sim::middleware::MiddlewareSpec = serde_json::from_str(spec_json)
        .map_err(|e| config_error(cclab_sim::ConfigError::new("middleware", e.to_string())))?;
    spec.validate("middleware").map_err(config_error)?;
    let Some(b) = cclab_sim::middleware::bounds(&spec, n, rtt_ms, min_rtt_ms) else {
        return Ok(None);
    };
    let d = PyDict::new(py);
    d.set_item("lower_pkts", b.lower_pkts)?;
    d.set_item("upper_pkts", b.upper_pkts)?;
    d.set_item("n", b.n)?;
    d.set_item("ratio_rtt_ms", b.ratio_rtt_ms)?;
    d.set_item("ideal_cwnd_pkts", b.ideal_cwnd_pkts)?;
    d.set_item("upper1_pkts", b.upper1_pkts)?;
    d.set_item("lower1_pkts", b.lower1_pkts)?;
    d.set_item("upper2_pkts", b.upper2_pkts)?;
    d.set_item("lower2_pkts", b.lower2_pkts)?;
    d.set_item("row", b.row)?;
    Ok(Some(d))
}

/// JSON list of the algorithms and presets: name, base, description, source, params.
#[pyfunction]
fn algorithms() -> PyResult<String> {
    serde_json::to_string(&cc::algorithms()).map_err(|e| SimError::new_err(e.to_string()))
}

/// Version of the compiled core.
#[pyfunction]
fn version() -> &'static str {
    cclab_sim::VERSION
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(simulate, m)?)?;
    m.add_function(wrap_pyfunction!(validate, m)?)?;
    m.add_function(wrap_pyfunction!(problems, m)?)?;
    m.add_function(wrap_pyfunction!(lower, m)?)?;
    m.add_function(wrap_pyfunction!(algorithms, m)?)?;
    m.add_function(wrap_pyfunction!(middleware_bounds, m)?)?;
    m.add_function(wrap_pyfunction!(version, m)?)?;
    m.add("ConfigError", m.py().get_type::<ConfigError>())?;
    m.add("SimError", m.py().get_type::<SimError>())?;
    Ok(())
}
