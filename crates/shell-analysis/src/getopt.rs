//! Options parsed as the programs parse them: GNU `getopt_long` (a unique prefix of a long
//! option is that option, `--opt=value`, an ambiguous prefix is an error, required and
//! optional arguments, bundled short options with attached values, `--` ends the options,
//! operands and options mixed unless the program stops at its first operand) and git's
//! parse-options (the same, plus `--no-` negations of every long option).
//!
//! A program's options are a [`Table`]: every option it accepts, each with what it takes and
//! what it does ([`Effect`]). Tables are written one option per line:
//!
//! ```text
//! -o= --output= write      a required value; the option writes
//! --color=?                an optional value (only as `--color=WHEN`)
//! -r -R --recursive recurse
//! ```
//!
//! A name ending in `=` takes a value (the rest of a short option's word or the next word;
//! `--opt=value` or the next word), one ending in `=?` an optional value (attached only). The
//! words after the names are effects. A word that is not in the table is an error
//! ([`OptError`]), which the classification treats as "not read-only" and, under a deny rule,
//! as unresolved.

use std::collections::BTreeSet;

use crate::parse::Word;

/// What an option does, beyond changing what the program prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Effect {
    /// Its value names a file the program reads (the Read rules must see it)
    Read,
    /// The program writes a file or changes state (never read-only)
    Write,
    /// Its value is a command the program runs (checked as shell code)
    Run,
    /// The program reads directories given as operands recursively
    Recurse,
    /// Its value is the pattern, so every operand is a path (`grep -e`)
    Pattern,
    /// A wrapper: no command follows (`command -v`, `taskset -p`)
    NoCommand,
    /// A wrapper: the command runs through a shell (`sudo -s`)
    Shell,
    /// The program runs code this analysis cannot see (a pager, a plug-in, a script from a
    /// file): never read-only, and unresolved under a deny rule
    Opaque,
    /// The option reads the network or other processes' state in a way that is not a plain
    /// read (never read-only)
    Unsafe,
}

impl Effect {
    fn parse(word: &str) -> Option<Self> {
        Some(match word {
            "read" => Effect::Read,
            "write" => Effect::Write,
            "run" => Effect::Run,
            "recurse" => Effect::Recurse,
            "pattern" => Effect::Pattern,
            "nocmd" => Effect::NoCommand,
            "shell" => Effect::Shell,
            "opaque" => Effect::Opaque,
            "unsafe" => Effect::Unsafe,
            _ => return None,
        })
    }
}

/// Whether an option takes a value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arg {
    /// A flag
    None,
    /// A required value: attached or the next word
    Required,
    /// An optional value: attached only (`-l5`, `--color=auto`)
    Optional,
}

/// One option of a table, under all its names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Opt {
    /// Short names (`-a` → `a`), each with what it takes
    pub short: Vec<(char, Arg)>,
    /// Long names without the dashes, each with what it takes
    pub long: Vec<(String, Arg)>,
    /// What it does
    pub effects: BTreeSet<Effect>,
}

impl Opt {
    /// Its first name as written (`--all`, or `-a` when it has no long name).
    pub fn name(&self) -> String {
        match (self.long.first(), self.short.first()) {
            (Some((l, _)), _) => format!("--{l}"),
            (None, Some((s, _))) => format!("-{s}"),
            _ => String::new(),
        }
    }

    /// Whether it has this effect.
    pub fn has(&self, effect: Effect) -> bool {
        self.effects.contains(&effect)
    }
}

/// How a program reads its words.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Style {
    /// Options end at the first operand (`+` in the option string: wrappers such as `env`,
    /// `nice`, `timeout`); otherwise operands and options may come in any order
    pub stop_at_operand: bool,
    /// git's parse-options: every long option also has a `--no-` form
    pub negations: bool,
    /// `-NUM` is an option (`head -5`, `nice -10`)
    pub digits: bool,
    /// Long options are matched exactly (no abbreviation)
    pub exact: bool,
}

/// The options of one program.
#[derive(Debug, Clone, Default)]
pub struct Table {
    /// Every option
    pub opts: Vec<Opt>,
    /// How the words are read
    pub style: Style,
}

/// A table line that does not parse (found by the tables' own tests).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableError(pub String);

