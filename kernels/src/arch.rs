//! The GPU-only primitives (thread indices, warp vote/shuffle/match, sleep, fences, volatile
//! loads, clocks) and their host twin.
//!
//! The host twin models a warp of one lane: `activemask() == 1`, a ballot is the lane's own
//! predicate, a shuffle returns the caller's value. The allocator's warp-coalesced paths then
//! degenerate to the per-thread path, which is what CPU threads (and loom) exercise; the
//! group arithmetic is tested separately through `Heap::take_slices` with group sizes up to 32.

/// Lanes in a warp on the device.
pub const WARP_SIZE: u32 = 32;

#[cfg(target_arch = "nvptx64")]
mod imp {
    use core::arch::asm;
    use core::arch::nvptx;

    // The warp collectives as LLVM's NVVM intrinsics, not `asm!`: LLVM knows these as
    // convergent, so no pass moves one across a branch or duplicates it into divergent paths
    // (tail duplication, jump threading), which it may do to an inline asm statement; a
    // collective that lanes reach in different copies waits for lanes that never come.
    #[allow(improper_ctypes)]
    unsafe extern "C" {
        #[link_name = "llvm.nvvm.activemask"]
        fn nvvm_activemask() -> u32;
        #[link_name = "llvm.nvvm.vote.ballot.sync"]
        fn nvvm_ballot_sync(mask: u32, pred: bool) -> u32;
        #[link_name = "llvm.nvvm.match.any.sync.i32"]
        fn nvvm_match_any_i32(mask: u32, value: u32) -> u32;
        #[link_name = "llvm.nvvm.match.any.sync.i64"]
        fn nvvm_match_any_i64(mask: u32, value: u64) -> u32;
        #[link_name = "llvm.nvvm.redux.sync.or"]
        fn nvvm_redux_or(value: u32, mask: u32) -> u32;
        #[link_name = "llvm.nvvm.shfl.sync.idx.i32"]
        fn nvvm_shfl_idx(mask: u32, value: u32, src: u32, clamp: u32) -> u32;
        #[link_name = "llvm.nvvm.shfl.sync.up.i32"]
        fn nvvm_shfl_up(mask: u32, value: u32, delta: u32, clamp: u32) -> u32;
    }
    /// `shfl.sync`'s clamp operand for an index shuffle over the whole warp (c = 0x1f: no
    /// segments), and for an up shuffle (c = 0).
    const SHFL_IDX_CLAMP: u32 = 0x1f;
    const SHFL_UP_CLAMP: u32 = 0;

