//! The engine: turns a run of pure ops into an e-graph, saturates it with rules, extracts the
//! cheapest DAG and writes it back as IR.
//!
//! A *run* is a maximal sequence of consecutive convertible ops in one block: registered,
//! `PURE`, without regions, with results, and (for ops declared from a schema) writing
//! nothing. Everything else is a barrier: its results enter the e-graph as opaque leaves, and
//! rewritten ops are inserted just before the op that ends the run, so nothing moves across an
//! effectful op. Values of the run used after it are the roots.

use crate::analysis::{Data, Facts, Graph, dtype_of};
use crate::extract::{self, Choice, Extractor};
use crate::lang::{Node, Scalar};
use egg::{BackoffScheduler, Id, Language, Rewrite, Runner, SimpleScheduler, StopReason, Symbol};
use ir::module::NamedAttr;
use ir::{
    Attribute, BlockId, Context, DType, DenseAttr, Diagnostic, InsertPoint, Location, Module, OpId, OperationState,
    Traits, Type, TypeKind, ValueId,
};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::Duration;

/// Limits and choices of one saturation run.
#[derive(Clone, Debug)]
pub struct EngineConfig {
    pub iter_limit: usize,
    pub node_limit: NodeLimit,
    pub time_limit: Duration,
    /// Use egg's `BackoffScheduler`, which bans rules that match too often for a while, so
    /// commutativity and associativity cannot blow the e-graph up.
    pub backoff: bool,
    pub extractor: Extractor,
    /// Fold constants in the e-class analysis.
    pub fold: bool,
    /// Whether a root computed into fresh memory may be replaced by an existing value (an
    /// alias): only safe when nothing in the program writes to memory.
    pub allow_alias: bool,
    /// Rewrites the run may still make (`None`: unlimited), from `DIALECT_OPT_LIMIT`.
    pub budget: Option<usize>,
    /// Ops per e-graph: a longer run of pure ops is rewritten as consecutive windows of this
    /// many ops, one e-graph each (0: one e-graph per run). See [`WINDOW`].
    pub window: usize,
}

/// The default window. An e-graph's tables (egg's class map, hash-consing table and parent
/// lists, and the analysis facts) take a few hundred bytes per e-node: up to about two thousand
/// ops they stay within the 2 MiB L2 cache of the machines measured (the pass takes ×2.4 the
/// time of 1k ops at 2k), beyond that saturation and extraction miss the cache on most class
/// lookups and the cost per op grows with the run (L2 misses ×46 for ×10 ops in the cache
/// simulation of `docs/performance.md`). Windows keep the cost per op flat. The price: a rewrite whose pattern spans two windows is not seen; the rules are
/// peepholes of a few ops, so only ops at a window's edge are affected.
pub const WINDOW: usize = 2048;

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            iter_limit: 16,
            node_limit: NodeLimit::default(),
            time_limit: Duration::from_millis(1000),
            backoff: true,
            extractor: Extractor::GreedyDag,
            fold: true,
            allow_alias: true,
            budget: None,
            window: WINDOW,
        }
    }
}

/// How many e-nodes an e-graph may reach before saturation stops.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeLimit {
    /// The same limit for every e-graph.
    Fixed(usize),
    /// `per_initial` times the e-graph's initial e-nodes, and at least `floor`: a large run of
    /// ops gets the same room to grow as a small one.
    Scaled { floor: usize, per_initial: usize },
}

/// The floor of the default node limit.
pub const NODE_LIMIT_FLOOR: usize = 100_000;

/// The default node limit's e-nodes per initial e-node. The sound rule sets grow the synthetic
/// elementwise graphs of the growth bench ×2.1 before they saturate (3 iterations, 1k to 10k
/// ops) and a chain of commuting ops ×2.0; with the fast-math sets (reassociation) the graphs
/// grow ×6.6–7.3 in the 16 iterations of the default iteration limit. ×10 stops neither, at
/// any size, and still bounds a rule set that blows the e-graph up.
pub const NODE_LIMIT_PER_INITIAL: usize = 10;

