//! The GPU: driver, context, veballoc's PTX module and a stream.

use std::ffi::c_void;
use std::marker::PhantomData;
use std::mem::ManuallyDrop;
use std::sync::{Arc, Mutex, OnceLock};

use cust::context::Context as CuContext;
use cust::device::Device;
use cust::function::{BlockSize, Function, GridSize};
use cust::memory::{AsyncCopyDestination, DeviceBuffer, DeviceCopy, DeviceSlice};
use cust::module::{Module, ModuleJitOption};
use cust::stream::{Stream, StreamFlags};
use cust::sys as cu;
use cust::CudaFlags;

use crate::error::{Context, Error, Result};

/// Register cap for the JIT (a kernel's own `.maxnreg` takes its place for that kernel: the
/// `free` kernel's 32, see `veballoc_kernels::max_registers`). Allocation's rare paths
/// (installs, steals) need up to 214 registers and spill under a cap, and installs are what
/// waiting warps wait for: an H100 A/B in one call (r26, bench/results/NOTES.md: caps 64, 96,
/// 128, 255, two rounds each) gave allocation at 128 0.87-0.93x the time of 64 at 16-64 B,
/// 0.66-0.80x from 128 B to 4 KiB and 0.81-0.91x for mixed sizes; 255 was faster from 128 B
/// up but slower at 16-64 B and for mixed sizes. (r16's sweep on the H200 had chosen 64, with
/// the free kernel then under the same cap.)
pub const DEFAULT_MAX_REGISTERS: u32 = 128;

/// veballoc's runtime kernels (heap init, boot and trim, the host pool's claims and releases),
/// compiled from `kernels/` by build.rs: what [`Gpu::new`] loads, so that a program's first run
/// on a machine JIT-compiles only these (about 1.5 s of ptxas for sm_90, r35).
pub const PTX: &str = include_str!(concat!(env!("OUT_DIR"), "/veballoc.ptx"));
/// The runtime's kernels with those that veballoc's tests and benchmarks launch (`vb_malloc`,
/// `floor_malloc`, ...; `veballoc-kernels` feature `bench-kernels`): [`Gpu::launch`] loads it on
/// the first launch of a kernel whose name lacks the runtime's prefix
/// (`veballoc_kernels::RUNTIME_KERNEL_PREFIX`; about 45 s of ptxas for sm_90 on a machine whose
/// driver cache does not hold it yet).
pub const BENCH_PTX: &str = include_str!(concat!(env!("OUT_DIR"), "/veballoc-bench.ptx"));
/// Whether the embedded PTX has the safety checks (the `checks` feature, or a debug build).
pub const PTX_HAS_CHECKS: bool = option_env!("VEBALLOC_PTX_CHECKS").is_some();
/// Environment variable naming a PTX file to load instead of the embedded one (another
/// build of `kernels/`, e.g. with or without the `checks` feature).
pub const PTX_FILE_ENV: &str = "VEBALLOC_PTX_FILE";

struct Inner {
    // Dropped by `Drop for Inner`, with the context current, before `ctx` (a field, dropped
    // after that) releases the context.
    stream: ManuallyDrop<Stream>,
    module: ManuallyDrop<Module>,
    /// [`BENCH_PTX`], loaded on the first launch of a kernel whose name lacks the runtime's
    /// prefix (unless `module` has the bench kernels).
    bench: ManuallyDrop<OnceLock<Module>>,
    /// Held while the bench module loads, so that threads that launch their first test or
    /// benchmark kernel at once JIT-compile it once.
    bench_load: Mutex<()>,
    /// The JIT's register cap for both modules (0: none).
    max_registers: u32,
    /// The `VEBALLOC_PTX_FILE` that `module` was loaded from, if any.
    module_file: Option<std::ffi::OsString>,
    /// Whether `module` has the tests' and benchmarks' kernels too (a whole module).
    module_has_bench: bool,
    ctx: CuContext,
    ordinal: u32,
    name: String,
    driver: i32,
    total_memory: u64,
    multiprocessors: u32,
    checks: bool,
}

