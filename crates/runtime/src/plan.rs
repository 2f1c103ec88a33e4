//! The memory planner: intermediates whose lifetimes do not overlap share storage in one slab.
//!
//! Following Static Runtime, the planner manages the results of out-variant instructions (the
//! ops that can write into storage they are given) whose every reader is also an out-variant
//! instruction, so no planned value escapes into a list, a view or an output. Liveness is
//! measured on the linearized top-level block: a value lives from the instruction defining it
//! to the last instruction reading it (both inclusive, so an op never writes over its inputs).
//!
//! Sizes come from the first run (each candidate records the bytes it needed). [`assign_groups`]
//! then packs candidates into storage groups, largest first, each joining the first group
//! whose members it does not overlap; a group is as large as its largest member, and groups
//! sit at 64-byte-aligned offsets of one slab. Later runs hand each out-variant a tensor over
//! its region of the slab, reused from run to run: steady-state inference allocates nothing
//! for intermediates. A value that outgrows its group falls back to a fresh allocation and
//! the runtime re-plans with the larger size before the next run.

use std::sync::Arc;

use crate::interp::out::Meta;
use crate::tensor::{STORAGE_ALIGN, Storage, Tensor, contiguous_strides};

/// The lifetime of one planned value: indices of its first and last instruction (inclusive).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Interval {
    pub start: usize,
    pub end: usize,
}

impl Interval {
    pub fn overlaps(&self, other: &Interval) -> bool {
        self.start <= other.end && other.start <= self.end
    }
}

/// One storage group: values that never live at the same time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Group {
    /// Offset of the group in the slab, in bytes (a multiple of 64).
    pub offset: usize,
    /// Size of the group in bytes: its largest member's size.
    pub size: usize,
    /// Indices of the member values.
    pub members: Vec<usize>,
}

/// Where each planned value lives in the slab.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MemoryPlan {
    pub groups: Vec<Group>,
    /// For each value, its group (`None` for values of size zero, which need no storage).
    pub group_of: Vec<Option<usize>>,
    /// Total slab size in bytes.
    pub slab_bytes: usize,
    /// Sum of the values' sizes: the bytes that separate allocations would take.
    pub unshared_bytes: usize,
}

fn align(n: usize) -> usize {
    n.div_ceil(STORAGE_ALIGN) * STORAGE_ALIGN
}

/// Packs values with the given lifetimes and sizes (bytes) into storage groups.
pub fn assign_groups(intervals: &[Interval], sizes: &[usize]) -> MemoryPlan {
    let n = intervals.len().min(sizes.len());
    let mut order: Vec<usize> = (0..n).filter(|&i| sizes[i] > 0).collect();
    // Largest first; ties by start so the result is deterministic.
    order.sort_by(|&a, &b| sizes[b].cmp(&sizes[a]).then(intervals[a].start.cmp(&intervals[b].start)).then(a.cmp(&b)));
    let mut groups: Vec<Group> = Vec::new();
    let mut group_of = vec![None; n];
    for i in order {
        let fits = groups
            .iter()
            .position(|g| g.members.iter().all(|&m| !intervals[m].overlaps(&intervals[i])));
        let g = match fits {
            Some(g) => g,
            None => {
                groups.push(Group { offset: 0, size: 0, members: Vec::new() });
                groups.len() - 1
            }
        };
        groups[g].members.push(i);
        groups[g].size = groups[g].size.max(sizes[i]);
        group_of[i] = Some(g);
    }
    let mut offset = 0;
    for g in &mut groups {
        g.offset = offset;
        offset += align(g.size);
    }
    MemoryPlan { groups, group_of, slab_bytes: offset, unshared_bytes: sizes[..n].iter().sum() }
}

/// A runtime's planned storage for one specialization: the slab, each candidate's region,
/// and the tensors over those regions that are handed to out-variants run after run.
pub(crate) struct PlanState {
    plan: Option<Arc<MemoryPlan>>,
    regions: Vec<Option<Arc<Storage>>>,
    homes: Vec<Option<Tensor>>,
    /// The largest result each candidate has produced (dtype and shape of the last one).
    observed: Vec<Option<Meta>>,
    observed_bytes: Vec<usize>,
    /// Some candidate did not fit its group during the last run.
    outgrown: bool,
}

