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
//! `--opt=value` or the next word), one ending in `=?` an optional value (attached only), one
//! ending in `=;` a command's words (clap's `num_args(1..)` ended by `;`: `fd -x CMD ARGS… ;`,
//! or the attached value alone: `fd --exec=CMD`). The words after the names are effects.
//! `+x` is a BSD option of `ps`: the letter `x` in a word without a dash (`ps aux`), with the
//! same value rules as a short option. A word that is not in the table is an error
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
    /// The words up to a `;` word (or the end), whatever they look like: a command and its
    /// arguments (`fd -x rm -f {} ;`); attached, the one value (`fd --exec=rm`)
    Words,
}

/// One option of a table, under all its names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Opt {
    /// Short names (`-a` → `a`), each with what it takes
    pub short: Vec<(char, Arg)>,
    /// Long names without the dashes, each with what it takes
    pub long: Vec<(String, Arg)>,
    /// BSD options (`ps aux`: letters of a word without a dash), each with what it takes
    pub bsd: Vec<(char, Arg)>,
    /// What it does
    pub effects: BTreeSet<Effect>,
}

impl Opt {
    /// Its first name as written (`--all`, or `-a` when it has no long name).
    pub fn name(&self) -> String {
        match (self.long.first(), self.short.first(), self.bsd.first()) {
            (Some((l, _)), ..) => format!("--{l}"),
            (None, Some((s, _)), _) => format!("-{s}"),
            (None, None, Some((b, _))) => b.to_string(),
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
    /// clap and lexopt (`fd`, `rg`): `-x=VALUE` gives the value `VALUE` (getopt's is `=VALUE`)
    pub equals_short: bool,
    /// tree: a short option's value is always the next unused word, also inside a bundle,
    /// and the bundle goes on after it (`-La 2` is `-L 2 -a`; `-L2` is `-L` missing its value
    /// and then `-2`)
    pub next_word_values: bool,
    /// procps `ps`: a word without a dash that starts with a letter is a bundle of BSD
    /// options (`aux`); one that starts with a digit is an operand (a process ID)
    pub bsd: bool,
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
                bsd: Vec::new(),
                effects: BTreeSet::new(),
            };
            for word in line.split_whitespace() {
                let (name, arg) = if let Some(n) = word.strip_suffix("=?") {
                    (n, Arg::Optional)
                } else if let Some(n) = word.strip_suffix("=;") {
                    (n, Arg::Words)
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
                } else if let Some(letter) = name.strip_prefix('+') {
                    let mut chars = letter.chars();
                    match (chars.next(), chars.next()) {
                        (Some(c), None) => opt.bsd.push((c, arg)),
                        _ => {
                            return Err(TableError(format!(
                                "`{line}`: `{word}` is not a BSD option"
                            )));
                        }
                    }
                } else if let Some(effect) = Effect::parse(word) {
                    opt.effects.insert(effect);
                } else {
                    return Err(TableError(format!("`{line}`: unknown effect `{word}`")));
                }
            }
            if opt.short.is_empty() && opt.long.is_empty() && opt.bsd.is_empty() {
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
            for (b, _) in &o.bsd {
                if !seen.insert(format!("+{b}")) {
                    return Err(TableError(format!("+{b} is listed twice")));
                }
            }
        }
        Ok(table)
    }

