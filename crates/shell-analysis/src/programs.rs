//! Which programs a simple command runs: the command itself, the command a wrapper runs
//! (`env`, `sudo`, `timeout`, `nsenter`, `xargs`, `find -exec`, …), the shell code a shell,
//! `eval`, `trap`, `su -c` or `git -c alias.x=!…` runs, and the option values that name
//! programs (`tar --to-command`, `rsync -e`, `git rebase --exec`, …). What cannot be known
//! before the command runs is reported as opaque: code from standard input, inline programs
//! of interpreters, computed command names, aliases.
//!
//! Deny rules name programs. A program that is allowed to run arbitrary code of its own — a
//! script file run by an interpreter, a build tool running its recipes — can do what a
//! denied program does; that is a limit of matching rules against a command line, and the
//! sandbox is what holds there.

use std::path::Path;

use crate::getopt::{Effect, OptError, Table};
use crate::parse::{SimpleCommand, Word};
use crate::tables;

/// What one simple command runs besides itself.
#[derive(Debug, Default)]
pub struct Unwrapped {
    /// Commands a wrapper runs, as argv words
    pub inner: Vec<SimpleCommand>,
    /// Shell code the command runs, with what runs it (`bash -c`, `eval`, …)
    pub scripts: Vec<(String, String)>,
    /// Why the programs cannot be known
    pub opaque: Vec<String>,
    /// Why the command asks whatever the rules say
    pub issues: Vec<String>,
    /// Writes that always need a person (`git config` changes the repository's config)
    pub safety: Vec<String>,
    /// Whether this is a wrapper whose every suffix deny rules are also matched against
    pub wrapper: bool,
    /// Shell script files the command runs (`bash FILE`, `source FILE`), with what runs them:
    /// the permission check reads and checks them as shell code
    pub script_files: Vec<(Word, String)>,
    /// A wrapper option said the command runs through a shell (`sudo -s`)
    pub shell: bool,
    /// Why the command runs code of the project that the line does not name (`make`,
    /// `npm test`, `cargo build`): never read-only, unresolved for deny rules, but a
    /// person's allow rule for the command covers it
    pub project: Vec<String>,
    /// The package.json script a package manager runs (`npm test` → `test`): the host reads
    /// it and checks it as shell code
    pub package_script: Option<String>,
}

/// The base name of a command word (`/usr/bin/rm` → `rm`).
pub fn base_name(word: &str) -> &str {
    Path::new(word)
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or(word)
}

/// Shells: `-c CODE` is shell code; a file argument is a script; nothing reads standard input.
const SHELLS: &[&str] = &[
    "sh", "bash", "dash", "zsh", "ksh", "ksh93", "mksh", "pdksh", "yash", "posh", "fish", "rbash",
    "ash", "hush", "tcsh", "csh",
];

/// Interpreters and the options that give them an inline program.
const INTERPRETERS: &[(&str, &[&str])] = &[
    ("python", &["-c"]),
    ("python2", &["-c"]),
    ("python3", &["-c"]),
    ("pypy", &["-c"]),
    ("pypy3", &["-c"]),
    ("perl", &["-e", "-E"]),
    ("ruby", &["-e"]),
    ("node", &["-e", "--eval", "-p", "--print"]),
    ("nodejs", &["-e", "--eval", "-p", "--print"]),
    ("bun", &["-e", "--eval", "-p", "--print"]),
    ("php", &["-r", "-B", "-R", "-E", "-F"]),
    ("lua", &["-e"]),
    ("luajit", &["-e"]),
    ("Rscript", &["-e"]),
    ("R", &["-e"]),
    ("julia", &["-e", "-E", "--eval", "--print"]),
    ("osascript", &["-e"]),
    ("tclsh", &[]),
    ("wish", &[]),
    ("expect", &["-c"]),
    ("guile", &["-c", "-e"]),
    ("racket", &["-e", "--eval"]),
    ("elixir", &["-e", "--eval"]),
    ("erl", &["-eval"]),
    ("irb", &[]),
    ("jshell", &[]),
    ("sqlite3", &["-cmd"]),
];

/// Options of interpreters that take a value (so the value is not taken for the script).
const INTERPRETER_VALUES: &[&str] = &[
    "-m",
    "-W",
    "-X",
    "-Q",
    "-I",
    "-M",
    "-r",
    "--require",
    "--import",
    "-x",
    "-i",
    "-l",
    "-d",
    "-t",
];

/// awk dialects: the program is the first operand unless `-f` names a file.
const AWKS: &[&str] = &["awk", "gawk", "mawk", "nawk", "original-awk", "busybox-awk"];

/// Editors and tools whose options run their own commands (which can start programs).
const COMMAND_OPTIONS: &[(&str, &[&str])] = &[
    (
        "vi",
        &["-c", "--cmd", "-S", "+", "-e", "-E", "-s", "-es", "-Es"],
    ),
    (
        "vim",
        &["-c", "--cmd", "-S", "+", "-e", "-E", "-s", "-es", "-Es"],
    ),
    (
        "nvim",
        &[
            "-c", "--cmd", "-S", "+", "-l", "-e", "-E", "-s", "-es", "-Es",
        ],
    ),
    (
        "view",
        &["-c", "--cmd", "-S", "+", "-e", "-E", "-s", "-es", "-Es"],
    ),
    (
        "emacs",
        &[
            "--eval",
            "-l",
            "--load",
            "-f",
            "--funcall",
            "--script",
            "-x",
        ],
    ),
    (
        "gdb",
        &["-ex", "--eval-command", "-x", "--command", "-iex", "-ix"],
    ),
    ("lldb", &["-o", "--one-line", "-s", "--source", "-O"]),
];

/// Programs that always run commands they read from elsewhere (standard input, a job
/// table, a terminal session), so what they run is never on the command line.
const ALWAYS_OPAQUE: &[(&str, &str)] = &[
    ("at", "`at` schedules commands read from standard input"),
    (
        "batch",
        "`batch` schedules commands read from standard input",
    ),
    ("crontab", "`crontab` installs commands for later"),
    ("parallel", "GNU `parallel` builds commands from its input"),
    ("tmux", "`tmux` runs commands in a terminal session"),
    ("screen", "`screen` runs commands in a terminal session"),
    (
        "newgrp",
        "`newgrp` starts a shell that reads standard input",
    ),
    (
        "coproc",
        "`coproc` runs a command the checker cannot delimit",
    ),
    ("alias", "an alias definition"),
    ("unalias", "an alias change"),
    ("hash", "`hash` changes which program a name runs"),
    ("enable", "`enable` loads or replaces builtins"),
    ("bind", "`bind -x` runs commands"),
    ("complete", "`complete -C` runs commands"),
    ("compgen", "`compgen -C` runs commands"),
    ("fc", "`fc` re-runs commands from the history"),
    ("history", "`history` can re-run commands"),
    (
        "ed",
        "`ed` runs commands read from standard input, `!` included",
    ),
    (
        "ex",
        "`ex` runs commands read from standard input, `!` included",
    ),
    ("dc", "`dc` runs `!` commands"),
    (
        "sqlite3",
        "`sqlite3` runs `.shell` commands from its arguments or input",
    ),
    ("mysql", "`mysql` runs `\\!` commands from its input"),
    ("mariadb", "`mariadb` runs `\\!` commands from its input"),
    (
        "psql",
        "`psql` runs `\\!` commands from its arguments or input",
    ),
    ("sftp", "`sftp` runs `!` commands from its input"),
    ("ftp", "`ftp` runs `!` commands from its input"),
    ("lftp", "`lftp` runs `!` commands from its input"),
    ("gdb", "`gdb` runs `shell` commands"),
    ("lldb", "`lldb` runs `platform shell` commands"),
    ("expect", "`expect` runs `spawn` and `exec` commands"),
    ("socat", "`socat` can run `EXEC:` and `SYSTEM:` addresses"),
];

/// How a wrapper's words are laid out.
struct Spec {
    names: &'static [&'static str],
    /// Short options that take a value (the rest of the word, or the next word)
    short_values: &'static str,
    /// Long options that take the next word as their value when written without `=`
    long_values: &'static [&'static str],
    /// Operands before the command (`timeout DURATION`, `chroot DIR`, `flock FILE`)
    operands: usize,
    /// Options whose value is shell code
    script_options: &'static [&'static str],
    /// Options after which no command follows (`command -v`, `taskset -p`)
    no_command: &'static [&'static str],
    /// Without a command the wrapper starts an interactive shell (`sudo -s`, `chroot DIR`)
    bare_shell: bool,
    /// The words after the options are joined into shell code (`watch`, `sg`, `ssh HOST`)
    joined: bool,
}

const fn spec(names: &'static [&'static str]) -> Spec {
    Spec {
        names,
        short_values: "",
        long_values: &[],
        operands: 0,
        script_options: &[],
        no_command: &[],
        bare_shell: false,
        joined: false,
    }
}

