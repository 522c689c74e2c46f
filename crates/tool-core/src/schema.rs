//! Input schemas: generated once from the input type, inlined with an object root, and
//! lowered to what each model provider accepts.

use std::fmt;
use std::str::FromStr;

use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde_json::{Map, Value, json};

/// The JSON Schema of `T`, ready for every dialect: draft 2020-12, no `$schema`, no `$ref`
/// or `$defs` (subschemas inlined), no root title, non-standard integer formats removed, and
/// an object root.
pub fn schema_for<T: JsonSchema>() -> Value {
    let generator = SchemaSettings::draft2020_12()
        .with(|s| {
            s.inline_subschemas = true;
            s.meta_schema = None;
        })
        .into_generator();
    let mut value = generator.into_root_schema_for::<T>().to_value();
    normalize(&mut value);
    value
}

/// Cleans a schema in place: the root becomes an object schema with `properties`, and
/// titles and integer formats go.
pub fn normalize(schema: &mut Value) {
    if let Value::Object(root) = schema {
        root.remove("$schema");
        root.remove("title");
        // The tool's description says what the input struct's doc comment would.
        root.remove("description");
        root.remove("$defs");
        root.remove("definitions");
        root.insert("type".into(), Value::String("object".into()));
        root.entry("properties")
            .or_insert_with(|| Value::Object(Map::new()));
    } else {
        *schema = json!({"type": "object", "properties": {}});
    }
    walk(schema, &mut |obj| {
        if let Some(Value::String(f)) = obj.get("format")
            && (f.starts_with("int") || f.starts_with("uint"))
        {
            obj.remove("format");
        }
    });
}

/// Calls `f` on every object schema in `schema`, parents before children.
fn walk(schema: &mut Value, f: &mut dyn FnMut(&mut Map<String, Value>)) {
    match schema {
        Value::Object(obj) => {
            f(obj);
            for (key, child) in obj.iter_mut() {
                match key.as_str() {
                    "properties" | "patternProperties" | "$defs" | "definitions" => {
                        if let Value::Object(props) = child {
                            for sub in props.values_mut() {
                                walk(sub, f);
                            }
                        }
                    }
                    "items" | "additionalProperties" | "not" | "contains" => walk(child, f),
                    "anyOf" | "oneOf" | "allOf" | "prefixItems" => {
                        if let Value::Array(list) = child {
                            for sub in list {
                                walk(sub, f);
                            }
                        }
                    }
                    _ => {}
                }
            }
        }
        Value::Array(list) => {
            for sub in list {
                walk(sub, f);
            }
        }
        _ => {}
    }
}

/// A model provider's flavour of tool declaration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Dialect {
    /// Anthropic Messages API: `{name, description, input_schema}`
    Anthropic,
    /// OpenAI Chat Completions function calling:
    /// `{type: "function", function: {name, description, parameters, strict}}`
    OpenAi,
    /// OpenAI Responses API function tools: `{type: "function", name, description,
    /// parameters, strict}`
    OpenAiResponses,
    /// Gemini function declarations (OpenAPI 3.0 subset): `{name, description, parameters}`,
    /// without `parameters` for a tool that takes none
    Gemini,
    /// MCP `tools/list` entries: `{name, description, inputSchema, annotations}`
    Mcp,
}

impl Dialect {
    /// Every dialect, in a stable order.
    pub const ALL: [Dialect; 5] = [
        Dialect::Anthropic,
        Dialect::OpenAi,
        Dialect::OpenAiResponses,
        Dialect::Gemini,
        Dialect::Mcp,
    ];

    /// The name used on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            Dialect::Anthropic => "anthropic",
            Dialect::OpenAi => "openai",
            Dialect::OpenAiResponses => "openai-responses",
            Dialect::Gemini => "gemini",
            Dialect::Mcp => "mcp",
        }
    }
}

