//! The cost model and extraction: choosing one e-node per needed e-class so that the DAG
//! reachable from the roots is cheapest, with shared subterms counted once.

use dialect_prim::kinds::{Kind as PK, TypeExt as _};
use crate::analysis::Graph;
use crate::lang::Node;
use egg::{Id, Language};
use dialect_aten::op;
use ir::{Dim, OpRef, Type};
use std::collections::{HashMap, HashSet};

/// Cost of an e-node that cannot be written back (its type is unknown).
pub const INFINITE: f64 = f64::INFINITY;

/// The largest tree cost kept (see [`best_per_class`]).
const COST_CAP: f64 = 1e200;

/// Ops that only make a new view of their operand's storage: metadata, no data movement.
pub const VIEWS: &[OpRef] = &[
    op::T, op::PERMUTE, op::VIEW, op::RESHAPE, op::EXPAND, op::EXPAND_AS, op::TRANSPOSE_INT, op::ALIAS, op::SQUEEZE_DIM,
    op::SQUEEZE_DIMS, op::UNSQUEEZE, op::SLICE_TENSOR, op::SELECT_INT, op::CHUNK, op::SPLIT_TENSOR, op::SPLIT_WITH_SIZES,
    op::UNFLATTEN_INT, op::FLATTEN_USING_INTS, op::SQUEEZE, op::_UNSAFE_VIEW, op::NARROW,
];

/// The prim ops that only build or take apart lists and tuples of values: no data movement.
const PRIM_VIEWS: &[&str] = &[
    dialect_prim::LIST_UNPACK,
    dialect_prim::LIST_CONSTRUCT,
    dialect_prim::TUPLE_CONSTRUCT,
    dialect_prim::TUPLE_UNPACK,
    dialect_prim::TUPLE_INDEX,
];

/// Whether the op named `name` only makes a view ([`VIEWS`]) or moves values without data.
pub fn is_view(name: &str) -> bool {
    VIEWS.iter().any(|o| o.is(name)) || PRIM_VIEWS.contains(&name)
}

/// Relative compute per element: 1 for simple arithmetic, more for division and transcendentals.
pub fn compute_weight(name: &str) -> f64 {
    COMPUTE_WEIGHTS.iter().find(|(ops, _)| ops.iter().any(|o| o.is(name))).map_or(1.0, |&(_, w)| w)
}

/// The ops that cost more than simple arithmetic per element, by weight.
const COMPUTE_WEIGHTS: &[(&[OpRef], f64)] = &[
    (&[op::DIV_TENSOR, op::RECIPROCAL, op::SQRT, op::RSQRT, op::REMAINDER_TENSOR, op::FMOD_TENSOR], 4.0),
    (
        &[
            op::EXP, op::LOG, op::TANH, op::SIGMOID, op::GELU, op::SILU, op::ERF, op::SIN, op::COS, op::POW_TENSOR_SCALAR,
            op::POW_TENSOR_TENSOR, op::LOG1P, op::EXPM1,
        ],
        8.0,
    ),
];

/// Elements assumed for a dimension whose size is not known at compile time.
const UNKNOWN_DIM: f64 = 64.0;

/// (elements, bytes per element) of a value, estimated where sizes are symbolic.
pub fn size_of(t: &Type) -> (f64, f64) {
    match t.pk() {
        PK::Tensor(tt) => {
            let elems = match &tt.shape {
                Some(dims) => dims.iter().map(|d| if let Dim::Static(n) = d { *n as f64 } else { UNKNOWN_DIM }).product(),
                None => UNKNOWN_DIM * UNKNOWN_DIM,
            };
            (elems, tt.dtype.map_or(4.0, |d| d.size_bytes() as f64))
        }
        PK::List(e) => {
            let (n, s) = size_of(e);
            (n * 4.0, s)
        }
        PK::Tuple(items) => items.iter().map(size_of).fold((0.0, 1.0), |(n, _), (m, s)| (n + m, s)),
        _ => (1.0, 8.0),
    }
}

/// Fixed cost of launching one op, so fewer ops win among equal traffic.
const OP_OVERHEAD: f64 = 16.0;

