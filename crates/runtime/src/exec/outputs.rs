//! Output trees: the program's outputs nested as its pytree spec says. The spec itself, and
//! every spelling of it, belongs to the importer ([`import::TreeSpec`]).

use import::{DictKey, TreeSpec};

use crate::value::IValue;

/// The nesting of a program's outputs: the importer's pytree spec.
pub use import::TreeSpec as OutSpec;

/// Nests the flat `leaves` as `spec` says. A node of another type (a model's output class)
/// nests as a tuple of its children; a leaf past the end of `leaves` is `None`.
pub(super) fn build(spec: &TreeSpec, leaves: &mut std::vec::IntoIter<IValue>) -> Outputs {
    match spec {
        TreeSpec::Leaf => Outputs::Value(leaves.next().unwrap_or(IValue::None)),
        TreeSpec::None => Outputs::None,
        TreeSpec::Tuple(xs) | TreeSpec::Other { children: xs, .. } => {
            Outputs::Tuple(xs.iter().map(|x| build(x, leaves)).collect())
        }
        TreeSpec::List(xs) => Outputs::List(xs.iter().map(|x| build(x, leaves)).collect()),
        TreeSpec::Dict(xs) => Outputs::Dict(
            xs.iter()
                .map(|(k, x)| {
                    let key = match k {
                        DictKey::Str(s) => s.clone(),
                        DictKey::Int(i) => i.to_string(),
                    };
                    (key, build(x, leaves))
                })
                .collect(),
        ),
    }
}

/// Outputs nested as the program's output spec says.
#[derive(Clone, Debug)]
pub enum Outputs {
    Value(IValue),
    None,
    Tuple(Vec<Outputs>),
    List(Vec<Outputs>),
    Dict(Vec<(String, Outputs)>),
}

impl Outputs {
    /// The value of a leaf.
    pub fn value(&self) -> Option<&IValue> {
        match self {
            Outputs::Value(v) => Some(v),
            _ => None,
        }
    }

    /// Element `i` of a tuple or list.
    pub fn index(&self, i: usize) -> Option<&Outputs> {
        match self {
            Outputs::Tuple(xs) | Outputs::List(xs) => xs.get(i),
            _ => None,
        }
    }

    /// Entry `key` of a dict.
    pub fn get(&self, key: &str) -> Option<&Outputs> {
        match self {
            Outputs::Dict(xs) => xs.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// The leaves, flattened in order.
    pub fn leaves(&self) -> Vec<&IValue> {
        let mut out = Vec::new();
        fn walk<'a>(o: &'a Outputs, out: &mut Vec<&'a IValue>) {
            match o {
                Outputs::Value(v) => out.push(v),
                Outputs::None => {}
                Outputs::Tuple(xs) | Outputs::List(xs) => xs.iter().for_each(|x| walk(x, out)),
                Outputs::Dict(xs) => xs.iter().for_each(|(_, x)| walk(x, out)),
            }
        }
        walk(self, &mut out);
        out
    }
}
