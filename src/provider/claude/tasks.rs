//! Claude Code's task list -> the agent's plan (`plan` messages).
//!
//! Claude Code keeps its plan with tools (recorded in tests/fixtures/agent_work/): `TodoWrite`
//! sends the whole list each time (`{todos: [{content, status, activeForm}]}`, Claude Code 2.1
//! with `CLAUDE_CODE_ENABLE_TASKS=0`); by default 2.1 uses `TaskCreate` (`{subject, ...}`, the new
//! task's id in its result: `{task: {id}}`) and `TaskUpdate` (`{taskId, status?, subject?}`;
//! status `deleted` removes the task). These calls are not tool rows: each that succeeds becomes
//! a `plan` message with the whole list, one that fails a warning.
//!
//! The list lives as long as Claude's session while a mapper lives for one turn, so lists are
//! kept by session id ([`load`], [`store`]): a task made in one turn is updated in the next
//! (over the stream transport and the one-shot `--resume` alike). A turn that starts a session
//! starts with no tasks and reads nothing kept (a recording replayed twice reads the same).

use std::sync::Mutex;

use serde_json::Value;

use crate::stream::PlanEntry;

/// The tools whose calls are the plan.
const PLAN_TOOLS: [&str; 3] = ["TodoWrite", "TaskCreate", "TaskUpdate"];
/// Claude's tasks carry no priority; the plan's entries say the middle one.
const PRIORITY: &str = "medium";
/// Sessions whose lists are kept (the most recent ones).
const KEPT_SESSIONS: usize = 32;

/// One plan tool call, waiting for its result.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum PlanCall {
    /// `TodoWrite`: the whole list.
    Todos(Vec<PlanEntry>),
    /// `TaskCreate`: a new task; its id comes with the result.
    Create { subject: String },
    /// `TaskUpdate`: a task's new status or subject.
    Update {
        task_id: String,
        status: Option<String>,
        subject: Option<String>,
    },
}

impl PlanCall {
    /// The plan call a tool call is, if it is one.
    pub(super) fn of(name: &str, input: &Value) -> Option<PlanCall> {
        if !PLAN_TOOLS.contains(&name) {
            return None;
        }
        let text = |key: &str| input[key].as_str().map(str::to_owned);
        Some(match name {
            "TodoWrite" => PlanCall::Todos(
                input["todos"]
                    .as_array()?
                    .iter()
                    .map(|todo| PlanEntry {
                        content: todo["content"].as_str().unwrap_or_default().to_owned(),
                        status: todo["status"].as_str().unwrap_or("pending").to_owned(),
                        priority: todo["priority"].as_str().unwrap_or(PRIORITY).to_owned(),
                    })
                    .collect(),
            ),
            "TaskCreate" => PlanCall::Create {
                subject: text("subject").or_else(|| text("description"))?,
            },
            _ => PlanCall::Update {
                task_id: text("taskId")
                    .or_else(|| input["taskId"].as_u64().map(|id| id.to_string()))?,
                status: text("status"),
                subject: text("subject"),
            },
        })
    }
}

/// The tasks of one session, in the order they were made.
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct TaskList {
    tasks: Vec<Task>,
}

#[derive(Debug, Clone, PartialEq)]
struct Task {
    id: String,
    entry: PlanEntry,
}

impl TaskList {
    /// Applies a call that succeeded (`result`: the tool's structured result, `text` its text)
    /// and returns the plan it leaves.
    pub(super) fn apply(
        &mut self,
        call: PlanCall,
        result: Option<&Value>,
        text: &str,
    ) -> Vec<PlanEntry> {
        match call {
            PlanCall::Todos(entries) => {
                self.tasks = entries
                    .into_iter()
                    .enumerate()
                    .map(|(index, entry)| Task {
                        id: (index + 1).to_string(),
                        entry,
                    })
                    .collect();
            }
            PlanCall::Create { subject } => {
                let id = result
                    .and_then(|result| result["task"]["id"].as_str().map(str::to_owned))
                    .or_else(|| created_id(text))
                    .unwrap_or_else(|| (self.tasks.len() + 1).to_string());
                self.tasks.retain(|task| task.id != id);
                self.tasks.push(Task {
                    id,
                    entry: PlanEntry {
                        content: subject,
                        status: "pending".to_owned(),
                        priority: PRIORITY.to_owned(),
                    },
                });
            }
            PlanCall::Update {
                task_id,
                status,
                subject,
            } => {
                if status.as_deref() == Some("deleted") {
                    self.tasks.retain(|task| task.id != task_id);
                    return self.plan();
                }
                let position = match self.tasks.iter().position(|task| task.id == task_id) {
                    Some(position) => position,
                    // Made before agentty saw this session (another client, or an earlier run).
                    None => {
                        self.tasks.push(Task {
                            id: task_id.clone(),
                            entry: PlanEntry {
                                content: format!("Task #{task_id}"),
                                status: "pending".to_owned(),
                                priority: PRIORITY.to_owned(),
                            },
                        });
                        self.tasks.len() - 1
                    }
                };
                let entry = &mut self.tasks[position].entry;
                if let Some(status) = status {
                    entry.status = status;
                }
                if let Some(subject) = subject {
                    entry.content = subject;
                }
            }
        }
        self.plan()
    }

