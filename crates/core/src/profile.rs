//! Per-thread busy time for measuring how a run would scale on more cores (issue 35): each thread of the scan and
//! the row engine records spans of its work (a unit read or carved, a batch written, an oracle round, a serial
//! step), with start and end on one clock, so a timeline and each thread's busy time can be drawn from them.
//!
//! Off unless `PGSURGEON_PROFILE` is set (read once): then a span costs four clock reads and one short lock when it
//! ends. Spans are per unit of work (a megabyte or more of pages), never per page, so the lock is taken a few
//! thousand times a second at most.

use std::borrow::Cow;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Mutex, OnceLock};
use std::time::Instant;

use serde::Serialize;

/// One stretch of work on one thread; times in nanoseconds since the profile's start ([`now_ns`]).
#[derive(Debug, Clone, Serialize)]
pub struct Span {
    /// What the thread did: "worker.read", "worker.carve", "writer", "oracle", "scan.assemble", …
    pub role: Cow<'static, str>,
    /// The thread, numbered in the order threads first recorded a span.
    pub thread: u64,
    pub start_ns: u64,
    pub end_ns: u64,
    /// CPU time the thread used in the span (its own clock): busy time that does not count the moments another
    /// process had the core, on a shared machine.
    pub cpu_ns: u64,
}

struct State {
    epoch: Instant,
    spans: Mutex<Vec<Span>>,
}

fn state() -> Option<&'static State> {
    static STATE: OnceLock<Option<State>> = OnceLock::new();
    STATE
        .get_or_init(|| {
            std::env::var_os("PGSURGEON_PROFILE")
                .filter(|v| !v.is_empty())
                .map(|_| State { epoch: Instant::now(), spans: Mutex::new(Vec::new()) })
        })
        .as_ref()
}

/// Whether spans are being recorded.
pub fn enabled() -> bool {
    state().is_some()
}

/// Nanoseconds since the profile started (0 when profiling is off).
pub fn now_ns() -> u64 {
    state().map_or(0, |s| s.epoch.elapsed().as_nanos() as u64)
}

/// This thread's number in the profile.
pub fn thread_no() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    thread_local! {
        static NO: u64 = NEXT.fetch_add(1, Relaxed);
    }
    NO.with(|n| *n)
}

/// CPU nanoseconds the calling thread has used (CLOCK_THREAD_CPUTIME_ID).
pub fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes one timespec through a valid pointer; this clock id exists on Linux and BSDs.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return 0;
    }
    (ts.tv_sec as u64).saturating_mul(1_000_000_000).saturating_add(ts.tv_nsec as u64)
}

/// Record a span measured elsewhere (the Python layer's phases), on the calling thread.
pub fn record(role: Cow<'static, str>, start_ns: u64, end_ns: u64, cpu_ns: u64) {
    if let Some(s) = state() {
        let span = Span { role, thread: thread_no(), start_ns, end_ns: end_ns.max(start_ns), cpu_ns };
        s.spans.lock().unwrap_or_else(|e| e.into_inner()).push(span);
    }
}

/// Every span recorded so far, taken out of the profile.
pub fn take() -> Vec<Span> {
    state().map_or_else(Vec::new, |s| std::mem::take(&mut *s.spans.lock().unwrap_or_else(|e| e.into_inner())))
}

/// A span from its creation to its drop, on the creating thread; nothing when profiling is off.
#[must_use]
pub struct Timer {
    role: &'static str,
    /// (wall, thread CPU) at the start.
    start: Option<(u64, u64)>,
}

/// Start timing `role` on this thread.
pub fn timer(role: &'static str) -> Timer {
    Timer { role, start: enabled().then(|| (now_ns(), thread_cpu_ns())) }
}

impl Drop for Timer {
    fn drop(&mut self) {
        if let Some((wall, cpu)) = self.start {
            record(Cow::Borrowed(self.role), wall, now_ns(), thread_cpu_ns().saturating_sub(cpu));
        }
    }
}
