//! Images attached to a prompt (issue 28): the composer's chip from a pasted path, Ctrl+V and
//! an `@` mention, Backspace taking it whole, the refusal before sending to an agent that
//! takes no images (the prompt kept), and the image reaching the demo agent through pi's RPC
//! mode and Codex's app-server as real processes, on the first attempt and on the retry; over
//! ACP, the image block a running agent that announces images receives in `session/prompt`, and
//! no request and one notice for an agent that does not.

use std::sync::Arc;

use crossterm::event::KeyCode;
use tokio::time::timeout;

use agentty::app::state::{AppEffect, ImageRequest};
use agentty::attachment::{self, ImageAttachment, DEFAULT_MAX_BYTES};
use agentty::config::{PermissionPolicy, Transport};
use agentty::orchestrator::{
    spawn_orchestrator, Command, OrchestratorEvent as Ev, OrchestratorOptions, TurnOutcome,
};
use agentty::provider::{
    build_backend, build_provider_with, provider_on, AttemptRequest, Capabilities, Images,
    Provider, SessionRef, StopControl,
};
use agentty::stream::AgentMessage;

use crate::support::agent_stream::{collect, text, PATIENCE};
use crate::support::chat::{startup, Chat};
use crate::support::demo_launcher::DemoLauncher;
use crate::support::script_agent::write_script;

/// A real PNG file of `len` bytes (its signature, then filler) in a temp dir.
fn png_file(name: &str, len: usize) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(name);
    let mut bytes = b"\x89PNG\r\n\x1a\n".to_vec();
    bytes.resize(len, 0x42);
    std::fs::write(&path, bytes).unwrap();
    (dir, path)
}

fn image(path: &std::path::Path) -> ImageAttachment {
    attachment::load(path, DEFAULT_MAX_BYTES).unwrap()
}

/// A chat whose agent takes images (as pi RPC does).
fn chat_taking_images() -> Chat {
    let mut chat = Chat::with_startup(startup("demo", None, None));
    let rpc = Capabilities {
        transport: Transport::Rpc,
        images: Images::Taken,
        ..Capabilities::ONE_SHOT
    };
    chat.state.on_agent_started(rpc, None);
    chat
}

fn attach_request(effects: &[AppEffect]) -> Option<ImageRequest> {
    effects.iter().find_map(|effect| match effect {
        AppEffect::AttachImage(request) => Some(request.clone()),
        _ => None,
    })
}

fn sent(effects: &[AppEffect]) -> Option<(String, Vec<ImageAttachment>)> {
    effects.iter().find_map(|effect| match effect {
        AppEffect::Command(Command::SubmitWithImages(prompt, images)) => {
            Some((prompt.clone(), images.clone()))
        }
        AppEffect::Command(Command::Submit(prompt)) => Some((prompt.clone(), Vec::new())),
        _ => None,
    })
}

#[test]
fn a_pasted_image_path_becomes_a_chip_that_is_sent_with_the_prompt_and_shown_in_the_transcript() {
    let (_dir, path) = png_file("shot.png", 1234);
    let mut chat = chat_taking_images();
    chat.type_text("what is in ");
    let pasted = format!("{}\n", path.display());
    let effects = chat.state.on_paste(&pasted);
    let request = attach_request(&effects).expect("the paste asks for the image");
    assert_eq!(request.path, path.display().to_string());
    assert_eq!(
        chat.state.composer.text(),
        "what is in ",
        "not pasted as text"
    );
    chat.state
        .on_image_loaded(Ok(image(&path)), &request.fallback);
    assert_eq!(
        chat.state.composer.text(),
        "what is in [image: shot.png 1 KB] "
    );
    chat.type_text("?");
    let effects = chat.press(KeyCode::Enter);
    let (prompt, images) = sent(&effects).expect("sent");
    assert_eq!(prompt, "what is in [image: shot.png 1 KB] ?");
    assert_eq!(images.len(), 1);
    assert_eq!(&images[0].bytes[..], &std::fs::read(&path).unwrap()[..]);
    assert!(chat.state.composer.is_empty());
    chat.start_turn(10, &prompt);
    let screen = chat.screen(80, 12, 20);
    assert!(
        screen.contains("what is in [image: shot.png 1 KB] ?"),
        "{screen}"
    );
}