/// Programs that run their arguments as a command (every one found on a Debian system that
/// does so, plus common ones from other distributions).
const WRAPPERS: &[Spec] = &[
    Spec {
        short_values: "uCSa",
        long_values: &["--unset", "--chdir", "--split-string", "--argv0"],
        script_options: &["-S", "--split-string"],
        ..spec(&["env"])
    },
    spec(&[
        "nohup",
        "catchsegv",
        "unbuffer",
        "dbus-run-session",
        "torify",
        "caffeinate",
    ]),
    Spec {
        short_values: "n",
        long_values: &["--adjustment"],
        ..spec(&["nice"])
    },
    Spec {
        short_values: "cnpPu",
        long_values: &["--class", "--classdata", "--pid", "--pgid", "--uid"],
        no_command: &["-p", "--pid", "-P", "--pgid", "-u", "--uid"],
        ..spec(&["ionice"])
    },
    Spec {
        short_values: "ioe",
        long_values: &["--input", "--output", "--error"],
        ..spec(&["stdbuf"])
    },
    Spec {
        short_values: "sk",
        long_values: &["--signal", "--kill-after"],
        operands: 1,
        ..spec(&["timeout"])
    },
    Spec {
        short_values: "fo",
        long_values: &["--format", "--output"],
        ..spec(&["time"])
    },
    spec(&["setsid"]),
    Spec {
        short_values: "wEc",
        long_values: &["--timeout", "--wait", "--conflict-exit-code", "--command"],
        operands: 1,
        script_options: &["-c", "--command"],
        ..spec(&["flock"])
    },
    Spec {
        long_values: &["--userspec", "--groups"],
        operands: 1,
        bare_shell: true,
        ..spec(&["chroot"])
    },
    Spec {
        short_values: "tSGrwe",
        long_values: &["--target", "--setuid", "--setgid", "--env"],
        bare_shell: true,
        ..spec(&["nsenter"])
    },
    Spec {
        short_values: "SGRw",
        long_values: &[
            "--map-user",
            "--map-group",
            "--map-users",
            "--map-groups",
            "--setgroups",
            "--setuid",
            "--setgid",
            "--root",
            "--wd",
            "--propagation",
        ],
        bare_shell: true,
        ..spec(&["unshare"])
    },
    Spec {
        operands: 1,
        no_command: &["-p", "--pid"],
        ..spec(&["taskset"])
    },
    Spec {
        long_values: &[
            "--ruid",
            "--euid",
            "--reuid",
            "--rgid",
            "--egid",
            "--regid",
            "--groups",
            "--inh-caps",
            "--ambient-caps",
            "--bounding-set",
            "--securebits",
            "--pdeathsig",
            "--selinux-label",
            "--apparmor-profile",
            "--landlock-access",
            "--landlock-rule",
            "--seccomp-filter",
        ],
        ..spec(&["setpriv"])
    },
    Spec {
        short_values: "ugGcsw",
        long_values: &[
            "--user",
            "--group",
            "--supp-group",
            "--command",
            "--shell",
            "--whitelist-environment",
        ],
        script_options: &["-c", "--command"],
        bare_shell: true,
        ..spec(&["runuser", "su"])
    },
    Spec {
        short_values: "ugCDhprtTUc",
        long_values: &[
            "--user",
            "--group",
            "--close-from",
            "--chdir",
            "--host",
            "--prompt",
            "--role",
            "--type",
            "--command-timeout",
            "--other-user",
        ],
        no_command: &[
            "-l",
            "--list",
            "-v",
            "--validate",
            "-k",
            "-K",
            "-e",
            "--edit",
            "-V",
        ],
        ..spec(&["sudo", "run0", "pkexec", "doas", "sudo-rs"])
    },
    Spec {
        short_values: "a",
        ..spec(&["exec"])
    },
    Spec {
        no_command: &["-v", "-V"],
        ..spec(&["command"])
    },
    spec(&["builtin"]),
    Spec {
        short_values: "TPD",
        long_values: &["--sched-runtime", "--sched-period", "--sched-deadline"],
        operands: 1,
        no_command: &["-p", "--pid", "-m", "--max"],
        ..spec(&["chrt"])
    },
    Spec {
        short_values: "n",
        long_values: &["--interval"],
        joined: true,
        ..spec(&["watch"])
    },
    Spec {
        short_values: "oepsuEabIOSXPU",
        long_values: &["--output", "--trace", "--attach", "--user", "--env"],
        ..spec(&["strace"])
    },
    Spec {
        short_values: "oepusnaADFlLx",
        long_values: &["--output", "--library"],
        ..spec(&["ltrace"])
    },
    spec(&[
        "valgrind", "firejail", "proot", "numactl", "prlimit", "faketime",
    ]),
    Spec {
        short_values: "cEIOBTm",
        long_values: &[
            "--command",
            "--echo",
            "--log-in",
            "--log-out",
            "--log-io",
            "--log-timing",
            "--logging-format",
        ],
        script_options: &["-c", "--command"],
        bare_shell: true,
        ..spec(&["script"])
    },
    Spec {
        short_values: "upHME",
        long_values: &[
            "--unit",
            "--property",
            "--host",
            "--machine",
            "--setenv",
            "--description",
            "--slice",
            "--uid",
            "--gid",
            "--nice",
            "--working-directory",
        ],
        ..spec(&["systemd-run", "systemd-inhibit"])
    },
    Spec {
        short_values: "lsib",
        long_values: &["--lib", "--faked"],
        ..spec(&["fakeroot"])
    },
    Spec {
        short_values: "g",
        ..spec(&["cgexec"])
    },
    Spec {
        short_values: "uUbenlLmdofpcrt",
        ..spec(&["chpst"])
    },
    Spec {
        operands: 1,
        ..spec(&["setarch"])
    },
    spec(&["linux32", "linux64", "i386", "x86_64"]),
    Spec {
        short_values: "nefswp",
        long_values: &[
            "--server-num",
            "--error-file",
            "--auth-file",
            "--server-args",
            "--wait",
        ],
        ..spec(&["xvfb-run"])
    },
    Spec {
        operands: 1,
        joined: true,
        ..spec(&["sg"])
    },
    Spec {
        short_values: "cs",
        script_options: &["-s"],
        ..spec(&["entr"])
    },
    spec(&["flatpak-spawn", "torsocks", "nocache", "eatmydata", "ts"]),
];

/// `git -c KEY=VALUE` keys that never make git run a program.
const INERT_GIT_KEYS: &[&str] = &[
    "user.name",
    "user.email",
    "color.ui",
    "color.diff",
    "color.status",
    "color.branch",
    "core.quotepath",
    "core.autocrlf",
    "core.filemode",
    "core.safecrlf",
    "core.abbrev",
    "init.defaultbranch",
    "advice.detachedhead",
    "log.showsignature",
    "diff.noprefix",
    "diff.renames",
    "pull.rebase",
    "push.default",
    "safe.directory",
    "commit.gpgsign",
    "tag.gpgsign",
    "merge.conflictstyle",
    "column.ui",
    "pager.branch",
];

/// Skips a wrapper's options. Returns where the command starts (`None` when options ran
/// out), and collects script values and whether a no-command option was seen.
fn skip_options(
    words: &[Word],
    spec: &Spec,
    out: &mut Unwrapped,
    name: &str,
) -> (Option<usize>, bool) {
    if let Some(table) = tables::table(name) {
        return skip_with_table(words, table, spec.operands, out, name);
    }
    let mut i = 1;
    let mut operands = spec.operands;
    let mut no_command = false;
    let script = |value: Option<&Word>, out: &mut Unwrapped, opt: &str| match value {
        Some(v) if v.known => out
            .scripts
            .push((v.text.clone(), format!("`{name} {opt}`"))),
        _ => out
            .opaque
            .push(format!("`{name} {opt}` with a computed command")),
    };
    while let Some(w) = words.get(i) {
        let t = w.text.as_str();
        if !w.known {
            if operands > 0 {
                operands -= 1;
                i += 1;
                continue;
            }
            return (Some(i), no_command);
        }
        if t == "--" {
            i += 1;
            break;
        }
        if let Some(long) = t.strip_prefix("--")
            && !long.is_empty()
        {
            let (opt, value) = match t.split_once('=') {
                Some((o, v)) => (o, Some(v)),
                None => (t, None),
            };
            // Without a table, a prefix of an option of the wrapper is taken as that option.
            let is = |names: &[&str]| {
                names
                    .iter()
                    .any(|n| n.starts_with("--") && n.starts_with(opt) && opt.len() > 2)
            };
            if is(spec.no_command) {
                no_command = true;
            }
            let takes = is(spec.long_values);
            if is(spec.script_options) {
                match value {
                    Some(v) => out.scripts.push((v.to_owned(), format!("`{name} {opt}`"))),
                    None => script(words.get(i + 1), out, opt),
                }
            }
            i += if takes && value.is_none() { 2 } else { 1 };
            continue;
        }
        if t.len() > 1 && t.starts_with('-') && !t[1..].starts_with(|c: char| c.is_ascii_digit()) {
            let cluster = &t[1..];
            let mut consumed_next = false;
            for (pos, c) in cluster.char_indices() {
                let opt = format!("-{c}");
                if spec.no_command.contains(&opt.as_str()) {
                    no_command = true;
                }
                if spec.short_values.contains(c) {
                    let rest = &cluster[pos + c.len_utf8()..];
                    let is_script = spec.script_options.contains(&opt.as_str());
                    if rest.is_empty() {
                        if is_script {
                            script(words.get(i + 1), out, &opt);
                        }
                        consumed_next = true;
                    } else if is_script {
                        out.scripts
                            .push((rest.to_owned(), format!("`{name} {opt}`")));
                    }
                    break;
                }
            }
            i += if consumed_next { 2 } else { 1 };
            continue;
        }
        if t.starts_with('-') && t.len() > 1 {
            // A negative number (`nice -10`).
            i += 1;
            continue;
        }
        if operands > 0 {
            operands -= 1;
            i += 1;
            continue;
        }
        return (Some(i), no_command);
    }
    if operands > 0 {
        return (None, no_command);
    }
    ((i < words.len()).then_some(i), no_command)
}

/// A wrapper's options read with its table, as the wrapper reads them: where its command
/// starts (after `operands` operands), and whether an option says no command follows. An
/// option the table does not know (or an ambiguous prefix) makes what runs unknown.
fn skip_with_table(
    words: &[Word],
    table: &Table,
    operands: usize,
    out: &mut Unwrapped,
    name: &str,
) -> (Option<usize>, bool) {
    let args = &words[1..];
    let parsed = match table.parse_args(args) {
        Ok(p) => p,
        Err(e) => {
            out.opaque.push(format!(
                "`{name}` with {e}, so where its command starts is unknown"
            ));
            return (None, true);
        }
    };
    let mut no_command = false;
    for f in &parsed.found {
        if f.has(Effect::NoCommand) {
            no_command = true;
        }
        if f.has(Effect::Run) {
            match &f.value {
                Some(v) if v.known => out
                    .scripts
                    .push((v.text.clone(), format!("`{name} {}`", f.spelled))),
                _ => out
                    .opaque
                    .push(format!("`{name} {}` with a computed command", f.spelled)),
            }
        }
        if f.has(Effect::Opaque) {
            out.opaque.push(format!(
                "`{name} {}` runs what the analysis cannot see",
                f.spelled
            ));
        }
        if f.has(Effect::Shell) {
            out.shell = true;
        }
    }
    // The words after the options: the wrapper's own operands, then the command.
    let start = 1 + parsed.rest + operands;
    if start > words.len() || (operands > 0 && 1 + parsed.rest >= words.len()) {
        return (None, no_command);
    }
    ((start < words.len()).then_some(start), no_command)
}

