//! The IR store: operations, values, blocks and regions in slotmaps, with use lists and O(1) block order edits.
//! One file because it is one concept whose invariants (exact use lists, the intrusive block
//! order, erasure refused while results are used) hold only if every mutation is written here.

use crate::attributes::Attribute;
use crate::location::Location;
use crate::types::Type;
use slotmap::{SlotMap, new_key_type};
use std::sync::Arc;

new_key_type! {
    /// An operation.
    pub struct OpId;
    /// An SSA value: an op result or a block argument.
    pub struct ValueId;
    /// A block: arguments and an ordered list of ops.
    pub struct BlockId;
    /// A region: an ordered list of blocks owned by an op.
    pub struct RegionId;
}

/// Where a value comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ValueDef {
    Result { op: OpId, index: usize },
    BlockArg { block: BlockId, index: usize },
    /// A value not yet defined (a parser's forward reference); never present in verified IR.
    Placeholder,
}

/// One use of a value: operand `index` of `op`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Use {
    pub op: OpId,
    pub index: usize,
}

#[derive(Clone, Debug)]
pub struct ValueData {
    pub ty: Type,
    pub def: ValueDef,
    pub uses: Vec<Use>,
    /// A preferred printed name (`%x`), kept from importers and parsed text.
    pub name: Option<Arc<str>>,
}

/// An attribute with its name.
pub type NamedAttr = (Arc<str>, Attribute);

#[derive(Clone, Debug)]
pub struct Operation {
    pub name: Arc<str>,
    pub operands: Vec<ValueId>,
    pub results: Vec<ValueId>,
    /// Sorted by name, names unique.
    pub attributes: Vec<NamedAttr>,
    pub regions: Vec<RegionId>,
    pub loc: Location,
    pub parent: Option<BlockId>,
    prev: Option<OpId>,
    next: Option<OpId>,
    /// For operand `i`, the position of its `Use` in the operand value's use list, so a use
    /// is removed in O(1) however many uses the value has.
    use_pos: Vec<usize>,
}

#[derive(Clone, Debug, Default)]
pub struct BlockData {
    pub args: Vec<ValueId>,
    pub parent: Option<RegionId>,
    first: Option<OpId>,
    last: Option<OpId>,
    len: usize,
}

#[derive(Clone, Debug, Default)]
pub struct RegionData {
    pub blocks: Vec<BlockId>,
    pub parent: Option<OpId>,
}

/// Errors from structural edits.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum IrError {
    #[error("cannot erase '{op}': result #{index} still has {uses} use(s)")]
    ResultsInUse { op: String, index: usize, uses: usize },
    #[error("operation is not in a block")]
    Detached,
    #[error("operation '{0}' is already in a block")]
    AlreadyInserted(String),
    #[error("cannot move an operation relative to itself or into its own regions")]
    BadMove,
    #[error("operand index {index} out of range for '{op}' with {count} operand(s)")]
    OperandOutOfRange { op: String, index: usize, count: usize },
}

/// Everything needed to create an operation.
#[derive(Clone, Debug)]
pub struct OperationState {
    pub name: Arc<str>,
    pub operands: Vec<ValueId>,
    pub result_types: Vec<Type>,
    pub attributes: Vec<NamedAttr>,
    /// Number of empty regions to create.
    pub num_regions: usize,
    pub loc: Location,
}

impl OperationState {
    /// A state for an op named by its handle or, where it is declared or met unregistered, its name.
    pub fn new(name: impl AsRef<str>) -> OperationState {
        OperationState {
            name: name.as_ref().into(),
            operands: Vec::new(),
            result_types: Vec::new(),
            attributes: Vec::new(),
            num_regions: 0,
            loc: Location::Unknown,
        }
    }

    pub fn operands(mut self, ops: impl IntoIterator<Item = ValueId>) -> Self {
        self.operands.extend(ops);
        self
    }

    pub fn results(mut self, tys: impl IntoIterator<Item = Type>) -> Self {
        self.result_types.extend(tys);
        self
    }

    pub fn attr(mut self, name: &str, value: Attribute) -> Self {
        self.attributes.push((name.into(), value));
        self
    }

