//! Exact (ILP) extraction, built with the `ilp` feature: never costlier than the greedy DAG,
//! and strictly cheaper where the greedy choice (cheapest tree per class, then local
//! re-choices) misses a shared subterm.
#![cfg(feature = "ilp")]

use egraph::extract::{self, Extractor};
use egraph::{Facts, Graph, Node, Peephole, RuleLibrary};
use std::collections::HashSet;
use std::time::Duration;

const ILP: Extractor = Extractor::Ilp { timeout: Duration::from_secs(10) };

/// R = P + Q where P is t(S) or t(T) and Q is permute(S) or t(U); S (an exp) costs more than T
/// or U (negations), so the cheapest tree per class takes T and U, but computing S once for
/// both is cheaper.
#[test]
fn exact_shares_what_greedy_does_not() {
    let mut g = Graph::new(Facts::new(false));
    let ty = ir::Type::tensor(ir::DType::F32, &[4, 4]);
    let leaves: Vec<_> = (0..3)
        .map(|i| {
            let id = g.add(Node::Leaf(i));
            g[id].data.ty = Some(ty.clone());
            id
        })
        .collect();
    let s = g.add(Node::op("aten.exp", vec![leaves[0]]));
    let t = g.add(Node::op("aten.neg", vec![leaves[1]]));
    let u = g.add(Node::op("aten.neg", vec![leaves[2]]));
    let p1 = g.add(Node::op("aten.t", vec![s]));
    let p2 = g.add(Node::op("aten.t", vec![t]));
    let q1 = g.add(Node::op("aten.permute", vec![s]));
    let q2 = g.add(Node::op("aten.t", vec![u]));
    for id in [p1, p2, q1, q2] {
        g[id].data.ty = Some(ty.clone());
    }
    g.union(p1, p2);
    g.union(q1, q2);
    g.rebuild();
    let r = g.add(Node::op("aten.add.Tensor", vec![p1, q1]));
    g.rebuild();
    let prefer = HashSet::new();
    let greedy = extract::extract(&g, &[r], Extractor::GreedyDag, &prefer).expect("greedy extracts");
    let exact = extract::extract(&g, &[r], ILP, &prefer).expect("ilp extracts");
    assert_eq!(exact.method, "ilp (optimal)");
    assert!(exact.cost < greedy.cost, "exact {} greedy {}", exact.cost, greedy.cost);
    // The exact choice computes S once for both operands.
    let s = g.find(s);
    assert!(exact.nodes.contains_key(&s), "{:?}", exact.nodes);
    assert!(!greedy.nodes.contains_key(&s), "{:?}", greedy.nodes);
}

/// On small programs the exact cost is never above the greedy one; the smallest are solved to
/// optimality, larger ones may keep the greedy DAG when the solver runs out of time.
#[test]
fn exact_never_costs_more_than_greedy() {
    let mut ctx = ir::Context::new();
    dialect_prim::register(&mut ctx);
    dialect_aten::register(&mut ctx);
    let lib = RuleLibrary::standard().expect("rules");
    let pass = |extract: &str| {
        let mut o = Peephole::options();
        o.parse(&format!("extract={extract} fast-math")).expect("options");
        Peephole::with_options(&lib, &o).expect("pass")
    };
    let (greedy, exact) = (pass("greedy-dag"), pass("ilp"));
    for n in [4usize, 8, 16, 32, 48] {
        let text = synthetic(n);
        let mut a = ir::parse_module(&ctx, &text, "t.ir").expect("parses");
        let mut b = a.clone();
        let (ta, tb) = (a.top(), b.top());
        let rg = greedy.rewrite(&ctx, &mut a, ta, None).expect("greedy runs");
        let re = exact.rewrite(&ctx, &mut b, tb, None).expect("ilp runs");
        ir::verify(&ctx, &b).expect("verifies");
        assert!(re[0].cost <= rg[0].cost + 1e-6, "n={n}: exact {} ({}) greedy {}", re[0].cost, re[0].extraction, rg[0].cost);
        if n <= 8 {
            assert_eq!(re[0].extraction, "ilp (optimal)", "n={n}");
        }
    }
}

/// Elementwise ops over two inputs with shared subterms and rewritable patterns.
fn synthetic(n: usize) -> String {
    let t = "tensor<8x8xf32>";
    let mut s = format!("func.func @f(%x: {t}, %y: {t}) -> {t} {{\n  %one = prim.Constant dense<1.0> : tensor<f32>\n");
    let mut vals = vec!["%x".to_string(), "%y".to_string()];
    for i in 0..n {
        let a = vals[vals.len() - 1].clone();
        let b = vals[(i * 5 + 1) % vals.len()].clone();
        let v = format!("%v{i}");
        s.push_str(&match i % 6 {
            0 => format!("  {v} = aten.add.Tensor {a}, {b} : {t}\n"),
            1 => format!("  {v} = aten.mul.Tensor {a}, %one : ({t}, tensor<f32>) -> {t}\n"),
            2 => format!("  {v} = aten.neg {a} : {t}\n"),
            3 => format!("  {v} = aten.mul.Tensor {b}, {a} : {t}\n"),
            4 => format!("  {v} = aten.add.Tensor {a}, {a} : {t}\n"),
            _ => format!("  {v} = aten.sub.Tensor {a}, {b} : {t}\n"),
        });
        vals.push(v);
    }
    s.push_str(&format!("  func.return {} : {t}\n}}\n", vals[vals.len() - 1]));
    s
}
