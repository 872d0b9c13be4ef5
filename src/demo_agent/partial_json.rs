//! What pi makes of a tool call's arguments while they stream: the JSON cut into fragments, and
//! the object its partial-JSON parser reads from each prefix.

use serde_json::Value;

/// `text` in pieces of at most `size` characters.
pub(crate) fn char_chunks(text: &str, size: usize) -> impl Iterator<Item = &str> {
    let mut rest = text;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let end = rest
            .char_indices()
            .nth(size)
            .map_or(rest.len(), |(index, _)| index);
        let (chunk, tail) = rest.split_at(end);
        rest = tail;
        Some(chunk)
    })
}

/// What pi's partial-JSON parser makes of a prefix of a flat JSON object: the complete members,
/// plus a string value cut short; a member whose key is incomplete is left out.
pub(crate) fn parse_partial_object(prefix: &str) -> Value {
    let mut members = serde_json::Map::new();
    let Some(mut rest) = prefix.trim_start().strip_prefix('{') else {
        return Value::Object(members);
    };
    loop {
        rest = rest.trim_start_matches(|c: char| c.is_whitespace() || c == ',');
        let Some((key, after_key)) = complete_string(rest) else {
            break;
        };
        let Some(value_text) = after_key.trim_start().strip_prefix(':') else {
            break;
        };
        let value_text = value_text.trim_start();
        if value_text.starts_with('"') {
            match complete_string(value_text) {
                Some((value, after)) => {
                    members.insert(key, Value::String(value));
                    rest = after;
                }
                None => {
                    if let Some(value) = truncated_string(value_text) {
                        members.insert(key, Value::String(value));
                    }
                    break;
                }
            }
        } else {
            let end = value_text.find([',', '}']).unwrap_or(value_text.len());
            if let Ok(value) = serde_json::from_str::<Value>(value_text[..end].trim()) {
                members.insert(key, value);
            }
            rest = &value_text[end..];
            if rest.is_empty() {
                break;
            }
        }
        if rest.trim_start().starts_with('}') {
            break;
        }
    }
    Value::Object(members)
}

/// A complete JSON string at the start of `text` (which starts with `"`), and what follows it.
fn complete_string(text: &str) -> Option<(String, &str)> {
    if !text.starts_with('"') {
        return None;
    }
    let mut escaped = false;
    for (index, c) in text.char_indices().skip(1) {
        match (escaped, c) {
            (true, _) => escaped = false,
            (false, '\\') => escaped = true,
            (false, '"') => {
                let value = serde_json::from_str(&text[..=index]).ok()?;
                return Some((value, &text[index + 1..]));
            }
            _ => {}
        }
    }
    None
}

/// The value of a JSON string that was cut off, minus any escape sequence cut in half.
fn truncated_string(text: &str) -> Option<String> {
    let mut body = &text[1..];
    let trailing_backslashes = body.len() - body.trim_end_matches('\\').len();
    if trailing_backslashes % 2 == 1 {
        body = &body[..body.len() - 1];
    }
    if let Some(start) = body.rfind("\\u") {
        let backslashes_before = body[..start].len() - body[..start].trim_end_matches('\\').len();
        let is_escape = backslashes_before.is_multiple_of(2);
        if is_escape && body.len() - start < 6 {
            body = &body[..start];
        }
    }
    serde_json::from_str(&format!("\"{body}\"")).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn partial_arguments_parse_like_pi_in_the_c_tool_capture() {
        // The argument fragments and snapshots of captures/c_tool.stdout.jsonl.
        let steps = [
            ("", json!({})),
            ("{\"comma", json!({})),
            ("{\"command\": \"e", json!({"command": "e"})),
            ("{\"command\": \"echo hi\"", json!({"command": "echo hi"})),
            ("{\"command\": \"echo hi\"}", json!({"command": "echo hi"})),
        ];
        for (prefix, expected) in steps {
            assert_eq!(parse_partial_object(prefix), expected, "{prefix:?}");
        }
    }

    #[test]
    fn partial_arguments_survive_cut_escapes_and_other_values() {
        assert_eq!(parse_partial_object(r#"{"a":"x\"#), json!({"a": "x"}));
        assert_eq!(parse_partial_object(r#"{"a":"x\u00"#), json!({"a": "x"}));
        assert_eq!(parse_partial_object(r#"{"a":"x\\"#), json!({"a": "x\\"}));
        assert_eq!(
            parse_partial_object(r#"{"a":"q\"b","n":12"#),
            json!({"a": "q\"b", "n": 12})
        );
        assert_eq!(parse_partial_object(r#"{"a":"#), json!({}));
        assert_eq!(parse_partial_object("not json"), json!({}));
    }

    #[test]
    fn char_chunks_split_on_char_boundaries() {
        let chunks: Vec<_> = char_chunks("héllo wörld", 4).collect();
        assert_eq!(chunks, vec!["héll", "o wö", "rld"]);
        assert_eq!(chunks.concat(), "héllo wörld");
    }
}
