//! GitHub Copilot CLI: `copilot -p PROMPT --output-format json`.
//!
//! One session event per line, each `{type, data, id, timestamp, parentId}`
//! (`ephemeral: true` on those the session log does not keep), and a last
//! `result` line:
//! ```text
//! {"type":"user.message","data":{"content":"Run echo.","messageId":"2f88…",…},"id":"…","timestamp":"2026-11-26T00:50:07.030Z","parentId":"…"}
//! {"type":"assistant.message_delta","data":{"messageId":"cc1a…","deltaContent":"I will run a"},"ephemeral":true,…}
//! {"type":"assistant.tool_call_delta","data":{"toolCallId":"call_…","toolName":"bash","inputDelta":"{\"command\": \"ech"},"ephemeral":true,…}
//! {"type":"assistant.message","data":{"messageId":"cc1a…","content":"I will run a command.","toolRequests":[{"toolCallId":"call_…","name":"bash","arguments":{…}}],…},…}
//! {"type":"tool.execution_start","data":{"toolCallId":"call_…","toolName":"bash","arguments":{…}},…}
//! {"type":"tool.execution_complete","data":{"toolCallId":"call_…","success":true,"result":{"content":"hello\n…","detailedContent":"…"}},…}
//! {"type":"result","timestamp":"…","sessionId":"280e…","exitCode":0,"usage":{"premiumRequests":0,…}}
//! ```
//! Text, reasoning and tool arguments stream as deltas and arrive again,
//! whole, in `assistant.message` / `assistant.reasoning`: they are sent
//! once, from the deltas when there were any. A subagent's events carry
//! `parentToolCallId`, the `task` call that started it. `session.error`
//! says why a run failed and `abort` that it was interrupted; the `result`
//! ends the run. Every other event type the CLI documents goes out as RAW.

use std::borrow::Cow;
use std::fmt::Write as _;

use serde::Deserialize;
use serde_json::value::RawValue;

use super::{input_text, parse_record, record_json, Held, Line, LineError, Translate};
use crate::agui::{code, Content, Emitter, MetaValue, Outcome, Role, Usage};
use crate::base::json::{self, text_of, timestamp_ms};

const SOURCE: &str = "copilot";

/// How `session.error` begins when a model call failed for good.
const MODEL_FAILED: &str = "Failed to get response from the AI model";

/// One line: a session event, or the `result`.
#[derive(Deserialize, Default)]
struct Record<'a> {
    #[serde(rename = "type", borrow, default, deserialize_with = "json::opt_str")]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow)]
    data: Option<Data<'a>>,
    #[serde(borrow, default, deserialize_with = "json::opt_str")]
    timestamp: Option<Cow<'a, str>>,
    /// `result`'s.
    #[serde(
        rename = "sessionId",
        borrow,
        default,
        deserialize_with = "json::opt_str"
    )]
    session_id: Option<Cow<'a, str>>,
    #[serde(rename = "exitCode")]
    exit_code: Option<i64>,
    /// A subagent's events: the agent's id (its `subagent.started` names
    /// the tool call that started it).
    #[serde(
        rename = "agentId",
        borrow,
        default,
        deserialize_with = "json::opt_str"
    )]
    agent_id: Option<Cow<'a, str>>,
}

/// An event's `data`: every field the translated event types have.
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct Data<'a> {
    #[serde(borrow, default, deserialize_with = "json::opt_str")]
    message_id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    delta_content: Option<&'a RawValue>,
    #[serde(borrow)]
    content: Option<&'a RawValue>,
    #[serde(borrow)]
    tool_requests: Option<Vec<ToolRequest<'a>>>,
    #[serde(borrow, default, deserialize_with = "json::opt_str")]
    reasoning_id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    reasoning_text: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "json::opt_str")]
    tool_call_id: Option<Cow<'a, str>>,
    #[serde(borrow, default, deserialize_with = "json::opt_str")]
    tool_name: Option<Cow<'a, str>>,
    #[serde(borrow)]
    input_delta: Option<&'a RawValue>,
    #[serde(borrow)]
    arguments: Option<&'a RawValue>,
    success: Option<bool>,
    #[serde(borrow)]
    result: Option<&'a RawValue>,
    #[serde(borrow)]
    error: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "json::opt_str")]
    parent_tool_call_id: Option<Cow<'a, str>>,
    #[serde(borrow, default, deserialize_with = "json::opt_str")]
    agent_name: Option<Cow<'a, str>>,
    #[serde(borrow, default, deserialize_with = "json::opt_str")]
    agent_description: Option<Cow<'a, str>>,
    #[serde(borrow, default, deserialize_with = "json::opt_str")]
    session_id: Option<Cow<'a, str>>,
    #[serde(borrow, default, deserialize_with = "json::opt_str")]
    model: Option<Cow<'a, str>>,
    #[serde(borrow)]
    message: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "json::opt_str")]
    error_type: Option<Cow<'a, str>>,
    status_code: Option<u64>,
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    cache_read_tokens: Option<u64>,
    cache_write_tokens: Option<u64>,
    reasoning_tokens: Option<u64>,
}

