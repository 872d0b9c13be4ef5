//! The settings overlay: the retry policy as a draft, edited with arrows and typed numbers,
//! checked with the config file's rules, how agentty calls the user back (`notify`), the colours
//! (`theme`), and its keys.

use std::time::Instant;

use crossterm::event::{KeyCode, KeyEvent};

use super::keymap::{PaneKey, SETTINGS_KEYS, SETTINGS_NUMBER_KEYS};
use super::list::ListSelection;
use super::pane::{OverlayPane, Step};
use crate::config::{
    Backoff, NotifyMode, RetryPolicy, Theme, MAX_ATTEMPTS_LIMIT, MAX_DELAY_LIMIT_MS,
};

/// The retry policy being edited in the settings overlay.
#[derive(Debug, Clone, PartialEq)]
pub struct SettingsDraft {
    pub(crate) policy: RetryPolicy,
    /// How agentty calls the user back when the terminal is not focused.
    pub(crate) notify: NotifyMode,
    /// The colours, for the terminal's background.
    pub(crate) theme: Theme,
    pub field: SettingsField,
    /// A value being typed into the selected number field.
    pub(crate) typing: Option<String>,
    /// Why the last typed value or the policy was refused (the config file's own rules).
    pub(crate) problem: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SettingsField {
    Enabled,
    MaxAttempts,
    RetryDelay,
    Backoff,
    MaxDelay,
    Theme,
    Notify,
}

/// What Enter in the settings saves.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SettingsChoice {
    pub(crate) policy: RetryPolicy,
    pub(crate) notify: NotifyMode,
    pub(crate) theme: Theme,
}

impl SettingsField {
    pub(crate) const ALL: [SettingsField; 7] = [
        SettingsField::Enabled,
        SettingsField::MaxAttempts,
        SettingsField::RetryDelay,
        SettingsField::Backoff,
        SettingsField::MaxDelay,
        SettingsField::Theme,
        SettingsField::Notify,
    ];

    pub(crate) fn label(self) -> &'static str {
        match self {
            SettingsField::Enabled => "Retry failed turns automatically",
            SettingsField::MaxAttempts => "Attempts per turn",
            SettingsField::RetryDelay => "First retry delay",
            SettingsField::Backoff => "Backoff",
            SettingsField::MaxDelay => "Longest wait (cap)",
            SettingsField::Notify => "Call me back when unfocused",
            SettingsField::Theme => "Terminal background",
        }
    }

    /// What the settings show for a theme.
    pub(crate) fn theme_value(theme: Theme) -> &'static str {
        match theme {
            Theme::Auto => "auto (as the terminal says)",
            Theme::Dark => "dark",
            Theme::Light => "light",
        }
    }

    /// What the settings show for a notification mode.
    pub(crate) fn notify_value(mode: NotifyMode) -> &'static str {
        match mode {
            NotifyMode::Off => "off",
            NotifyMode::Bell => "bell",
            NotifyMode::Osc => "bell + desktop",
        }
    }

    pub(crate) fn value(self, policy: &RetryPolicy) -> String {
        match self {
            SettingsField::Enabled => if policy.enabled { "on" } else { "off" }.to_owned(),
            SettingsField::MaxAttempts => policy.max_attempts.to_string(),
            SettingsField::RetryDelay => format_ms(policy.retry_delay_ms),
            SettingsField::Backoff => match policy.backoff {
                Backoff::Fixed => "fixed".to_owned(),
                Backoff::Exponential => "exponential".to_owned(),
            },
            SettingsField::MaxDelay => format_ms(policy.max_delay_ms),
            // Not a part of the policy: see `SettingsDraft::value_of`.
            SettingsField::Notify | SettingsField::Theme => String::new(),
        }
    }
}

fn format_ms(ms: u64) -> String {
    format!("{:.1} s", ms as f64 / 1000.0)
}

impl SettingsDraft {
    /// The value the draft shows for `field`.
    pub(crate) fn value_of(&self, field: SettingsField) -> String {
        match field {
            SettingsField::Notify => SettingsField::notify_value(self.notify).to_owned(),
            SettingsField::Theme => SettingsField::theme_value(self.theme).to_owned(),
            field => field.value(&self.policy),
        }
    }

    /// The draft, starting from the notification mode in use.
    pub(crate) fn with_notify(mut self, notify: NotifyMode) -> Self {
        self.notify = notify;
        self
    }

