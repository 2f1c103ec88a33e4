//! Loop fission of heavy vector bodies: where to cut a body into phases.
//!
//! A body with several inline transcendental functions is one long dependency chain per
//! vector (range reduction, polynomial, division, then the next function): the out-of-order
//! core cannot overlap consecutive vectors because one iteration fills its scheduler window,
//! so the loop runs at the chain's latency rather than at the instruction throughput. The
//! fissioned body processes a block of up to [`BLOCK_VECTORS`] vectors in phases, each a short
//! loop over the block: a phase computes one cut node for every vector of the block and
//! writes it to a scratch buffer on the stack (L1-resident), and later phases read it from
//! there. Iterations of a short loop are independent, so many of them are in flight at once.
//!
//! The cuts are the transcendental functions' results (and `clamp(exp(x), max=c)` rather
//! than its `exp`, so that the capped `exp` stays one unit). A phase computes its cut from
//! the kernel's inputs and the earlier cuts, recomputing any cheap node it shares with another
//! phase; the last phase computes the outputs.

use crate::group::{Binary, Graph, NodeId, NodeKind, Unary};

/// Vectors per block of a fissioned body: 64 × 16 bytes of scratch per buffer.
pub(crate) const BLOCK_VECTORS: i64 = 64;

/// Kernels of fewer elements are not fissioned when a cut expands inline: the phases' extra
/// loops and scratch traffic cost a third more compile time (~0.3 ms for the LSTM cell's
/// gates), which only a kernel that runs for about a millisecond per call earns back on its
/// first call.
pub(crate) const MIN_ELEMENTS: usize = 1 << 18;

/// Kernels of fewer elements are not fissioned when every cut calls a block routine. The
/// routines take the transcendental functions out of the code Cranelift compiles, and what
/// remains (below [`MIN_ELEMENTS`]) is compiled with the single-pass register allocator (see
/// `kernel::isa_for`): the LSTM cell's gates (32Ki elements) then compile in two thirds of the
/// time of their inline body and run faster. Below a few blocks the phases' loops would be
/// mostly overhead.
pub(crate) const MIN_ELEMENTS_ROUTINES: usize = 1 << 12;

/// The phases of a fissioned body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Plan {
    /// The cut nodes in the order their phases run (increasing node ids: operands come first).
    pub cuts: Vec<NodeId>,
    /// Per phase (one per cut, then the outputs' phase): the indices in `cuts` of the cuts it
    /// reads from scratch.
    pub reads: Vec<Vec<usize>>,
}

/// Whether `u` is expanded inline into a long dependency chain (f32 transcendentals).
pub(crate) fn transcendental(u: Unary) -> bool {
    use Unary::*;
    matches!(u, Exp | Log | Tanh | Sigmoid | Erf | Sin | Cos | GeluErf | GeluTanh | Silu)
}

/// The fission plan of the live part of `g` (`multi_use` as `codegen::multi_use`), or `None`
/// when it has fewer than two transcendental functions (a single chain is short enough for
/// consecutive iterations to overlap). Whether a kernel's size earns the phases is the
/// caller's decision ([`MIN_ELEMENTS`], [`MIN_ELEMENTS_ROUTINES`]).
pub(crate) fn plan(g: &Graph, live: &[bool], multi_use: &[bool]) -> Option<Plan> {
    let n = g.nodes.len();
    let mut cut = vec![false; n];
    for (i, node) in g.nodes.iter().enumerate() {
        if live[i]
            && node.dtype == ir::DType::F32
            && let NodeKind::Unary(u, _) = node.kind
        {
            cut[i] = transcendental(u);
        }
    }
    // `clamp(exp(x), max=c)` with `exp` used only there is emitted as one capped `exp`.
    for (i, node) in g.nodes.iter().enumerate() {
        if let NodeKind::Binary(Binary::ClampHi, e, c) = node.kind
            && live[i]
            && cut[e]
            && !multi_use[e]
            && matches!(g.nodes[e].kind, NodeKind::Unary(Unary::Exp, _))
            && matches!(g.nodes[c].kind, NodeKind::Const(_))
        {
            cut[e] = false;
            cut[i] = true;
        }
    }
    let cuts: Vec<NodeId> = (0..n).filter(|&i| cut[i]).collect();
    if cuts.len() < 2 {
        return None;
    }
    let index: Vec<Option<usize>> = {
        let mut v = vec![None; n];
        for (k, &c) in cuts.iter().enumerate() {
            v[c] = Some(k);
        }
        v
    };
    let mut reads = Vec::with_capacity(cuts.len() + 1);
    for &c in &cuts {
        let mut roots = Vec::new();
        g.nodes[c].kind.for_each_operand(|a| roots.push(a));
        reads.push(frontier(g, roots, &index));
    }
    reads.push(frontier(g, g.outputs.clone(), &index));
    Some(Plan { cuts, reads })
}