impl PlanState {
    pub fn new(candidates: usize) -> PlanState {
        PlanState {
            plan: None,
            regions: vec![None; candidates],
            homes: vec![None; candidates],
            observed: vec![None; candidates],
            observed_bytes: vec![0; candidates],
            outgrown: false,
        }
    }

    pub fn plan(&self) -> Option<&Arc<MemoryPlan>> {
        self.plan.as_ref()
    }

    /// Whether the next run should re-plan: no plan yet but sizes were seen, or a value outgrew its group.
    pub fn needs_plan(&self) -> bool {
        (self.plan.is_none() && self.observed_bytes.iter().any(|&b| b > 0)) || self.outgrown
    }

    /// Records a result the plan could not place.
    pub fn observe(&mut self, h: usize, meta: Meta) {
        if let Some(b) = self.observed_bytes.get_mut(h) {
            if meta.nbytes() > *b {
                *b = meta.nbytes();
            }
            self.observed[h] = Some(meta);
        }
        if self.plan.is_some() {
            self.outgrown = true;
        }
    }

    /// A planned tensor of the given dtype and shape for candidate `h`, if its region holds it.
    pub fn take_home(&mut self, h: usize, meta: &Meta) -> Option<Tensor> {
        self.plan.as_ref()?;
        let region = self.regions.get(h)?.as_ref()?;
        if region.nbytes() < meta.nbytes() {
            return None;
        }
        if let Some(t) = self.homes.get_mut(h)?.take() {
            // Reuse only when nothing else holds the storage (the home tensor and `regions`).
            if t.dtype() == meta.dtype && t.sizes() == meta.sizes() && Arc::strong_count(t.storage()) == 2 {
                return Some(t);
            }
            if Arc::strong_count(t.storage()) > 2 {
                // A view escaped: stop planning this value.
                self.regions[h] = None;
                self.outgrown = true;
                return None;
            }
        }
        let sizes = meta.sizes();
        Tensor::from_storage(region.clone(), meta.dtype, sizes, &contiguous_strides(sizes), 0).ok()
    }

    /// Returns a planned tensor at the end of its life.
    pub fn give_back(&mut self, h: usize, t: Tensor) {
        let Some(Some(region)) = self.regions.get(h) else { return };
        if Arc::ptr_eq(region, t.storage()) {
            if let Some(slot) = self.homes.get_mut(h) {
                *slot = Some(t);
            }
        }
    }

    /// Lays out a plan and allocates its slab; pre-creates the tensors of the observed shapes.
    pub fn install(&mut self, intervals: &[Interval], shared: Option<(Arc<MemoryPlan>, Vec<Option<Meta>>)>) {
        let (plan, metas) = match shared {
            Some((p, m)) => (p, m),
            None => {
                let sizes: Vec<usize> = self.observed_bytes.clone();
                (Arc::new(assign_groups(intervals, &sizes)), self.observed.clone())
            }
        };
        self.regions = vec![None; intervals.len()];
        self.homes = vec![None; intervals.len()];
        self.outgrown = false;
        if plan.slab_bytes > 0 {
            if let Ok(slab) = Storage::zeroed(plan.slab_bytes) {
                let slab = Arc::new(slab);
                for (h, g) in plan.group_of.iter().enumerate() {
                    let Some(g) = g.and_then(|g| plan.groups.get(g)) else { continue };
                    if let Ok(r) = Storage::region(&slab, g.offset, g.size) {
                        self.regions[h] = Some(Arc::new(r));
                    }
                }
            }
        }
        for (h, m) in metas.iter().enumerate() {
            if let (Some(m), Some(Some(region))) = (m, self.regions.get(h)) {
                if region.nbytes() >= m.nbytes() {
                    let sizes = m.sizes();
                    self.homes[h] =
                        Tensor::from_storage(region.clone(), m.dtype, sizes, &contiguous_strides(sizes), 0).ok();
                }
            }
        }
        for (h, m) in metas.into_iter().enumerate() {
            if let Some(m) = m {
                if let Some(b) = self.observed_bytes.get_mut(h) {
                    *b = (*b).max(m.nbytes());
                }
                if let Some(o) = self.observed.get_mut(h) {
                    *o = Some(m);
                }
            }
        }
        self.plan = Some(plan);
    }

    /// The plan and observed shapes, to share with other runtimes.
    pub fn snapshot(&self) -> Option<(Arc<MemoryPlan>, Vec<Option<Meta>>)> {
        Some((self.plan.clone()?, self.observed.clone()))
    }
}