    /// The draft, starting from the theme in use.
    pub(crate) fn with_theme(mut self, theme: Theme) -> Self {
        self.theme = theme;
        self
    }

    /// The keys it answers on the field being edited.
    pub(crate) fn keys(&self) -> &'static [PaneKey] {
        if self.takes_numbers() {
            SETTINGS_NUMBER_KEYS
        } else {
            SETTINGS_KEYS
        }
    }

    pub(crate) fn new(policy: RetryPolicy) -> Self {
        Self {
            policy,
            notify: NotifyMode::default(),
            theme: Theme::default(),
            field: SettingsField::Enabled,
            typing: None,
            problem: None,
        }
    }

    /// The fields that apply to the policy as it is: a cap only matters when delays grow.
    pub(crate) fn fields(&self) -> Vec<SettingsField> {
        SettingsField::ALL
            .into_iter()
            .filter(|field| {
                *field != SettingsField::MaxDelay || self.policy.backoff == Backoff::Exponential
            })
            .collect()
    }

    /// Moves to another field for a list navigation key (the typed value is applied first, and
    /// the selection stays while it is refused); false if the key does not navigate.
    pub(crate) fn on_navigation_key(&mut self, key: KeyEvent) -> bool {
        let fields = self.fields();
        let index = fields
            .iter()
            .position(|field| *field == self.field)
            .unwrap_or(0);
        let mut list = ListSelection::at(index);
        if !list.on_key(key, fields.len()) {
            return false;
        }
        if self.commit_typing() {
            self.field = fields[list.selected];
        }
        true
    }

    /// Whether the selected field takes a typed number.
    pub(crate) fn takes_numbers(&self) -> bool {
        matches!(
            self.field,
            SettingsField::MaxAttempts | SettingsField::RetryDelay | SettingsField::MaxDelay
        )
    }

    /// A character typed into the selected number field (digits, and `.` for seconds).
    pub(crate) fn type_char(&mut self, ch: char) -> bool {
        let allowed =
            ch.is_ascii_digit() || (ch == '.' && self.field != SettingsField::MaxAttempts);
        if !self.takes_numbers() || !allowed {
            return false;
        }
        self.typing.get_or_insert_with(String::new).push(ch);
        self.problem = None;
        true
    }

    pub(crate) fn backspace(&mut self) {
        if let Some(typing) = self.typing.as_mut() {
            typing.pop();
        }
    }

    /// Applies the typed value, checked with the config file's rules; false (with `problem`
    /// set) if it is refused, and the policy is left as it was.
    pub(crate) fn commit_typing(&mut self) -> bool {
        let Some(typed) = self.typing.take() else {
            return true;
        };
        if typed.is_empty() {
            return true;
        }
        let mut candidate = self.policy.clone();
        let parsed = match self.field {
            SettingsField::MaxAttempts => typed
                .parse::<u32>()
                .map(|attempts| candidate.max_attempts = attempts)
                .map_err(|_| format!("{typed:?} is not a whole number of attempts")),
            SettingsField::RetryDelay | SettingsField::MaxDelay => match parse_seconds(&typed) {
                Some(ms) if self.field == SettingsField::RetryDelay => {
                    candidate.retry_delay_ms = ms;
                    // As with the arrows: the cap follows a first delay that passes it.
                    candidate.max_delay_ms = candidate.max_delay_ms.max(ms);
                    Ok(())
                }
                Some(ms) => {
                    candidate.max_delay_ms = ms;
                    Ok(())
                }
                None => Err(format!("{typed:?} is not a number of seconds")),
            },
            SettingsField::Enabled
            | SettingsField::Backoff
            | SettingsField::Notify
            | SettingsField::Theme => Ok(()),
        };
        let checked = parsed.and_then(|()| {
            candidate.validate().map_err(|problems| {
                problems
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join("; ")
            })
        });
        match checked {
            Ok(()) => {
                self.policy = candidate;
                self.problem = None;
                true
            }
            Err(problem) => {
                self.problem = Some(problem);
                false
            }
        }
    }

    /// Changes the selected value one step up or down, within sane bounds.
    pub(crate) fn adjust(&mut self, up: bool) {
        let policy = &mut self.policy;
        match self.field {
            SettingsField::Enabled => policy.enabled = !policy.enabled,
            SettingsField::MaxAttempts => {
                policy.max_attempts = step_u32(policy.max_attempts, up, 1, 1, MAX_ATTEMPTS_LIMIT);
            }
            SettingsField::RetryDelay => {
                policy.retry_delay_ms =
                    step_u64(policy.retry_delay_ms, up, 500, 0, MAX_DELAY_LIMIT_MS);
                // The cap may not be below the first delay (the config rejects that).
                policy.max_delay_ms = policy.max_delay_ms.max(policy.retry_delay_ms);
            }
            SettingsField::Backoff => {
                policy.backoff = match policy.backoff {
                    Backoff::Fixed => Backoff::Exponential,
                    Backoff::Exponential => Backoff::Fixed,
                };
            }
            SettingsField::MaxDelay => {
                policy.max_delay_ms =
                    step_u64(policy.max_delay_ms, up, 1000, 1000, MAX_DELAY_LIMIT_MS)
                        .max(policy.retry_delay_ms);
            }
            SettingsField::Notify => {
                const MODES: [NotifyMode; 3] = [NotifyMode::Off, NotifyMode::Bell, NotifyMode::Osc];
                let at = MODES.iter().position(|mode| *mode == self.notify);
                let at = at.unwrap_or(0);
                let next = if up { at + 1 } else { at + MODES.len() - 1 };
                self.notify = MODES[next % MODES.len()];
            }
            SettingsField::Theme => {
                let themes = Theme::ALL;
                let at = themes.iter().position(|theme| *theme == self.theme);
                let at = at.unwrap_or(0);
                let next = if up { at + 1 } else { at + themes.len() - 1 };
                self.theme = themes[next % themes.len()];
            }
        }
    }
}

