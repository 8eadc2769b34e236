//! The streaming unload of one heap relation: units of consecutive blocks are carved in parallel (rayon), a
//! wave at a time, and their rows handed to a writer thread in block order. Memory holds a few waves of output,
//! whatever the size of the table.
//!
//! What the files cannot settle (the status of XIDs whose pg_xact page is not on disk yet, MultiXact members,
//! TOAST values when only the server can read them, undelete's commit times and the subtransactions of the
//! transaction it is asked about) is asked of an [`Oracle`] between waves, and the units that asked are carved
//! again; what stays unknown keeps its row apart.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::mpsc::sync_channel;

use rayon::prelude::*;
use serde::Serialize;

use super::carve::Carver;
use super::find::PageInfo;
use super::output::{Batch, CarveCounts, LostItem};
use crate::error::{io_reason, CoreError, Result};
use crate::profile;
use crate::sources::blocks::BlockReader;
use crate::visibility::xact::XidStatus;

/// Where pages come from: the relation's files, or the caller (pages fetched through SQL).
pub trait PageSource: Sync {
    /// Blocks `first..first + count` into `buf` (replacing its contents): fewer bytes when the relation ends there.
    fn read_into(&self, first: u64, count: u64, buf: &mut Vec<u8>) -> Result<()>;
}

impl PageSource for BlockReader {
    fn read_into(&self, first: u64, count: u64, buf: &mut Vec<u8>) -> Result<()> {
        BlockReader::read_into(self, first, count, buf)
            .map_err(|e| CoreError::Invalid(format!("cannot read block {first}: {}", io_reason(&e))))
    }
}

/// Buffers handed back by the writer for the next units: a page buffer or an output buffer is allocated once per
/// worker, not once per unit (large allocations are fresh mappings, zeroed page by page by the kernel).
#[derive(Default)]
struct Pool(std::sync::Mutex<Vec<Vec<u8>>>);

impl Pool {
    fn get(&self) -> Vec<u8> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).pop().unwrap_or_default()
    }

    fn put(&self, mut v: Vec<u8>) {
        v.clear();
        let mut pool = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if pool.len() < 64 {
            pool.push(v);
        }
    }
}

/// Answers what the files do not say. Called from one thread, between waves.
pub trait Oracle {
    fn xid_status(&mut self, xids: &[u32]) -> Result<Vec<(u32, XidStatus)>>;
    /// MultiXactId -> the XID of its updating member (None: lockers only).
    fn multi_updaters(&mut self, multis: &[u32]) -> Result<Vec<(u32, Option<u32>)>>;
    /// (valueid, chunk_seq, bytes) of every chunk of these TOAST values.
    fn toast_chunks(&mut self, valueids: &[u32]) -> Result<Vec<(u32, i32, Vec<u8>)>>;
    /// XID -> its commit time (microseconds since 2000-01-01, `pg_xact_commit_timestamp`), None when the server
    /// has none. Asked by undelete only: a running server's pg_commit_ts on disk lags its shared memory.
    fn commit_times(&mut self, xids: &[u32]) -> Result<Vec<(u32, Option<i64>)>>;
    /// The subtransactions the commit record of top-level transaction `xid` lists (`xl_xact_subxacts`, from
    /// WAL), None when it cannot be read. Asked by undelete only, at most once a run, when pg_subtrans names no
    /// parent of a transaction that removed rows after `deleted_by`.
    fn subxacts(&mut self, xid: u32) -> Result<Option<Vec<u32>>>;
}

/// Where rows go, in block order.
pub trait RowSink: Send {
    fn write(&mut self, main: &[u8], apart: &[u8], prov: &[u8]) -> Result<()>;
}

/// Counters a caller may read while the unload runs.
#[derive(Debug, Default)]
pub struct Progress {
    pub blocks_done: AtomicU64,
    pub rows_main: AtomicU64,
    pub rows_apart: AtomicU64,
    pub cancelled: AtomicBool,
}

#[derive(Debug, Clone, Copy)]
pub struct UnloadOptions {
    pub jobs: usize,
    /// Blocks per unit of work.
    pub unit_blocks: u64,
    /// Write a provenance line for every row of the main output.
    pub provenance: bool,
}

impl Default for UnloadOptions {
    fn default() -> Self {
        UnloadOptions { jobs: 2, unit_blocks: 128, provenance: false }
    }
}