    /// Whether the table lists this name (`-a`, `--all`, a BSD letter `a`), exactly.
    pub fn knows(&self, name: &str) -> bool {
        let mut letters = name.chars();
        if let (Some(c), None) = (letters.next(), letters.next())
            && c != '-'
        {
            return self.opts.iter().any(|o| o.bsd.iter().any(|(b, _)| *b == c));
        }
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
            if self.style.bsd && t.starts_with(|c: char| c.is_ascii_alphabetic()) {
                i += self.bsd(args, i, &mut out)?;
                continue;
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
                words: Vec::new(),
                negated: true,
                index: i,
            });
            return Ok(1);
        }
        let (value, words, used) = match (arg, value) {
            (Arg::None, Some(_)) => return Err(OptError::UnexpectedValue { word: word.clone() }),
            (Arg::None, None) | (Arg::Optional, None) => (None, Vec::new(), 1),
            (_, Some(v)) => {
                let v = Word {
                    text: v.to_owned(),
                    ..args[i].clone()
                };
                let words = if arg == Arg::Words {
                    vec![v.clone()]
                } else {
                    Vec::new()
                };
                (Some(v), words, 1)
            }
            (Arg::Required, None) => match args.get(i + 1) {
                Some(next) => (Some(next.clone()), Vec::new(), 2),
                None => return Err(OptError::MissingValue { word: word.clone() }),
            },
            (Arg::Words, None) => {
                let (words, used) = terminated(args, i + 1, word)?;
                (words.first().cloned(), words, 1 + used)
            }
        };
        out.found.push(Found {
            opt,
            spelled: word.clone(),
            value,
            words,
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
        // Words after the cluster taken as values (tree's next-word values).
        let mut taken = 0;
        let found = |opt: &'a Opt, c: char, value: Option<Word>, words: Vec<Word>| Found {
            opt,
            spelled: format!("-{c}"),
            value,
            words,
            negated: false,
            index: i,
        };
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
            // clap and lexopt take `-x=VALUE` as `VALUE`.
            let attached = match rest.strip_prefix('=') {
                Some(v) if self.style.equals_short && arg != Arg::None => v,
                _ => rest,
            };
            let attached_word = || Word {
                text: attached.to_owned(),
                ..args[i].clone()
            };
            match arg {
                Arg::None => out.found.push(found(opt, c, None, Vec::new())),
                Arg::Required if self.style.next_word_values => {
                    taken += 1;
                    let Some(next) = args.get(i + taken) else {
                        return Err(OptError::MissingValue {
                            word: format!("-{c}"),
                        });
                    };
                    out.found
                        .push(found(opt, c, Some(next.clone()), Vec::new()));
                }
                Arg::Optional => {
                    let value = (!rest.is_empty()).then(attached_word);
                    out.found.push(found(opt, c, value, Vec::new()));
                    return Ok(1);
                }
                Arg::Required => {
                    if rest.is_empty() {
                        let Some(next) = args.get(i + 1) else {
                            return Err(OptError::MissingValue { word: word.clone() });
                        };
                        out.found
                            .push(found(opt, c, Some(next.clone()), Vec::new()));
                        return Ok(2);
                    }
                    out.found
                        .push(found(opt, c, Some(attached_word()), Vec::new()));
                    return Ok(1);
                }
                Arg::Words => {
                    if rest.is_empty() {
                        let (words, used) = terminated(args, i + 1, word)?;
                        out.found.push(found(opt, c, words.first().cloned(), words));
                        return Ok(1 + used);
                    }
                    let v = attached_word();
                    out.found.push(found(opt, c, Some(v.clone()), vec![v]));
                    return Ok(1);
                }
            }
        }
        Ok(1 + taken)
    }
}

impl Table {
    /// A word of BSD options at `i` (`ps aux`, `ps -o` as `o FORMAT`): how many words it
    /// takes. A digit ends the bundle: the rest is a list of process IDs.
    fn bsd<'a>(&'a self, args: &[Word], i: usize, out: &mut Parsed<'a>) -> Result<usize, OptError> {
        let word = &args[i].text;
        for (pos, c) in word.char_indices() {
            if c.is_ascii_digit() {
                return Ok(1);
            }
            let Some((opt, arg)) = self
                .opts
                .iter()
                .find_map(|o| o.bsd.iter().find(|(b, _)| *b == c).map(|(_, a)| (o, *a)))
            else {
                return Err(OptError::Unknown {
                    word: c.to_string(),
                });
            };
            let rest = &word[pos + c.len_utf8()..];
            let found = |value: Option<Word>| Found {
                opt,
                spelled: c.to_string(),
                value,
                words: Vec::new(),
                negated: false,
                index: i,
            };
            if arg == Arg::None {
                out.found.push(found(None));
                continue;
            }
            if !rest.is_empty() {
                out.found.push(found(Some(Word {
                    text: rest.to_owned(),
                    ..args[i].clone()
                })));
                return Ok(1);
            }
            let Some(next) = args.get(i + 1) else {
                return Err(OptError::MissingValue {
                    word: c.to_string(),
                });
            };
            out.found.push(found(Some(next.clone())));
            return Ok(2);
        }
        Ok(1)
    }
}