/// A tool call of a complete `assistant.message`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ToolRequest<'a> {
    #[serde(borrow, default, deserialize_with = "json::opt_str")]
    tool_call_id: Option<Cow<'a, str>>,
    #[serde(borrow, default, deserialize_with = "json::opt_str")]
    name: Option<Cow<'a, str>>,
    #[serde(borrow)]
    arguments: Option<&'a RawValue>,
}

/// A tool's result (`{content, detailedContent, …}`) or error
/// (`{message, code}`; a subagent's is a string).
#[derive(Deserialize)]
struct Said<'a> {
    #[serde(borrow)]
    content: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "json::opt_str")]
    message: Option<Cow<'a, str>>,
    #[serde(borrow, default, deserialize_with = "json::opt_str")]
    code: Option<Cow<'a, str>>,
}

/// The event types the CLI documents (its session-events schema) that have
/// no AG-UI event of their own: kept as RAW, and not unknown to `--strict`.
/// Sorted, for a binary search.
static QUIET: &[&str] = &[
    "agent.interrupted",
    "assistant.fusion_phase_activity",
    "assistant.fusion_phase_completed",
    "assistant.fusion_phase_failed",
    "assistant.fusion_phase_started",
    "assistant.idle",
    "assistant.intent",
    "assistant.message_start",
    "assistant.server_tool_progress",
    "assistant.streaming_delta",
    "assistant.turn_end",
    "assistant.turn_retry",
    "assistant.turn_start",
    "auto_mode_switch.completed",
    "auto_mode_switch.requested",
    "capabilities.changed",
    "command.completed",
    "command.execute",
    "command.queued",
    "commands.changed",
    "elicitation.completed",
    "elicitation.requested",
    "exit_plan_mode.completed",
    "exit_plan_mode.requested",
    "external_tool.completed",
    "external_tool.requested",
    "hook.end",
    "hook.progress",
    "hook.start",
    "human_response.recorded",
    "mcp.headers_refresh_completed",
    "mcp.headers_refresh_required",
    "mcp.oauth_completed",
    "mcp.oauth_recovery_completed",
    "mcp.oauth_required",
    "mcp.prompts.list_changed",
    "mcp.resources.list_changed",
    "mcp.tools.list_changed",
    "mcp_app.tool_call_complete",
    "model.call_failure",
    "model.call_final_result",
    "model.call_finished",
    "model.call_start",
    "pending_messages.modified",
    "permission.assentDetected",
    "permission.carriedForward",
    "permission.completed",
    "permission.contextualAuthorization",
    "permission.messageAuthorization",
    "permission.messageAuthorizationDegraded",
    "permission.messageAuthorizationRead",
    "permission.requested",
    "prompt_cache_break",
    "sampling.completed",
    "sampling.requested",
    "sandbox.decision",
    "session.auto_mode_resolved",
    "session.auto_tier_recommendation",
    "session.auto_tier_switch_failed",
    "session.autopilot_objective_changed",
    "session.autopilot_stopped",
    "session.background_tasks_changed",
    "session.binary_asset",
    "session.canvas.closed",
    "session.canvas.opened",
    "session.canvas.recorded",
    "session.canvas.registry_changed",
    "session.canvas.removed",
    "session.canvas.unavailable",
    "session.compaction_complete",
    "session.compaction_start",
    "session.completion_receipt",
    "session.context_changed",
    "session.context_cleared",
    "session.custom_agents_updated",
    "session.custom_notification",
    "session.extensions.attachments_pushed",
    "session.extensions_loaded",
    "session.fusion_change_checkpoint",
    "session.fusion_commit_started",
    "session.fusion_completed",
    "session.fusion_handoff",
    "session.fusion_resolved",
    "session.fusion_route_failed",
    "session.fusion_route_started",
    "session.handoff",
    "session.idle",
    "session.indexed_search",
    "session.info",
    "session.managed_plugin_progress",
    "session.managed_settings_enforced",
    "session.managed_settings_resolved",
    "session.mcp_server_needs_reconnect",
    "session.mcp_server_removed",
    "session.mcp_server_status_changed",
    "session.mcp_server_tools_loaded",
    "session.mcp_servers_loaded",
    "session.memory_changed",
    "session.mode_changed",
    "session.mode_notice_delivered",
    "session.model_change",
    "session.model_deselected",
    "session.permission_recovery",
    "session.permissions_changed",
    "session.plan_changed",
    "session.quota_observation",
    "session.remote_steerable_changed",
    "session.request_body_compression_disabled",
    "session.schedule_cancelled",
    "session.schedule_created",
    "session.schedule_rearmed",
    "session.session_limits_changed",
    "session.shutdown",
    "session.skills_loaded",
    "session.snapshot_rewind",
    "session.task_complete",
    "session.title_changed",
    "session.todos_changed",
    "session.truncation",
    "session.usage_checkpoint",
    "session.usage_info",
    "session.usage_record",
    "session.warning",
    "session.workspace_file_changed",
    "session_limits_exhausted.completed",
    "session_limits_exhausted.requested",
    "skill.context_delivered",
    "skill.context_delivered_ref",
    "skill.invoked",
    "skill.invoked_ref",
    "subagent.configured",
    "subagent.deselected",
    "subagent.selected",
    "system.message",
    "system.notification",
    "tool.execution_partial_result",
    "tool.execution_progress",
    "tool.shell_output",
    "tool.user_requested",
    "tool_search.activated",
    "ui.ephemeral_query",
    "user_input.completed",
    "user_input.requested",
    "workflow.run_settled",
    "workflow.run_started",
    "workflow.run_updated",
];

