//! veballoc's device side: a Gallatin-style GPU heap in one `no_std` source that compiles to
//! PTX (`nvptx64-nvidia-cuda`) and to the host, where the same code runs on CPU threads for
//! tests, loom models, and host-side statistics over a copy of the device metadata.
//!
//! Layers, one file each, each a `Copy` view of its part of the metadata that names only the
//! layers below it: `veb` (the trees), `segment` (16 MiB segments and their table:
//! `Segments`), `block` (blocks of slices, per-group trees: `Blocks`), `slice` (warp-coalesced
//! slice hand-out from the current slots: `Slots`), `check` (the hand-out bitmap: `HandOut`),
//! and `heap` (the public malloc/free, the counters, the reclaim sweep), whose `DeviceHeap`
//! composes them. Leaves: `class` (size classes and their geometry), `layout` (where each
//! part of the metadata lives), `arch` (every GPU-only primitive and its host twin) and
//! `atomic` (the one atomics shim).
#![no_std]
#![cfg_attr(
    target_arch = "nvptx64",
    feature(abi_ptx, stdarch_nvptx, asm_experimental_arch, link_llvm_intrinsics)
)]
// `link_llvm_intrinsics`: the warp collectives as LLVM intrinsics, which LLVM knows as
// convergent (see `arch`); internal to rustc, and the pinned nightly keeps it.
#![cfg_attr(target_arch = "nvptx64", allow(internal_features))]
// The Allocator trait is nightly-only: on for the device (always built on the pinned nightly)
// and with the `allocator-api` feature, so that host builds work on stable too.
#![cfg_attr(any(target_arch = "nvptx64", feature = "allocator-api"), feature(allocator_api))]