#[test]
fn backspace_removes_the_chip_as_one_unit_and_the_image_with_it() {
    let (_dir, path) = png_file("shot.png", 2048);
    let mut chat = chat_taking_images();
    chat.type_text("see");
    chat.state.on_image_loaded(Ok(image(&path)), "unused");
    assert_eq!(chat.state.composer.text(), "see[image: shot.png 2 KB] ");
    chat.press(KeyCode::Backspace);
    assert_eq!(chat.state.composer.attached_images().len(), 1);
    chat.press(KeyCode::Backspace);
    assert_eq!(
        chat.state.composer.text(),
        "see",
        "the chip went in one key"
    );
    assert!(chat.state.composer.attached_images().is_empty());
    let effects = chat.press(KeyCode::Enter);
    assert_eq!(sent(&effects), Some(("see".to_owned(), Vec::new())));
}

#[test]
fn ctrl_v_attaches_the_path_before_the_cursor_and_a_missing_file_costs_one_notice_and_no_text() {
    let mut chat = chat_taking_images();
    chat.type_text("look at ~/nothing-here.png");
    let effects = chat.ctrl('v');
    let request = attach_request(&effects).expect("Ctrl+V asks for the image");
    assert_eq!(
        request,
        ImageRequest {
            path: "~/nothing-here.png".into(),
            fallback: "~/nothing-here.png".into(),
        }
    );
    assert_eq!(chat.state.composer.text(), "look at ");
    let missing = attachment::load(
        std::path::Path::new("/nonexistent/nothing-here.png"),
        DEFAULT_MAX_BYTES,
    );
    chat.state.on_image_loaded(missing, &request.fallback);
    assert_eq!(
        chat.state.composer.text(),
        "look at ~/nothing-here.png",
        "the text is back"
    );
    let screen = chat.screen(100, 12, 0);
    assert_eq!(screen.matches("No image attached").count(), 1, "{screen}");
    assert!(screen.contains("there is no file"), "{screen}");
    // Ctrl+V with no image path before the cursor: the clipboard's image.
    chat.type_text(" and");
    assert_eq!(chat.ctrl('v'), [AppEffect::AttachClipboardImage]);
    assert_eq!(chat.state.composer.text(), "look at ~/nothing-here.png and");
}

#[test]
fn an_at_mention_of_an_image_file_attaches_it() {
    let mut chat = chat_taking_images();
    chat.state
        .on_files_listed(vec!["src/main.rs".into(), "docs/shot.png".into()]);
    chat.type_text("explain @sho");
    let effects = chat.press(KeyCode::Tab);
    assert_eq!(
        attach_request(&effects),
        Some(ImageRequest {
            path: "docs/shot.png".into(),
            fallback: "@docs/shot.png".into(),
        })
    );
    assert_eq!(chat.state.composer.text(), "explain ");
    // Any other file is mentioned as before.
    chat.type_text("@main");
    let effects = chat.press(KeyCode::Tab);
    assert_eq!(attach_request(&effects), None);
    assert_eq!(chat.state.composer.text(), "explain @src/main.rs");
}

