#![no_std]
#![cfg_attr(target_arch = "nvptx64", feature(abi_ptx))]

/// Thread `i` builds a device-side vector of `i % 8 + 1` values from the heap and writes
/// their sum to `out[i]` (`u64::MAX` when the heap is full); the vector is freed on drop.
#[cfg(target_arch = "nvptx64")]
#[no_mangle]
pub unsafe extern "ptx-kernel" fn sums(heap: veballoc_kernels::DeviceHeap, out: *mut u64, n: u64) {
    let i = veballoc_kernels::arch::global_thread_x();
    if i >= n {
        return;
    }
    let mut v = veballoc_kernels::DVec::<u64>::new(&heap);
    let full = (0..i % 8 + 1).any(|k| v.push(i * k).is_err());
    let sum = if full { u64::MAX } else { v.iter().sum() };
    // SAFETY: `out` holds `n` words and `i < n`; each thread writes its own word.
    unsafe { *out.add(i as usize) = sum };
}