impl Default for NodeLimit {
    fn default() -> Self {
        NodeLimit::Scaled { floor: NODE_LIMIT_FLOOR, per_initial: NODE_LIMIT_PER_INITIAL }
    }
}

impl NodeLimit {
    /// The limit for an e-graph that starts with `initial` e-nodes.
    pub fn for_initial(self, initial: usize) -> usize {
        match self {
            NodeLimit::Fixed(n) => n,
            NodeLimit::Scaled { floor, per_initial } => initial.saturating_mul(per_initial).max(floor),
        }
    }
}

/// What one run of the engine did.
#[derive(Clone, Debug, Default)]
pub struct RunReport {
    /// The function the run belongs to (set by the pass, for its log).
    pub function: String,
    pub ops: usize,
    pub initial_nodes: usize,
    /// The node limit saturation ran under (see [`NodeLimit`]).
    pub node_limit: usize,
    pub nodes: usize,
    pub classes: usize,
    pub iterations: usize,
    /// `saturated`, `iteration limit`, `node limit`, `time limit`, or another reason.
    pub stop: String,
    /// Times each rule was applied.
    pub applied: BTreeMap<String, usize>,
    /// Cost of the extracted DAG.
    pub cost: f64,
    /// How extraction chose (see [`crate::extract::Choice::method`]).
    pub extraction: String,
    /// Values replaced by rewritten ones.
    pub replaced: usize,
    /// Ops created.
    pub created: usize,
    /// Ops erased.
    pub erased: usize,
    /// Conversion of the ops into an e-graph.
    pub convert: Duration,
    /// Saturation time.
    pub saturate: Duration,
    /// Extraction and write-back time.
    pub extract: Duration,
}

/// Whether the engine may put `op` into an e-graph.
pub fn convertible(ctx: &Context, m: &Module, op: OpId) -> bool {
    let Some(def) = ctx.op_def(m.op_name(op)) else { return false };
    def.has_trait(Traits::PURE)
        && !def.has_trait(Traits::TERMINATOR)
        && m.regions(op).is_empty()
        && !m.results(op).is_empty()
        && def.schema.as_ref().is_none_or(|s| !s.is_mutable())
}

/// Whether any op under `root` may write memory (an op declared with a written alias
/// annotation, or an op the context does not know).
pub fn writes_memory(ctx: &Context, m: &Module, root: OpId) -> bool {
    let mut writes = false;
    m.walk(root, ir::WalkOrder::PreOrder, &mut |o| {
        match ctx.op_def(m.op_name(o)) {
            Some(def) => {
                if def.schema.as_ref().is_some_and(|s| s.is_mutable()) {
                    writes = true;
                }
            }
            None => writes = true,
        }
    });
    writes
}

/// The runs of convertible ops in a block, each with the point where rewritten ops go; a run
/// longer than `window` ops (0: no bound) is cut into windows of `window` ops, each rewritten
/// before the first op of the next, so that later windows see earlier ones' results as values
/// defined outside them.
pub fn runs(ctx: &Context, m: &Module, block: BlockId, window: usize) -> Vec<(Vec<OpId>, InsertPoint)> {
    let mut out = Vec::new();
    let mut cur: Vec<OpId> = Vec::new();
    for op in m.block_ops(block) {
        if convertible(ctx, m, op) {
            if window > 0 && cur.len() == window {
                out.push((std::mem::take(&mut cur), InsertPoint::Before(op)));
            }
            cur.push(op);
        } else if !cur.is_empty() {
            out.push((std::mem::take(&mut cur), InsertPoint::Before(op)));
        }
    }
    if !cur.is_empty() {
        out.push((cur, InsertPoint::End(block)));
    }
    out
}