impl Table {
    /// Parses a table written one option per line (see the module documentation).
    pub fn parse(text: &str, style: Style) -> Result<Table, TableError> {
        let mut opts = Vec::new();
        for line in text.lines() {
            let line = line.split('#').next().unwrap_or_default().trim();
            if line.is_empty() {
                continue;
            }
            let mut opt = Opt {
                short: Vec::new(),
                long: Vec::new(),
                effects: BTreeSet::new(),
            };
            for word in line.split_whitespace() {
                let (name, arg) = if let Some(n) = word.strip_suffix("=?") {
                    (n, Arg::Optional)
                } else if let Some(n) = word.strip_suffix('=') {
                    (n, Arg::Required)
                } else {
                    (word, Arg::None)
                };
                if let Some(long) = name.strip_prefix("--") {
                    if long.is_empty() {
                        return Err(TableError(format!("`{line}`: an empty long name")));
                    }
                    opt.long.push((long.to_owned(), arg));
                } else if let Some(short) = name.strip_prefix('-') {
                    let mut chars = short.chars();
                    match (chars.next(), chars.next()) {
                        (Some(c), None) => opt.short.push((c, arg)),
                        _ => {
                            return Err(TableError(format!(
                                "`{line}`: `{word}` is not a short option"
                            )));
                        }
                    }
                } else if let Some(effect) = Effect::parse(word) {
                    opt.effects.insert(effect);
                } else {
                    return Err(TableError(format!("`{line}`: unknown effect `{word}`")));
                }
            }
            if opt.short.is_empty() && opt.long.is_empty() {
                return Err(TableError(format!("`{line}`: no option name")));
            }
            opts.push(opt);
        }
        let table = Table { opts, style };
        // A name listed twice would make the table say two things about one word.
        let mut seen = BTreeSet::new();
        for o in &table.opts {
            for (s, _) in &o.short {
                if !seen.insert(format!("-{s}")) {
                    return Err(TableError(format!("-{s} is listed twice")));
                }
            }
            for (l, _) in &o.long {
                if !seen.insert(format!("--{l}")) {
                    return Err(TableError(format!("--{l} is listed twice")));
                }
            }
        }
        Ok(table)
    }

    /// Whether the table lists this name (`-a`, `--all`), exactly.
    pub fn knows(&self, name: &str) -> bool {
        if let Some(long) = name.strip_prefix("--") {
            let long = long.split('=').next().unwrap_or_default();
            self.opts
                .iter()
                .any(|o| o.long.iter().any(|(l, _)| l == long))
                || (self.style.negations
                    && long.strip_prefix("no-").is_some_and(|base| {
                        self.opts
                            .iter()
                            .any(|o| o.long.iter().any(|(l, _)| l == base))
                    }))
        } else if let Some(short) = name.strip_prefix('-') {
            let mut chars = short.chars();
            match (chars.next(), chars.next()) {
                (Some(c), None) => self
                    .opts
                    .iter()
                    .any(|o| o.short.iter().any(|(s, _)| *s == c)),
                _ => false,
            }
        } else {
            false
        }
    }

