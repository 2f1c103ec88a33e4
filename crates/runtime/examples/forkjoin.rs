//! What handing half of one op's work to a second thread costs: a job of two tasks of 10 µs of
//! busy work each (20 µs on one thread, 10 µs plus the hand-over on two), on the intra-op team
//! (`runtime::parallel`) and as `rayon::join` on a worker of a 2-thread pool (how kernels split
//! before the team), back to back (workers awake) and after 1 ms idle (the team's workers parked,
//! rayon's asleep) (`cargo run --release -p runtime --example forkjoin`). Prints the median and
//! the 10th percentile over 2 001 jobs.

use std::hint::black_box;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

fn time(pause: Option<Duration>, mut job: impl FnMut()) -> (f64, f64) {
    let mut ts = Vec::with_capacity(2001);
    for _ in 0..2001 {
        if let Some(p) = pause {
            std::thread::sleep(p);
        }
        let t = Instant::now();
        job();
        ts.push(t.elapsed().as_secs_f64() * 1e6);
    }
    ts.sort_by(f64::total_cmp);
    (ts[1000], ts[200])
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build()?;
    let hits = AtomicUsize::new(0);
    let task = |t: usize| {
        let start = Instant::now();
        while start.elapsed() < Duration::from_micros(10) {
            hits.fetch_add(black_box(t), Ordering::Relaxed);
        }
    };
    println!("| job of 2 × 10 µs tasks | awake: median (p10) µs | after 1 ms idle: median (p10) µs |");
    println!("| --- | --- | --- |");
    let team = runtime::parallel::Team::new(runtime::parallel::SPIN);
    let (a, a10) = time(None, || team.for_each(2, 2, task));
    let (p, p10) = time(Some(Duration::from_millis(1)), || team.for_each(2, 2, task));
    println!("| intra-op team | {a:.2} ({a10:.2}) | {p:.2} ({p10:.2}) |");
    // As the kernels used rayon: the calls come from a worker of the pool.
    let (a, a10) = pool.install(|| time(None, || _ = rayon::join(|| task(0), || task(1))));
    let (p, p10) = pool.install(|| time(Some(Duration::from_millis(1)), || _ = rayon::join(|| task(0), || task(1))));
    println!("| rayon::join on a pool worker | {a:.2} ({a10:.2}) | {p:.2} ({p10:.2}) |");
    black_box(hits.into_inner());
    Ok(())
}
