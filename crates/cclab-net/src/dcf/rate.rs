//! Per-station rate adaptation: which PHY rate a station's next data frame goes at.
//!
//! # ARF and AARF
//! Auto Rate Fallback (Kamerman and Monteban, "WaveLAN-II: A High-Performance Wireless LAN for
//! the Unlicensed Band", Bell Labs Technical Journal 2(3), 1997) and its adaptive variant AARF
//! (Lacage, Manshaei and Turletti, "IEEE 802.11 Rate Adaptation: A Practical Approach", MSWiM
//! 2004) walk a ladder of rates (slowest first) on the outcome of each data frame
//! transmission, first tries and retries alike. A sender keeps one [`Arf`] per destination, as
//! ns-3 keeps one per remote station (a WLAN station has one, toward its access point; the
//! access point one per station). The rules are those of ns-3's
//! `src/wifi/model/rate-control/arf-wifi-manager.cc` and `aarf-wifi-manager.cc`
//! (nsnam/ns-3-dev-git @1f438ce, `DoReportDataFailed` and `DoReportDataOk`), read, not copied:
//!
//! - **Counters.** Every report adds one to `timer` (a count of transmissions, not a time).
//!   A success adds one to `success`, zeroes `failed` and ends recovery; a failure adds one to
//!   `failed` and zeroes `success`.
//! - **Step up.** After a success, when `success` reaches the success threshold (default 10,
//!   ns-3 `SuccessThreshold`) or `timer` reaches the timer threshold (default 15 transmissions,
//!   ns-3 `TimerThreshold`), and the station is below the top rate: one rate up, `success` and
//!   `timer` zeroed, and the station is in **recovery**: its next frame is the probe.
//! - **Probe failure.** In recovery, the first failure steps back down at once; every failure
//!   in recovery zeroes `timer`. Recovery lasts until the next success, so further failures in
//!   it do not step down again (ns-3: "recovery mode transcends retransmissions boundaries").
//! - **Step down.** Outside recovery, every `failure_threshold` consecutive failures (default 2,
//!   fixed at 2 in ns-3: `(m_failed - 1) % 2 == 1`) step one rate down; from the
//!   `failure_threshold`-th failure on, each failure zeroes `timer`.
//! - **AARF** keeps a success threshold and a timer threshold per station, starting at their
//!   minimums (ns-3 `MinSuccessThreshold` 10, `MinTimerThreshold` 15). A probe failure doubles
//!   both (`SuccessK`, `TimerK` 2): the success threshold up to `max_success_threshold` (ns-3
//!   `MaxSuccessThreshold` 60; the paper says 50), the timer threshold without bound (ns-3 bounds
//!   it from below only, `Max(timer x TimerK, MinSuccessThreshold)`). A step down outside
//!   recovery resets both to their minimums.
//! - Thresholds are compared for equality, as ns-3 does (`m_success == threshold`): a `timer`
//!   that reaches its threshold on a failure runs past it and no longer triggers a step up until
//!   it is zeroed; `success` cannot run past its threshold below the top rate.
//!
//! # We diverge from ns-3
//! - A station starts at the top of its ladder (the cell's `data_rate_bps`), not at the lowest
//!   rate (ns-3's `m_rate = 0`): the stations of a cell in good conditions, as a constant-rate
//!   cell runs them.
//! - The ladder is the standard's own rate set up to `data_rate_bps`: ERP-OFDM only on 802.11g
//!   (ns-3's 802.11g PHY, `WifiPhy::Configure80211g`, also offers the DSSS and HR-DSSS rates), and
//!   HT MCS 0-7 on 802.11n (ns-3's ARF and AARF refuse HT stations).
//! - `failure_threshold` is a setting (ns-3 fixes it at 2).
//!
//! As in ns-3, an RTS that fails (its CTS does not come, i.e. a collision with RTS/CTS on) is not
//! reported (`DoReportRtsFailed` is empty), nor are group-addressed frames; the outcome of every
//! data frame is, so a collision without RTS/CTS counts as a failure exactly as a frame error
//! does. That is ARF's known flaw: collisions, which grow with the number of contenders, drive
//! rates down though the channel is good.

use serde::{Deserialize, Serialize};

/// Which rate adaptation a cell's stations run (scenario names `"none"`, `"arf"`, `"aarf"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RateAdaptation {
    /// Every data frame at `data_rate_bps`.
    #[default]
    None,
    /// Auto Rate Fallback (Kamerman and Monteban 1997, as ns-3's ArfWifiManager).
    Arf,
    /// Adaptive ARF (Lacage et al. 2004, as ns-3's AarfWifiManager).
    Aarf,
}

impl RateAdaptation {
    /// The name in scenario files.
    pub fn name(self) -> &'static str {
        match self {
            RateAdaptation::None => "none",
            RateAdaptation::Arf => "arf",
            RateAdaptation::Aarf => "aarf",
        }
    }

    /// Whether every frame goes at the one data rate.
    pub fn is_none(&self) -> bool {
        *self == RateAdaptation::None
    }
}

