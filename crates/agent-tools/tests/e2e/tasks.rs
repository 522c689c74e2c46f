//! Background tasks in a live `batch`, in every order an agent sends the calls: TaskStop
//! answers and ends the task's whole process group also while a TaskOutput waits (for that
//! task or another), because a concurrency-safe call starts as soon as its line arrives.
//! Each test checks the answers' order and contents and that the task's processes are gone
//! from the process table; every wait is bounded by a guard, no timing is asserted.

use serde_json::{Value, json};

use crate::live::Live;
use crate::serve_eras::{processes_with, survivors, wait_for_process};
use crate::{Project, binary, text};

/// A `sleep` of about 500 s whose argument is unique to this test run: the marker by which
/// its processes are found.
fn long_sleep(n: u32) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    format!("500.{}{n}{nanos:09}", std::process::id())
}

/// A background command that leaves two processes in its group, both carrying `marker`.
fn background(marker: &str) -> Value {
    json!({"tool": "Bash", "input": {
        "command": format!("sleep {marker} & sleep {marker}; wait"),
        "run_in_background": true}})
}

fn output(id: &str, block: bool) -> Value {
    // A blocking wait far longer than the guard: only the stop can end it in time.
    json!({"tool": "TaskOutput", "input": {"task_id": id, "block": block, "timeout": 600_000}})
}

fn stop(id: &str) -> Value {
    json!({"tool": "TaskStop", "input": {"task_id": id}})
}

#[track_caller]
fn started(line: &Value) -> String {
    assert_eq!(line["tool"], "Bash", "{line}");
    assert_eq!(line["is_error"], false, "{line}");
    line["data"]["backgroundTaskId"]
        .as_str()
        .unwrap_or_else(|| panic!("no task id in {line}"))
        .to_owned()
}

#[track_caller]
fn assert_stopped(line: &Value, id: &str) {
    assert_eq!(line["tool"], "TaskStop", "{line}");
    assert_eq!(line["is_error"], false, "{line}");
    assert!(
        text(line).contains(&format!("Successfully stopped task: {id}")),
        "{line}"
    );
}

#[track_caller]
fn assert_output(line: &Value, retrieval: &str, status: &str) {
    assert_eq!(line["tool"], "TaskOutput", "{line}");
    assert_eq!(line["is_error"], false, "{line}");
    assert_eq!(line["data"]["retrieval_status"], retrieval, "{line}");
    assert_eq!(line["data"]["task"]["status"], status, "{line}");
}

#[track_caller]
fn assert_gone(marker: &str) {
    let left = survivors(marker, 20);
    assert!(
        left.is_empty(),
        "processes of the stopped task remain: {left:?}"
    );
}

/// The sequence, each call sent after the previous answer: a quick background
/// command, a blocking TaskOutput of it, a long background command, TaskStop of that.
#[test]
fn stop_after_a_blocking_output_ends_the_task() {
    let p = Project::new(&[]);
    let m = long_sleep(1);
    let mut live = Live::start(binary(), &p);
    live.send(
        json!({"tool": "Bash", "input": {"command": "echo tick", "run_in_background": true}}),
    );
    let first = started(&live.result());
    live.send(output(&first, true));
    let out = live.result();
    assert_output(&out, "success", "completed");
    assert_eq!(out["data"]["output"], "tick", "{out}");
    live.send(background(&m));
    let second = started(&live.result());
    assert!(
        wait_for_process(&m, 20),
        "the background command did not start"
    );
    live.send(stop(&second));
    assert_stopped(&live.result(), &second);
    assert_gone(&m);
    assert_eq!(live.finish(), Some(0));
}