/// Declares an associated function that is `pub` with the feature `internals` (and under
/// loom, whose models drive the layers directly) and crate-private without it: the layer
/// accessors of `DeviceHeap`, which only the tests and tools need.
macro_rules! internals {
    ($(#[$attr:meta])* fn $($rest:tt)*) => {
        #[cfg(any(feature = "internals", loom))]
        $(#[$attr])*
        pub fn $($rest)*
        #[cfg(not(any(feature = "internals", loom)))]
        $(#[$attr])*
        pub(crate) fn $($rest)*
    };
}

pub mod arch;
pub mod atomic;
pub mod block;
pub mod class;
pub mod harness;
pub mod layout;
pub mod trace;
pub mod veb;

#[cfg(not(loom))]
pub mod alloc_api;
#[cfg(not(loom))]
pub mod boxed;
pub mod check;
#[cfg(not(loom))]
pub mod global;
pub mod heap;
pub mod segment;
pub mod slice;
pub mod validate;

#[cfg(all(not(target_arch = "nvptx64"), not(loom)))]
pub mod cpu;
#[cfg(all(not(target_arch = "nvptx64"), not(loom)))]
pub mod diag;

#[cfg(all(target_arch = "nvptx64", feature = "kernels"))]
pub mod entry;
#[cfg(all(target_arch = "nvptx64", feature = "bench-kernels"))]
pub mod entry_bench;

/// log2 of the segment size.
pub const SEGMENT_SHIFT: u32 = 24;
/// Bytes in a segment: the unit of the segment tree and of multi-segment runs.
pub const SEGMENT_BYTES: u64 = 1 << SEGMENT_SHIFT;
/// Most slices in a block (classes up to 256-byte slices; larger ones have fewer, see
/// `class::slices_per_block`).
pub const SLICES_PER_BLOCK: u32 = class::MAX_SLICES_PER_BLOCK;
/// Whether this build has the safety checks (double-free and foreign-pointer detection,
/// see `check.rs`): the `checks` feature, on by default in debug builds. A heap uses them
/// only if it was also created with the hand-out bitmap (`HeapLayout::checks`).
pub const CHECKS: bool = cfg!(any(feature = "checks", debug_assertions));
/// First sleep of a thread that waits for another's progress (a block install, a format).
pub const BACKOFF_MIN_NS: u32 = 32;
/// Longest single sleep: the backoff doubles up to this.
pub const BACKOFF_MAX_NS: u32 = 2048;

/// Longest a thread waits for another's format of a class (`claim_blocks`). Formatting is a
/// few microseconds of work: this bound is only reached if the formatter is not scheduled.
pub const FORMAT_WAIT_NS: u64 = 20_000_000;
/// Longest a thread waits for a slot's installer, which may wait `FORMAT_WAIT_NS` itself:
/// more than twice that, since PTX `nanosleep` may sleep up to twice the time asked.
pub const INSTALL_WAIT_NS: u64 = 2 * FORMAT_WAIT_NS + 10_000_000;
/// Longest a failing request waits for reclaim sweeps (`DeviceHeap::reclaim_before_null`).
pub const SWEEP_WAIT_NS: u64 = 100_000_000;
/// Sleeps a wait may take whatever the clock says: a bound that holds even if the global timer
/// stood still (`nanosleep` may also return at once), so no wait can hang.
#[cfg(not(loom))]
pub const MAX_WAIT_ROUNDS: u32 = 1 << 20;
/// Under loom the clock stands still (executions must be deterministic) and each sleep is a
/// loom yield, which lets the other threads take a step: enough rounds for a model's
/// installer or formatter to finish, few enough for loom to explore.
#[cfg(loom)]
pub const MAX_WAIT_ROUNDS: u32 = 64;

/// A bounded wait for another thread's progress: exponential backoff until a deadline on the
/// GPU's global timer (or `MAX_WAIT_ROUNDS` sleeps). The clock is first read at the first
/// sleep, so that paths that never wait never read it.
pub(crate) struct Wait {
    ns: u32,
    max_ns: u32,
    budget_ns: u64,
    /// 0 until the first sleep.
    deadline: u64,
    rounds: u32,
}

impl Wait {
    /// A wait of at most `budget_ns` from its first sleep.
    #[inline(always)]
    pub(crate) fn new(budget_ns: u64) -> Self {
        Self::with_max_sleep(budget_ns, BACKOFF_MAX_NS)
    }

    /// A wait whose sleeps double up to `max_ns` (at least `BACKOFF_MIN_NS`) instead of
    /// `BACKOFF_MAX_NS`: for waiters that should wake soon after a short wait and are few
    /// enough that their polls cost little (`slice::install_max_sleep`).
    #[inline(always)]
    pub(crate) fn with_max_sleep(budget_ns: u64, max_ns: u32) -> Self {
        debug_assert!(max_ns >= BACKOFF_MIN_NS, "a wait's longest sleep below its first one");
        Self { ns: BACKOFF_MIN_NS, max_ns, budget_ns, deadline: 0, rounds: 0 }
    }

    /// The next sleep's length (for tests).
    #[cfg(all(test, not(loom)))]
    fn next_sleep_ns(&self) -> u32 {
        self.ns
    }

    /// Sleeps once (`ns`, doubling up to the wait's longest sleep); false, without sleeping,
    /// once the budget is spent.
    #[inline(always)]
    pub(crate) fn sleep(&mut self) -> bool {
        let now = arch::globaltimer();
        if self.deadline == 0 {
            self.deadline = now.saturating_add(self.budget_ns);
        }
        if self.rounds >= MAX_WAIT_ROUNDS || now > self.deadline {
            return false;
        }
        self.rounds += 1;
        arch::nanosleep(self.ns);
        self.ns = (self.ns * 2).min(self.max_ns);
        true
    }
}

/// Caps the calling kernel at `N` registers per thread (1..=255, checked when it compiles):
/// call it first in a kernel (`veballoc-ptx-build` turns it into a `.maxnreg N` directive on
/// that kernel's entry; a call in a function that is not inlined into a kernel does nothing;
/// the lowest `N` of a kernel wins). The directive takes the place of the module's JIT cap
/// (`load_module`'s `max_registers`) for that kernel, above or below it.
///
/// Why: a kernel gets as many registers as the most that any function it calls needs, and
/// veballoc's rare paths (installing a block, recycling one, reclaiming a segment) need
/// 80-214, where the paths most calls take need about 20 (`free`) and 40 (`malloc`). The
/// rare paths are called, not inlined, so under a cap only they spill to local memory,
/// and the kernel keeps more warps per multiprocessor. Cap kernels that mostly free:
/// veballoc's `free` kernel uses [`FREE_KERNEL_REGISTERS`]. Do not cap kernels that allocate
/// low: installs are on every waiting warp's path, and their spills cost more than the
/// occupancy gains (on the H100, 16 B alloc took 0.12 ms at 64 registers and 0.11 at 128, the
/// host's default JIT cap, in an A/B; 0.17 at 40 in a one-round screen). `ptxas -v` on the PTX
/// says what a kernel needs.
///
/// ```
/// use veballoc_kernels::{max_registers, DeviceHeap, FREE_KERNEL_REGISTERS};
///
/// /// Frees one pointer per thread (a kernel in a crate built by `veballoc-ptx-build`).
/// pub unsafe fn free_all(heap: DeviceHeap, ptrs: *const *mut u8, n: u64) {
///     max_registers::<FREE_KERNEL_REGISTERS>();
///     let i = veballoc_kernels::arch::global_thread_x();
///     if i < n {
///         // SAFETY (of the example): the caller passes `n` pointers that `heap` handed out,
///         // each freed once here and not used after.
///         unsafe { heap.free(*ptrs.add(i as usize)) };
///     }
/// }
/// ```
///
/// A cap outside 1..=255 does not compile (ptxas would reject `.maxnreg 0` only when the
/// module loads, and ignore caps above 255):
///
/// ```compile_fail
/// veballoc_kernels::max_registers::<0>();
/// ```
#[inline(always)]
pub fn max_registers<const N: u32>() {
    // ptxas rejects `.maxnreg 0` when the module loads and ignores caps above 255.
    const { assert!(N >= 1 && N <= 255, "max_registers: N must be in 1..=255") };
    arch::max_registers::<N>();
}

/// The register cap of veballoc's `free` kernel (see [`max_registers`]): the hot path of
/// `free` needs 20, its rare paths up to 100 (ptxas, sm_90); 32 lets 2048 threads (eight
/// blocks of 256) share a multiprocessor. On the H100 (A/B of the two builds in one call, r26)
/// free took 0.84-0.95x the time it took under the module's cap of 64 from 16 to 512 B and
/// 0.88-0.96x for mixed sizes; 1-4 KiB were within noise.
pub const FREE_KERNEL_REGISTERS: u32 = 32;

#[cfg(not(loom))]
pub use boxed::{DBox, DVec, RawVec};
pub use heap::{DeviceHeap, HeapLayout};
pub use validate::{HeapError, Stats};

/// Name of the stamp kernel in the PTX of an allocator built with the checks: its `malloc`
/// and `free` keep the hand-out bitmap, so it must not share a heap with one built without.
/// The host refuses to load a module whose stamp differs from veballoc's own PTX's.
pub const STAMP_WITH_CHECKS: &str = "veballoc_layout_with_checks";
/// Every kernel of the runtime's module (`entry.rs`) has a name that starts with this, and
/// no test or benchmark kernel's does: `Gpu::launch` picks the module from the name, so that a
/// launch makes one function lookup (looking in the runtime's module first, where a bench
/// kernel is not, made every bench launch slower, inside its timing: NOTES r36).
pub const RUNTIME_KERNEL_PREFIX: &str = "veballoc_";
/// A kernel that only a module with the tests' and benchmarks' kernels has (feature
/// `bench-kernels`, `entry_bench`): how the host tells such a module from the runtime's alone.
pub const BENCH_PROBE_KERNEL: &str = "vb_malloc";
/// Name of the stamp kernel in the PTX of an allocator built without the checks.
pub const STAMP_WITHOUT_CHECKS: &str = "veballoc_layout_without_checks";

/// The layout stamp (see [`STAMP_WITH_CHECKS`]); a kernel, so that the PTX link keeps it in
/// every module that contains the allocator. It does nothing.
#[cfg(all(target_arch = "nvptx64", any(feature = "checks", debug_assertions)))]
#[no_mangle]
pub unsafe extern "ptx-kernel" fn veballoc_layout_with_checks() {}
/// The layout stamp of a build without the checks (see [`STAMP_WITHOUT_CHECKS`]).
#[cfg(all(target_arch = "nvptx64", not(any(feature = "checks", debug_assertions))))]
#[no_mangle]
pub unsafe extern "ptx-kernel" fn veballoc_layout_without_checks() {}

/// A panic on the device ends the kernel with a trap, which the host sees as a launch error.
#[cfg(all(target_arch = "nvptx64", feature = "panic-handler"))]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    arch::trap()
}

/// A 64-bit mix (splitmix64's finaliser) for per-thread random sizes.
#[inline(always)]
pub fn mix(mut x: u64) -> u64 {
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

#[cfg(all(test, not(loom)))]
mod wait_tests {
    use super::{Wait, BACKOFF_MAX_NS, BACKOFF_MIN_NS};

    /// Sleeps double from `BACKOFF_MIN_NS` and stay at the wait's cap: `BACKOFF_MAX_NS` by
    /// default, `max_ns` for `with_max_sleep` (the install waiters' 512 ns).
    #[test]
    fn sleeps_double_up_to_the_wait_s_cap() {
        for (mut w, cap) in
            [(Wait::new(u64::MAX), BACKOFF_MAX_NS), (Wait::with_max_sleep(u64::MAX, 512), 512)]
        {
            let mut seen = [0u32; 17];
            seen[0] = w.next_sleep_ns();
            for next in seen.iter_mut().skip(1) {
                assert!(w.sleep());
                *next = w.next_sleep_ns();
            }
            assert_eq!(seen[0], BACKOFF_MIN_NS);
            assert!(seen.windows(2).all(|p| p[1] == (2 * p[0]).min(cap)), "{seen:?}");
            assert_eq!(seen[seen.len() - 1], cap, "{seen:?}");
        }
    }
}
