//! One run's work split across several devices: one worker thread per device, each with its own
//! kernel object (its own `Gpu`, queues and pinned staging, built on that thread), pulling chunk
//! indices from one shared queue, so a faster device takes more chunks (work stealing, not a
//! fixed split). Results come back to the calling thread tagged with their chunk index, so a
//! method places them by index and the output is in input order whatever device ran what.
//!
//! A device whose kernel object cannot be built, or whose chunk fails, drops out with a warning;
//! its chunk goes back on the queue for the others (chunks it had not yet taken were never
//! assigned to it). The run fails only when every device has failed, with the last error.
//!
//! Nothing a method computes may depend on the chunking: chains, streamlines and random streams
//! are keyed by voxel, seed and sample, so several devices of one kind give the bytes one gives.
//!
//! Two knobs, for tests and tuning on a device, read from the environment by [`Split::new`]:
//! `NEUROPORT_SPLIT_CHUNK=n` fixes the chunk length (even on one device), and
//! `NEUROPORT_SPLIT_FAIL=i:k` makes device i fail after k chunks (the failure path's test hook).

use super::{timing::wall_ms, Device, Timings};
use anyhow::{anyhow, Result};
use std::collections::VecDeque;
use std::fmt;
use std::ops::Range;
use std::sync::{mpsc, Condvar, Mutex};

/// The devices a run splits across, and how it chunks.
#[derive(Clone)]
pub struct Split {
    devices: Vec<Device>,
    chunk: Option<usize>,
    fail_after: Option<(usize, usize)>,
}

/// What one device did.
#[derive(Clone, Debug, Default)]
pub struct Share {
    pub device: String,
    pub chunks: usize,
    /// Wall seconds in its kernel object's set-up and in its chunks.
    pub busy_s: f64,
    /// Kernel, transfer and host time its chunks reported.
    pub timings: Timings,
    /// Why it dropped out, if it did.
    pub failed: Option<String>,
}

/// Every device's share, in the order the devices were listed, and the split's wall time.
#[derive(Clone, Debug, Default)]
pub struct Shares {
    pub devices: Vec<Share>,
    /// Wall seconds from the workers' start to the last result.
    pub wall_s: f64,
}

impl Shares {
    pub fn timings(&self) -> Timings {
        let mut t = Timings::default();
        for s in &self.devices {
            t.add(&s.timings);
        }
        t
    }
}

impl fmt::Display for Shares {
    /// `1.95 s; #0 cuda:0 (NVIDIA H200): 1 chunk, busy 1.92 s; #1 cuda:1 (NVIDIA H200): ...`
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:.2} s", self.wall_s)?;
        for s in &self.devices {
            f.write_str("; ")?;
            write!(f, "{}: {} chunk{}, busy {:.2} s", s.device, s.chunks, if s.chunks == 1 { "" } else { "s" }, s.busy_s)?;
            // Why: a device that failed after the others had finished was warned of nowhere else.
            if let Some(why) = &s.failed {
                write!(f, " (failed, its work re-run on the others: {why})")?;
            }
        }
        Ok(())
    }
}

/// The shared queue: chunks never taken, chunks handed back by a failed device, and how many
/// are done; workers wait on `cv` while others still hold chunks that might come back.
struct Queue {
    next: usize,
    back: VecDeque<usize>,
    done: usize,
    alive: usize,
    last_error: Option<anyhow::Error>,
    /// The device the failure hook will stop, until it has stopped or finished.
    hook: Option<usize>,
}

impl Split {
    /// Splits across `devices` (at least one), with the environment's knobs (module docs).
    pub fn new(devices: Vec<Device>) -> Split {
        let num = |s: &str| s.trim().parse::<usize>().ok();
        let chunk = std::env::var("NEUROPORT_SPLIT_CHUNK").ok().and_then(|v| num(&v)).filter(|&n| n > 0);
        let fail_after = std::env::var("NEUROPORT_SPLIT_FAIL").ok().and_then(|v| {
            let (i, k) = v.split_once(':')?;
            Some((num(i)?, num(k)?))
        });
        Split { devices, chunk, fail_after }
    }
    /// One device, no knobs: what the single-device library calls use.
    pub fn one(device: Device) -> Split {
        Split { devices: vec![device], chunk: None, fail_after: None }
    }
    /// Fixed chunks of `n` items (tests, tuning).
    pub fn with_chunk(mut self, n: usize) -> Split {
        self.chunk = Some(n.max(1));
        self
    }
    /// Device `i` fails (returns an error instead of running) after `k` chunks: the test hook.
    pub fn with_failure(mut self, i: usize, k: usize) -> Split {
        self.fail_after = Some((i, k));
        self
    }
    pub fn devices(&self) -> &[Device] {
        &self.devices
    }
    pub fn first(&self) -> &Device {
        &self.devices[0]
    }
    pub fn len(&self) -> usize {
        self.devices.len()
    }
    pub fn is_empty(&self) -> bool {
        self.devices.is_empty()
    }
    /// The device's label, or `N devices` for several.
    pub fn label(&self) -> String {
        match self.devices.as_slice() {
            [d] => d.label(),
            v => format!("{} devices", v.len()),
        }
    }