impl Drop for Inner {
    fn drop(&mut self) {
        // Module unloading works on the current context: make it ours (best effort: a
        // failure leaves the handles to the driver's context teardown).
        let _on = bind_context(self.ctx.as_raw());
        // SAFETY: dropped once, here; the fields are not used again.
        unsafe {
            ManuallyDrop::drop(&mut self.stream);
            ManuallyDrop::drop(&mut self.module);
            ManuallyDrop::drop(&mut self.bench);
        }
    }
}

/// Keeps a GPU's CUDA context current on this thread while it lives (from [`Gpu::bind`]);
/// on drop the thread's previous context is current again.
#[must_use = "the context is current only while the guard lives"]
pub struct Bound<'a> {
    pushed: bool,
    // Tied to the Gpu, and to this thread (the context stack is per thread).
    _gpu: PhantomData<&'a Gpu>,
    _this_thread: PhantomData<*const ()>,
}

impl Drop for Bound<'_> {
    fn drop(&mut self) {
        if self.pushed {
            let mut popped = std::ptr::null_mut();
            // SAFETY: pops the context this guard pushed on this thread (guards nest, and
            // are !Send, so they pop in reverse order on the pushing thread).
            unsafe { cu::cuCtxPopCurrent_v2(&mut popped) };
        }
    }
}

/// Makes `ctx` current on this thread (pushed, unless it is current already).
fn bind_context<'a>(ctx: cu::CUcontext) -> Result<Bound<'a>> {
    let mut current = std::ptr::null_mut();
    // SAFETY: writes one handle.
    let got = unsafe { cu::cuCtxGetCurrent(&mut current) };
    let pushed = if got == cu::cudaError_enum::CUDA_SUCCESS && current == ctx {
        false
    } else {
        // SAFETY: ctx is a live context (its owner outlives the guard).
        let r = unsafe { cu::cuCtxPushCurrent_v2(ctx) };
        if r != cu::cudaError_enum::CUDA_SUCCESS {
            return Err(Error::Driver { call: "cuCtxPushCurrent", code: r as i32 });
        }
        true
    };
    Ok(Bound { pushed, _gpu: PhantomData, _this_thread: PhantomData })
}

/// One CUDA device of the machine, as [`devices`] lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceInfo {
    /// What [`Gpu::on_device`] takes (the driver's ordinal, after `CUDA_VISIBLE_DEVICES`).
    pub ordinal: u32,
    /// E.g. "NVIDIA H100 80GB HBM3".
    pub name: String,
    /// Total device memory in bytes.
    pub total_memory: u64,
    /// Number of multiprocessors.
    pub multiprocessors: u32,
    /// Compute capability (major, minor), e.g. (9, 0) for Hopper.
    pub compute_capability: (u32, u32),
}

/// Initializes the driver API (idempotent).
fn init_driver() -> Result<()> {
    cust::init(CudaFlags::empty()).map_err(|e| Error::NoGpu(format!("cuInit: {e:?}")))
}

/// Every CUDA device of the machine, by ordinal. Creates no context (nothing is allocated on
/// the devices). `Err(Error::NoGpu(..))` without a driver or without a device.
///
/// ```no_run
/// for d in veballoc::devices()? {
///     println!("{}: {} ({} GiB, {} SMs)", d.ordinal, d.name, d.total_memory >> 30, d.multiprocessors);
/// }
/// # Ok::<(), veballoc::Error>(())
/// ```
pub fn devices() -> Result<Vec<DeviceInfo>> {
    use cust::device::DeviceAttribute as A;
    init_driver()?;
    let count = Device::num_devices().during("cuDeviceGetCount")?;
    (0..count)
        .map(|ordinal| {
            let d = Device::get_device(ordinal).during("cuDeviceGet")?;
            let attr = |a| d.get_attribute(a).during("cuDeviceGetAttribute").map(|v| v as u32);
            Ok(DeviceInfo {
                ordinal,
                name: d.name().during("cuDeviceGetName")?,
                total_memory: d.total_memory().during("cuDeviceTotalMem")? as u64,
                multiprocessors: attr(A::MultiprocessorCount)?,
                compute_capability: (attr(A::ComputeCapabilityMajor)?, attr(A::ComputeCapabilityMinor)?),
            })
        })
        .collect()
}

