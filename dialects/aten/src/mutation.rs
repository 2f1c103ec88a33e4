//! The functional counterpart of a mutating op, read from its schema's alias annotations.
//!
//! An in-place variant writes its first argument (`add_.Tensor(Tensor(a!) self, …)`,
//! `__iand__.Tensor`); its counterpart is the op of the same overload without the trailing `_`
//! (`add.Tensor`, `__and__.Tensor`). An out variant writes keyword-only arguments
//! (`add.out(…, *, Tensor(a!) out)`, `max.dim_max(…, *, Tensor(a!) max, Tensor(b!) max_values)`);
//! its counterpart is the overload of the same name that takes the other arguments and returns
//! one value per written argument (`add.Tensor`, `max.dim`). Arguments match by position and
//! type; names may differ (`dropout_` takes `self` where `dropout` takes `input`). Both
//! `functionalize` and the interpreter's fallback for mutating ops without a kernel use this.

use ir::Context;
use ir::schema::{FunctionSchema, SchemaType};

/// How a mutating op maps to its functional counterpart.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Counterpart {
    /// The counterpart's full name (`aten.add.Tensor`).
    pub op: String,
    /// The schema indices of the written arguments, in order; the counterpart's results are
    /// written into them one to one.
    pub written: Vec<usize>,
    /// Whether the op is an out variant: its written arguments are not passed to the counterpart.
    pub is_out: bool,
    /// The counterpart's tensor options an out variant does not take (`dtype`, `layout`,
    /// `device`, `pin_memory` of a factory: `eye.out` computes `eye` into its `out`), by their
    /// index in the counterpart's schema. They take their defaults, except `dtype`, which is the
    /// written tensor's ([`Counterpart::dtype_arg`]), as PyTorch computes into `out`'s dtype.
    pub options: Vec<usize>,
}

/// The tensor options of a factory op: keyword-only, optional, `None` by default.
const OPTIONS: [(&str, SchemaType); 4] =
    [("dtype", SchemaType::ScalarType), ("layout", SchemaType::Layout), ("device", SchemaType::Device), ("pin_memory", SchemaType::Bool)];

impl Counterpart {
    /// The counterpart's index of the `dtype` option the out variant does not take, which is
    /// given the written tensor's dtype.
    pub fn dtype_arg(&self, counterpart: &FunctionSchema) -> Option<usize> {
        self.options.iter().copied().find(|&i| counterpart.args.get(i).is_some_and(|a| a.name == "dtype"))
    }
}

/// Why a mutating op has no functional counterpart.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CounterpartError {
    #[error("it is neither an in-place nor an out= variant")]
    NotInplaceOrOut,
    #[error("no functional counterpart ({0}) is registered")]
    Missing(String),
}

/// The in-place ops PyTorch tags `inplace_view` (`torch.Tag.inplace_view`): they change only the
/// sizes, strides or storage of `self`, not its elements, so a later read of `self` sees the new
/// shape. Writing their functional result back with `copy_` cannot express that; a fallback
/// instead makes the later reads of `self` read the functional result.
pub const INPLACE_VIEW: &[&str] = &[
    "as_strided_",
    "detach_",
    "resize_",
    "resize_as_",
    "set_",
    "squeeze_",
    "swapaxes_",
    "swapdims_",
    "t_",
    "transpose_",
    "unsqueeze_",
];

/// Whether `schema` is one of PyTorch's `inplace_view` ops ([`INPLACE_VIEW`]), in any overload.
pub fn is_inplace_view(schema: &FunctionSchema) -> bool {
    schema.namespace == "aten" && INPLACE_VIEW.contains(&schema.name.as_str())
}

/// An op's name without its in-place marker: `add_` → `add`, `__iand__` → `__and__`; other
/// names, dunder ones (`__and__`) included, as they are.
pub fn base_name(name: &str) -> std::borrow::Cow<'_, str> {
    if let Some(dunder) = name.strip_prefix("__i").and_then(|n| n.strip_suffix("__")) {
        return format!("__{dunder}__").into();
    }
    if name.ends_with("__") {
        return name.into();
    }
    name.trim_end_matches('_').into()
}

