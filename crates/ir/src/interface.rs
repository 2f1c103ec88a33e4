//! Op identity and op interfaces: typed capabilities attached to op definitions by the crates
//! that own them (MLIR's interfaces and external models).
//!
//! An [`OpRef`] names an op without a string literal at the use site: dialects declare one
//! constant per op beside its declaration (the aten dialect generates them from its schema
//! file), and every other crate refers to the op through that constant. An interface is any
//! `Send + Sync + 'static` type; the crate that defines it also says what it means, and any
//! crate may attach a value of it to an op with [`Context::attach`](crate::Context::attach)
//! while the context is being built. Lookups go through the op's definition, so an op that
//! mirrors another (an Edge op and its ATen op, see [`OpDef::mirrors`](crate::OpDef)) sees the
//! interfaces of the op it mirrors unless it has its own.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

/// The identity of an op: its registered name, held as a constant by the crate that declares it.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct OpRef(&'static str);

impl OpRef {
    /// The handle of the op registered as `name` (`"mylib.softsign"`). Call it only where the op
    /// is declared; everything else uses the declared constant.
    pub const fn new(name: &'static str) -> OpRef {
        OpRef(name)
    }

    /// The op's registered name.
    pub const fn name(self) -> &'static str {
        self.0
    }

    /// Whether `name` is this op's name.
    pub fn is(self, name: &str) -> bool {
        self.0 == name
    }
}

impl fmt::Debug for OpRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "OpRef({})", self.0)
    }
}

impl fmt::Display for OpRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}

/// A name written where an op is declared or registered.
impl From<&'static str> for OpRef {
    fn from(name: &'static str) -> OpRef {
        OpRef(name)
    }
}

impl From<OpRef> for String {
    fn from(o: OpRef) -> String {
        o.0.to_string()
    }
}

impl From<OpRef> for std::borrow::Cow<'static, str> {
    fn from(o: OpRef) -> std::borrow::Cow<'static, str> {
        std::borrow::Cow::Borrowed(o.0)
    }
}

impl AsRef<str> for OpRef {
    fn as_ref(&self) -> &str {
        self.0
    }
}

/// Interfaces attached to ops, keyed by interface type, then by op name (so a query borrows
/// the name and allocates nothing).
#[derive(Default)]
pub(crate) struct Interfaces {
    by_type: HashMap<TypeId, HashMap<Box<str>, Arc<dyn Any + Send + Sync>>>,
}

impl Interfaces {
    pub(crate) fn insert<I: Any + Send + Sync>(&mut self, op: &str, value: I) {
        self.by_type.entry(TypeId::of::<I>()).or_default().insert(op.into(), Arc::new(value));
    }

    pub(crate) fn get<I: Any + Send + Sync>(&self, op: &str) -> Option<&I> {
        self.by_type.get(&TypeId::of::<I>())?.get(op)?.downcast_ref::<I>()
    }

    pub(crate) fn all<I: Any + Send + Sync>(&self) -> impl Iterator<Item = (&str, &I)> {
        self.by_type
            .get(&TypeId::of::<I>())
            .into_iter()
            .flat_map(|m| m.iter().filter_map(|(n, v)| Some((&**n, v.downcast_ref::<I>()?))))
    }
}
