//! Rate adaptation: ARF's and AARF's state machines step by step, then in the cell (the
//! airtime of a frame and its Ack at a lower rate, RTS failures not reported, the mean rate of
//! saturated stations against N).

use super::rate::{Arf, ArfParams, RateAdaptation, Step};
use super::*;
use crate::rng;
use crate::NS_PER_US;

const US: u64 = NS_PER_US;

fn arf() -> ArfParams {
    ArfParams::default()
}

fn aarf() -> ArfParams {
    ArfParams {
        adaptive: true,
        ..ArfParams::default()
    }
}

/// Feed `outcomes` (true: success) and collect the steps.
fn run(a: &mut Arf, p: &ArfParams, outcomes: &[bool]) -> Vec<Option<Step>> {
    outcomes
        .iter()
        .map(|&ok| if ok { a.on_success(p) } else { a.on_failure(p) })
        .collect()
}

const F: bool = false;
const S: bool = true;

#[test]
fn arf_steps_down_after_two_failures_and_up_after_ten_successes() {
    let p = arf();
    let mut a = Arf::new(&p, 8);
    assert_eq!(a.rate(), 7, "starts at the top");
    // One failure alone changes nothing; a success in between restarts the count.
    assert_eq!(run(&mut a, &p, &[F, S, F]), [None, None, None]);
    assert_eq!(a.rate(), 7);
    // The second consecutive failure steps down; the fourth again (2, 4, 6, ... as ns-3).
    assert_eq!(
        run(&mut a, &p, &[F, F, F]),
        [Some(Step::Down), None, Some(Step::Down)]
    );
    assert_eq!(a.rate(), 5);
    // Ten consecutive successes step up and make the next frame a probe.
    let steps = run(&mut a, &p, &[S; 10]);
    assert_eq!(steps[..9], [None; 9]);
    assert_eq!(steps[9], Some(Step::Up));
    assert_eq!((a.rate(), a.in_recovery()), (6, true));
    // The probe fails: straight back down.
    assert_eq!(a.on_failure(&p), Some(Step::Down));
    assert_eq!(a.rate(), 5);
    // Still in recovery until a success: further failures do not step down again.
    assert_eq!(run(&mut a, &p, &[F, F, F]), [None; 3]);
    assert_eq!((a.rate(), a.in_recovery()), (5, true));
    // A successful probe ends recovery; the rate stays.
    assert_eq!(a.on_success(&p), None);
    assert!(!a.in_recovery());
    // Never below the slowest rate, never above the top.
    let mut low = Arf::new(&p, 2);
    assert_eq!(run(&mut low, &p, &[F; 6])[1], Some(Step::Down));
    assert_eq!(low.rate(), 0);
    assert_eq!(run(&mut low, &p, &[S; 10])[9], Some(Step::Up));
    assert_eq!(run(&mut low, &p, &[S; 30]), [None; 30], "at the top");
    assert_eq!(low.rate(), 1);
}

#[test]
fn arf_timer_steps_up_after_fifteen_transmissions_with_failures_among_them() {
    // Pattern S F repeated: never 10 successes in a row, never 2 failures in a row; the 15th
    // transmission since the last zeroing is a success: up (ns-3 TimerThreshold 15).
    let p = arf();
    let mut a = Arf::new(&p, 8);
    run(&mut a, &p, &[F, F]);
    assert_eq!(a.rate(), 6, "down, timer zeroed");
    let pattern: Vec<bool> = (0..15).map(|i| i % 2 == 0).collect();
    let steps = run(&mut a, &p, &pattern);
    assert_eq!(steps[..14], [None; 14]);
    assert_eq!(steps[14], Some(Step::Up));
    assert_eq!(a.rate(), 7);
    // The timer compares for equality, as ns-3: reached on a failure, it runs past and does
    // not step up on the next success.
    let mut b = Arf::new(&p, 8);
    run(&mut b, &p, &[F, F, S, S]);
    let pattern: Vec<bool> = (0..12).map(|i| i % 2 == 1).collect(); // F S F S ... S
    assert_eq!(run(&mut b, &p, &pattern), [None; 12]);
    assert_eq!(b.on_failure(&p), None, "the 15th, a failure");
    assert_eq!(b.on_success(&p), None, "the 16th: past the threshold");
    assert_eq!(b.rate(), 6);
}