/// The cost of one e-node of class `class`: bytes written and read (a broadcast operand reads
/// only its own elements) plus weighted element operations. Views cost only the overhead;
/// leaves and projections are free; constants cost one op.
pub fn node_cost(g: &Graph, class: Id, n: &Node) -> f64 {
    let out = g[class].data.ty.as_ref().map(size_of);
    let name = if let Node::Op { name, .. } = n { name.as_str() } else { "" };
    let args = n.children().iter().map(|&a| g[a].data.ty.as_ref().map(size_of));
    cost_with(n, out, (is_view(name), compute_weight(name)), args)
}

/// [`node_cost`] from the sizes of the class's value (`out`, `None`: type unknown) and of the
/// operands' values (`args`, in order), with the op's (view, compute weight) already looked up.
fn cost_with(n: &Node, out: Option<(f64, f64)>, (view, weight): (bool, f64), args: impl Iterator<Item = Option<(f64, f64)>>) -> f64 {
    match n {
        Node::Leaf(_) | Node::Proj { .. } => 0.0,
        Node::Const { .. } => 1.0,
        Node::Op { .. } => {
            let Some((elems, size)) = out else { return INFINITE };
            if view {
                return OP_OVERHEAD;
            }
            let mut cost = OP_OVERHEAD + elems * size + elems * weight;
            for a in args {
                let (e, s) = a.unwrap_or((elems, size));
                cost += e * s;
            }
            cost
        }
    }
}

/// The chosen e-node of each class needed by the roots.
#[derive(Clone, Debug, Default)]
pub struct Choice {
    pub nodes: HashMap<Id, Node>,
    /// Total cost of the DAG, each chosen class counted once.
    pub cost: f64,
    /// How the choice was made: `tree`, `greedy-dag`, `ilp (optimal)`, `ilp (time limit)`, or
    /// `greedy-dag (ilp: why it was not used)`.
    pub method: String,
}

/// Extraction strategies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Extractor {
    /// Cheapest tree per class (shared subterms counted once per use).
    Tree,
    /// Greedy DAG-aware: starts from the tree choice and re-chooses with the classes already
    /// needed counted as free, keeping the cheapest acyclic DAG.
    GreedyDag,
    /// Exact: an integer linear program over the classes the roots may need (cargo feature
    /// `ilp`, CBC), solved within `timeout`; the greedy DAG is kept when the solver finds
    /// nothing cheaper in time, fails, or the crate was built without the feature.
    Ilp { timeout: std::time::Duration },
}

/// Whether this build has exact (ILP) extraction.
pub const HAS_ILP: bool = cfg!(feature = "ilp");

/// The e-graph flattened for extraction: classes numbered densely (in order of their ids), the
/// e-nodes of class `c` at `node_start[c]..node_start[c + 1]`, each with its cost and its
/// operands' classes (`kids[kid_start[n]..kid_start[n + 1]]`). Every pass of the extraction
/// walks these arrays instead of looking classes up in hash maps and copying e-nodes.
struct Flat {
    ids: Vec<Id>,
    /// Dense index of each class by `usize::from(id)` (`NONE` for ids that are not canonical).
    index: Vec<u32>,
    node_start: Vec<u32>,
    cost: Vec<f64>,
    kid_start: Vec<u32>,
    kids: Vec<u32>,
}

/// No node / no class.
const NONE: u32 = u32::MAX;