#[test]
fn an_image_is_refused_before_sending_to_an_agent_that_takes_none_and_the_prompt_stays() {
    let (_dir, path) = png_file("shot.png", 100);
    let mut chat = Chat::with_startup(startup("pi", None, None));
    chat.state
        .on_agent_started(crate::support::chat::capabilities_of(Transport::Json), None);
    chat.type_text("what is it ");
    chat.state.on_image_loaded(Ok(image(&path)), "");
    let effects = chat.press(KeyCode::Enter);
    assert_eq!(sent(&effects), None, "nothing sent");
    assert_eq!(
        chat.state.composer.text(),
        "what is it [image: shot.png 100 B] "
    );
    assert_eq!(chat.state.composer.attached_images().len(), 1);
    let screen = chat.screen(120, 12, 0);
    assert!(
        screen.contains("Not sent: pi (json) does not take images"),
        "{screen}"
    );

    // An ACP agent decides by what it announced.
    chat.state
        .on_agent_started(crate::support::chat::capabilities_of(Transport::Acp), None);
    chat.state.agent_status.accepts_images = Some(false);
    assert_eq!(sent(&chat.press(KeyCode::Enter)), None);
    let screen = chat.screen(160, 14, 0);
    assert!(
        screen.contains("its ACP agent does not announce promptCapabilities.image"),
        "{screen}"
    );
    chat.state.agent_status.accepts_images = Some(true);
    let (_, images) = sent(&chat.press(KeyCode::Enter)).expect("sent");
    assert_eq!(images.len(), 1);
}

#[test]
fn a_prompt_with_an_image_waits_in_the_composer_while_a_turn_runs() {
    let (_dir, path) = png_file("shot.png", 100);
    let mut chat = chat_taking_images();
    chat.start_turn(0, "earlier");
    chat.state.on_image_loaded(Ok(image(&path)), "");
    assert_eq!(sent(&chat.press(KeyCode::Enter)), None);
    assert_eq!(chat.state.composer.attached_images().len(), 1);
    let screen = chat.screen(160, 14, 0);
    assert!(screen.contains("Not sent yet"), "{screen}");
}

#[test]
fn an_oversized_or_fake_image_is_refused_with_one_clear_notice() {
    let (dir, big) = png_file("big.png", 3000);
    let why = attachment::load(&big, 2048).unwrap_err();
    assert!(why.contains("over the 2 KB limit"), "{why}");
    let fake = dir.path().join("fake.png");
    std::fs::write(&fake, "GIF? no, text").unwrap();
    let why = attachment::load(&fake, DEFAULT_MAX_BYTES).unwrap_err();
    assert!(
        why.contains("is not a PNG, JPEG, GIF or WebP image"),
        "{why}"
    );
    let mut chat = chat_taking_images();
    chat.state.on_image_loaded(Err(why), "fake.png");
    assert_eq!(chat.state.composer.text(), "fake.png");
}

/// The demo agent behind `transport`, and a request carrying `image`.
fn demo_request(demo: &DemoLauncher, prompt: &str, image: &ImageAttachment) -> AttemptRequest {
    AttemptRequest {
        prompt: prompt.into(),
        images: vec![image.clone()],
        session: SessionRef::New,
        cwd: Some(demo.state.path().to_path_buf()),
        attempt: 1,
        ..AttemptRequest::default()
    }
}

#[tokio::test]
async fn the_image_reaches_the_demo_agent_over_pi_rpc() {
    let (_dir, path) = png_file("shot.png", 1234);
    let demo = DemoLauncher::new();
    let provider = build_provider_with("demo", &demo.settings(&[], "0"), Transport::Rpc).unwrap();
    assert!(provider.accepts_images());
    let messages = collect(provider.execute(
        demo_request(&demo, "what is this?", &image(&path)),
        StopControl::new(),
    ))
    .await;
    assert!(
        text(&messages).starts_with("I see an image (png, 1234 bytes)."),
        "{messages:?}"
    );
    assert!(matches!(
        messages.last(),
        Some(AgentMessage::Completed { .. })
    ));
}

