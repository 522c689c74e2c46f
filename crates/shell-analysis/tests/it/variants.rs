//! Variants generated from the option tables, not from a hand list: every option that
//! writes, runs a program or runs what the analysis cannot see, in every spelling its
//! program accepts (each unique prefix of its long names, `--opt=value`, `--opt value`,
//! short options alone, attached and bundled), and every wrapper of the tables in front of
//! a denied program. The classification must never call one read-only, and a deny rule for
//! `rm` must see `rm` in every one that runs a command.

use shell_analysis::{Arg, Effect, Opt, Verdict, analyse, classify, option_table, tabled_programs};

/// The spellings of one option with a value: `--name=VALUE`, `--name VALUE` (when the value
/// is required) for every unique prefix of each long name, and `-xVALUE`, `-x VALUE`,
/// `-ax VALUE`-style bundles for short names, as the program's style reads them (clap's
/// `-x=VALUE`, tree's value after the bundle, a command's words up to `;`, ps's BSD
/// letters).
pub fn spellings(program: &str, opt: &Opt, value: &str) -> Vec<String> {
    let Some(table) = option_table(program) else {
        return Vec::new();
    };
    let style = table.style;
    // A command given as words (`fd -x rm v ';'`), or attached as its first word.
    let first = value.split(' ').next().unwrap_or(value);
    let words = format!("{value} ';'");
    // A flag of the same program to bundle with.
    let flag = table.opts.iter().find_map(|o| {
        o.effects
            .is_empty()
            .then(|| o.short.iter().find(|(_, a)| *a == Arg::None))
            .flatten()
    });
    let mut out = Vec::new();
    for (long, arg) in &opt.long {
        // Every prefix that names this option and no other.
        for len in 1..=long.len() {
            let prefix = &long[..len];
            if !long.is_char_boundary(len) {
                continue;
            }
            let others = table.opts.iter().any(|o| {
                !std::ptr::eq(o, opt)
                    && o.long
                        .iter()
                        .any(|(l, _)| l.starts_with(prefix) && l != prefix)
                    || !std::ptr::eq(o, opt) && o.long.iter().any(|(l, _)| l == prefix)
            }) || (table.style.negations
                && table.opts.iter().any(|o| {
                    o.long.iter().any(|(l, _)| {
                        format!("no-{l}").starts_with(prefix)
                            || l.strip_prefix("no-").is_some_and(|b| b.starts_with(prefix))
                    })
                }));
            let exact = len == long.len();
            if !exact && (others || table.style.exact) {
                continue;
            }
            match arg {
                Arg::None => out.push(format!("--{prefix}")),
                Arg::Optional => {
                    out.push(format!("--{prefix}='{value}'"));
                    out.push(format!("--{prefix}"));
                }
                Arg::Required => {
                    out.push(format!("--{prefix}='{value}'"));
                    out.push(format!("--{prefix} '{value}'"));
                }
                Arg::Words => {
                    out.push(format!("--{prefix}={first}"));
                    out.push(format!("--{prefix} {words}"));
                }
            }
        }
    }
    for (c, arg) in &opt.short {
        match arg {
            Arg::None => out.push(format!("-{c}")),
            Arg::Optional => {
                out.push(format!("'-{c}{value}'"));
                out.push(format!("-{c}"));
                if style.equals_short {
                    out.push(format!("'-{c}={value}'"));
                }
            }
            Arg::Required if style.next_word_values => {
                out.push(format!("-{c} '{value}'"));
                if let Some(flag) = flag {
                    out.push(format!("-{}{c} '{value}'", flag.0));
                    out.push(format!("-{c}{} '{value}'", flag.0));
                }
            }
            Arg::Required => {
                out.push(format!("-{c} '{value}'"));
                out.push(format!("'-{c}{value}'"));
                if style.equals_short {
                    out.push(format!("'-{c}={value}'"));
                }
                // Bundled behind a flag of the same program, when it has one.
                if let Some(flag) = flag {
                    out.push(format!("-{}{c} '{value}'", flag.0));
                }
            }
            Arg::Words => {
                out.push(format!("-{c} {words}"));
                out.push(format!("-{c}{first}"));
                out.push(format!("-{c}={first}"));
                if let Some(flag) = flag {
                    out.push(format!("-{}{c} {words}", flag.0));
                }
            }
        }
    }
    for (c, arg) in &opt.bsd {
        match arg {
            Arg::None => {
                out.push(format!("{c}"));
                out.push(format!("ax{c}"));
                out.push(format!("{c}ww"));
            }
            _ => {
                out.push(format!("{c} '{value}'"));
                out.push(format!("'{c}{value}'"));
            }
        }
    }
    out
}

