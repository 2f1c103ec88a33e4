//! Symbolic sizes and broadcasting: range constraints of symbols, products of symbols, and
//! NumPy broadcasting that decides a symbol against another size when its range allows.

use super::*;

/// Known value ranges of symbols, from the module's `prim.range_constraints`.
#[derive(Clone, Debug, Default)]
pub struct Ranges {
    map: HashMap<String, (i64, Option<i64>)>,
}

impl Ranges {
    /// Reads the range constraints of a module (empty when it has none).
    pub fn of_module(m: &Module) -> Ranges {
        let mut r = Ranges::default();
        if let Some(Attribute::Dict(items)) = m.attr(m.top(), RANGE_CONSTRAINTS) {
            for (k, v) in items.iter() {
                let b = v.as_array().unwrap_or(&[]);
                let lo = b.first().and_then(Attribute::as_int).unwrap_or(0);
                let hi = b.get(1).and_then(Attribute::as_int);
                r.map.insert(k.to_string(), (lo, hi));
            }
        }
        r
    }

    pub fn insert(&mut self, sym: &str, lo: i64, hi: Option<i64>) {
        self.map.insert(sym.to_string(), (lo, hi));
    }

    /// The range of a dimension: exact for static sizes, the constraint for a plain symbol,
    /// products of ranges for a product expression, `[0, ∞)` otherwise.
    pub fn range(&self, d: &Dim) -> (i64, Option<i64>) {
        match d {
            Dim::Static(n) => (*n, Some(*n)),
            Dim::Unknown => (0, None),
            Dim::Sym(s) => {
                if let Some(r) = self.map.get(&**s) {
                    return *r;
                }
                match Mono::parse(s) {
                    Some(mono) if !mono.factors.is_empty() => {
                        let mut lo = mono.coef;
                        let mut hi = Some(mono.coef);
                        for f in &mono.factors {
                            let (l, h) = self.map.get(f).copied().unwrap_or((0, None));
                            lo = lo.saturating_mul(l);
                            hi = match (hi, h) {
                                (Some(a), Some(b)) => Some(a.saturating_mul(b)),
                                _ => None,
                            };
                        }
                        (lo, hi)
                    }
                    _ => (0, None),
                }
            }
        }
    }

    /// Whether `d` is known never to be 1.
    pub fn never_one(&self, d: &Dim) -> bool {
        let (lo, hi) = self.range(d);
        lo >= 2 || hi.is_some_and(|h| h < 1)
    }

    /// Whether `d` can take the value `n`.
    pub fn admits(&self, d: &Dim, n: i64) -> bool {
        let (lo, hi) = self.range(d);
        n >= lo && hi.is_none_or(|h| n <= h)
    }
}

// ----- symbolic arithmetic -----

/// A product `coef * f1 * f2 ...` of symbol names (factors sorted); other expressions are atoms.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Mono {
    coef: i64,
    factors: Vec<String>,
}

impl Mono {
    fn parse(s: &str) -> Option<Mono> {
        let mut coef = 1i64;
        let mut factors = Vec::new();
        for part in s.split('*') {
            let p = part.trim();
            if p.is_empty() {
                return None;
            }
            if let Ok(n) = p.parse::<i64>() {
                coef = coef.checked_mul(n)?;
            } else if p.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                factors.push(p.to_string());
            } else {
                // A parenthesized or additive atom is kept whole.
                factors.push(p.to_string());
            }
        }
        factors.sort();
        Some(Mono { coef, factors })
    }

    fn of_dim(d: &Dim) -> Option<Mono> {
        match d {
            Dim::Static(n) => Some(Mono {
                coef: *n,
                factors: Vec::new(),
            }),
            Dim::Sym(s) => {
                if s.contains(['+', '-', '/']) && !s.starts_with('(') {
                    Some(Mono {
                        coef: 1,
                        factors: vec![format!("({s})")],
                    })
                } else {
                    Mono::parse(s)
                }
            }
            Dim::Unknown => None,
        }
    }

    fn to_dim(&self) -> Dim {
        if self.factors.is_empty() || self.coef == 0 {
            return Dim::Static(self.coef);
        }
        let mut parts = Vec::new();
        if self.coef != 1 {
            parts.push(self.coef.to_string());
        }
        parts.extend(self.factors.iter().cloned());
        Dim::Sym(parts.join("*").into())
    }
}

/// `a * b` with symbolic operands kept as a product expression.
pub fn dim_mul(a: &Dim, b: &Dim) -> Dim {
    match (a, b) {
        (Dim::Static(0), _) | (_, Dim::Static(0)) => Dim::Static(0),
        (Dim::Static(x), Dim::Static(y)) => {
            x.checked_mul(*y).map(Dim::Static).unwrap_or(Dim::Unknown)
        }
        _ => match (Mono::of_dim(a), Mono::of_dim(b)) {
            (Some(x), Some(y)) => {
                let Some(coef) = x.coef.checked_mul(y.coef) else {
                    return Dim::Unknown;
                };
                let mut factors = x.factors;
                factors.extend(y.factors);
                factors.sort();
                Mono { coef, factors }.to_dim()
            }
            _ => Dim::Unknown,
        },
    }
}

