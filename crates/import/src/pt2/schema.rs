//! Serde model of the JSON program that `torch.export.save` writes to `models/model.json`.
//!
//! The types follow the dataclasses of PyTorch's export serialization schema (version 8.x) one
//! to one, with the same field names. A schema *union* is a JSON object with exactly one key
//! naming the active member; it is modelled as an externally tagged Rust enum. Fields this
//! model does not know are ignored, and fields the schema marks optional default when absent.
//!
//! Floating point values may be written as the strings `"Infinity"`, `"-Infinity"` and `"NaN"`
//! because JSON has no spelling for them; [`float`] accepts both forms.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Declares a C-like enum that is written as its integer code in the JSON.
macro_rules! int_enum {
    ($(#[$meta:meta])* $name:ident { $($(#[$vmeta:meta])* $variant:ident = $code:literal,)* }) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
        #[serde(try_from = "i64", into = "i64")]
        pub enum $name {
            $($(#[$vmeta])* $variant = $code,)*
        }

        impl $name {
            /// The integer code the schema assigns to this value.
            pub fn code(self) -> i64 {
                self as i64
            }
        }

        impl TryFrom<i64> for $name {
            type Error = String;
            fn try_from(code: i64) -> Result<Self, String> {
                match code {
                    $($code => Ok($name::$variant),)*
                    other => Err(format!(concat!("unknown ", stringify!($name), " code {}"), other)),
                }
            }
        }

        impl From<$name> for i64 {
            fn from(value: $name) -> i64 {
                value.code()
            }
        }
    };
}

int_enum! {
    /// Element type of a tensor (`ScalarType` of the schema).
    ScalarType {
        Unknown = 0,
        Uint8 = 1,
        Int8 = 2,
        Int16 = 3,
        Int32 = 4,
        Int64 = 5,
        Float16 = 6,
        Float32 = 7,
        Float64 = 8,
        ComplexHalf = 9,
        ComplexFloat = 10,
        ComplexDouble = 11,
        Bool = 12,
        BFloat16 = 13,
        Uint16 = 28,
        Float8E4M3Fn = 29,
        Float8E5M2 = 30,
        Float8E4M3FnUz = 31,
        Float8E5M2FnUz = 32,
    }
}

impl ScalarType {
    /// Size of one element in bytes, or `None` for [`ScalarType::Unknown`].
    pub fn element_size(self) -> Option<usize> {
        use ScalarType::*;
        Some(match self {
            Unknown => return None,
            Uint8 | Int8 | Bool | Float8E4M3Fn | Float8E5M2 | Float8E4M3FnUz | Float8E5M2FnUz => 1,
            Int16 | Uint16 | Float16 | BFloat16 => 2,
            Int32 | Float32 | ComplexHalf => 4,
            Int64 | Float64 | ComplexFloat => 8,
            ComplexDouble => 16,
        })
    }

    /// PyTorch's name for the dtype (`torch.<name>`), e.g. `float32`.
    pub fn torch_name(self) -> &'static str {
        use ScalarType::*;
        match self {
            Unknown => "unknown",
            Uint8 => "uint8",
            Int8 => "int8",
            Int16 => "int16",
            Int32 => "int32",
            Int64 => "int64",
            Float16 => "float16",
            Float32 => "float32",
            Float64 => "float64",
            ComplexHalf => "complex32",
            ComplexFloat => "complex64",
            ComplexDouble => "complex128",
            Bool => "bool",
            BFloat16 => "bfloat16",
            Uint16 => "uint16",
            Float8E4M3Fn => "float8_e4m3fn",
            Float8E5M2 => "float8_e5m2",
            Float8E4M3FnUz => "float8_e4m3fnuz",
            Float8E5M2FnUz => "float8_e5m2fnuz",
        }
    }
}

int_enum! {
    /// Memory layout of a tensor (`Layout` of the schema).
    Layout {
        Unknown = 0,
        SparseCoo = 1,
        SparseCsr = 2,
        SparseCsc = 3,
        SparseBsr = 4,
        SparseBsc = 5,
        Mkldnn = 6,
        Strided = 7,
    }
}

int_enum! {
    /// Memory format argument (`MemoryFormat` of the schema).
    MemoryFormat {
        Unknown = 0,
        ContiguousFormat = 1,
        ChannelsLast = 2,
        ChannelsLast3d = 3,
        PreserveFormat = 4,
    }
}

int_enum! {
    /// Whether a node input was passed positionally or by keyword.
    ArgumentKind {
        Unknown = 0,
        Positional = 1,
        Keyword = 2,
    }
}

/// A device such as `cpu` or `cuda:0`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Device {
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default)]
    pub index: Option<i64>,
}

