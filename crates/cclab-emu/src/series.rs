//! The links table of a kernel run: every lane's queue (each link, then each medium's lanes,
//! named by their lane names) sampled every `links_interval_ms`, in the simulator's columns
//! (cclab-sim world.rs `on_sample`): t_s, link, queue_pkts, queue_bytes, drops (loss + queue +
//! AQM, cumulative), tx_bytes (cumulative), ce_marks (cumulative); a medium lane's drops and
//! tx_bytes are those of the packets it sent. CSV, written as the run goes; t_s counts from
//! the emulator's `ready`.

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

    /// Write one sample of every lane if one is due at `now` (periods missed while the loop
    /// was busy are skipped, not back-filled); the row carries the nominal sample time.
    pub fn sample(&mut self, now: u64, router: &mut Router) -> Result<(), EmuError> {
        if now < self.next_ns {
            return Ok(());
        }
        let t_s = self.next_ns as f64 * 1e-9;
        for l in 0..router.lanes() {
            let (q_pkts, q_bytes) = router.lane_queue(now, l);
            let st = router.lane_stats(l);
            writeln!(
                self.w,
                "{t_s:.6},{},{q_pkts},{q_bytes},{},{},{}",
                router.lane_names[l],
                st.dropped_pkts(),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::Spec;

    #[test]
    fn a_row_per_lane_links_then_media() {
        let spec = Spec::parse(
            r#"{"ports": [
                {"name": "a", "netns": null, "dev": "ta", "addrs": ["10.0.0.1"]},
                {"name": "b", "netns": null, "dev": "tb", "addrs": ["10.0.0.2"]}],
              "links": [{"name": "l", "delay_ms": 1}],
              "media": [{"name": "cell", "kind": "shared", "lanes": ["cell.a", "cell.b"],
                         "spec": {"rate_bps": 12000000}}],
              "routes": [{"from": "a", "to": "b", "links": [{"medium": "cell", "from": 0, "to": 1}]},
                         {"from": "b", "to": "a", "links": ["l"]}]}"#,
        )
        .unwrap();
        let mut r = Router::new(&spec);
        let mut p = vec![0u8; 1500];
        p[0] = 0x45;
        p[16..20].copy_from_slice(&[10, 0, 0, 2]);
        for _ in 0..3 {
            r.ingress(0, 0, &p);
        }
        let path =
            std::env::temp_dir().join(format!("cclab-emu-series-{}.csv", std::process::id()));
        let path = path.to_str().unwrap();
        let mut s = LinkSeries::create(path, 1_000_000).unwrap();
        s.sample(0, &mut r).unwrap();
        s.sample(1_500_000, &mut r).unwrap();
        s.finish().unwrap();
        let text = std::fs::read_to_string(path).unwrap();
        let _ = std::fs::remove_file(path);
        let rows: Vec<&str> = text.lines().collect();
        assert_eq!(
            rows,
            [
                HEADER.trim_end(),
                "0.000000,l,0,0,0,0,0",
                "0.000000,cell.a,3,4500,0,1500,0",
                "0.000000,cell.b,0,0,0,0,0",
                // At 1.5 ms the first packet has gone (1 ms on the air), the second is on it.
                "0.001000,l,0,0,0,0,0",
                "0.001000,cell.a,2,3000,0,3000,0",
                "0.001000,cell.b,0,0,0,0,0",
            ]
        );
    }
}
