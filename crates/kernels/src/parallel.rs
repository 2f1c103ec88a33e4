//! An intra-op parallel-for whose workers stay awake between consecutive ops.
//!
//! A kernel that splits its work calls [`for_each`] with a number of tasks; the calling thread
//! and the team's workers claim task indices from an atomic counter until all are taken, and the
//! call returns when every task has finished (`for_each_pinned` instead gives each participant
//! its own run of consecutive tasks first, so a split repeated call after call keeps each share
//! on one core).
//! After a job a worker spins for a short budget
//! ([`SPIN`]) waiting for the next one, so the consecutive ops of a program run hand their work
//! over in about a microsecond instead of paying a futex wake-up and an inter-processor
//! interrupt per op (tens of microseconds on a virtual machine); past the budget it parks on a
//! condition variable, so an idle process does not keep a core busy.
//!
//! The team runs one job at a time. A caller that finds it busy (another thread's job, or a task
//! of the running job splitting further) runs its tasks inline on its own thread, so concurrent
//! and nested calls never wait for each other. The number of threads a job uses is the caller's
//! `width` ([`for_each`] passes rayon's current thread count, which `--threads` configures); the
//! team grows to `width - 1` workers on first need. A task's panic is caught where it happens
//! and re-raised on the calling thread once every task has stopped, so no worker outlives the
//! borrowed job.
//!
//! Results do not depend on the split as long as tasks write disjoint outputs and each output is
//! computed by one task in a fixed order — the callers' contract. A job's tasks run under its
//! caller's instruction set ([`crate::isa::with`]), so every thread of a split kernel takes the
//! same path.

use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::isa::Isa;

/// How long an idle worker spins for the next job before it parks: longer than the gap between
/// two split ops of a program run (the unsplit ops between them), short enough that an idle
/// process gives its cores back at once.
pub const SPIN: Duration = Duration::from_micros(200);

/// The most workers a team starts, whatever width is asked for.
const MAX_WORKERS: usize = 255;

/// The output a split kernel's tasks share, each writing its own disjoint part of it (a
/// product's column panels, a batch's entries, a map's chunks, a softmax's rows) through this
/// pointer.
pub struct SharedOut<T>(pub *mut T);

impl<T> Clone for SharedOut<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for SharedOut<T> {}

impl<T> SharedOut<T> {
    pub fn get(self) -> *mut T {
        self.0
    }
}

// SAFETY: the tasks of one job write disjoint elements through it, and [`for_each`] returns
// only when every task has finished, so no write outlives the caller's borrow of the buffer;
// `T: Send`, so its values may be written from another thread.
unsafe impl<T: Send> Send for SharedOut<T> {}
// SAFETY: as above.
unsafe impl<T: Send> Sync for SharedOut<T> {}

/// Splits `out` into `tasks` ranges of whole `block`-element blocks (the last range may end
/// short) and runs `f(start, part)` on each across the team, `part` being `out[start..]` up
/// to the next range: for element-by-element kernels, whose results do not depend on the
/// split.
pub fn for_each_range<T: Send>(out: &mut [T], block: usize, tasks: usize, f: impl Fn(usize, &mut [T]) + Sync) {
    let n = out.len();
    let (blocks, block) = (n.div_ceil(block.max(1)), block.max(1));
    let dst = SharedOut(out.as_mut_ptr());
    for_each(tasks, |t| {
        let (i0, i1) = ((blocks * t / tasks * block).min(n), (blocks * (t + 1) / tasks * block).min(n));
        // SAFETY: `out` holds `n` elements, the tasks' ranges `i0..i1` are disjoint, and
        // `for_each` returns only when every task has finished.
        f(i0, unsafe { std::slice::from_raw_parts_mut(dst.get().add(i0), i1 - i0) });
    });
}