impl Flat {
    fn new(g: &Graph, prefer: &HashSet<Node>) -> Flat {
        // The classes are read once each, in id order, through references taken in the order
        // they sit in memory, instead of by a hash lookup per class and per operand.
        let mut classes: Vec<&egg::EClass<Node, crate::analysis::Data>> = g.classes().collect();
        classes.sort_unstable_by_key(|c| c.id);
        let ids: Vec<Id> = classes.iter().map(|c| c.id).collect();
        let max = ids.iter().map(|&i| usize::from(i)).max().map_or(0, |m| m + 1);
        let mut index = vec![NONE; max];
        for (i, &id) in ids.iter().enumerate() {
            index[usize::from(id)] = i as u32;
        }
        // Each class's value size, and each op name's (view, compute weight).
        let sizes: Vec<Option<(f64, f64)>> = classes.iter().map(|c| c.data.ty.as_ref().map(size_of)).collect();
        let mut ops: HashMap<egg::Symbol, (bool, f64)> = HashMap::new();
        let mut f = Flat {
            ids,
            index,
            node_start: Vec::with_capacity(g.number_of_classes() + 1),
            cost: Vec::with_capacity(g.total_size()),
            kid_start: Vec::with_capacity(g.total_size() + 1),
            kids: Vec::with_capacity(2 * g.total_size()),
        };
        for (i, class) in classes.iter().enumerate() {
            f.node_start.push(f.cost.len() as u32);
            for n in &class.nodes {
                let own = matches!(n, Node::Leaf(_) | Node::Proj { .. }) || prefer.contains(n);
                let op = match n {
                    Node::Op { name, .. } => *ops.entry(*name).or_insert_with(|| (is_view(name.as_str()), compute_weight(name.as_str()))),
                    _ => (false, 1.0),
                };
                f.kid_start.push(f.kids.len() as u32);
                for &k in n.children() {
                    let k = f.index.get(usize::from(g.find(k))).copied().unwrap_or(NONE);
                    f.kids.push(k);
                }
                let kids = &f.kids[*f.kid_start.last().unwrap_or(&0) as usize..];
                let cost = cost_with(n, sizes[i], op, kids.iter().map(|&k| sizes.get(k as usize).copied().flatten()));
                f.cost.push(cost + if own { 0.0 } else { 0.01 });
            }
        }
        f.node_start.push(f.cost.len() as u32);
        f.kid_start.push(f.kids.len() as u32);
        f
    }

    fn class(&self, id: Id) -> u32 {
        self.index.get(usize::from(id)).copied().unwrap_or(NONE)
    }

    fn nodes(&self, c: usize) -> std::ops::Range<usize> {
        self.node_start[c] as usize..self.node_start[c + 1] as usize
    }

    fn kids(&self, n: usize) -> &[u32] {
        &self.kids[self.kid_start[n] as usize..self.kid_start[n + 1] as usize]
    }

    /// The e-node `n` (a flat index) of class `c`, as stored in the e-graph.
    fn node<'g>(&self, g: &'g Graph, c: usize, n: usize) -> &'g Node {
        &g[self.ids[c]].nodes[n - self.node_start[c] as usize]
    }
}

/// Best (cost, flat node) per class, where `free` classes cost nothing to their users
/// (`(INFINITE, NONE)` for classes without a finite choice).
fn best_per_class(f: &Flat, free: &[bool]) -> Vec<(f64, u32)> {
    let mut best: Vec<(f64, u32)> = vec![(INFINITE, NONE); f.ids.len()];
    loop {
        let mut changed = false;
        for c in 0..f.ids.len() {
            for n in f.nodes(c) {
                let mut total = f.cost[n];
                for &k in f.kids(n) {
                    let Some(&(kc, kn)) = best.get(k as usize) else {
                        total = INFINITE;
                        break;
                    };
                    if free[k as usize] {
                        continue;
                    }
                    if kn == NONE {
                        total = INFINITE;
                        break;
                    }
                    total += kc;
                }
                if !total.is_finite() {
                    continue;
                }
                // Tree costs count a shared subterm once per use, so they grow exponentially
                // with the depth of a DAG; capped, they stay comparable where they matter and
                // never overflow into "not extractable".
                let total = total.min(COST_CAP);
                if best[c].1 == NONE || total < best[c].0 {
                    best[c] = (total, n as u32);
                    changed = true;
                }
            }
        }
        if !changed {
            return best;
        }
    }
}

