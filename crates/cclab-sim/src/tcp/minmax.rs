//! Windowed running min/max filter (Kathleen Nichols' algorithm), as Linux's
//! `lib/win_minmax.c` (Linux 6.18): keeps the best, 2nd best and 3rd best samples of a window
//! so the extreme over the last `win` time units is known in O(1). Used for `tcp_min_rtt`
//! (window `tcp_min_rtt_wlen` = 300 s) and later BBR's filters.

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Sample {
    t: u32,
    v: u32,
}

/// A windowed extreme filter over (time, value) samples.
#[derive(Debug, Clone, Copy, Default)]
pub struct MinMax {
    s: [Sample; 3],
}

impl MinMax {
    /// Current extreme value.
    pub fn get(&self) -> u32 {
        self.s[0].v
    }

    /// Forget everything and start from one sample (`minmax_reset`).
    pub fn reset(&mut self, t: u32, v: u32) -> u32 {
        let s = Sample { t, v };
        self.s = [s; 3];
        v
    }

    /// `minmax_subwin_update`: age out samples as the window slides.
    fn subwin_update(&mut self, win: u32, val: Sample) -> u32 {
        let dt = val.t.wrapping_sub(self.s[0].t);
        if dt > win {
            // Passed the entire window without a new best: promote 2nd and 3rd.
            self.s[0] = self.s[1];
            self.s[1] = self.s[2];
            self.s[2] = val;
            if val.t.wrapping_sub(self.s[0].t) > win {
                self.s[0] = self.s[1];
                self.s[1] = self.s[2];
                self.s[2] = val;
            }
        } else if self.s[1].t == self.s[0].t && dt > win / 4 {
            // A quarter of the window passed without a new 2nd choice.
            self.s[1] = val;
            self.s[2] = val;
        } else if self.s[2].t == self.s[1].t && dt > win / 2 {
            // Half the window passed without a new 3rd choice.
            self.s[2] = val;
        }
        self.s[0].v
    }

    /// `minmax_running_min`: add a sample, return the window's minimum.
    pub fn running_min(&mut self, win: u32, t: u32, v: u32) -> u32 {
        let val = Sample { t, v };
        if val.v <= self.s[0].v || val.t.wrapping_sub(self.s[2].t) > win {
            return self.reset(t, v);
        }
        if val.v <= self.s[1].v {
            self.s[1] = val;
            self.s[2] = val;
        } else if val.v <= self.s[2].v {
            self.s[2] = val;
        }
        self.subwin_update(win, val)
    }

    /// `minmax_running_max`: add a sample, return the window's maximum.
    pub fn running_max(&mut self, win: u32, t: u32, v: u32) -> u32 {
        let val = Sample { t, v };
        if val.v >= self.s[0].v || val.t.wrapping_sub(self.s[2].t) > win {
            return self.reset(t, v);
        }
        if val.v >= self.s[1].v {
            self.s[1] = val;
            self.s[2] = val;
        } else if val.v >= self.s[2].v {
            self.s[2] = val;
        }
        self.subwin_update(win, val)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn min_follows_window() {
        let mut m = MinMax::default();
        m.reset(0, 100);
        assert_eq!(m.running_min(10, 1, 120), 100);
        assert_eq!(m.running_min(10, 2, 90), 90);
        // After the window passes, the old minimum ages out.
        for t in 3..30 {
            m.running_min(10, t, 150 + t);
        }
        assert!(m.get() > 90);
    }

    #[test]
    fn max_tracks_largest() {
        let mut m = MinMax::default();
        m.reset(0, 5);
        assert_eq!(m.running_max(10, 1, 7), 7);
        assert_eq!(m.running_max(10, 2, 6), 7);
    }
}