/// [`for_each`] over tasks that can fail: every task runs (a failing one stops only itself),
/// and the first error recorded is returned.
pub fn try_for_each<E: Send>(tasks: usize, f: impl Fn(usize) -> Result<(), E> + Sync) -> Result<(), E> {
    let failure = Mutex::new(None);
    for_each(tasks, |t| {
        if let Err(e) = f(t) {
            failure.lock().unwrap_or_else(|p| p.into_inner()).get_or_insert(e);
        }
    });
    match failure.into_inner().unwrap_or_else(|p| p.into_inner()) {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// Runs `f(0)`, …, `f(tasks - 1)` on the global team, on up to `rayon::current_num_threads()`
/// threads (the calling one included); returns when all have finished. A panic in a task is
/// re-raised here after the others have stopped.
pub fn for_each<F: Fn(usize) + Sync>(tasks: usize, f: F) {
    let width = threads();
    if tasks <= 1 || width <= 1 {
        (0..tasks).for_each(f);
        return;
    }
    global().run(tasks, width, false, f);
}

/// [`for_each`] with each task on the same thread of the team on every call: of `w` threads
/// (`w ≤ tasks`), participant `p` (the caller is the 0th, the team's `p`-th worker the `p`-th)
/// runs the tasks `t` with `t·w / tasks == p`, one run of consecutive tasks (task `t` on
/// participant `t` when there are no more tasks than threads). A kernel that splits the same
/// product into the same tasks call after call (a linear layer: its weight columns) then finds
/// each share of its operands in the cache of the core that read it last time. A participant
/// done with its run takes the others' unclaimed tasks from the last one down, so a parked or
/// preempted worker delays nothing and the tasks at the end of a run balance the threads;
/// results must not depend on which thread runs a task, as for [`for_each`]. More tasks than
/// [`MAX_PINNED`] are claimed in turn.
pub fn for_each_pinned<F: Fn(usize) + Sync>(tasks: usize, f: F) {
    let width = threads();
    if tasks <= 1 || width <= 1 {
        (0..tasks).for_each(f);
        return;
    }
    global().run(tasks, width, tasks <= MAX_PINNED, f);
}

/// Most tasks of a pinned job ([`for_each_pinned`]): the bits of `Job::claimed`.
pub const MAX_PINNED: usize = 256;

thread_local! {
    /// The width [`with_threads`] set for this thread, if any.
    static WIDTH: std::cell::Cell<Option<usize>> = const { std::cell::Cell::new(None) };
}

/// The number of threads [`for_each`] splits work across: the width [`with_threads`] set on
/// this thread, else rayon's current thread count (the pool the caller runs in, or the global
/// one that `--threads` sizes).
pub fn threads() -> usize {
    WIDTH.with(|w| w.get()).unwrap_or_else(rayon::current_num_threads)
}

/// Runs `f` on this thread with [`for_each`] splitting work across `threads` threads (this one
/// included), whatever rayon's pool says: an embedder that calls one program from several of
/// its own threads gives each call its width without moving it onto a pool.
pub fn with_threads<R>(threads: usize, f: impl FnOnce() -> R) -> R {
    struct Restore(Option<usize>);
    impl Drop for Restore {
        fn drop(&mut self) {
            WIDTH.with(|w| w.set(self.0));
        }
    }
    let _restore = Restore(WIDTH.with(|w| w.replace(Some(threads.max(1)))));
    f()
}

/// The process-wide team used by [`for_each`]; its workers start on first use.
pub fn global() -> &'static Team {
    static TEAM: OnceLock<Team> = OnceLock::new();
    TEAM.get_or_init(|| Team::new(SPIN))
}

/// A set of worker threads that run one job at a time together with the job's caller.
///
/// Dropping a team stops and joins its workers.
pub struct Team {
    shared: Arc<Shared>,
    handles: Mutex<Vec<JoinHandle<()>>>,
    /// Workers started so far (`handles.len()`, readable without the lock).
    started: AtomicUsize,
}

/// The state a team's workers share with its callers.
struct Shared {
    /// The running job, or null. Set and cleared only by the caller holding `busy`.
    job: AtomicPtr<Job>,
    /// Bumped for every job published (and at shutdown), so a waiting worker sees a change.
    epoch: AtomicU64,
    /// Held by the caller whose job the team runs.
    busy: AtomicBool,
    /// Workers between reading `job` and finishing with it; the caller clears `job` and then
    /// waits for this to reach zero before its job (on its stack) goes away.
    active: AtomicUsize,
    /// Workers parked on `wake` (or about to park).
    sleeping: AtomicUsize,
    lock: Mutex<()>,
    wake: Condvar,
    shutdown: AtomicBool,
    spin: Duration,
}

/// One call's work: a type-erased `&F` with its trampoline, and the counters tasks are claimed
/// and joined by.
struct Job {
    data: *const (),
    call: unsafe fn(*const (), usize),
    tasks: usize,
    /// The next unclaimed task.
    next: AtomicUsize,
    /// Workers that may still join (the job's width minus the caller, minus those joined).
    seats: AtomicUsize,
    /// Whether task `t` belongs to the `t`-th participant (the caller being the 0th): then
    /// tasks are claimed by the bits of `claimed`, not by `next`.
    pinned: bool,
    /// The number of threads the job runs on (the caller included).
    width: usize,
    /// Bit `t` set once task `t` of a pinned job is claimed (bit 0 from the start: the
    /// caller's).
    claimed: [AtomicU64; 4],
    panic: Mutex<Option<Box<dyn Any + Send>>>,
    /// The caller's instruction set, which the workers run the tasks under.
    isa: Isa,
}

impl Job {
    /// Claims and runs tasks until none is left; catches a panic, records the first, and stops
    /// handing out tasks after it. `me` is the participant's index (0 for the caller, `i` for
    /// the team's `i`-th worker): in a pinned job it first works through its own run of tasks.
    fn work(&self, me: usize) {
        if self.pinned {
            // Participant `p` owns the run of tasks `t` with `t·w / tasks == p`: it works
            // through it from the start, then claims what is left from the last task down, so
            // a participant done early takes the end of another's run while its owner is still
            // at the start. The caller's task 0 is claimed before the job is published (no
            // worker takes it in the moment between publishing and the caller's claim).
            let w = self.width.min(self.tasks).max(1);
            let first = |p: usize| (p * self.tasks).div_ceil(w).min(self.tasks);
            for i in first(me)..first(me + 1) {
                let own = i == 0 || self.claim(i);
                if own && !self.run(i) {
                    return;
                }
            }
            for i in (0..self.tasks).rev() {
                if self.claim(i) && !self.run(i) {
                    return;
                }
            }
            return;
        }
        loop {
            let i = self.next.fetch_add(1, Ordering::Relaxed);
            if i >= self.tasks || !self.run(i) {
                return;
            }
        }
    }

    /// Claims task `i` of a pinned job; false if another participant has.
    fn claim(&self, i: usize) -> bool {
        let bit = 1u64 << (i % 64);
        self.claimed[i / 64].fetch_or(bit, Ordering::Relaxed) & bit == 0
    }

    /// Runs task `i`; on a panic records it, stops handing out tasks and returns false.
    fn run(&self, i: usize) -> bool {
        // SAFETY: `data` and `call` come from one `&F` in `Team::run`, which does not return
        // (so the closure stays borrowed and alive) until no thread is inside `work`.
        let r = catch_unwind(AssertUnwindSafe(|| unsafe { (self.call)(self.data, i) }));
        match r {
            Ok(()) => true,
            Err(p) => {
                self.next.store(self.tasks, Ordering::Relaxed);
                for c in &self.claimed {
                    c.store(u64::MAX, Ordering::Relaxed);
                }
                let mut slot = self.panic.lock().unwrap_or_else(|e| e.into_inner());
                slot.get_or_insert(p);
                false
            }
        }
    }
}

/// Calls the `F` behind `data` on task `i`.
///
/// # Safety
/// `data` must point to a live `F`.
unsafe fn trampoline<F: Fn(usize) + Sync>(data: *const (), i: usize) {
    // SAFETY: by the caller's contract.
    let f = unsafe { &*(data as *const F) };
    f(i)
}

impl Team {
    /// A team with no workers yet (they start on the first job that wants them), whose idle
    /// workers spin for `spin` before parking.
    pub fn new(spin: Duration) -> Team {
        Team {
            shared: Arc::new(Shared {
                job: AtomicPtr::new(std::ptr::null_mut()),
                epoch: AtomicU64::new(0),
                busy: AtomicBool::new(false),
                active: AtomicUsize::new(0),
                sleeping: AtomicUsize::new(0),
                lock: Mutex::new(()),
                wake: Condvar::new(),
                shutdown: AtomicBool::new(false),
                spin,
            }),
            handles: Mutex::new(Vec::new()),
            started: AtomicUsize::new(0),
        }
    }

    /// Runs `f(0)`, …, `f(tasks - 1)` on up to `width` threads: the calling one and up to
    /// `width - 1` of the team's workers. If the team is running another job, all tasks run on
    /// the calling thread. Returns when every task has finished; a panic in a task is re-raised
    /// here after the other threads have stopped working on the job.
    pub fn for_each<F: Fn(usize) + Sync>(&self, tasks: usize, width: usize, f: F) {
        self.run(tasks, width, false, f)
    }

    /// [`Team::for_each`], with task `t` pinned to the `t`-th participant when `pinned` (see
    /// [`for_each_pinned`]; `tasks ≤ MAX_PINNED`).
    fn run<F: Fn(usize) + Sync>(&self, tasks: usize, width: usize, pinned: bool, f: F) {
        debug_assert!(!pinned || tasks <= MAX_PINNED);
        let helpers = width.saturating_sub(1).min(tasks.saturating_sub(1)).min(MAX_WORKERS);
        if helpers == 0 || self.shared.busy.compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed).is_err() {
            (0..tasks).for_each(f);
            return;
        }
        let helpers = helpers.min(self.grow(helpers));
        if helpers == 0 {
            self.shared.busy.store(false, Ordering::Release);
            (0..tasks).for_each(f);
            return;
        }
        let job = Job {
            data: &f as *const F as *const (),
            call: trampoline::<F>,
            tasks,
            next: AtomicUsize::new(0),
            seats: AtomicUsize::new(helpers),
            pinned,
            width: helpers + 1,
            claimed: [AtomicU64::new(pinned as u64), AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0)],
            panic: Mutex::new(None),
            isa: Isa::current(),
        };
        let s = &*self.shared;
        s.job.store(&job as *const Job as *mut Job, Ordering::SeqCst);
        s.epoch.fetch_add(1, Ordering::SeqCst);
        if s.sleeping.load(Ordering::SeqCst) > 0 {
            let _g = s.lock.lock().unwrap_or_else(|e| e.into_inner());
            s.wake.notify_all();
        }
        job.work(0);
        // Every task is claimed; unpublish the job, then wait for the workers still inside it.
        // A worker that reads `job` after this store sees null and leaves it alone; one that
        // read it before is counted in `active` (incremented before its read, SeqCst).
        s.job.store(std::ptr::null_mut(), Ordering::SeqCst);
        let mut spins = 0u32;
        while s.active.load(Ordering::SeqCst) != 0 {
            spins += 1;
            if spins < 1 << 16 {
                std::hint::spin_loop();
            } else {
                // A worker preempted in the middle of a task: let it run.
                std::thread::yield_now();
            }
        }
        s.busy.store(false, Ordering::Release);
        let panic = job.panic.into_inner().unwrap_or_else(|e| e.into_inner());
        if let Some(p) = panic {
            resume_unwind(p);
        }
    }

    /// Starts workers until there are `want` (or as many as the system allows); returns how
    /// many there are.
    fn grow(&self, want: usize) -> usize {
        let have = self.started.load(Ordering::Acquire);
        if have >= want {
            return have;
        }
        let mut handles = self.handles.lock().unwrap_or_else(|e| e.into_inner());
        while handles.len() < want {
            let shared = self.shared.clone();
            // The epoch before the job that asked for this worker is published, so the worker
            // joins that job however late the thread starts.
            let seen = shared.epoch.load(Ordering::SeqCst);
            let spawned = std::thread::Builder::new()
                .name(format!("intra-op-{}", handles.len() + 1))
                .spawn({
                    let me = handles.len() + 1;
                    move || worker(&shared, seen, me)
                });
            match spawned {
                Ok(h) => handles.push(h),
                // Fewer threads than asked for: the jobs split across those there are.
                Err(_) => break,
            }
        }
        self.started.store(handles.len(), Ordering::Release);
        handles.len()
    }

    /// How many workers are parked (test hook: an idle team must not spin).
    #[cfg(test)]
    fn parked(&self) -> usize {
        self.shared.sleeping.load(Ordering::SeqCst)
    }

    #[cfg(test)]
    fn workers(&self) -> usize {
        self.started.load(Ordering::Acquire)
    }
}

