//! Input parsing the way the reference does it: schema-guided, lenient with numbers and
//! booleans sent as strings, strict about unknown keys, and with one readable line per
//! problem.

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::ToolError;

/// The longest pattern a tool takes (a glob, a regular expression, a search query), in
/// characters. Tools declare it as their pattern fields' `maxLength`.
pub const MAX_PATTERN_CHARS: usize = 16_384;

/// The longest command line a tool takes, in characters: the kernel's limit on one
/// argument (128 KiB with its terminating NUL), as a command is passed to `bash -c` as one
/// argument. Tools declare it as their command fields' `maxLength`.
pub const MAX_COMMAND_CHARS: usize = 128 * 1024 - 1;

/// The longest URL (or URI) a tool takes, in characters.
pub const MAX_URL_CHARS: usize = 8_192;

/// The longest identifier or name a tool takes (a task id, a server, a skill, a team), in
/// characters.
pub const MAX_NAME_CHARS: usize = 1_024;

/// Checks `raw` against `schema`, coerces string numbers and booleans, drops `null` for
/// optional parameters, and deserialises the result.
///
/// Every problem found becomes one line of an [`ToolError::InvalidInput`]. Never panics,
/// whatever the JSON value.
pub fn parse_input<T: DeserializeOwned>(
    tool: &str,
    schema: &Value,
    raw: &Value,
) -> Result<(T, Value), ToolError> {
    let value = check_input(tool, schema, raw)?;
    match serde_json::from_value::<T>(value.clone()) {
        Ok(typed) => Ok((typed, value)),
        Err(err) => Err(ToolError::InvalidInput {
            tool: tool.to_owned(),
            problems: vec![format!("The input could not be read: {err}")],
        }),
    }
}

/// The schema-guided half of [`parse_input`]: returns the coerced JSON value.
pub fn check_input(tool: &str, schema: &Value, raw: &Value) -> Result<Value, ToolError> {
    let mut value = match raw {
        Value::Null => Value::Object(Map::new()),
        other => other.clone(),
    };
    let mut problems = Vec::new();
    if !value.is_object() {
        problems.push(format!(
            "The input must be a JSON object but was provided as `{}`",
            json_type(&value)
        ));
    } else {
        check(schema, &mut value, "", &mut problems);
    }
    if problems.is_empty() {
        Ok(value)
    } else {
        Err(ToolError::InvalidInput {
            tool: tool.to_owned(),
            problems,
        })
    }
}

/// The key a host adds to an input object when the JSON text it came from repeated a key;
/// its value is the repeated key's path. The execution path refuses such an input with an
/// error naming the key. (A JSON parser keeps only one of the repeated values, so
/// `{"command":"ls","command":"id"}` would otherwise run whichever the parser kept.)
pub const DUPLICATE_KEY_MARKER: &str = "\u{0}duplicate-key";

/// The dotted path of the first key that appears twice in one object of the JSON `text`
/// (`command`, `edits[1].old_string`), or `None`. Invalid JSON gives `None`: the caller's own
/// parse reports it.
pub fn duplicate_key(text: &str) -> Option<String> {
    duplicate_keys(text).into_iter().next()
}

/// The dotted paths of every key that appears twice in one object of the JSON `text`, in
/// document order.
pub fn duplicate_keys(text: &str) -> Vec<String> {
    let found = std::cell::RefCell::new(Vec::new());
    let mut de = serde_json::Deserializer::from_str(text);
    let seed = Duplicates {
        path: String::new(),
        found: &found,
    };
    if serde::de::DeserializeSeed::deserialize(seed, &mut de).is_err() {
        return Vec::new();
    }
    found.into_inner()
}

/// Parses the JSON text of a tool input; a repeated key is marked with
/// [`DUPLICATE_KEY_MARKER`] so that the call is refused with an error naming it.
pub fn parse_input_text(text: &str) -> Result<Value, serde_json::Error> {
    let mut value: Value = serde_json::from_str(text)?;
    if let Some(key) = duplicate_key(text) {
        mark_duplicate_key(&mut value, &key);
    }
    Ok(value)
}

/// Marks `input` (an object) as having repeated `key`.
pub fn mark_duplicate_key(input: &mut Value, key: &str) {
    if let Value::Object(map) = input {
        map.insert(
            DUPLICATE_KEY_MARKER.to_owned(),
            Value::String(key.to_owned()),
        );
    }
}