/// `timeout`, `time`, `nice`, `nohup`, `stdbuf` with options their tables know and that do
/// nothing but wrap, and `exec` with no option: the words of the wrapped command, or
/// `None`. Allow rules see the wrapped command (reference).
///
/// `exec CMD` runs CMD in place of the shell, which does less than running it as a child
/// (nothing after it on the line runs). Its options do more: `-a NAME` changes the
/// program's `argv[0]`, which picks the applet of a multi-call binary (`exec -a rm
/// busybox f` removes `f`), and `-l` and `-c` change it or the environment; with any of
/// them `exec` stays a command that asks.
pub(crate) fn strip_safe_wrapper(words: &[Word]) -> Option<Vec<Word>> {
    let first = words.first().filter(|w| w.literal)?.text.as_str();
    if first == "exec" {
        let rest = match words.get(1) {
            Some(w) if w.literal && w.text == "--" => &words[2..],
            _ => &words[1..],
        };
        let plain = rest
            .first()
            .is_some_and(|w| w.known && w.literal && !w.text.starts_with('-'));
        return plain.then(|| rest.to_vec());
    }
    if !matches!(first, "time" | "nohup" | "nice" | "stdbuf" | "timeout") {
        return None;
    }
    let table = tables::table(first)?;
    let rest = &words[1..];
    if rest.iter().any(|w| !w.literal) {
        return None;
    }
    let parsed = table.parse_args(rest).ok()?;
    if !parsed.found.iter().all(|f| f.opt.effects.is_empty()) {
        return None;
    }
    let mut i = parsed.rest;
    if first == "timeout" {
        // The duration.
        let d = rest.get(i)?.text.as_str();
        let digits = d.trim_end_matches(['s', 'm', 'h', 'd']);
        if digits.is_empty() || digits.parse::<f64>().is_err() {
            return None;
        }
        i += 1;
    }
    let inner = rest.get(i..)?;
    (!inner.is_empty() && inner[0].known).then(|| inner.to_vec())
}

/// What `cmd` (its words; assignments already judged) runs besides itself.
pub fn unwrap(cmd: &SimpleCommand) -> Unwrapped {
    let mut out = Unwrapped::default();
    let words = &cmd.words;
    let Some(first) = words.first() else {
        return out;
    };
    if !first.known {
        return out;
    }
    let name = base_name(&first.text);
    if let Some((_, why)) = ALWAYS_OPAQUE.iter().find(|(n, _)| *n == name) {
        // `alias` alone lists aliases, `hash` alone lists the table, `history` alone prints.
        let listing = words.len() == 1
            || (name == "alias" && words[1..].iter().all(|w| !w.text.contains('=')))
            || (name == "history"
                && words[1..]
                    .iter()
                    .all(|w| w.text.starts_with('-') && w.text != "-s"));
        if !listing {
            out.opaque.push((*why).to_owned());
            out.issues.push((*why).to_owned());
        }
        if name == "coproc" {
            out.wrapper = true;
        }
        return out;
    }
    if let Some(spec) = WRAPPERS.iter().find(|s| s.names.contains(&name)) {
        out.wrapper = true;
        wrapper(cmd, spec, name, &mut out);
        return out;
    }
    if SHELLS.contains(&name) {
        shell(words, name, &mut out);
    } else if name == "busybox" || name == "toybox" {
        out.wrapper = true;
        match words.get(1) {
            Some(w) if w.known && !w.text.starts_with('-') => {
                inner_argv(cmd, &words[1..], &mut out)
            }
            Some(w) if !w.known => out.opaque.push(format!("`{name}` with a computed applet")),
            _ => {}
        }
    } else if name == "eval" {
        let args = &words[1..];
        let args = match args.first() {
            Some(w) if w.text == "--" => &args[1..],
            _ => args,
        };
        if args.iter().all(|w| w.known) {
            let code = args
                .iter()
                .map(|w| w.text.as_str())
                .collect::<Vec<_>>()
                .join(" ");
            out.scripts.push((code, "`eval`".to_owned()));
        } else {
            out.opaque.push("`eval` of computed text".to_owned());
        }
        out.issues.push("`eval`".to_owned());
    } else if matches!(name, "make" | "gmake" | "bmake") {
        make(words, name, &mut out);
        if let Some(why) = runs_project_code(words, name) {
            out.project.push(why);
        }
    } else if name == "trap" {
        trap(words, &mut out);
    } else if name == "source" || name == "." {
        out.issues.push(format!("`{name}`"));
        script_file(words.get(1), name, true, &mut out);
    } else if name == "xargs" {
        out.wrapper = true;
        xargs(cmd, &mut out);
    } else if name == "find" {
        find_exec(cmd, name, &mut out);
    } else if name == "git" {
        git(cmd, &mut out);
    } else if let Some((_, opts)) = INTERPRETERS
        .iter()
        .find(|(n, _)| *n == name)
        .or_else(|| versioned_python(name))
    {
        interpreter(words, name, opts, &mut out);
    } else if AWKS.contains(&name) {
        awk(words, name, &mut out);
    } else if name == "sed" || name == "gsed" {
        sed(words, &mut out);
    } else if let Some((_, opts)) = COMMAND_OPTIONS.iter().find(|(n, _)| *n == name) {
        if words[1..].iter().any(|w| {
            !w.known
                || opts.iter().any(|o| {
                    w.text == *o
                        || (o.starts_with("--") && w.text.starts_with(&format!("{o}=")))
                        || (*o == "+" && w.text.starts_with('+'))
                })
        }) {
            out.opaque
                .push(format!("`{name}` running commands of its own"));
            out.issues
                .push(format!("`{name}` running commands of its own"));
        }
    } else if let Some(script) = package_script(words, name) {
        out.project.push(format!(
            "`{name}` runs the project's package.json script `{script}`"
        ));
        out.package_script = Some(script);
    } else if let Some(why) = runs_project_code(words, name) {
        out.project.push(why);
    } else {
        option_commands(cmd, name, &mut out);
    }
    out
}

/// The package.json script `npm run NAME`, `npm test`, `yarn NAME`, `pnpm run NAME`, …
/// runs, when the line has no option that changes how (an option may be npm configuration
/// such as `--script-shell`).
fn package_script(words: &[Word], name: &str) -> Option<String> {
    if !matches!(name, "npm" | "pnpm" | "yarn") {
        return None;
    }
    let args = &words[1..];
    if args.iter().any(|w| !w.known) {
        return None;
    }
    let before_dashdash = args
        .iter()
        .take_while(|w| w.text != "--")
        .map(|w| w.text.as_str())
        .collect::<Vec<_>>();
    if before_dashdash.iter().any(|t| t.starts_with('-')) {
        return None;
    }
    let script = match before_dashdash.as_slice() {
        ["run" | "run-script" | "rum" | "urn", script, ..] => *script,
        ["test" | "tst" | "t", ..] => "test",
        ["start", ..] => "start",
        ["stop", ..] => "stop",
        _ => return None,
    };
    (!script.is_empty()).then(|| script.to_owned())
}

/// Subcommands of package managers whose purpose is to run the project's scripts.
const NPM_RUNS: &[&str] = &[
    "run",
    "run-script",
    "rum",
    "urn",
    "test",
    "tst",
    "t",
    "start",
    "stop",
    "restart",
    "install",
    "i",
    "in",
    "ins",
    "inst",
    "insta",
    "instal",
    "isnt",
    "isnta",
    "isntal",
    "isntall",
    "add",
    "ci",
    "clean-install",
    "install-clean",
    "install-test",
    "it",
    "install-ci-test",
    "cit",
    "rebuild",
    "rb",
    "exec",
    "x",
    "dlx",
    "pack",
    "publish",
    "link",
    "ln",
    "update",
    "up",
    "upgrade",
    "dev",
    "build",
    "create",
    "init",
    "explore",
    "edit",
    "prepare",
    "preinstall",
    "postinstall",
];

/// cargo subcommands that do not build or run the project's code.
const CARGO_QUIET: &[&str] = &[
    "version",
    "help",
    "metadata",
    "tree",
    "fmt",
    "clean",
    "update",
    "search",
    "new",
    "init",
    "locate-project",
    "pkgid",
    "verify-project",
    "generate-lockfile",
    "fetch",
    "vendor",
    "yank",
    "owner",
    "login",
    "logout",
    "report",
    "add",
    "remove",
    "info",
    "read-manifest",
];

/// Programs whose purpose is to run code of the project (a makefile's recipes, package.json
/// scripts, build scripts and tests, packages' install scripts): what they run is in files
/// the analysis does not read, so they are unresolved (refused under a deny rule naming Bash;
/// otherwise they ask). Their version and help stay plain commands.
fn runs_project_code(words: &[Word], name: &str) -> Option<String> {
    let args: Vec<&str> = words[1..].iter().map(|w| w.text.as_str()).collect();
    if matches!(
        args.as_slice(),
        ["--version"] | ["-V"] | ["-v"] | ["--help"] | ["-h"]
    ) {
        return None;
    }
    let first_operand = || {
        words[1..]
            .iter()
            .find(|w| !w.text.starts_with(['-', '+']))
            .map(|w| (w.known, w.text.as_str()))
    };
    match name {
        "make" | "gmake" | "bmake" => Some(format!(
            "`{name}` runs the recipes of the project's makefile, which the analysis does not read"
        )),
        "npx" | "pnpx" | "bunx" => Some(format!(
            "`{name}` runs a package's program, from the project or downloaded"
        )),
        "npm" | "pnpm" | "yarn" | "bun" => match first_operand() {
            None if name == "yarn" || name == "pnpm" && args.is_empty() => Some(format!(
                "`{name}` installs packages, running their install scripts"
            )),
            Some((false, w)) => Some(format!("`{name}` with the computed subcommand `{w}`")),
            Some((true, sub))
                if NPM_RUNS.contains(&sub)
                    || name != "npm"
                        && !sub.is_empty()
                        && !matches!(
                            sub,
                            "info"
                                | "why"
                                | "list"
                                | "ls"
                                | "outdated"
                                | "audit"
                                | "config"
                                | "view"
                                | "version"
                        ) =>
            {
                Some(format!(
                    "`{name} {sub}` runs the project's package.json scripts or packages' install scripts"
                ))
            }
            _ => None,
        },
        "cargo" => {
            if args.iter().any(|a| a.starts_with("--config")) {
                return Some(
                    "`cargo --config`: configuration on the command line can name programs cargo runs"
                        .to_owned(),
                );
            }
            match first_operand() {
                None => None,
                Some((false, w)) => Some(format!("`cargo` with the computed subcommand `{w}`")),
                Some((true, sub)) if CARGO_QUIET.contains(&sub) => None,
                Some((true, sub)) => Some(format!(
                    "`cargo {sub}` builds or runs the project's code (build scripts, procedural macros, tests), or runs a program of that name"
                )),
            }
        }
        "pip" | "pip3" => match first_operand() {
            Some((true, "install" | "wheel" | "download" | "lock")) | Some((false, _)) => Some(
                format!("`{name}` installing packages runs their build scripts"),
            ),
            _ => None,
        },
        "go" => match first_operand() {
            Some((true, "run" | "test" | "build" | "generate" | "install" | "tool" | "vet"))
            | Some((false, _)) => {
                Some("`go` building or running the project's code (or a tool it names)".to_owned())
            }
            _ => None,
        },
        _ => None,
    }
}

