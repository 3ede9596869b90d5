//! How a block's lines are stored: compressed with zstd, primed with a fixed dictionary of
//! the encoding's field names and common values, so that even a block of one event shrinks.
//!
//! Compression is a storage encoding below the chain: every event's hash is over its
//! canonical line ([`crate::canonical`]), which is what listing shows and what verification
//! re-hashes after decompressing. A block whose stored bytes do not decompress (tampered) is
//! reported by verification like any unreadable event. Blocks written before compression
//! existed are stored as they are ([`PLAIN`]) and read unchanged.

use std::cell::RefCell;

use crate::canonical::DecodeError;

/// Lines stored as they are.
pub const PLAIN: i16 = 0;
/// Lines stored as one zstd frame, compressed with [`DICTIONARY`].
pub const ZSTD: i16 = 1;

/// The most bytes a block's lines may decompress to: four times what the writer puts in one
/// block ([`crate::block::MAX_BLOCK_BYTES`], which only a single huge event exceeds). A stored frame
/// claiming more is refused rather than allocated, so a tampered row of a few kilobytes cannot
/// make a reader allocate more than this.
const MAX_LINES: u64 = 4 * crate::block::MAX_BLOCK_BYTES as u64;

/// zstd's level: its fastest standard level; the dictionary, not the level, does most of the
/// work on blocks this small.
const LEVEL: i32 = 1;

/// Raw-content dictionary of [`ZSTD`] blocks: typical encodings. **Never change it**: every
/// block stored with encoding 1 needs exactly these bytes to be read. A better dictionary
/// would be a new encoding number.
pub const DICTIONARY: &[u8] = concat!(
    r#"{"action":"token.created","actor":"00000000-0000-0000-0000-000000000000","id":"00000000-0000-0000-0000-000000000000","occurred_at":"2026-01-01T00:00:00.000000+00:00","outcome":"success","proxy_id":null,"reason":null,"request_id":null,"resource_ids":["00000000-0000-0000-0000-000000000000"],"seq":1,"tenant_id":"00000000-0000-0000-0000-000000000000"}"#,
    "\n",
    r#"{"action":"token.read","actor":"anonymous","count":2,"id":"","occurred_at":"2026-","outcome":"denied","proxy_id":null,"reason":"the API key is unknown or has been revoked","request_id":null,"resource_ids":[],"seq":2,"tenant_id":null}"#,
    "\n",
    r#"{"action":"token.read_by_transform","actor":"operator","id":"","occurred_at":"2026-","outcome":"success","proxy_id":"","reason":null,"request_id":"","resource_ids":[],"seq":3,"tenant_id":""}"#,
    "\n",
    r#"{"action":"token.detokenized","actor":"","destination":"api.example.com:443","ephemeral":true,"id":"","occurred_at":"2026-","outcome":"success","proxy_id":"","reason":null,"request_id":"","resource_ids":["",""],"seq":4,"tenant_id":""}"#,
    "\n",
    r#"{"action":"token.detokenized","actor":"","destination":"127.0.0.1:443","id":"","occurred_at":"2026-","outcome":"success","proxy_id":"","reason":null,"request_id":"","resource_ids":["",""],"seq":5,"tenant_id":""}"#,
    "\n"
)
.as_bytes();

thread_local! {
    static COMPRESSOR: RefCell<Option<zstd::bulk::Compressor<'static>>> = const { RefCell::new(None) };
    static DECOMPRESSOR: RefCell<Option<zstd::bulk::Decompressor<'static>>> = const { RefCell::new(None) };
}

/// `lines` as they are to be stored: the encoding and the bytes.
pub fn compress(lines: &[u8]) -> (i16, Vec<u8>) {
    let compressed = COMPRESSOR.with(|cell| {
        let mut cell = cell.borrow_mut();
        if cell.is_none() {
            *cell = zstd::bulk::Compressor::with_dictionary(LEVEL, DICTIONARY).ok();
        }
        cell.as_mut()?.compress(lines).ok()
    });
    match compressed {
        Some(bytes) => (ZSTD, bytes),
        // zstd could not be set up: the block is stored as it is, which is always readable.
        None => (PLAIN, lines.to_vec()),
    }
}