    /// Item ranges of `total` items. One device: one chunk (the method batches within it by
    /// the device's memory, as without a split). Several alike (same backend, name and compute
    /// units): one equal chunk each. A GPU kernel whose threads each run a long chain (bedpost)
    /// takes about as long for a small chunk as for a full one, so each extra chunk a GPU runs
    /// costs nearly a whole launch's time; equal devices finish together anyway, and a failed
    /// one's chunk still goes to the others. Unlike devices: guided self-scheduling, each chunk
    /// 1/(2 x devices) of what is left but at least `min_len`, so the first chunks are large
    /// and the last small (an even finish whatever the speeds). A fixed chunk length overrides
    /// all of these.
    pub fn plan(&self, total: usize, min_len: usize) -> Vec<Range<usize>> {
        let n = self.devices.len().max(1);
        let alike = self.devices.iter().all(|d| {
            let (a, b) = (d.info(), self.devices[0].info());
            a.backend == b.backend && a.name == b.name && a.compute_units == b.compute_units
        });
        let mut v = Vec::new();
        let mut start = 0;
        while start < total {
            let left = total - start;
            let len = match self.chunk {
                Some(c) => c,
                None if n == 1 => left,
                None if alike => total.div_ceil(n),
                None => left.div_ceil(2 * n).max(min_len.max(1)),
            }
            .min(left);
            v.push(start..start + len);
            start += len;
        }
        v
    }

    /// Chunks of `len` items (the `NEUROPORT_SPLIT_CHUNK` length where set), whatever the
    /// devices: for a method that hands its results on in order as they come, where smaller
    /// chunks let the next stage start sooner.
    pub fn plan_runs(&self, total: usize, len: usize) -> Vec<Range<usize>> {
        let len = self.chunk.unwrap_or(len).max(1);
        (0..total).step_by(len).map(|s| s..(s + len).min(total)).collect()
    }

    /// Runs chunks `0..nchunks`: each device's worker builds its kernel object with `make` on
    /// its own thread, then takes chunk after chunk through `work`; `take(index, result)` runs
    /// on the calling thread as results arrive (in any order). `work` also returns the chunk's
    /// timings, summed into that device's share.
    pub fn run<K, R: Send>(
        &self,
        nchunks: usize,
        make: impl Fn(&Device) -> Result<K> + Sync,
        work: impl Fn(&mut K, usize) -> Result<(R, Timings)> + Sync,
        take: impl FnMut(usize, R),
    ) -> Result<Shares> {
        self.run_indexed(nchunks, |_, d| make(d), work, take)
    }

    /// [`run`](Self::run) with `make` told the device's index in the list (to hand over
    /// an object made ahead for that device).
    pub fn run_indexed<K, R: Send>(
        &self,
        nchunks: usize,
        make: impl Fn(usize, &Device) -> Result<K> + Sync,
        work: impl Fn(&mut K, usize) -> Result<(R, Timings)> + Sync,
        mut take: impl FnMut(usize, R),
    ) -> Result<Shares> {
        if nchunks == 0 {
            return Ok(Shares { devices: self.devices.iter().map(|d| Share { device: d.label(), ..Share::default() }).collect(), wall_s: 0.0 });
        }
        // With the failure hook on, the other devices wait until the failing one has failed (or
        // finished), so the failure path runs whatever the thread timing.
        let hook = self.fail_after.filter(|f| f.0 < self.devices.len()).map(|f| f.0);
        let q = Mutex::new(Queue { next: 0, back: VecDeque::new(), done: 0, alive: self.devices.len(), last_error: None, hook });
        let cv = Condvar::new();
        let (tx, rx) = mpsc::channel::<(usize, R)>();
        let t0 = std::time::Instant::now();
        let shares = std::thread::scope(|s| {
            let handles: Vec<_> = self
                .devices
                .iter()
                .enumerate()
                .map(|(i, dev)| {
                    let tx = tx.clone();
                    let (q, cv, make, work) = (&q, &cv, &make, &work);
                    let fail = self.fail_after.filter(|f| f.0 == i).map(|f| f.1);
                    let several = self.devices.len() > 1;
                    s.spawn(move || worker(i, dev, several, nchunks, fail, q, cv, make, work, tx))
                })
                .collect();
            drop(tx);
            for (i, r) in rx {
                take(i, r);
            }
            handles.into_iter().map(|h| h.join().unwrap_or_else(|_| Share { failed: Some("worker panicked".into()), ..Share::default() })).collect::<Vec<_>>()
        });
        let q = q.into_inner().unwrap_or_else(|e| e.into_inner());
        if q.done < nchunks {
            return Err(q.last_error.unwrap_or_else(|| anyhow!("{} of {nchunks} chunks were not run", nchunks - q.done)));
        }
        Ok(Shares { devices: shares, wall_s: t0.elapsed().as_secs_f64() })
    }

