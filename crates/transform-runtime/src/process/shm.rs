//! The memory a serving thread shares with one sandbox process: two byte rings in a
//! memfd, one per direction, and the flags that say when a side sleeps.
//!
//! ```text
//!  header (4 KiB)   to-child head | to-child tail | to-parent head | to-parent tail |
//!                   child-sleeping (futex word) | parent-waiting | spin-allowed
//!                   (each on its own line)
//!  to-child ring    RING bytes: frames the gateway writes, the sandbox reads
//!  to-parent ring   RING bytes: frames the sandbox writes, the gateway reads
//! ```
//!
//! Each ring is a byte stream (frames may be larger than the ring: the writer waits for room).
//! A side publishes only its own counter; it keeps the true value in private memory and reads
//! only the other side's counter from the region, so a sandbox that scribbles over the header
//! can make its own channel fail, nothing else. Every value read from the region is checked
//! (`Corrupt`), and bytes are copied out before anything decodes them.
//!
//! Wake-ups cost a system call only when the other side sleeps: the sandbox sleeps on a futex
//! in the region (the gateway wakes it with `FUTEX_WAKE`), the gateway's thread on its socket to
//! the sandbox (the sandbox writes one byte). The gateway never spins: its thread has other
//! requests to serve. The sandbox spins briefly before sleeping only when the gateway says the
//! machine has a core to spare and its recent waits were short (`child_channel.rs`). A side
//! that wakes handles every frame waiting for it.
//!
//! This is the crate's one module that touches raw memory. The region is only ever accessed
//! through atomics (`AtomicU64` counters, `AtomicU32` flags, `AtomicU8` bytes): another process
//! writes it concurrently, which plain references would not allow.

use std::{
    io,
    os::fd::{AsFd, OwnedFd},
    ptr::NonNull,
    sync::atomic::{fence, AtomicU32, AtomicU64, AtomicU8, Ordering},
};

use rustix::mm::{MapFlags, ProtFlags};

/// Bytes of each ring.
pub(crate) const RING: usize = 1 << 20;
const HEADER: usize = 4096;
/// Bytes of the region.
pub(crate) const SIZE: usize = HEADER + 2 * RING;

const TO_CHILD_HEAD: usize = 0;
const TO_CHILD_TAIL: usize = 64;
const TO_PARENT_HEAD: usize = 128;
const TO_PARENT_TAIL: usize = 192;
const CHILD_SLEEPING: usize = 256;
const PARENT_WAITING: usize = 320;
const SPIN_ALLOWED: usize = 384;

/// The other side broke the ring's invariants.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Corrupt;

/// A mapping of the region.
pub(crate) struct Region {
    ptr: NonNull<u8>,
}

impl std::fmt::Debug for Region {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Region")
    }
}

impl Region {
    /// A new zeroed region and the memfd that backs it (to hand to the sandbox).
    pub(crate) fn create() -> io::Result<(Self, OwnedFd)> {
        let fd = rustix::fs::memfd_create("tessera-sandbox", rustix::fs::MemfdFlags::CLOEXEC)?;
        rustix::fs::ftruncate(&fd, SIZE as u64)?;
        let region = Self::map(&fd)?;
        Ok((region, fd))
    }

    /// Maps the region backed by `fd` (the sandbox's side).
    pub(crate) fn map(fd: impl AsFd) -> io::Result<Self> {
        // SAFETY: a fresh shared mapping of SIZE bytes of a memfd that is at least that long;
        // no existing memory is replaced (a null address hint).
        let ptr = unsafe {
            rustix::mm::mmap(
                std::ptr::null_mut(),
                SIZE,
                ProtFlags::READ | ProtFlags::WRITE,
                MapFlags::SHARED,
                fd,
                0,
            )?
        };
        let ptr = NonNull::new(ptr.cast::<u8>()).ok_or_else(io::Error::last_os_error)?;
        Ok(Self { ptr })
    }

    fn u64_at(&self, offset: usize) -> &AtomicU64 {
        // SAFETY: `offset` is one of the header constants: 8-byte aligned (the mapping is
        // page-aligned) and inside the mapping, which lives as long as `self`. Only atomic
        // accesses are ever made to it, by either process.
        unsafe { AtomicU64::from_ptr(self.ptr.as_ptr().add(offset).cast()) }
    }

    fn u32_at(&self, offset: usize) -> &AtomicU32 {
        // SAFETY: as in `u64_at`.
        unsafe { AtomicU32::from_ptr(self.ptr.as_ptr().add(offset).cast()) }
    }

