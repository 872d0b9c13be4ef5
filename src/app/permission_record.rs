//! A permission request as the transcript keeps it: the sanitised cell waiting for its answer,
//! the outcome the agent reports read against the options offered, the `/permissions` notice of
//! the "always" answers, and the request's edits as bounded diff rows.

use std::time::{Duration, Instant};

use super::permission::is_always;
use super::transcript::{DiffLine, InertText, PermissionCell, PermissionOutcome, ShownOption};
use crate::stream::{
    FileDiff, PermissionOption, PermissionRequest, PermissionResolver, PERMISSION_CANCELLED,
};

/// Diff lines a cell keeps; the rest are counted.
const MAX_DIFF_LINES: usize = 400;
/// Unchanged lines shown around a change.
const CONTEXT_LINES: usize = 2;
/// How long the diff of an edit may take (a huge edit is then shown less finely aligned).
const DIFF_DEADLINE: Duration = Duration::from_millis(50);

/// What the transcript keeps of a request, sanitised, waiting for its answer.
pub(crate) fn permission_cell(request: &PermissionRequest, expanded: bool) -> PermissionCell {
    let (diff, diff_hidden) = diff_lines(&request.diffs, MAX_DIFF_LINES);
    PermissionCell {
        kind: InertText::new(&request.kind),
        title: one_line(&request.title),
        command: request
            .command
            .as_deref()
            .filter(|command| !command.trim().is_empty())
            .map(InertText::new),
        paths: request.paths.iter().map(|path| one_line(path)).collect(),
        diff,
        diff_hidden,
        options: request
            .options
            .iter()
            .map(|option| ShownOption {
                kind: option.kind,
                name: one_line(&option.name),
            })
            .collect(),
        outcome: PermissionOutcome::Waiting,
        feedback: None,
        expanded,
    }
}

/// What `/permissions` says: the "always" answers given in this conversation, as agentty
/// recorded them (the agent keeps its own record), and how to take one back
/// (`revoking_always`: the transport's words, from its capabilities).
pub(crate) fn standing_answers_notice<'a>(
    cells: impl Iterator<Item = &'a PermissionCell>,
    revoking_always: &str,
) -> String {
    let rows: Vec<String> = cells
        .filter_map(|cell| match &cell.outcome {
            PermissionOutcome::Chosen {
                kind: Some(kind),
                name,
                by,
            } if is_always(*kind) => {
                let icon = if kind.allows() { '✓' } else { '✗' };
                let who = match by {
                    PermissionResolver::User => "you",
                    PermissionResolver::Policy => "policy",
                };
                Some(format!("  {icon} {} — {name} ({who})", cell.question()))
            }
            _ => None,
        })
        .collect();
    let head = if rows.is_empty() {
        "Nothing was allowed or refused always in this conversation."
    } else {
        "Answered always in this conversation (agentty's record of the answers; the agent keeps \
         its own):"
    };
    let mut lines = vec![head.to_owned()];
    lines.extend(rows);
    lines.push(revoking_always.to_owned());
    lines.join("\n")
}

/// A cell for a request the chat never saw asked (a policy answered it before any prompt).
pub(crate) fn unseen_request_cell(outcome: PermissionOutcome) -> PermissionCell {
    PermissionCell {
        kind: InertText::default(),
        title: InertText::default(),
        command: None,
        paths: Vec::new(),
        diff: Vec::new(),
        diff_hidden: 0,
        options: Vec::new(),
        outcome,
        feedback: None,
        expanded: false,
    }
}

/// The outcome a `permission.resolved` reports, read against the options the request offered.
pub(crate) fn resolved_outcome(
    options: &[PermissionOption],
    outcome: &str,
    by: PermissionResolver,
) -> PermissionOutcome {
    if let Some(option) = options.iter().find(|option| option.id == outcome) {
        return chosen(option, by);
    }
    if outcome == PERMISSION_CANCELLED {
        return PermissionOutcome::Cancelled { by };
    }
    PermissionOutcome::Chosen {
        kind: None,
        name: one_line(outcome),
        by,
    }
}

pub(crate) fn chosen(option: &PermissionOption, by: PermissionResolver) -> PermissionOutcome {
    PermissionOutcome::Chosen {
        kind: Some(option.kind),
        name: one_line(&option.name),
        by,
    }
}

/// Sanitised, on one line (line breaks become spaces).
fn one_line(text: &str) -> InertText {
    let clean = InertText::new(text);
    if clean.contains('\n') {
        InertText::new(&clean.split_whitespace().collect::<Vec<_>>().join(" "))
    } else {
        clean
    }
}