/// The same four calls sent at once, as an agent's parallel tool calls: answers in order.
#[test]
fn the_same_calls_sent_together_answer_in_order() {
    let p = Project::new(&[]);
    let m = long_sleep(2);
    let mut live = Live::start(binary(), &p);
    live.send(
        json!({"tool": "Bash", "input": {"command": "echo tick", "run_in_background": true}}),
    );
    live.send(output("b1", true));
    live.send(background(&m));
    live.send(stop("b2"));
    assert_eq!(started(&live.result()), "b1");
    let out = live.result();
    assert_output(&out, "success", "completed");
    assert_eq!(out["data"]["output"], "tick", "{out}");
    assert_eq!(started(&live.result()), "b2");
    assert_stopped(&live.result(), "b2");
    assert_gone(&m);
    assert_eq!(live.finish(), Some(0));
}

/// A non-blocking TaskOutput answers at once with `not_ready`; the stop then ends the task.
#[test]
fn stop_after_a_non_blocking_output_ends_the_task() {
    let p = Project::new(&[]);
    let m = long_sleep(3);
    let mut live = Live::start(binary(), &p);
    live.send(background(&m));
    let id = started(&live.result());
    live.send(output(&id, false));
    assert_output(&live.result(), "not_ready", "running");
    live.send(stop(&id));
    assert_stopped(&live.result(), &id);
    assert_gone(&m);
    assert_eq!(live.finish(), Some(0));
}

/// A stop sent while a TaskOutput waits for the same task runs beside the wait: the wait
/// ends with the task killed, then the stop answers.
#[test]
fn a_stop_during_a_wait_ends_the_wait() {
    let p = Project::new(&[]);
    let m = long_sleep(4);
    let mut live = Live::start(binary(), &p);
    live.send(background(&m));
    let id = started(&live.result());
    assert!(
        wait_for_process(&m, 20),
        "the background command did not start"
    );
    live.send(output(&id, true));
    live.send(stop(&id));
    assert_output(&live.result(), "success", "killed");
    assert_stopped(&live.result(), &id);
    assert_gone(&m);
    assert_eq!(live.finish(), Some(0));
}

/// Two blocking waits, then a stop of each task: every wait ends, every group is gone.
#[test]
fn two_blocking_waits_end_with_their_stops() {
    let p = Project::new(&[]);
    let (m1, m2) = (long_sleep(5), long_sleep(6));
    let mut live = Live::start(binary(), &p);
    live.send(background(&m1));
    let a = started(&live.result());
    live.send(background(&m2));
    let b = started(&live.result());
    live.send(output(&a, true));
    live.send(output(&b, true));
    live.send(stop(&b));
    live.send(stop(&a));
    assert_output(&live.result(), "success", "killed");
    assert_output(&live.result(), "success", "killed");
    assert_stopped(&live.result(), &b);
    assert_stopped(&live.result(), &a);
    assert_gone(&m1);
    assert_gone(&m2);
    assert_eq!(live.finish(), Some(0));
}

/// A stop of another task while a TaskOutput waits: that task's group is gone while the
/// wait goes on (its answer cannot come before the waited task ends); stopping the waited
/// task then ends the wait, and the answers come in order.
#[test]
fn a_stop_of_another_task_runs_during_a_wait() {
    let p = Project::new(&[]);
    let (waited, other) = (long_sleep(7), long_sleep(8));
    let mut live = Live::start(binary(), &p);
    live.send(background(&waited));
    let a = started(&live.result());
    live.send(background(&other));
    let b = started(&live.result());
    assert!(
        wait_for_process(&other, 20),
        "the background command did not start"
    );
    live.send(output(&a, true));
    live.send(stop(&b));
    assert_gone(&other);
    assert!(
        !processes_with(&waited).is_empty(),
        "the waited task ended by itself"
    );
    assert!(
        live.try_result().is_none(),
        "the wait answered before its task ended"
    );
    live.send(stop(&a));
    assert_output(&live.result(), "success", "killed");
    assert_stopped(&live.result(), &b);
    assert_stopped(&live.result(), &a);
    assert_gone(&waited);
    assert_eq!(live.finish(), Some(0));
}
