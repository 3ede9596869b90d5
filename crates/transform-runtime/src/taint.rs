//! The mark of an invocation that was handed a value its caller must never get back (a
//! destination-bound token's data: see docs/api.md, "Brokering credentials").
//!
//! The host marks it when it answers a `req.svc` call with such a value; the engine marks it
//! when the invocation ran in a context another marked invocation had already put such a value
//! into. The engine discards the context of a marked invocation (no later call runs in it), and
//! the caller reads the mark to decide what the transform may still answer.

use std::sync::atomic::{AtomicBool, Ordering};

/// Whether an invocation holds a value that must not reach its caller. Starts unmarked; once
/// marked it stays marked.
#[derive(Debug, Default)]
pub struct Taint(AtomicBool);

impl Taint {
    /// An unmarked taint.
    pub fn new() -> Self {
        Self::default()
    }

    /// Marks the invocation.
    pub fn mark(&self) {
        self.0.store(true, Ordering::Release);
    }

    /// Whether the invocation was marked.
    pub fn is_marked(&self) -> bool {
        self.0.load(Ordering::Acquire)
    }
}

#[cfg(test)]
mod tests {
    use super::Taint;

    #[test]
    fn a_mark_stays() {
        let taint = Taint::new();
        assert!(!taint.is_marked());
        taint.mark();
        taint.mark();
        assert!(taint.is_marked());
    }
}
