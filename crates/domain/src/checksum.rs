//! Check-digit algorithms used to validate card and bank numbers.

/// True when `digits` (ASCII digits only) passes the Luhn (mod 10) check used by card numbers.
pub fn luhn_valid(digits: &str) -> bool {
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return false;
    }
    let sum: u32 = digits
        .bytes()
        .rev()
        .enumerate()
        .map(|(i, b)| {
            let d = u32::from(b - b'0');
            if !i.is_multiple_of(2) {
                let doubled = d * 2;
                if doubled > 9 {
                    doubled - 9
                } else {
                    doubled
                }
            } else {
                d
            }
        })
        .sum();
    sum.is_multiple_of(10)
}

/// True when `routing` is nine ASCII digits passing the ABA routing-number checksum
/// (weights 3, 7, 1 repeated; the weighted sum is a multiple of 10).
pub fn aba_valid(routing: &str) -> bool {
    if routing.len() != 9 || !routing.bytes().all(|b| b.is_ascii_digit()) {
        return false;
    }
    const WEIGHTS: [u32; 9] = [3, 7, 1, 3, 7, 1, 3, 7, 1];
    let sum: u32 = routing
        .bytes()
        .zip(WEIGHTS)
        .map(|(b, w)| u32::from(b - b'0') * w)
        .sum();
    sum.is_multiple_of(10)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn luhn_accepts_known_test_cards_and_rejects_typos() {
        for good in [
            "4242424242424242",
            "5555555555554444",
            "378282246310005",
            "6011111111111117",
        ] {
            assert!(luhn_valid(good), "{good}");
        }
        for bad in [
            "4242424242424241",
            "1234567812345678",
            "",
            "4242-4242",
            "42424242424242a2",
        ] {
            assert!(!luhn_valid(bad), "{bad}");
        }
    }

    #[test]
    fn aba_accepts_real_routing_numbers() {
        for good in ["011000015", "021000021", "110000000", "122105155"] {
            assert!(aba_valid(good), "{good}");
        }
        for bad in ["011000016", "12345678", "0110000150", "01100001a"] {
            assert!(!aba_valid(bad), "{bad}");
        }
    }
}
