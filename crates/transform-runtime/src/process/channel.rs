//! The gateway's end of its channel to one sandbox process: frames through the shared rings
//! (`shm.rs`), a futex wake-up for the sandbox only when it sleeps, and the socket to the
//! sandbox as the doorbell it rings only when this side sleeps (and whose end of file says the
//! sandbox is gone).
//!
//! While it waits, the serving thread first yields to its other tasks for a short while,
//! checking the ring between them: under load the answer arrives in that window and no system
//! call is made at all.

use std::{
    sync::atomic::Ordering,
    time::{Duration, Instant},
};

use tokio::net::UnixStream;

use super::{
    protocol::{self, FromChild, ToChild, MAX_FRAME},
    shm::{full_fence, Corrupt, Dir, Region},
};
use crate::message::TransformError;

/// How long a waiting side checks the ring between its other tasks before it sleeps.
const SPIN: Duration = Duration::from_micros(30);

fn died(e: impl std::fmt::Display) -> TransformError {
    TransformError::Engine(format!("the transform process failed: {e}"))
}

fn corrupt(_: Corrupt) -> TransformError {
    died("its shared ring is corrupt")
}

/// The gateway's end.
pub(super) struct Channel {
    region: Region,
    socket: UnixStream,
    /// The true head of the to-child ring and tail of the to-parent ring.
    head: u64,
    tail: u64,
}

impl Channel {
    pub(super) fn new(region: Region, socket: UnixStream) -> Self {
        Self {
            region,
            socket,
            head: 0,
            tail: 0,
        }
    }

    /// Sends one frame.
    pub(super) async fn send(&mut self, message: &ToChild) -> Result<(), TransformError> {
        let frame = protocol::encode(message).map_err(died)?;
        let mut at = 0;
        loop {
            at += self
                .region
                .write(Dir::ToChild, &mut self.head, &frame[at..])
                .map_err(corrupt)?;
            self.wake_child();
            if at == frame.len() {
                return Ok(());
            }
            self.wait(|c| Ok(c.region.writable(Dir::ToChild, c.head)? > 0))
                .await?;
        }
    }

    /// Receives one frame: size-checked, copied out of the ring, then decoded.
    pub(super) async fn receive(&mut self) -> Result<FromChild, TransformError> {
        let mut len = [0u8; 4];
        self.read_exact(&mut len).await?;
        let len = u32::from_be_bytes(len) as usize;
        if len > MAX_FRAME {
            return Err(died("an oversized frame"));
        }
        let mut body = vec![0u8; len];
        self.read_exact(&mut body).await?;
        protocol::decode(&body).map_err(|e| died(format!("a malformed frame: {e}")))
    }

    async fn read_exact(&mut self, dst: &mut [u8]) -> Result<(), TransformError> {
        let mut at = 0;
        while at < dst.len() {
            let n = self
                .region
                .read(Dir::ToParent, &mut self.tail, &mut dst[at..])
                .map_err(corrupt)?;
            if n > 0 {
                at += n;
                // Room freed: the sandbox may be waiting for it.
                self.wake_child();
                continue;
            }
            self.wait(|c| Ok(c.region.readable(Dir::ToParent, c.tail)? > 0))
                .await?;
        }
        Ok(())
    }

    /// Wakes the sandbox if it sleeps.
    fn wake_child(&self) {
        full_fence();
        let sleeping = self.region.child_sleeping();
        if sleeping.load(Ordering::Relaxed) != 0 {
            sleeping.store(0, Ordering::Relaxed);
            let _ = rustix::thread::futex::wake(sleeping, rustix::thread::futex::Flags::empty(), 1);
        }
    }

    /// Waits until `ready`: first yielding to the thread's other tasks for [`SPIN`], then
    /// asleep on the doorbell.
    async fn wait(
        &mut self,
        ready: impl Fn(&Self) -> Result<bool, Corrupt>,
    ) -> Result<(), TransformError> {
        let until = Instant::now() + SPIN;
        while Instant::now() < until {
            if ready(self).map_err(corrupt)? {
                return Ok(());
            }
            // Other tasks of the thread first; then the core, in case the sandbox shares it.
            tokio::task::yield_now().await;
            std::thread::yield_now();
        }
        loop {
            self.region.parent_waiting().store(1, Ordering::SeqCst);
            full_fence();
            if ready(self).map_err(corrupt)? {
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
