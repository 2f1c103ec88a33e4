//! The `.debug_pkl` source-range tables: for a byte offset of a `code/` file, the location in
//! the user's original Python source it was compiled from.
//!
//! A table is `('FORMAT_WITH_STRING_TABLE', (strings…), ((offset, ((pieces, file, line), start,
//! end), tag), …))`: from `offset` on, the printed code comes from bytes `start..end` of the
//! text made of the `pieces` strings, whose first line is line `line` of `strings[file]`.

use super::pickle::{Value, unpickle_plain};
use super::TorchScriptArchive;

/// `file.py:line:col` of the original source of byte `at` of `entry` (`code/__torch__/m.py`),
/// when the archive has a debug table that maps it.
pub(crate) fn original_location(archive: &TorchScriptArchive, entry: &str, at: usize) -> Option<String> {
    let key = entry.strip_prefix("code/").unwrap_or(entry);
    let bytes = archive.debug_pkl().get(key)?;
    let table = unpickle_plain(bytes).ok()?;
    locate(&table, at)
}

fn locate(table: &Value, at: usize) -> Option<String> {
    let top = table.as_tuple()?;
    if top.first()?.as_str()? != "FORMAT_WITH_STRING_TABLE" {
        return None;
    }
    let strings: Vec<&str> = top.get(1)?.as_tuple()?.iter().map(Value::as_str).collect::<Option<_>>()?;
    let records = items(top.get(2)?)?;
    // The last record starting at or before `at` covers it.
    let record = records
        .iter()
        .filter_map(|r| {
            let r = r.as_tuple()?;
            Some((usize::try_from(r.first()?.as_int()?).ok()?, r.get(1)?))
        })
        .take_while(|(offset, _)| *offset <= at)
        .last()?
        .1;
    let range = record.as_tuple()?;
    let source = range.first()?.as_tuple()?;
    let pieces = items(source.first()?)?;
    let file = strings.get(usize::try_from(source.get(1)?.as_int()?).ok()?)?;
    let first_line = source.get(2)?.as_int()?;
    let start = usize::try_from(range.get(1)?.as_int()?).ok()?;
    if file.is_empty() || pieces.is_empty() {
        return None;
    }
    let mut text = String::new();
    for p in pieces {
        text.push_str(strings.get(usize::try_from(p.as_int()?).ok()?)?);
    }
    let before = text.get(..start.min(text.len()))?;
    let line = first_line + before.matches('\n').count() as i64;
    let col = before.rfind('\n').map_or(before.len(), |n| before.len() - n - 1) + 1;
    Some(format!("{file}:{line}:{col}"))
}

/// The elements of a tuple or list.
fn items(v: &Value) -> Option<Vec<Value>> {
    match v {
        Value::Tuple(t) => Some(t.to_vec()),
        Value::List(l) => Some(l.items.clone()),
        _ => None,
    }
}
