//! Read-only classification of simple commands: the commands that change nothing and may
//! run without asking and alongside other calls.
//!
//! This is an allow-list, not a list of tricks. A command is read-only when
//! - it is a plain command or a `[`/`[[` test: no assignment, no declaration;
//! - every word is plain (quotes only: no variable, substitution, arithmetic, brace, tilde or
//!   unquoted glob), so bash passes exactly what was checked;
//! - it writes no file through a redirection;
//! - its program is on the list below, and its arguments parse with the program's option
//!   table as the program parses them (`getopt.rs`: unique prefixes, attached values,
//!   bundles, `--`), with no option that writes, runs a program, or is unknown; `test`, `[`
//!   and `[[` take only the operators that evaluate nothing (no `-v`/`-R`, whose operand
//!   bash evaluates as a subscript, and arithmetic comparisons only between integer
//!   literals).
//!
//! For each read-only command it also says which operands are read and how (contents,
//! listing, recursively, or the whole repository's history for git commands that print
//! file contents), so the permission check can hold them to the Read rules.

use crate::getopt::{Effect, Parsed, Table};
use crate::parse::{Form, SimpleCommand, Word};
use crate::programs::base_name;
use crate::tables;

/// How a command reads an operand.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// The file's contents (a directory operand with `recursive` means everything beneath)
    Content,
    /// Names and metadata only (`ls`, `stat`, `find`)
    Listing,
    /// The contents of the git repository the command runs in, its history included (`git
    /// show REV:PATH`, `git log -p`, `git grep PATTERN REV`): every file the repository ever
    /// held, which no path on the command line names
    Repository,
}

/// An operand a read-only command reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadOperand {
    /// The word naming it (`.` for [`Access::Repository`]: the directory the command runs
    /// in, whose repository it reads)
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
}

/// The read-only programs (each has an option table) and where their operands are.
const SHAPES: &[(&[&str], Operands)] = &[
    (
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
            "head",
            "tail",
            "wc",
            "strings",
            "hexdump",
            "hd",
            "od",
            "nl",
            "fold",
            "fmt",
            "base64",
            "base32",
            "basenc",
            "expand",
            "unexpand",
            "cut",
            "paste",
            "column",
            "cmp",
            "diff",
            "file",
            "sort",
            "uniq",
            "who",
            // A page name is looked up in the manual path; one with a slash (or any, with
            // `-l`) is a file.
            "man",
        ],
        Operands::All(Access::Content),
    ),
    (
        &["stat", "ls", "du", "tree"],
        Operands::All(Access::Listing),
    ),
    (
        &["grep", "egrep", "fgrep", "jq", "rg", "fd", "fdfind"],
        Operands::AfterPattern,
    ),
    (
        &[
            "date", "pwd", "true", "false", "sleep", "whoami", "id", "uname", "free", "df",
            "locale", "groups", "nproc", "getconf", "seq", "uptime", "basename", "dirname",
            "realpath", "readlink", "numfmt", "tr", "which", "type", "expr", "cd", "pgrep", "arch",
            "tty", "logname", "users", "printf", "hostname",
        ],
        Operands::None,
    ),
];

/// Programs whose only read-only invocation is printing their version (their other
/// commands run project code or change state).
const VERSION_ONLY: &[&str] = &[
    "node", "python", "python3", "cargo", "rustc", "go", "npm", "rustup", "java", "ruby", "perl",
    "gcc", "cc", "clang", "make", "pip", "pip3",
];

