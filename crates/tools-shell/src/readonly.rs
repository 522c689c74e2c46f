//! Read-only classification of simple commands: the commands that change nothing and may
//! run without asking and alongside other calls.
//!
//! This is an allow-list of shapes, not a list of tricks. A command is read-only when
//! - it is a plain command or a `[`/`[[` test: no assignment, no declaration;
//! - every word is plain (quotes only: no variable, substitution, arithmetic, brace, tilde or
//!   unquoted glob), so bash passes exactly what was checked;
//! - it writes no file through a redirection;
//! - its name is on the list below, and its options pass that command's check: the options
//!   that write a file, run a program or evaluate code are refused, and `test`, `[` and `[[`
//!   take only the operators that evaluate nothing (no `-v`/`-R`, whose operand bash
//!   evaluates as a subscript, and arithmetic comparisons only between integer literals).
//!
//! For each read-only command it also says which operands are read and how (contents,
//! listing, recursively), so the permission check can hold them to the Read rules.

use crate::parse::{Form, SimpleCommand, Word};

/// How a command reads an operand.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// The file's contents (a directory operand with `recursive` means everything beneath)
    Content,
    /// Names and metadata only (`ls`, `stat`, `find`)
    Listing,
}

/// An operand a read-only command reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadOperand {
    /// The word naming it
    pub word: Word,
    /// How it is read
    pub access: Access,
    /// Whether a directory is read with everything beneath it
    pub recursive: bool,
}

/// Where a command's path operands are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Operands {
    /// None of its operands is a path
    None,
    /// Every operand is a path read this way
    All(Access),
    /// The first operand is a pattern (or filter) unless one was given with an option
    AfterPattern,
    /// `find`: the operands before the first expression
    Find,
}

/// One read-only command: its name(s) and what its options mean.
struct Shape {
    names: &'static [&'static str],
    operands: Operands,
    /// Short options that take a value (the rest of the word, or the next word)
    short_values: &'static str,
    /// Long options that take the next word as their value when written without `=`
    long_values: &'static [&'static str],
    /// Options that make it write, run a program, or read what its operands do not say
    forbidden: &'static [&'static str],
    /// Options whose value is a file it reads
    path_values: &'static [&'static str],
    /// Options that make it read directories recursively
    recursive: &'static [&'static str],
    /// It always reads directories recursively
    always_recursive: bool,
    /// Options that give the pattern, so every operand is a path (`grep -e`)
    pattern_options: &'static [&'static str],
}

const fn shape(names: &'static [&'static str], operands: Operands) -> Shape {
    Shape {
        names,
        operands,
        short_values: "",
        long_values: &[],
        forbidden: &[],
        path_values: &[],
        recursive: &[],
        always_recursive: false,
        pattern_options: &[],
    }
}

const CONTENT: Operands = Operands::All(Access::Content);
const LISTING: Operands = Operands::All(Access::Listing);