#[test]
fn arf_failure_threshold_is_a_setting() {
    let p = ArfParams {
        failure_threshold: 3,
        ..arf()
    };
    let mut a = Arf::new(&p, 8);
    assert_eq!(
        run(&mut a, &p, &[F; 6]),
        [None, None, Some(Step::Down), None, None, Some(Step::Down)]
    );
    let one = ArfParams {
        failure_threshold: 1,
        ..arf()
    };
    let mut b = Arf::new(&one, 8);
    assert_eq!(run(&mut b, &one, &[F; 3]), [Some(Step::Down); 3]);
}

#[test]
fn aarf_doubles_its_thresholds_after_a_failed_probe_and_resets_them_on_a_fallback() {
    let p = aarf();
    let mut a = Arf::new(&p, 8);
    run(&mut a, &p, &[F, F]);
    assert_eq!(
        (a.rate(), a.success_threshold(), a.timer_threshold()),
        (6, 10, 15)
    );
    // Probe after 10 successes, fails: thresholds x 2 (ns-3 SuccessK, TimerK).
    assert_eq!(run(&mut a, &p, &[S; 10])[9], Some(Step::Up));
    assert_eq!(a.on_failure(&p), Some(Step::Down));
    assert_eq!((a.success_threshold(), a.timer_threshold()), (20, 30));
    // Now 20 successes are needed (the timer, 30, is longer).
    assert_eq!(run(&mut a, &p, &[S; 19]), [None; 19]);
    assert_eq!(a.on_success(&p), Some(Step::Up));
    assert_eq!(a.on_failure(&p), Some(Step::Down));
    assert_eq!((a.success_threshold(), a.timer_threshold()), (40, 60));
    assert_eq!(run(&mut a, &p, &[S; 40])[39], Some(Step::Up));
    assert_eq!(a.on_failure(&p), Some(Step::Down));
    assert_eq!(
        (a.success_threshold(), a.timer_threshold()),
        (60, 120),
        "success threshold bounded by MaxSuccessThreshold 60; the timer's is not"
    );
    // Two failures outside recovery: down, and both thresholds back to their minimums.
    a.on_success(&p);
    assert_eq!(run(&mut a, &p, &[F, F]), [None, Some(Step::Down)]);
    assert_eq!(
        (a.rate(), a.success_threshold(), a.timer_threshold()),
        (5, 10, 15)
    );
    // ARF keeps its thresholds fixed.
    let q = arf();
    let mut b = Arf::new(&q, 8);
    run(&mut b, &q, &[F, F]);
    run(&mut b, &q, &[S; 10]);
    b.on_failure(&q);
    assert_eq!((b.success_threshold(), b.timer_threshold()), (10, 15));
}

/// (id, bytes).
#[derive(Debug, PartialEq)]
struct P(u32, u32);
impl NetPacket for P {
    fn wire_bytes(&self) -> u32 {
        self.1
    }
}

/// Run to the end; the start and end of every exchange, from `busy_until_ns`.
fn exchanges(c: &mut DcfCell<P>) -> Vec<(u64, u64)> {
    let mut out = vec![];
    while let Some(t) = c.next_event_ns() {
        while c.pop_delivered(t).is_some() {}
        while c.pop_dropped().is_some() {}
        if let Some(end) = c.busy_until_ns(t) {
            if out.last().is_none_or(|&(_, e)| e != end) {
                out.push((t, end));
            }
        }
    }
    out
}