/// `find`'s expression: the tests and actions that only look, with whether they take a
/// value; anything else (`-delete`, `-exec`, `-fprint`, an unknown word) is not read-only.
const FIND_PRIMARIES: &[(&str, bool)] = &[
    ("-daystart", false),
    ("-follow", false),
    ("-nowarn", false),
    ("-warn", false),
    ("-regextype", true),
    ("-depth", false),
    ("-d", false),
    ("-maxdepth", true),
    ("-mindepth", true),
    ("-mount", false),
    ("-noleaf", false),
    ("-xdev", false),
    ("-ignore_readdir_race", false),
    ("-noignore_readdir_race", false),
    ("-amin", true),
    ("-anewer", true),
    ("-atime", true),
    ("-cmin", true),
    ("-cnewer", true),
    ("-context", true),
    ("-ctime", true),
    ("-empty", false),
    ("-false", false),
    ("-fstype", true),
    ("-gid", true),
    ("-group", true),
    ("-ilname", true),
    ("-iname", true),
    ("-inum", true),
    ("-ipath", true),
    ("-iregex", true),
    ("-iwholename", true),
    ("-links", true),
    ("-lname", true),
    ("-mmin", true),
    ("-mtime", true),
    ("-name", true),
    ("-newer", true),
    ("-nogroup", false),
    ("-nouser", false),
    ("-path", true),
    ("-perm", true),
    ("-readable", false),
    ("-regex", true),
    ("-samefile", true),
    ("-size", true),
    ("-true", false),
    ("-type", true),
    ("-uid", true),
    ("-used", true),
    ("-user", true),
    ("-wholename", true),
    ("-writable", false),
    ("-executable", false),
    ("-xtype", true),
    ("-print", false),
    ("-print0", false),
    ("-printf", true),
    ("-ls", false),
    ("-prune", false),
    ("-quit", false),
    ("-not", false),
    ("-a", false),
    ("-and", false),
    ("-o", false),
    ("-or", false),
    ("(", false),
    (")", false),
    ("!", false),
    (",", false),
    ("-help", false),
    ("--help", false),
    ("-version", false),
    ("--version", false),
];

/// `find` actions that write, run a program or read a file's names from elsewhere.
const FIND_ACTIONS: &[&str] = &[
    "-delete",
    "-exec",
    "-execdir",
    "-ok",
    "-okdir",
    "-fprint",
    "-fprint0",
    "-fprintf",
    "-fls",
    "-files0-from",
];

/// git subcommands that only read, with whether they print file contents (so read the
/// whole repository's history as far as the Read rules go).
const GIT_READ: &[(&str, bool)] = &[
    ("status", false),
    ("diff", true),
    ("log", true),
    ("show", true),
    ("shortlog", false),
    ("blame", true),
    ("ls-files", false),
    ("ls-tree", false),
    ("merge-base", false),
    ("rev-parse", false),
    ("describe", false),
    ("cat-file", true),
    ("for-each-ref", false),
    ("grep", true),
    ("count-objects", false),
    ("name-rev", false),
    ("check-ignore", false),
    ("var", false),
];

/// Arithmetic comparisons: `[[` evaluates their operands as arithmetic.
const ARITHMETIC: &[&str] = &["-eq", "-ne", "-lt", "-le", "-gt", "-ge"];

/// Effects that make a command more than a read.
const NOT_READING: &[Effect] = &[Effect::Write, Effect::Run, Effect::Opaque, Effect::Unsafe];

/// Whether one simple command (wrappers already stripped) only reads.
pub fn is_read_only_command(cmd: &SimpleCommand) -> bool {
    read_operands(cmd).is_some()
}

/// Why a reading command's arguments go beyond reading: the first option that writes,
/// runs a program, or is unknown or ambiguous to its table (`sort -o`, `git diff --output`,
/// `file -C`, `sort --compress-prog=sh`). A wildcard allow rule for the command does not
/// cover it. `None` for a command without a table or whose options all only read.
pub fn escape_option(cmd: &SimpleCommand) -> Option<String> {
    let (name, args) = cmd.words.split_first()?;
    let name = base_name(&name.text);
    let (table, args) = if name == "git" {
        let (sub, rest) = git_subcommand(args)?;
        (tables::table(&format!("git {sub}"))?, rest)
    } else {
        (tables::table(name)?, args)
    };
    if name == "find" {
        return args
            .iter()
            .find(|w| FIND_ACTIONS.contains(&w.text.as_str()))
            .map(|w| w.text.clone());
    }
    match table.parse_args(args) {
        Ok(p) => NOT_READING
            .iter()
            .find_map(|e| p.first(*e))
            .map(|f| f.spelled.clone()),
        Err(e) => Some(e.word().to_owned()),
    }
}

