//! Offset pagination (docs/api.md, "Pagination"): `page` ≥ 1, `size` 1–100.

use crate::validation::ValidationErrors;

/// Default page size when the caller gives none.
pub const DEFAULT_SIZE: u32 = 20;
/// Largest page size accepted.
pub const MAX_SIZE: u32 = 100;

/// A validated page request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageRequest {
    page: u32,
    size: u32,
}

impl Default for PageRequest {
    fn default() -> Self {
        Self {
            page: 1,
            size: DEFAULT_SIZE,
        }
    }
}

impl PageRequest {
    /// Validates `page` (≥ 1) and `size` (1–100), defaulting absent values to 1 and 20.
    pub fn new(page: Option<i64>, size: Option<i64>) -> Result<Self, ValidationErrors> {
        let mut errors = ValidationErrors::new();
        let page = page.unwrap_or(1);
        let size = size.unwrap_or(i64::from(DEFAULT_SIZE));
        if page < 1 || page > i64::from(u32::MAX) {
            errors.add("page", "must be an integer of at least 1");
        }
        if !(1..=i64::from(MAX_SIZE)).contains(&size) {
            errors.add("size", format!("must be an integer from 1 to {MAX_SIZE}"));
        }
        errors.into_result()?;
        Ok(Self {
            page: u32::try_from(page).unwrap_or(1),
            size: u32::try_from(size).unwrap_or(DEFAULT_SIZE),
        })
    }

    /// 1-based page number.
    pub fn page(&self) -> u32 {
        self.page
    }

    /// Items per page.
    pub fn size(&self) -> u32 {
        self.size
    }

    /// Rows to skip.
    pub fn offset(&self) -> u64 {
        u64::from(self.page - 1) * u64::from(self.size)
    }
}

/// One page of results plus the total across all pages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page<T> {
    /// The items on this page, in list order.
    pub items: Vec<T>,
    /// Items across all pages (only those the caller may see).
    pub total_items: u64,
    /// The request this page answers.
    pub request: PageRequest,
}

impl<T> Page<T> {
    /// Number of pages: `ceil(total / size)`, 0 when there are no items.
    pub fn total_pages(&self) -> u64 {
        self.total_items.div_ceil(u64::from(self.request.size))
    }

    /// Converts the items, keeping the counts.
    pub fn try_map<U, E>(self, f: impl FnMut(T) -> Result<U, E>) -> Result<Page<U>, E> {
        Ok(Page {
            items: self.items.into_iter().map(f).collect::<Result<_, _>>()?,
            total_items: self.total_items,
            request: self.request,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_bounds() {
        let p = PageRequest::new(None, None).expect("defaults");
        assert_eq!((p.page(), p.size(), p.offset()), (1, 20, 0));
        let p = PageRequest::new(Some(3), Some(100)).expect("max");
        assert_eq!(p.offset(), 200);
        assert!(PageRequest::new(Some(0), None).is_err());
        assert!(PageRequest::new(None, Some(0)).is_err());
        assert!(PageRequest::new(None, Some(101)).is_err());
        assert!(
            PageRequest::new(Some(-1), Some(-1))
                .expect_err("both")
                .fields()
                .len()
                == 2
        );
    }

    #[test]
    fn total_pages_rounds_up_and_is_zero_when_empty() {
        let request = PageRequest::new(None, Some(50)).expect("ok");
        let page = |total| Page::<()> {
            items: vec![],
            total_items: total,
            request,
        };
        assert_eq!(page(0).total_pages(), 0);
        assert_eq!(page(50).total_pages(), 1);
        assert_eq!(page(120).total_pages(), 3);
    }
}
