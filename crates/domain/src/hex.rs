//! Hexadecimal text, the workspace's one encoder and decoder: hashes in the audit trail and
//! its API, token fingerprints, and the `hex` encoding of the transforms' `Buffer`.
//!
//! Decoding is strict: an even number of the digits `0-9`, `a-f` and `A-F`, nothing else (no
//! sign, no whitespace, no `0x`), so that one string never decodes as two different ones.

/// Why text is not hexadecimal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum HexError {
    /// An odd number of characters.
    #[error("hex text must have an even number of digits, not {0}")]
    OddLength(usize),
    /// A character other than a hex digit.
    #[error("not a hex digit at byte {0}")]
    InvalidDigit(usize),
    /// The wrong number of bytes for a fixed-size value.
    #[error("{actual} bytes of hex where {expected} are expected")]
    Length {
        /// The size expected.
        expected: usize,
        /// The size given.
        actual: usize,
    },
}

const DIGITS: &[u8; 16] = b"0123456789abcdef";

/// Lowercase hex of `bytes`, two digits per byte.
pub fn encode(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() * 2);
    for byte in bytes {
        out.push(char::from(DIGITS[usize::from(byte >> 4)]));
        out.push(char::from(DIGITS[usize::from(byte & 0xf)]));
    }
    out
}

/// The value of one hex digit.
fn digit(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

/// The bytes `text` spells, two digits per byte, either case.
pub fn decode(text: &str) -> Result<Vec<u8>, HexError> {
    let raw = text.as_bytes();
    if !raw.len().is_multiple_of(2) {
        return Err(HexError::OddLength(raw.len()));
    }
    raw.chunks_exact(2)
        .enumerate()
        .map(|(i, pair)| {
            let high = digit(pair[0]).ok_or(HexError::InvalidDigit(2 * i))?;
            let low = digit(pair[1]).ok_or(HexError::InvalidDigit(2 * i + 1))?;
            Ok((high << 4) | low)
        })
        .collect()
}

/// Like [`decode`], for a value of exactly `N` bytes (`2 * N` digits).
pub fn decode_array<const N: usize>(text: &str) -> Result<[u8; N], HexError> {
    let bytes = decode(text)?;
    let actual = bytes.len();
    bytes.try_into().map_err(|_| HexError::Length {
        expected: N,
        actual,
    })
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn encodes_lowercase_two_digits_per_byte() {
        assert_eq!(encode(&[]), "");
        assert_eq!(encode(&[0x00, 0x0f, 0xa5, 0xff]), "000fa5ff");
    }

    #[test]
    fn decodes_either_case() {
        assert_eq!(decode(""), Ok(vec![]));
        assert_eq!(decode("000fA5fF"), Ok(vec![0x00, 0x0f, 0xa5, 0xff]));
    }

    /// `u8::from_str_radix` takes a leading `+`; a hex digit pair never does.
    #[test]
    fn refuses_signs_and_anything_but_digits() {
        assert_eq!(decode("+f"), Err(HexError::InvalidDigit(0)));
        assert_eq!(decode("f+"), Err(HexError::InvalidDigit(1)));
        for bad in ["-1", " f", "f ", "0x", "gg", "é0", "\u{ff10}0"] {
            assert!(decode(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn refuses_an_odd_number_of_digits() {
        assert_eq!(decode("abc"), Err(HexError::OddLength(3)));
        assert_eq!(decode("a"), Err(HexError::OddLength(1)));
    }

    #[test]
    fn fixed_size_values_need_their_exact_length() {
        assert_eq!(decode_array::<2>("beef"), Ok([0xbe, 0xef]));
        assert_eq!(
            decode_array::<2>("be"),
            Err(HexError::Length {
                expected: 2,
                actual: 1
            })
        );
        assert_eq!(
            decode_array::<32>(&"+0".repeat(32)),
            Err(HexError::InvalidDigit(0))
        );
    }

    proptest! {
        #[test]
        fn decoding_inverts_encoding(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
            let text = encode(&bytes);
            prop_assert_eq!(decode(&text), Ok(bytes.clone()));
            prop_assert_eq!(decode(&text.to_uppercase()), Ok(bytes));
        }

        #[test]
        fn only_hex_digit_pairs_decode(text in "\\PC{0,8}") {
            let strict = text.len() % 2 == 0 && text.bytes().all(|b| b.is_ascii_hexdigit());
            prop_assert_eq!(decode(&text).is_ok(), strict);
        }
    }
}
