//! Shared helpers of the top-level integration tests: where the workspace, the built tools and
//! the fixture corpus in `../shared` are, the context programs are imported into, the skip
//! rule, the generator of random programs for differential tests (`random_program`) and the
//! runner of ops against PyTorch's recorded results (`torch_case`).

pub mod fuzz;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

pub mod random_program;
pub mod torch_case;

/// The workspace root (this package's parent directory).
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().map(Path::to_path_buf).unwrap_or_default()
}

/// The fixture corpus, `../shared/fixtures` beside the workspace (it may be absent).
pub fn shared_fixtures() -> PathBuf {
    workspace_root().join("../shared/fixtures")
}

/// The directory `sub` of the fixture corpus (`""`: the corpus itself), when it is there.
pub fn fixture_dir(sub: &str) -> Option<PathBuf> {
    let p = shared_fixtures().join(sub);
    p.is_dir().then_some(p)
}

/// The directory `sub` of the fixture corpus for a test that needs it: when it is absent, says
/// that the test is skipped and returns `None`, except under `CI=true`, where the corpus must be
/// present and its absence fails the test.
pub fn required_fixture_dir(sub: &str) -> Option<PathBuf> {
    let found = fixture_dir(sub);
    if found.is_none() {
        skip("this test", &format!("{} is absent", shared_fixtures().join(sub).display()), true);
    }
    found
}

/// The model zoo, `../shared/zoo` beside the workspace, for a test that needs it (the skip rule
/// of [`required_fixture_dir`]).
pub fn required_zoo_dir() -> Option<PathBuf> {
    let p = workspace_root().join("../shared/zoo");
    if p.is_dir() {
        return Some(p);
    }
    skip("this test", &format!("{} is absent", p.display()), true);
    None
}

/// The models of the zoo (each a directory with its `io.safetensors`), sorted, for a test that
/// needs them (the skip rule of [`required_zoo_dir`]).
pub fn required_zoo_models() -> Option<Vec<PathBuf>> {
    let zoo = required_zoo_dir()?;
    let mut models: Vec<PathBuf> = std::fs::read_dir(&zoo)
        .map(|entries| entries.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.join("io.safetensors").is_file()).collect())
        .unwrap_or_default();
    models.sort();
    assert!(!models.is_empty(), "no models in {}", zoo.display());
    Some(models)
}

/// Parses the IR text `src`, runs `pipeline` over it when given, compiles its function `f` and
/// runs it once on `inputs`: the path of the tests that check one op's program against a
/// reference.
pub fn run_function(ctx: &ir::Context, src: &str, pipeline: Option<&str>, inputs: &[runtime::IValue]) -> Result<Vec<runtime::IValue>, String> {
    let options = runtime::CompileOptions { function: "f".into(), ..runtime::CompileOptions::default() };
    compile_function(ctx, src, pipeline, options)?.runtime().run(inputs).map_err(|e| e.to_string())
}

/// Parses the IR text `src`, runs `pipeline` over it when given and compiles the function
/// `options.function` with `options` (a fusion compiler among them).
pub fn compile_function(ctx: &ir::Context, src: &str, pipeline: Option<&str>, options: runtime::CompileOptions) -> Result<runtime::CompiledProgram, String> {
    let mut m = ir::parse_module(ctx, src, "case.ir").map_err(|d| d.to_string())?;
    if let Some(p) = pipeline {
        let mut pm = pass::PassManager::parse(&driver::default_pass_registry(), p, pass::PassManagerConfig::default()).map_err(|e| e.to_string())?;
        pm.run(ctx, &mut m, &mut Vec::new()).map_err(|d| d.to_string())?;
    }
    runtime::compile(&m, ctx, &runtime::Weights::new(), options).map_err(|e| e.to_string())
}

/// A context with the dialects the importers write, `prim` and `aten`.
pub fn context() -> ir::Context {
    let mut ctx = ir::Context::new();
    dialect_prim::register(&mut ctx);
    dialect_aten::register(&mut ctx);
    ctx
}

/// The path of one of the project's command-line tools (`dialect-opt`, `dialect-run`,
/// `filecheck`), built in this test binary's own profile the first time it is asked for, so
/// the tests never run a stale tool.
pub fn tool(name: &str) -> PathBuf {
    static BUILT: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    let dir = BUILT.get_or_init(build_tools).as_ref().unwrap_or_else(|e| panic!("cannot build the tools: {e}"));
    dir.join(format!("{name}{}", std::env::consts::EXE_SUFFIX))
}

/// Builds the driver's binaries with the profile this test binary was built with; returns
/// the directory they are in.
fn build_tools() -> Result<PathBuf, String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    // <target>/<profile>/deps/<test binary>
    let profile_dir = exe.parent().and_then(Path::parent).ok_or("test binary outside a target directory")?;
    let target_dir = profile_dir.parent().ok_or("test binary outside a target directory")?;
    let profile = profile_dir.file_name().and_then(|n| n.to_str()).ok_or("unnamed profile directory")?;
    let profile = if profile == "debug" { "dev" } else { profile };
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| env!("CARGO").to_string());
    let out = Command::new(cargo)
        .args(["build", "--quiet", "-p", "driver", "--bins", "--profile", profile, "--target-dir"])
        .arg(target_dir)
        .current_dir(workspace_root())
        .output()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    Ok(profile_dir.to_path_buf())
}

/// A fresh, empty directory for one test, under the system's temporary directory.
pub fn scratch_dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("dialect-it-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap_or_else(|e| panic!("cannot create {}: {e}", d.display()));
    d
}

/// Whether the process runs as root (user id 0), read from `/proc/self/status`.
pub fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with("Uid:")).map(|l| l.split_whitespace().nth(1) == Some("0")))
        .unwrap_or(false)
}

/// Prints why a test is skipped. Under `CI=true` a skip for a missing prerequisite the CI
/// machine must have is a failure instead: pass `required_in_ci`.
pub fn skip(test: &str, reason: &str, required_in_ci: bool) {
    if required_in_ci && std::env::var("CI").as_deref() == Ok("true") {
        panic!("{test}: {reason}, and CI=true requires it");
    }
    eprintln!("skipped {test}: {reason}");
}

/// Deterministic values in [-scale, scale).
pub fn values(len: usize, seed: u64, scale: f32) -> Vec<f32> {
    let mut s = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..len)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            ((s >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0) * scale
        })
        .collect()
}
