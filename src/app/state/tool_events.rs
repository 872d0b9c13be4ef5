//! The agent's tool calls as rows: a call starts a row (a sub-agent's nested under the call
//! that runs it), its updates and end change that row, and the attempt's end interrupts what
//! still runs.

use std::time::{Duration, Instant};

use serde_json::Value;

use super::{AppState, ToolSlot};
use crate::app::tool_summary::describe;
use crate::app::transcript::{CellBody, CellId, InertText, ToolCell, ToolStatus};

impl AppState {
    /// A call starts: a row of its own, or, made by a sub-agent, a row nested under the call
    /// that runs the sub-agent (its own row when that call is not shown).
    pub(super) fn on_tool_call(
        &mut self,
        id: String,
        name: &str,
        input: &Value,
        parent: Option<&str>,
        now: Instant,
    ) {
        let title = describe(name, input);
        let name = InertText::new(&title.name);
        let mut summary = InertText::new(&title.summary);
        if summary == name {
            // The agent named the call by its command (ACP titles): say it once.
            summary = InertText::default();
        }
        let known = self
            .turn
            .as_ref()
            .is_some_and(|turn| turn.tools.contains_key(&id));
        if known {
            // The agent describes the call anew (an ACP `tool_call_update` with its real title
            // and input): what it says now replaces what was shown.
            self.update_tool(&id, |tool| {
                tool.name = name;
                tool.summary = summary;
                tool.patch = title.patch;
            });
            return;
        }
        let call = ToolCell {
            call_id: InertText::new(&id),
            name,
            summary,
            status: ToolStatus::Running { since: now },
            output: InertText::default(),
            expanded: self.expand_tools,
            patch: title.patch,
            children: Vec::new(),
        };
        let parent_slot = parent.and_then(|parent| {
            self.turn
                .as_ref()
                .and_then(|turn| turn.tools.get(parent).cloned())
        });
        let slot = match parent_slot {
            Some(parent) => {
                let mut path = parent.path.clone();
                self.transcript.update(parent.cell, |body| {
                    if let Some(node) = tool_at(body, &parent.path) {
                        path.push(node.children.len());
                        node.children.push(call);
                    }
                });
                ToolSlot {
                    cell: parent.cell,
                    path,
                }
            }
            None => {
                self.close_assistant();
                ToolSlot {
                    cell: self.transcript.push(CellBody::Tool(call.into())),
                    path: Vec::new(),
                }
            }
        };
        if let Some(turn) = self.turn.as_mut() {
            turn.tools.insert(id, slot);
        }
    }

    /// The call's output so far, as the agent streams it.
    pub(super) fn on_tool_update(&mut self, id: &str, output: &str) {
        self.update_tool(id, |tool| tool.output = InertText::new(output));
    }

    pub(super) fn on_tool_completed(&mut self, id: &str, output: &str, now: Instant) {
        self.update_tool(id, |tool| {
            // The final output is authoritative, unless it is empty and some streamed.
            if !output.is_empty() || tool.output.is_empty() {
                tool.output = InertText::new(output);
            }
            tool.status = ToolStatus::Done {
                elapsed: running_for(tool.status, now),
            };
        });
    }

    pub(super) fn on_tool_failed(&mut self, id: &str, error: &str, now: Instant) {
        self.update_tool(id, |tool| {
            // What the tool had shown stays; the failure is added to it.
            let error = InertText::new(error);
            if tool.output.is_empty() || tool.output.ends_with(error.as_str()) {
                tool.output = error;
            } else if !error.is_empty() {
                tool.output.push_str("\n");
                tool.output.push(&error);
            }
            tool.status = ToolStatus::Failed {
                elapsed: running_for(tool.status, now),
            };
        });
    }

    pub(super) fn update_tool(&mut self, call_id: &str, change: impl FnOnce(&mut ToolCell)) {
        let Some(slot) = self
            .turn
            .as_ref()
            .and_then(|turn| turn.tools.get(call_id).cloned())
        else {
            return;
        };
        self.transcript.update(slot.cell, |body| {
            if let Some(tool) = tool_at(body, &slot.path) {
                change(tool);
            }
        });
    }

    pub(super) fn finish_running_tools(&mut self, now: Instant) {
        let Some(turn) = self.turn.as_ref() else {
            return;
        };
        let mut cells: Vec<CellId> = turn
            .tools
            .values()
            .filter(|slot| slot.path.is_empty())
            .map(|slot| slot.cell)
            .collect();
        cells.sort_unstable();
        for cell in cells {
            let running = self
                .transcript
                .get(cell)
                .is_some_and(|cell| cell.body.is_live());
            if running {
                self.transcript.update(cell, |body| {
                    if let CellBody::Tool(tool) = body {
                        interrupt_live(tool, now);
                    }
                });
            }
        }
    }
}