/// git's global options and its subcommand: `None` when a global option is unknown,
/// changes what git reads or runs (`-c`, `--git-dir`, `--exec-path`, …), or there is no
/// subcommand.
fn git_subcommand(args: &[Word]) -> Option<(&str, &[Word])> {
    let table = tables::table("git")?;
    let parsed = table.parse_args(args).ok()?;
    if NOT_READING.iter().any(|e| parsed.any(*e)) {
        return None;
    }
    let sub = args.get(parsed.rest)?;
    sub.known
        .then_some((sub.text.as_str(), &args[parsed.rest + 1..]))
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
    let (first, args) = cmd.words.split_first()?;
    let name = first.text.as_str();
    let texts: Vec<&str> = args.iter().map(|w| w.text.as_str()).collect();
    match name {
        "test" | "[" | "[[" => test_is_inert(name, &texts).then(Vec::new),
        // bash's echo prints every word (options included); nothing it takes acts.
        "echo" => Some(Vec::new()),
        _ if VERSION_ONLY.contains(&name) => matches!(
            texts.as_slice(),
            ["--version"] | ["-V"] | ["-v"] | ["version"]
        )
        .then(Vec::new)
        .filter(|_| !(name == "npm" && texts == ["version"])),
        // git's version is printed before any configuration or repository is read.
        "git" if matches!(texts.as_slice(), ["--version"] | ["version"]) => Some(Vec::new()),
        "git" => git_operands(args),
        "find" => find_operands(args),
        "ps" => ps_reads_only(args).then(Vec::new),
        _ => {
            let (_, operands) = SHAPES.iter().find(|(names, _)| names.contains(&name))?;
            let table = tables::table(name)?;
            shaped(table, *operands, name, args)
        }
    }
}

/// The operands of a program with a table, or `None` when an option is refused.
fn shaped(
    table: &Table,
    operands: Operands,
    name: &str,
    args: &[Word],
) -> Option<Vec<ReadOperand>> {
    let parsed = table.parse_args(args).ok()?;
    if NOT_READING.iter().any(|e| parsed.any(*e)) {
        return None;
    }
    let texts: Vec<&str> = args.iter().map(|w| w.text.as_str()).collect();
    if name == "jq" && texts.iter().any(|t| jq_filter_reads_more(t)) {
        return None;
    }
    let mut out = values_read(&parsed);
    // These always descend into the directories they are given.
    let always_recursive = matches!(name, "du" | "rg" | "fd" | "fdfind" | "tree");
    let mut recursive = parsed.any(Effect::Recurse) || always_recursive;
    if matches!(name, "grep" | "egrep" | "fgrep")
        && parsed.found.iter().any(|f| {
            f.opt.short.iter().any(|(c, _)| *c == 'd')
                && f.value
                    .as_ref()
                    .is_some_and(|v| v.text.starts_with("recurse"))
        })
    {
        recursive = true;
    }
    let positional: Vec<Word> = parsed.operands.iter().map(|(_, w)| w.clone()).collect();
    if name == "uniq" && positional.len() > 1 {
        // The second operand is an output file.
        return None;
    }
    if name == "hostname" && !positional.is_empty() {
        // An operand is the name to set.
        return None;
    }
    let paths: Vec<Word> = match operands {
        Operands::None => Vec::new(),
        Operands::All(_) => positional,
        Operands::AfterPattern => {
            if parsed.any(Effect::Pattern) {
                positional
            } else {
                positional.into_iter().skip(1).collect()
            }
        }
    };
    let access = match operands {
        Operands::All(a) => a,
        // fd matches and prints names.
        _ if matches!(name, "fd" | "fdfind") => Access::Listing,
        _ => Access::Content,
    };
    let defaults_to_cwd =
        matches!(name, "grep" | "egrep" | "fgrep") && recursive || always_recursive && name != "du";
    let paths = if paths.is_empty() && defaults_to_cwd {
        vec![Word::plain(".")]
    } else {
        paths
    };
    out.extend(paths.into_iter().map(|word| ReadOperand {
        word,
        access,
        recursive,
    }));
    Some(out)
}