impl fmt::Display for Dialect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Dialect {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let wanted = s.to_ascii_lowercase().replace('_', "-");
        Dialect::ALL
            .into_iter()
            .find(|d| d.as_str() == wanted)
            .ok_or_else(|| {
                let names: Vec<&str> = Dialect::ALL.iter().map(|d| d.as_str()).collect();
                format!(
                    "unknown dialect `{s}`: expected one of {}",
                    names.join(", ")
                )
            })
    }
}

/// Hints about a tool that do not depend on the input, for MCP `annotations`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ToolAnnotations {
    /// The tool never changes its environment
    pub read_only: bool,
    /// The tool may destroy data (meaningful when not read-only)
    pub destructive: bool,
    /// Calling twice with the same input has no further effect
    pub idempotent: bool,
    /// The tool reaches outside this machine (the web, a remote service)
    pub open_world: bool,
}

/// Whether `schema` declares no parameters at all (an object with no properties).
pub fn takes_no_parameters(schema: &Value) -> bool {
    schema
        .get("properties")
        .is_none_or(|p| p.as_object().is_some_and(Map::is_empty))
        && schema.get("anyOf").is_none()
        && schema.get("oneOf").is_none()
}

/// The declaration of one tool in a dialect.
pub fn tool_declaration(
    name: &str,
    description: &str,
    schema: &Value,
    annotations: ToolAnnotations,
    dialect: Dialect,
) -> Value {
    match dialect {
        Dialect::Anthropic => json!({
            "name": name,
            "description": description,
            "input_schema": schema,
        }),
        Dialect::Mcp => json!({
            "name": name,
            "description": description,
            "inputSchema": schema,
            "annotations": {
                "readOnlyHint": annotations.read_only,
                "destructiveHint": annotations.destructive,
                "idempotentHint": annotations.idempotent,
                "openWorldHint": annotations.open_world,
            },
        }),
        Dialect::OpenAi => {
            let (parameters, strict) = openai_parameters(schema);
            json!({
                "type": "function",
                "function": {
                    "name": name,
                    "description": description,
                    "parameters": parameters,
                    "strict": strict,
                },
            })
        }
        Dialect::OpenAiResponses => {
            let (parameters, strict) = openai_parameters(schema);
            json!({
                "type": "function",
                "name": name,
                "description": description,
                "parameters": parameters,
                "strict": strict,
            })
        }
        // Gemini refuses an object schema without properties ("properties: should be
        // non-empty for OBJECT type"); a function without parameters simply has none.
        Dialect::Gemini if takes_no_parameters(schema) => json!({
            "name": name,
            "description": description,
        }),
        Dialect::Gemini => json!({
            "name": name,
            "description": description,
            "parameters": gemini_schema(schema),
        }),
    }
}

/// OpenAI's parameters: the strict form when the schema qualifies, else the schema as is.
fn openai_parameters(schema: &Value) -> (Value, bool) {
    match openai_strict(schema) {
        Some(strict) => (strict, true),
        None => (schema.clone(), false),
    }
}

/// The keywords OpenAI documents for strict mode ("Supported schemas" of its Structured
/// Outputs guide): the structure (`type`, `properties`, `required`,
/// `additionalProperties`, `items`, `enum`, `anyOf`, `$ref`, `$defs`, `description`), string
/// `pattern` and `format` (of [`OPENAI_FORMATS`]), number `multipleOf`, `minimum`,
/// `maximum`, `exclusiveMinimum`, `exclusiveMaximum`, and array `minItems`, `maxItems`.
pub const OPENAI_STRICT_KEYWORDS: &[&str] = &[
    "type",
    "description",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "enum",
    "anyOf",
    "$ref",
    "$defs",
    "definitions",
    "pattern",
    "format",
    "multipleOf",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "minItems",
    "maxItems",
];

/// The string formats OpenAI documents for strict mode.
pub const OPENAI_FORMATS: &[&str] = &[
    "date-time",
    "time",
    "date",
    "duration",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "uuid",
];

/// Annotations strict mode does not take; they constrain nothing, so they go silently.
const ANNOTATIONS: &[&str] = &[
    "default",
    "title",
    "examples",
    "example",
    "deprecated",
    "readOnly",
    "writeOnly",
    "$comment",
    "$schema",
    "$id",
    "$anchor",
];