    /// Parses a program's arguments (the words after its name).
    pub fn parse_args<'a>(&'a self, args: &[Word]) -> Result<Parsed<'a>, OptError> {
        let mut out = Parsed {
            found: Vec::new(),
            operands: Vec::new(),
            rest: args.len(),
            dashdash: false,
        };
        let mut i = 0;
        while i < args.len() {
            let w = &args[i];
            let t = w.text.as_str();
            if !w.known {
                // A word only known when it runs may be any option.
                if self.style.stop_at_operand {
                    out.rest = i;
                    return Ok(out);
                }
                return Err(OptError::Computed {
                    word: w.text.clone(),
                });
            }
            if t == "--" {
                out.dashdash = true;
                i += 1;
                if self.style.stop_at_operand {
                    out.rest = i;
                    return Ok(out);
                }
                out.operands
                    .extend((i..args.len()).map(|k| (k, args[k].clone())));
                return Ok(out);
            }
            if !t.starts_with('-') || t == "-" {
                if self.style.stop_at_operand {
                    out.rest = i;
                    return Ok(out);
                }
                out.operands.push((i, w.clone()));
                i += 1;
                continue;
            }
            if self.style.digits && t.len() > 1 && t[1..].chars().all(|c| c.is_ascii_digit()) {
                i += 1;
                continue;
            }
            if let Some(long) = t.strip_prefix("--") {
                i += self.long(long, args, i, &mut out)?;
            } else {
                i += self.short(&t[1..], args, i, &mut out)?;
            }
        }
        Ok(out)
    }

    /// A `--name[=value]` word at `i`: how many words it takes.
    fn long<'a>(
        &'a self,
        long: &str,
        args: &[Word],
        i: usize,
        out: &mut Parsed<'a>,
    ) -> Result<usize, OptError> {
        let word = &args[i].text;
        let (name, value) = match long.split_once('=') {
            Some((n, v)) => (n, Some(v)),
            None => (long, None),
        };
        let (opt, arg, negated) = self.find_long(name, word)?;
        if negated {
            if value.is_some() {
                return Err(OptError::UnexpectedValue { word: word.clone() });
            }
            out.found.push(Found {
                opt,
                spelled: word.clone(),
                value: None,
                negated: true,
                index: i,
            });
            return Ok(1);
        }
        let (value, used) = match (arg, value) {
            (Arg::None, Some(_)) => return Err(OptError::UnexpectedValue { word: word.clone() }),
            (Arg::None, None) | (Arg::Optional, None) => (None, 1),
            (_, Some(v)) => (
                Some(Word {
                    text: v.to_owned(),
                    ..args[i].clone()
                }),
                1,
            ),
            (Arg::Required, None) => match args.get(i + 1) {
                Some(next) => (Some(next.clone()), 2),
                None => return Err(OptError::MissingValue { word: word.clone() }),
            },
        };
        out.found.push(Found {
            opt,
            spelled: word.clone(),
            value,
            negated: false,
            index: i,
        });
        Ok(used)
    }

    /// The option a long name or unique prefix names, its argument, and whether it is a
    /// `--no-` negation.
    fn find_long(&self, name: &str, word: &str) -> Result<(&Opt, Arg, bool), OptError> {
        // Every long name the program accepts, with the option, its argument and whether it
        // negates.
        let mut names: Vec<(String, &Opt, Arg, bool)> = Vec::new();
        for o in &self.opts {
            for (l, a) in &o.long {
                names.push((l.clone(), o, *a, false));
                if self.style.negations {
                    match l.strip_prefix("no-") {
                        // `--no-foo` is also spelled `--foo`, its negation.
                        Some(base) => names.push((base.to_owned(), o, Arg::None, true)),
                        None => names.push((format!("no-{l}"), o, Arg::None, true)),
                    }
                }
            }
        }
        if let Some((_, o, a, n)) = names.iter().find(|(l, ..)| l == name) {
            return Ok((o, *a, *n));
        }
        if self.style.exact || name.is_empty() {
            return Err(OptError::Unknown {
                word: word.to_owned(),
            });
        }
        let matches: Vec<&(String, &Opt, Arg, bool)> =
            names.iter().filter(|(l, ..)| l.starts_with(name)).collect();
        let Some(first) = matches.first() else {
            return Err(OptError::Unknown {
                word: word.to_owned(),
            });
        };
        // Prefixes of several names of one option (and the same negation) are that option.
        if matches
            .iter()
            .all(|(_, o, a, n)| std::ptr::eq(*o, first.1) && *a == first.2 && *n == first.3)
        {
            return Ok((first.1, first.2, first.3));
        }
        Err(OptError::Ambiguous {
            word: word.to_owned(),
            candidates: matches.iter().map(|(l, ..)| format!("--{l}")).collect(),
        })
    }

    /// A cluster of short options at `i`: how many words it takes.
    fn short<'a>(
        &'a self,
        cluster: &str,
        args: &[Word],
        i: usize,
        out: &mut Parsed<'a>,
    ) -> Result<usize, OptError> {
        let word = &args[i].text;
        for (pos, c) in cluster.char_indices() {
            let Some((opt, arg)) = self
                .opts
                .iter()
                .find_map(|o| o.short.iter().find(|(s, _)| *s == c).map(|(_, a)| (o, *a)))
            else {
                return Err(OptError::Unknown {
                    word: format!("-{c}"),
                });
            };
            let rest = &cluster[pos + c.len_utf8()..];
            match arg {
                Arg::None => out.found.push(Found {
                    opt,
                    spelled: format!("-{c}"),
                    value: None,
                    negated: false,
                    index: i,
                }),
                Arg::Optional => {
                    out.found.push(Found {
                        opt,
                        spelled: format!("-{c}"),
                        value: (!rest.is_empty()).then(|| Word {
                            text: rest.to_owned(),
                            ..args[i].clone()
                        }),
                        negated: false,
                        index: i,
                    });
                    return Ok(1);
                }
                Arg::Required => {
                    if rest.is_empty() {
                        let Some(next) = args.get(i + 1) else {
                            return Err(OptError::MissingValue { word: word.clone() });
                        };
                        out.found.push(Found {
                            opt,
                            spelled: format!("-{c}"),
                            value: Some(next.clone()),
                            negated: false,
                            index: i,
                        });
                        return Ok(2);
                    }
                    out.found.push(Found {
                        opt,
                        spelled: format!("-{c}"),
                        value: Some(Word {
                            text: rest.to_owned(),
                            ..args[i].clone()
                        }),
                        negated: false,
                        index: i,
                    });
                    return Ok(1);
                }
            }
        }
        Ok(1)
    }
}