/// The files options name for reading (`grep -f FILE`, `wc --files0-from=FILE`).
fn values_read(parsed: &Parsed<'_>) -> Vec<ReadOperand> {
    parsed
        .found
        .iter()
        .filter(|f| f.has(Effect::Read))
        .filter_map(|f| f.value.clone().map(|word| (word, f.has(Effect::Recurse))))
        .map(|(word, recursive)| ReadOperand {
            word,
            access: Access::Content,
            recursive,
        })
        .collect()
}

/// `ps` with options that only read. procps `ps` parses the line a second time with every
/// option read as a BSD one when the first parse fails — also when a selection list (users,
/// process IDs, terminals, a width) turns out invalid, which cannot be known here — so a line
/// with such a value must not print the environment (BSD `e`) in that reading either: `ps
/// -ue` is `-u e` to the first parse and `u` plus `e` to the second. (A format or sort
/// specification is the same to both readings, so it fails both or neither.)
fn ps_reads_only(args: &[Word]) -> bool {
    let Some(table) = tables::table("ps") else {
        return false;
    };
    let Ok(parsed) = table.parse_args(args) else {
        return false;
    };
    if NOT_READING.iter().any(|e| parsed.any(*e)) {
        return false;
    }
    let format = |f: &crate::getopt::Found<'_>| {
        f.opt
            .short
            .iter()
            .chain(&f.opt.bsd)
            .any(|(c, _)| matches!(c, 'o' | 'O' | 'k'))
            || f.opt
                .long
                .iter()
                .any(|(l, _)| matches!(l.as_str(), "format" | "sort"))
    };
    if !parsed.found.iter().any(|f| f.value.is_some() && !format(f)) {
        return true;
    }
    let as_bsd: Vec<Word> = args
        .iter()
        .map(|w| match w.text.strip_prefix('-') {
            Some(rest) if !rest.starts_with('-') && !rest.is_empty() => Word {
                text: rest.to_owned(),
                ..w.clone()
            },
            _ => w.clone(),
        })
        .collect();
    table
        .parse_args(&as_bsd)
        .map_or(true, |p| !NOT_READING.iter().any(|e| p.any(*e)))
}

/// `find`: its leading options, its start points, then an expression of tests that only
/// look.
fn find_operands(args: &[Word]) -> Option<Vec<ReadOperand>> {
    // Only with a table for find (the same as every program's, checked elsewhere).
    tables::table("find")?;
    // `-H`, `-L`, `-P`, `-D opts`, `-O level` come first.
    let mut i = 0;
    while let Some(w) = args.get(i) {
        let t = w.text.as_str();
        if matches!(t, "-H" | "-L" | "-P") {
            i += 1;
        } else if matches!(t, "-D" | "-O") || (t.starts_with("-O") && t.len() > 2) {
            i += if t.len() == 2 { 2 } else { 1 };
        } else {
            break;
        }
    }
    let rest = args.get(i..).unwrap_or_default();
    let starts: Vec<Word> = rest
        .iter()
        .take_while(|w| !(w.text.starts_with('-') || matches!(w.text.as_str(), "(" | "!" | ")")))
        .cloned()
        .collect();
    let mut k = starts.len();
    while let Some(w) = rest.get(k) {
        let t = w.text.as_str();
        let (_, takes) = FIND_PRIMARIES.iter().find(|(p, _)| *p == t)?;
        k += if *takes { 2 } else { 1 };
        if *takes && k > rest.len() {
            return None;
        }
    }
    let starts = if starts.is_empty() {
        vec![Word::plain(".")]
    } else {
        starts
    };
    Some(
        starts
            .into_iter()
            .map(|word| ReadOperand {
                word,
                access: Access::Listing,
                recursive: true,
            })
            .collect(),
    )
}

