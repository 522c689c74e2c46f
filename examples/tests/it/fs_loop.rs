//! `fs-loop`: Glob, Read, Edit, Read in a project directory; the Edit lands on disk.

use std::fs;

use crate::{command, run_ok};

#[test]
fn edits_the_file_it_found_and_reads_it_back() {
    let project = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let file = project.path().join("notes.txt");
    fs::write(&file, "TODO: write the tests\nkeep this line\n").unwrap();

    let (stdout, _) = run_ok(
        command(env!("CARGO_BIN_EXE_fs-loop"), project.path(), home.path()).arg(project.path()),
    );

    assert_eq!(
        fs::read_to_string(&file).unwrap(),
        "DONE: write the tests\nkeep this line\n"
    );
    // The model saw the file found, its text before the edit, the edit's answer and the
    // text after, in that order.
    let steps: Vec<&str> = ["> Glob", "notes.txt", "> Read", "1\tTODO: write the tests"]
        .into_iter()
        .chain(["> Edit", "has been updated successfully", "> Read"])
        .chain(["1\tDONE: write the tests"])
        .collect();
    let mut rest = stdout.as_str();
    for step in steps {
        let at = rest
            .find(step)
            .unwrap_or_else(|| panic!("`{step}` missing or out of order in:\n{stdout}"));
        rest = &rest[at + step.len()..];
    }
}

#[test]
fn says_why_when_there_is_nothing_to_edit() {
    let project = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let output = command(env!("CARGO_BIN_EXE_fs-loop"), project.path(), home.path())
        .arg(project.path())
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("no .txt file"), "{stderr}");
}