    fn ring(&self, which: usize) -> &[AtomicU8] {
        // SAFETY: the ring's RING bytes lie inside the mapping, which lives as long as
        // `self`; `AtomicU8` has the size and alignment of `u8`, and only atomic accesses are
        // made to the bytes, by either process.
        unsafe {
            std::slice::from_raw_parts(
                self.ptr
                    .as_ptr()
                    .add(HEADER + which * RING)
                    .cast::<AtomicU8>(),
                RING,
            )
        }
    }

    /// The futex word the sandbox sleeps on (1 while it does).
    pub(crate) fn child_sleeping(&self) -> &AtomicU32 {
        self.u32_at(CHILD_SLEEPING)
    }

    /// 1 while the gateway waits for a byte on its socket.
    pub(crate) fn parent_waiting(&self) -> &AtomicU32 {
        self.u32_at(PARENT_WAITING)
    }

    /// 1 while the gateway sees an idle core: the sandbox may spin a little for its next
    /// frame instead of sleeping at once. Only a hint: a sandbox that spins regardless burns
    /// its own time slice, nothing else.
    pub(crate) fn spin_allowed(&self) -> &AtomicU32 {
        self.u32_at(SPIN_ALLOWED)
    }

    fn counters(&self, dir: Dir) -> (&AtomicU64, &AtomicU64, &[AtomicU8]) {
        match dir {
            Dir::ToChild => (
                self.u64_at(TO_CHILD_HEAD),
                self.u64_at(TO_CHILD_TAIL),
                self.ring(0),
            ),
            Dir::ToParent => (
                self.u64_at(TO_PARENT_HEAD),
                self.u64_at(TO_PARENT_TAIL),
                self.ring(1),
            ),
        }
    }

    /// Writer of `dir`: copies as much of `src` as fits after `head` (the writer's true head,
    /// kept in its private memory) and publishes it: the bytes written.
    pub(crate) fn write(&self, dir: Dir, head: &mut u64, src: &[u8]) -> Result<usize, Corrupt> {
        let (published, tail, data) = self.counters(dir);
        let used = head.wrapping_sub(tail.load(Ordering::Acquire));
        if used > RING as u64 {
            return Err(Corrupt);
        }
        let n = src.len().min(RING - used as usize);
        let at = (*head % RING as u64) as usize;
        let first = n.min(RING - at);
        store(&data[at..at + first], &src[..first]);
        store(&data[..n - first], &src[first..n]);
        *head = head.wrapping_add(n as u64);
        published.store(*head, Ordering::Release);
        Ok(n)
    }

    /// Writer of `dir`: the room left after `head`.
    pub(crate) fn writable(&self, dir: Dir, head: u64) -> Result<usize, Corrupt> {
        let (_, tail, _) = self.counters(dir);
        let used = head.wrapping_sub(tail.load(Ordering::Acquire));
        if used > RING as u64 {
            return Err(Corrupt);
        }
        Ok(RING - used as usize)
    }

    /// Test hook (debug builds): publishes a head of `dir` far beyond the ring, as a sandbox
    /// scribbling over the header would.
    #[cfg(debug_assertions)]
    pub(crate) fn scribble(&self, dir: Dir) {
        self.counters(dir).0.store(u64::MAX / 2, Ordering::Release);
    }

    /// Reader of `dir`: the bytes waiting after `tail` (the reader's true tail).
    pub(crate) fn readable(&self, dir: Dir, tail: u64) -> Result<usize, Corrupt> {
        let (head, _, _) = self.counters(dir);
        let waiting = head.load(Ordering::Acquire).wrapping_sub(tail);
        if waiting > RING as u64 {
            return Err(Corrupt);
        }
        Ok(waiting as usize)
    }

    /// Reader of `dir`: copies up to `dst.len()` waiting bytes out and frees their room: the
    /// bytes read.
    pub(crate) fn read(&self, dir: Dir, tail: &mut u64, dst: &mut [u8]) -> Result<usize, Corrupt> {
        let n = dst.len().min(self.readable(dir, *tail)?);
        let (_, published, data) = self.counters(dir);
        let at = (*tail % RING as u64) as usize;
        let first = n.min(RING - at);
        load(&data[at..at + first], &mut dst[..first]);
        load(&data[..n - first], &mut dst[first..n]);
        *tail = tail.wrapping_add(n as u64);
        published.store(*tail, Ordering::Release);
        Ok(n)
    }
}

/// The 8-byte words within `ring` (a span of a ring, which starts page-aligned): the bytes
/// before the first aligned word, the words, and the bytes after.
fn words(ring: &[AtomicU8]) -> (usize, usize) {
    let misaligned = ring.as_ptr() as usize % 8;
    let head = ((8 - misaligned) % 8).min(ring.len());
    let words = (ring.len() - head) / 8;
    (head, words)
}

