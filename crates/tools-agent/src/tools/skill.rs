//! Skill: runs a skill from `.agent-tools/skills/<name>/SKILL.md` (project) or
//! `<state dir>/skills/<name>/SKILL.md` (user): the result carries the skill's instructions
//! for the host to inject.

use std::path::{Path, PathBuf};

use tool_core::Approval;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tool_core::{
    PermissionDecision, PermissionRule, RuleBehavior, RuleSource, RuleSourceKind, SourcedRule,
    ToolCategory, ToolContext, ToolError, ToolMeta, ToolResult, TypedTool, ValidationResult,
};

use crate::stores::frontmatter;
use crate::stores::project::{self, Kind, PROJECT_PREFIX};

/// Each skill description in a listing is cut to this many characters.
pub const SKILL_DESCRIPTION_CAP: usize = 250;
/// The default character budget of a skill listing (1% of a 200k-token context, at four
/// characters a token).
pub const SKILL_LISTING_BUDGET: usize = 8_000;

/// Where a skill was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SkillSource {
    /// `.agent-tools/skills/` of the project
    Project,
    /// `<state dir>/skills/` of the user
    User,
}

/// A skill, read from its SKILL.md.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SkillInfo {
    /// The name (front matter `name`, else the directory name)
    pub name: String,
    /// What it is for
    pub description: String,
    /// Tools the skill may use without asking (front matter `allowed-tools`)
    pub allowed_tools: Vec<String>,
    /// A model the skill asks for
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Whether only the user may invoke it (front matter `disable-model-invocation`)
    pub disable_model_invocation: bool,
    /// The instructions (the markdown after the front matter)
    pub instructions: String,
    /// The skill's directory
    pub base_dir: PathBuf,
    /// Project or user
    pub source: SkillSource,
    /// A problem reading the file (such skills are listed but cannot run)
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// A skill from the text of its SKILL.md in `dir`. `approved`: a person approved the file
/// (the person's own files always are); otherwise the keys that widen a session
/// (`allowed-tools`, `model`, ...) are dropped first.
fn parse_skill(dir: &Path, text: &str, source: SkillSource, approved: bool) -> SkillInfo {
    let file = dir.join("SKILL.md");
    let dir_name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut info = SkillInfo {
        name: dir_name,
        description: String::new(),
        allowed_tools: Vec::new(),
        model: None,
        disable_model_invocation: false,
        instructions: String::new(),
        base_dir: dir.to_path_buf(),
        source,
        error: None,
    };
    match frontmatter::parse(text) {
        Ok(mut doc) => {
            if !approved {
                project::narrow(Kind::Skill, &mut doc);
            }
            if let Some(name) = doc.get("name").filter(|n| !n.trim().is_empty()) {
                info.name = name.trim().to_owned();
            }
            info.description = doc.get("description").unwrap_or_default();
            info.allowed_tools = doc
                .keys
                .get("allowed-tools")
                .map(|v| v.list())
                .unwrap_or_default();
            info.model = doc.get("model").filter(|m| !m.is_empty() && m != "inherit");
            info.disable_model_invocation = doc
                .keys
                .get("disable-model-invocation")
                .is_some_and(|v| v.is_true());
            info.instructions = doc.body.trim().to_owned();
        }
        Err(e) => info.error = Some(format!("{}: {e}", file.display())),
    }
    info
}

/// A skill whose file could not be read, listed with the problem (it cannot run).
fn unreadable(dir: &Path, source: SkillSource, error: String) -> SkillInfo {
    let mut info = parse_skill(dir, "", source, false);
    info.error = Some(error);
    info
}

