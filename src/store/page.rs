//! Cutting a page out of a sequence, for every store's paged reads (`history`,
//! `timed_messages`): the page, and whether the sequence goes on past it.

/// The first `limit` of `items`, and whether any item follows them.
pub(crate) fn cut_page<T>(items: impl IntoIterator<Item = T>, limit: usize) -> (Vec<T>, bool) {
    let mut items = items.into_iter();
    let page: Vec<T> = items.by_ref().take(limit).collect();
    let more = items.next().is_some();
    (page, more)
}

#[cfg(test)]
mod tests {
    use super::cut_page;

    #[test]
    fn a_page_says_whether_more_follows() {
        assert_eq!(cut_page(1..=5, 3), (vec![1, 2, 3], true));
        assert_eq!(cut_page(1..=3, 3), (vec![1, 2, 3], false));
        assert_eq!(cut_page(1..=3, 0), (vec![], true));
        assert_eq!(cut_page(std::iter::empty::<u8>(), 0), (vec![], false));
    }
}
