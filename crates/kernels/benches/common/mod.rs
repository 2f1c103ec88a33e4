//! What the kernel benches share.

use std::time::Instant;

/// Median and best seconds per call of `f`, run for about `budget` seconds.
pub fn time(budget: f64, mut f: impl FnMut()) -> (f64, f64) {
    let start = Instant::now();
    let mut warm = 0;
    while warm < 3 || start.elapsed().as_secs_f64() < budget / 10.0 {
        f();
        warm += 1;
    }
    let per = start.elapsed().as_secs_f64() / warm as f64;
    let calls = ((budget / per) as usize).clamp(5, 100_000);
    let mut times: Vec<f64> = (0..calls)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64()
        })
        .collect();
    times.sort_by(f64::total_cmp);
    (times[times.len() / 2], times[0])
}
