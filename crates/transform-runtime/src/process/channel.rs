//! The gateway's end of its channel to one sandbox process, in two halves that different jobs
//! may hold at once: [`Tx`] writes frames into the to-child ring (waking the sandbox with a
//! futex only when it sleeps), [`Rx`] reads frames from the to-parent ring, sleeping on the
//! socket to the sandbox (its doorbell, which the sandbox rings only when this side said it
//! sleeps; its end of file says the sandbox is gone).
//!
//! Neither half spins: the serving thread has other requests to serve while it waits.

use std::{rc::Rc, sync::atomic::Ordering, time::Duration};

use tokio::net::UnixStream;

use super::{
    protocol::{self, FromChild, MAX_FRAME},
    shm::{full_fence, Corrupt, Dir, Region, RING},
};
use crate::message::TransformError;

/// How long a writer waits before looking for room in a full ring again (the sandbox is
/// reading: a ring fills only with several large frames queued).
const ROOM_POLL: Duration = Duration::from_millis(1);

pub(super) fn died(e: impl std::fmt::Display) -> TransformError {
    TransformError::Engine(format!("the transform process failed: {e}"))
}

fn corrupt(_: Corrupt) -> TransformError {
    died("its shared ring is corrupt")
}

/// Wakes the sandbox if it sleeps.
fn wake_child(region: &Region) {
    full_fence();
    let sleeping = region.child_sleeping();
    if sleeping.load(Ordering::Relaxed) != 0 {
        sleeping.store(0, Ordering::Relaxed);
        let _ = rustix::thread::futex::wake(sleeping, rustix::thread::futex::Flags::empty(), 1);
    }
}

/// The two halves over `region`, with `socket` as the doorbell.
pub(super) fn channel(region: Region, socket: UnixStream) -> (Tx, Rx) {
    let region = Rc::new(region);
    (
        Tx {
            region: region.clone(),
            head: 0,
        },
        Rx {
            region,
            socket,
            tail: 0,
            partial: Vec::new(),
        },
    )
}

/// Writes frames to the sandbox.
pub(super) struct Tx {
    region: Rc<Region>,
    /// The true head of the to-child ring.
    head: u64,
}

impl Tx {
    /// Tells the sandbox whether it may spin for its next frame (see `shm.rs`).
    pub(super) fn allow_spin(&self, allowed: bool) {
        self.region
            .spin_allowed()
            .store(u32::from(allowed), Ordering::Relaxed);
    }

    /// Sends one encoded frame. A frame that fits in the ring is written in one go, once there
    /// is room for all of it, so a caller dropped while it waits leaves nothing half-written;
    /// a larger one is streamed, and whoever drops it mid-way must kill the sandbox
    /// ([`Tx::fits`] says which). Waiting for room ends with an error when `gone` says the
    /// process was stopped, or after `patience` (the sandbox is not reading: stuck in a job).
    pub(super) async fn send(
        &mut self,
        frame: &[u8],
        gone: impl Fn() -> bool,
        patience: Duration,
    ) -> Result<(), TransformError> {
        let whole = Self::fits(frame);
        let until = tokio::time::Instant::now() + patience;
        let mut at = 0;
        while at < frame.len() {
            let room = self
                .region
                .writable(Dir::ToChild, self.head)
                .map_err(corrupt)?;
            if room == 0 || (whole && room < frame.len()) {
                if gone() {
                    return Err(died("it was stopped"));
                }
                if tokio::time::Instant::now() >= until {
                    return Err(died("it stopped reading"));
                }
                wake_child(&self.region);
                tokio::time::sleep(ROOM_POLL).await;
                continue;
            }
            at += self
                .region
                .write(Dir::ToChild, &mut self.head, &frame[at..])
                .map_err(corrupt)?;
            wake_child(&self.region);
        }
        Ok(())
    }

    /// Whether `frame` is written in one go.
    pub(super) fn fits(frame: &[u8]) -> bool {
        frame.len() <= RING
    }
}

/// Reads frames from the sandbox.
pub(super) struct Rx {
    region: Rc<Region>,
    socket: UnixStream,
    /// The true tail of the to-parent ring.
    tail: u64,
    /// The frame read so far: a reader dropped mid-frame leaves it for the next one.
    partial: Vec<u8>,
}

impl Rx {
    /// Receives one frame: size-checked, copied out of the ring, then decoded.
    pub(super) async fn receive(&mut self) -> Result<FromChild, TransformError> {
        self.fill(4).await?;
        let len = u32::from_be_bytes([
            self.partial[0],
            self.partial[1],
            self.partial[2],
            self.partial[3],
        ]) as usize;
        if len > MAX_FRAME {
            return Err(died("an oversized frame"));
        }
        self.fill(4 + len).await?;
        let frame = protocol::decode(&self.partial[4..])
            .map_err(|e| died(format!("a malformed frame: {e}")));
        self.partial.clear();
        frame
    }

    /// Reads until `partial` holds `n` bytes.
    async fn fill(&mut self, n: usize) -> Result<(), TransformError> {
        while self.partial.len() < n {
            let at = self.partial.len();
            self.partial.resize(n, 0);
            let read = self
                .region
                .read(Dir::ToParent, &mut self.tail, &mut self.partial[at..])
                .map_err(corrupt);
            let read = match read {
                Ok(read) => read,
                Err(e) => {
                    self.partial.truncate(at);
                    return Err(e);
                }
            };
            self.partial.truncate(at + read);
            if read > 0 {
                // Room freed: the sandbox may be waiting for it.
                wake_child(&self.region);
                continue;
            }
            self.wait().await?;
        }
        Ok(())
    }

    /// Sleeps on the doorbell until the to-parent ring holds bytes.
    async fn wait(&mut self) -> Result<(), TransformError> {
        loop {
            self.region.parent_waiting().store(1, Ordering::SeqCst);
            full_fence();
            if self
                .region
                .readable(Dir::ToParent, self.tail)
                .map_err(corrupt)?
                > 0
            {
                self.region.parent_waiting().store(0, Ordering::Relaxed);
                return Ok(());
            }
            self.socket.readable().await.map_err(died)?;
            let mut bell = [0u8; 64];
            match self.socket.try_read(&mut bell) {
                Ok(0) => return Err(died("it exited")),
                Ok(_) => {}
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(e) => return Err(died(e)),
            }
        }
    }
}
