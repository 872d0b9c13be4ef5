//! Reading the config key by key, so that one wrong key costs only itself: a typo in one
//! provider's settings must not lose the user's other agent paths and environment.
//!
//! The known keys are read off the types themselves (every field of `Config::default()` and
//! `ProviderSettings::default()` serialised to JSON, where `None` still shows as `null`), so a
//! field added to either struct is known here without a second list.

use std::collections::BTreeSet;

use serde::Serialize;
use toml::{Table, Value};

use super::{Config, ProviderSettings};

/// One key that was dropped, and why.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct DroppedKey {
    /// The dotted path of the key (`providers.pi.comand`).
    pub(crate) path: String,
    /// The 1-based line of the key in the file, when it can be found.
    pub(crate) line: Option<usize>,
    pub(crate) problem: String,
}

/// Removes from `table` every key that is unknown or whose value does not fit, so that what is
/// left deserialises into a [`Config`]; `text` is the file, for line numbers.
pub(super) fn drop_bad_keys(table: &mut Table, text: &str) -> Vec<DroppedKey> {
    let document = toml_edit::ImDocument::parse(text).ok();
    let line = |path: &[&str]| {
        document
            .as_ref()
            .and_then(|document| key_offset(document.as_item(), path))
            .map(|offset| super::line_of(text, offset))
    };
    let mut dropped = Vec::new();
    let top_known = field_names(&Config::default());
    let provider_known = field_names(&ProviderSettings::default());

    for key in unknown_keys(table, &top_known) {
        table.remove(&key);
        dropped.push(DroppedKey {
            line: line(&[&key]),
            problem: unknown_key_problem(&top_known),
            path: key,
        });
    }
    if let Some(Value::Table(providers)) = table.get_mut("providers") {
        let names: Vec<String> = providers.keys().cloned().collect();
        for name in names {
            let path_of = |key: &str| format!("providers.{name}.{key}");
            let Some(Value::Table(settings)) = providers.get_mut(&name) else {
                providers.remove(&name);
                dropped.push(DroppedKey {
                    path: format!("providers.{name}"),
                    line: line(&["providers", &name]),
                    problem: "must be a table of settings".to_owned(),
                });
                continue;
            };
            for key in unknown_keys(settings, &provider_known) {
                settings.remove(&key);
                dropped.push(DroppedKey {
                    path: path_of(&key),
                    line: line(&["providers", &name, &key]),
                    problem: unknown_key_problem(&provider_known),
                });
            }
            for (key, problem) in ill_typed_keys::<ProviderSettings>(settings) {
                settings.remove(&key);
                dropped.push(DroppedKey {
                    path: path_of(&key),
                    line: line(&["providers", &name, &key]),
                    problem,
                });
            }
        }
    }
    for (key, problem) in ill_typed_keys::<Config>(table) {
        table.remove(&key);
        dropped.push(DroppedKey {
            line: line(&[&key]),
            path: key,
            problem,
        });
    }
    // In file order, as the user reads the file.
    dropped.sort_by_key(|dropped| dropped.line.unwrap_or(usize::MAX));
    dropped
}

fn field_names(value: &impl Serialize) -> BTreeSet<String> {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::Object(fields)) => fields.keys().cloned().collect(),
        _ => BTreeSet::new(),
    }
}

fn unknown_keys(table: &Table, known: &BTreeSet<String>) -> Vec<String> {
    table
        .keys()
        .filter(|key| !known.contains(*key))
        .cloned()
        .collect()
}

fn unknown_key_problem(known: &BTreeSet<String>) -> String {
    let known: Vec<&str> = known.iter().map(String::as_str).collect();
    format!("unknown key (known keys: {})", known.join(", "))
}

/// The keys of `table` that fail to deserialise into `T` on their own, with the reason.
fn ill_typed_keys<T: serde::de::DeserializeOwned>(table: &Table) -> Vec<(String, String)> {
    if Value::Table(table.clone()).try_into::<T>().is_ok() {
        return Vec::new();
    }
    table
        .iter()
        .filter_map(|(key, value)| {
            let alone = Table::from_iter([(key.clone(), value.clone())]);
            Value::Table(alone)
                .try_into::<T>()
                .err()
                .map(|error| (key.clone(), error.message().trim().to_owned()))
        })
        .collect()
}

/// The byte offset of the key at `path` in the parsed file.
fn key_offset(root: &toml_edit::Item, path: &[&str]) -> Option<usize> {
    let (last, parents) = path.split_last()?;
    let mut item = root;
    for parent in parents {
        item = item.as_table_like()?.get(parent)?;
    }
    let table = item.as_table_like()?;
    table
        .key(last)
        .and_then(toml_edit::Key::span)
        .or_else(|| table.get(last).and_then(toml_edit::Item::span))
        .map(|span| span.start)
}
