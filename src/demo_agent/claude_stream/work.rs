//! The `--mode claude-stream` demo's agent work, played as Claude Code 2.1.197 prints it
//! (tests/fixtures/captures/claude/tasks, todos, subagent): a prompt with the word `tasks`
//! keeps a task list (`TaskCreate` ×2, `TaskUpdate`s, a `Bash` between), `todos` the same with
//! `TodoWrite`, `helper` runs a sub-agent (`Agent`) whose two `Bash` calls carry
//! `parent_tool_use_id`, with the `system/task_*` lines and the result's notes to the model.
//! Each model request takes 700 ms of script time, so the plan can be seen while it runs.

use std::io;

use serde_json::{json, Value};

use super::super::live::Serving;
use super::{Cut, Engine};

/// Script time each model request of the work takes.
const STEP_MS: u64 = 700;

/// The work a prompt asks for, by its words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Work {
    Tasks,
    Todos,
    Helper,
}

impl Work {
    pub(super) fn asked(has: impl Fn(&str) -> bool) -> Option<Work> {
        [
            ("tasks", Work::Tasks),
            ("todos", Work::Todos),
            ("helper", Work::Helper),
        ]
        .into_iter()
        .find_map(|(word, work)| has(word).then_some(work))
    }

    /// The tool calls of each model request, then the closing words.
    fn script(self) -> (Vec<Vec<Call>>, &'static str) {
        let update = |id: &str, status: &str| Call::TaskUpdate {
            id: id.to_owned(),
            status: status.to_owned(),
        };
        let bash = |command: &str, output: &str| Call::Bash {
            command: command.to_owned(),
            output: output.to_owned(),
        };
        match self {
            Work::Tasks => (
                vec![
                    vec![
                        Call::TaskCreate("1", "Read the notes"),
                        Call::TaskCreate("2", "Write the summary"),
                    ],
                    vec![update("1", "in_progress")],
                    vec![bash("echo notes", "notes"), update("1", "completed")],
                    vec![update("2", "in_progress")],
                    vec![update("2", "completed")],
                ],
                "Both tasks are done.",
            ),
            Work::Todos => (
                vec![
                    vec![Call::TodoWrite(["in_progress", "pending"])],
                    vec![bash("echo notes", "notes")],
                    vec![Call::TodoWrite(["completed", "in_progress"])],
                    vec![Call::TodoWrite(["completed", "completed"])],
                ],
                "Both steps are done.",
            ),
            Work::Helper => (
                vec![vec![Call::Agent(vec![
                    ("echo one", "one"),
                    ("echo two", "two"),
                ])]],
                "The helper ran both commands.",
            ),
        }
    }
}