impl OverlayPane for SettingsDraft {
    type Input<'a> = ();
    /// Enter on a valid policy: apply and save it, with the notification mode and the theme.
    type Request = SettingsChoice;

    /// A key while the settings are open.
    fn on_key(&mut self, key: KeyEvent, _now: Option<Instant>, _input: ()) -> Step<Self::Request> {
        match key.code {
            KeyCode::Esc if self.typing.is_some() => {
                self.typing = None;
                self.problem = None;
            }
            KeyCode::Esc => return Step::Close,
            KeyCode::Enter if self.typing.is_some() => {
                // Enter ends the typing; a second Enter saves.
                self.commit_typing();
            }
            KeyCode::Enter => match self.policy.validate() {
                Ok(()) => {
                    return Step::Done(SettingsChoice {
                        policy: self.policy.clone(),
                        notify: self.notify,
                        theme: self.theme,
                    })
                }
                Err(problems) => {
                    self.problem = Some(
                        problems
                            .iter()
                            .map(ToString::to_string)
                            .collect::<Vec<_>>()
                            .join("; "),
                    );
                }
            },
            KeyCode::Backspace if self.typing.is_some() => self.backspace(),
            KeyCode::Char(ch) if self.type_char(ch) => {}
            KeyCode::Left | KeyCode::Char('-') => {
                self.typing = None;
                self.adjust(false);
            }
            KeyCode::Right | KeyCode::Char('+') | KeyCode::Char(' ') => {
                self.typing = None;
                self.adjust(true);
            }
            _ => {
                self.on_navigation_key(key);
            }
        }
        Step::Open
    }
}

/// Seconds as typed (`2`, `0.5`, `1.25`) in whole milliseconds.
fn parse_seconds(text: &str) -> Option<u64> {
    let seconds: f64 = text.parse().ok()?;
    (seconds.is_finite() && (0.0..=1e9).contains(&seconds))
        .then(|| (seconds * 1000.0).round() as u64)
}

fn step_u32(value: u32, up: bool, step: u32, min: u32, max: u32) -> u32 {
    if up {
        value.saturating_add(step).min(max)
    } else {
        value.saturating_sub(step).max(min)
    }
}

fn step_u64(value: u64, up: bool, step: u64, min: u64, max: u64) -> u64 {
    if up {
        value.saturating_add(step).min(max)
    } else {
        value.saturating_sub(step).max(min)
    }
}

#[cfg(test)]
mod tests {
    use crossterm::event::KeyModifiers;

    use super::*;

