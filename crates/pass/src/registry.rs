//! The pass registry: passes by name, with their descriptions, anchors, options and constructors.

use crate::options::PassOptions;
use crate::pass::{Anchor, Pass};
use std::collections::BTreeMap;
use std::sync::Arc;

/// Builds a pass from its parsed options.
pub type PassCtor = Arc<dyn Fn(&PassOptions) -> Result<Box<dyn Pass>, String> + Send + Sync>;

/// What the registry knows about a pass.
#[derive(Clone)]
pub struct PassInfo {
    pub name: String,
    pub description: String,
    pub anchor: Anchor,
    /// The declared options, with their defaults.
    pub options: PassOptions,
    ctor: PassCtor,
}

impl PassInfo {
    /// A pass that runs on any op, with no options.
    pub fn new(
        name: &str,
        description: &str,
        ctor: impl Fn(&PassOptions) -> Result<Box<dyn Pass>, String> + Send + Sync + 'static,
    ) -> PassInfo {
        PassInfo {
            name: name.to_string(),
            description: description.to_string(),
            anchor: Anchor::Any,
            options: PassOptions::new(),
            ctor: Arc::new(ctor),
        }
    }

    pub fn anchor(mut self, anchor: Anchor) -> Self {
        self.anchor = anchor;
        self
    }

    pub fn options(mut self, options: PassOptions) -> Self {
        self.options = options;
        self
    }

    /// Builds the pass from options parsed against [`PassInfo::options`].
    pub fn create(&self, options: &PassOptions) -> Result<Box<dyn Pass>, String> {
        (self.ctor)(options)
    }
}

impl std::fmt::Debug for PassInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PassInfo")
            .field("name", &self.name)
            .field("anchor", &self.anchor)
            .finish()
    }
}

/// Registered passes, by name.
#[derive(Clone, Debug, Default)]
pub struct PassRegistry {
    passes: BTreeMap<String, PassInfo>,
}

impl PassRegistry {
    pub fn new() -> PassRegistry {
        PassRegistry::default()
    }

    /// Registers a pass; a name may be registered once.
    pub fn register(&mut self, info: PassInfo) -> Result<(), String> {
        if !valid_pass_name(&info.name) {
            return Err(format!("invalid pass name '{}'", info.name));
        }
        if self.passes.contains_key(&info.name) {
            return Err(format!("pass '{}' is already registered", info.name));
        }
        self.passes.insert(info.name.clone(), info);
        Ok(())
    }

    pub fn get(&self, name: &str) -> Option<&PassInfo> {
        self.passes.get(name)
    }

    /// The registered passes, sorted by name.
    pub fn passes(&self) -> impl Iterator<Item = &PassInfo> {
        self.passes.values()
    }

    /// Builds a pass by name with option text (the part between braces, possibly empty).
    pub fn create(&self, name: &str, option_text: &str) -> Result<Box<dyn Pass>, String> {
        let info = self
            .get(name)
            .ok_or_else(|| format!("unknown pass '{name}'"))?;
        let mut opts = info.options.clone();
        opts.parse(option_text).map_err(|e| e.to_string())?;
        info.create(&opts)
    }

    /// A listing for `--list-passes` and `--help`: each pass with its anchor, description and options.
    pub fn help_text(&self) -> String {
        let mut out = String::new();
        for p in self.passes.values() {
            out.push_str(&format!("  {}", p.name));
            if let Anchor::Op(a) = &p.anchor {
                out.push_str(&format!(" (on '{a}')"));
            }
            out.push_str(&format!(" - {}\n", p.description));
            for s in p.options.specs() {
                out.push_str(&format!(
                    "      {}={} (default: {}) - {}\n",
                    s.name, s.kind, s.default, s.help
                ));
            }
        }
        out
    }
}

/// Pass names are letters, digits, `-`, `_` and `.`, not starting with a digit or punctuation.
pub(crate) fn valid_pass_name(name: &str) -> bool {
    let mut cs = name.chars();
    cs.next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && cs.all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}