/// The functional counterpart of the mutating op `schema` among the ops of `ctx`.
pub fn functional_counterpart(ctx: &Context, schema: &FunctionSchema) -> Result<Counterpart, CounterpartError> {
    let written: Vec<usize> = (0..schema.args.len()).filter(|&i| schema.arg_is_written(i)).collect();
    let ns = &schema.namespace;
    if schema.is_inplace() && written == [0] {
        let base = base_name(&schema.name);
        let mut name = format!("{ns}.{base}");
        if !schema.overload.is_empty() {
            name.push('.');
            name.push_str(&schema.overload);
        }
        let fits = |c: &FunctionSchema| takes(c, schema, &[]) && c.returns.len() == 1;
        if ctx.op_def(&name).and_then(|d| d.schema.as_ref()).is_some_and(|c| fits(c)) {
            return Ok(Counterpart { op: name, written, is_out: false, options: Vec::new() });
        }
        // The same arguments under another overload name (`transpose_` → `transpose.int`).
        return match overload_that_fits(ctx, ns, &base, fits) {
            Some(op) => Ok(Counterpart { op, written, is_out: false, options: Vec::new() }),
            None => Err(CounterpartError::Missing(name)),
        };
    }
    if !schema.is_out() || written != schema.out_args() {
        return Err(CounterpartError::NotInplaceOrOut);
    }
    let prefix = format!("{ns}.{}", schema.name);
    // The spelled-out guesses first (`Foo_out` → `Foo`; `out` → the default or `Tensor`), then
    // any overload of the name that fits.
    let mut guesses: Vec<String> = match schema.overload.strip_suffix("_out") {
        Some(o) if !o.is_empty() => vec![format!("{prefix}.{o}")],
        _ => vec![prefix.clone(), format!("{prefix}.Tensor")],
    };
    let fits = |c: &FunctionSchema| !c.is_mutable() && takes_with_options(c, schema, &written).is_some() && c.returns.len() == written.len();
    let found = |op: String| {
        let options = ctx
            .op_def(&op)
            .and_then(|d| d.schema.as_ref())
            .and_then(|c| takes_with_options(c, schema, &written))
            .unwrap_or_default();
        Counterpart { op, written: written.clone(), is_out: true, options }
    };
    for g in &guesses {
        if ctx.op_def(g).and_then(|d| d.schema.as_ref()).is_some_and(|c| fits(c)) {
            return Ok(found(g.clone()));
        }
    }
    match overload_that_fits(ctx, ns, &schema.name, fits) {
        Some(op) => Ok(found(op)),
        None => {
            guesses.dedup();
            Err(CounterpartError::Missing(guesses.join(" or ")))
        }
    }
}

/// The first, by name, of the overloads of `ns::name` that `fits` accepts.
fn overload_that_fits(ctx: &Context, ns: &str, name: &str, fits: impl Fn(&FunctionSchema) -> bool) -> Option<String> {
    ctx.ops()
        .filter(|d| d.schema.as_ref().is_some_and(|c| c.namespace == ns && c.name == name && fits(c)))
        .map(|d| d.name.as_str())
        .min()
        .map(str::to_string)
}

/// Whether `cand` takes the arguments of `schema` other than `drop`, by position and type,
/// where `cand` may also take tensor options `schema` does not (a factory's `dtype`, `layout`,
/// `device`, `pin_memory`, which its out variant reads from `out`); those options' indices in
/// `cand`, or `None` when it does not fit.
fn takes_with_options(cand: &FunctionSchema, schema: &FunctionSchema, drop: &[usize]) -> Option<Vec<usize>> {
    if takes(cand, schema, drop) {
        return Some(Vec::new());
    }
    let is_option = |a: &ir::schema::Argument| {
        a.kwarg_only
            && a.default.is_some()
            && OPTIONS.iter().any(|(n, t)| {
                a.name == *n && matches!(&a.ty, SchemaType::Optional(inner) if **inner == *t)
            })
            && schema.args.iter().all(|s| s.name != a.name)
    };
    let options: Vec<usize> = (0..cand.args.len()).filter(|&i| is_option(&cand.args[i])).collect();
    if options.is_empty() || cand.is_mutable() {
        return None;
    }
    let want: Vec<&SchemaType> =
        schema.args.iter().enumerate().filter(|(i, _)| !drop.contains(i)).map(|(_, a)| &a.ty).collect();
    let got: Vec<&SchemaType> =
        cand.args.iter().enumerate().filter(|(i, _)| !options.contains(i)).map(|(_, a)| &a.ty).collect();
    (want == got).then_some(options)
}