/// The command line for a program (`git grep` becomes `git grep …`).
fn line(program: &str, spelled: &str, tail: &str) -> String {
    format!("{program} {spelled} {tail}")
}

/// Every option of every table that writes, runs a program, runs what the analysis
/// cannot see, or is not a plain read, in every spelling: never read-only.
#[test]
fn options_that_act_are_never_read_only() {
    let mut per_effect = std::collections::BTreeMap::<&str, usize>::new();
    for program in tabled_programs() {
        let table = option_table(program).expect("a table");
        for opt in &table.opts {
            let effect = [
                (Effect::Write, "write"),
                (Effect::Run, "run"),
                (Effect::Opaque, "opaque"),
                (Effect::Unsafe, "unsafe"),
            ]
            .into_iter()
            .find(|(e, _)| opt.has(*e));
            let Some((_, label)) = effect else {
                continue;
            };
            for s in spellings(program, opt, "rm v") {
                let cmd = line(program, &s, "f");
                assert_ne!(classify(&cmd), Verdict::ReadOnly, "{cmd}");
                *per_effect.entry(label).or_default() += 1;
            }
        }
    }
    eprintln!("variants per effect: {per_effect:?}");
    for (label, n) in &per_effect {
        assert!(*n >= 50, "only {n} variants of `{label}` options");
    }
}

/// Every option whose value is a command, in every spelling, with `rm v` as the command:
/// the analysis finds `rm`.
#[test]
fn commands_in_option_values_are_found() {
    let mut n = 0;
    for program in tabled_programs() {
        let table = option_table(program).expect("a table");
        for opt in table.opts.iter().filter(|o| o.has(Effect::Run)) {
            for s in spellings(program, opt, "rm v") {
                // Wrappers stop at their command; give them one.
                let value =
                    if program == "tar" && opt.long.iter().any(|(l, _)| l == "checkpoint-action") {
                        s.replace("rm v", "exec=rm v")
                    } else {
                        s
                    };
                let cmd = line(program, &value, "f");
                let a = analyse(&cmd).unwrap_or_else(|e| panic!("{cmd}: {e}"));
                // A command given as words attached to its option is its first word alone.
                let hit = a
                    .find_match(|t| t.starts_with("rm v") || t == "rm" || t.starts_with("rm "))
                    .is_some()
                    || !a.unresolved().is_empty();
                assert!(hit, "{cmd}: rm not found");
                n += 1;
            }
        }
    }
    assert!(n >= 50, "only {n} variants");
}

/// Unknown options and ambiguous prefixes of every table: never read-only, always
/// unresolved.
#[test]
fn unknown_and_ambiguous_options_are_unresolved() {
    let mut n = 0;
    for program in tabled_programs() {
        // `find`'s expression has its own checks; sub-subcommands (`git stash show`) are
        // read-only forms, not where git looks its options up.
        if matches!(program, "find" | "time" | "builtin" | "exec" | "command")
            || program.split(' ').count() > 2
        {
            continue;
        }
        let table = option_table(program).expect("a table");
        let mut words = vec!["--zz-not-an-option".to_owned()];
        // Every ambiguous prefix: the common prefix of two long names that is neither.
        for a in &table.opts {
            for b in &table.opts {
                if std::ptr::eq(a, b) || table.style.exact {
                    continue;
                }
                for (la, _) in &a.long {
                    for (lb, _) in &b.long {
                        let common: String = la
                            .chars()
                            .zip(lb.chars())
                            .take_while(|(x, y)| x == y)
                            .map(|(x, _)| x)
                            .collect();
                        let named = table
                            .opts
                            .iter()
                            .any(|o| o.long.iter().any(|(l, _)| *l == common));
                        if !common.is_empty() && !named && !table.style.negations {
                            words.push(format!("--{common}"));
                        }
                    }
                }
            }
        }
        words.sort();
        words.dedup();
        for w in words.iter().take(8) {
            let cmd = format!("{program} {w} f");
            let v = classify(&cmd);
            assert!(matches!(v, Verdict::Unresolved(_)), "{cmd}: {v:?}");
            n += 1;
        }
    }
    assert!(n >= 50, "only {n} variants");
}
