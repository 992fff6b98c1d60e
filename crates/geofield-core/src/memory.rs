//! The machine's available memory, and the check every size read from a file or given as a
//! parameter passes before anything of that size is allocated.
//!
//! Available memory is `MemAvailable` from `/proc/meminfo` (Linux). Where it cannot be read the
//! limit is the largest allocation Rust can express (`isize::MAX` bytes), so sizes that cannot
//! be addressed are refused everywhere.

use crate::CoreError;

/// `MemAvailable` from `/proc/meminfo` in bytes, if readable.
pub fn available_memory_bytes() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = s.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb.saturating_mul(1024))
}

/// The most bytes one run may allocate: [`available_memory_bytes`], else `isize::MAX`.
pub fn memory_limit_bytes() -> u128 {
    let addressable = isize::MAX as u128;
    available_memory_bytes().map_or(addressable, |a| u128::from(a).min(addressable))
}

/// Refuse `need_bytes` for `what` when it exceeds [`memory_limit_bytes`]; the error gives both.
pub fn check_memory(what: impl FnOnce() -> String, need_bytes: u128) -> Result<(), CoreError> {
    let available_bytes = memory_limit_bytes();
    if need_bytes > available_bytes {
        return Err(CoreError::TooLarge {
            what: what(),
            need_bytes,
            available_bytes,
        });
    }
    Ok(())
}

/// Bytes of `count` values of `bytes_each`, exact (u128 cannot overflow for usize inputs).
pub fn bytes_for(count: u128, bytes_each: usize) -> u128 {
    count.saturating_mul(bytes_each as u128)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn huge_sizes_are_refused_with_their_size() {
        let e = check_memory(|| "1e30 agents".into(), 1e30 as u128)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("1e30 agents") && e.contains("1000000000000000019884624838656"),
            "{e}"
        );
        assert!(check_memory(|| "a byte".into(), 1).is_ok());
        assert!(memory_limit_bytes() <= isize::MAX as u128);
    }
}