/// The repeated key a host marked in `input`, if any.
pub fn marked_duplicate_key(input: &Value) -> Option<&str> {
    input.get(DUPLICATE_KEY_MARKER).and_then(Value::as_str)
}

/// Walks a JSON document without building it, noting the first repeated key.
struct Duplicates<'a> {
    path: String,
    found: &'a std::cell::RefCell<Vec<String>>,
}

impl<'de> serde::de::DeserializeSeed<'de> for Duplicates<'_> {
    type Value = ();
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for Duplicates<'_> {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut seen = std::collections::HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            let path = join_path(&self.path, &key);
            if !seen.insert(key) {
                self.found.borrow_mut().push(path.clone());
            }
            map.next_value_seed(Duplicates {
                path,
                found: self.found,
            })?;
        }
        Ok(())
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut i = 0;
        while seq
            .next_element_seed(Duplicates {
                path: format!("{}[{i}]", self.path),
                found: self.found,
            })?
            .is_some()
        {
            i += 1;
        }
        Ok(())
    }
    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_i128<E>(self, _: i128) -> Result<(), E> {
        Ok(())
    }
    fn visit_u128<E>(self, _: u128) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_none<E>(self) -> Result<(), E> {
        Ok(())
    }
}

/// The JSON type name of a value, as the messages spell it.
pub(crate) fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn join_path(parent: &str, key: &str) -> String {
    if parent.is_empty() {
        key.to_owned()
    } else {
        format!("{parent}.{key}")
    }
}