fn versioned_python(name: &str) -> Option<&'static (&'static str, &'static [&'static str])> {
    let rest = name.strip_prefix("python")?;
    rest.chars()
        .all(|c| c.is_ascii_digit() || c == '.')
        .then(|| INTERPRETERS.iter().find(|(n, _)| *n == "python3"))
        .flatten()
}

/// A wrapper: its inner command, the shell code of its script options, or (joined wrappers)
/// the words after its options as shell code.
fn wrapper(cmd: &SimpleCommand, spec: &Spec, name: &str, out: &mut Unwrapped) {
    let words = &cmd.words;
    let (start, no_command) = skip_options(words, spec, out, name);
    let Some((env_assignments, start)) = wrapper_assignments(words, name, start, out) else {
        return;
    };
    if no_command {
        return;
    }
    // `chroot DIR CMD` runs the CMD that DIR holds: not what the line names.
    if name == "chroot"
        && let Some(s) = start
        && let Some(root) = words[1..s].iter().rev().find(|w| !w.text.starts_with('-'))
        && !(root.known && root.text.trim_end_matches('/').is_empty())
    {
        out.opaque.push(format!(
            "`chroot {}` runs the program of that name inside it",
            root.text
        ));
    }
    // `flock FILE -c COMMAND` (exactly `-c` or `--command` after the file, as flock reads it).
    if name == "flock"
        && let Some(s) = start
        && matches!(words[s].text.as_str(), "-c" | "--command")
    {
        match words.get(s + 1) {
            Some(v) if v.known => out.scripts.push((v.text.clone(), "`flock -c`".to_owned())),
            _ => out
                .opaque
                .push("`flock -c` with a computed command".to_owned()),
        }
        return;
    }
    if name == "env"
        && let Some(s) = start
        && let Some((code, _)) = out.scripts.last_mut()
    {
        // `env -S STRING ARGS…` runs the words of STRING followed by ARGS: the command may
        // start in either.
        if words[s..].iter().any(|w| !w.known) {
            out.opaque
                .push("`env -S` followed by computed words".to_owned());
        }
        for w in &words[s..] {
            code.push(' ');
            code.push_str(&shell_quote(&w.text));
        }
        return;
    }
    if !out.scripts.is_empty() && !matches!(name, "su" | "runuser") {
        // A script option gave the command; what follows are its arguments or a file
        // (`script -c CMD FILE`).
        return;
    }
    let Some(start) = start else {
        // `sudo -s`, `sudo -i` with no command start a shell too.
        if (spec.bare_shell || out.shell) && out.scripts.is_empty() {
            out.opaque.push(format!(
                "`{name}` starting a shell that reads standard input"
            ));
        }
        return;
    };
    if spec.joined || out.shell || (matches!(name, "doas") && has_shell_flag(words, start)) {
        let rest = &words[start..];
        if rest.iter().all(|w| w.known) {
            let code = rest
                .iter()
                .map(|w| w.text.as_str())
                .collect::<Vec<_>>()
                .join(" ");
            out.scripts.push((code, format!("`{name}`")));
        } else {
            out.opaque
                .push(format!("`{name}` running a computed command"));
        }
        return;
    }
    if matches!(name, "su" | "runuser") {
        su_arguments(cmd, name, start, out);
        return;
    }
    let mut inner = SimpleCommand {
        assignments: env_assignments,
        ..cmd.clone()
    };
    inner.words = words[start..].to_vec();
    inner.form = crate::parse::Form::Simple;
    out.inner.push(inner);
}

/// `NAME=VALUE` pairs a wrapper sets for its command.
type Assignments = Vec<(String, Word)>;

/// env's and sudo's `NAME=VALUE` operands before the command, which are assignments for
/// the inner command, and where the command starts after them (other wrappers: none, and
/// `start` unchanged). `None` when sudo reads options after them, so where its command
/// starts is unknown (recorded as opaque).
fn wrapper_assignments(
    words: &[Word],
    name: &str,
    start: Option<usize>,
    out: &mut Unwrapped,
) -> Option<(Assignments, Option<usize>)> {
    let mut env_assignments = Vec::new();
    let sudo = matches!(name, "sudo" | "sudo-rs");
    let Some(mut i) = start.filter(|_| name == "env" || sudo) else {
        return Some((env_assignments, start));
    };
    while let Some(w) = words.get(i) {
        // env takes every operand with `=` before the command as an assignment, names
        // bash would not accept included (`BASH_FUNC_f%%=() { … }`); sudo every word
        // with `=` that does not start with `/`, and then reads options again.
        if sudo && (!w.known || w.text.starts_with('/')) {
            break;
        }
        match w.text.split_once('=') {
            Some((n, v)) if !n.is_empty() || sudo => {
                env_assignments.push((
                    n.to_owned(),
                    Word {
                        text: v.to_owned(),
                        ..w.clone()
                    },
                ));
                i += 1;
            }
            _ => break,
        }
    }
    if sudo && i > start.unwrap_or(i) && words.get(i).is_some_and(|w| w.text.starts_with('-')) {
        out.opaque.push(format!(
            "`{name}` with options after an environment variable, so where its command \
             starts is unknown"
        ));
        return None;
    }
    Some((env_assignments, (i < words.len()).then_some(i)))
}

/// `su USER [ARGS…]` and `runuser`: the arguments go to the user's shell, except after
/// `runuser -u`, which runs a command.
fn su_arguments(cmd: &SimpleCommand, name: &str, start: usize, out: &mut Unwrapped) {
    let words = &cmd.words;
    let rest = &words[start..];
    if name == "runuser" && has_flag(&words[..start], &["-u", "--user"]) {
        inner_argv(cmd, rest, out);
    } else if rest.len() > 1 && out.scripts.is_empty() {
        out.opaque
            .push(format!("`{name}` passing arguments to a shell"));
    } else if out.scripts.is_empty() {
        out.opaque.push(format!(
            "`{name}` starting a shell that reads standard input"
        ));
    }
}

/// A word quoted for bash (single quotes).
fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', "'\\''"))
}

fn has_flag(words: &[Word], flags: &[&str]) -> bool {
    words.iter().any(|w| {
        flags
            .iter()
            .any(|f| w.text == *f || w.text.starts_with(&format!("{f}=")))
    })
}

/// `sudo -s CMD` / `sudo -i CMD` run CMD through a shell.
fn has_shell_flag(words: &[Word], start: usize) -> bool {
    words[1..start].iter().any(|w| {
        w.text == "--shell"
            || w.text == "--login"
            || (w.text.starts_with('-')
                && !w.text.starts_with("--")
                && (w.text.contains('s') || w.text.contains('i')))
    })
}

/// The command a program runs for each path it finds (`find -exec`, `fd -x`), as an inner
/// command: a word `filled` says the program fills with the path is unknown, and when that
/// is the program itself, what runs is the files found (`spelled` names the option).
fn run_per_path(
    cmd: &SimpleCommand,
    words: &[Word],
    filled: impl Fn(&str) -> bool,
    spelled: &str,
    out: &mut Unwrapped,
) {
    let argv: Vec<Word> = words
        .iter()
        .map(|w| Word {
            known: w.known && !filled(&w.text),
            literal: w.literal && !filled(&w.text),
            ..w.clone()
        })
        .collect();
    if argv.first().is_some_and(|w| !w.known) {
        out.opaque
            .push(format!("{spelled} running the files it finds"));
    }
    inner_argv(cmd, &argv, out);
}

fn inner_argv(cmd: &SimpleCommand, words: &[Word], out: &mut Unwrapped) {
    if words.is_empty() {
        return;
    }
    let mut inner = cmd.clone();
    inner.assignments.clear();
    inner.words = words.to_vec();
    inner.form = crate::parse::Form::Simple;
    out.inner.push(inner);
}

/// `sh -c CODE`, `sh FILE`, or a shell reading standard input.
fn shell(words: &[Word], name: &str, out: &mut Unwrapped) {
    let mut i = 1;
    let mut has_c = false;
    let mut interactive = false;
    while let Some(w) = words.get(i) {
        let t = w.text.as_str();
        if !w.known {
            break;
        }
        if t == "--" || t == "-" {
            i += 1;
            break;
        }
        if matches!(t, "--rcfile" | "--init-file" | "-o" | "+o" | "-O" | "+O") {
            if matches!(t, "--rcfile" | "--init-file") {
                out.opaque
                    .push(format!("`{name} {t}` reading start-up code"));
            }
            i += 2;
            continue;
        }
        if t.starts_with("--") {
            i += 1;
            continue;
        }
        if (t.starts_with('-') || t.starts_with('+')) && t.len() > 1 {
            has_c |= t.contains('c');
            interactive |= t.contains('i') || t.contains('s');
            i += 1;
            continue;
        }
        break;
    }
    out.issues.push(format!("`{name}` running shell code"));
    if has_c {
        match words.get(i) {
            Some(w) if w.known => out.scripts.push((w.text.clone(), format!("`{name} -c`"))),
            Some(_) => out
                .opaque
                .push(format!("`{name} -c` with a computed command")),
            None => out.opaque.push(format!("`{name} -c` without a command")),
        }
    } else if interactive || words.get(i).is_none() {
        out.opaque
            .push(format!("`{name}` reading commands from standard input"));
    } else {
        script_file(words.get(i), name, true, out);
    }
}

/// A script file run by a shell or interpreter: its own program, unless it is computed or
/// standard input in disguise.
fn script_file(file: Option<&Word>, name: &str, shell: bool, out: &mut Unwrapped) {
    match file {
        None => out
            .opaque
            .push(format!("`{name}` reading commands from standard input")),
        Some(w) if !w.known || w.glob => out
            .opaque
            .push(format!("`{name}` running a computed script")),
        Some(w) if w.text == "-" || w.text.starts_with("/dev/") || w.text.starts_with("/proc/") => {
            out.opaque
                .push(format!("`{name}` reading commands from {}", w.text))
        }
        Some(w) => {
            if shell {
                out.script_files.push((w.clone(), format!("`{name}`")));
            }
        }
    }
}

/// `make -f -`, `make -f /dev/stdin` and `make --eval` take their rules (which run shell
/// commands) from somewhere other than a file in the project.
fn make(words: &[Word], name: &str, out: &mut Unwrapped) {
    for (k, w) in words.iter().enumerate().skip(1) {
        let t = w.text.as_str();
        let file: Option<(bool, &str)> = if matches!(t, "-f" | "--file" | "--makefile") {
            words.get(k + 1).map(|f| (f.known, f.text.as_str()))
        } else {
            t.strip_prefix("--file=")
                .or_else(|| t.strip_prefix("--makefile="))
                .or_else(|| t.strip_prefix("-f").filter(|v| !v.is_empty()))
                .map(|v| (w.known, v))
        };
        if let Some((known, f)) = file
            && (!known || f == "-" || f.starts_with("/dev/") || f.starts_with("/proc/"))
        {
            out.opaque
                .push(format!("`{name}` reading its rules from standard input"));
        }
        if t == "-E" || t == "--eval" || t.starts_with("--eval=") {
            out.opaque.push(format!(
                "`{name} --eval` running rules from the command line"
            ));
        }
    }
}

