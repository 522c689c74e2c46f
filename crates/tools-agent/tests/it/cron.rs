//! The Cron tools and the scheduler: the reference's messages, the 50-job cap, one-shot and
//! recurring firing, the 7-day expiry, durable jobs.
#![cfg(feature = "cron")]

use chrono::{Local, TimeZone};
use serde_json::{Value, json};
use tools_agent::testing::TOO_MANY_JOBS;
use tools_agent::{CronScheduler, cron_scheduler};

use crate::{Fixture, assert_error, call};

#[tokio::test]
async fn validation_messages() {
    let f = Fixture::new();
    let ctx = f.ctx();
    let check = |input: Value, needle: &'static str| {
        let ctx = ctx.clone();
        async move { assert_error(&call(&ctx, "CronCreate", input).await, needle) }
    };
    check(
        json!({"cron": "* * * *", "prompt": "p"}),
        "Invalid cron expression '* * * *'. Expected 5 fields: M H DoM Mon DoW.",
    )
    .await;
    check(
        json!({"cron": "0 0 * * * *", "prompt": "p"}),
        "Expected 5 fields",
    )
    .await;
    check(
        json!({"cron": "61 * * * *", "prompt": "p"}),
        "Invalid cron expression '61 * * * *'",
    )
    .await;
    check(
        json!({"cron": "0 0 30 2 *", "prompt": "p"}),
        "Cron expression '0 0 30 2 *' does not match any date in the next year.",
    )
    .await;
    check(
        json!({"cron": "* * * * *", "prompt": ""}),
        "The parameter `prompt` must be at least 1 character(s) long",
    )
    .await;
    assert_error(
        &call(&ctx, "CronDelete", json!({"id": "nope"})).await,
        "No scheduled job with id 'nope'",
    );
    for i in 0..50 {
        let r = call(
            &ctx,
            "CronCreate",
            json!({"cron": "*/5 * * * *", "prompt": format!("p{i}")}),
        )
        .await;
        assert!(!r.is_error, "{}", r.text());
    }
    check(
        json!({"cron": "* * * * *", "prompt": "one more"}),
        TOO_MANY_JOBS,
    )
    .await;
}

#[tokio::test]
async fn create_list_delete_and_durable_jobs() {
    let f = Fixture::new();
    let ctx = f.ctx();
    assert_eq!(
        call(&ctx, "CronList", json!({})).await.text(),
        "No scheduled jobs."
    );
    let r = call(
        &ctx,
        "CronCreate",
        json!({"cron": "*/5 * * * *", "prompt": "check the build"}),
    )
    .await;
    assert!(!r.is_error, "{}", r.text());
    let id = r.data["id"].as_str().unwrap().to_owned();
    assert!(
        r.text()
            .starts_with(&format!("Scheduled recurring job {id} (")),
        "{}",
        r.text()
    );
    assert!(r.text().ends_with("Session-only (not written to disk, ends with this session). Auto-expires after 7 days. Use CronDelete to cancel sooner."), "{}", r.text());
    let r = call(
        &ctx,
        "CronCreate",
        json!({"cron": "30 14 * * *", "prompt": "standup", "recurring": false, "durable": true}),
    )
    .await;
    let durable_id = r.data["id"].as_str().unwrap().to_owned();
    let file = f.path(".agent-tools/scheduled_tasks.json");
    assert!(
        r.text()
            .contains(&format!("Persisted to {}", file.display())),
        "{}",
        r.text()
    );
    assert!(
        r.text().ends_with("It will fire once then auto-delete."),
        "{}",
        r.text()
    );
    let list = call(&ctx, "CronList", json!({})).await;
    assert_eq!(list.data.as_array().unwrap().len(), 2);
    assert!(
        list.text().contains(&format!("{durable_id} — "))
            && list.text().contains("one-shot, durable: standup"),
        "{}",
        list.text()
    );
    // The durable job is on disk and comes back in a new session.
    let saved: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(saved.as_array().unwrap().len(), 1);
    let other = f.builder().session_id("second").build();
    let jobs = cron_scheduler(&other).unwrap().list().unwrap();
    assert_eq!(jobs.len(), 1);
    assert_eq!(jobs[0].prompt, "standup");
    let r = call(&ctx, "CronDelete", json!({"id": durable_id})).await;
    assert_eq!(r.text(), format!("Cancelled job {durable_id}."));
    let saved: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(saved, json!([]));
    assert!(
        call(&ctx, "CronDelete", json!({"id": id}))
            .await
            .text()
            .starts_with("Cancelled job")
    );
}

