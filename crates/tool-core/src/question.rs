//! Questions to the person behind a session: multiple-choice questions (AskUserQuestion's
//! input shape), what a person answered, and the [`QuestionPrompter`] a host provides to ask
//! them — on a terminal ([`LinePrompter`]), or through an MCP client (tools-mcp).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::ToolError;

/// One choice of a question.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct QuestionOption {
    /// The display text of this option (1-5 words)
    #[schemars(length(min = 1))]
    pub label: String,
    /// What this option means or what happens if it is chosen
    pub description: String,
    /// Optional preview shown when the option is focused (markdown); single-select only
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preview: Option<String>,
}

/// One question.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Question {
    /// The complete question, clear and specific, ending with a question mark
    #[schemars(length(min = 1))]
    pub question: String,
    /// A very short label shown as a chip or tag (at most 12 characters), such as "Auth method"
    #[schemars(length(min = 1, max = 12))]
    pub header: String,
    /// The available choices (2-4); "Other" is added automatically
    #[schemars(length(min = 2, max = 4))]
    pub options: Vec<QuestionOption>,
    /// Whether the user may choose more than one option (default false)
    #[serde(default)]
    pub multi_select: bool,
}

/// What a prompter got from the user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum QuestionAnswers {
    /// question text → answer (an option label, several comma-joined, or free text)
    Answered(BTreeMap<String, String>),
    /// The user did not want to answer
    Declined,
}

/// Asks the user questions. Hosts put an `Arc<dyn QuestionPrompter>` in the context's
/// services: the binary prompts on its terminal, the MCP server uses elicitation. Without
/// one (and without answers in the input) AskUserQuestion is refused with a clear message.
#[async_trait]
pub trait QuestionPrompter: Send + Sync {
    /// Asks `questions` and returns the answers.
    async fn ask(&self, questions: &[Question]) -> Result<QuestionAnswers, ToolError>;
}

/// A [`QuestionPrompter`] over a text terminal: prints each question with numbered options
/// to `output` and reads a line per question from `input` (numbers, comma-separated for
/// multi-select, or free text for "Other"; an empty line or end of input declines).
///
/// The reads and writes block, so they run on the runtime's blocking threads, never on the
/// task that asks.
pub struct LinePrompter<R, W> {
    io: Arc<Mutex<(R, W)>>,
}

impl<R, W> LinePrompter<R, W> {
    /// A prompter reading from `input` and writing to `output`.
    pub fn new(input: R, output: W) -> Self {
        LinePrompter {
            io: Arc::new(Mutex::new((input, output))),
        }
    }
}

#[async_trait]
impl<R, W> QuestionPrompter for LinePrompter<R, W>
where
    R: std::io::BufRead + Send + 'static,
    W: std::io::Write + Send + 'static,
{
    async fn ask(&self, questions: &[Question]) -> Result<QuestionAnswers, ToolError> {
        let io = Arc::clone(&self.io);
        let questions = questions.to_vec();
        tokio::task::spawn_blocking(move || {
            let mut guard = io
                .lock()
                .map_err(|_| ToolError::fatal("the terminal prompter is unusable after a panic"))?;
            let (input, output) = &mut *guard;
            ask_lines(&questions, input, output)
        })
        .await
        .map_err(|e| {
            ToolError::fatal(format!("internal error: the terminal prompter failed: {e}"))
        })?
    }
}

/// Asks `questions` on `output`, reading the answers from `input`.
fn ask_lines(
    questions: &[Question],
    input: &mut impl std::io::BufRead,
    output: &mut impl std::io::Write,
) -> Result<QuestionAnswers, ToolError> {
    let io_err = |e: std::io::Error| ToolError::io("terminal", e);
    let mut answers = BTreeMap::new();
    for q in questions {
        writeln!(output, "\n[{}] {}", q.header, q.question).map_err(io_err)?;
        for (i, o) in q.options.iter().enumerate() {
            writeln!(output, "  {}. {} — {}", i + 1, o.label, o.description).map_err(io_err)?;
        }
        let hint = if q.multi_select {
            "numbers separated by commas"
        } else {
            "a number"
        };
        write!(
            output,
            "Answer ({hint}, or type your own; empty line to decline): "
        )
        .map_err(io_err)?;
        output.flush().map_err(io_err)?;
        let mut line = String::new();
        if input.read_line(&mut line).map_err(io_err)? == 0 || line.trim().is_empty() {
            return Ok(QuestionAnswers::Declined);
        }
        answers.insert(q.question.clone(), parse_choice(q, line.trim()));
    }
    Ok(QuestionAnswers::Answered(answers))
}

/// Maps "1,3" to the option labels; anything else is free text.
fn parse_choice(q: &Question, line: &str) -> String {
    let picks: Option<Vec<&str>> = line
        .split(',')
        .map(|p| {
            p.trim()
                .parse::<usize>()
                .ok()
                .and_then(|n| n.checked_sub(1))
                .and_then(|i| q.options.get(i))
                .map(|o| o.label.as_str())
        })
        .collect();
    match picks {
        Some(labels) if !labels.is_empty() && (q.multi_select || labels.len() == 1) => {
            labels.join(", ")
        }
        _ => line.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn question(text: &str, multi_select: bool) -> Question {
        Question {
            question: text.to_owned(),
            header: "h".to_owned(),
            options: ["A", "B"]
                .iter()
                .map(|l| QuestionOption {
                    label: (*l).to_owned(),
                    description: String::new(),
                    preview: None,
                })
                .collect(),
            multi_select,
        }
    }

    #[tokio::test(flavor = "current_thread")]
    async fn the_terminal_prompter_reads_off_the_runtime_thread() {
        // On a current-thread runtime a read on the asking task would hold the only thread;
        // here the answer comes from a blocking thread while a timer on this one still runs.
        use std::io::Write;
        let (reader, mut writer) = std::io::pipe().unwrap();
        // Should the read block this thread, the timer never fires; this declines after a
        // while instead, so the test fails rather than hangs.
        let mut fallback = writer.try_clone().unwrap();
        std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_secs(10));
            let _ = fallback.write_all(b"\n\n");
        });
        let prompter = LinePrompter::new(std::io::BufReader::new(reader), Vec::new());
        let questions = [question("Which?", false), question("Many?", true)];
        let ask = prompter.ask(&questions);
        let typist = async {
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            writer.write_all(b"2\n1, 2\n").unwrap();
        };
        let (answers, ()) = tokio::join!(ask, typist);
        let QuestionAnswers::Answered(a) = answers.unwrap() else {
            panic!("declined")
        };
        assert_eq!(a["Which?"], "B");
        assert_eq!(a["Many?"], "A, B");
    }

    #[tokio::test]
    async fn an_empty_line_or_the_end_of_input_declines() {
        let questions = [question("Which?", false)];
        let p = LinePrompter::new(std::io::Cursor::new(b"\n".to_vec()), Vec::new());
        assert_eq!(p.ask(&questions).await.unwrap(), QuestionAnswers::Declined);
        let p = LinePrompter::new(std::io::Cursor::new(Vec::new()), Vec::new());
        assert_eq!(p.ask(&questions).await.unwrap(), QuestionAnswers::Declined);
    }

    #[test]
    fn choices_map_to_labels_and_anything_else_is_free_text() {
        let single = question("Which?", false);
        assert_eq!(parse_choice(&single, "2"), "B");
        assert_eq!(parse_choice(&single, "1, 2"), "1, 2");
        assert_eq!(parse_choice(&single, "3"), "3");
        assert_eq!(parse_choice(&question("Many?", true), "2,1"), "B, A");
    }
}
