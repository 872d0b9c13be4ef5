//! One turn played (`turn/start`, or `thread/compact/start`'s turn of its own): the user item,
//! the warning Codex repeats, the scenario's items streamed, the token usage and
//! `turn/completed`.

use serde_json::{json, Value};

use super::super::images;
use super::super::state::{self, flaky_try, now_ms, uuid_v7};
use super::thread::{log_request, Turn};
use super::{
    notify, respond, respond_error, Ending, Server, MODEL, REPLY, SCENARIOS, WRITTEN_FILE,
};

impl Server {
    pub(super) fn turn(&mut self, id: &Value, params: &Value) {
        let Some(mut thread) = self.thread.take() else {
            respond_error(id, -32600, "no thread: thread/start or thread/resume first");
            return;
        };
        let prompt = params["input"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let turn_id = uuid_v7(now_ms());
        respond(
            id,
            json!({"turn": {"id": turn_id, "items": [], "status": "inProgress", "error": null}}),
        );
        let at = json!({"threadId": thread.id, "turnId": turn_id});
        notify(
            "turn/started",
            json!({"threadId": thread.id, "turn": {"id": turn_id, "status": "inProgress"}}),
        );
        notify(
            "warning",
            json!({"threadId": thread.id, "message": format!("Model metadata for `{MODEL}` not found. Defaulting to fallback metadata; this can degrade performance and cause issues.")}),
        );
        thread.turns.push(Turn {
            id: turn_id.clone(),
            users: vec![prompt.clone()],
        });
        self.user_item(&at, &prompt);
        let seen_images =
            images::acknowledge(params["input"].as_array().into_iter().flatten().filter_map(
                |input| match input["type"].as_str() {
                    Some("image") => images::data_url(input["url"].as_str()?),
                    _ => None,
                },
            ));
        if let Some(seen) = seen_images {
            self.say(&at, &seen);
        }
        let scenario = self.scenario_for(&prompt);
        if let Some(approval) = params["approvalPolicy"].as_str() {
            approval.clone_into(&mut self.approval);
        }
        self.settings = json!({"model": params["model"], "effort": params["effort"],
                               "approvalPolicy": self.approval, "sandbox": params["sandboxPolicy"]["type"]});
        log_request(&thread, &self.settings);
        let ending = match scenario.as_str() {
            "think" => {
                self.reasoning(&at);
                self.say(&at, "After thinking: hello!")
            }
            "tool" => {
                self.command(&at, &thread, "echo hi", false);
                self.say(&at, "The command printed hi.")
            }
            "write" => match self.command(&at, &thread, &format!("touch {WRITTEN_FILE}"), self.approval != "never") {
                Some(true) => self.say(&at, &format!("I created {WRITTEN_FILE}.")),
                Some(false) => self.say(&at, "I did not create the file."),
                None => Ending::Interrupted,
            },
            "slow" => self.slow(&at, &mut thread),
            "sleep" => self.sleep(&at, &thread),
            "plan" => {
                self.plan_work(&at, &thread);
                self.say(&at, "The notes say v2 and v3.")
            }
            "flaky" if flaky_try(1, &prompt, 2).fails => Ending::Failed(
                "We\u{2019}re currently experiencing high demand, which may cause temporary errors.",
            ),
            _ => self.say(&at, REPLY),
        };
        if !matches!(ending, Ending::Failed(_)) {
            self.usage(&at);
        }
        thread.save();
        let (status, error) = match ending {
            Ending::Completed => ("completed", Value::Null),
            Ending::Interrupted => ("interrupted", Value::Null),
            Ending::Failed(message) => {
                let error = json!({"message": message, "codexErrorInfo": "internalServerError"});
                notify(
                    "error",
                    json!({"error": error, "willRetry": false, "threadId": thread.id, "turnId": turn_id}),
                );
                ("failed", error)
            }
        };
        notify(
            "turn/completed",
            json!({"threadId": thread.id, "turn": {"id": turn_id, "items": [], "status": status, "error": error}}),
        );
        self.thread = Some(thread);
    }

    pub(super) fn scenario_for(&self, prompt: &str) -> String {
        if let Some(forced) = &self.forced {
            return forced.clone();
        }
        prompt
            .split(|c: char| !c.is_ascii_alphanumeric())
            .find(|word| SCENARIOS.contains(word))
            .unwrap_or("hello")
            .to_owned()
    }

    /// `thread/compact/start` as Codex answers it: `{}`, then a turn of its own with a
    /// `contextCompaction` item. The summarisation request (the thread's user messages and
    /// [`COMPACTION_REQUEST`](state::COMPACTION_REQUEST)) is logged, and the thread's turns
    /// are replaced by one summary, which the next turn's request carries instead of them.
    pub(super) fn compact(&mut self, id: &Value) {
        let Some(mut thread) = self.thread.take() else {
            respond_error(id, -32600, "no thread: thread/start or thread/resume first");
            return;
        };
        respond(id, json!({}));
        let turn_id = uuid_v7(now_ms());
        let at = json!({"threadId": thread.id, "turnId": turn_id});
        notify(
            "turn/started",
            json!({"threadId": thread.id, "turn": {"id": turn_id, "status": "inProgress"}}),
        );
        let item = json!({"type": "contextCompaction", "id": uuid_v7(now_ms())});
        self.item(&at, "item/started", item.clone());
        let users = thread.users();
        let mut request = thread.clone();
        request.turns.push(Turn {
            id: turn_id.clone(),
            users: vec![state::COMPACTION_REQUEST.to_owned()],
        });
        log_request(&request, &self.settings);
        let summary = format!(
            "{} {} earlier prompts: {}",
            state::SUMMARY_PREFIX,
            users.len(),
            users.join(" | ")
        );
        thread.turns = vec![Turn {
            id: turn_id.clone(),
            users: vec![summary],
        }];
        thread.save();
        self.usage(&at);
        self.item(&at, "item/completed", item);
        notify(
            "turn/completed",
            json!({"threadId": thread.id, "turn": {"id": turn_id, "items": [], "status": "completed", "error": null}}),
        );
        self.thread = Some(thread);
    }

    pub(super) fn user_item(&self, at: &Value, text: &str) {
        let item = json!({"type": "userMessage", "id": uuid_v7(now_ms()), "content": [{"type": "text", "text": text}]});
        let mut params = at.clone();
        params["item"] = item;
        notify("item/started", params.clone());
        notify("item/completed", params);
    }

    pub(super) fn item(&self, at: &Value, method: &str, item: Value) {
        let mut params = at.clone();
        params["item"] = item;
        notify(method, params);
    }

    pub(super) fn with(at: &Value, key: &str, value: Value, delta: &str) -> Value {
        let mut params = at.clone();
        params[key] = value;
        params["delta"] = Value::from(delta);
        params
    }

    /// A message streamed a word at a time.
    pub(super) fn say(&mut self, at: &Value, text: &str) -> Ending {
        let item_id = format!("msg_{}", now_ms());
        self.item(
            at,
            "item/started",
            json!({"type": "agentMessage", "id": item_id, "text": ""}),
        );
        for word in text.split_inclusive(' ') {
            notify(
                "item/agentMessage/delta",
                Self::with(at, "itemId", Value::from(item_id.clone()), word),
            );
            std::thread::sleep(self.pace.scaled(20));
        }
        self.item(
            at,
            "item/completed",
            json!({"type": "agentMessage", "id": item_id, "text": text}),
        );
        Ending::Completed
    }

    pub(super) fn reasoning(&mut self, at: &Value) {
        let item_id = format!("rs_{}", now_ms());
        self.item(
            at,
            "item/started",
            json!({"type": "reasoning", "id": item_id, "summary": [], "content": []}),
        );
        let summary = [
            "**Thinking",
            " about",
            " greeting**",
            "\n\nI should",
            " say hello.",
        ];
        for delta in summary {
            let mut params = Self::with(at, "itemId", Value::from(item_id.clone()), delta);
            params["summaryIndex"] = Value::from(0);
            notify("item/reasoning/summaryTextDelta", params);
            std::thread::sleep(self.pace.scaled(20));
        }
        self.item(
            at,
            "item/completed",
            json!({"type": "reasoning", "id": item_id, "summary": [summary.concat()], "content": []}),
        );
    }

    pub(super) fn usage(&mut self, at: &Value) {
        self.total_input += 12;
        let last = json!({"totalTokens": 19, "inputTokens": 12, "cachedInputTokens": 0, "cacheWriteInputTokens": 0, "outputTokens": 7, "reasoningOutputTokens": 3});
        let total = json!({"totalTokens": self.total_input / 12 * 19, "inputTokens": self.total_input, "cachedInputTokens": 0, "outputTokens": self.total_input / 12 * 7, "reasoningOutputTokens": self.total_input / 12 * 3});
        let mut params = at.clone();
        params["tokenUsage"] = json!({"last": last, "total": total, "modelContextWindow": null});
        notify("thread/tokenUsage/updated", params);
    }
}
