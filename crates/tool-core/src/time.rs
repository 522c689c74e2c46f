//! Waiting for an optional time limit: a future that sleeps for the limit, or never
//! completes when there is none, to race against the work in a `select!`.

use std::time::Duration;

/// Sleeps for `limit`, or never completes when it is `None`.
pub async fn sleep_or_never(limit: Option<Duration>) {
    match limit {
        Some(d) => tokio::time::sleep(d).await,
        None => std::future::pending::<()>().await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_limit_ends_and_none_never_does() {
        let limited = tokio::time::timeout(
            Duration::from_secs(5),
            sleep_or_never(Some(Duration::from_millis(10))),
        )
        .await;
        assert!(limited.is_ok());
        let never = tokio::time::timeout(Duration::from_millis(50), sleep_or_never(None)).await;
        assert!(never.is_err());
    }
}
