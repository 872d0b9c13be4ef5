//! Images attached to the prompt: the ways the user names one (a pasted path, Ctrl+V on a
//! path before the cursor or on the clipboard's image, an `@` mention of an image file), what comes back once the event
//! loop has read it, and the refusal before sending to an agent that does not take images.
//!
//! The reducers read no file: they hand the path to the event loop (`AppEffect::AttachImage`),
//! which reads it (`crate::attachment::load`) and calls [`AppState::on_image_loaded`]. What
//! the user typed or pasted is kept as the request's fallback, so an image that cannot be
//! attached costs one notice and no text.

use super::{AppEffect, AppState};
use crate::app::transcript::NoticeLevel;
use crate::attachment::{self, ImageAttachment};
use crate::config::Transport;

/// An image the user named, for the event loop to read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageRequest {
    /// The path as the user gave it (relative to the working directory, or `~/`...).
    pub path: String,
    /// What goes back into the composer if the image cannot be attached.
    pub fallback: String,
}

impl AppState {
    /// A paste that is one path to an image file (by its name; the bytes are checked when it
    /// is read) is an attachment, not text.
    pub(super) fn pasted_image(&mut self, text: &str) -> Option<Vec<AppEffect>> {
        let path = attachment::pasted_image_path(text)?;
        Some(vec![AppEffect::AttachImage(ImageRequest {
            path,
            fallback: text.to_owned(),
        })])
    }

    /// Ctrl+V: the path just typed or pasted before the cursor (an `@` in front of it or not)
    /// becomes an attachment; with none, the image on the clipboard.
    pub(super) fn attach_path_before_cursor(&mut self) -> Vec<AppEffect> {
        let before = self.composer.before_cursor();
        let word = before
            .rsplit(char::is_whitespace)
            .next()
            .unwrap_or_default()
            .to_owned();
        let path = word.strip_prefix('@').unwrap_or(&word);
        if path.is_empty() || !attachment::has_image_name(path) {
            // No path typed: the clipboard's image, or the image file it names.
            return vec![AppEffect::AttachClipboardImage];
        }
        let path = path.to_owned();
        self.composer
            .replace_before_cursor(word.chars().count(), "");
        vec![AppEffect::AttachImage(ImageRequest {
            path,
            fallback: word,
        })]
    }

    /// An `@` mention completed to `path`, an image file: attached instead of mentioned (the
    /// `replaces` characters typed for it go).
    pub(super) fn attach_mentioned(
        &mut self,
        replaces: usize,
        path: &str,
        completion: &str,
    ) -> Vec<AppEffect> {
        self.composer.replace_before_cursor(replaces, "");
        vec![AppEffect::AttachImage(ImageRequest {
            path: path.to_owned(),
            fallback: completion.to_owned(),
        })]
    }

    /// The event loop read the image asked for: it goes into the composer at the cursor, or
    /// the user's text goes back with one notice saying why.
    pub fn on_image_loaded(&mut self, result: Result<ImageAttachment, String>, fallback: &str) {
        match result {
            Ok(image) => self.composer.attach_image(image),
            Err(why) => {
                self.notice(NoticeLevel::Warning, why);
                self.composer.insert_str(fallback);
            }
        }
        // What came in was not typed: no popup for it.
        self.popup = None;
        self.popup_dismissed_for = Some(self.composer.text());
    }

    /// Why a prompt with images cannot go now (`interjecting`: it would join the running
    /// turn); `None` when it can.
    pub(super) fn images_refused(&self, interjecting: bool) -> Option<String> {
        let transport = self.agent_transport.map_or("", Transport::name);
        // The transport says; an agent that announces it (ACP) has the last word.
        let images = self.agent_capabilities.images;
        let accepts = self.agent_status.accepts_images.unwrap_or(images.taken());
        if !accepts {
            let how = images.why_not();
            return Some(format!(
                "Not sent: {} ({transport}) does not take images: {how}. The prompt is kept; \
                 Backspace over the image removes it.",
                self.provider
            ));
        }
        if interjecting || self.is_turn_running() || !self.queued.is_empty() {
            return Some(
                "Not sent yet: a prompt with images starts a turn of its own. The prompt is \
                 kept; send it once the agent is done (Esc stops the turn)."
                    .to_owned(),
            );
        }
        None
    }
}
