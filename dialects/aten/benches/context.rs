//! How long declaring the aten dialect takes: a context with `prim` and every ATen op, as each
//! tool and embedder makes one (the schemas are parsed on the first call of a process, which
//! the warm-up includes; what is timed is building the op definitions and registering them).

use criterion::{Criterion, criterion_group, criterion_main};

fn context(c: &mut Criterion) {
    c.bench_function("register aten (3,765 ops)", |b| {
        b.iter(|| {
            let mut ctx = ir::Context::new();
            dialect_prim::register(&mut ctx);
            dialect_aten::register(&mut ctx);
            ctx
        })
    });
    c.bench_function("parse the schema file", |b| {
        b.iter(|| dialect_aten::SCHEMAS.lines().filter(|l| !l.starts_with('#') && !l.is_empty()).filter_map(|l| ir::schema::parse_schema(l.trim_start_matches("core ")).ok()).count())
    });
}

criterion_group!(benches, context);
criterion_main!(benches);