/// One option found in the arguments.
#[derive(Debug, Clone)]
pub struct Found<'a> {
    /// The option
    pub opt: &'a Opt,
    /// How it was written (`--outp=x`, `-o`)
    pub spelled: String,
    /// Its value, if it took one
    pub value: Option<Word>,
    /// A `--no-` form (git)
    pub negated: bool,
    /// The index of its word in the arguments
    pub index: usize,
}

impl Found<'_> {
    /// Whether the option has this effect (a negation has none).
    pub fn has(&self, effect: Effect) -> bool {
        !self.negated && self.opt.has(effect)
    }
}

/// A program's arguments, parsed.
#[derive(Debug, Clone)]
pub struct Parsed<'a> {
    /// The options, in order
    pub found: Vec<Found<'a>>,
    /// The operands, with their indices
    pub operands: Vec<(usize, Word)>,
    /// Where the options stopped (tables that stop at their first operand: where the
    /// command of a wrapper starts); the length of the arguments otherwise
    pub rest: usize,
    /// Whether `--` ended the options
    pub dashdash: bool,
}

impl Parsed<'_> {
    /// Whether any option found has this effect.
    pub fn any(&self, effect: Effect) -> bool {
        self.found.iter().any(|f| f.has(effect))
    }

    /// The first option with this effect.
    pub fn first(&self, effect: Effect) -> Option<&Found<'_>> {
        self.found.iter().find(|f| f.has(effect))
    }
}

/// Why a program's arguments could not be parsed as the program parses them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OptError {
    /// An option the program's table does not list
    Unknown {
        /// The word
        word: String,
    },
    /// A prefix of more than one long option
    Ambiguous {
        /// The word
        word: String,
        /// The options it could be
        candidates: Vec<String>,
    },
    /// An option that needs a value at the end of the words
    MissingValue {
        /// The word
        word: String,
    },
    /// `--flag=value` for a flag
    UnexpectedValue {
        /// The word
        word: String,
    },
    /// A word only known when the command runs, where an option may stand
    Computed {
        /// The word's source text
        word: String,
    },
}

impl OptError {
    /// The word the error is about.
    pub fn word(&self) -> &str {
        match self {
            OptError::Unknown { word }
            | OptError::Ambiguous { word, .. }
            | OptError::MissingValue { word }
            | OptError::UnexpectedValue { word }
            | OptError::Computed { word } => word,
        }
    }
}

