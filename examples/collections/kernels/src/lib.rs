//! Rust's own collections in kernels: each thread grows an `alloc::vec::Vec<u32>` by `push`
//! (up to 4 KiB), boxes an array, formats a `String` and fills a small `BTreeMap`, all through
//! veballoc's global allocator (one line below). The per-thread logic is plain Rust, so the
//! host runs it too for the expected results.
#![no_std]
#![cfg_attr(target_arch = "nvptx64", feature(abi_ptx))]
#![cfg_attr(target_arch = "nvptx64", feature(allocator_api))]

extern crate alloc;

use alloc::boxed::Box;
use alloc::collections::BTreeMap;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use veballoc_kernels::mix;

#[cfg(not(feature = "cuda-malloc"))]
veballoc_kernels::global_allocator!();

/// The comparison's global allocator: CUDA's device malloc and free, as `cuda_std` does.
#[cfg(all(target_arch = "nvptx64", feature = "cuda-malloc"))]
mod cuda_malloc {
    use core::alloc::{GlobalAlloc, Layout};

    extern "C" {
        /// CUDA's device-side allocator, provided by the driver to PTX.
        fn malloc(size: usize) -> *mut u8;
        /// CUDA's device-side free.
        fn free(ptr: *mut u8);
    }

    /// CUDA's device malloc as a global allocator (16-byte aligned, enough for these kernels).
    pub struct CudaMalloc;

    // SAFETY: CUDA's malloc returns null or a 16-byte aligned block of at least `size` bytes,
    // valid until freed; the kernels here ask for no alignment above 16.
    unsafe impl GlobalAlloc for CudaMalloc {
        unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
            // SAFETY: the driver's malloc takes any size.
            unsafe { malloc(layout.size()) }
        }
        unsafe fn dealloc(&self, ptr: *mut u8, _layout: Layout) {
            // SAFETY: `ptr` came from malloc above.
            unsafe { free(ptr) }
        }
    }

    #[global_allocator]
    static CUDA_MALLOC: CudaMalloc = CudaMalloc;
}

/// Most items a thread pushes (4 KiB of u32).
pub const MAX_ITEMS: u64 = 1024;
/// Most entries of a thread's map.
pub const MAX_ENTRIES: u64 = 16;

/// Items thread `i` pushes (1..=MAX_ITEMS).
pub fn items(i: u64, seed: u64) -> u64 {
    1 + mix(i ^ seed) % MAX_ITEMS
}

/// Thread `i`'s `k`-th item.
pub fn item(i: u64, k: u64) -> u32 {
    mix(i.wrapping_mul(31) ^ (k << 32)) as u32
}

/// One thread's work; a checksum of what its collections held (0 never comes out).
pub fn work(i: u64, seed: u64) -> u64 {
    let n = items(i, seed);
    let mut v: Vec<u32> = Vec::new();
    for k in 0..n {
        v.push(item(i, k));
    }
    let b = Box::new([i, n, seed, !i]);
    let s: String = format!("thread {i} pushed {n} items");
    let mut m: BTreeMap<u32, u64> = BTreeMap::new();
    for k in 0..=(n % MAX_ENTRIES) {
        m.insert(item(i, k) % 1000, k);
    }
    let mut h = 0x9e37_79b9_7f4a_7c15u64;
    let mut eat = |x: u64| h = mix(h ^ x);
    v.iter().for_each(|&x| eat(x as u64));
    b.iter().for_each(|&x| eat(x));
    s.bytes().for_each(|c| eat(c as u64));
    m.iter().for_each(|(&k, &x)| eat(((k as u64) << 32) ^ x));
    eat(v.len() as u64 ^ ((m.len() as u64) << 20) ^ ((s.len() as u64) << 40));
    h | 1
}

/// `out[i] = work(i, seed)` for i < n.
#[cfg(target_arch = "nvptx64")]
#[no_mangle]
pub unsafe extern "ptx-kernel" fn collections_run(out: *mut u64, n: u64, seed: u64) {
    let i = veballoc_kernels::arch::global_thread_x();
    if i < n {
        // SAFETY: the host passes n words.
        unsafe { *out.add(i as usize) = work(i, seed) };
    }
}

/// The try-APIs in a kernel: reserving `bytes` (more than the heap holds) is an error the
/// kernel handles, and a small `Box::try_new` still works. `out[0]` = 1 + 2 when both held.
#[cfg(target_arch = "nvptx64")]
#[no_mangle]
pub unsafe extern "ptx-kernel" fn collections_try_reserve(out: *mut u64, bytes: u64) {
    let mut v: Vec<u8> = Vec::new();
    let refused = v.try_reserve(bytes as usize).is_err() as u64;
    let boxed = Box::try_new([7u8; 64]).map(|b| b[63] == 7).unwrap_or(false) as u64;
    // SAFETY: the host passes one word.
    unsafe { *out = refused + 2 * boxed };
}

/// An infallible allocation of `bytes`: with more than the heap holds, the kernel ends, and
/// the host reads why (`veballoc::GlobalBinding::explain`).
#[cfg(target_arch = "nvptx64")]
#[no_mangle]
pub unsafe extern "ptx-kernel" fn collections_alloc(bytes: u64) {
    let v: Vec<u8> = Vec::with_capacity(bytes as usize);
    core::hint::black_box(&v);
}
