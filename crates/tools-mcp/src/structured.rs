//! A bounded check of an MCP tool's `structuredContent` against the `outputSchema` the tool
//! declared, as the MCP specification asks clients to do. The JSON Schema keywords that
//! describe data shapes are checked (`type`, `properties`, `required`,
//! `additionalProperties`, `items`, `prefixItems`, `enum`, `const`, numeric and length
//! bounds, `allOf`, `anyOf`, `oneOf`, `not`, local `$ref`s); keywords that need more
//! (`pattern`, `format`, `if`, remote references) are not, so a value is never refused for
//! them. The work is bounded: past [`MAX_STEPS`] schema-value visits or [`MAX_DEPTH`] nested
//! references the rest is not checked.

use serde_json::{Map, Value};

/// Schema-value visits one check may make.
pub const MAX_STEPS: usize = 100_000;
/// Nesting of schemas (through `$ref`s, combinators and values) one check follows.
pub const MAX_DEPTH: usize = 64;
/// Problems reported at most.
const MAX_PROBLEMS: usize = 8;

/// The problems of `value` against `schema` (empty: it conforms, or the rest was too large
/// to check). Each names the place in the value, starting at `structuredContent`.
pub fn problems(schema: &Value, value: &Value) -> Vec<String> {
    let mut checker = Checker {
        root: schema,
        steps: 0,
    };
    let mut found = checker.check(schema, value, "structuredContent", 0);
    found.truncate(MAX_PROBLEMS);
    found
}

struct Checker<'a> {
    root: &'a Value,
    steps: usize,
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn has_type(ty: &str, value: &Value) -> bool {
    match ty {
        "integer" => match value {
            Value::Number(n) => {
                n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0)
            }
            _ => false,
        },
        "number" => value.is_number(),
        other => kind(value) == other,
    }
}

/// The schema a local `$ref` (`#`, `#/$defs/x`, `#/definitions/x`, any JSON pointer) names.
fn resolve<'a>(root: &'a Value, reference: &str) -> Option<&'a Value> {
    let pointer = reference.strip_prefix('#')?;
    if pointer.is_empty() {
        return Some(root);
    }
    let decoded: String = pointer
        .split('/')
        .map(|part| part.replace("~1", "/").replace("~0", "~"))
        .collect::<Vec<_>>()
        .join("/");
    root.pointer(&decoded)
}

impl<'a> Checker<'a> {
    /// The problems of `value` at `path` against `schema`.
    fn check(&mut self, schema: &'a Value, value: &Value, path: &str, depth: usize) -> Vec<String> {
        self.steps += 1;
        if self.steps > MAX_STEPS || depth > MAX_DEPTH {
            return Vec::new();
        }
        let schema = match schema {
            Value::Bool(true) => return Vec::new(),
            Value::Bool(false) => return vec![format!("{path}: no value is allowed here")],
            Value::Object(schema) => schema,
            _ => return Vec::new(),
        };
        let mut found = Vec::new();
        if let Some(target) = schema
            .get("$ref")
            .and_then(Value::as_str)
            .and_then(|r| resolve(self.root, r))
        {
            found.extend(self.check(target, value, path, depth + 1));
        }
        if let Some(problem) = self.type_problem(schema, value, path) {
            // Nothing else about a value of the wrong type is worth saying.
            found.push(problem);
            return found;
        }
        if let Some(c) = schema.get("const")
            && c != value
        {
            found.push(format!("{path}: expected {c}, got {}", preview(value)));
        }
        if let Some(Value::Array(allowed)) = schema.get("enum")
            && !allowed.contains(value)
        {
            let list: Vec<String> = allowed.iter().map(Value::to_string).collect();
            found.push(format!(
                "{path}: expected one of {}, got {}",
                list.join(", "),
                preview(value)
            ));
        }
        bounds(schema, value, path, &mut found);
        self.combinators(schema, value, path, depth, &mut found);
        match value {
            Value::Object(map) => self.object(schema, map, path, depth, &mut found),
            Value::Array(items) => self.array(schema, items, path, depth, &mut found),
            _ => {}
        }
        found
    }