#[test]
fn collisions_step_both_senders_down_and_a_frame_then_goes_at_the_lower_rate() {
    // cw_min = cw_max = 0: ports 1 and 2, both backlogged, collide on every attempt. Ten
    // attempts (retry limit 10) take both from 54 down to 12 Mbit/s (a step every second
    // failure: 54 54 48 48 36 36 24 24 18 18); each collision lasts its data frame + 39 µs.
    let spec = DcfSpec {
        cw_min: Some(0),
        cw_max: Some(0),
        retry_limit: 10,
        rate_adaptation: RateAdaptation::Arf,
        ..DcfSpec::default()
    };
    let mut c: DcfCell<P> = DcfCell::new(spec, 3, rng::stream(1, "arf"));
    assert_eq!(c.rates_bps(), phy::ERP_OFDM_RATES_BPS);
    c.enqueue(0, 1, 0, P(1, 1500)).unwrap();
    c.enqueue(0, 2, 0, P(2, 1500)).unwrap();
    let p = c.params().clone();
    let mut want = vec![];
    let mut t = 28 * US;
    for mbps in [54, 54, 48, 48, 36, 36, 24, 24, 18, 18] {
        let end = t + p.data_ns_at(1500, mbps * 1_000_000) + 39 * US;
        want.push((t, end));
        t = end + 28 * US;
    }
    // 1500 B (PSDU 1536 B) at 48 Mbit/s: ceil(12310 / 192) = 65 symbols: 20 + 260 + 6 µs.
    assert_eq!(p.data_ns_at(1500, 48_000_000), 286 * US);
    let got = exchanges(&mut c);
    assert_eq!(got, want);
    for port in [1, 2] {
        assert_eq!(c.rate_bps(port, 0), Some(12_000_000));
        let m = c.station_stats(port);
        assert_eq!(
            (m.rate_decreases, m.rate_increases, m.retry_drops),
            (5, 0, 1)
        );
        assert_eq!(m.attempts_by_rate, [0, 0, 0, 2, 2, 2, 2, 2]);
    }
    // One state per destination: port 1 toward port 2, and the silent access point, are at 54.
    assert_eq!(c.rate_bps(1, 2), Some(54_000_000));
    assert_eq!(c.rate_bps(0, 1), Some(54_000_000));
    assert_eq!(c.rate_bps(1, 3), None);
    // Port 1 alone now: its frame goes at 12 Mbit/s (ceil(12310 / 48) = 257 symbols: 1054 µs)
    // and its Ack at the 12 Mbit/s basic rate (3 symbols: 38 µs, not 34 at 24 Mbit/s).
    let t0 = t + 1_000 * US;
    c.enqueue(t0, 1, 0, P(3, 1500)).unwrap();
    let start = c.next_event_ns().unwrap();
    assert_eq!(p.ack_ns_at(12_000_000), 38 * US);
    assert_eq!(c.busy_until_ns(start), Some(start + (1_054 + 10 + 38) * US));
    exchanges(&mut c);
    let m = c.station_stats(1);
    assert_eq!(m.attempts_by_rate, [0, 0, 1, 2, 2, 2, 2, 2]);
    assert_eq!(m.successes, 1);
    let mean = c.mean_rate_bps(1).unwrap();
    assert!((mean - (2.0 * (54. + 48. + 36. + 24. + 18.) + 12.) / 11.0 * 1e6).abs() < 1.0);
}

#[test]
fn a_failed_rts_is_not_reported_and_the_ack_rate_can_be_fixed() {
    // With RTS/CTS the same collisions are RTS collisions: ARF hears nothing (ns-3
    // DoReportRtsFailed is empty), the rate stays at 54.
    let spec = DcfSpec {
        cw_min: Some(0),
        cw_max: Some(0),
        retry_limit: 10,
        rts_threshold_bytes: Some(0),
        rate_adaptation: RateAdaptation::Arf,
        ..DcfSpec::default()
    };
    let mut c: DcfCell<P> = DcfCell::new(spec, 3, rng::stream(1, "rts"));
    c.enqueue(0, 1, 0, P(1, 1500)).unwrap();
    c.enqueue(0, 2, 0, P(2, 1500)).unwrap();
    exchanges(&mut c);
    assert_eq!(c.rate_bps(1, 0), Some(54_000_000));
    assert_eq!(c.station_stats(1).rate_decreases, 0);
    // A set control_rate_bps holds every Ack at that rate.
    let fixed = DcfSpec {
        control_rate_bps: Some(24_000_000),
        rate_adaptation: RateAdaptation::Arf,
        ..DcfSpec::default()
    }
    .params();
    assert_eq!(fixed.ack_ns_at(6_000_000), 34 * US);
    let free = DcfSpec::default().params();
    // Ack at 6 Mbit/s: ceil(134 / 24) = 6 symbols: 20 + 24 + 6 = 50 µs.
    assert_eq!(
        [54, 24, 18, 12, 9, 6].map(|m| free.ack_rate_bps(m * 1_000_000) / 1_000_000),
        [24, 24, 12, 12, 6, 6]
    );
    assert_eq!(free.ack_ns_at(6_000_000), 50 * US);
}