    pub fn regions(mut self, n: usize) -> Self {
        self.num_regions = n;
        self
    }

    pub fn loc(mut self, loc: Location) -> Self {
        self.loc = loc;
        self
    }
}

/// Where the builder inserts the next op.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InsertPoint {
    /// At the end of a block.
    End(BlockId),
    /// At the start of a block.
    Start(BlockId),
    /// Just before an op.
    Before(OpId),
    /// Just after an op.
    After(OpId),
}

/// Walk order over nested operations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WalkOrder {
    PreOrder,
    PostOrder,
}

/// A top-level `builtin.module` operation and all the IR nested in it.
#[derive(Clone, Debug)]
pub struct Module {
    ops: SlotMap<OpId, Operation>,
    values: SlotMap<ValueId, ValueData>,
    blocks: SlotMap<BlockId, BlockData>,
    regions: SlotMap<RegionId, RegionData>,
    top: OpId,
}

impl Default for Module {
    fn default() -> Self {
        Module::new()
    }
}

impl Module {
    /// An empty `builtin.module` with one region holding one empty block.
    pub fn new() -> Module {
        let mut m = Module {
            ops: SlotMap::with_key(),
            values: SlotMap::with_key(),
            blocks: SlotMap::with_key(),
            regions: SlotMap::with_key(),
            top: OpId::default(),
        };
        let top = m.create_op(OperationState::new(crate::builtin::MODULE).regions(1));
        let region = m.ops[top].regions[0];
        m.append_block(region, &[]);
        m.top = top;
        m
    }

    /// The `builtin.module` op.
    pub fn top(&self) -> OpId {
        self.top
    }

    /// The block of the top-level module's body.
    pub fn body(&self) -> BlockId {
        self.regions[self.ops[self.top].regions[0]].blocks[0]
    }

    // ----- queries -----

    pub fn op(&self, op: OpId) -> &Operation {
        &self.ops[op]
    }

    pub fn contains_op(&self, op: OpId) -> bool {
        self.ops.contains_key(op)
    }

    pub fn op_name(&self, op: OpId) -> &str {
        &self.ops[op].name
    }

    pub fn operands(&self, op: OpId) -> &[ValueId] {
        &self.ops[op].operands
    }

    pub fn operand(&self, op: OpId, i: usize) -> Option<ValueId> {
        self.ops[op].operands.get(i).copied()
    }

    pub fn results(&self, op: OpId) -> &[ValueId] {
        &self.ops[op].results
    }

    pub fn result(&self, op: OpId, i: usize) -> Option<ValueId> {
        self.ops[op].results.get(i).copied()
    }

    pub fn regions(&self, op: OpId) -> &[RegionId] {
        &self.ops[op].regions
    }

    pub fn attributes(&self, op: OpId) -> &[NamedAttr] {
        &self.ops[op].attributes
    }

    pub fn attr(&self, op: OpId, name: &str) -> Option<&Attribute> {
        let attrs = &self.ops[op].attributes;
        attrs.binary_search_by(|(k, _)| (**k).cmp(name)).ok().map(|i| &attrs[i].1)
    }

    pub fn loc(&self, op: OpId) -> &Location {
        &self.ops[op].loc
    }

    pub fn value(&self, v: ValueId) -> &ValueData {
        &self.values[v]
    }

    pub fn contains_value(&self, v: ValueId) -> bool {
        self.values.contains_key(v)
    }

    pub fn value_type(&self, v: ValueId) -> &Type {
        &self.values[v].ty
    }

    pub fn value_def(&self, v: ValueId) -> ValueDef {
        self.values[v].def
    }

    pub fn value_name(&self, v: ValueId) -> Option<&str> {
        self.values[v].name.as_deref()
    }

    /// The op defining `v`, if it is an op result.
    pub fn defining_op(&self, v: ValueId) -> Option<OpId> {
        match self.values[v].def {
            ValueDef::Result { op, .. } => Some(op),
            _ => None,
        }
    }

    pub fn uses(&self, v: ValueId) -> &[Use] {
        &self.values[v].uses
    }

    pub fn has_uses(&self, v: ValueId) -> bool {
        !self.values[v].uses.is_empty()
    }