/// The call at `path` (child indices) inside a tool cell's body.
pub(super) fn tool_at<'a>(body: &'a mut CellBody, path: &[usize]) -> Option<&'a mut ToolCell> {
    let CellBody::Tool(tool) = body else {
        return None;
    };
    path.iter()
        .try_fold(&mut **tool, |node, index| node.children.get_mut(*index))
}

/// The attempt ended: a call (or a call of its sub-agent) still running has no result.
pub(super) fn interrupt_live(tool: &mut ToolCell, now: Instant) {
    if matches!(
        tool.status,
        ToolStatus::Running { .. } | ToolStatus::WaitingForYou { .. }
    ) {
        tool.status = ToolStatus::Interrupted {
            elapsed: running_for(tool.status, now),
        };
    }
    for child in &mut tool.children {
        interrupt_live(child, now);
    }
}

pub(super) fn running_for(status: ToolStatus, now: Instant) -> Duration {
    match status {
        ToolStatus::Running { since } => now.saturating_duration_since(since),
        ToolStatus::WaitingForYou { ran } => ran,
        ToolStatus::Done { elapsed }
        | ToolStatus::Failed { elapsed }
        | ToolStatus::Interrupted { elapsed } => elapsed,
    }
}

#[cfg(test)]
mod sub_agent_tests {
    use std::time::Instant;

    use serde_json::json;

    use crate::app::state::{AppState, StartupInfo};
    use crate::app::transcript::{CellBody, ToolCell, ToolStatus};
    use crate::orchestrator::{OrchestratorEvent, TurnOutcome};
    use crate::stream::AgentMessage;

    fn send(state: &mut AppState, message: AgentMessage) {
        state.on_orchestrator_event(
            OrchestratorEvent::Message {
                turn: 1,
                attempt: 1,
                message,
            },
            Instant::now(),
        );
    }

    fn call(id: &str, name: &str, parent: Option<&str>) -> AgentMessage {
        AgentMessage::ToolCall {
            id: id.into(),
            name: name.into(),
            input: json!({"command": format!("run {id}")}),
            parent_id: parent.map(str::to_owned),
        }
    }

    fn tools(state: &AppState) -> Vec<ToolCell> {
        state.transcript.pick_all(|body| match body {
            CellBody::Tool(tool) => Some((**tool).clone()),
            _ => None,
        })
    }

    #[test]
    fn a_sub_agents_calls_nest_under_its_call_and_end_with_the_attempt() {
        let mut state = AppState::new(StartupInfo::default());
        state.on_orchestrator_event(
            OrchestratorEvent::TurnStarted {
                turn: 1,
                prompt: "go".into(),
            },
            Instant::now(),
        );
        send(&mut state, call("agent", "Agent", None));
        send(&mut state, call("one", "Bash", Some("agent")));
        send(&mut state, call("deeper", "Bash", Some("one")));
        send(
            &mut state,
            AgentMessage::ToolCompleted {
                id: "deeper".into(),
                output: "done deep".into(),
            },
        );
        send(&mut state, call("two", "Bash", Some("agent")));
        // A parent never shown: the call is a row of its own.
        send(&mut state, call("stray", "Bash", Some("unknown")));
        let shown = tools(&state);
        assert_eq!(shown.len(), 2, "the agent's call and the stray one");
        let agent = &shown[0];
        assert_eq!(agent.children.len(), 2);
        assert_eq!(agent.children[0].summary, "run one");
        assert_eq!(agent.children[0].children[0].output, "done deep");
        assert!(matches!(
            agent.children[0].children[0].status,
            ToolStatus::Done { .. }
        ));
        assert_eq!(shown[1].summary, "run stray");

        state.on_orchestrator_event(
            OrchestratorEvent::TurnEnded {
                turn: 1,
                outcome: TurnOutcome::Completed,
            },
            Instant::now(),
        );
        let agent = &tools(&state)[0];
        assert!(matches!(agent.status, ToolStatus::Interrupted { .. }));
        assert!(matches!(
            agent.children[1].status,
            ToolStatus::Interrupted { .. }
        ));
        assert!(
            matches!(
                agent.children[0].children[0].status,
                ToolStatus::Done { .. }
            ),
            "what ended stays ended"
        );
    }
}
