//! Fair sharing of a serving thread's sandbox slots between tenants.
//!
//! A slot is the right to run one job in one of the thread's sandbox processes. Slots are
//! shared by every tenant whose requests that thread serves, so without rules a tenant sending
//! slow transforms holds them all and the others queue behind it. Two rules keep that from
//! hurting another tenant:
//!
//! * **A reserve.** With two or more slots, one tenant holds at most all but one: the last
//!   slot of a thread is always free for a job of another tenant.
//! * **Fewest-held first.** When a slot frees up and several tenants wait, the tenant holding
//!   the fewest slots gets it (in arrival order among equals), so a tenant with a long queue
//!   cannot starve one with a short queue.
//!
//! Waiting for a slot never counts against a transform's time limit: the caller starts the
//! clock once it holds a slot, and bounds the wait separately (a wait that runs out is a `503`
//! that never quarantines the proxy).
//!
//! Single-threaded (the pool is per serving thread): plain `Rc`/`RefCell`, no locks.

use std::{
    cell::RefCell,
    collections::{HashMap, VecDeque},
    future::Future,
    pin::Pin,
    rc::Rc,
    task::{Context, Poll, Waker},
};

/// The slots of one serving thread.
pub(crate) struct Slots {
    state: RefCell<State>,
}

struct State {
    max: usize,
    held: HashMap<String, usize>,
    total: usize,
    waiters: VecDeque<Rc<Waiter>>,
}

struct Waiter {
    tenant: String,
    granted: std::cell::Cell<bool>,
    waker: RefCell<Option<Waker>>,
}

impl State {
    /// Most slots one tenant may hold.
    fn cap(&self) -> usize {
        if self.max >= 2 {
            self.max - 1
        } else {
            1
        }
    }

    fn held(&self, tenant: &str) -> usize {
        self.held.get(tenant).copied().unwrap_or(0)
    }

    fn may_take(&self, tenant: &str) -> bool {
        self.total < self.max && self.held(tenant) < self.cap()
    }

    fn take(&mut self, tenant: &str) {
        self.total += 1;
        *self.held.entry(tenant.to_string()).or_insert(0) += 1;
    }

    fn give_back(&mut self, tenant: &str) {
        self.total = self.total.saturating_sub(1);
        if let Some(n) = self.held.get_mut(tenant) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                self.held.remove(tenant);
            }
        }
    }

    /// Grants free slots to waiters: fewest held first, then arrival order.
    fn grant(&mut self) {
        loop {
            let best = self
                .waiters
                .iter()
                .enumerate()
                .filter(|(_, w)| self.may_take(&w.tenant))
                .min_by_key(|(i, w)| (self.held(&w.tenant), *i))
                .map(|(i, _)| i);
            let Some(i) = best else { return };
            let Some(waiter) = self.waiters.remove(i) else {
                return;
            };
            self.take(&waiter.tenant);
            waiter.granted.set(true);
            let waker = waiter.waker.borrow_mut().take();
            if let Some(w) = waker {
                w.wake();
            }
        }
    }
}

impl Slots {
    /// `max` slots (at least 1).
    pub(crate) fn new(max: usize) -> Rc<Self> {
        Rc::new(Self {
            state: RefCell::new(State {
                max: max.max(1),
                held: HashMap::new(),
                total: 0,
                waiters: VecDeque::new(),
            }),
        })
    }

    /// Slots held by every tenant together.
    #[cfg(test)]
    pub(crate) fn busy(&self) -> usize {
        self.state.borrow().total
    }

    /// Waits for a slot for `tenant`. Dropping the future before it resolves leaves the queue
    /// (and gives back a slot granted meanwhile).
    pub(crate) fn acquire(self: &Rc<Self>, tenant: &str) -> Acquire {
        let mut state = self.state.borrow_mut();
        // Jump no queue: a free slot goes to a newcomer only when no waiter may take it.
        if state.may_take(tenant) && !state.waiters.iter().any(|w| state.may_take(&w.tenant)) {
            state.take(tenant);
            return Acquire {
                slots: self.clone(),
                waiter: Rc::new(Waiter {
                    tenant: tenant.to_string(),
                    granted: std::cell::Cell::new(true),
                    waker: RefCell::new(None),
                }),
                done: false,
            };
        }
        let waiter = Rc::new(Waiter {
            tenant: tenant.to_string(),
            granted: std::cell::Cell::new(false),
            waker: RefCell::new(None),
        });
        state.waiters.push_back(waiter.clone());
        Acquire {
            slots: self.clone(),
            waiter,
            done: false,
        }
    }