/// Token counts of the run's model calls (`assistant.usage`), summed; or,
/// from versions without it, the output tokens each `assistant.message`
/// counts.
#[derive(Clone, Default)]
struct Tokens {
    model: Held,
    seen: bool,
    /// `assistant.message`s' `outputTokens`, summed (used only when no
    /// `assistant.usage` came, which counts the same calls).
    messages: Option<u64>,
    input: u64,
    output: u64,
    cache_read: u64,
    cache_write: u64,
    reasoning: u64,
}

#[derive(Default, Clone)]
pub struct Copilot {
    /// The assistant message whose text is streaming (or streamed).
    text: Held,
    /// The last reasoning streamed.
    reasoning: Held,
    /// The message whose tool calls are streaming: their parent.
    message: Held,
    /// Why the run failed (`session.error`): the message and its code.
    error: Option<(String, &'static str)>,
    /// The run was interrupted (`abort`).
    aborted: bool,
    tokens: Tokens,
    /// The run's subagents: agent id and the tool call that started it.
    agents: Vec<(String, String)>,
    /// Ids made for user messages the input gives none.
    derived: u64,
    id: String,
    scratch: Option<Vec<u8>>,
}

impl Translate for Copilot {
    fn line(&mut self, line: &mut [u8], em: &mut Emitter) -> Result<(), LineError> {
        let mut scratch = self.scratch.take();
        let mut rec = Record::default();
        let result = match parse_record(line, &mut scratch, &mut rec) {
            Ok(line) => {
                let r = self.record(&rec, line, em);
                em.set_subagent(None);
                r
            }
            Err(e) => Err(e),
        };
        self.scratch = scratch;
        result
    }

    fn finish(&mut self, _em: &mut Emitter) {}

    fn source(&self) -> &'static str {
        SOURCE
    }
}

