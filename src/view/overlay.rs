//! Overlays drawn over the chat: the one trait their drawing keeps and the dispatch to it. The
//! pickers are drawn in `picker_overlays`, the help in `help_overlay`, the settings in
//! `settings_overlay`, review and rewind in `diff`. Each fits any screen from 40x12 up: lists
//! keep their selection in view, the help scrolls and puts descriptions under their keys when
//! the screen is narrow.
//!
//! Each overlay is one type of `crate::app` (its state and keys, see `crate::app::pane`); its
//! drawing is that type's [`DrawOverlay`] here, so the app stays free of rendering and the view
//! only reads the state.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;

use std::time::Instant;

use crate::app::menu::Overlay;
use crate::app::review::{DiffView, UndoConfirm};
use crate::app::rewind::RewindPicker;
use crate::app::state::AppState;

/// One overlay's drawing over the chat's `area`, from its own state and the chat's.
pub(crate) trait DrawOverlay {
    fn draw(&self, state: &AppState, area: Rect, buf: &mut Buffer, now: Instant);
}

pub(crate) fn render_overlay(
    state: &AppState,
    overlay: &Overlay,
    area: Rect,
    buf: &mut Buffer,
    now: Instant,
) {
    let pane: &dyn DrawOverlay = match overlay {
        Overlay::Menu(menu) => menu,
        Overlay::Help(help) => help,
        Overlay::HistorySearch(search) => search,
        Overlay::ProviderPicker(picker) => picker,
        Overlay::Settings(draft) => draft,
        Overlay::Conversations(picker) => picker,
        Overlay::ModelPicker(picker) => picker,
        Overlay::ModePicker(picker) => picker,
        Overlay::Diff(view) => view,
        Overlay::ConfirmUndo(confirm) => confirm,
        Overlay::Rewind(picker) => picker,
        Overlay::InterruptedRestore(prompt) => prompt,
    };
    pane.draw(state, area, buf, now);
}

impl DrawOverlay for DiffView {
    fn draw(&self, _state: &AppState, area: Rect, buf: &mut Buffer, _now: Instant) {
        super::diff::render_diff(self, area, buf);
    }
}

impl DrawOverlay for UndoConfirm {
    fn draw(&self, _state: &AppState, area: Rect, buf: &mut Buffer, _now: Instant) {
        super::diff::render_confirm_undo(self, area, buf);
    }
}

impl DrawOverlay for crate::app::review::RestorePrompt {
    fn draw(&self, _state: &AppState, area: Rect, buf: &mut Buffer, _now: Instant) {
        super::diff::render_restore_prompt(self, area, buf);
    }
}

impl DrawOverlay for RewindPicker {
    fn draw(&self, _state: &AppState, area: Rect, buf: &mut Buffer, now: Instant) {
        super::diff::render_rewind(self, area, buf, now);
    }
}