fn trap(words: &[Word], out: &mut Unwrapped) {
    let mut args = &words[1..];
    while let Some(w) = args.first() {
        if w.text == "--" {
            args = &args[1..];
            break;
        }
        if w.text.starts_with('-') && w.text.len() > 1 && w.known {
            if w.text.contains('l') || w.text.contains('p') {
                return;
            }
            args = &args[1..];
            continue;
        }
        break;
    }
    // One argument is a signal to reset; an action comes with at least one signal.
    if args.len() < 2 {
        return;
    }
    out.issues.push("`trap`".to_owned());
    match &args[0] {
        w if !w.known => out.opaque.push("`trap` with a computed action".to_owned()),
        w if w.text == "-" || w.text.is_empty() => {}
        w => out.scripts.push((w.text.clone(), "`trap`".to_owned())),
    }
}

fn xargs(cmd: &SimpleCommand, out: &mut Unwrapped) {
    let words = &cmd.words;
    out.issues.push("`xargs`".to_owned());
    let Some(table) = tables::table("xargs") else {
        out.opaque
            .push("`xargs` without its option table".to_owned());
        return;
    };
    let parsed = match table.parse_args(&words[1..]) {
        Ok(p) => p,
        Err(e) => {
            out.opaque.push(format!(
                "`xargs` with {e}, so the command it runs is unknown"
            ));
            return;
        }
    };
    // `-I R`, `-i[R]`, `--replace[=R]`: words holding R are filled in from the input.
    let mut replace: Option<String> = None;
    for f in &parsed.found {
        if f.opt.short.iter().any(|(c, _)| matches!(c, 'I' | 'i')) {
            replace = Some(f.value.as_ref().map_or("{}".to_owned(), |v| v.text.clone()));
        }
    }
    let start = 1 + parsed.rest;
    let rest: Vec<Word> = words[start.min(words.len())..]
        .iter()
        .map(|w| match &replace {
            Some(r) if !r.is_empty() && w.text.contains(r.as_str()) => Word {
                known: false,
                literal: false,
                ..w.clone()
            },
            _ => w.clone(),
        })
        .collect();
    if rest.is_empty() {
        // Runs `echo`.
        return;
    }
    if !rest[0].known {
        out.opaque
            .push("`xargs` running a command built from its input".to_owned());
    }
    inner_argv(cmd, &rest, out);
}

/// `find … -exec CMD … ;`.
fn find_exec(cmd: &SimpleCommand, name: &str, out: &mut Unwrapped) {
    let words = &cmd.words;
    let mut i = 0;
    while i < words.len() {
        let t = words[i].text.as_str();
        if matches!(t, "-exec" | "-execdir" | "-ok" | "-okdir") {
            let start = i + 1;
            let mut end = start;
            while end < words.len() && !matches!(words[end].text.as_str(), ";" | "+" | "\\;") {
                end += 1;
            }
            out.issues.push(format!("`{name} {t}`"));
            run_per_path(
                cmd,
                &words[start..end],
                |w| w.contains("{}"),
                &format!("`{name} {t}`"),
                out,
            );
            i = end;
        } else if name == "find" && t.starts_with("-fprint") || t == "-fls" {
            out.issues.push(format!("`find {t}` writes a file"));
        }
        i += 1;
    }
}

fn git(cmd: &SimpleCommand, out: &mut Unwrapped) {
    let words = &cmd.words;
    let Some(global) = tables::table("git") else {
        out.opaque.push("`git` without its option table".to_owned());
        return;
    };
    // git's own options, up to the subcommand.
    let parsed = match global.parse_args(&words[1..]) {
        Ok(p) => p,
        Err(e) => {
            out.issues.push(format!("`git`: {e}"));
            out.opaque
                .push(format!("`git` with {e}: what git does with it is unknown"));
            return;
        }
    };
    for f in &parsed.found {
        if f.opt.short.iter().any(|(c, _)| *c == 'c') {
            match &f.value {
                Some(v) if v.known => git_config_value(&v.text, out),
                _ => out.opaque.push("`git -c` with a computed value".to_owned()),
            }
        } else if f.has(Effect::Opaque) {
            out.issues.push(format!("`git {}`", f.spelled));
            out.opaque.push(format!(
                "`git {}` points git at programs, configuration or a repository the analysis cannot see",
                f.spelled
            ));
        }
    }
    let i = 1 + parsed.rest;
    let Some(sub) = words.get(i) else {
        return;
    };
    if !sub.known {
        out.opaque.push(format!(
            "`git` running the computed subcommand `{}`",
            sub.text
        ));
        return;
    }
    let rest = &words[i + 1..];
    if let Some(w) = rest
        .iter()
        .find(|w| w.text.starts_with("ext::") || w.text.starts_with("fd::"))
    {
        out.issues
            .push(format!("`git {}` over a command transport", sub.text));
        out.opaque
            .push(format!("`{}`, a git transport that runs a command", w.text));
    }
    if let Some(table) = tables::table(&format!("git {}", sub.text)) {
        let mut argv = vec![Word::plain(format!("git {}", sub.text))];
        argv.extend(rest.iter().cloned());
        tabled_options(cmd, &argv, &format!("git {}", sub.text), table, out);
    }
    git_subcommand(&sub.text, rest, out);
}

/// What git subcommand `sub` runs besides git: commands given as option values, `bisect
/// run`, `submodule foreach`, and configuration changes.
fn git_subcommand(sub: &str, rest: &[Word], out: &mut Unwrapped) {
    match sub {
        "rebase" => git_runs(
            git_option_values(rest, "--exec", Some("-x")),
            "rebase --exec",
            out,
        ),
        "difftool" | "mergetool" => git_runs(
            git_option_values(rest, "--extcmd", Some("-x")),
            "difftool --extcmd",
            out,
        ),
        "clone" => git_runs(
            git_option_values(rest, "--upload-pack", Some("-u")),
            "clone --upload-pack",
            out,
        ),
        "fetch" | "pull" | "archive" => {
            git_runs(
                git_option_values(rest, "--upload-pack", None),
                "--upload-pack",
                out,
            );
            git_runs(git_option_values(rest, "--exec", None), "--exec", out);
        }
        "push" => {
            git_runs(
                git_option_values(rest, "--receive-pack", None),
                "push --receive-pack",
                out,
            );
            git_runs(git_option_values(rest, "--exec", None), "push --exec", out);
        }
        "send-email" => git_runs(
            git_option_values(rest, "--sendmail-cmd", None),
            "send-email --sendmail-cmd",
            out,
        ),
        "filter-branch" => {
            for f in [
                "--env-filter",
                "--tree-filter",
                "--index-filter",
                "--parent-filter",
                "--msg-filter",
                "--commit-filter",
                "--tag-name-filter",
            ] {
                git_runs(
                    git_option_values(rest, f, None),
                    &format!("filter-branch {f}"),
                    out,
                );
            }
        }
        "bisect" if rest.first().is_some_and(|w| w.text == "run") => git_bisect_run(rest, out),
        "submodule" if rest.iter().any(|w| w.text == "foreach") => {
            git_submodule_foreach(rest, out);
        }
        "config" => git_config_command(rest, out),
        _ => {}
    }
}

/// The values of git option `opt` (or its `short` form) in `rest`, `None` for a computed one.
/// Without a table, a long option is matched by any prefix of its name (git takes unique
/// prefixes; an ambiguous one is an error, so taking it costs nothing).
fn git_option_values(rest: &[Word], opt: &str, short: Option<&str>) -> Vec<Option<String>> {
    let mut found = Vec::new();
    for (k, w) in rest.iter().enumerate() {
        if !w.known && w.text.starts_with(['$', '`', '"']) {
            found.push(None);
            continue;
        }
        if let Some(long) = w.text.strip_prefix("--") {
            let (n, v) = match long.split_once('=') {
                Some((n, v)) => (n, Some(v)),
                None => (long, None),
            };
            if !n.is_empty() && opt.trim_start_matches('-').starts_with(n) {
                match v {
                    Some(v) => found.push(w.known.then(|| v.to_owned())),
                    None => found.push(rest.get(k + 1).filter(|v| v.known).map(|v| v.text.clone())),
                }
            }
        } else if short.is_some_and(|s| w.text == s) {
            found.push(rest.get(k + 1).filter(|v| v.known).map(|v| v.text.clone()));
        } else if let Some(s) = short
            && let Some(v) = w.text.strip_prefix(s)
            && !v.is_empty()
        {
            found.push(w.known.then(|| v.to_owned()));
        }
    }
    found
}

/// Commands given as git option values: scripts to check, or opaque when computed.
fn git_runs(values: Vec<Option<String>>, what: &str, out: &mut Unwrapped) {
    for v in values {
        out.issues.push(format!("`git {what}`"));
        match v {
            Some(code) => out.scripts.push((code, format!("`git {what}`"))),
            None => out
                .opaque
                .push(format!("`git {what}` with a computed command")),
        }
    }
}

/// `git bisect run CMD…`: the command runs.
fn git_bisect_run(rest: &[Word], out: &mut Unwrapped) {
    out.issues.push("`git bisect run`".to_owned());
    let argv = &rest[1..];
    if argv.first().is_some_and(|w| !w.known) {
        out.opaque
            .push("`git bisect run` with a computed command".to_owned());
    }
    let inner = SimpleCommand {
        words: argv.to_vec(),
        ..SimpleCommand::default()
    };
    if !argv.is_empty() {
        out.inner.push(inner);
    }
}

/// `git submodule foreach CODE`: shell code runs in each submodule.
fn git_submodule_foreach(rest: &[Word], out: &mut Unwrapped) {
    let at = rest.iter().position(|w| w.text == "foreach").unwrap_or(0);
    let mut args = &rest[at + 1..];
    while args.first().is_some_and(|w| w.text.starts_with("--")) {
        args = &args[1..];
    }
    out.issues.push("`git submodule foreach`".to_owned());
    if args.iter().all(|w| w.known) {
        let code = args
            .iter()
            .map(|w| w.text.as_str())
            .collect::<Vec<_>>()
            .join(" ");
        out.scripts
            .push((code, "`git submodule foreach`".to_owned()));
    } else {
        out.opaque
            .push("`git submodule foreach` with a computed command".to_owned());
    }
}