    fn type_problem(
        &self,
        schema: &Map<String, Value>,
        value: &Value,
        path: &str,
    ) -> Option<String> {
        let types: Vec<&str> = match schema.get("type")? {
            Value::String(t) => vec![t.as_str()],
            Value::Array(list) => list.iter().filter_map(Value::as_str).collect(),
            _ => return None,
        };
        if types.is_empty() || types.iter().any(|t| has_type(t, value)) {
            return None;
        }
        Some(format!(
            "{path}: expected {}, got {}",
            types.join(" or "),
            kind(value)
        ))
    }

    fn combinators(
        &mut self,
        schema: &'a Map<String, Value>,
        value: &Value,
        path: &str,
        depth: usize,
        found: &mut Vec<String>,
    ) {
        if let Some(Value::Array(all)) = schema.get("allOf") {
            for branch in all {
                found.extend(self.check(branch, value, path, depth + 1));
            }
        }
        if let Some(Value::Array(any)) = schema.get("anyOf") {
            let matched = any
                .iter()
                .any(|branch| self.check(branch, value, path, depth + 1).is_empty());
            if !any.is_empty() && !matched {
                found.push(format!(
                    "{path}: {} matches none of the schemas of anyOf",
                    preview(value)
                ));
            }
        }
        if let Some(Value::Array(one)) = schema.get("oneOf") {
            let matched = one
                .iter()
                .filter(|branch| self.check(branch, value, path, depth + 1).is_empty())
                .count();
            if !one.is_empty() && matched != 1 && self.steps <= MAX_STEPS {
                found.push(format!(
                    "{path}: {} matches {matched} of the schemas of oneOf (exactly one expected)",
                    preview(value)
                ));
            }
        }
        if let Some(not) = schema.get("not")
            && self.check(not, value, path, depth + 1).is_empty()
            && self.steps <= MAX_STEPS
        {
            found.push(format!(
                "{path}: {} matches the schema of not",
                preview(value)
            ));
        }
    }

    fn object(
        &mut self,
        schema: &'a Map<String, Value>,
        map: &Map<String, Value>,
        path: &str,
        depth: usize,
        found: &mut Vec<String>,
    ) {
        if let Some(Value::Array(required)) = schema.get("required") {
            for key in required.iter().filter_map(Value::as_str) {
                if !map.contains_key(key) {
                    found.push(format!(
                        "{path}: the required property \"{key}\" is missing"
                    ));
                }
            }
        }
        let properties = schema.get("properties").and_then(Value::as_object);
        // With patternProperties the extra keys cannot be told apart; they are not checked.
        let additional = if schema.contains_key("patternProperties") {
            None
        } else {
            schema.get("additionalProperties")
        };
        for (key, item) in map {
            let at = format!("{path}.{key}");
            match properties.and_then(|p| p.get(key)) {
                Some(property) => found.extend(self.check(property, item, &at, depth + 1)),
                None => match additional {
                    Some(Value::Bool(false)) => {
                        found.push(format!("{path}: the property \"{key}\" is not allowed"));
                    }
                    Some(extra) => found.extend(self.check(extra, item, &at, depth + 1)),
                    None => {}
                },
            }
        }
        if let Some(min) = schema.get("minProperties").and_then(Value::as_u64)
            && (map.len() as u64) < min
        {
            found.push(format!("{path}: expected at least {min} properties"));
        }
        if let Some(max) = schema.get("maxProperties").and_then(Value::as_u64)
            && (map.len() as u64) > max
        {
            found.push(format!("{path}: expected at most {max} properties"));
        }
    }

    fn array(
        &mut self,
        schema: &'a Map<String, Value>,
        items: &[Value],
        path: &str,
        depth: usize,
        found: &mut Vec<String>,
    ) {
        // `prefixItems` (2020-12) or an array of `items` (draft 7) describe the first ones.
        let (prefix, rest): (&[Value], Option<&Value>) =
            match (schema.get("prefixItems"), schema.get("items")) {
                (Some(Value::Array(prefix)), rest) => (prefix, rest),
                (None, Some(Value::Array(prefix))) => (prefix, schema.get("additionalItems")),
                (_, rest) => (&[], rest),
            };
        for (i, item) in items.iter().enumerate() {
            let at = format!("{path}[{i}]");
            let item_schema = prefix.get(i).or(rest);
            if let Some(item_schema) = item_schema {
                found.extend(self.check(item_schema, item, &at, depth + 1));
            }
            if found.len() >= MAX_PROBLEMS || self.steps > MAX_STEPS {
                break;
            }
        }
        let len = items.len() as u64;
        if let Some(min) = schema.get("minItems").and_then(Value::as_u64)
            && len < min
        {
            found.push(format!("{path}: expected at least {min} items, got {len}"));
        }
        if let Some(max) = schema.get("maxItems").and_then(Value::as_u64)
            && len > max
        {
            found.push(format!("{path}: expected at most {max} items, got {len}"));
        }
    }
}