    pub fn block(&self, b: BlockId) -> &BlockData {
        &self.blocks[b]
    }

    pub fn block_args(&self, b: BlockId) -> &[ValueId] {
        &self.blocks[b].args
    }

    pub fn block_len(&self, b: BlockId) -> usize {
        self.blocks[b].len
    }

    pub fn first_op(&self, b: BlockId) -> Option<OpId> {
        self.blocks[b].first
    }

    pub fn last_op(&self, b: BlockId) -> Option<OpId> {
        self.blocks[b].last
    }

    pub fn next_op(&self, op: OpId) -> Option<OpId> {
        self.ops[op].next
    }

    pub fn prev_op(&self, op: OpId) -> Option<OpId> {
        self.ops[op].prev
    }

    /// The ops of a block, in order. Collects into a vector so the block may be edited while iterating.
    pub fn block_ops(&self, b: BlockId) -> Vec<OpId> {
        let mut out = Vec::with_capacity(self.blocks[b].len);
        let mut cur = self.blocks[b].first;
        while let Some(op) = cur {
            out.push(op);
            cur = self.ops[op].next;
        }
        out
    }

    pub fn region(&self, r: RegionId) -> &RegionData {
        &self.regions[r]
    }

    pub fn region_blocks(&self, r: RegionId) -> &[BlockId] {
        &self.regions[r].blocks
    }

    /// The first block of a region.
    pub fn entry_block(&self, r: RegionId) -> Option<BlockId> {
        self.regions[r].blocks.first().copied()
    }

    pub fn parent_block(&self, op: OpId) -> Option<BlockId> {
        self.ops[op].parent
    }

    pub fn block_parent_op(&self, b: BlockId) -> Option<OpId> {
        self.regions[self.blocks[b].parent?].parent
    }

    /// The op whose region holds `op`.
    pub fn parent_op(&self, op: OpId) -> Option<OpId> {
        self.block_parent_op(self.ops[op].parent?)
    }

    /// The block a value is defined in.
    pub fn value_block(&self, v: ValueId) -> Option<BlockId> {
        match self.values[v].def {
            ValueDef::Result { op, .. } => self.ops[op].parent,
            ValueDef::BlockArg { block, .. } => Some(block),
            ValueDef::Placeholder => None,
        }
    }

    /// Whether `ancestor` is `op` or encloses it.
    pub fn is_ancestor(&self, ancestor: OpId, op: OpId) -> bool {
        let mut cur = Some(op);
        while let Some(o) = cur {
            if o == ancestor {
                return true;
            }
            cur = self.parent_op(o);
        }
        false
    }

    /// Position of `op` within its block (O(n)).
    pub fn index_in_block(&self, op: OpId) -> Option<usize> {
        let b = self.ops[op].parent?;
        self.block_ops(b).iter().position(|&o| o == op)
    }

    /// Whether `a` comes before `b` in the same block.
    pub fn is_before_in_block(&self, a: OpId, b: OpId) -> bool {
        if self.ops[a].parent.is_none() || self.ops[a].parent != self.ops[b].parent {
            return false;
        }
        let mut cur = self.ops[a].next;
        while let Some(o) = cur {
            if o == b {
                return true;
            }
            cur = self.ops[o].next;
        }
        false
    }

    /// The `func.func` ops of the module body, in order.
    pub fn functions(&self) -> Vec<OpId> {
        self.block_ops(self.body())
            .into_iter()
            .filter(|&o| self.op_name(o) == crate::builtin::FUNC)
            .collect()
    }

    /// The function named `name`.
    pub fn function(&self, name: &str) -> Option<OpId> {
        self.functions().into_iter().find(|&f| {
            self.attr(f, crate::builtin::SYM_NAME).and_then(Attribute::as_str) == Some(name)
        })
    }

    /// Visits `root` and every op nested in it.
    pub fn walk(&self, root: OpId, order: WalkOrder, f: &mut dyn FnMut(OpId)) {
        if order == WalkOrder::PreOrder {
            f(root);
        }
        for &r in &self.ops[root].regions {
            for &b in &self.regions[r].blocks {
                for op in self.block_ops(b) {
                    self.walk(op, order, f);
                }
            }
        }
        if order == WalkOrder::PostOrder {
            f(root);
        }
    }

