//! The contract every overlay keeps (Codex's `BottomPaneView`): one type per overlay owns its
//! state and answers its keys with a [`Step`] (stay open, close, or ask the chat for something);
//! `AppState` carries the request out, in one place per overlay (`state/overlay_keys.rs`).
//!
//! Drawing is the view's: `crate::view::overlay` has one `draw` per overlay type. The view sits
//! above the app and draws from `&AppState`, so an overlay type that drew itself would pull
//! ratatui into the app and make the state depend on its rendering; the type is the one name
//! its keys, its state and its drawing share.

use std::time::Instant;

use crossterm::event::KeyEvent;

/// What a key did to an overlay.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Step<R> {
    /// It stays open.
    Open,
    /// It closes, asking nothing.
    Close,
    /// It closes and asks the chat for this.
    Done(R),
    /// It stays open and asks the chat for this.
    Ask(R),
}

/// One overlay over the chat.
pub(crate) trait OverlayPane: Sized {
    /// What it reads from the chat to answer a key (the prompts matching a search, the models).
    type Input<'a>;
    /// What it asks of the chat.
    type Request;

    /// A key pressed at `now` (when known).
    fn on_key(
        &mut self,
        key: KeyEvent,
        now: Option<Instant>,
        input: Self::Input<'_>,
    ) -> Step<Self::Request>;
}