/// Keywords that change which values are valid in ways a description cannot carry: a
/// schema using them is sent non-strict.
const INEXPRESSIBLE: &[&str] = &[
    "allOf",
    "not",
    "if",
    "then",
    "else",
    "dependentRequired",
    "dependentSchemas",
    "prefixItems",
    "unevaluatedProperties",
    "unevaluatedItems",
    "patternProperties",
    "propertyNames",
    "contains",
];

/// Strict mode's limit on nesting.
const OPENAI_MAX_DEPTH: usize = 10;

/// A constraint strict mode does not take, as words for the description.
fn constraint_words(key: &str, value: &Value) -> String {
    let n = value.as_u64();
    let plural = |n: u64, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    match (key, n) {
        ("minLength", Some(n)) => format!("at least {}", plural(n, "character", "characters")),
        ("maxLength", Some(n)) => format!("at most {}", plural(n, "character", "characters")),
        ("minProperties", Some(n)) => format!("at least {}", plural(n, "entry", "entries")),
        ("maxProperties", Some(n)) => format!("at most {}", plural(n, "entry", "entries")),
        ("minContains", Some(n)) => format!("at least {n} matching items"),
        ("maxContains", Some(n)) => format!("at most {n} matching items"),
        ("uniqueItems", _) if value == &Value::Bool(true) => "items must be unique".to_owned(),
        ("format", _) => format!("format {}", value.as_str().unwrap_or_default()),
        _ => format!("{key} {value}"),
    }
}

/// Adds `notes` to the description of `obj`.
fn describe(obj: &mut Map<String, Value>, notes: &[String]) {
    if notes.is_empty() {
        return;
    }
    let what = if notes.len() == 1 {
        "constraint"
    } else {
        "constraints"
    };
    let note = format!("{what}: {}", notes.join(", "));
    let text = match obj.get("description").and_then(Value::as_str) {
        Some(d) if !d.trim().is_empty() => format!("{} ({note})", d.trim_end()),
        _ => {
            let mut c = note.chars();
            c.next()
                .map(|f| f.to_uppercase().collect::<String>() + c.as_str())
                .unwrap_or_default()
        }
    };
    obj.insert("description".into(), Value::String(text));
}

/// Depth of nested object schemas (the root is 1).
fn object_depth(schema: &Value) -> usize {
    match schema {
        Value::Object(obj) => {
            let own = usize::from(obj.get("type").is_some_and(|t| {
                t == "object"
                    || t.as_array()
                        .is_some_and(|a| a.iter().any(|x| x == "object"))
            }));
            let children = obj
                .iter()
                .filter(|(k, _)| !matches!(k.as_str(), "enum" | "const" | "default" | "examples"))
                .map(|(k, v)| match (k.as_str(), v) {
                    ("properties" | "$defs" | "definitions", Value::Object(props)) => {
                        props.values().map(object_depth).max().unwrap_or(0)
                    }
                    _ => object_depth(v),
                })
                .max()
                .unwrap_or(0);
            own + children
        }
        Value::Array(list) => list.iter().map(object_depth).max().unwrap_or(0),
        _ => 0,
    }
}

