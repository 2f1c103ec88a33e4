//! Use lists stay exact under random operand edits, replacements, clones and erasures.

use std::collections::HashMap;

use ir::{InsertPoint, Module, OpId, OperationState, Type, Use, ValueId, ValueMap};
use proptest::prelude::*;

#[derive(Clone, Debug)]
enum Edit {
    SetOperand { user: usize, index: usize, src: usize },
    SetOperands { user: usize, srcs: Vec<usize> },
    Append { user: usize, src: usize },
    ReplaceAll { from: usize, to: usize },
    ReplaceWhere { from: usize, to: usize, parity: usize },
    Clone { user: usize },
    Erase { user: usize },
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        (any::<usize>(), any::<usize>(), any::<usize>()).prop_map(|(user, index, src)| Edit::SetOperand { user, index, src }),
        (any::<usize>(), prop::collection::vec(any::<usize>(), 0..4)).prop_map(|(user, srcs)| Edit::SetOperands { user, srcs }),
        (any::<usize>(), any::<usize>()).prop_map(|(user, src)| Edit::Append { user, src }),
        (any::<usize>(), any::<usize>()).prop_map(|(from, to)| Edit::ReplaceAll { from, to }),
        (any::<usize>(), any::<usize>(), any::<usize>()).prop_map(|(from, to, parity)| Edit::ReplaceWhere { from, to, parity }),
        any::<usize>().prop_map(|user| Edit::Clone { user }),
        any::<usize>().prop_map(|user| Edit::Erase { user }),
    ]
}

/// Every live op's operands, as the use lists must describe them.
fn check(m: &Module, users: &[OpId], sources: &[ValueId]) -> Result<(), TestCaseError> {
    let mut expected: HashMap<ValueId, Vec<Use>> = HashMap::new();
    for &op in users {
        for (index, &v) in m.operands(op).iter().enumerate() {
            expected.entry(v).or_default().push(Use { op, index });
        }
    }
    for &v in sources {
        let mut got = m.uses(v).to_vec();
        let mut want = expected.remove(&v).unwrap_or_default();
        let key = |u: &Use| (format!("{:?}", u.op), u.index);
        got.sort_by_key(key);
        want.sort_by_key(key);
        prop_assert_eq!(got, want);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]
    #[test]
    fn use_lists_match_operands(edits in prop::collection::vec(edit(), 1..60)) {
        let mut m = Module::new();
        let body = m.body();
        let mut sources = Vec::new();
        for _ in 0..6 {
            let op = m.create_op(OperationState::new("test.source").results([Type::int()]));
            m.insert_op(op, InsertPoint::End(body)).unwrap();
            sources.push(m.results(op)[0]);
        }
        let mut users = Vec::new();
        for i in 0..8 {
            let srcs = [sources[i % 6], sources[(i * 5 + 1) % 6], sources[(i + 2) % 6]];
            let op = m.create_op(OperationState::new("test.user").operands(srcs[..1 + i % 3].iter().copied()));
            m.insert_op(op, InsertPoint::End(body)).unwrap();
            users.push(op);
        }
        for e in edits {
            match e {
                Edit::SetOperand { user, index, src } if !users.is_empty() => {
                    let op = users[user % users.len()];
                    let n = m.operands(op).len();
                    if n > 0 {
                        m.set_operand(op, index % n, sources[src % 6]).unwrap();
                    } else {
                        prop_assert!(m.set_operand(op, index, sources[src % 6]).is_err());
                    }
                }
                Edit::SetOperands { user, srcs } if !users.is_empty() => {
                    let op = users[user % users.len()];
                    m.set_operands(op, srcs.iter().map(|s| sources[s % 6]).collect());
                }
                Edit::Append { user, src } if !users.is_empty() => {
                    m.append_operand(users[user % users.len()], sources[src % 6]);
                }
                Edit::ReplaceAll { from, to } => m.replace_all_uses(sources[from % 6], sources[to % 6]),
                Edit::ReplaceWhere { from, to, parity } => {
                    let keep: Vec<OpId> = users.iter().copied().enumerate().filter(|(i, _)| i % 2 == parity % 2).map(|(_, o)| o).collect();
                    m.replace_uses_where(sources[from % 6], sources[to % 6], |_, u| keep.contains(&u.op));
                }
                Edit::Clone { user } if !users.is_empty() => {
                    let op = m.clone_op(users[user % users.len()], &mut ValueMap::new());
                    m.insert_op(op, InsertPoint::End(body)).unwrap();
                    users.push(op);
                }
                Edit::Erase { user } if !users.is_empty() => {
                    let op = users.swap_remove(user % users.len());
                    m.erase_op(op).unwrap();
                }
                _ => {}
            }
            check(&m, &users, &sources)?;
        }
    }
}