/// A CUDA device with veballoc's module loaded. Cheap to clone, and usable from any thread:
/// every call makes the GPU's context current on the calling thread for its duration.
/// Several GPUs (one `Gpu` per device, each with its own context, module and stream) can be
/// used from one process at once, from one thread or many; a heap, a loaded module and a
/// launch belong to the `Gpu` they were made with (a kernel on one device cannot use another
/// device's heap).
///
/// ```no_run
/// let gpu = veballoc::Gpu::new()?;              // device 0
/// println!("{} (driver {})", gpu.name(), gpu.driver_version());
/// let second = veballoc::Gpu::on_device(1)?;   // Err(Error::NoSuchDevice { .. }) with one GPU
/// # Ok::<(), veballoc::Error>(())
/// ```
#[derive(Clone)]
pub struct Gpu {
    inner: Arc<Inner>,
}

impl Gpu {
    /// Opens device 0 and loads the PTX (the driver JIT-compiles it for the GPU), with
    /// `DEFAULT_MAX_REGISTERS`.
    pub fn new() -> Result<Gpu> {
        Self::open(0, DEFAULT_MAX_REGISTERS)
    }

    /// Opens device `ordinal` (0..[`Gpu::device_count`]; see [`devices`]) as [`Gpu::new`]
    /// does device 0. Past the last device: [`Error::NoSuchDevice`].
    pub fn on_device(ordinal: u32) -> Result<Gpu> {
        Self::open(ordinal, DEFAULT_MAX_REGISTERS)
    }

    /// As [`Gpu::new`], capping the registers per thread of veballoc's kernels at `max`
    /// (0: no cap), but for those with a cap of their own (`vb_free`: 32). The cap sets how
    /// many warps an SM keeps in flight.
    pub fn with_max_registers(max: u32) -> Result<Gpu> {
        Self::open(0, max)
    }

    /// The number of CUDA devices (`Err(Error::NoGpu(..))` without a driver).
    pub fn device_count() -> Result<u32> {
        init_driver()?;
        Device::num_devices().during("cuDeviceGetCount")
    }

