use std::process::ExitCode;
use veballoc::{kernel_args, Error, Gpu, Heap, DEFAULT_MAX_REGISTERS};

/// The PTX of ./kernels (built by build.rs).
const KERNELS: &str = include_str!(concat!(env!("OUT_DIR"), "/kernels.ptx"));

fn main() -> ExitCode {
    match run(1 << 20) {
        Ok(0) => ExitCode::SUCCESS,
        Ok(wrong) => {
            eprintln!("{wrong} wrong sums");
            ExitCode::FAILURE
        }
        Err(Error::NoGpu(why)) => {
            eprintln!("no usable CUDA GPU: {why}");
            ExitCode::from(2)
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Runs `sums` over `n` threads on a 1 GiB heap; returns how many sums are wrong.
fn run(n: u64) -> Result<usize, Error> {
    let gpu = Gpu::new()?;
    let heap = Heap::new(&gpu, 1 << 30)?;
    let module = gpu.load_module(KERNELS, DEFAULT_MAX_REGISTERS)?;
    let out = gpu.zeroed::<u64>(n as usize)?;
    let (arg, o) = (heap.arg(), out.as_device_ptr().as_raw());
    // SAFETY: `sums` takes a DeviceHeap, a pointer to n words and n.
    unsafe { gpu.launch_in(&module, "sums", n, 256, kernel_args![arg, o, n])? };
    gpu.sync()?;
    let mut sums = vec![0u64; n as usize];
    gpu.copy_out(&out, &mut sums)?;
    let expected = |i: u64| (0..i % 8 + 1).map(|k| i * k).sum::<u64>();
    let wrong = (0..n).filter(|&i| sums[i as usize] != expected(i)).count();
    let in_use = heap.stats()?.bytes_in_use;
    let name = gpu.name();
    println!("{n} threads on {name}: {wrong} wrong sums, {in_use} bytes in use");
    heap.destroy()?;
    Ok(wrong)
}
