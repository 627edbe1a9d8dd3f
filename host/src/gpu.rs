//! The GPU: driver, context, veballoc's PTX module and a stream.

use std::ffi::c_void;
use std::sync::Arc;

use cust::context::Context as CuContext;
use cust::device::Device;
use cust::function::{BlockSize, GridSize};
use cust::module::{Module, ModuleJitOption};
use cust::stream::{Stream, StreamFlags};
use cust::CudaFlags;

use crate::error::{Context, Error, Result};

/// Register cap for the JIT. Without one the driver gave the allocator's kernels 96-170
/// registers per thread; a sweep on an H200 (r16, bench/results/NOTES.md: caps 32, 40, 48,
/// 64, 96, none) gave the best alloc times at 64 (16 B 0.085 ms, 1 KiB 0.199 ms for 1M
/// threads) with free within 3% of the best.
pub const DEFAULT_MAX_REGISTERS: u32 = 64;

/// veballoc's kernels, compiled from `kernels/` by build.rs.
pub const PTX: &str = include_str!(concat!(env!("OUT_DIR"), "/veballoc.ptx"));
/// Whether the embedded PTX has the safety checks (the `checks` feature, or a debug build).
pub const PTX_HAS_CHECKS: bool = option_env!("VEBALLOC_PTX_CHECKS").is_some();
/// Environment variable naming a PTX file to load instead of the embedded one (another
/// build of `kernels/`, e.g. with or without the `checks` feature).
pub const PTX_FILE_ENV: &str = "VEBALLOC_PTX_FILE";

struct Inner {
    // Field order is drop order: stream and module go before the context.
    stream: Stream,
    module: Module,
    _ctx: CuContext,
    name: String,
    driver: i32,
    total_memory: u64,
    multiprocessors: u32,
    checks: bool,
}

/// A CUDA device with veballoc's module loaded. Cheap to clone.
///
/// ```no_run
/// let gpu = veballoc::Gpu::new()?;
/// println!("{} (driver {})", gpu.name(), gpu.driver_version());
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
        Self::with_max_registers(DEFAULT_MAX_REGISTERS)
    }

    /// As [`Gpu::new`], capping the registers per thread of veballoc's kernels at `max`
    /// (0: no cap). The cap sets how many warps an SM keeps in flight.
    pub fn with_max_registers(max: u32) -> Result<Gpu> {
        cust::init(CudaFlags::empty()).map_err(|e| Error::NoGpu(format!("cuInit: {e:?}")))?;
        let device = Device::get_device(0).map_err(|e| Error::NoGpu(format!("no device 0: {e:?}")))?;
        let ctx = CuContext::new(device).during("cuCtxCreate")?;
        let opts = if max > 0 { vec![ModuleJitOption::MaxRegisters(max)] } else { vec![] };
        let module = match std::env::var_os(PTX_FILE_ENV) {
            Some(path) => {
                let ptx = std::fs::read_to_string(&path)
                    .map_err(|e| Error::PtxFile(format!("{}: {e}", path.to_string_lossy())))?;
                Module::from_ptx(&ptx, &opts).map_err(Error::PtxLoad)?
            }
            None => Module::from_ptx(PTX, &opts).map_err(Error::PtxLoad)?,
        };
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
                stream,
                module,
                _ctx: ctx,
                name: device.name().during("cuDeviceGetName")?,
                driver,
                total_memory: device.total_memory().during("cuDeviceTotalMem")? as u64,
                multiprocessors,
                checks,
            }),
        })
    }

    /// Asks the loaded PTX whether it was built with the safety checks.
    fn query_checks(module: &Module, stream: &Stream) -> Result<bool> {
        let out = crate::zeroed_u64s(1)?;
        let f = module.get_function("veballoc_info").during("cuModuleGetFunction (veballoc_info)")?;
        let p = out.as_device_ptr();
        // SAFETY: veballoc_info takes one pointer to a device word.
        unsafe { stream.launch(&f, GridSize::x(1), BlockSize::x(1), 0, crate::kernel_args![p]) }
            .during("cuLaunchKernel (veballoc_info)")?;
        stream.synchronize().during("cuStreamSynchronize (veballoc_info)")?;
        let mut v = [0u64; 1];
        cust::memory::CopyDestination::copy_to(&*out, &mut v[..]).during("cuMemcpyDtoH")?;
        Ok(v[0] & 1 != 0)
    }

    /// Whether the loaded PTX has the safety checks (double-free detection); heaps created
    /// on this GPU then get the hand-out bitmap.
    pub fn checks(&self) -> bool {
        self.inner.checks
    }

    /// Loads a user's PTX module (for example a kernel crate that calls
    /// `veballoc_kernels::DeviceHeap::malloc`), with the same register cap policy as
    /// veballoc's own module when `max_registers > 0`. Refuses a module whose allocator was
    /// built with the safety checks when veballoc's PTX was not, or the other way round
    /// ([`Error::ChecksMismatch`]): on one heap they would corrupt each other's metadata.
    pub fn load_module(&self, ptx: &str, max_registers: u32) -> Result<Module> {
        check_layout_stamp(ptx, self.checks())?;
        let opts =
            if max_registers > 0 { vec![ModuleJitOption::MaxRegisters(max_registers)] } else { vec![] };
        Module::from_ptx(ptx, &opts).map_err(Error::PtxLoad)
    }

    /// Launches `kernel` of a user's `module` on veballoc's stream (so it is ordered with the
    /// heap's own launches).
    ///
    /// # Safety
    /// As for [`Gpu::launch`].
    pub unsafe fn launch_in(
        &self,
        module: &Module,
        kernel: &str,
        threads: u64,
        block: u32,
        args: &[*mut c_void],
    ) -> Result<()> {
        let f = module.get_function(kernel).during("cuModuleGetFunction")?;
        let grid = threads.div_ceil(block as u64).max(1) as u32;
        // SAFETY: the caller vouches for the arguments.
        unsafe { self.inner.stream.launch(&f, GridSize::x(grid), BlockSize::x(block), 0, args) }
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
        Ok(cust::memory::mem_get_info().during("cuMemGetInfo")?.0 as u64)
    }

    /// The stream every veballoc launch goes to.
    pub fn stream(&self) -> &Stream {
        &self.inner.stream
    }

    /// The loaded module (for the test and benchmark kernels in it).
    pub fn module(&self) -> &Module {
        &self.inner.module
    }

    /// Launches `kernel` of veballoc's module over `threads` threads, `block` per block.
    ///
    /// # Safety
    /// `args` must point to values whose types and order match the kernel's parameters.
    pub unsafe fn launch(&self, kernel: &str, threads: u64, block: u32, args: &[*mut c_void]) -> Result<()> {
        // SAFETY: the caller vouches for the arguments.
        unsafe { self.launch_in(&self.inner.module, kernel, threads, block, args) }
    }

    /// Waits for all work on the stream; reports errors of kernels that ran on it.
    pub fn sync(&self) -> Result<()> {
        self.inner.stream.synchronize().during("cuStreamSynchronize (a kernel failed)")
    }
}

/// Whether the allocator in `ptx` was built with the safety checks, from its layout stamp
/// (`None` for a module without veballoc's allocator).
pub fn ptx_checks(ptx: &str) -> Option<bool> {
    let has = |name: &str| ptx.contains(&format!(".entry {name}("));
    if has(veballoc_kernels::STAMP_WITH_CHECKS) {
        Some(true)
    } else if has(veballoc_kernels::STAMP_WITHOUT_CHECKS) {
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
