//! A counting global allocator for allocation tests: each test binary installs it with
//! `#[global_allocator] static GLOBAL: Counting = Counting;` and measures with [`count`].

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

pub struct Counting;

thread_local! {
    static ACTIVE: Cell<bool> = const { Cell::new(false) };
    static ALLOCS: Cell<usize> = const { Cell::new(0) };
    static FREES: Cell<usize> = const { Cell::new(0) };
}

fn bump() {
    if ACTIVE.with(Cell::get) {
        ALLOCS.with(|a| a.set(a.get() + 1));
    }
}

fn bump_free() {
    if ACTIVE.with(Cell::get) {
        FREES.with(|a| a.set(a.get() + 1));
    }
}

// SAFETY: every call forwards to the system allocator unchanged; counting is thread-local.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        bump();
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        bump();
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // An allocation of the new block and a free of the old one.
        bump();
        bump_free();
        unsafe { System.realloc(ptr, layout, new_size) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        bump_free();
        unsafe { System.dealloc(ptr, layout) }
    }
}

/// Runs `f` with counting on (counts nest: an inner count leaves the outer one counting) and
/// returns its result with the allocations and the frees this thread made meanwhile.
fn counted<R>(f: impl FnOnce() -> R) -> (R, usize, usize) {
    let (allocs, frees) = (ALLOCS.with(Cell::get), FREES.with(Cell::get));
    let was = ACTIVE.with(|a| a.replace(true));
    let r = f();
    ACTIVE.with(|a| a.set(was));
    (r, ALLOCS.with(Cell::get) - allocs, FREES.with(Cell::get) - frees)
}

/// Runs `f` and returns its result with the allocations this thread made meanwhile.
pub fn count<R>(f: impl FnOnce() -> R) -> (R, usize) {
    let (r, allocs, _) = counted(f);
    (r, allocs)
}

/// Runs `f` and returns its result with the allocations this thread made meanwhile minus the
/// ones it freed: zero for work that leaves nothing behind.
#[allow(dead_code)]
pub fn net<R>(f: impl FnOnce() -> R) -> (R, isize) {
    let (r, allocs, frees) = counted(f);
    (r, allocs as isize - frees as isize)
}