    /// Every op nested in `root` (excluding it), pre-order.
    pub fn nested_ops(&self, root: OpId) -> Vec<OpId> {
        let mut v = Vec::new();
        self.walk(root, WalkOrder::PreOrder, &mut |o| v.push(o));
        v.remove(0);
        v
    }

    // ----- creation -----

    /// Creates a detached op (not in any block) with fresh results and empty regions.
    pub fn create_op(&mut self, state: OperationState) -> OpId {
        let OperationState { name, operands, result_types, mut attributes, num_regions, loc } = state;
        attributes.sort_by(|a, b| a.0.cmp(&b.0));
        attributes.dedup_by(|later, earlier| {
            if later.0 == earlier.0 {
                std::mem::swap(later, earlier);
                true
            } else {
                false
            }
        });
        let op = self.ops.insert(Operation {
            name,
            operands: Vec::new(),
            results: Vec::new(),
            attributes,
            regions: Vec::new(),
            loc,
            parent: None,
            prev: None,
            next: None,
            use_pos: Vec::new(),
        });
        for (index, ty) in result_types.into_iter().enumerate() {
            let v = self.values.insert(ValueData {
                ty,
                def: ValueDef::Result { op, index },
                uses: Vec::new(),
                name: None,
            });
            self.ops[op].results.push(v);
        }
        for v in operands {
            self.push_operand(op, v);
        }
        for _ in 0..num_regions {
            self.add_region(op);
        }
        op
    }

    /// Appends a new empty region to `op`.
    pub fn add_region(&mut self, op: OpId) -> RegionId {
        let r = self.regions.insert(RegionData { blocks: Vec::new(), parent: Some(op) });
        self.ops[op].regions.push(r);
        r
    }

    /// Appends a new block with arguments of the given types to `region`.
    pub fn append_block(&mut self, region: RegionId, arg_types: &[Type]) -> BlockId {
        let b = self.blocks.insert(BlockData { parent: Some(region), ..BlockData::default() });
        self.regions[region].blocks.push(b);
        for t in arg_types {
            self.add_block_arg(b, t.clone());
        }
        b
    }

    pub fn add_block_arg(&mut self, block: BlockId, ty: Type) -> ValueId {
        let index = self.blocks[block].args.len();
        let v = self.values.insert(ValueData {
            ty,
            def: ValueDef::BlockArg { block, index },
            uses: Vec::new(),
            name: None,
        });
        self.blocks[block].args.push(v);
        v
    }

    /// Creates a value with no definition yet; it must be replaced (RAUW) before verification.
    pub fn create_placeholder(&mut self, ty: Type) -> ValueId {
        self.values.insert(ValueData { ty, def: ValueDef::Placeholder, uses: Vec::new(), name: None })
    }

    /// Deletes an unused placeholder value.
    pub fn remove_placeholder(&mut self, v: ValueId) {
        if self.values.get(v).is_some_and(|d| d.def == ValueDef::Placeholder && d.uses.is_empty()) {
            self.values.remove(v);
        }
    }

    pub fn set_value_name(&mut self, v: ValueId, name: Option<&str>) {
        self.values[v].name = name.map(Arc::from);
    }

    pub fn set_value_type(&mut self, v: ValueId, ty: Type) {
        self.values[v].ty = ty;
    }

    pub fn set_loc(&mut self, op: OpId, loc: Location) {
        self.ops[op].loc = loc;
    }

    /// Sets (or replaces) an attribute.
    pub fn set_attr(&mut self, op: OpId, name: &str, value: Attribute) {
        let attrs = &mut self.ops[op].attributes;
        match attrs.binary_search_by(|(k, _)| (**k).cmp(name)) {
            Ok(i) => attrs[i].1 = value,
            Err(i) => attrs.insert(i, (name.into(), value)),
        }
    }

    pub fn remove_attr(&mut self, op: OpId, name: &str) -> Option<Attribute> {
        let attrs = &mut self.ops[op].attributes;
        let i = attrs.binary_search_by(|(k, _)| (**k).cmp(name)).ok()?;
        Some(attrs.remove(i).1)
    }