#[test]
fn scheduler_fires_one_shot_and_recurring_jobs_and_expires_them() {
    let dir = tempfile::tempdir().unwrap();
    let s = CronScheduler::new(dir.path().join("jobs.json")).unwrap();
    let t0 = Local.with_ymd_and_hms(2026, 3, 2, 10, 0, 30).unwrap();
    let every5 = s.add("*/5 * * * *", "tick", true, false, t0).unwrap();
    let once = s.add("2 10 * * *", "once", false, true, t0).unwrap();
    assert!(s.take_due(t0).unwrap().is_empty());
    let at = |h, m| Local.with_ymd_and_hms(2026, 3, 2, h, m, 0).unwrap();
    let due = s.take_due(at(10, 2)).unwrap();
    assert_eq!(due.len(), 1);
    assert_eq!(due[0].job.id, once.id);
    assert!(due[0].last);
    assert_eq!(s.list().unwrap().len(), 1, "the one-shot job is gone");
    // The recurring job fires up to 10% of its 5-minute period (30 s) late.
    let jittered = |t: chrono::DateTime<Local>| t + chrono::Duration::seconds(30);
    let due = s.take_due(jittered(at(10, 5))).unwrap();
    assert_eq!(due.len(), 1);
    assert_eq!(due[0].job.id, every5.id);
    assert!(!due[0].last);
    assert!(
        s.take_due(at(10, 7)).unwrap().is_empty(),
        "fired already for 10:05"
    );
    assert_eq!(s.take_due(jittered(at(10, 10))).unwrap().len(), 1);
    // Past seven days it fires one last time and is removed.
    let late = Local.with_ymd_and_hms(2026, 3, 10, 10, 5, 30).unwrap();
    let due = s.take_due(late).unwrap();
    assert_eq!(due.len(), 1);
    assert!(due[0].last);
    assert!(s.list().unwrap().is_empty());
}

#[tokio::test]
async fn run_hands_due_prompts_to_the_callback() {
    let dir = tempfile::tempdir().unwrap();
    let s = std::sync::Arc::new(CronScheduler::new(dir.path().join("jobs.json")).unwrap());
    // Created a minute ago: the every-minute job is due at the first tick.
    s.add(
        "* * * * *",
        "ping",
        false,
        false,
        Local::now() - chrono::Duration::minutes(2),
    )
    .unwrap();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let cancel = tool_core::CancellationToken::new();
    let handle = tokio::spawn(std::sync::Arc::clone(&s).run(cancel.clone(), move |fire| {
        let _ = tx.send(fire.job.prompt);
    }));
    assert_eq!(rx.recv().await.as_deref(), Some("ping"));
    cancel.cancel();
    handle.await.unwrap();
}

/// Jitter: deterministic per job id, bounded (10% of the period and 15 minutes late for
/// recurring jobs; 90 s early for one-shot jobs on :00 or :30, none otherwise), spread
/// across ids, and applied by the scheduler.
#[test]
fn firing_times_are_jittered_per_job() {
    use tools_agent::testing::{
        MAX_RECURRING_JITTER, ONE_SHOT_EARLY, fire_time, jitter, parse_cron,
    };
    let at = |h, m| Local.with_ymd_and_hms(2026, 3, 2, h, m, 0).unwrap();
    let hourly = parse_cron("0 * * * *").unwrap();
    let daily = parse_cron("0 9 * * *").unwrap();
    let ids: Vec<String> = (0..200).map(|i| format!("{i:08x}")).collect();
    let mut distinct = std::collections::BTreeSet::new();
    for id in &ids {
        let j = jitter(id, &hourly, true, &at(10, 0));
        assert_eq!(j, jitter(id, &hourly, true, &at(10, 0)), "deterministic");
        assert_eq!(
            j,
            jitter(id, &hourly, true, &at(14, 0)),
            "the same for every firing"
        );
        assert!(
            j >= chrono::Duration::zero() && j <= chrono::Duration::minutes(6),
            "{j}"
        );
        distinct.insert(j.num_milliseconds());
        let d = jitter(id, &daily, true, &at(9, 0));
        assert!(
            d >= chrono::Duration::zero()
                && d <= chrono::Duration::from_std(MAX_RECURRING_JITTER).unwrap(),
            "{d}"
        );
        let early = jitter(id, &daily, false, &at(9, 0));
        assert!(
            early <= chrono::Duration::zero()
                && -early <= chrono::Duration::from_std(ONE_SHOT_EARLY).unwrap(),
            "{early}"
        );
        let odd = parse_cron("7 9 * * *").unwrap();
        assert_eq!(jitter(id, &odd, false, &at(9, 7)), chrono::Duration::zero());
    }
    assert!(
        distinct.len() > 150,
        "spread across ids: {}",
        distinct.len()
    );
    // The largest daily delays reach well past a minute (the cap is 15 minutes).
    assert!(
        ids.iter()
            .any(|id| jitter(id, &daily, true, &at(9, 0)) > chrono::Duration::minutes(10))
    );

    // The scheduler fires at the jittered time, not before.
    let dir = tempfile::tempdir().unwrap();
    let s = CronScheduler::new(dir.path().join("jobs.json")).unwrap();
    let t0 = at(8, 0);
    let job = s.add("0 * * * *", "hourly", true, false, t0).unwrap();
    let when = fire_time(&job, &t0).unwrap();
    assert_eq!(when, at(9, 0) + jitter(&job.id, &hourly, true, &at(9, 0)));
    if when > at(9, 0) {
        assert!(
            s.take_due(when - chrono::Duration::milliseconds(1))
                .unwrap()
                .is_empty()
        );
    }
    assert_eq!(s.take_due(when).unwrap().len(), 1);
    // A one-shot job never fires before it was created.
    let created = at(8, 59) + chrono::Duration::seconds(50);
    let once = s.add("0 9 * * *", "once", false, false, created).unwrap();
    assert!(fire_time(&once, &created).unwrap() >= created);
}