impl Drop for Team {
    fn drop(&mut self) {
        let s = &*self.shared;
        s.shutdown.store(true, Ordering::SeqCst);
        s.epoch.fetch_add(1, Ordering::SeqCst);
        {
            let _g = s.lock.lock().unwrap_or_else(|e| e.into_inner());
            s.wake.notify_all();
        }
        let handles = std::mem::take(self.handles.get_mut().unwrap_or_else(|e| e.into_inner()));
        for h in handles {
            // A worker catches every task's panic, so it cannot have panicked itself.
            let _ = h.join();
        }
    }
}

/// A worker's loop: wait for an epoch after `seen` (spinning, then parked), join the published
/// job if it has a seat left (a pinned job only if the worker's index `me` is within its
/// width), repeat until shutdown.
fn worker(s: &Shared, mut seen: u64, me: usize) {
    loop {
        seen = wait_for_job(s, seen);
        if s.shutdown.load(Ordering::SeqCst) {
            return;
        }
        s.active.fetch_add(1, Ordering::SeqCst);
        let p = s.job.load(Ordering::SeqCst);
        if !p.is_null() {
            // SAFETY: the job stays alive until its caller sees `active` at zero after clearing
            // `job`; this worker is counted in `active` since before it read `p`.
            let job = unsafe { &*p };
            if !job.pinned || me < job.width {
                let seat = job.seats.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1));
                if seat.is_ok() {
                    crate::isa::with(job.isa, || job.work(me));
                }
            }
        }
        s.active.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Waits until the epoch differs from `seen` or the team shuts down: spins for the team's