/// An op's attributes without those equal to their schema default, sorted by name.
pub fn normalized_attrs(ctx: &Context, m: &Module, op: OpId) -> Vec<NamedAttr> {
    let schema = ctx.op_def(m.op_name(op)).and_then(|d| d.schema.as_ref());
    m.attributes(op)
        .iter()
        .filter(|(k, v)| {
            let Some(s) = schema else { return true };
            let Some((_, arg)) = s.arg(k) else { return true };
            let default = match &arg.default {
                Some(d) => dialect_aten::default_attribute(d, &arg.ty),
                None if matches!(arg.ty, ir::schema::SchemaType::Optional(_)) => Some(dialect_prim::kinds::none()),
                None => None,
            };
            default.as_ref() != Some(v)
        })
        .cloned()
        .collect()
}

/// The splat constant an op produces, if it is one: `prim.Constant` of a scalar or a splat
/// dense tensor, or `aten.scalar_tensor` of a literal.
pub fn constant_of(m: &Module, op: OpId) -> Option<(Type, Scalar)> {
    let ty = m.value_type(*m.results(op).first()?).clone();
    match m.op_name(op) {
        dialect_prim::CONSTANT => {
            let v = match m.attr(op, "value")? {
                Attribute::Int(i) if *ty.kind() == TypeKind::Int => Scalar::Int(*i),
                Attribute::Float(f) if *ty.kind() == TypeKind::Float => Scalar::Float(f.0),
                Attribute::Bool(b) if *ty.kind() == TypeKind::Bool => Scalar::Bool(*b),
                Attribute::Dense(d) => {
                    if Some(d.tensor_type()) != ty.as_tensor() || d.num_elements() == 0 {
                        return None;
                    }
                    let sz = d.dtype().size_bytes();
                    let data = d.data();
                    if !(1..d.num_elements()).all(|i| data[i * sz..(i + 1) * sz] == data[..sz]) {
                        return None;
                    }
                    element(d)?
                }
                _ => return None,
            };
            Some((ty, v))
        }
        name if dialect_aten::op::SCALAR_TENSOR.is(name) => {
            if !m.operands(op).is_empty() {
                return None;
            }
            let dtype = ty.as_tensor()?.dtype?;
            let v = match (m.attr(op, "s")?, dtype) {
                (Attribute::Float(f), DType::F64) => Scalar::Float(f.0),
                (Attribute::Float(f), DType::F32) if (f.get() as f32 as f64).to_bits() == f.0 => Scalar::Float(f.0),
                (Attribute::Int(i), DType::I64) => Scalar::Int(*i),
                (Attribute::Bool(b), DType::Bool) => Scalar::Bool(*b),
                _ => return None,
            };
            Some((ty, v))
        }
        _ => None,
    }
}

fn element(d: &DenseAttr) -> Option<Scalar> {
    match d.dtype() {
        DType::F32 | DType::F64 => Some(Scalar::float(d.element_f64(0)?)),
        DType::I32 | DType::I64 => Some(Scalar::Int(d.element_i64(0)?)),
        DType::Bool => Some(Scalar::Bool(d.element_i64(0)? != 0)),
        _ => None,
    }
}

/// Adds `v` as a new leaf, of its type.
fn add_leaf(m: &Module, g: &mut Graph, c: &mut Converted, v: ValueId) -> Id {
    let id = g.add(Node::Leaf(c.leaves.len() as u32));
    c.leaves.push(v);
    g[id].data = Data { ty: Some(m.value_type(v).clone()), konst: None };
    c.class_of.insert(v, id);
    id
}

/// Adds the op computing `v` (read by `user`, a leaf of class `id`) to the leaf's class, over
/// leaves of its operands; see [`convert`].
fn add_context(ctx: &Context, m: &Module, g: &mut Graph, c: &mut Converted, user: OpId, v: ValueId, id: Id) {
    let Some(def) = m.defining_op(v) else { return };
    if m.parent_block(def) != m.parent_block(user) || m.results(def).len() != 1 || !convertible(ctx, m, def) {
        return;
    }
    let node = match constant_of(m, def) {
        Some((ty, value)) => Node::Const { ty: g.analysis.type_index(&ty), value },
        None => {
            let Some(attrs) = g.analysis.attr_index(normalized_attrs(ctx, m, def)) else { return };
            let mut args = crate::lang::Args::with_capacity(m.operands(def).len());
            for &u in m.operands(def) {
                let a = match c.class_of.get(&u) {
                    Some(&a) => a,
                    None => add_leaf(m, g, c, u),
                };
                args.push(a);
            }
            Node::Op { name: Symbol::from(m.op_name(def)), attrs, args }
        }
    };
    let d = g.add(node);
    g.union(id, d);
}