impl Copilot {
    fn record(&mut self, rec: &Record, line: Line<'_>, em: &mut Emitter) -> Result<(), LineError> {
        em.set_timestamp(rec.timestamp.as_deref().and_then(timestamp_ms));
        let Some(kind) = rec.kind.as_deref() else {
            em.unknown("record without a type");
            raw(em, line);
            return Ok(());
        };
        if kind == "result" {
            self.result(rec, line, em);
            return Ok(());
        }
        let empty = Data::default();
        let data = rec.data.as_ref().unwrap_or(&empty);
        if !em.in_run() {
            self.start(
                data.session_id
                    .as_deref()
                    .filter(|_| kind == "session.start"),
                em,
            );
        }
        if kind == "subagent.started" {
            if let (Some(agent), Some(call)) =
                (rec.agent_id.as_deref(), data.tool_call_id.as_deref())
            {
                self.agents.push((agent.to_owned(), call.to_owned()));
            }
        }
        let agent = rec.agent_id.as_deref().and_then(|a| {
            let found = self.agents.iter().find(|(id, _)| id == a);
            found.map(|(_, call)| call.as_str())
        });
        if let Some(p) = agent.or(data.parent_tool_call_id.as_deref()) {
            if em.subagent_open(p) {
                em.set_subagent(Some(p));
            }
        }
        match kind {
            "session.start" | "session.resume" => raw(em, line),
            "session.tools_updated" => {
                // The session's model, for usage counted by messages.
                if let Some(model) = data.model.as_deref() {
                    self.tokens.model.set(model);
                }
                raw(em, line);
            }
            "user.message" => self.user(data, line, em),
            "assistant.message_delta" => self.text_delta(data, em)?,
            "assistant.reasoning_delta" => self.reasoning_delta(data, em)?,
            "assistant.reasoning" => self.reasoning_done(data, em)?,
            "assistant.tool_call_delta" => self.tool_call_delta(data, em)?,
            "assistant.message" => self.message(data, em)?,
            "assistant.usage" => {
                self.usage(data);
                raw(em, line);
            }
            "tool.execution_start" => self.tool_execution_start(data, line, em)?,
            "tool.execution_complete" => self.tool_done(data, em)?,
            "subagent.started" | "subagent.completed" | "subagent.failed" => {
                raw(em, line);
                self.subagent(kind, data, em);
            }
            "session.error" => {
                raw(em, line);
                self.session_error(data);
            }
            "abort" => {
                raw(em, line);
                self.aborted = true;
            }
            other => {
                if QUIET.binary_search(&other).is_err() {
                    em.unknown(format!("event type {other:?}"));
                }
                raw(em, line);
            }
        }
        Ok(())
    }

    /// `assistant.message_delta`: text of the assistant message it names,
    /// which is started when it is a new one.
    #[inline]
    fn text_delta(&mut self, data: &Data, em: &mut Emitter) -> Result<(), LineError> {
        let (Some(id), Some(delta)) = (data.message_id.as_deref(), data.delta_content) else {
            return Err(LineError::Shape("a delta without messageId".into()));
        };
        if self.text.get() != Some(id) {
            self.close_text(em);
            self.text.set(id);
            em.text_start(id, Role::Assistant);
        }
        self.message.set(id);
        let mut decoded = None;
        let text = input_text(delta, &mut decoded);
        if !text.is_empty() && em.is_open(id) {
            em.text_content_text(id, text);
        }
        Ok(())
    }

    /// `assistant.reasoning_delta`: text of the reasoning it names, which
    /// is started when it is a new one.
    #[inline]
    fn reasoning_delta(&mut self, data: &Data, em: &mut Emitter) -> Result<(), LineError> {
        let (Some(id), Some(delta)) = (data.reasoning_id.as_deref(), data.delta_content) else {
            return Err(LineError::Shape("a delta without reasoningId".into()));
        };
        if self.reasoning.get() != Some(id) {
            self.reasoning.set(id);
            em.reasoning_start(id);
        }
        let mut decoded = None;
        let text = input_text(delta, &mut decoded);
        if !text.is_empty() && em.is_open(id) {
            em.reasoning_content_text(id, text);
        }
        Ok(())
    }

    /// `assistant.reasoning`: the end of the reasoning that streamed, or
    /// the whole of one that did not.
    #[inline]
    fn reasoning_done(&mut self, data: &Data, em: &mut Emitter) -> Result<(), LineError> {
        let Some(id) = data.reasoning_id.as_deref() else {
            return Err(LineError::Shape(
                "assistant.reasoning without reasoningId".into(),
            ));
        };
        if self.reasoning.get() == Some(id) {
            em.reasoning_end(id);
        } else {
            self.reasoning.set(id);
            let text = data.content.map(text_of).unwrap_or_default();
            em.reasoning_message(id, &text);
        }
        Ok(())
    }