    /// Opens device `ordinal` with veballoc's kernels capped at `max_registers` per thread
    /// (0: no cap), but for those with a cap of their own (`vb_free`: 32). The device's primary
    /// context is current on the calling thread afterwards (so plain `cust` calls right after
    /// go to this device, as with `cust` itself); every
    /// veballoc call binds its own GPU's context anyway ([`Gpu::bind`]).
    pub fn open(ordinal: u32, max_registers: u32) -> Result<Gpu> {
        let count = Self::device_count()?;
        if count == 0 {
            return Err(Error::NoGpu("the driver reports no CUDA device".into()));
        }
        if ordinal >= count {
            return Err(Error::NoSuchDevice { ordinal, count });
        }
        let device =
            Device::get_device(ordinal).map_err(|e| Error::NoGpu(format!("no device {ordinal}: {e:?}")))?;
        let ctx = CuContext::new(device).during("cuCtxCreate")?;
        let opts = jit_options(max_registers);
        let module_file = std::env::var_os(PTX_FILE_ENV);
        let ptx = match &module_file {
            Some(path) => std::borrow::Cow::Owned(
                std::fs::read_to_string(path)
                    .map_err(|e| Error::PtxFile(format!("{}: {e}", path.to_string_lossy())))?,
            ),
            None => std::borrow::Cow::Borrowed(PTX),
        };
        let module = Module::from_ptx(&ptx, &opts).map_err(Error::PtxLoad)?;
        // From the text, not by a lookup that fails for the runtime's module alone: a failed
        // cuModuleGetFunction is an API error to compute-sanitizer, which reported one in
        // every program that opened a GPU (r36 `san/`).
        let module_has_bench = ptx_defines_kernel(&ptx, veballoc_kernels::BENCH_PROBE_KERNEL);
        let stream = Stream::new(StreamFlags::NON_BLOCKING, None).during("cuStreamCreate")?;
        let checks = Self::query_checks(&module, &stream)?;
        let mut driver = 0i32;
        // SAFETY: cuDriverGetVersion writes one int.
        unsafe { cust::sys::cuDriverGetVersion(&mut driver) };
        let multiprocessors = device
            .get_attribute(cust::device::DeviceAttribute::MultiprocessorCount)
            .during("cuDeviceGetAttribute")? as u32;
        Ok(Gpu {
            inner: Arc::new(Inner {
                stream: ManuallyDrop::new(stream),
                module: ManuallyDrop::new(module),
                bench: ManuallyDrop::new(OnceLock::new()),
                bench_load: Mutex::new(()),
                max_registers,
                module_file,
                module_has_bench,
                ctx,
                ordinal,
                name: device.name().during("cuDeviceGetName")?,
                driver,
                total_memory: device.total_memory().during("cuDeviceTotalMem")? as u64,
                multiprocessors,
                checks,
            }),
        })
    }

    /// The device's ordinal (what [`Gpu::on_device`] took).
    pub fn ordinal(&self) -> u32 {
        self.inner.ordinal
    }

    /// Asks the loaded PTX whether it was built with the safety checks.
    fn query_checks(module: &Module, stream: &Stream) -> Result<bool> {
        let out = zeroed_on::<u64>(stream, 1)?;
        let f = module.get_function("veballoc_info").during("cuModuleGetFunction (veballoc_info)")?;
        let p = out.as_device_ptr();
        // SAFETY: veballoc_info takes one pointer to a device word.
        unsafe { stream.launch(&f, GridSize::x(1), BlockSize::x(1), 0, crate::kernel_args![p]) }
            .during("cuLaunchKernel (veballoc_info)")?;
        let mut v = [0u64; 1];
        copy_out_on(stream, &out, &mut v[..])?;
        Ok(v[0] & 1 != 0)
    }

