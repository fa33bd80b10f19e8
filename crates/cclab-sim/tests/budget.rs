//! A run's budget (`sim.max_events`, `sim.max_wall_s`; issue 18): reaching it is a named error,
//! and a run within it is bit-identical to one without.

mod common;
use cclab_sim::{run, BudgetExceeded, SimError};
use common::*;

fn path() -> Dumbbell {
    Dumbbell::new(20_000_000, 40.0)
        .queue_pkts(100)
        .loss(1e-3)
        .duration_s(5.0)
        .flow(Flow::new("cubic"))
}

#[test]
fn the_event_budget_is_a_named_error_and_within_it_nothing_moves() {
    let full = path().run();
    let n = full.events_processed;
    let mut sc = path().build();
    sc.sim.max_events = n;
    sc.sim.max_wall_s = Some(3600.0);
    let exact = run(&sc, None).expect("exactly enough events");
    assert_eq!(exact.flows.cwnd_pkts, full.flows.cwnd_pkts);
    assert_eq!(exact.events.detail, full.events.detail);

    sc.sim.max_events = n / 3;
    let e = run(&sc, None).expect_err("a third of the events");
    let SimError::Budget(b @ BudgetExceeded::Events { t_ns, .. }) = &e else {
        panic!("not a budget error: {e}")
    };
    assert!(*t_ns > 0 && *t_ns < 5_000_000_000);
    assert_eq!(b.field(), "sim.max_events");
    let text = e.to_string();
    assert!(text.starts_with(&format!("sim.max_events: {} events reached at t = ", n / 3)));
    assert!(text.ends_with(" s of 5 s; raise sim.max_events or shorten duration_s"));
}

#[test]
fn the_wall_budget_is_a_named_error() {
    let mut sc = path().duration_s(100_000.0).build();
    sc.sim.max_wall_s = Some(0.02);
    let t0 = std::time::Instant::now();
    let e = run(&sc, None).expect_err("100000 s take longer than 20 ms");
    assert!(t0.elapsed().as_secs_f64() < 5.0);
    assert!(matches!(
        e,
        SimError::Budget(BudgetExceeded::WallTime { .. })
    ));
    assert!(e
        .to_string()
        .starts_with("sim.max_wall_s: 0.02 s of wall-clock time reached"));
}

#[test]
fn bad_budgets_are_refused_naming_the_field() {
    let mut sc = path().build();
    sc.sim.max_events = 0;
    sc.sim.max_wall_s = Some(f64::NAN);
    let fields: Vec<_> = sc.problems().into_iter().map(|e| e.field).collect();
    assert_eq!(fields, ["sim.max_events", "sim.max_wall_s"]);
}