    /// `assistant.tool_call_delta`: arguments of the tool call it names,
    /// which is started when it is a new one.
    #[inline]
    fn tool_call_delta(&mut self, data: &Data, em: &mut Emitter) -> Result<(), LineError> {
        let Some(id) = data.tool_call_id.as_deref() else {
            return Err(LineError::Shape("a delta without toolCallId".into()));
        };
        if !em.tool_started(id) {
            em.close_texts();
            let name = data.tool_name.as_deref().unwrap_or("unknown");
            em.tool_start(id, name, self.message.get());
        }
        if let Some(delta) = data.input_delta.map(text_of).filter(|d| !d.is_empty()) {
            if em.is_open(id) {
                em.tool_args(id, &delta);
            }
        }
        Ok(())
    }

    /// `tool.execution_start`: nothing new for a call a message announced;
    /// a call no message announced (a tool the CLI runs itself) is started
    /// here, whole.
    #[inline]
    fn tool_execution_start(
        &mut self,
        data: &Data,
        line: Line<'_>,
        em: &mut Emitter,
    ) -> Result<(), LineError> {
        let Some(id) = data.tool_call_id.as_deref() else {
            return Err(LineError::Shape(
                "tool.execution_start without toolCallId".into(),
            ));
        };
        if em.tool_started(id) {
            raw(em, line);
        } else {
            em.close_texts();
            let name = data.tool_name.as_deref().unwrap_or("unknown");
            em.tool_start(id, name, None);
            em.tool_args_given(id, data.arguments);
            em.tool_end(id);
        }
        Ok(())
    }

    /// `subagent.started`, `.completed` and `.failed`, after their RAW
    /// event: the subagent of the tool call that runs it.
    #[inline]
    fn subagent(&mut self, kind: &str, data: &Data, em: &mut Emitter) {
        let Some(id) = data.tool_call_id.as_deref() else {
            return;
        };
        match kind {
            "subagent.started" => {
                let name = data.agent_name.as_deref().unwrap_or("subagent");
                let parent = self.message.get();
                let description = data.agent_description.as_deref();
                em.subagent_start(id, name, description, Some(id), parent);
            }
            "subagent.completed" => em.subagent_finish(id, None),
            _ => {
                let message = data.error.map(text_of);
                let message = message.as_deref().unwrap_or("the subagent failed");
                em.subagent_fail(id, message, Some("failed"));
            }
        }
    }

    /// `session.error`: why the run failed, for its end (a code from the
    /// HTTP status or the error's type).
    #[inline]
    fn session_error(&mut self, data: &Data) {
        let message = data.message.map(text_of).unwrap_or_default();
        let kind = data.error_type.as_deref().unwrap_or("");
        let code = match data.status_code {
            Some(401 | 403) => code::AUTH_ERROR,
            Some(_) => code::API_ERROR,
            None if kind.contains("auth") => code::AUTH_ERROR,
            None if kind.contains("rate") || kind.contains("quota") => code::API_ERROR,
            // The model calls' retries ran out (1.0.11 gives no status).
            None if message.starts_with(MODEL_FAILED) => code::API_ERROR,
            None => code::CLI_ERROR,
        };
        let message = if message.is_empty() {
            format!("the session failed ({kind})")
        } else {
            message.into_owned()
        };
        self.error = Some((message, code));
    }

    /// A new run: nothing of the last one is kept (the buffers are).
    fn start(&mut self, session: Option<&str>, em: &mut Emitter) {
        self.text.clear();
        self.reasoning.clear();
        self.message.clear();
        self.error = None;
        self.aborted = false;
        self.tokens = Tokens::default();
        self.agents.clear();
        self.derived = 0;
        em.start_run(session, None);
    }

    fn close_text(&mut self, em: &mut Emitter) {
        if let Some(id) = self.text.get() {
            em.text_end(id);
        }
    }

    fn user(&mut self, data: &Data, line: Line<'_>, em: &mut Emitter) {
        self.close_text(em);
        if !em.user_messages() {
            // `--no-user-messages`: the echoed prompt stays in RAW.
            return raw(em, line);
        }
        let id = match data.message_id.as_deref() {
            Some(id) => id,
            None => {
                self.derived += 1;
                self.id.clear();
                let _ = write!(self.id, "{}-user-{}", em.run_id(), self.derived);
                &self.id
            }
        };
        let text = data.content.map(text_of).unwrap_or_default();
        em.text_message(id, Role::User, &text);
    }