/// `n` stations (ports 1..=n) always backlogged with 1500 B packets to a silent access point
/// for `seconds` (seed 1); the mean data rate over every attempt of every station, Mbit/s.
fn saturated_mean_rate_mbps(spec: &DcfSpec, n: usize, seconds: u64) -> f64 {
    let mut c: DcfCell<P> = DcfCell::new(spec.clone(), n + 1, rng::stream(1, "sat"));
    for s in 1..=n {
        c.enqueue(0, s, 0, P(0, 1500)).unwrap();
        c.enqueue(0, s, 0, P(0, 1500)).unwrap();
    }
    let end_ns = seconds * crate::NS_PER_S;
    while let Some(t) = c.next_event_ns().filter(|&t| t <= end_ns) {
        while c.pop_delivered(t).is_some() {}
        while c.pop_dropped().is_some() {}
        // Keep every station at two frames.
        for s in 1..=n {
            while c.queue_pkts(t, s) < 2 {
                c.enqueue(t, s, 0, P(0, 1500)).unwrap();
            }
        }
    }
    let (mut bits, mut attempts) = (0.0, 0u64);
    for s in 1..=n {
        let by_rate = c.station_stats(s).attempts_by_rate;
        for (k, &r) in c.rates_bps().iter().enumerate() {
            bits += by_rate[k] as f64 * r as f64;
            attempts += by_rate[k];
        }
    }
    bits / attempts as f64 / 1e6
}

#[test]
fn with_arf_the_mean_rate_of_saturated_stations_falls_as_n_grows() {
    let none = DcfSpec::default();
    let arf = DcfSpec {
        rate_adaptation: RateAdaptation::Arf,
        ..DcfSpec::default()
    };
    let aarf = DcfSpec {
        rate_adaptation: RateAdaptation::Aarf,
        ..DcfSpec::default()
    };
    let ns = [1, 2, 3, 4, 5, 10, 20];
    let none_m: Vec<f64> = ns
        .iter()
        .map(|&n| saturated_mean_rate_mbps(&none, n, 30))
        .collect();
    let arf_m: Vec<f64> = ns
        .iter()
        .map(|&n| saturated_mean_rate_mbps(&arf, n, 30))
        .collect();
    let aarf_m: Vec<f64> = ns
        .iter()
        .map(|&n| saturated_mean_rate_mbps(&aarf, n, 30))
        .collect();
    println!("n {ns:?}\nnone {none_m:.2?}\narf {arf_m:.2?}\naarf {aarf_m:.2?}");
    assert!(none_m.iter().all(|&m| m == 54.0), "{none_m:?}");
    // One station never fails: it stays at 54.
    assert_eq!(arf_m[0], 54.0);
    assert_eq!(aarf_m[0], 54.0);
    // Down with N to N = 10 (30 s: 54, 52.9, 42.1, 19.8, 11.4, 7.3 Mbit/s with ARF), then at
    // the floor (N = 20: 7.1).
    for w in arf_m[..6].windows(2).chain(aarf_m[..6].windows(2)) {
        assert!(w[1] < w[0], "falls with N: {arf_m:?} {aarf_m:?}");
    }
    assert!(arf_m[6] < 9.0 && aarf_m[6] < 9.0, "{arf_m:?} {aarf_m:?}");
}
