//! The agent asks before it acts: a permission request opens a prompt (behind any already
//! open) and a cell for its outcome; the answer, or the turn's end, closes it.

use std::time::Instant;

use super::{AppState, AskedPermission};
use crate::app::permission::PermissionPrompt;
use crate::app::permission_record::{permission_cell, resolved_outcome, unseen_request_cell};
use crate::app::transcript::{CellBody, InertText, PermissionOutcome, ToolStatus};
use crate::stream::{PermissionOptionKind, PermissionRequest, PermissionResolver};

impl AppState {
    /// A request opens a prompt (behind any already open) and a cell that will show its
    /// outcome.
    pub(super) fn on_permission_request(&mut self, request: PermissionRequest, now: Instant) {
        let Some(turn) = self.turn.as_ref().map(|turn| turn.id) else {
            return;
        };
        self.close_assistant();
        // The same id again: the agent gave up on the earlier one.
        if let Some(index) = self
            .permission_prompts
            .iter()
            .position(|prompt| prompt.id == request.id)
        {
            self.close_permission_prompt(index, PermissionOutcome::Unanswered);
        }
        let cell = self.transcript.push(CellBody::Permission(
            permission_cell(&request, self.expand_tools).into(),
        ));
        if let Some(running) = self.turn.as_mut() {
            running.permissions.insert(
                request.id.clone(),
                AskedPermission {
                    cell,
                    options: request.options.clone(),
                    tool_call_id: request.tool_call_id.clone(),
                },
            );
        }
        // The call waits for the user from now on; that is not running time.
        if let Some(call) = &request.tool_call_id {
            self.update_tool(call, |tool| {
                if let ToolStatus::Running { since } = tool.status {
                    tool.status = ToolStatus::WaitingForYou {
                        ran: now.saturating_duration_since(since),
                    };
                }
            });
        }
        self.permission_prompts.push_back(PermissionPrompt::new(
            turn,
            request.id,
            request.options,
            cell,
        ));
    }

    /// How a request was answered (by the user through the provider, by the configured policy,
    /// or cancelled by a stop): its cell says so and its prompt closes. A request the chat never
    /// saw is recorded as a cell of its own.
    pub(super) fn on_permission_resolved(
        &mut self,
        id: &str,
        outcome: &str,
        by: PermissionResolver,
        message: Option<&str>,
        now: Instant,
    ) {
        let known = self
            .turn
            .as_ref()
            .and_then(|turn| turn.permissions.get(id))
            .cloned();
        match known {
            Some(AskedPermission {
                cell,
                options,
                tool_call_id,
            }) => {
                if let Some(call) = &tool_call_id {
                    // Answered: the call is the agent's again, its clock goes on.
                    self.update_tool(call, |tool| {
                        if let ToolStatus::WaitingForYou { ran } = tool.status {
                            tool.status = ToolStatus::Running {
                                since: now.checked_sub(ran).unwrap_or(now),
                            };
                        }
                    });
                }
                let outcome = resolved_outcome(&options, outcome, by);
                let rejected = matches!(
                    outcome,
                    PermissionOutcome::Chosen {
                        kind: Some(
                            PermissionOptionKind::RejectOnce | PermissionOptionKind::RejectAlways
                        ),
                        ..
                    }
                );
                let mut question = None;
                self.transcript.update(cell, |body| {
                    if let CellBody::Permission(permission) = body {
                        permission.outcome = outcome;
                        if let Some(note) = message {
                            permission.feedback = Some(InertText::new(note));
                        }
                        question = Some(permission.question());
                    }
                });
                if let Some(turn) = self.turn.as_mut().filter(|_| rejected) {
                    turn.last_rejection = question;
                }
                if let Some(index) = self
                    .permission_prompts
                    .iter()
                    .position(|prompt| prompt.id == id)
                {
                    self.permission_prompts.remove(index);
                }
            }
            None => {
                self.close_assistant();
                let outcome = resolved_outcome(&[], outcome, by);
                self.transcript
                    .push(CellBody::Permission(unseen_request_cell(outcome).into()));
            }
        }
    }

    /// Closes the prompt at `index` of the queue, its cell showing `outcome`.
    pub(super) fn close_permission_prompt(
        &mut self,
        index: usize,
        outcome: PermissionOutcome,
    ) -> Option<PermissionPrompt> {
        let prompt = self.permission_prompts.remove(index)?;
        self.transcript.update(prompt.cell, |body| {
            if let CellBody::Permission(permission) = body {
                permission.outcome = outcome;
            }
        });
        Some(prompt)
    }

    /// The attempt ended: nothing can answer its requests any more.
    pub(super) fn close_permission_prompts(&mut self, outcome: PermissionOutcome) {
        while !self.permission_prompts.is_empty() {
            self.close_permission_prompt(0, outcome.clone());
        }
    }
}