/// The account of an unload. Rows themselves went to the sink.
#[derive(Debug, Clone, Default, Serialize)]
pub struct UnloadSummary {
    pub counts: CarveCounts,
    pub blocks: u64,
    pub bytes_read: u64,
    pub lost: Vec<LostItem>,
    /// Pages that need accounting (all-zero, line pointer array destroyed, copies of another block).
    pub pages: Vec<PageInfo>,
    /// Blocks the files do not hold (a short or missing segment).
    pub missing_blocks: u64,
    /// How many XIDs, MultiXacts and TOAST values were asked of the oracle.
    pub asked_xids: u64,
    pub asked_multis: u64,
    pub asked_toast: u64,
    pub asked_commit_ts: u64,
    pub cancelled: bool,
}

/// Units of at most `unit` consecutive blocks covering `ranges` (half-open).
fn units(ranges: &[(u64, u64)], unit: u64) -> Vec<(u64, u64)> {
    let unit = unit.max(1);
    let mut out = Vec::new();
    for &(a, b) in ranges {
        let mut s = a;
        while s < b {
            let n = unit.min(b - s);
            out.push((s, n));
            s += n;
        }
    }
    out
}

/// Pages a wave may read (32 MB). Three waves' rows are in memory at once (one carved, one waiting for the writer,
/// one written), so past 8 workers the wave is held to this instead of growing with the workers: peak RSS stays
/// under 200 MB at -j 16 (issue 35).
const WAVE_BYTES: u64 = 32 << 20;

/// Units per wave: four per worker, so a slow unit is waited for by few others, within [`WAVE_BYTES`], and at least
/// one per worker.
fn wave_units(jobs: usize, unit_bytes: u64) -> usize {
    let jobs = jobs.max(1);
    let budget = usize::try_from(WAVE_BYTES / unit_bytes.max(1)).unwrap_or(usize::MAX);
    (jobs * 4).min(budget).max(jobs)
}

#[allow(clippy::too_many_arguments)]
fn carve_unit(
    carver: &Carver,
    source: &dyn PageSource,
    pool: &Pool,
    first: u64,
    count: u64,
    can_ask: bool,
    prov: bool,
) -> Result<(Batch, u64)> {
    let mut data = pool.get();
    let read = profile::timer("worker.read");
    source.read_into(first, count, &mut data)?;
    drop(read);
    let _carving = profile::timer("worker.carve");
    let blcksz = carver.cfg.blcksz as usize;
    let mut out = Batch::streaming(prov);
    out.main = pool.get();
    carver.carve_run(&data, first, can_ask, &mut out);
    let whole = (data.len() / blcksz) as u64;
    for b in first + whole..first + count {
        out.lost.push(LostItem { block: b, lp: None, reason: "the block is missing from the relation's files".into() });
    }
    let read = data.len() as u64;
    pool.put(data);
    Ok((out, read))
}

fn sorted_unique(v: impl Iterator<Item = u32>) -> Vec<u32> {
    let mut v: Vec<u32> = v.collect();
    v.sort_unstable();
    v.dedup();
    v
}

/// Carve every block of `ranges` from `source` and hand the rows to `sink`, in block order.
pub fn unload(
    carver: &mut Carver,
    source: &dyn PageSource,
    ranges: &[(u64, u64)],
    mut oracle: Option<&mut dyn Oracle>,
    sink: &mut (dyn RowSink + Send),
    opts: &UnloadOptions,
    progress: &Progress,
) -> Result<UnloadSummary> {
    let workers = rayon::ThreadPoolBuilder::new()
        .num_threads(opts.jobs.max(1))
        .build()
        .map_err(|e| CoreError::Invalid(format!("cannot start worker threads: {e}")))?;
    let all = units(ranges, opts.unit_blocks);
    let wave = wave_units(opts.jobs, opts.unit_blocks * u64::from(carver.cfg.blcksz));
    let mut summary = UnloadSummary::default();
    // cfg.can_ask is for transaction statuses (carve_page's ask_status); an oracle without the server (offline
    // undelete) still answers for WAL
    let can_ask = oracle.is_some();
    let buffers = Pool::default();
    let pool = &buffers;
    let crew = Crew { workers: &workers, source, pool, provenance: opts.provenance };
    std::thread::scope(|scope| -> Result<()> {
        // One wave is written while the next is carved.
        let (tx, rx) = sync_channel::<Vec<Batch>>(1);
        let writer = scope.spawn(move || -> Result<()> {
            for outs in rx {
                let _writing = profile::timer("writer");
                for b in outs {
                    sink.write(&b.main, &b.apart, &b.prov)?;
                    pool.put(b.main);
                }
            }
            Ok(())
        });
        let mut failed: Option<CoreError> = None;
        for chunk in all.chunks(wave) {
            if progress.cancelled.load(Relaxed) {
                summary.cancelled = true;
                break;
            }
            let outs = match carve_wave(&crew, carver, oracle.as_deref_mut(), chunk, can_ask, &mut summary) {
                Ok(v) => v,
                Err(e) => {
                    failed = Some(e);
                    break;
                }
            };
            let accounting = profile::timer("engine.account");
            carver.clear_chunks();
            let batches = account(outs, chunk, carver.cfg.blcksz, &mut summary, progress);
            drop(accounting);
            if tx.send(batches).is_err() {
                break; // the writer failed: its error is returned below
            }
        }
        drop(tx);
        let written = writer.join().map_err(|_| CoreError::Invalid("the row writer panicked".into()))?;
        if let Some(e) = failed {
            return Err(e);
        }
        written
    })?;
    Ok(summary)
}

