//! The sandbox's end of its channel to the gateway (see `shm.rs`): it reads the to-child ring
//! and writes the to-parent ring, spins briefly when there is nothing to read, then sleeps on
//! the futex word in the region; it rings the gateway's doorbell (one byte on its socket) only
//! when the gateway said it sleeps.

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

/// How long the sandbox keeps checking for work before it sleeps: long enough to take the
/// next job of a busy thread without a wake-up.
const SPIN: Duration = Duration::from_micros(50);

/// The sandbox's end.
pub(super) struct ChildChannel {
    region: Region,
    bell: UnixStream,
    /// The true tail of the to-child ring and head of the to-parent ring.
    tail: u64,
    head: u64,
}

impl ChildChannel {
    pub(super) fn new(region: Region, bell: UnixStream) -> Self {
        Self {
            region,
            bell,
            tail: 0,
            head: 0,
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

    /// Spins for [`SPIN`], then sleeps on the futex until `ready`.
    fn wait(&self, ready: impl Fn(&Region) -> Result<bool, Corrupt>) -> Result<(), Corrupt> {
        let started = Instant::now();
        let mut spins = 0u32;
        loop {
            if ready(&self.region)? {
                return Ok(());
            }
            spins += 1;
            if spins < 64 {
                std::hint::spin_loop();
                continue;
            }
            if started.elapsed() >= SPIN {
                break;
            }
            // Give the core away between checks: on a busy machine the gateway thread this
            // waits for may need it.
            std::thread::yield_now();
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
                return Ok(());
            }
            // Woken by the gateway, by a spurious wake-up or after a second: check again.
            let _ = futex::wait(sleeping, futex::Flags::empty(), 1, Some(&limit));
        }
    }

    /// Test hook (debug builds): publishes a head far beyond the ring.
    #[cfg(debug_assertions)]
    pub(super) fn scribble(&mut self) {
        self.region.scribble(Dir::ToParent);
        self.wake_parent();
    }
}