/// The operands of a read-only git command, or `None`.
fn git_operands(args: &[Word]) -> Option<Vec<ReadOperand>> {
    let (sub, rest) = git_subcommand(args)?;
    let texts: Vec<&str> = rest.iter().map(|w| w.text.as_str()).collect();
    // Subcommands whose read-only form is a sub-subcommand.
    let (key, rest, contents) = match sub {
        "stash" => match texts.first() {
            Some(&"list") => ("git stash list", &rest[1..], true),
            Some(&"show") => ("git stash show", &rest[1..], true),
            _ => return None,
        },
        "reflog" => match texts.first() {
            None => ("git reflog", rest, false),
            Some(&"show") => ("git reflog show", &rest[1..], true),
            _ => return None,
        },
        "worktree" => match texts.first() {
            Some(&"list") => ("git worktree list", &rest[1..], false),
            _ => return None,
        },
        "remote" => match texts.first() {
            None => ("git remote", rest, false),
            Some(t) if t.starts_with('-') => ("git remote", rest, false),
            Some(&"get-url") => ("git remote get-url", &rest[1..], false),
            _ => return None,
        },
        "config" => return git_config_reads(rest),
        "branch" | "tag" => {
            let table = tables::table(&format!("git {sub}"))?;
            let parsed = table.parse_args(rest).ok()?;
            if NOT_READING.iter().any(|e| parsed.any(*e)) {
                return None;
            }
            // Without `--list`, an operand names a branch or tag to create.
            let listing = parsed
                .found
                .iter()
                .any(|f| f.opt.long.iter().any(|(l, _)| l == "list"));
            return (parsed.operands.is_empty() || listing).then(Vec::new);
        }
        _ => {
            let (_, contents) = GIT_READ.iter().find(|(s, _)| *s == sub)?;
            (sub, rest, *contents)
        }
    };
    let key = if key.starts_with("git ") {
        key.to_owned()
    } else {
        format!("git {key}")
    };
    let table = tables::table(&key)?;
    let parsed = table.parse_args(rest).ok()?;
    if NOT_READING.iter().any(|e| parsed.any(*e)) {
        return None;
    }
    let mut out = values_read(&parsed);
    if contents {
        out.push(ReadOperand {
            word: Word::plain("."),
            access: Access::Repository,
            recursive: true,
        });
    }
    Some(out)
}

