//! Binding a heap to a kernel module's global allocator (`veballoc_kernels::global_allocator!`),
//! and reporting why a kernel's allocation through it failed.

use cust::module::Module;
use cust::sys as cu;

use crate::error::{driver, Error, Result};
use crate::{Gpu, Heap, HeapArg};
use veballoc_kernels::global::{FAILURE_NO_HEAP, FAILURE_OUT_OF_MEMORY, FAILURE_SIZE_BITS};

/// Name of the module global that holds the heap (see `veballoc_kernels::global`).
const HEAP_GLOBAL: &std::ffi::CStr = c"VEBALLOC_GLOBAL_HEAP";
/// Name of the module global that holds the failure word's address.
const FAILURE_GLOBAL: &std::ffi::CStr = c"VEBALLOC_GLOBAL_FAILURE";

/// A module watched for global-allocator failures: it owns a word of page-locked host memory
/// that the module's allocator writes when an allocation fails, readable after the failed
/// launch even though the trap that ended the kernel left the context unusable. It borrows
/// the module and the heap bound to it, and dropping it waits for the GPU's work, then takes
/// the word and the heap out of the module, so that no later kernel writes to freed host
/// memory (an allocation that fails records itself there even where the kernel handles the
/// failure, `try_reserve`) or allocates from a heap that is gone (a kernel of the module then
/// finds no heap, as before `bind_global`).
///
/// The heap outlives its binding:
///
/// ```compile_fail,E0505
/// # fn f(gpu: &veballoc::Gpu, module: &veballoc::cust::module::Module) -> veballoc::Result<()> {
/// let heap = veballoc::Heap::new(gpu, 1 << 30)?;
/// let global = heap.bind_global(module)?;
/// drop(heap); // refused: the binding borrows the heap
/// drop(global);
/// # Ok(()) }
/// ```
///
/// ```no_run
/// # fn f(gpu: &veballoc::Gpu, heap: &veballoc::Heap, module: &veballoc::cust::module::Module)
/// # -> veballoc::Result<()> {
/// let global = heap.bind_global(module)?;       // kernels of `module` may now use Vec, Box, ...
/// let run = unsafe { gpu.launch_in(module, "my_kernel", 1 << 20, 256, &mut []) }
///     .and_then(|_| gpu.sync());
/// run.map_err(|e| global.explain(e))?;          // Error::KernelAlloc says what failed
/// # Ok(()) }
/// ```
#[must_use = "dropping the binding frees the failure word; keep it while the module's kernels run"]
pub struct GlobalBinding<'m> {
    /// Host address of the page-locked failure word.
    word: *mut u64,
    /// Its device address, which the module's `VEBALLOC_GLOBAL_FAILURE` holds.
    dev: u64,
    module: &'m Module,
    gpu: Gpu,
    /// The heap written into the module's `VEBALLOC_GLOBAL_HEAP` (none until `bind_global`
    /// writes it), which `Drop` clears if the module still holds it.
    heap: Option<HeapArg>,
}

// SAFETY: the word is plain page-locked host memory, read and written only with volatile
// accesses; the binding frees it once, in Drop, with its GPU's context bound.
unsafe impl Send for GlobalBinding<'_> {}
// SAFETY: as above.
unsafe impl Sync for GlobalBinding<'_> {}

impl<'m> GlobalBinding<'m> {
    /// Registers a failure word in `module` (no heap bound yet).
    fn register(gpu: &Gpu, module: &'m Module) -> Result<GlobalBinding<'m>> {
        let _on = gpu.bind()?;
        let mut host = std::ptr::null_mut();
        // SAFETY: writes one pointer to 8 page-locked bytes.
        driver(unsafe { cu::cuMemAllocHost_v2(&mut host, 8) }, "cuMemAllocHost")?;
        let word = host as *mut u64;
        let mut binding = GlobalBinding { word, dev: 0, module, gpu: gpu.clone(), heap: None };
        binding.clear();
        let mut dev = 0;
        // SAFETY: `host` is page-locked memory of this context.
        driver(unsafe { cu::cuMemHostGetDevicePointer_v2(&mut dev, host, 0) }, "cuMemHostGetDevicePointer")?;
        write_global(gpu, module, FAILURE_GLOBAL, &dev)?;
        binding.dev = dev;
        Ok(binding)
    }

    /// Why the last failed allocation through the module's global allocator failed, if one did.
    pub fn failure(&self) -> Option<Error> {
        // SAFETY: the word lives as long as self; the device writes it with a volatile store.
        let w = unsafe { std::ptr::read_volatile(self.word) };
        let size = w & ((1u64 << FAILURE_SIZE_BITS) - 1);
        match w >> FAILURE_SIZE_BITS {
            FAILURE_NO_HEAP => Some(Error::KernelAlloc { no_heap: true, size }),
            FAILURE_OUT_OF_MEMORY => Some(Error::KernelAlloc { no_heap: false, size }),
            _ => None,
        }
    }

    /// Forgets a recorded failure (for example one a try-API already handled in the kernel).
    pub fn clear(&self) {
        // SAFETY: as in `failure`.
        unsafe { std::ptr::write_volatile(self.word, 0) };
    }

    /// `e` (a failed launch or sync), or the global allocator's failure that explains it.
    pub fn explain(&self, e: Error) -> Error {
        self.failure().unwrap_or(e)
    }
}

impl Drop for GlobalBinding<'_> {
    fn drop(&mut self) {
        // Best effort: after a trap the context is gone and so is the memory.
        let _on = self.gpu.bind();
        if self.dev != 0 {
            // The module must stop naming the word before it is freed: wait for its kernels
            // (any stream), then clear the global if it still names this word.
            // SAFETY: no arguments; the context is bound.
            let synced = unsafe { cu::cuCtxSynchronize() } == cu::cudaError_enum::CUDA_SUCCESS;
            let cleared = synced && clear_global_if(self.module, FAILURE_GLOBAL, self.dev, 0u64);
            if !cleared && synced {
                return; // the module may still name the word: leak it rather than free it
            }
            // The heap too, if the module still names this one: its kernels then find no heap.
            if let (true, Some(arg)) = (synced, self.heap) {
                let _ = clear_global_if(self.module, HEAP_GLOBAL, arg, HeapArg::UNBOUND);
            }
        }
        // SAFETY: allocated by cuMemAllocHost in `register`, freed once.
        let _ = unsafe { cu::cuMemFreeHost(self.word as *mut std::ffi::c_void) };
    }
}