    pub fn rename_op(&mut self, op: OpId, name: &str) {
        self.ops[op].name = name.into();
    }

    // ----- operands and uses -----

    fn push_operand(&mut self, op: OpId, v: ValueId) {
        let index = self.ops[op].operands.len();
        self.ops[op].operands.push(v);
        self.ops[op].use_pos.push(0);
        self.add_use(v, Use { op, index });
    }

    /// Appends `u` to `v`'s use list and records where it sits.
    fn add_use(&mut self, v: ValueId, u: Use) {
        let uses = &mut self.values[v].uses;
        self.ops[u.op].use_pos[u.index] = uses.len();
        uses.push(u);
    }

    /// Removes `u` from `v`'s use list in O(1): the last use takes its place.
    fn remove_use(&mut self, v: ValueId, u: Use) {
        let Some(data) = self.values.get_mut(v) else { return };
        let pos = self.ops[u.op].use_pos[u.index];
        debug_assert_eq!(data.uses.get(pos), Some(&u), "use list position out of date");
        if data.uses.get(pos) != Some(&u) {
            return;
        }
        data.uses.swap_remove(pos);
        if let Some(&moved) = data.uses.get(pos) {
            self.ops[moved.op].use_pos[moved.index] = pos;
        }
    }

    /// Replaces operand `index` of `op` with `v`.
    pub fn set_operand(&mut self, op: OpId, index: usize, v: ValueId) -> Result<(), IrError> {
        let count = self.ops[op].operands.len();
        let Some(&old) = self.ops[op].operands.get(index) else {
            return Err(IrError::OperandOutOfRange { op: self.ops[op].name.to_string(), index, count });
        };
        self.remove_use(old, Use { op, index });
        self.ops[op].operands[index] = v;
        self.add_use(v, Use { op, index });
        Ok(())
    }

    /// Replaces all operands of `op`.
    pub fn set_operands(&mut self, op: OpId, new: Vec<ValueId>) {
        self.drop_operands(op);
        for v in new {
            self.push_operand(op, v);
        }
    }

    /// Removes every operand of `op` from its value's use list.
    fn drop_operands(&mut self, op: OpId) {
        let old = std::mem::take(&mut self.ops[op].operands);
        for (index, v) in old.into_iter().enumerate() {
            self.remove_use(v, Use { op, index });
        }
        self.ops[op].use_pos.clear();
    }

    /// Appends an operand to `op`.
    pub fn append_operand(&mut self, op: OpId, v: ValueId) {
        self.push_operand(op, v);
    }

    /// Replaces every use of `old` with `new` (replace-all-uses-with).
    pub fn replace_all_uses(&mut self, old: ValueId, new: ValueId) {
        if old == new {
            return;
        }
        let uses = std::mem::take(&mut self.values[old].uses);
        for u in uses {
            self.ops[u.op].operands[u.index] = new;
            self.add_use(new, u);
        }
    }

    /// Replaces uses of `old` with `new` where `pred` holds for the using op.
    pub fn replace_uses_where(&mut self, old: ValueId, new: ValueId, pred: impl Fn(&Module, Use) -> bool) {
        if old == new {
            return;
        }
        let uses = self.values[old].uses.clone();
        for u in uses {
            if pred(self, u) {
                self.remove_use(old, u);
                self.ops[u.op].operands[u.index] = new;
                self.add_use(new, u);
            }
        }
    }

    /// Replaces the results of `op` with `new` values, one for one.
    pub fn replace_op_results(&mut self, op: OpId, new: &[ValueId]) {
        let results = self.ops[op].results.clone();
        for (old, &n) in results.into_iter().zip(new) {
            self.replace_all_uses(old, n);
        }
    }

    // ----- placement -----