/// The IR of a run as an e-graph.
pub struct Converted {
    pub egraph: Graph,
    /// The leaf table: `Node::Leaf(i)` stands for `leaves[i]`.
    pub leaves: Vec<ValueId>,
    /// The class of each value defined by the run or used by it.
    pub class_of: HashMap<ValueId, Id>,
    /// Each op of the run with its e-node.
    pub originals: Vec<(OpId, Node)>,
    /// Result types of the classes of multi-result ops.
    pub multi: HashMap<Id, Vec<Type>>,
    /// The values of the run used outside it, with their classes.
    pub roots: Vec<(ValueId, Id)>,
}

/// Converts a run of ops into an e-graph.
///
/// With `context`, a value the run reads that a single-result pure op of the same block
/// computes (an earlier window of the same run, or an earlier run) enters as its leaf *and*
/// that op over leaves of its own operands, in one class: rules see the structure one op deep
/// beyond the run's edge (`neg(neg(x))` with the inner `neg` outside, `x * 1` with the constant
/// outside), while extraction still reads the existing value, which costs nothing. Only sound
/// when nothing writes memory: the op's operands must still hold what they held when it ran.
pub fn convert(ctx: &Context, m: &Module, ops: &[OpId], fold: bool, context: bool) -> Converted {
    let mut g = Graph::new(Facts::new(fold));
    let mut c = Converted {
        egraph: Graph::new(Facts::new(fold)),
        leaves: Vec::new(),
        class_of: HashMap::with_capacity(2 * ops.len()),
        originals: Vec::with_capacity(ops.len()),
        multi: HashMap::new(),
        roots: Vec::new(),
    };
    let in_run: HashSet<OpId> = ops.iter().copied().collect();
    for &op in ops {
        let mut args = crate::lang::Args::with_capacity(m.operands(op).len());
        for &v in m.operands(op) {
            let id = match c.class_of.get(&v) {
                Some(&id) => id,
                None => {
                    let id = add_leaf(m, &mut g, &mut c, v);
                    if context {
                        add_context(ctx, m, &mut g, &mut c, op, v, id);
                    }
                    id
                }
            };
            args.push(id);
        }
        let node = match constant_of(m, op) {
            Some((ty, value)) => Node::Const { ty: g.analysis.type_index(&ty), value },
            None => match g.analysis.attr_index(normalized_attrs(ctx, m, op)) {
                Some(attrs) => Node::Op { name: Symbol::from(m.op_name(op)), attrs, args },
                // The run's attribute table is full: the op stays as it is and its results
                // enter as opaque leaves.
                None => {
                    for &r in m.results(op) {
                        add_leaf(m, &mut g, &mut c, r);
                    }
                    continue;
                }
            },
        };
        let id = g.add(node.clone());
        let results = m.results(op);
        if results.len() == 1 {
            let ty = m.value_type(results[0]).clone();
            g[id].data.ty = Some(ty);
            c.class_of.insert(results[0], id);
        } else {
            let tys: Vec<Type> = results.iter().map(|&r| m.value_type(r).clone()).collect();
            g[id].data.ty = Some(Type::tuple(tys.clone()));
            c.multi.insert(id, tys.clone());
            for (i, &r) in results.iter().enumerate() {
                let p = g.add(Node::Proj { index: i as u32, args: [id] });
                g[p].data.ty = Some(tys[i].clone());
                c.class_of.insert(r, p);
            }
        }
        c.originals.push((op, node));
        for &r in m.results(op) {
            if m.uses(r).iter().any(|u| !in_run.contains(&u.op)) {
                if let Some(&id) = c.class_of.get(&r) {
                    c.roots.push((r, id));
                }
            }
        }
    }
    g.rebuild();
    c.egraph = g;
    c
}

