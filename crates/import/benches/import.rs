//! Import time of a real `torch.export` archive: `bench/bench_lstm_cell/core.pt2` from the
//! shared fixture corpus, through `import::import_file` (zip, JSON, conversion to IR,
//! verification; weights are mapped, not read); and load time of a real TorchScript archive,
//! `torchscript_pt/tv_mobilenet_v3_small/model.pt`, through `import::torchscript_pt::load` (zip,
//! sources, unpickling, module tree; storages located, not read) and through `import_file`
//! (the same, then its `code/` compiled to verified IR by the TorchScript frontend). Each case is
//! skipped with a message when the corpus is absent.

use std::path::PathBuf;

use criterion::{Criterion, criterion_group, criterion_main};

fn fixture() -> PathBuf {
    shared("bench/bench_lstm_cell/core.pt2")
}

fn shared(path: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/fixtures").join(path)
}

fn context() -> ir::Context {
    let mut c = ir::Context::new();
    dialect_prim::register(&mut c);
    dialect_aten::register(&mut c);
    c
}

fn import_lstm_cell(c: &mut Criterion) {
    let path = fixture();
    if !path.exists() {
        eprintln!("skipping: {} not found (the shared fixture corpus is absent)", path.display());
        return;
    }
    let ctx = context();
    if let Err(e) = import::import_file(&ctx, &path, None) {
        eprintln!("cannot import {}: {e}", path.display());
        return;
    }
    c.bench_function("import_file bench_lstm_cell/core.pt2", |b| {
        b.iter(|| {
            let r = import::import_file(&ctx, &path, None);
            std::hint::black_box(&r);
        })
    });
}

/// Times `f` on the mobilenet archive under `label`, unless the corpus is absent or `f` fails.
fn bench_mobilenet<T, E: std::fmt::Display>(c: &mut Criterion, label: &str, f: impl Fn(&std::path::Path) -> Result<T, E>) {
    let path = shared("torchscript_pt/tv_mobilenet_v3_small/model.pt");
    if !path.exists() {
        eprintln!("skipping: {} not found (the shared fixture corpus is absent)", path.display());
        return;
    }
    if let Err(e) = f(&path) {
        eprintln!("cannot read {}: {e}", path.display());
        return;
    }
    c.bench_function(label, |b| {
        b.iter(|| {
            let r = f(&path);
            std::hint::black_box(&r);
        })
    });
}

fn load_mobilenet_pt(c: &mut Criterion) {
    bench_mobilenet(c, "torchscript_pt::load tv_mobilenet_v3_small/model.pt", |p| import::torchscript_pt::load(p));
}

fn import_mobilenet_pt(c: &mut Criterion) {
    let ctx = context();
    bench_mobilenet(c, "import_file tv_mobilenet_v3_small/model.pt (load and compile)", |p| import::import_file(&ctx, p, None));
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(30).measurement_time(std::time::Duration::from_secs(3));
    targets = import_lstm_cell, load_mobilenet_pt, import_mobilenet_pt
}
criterion_main!(benches);
