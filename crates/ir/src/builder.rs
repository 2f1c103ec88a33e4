//! A builder that creates operations at an insertion point.

use crate::attributes::Attribute;
use crate::location::Location;
use crate::module::{BlockId, InsertPoint, Module, OpId, OperationState, ValueId};
use crate::types::Type;

/// Creates ops at an insertion point that advances past each op it inserts.
pub struct Builder<'m> {
    module: &'m mut Module,
    ip: InsertPoint,
    loc: Location,
}

impl<'m> Builder<'m> {
    pub fn new(module: &'m mut Module, ip: InsertPoint) -> Builder<'m> {
        Builder { module, ip, loc: Location::Unknown }
    }

    pub fn at_end(module: &'m mut Module, block: BlockId) -> Builder<'m> {
        Builder::new(module, InsertPoint::End(block))
    }

    pub fn before(module: &'m mut Module, op: OpId) -> Builder<'m> {
        Builder::new(module, InsertPoint::Before(op))
    }

    pub fn after(module: &'m mut Module, op: OpId) -> Builder<'m> {
        Builder::new(module, InsertPoint::After(op))
    }

    pub fn module(&mut self) -> &mut Module {
        self.module
    }

    pub fn module_ref(&self) -> &Module {
        self.module
    }

    pub fn insertion_point(&self) -> InsertPoint {
        self.ip
    }

    pub fn set_insertion_point(&mut self, ip: InsertPoint) {
        self.ip = ip;
    }

    /// The location given to ops whose state has an unknown one.
    pub fn set_loc(&mut self, loc: Location) {
        self.loc = loc;
    }

    /// Creates an op from `state` and inserts it.
    pub fn insert(&mut self, mut state: OperationState) -> OpId {
        if state.loc == Location::Unknown {
            state.loc = self.loc.clone();
        }
        let op = self.module.create_op(state);
        // A fresh op is detached, and the insertion point is valid by construction; a stale
        // point (its anchor erased) falls back to the end of no block, which cannot be reached
        // through this API because anchors are only erased by the module's owner.
        let _ = self.module.insert_op(op, self.ip);
        if let InsertPoint::After(_) | InsertPoint::Start(_) = self.ip {
            self.ip = InsertPoint::After(op);
        }
        op
    }

    /// Creates a single-result op and returns its result.
    pub fn op1(&mut self, name: &str, operands: &[ValueId], result: Type, attrs: Vec<(&str, Attribute)>) -> ValueId {
        let mut st = OperationState::new(name).operands(operands.iter().copied()).results([result]);
        for (k, v) in attrs {
            st = st.attr(k, v);
        }
        let op = self.insert(st);
        self.module.results(op)[0]
    }
}