/// Every skill of the session: the person's own (`<state dir>/skills/`), then the
/// project's (`.agent-tools/skills/`), each sorted by name. A project skill never takes
/// the name of the person's own skill (compared without case): it is listed as
/// `project:<name>` instead, so `Skill(deploy)` and `skill: "deploy"` always mean the
/// person's. A project SKILL.md a person has not approved (`agent-tools trust`) loads
/// without `allowed-tools`, `model` and the other keys that widen a session; one reached
/// through a symbolic link is listed with that problem and cannot run.
pub fn list_skills(ctx: &ToolContext) -> Vec<SkillInfo> {
    let mut out: Vec<SkillInfo> = Vec::new();
    if let Ok(entries) = std::fs::read_dir(ctx.state_dir().join("skills")) {
        let mut found: Vec<SkillInfo> = entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.is_dir())
            .filter_map(|dir| {
                let text = std::fs::read_to_string(dir.join("SKILL.md")).ok()?;
                Some(parse_skill(&dir, &text, SkillSource::User, true))
            })
            .collect();
        found.sort_by(|a, b| a.name.cmp(&b.name));
        for skill in found {
            if !out.iter().any(|o| o.name == skill.name) {
                out.push(skill);
            }
        }
    }
    let root = project::project_root(ctx);
    let files = project::skill_files(&root);
    if files.is_empty() {
        return out;
    }
    let approvals = project::approvals(&root, ctx.state_dir());
    let mut found: Vec<SkillInfo> = files
        .iter()
        .filter_map(|file| {
            let dir = file.parent()?;
            Some(match project::read(&root, file, &approvals) {
                Ok(f) => match String::from_utf8(f.bytes) {
                    Ok(text) => parse_skill(
                        dir,
                        &text,
                        SkillSource::Project,
                        f.status == Approval::Approved,
                    ),
                    Err(e) => unreadable(
                        dir,
                        SkillSource::Project,
                        format!("{}: not UTF-8 text: {e}", file.display()),
                    ),
                },
                Err(e) => unreadable(dir, SkillSource::Project, e),
            })
        })
        .collect();
    found.sort_by(|a, b| a.name.cmp(&b.name));
    for mut skill in found {
        if skill.name.contains(':') {
            skill.error = Some(format!(
                "{}: name \"{}\": ':' is reserved for {PROJECT_PREFIX}<name>, the name a project skill gets when the person's own skill has its name",
                skill.base_dir.join("SKILL.md").display(),
                skill.name
            ));
        } else if project::is_taken(&skill.name, out.iter().map(|o| o.name.as_str())) {
            skill.name = format!("{PROJECT_PREFIX}{}", skill.name);
        }
        if !out.iter().any(|o| o.name == skill.name) {
            out.push(skill);
        }
    }
    out
}

/// The listing a host shows the model: `- name: description` for skills the model may
/// invoke, descriptions cut to [`SKILL_DESCRIPTION_CAP`], the whole within `budget`
/// characters (later skills are left out, with a count).
pub fn skill_listing(ctx: &ToolContext, budget: usize) -> String {
    let skills: Vec<SkillInfo> = list_skills(ctx)
        .into_iter()
        .filter(|s| !s.disable_model_invocation && s.error.is_none())
        .collect();
    let mut out = String::new();
    for (i, s) in skills.iter().enumerate() {
        let description = tool_core::cut_middle(&s.description, SKILL_DESCRIPTION_CAP);
        let line = format!("- {}: {}\n", s.name, description.replace('\n', " "));
        if out.len() + line.len() > budget {
            out.push_str(&format!("({} more skills not listed)\n", skills.len() - i));
            break;
        }
        out.push_str(&line);
    }
    out
}

/// Input of Skill.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SkillInput {
    /// The skill name, such as "pdf" (a leading "/" is accepted)
    #[schemars(length(max = tool_core::MAX_NAME_CHARS))]
    pub skill: String,
    /// Optional arguments for the skill
    #[serde(default)]
    pub args: Option<String>,
}

/// Output of Skill.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SkillOutput {
    /// Always true (failures are errors)
    pub success: bool,
    /// The skill's name
    pub command_name: String,
    /// The instructions to inject into the conversation (arguments substituted)
    pub instructions: String,
    /// Tools the skill may use without asking
    pub allowed_tools: Vec<String>,
    /// A model the skill asks for
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The skill's directory (its other files are relative to it)
    pub base_dir: PathBuf,
}

/// The Skill tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct Skill;

fn clean_name(raw: &str) -> &str {
    raw.trim().trim_start_matches('/')
}

fn find(ctx: &ToolContext, name: &str) -> Option<SkillInfo> {
    list_skills(ctx).into_iter().find(|s| s.name == name)
}

fn rule_matches(content: &str, name: &str) -> bool {
    match content.strip_suffix(":*") {
        Some(prefix) => name == prefix || name.starts_with(&format!("{prefix}:")),
        None => content == name,
    }
}

/// The question a skill that widens the session asks: which skill, from where, and what
/// approving it grants for the rest of the session.
fn grant_question(skill: &SkillInfo) -> String {
    let source = match skill.source {
        SkillSource::User => "your own skill",
        SkillSource::Project => "a skill of this project",
    };
    let mut text = format!(
        "Execute skill: {} ({source}, {})?",
        skill.name,
        skill.base_dir.join("SKILL.md").display()
    );
    if !skill.allowed_tools.is_empty() {
        text.push_str(&format!(
            " Allowing it grants these tools without asking, for the rest of this session: {}.",
            skill.allowed_tools.join(", ")
        ));
    }
    if let Some(model) = &skill.model {
        text.push_str(&format!(" It asks for the model {model}."));
    }
    text
}