/// Sets module global `name` to `none` if it holds `ours` (a binding's own value, which the
/// module must stop naming); true when it no longer holds `ours`. The caller has synchronised
/// the context (the copies are synchronous).
fn clear_global_if<T: cust::memory::DeviceCopy + PartialEq>(
    module: &Module,
    name: &std::ffi::CStr,
    ours: T,
    none: T,
) -> bool {
    use cust::memory::CopyDestination;
    module.get_global::<T>(name).is_ok_and(|mut g| {
        let mut now = none;
        g.copy_to(&mut now).is_ok() && (now != ours || g.copy_from(&none).is_ok())
    })
}

/// Writes `value` into module global `name`, after the GPU's stream has finished its work
/// (the copy is synchronous: kernels launched after this call see the value).
fn write_global<T: cust::memory::DeviceCopy>(
    gpu: &Gpu,
    module: &Module,
    name: &std::ffi::CStr,
    value: &T,
) -> Result<()> {
    use cust::memory::CopyDestination;
    let _on = gpu.bind()?;
    gpu.sync()?;
    let mut symbol = match module.get_global::<T>(name) {
        Ok(s) => s,
        Err(cust::error::CudaError::NotFound) => return Err(Error::NoGlobalAllocator),
        Err(err) => return Err(Error::Cuda { call: "cuModuleGetGlobal", err }),
    };
    symbol.copy_from(value).map_err(|err| Error::Cuda { call: "cuMemcpyHtoD (module global)", err })
}

impl Gpu {
    /// Watches `module`'s global allocator for failures without binding a heap (kernels that
    /// allocate then fail with `Error::KernelAlloc { no_heap: true, .. }` through
    /// [`GlobalBinding::explain`]).
    pub fn watch_global_allocator<'m>(&self, module: &'m Module) -> Result<GlobalBinding<'m>> {
        GlobalBinding::register(self, module)
    }
}

/// Stack per GPU thread that `Heap::bind_global` makes sure of: the allocator's own call chain
/// under a collection's (a `Vec::push` that grows into a block claim) overflowed CUDA's default
/// 1 KiB on the H100 (compute-sanitizer: stack overflow in `claim_block`); 4 KiB ran the
/// collections example at 2^20 threads.
pub const GLOBAL_ALLOC_STACK_BYTES: usize = 4 << 10;

impl Heap {
    /// Binds this heap to `module`'s global allocator (`veballoc_kernels::global_allocator!`),
    /// so that its kernels' `alloc::vec::Vec`, `Box`, `String`, `BTreeMap` allocate here.
    /// Call it before launching them (not while they run). It raises the GPU's stack per
    /// thread to at least [`GLOBAL_ALLOC_STACK_BYTES`] (`Gpu::set_stack_size` sets more). The
    /// returned binding explains a kernel that ended for lack of memory
    /// ([`GlobalBinding::explain`]). Errors: `Error::NoGlobalAllocator` for a module without
    /// veballoc's global allocator.
    /// The binding borrows the heap: dropping it unbinds the heap from the module.
    pub fn bind_global<'m>(&'m self, module: &'m Module) -> Result<GlobalBinding<'m>> {
        self.gpu().ensure_stack_size(GLOBAL_ALLOC_STACK_BYTES)?;
        let mut binding = GlobalBinding::register(self.gpu(), module)?;
        let arg = self.arg();
        write_global(self.gpu(), module, HEAP_GLOBAL, &arg)?;
        binding.heap = Some(arg);
        Ok(binding)
    }
}

const _: () = assert!(std::mem::size_of::<HeapArg>() == 24);