/// The 8-byte word of the ring at `bytes` (8-aligned, 8 bytes long).
fn word(bytes: &[AtomicU8]) -> &AtomicU64 {
    // SAFETY: `words` only hands out 8-aligned runs of 8 bytes inside the mapping; the memory
    // is only ever accessed atomically, by either process, and `AtomicU64` has the size of 8
    // `AtomicU8`s.
    unsafe { AtomicU64::from_ptr(bytes.as_ptr().cast_mut().cast()) }
}

/// Copies `src` into `ring` (of the same length), a word at a time where aligned.
fn store(ring: &[AtomicU8], src: &[u8]) {
    let (head, words) = words(ring);
    for (cell, byte) in ring[..head].iter().zip(src) {
        cell.store(*byte, Ordering::Relaxed);
    }
    for w in 0..words {
        let at = head + w * 8;
        let mut value = [0u8; 8];
        value.copy_from_slice(&src[at..at + 8]);
        word(&ring[at..at + 8]).store(u64::from_ne_bytes(value), Ordering::Relaxed);
    }
    let tail = head + words * 8;
    for (cell, byte) in ring[tail..].iter().zip(&src[tail..]) {
        cell.store(*byte, Ordering::Relaxed);
    }
}

/// Copies `ring` out into `dst` (of the same length), a word at a time where aligned.
fn load(ring: &[AtomicU8], dst: &mut [u8]) {
    let (head, words) = words(ring);
    for (byte, cell) in dst[..head].iter_mut().zip(ring) {
        *byte = cell.load(Ordering::Relaxed);
    }
    for w in 0..words {
        let at = head + w * 8;
        let value = word(&ring[at..at + 8]).load(Ordering::Relaxed);
        dst[at..at + 8].copy_from_slice(&value.to_ne_bytes());
    }
    let tail = head + words * 8;
    for (byte, cell) in dst[tail..].iter_mut().zip(&ring[tail..]) {
        *byte = cell.load(Ordering::Relaxed);
    }
}

/// A ring, by direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dir {
    /// Frames the gateway writes and the sandbox reads.
    ToChild,
    /// Frames the sandbox writes and the gateway reads.
    ToParent,
}

impl Drop for Region {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `map`, unmapped once; every reference into it borrows
        // `self`, so none outlives it.
        let _ = unsafe { rustix::mm::munmap(self.ptr.as_ptr().cast(), SIZE) };
    }
}

/// Orders this side's last write to the region before its next read of the other side's flag
/// (and the other way round): with both sides doing so, a sleeper either sees the new data
/// when it checks again, or the waker sees its flag.
pub(crate) fn full_fence() {
    fence(Ordering::SeqCst);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_cross_and_wrap_around() {
        let (region, fd) = Region::create().expect("memfd");
        let other = Region::map(&fd).expect("second mapping");
        let (mut head, mut tail) = (0u64, 0u64);
        let chunk: Vec<u8> = (0..=255u8).cycle().take(RING / 3 + 7).collect();
        let mut got = vec![0u8; chunk.len()];
        for _ in 0..7 {
            assert_eq!(
                region.write(Dir::ToChild, &mut head, &chunk),
                Ok(chunk.len())
            );
            assert_eq!(other.readable(Dir::ToChild, tail), Ok(chunk.len()));
            assert_eq!(
                other.read(Dir::ToChild, &mut tail, &mut got),
                Ok(chunk.len())
            );
            assert_eq!(got, chunk);
        }
        // A full ring takes no more.
        let big = vec![1u8; RING + 10];
        assert_eq!(region.write(Dir::ToChild, &mut head, &big), Ok(RING));
        assert_eq!(region.write(Dir::ToChild, &mut head, &big), Ok(0));
    }

    #[test]
    fn a_scribbled_counter_is_corrupt_not_a_wild_read() {
        let (region, fd) = Region::create().expect("memfd");
        let other = Region::map(&fd).expect("second mapping");
        // The sandbox publishes a head far beyond what the ring can hold.
        other
            .u64_at(TO_PARENT_HEAD)
            .store(u64::MAX / 2, Ordering::Release);
        assert_eq!(region.readable(Dir::ToParent, 0), Err(Corrupt));
        other
            .u64_at(TO_CHILD_TAIL)
            .store(u64::MAX / 3, Ordering::Release);
        assert_eq!(region.write(Dir::ToChild, &mut 0, b"x"), Err(Corrupt));
    }
}