    /// Makes this GPU's context current on the calling thread until the guard drops.
    /// veballoc's own calls do this themselves; do it before using `cust` directly on a
    /// thread other than the one that created the GPU.
    ///
    /// ```no_run
    /// let gpu = veballoc::Gpu::new()?;
    /// std::thread::scope(|s| {
    ///     s.spawn(|| {
    ///         let _on = gpu.bind()?;
    ///         let buf = veballoc::zeroed_u64s(16)?; // cust calls need the context
    ///         Ok::<(), veballoc::Error>(())
    ///     });
    /// });
    /// # Ok::<(), veballoc::Error>(())
    /// ```
    pub fn bind(&self) -> Result<Bound<'_>> {
        bind_context(self.inner.ctx.as_raw())
    }

    /// A device buffer of `n` zeroed `T`s, zeroed on veballoc's stream (so ordered before
    /// the kernels launched on it), and complete when this returns. `T` is `AnyBits`: zero
    /// bytes are no `NonZero` value, though cust calls it `DeviceCopy` (review of r39).
    ///
    /// ```compile_fail
    /// # fn f(gpu: &veballoc::Gpu) -> veballoc::Result<()> {
    /// let b = gpu.zeroed::<std::num::NonZeroU32>(1)?;
    /// # Ok(()) }
    /// ```
    pub fn zeroed<T: crate::AnyBits>(&self, n: usize) -> Result<DeviceBuffer<T>> {
        let _on = self.bind()?;
        let b = zeroed_on(&self.inner.stream, n)?;
        self.sync()?;
        Ok(b)
    }

    /// A device buffer holding a copy of `data`, copied on veballoc's stream and complete when
    /// this returns (a plain `DeviceBuffer::from_slice` copies on the legacy default stream,
    /// which does not order veballoc's non-blocking stream).
    pub fn upload<T: DeviceCopy>(&self, data: &[T]) -> Result<DeviceBuffer<T>> {
        let _on = self.bind()?;
        // SAFETY: filled by the copy below before anyone reads it.
        let mut b = unsafe { DeviceBuffer::<T>::uninitialized(data.len()) }.during("cuMemAlloc")?;
        self.copy_in(&mut b, data)?;
        Ok(b)
    }

    /// Copies `src` to `dst` on veballoc's stream, after the work queued on it, and waits.
    /// The lengths must match (it panics otherwise, as `cust`'s copies do).
    pub fn copy_in<T: DeviceCopy>(&self, dst: &mut DeviceSlice<T>, src: &[T]) -> Result<()> {
        let _on = self.bind()?;
        // SAFETY: both sides stay borrowed until the stream sync below has completed the copy.
        unsafe { dst.async_copy_from(src, &self.inner.stream) }.during("cuMemcpyHtoDAsync")?;
        self.sync()
    }

    /// Copies `src` to `dst` on veballoc's stream, after the work queued on it, and waits.
    /// The lengths must match (it panics otherwise, as `cust`'s copies do).
    pub fn copy_out<T: DeviceCopy>(&self, src: &DeviceSlice<T>, dst: &mut [T]) -> Result<()> {
        let _on = self.bind()?;
        copy_out_on(&self.inner.stream, src, dst)
    }

    /// Whether the loaded PTX has the safety checks (double-free detection); heaps created
    /// on this GPU then get the hand-out bitmap.
    pub fn checks(&self) -> bool {
        self.inner.checks
    }

    /// Sets the stack each GPU thread gets, in bytes (CUDA's default is 1 KiB). Kernels that
    /// use `format!`, `BTreeMap` or other code with indirect or recursive calls (whose stack
    /// ptxas cannot bound) may need more; the driver reserves it for every thread that can be
    /// resident at once (an H100: about 270000), so 8 KiB costs about 2 GiB of GPU memory.
    pub fn set_stack_size(&self, bytes: usize) -> Result<()> {
        let _on = self.bind()?;
        cust::context::CurrentContext::set_resource_limit(cust::context::ResourceLimit::StackSize, bytes)
            .during("cuCtxSetLimit (stack size)")
    }

    /// Raises the stack each GPU thread gets to at least `bytes` (never lowers it).
    pub fn ensure_stack_size(&self, bytes: usize) -> Result<()> {
        if self.stack_size()? < bytes {
            self.set_stack_size(bytes)?;
        }
        Ok(())
    }

    /// The stack each GPU thread gets, in bytes.
    pub fn stack_size(&self) -> Result<usize> {
        let _on = self.bind()?;
        cust::context::CurrentContext::get_resource_limit(cust::context::ResourceLimit::StackSize)
            .during("cuCtxGetLimit (stack size)")
    }

    /// Loads a user's PTX module (for example a kernel crate that calls
    /// `veballoc_kernels::DeviceHeap::malloc`), with the same register cap policy as
    /// veballoc's own module when `max_registers > 0`. Refuses a module whose allocator was
    /// built with the safety checks when veballoc's PTX was not, or the other way round
    /// ([`Error::ChecksMismatch`]): on one heap they would corrupt each other's metadata.
    /// The module lives in this GPU's context: launch it with this GPU's [`Gpu::launch_in`]
    /// (to use it on several GPUs, load it on each).
    pub fn load_module(&self, ptx: &str, max_registers: u32) -> Result<Module> {
        check_layout_stamp(ptx, self.checks())?;
        let _on = self.bind()?;
        Module::from_ptx(ptx, &jit_options(max_registers)).map_err(Error::PtxLoad)
    }

    /// Launches `kernel` of a user's `module` on veballoc's stream (so it is ordered with the
    /// heap's own launches).
    ///
    /// # Safety
    /// As for [`Gpu::launch`]; and `module` came from this GPU's [`Gpu::load_module`].
    pub unsafe fn launch_in(
        &self,
        module: &Module,
        kernel: &str,
        threads: u64,
        block: u32,
        args: &[*mut c_void],
    ) -> Result<()> {
        let _on = self.bind()?;
        let f = module.get_function(kernel).during("cuModuleGetFunction")?;
        // SAFETY: the caller vouches for the arguments; the context is bound.
        unsafe { self.launch_function(&f, threads, block, args) }
    }

    /// Launches `f` over `threads` threads, `block` per block, on veballoc's stream.
    ///
    /// # Safety
    /// As for [`Gpu::launch`]; `f` is of a module of this GPU, whose context is bound.
    unsafe fn launch_function(
        &self,
        f: &Function,
        threads: u64,
        block: u32,
        args: &[*mut c_void],
    ) -> Result<()> {
        let grid = grid_for(threads, block)?;
        // SAFETY: the caller vouches for the arguments.
        unsafe { self.inner.stream.launch(f, GridSize::x(grid), BlockSize::x(block), 0, args) }
            .during("cuLaunchKernel")
    }

    /// The device's name, e.g. "NVIDIA H100 80GB HBM3".
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The CUDA driver API version, e.g. 13000 for CUDA 13.0.
    pub fn driver_version(&self) -> i32 {
        self.inner.driver
    }

    /// Total device memory in bytes.
    pub fn total_memory(&self) -> u64 {
        self.inner.total_memory
    }

    /// Number of multiprocessors.
    pub fn multiprocessors(&self) -> u32 {
        self.inner.multiprocessors
    }

    /// Free device memory in bytes, now.
    pub fn free_memory(&self) -> Result<u64> {
        let _on = self.bind()?;
        Ok(cust::memory::mem_get_info().during("cuMemGetInfo")?.0 as u64)
    }

    /// The stream every veballoc launch goes to.
    pub fn stream(&self) -> &Stream {
        &self.inner.stream
    }

    /// veballoc's runtime module ([`PTX`], or the file named by `VEBALLOC_PTX_FILE`).
    pub fn module(&self) -> &Module {
        &self.inner.module
    }

    /// The module with veballoc's test and benchmark kernels: the runtime module when it has
    /// them (a `VEBALLOC_PTX_FILE` built with them, as `scripts/ptx-variant.sh` builds), else
    /// [`BENCH_PTX`], loaded (and JIT-compiled) on the first call. A `VEBALLOC_PTX_FILE`
    /// without them is refused ([`Error::PtxFile`]): the embedded kernels would run another
    /// build's allocator on the heap that the file's kernels set up.
    pub fn bench_module(&self) -> Result<&Module> {
        if self.inner.module_has_bench {
            return Ok(&self.inner.module);
        }
        if let Some(m) = self.inner.bench.get() {
            return Ok(m);
        }
        if let Some(path) = &self.inner.module_file {
            return Err(Error::PtxFile(format!(
                "{} ({PTX_FILE_ENV}) has no test or benchmark kernel ({}): build it with \
                 veballoc-kernels' feature bench-kernels (scripts/ptx-variant.sh does)",
                path.to_string_lossy(),
                veballoc_kernels::BENCH_PROBE_KERNEL
            )));
        }
        // A poisoned lock only means another loader panicked: loading again is sound.
        let _loading = self.inner.bench_load.lock().unwrap_or_else(|e| e.into_inner());
        let _on = self.bind()?;
        if let Some(m) = self.inner.bench.get() {
            return Ok(m);
        }
        check_layout_stamp(BENCH_PTX, self.checks())?;
        let m =
            Module::from_ptx(BENCH_PTX, &jit_options(self.inner.max_registers)).map_err(Error::PtxLoad)?;
        let _ = self.inner.bench.set(m);
        Ok(self.inner.bench.get().expect("set above, under the load lock"))
    }

    /// Launches `kernel` of veballoc's module over `threads` threads, `block` per block.
    ///
    /// # Safety
    /// `args` must point to values whose types and order match the kernel's parameters, and
    /// device memory they name (heaps, buffers) must be this GPU's and live until the kernel
    /// ends: a `HeapArg` of a heap not yet dropped, a buffer not yet freed (a `HeapArg` is
    /// plain words with no lifetime). The kernel reads memory only as types whose values are
    /// there, and races with no other stream's work on it: the host's safe
    /// [`Heap::write`](crate::Heap::write) may have put another type's bytes into a heap
    /// object (see there).
    pub unsafe fn launch(&self, kernel: &str, threads: u64, block: u32, args: &[*mut c_void]) -> Result<()> {
        let _on = self.bind()?;
        // The runtime's kernels by their prefix, the others in the tests' and benchmarks'
        // module: one lookup per launch (see RUNTIME_KERNEL_PREFIX).
        let module = if kernel.starts_with(veballoc_kernels::RUNTIME_KERNEL_PREFIX) {
            &self.inner.module
        } else {
            self.bench_module()?
        };
        let f = module.get_function(kernel).during("cuModuleGetFunction")?;
        // SAFETY: the caller vouches for the arguments; the context is bound.
        unsafe { self.launch_function(&f, threads, block, args) }
    }

    /// Waits for all work on the stream; reports errors of kernels that ran on it.
    pub fn sync(&self) -> Result<()> {
        let _on = self.bind()?;
        self.inner.stream.synchronize().during("cuStreamSynchronize (a kernel failed)")
    }
}

