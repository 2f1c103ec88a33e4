//! The program archive: saving and loading round-trips exactly, without jitter, with aligned weights.

mod common;

use std::io::{Cursor, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use import::archive::{ALIGNMENT, load, save};
use import::{ImportError, Program, Weight, Weights};
use ir::{Context, DType, PrintOptions, print_module};
use zip::write::SimpleFileOptions;
use zip::{CompressionMethod, ZipArchive, ZipWriter};

fn ctx() -> Context {
    let mut c = Context::new();
    dialect_prim::register(&mut c);
    dialect_aten::register(&mut c);
    c
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("import-archive-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

/// A small program built by hand: one parameter (a strided view), one input.
fn synthetic(ctx: &Context) -> Program {
    let text = r#"module {
  func.func @forward(%w: tensor<2x2xf32> {prim.param = "w"}, %x: tensor<2x2xf32> {prim.input = "x"}) -> (tensor<2x2xf32> {prim.output = "y"}) {
    %y = aten.add.Tensor %x, %w : tensor<2x2xf32>
    func.return %y : tensor<2x2xf32>
  }
}"#;
    let module = ir::parse_module(ctx, text, "synthetic.ir").unwrap();
    let bytes: Vec<u8> = (0..6).flat_map(|i| (i as f32).to_le_bytes()).collect();
    let mut weights = Weights::new();
    // Columns 1..3 of a 2x3 storage: not contiguous, offset 1.
    let w = Weight::from_bytes(DType::F32, vec![2, 2], vec![3, 1], 1, Arc::from(bytes)).unwrap();
    weights.insert("w", w).unwrap();
    Program { module, weights }
}

fn same_program(ctx: &Context, a: &Program, b: &Program) {
    let opts = PrintOptions {
        generic: true,
        debug_info: true,
    };
    assert_eq!(
        print_module(ctx, &a.module, opts),
        print_module(ctx, &b.module, opts)
    );
    assert_eq!(a.weights.len(), b.weights.len());
    for ((na, wa), (nb, wb)) in a.weights.iter().zip(b.weights.iter()) {
        assert_eq!(na, nb);
        assert_eq!(
            (wa.dtype, &wa.sizes, &wa.strides, wa.storage_offset),
            (wb.dtype, &wb.sizes, &wb.strides, wb.storage_offset)
        );
        assert_eq!(
            wa.contiguous_bytes().unwrap(),
            wb.contiguous_bytes().unwrap(),
            "{na}"
        );
    }
}

/// Saves, loads, saves again and loads again: programs equal, both archives byte-identical.
fn check_round_trip(ctx: &Context, program: &Program, stem: &str) {
    let (a, b) = (
        scratch(&format!("{stem}-a.dar")),
        scratch(&format!("{stem}-b.dar")),
    );
    save(ctx, program, &a).unwrap();
    let loaded = load(ctx, &a).unwrap();
    same_program(ctx, program, &loaded);
    save(ctx, &loaded, &b).unwrap();
    let again = load(ctx, &b).unwrap();
    same_program(ctx, &loaded, &again);
    let (ba, bb) = (std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
    assert!(ba == bb, "{stem}: archives differ after load and save");
    // Every weight's data is aligned for memory mapping.
    let mut zip = ZipArchive::new(Cursor::new(ba)).unwrap();
    for i in 0..zip.len() {
        let f = zip.by_index_raw(i).unwrap();
        assert_eq!(f.compression(), CompressionMethod::Stored);
        if f.name().starts_with("weights/") {
            assert_eq!(f.data_start() % ALIGNMENT as u64, 0, "{}", f.name());
        }
    }
    let _ = std::fs::remove_file(a);
    let _ = std::fs::remove_file(b);
}

#[test]
fn synthetic_program_round_trips_without_jitter() {
    let ctx = ctx();
    let p = synthetic(&ctx);
    assert_eq!(
        p.weights
            .get("w")
            .unwrap()
            .contiguous_bytes()
            .unwrap()
            .len(),
        16
    );
    check_round_trip(&ctx, &p, "synthetic");
    // Loading through the entry point picks the format from the extension.
    let path = scratch("entry.dar");
    save(&ctx, &p, &path).unwrap();
    let q = import::import_file(&ctx, &path, None).unwrap();
    same_program(&ctx, &p, &q);
}

#[test]
fn fixture_programs_round_trip_without_jitter() {
    let ctx = ctx();
    let mut n = 0;
    for group in ["export", "bench"] {
        for path in common::cases(group, "model.pt2") {
            let p = import::import_file(&ctx, &path, None).unwrap();
            let stem = path
                .parent()
                .and_then(|d| d.file_name())
                .unwrap()
                .to_string_lossy()
                .into_owned();
            check_round_trip(&ctx, &p, &stem);
            n += 1;
        }
    }
    eprintln!("{n} fixture programs round-trip through the archive");
}

#[test]
fn failed_save_leaves_nothing_behind() {
    let ctx = ctx();
    let p = synthetic(&ctx);
    let dir = scratch("no-such-dir");
    let target = dir.join("out.dar");
    assert!(matches!(
        save(&ctx, &p, &target),
        Err(ImportError::Output(outfile::OutputError::MissingDirectory { .. }))
    ));
    assert!(!target.exists());
    // Overwriting an existing archive replaces it whole.
    let own = scratch("overwrite");
    std::fs::create_dir_all(&own).unwrap();
    let path = own.join("overwrite.dar");
    std::fs::write(&path, b"old").unwrap();
    save(&ctx, &p, &path).unwrap();
    assert!(load(&ctx, &path).is_ok());
    let leftovers: Vec<_> = std::fs::read_dir(path.parent().unwrap())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name() != "overwrite.dar")
        .collect();
    assert!(leftovers.is_empty());
}

/// Rewrites one entry of an archive, keeping the others.
fn rewrite(src: &Path, dst: &Path, entry: &str, edit: impl Fn(Vec<u8>) -> Vec<u8>) {
    let mut zip = ZipArchive::new(std::fs::File::open(src).unwrap()).unwrap();
    let mut out = ZipWriter::new(std::fs::File::create(dst).unwrap());
    for i in 0..zip.len() {
        let mut f = zip.by_index(i).unwrap();
        let name = f.name().to_string();
        let mut bytes = Vec::new();
        f.read_to_end(&mut bytes).unwrap();
        if name == entry {
            bytes = edit(bytes);
        }
        let opts = SimpleFileOptions::default().compression_method(CompressionMethod::Stored);
        out.start_file(name, opts).unwrap();
        out.write_all(&bytes).unwrap();
    }
    out.finish().unwrap();
}

#[test]
fn corrupt_archives_fail_cleanly() {
    let ctx = ctx();
    let good = scratch("good.dar");
    save(&ctx, &synthetic(&ctx), &good).unwrap();
    let bad = scratch("bad.dar");

    // A weight whose sizes reach past its stored bytes.
    rewrite(&good, &bad, "manifest.json", |b| {
        String::from_utf8(b)
            .unwrap()
            .replace(
                "[\n        2,\n        2\n      ]",
                "[\n        20,\n        2\n      ]",
            )
            .into_bytes()
    });
    match load(&ctx, &bad) {
        Err(ImportError::WeightTooShort { name, .. }) => assert_eq!(name, "w"),
        other => panic!("expected a short weight, got {other:?}"),
    }
    // An unknown dtype.
    rewrite(&good, &bad, "manifest.json", |b| {
        String::from_utf8(b)
            .unwrap()
            .replace("\"f32\"", "\"complex64\"")
            .into_bytes()
    });
    assert!(matches!(
        load(&ctx, &bad),
        Err(ImportError::InvalidWeight { .. })
    ));
    // IR that does not verify.
    rewrite(&good, &bad, "program.ir", |b| {
        String::from_utf8(b)
            .unwrap()
            .replace("aten.add.Tensor", "aten.relu")
            .into_bytes()
    });
    assert!(
        matches!(load(&ctx, &bad), Err(ImportError::Verify { .. })),
        "{:?}",
        load(&ctx, &bad).err()
    );
    // A missing weight file.
    rewrite(&good, &bad, "manifest.json", |b| {
        String::from_utf8(b)
            .unwrap()
            .replace("weights/0.bin", "weights/9.bin")
            .into_bytes()
    });
    assert!(matches!(
        load(&ctx, &bad),
        Err(ImportError::WeightMissing { .. })
    ));
    // Not a zip at all, and a truncated one.
    std::fs::write(&bad, b"not a zip").unwrap();
    assert!(matches!(load(&ctx, &bad), Err(ImportError::NotZip { .. })));
    let bytes = std::fs::read(&good).unwrap();
    std::fs::write(&bad, &bytes[..bytes.len() / 2]).unwrap();
    assert!(load(&ctx, &bad).is_err());
}