/// Concrete value recorded next to a symbolic expression at export time.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SymExprHint {
    AsInt(i64),
    AsBool(bool),
    #[serde(with = "float")]
    AsFloat(f64),
}

/// A sympy expression in `srepr` form, e.g. `Symbol('s77', positive=True, integer=True)`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SymExpr {
    pub expr_str: String,
    #[serde(default)]
    pub hint: Option<SymExprHint>,
}

/// An integer that is either known or symbolic.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SymInt {
    AsExpr(SymExpr),
    AsInt(i64),
}

impl SymInt {
    /// The value when it is a concrete integer.
    pub fn as_int(&self) -> Option<i64> {
        match self {
            SymInt::AsInt(v) => Some(*v),
            SymInt::AsExpr(_) => None,
        }
    }
}

/// A float that is either known or symbolic.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SymFloat {
    AsExpr(SymExpr),
    #[serde(with = "float")]
    AsFloat(f64),
}

/// A boolean that is either known or symbolic.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SymBool {
    AsExpr(SymExpr),
    AsBool(bool),
}

/// Static metadata of a tensor value.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TensorMeta {
    pub dtype: ScalarType,
    pub sizes: Vec<SymInt>,
    pub requires_grad: bool,
    pub device: Device,
    pub strides: Vec<SymInt>,
    pub storage_offset: SymInt,
    pub layout: Layout,
}

/// Reference to a SymInt value by name, or a literal inside a mixed list.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SymIntArgument {
    AsName(String),
    AsInt(i64),
}

/// Reference to a SymFloat value by name, or a literal inside a mixed list.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SymFloatArgument {
    AsName(String),
    #[serde(with = "float")]
    AsFloat(f64),
}

/// Reference to a SymBool value by name, or a literal inside a mixed list.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SymBoolArgument {
    AsName(String),
    AsBool(bool),
}

/// Reference to a tensor value by name.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct TensorArgument {
    pub name: String,
}

/// Reference to an effect token by name.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct TokenArgument {
    pub name: String,
}

/// An element of a `Tensor?[]` list.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OptionalTensorArgument {
    AsTensor(TensorArgument),
    AsNone(bool),
}

/// A subgraph passed to a higher-order op such as `torch.ops.higher_order.cond`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GraphArgument {
    pub name: String,
    pub graph: Box<Graph>,
}

/// Reference to a TorchScript custom object.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CustomObjArgument {
    pub name: String,
    pub class_fqn: String,
}

/// A complex literal.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ComplexValue {
    #[serde(with = "float")]
    pub real: f64,
    #[serde(with = "float")]
    pub imag: f64,
}

/// A node input or output, a graph input or output (the schema's `Argument` union).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Argument {
    AsNone(bool),
    AsTensor(TensorArgument),
    AsTensors(Vec<TensorArgument>),
    AsInt(i64),
    AsInts(Vec<i64>),
    #[serde(with = "float")]
    AsFloat(f64),
    #[serde(with = "floats")]
    AsFloats(Vec<f64>),
    AsString(String),
    AsStrings(Vec<String>),
    AsSymInt(SymIntArgument),
    AsSymInts(Vec<SymIntArgument>),
    AsScalarType(ScalarType),
    AsMemoryFormat(MemoryFormat),
    AsLayout(Layout),
    AsDevice(Device),
    AsBool(bool),
    AsBools(Vec<bool>),
    AsSymBool(SymBoolArgument),
    AsSymBools(Vec<SymBoolArgument>),
    AsGraph(GraphArgument),
    AsOptionalTensors(Vec<OptionalTensorArgument>),
    AsCustomObj(CustomObjArgument),
    AsOperator(String),
    AsSymFloat(SymFloatArgument),
    AsSymFloats(Vec<SymFloatArgument>),
    AsOptionalTensor(OptionalTensorArgument),
    AsComplex(ComplexValue),
    AsNestedTensors(Vec<Vec<TensorArgument>>),
    AsIntLists(Vec<Vec<i64>>),
    AsStringToArgument(BTreeMap<String, Argument>),
}

