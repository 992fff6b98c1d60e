//! Host memory hints for large outputs.

/// Smallest buffer worth the hint (two huge pages).
const MIN_BYTES: usize = 4 << 20;

/// Asks Linux to back the 2 MiB-aligned part of `v` with transparent huge pages when its pages
/// are first touched (`madvise(MADV_HUGEPAGE)`): filling a fresh output of tens of MB then
/// costs one page fault per 2 MiB instead of one per 4 KiB. A hint: the contents are unchanged,
/// and it does nothing off Linux, for buffers under 4 MiB, or when the kernel refuses.
pub fn advise_huge_pages<T>(v: &mut [T]) {
    let bytes = std::mem::size_of_val(v);
    if bytes < MIN_BYTES {
        return;
    }
    #[cfg(target_os = "linux")]
    {
        // Linux's transparent huge page size on x86-64 (and most aarch64 kernels).
        const HUGE: usize = 2 << 20;
        let start = v.as_mut_ptr() as usize;
        let lo = start.div_ceil(HUGE) * HUGE;
        let hi = (start + bytes) / HUGE * HUGE;
        if hi > lo {
            // SAFETY: [lo, hi) lies inside `v`'s allocation, which this call borrows mutably;
            // MADV_HUGEPAGE only changes how future faults in the range are served (and lets
            // khugepaged merge pages, preserving their contents): no value of `v` changes. The
            // result is ignored (a refused hint leaves the default).
            unsafe {
                libc::madvise(lo as *mut libc::c_void, hi - lo, libc::MADV_HUGEPAGE);
            }
        }
    }
}
