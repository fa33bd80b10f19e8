//! The links table of a kernel run: every link's queue sampled every `links_interval_ms`, in
//! the simulator's columns (cclab-sim world.rs `on_sample`): t_s, link, queue_pkts,
//! queue_bytes, drops (loss + queue, cumulative), tx_bytes (cumulative), ce_marks (cumulative).
//! CSV, written as the
//! run goes; t_s counts from the emulator's `ready`.

use std::fs::File;
use std::io::{BufWriter, Seek, SeekFrom, Write};

use crate::emu::EmuError;
use crate::router::Router;

const HEADER: &str = "t_s,link,queue_pkts,queue_bytes,drops,tx_bytes,ce_marks\n";

pub struct LinkSeries {
    w: BufWriter<File>,
    path: String,
    interval_ns: u64,
    next_ns: u64,
}

impl LinkSeries {
    pub fn create(path: &str, interval_ns: u64) -> Result<Self, EmuError> {
        let f = File::create(path).map_err(|e| EmuError::Io(path.to_string(), e))?;
        let mut s = LinkSeries {
            w: BufWriter::with_capacity(1 << 16, f),
            path: path.to_string(),
            interval_ns: interval_ns.max(1),
            next_ns: 0,
        };
        s.w.write_all(HEADER.as_bytes()).map_err(|e| s.fail(e))?;
        Ok(s)
    }

    /// Sample from time zero again (the clock was restarted): rows so far are dropped.
    pub fn restart(&mut self) -> Result<(), EmuError> {
        self.next_ns = 0;
        self.w.flush().map_err(|e| self.fail(e))?;
        let f = self.w.get_mut();
        f.set_len(HEADER.len() as u64)
            .and_then(|_| f.seek(SeekFrom::Start(HEADER.len() as u64)))
            .map(|_| ())
            .map_err(|e| self.fail(e))
    }

    /// When the next sample is due, ns of the emulator's clock.
    pub fn next_ns(&self) -> u64 {
        self.next_ns
    }

    /// Write one sample of every link if one is due at `now` (periods missed while the loop
    /// was busy are skipped, not back-filled); the row carries the nominal sample time.
    pub fn sample(&mut self, now: u64, router: &mut Router) -> Result<(), EmuError> {
        if now < self.next_ns {
            return Ok(());
        }
        let t_s = self.next_ns as f64 * 1e-9;
        for (l, link) in router.links.iter_mut().enumerate() {
            let (q_pkts, q_bytes) = (link.queue_pkts(now), link.queue_bytes(now));
            let st = link.stats();
            writeln!(
                self.w,
                "{t_s:.6},{},{q_pkts},{q_bytes},{},{},{}",
                router.link_names[l],
                st.dropped_random_pkts + st.dropped_queue_full_pkts + st.dropped_aqm_pkts,
                st.tx_bytes,
                st.ce_marks
            )
            .map_err(|e| self.fail(e))?;
        }
        let missed = (now - self.next_ns) / self.interval_ns;
        self.next_ns += (missed + 1) * self.interval_ns;
        Ok(())
    }

    pub fn finish(mut self) -> Result<(), EmuError> {
        self.w.flush().map_err(|e| self.fail(e))
    }

    fn fail(&self, e: std::io::Error) -> EmuError {
        EmuError::Io(self.path.clone(), e)
    }
}