/// The lines of a block stored as `stored` with `encoding`.
pub fn decompress(encoding: i16, stored: Vec<u8>) -> Result<Vec<u8>, DecodeError> {
    match encoding {
        PLAIN => Ok(stored),
        ZSTD => {
            let size = zstd::zstd_safe::get_frame_content_size(&stored)
                .ok()
                .flatten()
                .filter(|n| *n <= MAX_LINES)
                .ok_or_else(|| DecodeError("the block's compressed frame is invalid".into()))?;
            DECOMPRESSOR.with(|cell| {
                let mut cell = cell.borrow_mut();
                if cell.is_none() {
                    *cell = zstd::bulk::Decompressor::with_dictionary(DICTIONARY).ok();
                }
                let decompressor = cell
                    .as_mut()
                    .ok_or_else(|| DecodeError("zstd cannot be set up".into()))?;
                let lines = decompressor
                    .decompress(&stored, size as usize)
                    .map_err(|e| DecodeError(format!("the block does not decompress: {e}")))?;
                if lines.len() as u64 != size {
                    return Err(DecodeError(
                        "the block decompresses to another size than it states".into(),
                    ));
                }
                Ok(lines)
            })
        }
        other => Err(DecodeError(format!("unknown block encoding {other}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_round_trip_and_shrink() {
        let line = br#"{"action":"token.detokenized","actor":"5b0c6a2e-3d4f-4a51-9b7e-1f2a3b4c5d6e","destination":"127.0.0.1:18081","id":"0c9d8e7f-6a5b-4c3d-8e2f-1a0b9c8d7e6f","occurred_at":"2026-11-28T17:00:00.123456+00:00","outcome":"success","proxy_id":"9f8e7d6c-5b4a-4392-8170-6f5e4d3c2b1a","reason":null,"request_id":"3f2e1d0c-9b8a-4766-a554-433221100fed","resource_ids":["11111111-2222-4333-8444-555555555555","66666666-7777-4888-9999-aaaaaaaaaaaa"],"seq":42,"tenant_id":"aaaabbbb-cccc-4ddd-8eee-ffff00001111"}"#;
        let mut lines = line.to_vec();
        lines.push(b'\n');
        let (encoding, stored) = compress(&lines);
        assert_eq!(encoding, ZSTD);
        assert!(
            stored.len() * 2 < lines.len(),
            "{} of {} bytes",
            stored.len(),
            lines.len()
        );
        assert_eq!(decompress(encoding, stored).expect("decompress"), lines);
        assert_eq!(decompress(PLAIN, lines.clone()).expect("plain"), lines);
    }

    #[test]
    fn a_tampered_frame_is_an_error_not_a_wild_allocation() {
        let (encoding, mut stored) = compress(b"{\"a\":1}\n");
        assert!(decompress(7, stored.clone()).is_err());
        stored.truncate(stored.len() - 2);
        assert!(decompress(encoding, stored).is_err());
        assert!(decompress(ZSTD, b"not zstd".to_vec()).is_err());
        // A frame that does not state its size (streamed) is refused: nothing is allocated
        // on a stored frame's say-so beyond what it states, and it must state it.
        let streamed = zstd::stream::encode_all(&[0u8; 4096][..], 1).expect("zstd");
        assert!(decompress(ZSTD, streamed).is_err());
        // A few kilobytes that would decompress past the bound are refused, not allocated.
        let bomb = compress(&vec![b'a'; MAX_LINES as usize + 1]);
        assert!(bomb.1.len() < 4096, "{} bytes", bomb.1.len());
        assert!(decompress(bomb.0, bomb.1).is_err());
    }
}