/// The edits as rows of a unified diff (sanitised): at most `limit` rows, and how many more
/// there were.
pub(crate) fn diff_lines(diffs: &[FileDiff], limit: usize) -> (Vec<DiffLine>, usize) {
    let mut out = Vec::new();
    let mut hidden = 0;
    let mut emit = |line: DiffLine| {
        if out.len() < limit {
            out.push(line);
        } else {
            hidden += 1;
        }
    };
    for diff in diffs {
        emit(DiffLine::File(one_line(&diff.path)));
        let new: Vec<&str> = diff.new_text.lines().collect();
        let Some(old_text) = &diff.old_text else {
            for line in new {
                emit(DiffLine::Added(InertText::new(line)));
            }
            continue;
        };
        let old: Vec<&str> = old_text.lines().collect();
        emit_with_context(&old, &new, &mut emit);
    }
    (out, hidden)
}

/// The changes (similar's Myers diff, given at most [`DIFF_DEADLINE`]) with
/// [`CONTEXT_LINES`] unchanged lines around them; the unchanged lines between become gap rows.
fn emit_with_context(old: &[&str], new: &[&str], emit: &mut impl FnMut(DiffLine)) {
    let ops = similar::capture_diff_slices_deadline(
        similar::Algorithm::Myers,
        old,
        new,
        Some(Instant::now() + DIFF_DEADLINE),
    );
    let mut shown_to = 0;
    for group in similar::group_diff_ops(ops, CONTEXT_LINES) {
        let Some(first) = group.first() else {
            continue;
        };
        let skipped = first.old_range().start - shown_to;
        if skipped > 0 {
            emit(DiffLine::Gap(skipped));
        }
        for op in &group {
            for change in op.iter_changes(old, new) {
                let line = InertText::new(change.value());
                emit(match change.tag() {
                    similar::ChangeTag::Equal => DiffLine::Context(line),
                    similar::ChangeTag::Delete => DiffLine::Removed(line),
                    similar::ChangeTag::Insert => DiffLine::Added(line),
                });
            }
            shown_to = op.old_range().end;
        }
    }
    if old.len() > shown_to {
        emit(DiffLine::Gap(old.len() - shown_to));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_diff_shows_changes_with_context_and_gaps() {
        let old = "a\nb\nc\nd\ne\nf\ng\nh\n";
        let new = "a\nb\nc\nd\nE\nf\ng\nh\nI\n";
        let (lines, hidden) = diff_lines(
            &[FileDiff {
                path: "x.txt".into(),
                old_text: Some(old.into()),
                new_text: new.into(),
            }],
            100,
        );
        assert_eq!(hidden, 0);
        use DiffLine::*;
        assert_eq!(
            lines,
            [
                File("x.txt".into()),
                Gap(2),
                Context("c".into()),
                Context("d".into()),
                Removed("e".into()),
                Added("E".into()),
                Context("f".into()),
                Context("g".into()),
                Context("h".into()),
                Added("I".into()),
            ]
        );
    }

    #[test]
    fn unchanged_text_is_one_gap_and_a_change_at_the_start_keeps_the_tail_short() {
        let diff = |old: &str, new: &str| {
            diff_lines(
                &[FileDiff {
                    path: "x".into(),
                    old_text: Some(old.into()),
                    new_text: new.into(),
                }],
                100,
            )
            .0
        };
        use DiffLine::*;
        assert_eq!(diff("a\nb\nc\n", "a\nb\nc\n"), [File("x".into()), Gap(3)]);
        assert_eq!(
            diff("a\nb\nc\nd\ne\n", "A\nb\nc\nd\ne\n"),
            [
                File("x".into()),
                Removed("a".into()),
                Added("A".into()),
                Context("b".into()),
                Context("c".into()),
                Gap(2),
            ]
        );
    }

    #[test]
    fn a_new_file_is_all_added_and_the_rest_is_counted() {
        let (lines, hidden) = diff_lines(
            &[FileDiff {
                path: "new\x1b[2J.rs".into(),
                old_text: None,
                new_text: "1\n2\n3\n4\n".into(),
            }],
            3,
        );
        assert_eq!(
            lines,
            [
                DiffLine::File("new\u{241b}[2J.rs".into()),
                DiffLine::Added("1".into()),
                DiffLine::Added("2".into()),
            ]
        );
        assert_eq!(hidden, 2);
    }
}