    fn press(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    #[test]
    fn settings_steps_stay_in_bounds() {
        let mut draft = SettingsDraft::new(RetryPolicy {
            enabled: false,
            ..RetryPolicy::default()
        });
        draft.field = SettingsField::MaxAttempts;
        for _ in 0..20 {
            draft.adjust(true);
        }
        assert_eq!(draft.policy.max_attempts, MAX_ATTEMPTS_LIMIT);
        for _ in 0..20 {
            draft.adjust(false);
        }
        assert_eq!(draft.policy.max_attempts, 1);
        assert_eq!(draft.on_key(press(KeyCode::Up), None, ()), Step::Open);
        assert_eq!(draft.field, SettingsField::Enabled);
        draft.adjust(true);
        assert!(draft.policy.enabled);

        // The longest delay never drops below the first delay.
        draft.field = SettingsField::RetryDelay;
        for _ in 0..2000 {
            draft.adjust(true);
        }
        assert_eq!(draft.policy.retry_delay_ms, MAX_DELAY_LIMIT_MS);
        assert!(draft.policy.max_delay_ms >= MAX_DELAY_LIMIT_MS);
        draft.field = SettingsField::MaxDelay;
        for _ in 0..4000 {
            draft.adjust(false);
        }
        assert_eq!(draft.policy.max_delay_ms, MAX_DELAY_LIMIT_MS);
    }

    #[test]
    fn typed_values_follow_the_config_rules() {
        let mut draft = SettingsDraft::new(RetryPolicy::default());
        draft.field = SettingsField::RetryDelay;
        for ch in "1.25".chars() {
            assert!(draft.type_char(ch));
        }
        assert!(draft.commit_typing());
        assert_eq!(draft.policy.retry_delay_ms, 1250);
        // Over the config file's limit: refused with its message, nothing changed.
        draft.field = SettingsField::MaxAttempts;
        assert!(!draft.type_char('.'), "attempts are whole numbers");
        draft.type_char('9');
        draft.type_char('9');
        assert!(!draft.commit_typing());
        assert_eq!(
            draft.policy.max_attempts,
            RetryPolicy::default().max_attempts
        );
        let problem = draft.problem.clone().unwrap();
        assert!(problem.contains("max_attempts"), "{problem}");
        assert!(problem.contains("between 1 and"), "{problem}");
        // The cap applies to growing delays only.
        assert!(draft.fields().contains(&SettingsField::MaxDelay));
        draft.policy.backoff = Backoff::Fixed;
        assert!(!draft.fields().contains(&SettingsField::MaxDelay));
    }

    #[test]
    fn keys_type_commit_and_save_the_policy() {
        let mut draft = SettingsDraft::new(RetryPolicy::default());
        assert_eq!(draft.on_key(press(KeyCode::Down), None, ()), Step::Open);
        assert_eq!(draft.field, SettingsField::MaxAttempts);
        assert_eq!(
            draft.on_key(press(KeyCode::Char('4')), None, ()),
            Step::Open
        );
        // The first Enter ends the typing, the second saves.
        assert_eq!(draft.on_key(press(KeyCode::Enter), None, ()), Step::Open);
        let saved = RetryPolicy {
            max_attempts: 4,
            ..RetryPolicy::default()
        };
        assert_eq!(
            draft.on_key(press(KeyCode::Enter), None, ()),
            Step::Done(SettingsChoice {
                policy: saved,
                notify: NotifyMode::default(),
                theme: Theme::default(),
            })
        );
        assert_eq!(draft.on_key(press(KeyCode::Esc), None, ()), Step::Close);
    }

    #[test]
    fn the_theme_steps_through_auto_dark_and_light_and_is_saved() {
        let mut draft = SettingsDraft::new(RetryPolicy::default()).with_theme(Theme::Dark);
        assert_eq!(draft.value_of(SettingsField::Theme), "dark");
        while draft.field != SettingsField::Theme {
            assert_eq!(draft.on_key(press(KeyCode::Down), None, ()), Step::Open);
        }
        draft.on_key(press(KeyCode::Right), None, ());
        assert_eq!(draft.theme, Theme::Light);
        draft.on_key(press(KeyCode::Right), None, ());
        assert_eq!(draft.theme, Theme::Auto);
        assert_eq!(
            draft.value_of(SettingsField::Theme),
            "auto (as the terminal says)"
        );
        draft.on_key(press(KeyCode::Left), None, ());
        assert_eq!(draft.theme, Theme::Light);
        assert_eq!(
            draft.on_key(press(KeyCode::Enter), None, ()),
            Step::Done(SettingsChoice {
                policy: RetryPolicy::default(),
                notify: NotifyMode::default(),
                theme: Theme::Light,
            })
        );
    }
}