impl Argument {
    /// The tensor name when this argument is a single tensor.
    pub fn as_tensor_name(&self) -> Option<&str> {
        match self {
            Argument::AsTensor(t) => Some(&t.name),
            _ => None,
        }
    }
}

/// A node input together with the name of the schema argument it binds to.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NamedArgument {
    pub name: String,
    pub arg: Argument,
    #[serde(default)]
    pub kind: Option<ArgumentKind>,
}

/// One operator call.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Node {
    /// Qualified operator, e.g. `torch.ops.aten.add.Tensor` or `_operator.getitem`.
    pub target: String,
    pub inputs: Vec<NamedArgument>,
    pub outputs: Vec<Argument>,
    /// Free-form strings: `stack_trace`, `nn_module_stack`, `torch_fn`, `source_fn_stack`, ….
    #[serde(default)]
    pub metadata: BTreeMap<String, String>,
    #[serde(default)]
    pub is_hop_single_tensor_return: Option<bool>,
    #[serde(default)]
    pub name: Option<String>,
}

impl Node {
    /// The Python stack trace recorded for this node, if any.
    pub fn stack_trace(&self) -> Option<&str> {
        self.metadata.get("stack_trace").map(String::as_str)
    }

    /// The `nn.Module` path the node was traced in, if recorded.
    pub fn nn_module_stack(&self) -> Option<&str> {
        self.metadata.get("nn_module_stack").map(String::as_str)
    }

    /// The Python function the node came from, if recorded.
    pub fn torch_fn(&self) -> Option<&str> {
        self.metadata.get("torch_fn").map(String::as_str)
    }

    /// The source function stack, if recorded.
    pub fn source_fn_stack(&self) -> Option<&str> {
        self.metadata.get("source_fn_stack").map(String::as_str)
    }
}

/// A dataflow graph: inputs, nodes in order, outputs, and metadata of every named value.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Graph {
    pub inputs: Vec<Argument>,
    pub outputs: Vec<Argument>,
    pub nodes: Vec<Node>,
    #[serde(default)]
    pub tensor_values: BTreeMap<String, TensorMeta>,
    #[serde(default)]
    pub sym_int_values: BTreeMap<String, SymInt>,
    #[serde(default)]
    pub sym_bool_values: BTreeMap<String, SymBool>,
    /// Set on subgraphs of higher-order ops that return a bare tensor instead of a list.
    #[serde(default)]
    pub is_single_tensor_return: bool,
    #[serde(default)]
    pub custom_obj_values: BTreeMap<String, CustomObjArgument>,
    #[serde(default)]
    pub sym_float_values: BTreeMap<String, SymFloat>,
}

/// A user input of the exported function.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct UserInputSpec {
    pub arg: Argument,
}

/// A constant (non-tensor) input value.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ConstantValue {
    AsNone(bool),
    AsInt(i64),
    #[serde(with = "float")]
    AsFloat(f64),
    AsString(String),
    AsBool(bool),
}

/// Graph input bound to a constant.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct InputToConstantInputSpec {
    pub name: String,
    pub value: ConstantValue,
}

/// Graph input bound to a parameter of the module.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct InputToParameterSpec {
    pub arg: TensorArgument,
    pub parameter_name: String,
}

/// Graph input bound to a buffer of the module.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct InputToBufferSpec {
    pub arg: TensorArgument,
    pub buffer_name: String,
    #[serde(default = "default_true")]
    pub persistent: bool,
}

fn default_true() -> bool {
    true
}

/// Graph input bound to a lifted tensor constant.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct InputToTensorConstantSpec {
    pub arg: TensorArgument,
    pub tensor_constant_name: String,
}

/// Graph input bound to a custom object.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct InputToCustomObjSpec {
    pub arg: CustomObjArgument,
    pub custom_obj_name: String,
}

/// Graph input carrying an effect token.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct InputTokenSpec {
    pub arg: TokenArgument,
}