/// The cuts reached from `roots` through operands, stopping at cuts (sorted indices).
fn frontier(g: &Graph, roots: Vec<NodeId>, index: &[Option<usize>]) -> Vec<usize> {
    let mut seen = vec![false; g.nodes.len()];
    let mut stack = roots;
    let mut out = Vec::new();
    while let Some(i) = stack.pop() {
        if std::mem::replace(&mut seen[i], true) {
            continue;
        }
        match index[i] {
            Some(k) => out.push(k),
            None => g.nodes[i].kind.for_each_operand(|a| stack.push(a)),
        }
    }
    out.sort_unstable();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codegen::multi_use;
    use crate::group::{Const, Node};
    use ir::DType;

    fn graph(kinds: Vec<NodeKind>, outputs: Vec<NodeId>) -> Graph {
        let nodes = kinds.into_iter().map(|kind| Node { kind, dtype: DType::F32, shape: vec![8], op: "test" }).collect();
        Graph { nodes, outputs }
    }

    fn plan_of(g: &Graph) -> Option<Plan> {
        plan(g, &vec![true; g.nodes.len()], &multi_use(g))
    }

    #[test]
    fn one_transcendental_is_not_fissioned() {
        let g = graph(vec![NodeKind::Input(0), NodeKind::Unary(Unary::Sigmoid, 0), NodeKind::Binary(Binary::Mul, 1, 0)], vec![2]);
        assert_eq!(plan_of(&g), None);
    }

    #[test]
    fn cuts_at_transcendentals_and_at_the_clamp_of_a_capped_exp() {
        // sigmoid(x) * tanh(x) + clamp(exp(x), max=10)
        let g = graph(
            vec![
                NodeKind::Input(0),
                NodeKind::Unary(Unary::Sigmoid, 0),
                NodeKind::Unary(Unary::Tanh, 0),
                NodeKind::Binary(Binary::Mul, 1, 2),
                NodeKind::Unary(Unary::Exp, 0),
                NodeKind::Const(Const::Float(10.0)),
                NodeKind::Binary(Binary::ClampHi, 4, 5),
                NodeKind::Binary(Binary::Add, 3, 6),
            ],
            vec![7],
        );
        let p = plan_of(&g).unwrap();
        assert_eq!(p.cuts, vec![1, 2, 6]);
        assert_eq!(p.reads, vec![vec![], vec![], vec![], vec![0, 1, 2]]);
    }

    #[test]
    fn a_shared_exp_stays_a_cut_and_phases_read_earlier_cuts() {
        // e = exp(x); tanh(e) and clamp(e, max=10) both read it.
        let g = graph(
            vec![
                NodeKind::Input(0),
                NodeKind::Unary(Unary::Exp, 0),
                NodeKind::Unary(Unary::Tanh, 1),
                NodeKind::Const(Const::Float(10.0)),
                NodeKind::Binary(Binary::ClampHi, 1, 3),
                NodeKind::Binary(Binary::Add, 2, 4),
            ],
            vec![5, 2],
        );
        let p = plan_of(&g).unwrap();
        assert_eq!(p.cuts, vec![1, 2]);
        assert_eq!(p.reads, vec![vec![], vec![0], vec![0, 1]]);
    }

    #[test]
    fn dead_nodes_are_not_cut() {
        let g = graph(
            vec![NodeKind::Input(0), NodeKind::Unary(Unary::Tanh, 0), NodeKind::Unary(Unary::Exp, 0), NodeKind::Unary(Unary::Erf, 0)],
            vec![1, 3],
        );
        let live = vec![true, true, false, true];
        let p = plan(&g, &live, &multi_use(&g)).unwrap();
        assert_eq!(p.cuts, vec![1, 3]);
    }
}