/// The read-only commands.
const SHAPES: &[Shape] = &[
    shape(
        &[
            "cat",
            "tac",
            "rev",
            "comm",
            "tsort",
            "sha1sum",
            "sha224sum",
            "sha256sum",
            "sha384sum",
            "sha512sum",
            "md5sum",
            "b2sum",
            "cksum",
            "sum",
        ],
        CONTENT,
    ),
    Shape {
        short_values: "nc",
        long_values: &[
            "--lines",
            "--bytes",
            "--pid",
            "--sleep-interval",
            "--max-unchanged-stats",
        ],
        ..shape(&["head", "tail"], CONTENT)
    },
    Shape {
        long_values: &["--files0-from"],
        path_values: &["--files0-from"],
        ..shape(&["wc"], CONTENT)
    },
    Shape {
        short_values: "ntTe",
        long_values: &[
            "--bytes",
            "--radix",
            "--target",
            "--encoding",
            "--output-separator",
        ],
        ..shape(&["strings"], CONTENT)
    },
    Shape {
        short_values: "nsef",
        path_values: &["-f"],
        ..shape(&["hexdump", "hd"], CONTENT)
    },
    Shape {
        short_values: "AjNtw",
        long_values: &[
            "--address-radix",
            "--skip-bytes",
            "--read-bytes",
            "--format",
            "--width",
            "--endian",
        ],
        ..shape(&["od"], CONTENT)
    },
    Shape {
        short_values: "bdfhilnsvw",
        ..shape(&["nl"], CONTENT)
    },
    Shape {
        short_values: "w",
        long_values: &["--width"],
        ..shape(&["fold", "fmt", "base64", "base32", "basenc"], CONTENT)
    },
    Shape {
        short_values: "t",
        long_values: &["--tabs"],
        ..shape(&["expand", "unexpand"], CONTENT)
    },
    Shape {
        short_values: "bcdf",
        long_values: &[
            "--bytes",
            "--characters",
            "--delimiter",
            "--fields",
            "--output-delimiter",
        ],
        ..shape(&["cut"], CONTENT)
    },
    Shape {
        short_values: "d",
        long_values: &["--delimiters"],
        ..shape(&["paste"], CONTENT)
    },
    Shape {
        short_values: "csoNRHWEd",
        long_values: &[
            "--separator",
            "--output-separator",
            "--table-columns",
            "--table-right",
            "--table-hide",
            "--table-wrap",
            "--output-width",
        ],
        ..shape(&["column"], CONTENT)
    },
    Shape {
        short_values: "in",
        long_values: &["--ignore-initial", "--bytes"],
        ..shape(&["cmp"], CONTENT)
    },
    Shape {
        short_values: "hlowNSs",
        long_values: &[
            "--header",
            "--length",
            "--indent",
            "--width",
            "--page-width",
        ],
        ..shape(&["pr"], CONTENT)
    },
    Shape {
        short_values: "UCFIxXDLS",
        long_values: &[
            "--unified",
            "--context",
            "--label",
            "--from-file",
            "--to-file",
            "--exclude",
            "--exclude-from",
            "--ignore-matching-lines",
            "--show-function-line",
            "--starting-file",
            "--horizon-lines",
            "--tabsize",
            "--width",
            "--ifdef",
            "--line-format",
            "--old-line-format",
            "--new-line-format",
            "--unchanged-line-format",
            "--palette",
        ],
        path_values: &["-X", "--exclude-from", "--from-file", "--to-file"],
        recursive: &["-r", "--recursive"],
        ..shape(&["diff"], CONTENT)
    },
    Shape {
        short_values: "mfFeP",
        long_values: &[
            "--magic-file",
            "--files-from",
            "--separator",
            "--exclude",
            "--parameter",
        ],
        forbidden: &["-C", "--compile"],
        path_values: &["-m", "--magic-file", "-f", "--files-from"],
        ..shape(&["file"], CONTENT)
    },
    Shape {
        short_values: "efmABCdD",
        long_values: &[
            "--regexp",
            "--file",
            "--max-count",
            "--after-context",
            "--before-context",
            "--context",
            "--directories",
            "--devices",
            "--include",
            "--exclude",
            "--exclude-dir",
            "--exclude-from",
            "--label",
            "--binary-files",
            "--group-separator",
        ],
        path_values: &["-f", "--file", "--exclude-from"],
        recursive: &[
            "-r",
            "-R",
            "--recursive",
            "--dereference-recursive",
            "--directories=recurse",
            "-drecurse",
        ],
        pattern_options: &["-e", "--regexp", "-f", "--file"],
        ..shape(&["grep", "egrep", "fgrep"], Operands::AfterPattern)
    },
    Shape {
        short_values: "efgmtTABCMjEr",
        long_values: &[
            "--regexp",
            "--file",
            "--glob",
            "--iglob",
            "--max-count",
            "--type",
            "--type-not",
            "--type-add",
            "--type-clear",
            "--after-context",
            "--before-context",
            "--context",
            "--max-columns",
            "--threads",
            "--encoding",
            "--replace",
            "--max-depth",
            "--max-filesize",
            "--ignore-file",
            "--path-separator",
            "--sort",
            "--sortr",
            "--colors",
            "--color",
            "--engine",
            "--dfa-size-limit",
            "--regex-size-limit",
            "--context-separator",
            "--field-match-separator",
            "--field-context-separator",
        ],
        forbidden: &["--pre", "--hostname-bin"],
        path_values: &["-f", "--file", "--ignore-file"],
        always_recursive: true,
        pattern_options: &["-e", "--regexp", "-f", "--file"],
        ..shape(&["rg"], Operands::AfterPattern)
    },
    Shape {
        short_values: "ktS",
        long_values: &[
            "--key",
            "--field-separator",
            "--buffer-size",
            "--parallel",
            "--files0-from",
            "--random-source",
        ],
        forbidden: &[
            "-o",
            "--output",
            "--compress-program",
            "-T",
            "--temporary-directory",
        ],
        path_values: &["--files0-from", "--random-source"],
        ..shape(&["sort"], CONTENT)
    },
    Shape {
        short_values: "fsw",
        long_values: &["--skip-fields", "--skip-chars", "--check-chars", "--group"],
        ..shape(&["uniq"], CONTENT)
    },
    Shape {
        short_values: "cw",
        long_values: &["--format", "--printf"],
        ..shape(&["stat"], LISTING)
    },
    Shape {
        short_values: "IwT",
        long_values: &[
            "--ignore",
            "--hide",
            "--width",
            "--tabsize",
            "--format",
            "--sort",
            "--time",
            "--time-style",
            "--block-size",
            "--quoting-style",
            "--indicator-style",
        ],
        recursive: &["-R", "--recursive"],
        ..shape(&["ls"], LISTING)
    },
    Shape {
        short_values: "dBt",
        long_values: &[
            "--max-depth",
            "--block-size",
            "--threshold",
            "--exclude",
            "--exclude-from",
            "--files0-from",
            "--time-style",
        ],
        path_values: &["--exclude-from", "--files0-from"],
        always_recursive: true,
        ..shape(&["du"], LISTING)
    },
    Shape {
        short_values: "LPIHT",
        long_values: &[
            "--filelimit",
            "--charset",
            "--sort",
            "--timefmt",
            "--fromfile",
        ],
        forbidden: &["-o", "-R"],
        always_recursive: true,
        ..shape(&["tree"], LISTING)
    },
    Shape {
        forbidden: &[
            "-delete", "-exec", "-execdir", "-ok", "-okdir", "-fprint", "-fprint0", "-fprintf",
            "-fls",
        ],
        always_recursive: true,
        ..shape(&["find"], Operands::Find)
    },
    Shape {
        short_values: "etEdSojcC",
        long_values: &[
            "--extension",
            "--type",
            "--exclude",
            "--max-depth",
            "--min-depth",
            "--exact-depth",
            "--size",
            "--changed-within",
            "--changed-before",
            "--owner",
            "--threads",
            "--color",
            "--ignore-file",
            "--max-results",
            "--batch-size",
            "--path-separator",
            "--format",
        ],
        forbidden: &[
            "-x",
            "--exec",
            "-X",
            "--exec-batch",
            "--base-directory",
            "--search-path",
        ],
        path_values: &["--ignore-file"],
        always_recursive: true,
        ..shape(&["fd", "fdfind"], Operands::AfterPattern)
    },
    Shape {
        long_values: &["--indent", "--seq"],
        forbidden: &[
            "-f",
            "--from-file",
            "--rawfile",
            "--slurpfile",
            "-L",
            "--library-path",
            "--arg",
            "--argjson",
            "--args",
            "--jsonargs",
        ],
        ..shape(&["jq"], Operands::AfterPattern)
    },
    Shape {
        forbidden: &["-s", "--set", "-f", "--file", "-r", "--reference"],
        short_values: "dI",
        long_values: &["--date", "--iso-8601", "--rfc-3339"],
        ..shape(&["date"], Operands::None)
    },
    Shape {
        forbidden: &["-K", "--kill", "-D", "--diag", "-F", "--filter"],
        short_values: "AfN",
        ..shape(&["ss"], Operands::None)
    },
    Shape {
        forbidden: &["-v"],
        ..shape(&["printf"], Operands::None)
    },
    shape(
        &[
            "echo", "pwd", "true", "false", "sleep", "whoami", "id", "uname", "free", "df",
            "locale", "groups", "nproc", "getconf", "seq", "cal", "uptime", "basename", "dirname",
            "realpath", "readlink", "numfmt", "tr", "which", "type", "expr", "cd", "help", "pgrep",
            "lsof", "netstat", "arch", "tty", "logname", "users", "who",
        ],
        Operands::None,
    ),
];