/// Runs the rules over a run of ops and writes the cheapest equivalent back.
pub fn rewrite_run(
    ctx: &Context,
    m: &mut Module,
    ops: &[OpId],
    at: InsertPoint,
    rules: &[Rewrite<Node, Facts>],
    cfg: &EngineConfig,
) -> Result<RunReport, Diagnostic> {
    let start = std::time::Instant::now();
    let conv = convert(ctx, m, ops, cfg.fold, cfg.allow_alias);
    let mut report = RunReport { ops: ops.len(), initial_nodes: conv.egraph.total_size(), convert: start.elapsed(), ..RunReport::default() };
    if conv.roots.is_empty() {
        return Ok(report);
    }
    let Converted { mut egraph, leaves, originals, multi, roots, .. } = conv;
    egraph.analysis.no_writes = cfg.allow_alias;
    report.node_limit = cfg.node_limit.for_initial(report.initial_nodes);
    let runner = Runner::<Node, Facts, ()>::new(Facts::new(cfg.fold))
        .with_egraph(egraph)
        .with_iter_limit(cfg.iter_limit)
        .with_node_limit(report.node_limit)
        .with_time_limit(cfg.time_limit);
    // The backoff scheduler bans a rule for a while once it matches more often than its limit
    // in one iteration. A fixed limit bans rules such as commutativity on every large graph,
    // where they match once per op, and each ban costs extra iterations over the whole graph;
    // a limit proportional to the graph's size bans only rules that match more than a few
    // times per node — those that blow the graph up.
    let limit = (2 * report.initial_nodes).max(1_000);
    let runner = if cfg.backoff {
        runner.with_scheduler(BackoffScheduler::default().with_initial_match_limit(limit))
    } else {
        runner.with_scheduler(SimpleScheduler)
    };
    let runner = runner.run(rules);
    report.iterations = runner.iterations.len();
    report.stop = match &runner.stop_reason {
        Some(StopReason::Saturated) => "saturated".into(),
        Some(StopReason::IterationLimit(n)) => format!("iteration limit ({n})"),
        Some(StopReason::NodeLimit(n)) => format!("node limit ({n})"),
        Some(StopReason::TimeLimit(s)) => format!("time limit ({s}s)"),
        Some(StopReason::Other(s)) => s.clone(),
        None => "not run".into(),
    };
    for it in &runner.iterations {
        for (k, v) in &it.applied {
            *report.applied.entry(k.to_string()).or_default() += v;
        }
    }
    let g = runner.egraph;
    report.nodes = g.total_size();
    report.classes = g.number_of_classes();
    report.saturate = start.elapsed() - report.convert;
    let t1 = std::time::Instant::now();
    let root_ids: Vec<Id> = roots.iter().map(|(_, id)| g.find(*id)).collect();
    let prefer: HashSet<Node> = originals
        .iter()
        .map(|(_, n)| {
            let mut n = n.clone();
            n.update_children(|c| g.find(c));
            n
        })
        .collect();
    let Some(choice) = extract::extract(&g, &root_ids, cfg.extractor, &prefer) else {
        return Ok(report);
    };
    report.cost = choice.cost;
    report.extraction = choice.method.clone();
    let multi: HashMap<Id, Vec<Type>> = multi.into_iter().map(|(k, v)| (g.find(k), v)).collect();
    let mut w = Writer { g: &g, choice: &choice, leaves: &leaves, multi: &multi, memo: HashMap::with_capacity(choice.nodes.len()), created: Vec::new(), by_class: HashMap::with_capacity(originals.len()), locs: HashMap::with_capacity(originals.len()), at };
    for (op, node) in &originals {
        let class = match node {
            Node::Const { .. } | Node::Op { .. } => g.lookup(node.clone()),
            _ => None,
        };
        if let Some(c) = class {
            let c = g.find(c);
            w.by_class.entry(c).or_default().push((*op, node.clone()));
            let l = m.loc(*op).clone();
            w.locs.entry(c).or_default().push(l);
        }
    }
    let mut budget = cfg.budget;
    let mut failed = None;
    let in_run: HashSet<OpId> = ops.iter().copied().collect();
    // Results of the non-view ops created so far (fresh memory), grown as roots materialize.
    let mut fresh: HashSet<ValueId> = HashSet::new();
    let mut seen_created = 0;
    for (r, id) in &roots {
        let v = match w.materialize(m, g.find(*id)) {
            Ok(Mat::Value(v)) => v,
            Ok(Mat::Multi(_)) => continue,
            Err(e) => {
                failed = Some(e);
                break;
            }
        };
        if v == *r {
            continue;
        }
        for &o in &w.created[seen_created..] {
            if !extract::is_view(m.op_name(o)) {
                fresh.extend(m.results(o).iter().copied());
            }
        }
        seen_created = w.created.len();
        if !cfg.allow_alias && !fresh.contains(&v) {
            continue;
        }
        if let Some(b) = budget.as_mut() {
            if *b == 0 {
                break;
            }
            *b -= 1;
        }
        m.replace_uses_where(*r, v, |_, u| !in_run.contains(&u.op));
        report.replaced += 1;
    }
    // Erase what is dead now: the new ops nobody took, then the run's ops.
    let created = std::mem::take(&mut w.created);
    report.created = created.len();
    for &o in created.iter().rev().chain(ops.iter().rev()) {
        if m.contains_op(o) && m.results(o).iter().all(|&r| !m.has_uses(r)) && m.erase_op(o).is_ok() {
            report.erased += 1;
        }
    }
    report.created -= created.iter().filter(|&&o| !m.contains_op(o)).count();
    report.erased -= created.iter().filter(|&&o| !m.contains_op(o)).count();
    report.extract = t1.elapsed();
    if let Some(e) = failed {
        return Err(e);
    }
    Ok(report)
}