/// Most blocks in a grid's x dimension (CUDA: 2^31 - 1).
const MAX_GRID_BLOCKS: u64 = i32::MAX as u64;

/// Blocks of `block` threads that cover `threads` (at least one), or `Error::InvalidLaunch`
/// when `block` is 0 or the grid would pass `MAX_GRID_BLOCKS` (a cast to u32 had launched
/// 2^40 + 1 threads as one block of 256).
fn grid_for(threads: u64, block: u32) -> Result<u32> {
    let grid = (block > 0).then(|| threads.div_ceil(block as u64).max(1));
    grid.filter(|&g| g <= MAX_GRID_BLOCKS).map(|g| g as u32).ok_or(Error::InvalidLaunch { threads, block })
}

/// Whether `ptx` defines kernel `name` (a `.entry` of that name, not one it only begins).
///
/// ```
/// assert!(veballoc::ptx_defines_kernel(veballoc::PTX, "veballoc_init"));
/// assert!(!veballoc::ptx_defines_kernel(veballoc::PTX, "veballoc_ini"));
/// ```
pub fn ptx_defines_kernel(ptx: &str, name: &str) -> bool {
    ptx.contains(&format!(".entry {name}("))
}

/// The JIT options of a module capped at `max_registers` per thread (0: no cap).
fn jit_options(max_registers: u32) -> Vec<ModuleJitOption> {
    if max_registers > 0 {
        vec![ModuleJitOption::MaxRegisters(max_registers)]
    } else {
        vec![]
    }
}