/// Arithmetic comparisons: `[[` evaluates their operands as arithmetic.
const ARITHMETIC: &[&str] = &["-eq", "-ne", "-lt", "-le", "-gt", "-ge"];

/// git subcommands that only read (first word after `git`).
const GIT_READ: &[&str] = &[
    "diff",
    "log",
    "show",
    "shortlog",
    "status",
    "blame",
    "ls-files",
    "ls-remote",
    "ls-tree",
    "merge-base",
    "rev-parse",
    "rev-list",
    "describe",
    "cat-file",
    "for-each-ref",
    "grep",
    "count-objects",
    "name-rev",
    "check-ignore",
    "var",
    "whatchanged",
];

/// git options that run programs or write files whatever the subcommand.
const GIT_BAD_FLAGS: &[&str] = &[
    "-c",
    "--config-env",
    "--exec-path",
    "--git-dir",
    "--work-tree",
    "--output",
    "-o",
    "--ext-diff",
    "--upload-pack",
    "--exec",
    "--open-files-in-pager",
    "-O",
    "--no-index",
    "--textconv",
];

/// `gh` read-only subcommand pairs.
const GH_READ: &[(&str, &[&str])] = &[
    ("pr", &["view", "list", "diff", "checks", "status"]),
    ("issue", &["view", "list", "status"]),
    ("repo", &["view"]),
    ("run", &["list", "view"]),
    ("auth", &["status"]),
    ("release", &["list", "view"]),
    ("workflow", &["list", "view"]),
    ("label", &["list"]),
    ("search", &["repos", "issues", "prs", "commits", "code"]),
];

