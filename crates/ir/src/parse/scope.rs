//! SSA scopes: value names, forward references and their resolution.

use super::*;
use crate::diag::Diagnostic;
use crate::location::Location;
use crate::module::ValueId;
use crate::types::Type;

impl<'a> Parser<'a> {
    // ----- SSA scopes -----

    pub(super) fn open_scope(&mut self, isolated: bool) {
        self.scopes.push(Scope { isolated, ..Scope::default() });
    }

    /// Closes a scope; unresolved forward references move outwards unless the scope is isolated.
    pub(super) fn close_scope(&mut self) -> PResult<()> {
        let Some(scope) = self.scopes.pop() else { return Ok(()) };
        let mut pending: Vec<(String, (ValueId, Location))> = scope.forward.into_iter().collect();
        pending.sort_by_key(|(_, (_, l))| l.file_line_col().map(|(_, a, b)| (a, b)));
        if let Some((name, (_, loc))) = pending.first() {
            if scope.isolated || self.scopes.is_empty() {
                return Err(Diagnostic::error(loc.clone(), format!("use of undeclared SSA value name '%{name}'")));
            }
        }
        if let Some(parent) = self.scopes.last_mut() {
            for (k, v) in pending {
                parent.forward.entry(k).or_insert(v);
            }
        }
        Ok(())
    }

    pub(super) fn lookup(&self, name: &str) -> Option<&Vec<ValueId>> {
        for s in self.scopes.iter().rev() {
            if let Some(v) = s.defs.get(name) {
                return Some(v);
            }
            if s.isolated {
                break;
            }
        }
        None
    }

    /// Resolves an operand reference with its (now known) type.
    pub(super) fn resolve(&mut self, r: &OperandRef, ty: &Type) -> PResult<ValueId> {
        let found = self.lookup(&r.name).cloned();
        let v = match found {
            Some(vals) => {
                let i = r.index.unwrap_or(0);
                if r.index.is_none() && vals.len() > 1 {
                    return Err(Diagnostic::error(
                        r.loc.clone(),
                        format!("'%{}' has {} results: refer to one as '%{}#N'", r.name, vals.len(), r.name),
                    ));
                }
                *vals.get(i).ok_or_else(|| {
                    Diagnostic::error(
                        r.loc.clone(),
                        format!("result number {i} of '%{}' out of range (it has {})", r.name, vals.len()),
                    )
                })?
            }
            None => {
                let key = match r.index {
                    Some(i) => format!("{}#{i}", r.name),
                    None => r.name.clone(),
                };
                if let Some((v, _)) = self.find_forward(&key) {
                    v
                } else {
                    let v = self.m.create_placeholder(ty.clone());
                    if let Some(s) = self.scopes.last_mut() {
                        s.forward.insert(key, (v, r.loc.clone()));
                    }
                    v
                }
            }
        };
        if self.m.value_type(v) != ty {
            return Err(Diagnostic::error(
                r.loc.clone(),
                format!(
                    "use of value '%{}' expects different type than prior uses: '{ty}' vs '{}'",
                    r.name,
                    self.m.value_type(v)
                ),
            ));
        }
        Ok(v)
    }

    pub(super) fn find_forward(&self, key: &str) -> Option<(ValueId, Location)> {
        for s in self.scopes.iter().rev() {
            if let Some(f) = s.forward.get(key) {
                return Some(f.clone());
            }
            if s.isolated {
                break;
            }
        }
        None
    }

    /// Defines `%name` (a group of values for `%name:N`) in the innermost scope.
    pub(super) fn define(&mut self, name: &str, values: Vec<ValueId>, loc: &Location) -> PResult<()> {
        let scope_len = self.scopes.len();
        let redefined = self.scopes.last().is_some_and(|s| s.defs.contains_key(name));
        if redefined {
            return Err(Diagnostic::error(loc.clone(), format!("redefinition of SSA value '%{name}'")));
        }
        // Resolve forward references made in this scope or nested (non-isolated) ones.
        let keys: Vec<(String, ValueId)> = if values.len() == 1 {
            vec![(name.to_string(), values[0])]
        } else {
            values.iter().enumerate().map(|(i, &v)| (format!("{name}#{i}"), v)).collect()
        };
        for (key, v) in keys {
            let mut idx = scope_len;
            while idx > 0 {
                idx -= 1;
                if let Some((ph, use_loc)) = self.scopes[idx].forward.remove(&key) {
                    if self.m.value_type(ph) != self.m.value_type(v) {
                        return Err(Diagnostic::error(
                            use_loc,
                            format!(
                                "definition of '%{name}' has type '{}' but prior uses expect '{}'",
                                self.m.value_type(v),
                                self.m.value_type(ph)
                            ),
                        ));
                    }
                    self.m.replace_all_uses(ph, v);
                    self.m.remove_placeholder(ph);
                    break;
                }
                if idx + 1 == scope_len && self.scopes[idx].isolated {
                    break;
                }
            }
        }
        if !name.chars().all(|c| c.is_ascii_digit()) {
            if let Some(&first) = values.first() {
                self.m.set_value_name(first, Some(name));
            }
        }
        if let Some(s) = self.scopes.last_mut() {
            s.defs.insert(name.to_string(), values);
        }
        Ok(())
    }

}