    /// Global thread index along x (blockIdx.x * blockDim.x + threadIdx.x).
    #[inline(always)]
    pub fn global_thread_x() -> u64 {
        // SAFETY: reading special registers has no preconditions.
        unsafe { nvptx::_block_idx_x() as u64 * nvptx::_block_dim_x() as u64 + nvptx::_thread_idx_x() as u64 }
    }
    /// Threads in the whole grid along x.
    #[inline(always)]
    pub fn grid_threads_x() -> u64 {
        // SAFETY: reading special registers has no preconditions.
        unsafe { nvptx::_grid_dim_x() as u64 * nvptx::_block_dim_x() as u64 }
    }
    #[inline(always)]
    pub fn thread_idx_x() -> u32 {
        // SAFETY: reading a special register has no preconditions.
        unsafe { nvptx::_thread_idx_x() as u32 }
    }
    #[inline(always)]
    pub fn block_idx_x() -> u32 {
        // SAFETY: reading a special register has no preconditions.
        unsafe { nvptx::_block_idx_x() as u32 }
    }
    #[inline(always)]
    pub fn block_dim_x() -> u32 {
        // SAFETY: reading a special register has no preconditions.
        unsafe { nvptx::_block_dim_x() as u32 }
    }
    #[inline(always)]
    pub fn lane_id() -> u32 {
        let r: u32;
        // SAFETY: reading a special register has no preconditions.
        unsafe { asm!("mov.u32 {r}, %laneid;", r = out(reg32) r, options(nomem, nostack, pure)) };
        r
    }
    /// Lanes below this one (for ranks within a group).
    #[inline(always)]
    pub fn lanemask_lt() -> u32 {
        let r: u32;
        // SAFETY: reading a special register has no preconditions.
        unsafe { asm!("mov.u32 {r}, %lanemask_lt;", r = out(reg32) r, options(nomem, nostack, pure)) };
        r
    }
    /// Multiprocessor this thread runs on: spreads per-class "current block" slots.
    #[inline(always)]
    pub fn smid() -> u32 {
        let r: u32;
        // SAFETY: reading a special register has no preconditions.
        unsafe { asm!("mov.u32 {r}, %smid;", r = out(reg32) r, options(nomem, nostack)) };
        r
    }
    /// One more than the largest `smid` any multiprocessor of this GPU may report (PTX
    /// `%nsmid`: the ids need not be contiguous).
    #[inline(always)]
    pub fn nsmid() -> u32 {
        let r: u32;
        // SAFETY: reading a special register has no preconditions.
        unsafe { asm!("mov.u32 {r}, %nsmid;", r = out(reg32) r, options(nomem, nostack, pure)) };
        r
    }
    #[inline(always)]
    pub fn activemask() -> u32 {
        // SAFETY: activemask has no preconditions.
        unsafe { nvvm_activemask() }
    }
    /// Bit i set when lane i of `mask` has `pred`.
    ///
    /// # Safety
    /// Every lane of `mask` (which includes the caller) executes this same call, converged.
    #[inline(always)]
    pub unsafe fn ballot_sync(mask: u32, pred: bool) -> u32 {
        // SAFETY: the caller vouches that every lane of `mask` executes this call.
        unsafe { nvvm_ballot_sync(mask, pred) }
    }
    /// Lanes of `mask` whose `value` equals this lane's.
    ///
    /// # Safety
    /// Every lane of `mask` (which includes the caller) executes this same call, converged.
    #[inline(always)]
    pub unsafe fn match_any_sync(mask: u32, value: u32) -> u32 {
        // SAFETY: the caller vouches that every lane of `mask` executes this call.
        unsafe { nvvm_match_any_i32(mask, value) }
    }
    /// Lanes of `mask` whose 64-bit `value` equals this lane's (`match.any.sync.b64`).
    ///
    /// # Safety
    /// Every lane of `mask` (which includes the caller) executes this same call, converged.
    #[inline(always)]
    pub unsafe fn match_any_sync_u64(mask: u32, value: u64) -> u32 {
        // SAFETY: the caller vouches that every lane of `mask` executes this call.
        unsafe { nvvm_match_any_i64(mask, value) }
    }
    /// The OR of `value` over the lanes of `mask` (`redux.sync`, sm_80).
    ///
    /// # Safety
    /// Every lane of `mask` (which includes the caller) executes this same call, converged.
    #[inline(always)]
    pub unsafe fn reduce_or_sync(mask: u32, value: u32) -> u32 {
        // SAFETY: the caller vouches that every lane of `mask` executes this call.
        unsafe { nvvm_redux_or(value, mask) }
    }
    /// `value` of lane `src`.
    ///
    /// # Safety
    /// Every lane of `mask` (which includes the caller and `src`) executes this same call,
    /// converged.
    #[inline(always)]
    pub unsafe fn shfl_sync_u32(mask: u32, value: u32, src: u32) -> u32 {
        // SAFETY: the caller vouches that every lane of `mask`, `src` among them, executes
        // this call.
        unsafe { nvvm_shfl_idx(mask, value, src, SHFL_IDX_CLAMP) }
    }
    /// `value` of lane `lane - delta` (this lane's own value for lanes below `delta`).
    ///
    /// # Safety
    /// All 32 lanes of the warp execute this same call, converged.
    #[inline(always)]
    pub unsafe fn shfl_up_full_u32(value: u32, delta: u32) -> u32 {
        // SAFETY: the caller vouches that all 32 lanes execute this call.
        unsafe { nvvm_shfl_up(u32::MAX, value, delta, SHFL_UP_CLAMP) }
    }
    /// `value` of lane `src` (two 32-bit shuffles).
    ///
    /// # Safety
    /// As for [`shfl_sync_u32`]: every lane of `mask` (the caller and `src` among them)
    /// executes this same call, converged.
    #[inline(always)]
    pub unsafe fn shfl_sync_u64(mask: u32, value: u64, src: u32) -> u64 {
        // SAFETY: every lane of `mask` executes this call (the caller's contract), and so both
        // shuffles, in the same order.
        let (lo, hi) = unsafe {
            (shfl_sync_u32(mask, value as u32, src), shfl_sync_u32(mask, (value >> 32) as u32, src))
        };
        ((hi as u64) << 32) | lo as u64
    }
    /// Memory-ordering warp barrier over `mask`: orders the leader's acquire before the other
    /// lanes' use of what it obtained.
    ///
    /// # Safety
    /// Every lane of `mask` (which includes the caller) reaches this same barrier.
    #[inline(always)]
    pub unsafe fn syncwarp(mask: u32) {
        // SAFETY: the caller vouches that every lane of `mask` reaches this barrier.
        unsafe { asm!("bar.warp.sync {m};", m = in(reg32) mask, options(nostack)) };
    }
    #[inline(always)]
    pub fn nanosleep(ns: u32) {
        // SAFETY: nanosleep has no preconditions (sm_70+).
        unsafe { asm!("nanosleep.u32 {t};", t = in(reg32) ns, options(nomem, nostack)) };
    }
    /// Device-wide acquire+release fence.
    #[inline(always)]
    pub fn fence_acq_rel_gpu() {
        // SAFETY: a fence has no preconditions.
        unsafe { asm!("fence.acq_rel.gpu;", options(nostack)) };
    }
    /// System-wide sequentially consistent fence: earlier writes (to host memory too) are
    /// performed before anything after it, a trap included.
    #[inline(always)]
    pub fn fence_sc_sys() {
        // SAFETY: a fence has no preconditions.
        unsafe { asm!("fence.sc.sys;", options(nostack)) };
    }
    /// A load that always goes to memory (bypasses L1): for polling words others write.
    ///
    /// # Safety
    /// `p` must be valid and aligned.
    #[inline(always)]
    pub unsafe fn load_volatile_u64(p: *const u64) -> u64 {
        let r: u64;
        // SAFETY: the caller vouches for `p`.
        unsafe {
            asm!("ld.volatile.u64 {r}, [{p}];", r = out(reg64) r, p = in(reg64) p as u64, options(nostack, readonly))
        };
        r
    }
    /// Nanoseconds from the global timer.
    #[inline(always)]
    pub fn globaltimer() -> u64 {
        let r: u64;
        // SAFETY: reading a special register has no preconditions.
        unsafe { asm!("mov.u64 {r}, %globaltimer;", r = out(reg64) r, options(nomem, nostack)) };
        r
    }
    /// Thread-block barrier (`bar.sync 0`, CUDA's `__syncthreads`).
    ///
    /// # Safety
    /// Every thread of the block reaches this same barrier (none has exited).
    #[inline(always)]
    pub unsafe fn sync_threads() {
        // SAFETY: the caller vouches that every thread of the block reaches it.
        unsafe { nvptx::_syncthreads() }
    }
    /// Thread-block broadcast: every thread of the block gets the `v` of the one thread
    /// that passes `src = true` (it holds two `bar.sync`s; the second keeps a later call from
    /// overwriting the words early).
    ///
    /// # Safety
    /// Every thread of the block executes this same call (none has exited), and exactly one
    /// passes `src = true`.
    #[inline(always)]
    pub unsafe fn cta_broadcast4(v: [u64; 4], src: bool) -> [u64; 4] {
        let r: [u64; 4];
        let (r0, r1, r2, r3): (u64, u64, u64, u64);
        // SAFETY: the shared words are declared in this asm block's own scope (one instance
        // per inlined copy), written by one thread and read after the barrier by all; the
        // caller vouches that every thread of the block executes this call.
        unsafe {
            asm!(
                "{{ .reg .pred p; .shared .align 8 .b64 s[4];",
                "setp.ne.u32 p, {src}, 0;",
                "@p st.shared.b64 [s], {a};",
                "@p st.shared.b64 [s+8], {b};",
                "@p st.shared.b64 [s+16], {c};",
                "@p st.shared.b64 [s+24], {d};",
                "bar.sync 0;",
                "ld.shared.b64 {r0}, [s];",
                "ld.shared.b64 {r1}, [s+8];",
                "ld.shared.b64 {r2}, [s+16];",
                "ld.shared.b64 {r3}, [s+24];",
                "bar.sync 0; }}",
                src = in(reg32) src as u32,
                a = in(reg64) v[0], b = in(reg64) v[1], c = in(reg64) v[2], d = in(reg64) v[3],
                r0 = out(reg64) r0, r1 = out(reg64) r1, r2 = out(reg64) r2, r3 = out(reg64) r3,
                options(nostack)
            )
        };
        r = [r0, r1, r2, r3];
        r
    }
    /// Ends the kernel with an error (a panic on the device).
    #[inline(always)]
    pub fn trap() -> ! {
        // SAFETY: trap has no preconditions; it never returns.
        unsafe { nvptx::trap() }
    }
    /// Marks the calling kernel for a cap of `N` registers per thread: a PTX comment that
    /// `nvptx-link.sh` turns into `.maxnreg N` on the kernel's entry (see
    /// [`crate::max_registers`]).
    #[inline(always)]
    pub fn max_registers<const N: u32>() {
        // SAFETY: a comment, no instruction: its one operand is a constant pasted into the text.
        unsafe { asm!("// veballoc.maxnreg {n}", n = const N, options(nomem, nostack, preserves_flags)) };
    }
}