fn flag_is(arg: &str, names: &[&str]) -> bool {
    names.iter().any(|n| {
        arg == *n
            || (n.starts_with("--") && arg.starts_with(&format!("{n}=")))
            || (n.len() == 2
                && n.starts_with('-')
                && !n.starts_with("--")
                && arg.starts_with(n)
                && !arg.starts_with("--"))
    })
}

fn any_flag(args: &[&str], names: &[&str]) -> bool {
    args.iter().any(|a| flag_is(a, names))
}

/// Whether one simple command (wrappers already stripped) only reads.
pub fn is_read_only_command(cmd: &SimpleCommand) -> bool {
    read_operands(cmd).is_some()
}

/// The option that makes a reading command write a file or run a program (`sort -o`,
/// `git diff --output`, `file -C`, `rg --pre`), if it has one: a wildcard allow rule for the
/// command does not cover it.
pub fn escape_option(cmd: &SimpleCommand) -> Option<String> {
    let words: Vec<&str> = cmd.words.iter().map(|w| w.text.as_str()).collect();
    let (&name, args) = words.split_first()?;
    let name = crate::programs::base_name(name);
    let forbidden: &[&str] = if name == "git" {
        GIT_BAD_FLAGS
    } else {
        SHAPES.iter().find(|s| s.names.contains(&name))?.forbidden
    };
    args.iter()
        .find(|a| {
            flag_is(a, forbidden)
                || (a.starts_with('-')
                    && !a.starts_with("--")
                    && a[1..]
                        .chars()
                        .any(|c| forbidden.contains(&format!("-{c}").as_str())))
        })
        .map(|a| (*a).to_owned())
}