/// Whether `cand` takes exactly the arguments of `schema` other than `drop`, by position and type.
fn takes(cand: &FunctionSchema, schema: &FunctionSchema, drop: &[usize]) -> bool {
    let want: Vec<&SchemaType> =
        schema.args.iter().enumerate().filter(|(i, _)| !drop.contains(i)).map(|(_, a)| &a.ty).collect();
    let got: Vec<&SchemaType> = cand.args.iter().map(|a| &a.ty).collect();
    want == got && !cand.is_mutable()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx() -> Context {
        crate::test_context()
    }

    fn of(ctx: &Context, name: &str) -> Result<Counterpart, CounterpartError> {
        let s = ctx.op_def(name).and_then(|d| d.schema.clone()).expect(name);
        functional_counterpart(ctx, &s)
    }

    #[test]
    fn inplace_variants_map_to_the_same_overload() {
        let c = ctx();
        assert_eq!(of(&c, "aten.add_.Tensor").unwrap().op, "aten.add.Tensor");
        assert_eq!(of(&c, "aten.hardswish_").unwrap().op, "aten.hardswish");
        // The argument is `self` in one and `input` in the other.
        assert_eq!(of(&c, "aten.dropout_").unwrap().op, "aten.dropout");
        assert_eq!(of(&c, "aten.__iand__.Tensor").unwrap().op, "aten.__and__.Tensor");
        // The same arguments under another overload name.
        assert_eq!(of(&c, "aten.transpose_").unwrap().op, "aten.transpose.int");
    }

    #[test]
    fn inplace_view_ops_are_pytorchs() {
        let c = ctx();
        let tagged = |n: &str| is_inplace_view(&c.op_def(n).and_then(|d| d.schema.clone()).expect(n));
        assert!(tagged("aten.unsqueeze_") && tagged("aten.squeeze_.dim") && tagged("aten.resize_"));
        assert!(!tagged("aten.add_.Tensor") && !tagged("aten.unsqueeze"));
    }

    #[test]
    fn out_variants_drop_their_written_arguments() {
        let c = ctx();
        let add = of(&c, "aten.add.out").unwrap();
        assert_eq!(add.op, "aten.add.Tensor");
        assert!(add.is_out);
        let max = of(&c, "aten.max.dim_max").unwrap();
        assert_eq!(max.op, "aten.max.dim");
        assert_eq!(max.written.len(), 2);
    }

    #[test]
    fn factory_out_variants_leave_their_tensor_options_to_out() {
        let c = ctx();
        for (out, functional) in [
            ("aten.eye.out", "aten.eye"),
            ("aten.eye.m_out", "aten.eye.m"),
            ("aten.empty_like.out", "aten.empty_like"),
            ("aten.new_full.out", "aten.new_full"),
            ("aten.linspace.Tensor_Tensor_out", "aten.linspace.Tensor_Tensor"),
            ("aten.hann_window.periodic_out", "aten.hann_window.periodic"),
        ] {
            let got = of(&c, out).unwrap();
            assert_eq!(got.op, functional);
            let schema = c.op_def(functional).and_then(|d| d.schema.clone()).unwrap();
            let names: Vec<&str> = got.options.iter().map(|&i| schema.args[i].name.as_str()).collect();
            assert_eq!(names, ["dtype", "layout", "device", "pin_memory"], "{out}");
            assert_eq!(got.dtype_arg(&schema).map(|i| schema.args[i].name.as_str()), Some("dtype"));
        }
        // An out variant taking the same arguments has no options to fill.
        assert!(of(&c, "aten.add.out").unwrap().options.is_empty());
        // A written list maps like a tensor.
        assert_eq!(of(&c, "aten.split_with_sizes_copy.out").unwrap().op, "aten.split_with_sizes_copy");
    }

    #[test]
    fn functional_ops_have_no_counterpart() {
        let c = ctx();
        assert_eq!(of(&c, "aten.add.Tensor"), Err(CounterpartError::NotInplaceOrOut));
    }
}