    /// Inserts a detached op at an insertion point.
    pub fn insert_op(&mut self, op: OpId, at: InsertPoint) -> Result<(), IrError> {
        if self.ops[op].parent.is_some() {
            return Err(IrError::AlreadyInserted(self.ops[op].name.to_string()));
        }
        let (block, prev, next) = match at {
            InsertPoint::End(b) => (b, self.blocks[b].last, None),
            InsertPoint::Start(b) => (b, None, self.blocks[b].first),
            InsertPoint::Before(o) => {
                let b = self.ops[o].parent.ok_or(IrError::Detached)?;
                (b, self.ops[o].prev, Some(o))
            }
            InsertPoint::After(o) => {
                let b = self.ops[o].parent.ok_or(IrError::Detached)?;
                (b, Some(o), self.ops[o].next)
            }
        };
        // Moving an op into one of its own regions would make a cycle.
        if let Some(parent) = self.block_parent_op(block) {
            if self.is_ancestor(op, parent) {
                return Err(IrError::BadMove);
            }
        }
        self.link(op, block, prev, next);
        Ok(())
    }

    fn link(&mut self, op: OpId, block: BlockId, prev: Option<OpId>, next: Option<OpId>) {
        let o = &mut self.ops[op];
        o.parent = Some(block);
        o.prev = prev;
        o.next = next;
        match prev {
            Some(p) => self.ops[p].next = Some(op),
            None => self.blocks[block].first = Some(op),
        }
        match next {
            Some(n) => self.ops[n].prev = Some(op),
            None => self.blocks[block].last = Some(op),
        }
        self.blocks[block].len += 1;
    }

    /// Takes an op out of its block without destroying it.
    pub fn detach_op(&mut self, op: OpId) {
        let Some(block) = self.ops[op].parent else { return };
        let (prev, next) = (self.ops[op].prev, self.ops[op].next);
        match prev {
            Some(p) => self.ops[p].next = next,
            None => self.blocks[block].first = next,
        }
        match next {
            Some(n) => self.ops[n].prev = prev,
            None => self.blocks[block].last = prev,
        }
        self.blocks[block].len -= 1;
        let o = &mut self.ops[op];
        o.parent = None;
        o.prev = None;
        o.next = None;
    }

    /// Moves `op` just before `target` (possibly into another block).
    pub fn move_before(&mut self, op: OpId, target: OpId) -> Result<(), IrError> {
        if op == target {
            return Err(IrError::BadMove);
        }
        self.ops[target].parent.ok_or(IrError::Detached)?;
        if self.is_ancestor(op, target) {
            return Err(IrError::BadMove);
        }
        self.detach_op(op);
        self.insert_op(op, InsertPoint::Before(target))
    }

    /// Moves `op` just after `target`.
    pub fn move_after(&mut self, op: OpId, target: OpId) -> Result<(), IrError> {
        if op == target {
            return Err(IrError::BadMove);
        }
        self.ops[target].parent.ok_or(IrError::Detached)?;
        if self.is_ancestor(op, target) {
            return Err(IrError::BadMove);
        }
        self.detach_op(op);
        self.insert_op(op, InsertPoint::After(target))
    }

    // ----- erasure -----

    /// Erases an op and everything nested in it. Refuses while any result has uses outside the op.
    pub fn erase_op(&mut self, op: OpId) -> Result<(), IrError> {
        for (index, &r) in self.ops[op].results.iter().enumerate() {
            let outside = self.values[r].uses.iter().filter(|u| !self.is_ancestor(op, u.op)).count();
            if outside > 0 {
                return Err(IrError::ResultsInUse { op: self.ops[op].name.to_string(), index, uses: outside });
            }
        }
        self.detach_op(op);
        self.destroy(op);
        Ok(())
    }

    /// Erases a detached or attached op whose results are known to be unused, nested ops included.
    fn destroy(&mut self, op: OpId) {
        // Drop nested ops first, innermost last-to-first so uses disappear before their definitions.
        let regions = std::mem::take(&mut self.ops[op].regions);
        for r in regions {
            self.destroy_region(r);
        }
        self.drop_operands(op);
        for r in std::mem::take(&mut self.ops[op].results) {
            self.values.remove(r);
        }
        self.ops.remove(op);
    }

    fn destroy_region(&mut self, r: RegionId) {
        let blocks = std::mem::take(&mut self.regions[r].blocks);
        for b in blocks {
            for o in self.block_ops(b) {
                self.destroy(o);
            }
            for a in std::mem::take(&mut self.blocks[b].args) {
                self.values.remove(a);
            }
            self.blocks.remove(b);
        }
        self.regions.remove(r);
    }

