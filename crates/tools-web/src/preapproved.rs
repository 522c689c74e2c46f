//! The documentation hosts WebFetch may read without asking (the reference's preapproved
//! list). They apply to WebFetch only: they are not a network allow-list, and a deny or ask
//! rule for the domain still wins.

use url::Url;

/// Hosts, or `host/path` prefixes matched on a path-segment boundary.
pub const PREAPPROVED: &[&str] = &[
    // Anthropic
    "platform.claude.com",
    "code.claude.com",
    "modelcontextprotocol.io",
    "github.com/anthropics",
    "agentskills.io",
    // Languages
    "docs.python.org",
    "en.cppreference.com",
    "docs.oracle.com",
    "learn.microsoft.com",
    "developer.mozilla.org",
    "go.dev",
    "pkg.go.dev",
    "www.php.net",
    "docs.swift.org",
    "kotlinlang.org",
    "ruby-doc.org",
    "doc.rust-lang.org",
    "www.typescriptlang.org",
    // Web and JavaScript
    "react.dev",
    "angular.io",
    "vuejs.org",
    "nextjs.org",
    "expressjs.com",
    "nodejs.org",
    "bun.sh",
    "jquery.com",
    "getbootstrap.com",
    "tailwindcss.com",
    "d3js.org",
    "threejs.org",
    "redux.js.org",
    "webpack.js.org",
    "jestjs.io",
    "reactrouter.com",
    // Python
    "docs.djangoproject.com",
    "flask.palletsprojects.com",
    "fastapi.tiangolo.com",
    "pandas.pydata.org",
    "numpy.org",
    "www.tensorflow.org",
    "pytorch.org",
    "scikit-learn.org",
    "matplotlib.org",
    "requests.readthedocs.io",
    "jupyter.org",
    // PHP
    "laravel.com",
    "symfony.com",
    "wordpress.org",
    // Java
    "docs.spring.io",
    "hibernate.org",
    "tomcat.apache.org",
    "gradle.org",
    "maven.apache.org",
    // .NET
    "asp.net",
    "dotnet.microsoft.com",
    "nuget.org",
    "blazor.net",
    // Mobile
    "reactnative.dev",
    "docs.flutter.dev",
    "developer.apple.com",
    "developer.android.com",
    // Data science
    "keras.io",
    "spark.apache.org",
    "huggingface.co",
    "www.kaggle.com",
    // Databases
    "www.mongodb.com",
    "redis.io",
    "www.postgresql.org",
    "dev.mysql.com",
    "www.sqlite.org",
    "graphql.org",
    "prisma.io",
    // Cloud and operations
    "docs.aws.amazon.com",
    "cloud.google.com",
    "kubernetes.io",
    "www.docker.com",
    "www.terraform.io",
    "www.ansible.com",
    "vercel.com/docs",
    "docs.netlify.com",
    "devcenter.heroku.com",
    // Testing
    "cypress.io",
    "selenium.dev",
    // Games
    "docs.unity.com",
    "docs.unrealengine.com",
    // Tools
    "git-scm.com",
    "nginx.org",
    "httpd.apache.org",
];

/// Whether `url` is on a preapproved host (or under a preapproved path prefix). Only https
/// URLs qualify here: plain http is not preapproved.
pub fn is_preapproved(url: &Url) -> bool {
    let Some(host) = url.host_str() else {
        return false;
    };
    if url.scheme() != "https" || url.port().is_some() {
        return false;
    }
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    let path = url.path();
    PREAPPROVED.iter().any(|entry| match entry.split_once('/') {
        None => *entry == host,
        Some((entry_host, prefix)) => {
            entry_host == host
                && path
                    .strip_prefix('/')
                    .and_then(|p| p.strip_prefix(prefix))
                    .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check(url: &str, expected: bool) {
        assert_eq!(is_preapproved(&Url::parse(url).unwrap()), expected, "{url}");
    }

    #[test]
    fn hosts_and_prefixes() {
        check("https://docs.python.org/3/library/", true);
        check("https://DOC.rust-lang.org/std/", true);
        check("https://github.com/anthropics", true);
        check("https://github.com/anthropics/claude-code/issues", true);
        check("https://github.com/anthropics-evil/x", false);
        check("https://github.com/other/repo", false);
        check("https://vercel.com/docs/functions", true);
        check("https://vercel.com/blog", false);
        check("https://evil.docs.python.org/", false);
        check("https://example.com/", false);
        check("http://docs.python.org/3/", false);
        check("https://docs.python.org:8443/", false);
    }
}