#[derive(Clone, Debug)]
enum Mat {
    Value(ValueId),
    Multi(Vec<ValueId>),
}

struct Writer<'a> {
    g: &'a Graph,
    choice: &'a Choice,
    leaves: &'a [ValueId],
    multi: &'a HashMap<Id, Vec<Type>>,
    memo: HashMap<Id, Mat>,
    created: Vec<OpId>,
    by_class: HashMap<Id, Vec<(OpId, Node)>>,
    locs: HashMap<Id, Vec<Location>>,
    at: InsertPoint,
}

impl Writer<'_> {
    /// Materializes class `root` and everything it needs, children first (iteratively, so
    /// deep chains do not exhaust the stack).
    fn materialize(&mut self, m: &mut Module, root: Id) -> Result<Mat, Diagnostic> {
        let mut stack: Vec<(Id, bool)> = vec![(root, false)];
        while let Some((c, expanded)) = stack.pop() {
            if self.memo.contains_key(&c) {
                continue;
            }
            let node = self.choice.nodes.get(&c).ok_or_else(|| err("extraction has no choice for a needed class"))?.clone();
            if !expanded {
                stack.push((c, true));
                for &k in node.children() {
                    let k = self.g.find(k);
                    if !self.memo.contains_key(&k) {
                        stack.push((k, false));
                    }
                }
                continue;
            }
            let mat = self.build(m, c, &node)?;
            self.memo.insert(c, mat);
        }
        self.memo.get(&root).cloned().ok_or_else(|| err("root was not materialized"))
    }

    fn build(&mut self, m: &mut Module, c: Id, node: &Node) -> Result<Mat, Diagnostic> {
        let mut args = Vec::new();
        for &k in node.children() {
            match self.memo.get(&self.g.find(k)) {
                Some(Mat::Value(v)) => args.push(*v),
                Some(Mat::Multi(vs)) => {
                    if let Node::Proj { index, .. } = node {
                        return vs.get(*index as usize).map(|v| Mat::Value(*v)).ok_or_else(|| err("projection out of range"));
                    }
                    return Err(err("a multi-result value used as an operand"));
                }
                None => return Err(err("operand not materialized")),
            }
        }
        match node {
            Node::Leaf(i) => return self.leaves.get(*i as usize).map(|v| Mat::Value(*v)).ok_or_else(|| err("bad leaf")),
            Node::Proj { .. } => return Err(err("projection of a single-result value")),
            _ => {}
        }
        // Reuse an original op of this class computing the same thing from the same values.
        if let Some(ops) = self.by_class.get(&c) {
            for (op, orig) in ops {
                let op = *op;
                if !m.contains_op(op) || m.operands(op) != args.as_slice() || orig.discriminant() != node.discriminant() {
                    continue;
                }
                let rs = m.results(op).to_vec();
                return Ok(if self.multi.contains_key(&c) { Mat::Multi(rs) } else { Mat::Value(rs[0]) });
            }
        }
        let loc = Location::fuse(self.locs.get(&c).cloned().unwrap_or_default());
        let state = match node {
            Node::Const { ty, value } => {
                let ty = self.g.analysis.type_at(*ty).cloned().ok_or_else(|| err("constant of unknown type"))?;
                let attr = constant_attr(&ty, *value).ok_or_else(|| err(&format!("cannot write a constant of type {ty}")))?;
                OperationState::new(dialect_prim::CONSTANT).attr("value", attr).results([ty])
            }
            Node::Op { name, attrs, .. } => {
                let tys = match self.multi.get(&c) {
                    Some(t) => t.clone(),
                    None => vec![self.g[c].data.ty.clone().ok_or_else(|| err(&format!("result type of '{name}' unknown")))?],
                };
                let mut st = OperationState::new(name.as_str()).operands(args.iter().copied()).results(tys);
                st.attributes = self.g.analysis.attrs_at(*attrs).to_vec();
                st
            }
            _ => return Err(err("unexpected node")),
        };
        let op = m.create_op(state.loc(loc));
        m.insert_op(op, self.at).map_err(|e| err(&e.to_string()))?;
        self.created.push(op);
        let rs = m.results(op).to_vec();
        Ok(if self.multi.contains_key(&c) { Mat::Multi(rs) } else { Mat::Value(rs[0]) })
    }

}