/// What a graph input stands for (the schema's `InputSpec` union).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum InputSpec {
    UserInput(UserInputSpec),
    Parameter(InputToParameterSpec),
    Buffer(InputToBufferSpec),
    TensorConstant(InputToTensorConstantSpec),
    CustomObj(InputToCustomObjSpec),
    Token(InputTokenSpec),
    ConstantInput(InputToConstantInputSpec),
}

/// A user-visible output.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct UserOutputSpec {
    pub arg: Argument,
}

/// The loss output of a joint graph.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LossOutputSpec {
    pub arg: TensorArgument,
}

/// An output holding the new value of a mutated buffer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BufferMutationSpec {
    pub arg: TensorArgument,
    pub buffer_name: String,
}

/// An output holding the new value of a mutated parameter.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ParameterMutationSpec {
    pub arg: TensorArgument,
    pub parameter_name: String,
}

/// An output holding the gradient of a parameter.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GradientToParameterSpec {
    pub arg: TensorArgument,
    pub parameter_name: String,
}

/// An output holding the gradient of a user input.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GradientToUserInputSpec {
    pub arg: TensorArgument,
    pub user_input_name: String,
}

/// An output holding the new value of a mutated user input.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct UserInputMutationSpec {
    pub arg: TensorArgument,
    pub user_input_name: String,
}

/// Graph output carrying an effect token.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OutputTokenSpec {
    pub arg: TokenArgument,
}

/// What a graph output stands for (the schema's `OutputSpec` union).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OutputSpec {
    UserOutput(UserOutputSpec),
    LossOutput(LossOutputSpec),
    BufferMutation(BufferMutationSpec),
    GradientToParameter(GradientToParameterSpec),
    GradientToUserInput(GradientToUserInputSpec),
    UserInputMutation(UserInputMutationSpec),
    Token(OutputTokenSpec),
    ParameterMutation(ParameterMutationSpec),
}

/// How graph inputs and outputs map to the module's state and the user's function.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GraphSignature {
    pub input_specs: Vec<InputSpec>,
    pub output_specs: Vec<OutputSpec>,
}

/// Value range of a symbol; `None` means unbounded on that side.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RangeConstraint {
    #[serde(default)]
    pub min_val: Option<i64>,
    #[serde(default)]
    pub max_val: Option<i64>,
}

/// Calling convention of one (sub)module, with pytree specs as JSON strings.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ModuleCallSignature {
    pub inputs: Vec<Argument>,
    pub outputs: Vec<Argument>,
    pub in_spec: String,
    pub out_spec: String,
    #[serde(default)]
    pub forward_arg_names: Option<Vec<String>>,
}

/// One entry of the module call graph.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ModuleCallEntry {
    pub fqn: String,
    #[serde(default)]
    pub signature: Option<ModuleCallSignature>,
}

/// Field names of a namedtuple type appearing in a pytree spec.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NamedTupleDef {
    pub field_names: Vec<String>,
}

/// The graph with its signature and calling structure.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GraphModule {
    pub graph: Graph,
    pub signature: GraphSignature,
    #[serde(default)]
    pub module_call_graph: Vec<ModuleCallEntry>,
    #[serde(default)]
    pub metadata: BTreeMap<String, String>,
    #[serde(default)]
    pub treespec_namedtuple_fields: BTreeMap<String, NamedTupleDef>,
}

/// Version of the serialization schema that wrote the program.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SchemaVersion {
    pub major: i64,
    pub minor: i64,
}

fn default_torch_version() -> String {
    "<=2.4".to_owned()
}

/// The root object of `models/model.json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ExportedProgram {
    pub graph_module: GraphModule,
    /// Operator namespace (`aten`) to opset version.
    #[serde(default)]
    pub opset_version: BTreeMap<String, i64>,
    /// Symbol name (`s77`) to its value range.
    #[serde(default)]
    pub range_constraints: BTreeMap<String, RangeConstraint>,
    pub schema_version: SchemaVersion,
    #[serde(default)]
    pub verifiers: Vec<String>,
    #[serde(default = "default_torch_version")]
    pub torch_version: String,
    #[serde(default)]
    pub guards_code: Vec<String>,
}

/// Where one parameter, buffer or constant is stored in the archive.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PayloadMeta {
    /// File name relative to the payload folder, e.g. `weight_0`.
    pub path_name: String,
    pub is_param: bool,
    /// Pickled payloads (custom objects, tensor subclasses) are never read by this crate.
    pub use_pickle: bool,
    #[serde(default)]
    pub tensor_meta: Option<TensorMeta>,
}