    fn plan(&self) -> Vec<PlanEntry> {
        self.tasks.iter().map(|task| task.entry.clone()).collect()
    }
}

/// `Task #3 created successfully: ...` -> `3`.
fn created_id(text: &str) -> Option<String> {
    let rest = text.strip_prefix("Task #")?;
    let id: String = rest
        .chars()
        .take_while(char::is_ascii_alphanumeric)
        .collect();
    (!id.is_empty()).then_some(id)
}

/// The lists of the sessions seen in this process, the most recent last.
static BOOKS: Mutex<Vec<(String, TaskList)>> = Mutex::new(Vec::new());

/// The task list kept for `session` (empty when none is).
pub(super) fn load(session: &str) -> TaskList {
    BOOKS
        .lock()
        .ok()
        .and_then(|books| {
            books
                .iter()
                .find(|(id, _)| id == session)
                .map(|(_, list)| list.clone())
        })
        .unwrap_or_default()
}

/// Keeps `list` as `session`'s (the oldest session's is let go past [`KEPT_SESSIONS`]).
pub(super) fn store(session: &str, list: &TaskList) {
    let Ok(mut books) = BOOKS.lock() else {
        return;
    };
    books.retain(|(id, _)| id != session);
    books.push((session.to_owned(), list.clone()));
    if books.len() > KEPT_SESSIONS {
        books.remove(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn statuses(plan: &[PlanEntry]) -> Vec<(&str, &str)> {
        plan.iter()
            .map(|entry| (entry.content.as_str(), entry.status.as_str()))
            .collect()
    }

    #[test]
    fn tasks_are_made_updated_and_deleted_by_id() {
        let mut list = TaskList::default();
        let create =
            |subject: &str| PlanCall::of("TaskCreate", &json!({"subject": subject})).unwrap();
        list.apply(create("Read"), Some(&json!({"task": {"id": "1"}})), "");
        // An id said only in the text.
        let plan = list.apply(create("Write"), None, "Task #2 created successfully: Write");
        assert_eq!(statuses(&plan), [("Read", "pending"), ("Write", "pending")]);
        let update = PlanCall::of(
            "TaskUpdate",
            &json!({"taskId": "2", "status": "in_progress"}),
        );
        let plan = list.apply(update.unwrap(), None, "Updated task #2 status");
        assert_eq!(
            statuses(&plan),
            [("Read", "pending"), ("Write", "in_progress")]
        );
        let delete = PlanCall::of("TaskUpdate", &json!({"taskId": "1", "status": "deleted"}));
        let plan = list.apply(delete.unwrap(), None, "");
        assert_eq!(statuses(&plan), [("Write", "in_progress")]);
        // A task made before agentty saw the session keeps its place by id.
        let unknown = PlanCall::of("TaskUpdate", &json!({"taskId": "7", "status": "completed"}));
        let plan = list.apply(unknown.unwrap(), None, "");
        assert_eq!(statuses(&plan)[1], ("Task #7", "completed"));
    }

    #[test]
    fn todo_write_replaces_the_list_and_other_tools_are_not_plans() {
        let call = PlanCall::of(
            "TodoWrite",
            &json!({"todos": [{"content": "a", "status": "completed", "activeForm": "A-ing"},
                              {"content": "b", "status": "in_progress"}]}),
        )
        .unwrap();
        let plan = TaskList::default().apply(call, None, "");
        assert_eq!(statuses(&plan), [("a", "completed"), ("b", "in_progress")]);
        assert_eq!(plan[0].priority, "medium");
        assert!(PlanCall::of("Bash", &json!({"command": "ls"})).is_none());
        assert!(PlanCall::of("TaskList", &json!({})).is_none());
        assert!(PlanCall::of("TodoWrite", &json!({"todos": 3})).is_none());
    }

    #[test]
    fn a_sessions_list_outlives_the_turn_that_made_it() {
        let session = "tasks-test-session";
        let mut list = TaskList::default();
        let call = PlanCall::of("TaskCreate", &json!({"subject": "kept"})).unwrap();
        list.apply(call, Some(&json!({"task": {"id": "1"}})), "");
        store(session, &list);
        assert_eq!(load(session), list);
        assert_eq!(load("another-session"), TaskList::default());
    }
}