enum Call {
    TaskCreate(&'static str, &'static str),
    TaskUpdate {
        id: String,
        status: String,
    },
    TodoWrite([&'static str; 2]),
    Bash {
        command: String,
        output: String,
    },
    /// A sub-agent running these commands (command, output).
    Agent(Vec<(&'static str, &'static str)>),
}

const TODOS: [(&str, &str); 2] = [
    ("Read the notes", "Reading the notes"),
    ("Write the summary", "Writing the summary"),
];

impl Call {
    fn name(&self) -> &'static str {
        match self {
            Call::TaskCreate(..) => "TaskCreate",
            Call::TaskUpdate { .. } => "TaskUpdate",
            Call::TodoWrite(_) => "TodoWrite",
            Call::Bash { .. } => "Bash",
            Call::Agent(_) => "Agent",
        }
    }

    fn input(&self) -> Value {
        match self {
            Call::TaskCreate(_, subject) => {
                json!({"subject": subject, "description": subject, "activeForm": subject})
            }
            Call::TaskUpdate { id, status } => json!({"taskId": id, "status": status}),
            Call::TodoWrite(statuses) => json!({"todos": TODOS.iter().zip(statuses).map(
                |((content, active), status)| json!({"content": content, "activeForm": active, "status": status})
            ).collect::<Vec<_>>()}),
            Call::Bash { command, .. } => json!({"command": command, "description": command}),
            Call::Agent(_) => json!({"description": "Run two commands",
                "subagent_type": "general-purpose",
                "prompt": "Run `echo one` and then `echo two`, then say done."}),
        }
    }

    /// The tool result's content and `tool_use_result`.
    fn result(&self, agent_id: &str) -> (Value, Value) {
        match self {
            Call::TaskCreate(id, subject) => (
                json!(format!("Task #{id} created successfully: {subject}")),
                json!({"task": {"id": id, "subject": subject}}),
            ),
            Call::TaskUpdate { id, status } => (
                json!(format!("Updated task #{id} status")),
                json!({"success": true, "taskId": id, "updatedFields": ["status"],
                       "statusChange": {"to": status}}),
            ),
            Call::TodoWrite(_) => (
                json!("Todos have been modified successfully."),
                json!({"newTodos": self.input()["todos"]}),
            ),
            Call::Bash { output, .. } => (
                json!(output),
                json!({"stdout": output, "stderr": "", "interrupted": false}),
            ),
            Call::Agent(_) => (
                json!([
                    {"type": "text", "text": "Done: one and two."},
                    {"type": "text", "text": format!(
                        "agentId: {agent_id} (use SendMessage with to: '{agent_id}' to continue this agent)\n<usage>subagent_tokens: 1254\ntool_uses: 2\nduration_ms: 2429</usage>")}
                ]),
                json!({"status": "completed", "agentId": agent_id}),
            ),
        }
    }
}

impl Engine {
    /// Plays `work` after the first message's text (its message still open); `Some` when the
    /// turn was cut.
    pub(super) fn play_work(&mut self, first_message: &str, work: Work) -> io::Result<Option<Cut>> {
        let (requests, closing) = work.script();
        let mut message_id = first_message.to_owned();
        for calls in requests {
            let ids: Vec<String> = calls.iter().map(|_| self.tool_id()).collect();
            for (index, (call, id)) in calls.iter().zip(&ids).enumerate() {
                let block = json!({"type": "tool_use", "id": id, "name": call.name(), "input": call.input()});
                self.event(&message_id, json!({"type": "content_block_start", "index": index + 1,
                    "content_block": {"type": "tool_use", "id": id, "name": call.name(), "input": {}}}))?;
                self.assistant(&message_id, block)?;
                self.event(
                    &message_id,
                    json!({"type": "content_block_stop", "index": index + 1}),
                )?;
            }
            self.message_end(&message_id, "tool_use")?;
            for (call, id) in calls.iter().zip(&ids) {
                if let Call::Agent(commands) = call {
                    if let Some(cut) = self.sub_agent(id, commands)? {
                        return Ok(Some(cut));
                    }
                }
                let (content, tool_use_result) = call.result(&format!("a{id}"));
                let result = self.stamp(
                    json!({"type": "user", "message": {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": id, "content": content}]},
                    "parent_tool_use_id": null, "tool_use_result": tool_use_result}),
                );
                self.line(&result)?;
            }
            if let Some(cut) = self.wait(STEP_MS)? {
                return Ok(Some(cut));
            }
            message_id = format!("msg_demo_{}", self.uuid().replace('-', ""));
            self.message_start(&message_id)?;
        }
        if let Some(cut) = self.text_block(&message_id, 0, closing, 30)? {
            return Ok(Some(cut));
        }
        self.message_end(&message_id, "end_turn")?;
        Ok(None)
    }

    /// The sub-agent of call `parent`: its progress lines and its own calls, each nested.
    fn sub_agent(&mut self, parent: &str, commands: &[(&str, &str)]) -> io::Result<Option<Cut>> {
        let task = format!("a{parent}");
        let started = self.stamp(json!({"type": "system", "subtype": "task_started",
            "task_id": task, "tool_use_id": parent, "description": "Run two commands",
            "subagent_type": "general-purpose", "task_type": "local_agent"}));
        self.line(&started)?;
        for (done, (command, output)) in commands.iter().enumerate() {
            let progress = self.stamp(json!({"type": "system", "subtype": "task_progress",
                "task_id": task, "tool_use_id": parent, "description": format!("Running {command}"),
                "usage": {"total_tokens": 1235 + done, "tool_uses": done + 1, "duration_ms": 500 * (done + 1)},
                "last_tool_name": "Bash"}));
            self.line(&progress)?;
            let id = self.tool_id();
            let message_id = format!("msg_demo_{}", self.uuid().replace('-', ""));
            let call = self.stamp(json!({"type": "assistant", "message": {"id": message_id,
                "type": "message", "role": "assistant", "model": self.reported_model(),
                "content": [{"type": "tool_use", "id": id, "name": "Bash",
                             "input": {"command": command, "description": command}}],
                "stop_reason": null}, "parent_tool_use_id": parent}));
            self.line(&call)?;
            if let Some(cut) = self.wait(STEP_MS)? {
                return Ok(Some(cut));
            }
            let result = self.stamp(
                json!({"type": "user", "message": {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": id, "content": output, "is_error": false}]},
                "parent_tool_use_id": parent}),
            );
            self.line(&result)?;
        }
        let notification = self.stamp(json!({"type": "system", "subtype": "task_notification",
            "task_id": task, "tool_use_id": parent, "status": "completed",
            "summary": "Run two commands",
            "usage": {"total_tokens": 1237, "tool_uses": commands.len(), "duration_ms": 1500}}));
        self.line(&notification)?;
        Ok(None)
    }

    fn tool_id(&mut self) -> String {
        let id = format!("toolu_demo_{}", self.next_id);
        self.next_id += 1;
        id
    }
}