/// The schema in OpenAI's strict form, or `None` when it does not qualify.
///
/// Strict mode needs every object closed (`additionalProperties: false`) and every property
/// listed in `required`; optional properties are expressed as nullable, which the input
/// parser reads back as "not given". It takes only the keywords OpenAI documents
/// ([`OPENAI_STRICT_KEYWORDS`]): `oneOf` becomes `anyOf`, `const` a one-value `enum`,
/// annotations such as `default` go, and a constraint it does not take (`minLength`,
/// `maxLength`, `uniqueItems`, an undocumented `format`, ...) moves into the description
/// (the input parser still enforces it). Open maps (`additionalProperties` a schema or
/// `true`), keywords no description can carry (`allOf`, `not`, `if`, ...) and nesting past
/// ten levels disqualify the schema, and then it is sent non-strict.
pub fn openai_strict(schema: &Value) -> Option<Value> {
    if object_depth(schema) > OPENAI_MAX_DEPTH {
        return None;
    }
    let mut out = schema.clone();
    let mut qualifies = true;
    walk(&mut out, &mut |obj| {
        if let Some(one_of) = obj.shift_remove("oneOf") {
            obj.insert("anyOf".into(), one_of);
        }
        if let Some(c) = obj.shift_remove("const") {
            obj.insert("enum".into(), json!([c]));
        }
        if INEXPRESSIBLE.iter().any(|k| obj.contains_key(*k)) {
            qualifies = false;
            return;
        }
        let mut notes = Vec::new();
        let keys: Vec<String> = obj.keys().cloned().collect();
        for key in keys {
            let keep = match key.as_str() {
                "format" => obj
                    .get("format")
                    .and_then(Value::as_str)
                    .is_some_and(|f| OPENAI_FORMATS.contains(&f)),
                k => OPENAI_STRICT_KEYWORDS.contains(&k),
            };
            if keep {
                continue;
            }
            if let Some(value) = obj.shift_remove(&key)
                && !ANNOTATIONS.contains(&key.as_str())
            {
                notes.push(constraint_words(&key, &value));
            }
        }
        describe(obj, &notes);
        let is_object = obj.get("type").is_some_and(|t| {
            t == "object"
                || t.as_array()
                    .is_some_and(|a| a.iter().any(|x| x == "object"))
        });
        if !is_object {
            return;
        }
        if !matches!(obj.get("additionalProperties"), Some(Value::Bool(false))) {
            qualifies = false;
            return;
        }
        let required: Vec<String> = obj
            .get("required")
            .and_then(Value::as_array)
            .map(|r| {
                r.iter()
                    .filter_map(|v| v.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default();
        let props = obj
            .entry("properties")
            .or_insert_with(|| Value::Object(Map::new()));
        let Value::Object(props) = props else {
            qualifies = false;
            return;
        };
        let mut all = Vec::new();
        for (key, prop) in props.iter_mut() {
            all.push(Value::String(key.clone()));
            if !required.contains(key) {
                make_nullable(prop);
            }
        }
        obj.insert("required".into(), Value::Array(all));
    });
    qualifies.then_some(out)
}

fn make_nullable(prop: &mut Value) {
    let Value::Object(obj) = prop else { return };
    if let Some(Value::Array(branches)) = obj.get_mut("anyOf") {
        if !branches
            .iter()
            .any(|b| b.get("type") == Some(&json!("null")))
        {
            branches.push(json!({"type": "null"}));
        }
        return;
    }
    match obj.get_mut("type") {
        Some(Value::String(t)) => {
            let t = t.clone();
            obj.insert("type".into(), json!([t, "null"]));
        }
        Some(Value::Array(types)) if !types.iter().any(|t| t == "null") => {
            types.push(json!("null"));
        }
        _ => {}
    }
    if let Some(Value::Array(values)) = obj.get_mut("enum")
        && !values.contains(&Value::Null)
    {
        values.push(Value::Null);
    }
}

/// Keys Gemini's OpenAPI 3.0 subset understands; everything else is dropped.
pub const GEMINI_KEYWORDS: &[&str] = &[
    "type",
    "format",
    "description",
    "nullable",
    "enum",
    "properties",
    "required",
    "items",
    "minItems",
    "maxItems",
    "minimum",
    "maximum",
    "minLength",
    "maxLength",
    "pattern",
    "anyOf",
];

/// The schema in Gemini's OpenAPI 3.0 subset: no type arrays (`nullable` instead), no
/// `const` (`enum` instead), no `additionalProperties`, `default` or `$`-keywords.
pub fn gemini_schema(schema: &Value) -> Value {
    let mut out = schema.clone();
    gemini_lower(&mut out);
    out
}

fn gemini_lower(schema: &mut Value) {
    let Value::Object(obj) = schema else { return };
    if let Some(Value::Array(branches)) = obj.remove("oneOf") {
        obj.insert("anyOf".into(), Value::Array(branches));
    }
    // Lower the branches first, so a nested union of constants is already an enum when
    // this level merges a single non-null branch into itself.
    if let Some(Value::Array(branches)) = obj.get_mut("anyOf") {
        for branch in branches.iter_mut() {
            gemini_lower(branch);
        }
    }
    // A union of constants is an enum.
    if let Some(Value::Array(branches)) = obj.get("anyOf") {
        let consts: Option<Vec<Value>> = branches
            .iter()
            .map(|b| match b.get("enum") {
                Some(Value::Array(one)) if one.len() == 1 => Some(one[0].clone()),
                _ => b.get("const").cloned(),
            })
            .collect();
        if let Some(values) = consts {
            obj.remove("anyOf");
            obj.insert("type".into(), json!("string"));
            obj.insert("enum".into(), Value::Array(values));
        }
    }
    // A union with null is a nullable schema.
    if let Some(Value::Array(branches)) = obj.get("anyOf") {
        let non_null: Vec<Value> = branches
            .iter()
            .filter(|b| b.get("type") != Some(&json!("null")))
            .cloned()
            .collect();
        if non_null.len() < branches.len() {
            obj.insert("nullable".into(), Value::Bool(true));
            if non_null.len() == 1 {
                obj.remove("anyOf");
                if let Value::Object(inner) = &non_null[0] {
                    for (k, v) in inner {
                        obj.entry(k.clone()).or_insert_with(|| v.clone());
                    }
                }
            } else {
                obj.insert("anyOf".into(), Value::Array(non_null));
            }
        }
    }
    if let Some(c) = obj.remove("const") {
        obj.insert("enum".into(), json!([c]));
        obj.entry("type").or_insert_with(|| json!("string"));
    }
    if let Some(Value::Array(types)) = obj.get("type").cloned() {
        let non_null: Vec<&Value> = types.iter().filter(|t| *t != "null").collect();
        if non_null.len() < types.len() {
            obj.insert("nullable".into(), Value::Bool(true));
        }
        match non_null.first() {
            Some(t) => obj.insert("type".into(), (*t).clone()),
            None => obj.insert("type".into(), json!("string")),
        };
    }
    if let Some(Value::Array(values)) = obj.get_mut("enum") {
        values.retain(|v| !v.is_null());
    }
    if let Some(Value::String(f)) = obj.get("format")
        && f != "enum"
        && f != "date-time"
    {
        obj.remove("format");
    }
    obj.retain(|k, _| GEMINI_KEYWORDS.contains(&k.as_str()));
    for (key, child) in obj.iter_mut() {
        match key.as_str() {
            "properties" => {
                if let Value::Object(props) = child {
                    for sub in props.values_mut() {
                        gemini_lower(sub);
                    }
                }
            }
            "items" => gemini_lower(child),
            _ => {}
        }
    }
}

/// True when `schema` (or any subschema) contains a `$ref`, `$defs` or `definitions`.
pub fn has_refs(schema: &Value) -> bool {
    match schema {
        Value::Object(obj) => obj
            .iter()
            .any(|(k, v)| k == "$ref" || k == "$defs" || k == "definitions" || has_refs(v)),
        Value::Array(list) => list.iter().any(has_refs),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use schemars::JsonSchema;
    use serde::Deserialize;

    use super::*;

    /// An example input
    #[derive(Deserialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Example {
        /// A pattern
        pattern: String,
        /// How many
        limit: Option<u32>,
        /// Nested items
        items: Vec<Item>,
        /// A mode
        mode: Option<Mode>,
    }

    #[derive(Deserialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Item {
        name: String,
        #[serde(default)]
        all: bool,
    }

    #[derive(Deserialize, JsonSchema)]
    #[serde(rename_all = "snake_case")]
    #[allow(dead_code)]
    enum Mode {
        /// First
        Content,
        /// Second
        FilesWithMatches,
    }

    #[test]
    fn generated_schema_is_inline_object() {
        let s = schema_for::<Example>();
        assert_eq!(s["type"], "object");
        assert!(!has_refs(&s), "{s:#}");
        assert!(s.get("$schema").is_none());
        assert!(s.get("title").is_none());
        assert!(s["properties"]["limit"].get("format").is_none());
        insta::assert_json_snapshot!(s);
    }

    /// An input type whose doc comment lists its JSON names, as the tools' do.
    #[derive(Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Renamed {
        /// Show line numbers
        #[serde(rename = "-n")]
        line_numbers: bool,
    }

    #[test]
    fn the_input_types_doc_comment_stays_out_of_the_schema() {
        let s = schema_for::<Renamed>();
        assert!(s.get("description").is_none(), "{s:#}");
        assert_eq!(s["properties"]["-n"]["description"], "Show line numbers");
    }

    #[test]
    fn dialects_lower() {
        let s = schema_for::<Example>();
        for d in Dialect::ALL {
            let decl = tool_declaration("Example", "An example", &s, ToolAnnotations::default(), d);
            assert!(!has_refs(&decl));
            insta::assert_json_snapshot!(format!("example-{d}"), decl);
        }
    }

    /// The strict lowering of a root object with one property `p` of schema `prop`
    /// (required), compared with `expected` for that property; `None`: not strict.
    fn check_strict(prop: Value, expected: Option<Value>) {
        let schema = json!({
            "type": "object",
            "properties": {"p": prop},
            "required": ["p"],
            "additionalProperties": false
        });
        let got = openai_strict(&schema).map(|s| s["properties"]["p"].clone());
        assert_eq!(got, expected, "{prop}");
    }

    #[test]
    fn openai_strict_keeps_only_documented_keywords() {
        let cases = [
            // Length limits move into the description, in words.
            (
                json!({"type": "string", "description": "A name", "minLength": 1}),
                Some(
                    json!({"type": "string", "description": "A name (constraint: at least 1 character)"}),
                ),
            ),
            (
                json!({"type": "string", "minLength": 2, "maxLength": 1}),
                Some(
                    json!({"type": "string", "description": "Constraints: at least 2 characters, at most 1 character"}),
                ),
            ),
            // Documented constraints stay.
            (
                json!({"type": "integer", "minimum": 1, "maximum": 9}),
                Some(json!({"type": "integer", "minimum": 1, "maximum": 9})),
            ),
            (
                json!({"type": "string", "pattern": "^a", "format": "date-time"}),
                Some(json!({"type": "string", "pattern": "^a", "format": "date-time"})),
            ),
            (
                json!({"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 4}),
                Some(
                    json!({"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 4}),
                ),
            ),
            // An undocumented format is a note.
            (
                json!({"type": "string", "format": "uri", "description": "Where"}),
                Some(json!({"type": "string", "description": "Where (constraint: format uri)"})),
            ),
            (
                json!({"type": "array", "items": {"type": "string"}, "uniqueItems": true}),
                Some(
                    json!({"type": "array", "items": {"type": "string"}, "description": "Constraint: items must be unique"}),
                ),
            ),
            // Annotations go silently; const becomes enum; oneOf becomes anyOf.
            (
                json!({"type": "boolean", "default": false, "title": "B", "examples": [true]}),
                Some(json!({"type": "boolean"})),
            ),
            (
                json!({"oneOf": [{"const": "a", "description": "first"}, {"type": "string", "const": "b"}]}),
                Some(
                    json!({"anyOf": [{"description": "first", "enum": ["a"]}, {"type": "string", "enum": ["b"]}]}),
                ),
            ),
            // Nested objects are closed, their optional fields nullable.
            (
                json!({"type": "object", "properties": {"x": {"type": "string", "maxLength": 3}}, "additionalProperties": false}),
                Some(
                    json!({"type": "object", "properties": {"x": {"type": ["string", "null"], "description": "Constraint: at most 3 characters"}}, "additionalProperties": false, "required": ["x"]}),
                ),
            ),
            // What no description can carry disqualifies the schema.
            (json!({"allOf": [{"type": "string"}]}), None),
            (json!({"type": "string", "not": {"enum": ["x"]}}), None),
            (
                json!({"type": "array", "prefixItems": [{"type": "string"}]}),
                None,
            ),
            (
                json!({"type": "object", "additionalProperties": {"type": "string"}}),
                None,
            ),
            (json!({"type": "object", "properties": {}}), None),
        ];
        for (prop, expected) in cases {
            check_strict(prop, expected);
        }
    }

    #[test]
    fn openai_strict_needs_closed_objects() {
        let open = json!({"type": "object", "properties": {"m": {"type": "object"}}});
        assert!(openai_strict(&open).is_none());
        let closed = json!({
            "type": "object",
            "properties": {"a": {"type": "string"}, "b": {"type": "integer", "default": 3}},
            "required": ["a"],
            "additionalProperties": false
        });
        let strict = openai_strict(&closed).unwrap_or_default();
        assert_eq!(strict["required"], json!(["a", "b"]));
        assert_eq!(
            strict["properties"]["b"]["type"],
            json!(["integer", "null"])
        );
        assert!(strict["properties"]["b"].get("default").is_none());
        // Nesting past ten object levels is not strict.
        let mut deep = json!({"type": "object", "properties": {}, "additionalProperties": false});
        for _ in 0..10 {
            deep = json!({"type": "object", "properties": {"d": deep}, "required": ["d"], "additionalProperties": false});
        }
        assert!(openai_strict(&deep).is_none());
        let mut ten = json!({"type": "object", "properties": {}, "additionalProperties": false});
        for _ in 0..9 {
            ten = json!({"type": "object", "properties": {"d": ten}, "required": ["d"], "additionalProperties": false});
        }
        assert!(openai_strict(&ten).is_some());
    }

    #[test]
    fn tools_without_parameters_are_declared_as_each_provider_takes_them() {
        let none = json!({"type": "object", "properties": {}, "additionalProperties": false});
        assert!(takes_no_parameters(&none));
        assert!(!takes_no_parameters(&schema_for::<Example>()));
        let gemini = tool_declaration("T", "d", &none, ToolAnnotations::default(), Dialect::Gemini);
        assert_eq!(gemini, json!({"name": "T", "description": "d"}));
        let openai = tool_declaration("T", "d", &none, ToolAnnotations::default(), Dialect::OpenAi);
        assert_eq!(
            openai["function"]["parameters"],
            json!({"type": "object", "properties": {}, "additionalProperties": false, "required": []})
        );
        assert_eq!(openai["function"]["strict"], true);
        let responses = tool_declaration(
            "T",
            "d",
            &none,
            ToolAnnotations::default(),
            Dialect::OpenAiResponses,
        );
        assert_eq!(responses["name"], "T");
        assert_eq!(responses["type"], "function");
        assert_eq!(responses["parameters"], openai["function"]["parameters"]);
        for d in [Dialect::Anthropic, Dialect::Mcp] {
            let decl = tool_declaration("T", "d", &none, ToolAnnotations::default(), d);
            assert_eq!(
                decl.get("input_schema").or(decl.get("inputSchema")),
                Some(&none)
            );
        }
    }

    #[test]
    fn gemini_has_no_type_arrays_or_additional_properties() {
        let s = schema_for::<Example>();
        let g = gemini_schema(&s);
        let text = g.to_string();
        assert!(!text.contains("additionalProperties"), "{g:#}");
        assert!(!text.contains("\"const\""), "{g:#}");
        assert!(!text.contains("[\"integer\",\"null\"]"), "{g:#}");
    }

    #[test]
    fn dialect_names_round_trip() {
        for d in Dialect::ALL {
            assert_eq!(d.as_str().parse::<Dialect>(), Ok(d));
        }
        assert_eq!(
            "OpenAI_Responses".parse::<Dialect>(),
            Ok(Dialect::OpenAiResponses)
        );
        let err = "klingon".parse::<Dialect>().err().unwrap_or_default();
        assert_eq!(
            err,
            "unknown dialect `klingon`: expected one of anthropic, openai, openai-responses, gemini, mcp"
        );
    }
}