#[tokio::test]
async fn the_image_reaches_the_demo_agent_over_the_codex_app_server() {
    let (_dir, path) = png_file("shot.png", 777);
    let demo = DemoLauncher::new();
    let backend = build_backend("demo", &demo.settings(&[], "0.2")).unwrap();
    let provider: Arc<dyn Provider> =
        provider_on(backend, Transport::AppServer, PermissionPolicy::Allow).unwrap();
    assert!(provider.accepts_images());
    let messages = collect(provider.execute(
        demo_request(&demo, "what is this?", &image(&path)),
        StopControl::new(),
    ))
    .await;
    assert!(
        text(&messages).contains("I see an image (png, 777 bytes)."),
        "{messages:?}"
    );
    assert!(matches!(
        messages.last(),
        Some(AgentMessage::Completed { .. })
    ));
}

#[tokio::test]
async fn the_retry_of_a_failed_attempt_sends_the_same_image_again() {
    let (_dir, path) = png_file("shot.png", 4321);
    let demo = DemoLauncher::new();
    let backend = build_backend("demo", &demo.settings(&[], "0.2")).unwrap();
    let provider = provider_on(backend, Transport::AppServer, PermissionPolicy::Allow).unwrap();
    let mut options = OrchestratorOptions::new(provider);
    options.cwd = Some(demo.state.path().to_path_buf());
    options.policy.enabled = true;
    options.policy.max_attempts = 3;
    options.policy.retry_delay_ms = 10;
    let mut handle = spawn_orchestrator(options);
    // The Codex demo's `flaky` fails the first two times a prompt is sent, then succeeds.
    handle
        .commands
        .send(Command::SubmitWithImages(
            "flaky: what is this?".into(),
            vec![image(&path)],
        ))
        .unwrap();
    let mut answer_by_attempt: std::collections::BTreeMap<u32, String> = Default::default();
    let mut recorded = None;
    let outcome = loop {
        let event = timeout(PATIENCE, handle.events.recv())
            .await
            .expect("in time")
            .expect("running");
        match event {
            Ev::ImagesAttached { images, .. } => recorded = Some(images),
            Ev::Message {
                attempt,
                message: AgentMessage::Assistant { delta },
                ..
            } => answer_by_attempt
                .entry(attempt)
                .or_default()
                .push_str(&delta),
            Ev::TurnEnded { outcome, .. } => break outcome,
            _ => {}
        }
    };
    assert_eq!(outcome, TurnOutcome::Completed);
    let last = answer_by_attempt.iter().next_back().expect("an answer");
    assert!(
        *last.0 >= 2,
        "the answer came from a retry: {answer_by_attempt:?}"
    );
    assert!(
        last.1.starts_with("I see an image (png, 4321 bytes)."),
        "{answer_by_attempt:?}"
    );
    let recorded = recorded.expect("the turn said what it carries");
    assert_eq!(recorded.len(), 1);
    assert_eq!(recorded[0].size, 4321);
    assert_eq!(recorded[0].mime, "image/png");
    assert_eq!(recorded[0].path, path.display().to_string());
    handle.commands.send(Command::Shutdown).unwrap();
}

/// Whether the demo ACP agent started with `args` says it takes images, as its provider reads
/// `initialize` (after a first turn, so that the agent has been initialised).
async fn acp_accepts_images(args: &[&str]) -> Option<bool> {
    let demo = DemoLauncher::new();
    let settings = agentty::config::ProviderSettings {
        permissions: Some(PermissionPolicy::Allow),
        ..demo.settings(args, "0")
    };
    let provider = build_provider_with("demo", &settings, Transport::Acp).unwrap();
    assert!(!provider.accepts_images(), "an ACP agent says so itself");
    let status = provider.agent_status().expect("ACP reports a status");
    let request = AttemptRequest {
        prompt: "hi".into(),
        cwd: Some(demo.state.path().to_path_buf()),
        attempt: 1,
        ..AttemptRequest::default()
    };
    let messages = collect(provider.execute(request, StopControl::new())).await;
    assert!(matches!(
        messages.last(),
        Some(AgentMessage::Completed { .. })
    ));
    let accepts = status.borrow().accepts_images;
    accepts
}

