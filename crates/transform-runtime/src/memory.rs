//! Memory accounting of a runtime, cheap enough to run before every invocation.
//!
//! QuickJS enforces one limit per runtime on what its heap holds. An invocation's allowance is
//! therefore set as *what the runtime holds now + the per-invocation limit*. Asking QuickJS
//! what it holds (`JS_ComputeMemoryUsage`) walks every object of every context, which cost more
//! than a small transform (7% of the gateway's CPU when two contexts alternated), so the
//! runtime's allocator counts the bytes it hands out instead, and QuickJS's own figure is taken
//! now and then only to calibrate the offset between the two (its accounting adds per-block
//! overheads the allocator does not see).

use std::{cell::Cell, rc::Rc};

use rquickjs::allocator::{Allocator, RustAllocator};

/// The allocator of a runtime: Rust's global allocator, counting the bytes held.
pub(crate) struct CountingAllocator {
    held: Rc<Cell<usize>>,
}

impl CountingAllocator {
    /// An allocator and the counter it keeps.
    pub(crate) fn new() -> (Self, Rc<Cell<usize>>) {
        let held = Rc::new(Cell::new(0));
        (Self { held: held.clone() }, held)
    }

    fn add(&self, ptr: *mut u8) {
        if !ptr.is_null() {
            // Safety: `ptr` was just returned by `RustAllocator`.
            let size = unsafe { RustAllocator::usable_size(ptr) };
            self.held.set(self.held.get().saturating_add(size));
        }
    }

    /// Safety: `ptr` is null or was allocated by `RustAllocator` and not yet freed.
    unsafe fn remove(&self, ptr: *mut u8) {
        if !ptr.is_null() {
            // Safety: the caller's guarantee.
            let size = unsafe { RustAllocator::usable_size(ptr) };
            self.held.set(self.held.get().saturating_sub(size));
        }
    }
}

// Safety: every call is forwarded to `RustAllocator` unchanged; the counting only reads sizes
// of live allocations.
unsafe impl Allocator for CountingAllocator {
    fn alloc(&mut self, size: usize) -> *mut u8 {
        let ptr = RustAllocator.alloc(size);
        self.add(ptr);
        ptr
    }

    fn calloc(&mut self, count: usize, size: usize) -> *mut u8 {
        let ptr = RustAllocator.calloc(count, size);
        self.add(ptr);
        ptr
    }

    unsafe fn dealloc(&mut self, ptr: *mut u8) {
        // Safety: the caller's guarantee (allocated here, not yet freed).
        unsafe {
            self.remove(ptr);
            RustAllocator.dealloc(ptr);
        }
    }

    unsafe fn realloc(&mut self, ptr: *mut u8, new_size: usize) -> *mut u8 {
        // Safety: the caller's guarantee (allocated here, not yet freed).
        let old = if ptr.is_null() {
            0
        } else {
            unsafe { RustAllocator::usable_size(ptr) }
        };
        // Safety: as above.
        let new = unsafe { RustAllocator.realloc(ptr, new_size) };
        if !new.is_null() || new_size == 0 {
            self.held.set(self.held.get().saturating_sub(old));
            self.add(new);
        }
        new
    }

    unsafe fn usable_size(ptr: *mut u8) -> usize {
        // Safety: the caller's guarantee.
        unsafe { RustAllocator::usable_size(ptr) }
    }
}

/// What a runtime holds, as QuickJS counts it, estimated from the allocator's counter and the
/// last calibration.
#[derive(Debug)]
pub(crate) struct Accounting {
    held: Rc<Cell<usize>>,
    /// QuickJS's figure minus the counter, at the last calibration.
    offset: Cell<isize>,
    /// Invocations until the next calibration.
    until_calibration: Cell<u32>,
}

/// Invocations between calibrations.
const CALIBRATE_EVERY: u32 = 256;

impl Accounting {
    pub(crate) fn new(held: Rc<Cell<usize>>) -> Self {
        Self {
            held,
            offset: Cell::new(0),
            until_calibration: Cell::new(0),
        }
    }

    /// Forces a calibration before the next estimate (after building or dropping contexts).
    pub(crate) fn recalibrate(&self) {
        self.until_calibration.set(0);
    }

    /// The runtime's heap as QuickJS counts it; `measure` gives QuickJS's exact figure and is
    /// called only to calibrate.
    pub(crate) fn estimate(&self, measure: impl FnOnce() -> usize) -> usize {
        let held = self.held.get();
        if self.until_calibration.get() == 0 {
            let exact = measure();
            let offset = isize::try_from(exact)
                .unwrap_or(isize::MAX)
                .saturating_sub(isize::try_from(held).unwrap_or(isize::MAX));
            self.offset.set(offset);
            self.until_calibration.set(CALIBRATE_EVERY);
            return exact;
        }
        self.until_calibration.set(self.until_calibration.get() - 1);
        held.saturating_add_signed(self.offset.get())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_counter_follows_allocations() {
        let (mut a, held) = CountingAllocator::new();
        let p = a.alloc(1000);
        assert!(held.get() >= 1000);
        // Safety: p was allocated by `a` and is freed once.
        let p = unsafe { a.realloc(p, 5000) };
        assert!(held.get() >= 5000);
        unsafe { a.dealloc(p) };
        assert_eq!(held.get(), 0);
    }

    #[test]
    fn estimates_follow_the_counter_between_calibrations() {
        let held = Rc::new(Cell::new(1000));
        let acc = Accounting::new(held.clone());
        assert_eq!(acc.estimate(|| 1100), 1100, "calibrates first");
        held.set(3000);
        assert_eq!(acc.estimate(|| unreachable!()), 3100);
        acc.recalibrate();
        assert_eq!(acc.estimate(|| 2900), 2900);
    }
}
