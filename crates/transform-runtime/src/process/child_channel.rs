//! The sandbox's end of its channel to the gateway (see `shm.rs`): it reads the to-child ring
//! and writes the to-parent ring, and sleeps on the futex word in the region when there is
//! nothing to read; it rings the gateway's doorbell (one byte on its socket) only when the
//! gateway said it sleeps.
//!
//! Before sleeping it may spin, but only when both say a spin is likely to pay: the gateway
//! (the machine has an idle core, so spinning takes time from nobody) and its own recent
//! waits (they were short, so the next frame is likely to come within the spin).

use std::{
    io::Write,
    os::unix::net::UnixStream,
    sync::atomic::Ordering,
    time::{Duration, Instant},
};

use rustix::thread::futex;

use super::{
    protocol::{self, FromChild, ToChild, MAX_FRAME},
    shm::{full_fence, Corrupt, Dir, Region},
};

/// The longest the sandbox spins before it sleeps.
const MAX_SPIN: Duration = Duration::from_micros(20);

/// The sandbox's end.
pub(super) struct ChildChannel {
    region: Region,
    bell: UnixStream,
    /// The true tail of the to-child ring and head of the to-parent ring.
    tail: u64,
    head: u64,
    /// How long recent waits for a frame lasted, smoothed, in nanoseconds.
    recent_wait: f64,
}

impl ChildChannel {
    pub(super) fn new(region: Region, bell: UnixStream) -> Self {
        Self {
            region,
            bell,
            tail: 0,
            head: 0,
            recent_wait: f64::MAX,
        }
    }

    /// The next frame; `None` when the ring is corrupt or the frame malformed (the sandbox
    /// then exits).
    pub(super) fn read_frame(&mut self) -> Option<ToChild> {
        let mut len = [0u8; 4];
        self.read_exact(&mut len).ok()?;
        let len = u32::from_be_bytes(len) as usize;
        if len > MAX_FRAME {
            return None;
        }
        let mut body = vec![0u8; len];
        self.read_exact(&mut body).ok()?;
        protocol::decode(&body).ok()
    }

    /// Sends a frame; `false` when it could not.
    pub(super) fn write_frame(&mut self, message: &FromChild) -> bool {
        match protocol::encode(message) {
            Ok(frame) => self.write_all(&frame).is_ok(),
            Err(_) => false,
        }
    }

    /// Writes raw bytes (tests of a misbehaving sandbox).
    pub(super) fn write_all(&mut self, src: &[u8]) -> Result<(), Corrupt> {
        let mut at = 0;
        loop {
            at += self
                .region
                .write(Dir::ToParent, &mut self.head, &src[at..])?;
            self.wake_parent();
            if at == src.len() {
                return Ok(());
            }
            let head = self.head;
            self.wait(|r| Ok(r.writable(Dir::ToParent, head)? > 0))?;
        }
    }

    fn read_exact(&mut self, dst: &mut [u8]) -> Result<(), Corrupt> {
        let mut at = 0;
        while at < dst.len() {
            let n = self
                .region
                .read(Dir::ToChild, &mut self.tail, &mut dst[at..])?;
            if n > 0 {
                at += n;
                self.wake_parent();
                continue;
            }
            let tail = self.tail;
            self.wait(|r| Ok(r.readable(Dir::ToChild, tail)? > 0))?;
        }
        Ok(())
    }

    /// Rings the gateway's doorbell if it sleeps.
    fn wake_parent(&self) {
        full_fence();
        if self.region.parent_waiting().swap(0, Ordering::SeqCst) == 1 {
            let _ = (&self.bell).write(&[1]);
        }
    }

    /// Waits until `ready`: spinning first when [`ChildChannel::spin_budget`] allows, then
    /// asleep on the futex.
    fn wait(&mut self, ready: impl Fn(&Region) -> Result<bool, Corrupt>) -> Result<(), Corrupt> {
        let started = Instant::now();
        let budget = self.spin_budget();
        while started.elapsed() < budget {
            if ready(&self.region)? {
                self.waited(started.elapsed());
                return Ok(());
            }
            std::hint::spin_loop();
        }
        let sleeping = self.region.child_sleeping();
        let limit = futex::Timespec {
            tv_sec: 1,
            tv_nsec: 0,
        };
        loop {
            sleeping.store(1, Ordering::SeqCst);
            full_fence();
            if ready(&self.region)? {
                sleeping.store(0, Ordering::Relaxed);
                self.waited(started.elapsed());
                return Ok(());
            }
            // Woken by the gateway, by a spurious wake-up or after a second: check again.
            let _ = futex::wait(sleeping, futex::Flags::empty(), 1, Some(&limit));
        }
    }

    /// How long to spin before sleeping: twice the recent wait when that is under
    /// [`MAX_SPIN`] and the gateway sees an idle core; else not at all.
    fn spin_budget(&self) -> Duration {
        if self.region.spin_allowed().load(Ordering::Relaxed) == 0 {
            return Duration::ZERO;
        }
        let twice = 2.0 * self.recent_wait;
        if twice < MAX_SPIN.as_nanos() as f64 {
            Duration::from_nanos(twice as u64)
        } else {
            Duration::ZERO
        }
    }

    fn waited(&mut self, took: Duration) {
        let took = took.as_nanos() as f64;
        self.recent_wait = if self.recent_wait == f64::MAX {
            took
        } else {
            0.75 * self.recent_wait + 0.25 * took
        };
    }

    /// Test hook (debug builds): publishes a head far beyond the ring.
    #[cfg(debug_assertions)]
    pub(super) fn scribble(&mut self) {
        self.region.scribble(Dir::ToParent);
        self.wake_parent();
    }
}