/// budget, then parks. Returns the current epoch.
fn wait_for_job(s: &Shared, seen: u64) -> u64 {
    let start = Instant::now();
    let mut spins = 0u32;
    loop {
        let e = s.epoch.load(Ordering::SeqCst);
        if e != seen || s.shutdown.load(Ordering::Relaxed) {
            return e;
        }
        spins = spins.wrapping_add(1);
        if spins.is_multiple_of(128) && start.elapsed() >= s.spin {
            break;
        }
        std::hint::spin_loop();
    }
    let mut g = s.lock.lock().unwrap_or_else(|e| e.into_inner());
    // Announce before the last check: a publisher bumps the epoch and then reads `sleeping`
    // (both SeqCst), so either it sees this worker and notifies under the lock, or this check
    // sees its epoch.
    s.sleeping.fetch_add(1, Ordering::SeqCst);
    let e = loop {
        let e = s.epoch.load(Ordering::SeqCst);
        if e != seen || s.shutdown.load(Ordering::SeqCst) {
            break e;
        }
        g = s.wake.wait(g).unwrap_or_else(|e| e.into_inner());
    };
    s.sleeping.fetch_sub(1, Ordering::SeqCst);
    e
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU32;

    /// Sums of disjoint slices written by the tasks of one job.
    fn squares(team: &Team, n: usize, tasks: usize, width: usize) -> Vec<u64> {
        let out: Vec<AtomicU64> = (0..n).map(|_| AtomicU64::new(u64::MAX)).collect();
        team.for_each(tasks, width, |t| {
            let lo = n * t / tasks;
            for (i, o) in out[lo..n * (t + 1) / tasks].iter().enumerate() {
                let i = (lo + i) as u64;
                o.store(i * i, Ordering::Relaxed);
            }
        });
        out.into_iter().map(AtomicU64::into_inner).collect()
    }

    fn want(n: usize) -> Vec<u64> {
        (0..n as u64).map(|i| i * i).collect()
    }

    #[test]
    fn every_task_runs_once() {
        let team = Team::new(SPIN);
        for tasks in [0, 1, 2, 3, 7, 64, 1000] {
            let hits: Vec<AtomicU32> = (0..tasks).map(|_| AtomicU32::new(0)).collect();
            team.for_each(tasks, 3, |t| {
                hits[t].fetch_add(1, Ordering::Relaxed);
            });
            assert!(hits.iter().all(|h| h.load(Ordering::Relaxed) == 1), "{tasks} tasks");
        }
        assert_eq!(team.workers(), 2);
    }

    #[test]
    fn work_is_shared_with_the_workers() {
        // Tasks that wait for each other can only finish if two threads run them at once.
        let team = Team::new(SPIN);
        let arrived = AtomicUsize::new(0);
        team.for_each(2, 2, |_| {
            arrived.fetch_add(1, Ordering::SeqCst);
            let t = Instant::now();
            while arrived.load(Ordering::SeqCst) < 2 {
                assert!(t.elapsed() < Duration::from_secs(30), "the second task never ran concurrently");
                std::hint::spin_loop();
            }
        });
        let threads = Mutex::new(std::collections::HashSet::new());
        team.for_each(64, 2, |_| {
            threads.lock().unwrap().insert(std::thread::current().id());
            std::thread::sleep(Duration::from_millis(1));
        });
        assert_eq!(threads.into_inner().unwrap().len(), 2);
    }

    #[test]
    fn width_bounds_the_threads_used() {
        let team = Team::new(SPIN);
        // Start three workers, then ask for two threads only.
        let _ = squares(&team, 100, 8, 4);
        let threads = Mutex::new(std::collections::HashSet::new());
        let running = AtomicUsize::new(0);
        let most = AtomicUsize::new(0);
        team.for_each(32, 2, |_| {
            let now = running.fetch_add(1, Ordering::SeqCst) + 1;
            most.fetch_max(now, Ordering::SeqCst);
            threads.lock().unwrap().insert(std::thread::current().id());
            std::thread::sleep(Duration::from_millis(1));
            running.fetch_sub(1, Ordering::SeqCst);
        });
        assert!(most.into_inner() <= 2);
        assert!(threads.into_inner().unwrap().len() <= 2);
        team.for_each(5, 1, |_| assert!(!team.shared.busy.load(Ordering::SeqCst)));
    }

    #[test]
    fn results_do_not_depend_on_the_split() {
        let team = Team::new(SPIN);
        let n = 10_007;
        for (tasks, width) in [(1, 1), (2, 2), (3, 2), (16, 3), (97, 4), (n, 2)] {
            assert_eq!(squares(&team, n, tasks, width), want(n), "{tasks} tasks on {width} threads");
        }
    }

    #[test]
    fn failing_tasks_stop_only_themselves_and_an_error_is_returned() {
        let ran = AtomicUsize::new(0);
        let r = try_for_each(9, |t| {
            ran.fetch_add(1, Ordering::SeqCst);
            if t % 4 == 1 { Err(t) } else { Ok(()) }
        });
        assert!(matches!(r, Err(1 | 5)), "{r:?}");
        assert_eq!(ran.into_inner(), 9);
        assert_eq!(try_for_each::<usize>(5, |_| Ok(())), Ok(()));
    }

    #[test]
    fn concurrent_callers_all_finish_with_correct_results() {
        let team = Team::new(SPIN);
        std::thread::scope(|sc| {
            for c in 0..8 {
                let team = &team;
                sc.spawn(move || {
                    for r in 0..200 {
                        let n = 1 + (c * 131 + r * 17) % 5000;
                        let tasks = 1 + (c + r) % 13;
                        assert_eq!(squares(team, n, tasks, 3), want(n));
                    }
                });
            }
        });
    }

    #[test]
    fn nested_calls_run_inline_without_deadlock() {
        let team = Team::new(SPIN);
        let n = 40;
        let out: Vec<AtomicU64> = (0..n * n).map(|_| AtomicU64::new(0)).collect();
        team.for_each(n, 2, |i| {
            team.for_each(n, 2, |j| {
                out[i * n + j].store((i * n + j) as u64, Ordering::Relaxed);
            });
        });
        assert!(out.iter().enumerate().all(|(k, v)| v.load(Ordering::Relaxed) == k as u64));
        // The global team nests into itself the same way.
        let total = AtomicU64::new(0);
        global().for_each(8, 2, |_| global().for_each(8, 2, |_| _ = total.fetch_add(1, Ordering::Relaxed)));
        assert_eq!(total.into_inner(), 64);
    }

    #[test]
    fn a_panicking_task_is_reraised_on_the_caller_and_the_team_stays_usable() {
        let team = Team::new(SPIN);
        for bad in [0, 5, 63] {
            let ran = AtomicUsize::new(0);
            let r = catch_unwind(AssertUnwindSafe(|| {
                team.for_each(64, 2, |t| {
                    ran.fetch_add(1, Ordering::SeqCst);
                    if t == bad {
                        panic!("task {t} failed");
                    }
                })
            }));
            let msg = r.expect_err("the panic must reach the caller");
            assert_eq!(msg.downcast_ref::<String>().map(String::as_str), Some(format!("task {bad} failed").as_str()));
            assert!(ran.into_inner() <= 64);
            assert!(!team.shared.busy.load(Ordering::SeqCst));
            assert_eq!(team.shared.active.load(Ordering::SeqCst), 0);
            assert_eq!(squares(&team, 1000, 10, 2), want(1000));
        }
    }

    #[test]
    fn pinned_tasks_run_on_their_own_thread_and_all_run_once() {
        let team = Team::new(SPIN);
        // Start three workers; a pinned job of width 2 is the caller's and the first worker's.
        let _ = squares(&team, 100, 8, 4);
        let caller = std::thread::current().id();
        for _ in 0..20 {
            let started = AtomicBool::new(false);
            let names = Mutex::new(vec![None; 2]);
            team.run(2, 2, true, |t| {
                names.lock().unwrap()[t] = Some((std::thread::current().id(), std::thread::current().name().map(String::from)));
                if t == 0 {
                    // Task 1 can only be run by a worker while the caller is here.
                    let since = Instant::now();
                    while !started.load(Ordering::SeqCst) {
                        assert!(since.elapsed() < Duration::from_secs(30), "task 1 never ran");
                        std::hint::spin_loop();
                    }
                } else {
                    started.store(true, Ordering::SeqCst);
                }
            });
            let names = names.into_inner().unwrap();
            assert_eq!(names[0].as_ref().unwrap().0, caller);
            assert_eq!(names[1].as_ref().unwrap().1.as_deref(), Some("intra-op-1"));
        }
        // More tasks than threads: the first worker's run is tasks 2 and 3, so it starts at 2.
        for _ in 0..20 {
            let started = AtomicBool::new(false);
            let names = Mutex::new(vec![None; 4]);
            team.run(4, 2, true, |t| {
                names.lock().unwrap()[t] = Some(std::thread::current().name().map(String::from));
                if t == 0 {
                    let since = Instant::now();
                    while !started.load(Ordering::SeqCst) {
                        assert!(since.elapsed() < Duration::from_secs(30), "task 2 never ran");
                        std::hint::spin_loop();
                    }
                } else if t == 2 {
                    started.store(true, Ordering::SeqCst);
                }
            });
            let names = names.into_inner().unwrap();
            assert_eq!(names[2].as_ref().unwrap().as_deref(), Some("intra-op-1"));
            assert!(names.iter().all(Option::is_some));
        }
        // More tasks than threads, and more than the pinned bits: every task once.
        for (tasks, width) in [(3, 2), (7, 3), (64, 4), (65, 2), (MAX_PINNED, 4)] {
            let hits: Vec<AtomicU32> = (0..tasks).map(|_| AtomicU32::new(0)).collect();
            team.run(tasks, width, true, |t| _ = hits[t].fetch_add(1, Ordering::Relaxed));
            assert!(hits.iter().all(|h| h.load(Ordering::Relaxed) == 1), "{tasks} tasks on {width}");
        }
        let r = catch_unwind(AssertUnwindSafe(|| team.run(5, 2, true, |t| assert!(t != 3, "task 3 failed"))));
        assert!(r.is_err());
        assert!(!team.shared.busy.load(Ordering::SeqCst));
        assert_eq!(squares(&team, 1000, 10, 2), want(1000));
    }

    #[test]
    fn idle_workers_park_and_wake_for_the_next_job() {
        let team = Team::new(Duration::from_micros(100));
        assert_eq!(squares(&team, 1000, 8, 3), want(1000));
        let t = Instant::now();
        while team.parked() < 2 {
            assert!(t.elapsed() < Duration::from_secs(30), "workers still spinning");
            std::thread::sleep(Duration::from_millis(1));
        }
        // Parked workers are woken by the next job (and join it while it lasts).
        let threads = Mutex::new(std::collections::HashSet::new());
        team.for_each(200, 3, |_| {
            threads.lock().unwrap().insert(std::thread::current().id());
            std::thread::sleep(Duration::from_millis(1));
        });
        assert!(threads.into_inner().unwrap().len() > 1);
    }

    #[test]
    fn dropping_a_team_joins_its_workers() {
        let team = Team::new(Duration::from_secs(3600));
        assert_eq!(squares(&team, 100, 4, 4), want(100));
        let shared = team.shared.clone();
        assert_eq!(Arc::strong_count(&shared), 5);
        // Workers spinning (a long budget) and parked ones both stop.
        drop(team);
        assert_eq!(Arc::strong_count(&shared), 1);
    }
}
