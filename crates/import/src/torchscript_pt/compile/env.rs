//! Compile-time values (`Sv`, TorchScript's sugared values) and the scopes that bind names to
//! them.

use ir::{Attribute, ValueId};

/// What a name or expression stands for while compiling.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Sv {
    /// An IR value.
    Val(ValueId),
    /// The module at this attribute path from the root (`[]` is the root, `self`).
    Module(Vec<String>),
    /// A free function, by qualified name.
    Func(String),
    /// A method of a module, or a method called on a value (`x.size`).
    Method(Box<Sv>, String),
    /// A dotted prefix that is not yet a function: `torch`, `ops.aten`, `__torch__.torch.nn`.
    Namespace(String),
    /// A dict built in the program; its keys are constants.
    Dict(Vec<(Attribute, Sv)>),
}

impl Sv {
    /// What this is, for messages.
    pub(crate) fn describe(&self) -> String {
        match self {
            Sv::Val(_) => "a value".into(),
            Sv::Module(p) if p.is_empty() => "the module `self`".into(),
            Sv::Module(p) => format!("the module `{}`", p.join(".")),
            Sv::Func(f) => format!("the function `{f}`"),
            Sv::Method(_, m) => format!("the method `{m}`"),
            Sv::Namespace(n) => format!("`{n}`"),
            Sv::Dict(_) => "a dict".into(),
        }
    }
}

/// One scope: the names bound in it, in the order they were first bound.
#[derive(Clone, Debug, Default)]
pub(crate) struct Frame {
    names: Vec<(String, Sv)>,
    /// The scope raised an exception: nothing after it runs.
    pub(crate) dead: bool,
    /// Names this scope narrowed (an optional known present), with the narrowed value.
    pub(crate) refined: Vec<(String, Sv)>,
}

impl Frame {
    pub(crate) fn get(&self, name: &str) -> Option<&Sv> {
        self.names.iter().find(|(n, _)| n == name).map(|(_, v)| v)
    }

    pub(crate) fn set(&mut self, name: &str, v: Sv) {
        match self.names.iter_mut().find(|(n, _)| n == name) {
            Some(slot) => slot.1 = v,
            None => self.names.push((name.to_owned(), v)),
        }
    }

    /// Forgets `name` in this scope.
    pub(crate) fn remove(&mut self, name: &str) {
        self.names.retain(|(n, _)| n != name);
    }

    /// The names bound here, in order.
    pub(crate) fn names(&self) -> impl Iterator<Item = &(String, Sv)> {
        self.names.iter()
    }
}
