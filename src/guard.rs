//! Third-party code that can panic where neuroport owes the user an error: the NIfTI reader on
//! malformed files, cudarc on a driver missing a symbol it expects. `quiet_catch` runs such a
//! step and turns a panic into `None` without printing it, so no panic message or backtrace
//! reaches the user (RUST_BACKTRACE may be set).

pub fn quiet_catch<R>(f: impl FnOnce() -> R) -> Option<R> {
    let prev = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).ok();
    std::panic::set_hook(prev);
    r
}

#[cfg(test)]
mod tests {
    use super::quiet_catch;
    #[test]
    fn quiet_catch_turns_a_panic_into_none() {
        assert_eq!(quiet_catch(|| 3), Some(3));
        let r: Option<()> = quiet_catch(|| panic!("inside a reader"));
        assert!(r.is_none());
        // the previous hook is back: a caught panic after this one is still caught
        assert!(quiet_catch(|| -> i32 { panic!("again") }).is_none());
    }
}