/// `minimum`, `maximum`, their exclusive forms, and string lengths.
fn bounds(schema: &Map<String, Value>, value: &Value, path: &str, found: &mut Vec<String>) {
    if let Some(n) = value.as_f64() {
        let limit = |key: &str| schema.get(key).and_then(Value::as_f64);
        if let Some(min) = limit("minimum")
            && n < min
        {
            found.push(format!("{path}: {n} is below the minimum {min}"));
        }
        if let Some(max) = limit("maximum")
            && n > max
        {
            found.push(format!("{path}: {n} is above the maximum {max}"));
        }
        if let Some(min) = limit("exclusiveMinimum")
            && n <= min
        {
            found.push(format!("{path}: {n} is not above {min}"));
        }
        if let Some(max) = limit("exclusiveMaximum")
            && n >= max
        {
            found.push(format!("{path}: {n} is not below {max}"));
        }
    }
    if let Some(text) = value.as_str() {
        let len = text.chars().count() as u64;
        if let Some(min) = schema.get("minLength").and_then(Value::as_u64)
            && len < min
        {
            found.push(format!(
                "{path}: expected at least {min} characters, got {len}"
            ));
        }
        if let Some(max) = schema.get("maxLength").and_then(Value::as_u64)
            && len > max
        {
            found.push(format!(
                "{path}: expected at most {max} characters, got {len}"
            ));
        }
    }
}