/// `git config` that writes: git's configuration can make git run programs.
fn git_config_command(rest: &[Word], out: &mut Unwrapped) {
    let reads = rest.iter().any(|w| {
        matches!(
            w.text.as_str(),
            "--get"
                | "--get-all"
                | "--get-regexp"
                | "--get-urlmatch"
                | "--list"
                | "-l"
                | "get"
                | "list"
        )
    });
    let positional = rest.iter().filter(|w| !w.text.starts_with('-')).count();
    if !reads && positional >= 2
        || rest.iter().any(|w| {
            matches!(
                w.text.as_str(),
                "--unset"
                    | "--unset-all"
                    | "--add"
                    | "--replace-all"
                    | "--edit"
                    | "-e"
                    | "--rename-section"
                    | "--remove-section"
                    | "set"
                    | "unset"
                    | "edit"
                    | "rename-section"
                    | "remove-section"
            )
        })
    {
        out.safety.push(
            "`git config` changes git's configuration, which can make git run programs".to_owned(),
        );
    }
}

/// A `git -c KEY=VALUE` setting: an alias with `!` is shell code; an inert key is fine;
/// anything else may name a program (`core.pager`, `core.fsmonitor`, `diff.external`, …).
fn git_config_value(setting: &str, out: &mut Unwrapped) {
    let (key, value) = setting.split_once('=').unwrap_or((setting, "true"));
    let key = key.to_ascii_lowercase();
    if key.starts_with("alias.") {
        if let Some(code) = value.strip_prefix('!') {
            out.issues.push(format!("`git -c {key}=!…`"));
            out.scripts
                .push((code.to_owned(), format!("`git -c {key}`")));
        }
        return;
    }
    if INERT_GIT_KEYS.contains(&key.as_str())
        || key.starts_with("color.")
        || key.starts_with("advice.")
    {
        return;
    }
    out.issues.push(format!("`git -c {key}`"));
    out.opaque
        .push(format!("`git -c {key}` can make git run a program"));
}

fn interpreter(words: &[Word], name: &str, inline: &[&str], out: &mut Unwrapped) {
    let mut i = 1;
    while let Some(w) = words.get(i) {
        let t = w.text.as_str();
        if !w.known {
            break;
        }
        let opt = t.split_once('=').map_or(t, |(o, _)| o);
        if inline.contains(&opt)
            || inline
                .iter()
                .any(|o| o.len() == 2 && !o.starts_with("--") && t.starts_with(o) && t.len() > 2)
        {
            out.opaque
                .push(format!("`{name} {opt}` runs an inline program"));
            out.issues
                .push(format!("`{name} {opt}` runs an inline program"));
            return;
        }
        if t == "--" {
            i += 1;
            break;
        }
        if t == "-" {
            break;
        }
        if INTERPRETER_VALUES.contains(&t) {
            if t == "-m" {
                // `python -m module`: the module is the program.
                return;
            }
            i += 2;
            continue;
        }
        if t.starts_with('-') && t.len() > 1 {
            i += 1;
            continue;
        }
        break;
    }
    if matches!(name, "irb" | "jshell") {
        out.opaque
            .push(format!("`{name}` reading commands from standard input"));
        return;
    }
    script_file(words.get(i), name, false, out);
}

fn awk(words: &[Word], name: &str, out: &mut Unwrapped) {
    let mut i = 1;
    let mut program: Option<&Word> = None;
    let mut from_file = false;
    while let Some(w) = words.get(i) {
        let t = w.text.as_str();
        match t {
            "-f" | "--file" | "-i" | "--include" | "-l" | "--load" => {
                from_file = true;
                out.opaque.push(format!(
                    "`{name} {t}` runs a program from a file, which can run commands (`system`, pipes)"
                ));
                if matches!(t, "-l" | "--load") {
                    out.opaque.push(format!("`{name} {t}` loads an extension"));
                }
                match words.get(i + 1) {
                    Some(f)
                        if f.known
                            && f.text != "-"
                            && !f.text.starts_with("/dev/")
                            && !f.text.starts_with("/proc/") => {}
                    _ => out.opaque.push(format!(
                        "`{name} {t}` reading its program from standard input"
                    )),
                }
                i += 2;
            }
            "-e" | "--source" => {
                program = words.get(i + 1);
                i += 2;
            }
            "-v" | "--assign" | "-F" | "--field-separator" | "-W" => i += 2,
            "--" => {
                i += 1;
                break;
            }
            _ if t.starts_with('-') && t.len() > 1 && w.known => i += 1,
            _ => break,
        }
    }
    if program.is_none() && !from_file {
        program = words.get(i);
    }
    match program {
        Some(p) if !p.known => out.opaque.push(format!("`{name}` with a computed program")),
        Some(p)
            if p.text.contains("system")
                || p.text.contains('|')
                || p.text.contains("getline")
                || p.text.contains('@') =>
        {
            out.opaque
                .push(format!("an `{name}` program that can run commands"));
            out.issues
                .push(format!("an `{name}` program that can run commands"));
        }
        _ => {}
    }
}

fn sed(words: &[Word], out: &mut Unwrapped) {
    let mut scripts: Vec<&Word> = Vec::new();
    let mut i = 1;
    let mut explicit = false;
    while let Some(w) = words.get(i) {
        let t = w.text.as_str();
        match t {
            "-e" | "--expression" => {
                if let Some(s) = words.get(i + 1) {
                    scripts.push(s);
                }
                explicit = true;
                i += 2;
            }
            "-f" | "--file" => {
                explicit = true;
                out.opaque.push(
                    "`sed -f` runs a script from a file, which can run commands (`e`)".to_owned(),
                );
                i += 2;
            }
            _ if t.starts_with("--file=")
                || t.starts_with("-f") && t.len() > 2 && !t.starts_with("--") =>
            {
                explicit = true;
                out.opaque.push(
                    "`sed -f` runs a script from a file, which can run commands (`e`)".to_owned(),
                );
                i += 1;
            }
            "-l" | "--line-length" => i += 2,
            _ if t.starts_with("--expression=") => {
                scripts.push(w);
                explicit = true;
                i += 1;
            }
            _ if t.starts_with('-') && t.len() > 1 => i += 1,
            _ => {
                if !explicit && scripts.is_empty() {
                    scripts.push(w);
                }
                i += 1;
            }
        }
    }
    for s in scripts {
        if !s.known || sed_executes(&s.text) {
            out.opaque
                .push("a `sed` script that can run commands (`e`)".to_owned());
            out.issues
                .push("a `sed` script that can run commands (`e`)".to_owned());
            return;
        }
    }
}

/// Whether a sed script uses GNU sed's `e` command or the `e` flag of `s`.
fn sed_executes(script: &str) -> bool {
    let bytes: Vec<char> = script.chars().collect();
    let mut i = 0;
    let mut at_command = true;
    while i < bytes.len() {
        let c = bytes[i];
        if at_command {
            match c {
                ' ' | '\t' | '\n' | ';' | '{' | '}' | '!' | ',' | '$' => {}
                '0'..='9' | '~' | '+' => {}
                '/' | '\\' => {
                    // An address regex: skip to its closing delimiter.
                    let delim = if c == '\\' {
                        i += 1;
                        bytes.get(i).copied().unwrap_or('/')
                    } else {
                        '/'
                    };
                    i += 1;
                    while i < bytes.len() && bytes[i] != delim {
                        if bytes[i] == '\\' {
                            i += 1;
                        }
                        i += 1;
                    }
                }
                'e' => return true,
                's' | 'y' => {
                    let Some(&delim) = bytes.get(i + 1) else {
                        return false;
                    };
                    let mut parts = 0;
                    i += 2;
                    while i < bytes.len() && parts < 2 {
                        if bytes[i] == '\\' {
                            i += 1;
                        } else if bytes[i] == delim {
                            parts += 1;
                        }
                        i += 1;
                    }
                    // Flags.
                    while i < bytes.len() && !matches!(bytes[i], ';' | '\n' | '}') {
                        if c == 's' && bytes[i] == 'e' {
                            return true;
                        }
                        if bytes[i] == 'w' {
                            // `w FILE` runs to the end of the line.
                            while i < bytes.len() && bytes[i] != '\n' {
                                i += 1;
                            }
                            break;
                        }
                        i += 1;
                    }
                    at_command = true;
                    continue;
                }
                'a' | 'i' | 'c' | 'r' | 'R' | 'w' | 'W' | 'b' | 't' | 'T' | ':' | 'q' | 'Q'
                | 'l' | 'L' => {
                    // Text or a label up to the end of the line.
                    while i < bytes.len() && bytes[i] != '\n' {
                        i += 1;
                    }
                }
                _ => {}
            }
        }
        i += 1;
        at_command = true;
    }
    false
}

/// Options of ordinary programs whose value is a command: `tar --to-command`, `rsync -e`,
/// `ssh -o ProxyCommand=…`, `man -P`, `zip -TT`, `sort --compress-program`, `rg --pre`,
/// `fd -x`, and the remote command of `ssh`.
fn option_commands(cmd: &SimpleCommand, name: &str, out: &mut Unwrapped) {
    let words = &cmd.words;
    if let Some(table) = tables::table(name) {
        tabled_options(cmd, words, name, table, out);
        return;
    }
    let table: &[(&str, &[&str])] = &[
        (
            "tar",
            &[
                "--to-command",
                "-I",
                "--use-compress-program",
                "--info-script",
                "-F",
                "--new-volume-script",
                "--rsh-command",
                "--checkpoint-action",
            ],
        ),
        ("rsync", &["-e", "--rsh", "--rsync-path"]),
        ("scp", &["-S"]),
        ("sftp", &["-S", "-D"]),
        ("zip", &["-TT", "--unzip-command"]),
        ("sort", &["--compress-program"]),
        ("nc", &["-e", "-c"]),
        ("ncat", &["-e", "--exec", "-c", "--sh-exec", "--lua-exec"]),
        ("netcat", &["-e", "-c"]),
        ("less", &["+", "-k", "--lesskey-file", "--lesskey-src"]),
    ];
    if let Some((_, opts)) = table.iter().find(|(n, _)| *n == name) {
        for k in 1..words.len() {
            for opt in *opts {
                if let Some(value) = untabled_value(words, k, opt, name) {
                    out.issues.push(format!("`{name} {opt}` runs a command"));
                    match value {
                        Some(v) => {
                            let code = v.strip_prefix("exec=").unwrap_or(v);
                            out.scripts
                                .push((code.to_owned(), format!("`{name} {opt}`")));
                        }
                        None => out
                            .opaque
                            .push(format!("`{name} {opt}` with a computed command")),
                    }
                }
            }
        }
    }
    if matches!(name, "ssh" | "scp" | "sftp" | "rsync" | "git") {
        ssh_command_options(words, name, out);
    }
    if matches!(name, "ssh" | "scp" | "sftp")
        && let Some(w) = words
            .iter()
            .skip(1)
            .find(|w| w.text == "-F" || (w.text.starts_with("-F") && !w.text.starts_with("--")))
    {
        out.issues.push(format!("`{name} -F`"));
        out.opaque.push(format!(
            "`{name} {}` reads a configuration file that can name local commands",
            w.text
        ));
    }
    if name == "ssh" {
        ssh_remote(words, out);
    }
}

