//! `custom-tool`: the host's Greet and WordCount tools in one pool with tools-fs's, called
//! through it; WordCount's declared path gets Read's rules.

use crate::{command, run_ok};

#[test]
fn greet_answers_through_the_pool_beside_the_file_tools() {
    let dir = tempfile::tempdir().unwrap();
    let (stdout, _) =
        run_ok(command(env!("CARGO_BIN_EXE_custom-tool"), dir.path(), dir.path()).arg("Grace"));
    let mut lines = stdout.lines();
    let tools = lines.next().unwrap();
    assert!(tools.starts_with("tools: "), "{stdout}");
    for name in ["Glob", "Read", "Edit", "Greet", "WordCount"] {
        assert!(tools.split(", ").any(|t| t.ends_with(name)), "{tools}");
    }
    assert_eq!(lines.next(), Some("Hello, Grace!"), "{stdout}");
}

#[test]
fn word_count_gets_the_read_rules_for_its_path() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), "three little words\n").unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    let far = elsewhere.path().join("far.txt");
    std::fs::write(&far, "not yours\n").unwrap();
    let (stdout, _) = run_ok(
        command(env!("CARGO_BIN_EXE_custom-tool"), dir.path(), dir.path())
            .arg("Grace")
            .arg("notes.txt")
            .arg("/etc/hostname")
            .arg(&far),
    );
    let counts: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with("WordCount "))
        .collect();
    assert_eq!(counts.len(), 3, "{stdout}");
    // Inside the working directory: counted, the path made absolute.
    assert!(
        counts[0].starts_with("WordCount notes.txt: ok: 3 words in /"),
        "{stdout}"
    );
    // The session's `Read(//etc/**)` deny rule holds for it as for Read.
    assert!(
        counts[1].contains("refused")
            && counts[1].contains("Permission to read /etc/hostname has been denied"),
        "{stdout}"
    );
    // Outside the working directory it needs a person; nobody is asked here.
    assert!(
        counts[2].contains("refused") && counts[2].contains("outside allowed working directories"),
        "{stdout}"
    );
}