/// A value as a short piece of JSON, for messages.
fn preview(value: &Value) -> String {
    let text = value.to_string();
    if text.chars().count() <= 60 {
        text
    } else {
        text.chars().take(60).collect::<String>() + "…"
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// `value` against `schema`: `expected` lists a fragment of each problem, in order.
    fn check(schema: Value, value: Value, expected: &[&str]) {
        let got = problems(&schema, &value);
        assert_eq!(got.len(), expected.len(), "{schema} {value}: {got:#?}");
        for (problem, fragment) in got.iter().zip(expected) {
            assert!(problem.contains(fragment), "{problem} lacks {fragment}");
        }
    }

    #[test]
    fn shapes_conform_or_name_the_place() {
        let weather = json!({"type": "object",
            "properties": {"temperature": {"type": "number"}, "conditions": {"type": "string"},
                           "humidity": {"type": "integer", "minimum": 0, "maximum": 100}},
            "required": ["temperature", "conditions"], "additionalProperties": false});
        check(
            weather.clone(),
            json!({"temperature": 21.5, "conditions": "sunny", "humidity": 40}),
            &[],
        );
        check(
            weather.clone(),
            json!({"temperature": "warm", "conditions": "sunny"}),
            &["structuredContent.temperature: expected number, got string"],
        );
        check(
            weather.clone(),
            json!({"conditions": "sunny"}),
            &["structuredContent: the required property \"temperature\" is missing"],
        );
        check(
            weather.clone(),
            json!({"temperature": 1, "conditions": "x", "wind": 3}),
            &["the property \"wind\" is not allowed"],
        );
        check(
            weather.clone(),
            json!({"temperature": 1, "conditions": "x", "humidity": 101}),
            &["humidity: 101 is above the maximum 100"],
        );
        check(
            weather.clone(),
            json!({"temperature": 1, "conditions": "x", "humidity": 4.5}),
            &["humidity: expected integer, got number"],
        );
        check(
            weather,
            json!([1]),
            &["structuredContent: expected object, got array"],
        );
        check(json!({"type": "integer"}), json!(3.0), &[]);
        check(json!({"type": ["string", "null"]}), json!(null), &[]);
        check(
            json!({"const": "a"}),
            json!("b"),
            &["expected \"a\", got \"b\""],
        );
        check(
            json!({"enum": [1, 2]}),
            json!(3),
            &["expected one of 1, 2, got 3"],
        );
        check(
            json!({"minLength": 2, "maxLength": 3}),
            json!("é"),
            &["at least 2 characters"],
        );
        check(
            json!({"exclusiveMinimum": 0}),
            json!(0),
            &["0 is not above 0"],
        );
        check(json!(false), json!(1), &["no value is allowed"]);
        check(json!(true), json!({"any": "thing"}), &[]);
        // Keywords it does not check never refuse a value.
        check(
            json!({"type": "string", "pattern": "^x$", "format": "email"}),
            json!("y"),
            &[],
        );
    }

    #[test]
    fn arrays_combinators_and_references() {
        let list = json!({"type": "array", "items": {"$ref": "#/$defs/item"}, "maxItems": 2,
            "$defs": {"item": {"type": "object", "required": ["id"],
                               "properties": {"id": {"type": "integer"}}}}});
        check(list.clone(), json!([{"id": 1}, {"id": 2}]), &[]);
        check(
            list.clone(),
            json!([{"id": 1}, {"id": "2"}]),
            &["structuredContent[1].id: expected integer, got string"],
        );
        check(
            list,
            json!([{"id": 1}, {"id": 2}, {"id": 3}]),
            &["at most 2 items, got 3"],
        );
        // Pydantic's shape: a model under definitions, referenced from a property.
        let model = json!({"type": "object", "properties": {"result": {"$ref": "#/definitions/M"}},
            "definitions": {"M": {"type": "object", "properties": {"a~b/c": {"type": "string"}}}}});
        check(model.clone(), json!({"result": {"a~b/c": "x"}}), &[]);
        check(
            model,
            json!({"result": {"a~b/c": 1}}),
            &["result.a~b/c: expected string"],
        );
        check(
            json!({"prefixItems": [{"type": "string"}], "items": {"type": "integer"}}),
            json!(["a", 1, "b"]),
            &["structuredContent[2]: expected integer, got string"],
        );
        check(
            json!({"items": [{"type": "string"}], "additionalItems": false}),
            json!(["a", 1]),
            &["structuredContent[1]: no value is allowed"],
        );
        let either = json!({"anyOf": [{"type": "string"}, {"type": "integer"}]});
        check(either.clone(), json!(1), &[]);
        check(
            either,
            json!(true),
            &["matches none of the schemas of anyOf"],
        );
        let one = json!({"oneOf": [{"type": "number"}, {"type": "integer"}]});
        check(one, json!(1), &["matches 2 of the schemas of oneOf"]);
        check(
            json!({"not": {"type": "null"}}),
            json!(null),
            &["matches the schema of not"],
        );
        check(
            json!({"allOf": [{"required": ["a"]}, {"required": ["b"]}]}),
            json!({}),
            &["\"a\" is missing", "\"b\" is missing"],
        );
        // A reference that leads nowhere, or outside the document, checks nothing.
        check(json!({"$ref": "#/nowhere"}), json!(1), &[]);
        check(json!({"$ref": "https://example.com/s.json"}), json!(1), &[]);
    }

    #[test]
    fn the_work_is_bounded() {
        // A schema that refers to itself forever.
        let recursive = json!({"$ref": "#"});
        check(recursive, json!({"a": 1}), &[]);
        let nested = json!({"type": "object", "additionalProperties": {"$ref": "#"}});
        let mut deep = json!({});
        for _ in 0..200 {
            deep = json!({ "x": deep });
        }
        check(nested, deep, &[]);
        // A huge array stops after MAX_STEPS visits and a few problems.
        let many = Value::Array(vec![json!("x"); MAX_STEPS * 2]);
        let got = problems(&json!({"items": {"type": "integer"}}), &many);
        assert_eq!(got.len(), MAX_PROBLEMS, "{got:?}");
        let fine = Value::Array(vec![json!(1); MAX_STEPS * 2]);
        assert!(problems(&json!({"items": {"type": "integer"}}), &fine).is_empty());
    }
}