/// `n` zeroed `T`s, the memset queued on `stream` (the current context's).
fn zeroed_on<T: crate::AnyBits>(stream: &Stream, n: usize) -> Result<DeviceBuffer<T>> {
    // SAFETY: zeroed below, in stream order before any later work on `stream`.
    let b = unsafe { DeviceBuffer::<T>::uninitialized(n) }.during("cuMemAlloc")?;
    let bytes = n * std::mem::size_of::<T>();
    if bytes > 0 {
        // SAFETY: the buffer holds `bytes` bytes; it outlives the memset, as every user of it
        // synchronizes `stream` before dropping it (cuMemFree waits for the device anyway).
        let r = unsafe { cu::cuMemsetD8Async(b.as_device_ptr().as_raw(), 0, bytes, stream.as_inner()) };
        if r != cu::cudaError_enum::CUDA_SUCCESS {
            return Err(Error::Driver { call: "cuMemsetD8Async", code: r as i32 });
        }
    }
    Ok(b)
}

/// Copies `src` to `dst` on `stream` (after its queued work) and waits for the copy.
fn copy_out_on<T: DeviceCopy>(stream: &Stream, src: &DeviceSlice<T>, dst: &mut [T]) -> Result<()> {
    // SAFETY: `dst` stays borrowed until the sync below has completed the copy.
    unsafe { src.async_copy_to(dst, stream) }.during("cuMemcpyDtoHAsync")?;
    stream.synchronize().during("cuStreamSynchronize (copy to the host)")
}