/// Consecutive failed transmissions that step a rate down (ARF's 2; fixed in ns-3).
pub const DEFAULT_FAILURE_THRESHOLD: u32 = 2;
/// Consecutive successes that step a rate up (ns-3 ARF `SuccessThreshold`, AARF
/// `MinSuccessThreshold`: 10).
pub const DEFAULT_SUCCESS_THRESHOLD: u32 = 10;
/// Transmissions since the last rate change (or failure run) that step a rate up (ns-3 ARF
/// `TimerThreshold`, AARF `MinTimerThreshold`: 15).
pub const DEFAULT_TIMER_THRESHOLD: u32 = 15;
/// AARF's bound on its success threshold (ns-3 `MaxSuccessThreshold` 60; the paper's 50).
pub const DEFAULT_MAX_SUCCESS_THRESHOLD: u32 = 60;
/// AARF's factor on both thresholds after a failed probe (ns-3 `SuccessK`, `TimerK`: 2).
pub const AARF_K: u32 = 2;

/// ARF's and AARF's settings, resolved (every threshold >= 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ArfParams {
    /// AARF (adaptive thresholds) rather than ARF.
    pub adaptive: bool,
    /// Consecutive failures that step down, outside recovery.
    pub failure_threshold: u32,
    /// Consecutive successes that step up (AARF: the minimum of the station's threshold).
    pub success_threshold: u32,
    /// Transmissions that step up (AARF: the minimum of the station's threshold).
    pub timer_threshold: u32,
    /// AARF: the largest success threshold.
    pub max_success_threshold: u32,
}

impl Default for ArfParams {
    /// ARF with ns-3's defaults.
    fn default() -> Self {
        ArfParams {
            adaptive: false,
            failure_threshold: DEFAULT_FAILURE_THRESHOLD,
            success_threshold: DEFAULT_SUCCESS_THRESHOLD,
            timer_threshold: DEFAULT_TIMER_THRESHOLD,
            max_success_threshold: DEFAULT_MAX_SUCCESS_THRESHOLD,
        }
    }
}

/// A change of rate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// One rate up (success or timer threshold reached).
    Up,
    /// One rate down (failure threshold, or a failed probe).
    Down,
}

/// One station's ARF / AARF state (ns-3 `ArfWifiRemoteStation`, `AarfWifiRemoteStation`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Arf {
    /// Current rate, an index in the ladder (0: the slowest; `<= top`).
    rate: usize,
    /// The fastest rate's index.
    top: usize,
    /// Consecutive successes.
    success: u32,
    /// Consecutive failures.
    failed: u32,
    /// Transmissions since it was last zeroed.
    timer: u32,
    /// The last step was up and no frame has succeeded since: the next failure steps back.
    recovery: bool,
    /// Successes that step up (ARF: fixed; AARF: adapted).
    success_threshold: u32,
    /// Transmissions that step up (ARF: fixed; AARF: adapted).
    timer_threshold: u32,
}

impl Arf {
    /// A station on a ladder of `rates` rates (at least 1), starting at the fastest.
    pub fn new(p: &ArfParams, rates: usize) -> Self {
        let top = rates.max(1) - 1;
        Arf {
            rate: top,
            top,
            success: 0,
            failed: 0,
            timer: 0,
            recovery: false,
            success_threshold: p.success_threshold.max(1),
            timer_threshold: p.timer_threshold.max(1),
        }
    }

    /// The current rate's index in the ladder (0: the slowest).
    pub fn rate(&self) -> usize {
        self.rate
    }

    /// Whether the next transmission is a probe (recovery).
    pub fn in_recovery(&self) -> bool {
        self.recovery
    }

    /// The success threshold in force (AARF adapts it).
    pub fn success_threshold(&self) -> u32 {
        self.success_threshold
    }

    /// The timer threshold in force (AARF adapts it).
    pub fn timer_threshold(&self) -> u32 {
        self.timer_threshold
    }

    /// A data frame was acknowledged (ns-3 `DoReportDataOk`).
    pub fn on_success(&mut self, _p: &ArfParams) -> Option<Step> {
        self.timer = self.timer.saturating_add(1);
        self.success = self.success.saturating_add(1);
        self.failed = 0;
        self.recovery = false;
        let due = self.success == self.success_threshold || self.timer == self.timer_threshold;
        if due && self.rate < self.top {
            self.rate += 1;
            self.timer = 0;
            self.success = 0;
            self.recovery = true;
            return Some(Step::Up);
        }
        None
    }

    /// A data frame was not acknowledged: a collision or a frame error (ns-3
    /// `DoReportDataFailed`).
    pub fn on_failure(&mut self, p: &ArfParams) -> Option<Step> {
        self.timer = self.timer.saturating_add(1);
        self.failed = self.failed.saturating_add(1);
        self.success = 0;
        let threshold = p.failure_threshold.max(1);
        let mut step = None;
        if self.recovery {
            if self.failed == 1 {
                // The probe failed: back at once; AARF asks for longer runs before the next.
                if p.adaptive {
                    self.success_threshold = self
                        .success_threshold
                        .saturating_mul(AARF_K)
                        .min(p.max_success_threshold.max(1));
                    self.timer_threshold = self
                        .timer_threshold
                        .saturating_mul(AARF_K)
                        .max(p.success_threshold.max(1));
                }
                step = self.down();
            }
            self.timer = 0;
        } else {
            if self.failed.is_multiple_of(threshold) {
                if p.adaptive {
                    self.success_threshold = p.success_threshold.max(1);
                    self.timer_threshold = p.timer_threshold.max(1);
                }
                step = self.down();
            }
            if self.failed >= threshold {
                self.timer = 0;
            }
        }
        step
    }

    fn down(&mut self) -> Option<Step> {
        (self.rate > 0).then(|| {
            self.rate -= 1;
            Step::Down
        })
    }
}