/// The operands a read-only command reads, or `None` when it is not read-only.
pub fn read_operands(cmd: &SimpleCommand) -> Option<Vec<ReadOperand>> {
    if !matches!(cmd.form, Form::Simple | Form::Test)
        || !cmd.assignments.is_empty()
        || cmd.redirects.iter().any(|r| r.writes_file())
        || cmd.words.iter().any(|w: &Word| !w.literal || w.glob)
    {
        return None;
    }
    let words: Vec<&str> = cmd.words.iter().map(|w| w.text.as_str()).collect();
    let (&name, args) = words.split_first()?;
    match name {
        "test" | "[" | "[[" => test_is_inert(name, args).then(Vec::new),
        "xargs" => None,
        "man" => args
            .iter()
            .all(|a| !a.starts_with('-') || matches!(*a, "-k" | "-f" | "-a" | "-w"))
            .then(Vec::new),
        "ps" => args
            .iter()
            .all(|a| a.starts_with('-') || !a.contains('e'))
            .then(Vec::new),
        "hostname" => args
            .iter()
            .all(|a| {
                matches!(
                    *a,
                    "-f" | "-s"
                        | "-d"
                        | "-i"
                        | "-I"
                        | "-A"
                        | "-a"
                        | "-y"
                        | "--fqdn"
                        | "--short"
                        | "--domain"
                        | "--ip-address"
                        | "--all-ip-addresses"
                        | "--all-fqdns"
                        | "--alias"
                        | "--long"
                )
            })
            .then(Vec::new),
        "node" | "python" | "python3" | "cargo" | "rustc" | "go" | "npm" => {
            (matches!(args, ["--version"] | ["-v"] | ["-V"] | ["version"])
                && !(name == "npm" && args == ["version"]))
            .then(Vec::new)
        }
        "docker" => matches!(args.first(), Some(&"ps") | Some(&"images")).then(Vec::new),
        "git" => git_read_only(args).then(Vec::new),
        "gh" => (args.len() >= 2
            && GH_READ
                .iter()
                .any(|(group, subs)| *group == args[0] && subs.contains(&args[1])))
        .then(Vec::new),
        _ => {
            let shape = SHAPES.iter().find(|s| s.names.contains(&name))?;
            shaped(shape, name, &cmd.words[1..])
        }
    }
}