/// The types a schema admits, from `type` (string or array).
fn schema_types(schema: &Value) -> Vec<&str> {
    match schema.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

fn type_matches(ty: &str, value: &Value) -> bool {
    match ty {
        "string" => value.is_string(),
        "boolean" => value.is_boolean(),
        "integer" => value.is_i64() || value.is_u64(),
        "number" => value.is_number(),
        "array" => value.is_array(),
        "object" => value.is_object(),
        "null" => value.is_null(),
        _ => true,
    }
}

/// Turns `"30"` into 30 and `"true"` into true when the schema asks for a number or boolean.
fn coerce(types: &[&str], value: &mut Value) {
    let Value::String(s) = value else { return };
    let t = s.trim();
    if types.contains(&"integer") {
        if let Ok(n) = t.parse::<i64>() {
            *value = Value::from(n);
            return;
        }
        if let Ok(n) = t.parse::<u64>() {
            *value = Value::from(n);
            return;
        }
    }
    if types.contains(&"number")
        && let Ok(n) = t.parse::<f64>()
        && let Some(num) = serde_json::Number::from_f64(n)
    {
        *value = Value::Number(num);
        return;
    }
    if types.contains(&"boolean") {
        match t {
            "true" => *value = Value::Bool(true),
            "false" => *value = Value::Bool(false),
            _ => {}
        }
    }
}

fn check(schema: &Value, value: &mut Value, path: &str, problems: &mut Vec<String>) {
    let Some(schema_obj) = schema.as_object() else {
        return;
    };
    if let Some(branches) = schema_obj.get("anyOf").or_else(|| schema_obj.get("oneOf")) {
        check_union(branches, value, path, problems);
        return;
    }
    let types = schema_types(schema);
    if !types.is_empty() {
        if !types.iter().any(|t| type_matches(t, value)) {
            coerce(&types, value);
        }
        if !types.iter().any(|t| type_matches(t, value)) {
            let expected: Vec<&str> = types.iter().copied().filter(|t| *t != "null").collect();
            problems.push(format!(
                "The parameter `{}` type is expected as `{}` but provided as `{}`",
                display_path(path),
                expected.join(" | "),
                json_type(value)
            ));
            return;
        }
    }
    if let Some(c) = schema_obj.get("const")
        && value != c
    {
        problems.push(format!(
            "The parameter `{}` must be {c} but was {value}",
            display_path(path)
        ));
        return;
    }
    if let Some(Value::Array(allowed)) = schema_obj.get("enum")
        && !allowed.contains(value)
    {
        let list: Vec<String> = allowed.iter().map(Value::to_string).collect();
        problems.push(format!(
            "The parameter `{}` must be one of {} but was {value}",
            display_path(path),
            list.join(", ")
        ));
        return;
    }
    check_bounds(schema_obj, value, path, problems);
    match value {
        Value::Object(map) => check_object(schema_obj, map, path, problems),
        Value::Array(items) => {
            if let Some(item_schema) = schema_obj.get("items") {
                for (i, item) in items.iter_mut().enumerate() {
                    check(item_schema, item, &format!("{path}[{i}]"), problems);
                }
            }
        }
        _ => {}
    }
}

fn display_path(path: &str) -> &str {
    if path.is_empty() { "(input)" } else { path }
}

fn check_union(branches: &Value, value: &mut Value, path: &str, problems: &mut Vec<String>) {
    let Some(branches) = branches.as_array() else {
        return;
    };
    // First a branch that accepts the value as it is, then one that accepts it coerced.
    for branch in branches {
        let mut candidate = value.clone();
        let mut found = Vec::new();
        check(branch, &mut candidate, path, &mut found);
        if found.is_empty() {
            *value = candidate;
            return;
        }
    }
    let mut expected: Vec<String> = Vec::new();
    for branch in branches {
        for t in schema_types(branch) {
            if t != "null" && !expected.iter().any(|e| e == t) {
                expected.push(t.to_owned());
            }
        }
        if let Some(c) = branch.get("const") {
            expected.push(c.to_string());
        }
        if let Some(Value::Array(list)) = branch.get("enum") {
            expected.extend(list.iter().map(Value::to_string));
        }
    }
    problems.push(format!(
        "The parameter `{}` type is expected as `{}` but provided as `{}`",
        display_path(path),
        expected.join(" | "),
        json_type(value)
    ));
}

fn check_bounds(
    schema: &Map<String, Value>,
    value: &Value,
    path: &str,
    problems: &mut Vec<String>,
) {
    let p = display_path(path);
    if let Some(n) = value.as_f64() {
        if let Some(min) = schema.get("minimum").and_then(Value::as_f64)
            && n < min
        {
            problems.push(format!(
                "The parameter `{p}` must be at least {min} but was {n}"
            ));
        }
        if let Some(max) = schema.get("maximum").and_then(Value::as_f64)
            && n > max
        {
            problems.push(format!(
                "The parameter `{p}` must be at most {max} but was {n}"
            ));
        }
    }
    if let Some(s) = value.as_str() {
        let len = s.chars().count() as u64;
        if let Some(min) = schema.get("minLength").and_then(Value::as_u64)
            && len < min
        {
            problems.push(format!(
                "The parameter `{p}` must be at least {min} character(s) long"
            ));
        }
        if let Some(max) = schema.get("maxLength").and_then(Value::as_u64)
            && len > max
        {
            problems.push(format!(
                "The parameter `{p}` must be at most {max} character(s) long"
            ));
        }
    }
    if let Some(items) = value.as_array() {
        let len = items.len() as u64;
        if let Some(min) = schema.get("minItems").and_then(Value::as_u64)
            && len < min
        {
            problems.push(format!(
                "The parameter `{p}` must have at least {min} item(s)"
            ));
        }
        if let Some(max) = schema.get("maxItems").and_then(Value::as_u64)
            && len > max
        {
            problems.push(format!(
                "The parameter `{p}` must have at most {max} item(s)"
            ));
        }
    }
}

fn check_object(
    schema: &Map<String, Value>,
    map: &mut Map<String, Value>,
    path: &str,
    problems: &mut Vec<String>,
) {
    let empty = Map::new();
    let properties = schema
        .get("properties")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let closed = matches!(schema.get("additionalProperties"), Some(Value::Bool(false)));

    // A `null` for an optional parameter means "not given".
    map.retain(|key, v| {
        !(v.is_null()
            && !required.contains(&key.as_str())
            && properties
                .get(key)
                .is_some_and(|s| !schema_types(s).contains(&"null")))
    });

    for key in &required {
        if !map.contains_key(*key) {
            problems.push(format!(
                "The required parameter `{}` is missing",
                join_path(path, key)
            ));
        }
    }
    let keys: Vec<String> = map.keys().cloned().collect();
    for key in keys {
        match properties.get(&key) {
            Some(prop_schema) => {
                if let Some(v) = map.get_mut(&key) {
                    check(prop_schema, v, &join_path(path, &key), problems);
                }
            }
            None if closed => problems.push(format!(
                "An unexpected parameter `{}` was provided",
                join_path(path, &key)
            )),
            None => {
                if let Some(extra) = schema.get("additionalProperties").filter(|s| s.is_object())
                    && let Some(v) = map.get_mut(&key)
                {
                    check(extra, v, &join_path(path, &key), problems);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "minLength": 1},
                "limit": {"type": "integer", "minimum": 0},
                "ratio": {"type": "number"},
                "flag": {"type": "boolean"},
                "mode": {"type": "string", "enum": ["a", "b"]},
                "maybe": {"type": ["string", "null"]},
                "edits": {"type": "array", "items": {
                    "type": "object",
                    "properties": {"old": {"type": "string"}, "all": {"type": "boolean"}},
                    "required": ["old"],
                    "additionalProperties": false
                }},
                "choice": {"oneOf": [{"const": "x"}, {"const": "y"}]}
            },
            "required": ["pattern"],
            "additionalProperties": false
        })
    }

    #[track_caller]
    fn check_case(input: Value, expected: Result<Value, &[&str]>) {
        let got = check_input("T", &schema(), &input);
        match (got, expected) {
            (Ok(v), Ok(e)) => assert_eq!(v, e),
            (Err(ToolError::InvalidInput { tool, problems }), Err(e)) => {
                assert_eq!(tool, "T");
                assert_eq!(problems, e);
            }
            (got, expected) => panic!("got {got:?}, expected {expected:?}"),
        }
    }

    #[test]
    fn accepts_valid_input() {
        check_case(json!({"pattern": "x"}), Ok(json!({"pattern": "x"})));
        check_case(
            json!({"pattern": "x", "maybe": null}),
            Ok(json!({"pattern": "x", "maybe": null})),
        );
    }

    #[test]
    fn coerces_strings() {
        check_case(
            json!({"pattern": "x", "limit": "30", "ratio": " 1.5", "flag": "true"}),
            Ok(json!({"pattern": "x", "limit": 30, "ratio": 1.5, "flag": true})),
        );
        check_case(
            json!({"pattern": "x", "flag": "false"}),
            Ok(json!({"pattern": "x", "flag": false})),
        );
        check_case(
            json!({"pattern": "x", "edits": [{"old": "a", "all": "true"}]}),
            Ok(json!({"pattern": "x", "edits": [{"old": "a", "all": true}]})),
        );
    }

    #[test]
    fn null_optional_is_absent() {
        check_case(
            json!({"pattern": "x", "limit": null}),
            Ok(json!({"pattern": "x"})),
        );
        check_case(
            Value::Null,
            Err(&["The required parameter `pattern` is missing"]),
        );
    }

    #[test]
    fn reports_each_problem() {
        check_case(
            json!({}),
            Err(&["The required parameter `pattern` is missing"]),
        );
        check_case(
            json!({"pattern": "x", "extra": 1}),
            Err(&["An unexpected parameter `extra` was provided"]),
        );
        check_case(
            json!({"pattern": 5, "limit": "ten", "flag": "yes"}),
            Err(&[
                "The parameter `pattern` type is expected as `string` but provided as `number`",
                "The parameter `limit` type is expected as `integer` but provided as `string`",
                "The parameter `flag` type is expected as `boolean` but provided as `string`",
            ]),
        );
        check_case(
            json!({"pattern": "x", "edits": [{"all": 1, "zzz": 2}]}),
            Err(&[
                "The required parameter `edits[0].old` is missing",
                "The parameter `edits[0].all` type is expected as `boolean` but provided as `number`",
                "An unexpected parameter `edits[0].zzz` was provided",
            ]),
        );
        check_case(
            json!({"pattern": "", "limit": -1, "mode": "c", "choice": "z"}),
            Err(&[
                "The parameter `pattern` must be at least 1 character(s) long",
                "The parameter `limit` must be at least 0 but was -1",
                "The parameter `mode` must be one of \"a\", \"b\" but was \"c\"",
                "The parameter `choice` type is expected as `\"x\" | \"y\"` but provided as `string`",
            ]),
        );
    }

    #[test]
    fn non_object_roots() {
        for v in [json!("s"), json!(1), json!([1]), json!(true)] {
            let t = json_type(&v);
            check_case(
                v,
                Err(&[&format!(
                    "The input must be a JSON object but was provided as `{t}`"
                )]),
            );
        }
    }

    #[test]
    fn never_panics_on_odd_values() {
        let odd = [
            json!({"pattern": {"nested": [1, 2, {"deep": null}]}}),
            json!({"pattern": "x", "edits": "not an array"}),
            json!({"pattern": "x", "edits": [null, 1, "s", []]}),
            json!({"pattern": "x", "limit": 1e308, "ratio": "NaN"}),
            json!({"pattern": "x", "limit": "99999999999999999999999"}),
            json!({"": "", "pattern": "\u{0}"}),
        ];
        for v in odd {
            let _ = check_input("T", &schema(), &v);
        }
    }
}