    /// [`Split::run`] with the results collected in chunk order.
    pub fn map<K, R: Send>(
        &self,
        nchunks: usize,
        make: impl Fn(&Device) -> Result<K> + Sync,
        work: impl Fn(&mut K, usize) -> Result<(R, Timings)> + Sync,
    ) -> Result<(Vec<R>, Shares)> {
        let mut out: Vec<Option<R>> = (0..nchunks).map(|_| None).collect();
        let shares = self.run(nchunks, make, work, |i, r| out[i] = Some(r))?;
        Ok((out.into_iter().map(|r| r.expect("every chunk ran")).collect(), shares))
    }
}

/// One device's loop over the shared queue.
fn worker<K, R>(
    index: usize,
    dev: &Device,
    several: bool,
    nchunks: usize,
    fail: Option<usize>,
    q: &Mutex<Queue>,
    cv: &Condvar,
    make: &(impl Fn(usize, &Device) -> Result<K> + Sync),
    work: &(impl Fn(&mut K, usize) -> Result<(R, Timings)> + Sync),
    tx: mpsc::Sender<(usize, R)>,
) -> Share {
    let label = if several { format!("#{index} {}", dev.label()) } else { dev.label() };
    let mut share = Share { device: label.clone(), ..Share::default() };
    let lock = || q.lock().unwrap_or_else(|e| e.into_inner());
    let drop_out = |share: &mut Share, chunk: Option<usize>, e: anyhow::Error| {
        let mut g = lock();
        g.alive -= 1;
        if let Some(c) = chunk {
            g.back.push_back(c);
        }
        let others_left = g.alive > 0 && g.done < nchunks;
        if others_left {
            eprintln!("warning: {label} failed{}: {e:#}; its work goes to the other devices", chunk.map(|c| format!(" on chunk {c}")).unwrap_or_default());
        }
        share.failed = Some(format!("{e:#}"));
        g.last_error = Some(e);
        if g.hook == Some(index) {
            g.hook = None;
        }
        cv.notify_all();
    };
    let (k, ms) = wall_ms(|| make(index, dev));
    share.busy_s += ms * 1e-3;
    if several {
        super::stages::record(&format!("#{index} make"), ms);
    }
    let mut k = match k {
        Ok(k) => k,
        Err(e) => {
            drop_out(&mut share, None, e);
            return share;
        }
    };
    loop {
        let chunk = {
            let mut g = lock();
            loop {
                if g.hook.is_some_and(|h| h != index) {
                    g = cv.wait(g).unwrap_or_else(|e| e.into_inner());
                    continue;
                }
                if let Some(c) = g.back.pop_front() {
                    break Some(c);
                }
                if g.next < nchunks {
                    g.next += 1;
                    break Some(g.next - 1);
                }
                // Every chunk is handed out; wait while another device might still give one back.
                if g.done >= nchunks || g.alive <= 1 {
                    break None;
                }
                g = cv.wait(g).unwrap_or_else(|e| e.into_inner());
            }
        };
        let Some(c) = chunk else {
            let mut g = lock();
            if g.hook == Some(index) {
                g.hook = None;
                cv.notify_all();
            }
            break;
        };
        let r = if fail.is_some_and(|k| share.chunks >= k) {
            Err(anyhow!("stopped on purpose after {} chunks (NEUROPORT_SPLIT_FAIL test hook)", share.chunks))
        } else {
            let (r, ms) = wall_ms(|| work(&mut k, c));
            share.busy_s += ms * 1e-3;
            if several {
                super::stages::record(&format!("#{index} chunk {c}"), ms);
            }
            r
        };
        match r {
            Ok((r, t)) => {
                share.chunks += 1;
                share.timings.add(&t);
                let _ = tx.send((c, r));
                lock().done += 1;
                cv.notify_all();
            }
            Err(e) => {
                drop_out(&mut share, Some(c), e);
                return share;
            }
        }
    }
    share
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::cpu::Cpu;
    use std::sync::Arc;

    fn cpus(n: usize) -> Split {
        Split::one(Device::Cpu(Arc::new(Cpu::new(Some(1)).unwrap()))).with_devices(n)
    }

    impl Split {
        fn with_devices(mut self, n: usize) -> Split {
            let d = self.devices[0].clone();
            self.devices = vec![d; n];
            self
        }
    }

    #[test]
    fn plans_cover_every_item_once() {
        // Alike devices: one equal chunk each.
        assert_eq!(cpus(3).plan(10, 1), vec![0..4, 4..8, 8..10]);
        assert_eq!(cpus(8).plan(358_600, 4096).len(), 8);
        let mut mixed = cpus(2);
        mixed.devices.push(Device::Cpu(Arc::new(Cpu::new(Some(2)).unwrap())));
        for (split, total, min) in [(cpus(1), 1000, 10), (cpus(2), 1000, 10), (mixed.clone(), 358_600, 4096), (mixed, 5, 100), (cpus(2).with_chunk(7), 50, 1000)] {
            let p = split.plan(total, min);
            assert_eq!(p.first().map(|r| r.start), Some(0));
            assert!(p.windows(2).all(|w| w[0].end == w[1].start && w[0].len() >= w[1].len() || split.chunk.is_some()));
            assert_eq!(p.last().unwrap().end, total);
            if split.len() == 1 && split.chunk.is_none() {
                assert_eq!(p.len(), 1);
            }
            if split.len() == 3 && total > 100_000 {
                assert!(p.len() > 6 && p[0].len() == total.div_ceil(6) && p.last().unwrap().len() <= min, "{p:?}");
            }
            if let Some(c) = split.chunk {
                assert!(p.iter().all(|r| r.len() <= c));
            }
        }
        assert!(cpus(2).plan(0, 10).is_empty());
    }

    #[test]
    fn results_come_back_by_index_and_a_failed_device_is_covered() {
        for fail in [None, Some((0, 0)), Some((1, 3)), Some((2, 1))] {
            let mut s = cpus(3);
            if let Some((i, k)) = fail {
                s = s.with_failure(i, k);
            }
            // All three start together and each chunk takes a while, so every device takes
            // several chunks (more than k) unless it is stopped.
            let start = std::sync::Barrier::new(3);
            let make = |_: &Device| {
                start.wait();
                Ok(0usize)
            };
            let (v, shares) = s
                .map(40, make, |n, c| {
                    *n += 1;
                    std::thread::sleep(std::time::Duration::from_millis(3));
                    Ok((c * c, Timings { kernel_ms: 1.0, ..Timings::default() }))
                })
                .unwrap();
            assert_eq!(v, (0..40).map(|c| c * c).collect::<Vec<_>>());
            assert_eq!(shares.devices.iter().map(|s| s.chunks).sum::<usize>(), 40);
            assert_eq!(shares.timings().kernel_ms, 40.0);
            if let Some((i, k)) = fail {
                assert_eq!(shares.devices[i].chunks, k);
                assert!(shares.devices[i].failed.is_some() && shares.to_string().contains("failed"));
            }
        }
    }

    #[test]
    fn every_device_failing_returns_the_error() {
        let e = cpus(2).map(5, |_| Ok(()), |_, c| if c < 100 { Err::<((), Timings), _>(anyhow!("driver says no")) } else { unreachable!() }).unwrap_err();
        assert!(e.to_string().contains("driver says no"));
        let e = cpus(2).map(5, |_| Err::<(), _>(anyhow!("no context")), |_, _| Ok(((), Timings::default()))).unwrap_err();
        assert!(e.to_string().contains("no context"));
        // One device failing in set-up: the other runs everything.
        let made = std::sync::atomic::AtomicUsize::new(0);
        let make = |_: &Device| if made.fetch_add(1, std::sync::atomic::Ordering::SeqCst) == 0 { Err(anyhow!("no context")) } else { Ok(()) };
        let (v, sh) = cpus(2).map(6, make, |_, c| Ok((c, Timings::default()))).unwrap();
        assert_eq!(v, (0..6).collect::<Vec<_>>());
        assert_eq!(sh.devices.iter().map(|s| s.chunks).sum::<usize>(), 6);
        assert_eq!(sh.devices.iter().filter(|s| s.failed.is_some()).count(), 1);
    }
}