    fn release(&self, tenant: &str) {
        let mut state = self.state.borrow_mut();
        state.give_back(tenant);
        state.grant();
    }
}

/// A pending [`Slots::acquire`].
pub(crate) struct Acquire {
    slots: Rc<Slots>,
    waiter: Rc<Waiter>,
    done: bool,
}

impl Future for Acquire {
    type Output = Slot;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Slot> {
        if self.waiter.granted.get() {
            self.done = true;
            return Poll::Ready(Slot {
                slots: self.slots.clone(),
                tenant: self.waiter.tenant.clone(),
            });
        }
        *self.waiter.waker.borrow_mut() = Some(cx.waker().clone());
        Poll::Pending
    }
}

impl Drop for Acquire {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        if self.waiter.granted.get() {
            // Granted but never collected: hand it on.
            self.slots.release(&self.waiter.tenant);
        } else {
            let mut state = self.slots.state.borrow_mut();
            state.waiters.retain(|w| !Rc::ptr_eq(w, &self.waiter));
        }
    }
}

/// A held slot; dropping it gives it back (to the next waiter, by the rules above).
pub(crate) struct Slot {
    slots: Rc<Slots>,
    tenant: String,
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.slots.release(&self.tenant);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::FutureExt;

    fn ready(a: &mut Acquire) -> Option<Slot> {
        a.now_or_never_ref()
    }

    trait NowOrNever {
        fn now_or_never_ref(&mut self) -> Option<Slot>;
    }

    impl NowOrNever for Acquire {
        fn now_or_never_ref(&mut self) -> Option<Slot> {
            Pin::new(self).now_or_never()
        }
    }

    #[test]
    fn one_tenant_leaves_the_last_slot_to_the_others() {
        let slots = Slots::new(3);
        let a1 = ready(&mut slots.acquire("a")).expect("free");
        let _a2 = ready(&mut slots.acquire("a")).expect("free");
        let mut a3 = slots.acquire("a");
        assert!(ready(&mut a3).is_none(), "the reserve is not a's");
        let b = ready(&mut slots.acquire("b")).expect("the reserve is b's");
        assert_eq!(slots.busy(), 3);
        drop(b);
        assert!(ready(&mut a3).is_none(), "still the reserve");
        drop(a1);
        let _a3 = ready(&mut a3).expect("a's own slot came back");
        assert_eq!(slots.busy(), 2);
    }

    #[test]
    fn a_freed_slot_goes_to_the_tenant_holding_fewest() {
        let slots = Slots::new(4);
        let _a1 = ready(&mut slots.acquire("a")).expect("free");
        let _a2 = ready(&mut slots.acquire("a")).expect("free");
        let _b1 = ready(&mut slots.acquire("b")).expect("free");
        let c1 = ready(&mut slots.acquire("c")).expect("free");
        // a queues first (holding 2), then b (holding 1).
        let mut a3 = slots.acquire("a");
        let mut b2 = slots.acquire("b");
        assert!(ready(&mut a3).is_none() && ready(&mut b2).is_none());
        drop(c1);
        let b2 = ready(&mut b2).expect("b holds fewer: it goes first");
        assert!(ready(&mut a3).is_none());
        drop(b2);
        let _a3 = ready(&mut a3).expect("then a");
    }

    #[test]
    fn a_waiter_that_gives_up_leaves_no_trace() {
        let slots = Slots::new(1);
        let a = ready(&mut slots.acquire("a")).expect("free");
        let mut b = slots.acquire("b");
        assert!(ready(&mut b).is_none());
        drop(b);
        drop(a);
        assert_eq!(slots.busy(), 0);
        let c = ready(&mut slots.acquire("c")).expect("free");
        // Granted while waiting, but dropped before being collected: handed on.
        let d = slots.acquire("d");
        drop(c);
        assert_eq!(slots.busy(), 1, "granted to d");
        drop(d);
        assert_eq!(slots.busy(), 0);
    }
}
