//! A thread-safe cache of compiled kernels keyed by group and input spec, with statistics.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::error::JitError;
use crate::group::Group;
use crate::kernel::Kernel;
use crate::spec::KernelSpec;

/// Counters of a [`KernelCache`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheStats {
    pub hits: u64,
    pub misses: u64,
    /// Kernels compiled successfully and held by the cache.
    pub kernels: usize,
    /// Specializations that failed to compile (remembered so they are not retried).
    pub failures: usize,
    pub total_compile_time: Duration,
}

type Key = (String, KernelSpec);

/// Compiled kernels by (group fingerprint, spec). Failures are cached too, so a group the JIT
/// cannot compile costs one attempt per spec.
#[derive(Default)]
pub struct KernelCache {
    map: Mutex<HashMap<Key, Result<Arc<Kernel>, JitError>>>,
    hits: AtomicU64,
    misses: AtomicU64,
}

impl std::fmt::Debug for KernelCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "KernelCache({:?})", self.stats())
    }
}

impl KernelCache {
    pub fn new() -> KernelCache {
        KernelCache::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Key, Result<Arc<Kernel>, JitError>>> {
        match self.map.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        }
    }

    /// The kernel of `group` for `spec`, compiling it on a miss.
    pub fn get_or_compile(&self, group: &Group, spec: &KernelSpec) -> Result<Arc<Kernel>, JitError> {
        let key = (group.key.clone(), spec.clone());
        if let Some(r) = self.lock().get(&key) {
            self.hits.fetch_add(1, Ordering::Relaxed);
            return r.clone();
        }
        self.misses.fetch_add(1, Ordering::Relaxed);
        // Compile outside the lock; a concurrent miss on the same key compiles twice and the
        // first insertion wins.
        let r = group.compile(spec).map(Arc::new);
        self.lock().entry(key).or_insert(r).clone()
    }

    /// Counts a hit served outside the map (a group's own list of its specializations).
    pub fn record_hit(&self) {
        self.hits.fetch_add(1, Ordering::Relaxed);
    }

    pub fn stats(&self) -> CacheStats {
        let map = self.lock();
        let mut s = CacheStats {
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
            ..CacheStats::default()
        };
        for r in map.values() {
            match r {
                Ok(k) => {
                    s.kernels += 1;
                    s.total_compile_time += k.compile_time();
                }
                Err(_) => s.failures += 1,
            }
        }
        s
    }

    /// Compile time of every cached kernel, with its spec, in the order they were compiled
    /// (the first is the one that met Cranelift's code and data cold).
    pub fn compile_times(&self) -> Vec<(KernelSpec, Duration)> {
        let map = self.lock();
        let mut kernels: Vec<(&KernelSpec, &Arc<Kernel>)> = map.iter().filter_map(|((_, spec), r)| r.as_ref().ok().map(|k| (spec, k))).collect();
        kernels.sort_by_key(|(_, k)| k.compiled_at());
        kernels.into_iter().map(|(spec, k)| (spec.clone(), k.compile_time())).collect()
    }

    /// Drops every cached kernel (and the counters).
    pub fn clear(&self) {
        self.lock().clear();
        self.hits.store(0, Ordering::Relaxed);
        self.misses.store(0, Ordering::Relaxed);
    }
}
