//! Unit tests of BBR v1 against the kernel's constants and closed forms.

use super::*;

fn sock() -> TcpSock {
    let mut tp = TcpSock::new(1448, 10, u32::MAX, crate::tcp::clock::KernelClock::new(250));
    tp.tcp_mstamp_us = 1;
    tp
}

#[test]
fn gains_are_the_kernels_constants() {
    let d = BbrParams::default();
    assert_eq!(d.high_gain, 739); // 2.885 * 256 + 1
    assert_eq!(d.drain_gain, 88); // 256 / 2.885
    assert_eq!(PACING_GAIN.iter().sum::<u32>(), 8 * BBR_UNIT);
}

#[test]
fn pacing_rate_is_gain_times_bw_less_one_percent() {
    let tp = sock();
    // 1000 packets per second = 1e-3 packets/us.
    let bw = (BW_UNIT / 1000) as u32;
    let rate = Bbr::bw_to_pacing_rate(&tp, bw, BBR_UNIT);
    let want = 1000.0 * 1448.0 * 0.99;
    assert!((rate as f64 - want).abs() / want < 1e-3, "{rate} vs {want}");
    let rate2 = Bbr::bw_to_pacing_rate(&tp, bw, 2 * BBR_UNIT);
    assert!((rate2 as f64 / rate as f64 - 2.0).abs() < 1e-3);
}

#[test]
fn bdp_rounds_up_and_uses_the_initial_window_before_any_rtt() {
    let mut b = Bbr::new(BbrParams::default());
    assert_eq!(b.bdp(1 << 20, BBR_UNIT), TCP_INIT_CWND);
    b.min_rtt_us = 100_000; // 100 ms
    let bw = (BW_UNIT / 1000) as u32; // 1000 pkt/s -> BDP 100 packets
    assert_eq!(b.bdp(bw, BBR_UNIT), 100);
    assert_eq!(b.bdp(bw, 2 * BBR_UNIT), 200);
    assert_eq!(b.bdp(bw + 1, BBR_UNIT), 101); // rounds up
}

#[test]
fn init_paces_high_gain_times_the_initial_window_per_srtt() {
    let mut tp = sock();
    tp.srtt_us = 100_000 << 3;
    tp.min_rtt_us = 100_000;
    let mut b = Bbr::new(BbrParams::default());
    b.init(&mut tp);
    assert!(tp.pacing_needed);
    // 10 packets per 100 ms, times 2.885, less 1 %.
    let want = 100.0 * 1448.0 * 739.0 / 256.0 * 0.99;
    let got = tp.pacing_rate_bytes_per_s as f64;
    assert!((got - want).abs() / want < 1e-2, "{got} vs {want}");
    assert_eq!(b.min_rtt_us, 100_000);
}

#[test]
fn probe_bw_starts_at_a_phase_other_than_drain() {
    let mut tp = sock();
    for _ in 0..200 {
        let mut b = Bbr::new(BbrParams::default());
        b.reset_probe_bw_mode(&mut tp);
        assert_ne!(b.cycle_idx, 1, "never starts in the 3/4 phase");
        assert_eq!(b.mode, Mode::ProbeBw);
    }
}

#[test]
fn policer_detected_after_two_consistent_lossy_intervals() {
    let tp = sock();
    let mut b = Bbr::new(BbrParams::default());
    b.lt_bw_interval_done(&tp, 1000);
    assert!(!b.lt_use_bw);
    b.lt_bw_interval_done(&tp, 1100); // within 1/8
    assert!(b.lt_use_bw);
    assert_eq!(b.lt_bw, 1050);
    let mut b = Bbr::new(BbrParams::default());
    b.lt_bw_interval_done(&tp, 1 << 20);
    b.lt_bw_interval_done(&tp, 2 << 20); // far apart
    assert!(!b.lt_use_bw);
}

#[test]
fn bad_tunable_is_refused_with_its_name() {
    let mut p = Params::new();
    p.insert("cwnd_gain".into(), ParamValue::Int(5000));
    let err = build("bbr", &p).err().expect("refused").to_string();
    assert!(err.contains("cwnd_gain"), "{err}");
}