/// Whether the allocator in `ptx` was built with the safety checks, from its layout stamp
/// (`None` for a module without veballoc's allocator).
pub fn ptx_checks(ptx: &str) -> Option<bool> {
    if ptx_defines_kernel(ptx, veballoc_kernels::STAMP_WITH_CHECKS) {
        Some(true)
    } else if ptx_defines_kernel(ptx, veballoc_kernels::STAMP_WITHOUT_CHECKS) {
        Some(false)
    } else {
        None
    }
}

/// Refuses `ptx` if its allocator's checks differ from `heap_checks` (see `Gpu::load_module`).
pub fn check_layout_stamp(ptx: &str, heap_checks: bool) -> Result<()> {
    match ptx_checks(ptx) {
        Some(module_checks) if module_checks != heap_checks => {
            Err(Error::ChecksMismatch { module_checks, heap_checks })
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `Gpu::open` tells a module with the tests' and benchmarks' kernels from the runtime's
    /// alone by its text: the embedded modules, and a name that is only a prefix of a kernel's.
    #[test]
    fn ptx_defines_kernel_reads_the_entries() {
        let probe = veballoc_kernels::BENCH_PROBE_KERNEL;
        assert!(ptx_defines_kernel(BENCH_PTX, probe));
        assert!(!ptx_defines_kernel(PTX, probe));
        assert!(ptx_defines_kernel(PTX, "veballoc_init"));
        // vb_malloc_warp is a kernel; vb_malloc_wa is no kernel's whole name.
        assert!(!ptx_defines_kernel(BENCH_PTX, "vb_malloc_wa"));
        assert!(ptx_defines_kernel(".visible .entry k(\n.param .u64 a\n)", "k"));
        assert!(!ptx_defines_kernel(".visible .func k(\n)", "k"));
    }

    /// A launch whose grid does not fit CUDA's (2^31 - 1 blocks) is an error, not a launch of
    /// fewer threads (2^40 + 1 threads of 256 ran as one block of 256); block 0 is an error,
    /// not a division by zero.
    #[test]
    fn a_grid_that_does_not_fit_is_an_error() {
        assert!(matches!(grid_for(10, 0), Err(Error::InvalidLaunch { threads: 10, block: 0 })));
        assert!(grid_for((1 << 40) + 1, 256).is_err(), "got {:?}", grid_for((1 << 40) + 1, 256).ok());
        assert!(grid_for((1 << 32) * 256, 256).is_err());
        assert_eq!(grid_for(0, 256).unwrap(), 1);
        assert_eq!(grid_for(1 << 20, 256).unwrap(), 4096);
        assert_eq!(grid_for((i32::MAX as u64) * 256, 256).unwrap(), i32::MAX as u32);
    }
}
