//! Retryable or not, from a failure's facts. (Being built: see the orchestrator issue.)

use crate::stream::Failure;

/// Whether a failed attempt is worth another try.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Retryability {
    Retryable,
    NotRetryable,
}

pub fn classify(failure: &Failure) -> Retryability {
    let _ = failure;
    Retryability::NotRetryable
}