#[async_trait]
impl TypedTool for Skill {
    type Input = SkillInput;
    type Output = SkillOutput;
    const META: ToolMeta = ToolMeta::new("Skill")
        .describe("Execute a skill within the main conversation. Skills are folders of instructions (SKILL.md) and resources that give you specialised capabilities for a task; the available skills are listed to you by name and description.\n\nWhen a listed skill matches the user's request, invoking it is a BLOCKING REQUIREMENT: call this tool before doing anything else about the task. Pass the skill's name in `skill` and any arguments in `args`. The result holds the skill's instructions: follow them. Do not invoke a skill that is already loaded in this conversation, and never invoke one that is not listed.")
        .hint("run a skill's instructions")
        .category(ToolCategory::Agent);

    async fn validate(&self, input: &SkillInput, ctx: &ToolContext) -> ValidationResult {
        let name = clean_name(&input.skill);
        if name.is_empty() {
            return ValidationResult::invalid_code(
                format!("Invalid skill format: {}", input.skill),
                1,
            );
        }
        let Some(skill) = find(ctx, name) else {
            return ValidationResult::invalid_code(format!("Unknown skill: {name}"), 2);
        };
        if let Some(error) = &skill.error {
            return ValidationResult::invalid_code(
                format!("Skill {name} cannot be loaded: {error}"),
                2,
            );
        }
        if skill.disable_model_invocation {
            return ValidationResult::invalid_code(
                format!(
                    "Skill {name} cannot be used with Skill tool due to disable-model-invocation"
                ),
                4,
            );
        }
        if skill.instructions.is_empty() {
            return ValidationResult::invalid_code(
                format!("Skill {name} is not a prompt-based skill"),
                5,
            );
        }
        ValidationResult::Valid
    }
    async fn check_permission(&self, input: &SkillInput, ctx: &ToolContext) -> PermissionDecision {
        let name = clean_name(&input.skill).to_owned();
        if let Some(rule) = ctx
            .permissions()
            .match_content("Skill", |content, _| rule_matches(content, &name))
        {
            return match rule.behavior {
                RuleBehavior::Deny => {
                    PermissionDecision::deny("Skill execution blocked by permission rules")
                }
                RuleBehavior::Allow => PermissionDecision::Allow,
                RuleBehavior::Ask => PermissionDecision::ask(
                    find(ctx, &name)
                        .map_or_else(|| format!("Execute skill: {name}"), |s| grant_question(&s)),
                    None,
                ),
            };
        }
        // A skill that grants itself tools or switches the model changes what the session
        // may do: that needs approval, and the question says what it grants. Instructions
        // alone are safe.
        let Some(skill) = find(ctx, &name) else {
            return PermissionDecision::Allow;
        };
        if skill.allowed_tools.is_empty() && skill.model.is_none() {
            return PermissionDecision::Allow;
        }
        PermissionDecision::ask(
            grant_question(&skill),
            Some(PermissionRule::with_content("Skill", name)),
        )
    }
    async fn call(
        &self,
        input: SkillInput,
        ctx: &ToolContext,
    ) -> Result<ToolResult<SkillOutput>, ToolError> {
        let name = clean_name(&input.skill);
        let skill =
            find(ctx, name).ok_or_else(|| ToolError::respond(format!("Unknown skill: {name}")))?;
        let args = input.args.unwrap_or_default();
        let mut instructions = skill.instructions.clone();
        if instructions.contains("$ARGUMENTS") {
            instructions = instructions.replace("$ARGUMENTS", &args);
        } else if !args.trim().is_empty() {
            instructions.push_str(&format!("\n\nARGUMENTS: {}", args.trim()));
        }
        let mut text = format!(
            "Launching skill: {}\n\n<skill name=\"{}\" base-dir=\"{}\">\n{}\n</skill>",
            skill.name,
            skill.name,
            skill.base_dir.display(),
            instructions
        );
        // The skill's allowed-tools become session allow rules, so the skill's own tool calls
        // do not ask again; calls were approved above when a skill has any.
        for tool in &skill.allowed_tools {
            if let Some(rule) = PermissionRule::parse(tool) {
                ctx.permissions().add_rule(SourcedRule {
                    rule,
                    behavior: RuleBehavior::Allow,
                    source: RuleSource {
                        kind: RuleSourceKind::Session,
                        file: Some(skill.base_dir.join("SKILL.md")),
                        root: ctx.original_cwd().to_path_buf(),
                    },
                });
            }
        }
        if !skill.allowed_tools.is_empty() {
            text.push_str(&format!(
                "\nAllowed tools for this skill: {}",
                skill.allowed_tools.join(", ")
            ));
        }
        Ok(ToolResult::ok(SkillOutput {
            success: true,
            command_name: skill.name,
            instructions,
            allowed_tools: skill.allowed_tools,
            model: skill.model,
            base_dir: skill.base_dir,
        })
        .with_text(text))
    }
}