impl std::fmt::Display for OptError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OptError::Unknown { word } => write!(f, "`{word}` is not an option the analysis knows"),
            OptError::Ambiguous { word, candidates } => write!(
                f,
                "`{word}` is an ambiguous abbreviation ({})",
                candidates.join(", ")
            ),
            OptError::MissingValue { word } => write!(f, "`{word}` needs a value"),
            OptError::UnexpectedValue { word } => write!(f, "`{word}` takes no value"),
            OptError::Computed { word } => write!(
                f,
                "`{word}` is only known when the command runs and may be an option"
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(line: &str) -> Vec<Word> {
        line.split_whitespace().map(Word::plain).collect()
    }

    const SORT: &str = "
-o= --output= write
--compress-program= run
-k= --key=
-u --unique
--check=?
-c
-C
-r --reverse
-R --random-sort
--random-source= read
";

    /// `(args, options found as "name[=value]", operands)` or the error's word.
    fn check(table: &Table, args: &str, expected: Result<(&[&str], &[&str]), &str>) {
        let w = words(args);
        let got = table.parse_args(&w).map(|p| {
            (
                p.found
                    .iter()
                    .map(|f| match &f.value {
                        Some(v) => format!("{}={}", f.opt.name(), v.text),
                        None if f.negated => format!("no:{}", f.opt.name()),
                        None => f.opt.name(),
                    })
                    .collect::<Vec<_>>(),
                p.operands
                    .iter()
                    .map(|(_, w)| w.text.clone())
                    .collect::<Vec<_>>(),
            )
        });
        match (got, expected) {
            (Ok((o, a)), Ok((eo, ea))) => {
                assert_eq!(o, eo, "{args}");
                assert_eq!(a, ea, "{args}");
            }
            (Err(e), Err(word)) => assert_eq!(e.word(), word, "{args}: {e}"),
            (got, expected) => panic!("{args}: {got:?}, expected {expected:?}"),
        }
    }

    #[test]
    fn getopt_long_rules() {
        let t = Table::parse(SORT, Style::default()).unwrap_or_default();
        check(&t, "-u f", Ok((&["--unique"], &["f"])));
        check(&t, "--outp=x f", Ok((&["--output=x"], &["f"])));
        check(&t, "--outp x f", Ok((&["--output=x"], &["f"])));
        check(&t, "--o x", Ok((&["--output=x"], &[])));
        check(
            &t,
            "--compress-prog=sh",
            Ok((&["--compress-program=sh"], &[])),
        );
        check(&t, "-uox f", Ok((&["--unique", "--output=x"], &["f"])));
        check(&t, "-uo x f", Ok((&["--unique", "--output=x"], &["f"])));
        check(&t, "f -u", Ok((&["--unique"], &["f"])));
        check(&t, "-- -u", Ok((&[], &["-u"])));
        check(&t, "- -u", Ok((&["--unique"], &["-"])));
        check(&t, "--check f", Ok((&["--check"], &["f"])));
        check(&t, "--check=quiet f", Ok((&["--check=quiet"], &["f"])));
        check(&t, "--r", Err("--r"));
        check(&t, "--ra", Err("--ra"));
        check(&t, "--rev", Ok((&["--reverse"], &[])));
        check(&t, "--x", Err("--x"));
        check(&t, "-x", Err("-x"));
        check(&t, "-o", Err("-o"));
        check(&t, "--unique=1", Err("--unique=1"));
    }

    #[test]
    fn stop_at_operand_and_digits() {
        let t = Table::parse(
            "-n= --adjustment=\n",
            Style {
                stop_at_operand: true,
                digits: true,
                ..Style::default()
            },
        )
        .unwrap_or_default();
        let w = words("-n 5 rm -n v");
        let p = t.parse_args(&w).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(p.rest, 2);
        let w = words("-10 --adj=3 rm v");
        let p = t.parse_args(&w).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(p.rest, 2);
        let w = words("-- rm");
        let p = t.parse_args(&w).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(p.rest, 1);
    }

    #[test]
    fn git_negations() {
        let t = Table::parse(
            "--ext-diff run\n--no-index read\n--textconv opaque\n--stat=?\n",
            Style {
                negations: true,
                ..Style::default()
            },
        )
        .unwrap_or_default();
        check(&t, "--no-ext-diff", Ok((&["no:--ext-diff"], &[])));
        check(&t, "--ext", Ok((&["--ext-diff"], &[])));
        check(&t, "--no-ext", Ok((&["no:--ext-diff"], &[])));
        check(&t, "--index", Ok((&["no:--no-index"], &[])));
        check(&t, "--no-i", Ok((&["--no-index"], &[])));
        check(&t, "--no-", Err("--no-"));
        check(&t, "--no-ext-diff=x", Err("--no-ext-diff=x"));
    }

    #[test]
    fn tables_reject_bad_lines() {
        for bad in ["-ab", "--", "-a frob", "-a\n-a", "read"] {
            assert!(Table::parse(bad, Style::default()).is_err(), "{bad}");
        }
    }
}