#[tokio::test]
async fn an_acp_agent_takes_images_only_when_its_initialize_announces_them() {
    assert_eq!(acp_accepts_images(&[]).await, Some(false));
    assert_eq!(
        acp_accepts_images(&["--flavour", "gemini"]).await,
        Some(true)
    );
}

#[tokio::test]
async fn the_image_reaches_the_demo_agent_over_claude_s_stream_json() {
    let (_dir, path) = png_file("shot.png", 640);
    let demo = DemoLauncher::new();
    let backend = build_backend("demo", &demo.settings(&[], "0")).unwrap();
    let provider = provider_on(backend, Transport::Stream, PermissionPolicy::Allow).unwrap();
    assert!(provider.accepts_images());
    let messages = collect(provider.execute(
        demo_request(&demo, "what is this?", &image(&path)),
        StopControl::new(),
    ))
    .await;
    assert!(
        text(&messages).starts_with("I see an image (png, 640 bytes). Demo (claude stream) heard"),
        "{messages:?}"
    );
    assert!(matches!(
        messages.last(),
        Some(AgentMessage::Completed { .. })
    ));
}

/// An ACP agent that records every line it receives (`$FAKE_RECEIVED`) and announces
/// `promptCapabilities.image` as `$FAKE_TAKES_IMAGES` (`true` or `false`) says: the demo ACP
/// agent reads only a prompt's text, so it cannot show what the image block carried.
const RECORDING_ACP_AGENT: &str = r#"
while IFS= read -r line; do
  printf '%s\n' "$line" >> "$FAKE_RECEIVED"
  id=${line#*'"id":'}
  id=${id%%[,\}]*}
  case "$line" in
  *'"method":"initialize"'*)
    printf '{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":1,"agentCapabilities":{"loadSession":false,"promptCapabilities":{"image":%s}}}}\n' "$id" "$FAKE_TAKES_IMAGES"
    ;;
  *'"method":"session/new"'*)
    printf '{"jsonrpc":"2.0","id":%s,"result":{"sessionId":"fake-%s"}}\n' "$id" "$$"
    ;;
  *'"method":"session/prompt"'*)
    printf '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"fake-%s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"noted"}}}}\n' "$$"
    printf '{"jsonrpc":"2.0","id":%s,"result":{"stopReason":"end_turn"}}\n' "$id"
    ;;
  *'"method":'*)
    [ "$id" = "$line" ] || printf '{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"not offered"}}\n' "$id"
    ;;
  esac
done
"#;

/// The recording ACP agent, configured as an ACP provider of its own, behind the orchestrator.
struct RecordingAcpAgent {
    dir: tempfile::TempDir,
    handle: agentty::orchestrator::OrchestratorHandle,
    provider: Arc<dyn Provider>,
}

impl RecordingAcpAgent {
    fn start(takes_images: bool) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let script = write_script(dir.path(), "recording-acp-agent", RECORDING_ACP_AGENT);
        let settings = agentty::config::ProviderSettings {
            command: Some(script),
            protocol: Some(Transport::Acp),
            permissions: Some(PermissionPolicy::Allow),
            env: [
                (
                    "FAKE_RECEIVED".to_owned(),
                    dir.path().join("received.jsonl").display().to_string(),
                ),
                ("FAKE_TAKES_IMAGES".to_owned(), takes_images.to_string()),
            ]
            .into_iter()
            .collect(),
            ..Default::default()
        };
        let provider = build_provider_with("recording", &settings, Transport::Acp).unwrap();
        let mut options = OrchestratorOptions::new(provider.clone());
        options.cwd = Some(dir.path().to_path_buf());
        let handle = spawn_orchestrator(options);
        Self {
            dir,
            handle,
            provider,
        }
    }

    /// Sends `command` and hands every event up to the end of its turn to `seen`.
    async fn turn(&mut self, command: Command, mut seen: impl FnMut(Ev)) -> TurnOutcome {
        self.handle.commands.send(command).unwrap();
        loop {
            let event = timeout(PATIENCE, self.handle.events.recv())
                .await
                .expect("in time")
                .expect("running");
            let ended = match &event {
                Ev::TurnEnded { outcome, .. } => Some(outcome.clone()),
                _ => None,
            };
            seen(event);
            if let Some(outcome) = ended {
                return outcome;
            }
        }
    }

    /// The `prompt` of each `session/prompt` the agent received, oldest first.
    fn prompts_received(&self) -> Vec<serde_json::Value> {
        std::fs::read_to_string(self.dir.path().join("received.jsonl"))
            .unwrap_or_default()
            .lines()
            .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap())
            .filter(|message| message["method"] == "session/prompt")
            .map(|message| message["params"]["prompt"].clone())
            .collect()
    }
}

