//! Running many tests on a pool of worker threads and counting their outcomes.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;

use crate::config::Config;
use crate::runner::{Outcome, TestResult, run_test};

/// How many tests ended with each outcome.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Summary {
    pub counts: BTreeMap<Outcome, usize>,
}

impl Summary {
    /// Counts one result.
    pub fn record(&mut self, result: &TestResult) {
        *self.counts.entry(result.outcome).or_default() += 1;
    }

    /// The number of tests with `outcome`.
    pub fn count(&self, outcome: Outcome) -> usize {
        self.counts.get(&outcome).copied().unwrap_or(0)
    }

    /// The number of tests whose outcome fails the run.
    pub fn failures(&self) -> usize {
        self.counts
            .iter()
            .filter(|(o, _)| o.is_failure())
            .map(|(_, n)| n)
            .sum()
    }
}

/// Runs `tests` on `workers` threads (at least one), calling `on_result` on the calling
/// thread as each test finishes, in completion order.
pub fn run_tests(
    config: &Config,
    tests: &[PathBuf],
    workers: usize,
    mut on_result: impl FnMut(&TestResult),
) -> Summary {
    let next = AtomicUsize::new(0);
    let (sender, receiver) = mpsc::channel();
    let mut summary = Summary::default();
    std::thread::scope(|scope| {
        for _ in 0..workers.clamp(1, tests.len().max(1)) {
            let sender = sender.clone();
            let next = &next;
            scope.spawn(move || {
                while let Some(test) = tests.get(next.fetch_add(1, Ordering::Relaxed)) {
                    if sender.send(run_test(config, test)).is_err() {
                        break;
                    }
                }
            });
        }
        drop(sender);
        for result in receiver {
            summary.record(&result);
            on_result(&result);
        }
    });
    summary
}