/// The operands of a command on the shape list, or `None` when an option is refused.
fn shaped(shape: &Shape, name: &str, args: &[Word]) -> Option<Vec<ReadOperand>> {
    let mut out = Vec::new();
    let mut positional: Vec<&Word> = Vec::new();
    let mut recursive = shape.always_recursive;
    let mut pattern_given = false;
    let mut options_done = false;
    let mut i = 0;
    let texts: Vec<&str> = args.iter().map(|w| w.text.as_str()).collect();
    if name == "jq" && texts.iter().any(|t| jq_filter_reads_more(t)) {
        return None;
    }
    while i < args.len() {
        let t = texts[i];
        if options_done || name == "find" || !t.starts_with('-') || t == "-" {
            positional.push(&args[i]);
            i += 1;
            continue;
        }
        if t == "--" {
            options_done = true;
            i += 1;
            continue;
        }
        if flag_is(t, shape.forbidden) {
            return None;
        }
        if shape.recursive.contains(&t) {
            recursive = true;
        }
        if let Some(long) = t.strip_prefix("--") {
            let (opt, value) = match long.split_once('=') {
                Some((o, v)) => (format!("--{o}"), Some(v)),
                None => (t.to_owned(), None),
            };
            if shape.pattern_options.contains(&opt.as_str()) {
                pattern_given = true;
            }
            if opt == "--directories" && value == Some("recurse") {
                recursive = true;
            }
            let takes = shape.long_values.contains(&opt.as_str());
            let value_word = match value {
                Some(v) => Some(Word::plain(v)),
                None if takes => args.get(i + 1).cloned(),
                None => None,
            };
            if shape.path_values.contains(&opt.as_str())
                && let Some(v) = value_word
            {
                out.push(ReadOperand {
                    word: v,
                    access: Access::Content,
                    recursive: false,
                });
            }
            i += if takes && value.is_none() { 2 } else { 1 };
            continue;
        }
        // A cluster of short options; a value-taking one ends it.
        let cluster = &t[1..];
        let mut consumed_next = false;
        for (pos, c) in cluster.char_indices() {
            let opt = format!("-{c}");
            if shape.forbidden.contains(&opt.as_str()) {
                return None;
            }
            if shape.recursive.contains(&opt.as_str()) {
                recursive = true;
            }
            if shape.pattern_options.contains(&opt.as_str()) {
                pattern_given = true;
            }
            if shape.short_values.contains(c) {
                let rest = &cluster[pos + c.len_utf8()..];
                let value = if rest.is_empty() {
                    consumed_next = true;
                    args.get(i + 1).cloned()
                } else {
                    Some(Word::plain(rest))
                };
                if name == "grep" && c == 'd' && value.as_ref().is_some_and(|v| v.text == "recurse")
                {
                    recursive = true;
                }
                if shape.path_values.contains(&opt.as_str())
                    && let Some(v) = value
                {
                    out.push(ReadOperand {
                        word: v,
                        access: Access::Content,
                        recursive: false,
                    });
                }
                break;
            }
        }
        i += if consumed_next { 2 } else { 1 };
    }
    if name == "find" {
        // Start points come before the first expression; the rest must not act.
        let texts: Vec<&str> = positional.iter().map(|w| w.text.as_str()).collect();
        if any_flag(&texts, shape.forbidden) {
            return None;
        }
        let starts: Vec<&Word> = positional
            .iter()
            .take_while(|w| {
                !(w.text.starts_with('-') || matches!(w.text.as_str(), "(" | "!" | ")"))
            })
            .copied()
            .collect();
        let starts = if starts.is_empty() {
            vec![Word::plain(".")]
        } else {
            starts.into_iter().cloned().collect()
        };
        out.extend(starts.into_iter().map(|word| ReadOperand {
            word,
            access: Access::Listing,
            recursive: true,
        }));
        return Some(out);
    }
    if name == "uniq" && positional.len() > 1 {
        // The second operand is an output file.
        return None;
    }
    let paths: Vec<&Word> = match shape.operands {
        Operands::None => Vec::new(),
        Operands::All(_) => positional,
        Operands::AfterPattern => {
            if pattern_given {
                positional
            } else {
                positional.into_iter().skip(1).collect()
            }
        }
        Operands::Find => Vec::new(),
    };
    let access = match shape.operands {
        Operands::All(a) => a,
        Operands::AfterPattern if matches!(name, "fd" | "fdfind") => Access::Listing,
        _ => Access::Content,
    };
    let defaults_to_cwd = matches!(name, "rg" | "fd" | "fdfind")
        || (matches!(name, "grep" | "egrep" | "fgrep") && recursive);
    let paths: Vec<Word> = if paths.is_empty() && defaults_to_cwd {
        vec![Word::plain(".")]
    } else {
        paths.into_iter().cloned().collect()
    };
    out.extend(paths.into_iter().map(|word| ReadOperand {
        word,
        access,
        recursive,
    }));
    Some(out)
}

/// A jq filter that reads the environment or files beyond its operands.
fn jq_filter_reads_more(text: &str) -> bool {
    let words: Vec<&str> = text
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '$'))
        .collect();
    words.iter().any(|w| {
        matches!(
            *w,
            "env"
                | "$ENV"
                | "import"
                | "include"
                | "input_filename"
                | "$__prog_name"
                | "get_search_list"
        )
    })
}