/// The DAG of a choice (a flat node per class) from the roots: its cost and the classes it
/// needs, or `None` when it is cyclic or incomplete.
fn dag_cost(f: &Flat, roots: &[u32], choice: &[u32]) -> Option<(f64, Vec<bool>)> {
    // Iterative DFS with colours: 1 = on the stack, 2 = done.
    let mut colour = vec![0u8; f.ids.len()];
    let mut total = 0.0;
    for &r in roots {
        let r = r as usize;
        if *colour.get(r)? == 2 {
            continue;
        }
        colour[r] = 1;
        let mut stack: Vec<(usize, usize)> = vec![(r, 0)];
        while let Some(&mut (c, ref mut next)) = stack.last_mut() {
            let node = *choice.get(c)?;
            if node == NONE {
                return None;
            }
            let kids = f.kids(node as usize);
            if *next < kids.len() {
                let k = kids[*next] as usize;
                *next += 1;
                match *colour.get(k)? {
                    1 => return None,
                    2 => {}
                    _ => {
                        colour[k] = 1;
                        stack.push((k, 0));
                    }
                }
            } else {
                total += f.cost[node as usize];
                colour[c] = 2;
                stack.pop();
            }
        }
    }
    Some((total, colour.into_iter().map(|c| c == 2).collect()))
}

/// Chooses the e-nodes for `roots`.
///
/// Nodes of `prefer` (the input program's own, with canonical operands) win ties, so rules
/// that do not lower the cost leave the program as it was.
pub fn extract(g: &Graph, roots: &[Id], how: Extractor, prefer: &HashSet<Node>) -> Option<Choice> {
    let f = Flat::new(g, prefer);
    let root_classes: Vec<u32> = roots.iter().map(|&r| f.class(g.find(r))).collect();
    if root_classes.contains(&NONE) {
        return None;
    }
    let tree = best_per_class(&f, &vec![false; f.ids.len()]);
    let mut choice: Vec<u32> = tree.iter().map(|&(_, n)| n).collect();
    let (mut cost, mut needed) = dag_cost(&f, &root_classes, &choice)?;
    if how != Extractor::Tree {
        for _ in 0..3 {
            let best = best_per_class(&f, &needed);
            let mut next = choice.clone();
            for (c, &(_, n)) in best.iter().enumerate() {
                if n != NONE {
                    next[c] = n;
                }
            }
            match dag_cost(&f, &root_classes, &next) {
                Some((c2, needed2)) if c2 < cost => {
                    choice = next;
                    cost = c2;
                    needed = needed2;
                }
                _ => break,
            }
        }
    }
    let mut nodes: HashMap<Id, Node> = HashMap::new();
    for (c, &n) in choice.iter().enumerate() {
        if needed[c] && n != NONE {
            nodes.insert(f.ids[c], f.node(g, c, n as usize).clone());
        }
    }
    let mut method = if how == Extractor::Tree { "tree" } else { "greedy-dag" }.to_string();
    if let Extractor::Ilp { timeout } = how {
        let mut costs: HashMap<(Id, usize), f64> = HashMap::with_capacity(f.cost.len());
        for (c, &id) in f.ids.iter().enumerate() {
            for n in f.nodes(c) {
                costs.insert((id, n - f.node_start[c] as usize), f.cost[n]);
            }
        }
        match ilp(g, roots, &costs, timeout) {
            Ok((exact, optimal)) => {
                // The solver's nodes as flat indices (NONE where it chose nothing).
                let exact_flat: Vec<u32> = (0..f.ids.len())
                    .map(|c| {
                        let Some(node) = exact.get(&f.ids[c]) else { return NONE };
                        f.nodes(c).find(|&n| {
                            let mut m = f.node(g, c, n).clone();
                            m.update_children(|k| g.find(k));
                            m == *node
                        }).map_or(NONE, |n| n as u32)
                    })
                    .collect();
                match dag_cost(&f, &root_classes, &exact_flat) {
                    Some((c, _)) if c <= cost => {
                        nodes = exact;
                        cost = c;
                        method = format!("ilp ({})", if optimal { "optimal" } else { "time limit" });
                    }
                    Some(_) => method = "greedy-dag (ilp: no cheaper solution in time)".into(),
                    None if optimal => method = "greedy-dag (ilp: solution not an acyclic DAG)".into(),
                    None => method = "greedy-dag (ilp: no complete solution in time)".into(),
                }
            }
            Err(why) => method = format!("greedy-dag (ilp: {why})"),
        }
    }
    Some(Choice { nodes, cost, method })
}