    /// Erases a block argument that has no uses, renumbering the later ones.
    pub fn erase_block_arg(&mut self, block: BlockId, index: usize) -> Result<(), IrError> {
        let v = self.blocks[block].args[index];
        let uses = self.values[v].uses.len();
        if uses > 0 {
            return Err(IrError::ResultsInUse { op: "block argument".into(), index, uses });
        }
        self.blocks[block].args.remove(index);
        self.values.remove(v);
        for (i, &a) in self.blocks[block].args.clone().iter().enumerate() {
            self.values[a].def = ValueDef::BlockArg { block, index: i };
        }
        Ok(())
    }

    // ----- cloning -----

    /// Clones `op` (with its regions) as a detached op; operands are looked up in `map`
    /// (values not in it are used as they are), and the map learns each cloned value.
    pub fn clone_op(&mut self, op: OpId, map: &mut ValueMap) -> OpId {
        let src = self.ops[op].clone();
        let operands: Vec<ValueId> = src.operands.iter().map(|v| map.lookup(*v)).collect();
        let types: Vec<Type> = src.results.iter().map(|&r| self.values[r].ty.clone()).collect();
        let new = self.create_op(OperationState {
            name: src.name.clone(),
            operands,
            result_types: types,
            attributes: src.attributes.clone(),
            num_regions: 0,
            loc: src.loc.clone(),
        });
        for (i, &r) in src.results.iter().enumerate() {
            let nr = self.ops[new].results[i];
            self.values[nr].name = self.values[r].name.clone();
            map.insert(r, nr);
        }
        for &r in &src.regions {
            let nr = self.add_region(new);
            self.clone_region_into(r, nr, map);
        }
        new
    }

    /// Appends clones of the blocks of `src` to `dst`.
    pub fn clone_region_into(&mut self, src: RegionId, dst: RegionId, map: &mut ValueMap) {
        for b in self.regions[src].blocks.clone() {
            let arg_types: Vec<Type> =
                self.blocks[b].args.iter().map(|&a| self.values[a].ty.clone()).collect();
            let nb = self.append_block(dst, &arg_types);
            for (i, &a) in self.blocks[b].args.clone().iter().enumerate() {
                let na = self.blocks[nb].args[i];
                self.values[na].name = self.values[a].name.clone();
                map.insert(a, na);
            }
            for o in self.block_ops(b) {
                let no = self.clone_op(o, map);
                // Inserting a freshly created op at the end of a fresh block cannot fail.
                let _ = self.insert_op(no, InsertPoint::End(nb));
            }
        }
    }

    /// Moves all blocks of region `src` to the end of region `dst`.
    pub fn take_region_blocks(&mut self, src: RegionId, dst: RegionId) {
        let blocks = std::mem::take(&mut self.regions[src].blocks);
        for &b in &blocks {
            self.blocks[b].parent = Some(dst);
        }
        self.regions[dst].blocks.extend(blocks);
    }

    /// Moves `op` into `block` at the end (detaching it from where it was).
    pub fn move_to_end(&mut self, op: OpId, block: BlockId) -> Result<(), IrError> {
        self.detach_op(op);
        self.insert_op(op, InsertPoint::End(block))
    }

    /// Number of live ops, values, blocks and regions (for tests and statistics).
    pub fn counts(&self) -> (usize, usize, usize, usize) {
        (self.ops.len(), self.values.len(), self.blocks.len(), self.regions.len())
    }
}

/// A mapping from original to cloned values.
#[derive(Clone, Debug, Default)]
pub struct ValueMap {
    map: std::collections::HashMap<ValueId, ValueId>,
}

impl ValueMap {
    pub fn new() -> ValueMap {
        ValueMap::default()
    }

    pub fn insert(&mut self, from: ValueId, to: ValueId) {
        self.map.insert(from, to);
    }

    /// The mapped value, or `v` itself when unmapped.
    pub fn lookup(&self, v: ValueId) -> ValueId {
        self.map.get(&v).copied().unwrap_or(v)
    }

    pub fn get(&self, v: ValueId) -> Option<ValueId> {
        self.map.get(&v).copied()
    }
}
