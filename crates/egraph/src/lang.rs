//! The e-graph language: generic operations keyed by name and attributes, splat constants with
//! exact float identity, projections of multi-result operations, and opaque leaves.

use egg::{Id, Language, Symbol};
use smallvec::SmallVec;
use std::fmt;

/// The operands of an operation e-node, inline up to three.
pub type Args = SmallVec<[Id; 3]>;

/// The value of a splat constant. Floats are kept by bit pattern, so `0.0` and `-0.0` (and
/// every NaN payload) are different constants.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Scalar {
    /// An f64 by its bits (f32 and narrower values are stored widened, which is exact).
    Float(u64),
    Int(i64),
    Bool(bool),
}

impl Scalar {
    pub fn float(v: f64) -> Scalar {
        Scalar::Float(v.to_bits())
    }

    /// The value as an f64 (exact for floats, bools and integers below 2^53).
    pub fn as_f64(self) -> f64 {
        match self {
            Scalar::Float(b) => f64::from_bits(b),
            Scalar::Int(i) => i as f64,
            Scalar::Bool(b) => b as u8 as f64,
        }
    }
}

impl fmt::Display for Scalar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Scalar::Float(b) => write!(f, "{:?}", f64::from_bits(*b)),
            Scalar::Int(i) => write!(f, "{i}"),
            Scalar::Bool(b) => write!(f, "{b}"),
        }
    }
}

/// The index of an operation's attribute set in its e-graph's table
/// ([`crate::analysis::Facts::attrs`]). Sixteen bits keep an operation e-node at 32 bytes (its
/// tag, name, attributes and inline operands) instead of 40: the hash-consing table, egg's list
/// of e-nodes and every class's e-nodes are a fifth smaller, which on large runs of ops means
/// fewer cache misses in every phase.
pub type AttrIndex = u16;

/// The attribute index of a pattern node that matches any attributes (`op*` in rule files).
pub const ANY_ATTRS: AttrIndex = AttrIndex::MAX;

/// One e-node.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Node {
    /// An operation: its name, its interned attribute set (`0`: none; see
    /// [`crate::analysis::Facts::attrs`]) and its operands.
    Op { name: Symbol, attrs: AttrIndex, args: Args },
    /// Result `index` of a multi-result operation.
    Proj { index: u32, args: [Id; 1] },
    /// A constant whose elements all equal `value`; `ty` is its interned type.
    Const { ty: u32, value: Scalar },
    /// A value the e-graph does not look into: a block argument, a value from outside the
    /// converted ops, or a result of an op left in place. Indexes the conversion's leaf table.
    Leaf(u32),
}

impl Node {
    /// The order key: kind, then name and arity before attributes, so nodes that a pattern
    /// with any attributes matches sit together in a sorted class.
    fn key(&self) -> (u8, Option<Symbol>, usize, u32, u64, &[Id]) {
        match self {
            Node::Op { name, attrs, args } => (0, Some(*name), args.len(), u32::from(*attrs), 0, args.as_slice()),
            Node::Proj { index, args } => (1, None, 1, *index, 0, args),
            Node::Const { ty, value } => {
                let v = match value {
                    Scalar::Float(b) => *b,
                    Scalar::Int(i) => *i as u64,
                    Scalar::Bool(b) => *b as u64,
                };
                let kind = match value {
                    Scalar::Float(_) => 0,
                    Scalar::Int(_) => 1,
                    Scalar::Bool(_) => 2,
                };
                (2, None, kind, *ty, v, &[])
            }
            Node::Leaf(i) => (3, None, 0, *i, 0, &[]),
        }
    }
}

impl PartialOrd for Node {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Node {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.key().cmp(&other.key())
    }
}

/// What two e-nodes must share to match: everything but the operand classes (and, for
/// operations, the attributes, which [`Language::matches`] compares unless one side is
/// [`ANY_ATTRS`]).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Head {
    Op { name: Symbol, arity: usize },
    Proj(u32),
    Const { ty: u32, value: Scalar },
    Leaf(u32),
}

impl Node {
    pub fn op(name: &str, args: Vec<Id>) -> Node {
        Node::Op { name: Symbol::from(name), attrs: 0, args: args.into() }
    }

    /// The operation name of an `Op` node.
    pub fn op_name(&self) -> Option<&str> {
        match self {
            Node::Op { name, .. } => Some(name.as_str()),
            _ => None,
        }
    }
}

impl Language for Node {
    type Discriminant = Head;

    fn discriminant(&self) -> Head {
        match self {
            Node::Op { name, args, .. } => Head::Op { name: *name, arity: args.len() },
            Node::Proj { index, .. } => Head::Proj(*index),
            Node::Const { ty, value } => Head::Const { ty: *ty, value: *value },
            Node::Leaf(i) => Head::Leaf(*i),
        }
    }

    fn matches(&self, other: &Self) -> bool {
        match (self, other) {
            (Node::Op { attrs: a, .. }, Node::Op { attrs: b, .. }) => {
                self.discriminant() == other.discriminant() && (a == b || *a == ANY_ATTRS || *b == ANY_ATTRS)
            }
            _ => self.discriminant() == other.discriminant(),
        }
    }

    fn children(&self) -> &[Id] {
        match self {
            Node::Op { args, .. } => args,
            Node::Proj { args, .. } => args,
            Node::Const { .. } | Node::Leaf(_) => &[],
        }
    }

    fn children_mut(&mut self) -> &mut [Id] {
        match self {
            Node::Op { args, .. } => args,
            Node::Proj { args, .. } => args,
            Node::Const { .. } | Node::Leaf(_) => &mut [],
        }
    }
}

impl fmt::Display for Node {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Node::Op { name, .. } => write!(f, "{name}"),
            Node::Proj { index, .. } => write!(f, "#{index}"),
            Node::Const { value, .. } => write!(f, "(const {value})"),
            Node::Leaf(i) => write!(f, "leaf{i}"),
        }
    }
}

/// Patterns are parsed by this crate's rule reader, but egg's generic pattern parser also
/// works: `?x` is a variable, a number is a scalar constant of type #0, and anything else is an
/// operation without attributes.
impl egg::FromOp for Node {
    type Error = String;

    fn from_op(op: &str, children: Vec<Id>) -> Result<Self, Self::Error> {
        if let Some(rest) = op.strip_prefix('#') {
            let index = rest.parse::<u32>().map_err(|_| format!("bad projection '{op}'"))?;
            let [c] = children[..] else { return Err(format!("projection '{op}' takes one operand")) };
            return Ok(Node::Proj { index, args: [c] });
        }
        Ok(Node::Op { name: Symbol::from(op), attrs: 0, args: children.into() })
    }
}