#[cfg(not(target_arch = "nvptx64"))]
mod imp {
    extern crate std;

    #[cfg(not(loom))]
    std::thread_local! {
        static THREAD_INDEX: core::cell::Cell<u64> = const { core::cell::Cell::new(0) };
    }
    // Loom runs a model's threads as coroutines of one OS thread: each needs loom's own
    // thread-local to have its own index (and multiprocessor).
    #[cfg(loom)]
    loom::thread_local! {
        static THREAD_INDEX: core::cell::Cell<u64> = core::cell::Cell::new(0);
    }

    // The time this host thread's `globaltimer` reads instead of the wall clock, if set.
    #[cfg(not(loom))]
    std::thread_local! {
        static STILL_CLOCK: core::cell::Cell<Option<u64>> = const { core::cell::Cell::new(None) };
    }

    /// Stops this host thread's `globaltimer` at `ns` (None: the wall clock again). For CPU
    /// tests whose outcome would otherwise depend on how fast the host runs: a run's pace
    /// (`slice::FAST_BLOCK_NS`) compares install times, and a loaded CI core took longer
    /// between installs than any GPU. Waits still end, after `MAX_WAIT_ROUNDS` sleeps (2^20
    /// yields on the host). Tests that set it set `None` again when done.
    #[cfg(not(loom))]
    pub fn set_host_clock(ns: Option<u64>) {
        STILL_CLOCK.with(|c| c.set(ns));
    }