/// Contents of `model_weights_config.json` and `model_constants_config.json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PayloadConfig {
    /// Entries in file order. Repeated names are kept so that the reader can report them.
    #[serde(with = "ordered_map")]
    pub config: Vec<(String, PayloadMeta)>,
}

/// Floats that may be spelled `"Infinity"`, `"-Infinity"` or `"NaN"`.
pub mod float {
    use serde::Serializer;
    use serde::de::{self, Deserializer, Visitor};
    use std::fmt;

    /// Writes finite floats as numbers and the rest as the schema's strings.
    pub fn serialize<S: Serializer>(value: &f64, serializer: S) -> Result<S::Ok, S::Error> {
        if value.is_nan() {
            serializer.serialize_str("NaN")
        } else if value.is_infinite() {
            serializer.serialize_str(if *value > 0.0 {
                "Infinity"
            } else {
                "-Infinity"
            })
        } else {
            serializer.serialize_f64(*value)
        }
    }

    struct FloatVisitor;

    impl Visitor<'_> for FloatVisitor {
        type Value = f64;

        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a number or one of \"Infinity\", \"-Infinity\", \"NaN\"")
        }

        fn visit_f64<E: de::Error>(self, v: f64) -> Result<f64, E> {
            Ok(v)
        }

        fn visit_i64<E: de::Error>(self, v: i64) -> Result<f64, E> {
            Ok(v as f64)
        }

        fn visit_u64<E: de::Error>(self, v: u64) -> Result<f64, E> {
            Ok(v as f64)
        }

        fn visit_str<E: de::Error>(self, v: &str) -> Result<f64, E> {
            match v {
                "Infinity" | "inf" => Ok(f64::INFINITY),
                "-Infinity" | "-inf" => Ok(f64::NEG_INFINITY),
                "NaN" | "nan" => Ok(f64::NAN),
                other => Err(E::invalid_value(de::Unexpected::Str(other), &self)),
            }
        }
    }

    /// Reads a number or one of the non-finite spellings.
    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<f64, D::Error> {
        deserializer.deserialize_any(FloatVisitor)
    }

    /// Newtype used to route list elements through [`deserialize`].
    pub(super) struct Wrapped(pub f64);

    impl<'de> serde::Deserialize<'de> for Wrapped {
        fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
            deserialize(deserializer).map(Wrapped)
        }
    }

    impl serde::Serialize for Wrapped {
        fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
            serialize(&self.0, serializer)
        }
    }
}

/// Lists of floats with the same spellings as [`float`].
mod floats {
    use super::float::Wrapped;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub fn serialize<S: Serializer>(values: &[f64], serializer: S) -> Result<S::Ok, S::Error> {
        let wrapped: Vec<Wrapped> = values.iter().map(|v| Wrapped(*v)).collect();
        wrapped.serialize(serializer)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<f64>, D::Error> {
        let wrapped = Vec::<Wrapped>::deserialize(deserializer)?;
        Ok(wrapped.into_iter().map(|w| w.0).collect())
    }
}

/// A JSON object read as an ordered list of entries, repeated keys included.
mod ordered_map {
    use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
    use serde::ser::{Serialize, SerializeMap, Serializer};
    use std::fmt;
    use std::marker::PhantomData;

    pub fn serialize<S: Serializer, V: Serialize>(
        entries: &[(String, V)],
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(entries.len()))?;
        for (k, v) in entries {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }

    struct EntriesVisitor<V>(PhantomData<V>);

    impl<'de, V: Deserialize<'de>> Visitor<'de> for EntriesVisitor<V> {
        type Value = Vec<(String, V)>;

        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("an object")
        }

        fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Self::Value, A::Error> {
            let mut out = Vec::new();
            while let Some(key) = access.next_key::<String>()? {
                let value = access.next_value::<V>()?;
                out.push((key, value));
            }
            Ok(out)
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>, V: Deserialize<'de>>(
        deserializer: D,
    ) -> Result<Vec<(String, V)>, D::Error> {
        deserializer.deserialize_map(EntriesVisitor(PhantomData))
    }
}