/// The classes reachable from `roots` through any e-node.
#[cfg_attr(not(feature = "ilp"), allow(dead_code))]
fn reachable(g: &Graph, roots: &[Id]) -> Vec<Id> {
    let mut seen: HashSet<Id> = HashSet::new();
    let mut stack: Vec<Id> = roots.iter().map(|&r| g.find(r)).collect();
    let mut out = Vec::new();
    while let Some(c) = stack.pop() {
        if !seen.insert(c) {
            continue;
        }
        out.push(c);
        for n in &g[c].nodes {
            stack.extend(n.children().iter().map(|&k| g.find(k)));
        }
    }
    out.sort_unstable();
    out
}

/// Exact extraction as a 0-1 program: a variable per reachable class (needed or not) and per
/// e-node of finite cost (chosen or not); the roots are needed, a needed class chooses exactly
/// one e-node, a chosen e-node needs its operands' classes; an order variable per class keeps
/// the choice acyclic (a chosen e-node's class comes after its operands'). The objective is the
/// DAG cost: each chosen e-node counted once. Returns the choice and whether it is proven
/// optimal (`false`: the time limit stopped the solver with a feasible solution).
#[cfg(feature = "ilp")]
fn ilp(g: &Graph, roots: &[Id], costs: &HashMap<(Id, usize), f64>, timeout: std::time::Duration) -> Result<(HashMap<Id, Node>, bool), String> {
    use good_lp::solvers::WithTimeLimit;
    use good_lp::{Expression, ProblemVariables, Solution, SolutionStatus, SolverModel, variable};
    let classes = reachable(g, roots);
    let n = classes.len() as f64;
    let mut vars = ProblemVariables::new();
    let active: HashMap<Id, good_lp::Variable> = classes.iter().map(|&c| (c, vars.add(variable().binary()))).collect();
    let order: HashMap<Id, good_lp::Variable> = classes.iter().map(|&c| (c, vars.add(variable().min(0.0).max(n)))).collect();
    let mut picks: Vec<(Id, usize, good_lp::Variable)> = Vec::new();
    let mut objective = Expression::from(0.0);
    for &c in &classes {
        for (i, node) in g[c].nodes.iter().enumerate() {
            let cost = costs.get(&(c, i)).copied().unwrap_or(INFINITE);
            if !cost.is_finite() || node.children().iter().any(|&k| g.find(k) == c) {
                continue;
            }
            let x = vars.add(variable().binary());
            objective += cost * x;
            picks.push((c, i, x));
        }
    }
    let mut model = vars.minimise(objective).using(good_lp::coin_cbc).with_time_limit(timeout.as_secs_f64());
    model.set_parameter("log", "0");
    for &r in roots {
        model.add_constraint((1.0 * active[&g.find(r)]).eq(1.0));
    }
    let mut per_class: HashMap<Id, Expression> = HashMap::new();
    for &(c, i, x) in &picks {
        *per_class.entry(c).or_insert_with(|| Expression::from(0.0)) += x;
        for &k in g[c].nodes[i].children() {
            let k = g.find(k);
            model.add_constraint((1.0 * x).leq(active[&k]));
            // order[c] >= order[k] + 1 when x is chosen.
            model.add_constraint((order[&c] - order[&k] + (n + 1.0) * (1.0 - x)).geq(1.0));
        }
    }
    for &c in &classes {
        let sum = per_class.remove(&c).unwrap_or_else(|| Expression::from(0.0));
        model.add_constraint(sum.eq(active[&c]));
    }
    let solution = model.solve().map_err(|e| e.to_string())?;
    let optimal = matches!(solution.status(), SolutionStatus::Optimal);
    let mut choice = HashMap::new();
    for &(c, i, x) in &picks {
        if solution.value(x) > 0.5 {
            let mut node = g[c].nodes[i].clone();
            node.update_children(|k| g.find(k));
            choice.insert(c, node);
        }
    }
    Ok((choice, optimal))
}

#[cfg(not(feature = "ilp"))]
fn ilp(_: &Graph, _: &[Id], _: &HashMap<(Id, usize), f64>, _: std::time::Duration) -> Result<(HashMap<Id, Node>, bool), String> {
    Err("built without the `ilp` feature".into())
}
