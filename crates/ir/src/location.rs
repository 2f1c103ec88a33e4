//! Source locations attached to operations: file positions, names, fused sets.

use std::fmt;
use std::sync::Arc;

#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub enum Location {
    #[default]
    Unknown,
    /// `loc("file.py":12:4)`.
    File { file: Arc<str>, line: u32, col: u32 },
    /// `loc("name")` or `loc("name"(child))`.
    Name { name: Arc<str>, child: Option<Arc<Location>> },
    /// `loc(fused["a", "b"])`: an op that came from several places.
    Fused(Arc<[Location]>),
}

impl Location {
    pub fn file(file: &str, line: u32, col: u32) -> Location {
        Location::File { file: file.into(), line, col }
    }

    pub fn name(name: &str) -> Location {
        Location::Name { name: name.into(), child: None }
    }

    /// Fuses locations, flattening nested fused sets and dropping unknown and duplicate ones.
    pub fn fuse(locs: impl IntoIterator<Item = Location>) -> Location {
        let mut out: Vec<Location> = Vec::new();
        // Past a few locations duplicates are found by hashing, so fusing the locations of
        // thousands of ops (a large fusion group) stays linear.
        let mut seen: Option<std::collections::HashSet<Location>> = None;
        let mut add = |l: Location, out: &mut Vec<Location>| {
            let fresh = match &mut seen {
                Some(set) => set.insert(l.clone()),
                None => !out.contains(&l),
            };
            if fresh {
                out.push(l);
                if seen.is_none() && out.len() >= 16 {
                    seen = Some(out.iter().cloned().collect());
                }
            }
        };
        for l in locs {
            match l {
                Location::Unknown => {}
                Location::Fused(inner) => {
                    for i in inner.iter() {
                        add(i.clone(), &mut out);
                    }
                }
                other => add(other, &mut out),
            }
        }
        match out.len() {
            0 => Location::Unknown,
            1 => out.pop().unwrap_or_default(),
            _ => Location::Fused(out.into()),
        }
    }

    /// The first file position inside this location, if any.
    pub fn file_line_col(&self) -> Option<(&str, u32, u32)> {
        match self {
            Location::File { file, line, col } => Some((file, *line, *col)),
            Location::Name { child: Some(c), .. } => c.file_line_col(),
            Location::Fused(ls) => ls.iter().find_map(Location::file_line_col),
            _ => None,
        }
    }
}

/// Prints the part inside `loc(...)`.
impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Location::Unknown => f.write_str("unknown"),
            Location::File { file, line, col } => {
                crate::attributes::write_escaped_string(f, file)?;
                write!(f, ":{line}:{col}")
            }
            Location::Name { name, child } => {
                crate::attributes::write_escaped_string(f, name)?;
                if let Some(c) = child {
                    write!(f, "({c})")?;
                }
                Ok(())
            }
            Location::Fused(ls) => {
                f.write_str("fused[")?;
                for (i, l) in ls.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{l}")?;
                }
                f.write_str("]")
            }
        }
    }
}