fn err(msg: &str) -> Diagnostic {
    Diagnostic::error(Location::Unknown, format!("egraph write-back: {msg}"))
}

/// The attribute of a `prim.Constant` of type `ty` whose elements are all `v`.
pub fn constant_attr(ty: &Type, v: Scalar) -> Option<Attribute> {
    match ty.kind() {
        TypeKind::Int => match v {
            Scalar::Int(i) => Some(Attribute::Int(i)),
            _ => None,
        },
        TypeKind::Float => Some(Attribute::float(v.as_f64())),
        TypeKind::Bool => match v {
            Scalar::Bool(b) => Some(Attribute::Bool(b)),
            _ => None,
        },
        TypeKind::Tensor(t) => {
            let dims = t.static_dims()?;
            let dtype = dtype_of(ty)?;
            let n: i64 = dims.iter().product();
            let one: Vec<u8> = match (dtype, v) {
                (DType::F32, _) => (v.as_f64() as f32).to_le_bytes().to_vec(),
                (DType::F64, _) => v.as_f64().to_le_bytes().to_vec(),
                (DType::I64, Scalar::Int(i)) => i.to_le_bytes().to_vec(),
                (DType::I32, Scalar::Int(i)) => (i as i32).to_le_bytes().to_vec(),
                (DType::Bool, Scalar::Bool(b)) => vec![b as u8],
                _ => return None,
            };
            let bytes: Vec<u8> = (0..n.max(0)).flat_map(|_| one.iter().copied()).collect();
            DenseAttr::new(dtype, &dims, bytes.into()).ok().map(Attribute::Dense)
        }
        _ => None,
    }
}