/// The product of dims (1 for none).
pub fn dim_product(dims: &[Dim]) -> Dim {
    dims.iter().fold(Dim::Static(1), |acc, d| dim_mul(&acc, d))
}

/// `a / b` when it is exact and expressible; `None` when `b` does not divide `a`.
pub fn dim_div_exact(a: &Dim, b: &Dim) -> Option<Dim> {
    match (a, b) {
        (_, Dim::Static(0)) => None,
        (Dim::Static(x), Dim::Static(y)) => (x % y == 0).then(|| Dim::Static(x / y)),
        _ => {
            let (x, y) = (Mono::of_dim(a)?, Mono::of_dim(b)?);
            if y.coef == 0 || x.coef % y.coef != 0 {
                return None;
            }
            let mut factors = x.factors;
            for f in &y.factors {
                let i = factors.iter().position(|g| g == f)?;
                factors.remove(i);
            }
            Some(
                Mono {
                    coef: x.coef / y.coef,
                    factors,
                }
                .to_dim(),
            )
        }
    }
}

/// `a + b`, symbolic as `a+b` text.
pub fn dim_add(a: &Dim, b: &Dim) -> Dim {
    match (a, b) {
        (Dim::Static(x), Dim::Static(y)) => {
            x.checked_add(*y).map(Dim::Static).unwrap_or(Dim::Unknown)
        }
        (Dim::Static(0), d) | (d, Dim::Static(0)) => d.clone(),
        (Dim::Unknown, _) | (_, Dim::Unknown) => Dim::Unknown,
        (x, y) => {
            if x == y {
                return dim_mul(&Dim::Static(2), x);
            }
            Dim::Sym(format!("{x}+{y}").into())
        }
    }
}

pub(super) fn dim_sub_static(a: &Dim, n: i64) -> Dim {
    match a {
        Dim::Static(x) => Dim::Static(x - n),
        Dim::Sym(s) if n == 0 => Dim::Sym(s.clone()),
        Dim::Sym(s) if n > 0 => Dim::Sym(format!("{s}-{n}").into()),
        Dim::Sym(s) => Dim::Sym(format!("{s}+{}", -n).into()),
        Dim::Unknown => Dim::Unknown,
    }
}

// ----- broadcasting -----

pub(super) fn show_shape(s: &[Dim]) -> String {
    let parts: Vec<String> = s.iter().map(|d| d.to_string()).collect();
    format!("[{}]", parts.join(", "))
}

/// Broadcasts two dims; `None` when they are incompatible.
pub fn broadcast_dim(a: &Dim, b: &Dim, r: &Ranges) -> Option<Dim> {
    Some(match (a, b) {
        (Dim::Static(1), x) | (x, Dim::Static(1)) => x.clone(),
        (Dim::Static(x), Dim::Static(y)) => {
            if x == y {
                Dim::Static(*x)
            } else {
                return None;
            }
        }
        (x, y) if x == y => x.clone(),
        // A symbol meets a static size n > 1: the result is n whether the symbol is 1 or n,
        // unless the symbol's range excludes both.
        (s @ Dim::Sym(_), Dim::Static(n)) | (Dim::Static(n), s @ Dim::Sym(_)) => {
            if !r.admits(s, 1) && !r.admits(s, *n) {
                return None;
            }
            Dim::Static(*n)
        }
        (Dim::Unknown, Dim::Static(n)) | (Dim::Static(n), Dim::Unknown) => Dim::Static(*n),
        (x, y) => {
            if r.never_one(x) {
                x.clone()
            } else if r.never_one(y) {
                y.clone()
            } else {
                Dim::Unknown
            }
        }
    })
}

/// Broadcasts two shapes (numpy rules: align right, 1 stretches).
pub fn broadcast_shapes(a: &[Dim], b: &[Dim], r: &Ranges) -> Result<Vec<Dim>, String> {
    let n = a.len().max(b.len());
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let da = if i + a.len() >= n {
            a[i + a.len() - n].clone()
        } else {
            Dim::Static(1)
        };
        let db = if i + b.len() >= n {
            b[i + b.len() - n].clone()
        } else {
            Dim::Static(1)
        };
        match broadcast_dim(&da, &db, r) {
            Some(d) => out.push(d),
            None => {
                return Err(format!(
                    "cannot broadcast shapes {} and {}: dimension {i} is {da} in one and {db} in the other",
                    show_shape(a),
                    show_shape(b)
                ));
            }
        }
    }
    Ok(out)
}

/// Broadcasts optional shapes: an unranked operand makes the result unranked.
pub(super) fn broadcast_all(
    shapes: &[Option<Vec<Dim>>],
    r: &Ranges,
) -> Result<Option<Vec<Dim>>, String> {
    let mut acc: Vec<Dim> = Vec::new();
    for s in shapes {
        match s {
            None => return Ok(None),
            Some(s) => acc = broadcast_shapes(&acc, s, r)?,
        }
    }
    Ok(Some(acc))
}