/// `git config` that only reads: `get`, `list`, or the `--get*`/`--list` forms.
fn git_config_reads(rest: &[Word]) -> Option<Vec<ReadOperand>> {
    let texts: Vec<&str> = rest.iter().map(|w| w.text.as_str()).collect();
    let rest = match texts.first() {
        Some(&"get") | Some(&"list") => &rest[1..],
        _ => rest,
    };
    let table = tables::table("git config")?;
    let parsed = table.parse_args(rest).ok()?;
    if NOT_READING.iter().any(|e| parsed.any(*e)) {
        return None;
    }
    let reading = matches!(texts.first(), Some(&"get") | Some(&"list"))
        || parsed.found.iter().any(|f| {
            !f.negated
                && f.opt
                    .long
                    .iter()
                    .any(|(l, _)| l.starts_with("get") || l == "list")
        });
    reading.then(|| values_read(&parsed))
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
                | "$__loc__"
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

/// The read-only programs (git subcommands as `git NAME`), for the tests and the
/// documentation.
pub fn read_only_programs() -> Vec<String> {
    let mut out: Vec<String> = SHAPES
        .iter()
        .flat_map(|(names, _)| names.iter().map(|n| (*n).to_owned()))
        .collect();
    out.extend(["echo", "test", "[", "[[", "find"].map(str::to_owned));
    out.extend(GIT_READ.iter().map(|(s, _)| format!("git {s}")));
    out
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
            "ls --alm",
            "ls --colo=auto -R",
            "cat a b | grep x | wc -l",
            "git status",
            "git status -uno",
            "git status --short --branch",
            "git diff HEAD~1 -- src",
            "git diff --stat",
            "git diff --cached",
            "git log --oneline -5",
            "git log --format=%H -n 3",
            "git --no-pager show HEAD",
            "git branch",
            "git branch -a",
            "git tag --list 'v*'",
            "git config --get user.name",
            "git config get user.name",
            "git stash list",
            "git grep -n foo",
            "find . -name '*.rs'",
            "find . -type f -maxdepth 2 -print",
            "echo hello",
            "echo -x",
            "node --version",
            "cargo --version",
            "sort -u file",
            "sort --uniq file",
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
            "jq -r .name package.json",
            "head -n 5 a",
            "head -5 a",
            "grep -2 x a",
            "tail -f a",
            "date +%s",
            "date --date=yesterday",
            "date --fi=x",
            "rg foo",
            "rg -n foo src",
            "rg -e foo -e bar",
            "rg -e=foo src",
            "rg --files src",
            "rg -uu --hidden -g '*.rs' foo",
            "rg --no-ignore --ignore foo",
            "rg --pre-glob '*.gz' foo",
            "rg --type-list",
            "fd",
            "fd -e rs",
            "fd -tf -e=rs foo src",
            "fdfind -H --no-ignore x",
            "fd --changed-within 2d",
            "tree",
            "tree -L 2 src",
            "tree -aL 2 --dirsfirst",
            "tree -La 2",
            "tree --charset=ascii -I target",
            "man ls",
            "man -k grep",
            "man 3 printf",
            "man --pat ls",
            "man -w ls",
            "ps",
            "ps aux",
            "ps -ef",
            "ps -eo pid,ppid,cmd",
            "ps -o pid,user -p 1",
            "ps --forest -e",
            "ps axjf",
            "ps -p 1 -o comm=",
            "ps u 1",
            "hostname",
            "hostname -f",
            "hostname --fq",
            "hostname -I",
            "git --version",
            "git version",
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
            "git grep --open=true x",
            "git grep -Otrue x",
            "git grep --open-files-in-pager x",
            "git stash -m list",
            "git config --file=x a b",
            "git config set a b",
            "git config a b",
            "git branch -D main",
            "git branch newbranch",
            "git tag v1",
            "git ls-remote --upload-pac=x origin",
            "git --git-dir=x log",
            "git --exec-path=. status",
            "git -C sub status",
            "git -Csub log",
            "git --version --exec-path=.",
            "git version --build-options x",
            "find . -delete",
            "find . -name '*.o' -exec rm {} +",
            "find . -fprint OUT",
            "find . -frobnicate",
            "sort -o out in",
            "sort -uo out in",
            "sort --outp=out in",
            "sort --o out in",
            "sort --compress-prog=sh in",
            "sort --compress-program sh in",
            "file --compi x",
            "file -C -m magic",
            "file -Cm magic",
            "date --se=now",
            "date -s now",
            "cat README > ~/.bashrc",
            "echo $HOME",
            "ls *.rs",
            "FOO=bar ls",
            "echo $(id)",
            "xargs rm",
            "npm install",
            "npm version",
            "cargo build",
            "hostname evil",
            "sed -i s/a/b/ f",
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
            "man -P 'rm x' ls",
            "man --pag='rm x' ls",
            "man -Hfirefox ls",
            "man -C cfg ls",
            "man -u",
            "man --pro x ls",
            "ps e",
            "ps aue",
            "ps auxe",
            "ps -ue",
            "ps -u root e",
            "ps -o pid -e e",
            "ps --frobnicate",
            "ps aBx",
            "rg --pre cat x",
            "rg --pre=cat x",
            "rg --hostname-bin=id x",
            "rg -z x",
            "rg --search-zip x",
            "rg --pr cat x",
            "rg --frobnicate x",
            "fd -x rm",
            "fd -xrm",
            "fd -x=rm",
            "fd --exec=rm",
            "fd -Hx rm",
            "fdfind -X rm ';' a",
            "fdfind --exec-batch rm",
            "fd --exec-b rm",
            "fd --base-directory /etc x",
            "tree -o out",
            "tree -ao out",
            "tree -R -L 2",
            "tree -L2",
            "tree --dirs",
            "hostname evil",
            "hostname -F file",
            "hostname --fil=file",
            "hostname -b",
            "jq -n env",
            "jq -n '$ENV.HOME'",
            "jq 'import \"a\" as a; .' f",
            "jq --arg a b . f",
            "cat {a,b}",
            "cat ~/x",
            "[ -f x",
            "declare -p",
            "export A=1",
            "ls --frobnicate",
            "ls --c",
            "ls -Ü",
            "head -n",
            "cat --show-all=x f",
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
        assert_eq!(operands("head a -n 5"), s(&[("a", Content, false)]));
        assert_eq!(operands("grep -n foo a"), s(&[("a", Content, false)]));
        assert_eq!(operands("grep -e foo a"), s(&[("a", Content, false)]));
        assert_eq!(operands("grep --reg=foo a"), s(&[("a", Content, false)]));
        assert_eq!(operands("grep -rn foo"), s(&[(".", Content, true)]));
        assert_eq!(operands("grep --recur foo"), s(&[(".", Content, true)]));
        assert_eq!(operands("grep -r foo src"), s(&[("src", Content, true)]));
        assert_eq!(
            operands("grep -f pats a"),
            s(&[("pats", Content, false), ("a", Content, false)])
        );
        assert_eq!(
            operands("grep -fpats a"),
            s(&[("pats", Content, false), ("a", Content, false)])
        );
        assert_eq!(operands("ls -la /etc"), s(&[("/etc", Listing, false)]));
        assert_eq!(operands("rg foo"), s(&[(".", Content, true)]));
        assert_eq!(operands("rg foo src"), s(&[("src", Content, true)]));
        assert_eq!(operands("rg -e foo src"), s(&[("src", Content, true)]));
        assert_eq!(operands("rg --files .ssh"), s(&[(".ssh", Content, true)]));
        assert_eq!(
            operands("rg -f=pats x"),
            s(&[("pats", Content, false), ("x", Content, true)])
        );
        assert_eq!(operands("fd x"), s(&[(".", Listing, true)]));
        assert_eq!(operands("fd x /etc"), s(&[("/etc", Listing, true)]));
        assert_eq!(
            operands("fd --search-path /etc"),
            s(&[("/etc", Content, true), (".", Listing, true)])
        );
        assert_eq!(operands("tree"), s(&[(".", Listing, true)]));
        assert_eq!(operands("tree -L 2 /etc"), s(&[("/etc", Listing, true)]));
        assert_eq!(
            operands("tree --gitfile g d"),
            s(&[("g", Content, false), ("d", Listing, true)])
        );
        assert_eq!(operands("man ./page.1"), s(&[("./page.1", Content, false)]));
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
        assert_eq!(operands("wc --files0=list"), s(&[("list", Content, false)]));
        assert_eq!(
            operands("git show HEAD:.env"),
            s(&[(".", Repository, true)])
        );
        assert_eq!(operands("git log -p"), s(&[(".", Repository, true)]));
        assert_eq!(operands("git status"), s(&[]));
        assert_eq!(
            operands("git blame --contents .env x"),
            s(&[(".env", Content, false), (".", Repository, true)])
        );
    }
}