/// What carving units in parallel needs besides the carver (which the oracle's answers change between rounds).
struct Crew<'a> {
    workers: &'a rayon::ThreadPool,
    source: &'a dyn PageSource,
    pool: &'a Pool,
    provenance: bool,
}

impl Crew<'_> {
    /// Carve `units` (first block, count) in parallel; `can_ask`: whether what the files cannot settle is asked
    /// for rather than judged uncertain.
    fn carve(&self, carver: &Carver, units: &[(u64, u64)], can_ask: bool) -> Result<Vec<(Batch, u64)>> {
        self.workers.install(|| {
            units
                .par_iter()
                .map(|&(a, n)| carve_unit(carver, self.source, self.pool, a, n, can_ask, self.provenance))
                .collect()
        })
    }
}

/// Carve one wave of units; with an oracle, ask it what the files did not say, then carve the asking units again
/// (the last time without asking: what is still unknown is judged uncertain).
fn carve_wave(
    crew: &Crew<'_>,
    carver: &mut Carver,
    mut oracle: Option<&mut (dyn Oracle + '_)>,
    chunk: &[(u64, u64)],
    can_ask: bool,
    summary: &mut UnloadSummary,
) -> Result<Vec<(Batch, u64)>> {
    let mut outs = crew.carve(carver, chunk, can_ask)?;
    for round in 0..2 {
        let Some(o) = oracle.as_deref_mut() else { break };
        if !outs.iter().any(|(b, _)| b.needs()) {
            break;
        }
        let asking = profile::timer("oracle");
        ask_oracle(o, carver, &outs, summary)?;
        drop(asking);
        let again: Vec<usize> = (0..outs.len()).filter(|&i| outs[i].0.needs()).collect();
        let redo_units: Vec<(u64, u64)> = again.iter().map(|&i| chunk[i]).collect();
        let last = round == 1;
        let redo = crew.carve(carver, &redo_units, !last)?;
        for (i, r) in again.into_iter().zip(redo) {
            outs[i] = r;
        }
    }
    Ok(outs)
}

/// Ask the oracle about the XIDs, MultiXacts and TOAST values the carved units need, and give the answers to the
/// carver.
fn ask_oracle(
    o: &mut dyn Oracle,
    carver: &mut Carver,
    outs: &[(Batch, u64)],
    summary: &mut UnloadSummary,
) -> Result<()> {
    let xids = sorted_unique(outs.iter().flat_map(|(b, _)| b.need_xids.iter().copied()));
    let multis = sorted_unique(outs.iter().flat_map(|(b, _)| b.need_multis.iter().copied()));
    let toast = sorted_unique(outs.iter().flat_map(|(b, _)| b.need_toast.iter().copied()));
    let times = sorted_unique(outs.iter().flat_map(|(b, _)| b.need_commit_ts.iter().copied()));
    summary.asked_xids += xids.len() as u64;
    summary.asked_multis += multis.len() as u64;
    summary.asked_toast += toast.len() as u64;
    summary.asked_commit_ts += times.len() as u64;
    if !xids.is_empty() {
        for (x, s) in o.xid_status(&xids)? {
            carver.add_xid_status(x, s);
        }
    }
    if !multis.is_empty() {
        for (m, u) in o.multi_updaters(&multis)? {
            carver.add_multi(m, u);
        }
    }
    if !toast.is_empty() {
        for (v, seq, bytes) in o.toast_chunks(&toast)? {
            carver.add_chunk(v, seq, bytes);
        }
    }
    if outs.iter().any(|(b, _)| b.need_subxacts) {
        if let Some(w) = carver.cfg.deleted_by {
            let listed = o.subxacts(w)?;
            carver.set_subxacts(listed);
        }
    }
    if !times.is_empty() {
        let answered = o.commit_times(&times)?;
        // an XID the server does not answer for has no time to give: asked once, not again in the next round
        for x in times {
            carver.add_commit_time(x, None);
        }
        for (x, t) in answered {
            carver.add_commit_time(x, t);
        }
    }
    Ok(())
}

/// Add a carved wave to the summary and the progress counters; its batches, for the writer.
fn account(
    outs: Vec<(Batch, u64)>,
    chunk: &[(u64, u64)],
    blcksz: u32,
    summary: &mut UnloadSummary,
    progress: &Progress,
) -> Vec<Batch> {
    let mut batches = Vec::with_capacity(outs.len());
    for (i, (mut b, bytes)) in outs.into_iter().enumerate() {
        summary.blocks += chunk[i].1;
        summary.bytes_read += bytes;
        summary.missing_blocks += chunk[i].1 - bytes / u64::from(blcksz.max(1));
        summary.counts.add(&b.counts);
        summary.lost.append(&mut b.lost);
        summary.pages.append(&mut b.pages);
        progress.blocks_done.fetch_add(chunk[i].1, Relaxed);
        progress.rows_main.fetch_add(b.counts.main_rows, Relaxed);
        progress.rows_apart.fetch_add(b.counts.apart_rows, Relaxed);
        batches.push(b);
    }
    batches
}

/// Writes smaller than this are gathered before they reach the file; larger ones are written as they are.
const WRITE_GATHER: usize = 64 << 10;

/// Rows into files: the main output and the rows kept apart appended to, provenance optional.
pub struct FileSink {
    main: std::io::BufWriter<std::fs::File>,
    apart: std::io::BufWriter<std::fs::File>,
    prov: Option<std::io::BufWriter<std::fs::File>>,
}

impl FileSink {
    fn open(path: &std::path::Path) -> Result<std::io::BufWriter<std::fs::File>> {
        let f = std::fs::OpenOptions::new().append(true).create(true).open(path).map_err(|e| CoreError::io(path, e))?;
        // A unit's rows (most of a megabyte) go straight to write(2), not through the buffer: the single writer
        // thread is the serial part of an unload, and a copy into the buffer first doubled its work (issue 35).
        // Only small pieces (rows kept apart, a unit of few rows) are gathered.
        Ok(std::io::BufWriter::with_capacity(WRITE_GATHER, f))
    }

    /// Open (create or append to) the files.
    pub fn new(main: &std::path::Path, apart: &std::path::Path, prov: Option<&std::path::Path>) -> Result<FileSink> {
        Ok(FileSink { main: Self::open(main)?, apart: Self::open(apart)?, prov: prov.map(Self::open).transpose()? })
    }

    /// Flush everything to the files.
    pub fn finish(mut self) -> Result<()> {
        use std::io::Write;
        let err = |e: std::io::Error| CoreError::Invalid(format!("cannot write rows: {}", io_reason(&e)));
        self.main.flush().map_err(err)?;
        self.apart.flush().map_err(err)?;
        if let Some(p) = &mut self.prov {
            p.flush().map_err(err)?;
        }
        Ok(())
    }
}

impl RowSink for FileSink {
    fn write(&mut self, main: &[u8], apart: &[u8], prov: &[u8]) -> Result<()> {
        use std::io::Write;
        let err = |e: std::io::Error| CoreError::Invalid(format!("cannot write rows: {}", io_reason(&e)));
        self.main.write_all(main).map_err(err)?;
        self.apart.write_all(apart).map_err(err)?;
        if let Some(p) = &mut self.prov {
            p.write_all(prov).map_err(err)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::units;

    #[test]
    fn waves_are_held_to_their_budget() {
        let mb = 1 << 20;
        assert_eq!(super::wave_units(2, mb), 8);
        assert_eq!(super::wave_units(8, mb), 32);
        assert_eq!(super::wave_units(16, mb), 32);
        assert_eq!(super::wave_units(64, mb), 64);
        assert_eq!(super::wave_units(0, 0), 4);
    }

    #[test]
    fn units_cover_ranges() {
        assert_eq!(units(&[(0, 5), (10, 11)], 2), vec![(0, 2), (2, 2), (4, 1), (10, 1)]);
        assert_eq!(units(&[], 8), vec![]);
    }
}
