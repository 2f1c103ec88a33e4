//! The IR API: building, RAUW, erase, move, clone, walk, and the verifier rules that text cannot reach.

use ir::builtin::create_function;
use ir::{
    Attribute, Builder, Context, DType, InsertPoint, IrError, Module, OpId, OperationState, Type, ValueMap, WalkOrder,
    verify,
};

fn ctx() -> Context {
    let mut c = Context::new();
    c.set_allow_unregistered(true);
    c
}

fn t() -> Type {
    Type::tensor(DType::F32, &[2])
}

/// `f(%a, %b)` with `%x = test.add(%a, %b)`, `%y = test.neg(%x)`, `return %y`.
fn sample() -> (Module, OpId, [OpId; 3]) {
    let mut m = Module::new();
    let (f, entry) = create_function(&mut m, "f", &[t(), t()], &[t()]);
    let (a, b) = (m.block_args(entry)[0], m.block_args(entry)[1]);
    let mut bld = Builder::at_end(&mut m, entry);
    let x = bld.op1("test.add", &[a, b], t(), vec![]);
    let y = bld.op1("test.neg", &[x], t(), vec![]);
    let ret = bld.insert(OperationState::new("func.return").operands([y]));
    let add = m.defining_op(x).unwrap();
    let neg = m.defining_op(y).unwrap();
    (m, f, [add, neg, ret])
}

fn names(m: &Module, block: ir::BlockId) -> Vec<String> {
    m.block_ops(block).iter().map(|&o| m.op_name(o).to_string()).collect()
}

#[test]
fn builder_and_use_lists() {
    let (m, f, [add, neg, _]) = sample();
    verify(&ctx(), &m).unwrap();
    let x = m.results(add)[0];
    assert_eq!(m.uses(x).len(), 1);
    assert_eq!(m.uses(x)[0].op, neg);
    assert_eq!(m.parent_op(add), Some(f));
    let entry = m.entry_block(m.regions(f)[0]).unwrap();
    assert_eq!(names(&m, entry), ["test.add", "test.neg", "func.return"]);
    assert_eq!(m.block_len(entry), 3);
}

#[test]
fn replace_all_uses_moves_every_use() {
    let (mut m, f, [add, neg, ret]) = sample();
    let entry = m.entry_block(m.regions(f)[0]).unwrap();
    let a = m.block_args(entry)[0];
    let x = m.results(add)[0];
    m.replace_all_uses(x, a);
    assert!(m.uses(x).is_empty());
    assert_eq!(m.operands(neg), &[a]);
    assert_eq!(m.uses(a).len(), 2);
    m.erase_op(add).unwrap();
    verify(&ctx(), &m).unwrap();
    let y = m.results(neg)[0];
    m.set_operand(ret, 0, a).unwrap();
    assert!(m.uses(y).is_empty());
    assert_eq!(m.set_operand(ret, 3, a), Err(IrError::OperandOutOfRange { op: "func.return".into(), index: 3, count: 1 }));
}

#[test]
fn erase_refuses_used_results_and_cleans_up() {
    let (mut m, _, [add, neg, ret]) = sample();
    assert_eq!(m.erase_op(add), Err(IrError::ResultsInUse { op: "test.add".into(), index: 0, uses: 1 }));
    let before = m.counts();
    m.erase_op(ret).unwrap();
    m.erase_op(neg).unwrap();
    m.erase_op(add).unwrap();
    let after = m.counts();
    assert_eq!(before.0 - after.0, 3, "three ops gone");
    assert_eq!(before.1 - after.1, 2, "two results gone");
    // Block arguments lost their uses.
    let f = m.functions()[0];
    let entry = m.entry_block(m.regions(f)[0]).unwrap();
    assert!(m.block_args(entry).iter().all(|&v| m.uses(v).is_empty()));
}

#[test]
fn erase_with_nested_regions() {
    let mut m = Module::new();
    let (f, entry) = create_function(&mut m, "g", &[], &[]);
    let outer = m.create_op(OperationState::new("test.region").results([t()]).regions(1));
    m.insert_op(outer, InsertPoint::End(entry)).unwrap();
    let r = m.regions(outer)[0];
    let inner_block = m.append_block(r, &[t()]);
    let arg = m.block_args(inner_block)[0];
    let mut b = Builder::at_end(&mut m, inner_block);
    let v = b.op1("test.use", &[arg], t(), vec![]);
    b.insert(OperationState::new("test.yield").operands([v]));
    let ret = m.create_op(OperationState::new("func.return"));
    m.insert_op(ret, InsertPoint::End(entry)).unwrap();
    let before = m.counts();
    m.erase_op(outer).unwrap();
    let after = m.counts();
    assert_eq!(before.0 - after.0, 3);
    assert_eq!(before.2 - after.2, 1, "the nested block is gone");
    assert_eq!(before.3 - after.3, 1, "the nested region is gone");
    let _ = f;
}

#[test]
fn move_before_and_after() {
    let (mut m, f, [add, neg, ret]) = sample();
    let entry = m.entry_block(m.regions(f)[0]).unwrap();
    m.move_before(neg, add).unwrap();
    assert_eq!(names(&m, entry), ["test.neg", "test.add", "func.return"]);
    // The verifier now sees a use before its definition.
    let err = verify(&ctx(), &m).unwrap_err();
    assert!(err.message.contains("does not dominate"), "{err}");
    m.move_after(neg, add).unwrap();
    assert_eq!(names(&m, entry), ["test.add", "test.neg", "func.return"]);
    verify(&ctx(), &m).unwrap();
    assert_eq!(m.move_before(add, add), Err(IrError::BadMove));
    // An op may not move into its own region.
    let fr = m.functions()[0];
    assert_eq!(m.move_before(fr, ret), Err(IrError::BadMove));
    assert!(m.is_before_in_block(add, ret));
    assert!(!m.is_before_in_block(ret, add));
}

