//! The agent's questions of one turn (permission requests): answered by the policy at once,
//! or kept open for the user, whose answer must be one the agent offered. A permission the
//! user did not give is never assumed.

use std::collections::HashMap;

use super::protocol::Question;
use crate::config::PermissionPolicy;
use crate::stream::{AgentMessage, NoticeKind, PermissionOptionKind, PermissionResolver};

/// What to do with a question now.
pub(crate) enum Decision<T> {
    /// It waits for the user.
    Asked,
    /// Answer it now with `option` (`None`: cancelled).
    Answer {
        question: Box<Question<T>>,
        option: Option<String>,
        by: PermissionResolver,
    },
}

/// The questions of one turn.
pub(crate) struct Questions<T> {
    policy: PermissionPolicy,
    /// The provider's name, for the policy's refusal notice.
    provider: String,
    open: HashMap<String, Question<T>>,
}

impl<T> Questions<T> {
    pub(crate) fn new(policy: PermissionPolicy, provider: &str) -> Self {
        Self {
            policy,
            provider: provider.to_owned(),
            open: HashMap::new(),
        }
    }

    /// The agent asks `question` (its request already on record): the policy answers it, or
    /// it waits for the user; during a stop it is cancelled. A refusal by the policy is said in
    /// a notice pushed to `out`, naming how to allow it.
    pub(crate) fn asked(
        &mut self,
        question: Question<T>,
        stopping: bool,
        out: &mut Vec<AgentMessage>,
    ) -> Decision<T> {
        if stopping {
            return Decision::Answer {
                question: Box::new(question),
                option: None,
                by: PermissionResolver::User,
            };
        }
        let kinds = match self.policy {
            PermissionPolicy::Ask => {
                self.open.insert(question.request.id.clone(), question);
                return Decision::Asked;
            }
            PermissionPolicy::Allow => [
                PermissionOptionKind::AllowOnce,
                PermissionOptionKind::AllowAlways,
            ],
            PermissionPolicy::Deny => [
                PermissionOptionKind::RejectOnce,
                PermissionOptionKind::RejectAlways,
            ],
        };
        let option = kinds
            .into_iter()
            .find_map(|kind| question.request.option_of(kind))
            .map(|option| option.id.clone());
        if self.policy == PermissionPolicy::Deny {
            let name = &self.provider;
            out.push(AgentMessage::notice(
                NoticeKind::PermissionRefused,
                format!(
                    "Refused without asking: {} ({}). The {name} provider's permission policy \
                     is deny; allow it with `--permissions allow`, or `permissions = \"ask\"` or \
                     `\"allow\"` under [providers.{name}] in the config.",
                    question.request.title, question.request.kind
                ),
            ));
        }
        Decision::Answer {
            question: Box::new(question),
            option,
            by: PermissionResolver::Policy,
        }
    }

    /// The user answered question `id` with `option` (`None`: cancelled): the open question,
    /// unless there is none of that id or the agent did not offer that option (then the
    /// question stays open and the answer is ignored: the chat offers only what the agent
    /// offered, so such an answer is a bug, never a permission).
    pub(crate) fn answered(&mut self, id: &str, option: Option<&str>) -> Option<Question<T>> {
        let question = self.open.remove(id)?;
        let offered = option.is_none_or(|chosen| {
            question
                .request
                .options
                .iter()
                .any(|offered| offered.id == chosen)
        });
        if offered {
            return Some(question);
        }
        tracing::warn!(id, ?option, "an answer the agent did not offer; ignored");
        self.open.insert(id.to_owned(), question);
        None
    }

    /// Every open question (the turn is stopping, or over): each is answered cancelled.
    pub(crate) fn drain(&mut self) -> Vec<Question<T>> {
        self.open.drain().map(|(_, question)| question).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stream::{PermissionOption, PermissionRequest};

    fn question(id: &str) -> Question<()> {
        let option = |id: &str, kind| PermissionOption {
            id: id.to_owned(),
            kind,
            name: id.to_owned(),
        };
        Question {
            request: PermissionRequest {
                id: id.to_owned(),
                title: "touch x".to_owned(),
                kind: "execute".to_owned(),
                options: vec![
                    option("yes", PermissionOptionKind::AllowOnce),
                    option("always", PermissionOptionKind::AllowAlways),
                    option("no", PermissionOptionKind::RejectOnce),
                ],
                ..PermissionRequest::default()
            },
            ticket: (),
        }
    }

    fn answered_with<T>(decision: Decision<T>) -> (Option<String>, PermissionResolver) {
        match decision {
            Decision::Answer { option, by, .. } => (option, by),
            Decision::Asked => panic!("asked the user"),
        }
    }

    #[test]
    fn an_answer_the_agent_did_not_offer_is_ignored_and_the_question_stays_open() {
        let mut questions = Questions::new(PermissionPolicy::Ask, "demo");
        let mut out = Vec::new();
        assert!(matches!(
            questions.asked(question("q1"), false, &mut out),
            Decision::Asked
        ));
        assert!(questions.answered("q1", Some("sure")).is_none());
        assert!(questions.answered("nope", Some("yes")).is_none());
        let answered = questions.answered("q1", Some("yes")).expect("still open");
        assert_eq!(answered.request.id, "q1");
        assert!(questions.drain().is_empty());
        assert!(out.is_empty());
    }

    #[test]
    fn policies_answer_at_once_and_a_refusal_says_how_to_allow() {
        let mut out = Vec::new();
        let mut allow = Questions::new(PermissionPolicy::Allow, "demo");
        assert_eq!(
            answered_with(allow.asked(question("q"), false, &mut out)),
            (Some("yes".to_owned()), PermissionResolver::Policy)
        );
        assert!(out.is_empty());
        let mut deny = Questions::new(PermissionPolicy::Deny, "demo");
        assert_eq!(
            answered_with(deny.asked(question("q"), false, &mut out)),
            (Some("no".to_owned()), PermissionResolver::Policy)
        );
        assert!(matches!(&out[..], [AgentMessage::Notice { kind, message }]
            if *kind == NoticeKind::PermissionRefused && message.contains("[providers.demo]")));
        // Whatever the policy, a question asked while the turn stops is cancelled.
        assert_eq!(
            answered_with(allow.asked(question("q"), true, &mut out)),
            (None, PermissionResolver::User)
        );
    }
}