/// The value of option `opt` of `name` (a program without a table) in `words[k]`:
/// `None` when the word is not that option, `Some(None)` for a computed value.
fn untabled_value<'a>(
    words: &'a [Word],
    k: usize,
    opt: &str,
    name: &str,
) -> Option<Option<&'a str>> {
    let w = &words[k];
    let t = w.text.as_str();
    if opt == "+" {
        // `less +!CMD`: the command follows the `!`.
        t.strip_prefix('+')
            .and_then(|v| v.split_once('!'))
            .map(|(_, cmd)| Some(cmd))
    } else if t == opt {
        Some(
            words
                .get(k + 1)
                .filter(|v| v.known)
                .map(|v| v.text.as_str()),
        )
    } else if let Some(v) = t.strip_prefix(&format!("{opt}=")) {
        Some(w.known.then_some(v))
    } else if let Some(long) = t.strip_prefix("--")
        && opt.starts_with("--")
        && long.len() >= 2
    {
        // Without a table, any prefix of a long option is taken as it (the program takes
        // unique prefixes; an ambiguous one is an error).
        let (n, v) = long.split_once('=').unwrap_or((long, ""));
        if opt[2..].starts_with(n) {
            if long.contains('=') {
                Some(w.known.then_some(v))
            } else {
                Some(
                    words
                        .get(k + 1)
                        .filter(|v| v.known)
                        .map(|v| v.text.as_str()),
                )
            }
        } else {
            None
        }
    } else if opt.len() == 2
        && !opt.starts_with("--")
        && t.starts_with(opt)
        && t.len() > 2
        && name != "tar"
    {
        Some(w.known.then_some(&t[2..]))
    } else {
        None
    }
}

/// ssh's `-o` settings that run a local command (`ProxyCommand`, `LocalCommand`, …), for
/// ssh and the programs that pass `-o` to it.
fn ssh_command_options(words: &[Word], name: &str, out: &mut Unwrapped) {
    for (k, w) in words.iter().enumerate() {
        let t = w.text.as_str();
        let setting = if t == "-o" {
            words.get(k + 1).map(|v| v.text.as_str())
        } else {
            t.strip_prefix("-o")
        };
        if let Some(s) = setting {
            let key = s
                .split(['=', ' '])
                .next()
                .unwrap_or_default()
                .to_ascii_lowercase();
            if matches!(
                key.as_str(),
                "proxycommand"
                    | "localcommand"
                    | "knownhostscommand"
                    | "match"
                    | "permitlocalcommand"
            ) {
                out.issues.push(format!("`{name} -o {key}`"));
                out.opaque
                    .push(format!("`{name} -o {key}` runs a local command"));
            }
        }
    }
}

/// The options of a program with a table, read as the program reads them: values that are
/// commands become shell code to check (or, for a command given as words, `fd -x CMD ARGS…
/// ;`, a command of its own), options that run what the analysis cannot see and options the
/// table does not know make what runs unknown.
/// `words` are the program's (`cmd`'s, or a git subcommand's); `cmd` is where a command an
/// option gives runs.
fn tabled_options(
    cmd: &SimpleCommand,
    words: &[Word],
    name: &str,
    table: &Table,
    out: &mut Unwrapped,
) {
    let args = if name == "tar" {
        tar_old_style(&words[1..], table)
    } else {
        words[1..].to_vec()
    };
    let runs_anything = table.opts.iter().any(|o| {
        o.has(Effect::Run)
            || o.has(Effect::Opaque)
            || o.has(Effect::Shell)
            || o.has(Effect::NoCommand)
    });
    let parsed = match table.parse_args(&args) {
        Ok(p) => p,
        // A word only known when it runs can only hide an option that matters where the
        // program has one.
        Err(OptError::Computed { .. }) if !runs_anything => return,
        Err(e) => {
            out.issues.push(format!("`{name}`: {e}"));
            out.opaque.push(format!(
                "`{name}` with {e}: what the program does with it is unknown"
            ));
            return;
        }
    };
    for f in &parsed.found {
        if f.has(Effect::Run) && !f.words.is_empty() {
            out.issues
                .push(format!("`{name} {}` runs a command", f.spelled));
            // fd fills `{}`, `{/}`, `{//}`, `{.}`, `{/.}` with each path it finds.
            run_per_path(
                cmd,
                &f.words,
                |w| w.contains('{'),
                &format!("`{name} {}`", f.spelled),
                out,
            );
            continue;
        }
        if f.has(Effect::Run) {
            out.issues
                .push(format!("`{name} {}` runs a command", f.spelled));
            match &f.value {
                Some(v) if v.known => {
                    if name == "tar" && f.opt.long.iter().any(|(l, _)| l == "checkpoint-action") {
                        // Only `exec=COMMAND` runs something.
                        if let Some(code) = v.text.strip_prefix("exec=") {
                            out.scripts
                                .push((code.to_owned(), format!("`{name} {}`", f.spelled)));
                        }
                        continue;
                    }
                    out.scripts
                        .push((v.text.clone(), format!("`{name} {}`", f.spelled)));
                }
                Some(_) => out
                    .opaque
                    .push(format!("`{name} {}` with a computed command", f.spelled)),
                None => out.opaque.push(format!(
                    "`{name} {}` runs a program it chooses itself",
                    f.spelled
                )),
            }
        }
        if f.has(Effect::Opaque) {
            out.issues.push(format!("`{name} {}`", f.spelled));
            out.opaque.push(format!(
                "`{name} {}` runs what the analysis cannot see",
                f.spelled
            ));
        }
    }
    if name == "tar" {
        // An archive named `HOST:FILE` is reached through `rsh` unless `--force-local`.
        let local = parsed
            .found
            .iter()
            .any(|f| f.opt.long.iter().any(|(l, _)| l == "force-local"));
        let remote = parsed.found.iter().any(|f| {
            f.opt.short.iter().any(|(c, _)| *c == 'f')
                && f.value.as_ref().is_some_and(|v| {
                    v.text
                        .split_once(':')
                        .is_some_and(|(host, _)| !host.is_empty() && !host.contains('/'))
                })
        });
        if remote && !local {
            out.opaque
                .push("`tar -f HOST:FILE` runs `rsh` to reach the archive".to_owned());
        }
    }
}

/// tar's old style: a first word without a dash is a bundle of options whose values are the
/// next words, in order (`tar xIf CMD a.tar` is `tar -x -I CMD -f a.tar`).
fn tar_old_style(args: &[Word], table: &Table) -> Vec<Word> {
    let Some(first) = args.first().filter(|w| w.known && !w.text.starts_with('-')) else {
        return args.to_vec();
    };
    let mut out = Vec::new();
    let mut values = args[1..].iter();
    for c in first.text.chars() {
        out.push(Word {
            text: format!("-{c}"),
            ..first.clone()
        });
        let takes = table.opts.iter().any(|o| {
            o.short
                .iter()
                .any(|(s, a)| *s == c && *a == crate::getopt::Arg::Required)
        });
        if takes && let Some(v) = values.next() {
            out.push(v.clone());
        }
    }
    out.extend(values.cloned());
    out
}

/// `ssh HOST COMMAND…`: the command runs on the host, through its shell.
fn ssh_remote(words: &[Word], out: &mut Unwrapped) {
    const VALUES: &str = "BbcDEeFIiJLlmOopQRSWw";
    let mut i = 1;
    while let Some(w) = words.get(i) {
        let t = w.text.as_str();
        if t == "--" {
            i += 1;
            break;
        }
        if t.starts_with('-') && t.len() > 1 {
            let last = t.chars().last().unwrap_or('-');
            let takes = t.len() == 2 && VALUES.contains(last);
            i += if takes { 2 } else { 1 };
            continue;
        }
        break;
    }
    // The host, then the command.
    let rest = words.get(i + 1..).unwrap_or_default();
    if rest.is_empty() {
        return;
    }
    out.issues.push("`ssh` running a remote command".to_owned());
    if rest.iter().all(|w| w.known) {
        let code = rest
            .iter()
            .map(|w| w.text.as_str())
            .collect::<Vec<_>>()
            .join(" ");
        out.scripts.push((code, "`ssh`".to_owned()));
    } else {
        out.opaque
            .push("`ssh` running a computed remote command".to_owned());
    }
}

/// Builtins that evaluate a name, a subscript or arithmetic in an operand, where bash runs
/// any `$(…)` hidden in it, and the names they assign.
pub struct Evaluation {
    /// Operands bash evaluates as a variable name, subscript or arithmetic
    pub evaluated: Vec<Word>,
    /// Variables the builtin assigns from data it reads (tainted)
    pub assigned: Vec<String>,
    /// Why the builtin is opaque regardless of its operands
    pub opaque: Option<String>,
}