/// `test`, `[` and `[[` with operators that evaluate nothing.
fn test_is_inert(name: &str, args: &[&str]) -> bool {
    let args = match name {
        "[" => match args.split_last() {
            Some((&"]", rest)) => rest,
            _ => return false,
        },
        "[[" => match args.split_last() {
            Some((&"]]", rest)) => rest,
            _ => return false,
        },
        _ => args,
    };
    for (i, a) in args.iter().enumerate() {
        if matches!(*a, "-v" | "-R") {
            return false;
        }
        if ARITHMETIC.contains(a) {
            let integer = |s: Option<&&str>| {
                s.is_some_and(|s| {
                    let digits = s.strip_prefix(['-', '+']).unwrap_or(s);
                    !digits.is_empty() && digits.chars().all(|c| c.is_ascii_digit())
                })
            };
            if !(i > 0 && integer(args.get(i - 1)) && integer(args.get(i + 1))) {
                return false;
            }
        }
    }
    // Every other word is an operator that evaluates nothing (`-f`, `=`, `&&`, `!`, …) or
    // an operand bash only compares or stats.
    true
}

fn git_read_only(args: &[&str]) -> bool {
    // Global options before the subcommand: only harmless ones.
    let mut i = 0;
    while let Some(a) = args.get(i) {
        if !a.starts_with('-') {
            break;
        }
        if !matches!(
            *a,
            "--no-pager" | "--no-optional-locks" | "-P" | "--literal-pathspecs"
        ) {
            return false;
        }
        i += 1;
    }
    let Some(&sub) = args.get(i) else {
        return false;
    };
    let rest = &args[i + 1..];
    if any_flag(rest, GIT_BAD_FLAGS) {
        return false;
    }
    let positional: Vec<&&str> = rest.iter().filter(|a| !a.starts_with('-')).collect();
    match sub {
        s if GIT_READ.contains(&s) => true,
        "reflog" => matches!(positional.first(), None | Some(&&"show")),
        "stash" => matches!(positional.first(), Some(&&"list") | Some(&&"show")),
        "worktree" => matches!(positional.first(), Some(&&"list")),
        "remote" => matches!(
            positional.first(),
            None | Some(&&"show") | Some(&&"get-url")
        ),
        "config" => {
            any_flag(
                rest,
                &["--get", "--get-all", "--get-regexp", "--list", "-l"],
            ) && !any_flag(
                rest,
                &[
                    "--add",
                    "--unset",
                    "--unset-all",
                    "--replace-all",
                    "--edit",
                    "-e",
                    "--rename-section",
                    "--remove-section",
                ],
            )
        }
        "branch" => {
            !any_flag(
                rest,
                &[
                    "-d",
                    "-D",
                    "--delete",
                    "-m",
                    "-M",
                    "--move",
                    "-c",
                    "-C",
                    "--copy",
                    "-f",
                    "--force",
                    "-u",
                    "--set-upstream-to",
                    "--unset-upstream",
                    "--edit-description",
                ],
            ) && (positional.is_empty() || any_flag(rest, &["--list", "-l"]))
        }
        "tag" => {
            !any_flag(
                rest,
                &[
                    "-d", "--delete", "-a", "-s", "-u", "-f", "--force", "-m", "-F",
                ],
            ) && (positional.is_empty() || any_flag(rest, &["--list", "-l"]))
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::parse;

    fn check(cmd: &str, expected: bool) {
        let script = parse(cmd).unwrap_or_default();

        let got = !script.commands.is_empty()
            && script.issues.is_empty()
            && script.commands.iter().all(is_read_only_command);
        assert_eq!(got, expected, "{cmd}");
    }

    fn operands(cmd: &str) -> Vec<(String, Access, bool)> {
        let script = parse(cmd).unwrap_or_default();
        script
            .commands
            .first()
            .and_then(read_operands)
            .unwrap_or_default()
            .into_iter()
            .map(|o| (o.word.text, o.access, o.recursive))
            .collect()
    }

    #[test]
    fn classifies_commands() {
        for ro in [
            "ls -la",
            "cat a b | grep x | wc -l",
            "git status",
            "git diff HEAD~1 -- src",
            "git log --oneline -5",
            "git --no-pager show HEAD",
            "git branch",
            "git branch -a",
            "git tag --list 'v*'",
            "git config --get user.name",
            "git stash list",
            "gh pr view 12",
            "find . -name '*.rs'",
            "echo hello",
            "docker ps",
            "node --version",
            "sort -u file",
            "rg foo src",
            "ls 2>&1",
            "ls > /dev/null",
            "[ -f x ]",
            "[[ -d src && a == b ]]",
            "test 1 -eq 1",
            "[[ 2 -lt 10 ]]",
            "test -n 'x[$(touch PWN)]'",
            "printf '%s\\n' a",
            "file -b x",
            "jq .name package.json",
            "head -n 5 a",
        ] {
            check(ro, true);
        }
        for rw in [
            "rm -rf x",
            "git commit -m x",
            "git push",
            "git -c core.pager='sh -c id' diff",
            "git diff --output=/tmp/x",
            "git diff --no-index /etc/passwd x",
            "git branch -D main",
            "git branch newbranch",
            "git tag v1",
            "find . -delete",
            "find . -name '*.o' -exec rm {} +",
            "sort -o out in",
            "sort -uo out in",
            "cat README > ~/.bashrc",
            "echo $HOME",
            "ls *.rs",
            "FOO=bar ls",
            "echo $(id)",
            "xargs rm",
            "npm install",
            "npm version",
            "hostname evil",
            "sed -i s/a/b/ f",
            "rg --pre sh x",
            "gh pr merge 1",
            "uniq in out",
            "echo hi & echo bye",
            "test -v 'x[$(touch PWN)]'",
            "[ -v 'x[$(touch PWN)]' ]",
            "[[ -v x ]]",
            "[[ 'x[$(id)]' -eq 1 ]]",
            "[[ x -eq 1 ]]",
            "test a -eq 1",
            "printf -v 'a[$(id)]' 1",
            "printf -va 1",
            "file -C -m magic",
            "file -Cm magic",
            "man -P 'rm x' ls",
            "ps e",
            "ps auxe",
            "ss -K",
            "jq -n env",
            "jq -n '$ENV.HOME'",
            "jq 'import \"a\" as a; .' f",
            "date -s now",
            "tree -o out",
            "cat {a,b}",
            "cat ~/x",
            "[ -f x",
            "declare -p",
            "export A=1",
        ] {
            check(rw, false);
        }
    }

    #[test]
    fn finds_read_operands() {
        use Access::*;
        let s = |v: &[(&str, Access, bool)]| -> Vec<(String, Access, bool)> {
            v.iter().map(|(a, b, c)| (a.to_string(), *b, *c)).collect()
        };
        assert_eq!(
            operands("cat a b"),
            s(&[("a", Content, false), ("b", Content, false)])
        );
        assert_eq!(operands("head -n 5 a"), s(&[("a", Content, false)]));
        assert_eq!(operands("grep -n foo a"), s(&[("a", Content, false)]));
        assert_eq!(operands("grep -e foo a"), s(&[("a", Content, false)]));
        assert_eq!(operands("grep -rn foo"), s(&[(".", Content, true)]));
        assert_eq!(operands("grep -r foo src"), s(&[("src", Content, true)]));
        assert_eq!(
            operands("grep -f pats a"),
            s(&[("pats", Content, false), ("a", Content, false)])
        );
        assert_eq!(operands("rg foo"), s(&[(".", Content, true)]));
        assert_eq!(operands("ls -la /etc"), s(&[("/etc", Listing, false)]));
        assert_eq!(operands("ls -R d"), s(&[("d", Listing, true)]));
        assert_eq!(operands("find /etc -name x"), s(&[("/etc", Listing, true)]));
        assert_eq!(operands("find -name x"), s(&[(".", Listing, true)]));
        assert_eq!(operands("jq .a f.json"), s(&[("f.json", Content, false)]));
        assert_eq!(
            operands("diff -r a b"),
            s(&[("a", Content, true), ("b", Content, true)])
        );
        assert_eq!(operands("base64 .env"), s(&[(".env", Content, false)]));
        assert_eq!(operands("echo .env"), s(&[]));
        assert_eq!(operands("cut -d / -f 2 a"), s(&[("a", Content, false)]));
    }
}