    /// A complete assistant message: what its deltas did not send, and the
    /// end of what they opened.
    fn message(&mut self, data: &Data, em: &mut Emitter) -> Result<(), LineError> {
        let Some(id) = data.message_id.as_deref() else {
            return Err(LineError::Shape(
                "assistant.message without messageId".into(),
            ));
        };
        if self.text.get() == Some(id) {
            em.text_end(id);
        } else {
            self.close_text(em);
            self.text.set(id);
            if let Some(text) = data.content.map(text_of).filter(|t| !t.is_empty()) {
                em.text_message(id, Role::Assistant, &text);
            }
        }
        self.message.set(id);
        if let Some(n) = data.output_tokens {
            *self.tokens.messages.get_or_insert(0) += n;
        }
        for call in data.tool_requests.iter().flatten() {
            let Some(tid) = call.tool_call_id.as_deref() else {
                continue;
            };
            if !em.tool_started(tid) {
                em.tool_start(tid, call.name.as_deref().unwrap_or("unknown"), Some(id));
                em.tool_args_given(tid, call.arguments);
            }
            em.tool_end(tid);
        }
        Ok(())
    }

    fn tool_done(&mut self, data: &Data, em: &mut Emitter) -> Result<(), LineError> {
        let Some(id) = data.tool_call_id.as_deref() else {
            return Err(LineError::Shape(
                "tool.execution_complete without toolCallId".into(),
            ));
        };
        if !em.tool_started(id) {
            // A result for a call never announced: announce it, keeping the result.
            em.tool_start(id, "unknown", None);
        }
        let result = data.result.and_then(said);
        let error = data.error.and_then(said);
        let failed = data.success == Some(false);
        let text = match (&result, &error) {
            (
                _,
                Some(Said {
                    message: Some(m), ..
                }),
            ) if failed => Cow::Borrowed(&**m),
            (
                Some(Said {
                    content: Some(c), ..
                }),
                _,
            ) => text_of(c),
            _ => data.error.map(text_of).unwrap_or_default(),
        };
        let meta = [
            ("isError", failed.then_some(MetaValue::Bool(true))),
            (
                "code",
                error
                    .as_ref()
                    .and_then(|e| e.code.as_deref())
                    .map(MetaValue::Str),
            ),
            ("result", data.result.map(MetaValue::Json)),
        ];
        em.tool_result(id, Content::Text(&text), &meta);
        Ok(())
    }

    fn usage(&mut self, data: &Data) {
        let t = &mut self.tokens;
        t.seen = true;
        t.model.set_opt(data.model.as_deref());
        t.input += data.input_tokens.unwrap_or(0);
        t.output += data.output_tokens.unwrap_or(0);
        t.cache_read += data.cache_read_tokens.unwrap_or(0);
        t.cache_write += data.cache_write_tokens.unwrap_or(0);
        t.reasoning += data.reasoning_tokens.unwrap_or(0);
    }

    /// The run's end: `exitCode` 0 is a success unless a `session.error`
    /// said otherwise; an `abort` a cancellation.
    fn result(&mut self, rec: &Record, line: Line<'_>, em: &mut Emitter) {
        if !em.in_run() && !em.run_ended() {
            self.start(rec.session_id.as_deref(), em);
        }
        self.close_text(em);
        if let Some(session) = rec.session_id.as_deref() {
            em.name_cli_thread(session);
        }
        let t = &self.tokens;
        let usage: Vec<Usage> = match (t.seen, t.messages) {
            (true, _) => vec![Usage {
                provider: None,
                model: t.model.get().map(Cow::Borrowed),
                input_tokens: Some(t.input),
                output_tokens: Some(t.output),
                total_tokens: Some(t.input + t.output),
                reasoning_tokens: (t.reasoning > 0).then_some(t.reasoning),
                cached_input_tokens: Some(t.cache_read),
                cache_write_input_tokens: (t.cache_write > 0).then_some(t.cache_write),
            }],
            (false, Some(output)) => vec![Usage {
                provider: None,
                model: t.model.get().map(Cow::Borrowed),
                input_tokens: None,
                output_tokens: Some(output),
                total_tokens: None,
                reasoning_tokens: None,
                cached_input_tokens: None,
                cache_write_input_tokens: None,
            }],
            (false, None) => Vec::new(),
        };
        let result = record_json(line);
        let exit = rec.exit_code.unwrap_or(0);
        if self.aborted {
            return em.finish_run(result, Some(Outcome::Cancelled), &usage);
        }
        match (&self.error, exit) {
            (None, 0) => em.finish_run(result, None, &usage),
            (Some((message, code)), _) => {
                em.fail_run(message, code, &usage, &[("result", result)]);
            }
            (None, n) => {
                let message = format!("the CLI exited with status {n}");
                em.fail_run(&message, code::CLI_ERROR, &usage, &[("result", result)]);
            }
        }
    }
}

