//! Steer and follow-up (`Command::Interject`): handed to the running attempt when the provider
//! can take them, today's queue otherwise.

use super::*;
use crate::stream::AgentMessage;

fn machine(can_interject: bool) -> Machine {
    Machine::new(RetryPolicy::default(), SessionRef::New).with_interjections(can_interject)
}

fn interject(machine: &mut Machine, kind: Interjection, text: &str) -> Vec<Effect> {
    machine.handle(Input::Command(Command::Interject(kind, text.into())))
}

fn running(machine: &mut Machine) {
    let effects = machine.handle(Input::Command(Command::Submit("first".into())));
    assert!(effects.iter().any(|effect| matches!(
        effect,
        Effect::StartAttempt {
            turn: 1,
            attempt: 1,
            ..
        }
    )));
}

#[test]
fn a_steer_during_a_turn_goes_to_the_running_attempt() {
    let mut machine = machine(true);
    running(&mut machine);
    assert_eq!(
        interject(&mut machine, Interjection::Steer, "go left"),
        [Effect::Interject {
            turn: 1,
            attempt: 1,
            kind: Interjection::Steer,
            text: "go left".into()
        }]
    );
    assert!(
        machine.queue().is_empty(),
        "nothing waits in agentty's queue"
    );
    assert_eq!(
        interject(&mut machine, Interjection::FollowUp, "then right"),
        [Effect::Interject {
            turn: 1,
            attempt: 1,
            kind: Interjection::FollowUp,
            text: "then right".into()
        }]
    );
}

#[test]
fn without_a_steering_provider_a_steer_waits_in_the_queue() {
    let mut machine = machine(false);
    running(&mut machine);
    let effects = interject(&mut machine, Interjection::Steer, "go left");
    assert_eq!(
        effects,
        [Effect::Emit(OrchestratorEvent::QueueChanged {
            queued: vec!["go left".into()]
        })]
    );
    assert_eq!(machine.queue(), ["go left"]);
}

#[test]
fn with_no_turn_running_a_steer_is_a_new_turn() {
    let mut machine = machine(true);
    let effects = interject(&mut machine, Interjection::Steer, "hello");
    assert!(effects.iter().any(|effect| matches!(
        effect,
        Effect::StartAttempt { turn: 1, prompt, .. } if prompt == "hello"
    )));
}

#[test]
fn a_steer_while_stopping_waits_in_the_queue_and_blank_ones_are_dropped() {
    let mut machine = machine(true);
    running(&mut machine);
    machine.handle(Input::Command(Command::Stop));
    interject(&mut machine, Interjection::Steer, "after the stop");
    assert_eq!(machine.queue(), ["after the stop"]);
    assert!(interject(&mut machine, Interjection::FollowUp, "  \n").is_empty());
    // The stopped turn ends; like every queued prompt after a stop, the steer waits (the chat
    // takes the queue back into the editor) instead of starting a turn.
    let effects = machine.handle(Input::Agent {
        turn: 1,
        attempt: 1,
        message: AgentMessage::Cancelled {
            stop_stage: crate::stream::StopStage::Interrupt,
            elapsed_ms: 5,
        },
    });
    assert!(!effects
        .iter()
        .any(|effect| matches!(effect, Effect::StartAttempt { .. })));
    assert_eq!(machine.queue(), ["after the stop"]);
}