    /// Sets what `global_thread_x` returns on this host thread (CPU test harnesses).
    pub fn set_host_thread_index(i: u64) {
        THREAD_INDEX.with(|c| c.set(i));
    }
    pub fn global_thread_x() -> u64 {
        THREAD_INDEX.with(|c| c.get())
    }
    pub fn grid_threads_x() -> u64 {
        1
    }
    pub fn thread_idx_x() -> u32 {
        global_thread_x() as u32
    }
    pub fn block_idx_x() -> u32 {
        0
    }
    pub fn block_dim_x() -> u32 {
        1
    }
    pub fn lane_id() -> u32 {
        0
    }
    pub fn lanemask_lt() -> u32 {
        0
    }
    /// The host's "multiprocessor" is the thread index: CPU threads get distinct slots.
    pub fn smid() -> u32 {
        global_thread_x() as u32
    }
    /// No bound on the host: every thread index is a "multiprocessor" (see `smid`).
    pub fn nsmid() -> u32 {
        u32::MAX
    }
    pub fn activemask() -> u32 {
        1
    }
    // The collectives are `unsafe fn`s as on the device, with the same contracts (a host
    // warp is one lane, so they hold whenever the caller's mask names it), so that code
    // written against the host twin compiles for the device.
    /// # Safety
    /// As on the device: every lane of `mask` executes this same call.
    pub unsafe fn ballot_sync(mask: u32, pred: bool) -> u32 {
        mask & pred as u32
    }
    /// # Safety
    /// As on the device: every lane of `mask` executes this same call.
    pub unsafe fn match_any_sync(mask: u32, _value: u32) -> u32 {
        mask & 1
    }
    /// # Safety
    /// As on the device: every lane of `mask` executes this same call.
    pub unsafe fn match_any_sync_u64(mask: u32, _value: u64) -> u32 {
        mask & 1
    }
    /// # Safety
    /// As on the device: every lane of `mask` executes this same call.
    pub unsafe fn reduce_or_sync(_mask: u32, value: u32) -> u32 {
        value
    }
    /// # Safety
    /// As on the device: every lane of `mask` (`src` among them) executes this same call.
    pub unsafe fn shfl_sync_u32(_mask: u32, value: u32, _src: u32) -> u32 {
        value
    }
    /// # Safety
    /// As on the device: every lane of `mask` (`src` among them) executes this same call.
    pub unsafe fn shfl_sync_u64(_mask: u32, value: u64, _src: u32) -> u64 {
        value
    }
    /// # Safety
    /// As on the device: every lane of the warp executes this same call.
    pub unsafe fn shfl_up_full_u32(value: u32, _delta: u32) -> u32 {
        value
    }
    /// # Safety
    /// As on the device: every lane of `mask` reaches this same barrier.
    pub unsafe fn syncwarp(_mask: u32) {}
    pub fn nanosleep(_ns: u32) {
        #[cfg(loom)]
        loom::thread::yield_now();
        #[cfg(not(loom))]
        std::thread::yield_now();
    }
    pub fn fence_acq_rel_gpu() {
        #[cfg(loom)]
        loom::sync::atomic::fence(core::sync::atomic::Ordering::AcqRel);
        #[cfg(not(loom))]
        core::sync::atomic::fence(core::sync::atomic::Ordering::AcqRel);
    }
    pub fn fence_sc_sys() {
        #[cfg(loom)]
        loom::sync::atomic::fence(core::sync::atomic::Ordering::SeqCst);
        #[cfg(not(loom))]
        core::sync::atomic::fence(core::sync::atomic::Ordering::SeqCst);
    }
    /// # Safety
    /// `p` must be valid and aligned.
    pub unsafe fn load_volatile_u64(p: *const u64) -> u64 {
        // SAFETY: the caller vouches for `p`.
        unsafe { core::ptr::read_volatile(p) }
    }
    /// Under loom a clock that stands still: executions must be deterministic (waits end
    /// after `MAX_WAIT_ROUNDS` there).
    #[cfg(loom)]
    pub fn globaltimer() -> u64 {
        0
    }
    #[cfg(not(loom))]
    pub fn globaltimer() -> u64 {
        use std::time::{SystemTime, UNIX_EPOCH};
        if let Some(ns) = STILL_CLOCK.with(|c| c.get()) {
            return ns;
        }
        SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(0)
    }
    /// # Safety
    /// As on the device: every thread of the block reaches this same barrier.
    pub unsafe fn sync_threads() {}
    /// A host "block" is one thread: the broadcast is the thread's own value.
    ///
    /// # Safety
    /// As on the device: every thread of the block executes this same call.
    pub unsafe fn cta_broadcast4(v: [u64; 4], _src: bool) -> [u64; 4] {
        v
    }
    pub fn trap() -> ! {
        std::process::abort()
    }
    /// Registers are a GPU matter: nothing to mark on the host.
    pub fn max_registers<const N: u32>() {}
}

pub use imp::*;