/// The evaluated operands of `cmd` when it is such a builtin.
pub fn evaluation(cmd: &SimpleCommand) -> Option<Evaluation> {
    let words = &cmd.words;
    let name = words.first().filter(|w| w.known)?.text.as_str();
    let args = &words[1..];
    let mut e = Evaluation {
        evaluated: Vec::new(),
        assigned: Vec::new(),
        opaque: None,
    };
    let operand_after = |flags: &[&str]| -> Vec<Word> {
        args.iter()
            .enumerate()
            .filter(|(_, w)| flags.contains(&w.text.as_str()))
            .filter_map(|(k, _)| args.get(k + 1).cloned())
            .collect()
    };
    match name {
        "test" | "[" | "[[" => {
            e.evaluated.extend(operand_after(&["-v", "-R"]));
            if name == "[[" {
                for (k, w) in args.iter().enumerate() {
                    if matches!(
                        w.text.as_str(),
                        "-eq" | "-ne" | "-lt" | "-le" | "-gt" | "-ge"
                    ) && w.known
                    {
                        if k > 0 {
                            e.evaluated.push(args[k - 1].clone());
                        }
                        if let Some(r) = args.get(k + 1) {
                            e.evaluated.push(r.clone());
                        }
                    }
                }
            }
        }
        "printf" => {
            for w in operand_after(&["-v"]) {
                e.assigned.push(base_of(&w.text));
                e.evaluated.push(w);
            }
        }
        "read" | "mapfile" | "readarray" | "getopts" | "wait" => {
            if (name == "mapfile" || name == "readarray")
                && args.iter().any(|w| w.text.starts_with("-C"))
            {
                e.opaque = Some(format!("`{name} -C` runs a callback"));
            }
            let values: &[&str] = match name {
                "read" => &["-a", "-d", "-i", "-n", "-N", "-p", "-t", "-u"],
                "mapfile" | "readarray" => &["-d", "-n", "-O", "-s", "-u", "-C", "-c"],
                "wait" => &[],
                _ => &[],
            };
            let mut k = 0;
            let mut skip_first = name == "getopts";
            while k < args.len() {
                let t = args[k].text.as_str();
                if name == "wait" {
                    if t == "-p" {
                        if let Some(v) = args.get(k + 1) {
                            e.assigned.push(base_of(&v.text));
                            e.evaluated.push(v.clone());
                        }
                        k += 2;
                        continue;
                    }
                    k += 1;
                    continue;
                }
                if values.contains(&t) {
                    if t == "-a"
                        && let Some(v) = args.get(k + 1)
                    {
                        e.assigned.push(base_of(&v.text));
                        e.evaluated.push(v.clone());
                    }
                    k += 2;
                    continue;
                }
                if t.starts_with('-') && t.len() > 1 {
                    k += 1;
                    continue;
                }
                if skip_first {
                    skip_first = false;
                    k += 1;
                    continue;
                }
                e.assigned.push(base_of(&args[k].text));
                e.evaluated.push(args[k].clone());
                k += 1;
            }
        }
        "let" => e.evaluated.extend(args.iter().cloned()),
        "unset" => e
            .evaluated
            .extend(args.iter().filter(|w| !w.text.starts_with('-')).cloned()),
        "declare" | "typeset" | "local" | "export" | "readonly" => {
            let flags: String = args
                .iter()
                .filter(|w| w.text.starts_with('-') || w.text.starts_with('+'))
                .map(|w| w.text.clone())
                .collect();
            if flags.contains('i') || flags.contains('n') {
                e.opaque = Some(format!(
                    "`{name} -i`/`-n` makes later assignments arithmetic or references"
                ));
            }
            e.evaluated.extend(
                args.iter()
                    .filter(|w| !(w.text.starts_with('-') || w.text.starts_with('+')))
                    .cloned(),
            );
        }
        _ => return None,
    }
    Some(e)
}

/// `a[1]` → `a`; `x` → `x`.
fn base_of(name: &str) -> String {
    name.split('[').next().unwrap_or_default().to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::parse;

    fn unwrapped(cmd: &str) -> Unwrapped {
        let script = parse(cmd).unwrap_or_default();
        script.commands.first().map(unwrap).unwrap_or_default()
    }

    /// `(command, inner commands, scripts, opaque?)`
    fn check(cmd: &str, inner: &[&str], scripts: &[&str], opaque: bool) {
        let u = unwrapped(cmd);
        let got_inner: Vec<String> = u.inner.iter().map(SimpleCommand::text).collect();
        let got_scripts: Vec<&str> = u.scripts.iter().map(|(s, _)| s.as_str()).collect();
        assert_eq!(got_inner, inner, "{cmd}: {u:?}");
        assert_eq!(got_scripts, scripts, "{cmd}: {u:?}");
        assert_eq!(!u.opaque.is_empty(), opaque, "{cmd}: {u:?}");
    }

    #[test]
    fn wrappers() {
        check("env rm v", &["rm v"], &[], false);
        check("/usr/bin/env -i -u X A=1 rm v", &["rm v"], &[], false);
        check("env -S 'rm v'", &[], &["rm v"], false);
        check("nohup -- rm v", &["rm v"], &[], false);
        check("nice -n 5 rm v", &["rm v"], &[], false);
        check("nice -10 rm v", &["rm v"], &[], false);
        check("timeout -s KILL 5 rm v", &["rm v"], &[], false);
        check("time -p rm v", &["rm v"], &[], false);
        check("flock /tmp/l rm v", &["rm v"], &[], false);
        check("flock -c 'rm v' /tmp/l", &[], &["rm v"], false);
        check("chroot / rm v", &["rm v"], &[], false);
        check("chroot /", &[], &[], true);
        check("nsenter -t 1 -m -u rm v", &["rm v"], &[], false);
        check("unshare -r rm v", &["rm v"], &[], false);
        check("taskset 0x1 rm v", &["rm v"], &[], false);
        check("taskset -c 0 rm v", &["rm v"], &[], false);
        check("taskset -p 1 22", &[], &[], false);
        check("setpriv --reuid=0 rm v", &["rm v"], &[], false);
        check("runuser -u root -- rm v", &["rm v"], &[], false);
        check("su -c 'rm v' root", &[], &["rm v"], false);
        check("su root", &[], &[], true);
        check("sudo -u root rm v", &["rm v"], &[], false);
        check("sudo -s rm v", &[], &["rm v"], false);
        check("doas rm v", &["rm v"], &[], false);
        check("exec -a x rm v", &["rm v"], &[], false);
        check("command rm v", &["rm v"], &[], false);
        check("command -v rm", &[], &[], false);
        check("builtin echo x", &["echo x"], &[], false);
        check("watch 'rm v'", &[], &["rm v"], false);
        check("watch -n 1 rm v", &[], &["rm v"], false);
        check("strace -f -o /dev/null rm v", &["rm v"], &[], false);
        check("script -qc 'rm v' /dev/null", &[], &["rm v"], false);
        check("script -q -c 'rm v'", &[], &["rm v"], false);
        check("busybox rm v", &["rm v"], &[], false);
        check("stdbuf -oL rm v", &["rm v"], &[], false);
        check("ionice -c 3 rm v", &["rm v"], &[], false);
        check("chrt -f 1 rm v", &["rm v"], &[], false);
        check("sg wheel 'rm v'", &[], &["rm v"], false);
        check("env $X v", &["$X v"], &[], false);
    }

    #[test]
    fn shells_and_code() {
        check("bash -c -- 'rm v'", &[], &["rm v"], false);
        check("sh -ec 'rm v'", &[], &["rm v"], false);
        check("bash -c \"$X\"", &[], &[], true);
        check("bash", &[], &[], true);
        check("bash -s", &[], &[], true);
        check("bash script.sh", &[], &[], false);
        check("bash /dev/stdin", &[], &[], true);
        check("sh <<< 'rm v'", &[], &[], true);
        check("eval -- rm v", &[], &["rm v"], false);
        check("eval \"$X\"", &[], &[], true);
        check("trap 'rm v' EXIT", &[], &["rm v"], false);
        check("trap -- 'rm v' EXIT", &[], &["rm v"], false);
        check("trap - EXIT", &[], &[], false);
        check("trap -p", &[], &[], false);
        check("source ./env.sh", &[], &[], false);
        check(". /dev/stdin", &[], &[], true);
        check("python3 -c 'import os'", &[], &[], true);
        check("python3 -m pytest", &[], &[], false);
        check("python3 x.py", &[], &[], false);
        check("python3.12 -c 1", &[], &[], true);
        check("perl -e 'system 1'", &[], &[], true);
        check("node -e 1", &[], &[], true);
        check("awk '{print $1}' f", &[], &[], false);
        check("awk 'BEGIN{system(\"rm v\")}'", &[], &[], true);
        check("awk '{print | \"sh\"}'", &[], &[], true);
        check("sed -n 's/a/b/p' f", &[], &[], false);
        check("sed 's/a/rm v/e' f", &[], &[], true);
        check("sed '1e rm v' f", &[], &[], true);
        check("sed -e '/x/e rm v' f", &[], &[], true);
        check("sed 's/e/E/g; /echo/d' f", &[], &[], false);
        check("alias x=rm", &[], &[], true);
        check("alias", &[], &[], false);
        check("coproc rm v", &[], &[], true);
        check("vim -c '!rm v' f", &[], &[], true);
        check("at now", &[], &[], true);
    }

    #[test]
    fn finders_and_git() {
        check("find . -exec rm {} +", &["rm {}"], &[], false);
        check("find . -exec {} \\;", &["{}"], &[], true);
        check(
            "find . -name x -execdir rm -f v ';'",
            &["rm -f v"],
            &[],
            false,
        );
        check("fd x -x rm", &["rm"], &[], false);
        check("xargs rm", &["rm"], &[], false);
        check("xargs -0 -n 1 rm -f", &["rm -f"], &[], false);
        check("xargs -I{} {}", &["{}"], &[], true);
        check("xargs -I% sh -c '%'", &["sh -c %"], &[], false);
        check("git -c alias.x='!rm v' x", &[], &["rm v"], false);
        check("git -c core.pager='sh -c id' log", &[], &[], true);
        check("git -c user.name=x commit", &[], &[], false);
        check("git --git-dir=/x log", &[], &[], true);
        check("git rebase -x 'rm v' main", &[], &["rm v"], false);
        check("git rebase --exec='rm v' main", &[], &["rm v"], false);
        check("git bisect run rm v", &["rm v"], &[], false);
        check("git submodule foreach 'rm v'", &[], &["rm v"], false);
        check("git difftool -x 'rm v'", &[], &["rm v"], false);
        check("git clone -u 'rm v' r", &[], &["rm v"], false);
        check("tar --to-command='rm v' -xf a.tar", &[], &["rm v"], false);
        check("tar -I 'rm v' -xf a", &[], &["rm v"], false);
        check(
            "tar --checkpoint-action=exec='rm v' -cf a .",
            &[],
            &["rm v"],
            false,
        );
        check("rsync -e 'rm v' a b:", &[], &["rm v"], false);
        check("ssh -o ProxyCommand='rm v' h", &[], &[], true);
        check("ssh -p 22 host rm v", &[], &["rm v"], false);
        check("man -P 'rm v' ls", &[], &["rm v"], false);
        check("rg --pre rm x", &[], &["rm"], false);
        let u = unwrapped("git config core.fsmonitor 'rm v'");
        assert!(!u.safety.is_empty());
        let u = unwrapped("git config --get user.name");
        assert!(u.safety.is_empty());
    }

    #[test]
    fn evaluating_builtins() {
        let ev = |c: &str| {
            parse(c)
                .ok()
                .and_then(|s| s.commands.first().and_then(evaluation))
                .map(|e| {
                    e.evaluated
                        .iter()
                        .map(|w| w.text.clone())
                        .collect::<Vec<_>>()
                })
                .unwrap_or_default()
        };
        assert_eq!(ev("test -v 'x[$(touch P)]'"), ["x[$(touch P)]"]);
        assert_eq!(ev("[[ 'x[$(id)]' -eq 1 ]]"), ["x[$(id)]", "1"]);
        assert_eq!(ev("printf -v 'a[$(id)]' 1"), ["a[$(id)]"]);
        assert_eq!(ev("read -r a b"), ["a", "b"]);
        assert_eq!(ev("let 'x=1'"), ["x=1"]);
        assert!(ev("echo hi").is_empty());
    }
}