#[test]
fn clone_maps_values_and_regions() {
    let (mut m, f, _) = sample();
    let mut map = ValueMap::new();
    let copy = m.clone_op(f, &mut map);
    m.set_attr(copy, "sym_name", Attribute::str("f_copy"));
    let body = m.body();
    m.insert_op(copy, InsertPoint::End(body)).unwrap();
    verify(&ctx(), &m).unwrap();
    let orig_entry = m.entry_block(m.regions(f)[0]).unwrap();
    let new_entry = m.entry_block(m.regions(copy)[0]).unwrap();
    assert_eq!(names(&m, orig_entry), names(&m, new_entry));
    // Cloned ops use cloned values only.
    for op in m.block_ops(new_entry) {
        for &v in m.operands(op) {
            assert_eq!(m.value_block(v), Some(new_entry));
        }
    }
    assert_eq!(map.lookup(m.block_args(orig_entry)[0]), m.block_args(new_entry)[0]);
    assert_eq!(m.functions().len(), 2);
    assert!(m.function("f_copy").is_some());
}

#[test]
fn walk_orders() {
    let (m, f, [add, neg, ret]) = sample();
    let mut pre = Vec::new();
    m.walk(m.top(), WalkOrder::PreOrder, &mut |o| pre.push(o));
    assert_eq!(pre, vec![m.top(), f, add, neg, ret]);
    let mut post = Vec::new();
    m.walk(m.top(), WalkOrder::PostOrder, &mut |o| post.push(o));
    assert_eq!(post, vec![add, neg, ret, f, m.top()]);
}

#[test]
fn insertion_points() {
    let (mut m, f, [add, neg, _]) = sample();
    let entry = m.entry_block(m.regions(f)[0]).unwrap();
    let mut b = Builder::after(&mut m, add);
    b.insert(OperationState::new("test.a"));
    b.insert(OperationState::new("test.b"));
    let mut b = Builder::before(&mut m, neg);
    b.insert(OperationState::new("test.c"));
    let mut b = Builder::new(&mut m, InsertPoint::Start(entry));
    b.insert(OperationState::new("test.first"));
    assert_eq!(names(&m, entry), ["test.first", "test.add", "test.a", "test.b", "test.c", "test.neg", "func.return"]);
    m.detach_op(neg);
    assert_eq!(m.block_len(entry), 6);
    assert_eq!(m.insert_op(neg, InsertPoint::End(entry)), Ok(()));
    assert_eq!(m.insert_op(neg, InsertPoint::End(entry)), Err(IrError::AlreadyInserted("test.neg".into())));
}

#[test]
fn verifier_rejects_values_from_outside_isolated_regions() {
    let c = {
        let mut c = ctx();
        dialect_free_isolated(&mut c);
        c
    };
    let mut m = Module::new();
    let (_, entry) = create_function(&mut m, "h", &[t()], &[]);
    let outer_arg = m.block_args(entry)[0];
    let iso = m.create_op(OperationState::new("iso.region").regions(1));
    m.insert_op(iso, InsertPoint::End(entry)).unwrap();
    let r = m.regions(iso)[0];
    let blk = m.append_block(r, &[]);
    let mut b = Builder::at_end(&mut m, blk);
    b.op1("test.use", &[outer_arg], t(), vec![]);
    let ret = m.create_op(OperationState::new("func.return"));
    m.insert_op(ret, InsertPoint::End(entry)).unwrap();
    let err = verify(&c, &m).unwrap_err();
    assert!(err.message.contains("uses a value defined outside the region of an isolated-from-above op"), "{err}");
}

fn dialect_free_isolated(c: &mut Context) {
    c.register_dialect("iso", "test");
    c.register_op(
        ir::OpDef::new("iso.region").traits(ir::Traits::ISOLATED_FROM_ABOVE | ir::Traits::NO_TERMINATOR).regions(ir::Arity::Exact(1)),
    )
    .unwrap();
}

#[test]
fn placeholders_are_never_valid() {
    let mut m = Module::new();
    let (_, entry) = create_function(&mut m, "p", &[], &[]);
    let ph = m.create_placeholder(t());
    let mut b = Builder::at_end(&mut m, entry);
    b.op1("test.use", &[ph], t(), vec![]);
    b.insert(OperationState::new("func.return"));
    let err = verify(&ctx(), &m).unwrap_err();
    assert!(err.message.contains("operand #0 is never defined"), "{err}");
}

#[test]
fn contexts_are_shareable_across_threads() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Context>();
    assert_send_sync::<Module>();
}

/// Fusing locations flattens fused sets and keeps the first of each, in order, whether the set
/// is small (scanned) or large (hashed past 16 locations).
#[test]
fn fuse_locations_drops_duplicates_in_order() {
    use ir::Location;
    for n in [3u32, 16, 17, 200] {
        let locs: Vec<Location> = (0..n).map(|i| Location::file("f.py", i, 0)).collect();
        let mut input = vec![Location::Unknown];
        input.extend(locs.iter().cloned());
        input.push(Location::fuse(locs.iter().rev().cloned()));
        input.extend(locs.iter().cloned());
        match Location::fuse(input) {
            Location::Fused(out) => assert_eq!(out.to_vec(), locs, "n = {n}"),
            other => panic!("n = {n}: expected a fused location, got {other:?}"),
        }
    }
    assert_eq!(Location::fuse([Location::name("a"), Location::name("a")]), Location::name("a"));
    assert_eq!(Location::fuse([Location::Unknown]), Location::Unknown);
}
