//! A long read's progress, in volumes, through [`crate::io::progress`] (a bar on a terminal,
//! lines in a log). A HCP-sized DWI (1.5 GB) takes seconds to read and said nothing meanwhile;
//! a read that ends within [`DELAY`], most of them, shows nothing at all rather than a bar that
//! flashes by.

use crate::io::progress::Progress;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long a read runs before its progress is shown.
const DELAY: Duration = Duration::from_secs(1);

pub(super) struct ReadProgress {
    /// Bytes per volume; 0 where nothing is shown.
    per: usize,
    nvol: usize,
    start: Instant,
    delay: Duration,
    bytes: AtomicUsize,
    /// The bar once made, and the volumes counted on it.
    shown: Mutex<(Option<Progress>, usize)>,
}

impl ReadProgress {
    /// The progress of reading `bytes` of voxels on a `dims` grid: shown (`show`) for a 4-D one
    /// whose read lasts beyond [`DELAY`].
    pub(super) fn new(dims: [usize; 4], bytes: usize, show: bool) -> ReadProgress {
        ReadProgress::after(DELAY, dims, bytes, show)
    }

    fn after(delay: Duration, dims: [usize; 4], bytes: usize, show: bool) -> ReadProgress {
        let per = if show && dims[3] > 1 { bytes / dims[3] } else { 0 };
        ReadProgress { per, nvol: dims[3], start: Instant::now(), delay, bytes: AtomicUsize::new(0), shown: Mutex::new((None, 0)) }
    }

    /// `n` more bytes read (from any thread).
    pub(super) fn advance(&self, n: usize) {
        if self.per == 0 {
            return;
        }
        let before = self.bytes.fetch_add(n, Ordering::Relaxed);
        // The lock only where a volume was completed: a hundred times a read.
        if before / self.per == (before + n) / self.per {
            return;
        }
        let mut g = self.shown.lock().unwrap_or_else(|e| e.into_inner());
        let vols = (self.bytes.load(Ordering::Relaxed) / self.per).min(self.nvol);
        if g.0.is_none() && self.start.elapsed() >= self.delay {
            g.0 = Some(Progress::since(self.start, self.nvol as u64, true, "read {bar:40} {pos}/{len} volumes ({eta} left)", "read", "volumes"));
        }
        if let Some(bar) = &g.0 {
            bar.inc((vols - g.1) as u64);
            g.1 = vols;
        }
    }

    /// The read has ended: a bar shown is cleared before what the command says next.
    pub(super) fn finish(&self) {
        if let Some(bar) = &self.shown.lock().unwrap_or_else(|e| e.into_inner()).0 {
            bar.finish_and_clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::volume::nifti_io::{decode_all, open_data};
    use rayon::prelude::*;

    /// The volumes shown so far (None: no bar made).
    fn shown(r: &ReadProgress) -> Option<u64> {
        r.shown.lock().unwrap().0.as_ref().map(|b| b.position())
    }

    /// Bytes reported from many tasks, in pieces that straddle volumes, move the bar one volume
    /// at a time to the last; a read that ends within the delay makes no bar, nor one not shown.
    #[test]
    fn a_read_shows_each_volume_once_and_only_when_long() {
        let (dims, per) = ([10, 10, 10, 7], 4000);
        let r = ReadProgress::after(Duration::ZERO, dims, 7 * per, true);
        (0..7 * per / 1000).into_par_iter().for_each(|_| r.advance(1000));
        assert_eq!(shown(&r), Some(7));
        r.advance(per);
        assert_eq!(shown(&r), Some(7), "bytes past the end counted");
        for (delay, show) in [(Duration::from_secs(3600), true), (Duration::ZERO, false)] {
            let r = ReadProgress::after(delay, dims, 7 * per, show);
            r.advance(7 * per);
            assert_eq!(shown(&r), None, "delay {delay:?}, show {show}");
        }
    }

    /// The whole read reports every byte of its voxels, however the file is laid out: plain, one
    /// gzip stream, our members (voxels split between them, some inflated with the header).
    #[test]
    fn the_whole_read_reports_every_byte() {
        use std::io::Write;
        let tmp = tempfile::tempdir().unwrap();
        let g = crate::volume::Geometry::synthetic([23, 17, 9], [1.0; 3]);
        let data: Vec<f32> = (0..g.nvox() * 4).map(|i| (i as f32 * 0.37).sin()).collect();
        let nii = tmp.path().join("v.nii");
        crate::volume::write_nifti(&nii, &g, 4, &data).unwrap();
        let raw = std::fs::read(&nii).unwrap();
        let mut one = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::new(6));
        one.write_all(&raw).unwrap();
        std::fs::write(tmp.path().join("one.nii.gz"), one.finish().unwrap()).unwrap();
        let mut members = Vec::new();
        crate::volume::write_gz_blocks(&mut members, &[&raw[..]], 5_001).unwrap();
        std::fs::write(tmp.path().join("members.nii.gz"), members).unwrap();
        for name in ["v.nii", "one.nii.gz", "members.nii.gz"] {
            let counted = AtomicUsize::new(0);
            let (_, _, got) = decode_all(open_data(&tmp.path().join(name), false).unwrap(), &|x| x as f32, &|b| {
                counted.fetch_add(b, Ordering::Relaxed);
            })
            .unwrap();
            assert_eq!(got, data, "{name}");
            assert_eq!(counted.into_inner(), 4 * data.len(), "{name}");
        }
    }
}