#[tokio::test]
async fn an_acp_agent_that_announces_images_receives_the_image_block_in_session_prompt() {
    use base64::Engine;
    let (_dir, path) = png_file("shot.png", 200);
    let mut agent = RecordingAcpAgent::start(true);
    let outcome = agent
        .turn(
            Command::SubmitWithImages("what is this?".into(), vec![image(&path)]),
            |_| {},
        )
        .await;
    assert_eq!(outcome, TurnOutcome::Completed);
    assert_eq!(
        agent
            .provider
            .agent_status()
            .unwrap()
            .borrow()
            .accepts_images,
        Some(true)
    );
    let data = base64::engine::general_purpose::STANDARD.encode(std::fs::read(&path).unwrap());
    assert_eq!(
        agent.prompts_received(),
        [serde_json::json!([
            {"type": "text", "text": "what is this?"},
            {"type": "image", "mimeType": "image/png", "data": data},
        ])]
    );
    agent.handle.commands.send(Command::Shutdown).unwrap();
}

/// The counterpart: an agent whose `initialize` does not announce images. Its status reaches
/// the chat as the running chat gets it, the prompt with an image is refused there with one
/// notice and kept, and the agent receives no request for it (the next prompt reaches it right
/// after the one before).
#[tokio::test]
async fn an_acp_agent_that_does_not_announce_images_gets_no_request_and_the_user_a_notice() {
    let (_dir, path) = png_file("shot.png", 100);
    let mut agent = RecordingAcpAgent::start(false);
    let mut chat = Chat::with_startup(startup("recording", None, None));
    chat.state
        .on_agent_started(agent.provider.capabilities(), None);
    chat.type_text("hello");
    let command = chat
        .press(KeyCode::Enter)
        .into_iter()
        .find_map(|effect| match effect {
            AppEffect::Command(command) => Some(command),
            _ => None,
        })
        .expect("a plain prompt goes");
    let outcome = agent
        .turn(command, |event| {
            chat.state
                .on_orchestrator_event(event, std::time::Instant::now());
        })
        .await;
    assert_eq!(outcome, TurnOutcome::Completed);
    assert_eq!(chat.state.agent_status.accepts_images, Some(false));

    chat.type_text("what is it ");
    chat.state.on_image_loaded(Ok(image(&path)), "");
    assert_eq!(sent(&chat.press(KeyCode::Enter)), None, "not sent");
    assert_eq!(chat.state.composer.attached_images().len(), 1, "kept");
    let screen = chat.screen(200, 16, 0);
    assert_eq!(
        screen
            .matches("its ACP agent does not announce promptCapabilities.image")
            .count(),
        1,
        "{screen}"
    );

    let outcome = agent.turn(Command::Submit("bye".into()), |_| {}).await;
    assert_eq!(outcome, TurnOutcome::Completed);
    assert_eq!(
        agent.prompts_received(),
        [
            serde_json::json!([{"type": "text", "text": "hello"}]),
            serde_json::json!([{"type": "text", "text": "bye"}]),
        ]
    );
    agent.handle.commands.send(Command::Shutdown).unwrap();
}