/// The words from `from` up to a `;` word (which is used too) or the end, and how many
/// words that is; at least one is needed.
fn terminated(args: &[Word], from: usize, word: &str) -> Result<(Vec<Word>, usize), OptError> {
    let rest = args.get(from..).unwrap_or_default();
    let end = rest
        .iter()
        .position(|w| w.known && w.text == ";")
        .unwrap_or(rest.len());
    if end == 0 {
        return Err(OptError::MissingValue {
            word: word.to_owned(),
        });
    }
    let used = if end < rest.len() { end + 1 } else { end };
    Ok((rest[..end].to_vec(), used))
}

/// One option found in the arguments.
#[derive(Debug, Clone)]
pub struct Found<'a> {
    /// The option
    pub opt: &'a Opt,
    /// How it was written (`--outp=x`, `-o`)
    pub spelled: String,
    /// Its value, if it took one (the first word of an [`Arg::Words`] value)
    pub value: Option<Word>,
    /// Every word of an [`Arg::Words`] value (a command and its arguments); empty otherwise
    pub words: Vec<Word>,
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
    fn clap_values_and_command_words() {
        let t = Table::parse(
            "-x=; --exec=; run\n-H --hidden\n-e= --extension=\n-c=? --color=?\n",
            Style {
                exact: true,
                equals_short: true,
                ..Style::default()
            },
        )
        .unwrap_or_default();
        check(&t, "-x rm -f {} ; a", Ok((&["--exec=rm"], &["a"])));
        check(&t, "-x rm -- a", Ok((&["--exec=rm"], &[])));
        check(&t, "-xrm a", Ok((&["--exec=rm"], &["a"])));
        check(&t, "-x=rm a", Ok((&["--exec=rm"], &["a"])));
        check(&t, "--exec=rm a", Ok((&["--exec=rm"], &["a"])));
        check(&t, "-Hx rm a", Ok((&["--hidden", "--exec=rm"], &[])));
        check(&t, "-e=rs a", Ok((&["--extension=rs"], &["a"])));
        check(&t, "-c=never", Ok((&["--color=never"], &[])));
        check(&t, "-x ; a", Err("-x"));
        check(&t, "-x", Err("-x"));
        check(&t, "--ex rm", Err("--ex"));
        let w = words("-x rm -f {} ; -x echo");
        let p = t.parse_args(&w).unwrap_or_else(|e| panic!("{e}"));
        let texts = |f: &Found<'_>| f.words.iter().map(|w| w.text.clone()).collect::<Vec<_>>();
        assert_eq!(texts(&p.found[0]), ["rm", "-f", "{}"]);
        assert_eq!(texts(&p.found[1]), ["echo"]);
    }

    #[test]
    fn next_word_values() {
        let t = Table::parse(
            "-L=\n-o= write\n-a\n",
            Style {
                exact: true,
                next_word_values: true,
                ..Style::default()
            },
        )
        .unwrap_or_default();
        check(&t, "-La 2 d", Ok((&["-L=2", "-a"], &["d"])));
        check(&t, "-Lo 2 out d", Ok((&["-L=2", "-o=out"], &["d"])));
        check(&t, "-aL 2", Ok((&["-a", "-L=2"], &[])));
        check(&t, "-L2 d", Err("-2"));
        check(&t, "-L", Err("-L"));
    }

    #[test]
    fn tables_reject_bad_lines() {
        for bad in ["-ab", "--", "-a frob", "-a\n-a", "read"] {
            assert!(Table::parse(bad, Style::default()).is_err(), "{bad}");
        }
    }
}