/// A tool's result or error, if it is an object.
fn said(v: &RawValue) -> Option<Said<'_>> {
    serde_json::from_str(v.get()).ok()
}

/// Keep a record that parsed as RAW, copied as it is.
fn raw(em: &mut Emitter, line: Line<'_>) {
    super::raw_record(em, line, SOURCE);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn translate(lines: &[&str]) -> Vec<serde_json::Value> {
        let input = lines.join("\n");
        let out = crate::run::translate_bytes(
            crate::dialect::FromCli::named("copilot").unwrap(),
            input.as_bytes(),
        );
        String::from_utf8(out)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    fn ev(kind: &str, data: &str, extra: &str) -> String {
        format!(
            r#"{{"type":"{kind}","data":{data},"id":"e","timestamp":"2026-11-26T00:50:07.000Z","parentId":null{extra}}}"#
        )
    }

    /// Streamed text and arguments are sent once; a subagent's events
    /// (`agentId`) carry its run id; `assistant.usage` is summed into
    /// RUN_FINISHED; the session id of `result` is the CLI's thread.
    #[test]
    fn a_streamed_turn_and_a_subagent() {
        let lines = [
            ev("assistant.message_delta", r#"{"messageId":"m1","deltaContent":"Hi"}"#, ""),
            ev("assistant.tool_call_delta", r#"{"toolCallId":"t1","toolName":"task","inputDelta":"{\"a\":1}"}"#, ""),
            ev("assistant.message", r#"{"messageId":"m1","content":"Hi","toolRequests":[{"toolCallId":"t1","name":"task","arguments":{"a":1}}]}"#, ""),
            ev("assistant.usage", r#"{"model":"m","inputTokens":10,"outputTokens":2,"cacheReadTokens":4}"#, ""),
            ev("subagent.started", r#"{"toolCallId":"t1","agentName":"general-purpose","agentDescription":"d"}"#, r#","agentId":"A""#),
            ev("assistant.message", r#"{"messageId":"m2","content":"inside"}"#, r#","agentId":"A""#),
            ev("subagent.completed", r#"{"toolCallId":"t1","agentName":"general-purpose"}"#, r#","agentId":"A""#),
            ev("tool.execution_complete", r#"{"toolCallId":"t1","success":true,"result":{"content":"done"}}"#, ""),
            ev("assistant.usage", r#"{"model":"m","inputTokens":10,"outputTokens":3}"#, ""),
            r#"{"type":"result","timestamp":"2026-11-26T00:50:08.000Z","sessionId":"S","exitCode":0}"#.to_owned(),
        ];
        let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
        let out = translate(&lines);
        let kinds: Vec<&str> = out.iter().map(|e| e["type"].as_str().unwrap()).collect();
        let count = |k: &str| kinds.iter().filter(|&&x| x == k).count();
        assert_eq!(count("TEXT_MESSAGE_CONTENT"), 2, "{kinds:?}");
        assert_eq!(count("TOOL_CALL_ARGS"), 1, "{kinds:?}");
        assert_eq!(count("TOOL_CALL_END"), 1, "{kinds:?}");
        let inside = out.iter().find(|e| e["delta"] == "inside").unwrap();
        assert_eq!(inside["subagentRunId"], "t1");
        let end = out.last().unwrap();
        assert_eq!(end["type"], "RUN_FINISHED");
        assert_eq!(end["usage"][0]["inputTokens"], 20);
        assert_eq!(end["usage"][0]["outputTokens"], 5);
        assert_eq!(end["usage"][0]["cachedInputTokens"], 4);
    }

    /// Before `assistant.usage` (1.0.11), each `assistant.message` counts
    /// its own output tokens and `session.tools_updated` names the model:
    /// RUN_FINISHED has their sum. Where `assistant.usage` counts the same
    /// calls, its totals are the run's, not added to the messages'.
    #[test]
    fn output_tokens_of_messages_without_assistant_usage() {
        let usage = |lines: &[String]| {
            let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
            let last = translate(&lines).pop().unwrap();
            assert_eq!(last["type"], "RUN_FINISHED");
            last["usage"].clone()
        };
        let tools = ev("session.tools_updated", r#"{"model":"gpt-4.1"}"#, "");
        let message = |id: &str| {
            ev(
                "assistant.message",
                &format!(
                    r#"{{"messageId":"{id}","content":"x","toolRequests":[],"outputTokens":45}}"#
                ),
                "",
            )
        };
        let result = r#"{"type":"result","sessionId":"S","exitCode":0}"#.to_owned();
        let got = usage(&[tools.clone(), message("m1"), message("m2"), result.clone()]);
        assert_eq!(
            got,
            serde_json::json!([{"model": "gpt-4.1", "outputTokens": 90}])
        );
        let counted = ev(
            "assistant.usage",
            r#"{"model":"m","inputTokens":10,"outputTokens":2}"#,
            "",
        );
        let got = usage(&[tools, message("m1"), counted, result]);
        assert_eq!(got[0]["outputTokens"], 2, "{got}");
        assert_eq!(got[0]["inputTokens"], 10, "{got}");
    }

    /// How a run ends: `session.error` (its status says the code), `abort`
    /// (cancelled), or a bare non-zero exit code.
    #[test]
    fn the_end_of_a_run() {
        let end = |lines: &[String]| {
            let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
            let last = translate(&lines).pop().unwrap();
            format!(
                "{} {} {}",
                last["type"].as_str().unwrap(),
                last["code"]
                    .as_str()
                    .or(last["outcome"]["type"].as_str())
                    .unwrap_or("-"),
                last["message"].as_str().unwrap_or("-")
            )
        };
        let result =
            |code: i64| format!(r#"{{"type":"result","sessionId":"S","exitCode":{code}}}"#);
        let error = ev(
            "session.error",
            r#"{"errorType":"query","message":"401 bad key","statusCode":401}"#,
            "",
        );
        assert_eq!(end(&[error, result(1)]), "RUN_ERROR auth_error 401 bad key");
        let error = ev(
            "session.error",
            r#"{"errorType":"query","message":"boom","statusCode":500}"#,
            "",
        );
        assert_eq!(end(&[error, result(1)]), "RUN_ERROR api_error boom");
        // 1.0.11 gives no status when the retries of a model call run out.
        let message = "Failed to get response from the AI model; retried 5 times (total retry wait time: 86.8 seconds) Last error: CAPIError: 500 oops";
        let error = ev(
            "session.error",
            &format!(r#"{{"errorType":"query","message":"{message}"}}"#),
            "",
        );
        assert_eq!(
            end(&[error, result(1)]),
            format!("RUN_ERROR api_error {message}")
        );
        let abort = ev("abort", r#"{"reason":"user_initiated"}"#, "");
        assert_eq!(end(&[abort, result(0)]), "RUN_FINISHED cancelled -");
        let turn = ev("assistant.turn_start", r#"{"turnId":"0"}"#, "");
        assert_eq!(
            end(&[turn, result(2)]),
            "RUN_ERROR cli_error the CLI exited with status 2"
        );
    }

    #[test]
    fn the_quiet_list_is_sorted_and_known_types_are_not_in_it() {
        assert!(QUIET.windows(2).all(|w| w[0] < w[1]));
        for translated in [
            "assistant.message",
            "assistant.message_delta",
            "assistant.reasoning",
            "assistant.reasoning_delta",
            "assistant.tool_call_delta",
            "assistant.usage",
            "tool.execution_start",
            "tool.execution_complete",
            "subagent.started",
            "subagent.completed",
            "subagent.failed",
            "session.error",
            "session.start",
            "session.resume",
            "session.tools_updated",
            "user.message",
            "abort",
        ] {
            assert!(QUIET.binary_search(&translated).is_err(), "{translated}");
        }
    }
}
